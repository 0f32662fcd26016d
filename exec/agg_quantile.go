package exec

import (
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// quantile_cont(x, q) (and median, q = 0.5; PostgreSQL's percentile_cont
// WITHIN GROUP): the value at fraction q of the group's non-NULL values in
// order, interpolated linearly between the two nearest, as double
// precision; NULL for no value. The aggregate keeps every value of its
// groups, so it has no partial state: like a DISTINCT aggregate it runs in
// one phase, its groups whole in one place (NeedsAllRows).

// AggQuantileCont is quantile_cont; AggSpec.Quantile is q.
const AggQuantileCont AggFunc = "quantile_cont"

// NeedsAllRows reports whether aggregate a must see all the rows of a
// group in one place (DISTINCT, quantiles): it cannot be split into
// partial and final phases.
func NeedsAllRows(a AggSpec) bool { return a.Distinct || a.Func == AggQuantileCont }

type quantileFn struct {
	q       float64
	toFloat func(a arrow.Array, dst []float64) []float64
	xs      []float64
	vals    [][]float64
	size    int64
}

func newQuantileFn(dt arrow.DataType, final bool) (aggFn, aggTypes, bool) {
	t := aggTypes{typFloat64, []arrow.DataType{typFloat64}}
	conv, ok := floatConverter(dt)
	if final || !ok {
		return nil, t, false
	}
	return &quantileFn{toFloat: conv}, t, true
}

func (f *quantileFn) grow(n int) { f.vals = growTo(f.vals, n) }

func (f *quantileFn) bytes() int64 { return sliceBytes(f.vals) + sliceBytes(f.xs) + f.size }

func (f *quantileFn) update(gids []uint32, a arrow.Array, sel []int32, _ int) error {
	f.xs = f.toFloat(a, f.xs)
	bm, off := validityOf(a)
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		before := cap(f.vals[g])
		f.vals[g] = append(f.vals[g], f.xs[i])
		f.size += int64(cap(f.vals[g])-before) * 8
	}
	return nil
}

func (f *quantileFn) merge([]uint32, []arrow.Array, []int32, int) error {
	return nferr.Internalf("quantile_cont has no partial state to merge")
}

func (f *quantileFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	out := make([]float64, end-start)
	seen := make([]bool, end-start)
	for g := start; g < end; g++ {
		v := f.vals[g]
		if len(v) == 0 {
			continue
		}
		slices.SortFunc(v, expr.FloatOrder[float64])
		pos := f.q * float64(len(v)-1)
		lo, hi := math.Floor(pos), math.Ceil(pos)
		x := v[int(lo)]
		if hi != lo {
			x += (pos - lo) * (v[int(hi)] - x)
		}
		out[g-start], seen[g-start] = x, true
	}
	return arrayFromSlice(alloc, typFloat64, out, seen), nil
}

func (f *quantileFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}
