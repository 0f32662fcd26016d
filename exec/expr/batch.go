package expr

import "github.com/apache/arrow-go/v18/arrow"

// Batch is the unit of data that flows between operators: equal-length Arrow
// arrays, one per column of the producing operator's Schema, and an optional
// selection vector.
//
// A filter does not copy: it narrows Sel. Operators that need dense input
// (hash join build, sort, the network) compact with Compact or read through
// Sel.
type Batch struct {
	// Cols holds one array per output column; every array has length N.
	Cols []arrow.Array
	// N is the physical number of rows in every column.
	N int
	// Sel, when non-nil, lists the live rows: positions in [0, N), strictly
	// ascending. When nil, all N rows are live.
	Sel []int32
}

// Len is the number of live rows.
func (b *Batch) Len() int {
	if b.Sel != nil {
		return len(b.Sel)
	}
	return b.N
}
