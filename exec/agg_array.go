package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
)

// array_agg(x): the group's values, NULLs included, as an array (SQL
// x[]), in the order the rows arrive (unspecified across parallel
// streams, as in PostgreSQL without ORDER BY); NULL for no row. Each
// group appends to a colVec of its own; the partial state is the array so
// far, which the final phase appends in the order partials arrive.

// AggArrayAgg is array_agg.
const AggArrayAgg AggFunc = "array_agg"

type arrayAggFn struct {
	lt   arrow.DataType // the result's list type
	ec   colInfo        // the element's class
	vecs []colVec       // per group; nil: no row yet
}

// newArrayAggFn is array_agg over values of type dt (final: dt is the
// partial state's list type).
func newArrayAggFn(dt arrow.DataType, final bool) (aggFn, aggTypes, bool) {
	elem := dt
	if final {
		if !expr.IsArray(dt) {
			return nil, aggTypes{}, false
		}
		elem = expr.ArrayElem(dt)
	}
	ec, ok := classify(elem)
	if !ok {
		return nil, aggTypes{}, false
	}
	lt := expr.ArrowList(elem)
	return &arrayAggFn{lt: lt, ec: ec}, aggTypes{lt, []arrow.DataType{lt}}, true
}

func (f *arrayAggFn) grow(n int) { f.vecs = growTo(f.vecs, n) }

func (f *arrayAggFn) bytes() int64 {
	n := sliceBytes(f.vecs)
	for _, v := range f.vecs {
		if v != nil {
			n += v.Bytes()
		}
	}
	return n
}

func (f *arrayAggFn) vec(g uint32) colVec {
	if f.vecs[g] == nil {
		f.vecs[g] = newColVec(f.ec)
	}
	return f.vecs[g]
}

func (f *arrayAggFn) update(gids []uint32, a arrow.Array, sel []int32, _ int) error {
	for j, g := range gids {
		i := rowAt(sel, j)
		f.vec(g).AppendRange(a, i, i+1)
	}
	return nil
}

func (f *arrayAggFn) merge(gids []uint32, st []arrow.Array, sel []int32, _ int) error {
	l := newListVec(f.lt)
	for j, g := range gids {
		i := rowAt(sel, j)
		if st[0].IsNull(i) {
			continue
		}
		l.Reset()
		l.AppendRange(st[0], i, i+1)
		if n := l.elem.Len(); n > 0 {
			f.vec(g).AppendVec(l.elem, 0, n)
		} else {
			f.vec(g) // an empty array so far: no longer NULL
		}
	}
	return nil
}

func (f *arrayAggFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	l := newListVec(f.lt)
	idx := make([]int32, end-start)
	for g := start; g < end; g++ {
		idx[g-start] = int32(g - start)
		v := f.vecs[g]
		if v == nil {
			l.AppendNulls(1)
			continue
		}
		n0 := l.Len()
		if v.Len() > 0 {
			l.elem.AppendVec(v, 0, v.Len())
		}
		l.offs = append(l.offs, int64(l.elem.Len()))
		l.nulls.extend(n0, n0+1)
	}
	return l.Gather(alloc, idx), nil
}

func (f *arrayAggFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}
