package exec

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Variance and standard deviation: var_samp, var_pop, stddev_samp and
// stddev_pop over any number (integers, floats, decimals), as float64
// (DuckDB's type; PostgreSQL gives numeric for integer and decimal input).
//
// State per group: the count n, the mean and M2, the sum of squared
// distances from the mean, updated one value at a time by Welford's method
// and merged (Final phase) by Chan et al.'s pairwise formula, both stable
// where the textbook sum of squares cancels catastrophically. Partial
// states are three columns: n (int64), mean and M2 (float64).
//
// Results: var_pop = M2/n, var_samp = M2/(n-1), stddev_* their square
// roots; NULL for no value (and var_samp/stddev_samp of one value).

// The variance aggregates.
const (
	AggVarSamp    AggFunc = "var_samp"
	AggVarPop     AggFunc = "var_pop"
	AggStddevSamp AggFunc = "stddev_samp"
	AggStddevPop  AggFunc = "stddev_pop"
)

func isVarianceAgg(f AggFunc) bool {
	return f == AggVarSamp || f == AggVarPop || f == AggStddevSamp || f == AggStddevPop
}

type varFn struct {
	fn AggFunc
	// toFloat converts a batch's argument to float64 (chosen once, by the
	// argument's type; nil in the Final phase).
	toFloat func(a arrow.Array, dst []float64) []float64
	xs      []float64
	n       []int64
	mean    []float64
	m2      []float64
}

// newVarFn builds a variance aggregate over an argument of type dt (in
// the Final phase, dt is the count state's int64).
func newVarFn(f AggFunc, dt arrow.DataType, final bool) (aggFn, aggTypes, bool) {
	t := aggTypes{typFloat64, []arrow.DataType{typInt64, typFloat64, typFloat64}}
	fn := &varFn{fn: f}
	if final {
		return fn, t, dt.ID() == arrow.INT64
	}
	var ok bool
	fn.toFloat, ok = floatConverter(dt)
	return fn, t, ok
}

// floatConverter is the function converting a batch's argument of type dt
// to float64 (chosen once, by the type), or false for a non-number.
func floatConverter(dt arrow.DataType) (func(a arrow.Array, dst []float64) []float64, bool) {
	switch dt.ID() {
	case arrow.INT8:
		return toFloats[int8], true
	case arrow.INT16:
		return toFloats[int16], true
	case arrow.INT32:
		return toFloats[int32], true
	case arrow.INT64:
		return toFloats[int64], true
	case arrow.FLOAT32:
		return toFloats[float32], true
	case arrow.FLOAT64:
		return toFloats[float64], true
	case arrow.DECIMAL64:
		scale := math.Pow10(int(dt.(arrow.DecimalType).GetScale()))
		return func(a arrow.Array, dst []float64) []float64 {
			dst = toFloats[int64](a, dst)
			for i := range dst {
				dst[i] /= scale
			}
			return dst
		}, true
	case arrow.DECIMAL128:
		s := dt.(arrow.DecimalType).GetScale()
		return func(a arrow.Array, dst []float64) []float64 {
			vals := valuesOf[decimal128.Num](a)
			dst = resize(dst, len(vals))
			for i, v := range vals {
				dst[i] = v.ToFloat64(s)
			}
			return dst
		}, true
	}
	return nil, false
}

// toFloats converts every value of a (NULL slots too) to float64.
func toFloats[T int8 | int16 | int32 | int64 | float32 | float64](a arrow.Array, dst []float64) []float64 {
	vals := valuesOf[T](a)
	dst = resize(dst, len(vals))
	for i, v := range vals {
		dst[i] = float64(v)
	}
	return dst
}

func (f *varFn) grow(n int) {
	f.n = growTo(f.n, n)
	f.mean = growTo(f.mean, n)
	f.m2 = growTo(f.m2, n)
}

func (f *varFn) bytes() int64 {
	return sliceBytes(f.n) + sliceBytes(f.mean) + sliceBytes(f.m2) + sliceBytes(f.xs)
}

func (f *varFn) update(gids []uint32, a arrow.Array, sel []int32, _ int) error {
	f.xs = f.toFloat(a, f.xs)
	xs, cnt, mean, m2 := f.xs, f.n, f.mean, f.m2
	bm, off := validityOf(a)
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		x := xs[i]
		cnt[g]++
		d := x - mean[g]
		mean[g] += d / float64(cnt[g])
		m2[g] += d * (x - mean[g])
	}
	return nil
}

func (f *varFn) merge(gids []uint32, st []arrow.Array, sel []int32, _ int) error {
	ns, means, m2s := valuesOf[int64](st[0]), valuesOf[float64](st[1]), valuesOf[float64](st[2])
	for j, g := range gids {
		i := rowAt(sel, j)
		nb := ns[i]
		if nb == 0 {
			continue
		}
		na := f.n[g]
		if na == 0 {
			f.n[g], f.mean[g], f.m2[g] = nb, means[i], m2s[i]
			continue
		}
		n := float64(na + nb)
		d := means[i] - f.mean[g]
		f.mean[g] += d * float64(nb) / n
		f.m2[g] += m2s[i] + d*d*float64(na)*float64(nb)/n
		f.n[g] = na + nb
	}
	return nil
}

func (f *varFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	out := make([]float64, end-start)
	seen := make([]bool, end-start)
	samp := f.fn == AggVarSamp || f.fn == AggStddevSamp
	root := f.fn == AggStddevSamp || f.fn == AggStddevPop
	for g := start; g < end; g++ {
		n := f.n[g]
		if samp {
			n--
		}
		if n <= 0 {
			continue
		}
		v := max(f.m2[g], 0) / float64(n)
		if root {
			v = math.Sqrt(v)
		}
		out[g-start], seen[g-start] = v, true
	}
	return arrayFromSlice(alloc, typFloat64, out, seen), nil
}

func (f *varFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	return []arrow.Array{
		arrayFromSlice(alloc, typInt64, f.n[start:end], nil),
		arrayFromSlice(alloc, typFloat64, f.mean[start:end], nil),
		arrayFromSlice(alloc, typFloat64, f.m2[start:end], nil),
	}
}
