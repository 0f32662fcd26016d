package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/nicflow/nicflow/internal/nferr"
)

// RangePartitioner assigns rows to len(cuts)+1 partitions by the value of
// one integer key column: partition i holds the values from cuts[i-1]
// (partition 0: everything below cuts[0]) up to cuts[i]-1, and the last
// partition everything from the last cut. These are the parts of a
// range-split scan (engine/phys RangePart), so a range exchange sends a
// row to the task whose range-split scan reads that key (ExchangeRange).
// A NULL key goes to partition 0 (it equals no key, so any one partition
// does, but exactly one). Not safe for concurrent use.
type RangePartitioner struct {
	key   int
	cuts  []int64
	is64  bool
	parts []int32
	selSplit
}

// NewRangePartitioner checks that column key of schema is an int32 or
// int64 column and cuts ascend strictly.
func NewRangePartitioner(schema *arrow.Schema, key int, cuts []int64) (*RangePartitioner, error) {
	if key < 0 || key >= schema.NumFields() {
		return nil, nferr.Internalf("range partition: key column %d of %d", key, schema.NumFields())
	}
	p := &RangePartitioner{key: key, cuts: append([]int64(nil), cuts...)}
	switch schema.Field(key).Type.ID() {
	case arrow.INT64:
		p.is64 = true
	case arrow.INT32:
	default:
		return nil, nferr.Internalf("range partition: key column %d is %s, not an integer", key, schema.Field(key).Type)
	}
	for i := 1; i < len(cuts); i++ {
		if cuts[i] <= cuts[i-1] {
			return nil, nferr.Internalf("range partition: cuts %v do not ascend", cuts)
		}
	}
	p.selSplit = newSelSplit(len(cuts) + 1)
	return p, nil
}

// Partitions is the number of partitions, len(cuts)+1.
func (p *RangePartitioner) Partitions() int { return len(p.cuts) + 1 }

// Partition returns the partition of every live row of b (one entry per
// live row, in order). The slice is reused by the next call.
func (p *RangePartitioner) Partition(b *Batch) []int32 {
	p.parts = resize(p.parts, b.Len())
	col := b.Cols[p.key]
	if p.is64 {
		rangeParts(p, col, col.(*array.Int64).Int64Values(), b.Sel)
	} else {
		rangeParts(p, col, col.(*array.Int32).Int32Values(), b.Sel)
	}
	return p.parts
}

// rangeParts fills p.parts for the live rows (sel) of col, whose values
// are vals.
func rangeParts[T int32 | int64](p *RangePartitioner, col arrow.Array, vals []T, sel []int32) {
	nulls := col.NullN() > 0
	for j := range p.parts {
		i := rowAt(sel, j)
		if nulls && col.IsNull(i) {
			p.parts[j] = 0
			continue
		}
		p.parts[j] = p.part(int64(vals[i]))
	}
}

// part is the partition of value v: the number of cuts at or below it
// (a binary search).
func (p *RangePartitioner) part(v int64) int32 {
	lo, hi := 0, len(p.cuts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.cuts[m] <= v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return int32(lo)
}

// Split returns, for each partition, the selection vector (physical row
// positions of b, ascending) of its rows; nil for partitions without rows.
// The slices are reused by the next call.
func (p *RangePartitioner) Split(b *Batch) [][]int32 { return p.split(b, p.Partition(b)) }
