package exec

import (
	"cmp"
	"math"
	"slices"
	"strings"

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
// group in one place (DISTINCT, quantiles, mode): it cannot be split into
// partial and final phases.
func NeedsAllRows(a AggSpec) bool {
	return a.Distinct || a.Func == AggQuantileCont || a.Func == AggPercentileDisc || a.Func == AggMode
}

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

// percentile_disc(q) WITHIN GROUP (ORDER BY x [DESC]): the first value, in
// that order, at or past fraction q of the group's non-NULL values (its
// cumulative share reaches q), exactly and in x's type: integers, dates,
// timestamps and decimal64 are kept as their integers, doubles as they
// are, text as its bytes (ordered bytewise, as nicflow orders text).
// mode() WITHIN GROUP (ORDER BY x [DESC]): the most frequent non-NULL
// value, the first in that order among equally frequent ones. Both keep
// every value of a group, sort it once at the end and run in one phase,
// as quantile_cont does.

// AggPercentileDisc is percentile_disc; AggSpec.Quantile is q, AggSpec.Desc
// the order.
const AggPercentileDisc AggFunc = "percentile_disc"

// AggMode is mode; AggSpec.Desc is the order that breaks ties.
const AggMode AggFunc = "mode"

type discFn struct {
	q     float64
	desc  bool
	mode  bool // mode(), not percentile_disc
	dt    arrow.DataType
	width int
	float bool
	str   bool
	ints  [][]int64
	fls   [][]float64
	strs  [][]string
	size  int64
}

func newDiscFn(dt arrow.DataType, final bool) (aggFn, aggTypes, bool) {
	t := aggTypes{dt, []arrow.DataType{dt}}
	if final {
		return nil, t, false
	}
	if dt.ID() == arrow.STRING {
		return &discFn{dt: dt, str: true}, t, true
	}
	c, ok := classify(dt)
	if !ok || !(c.class == pcInt && c.width >= 4 || c.class == pcFloat && c.width == 8) {
		return nil, t, false
	}
	return &discFn{dt: dt, width: c.width, float: c.class == pcFloat}, t, true
}

func (f *discFn) grow(n int) {
	f.ints = growTo(f.ints, n)
	f.fls = growTo(f.fls, n)
	f.strs = growTo(f.strs, n)
}

func (f *discFn) bytes() int64 {
	return sliceBytes(f.ints) + sliceBytes(f.fls) + sliceBytes(f.strs) + f.size
}

func (f *discFn) update(gids []uint32, a arrow.Array, sel []int32, _ int) error {
	bm, off := validityOf(a)
	var i32 []int32
	var i64 []int64
	var f64 []float64
	var offs []int32
	var data []byte
	switch {
	case f.str:
		offs, data = bytesOf(a)
	case f.float:
		f64 = valuesOf[float64](a)
	case f.width == 4:
		i32 = valuesOf[int32](a)
	default:
		i64 = valuesOf[int64](a)
	}
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		switch {
		case f.str:
			before := cap(f.strs[g])
			v := string(data[offs[i]:offs[i+1]])
			f.strs[g] = append(f.strs[g], v)
			f.size += int64(cap(f.strs[g])-before)*16 + int64(len(v))
		case f.float:
			before := cap(f.fls[g])
			f.fls[g] = append(f.fls[g], f64[i])
			f.size += int64(cap(f.fls[g])-before) * 8
		case i32 != nil:
			before := cap(f.ints[g])
			f.ints[g] = append(f.ints[g], int64(i32[i]))
			f.size += int64(cap(f.ints[g])-before) * 8
		default:
			before := cap(f.ints[g])
			f.ints[g] = append(f.ints[g], i64[i])
			f.size += int64(cap(f.ints[g])-before) * 8
		}
	}
	return nil
}

func (f *discFn) merge([]uint32, []arrow.Array, []int32, int) error {
	return nferr.Internalf("%s has no partial state to merge", f.name())
}

func (f *discFn) name() string {
	if f.mode {
		return "mode"
	}
	return "percentile_disc"
}

// pick is the position of the value percentile_disc takes among n sorted
// ascending: the ceil(q*n)-th in the function's order.
func (f *discFn) pick(n int) int {
	k := max(int(math.Ceil(f.q*float64(n)))-1, 0)
	if f.desc {
		return n - 1 - k
	}
	return k
}

// modeAt is the position of mode's value among v sorted ascending (eq
// compares neighbours): the start of the longest run of equal values, the
// first such run or, descending, the last.
func modeAt[T any](v []T, eq func(a, b T) bool, desc bool) int {
	best, bestLen := 0, 0
	for i := 0; i < len(v); {
		j := i + 1
		for j < len(v) && eq(v[i], v[j]) {
			j++
		}
		if j-i > bestLen || desc && j-i == bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	return best
}

// choose sorts v ascending and returns the position of the value the
// function takes.
func choose[T any](f *discFn, v []T, cmp func(a, b T) int) int {
	slices.SortFunc(v, cmp)
	if f.mode {
		return modeAt(v, func(a, b T) bool { return cmp(a, b) == 0 }, f.desc)
	}
	return f.pick(len(v))
}

func (f *discFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	seen := make([]bool, end-start)
	switch {
	case f.str:
		out := make([]string, end-start)
		for g := start; g < end; g++ {
			if v := f.strs[g]; len(v) > 0 {
				out[g-start], seen[g-start] = v[choose(f, v, strings.Compare)], true
			}
		}
		return stringsArray(alloc, f.dt, out, seen), nil
	case f.float:
		out := make([]float64, end-start)
		for g := start; g < end; g++ {
			if v := f.fls[g]; len(v) > 0 {
				out[g-start], seen[g-start] = v[choose(f, v, expr.FloatOrder[float64])], true
			}
		}
		return arrayFromSlice(alloc, f.dt, out, seen), nil
	}
	out := make([]int64, end-start)
	for g := start; g < end; g++ {
		if v := f.ints[g]; len(v) > 0 {
			out[g-start], seen[g-start] = v[choose(f, v, cmp.Compare[int64])], true
		}
	}
	if f.width == 4 {
		o32 := make([]int32, len(out))
		for i, x := range out {
			o32[i] = int32(x)
		}
		return arrayFromSlice(alloc, f.dt, o32, seen), nil
	}
	return arrayFromSlice(alloc, f.dt, out, seen), nil
}

func (f *discFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}
