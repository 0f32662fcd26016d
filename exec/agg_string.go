package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// string_agg(x, sep): the group's non-NULL strings joined by sep (a
// constant, AggSpec.Sep), in the order the rows arrive (unspecified across
// parallel streams, as in PostgreSQL without ORDER BY); NULL for no value.
// Each group appends to its own buffer; the partial state is the joined
// string, which the final phase joins again with sep.

// AggStringAgg is string_agg.
const AggStringAgg AggFunc = "string_agg"

type stringAggFn struct {
	sep  string
	bufs [][]byte
	seen []bool
	size int64
}

func newStringAggFn(dt arrow.DataType) (aggFn, aggTypes, bool) {
	t := aggTypes{arrow.BinaryTypes.String, []arrow.DataType{arrow.BinaryTypes.String}}
	return &stringAggFn{}, t, dt.ID() == arrow.STRING
}

func (f *stringAggFn) grow(n int) {
	f.bufs = growTo(f.bufs, n)
	f.seen = growTo(f.seen, n)
}

func (f *stringAggFn) bytes() int64 {
	return sliceBytes(f.bufs) + sliceBytes(f.seen) + f.size
}

func (f *stringAggFn) update(gids []uint32, a arrow.Array, sel []int32, _ int) error {
	offs, data := bytesOf(a)
	bm, off := validityOf(a)
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		b := f.bufs[g]
		before := cap(b)
		if f.seen[g] {
			b = append(b, f.sep...)
		}
		b = append(b, data[offs[i]:offs[i+1]]...)
		f.size += int64(cap(b) - before)
		f.bufs[g], f.seen[g] = b, true
	}
	return nil
}

func (f *stringAggFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

func (f *stringAggFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	return stringsArray(alloc, arrow.BinaryTypes.String, f.bufs[start:end], f.seen[start:end]), nil
}

func (f *stringAggFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}
