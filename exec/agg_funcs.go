package exec

// Aggregate functions: per-group state in typed slices indexed by group id,
// updated by one loop per batch over the rows' group ids. Types are
// dispatched once, when the aggregate is built (newAggFn).
//
// Result types and SQL rules:
//
//	count(*), count(x)   int64, 0 for no rows (never NULL)
//	sum(int8..int64)     int64, overflow is a KindQuery error
//	sum(float32/64)      float64
//	sum(decimal(p,s))    decimal128(38, s), exact: 128-bit accumulators,
//	                     a result beyond 38 digits is a KindQuery error
//	avg(int*, float*)    float64
//	avg(decimal(p,s))    decimal128(38, expr.AvgScale(s): at least 16), rounded half away
//	                     from zero (PostgreSQL-like: 16 significant digits)
//	min/max(x)           the type of x (numbers, decimals, dates,
//	                     timestamps, strings by bytes, booleans);
//	                     floats order NaN above every number (PostgreSQL)
//	sum/avg/min/max of no non-NULL rows is NULL.
//
// Partial states (Phase Partial emits them, Final merges them):
//
//	count          int64 (the count so far)
//	sum            the result type above (NULL: no rows yet)
//	avg            two columns: the sum (int64 for integer inputs, float64,
//	               or decimal128(38, s)) and the count (int64)
//	min/max        the input type (NULL: no rows yet)
//	var_*, stddev_* three columns (agg_var.go)
//	string_agg     the joined string (agg_string.go)
//	array_agg      the array so far (agg_array.go)
//	approx_count_distinct  the HyperLogLog sketch as bytes (agg_hll.go)

import (
	"math/bits"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// aggFn is one aggregate's per-group state.
type aggFn interface {
	// grow makes room for groups [0, n).
	grow(n int)
	// update adds the live rows (positions sel or 0..n-1) of argument a to
	// groups gids (one per live row). a is nil for count(*).
	update(gids []uint32, a arrow.Array, sel []int32, n int) error
	// merge adds partial states (the columns partial produced) to groups.
	merge(gids []uint32, st []arrow.Array, sel []int32, n int) error
	// result returns the final values of groups [start, end).
	result(alloc memory.Allocator, start, end int) (arrow.Array, error)
	// partial returns the states of groups [start, end).
	partial(alloc memory.Allocator, start, end int) []arrow.Array
	// bytes is the memory held.
	bytes() int64
}

// aggTypes is what building an aggregate decides: its result type, its
// state types and the function.
type aggTypes struct {
	result arrow.DataType
	states []arrow.DataType
}

var (
	typInt64   = arrow.PrimitiveTypes.Int64
	typFloat64 = arrow.PrimitiveTypes.Float64
)

func dec128Type(s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: 38, Scale: s} }

// avgScale is the scale of avg over decimal(p, s).
func avgScale(s int32) int32 { return expr.AvgScale(s) }

// newAggFnOf builds the state of aggregate ag (with its parameters, as
// string_agg's separator) over an argument of type dt.
func newAggFnOf(ag AggSpec, dt arrow.DataType, final bool, op string) (aggFn, error) {
	fn, _, err := newAggFn(ag.Func, dt, final, op)
	switch s := fn.(type) {
	case *stringAggFn:
		s.sep = ag.Sep
	case *quantileFn:
		s.q = ag.Quantile
	case *discFn:
		s.q, s.desc, s.mode = ag.Quantile, ag.Desc, ag.Func == AggMode
	}
	return fn, err
}

// newAggFn builds the state of aggregate f over an argument of type dt.
// In the final phase dt is the type of the first state column.
func newAggFn(f AggFunc, dt arrow.DataType, final bool, op string) (aggFn, aggTypes, error) {
	bad := func() (aggFn, aggTypes, error) {
		return nil, aggTypes{}, nferr.Queryf("%s: %s(%s) is not supported", op, f, dt)
	}
	switch f {
	case AggCountStar, AggCount:
		if final && dt.ID() != arrow.INT64 {
			return bad()
		}
		return &countFn{star: f == AggCountStar}, aggTypes{typInt64, []arrow.DataType{typInt64}}, nil
	}
	if f == AggQuantileCont {
		fn, t, ok := newQuantileFn(dt, final)
		if !ok {
			return bad()
		}
		return fn, t, nil
	}
	if f == AggPercentileDisc || f == AggMode {
		fn, t, ok := newDiscFn(dt, final)
		if !ok {
			return bad()
		}
		return fn, t, nil
	}
	if f == AggApproxCountDistinct {
		fn, t, ok := newHLLFn(dt, final)
		if !ok {
			return bad()
		}
		return fn, t, nil
	}
	if f == AggArrayAgg {
		fn, t, ok := newArrayAggFn(dt, final)
		if !ok {
			return bad()
		}
		return fn, t, nil
	}
	if f == AggStringAgg {
		fn, t, ok := newStringAggFn(dt)
		if !ok {
			return bad()
		}
		return fn, t, nil
	}
	if isVarianceAgg(f) {
		fn, t, ok := newVarFn(f, dt, final)
		if !ok {
			return bad()
		}
		return fn, t, nil
	}
	c, ok := classify(dt)
	if !ok {
		return bad()
	}
	isDec := dt.ID() == arrow.DECIMAL32 || dt.ID() == arrow.DECIMAL64 || dt.ID() == arrow.DECIMAL128
	switch f {
	case AggSum, AggAvg:
		avg := f == AggAvg
		switch {
		case isDec:
			s := dt.(arrow.DecimalType).GetScale()
			if final && dt.ID() != arrow.DECIMAL128 {
				return bad()
			}
			fn := &sumDecFn{scale: s, avg: avg, width: c.width}
			t := aggTypes{dec128Type(s), []arrow.DataType{dec128Type(s)}}
			if avg {
				t = aggTypes{dec128Type(avgScale(s)), []arrow.DataType{dec128Type(s), typInt64}}
			}
			return fn, t, nil
		case dt.ID() == arrow.INT8 || dt.ID() == arrow.INT16 || dt.ID() == arrow.INT32 || dt.ID() == arrow.INT64:
			if final && dt.ID() != arrow.INT64 {
				return bad()
			}
			fn := newSumIntFn(c.width, avg)
			t := aggTypes{typInt64, []arrow.DataType{typInt64}}
			if avg {
				t = aggTypes{typFloat64, []arrow.DataType{typInt64, typInt64}}
			}
			return fn, t, nil
		case c.class == pcFloat:
			if final && c.width != 8 {
				return bad()
			}
			fn := &sumFloatFn{sumState: sumState[float64]{avg: avg, typ: typFloat64}, f32: c.width == 4}
			t := aggTypes{typFloat64, []arrow.DataType{typFloat64}}
			if avg {
				t = aggTypes{typFloat64, []arrow.DataType{typFloat64, typInt64}}
			}
			return fn, t, nil
		}
		return bad()
	case AggMin, AggMax:
		isMax := f == AggMax
		t := aggTypes{dt, []arrow.DataType{dt}}
		switch c.class {
		case pcBool:
			return &minMaxBoolFn{minMax[bool]{isMax: isMax, dt: dt}}, t, nil
		case pcBytes:
			return &minMaxBytesFn{minMax: minMax[string]{isMax: isMax, dt: dt}}, t, nil
		case pcDec128:
			return &minMaxDec128Fn{minMax[i128]{isMax: isMax, dt: dt}}, t, nil
		case pcOpaque:
			if dt.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
				return &minMaxIntervalFn{minMax[arrow.MonthDayNanoInterval]{isMax: isMax, dt: dt}}, t, nil
			}
		case pcFloat:
			if c.width == 4 {
				return &minMaxFloatFn[float32]{minMax[float32]{isMax: isMax, dt: dt}}, t, nil
			}
			return &minMaxFloatFn[float64]{minMax[float64]{isMax: isMax, dt: dt}}, t, nil
		case pcInt:
			switch c.width {
			case 1:
				return &minMaxIntFn[int8]{minMax[int8]{isMax: isMax, dt: dt}}, t, nil
			case 2:
				return &minMaxIntFn[int16]{minMax[int16]{isMax: isMax, dt: dt}}, t, nil
			case 4:
				return &minMaxIntFn[int32]{minMax[int32]{isMax: isMax, dt: dt}}, t, nil
			}
			return &minMaxIntFn[int64]{minMax[int64]{isMax: isMax, dt: dt}}, t, nil
		case pcUint:
			switch c.width {
			case 1:
				return &minMaxIntFn[uint8]{minMax[uint8]{isMax: isMax, dt: dt}}, t, nil
			case 2:
				return &minMaxIntFn[uint16]{minMax[uint16]{isMax: isMax, dt: dt}}, t, nil
			case 4:
				return &minMaxIntFn[uint32]{minMax[uint32]{isMax: isMax, dt: dt}}, t, nil
			}
			return &minMaxIntFn[uint64]{minMax[uint64]{isMax: isMax, dt: dt}}, t, nil
		}
		return bad()
	}
	return nil, aggTypes{}, nferr.Queryf("%s: unknown aggregate function %q", op, f)
}

// growTo extends s with zero values to length n.
func growTo[T any](s []T, n int) []T {
	if len(s) >= n {
		return s
	}
	if cap(s) >= n {
		return s[:n]
	}
	c := 2 * cap(s)
	if c < n {
		c = n
	}
	ns := make([]T, n, c)
	prefault(ns) // accumulators read their state before they write it
	copy(ns, s)
	return ns
}

func sliceBytes[T any](s []T) int64 {
	var z T
	return int64(cap(s)) * int64(unsafe.Sizeof(z))
}

// arrayFromSlice copies vals into an array of type dt (same width); groups
// with !seen[i] are NULL (seen nil: none).
func arrayFromSlice[T any](alloc memory.Allocator, dt arrow.DataType, vals []T, seen []bool) arrow.Array {
	n := len(vals)
	var z T
	vb := newBuffer(alloc, n*int(unsafe.Sizeof(z)))
	copy(vb.Bytes(), castSlice[byte](vals))
	w := validityWriter{alloc: alloc, n: n}
	for i, s := range seen {
		if !s {
			w.setNull(i)
		}
	}
	return makeArray(dt, n, w.nulls, w.buf, vb)
}

// ---------------------------------------------------------------- count

type countFn struct {
	star bool
	cnt  []int64
}

func (f *countFn) grow(n int)   { f.cnt = growTo(f.cnt, n) }
func (f *countFn) bytes() int64 { return sliceBytes(f.cnt) }

func (f *countFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	cnt := f.cnt
	if len(cnt) == 1 && (f.star || a.NullN() == 0) {
		// One group (an ungrouped count): every gid is 0. NB: the loop
		// below would add one at a time to the same counter, a chain of
		// dependent stores.
		cnt[0] += int64(len(gids))
		return nil
	}
	if f.star || a.NullN() == 0 {
		for _, g := range gids {
			cnt[g]++
		}
		return nil
	}
	bm, off := validityOf(a)
	for j, g := range gids {
		if bitIsSet(bm, off+rowAt(sel, j)) {
			cnt[g]++
		}
	}
	return nil
}

func (f *countFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	vals := valuesOf[int64](st[0])
	bm, off := validityOf(st[0])
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm == nil || bitIsSet(bm, off+i) {
			f.cnt[g] += vals[i]
		}
	}
	return nil
}

func (f *countFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	return arrayFromSlice(alloc, typInt64, f.cnt[start:end], nil), nil
}

func (f *countFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}

// ---------------------------------------------------------- integer sum

// How an update marks a group that received a value.
const (
	markSeen  = iota // sum: seen[g] = true
	markCount        // avg: cnt[g]++
	markNone         // merging an avg's sum: the count column follows
)

func markOf(avg bool) int {
	if avg {
		return markCount
	}
	return markSeen
}

// sumState is what sum and avg keep per group over numbers accumulated as
// A (int64 for integers, float64 for floats): the sum, and whether a value
// was added (sum) or how many (avg). The update loops are the element
// types' own (sumIntUpdate checks overflow); growing, sizing, results and
// partial states are shared.
type sumState[A int64 | float64] struct {
	avg  bool
	typ  arrow.DataType // of A: typInt64 or typFloat64
	acc  []A
	seen []bool  // sum: a non-NULL value was added
	cnt  []int64 // avg: number of values
}

func (f *sumState[A]) grow(n int) {
	f.acc = growTo(f.acc, n)
	if f.avg {
		f.cnt = growTo(f.cnt, n)
	} else {
		f.seen = growTo(f.seen, n)
	}
}

func (f *sumState[A]) bytes() int64 {
	return sliceBytes(f.acc) + sliceBytes(f.seen) + sliceBytes(f.cnt)
}

// mergeCounts merges avg's partial counts (the state's second column).
func (f *sumState[A]) mergeCounts(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return (&countFn{cnt: f.cnt}).merge(gids, st[1:], sel, n)
}

func (f *sumState[A]) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	if !f.avg {
		return arrayFromSlice(alloc, f.typ, f.acc[start:end], f.seen[start:end]), nil
	}
	out := make([]float64, end-start)
	seen := make([]bool, end-start)
	for g := start; g < end; g++ {
		if c := f.cnt[g]; c > 0 {
			out[g-start] = float64(f.acc[g]) / float64(c)
			seen[g-start] = true
		}
	}
	return arrayFromSlice(alloc, typFloat64, out, seen), nil
}

func (f *sumState[A]) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	if !f.avg {
		a, _ := f.result(alloc, start, end)
		return []arrow.Array{a}
	}
	seen := make([]bool, end-start)
	for g := start; g < end; g++ {
		seen[g-start] = f.cnt[g] > 0
	}
	return []arrow.Array{arrayFromSlice(alloc, f.typ, f.acc[start:end], seen), arrayFromSlice(alloc, typInt64, f.cnt[start:end], nil)}
}

// sumIntFn is sum/avg over signed integers, accumulated in int64 with
// overflow detection.
type sumIntFn struct {
	sumState[int64]
	upd func(f *sumIntFn, gids []uint32, a arrow.Array, sel []int32, mark int) bool
}

func newSumIntFn(width int, avg bool) *sumIntFn {
	f := &sumIntFn{sumState: sumState[int64]{avg: avg, typ: typInt64}}
	switch width {
	case 1:
		f.upd = sumIntUpdate[int8]
	case 2:
		f.upd = sumIntUpdate[int16]
	case 4:
		f.upd = sumIntUpdate[int32]
	default:
		f.upd = sumIntUpdate[int64]
	}
	return f
}

var errSumOverflow = nferr.Queryf("bigint out of range in sum")

func (f *sumIntFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	if !f.upd(f, gids, a, sel, markOf(f.avg)) {
		return errSumOverflow
	}
	return nil
}

// sumIntUpdate adds values; false on int64 overflow.
func sumIntUpdate[T int8 | int16 | int32 | int64](f *sumIntFn, gids []uint32, a arrow.Array, sel []int32, mark int) bool {
	vals := valuesOf[T](a)
	bm, off := validityOf(a)
	acc := f.acc
	var of int64 // sign bit set on overflow
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		v := int64(vals[i])
		s := acc[g]
		r := s + v
		of |= (s ^ r) & (v ^ r)
		acc[g] = r
		switch mark {
		case markSeen:
			f.seen[g] = true
		case markCount:
			f.cnt[g]++
		}
	}
	return of >= 0
}

func (f *sumIntFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	if !f.avg {
		if !sumIntUpdate[int64](f, gids, st[0], sel, markSeen) {
			return errSumOverflow
		}
		return nil
	}
	if !sumIntUpdate[int64](f, gids, st[0], sel, markNone) {
		return errSumOverflow
	}
	return f.mergeCounts(gids, st, sel, n)
}

// ------------------------------------------------------------ float sum

type sumFloatFn struct {
	sumState[float64]
	f32 bool
}

func (f *sumFloatFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	if f.f32 {
		sumFloatUpdate(f, gids, valuesOf[float32](a), a, sel, markOf(f.avg))
	} else {
		sumFloatUpdate(f, gids, valuesOf[float64](a), a, sel, markOf(f.avg))
	}
	return nil
}

func sumFloatUpdate[T float32 | float64](f *sumFloatFn, gids []uint32, vals []T, a arrow.Array, sel []int32, mark int) {
	bm, off := validityOf(a)
	acc := f.acc
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		acc[g] += float64(vals[i])
		switch mark {
		case markSeen:
			f.seen[g] = true
		case markCount:
			f.cnt[g]++
		}
	}
}

func (f *sumFloatFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	if !f.avg {
		sumFloatUpdate(f, gids, valuesOf[float64](st[0]), st[0], sel, markSeen)
		return nil
	}
	sumFloatUpdate(f, gids, valuesOf[float64](st[0]), st[0], sel, markNone)
	return f.mergeCounts(gids, st, sel, n)
}

// ---------------------------------------------------------- decimal sum

// sumDecFn is sum/avg over decimals with 128-bit accumulators.
//
// INVARIANT: adding decimal32/64 values (|v| < 2^63) to an i128 cannot
// overflow before 2^64 rows, so the per-row loop has no overflow check;
// decimal128 inputs and merged states are checked on every add, and results
// are checked against 38 digits.
type sumDecFn struct {
	scale int32
	avg   bool
	width int // input value width: 4, 8 or 16
	acc   []i128
	seen  []bool
	cnt   []int64
}

func (f *sumDecFn) grow(n int) {
	f.acc = growTo(f.acc, n)
	if f.avg {
		f.cnt = growTo(f.cnt, n)
	} else {
		f.seen = growTo(f.seen, n)
	}
}

func (f *sumDecFn) bytes() int64 { return sliceBytes(f.acc) + sliceBytes(f.seen) + sliceBytes(f.cnt) }

func errDecOverflow(what string) error {
	return nferr.Queryf("numeric overflow in %s: result exceeds 38 digits", what)
}

func (f *sumDecFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	switch f.width {
	case 4:
		sumDecUpdate(f, gids, valuesOf[int32](a), a, sel)
	case 8:
		sumDecUpdate(f, gids, valuesOf[int64](a), a, sel)
	default:
		return f.add128(gids, a, sel, markOf(f.avg))
	}
	return nil
}

func sumDecUpdate[T int32 | int64](f *sumDecFn, gids []uint32, vals []T, a arrow.Array, sel []int32) {
	bm, off := validityOf(a)
	acc := f.acc
	switch {
	case bm == nil && sel == nil && !f.avg:
		seen := f.seen
		for j, g := range gids {
			v := int64(vals[j])
			s := &acc[g]
			lo, c := addCarry(s.lo, uint64(v))
			s.lo = lo
			s.hi += v>>63 + int64(c)
			seen[g] = true
		}
	case bm == nil && sel == nil:
		cnt := f.cnt
		for j, g := range gids {
			v := int64(vals[j])
			s := &acc[g]
			lo, c := addCarry(s.lo, uint64(v))
			s.lo = lo
			s.hi += v>>63 + int64(c)
			cnt[g]++
		}
	// The same two loops through a selection (rows after a filter).
	case bm == nil && !f.avg:
		seen := f.seen
		sel = sel[:len(gids)]
		for j, g := range gids {
			v := int64(vals[sel[j]])
			s := &acc[g]
			lo, c := addCarry(s.lo, uint64(v))
			s.lo = lo
			s.hi += v>>63 + int64(c)
			seen[g] = true
		}
	case bm == nil:
		cnt := f.cnt
		sel = sel[:len(gids)]
		for j, g := range gids {
			v := int64(vals[sel[j]])
			s := &acc[g]
			lo, c := addCarry(s.lo, uint64(v))
			s.lo = lo
			s.hi += v>>63 + int64(c)
			cnt[g]++
		}
	default:
		for j, g := range gids {
			i := rowAt(sel, j)
			if bm != nil && !bitIsSet(bm, off+i) {
				continue
			}
			acc[g].addInt64(int64(vals[i]))
			if f.avg {
				f.cnt[g]++
			} else {
				f.seen[g] = true
			}
		}
	}
}

// addCarry is a+b and the carry out (bits.Add64 is an ADD/ADC intrinsic).
func addCarry(a, b uint64) (uint64, uint64) { return bits.Add64(a, b, 0) }

// add128 adds decimal128 values (an input or a sum state) with overflow
// checks.
func (f *sumDecFn) add128(gids []uint32, a arrow.Array, sel []int32, mark int) error {
	vals := valuesOf[i128](a)
	bm, off := validityOf(a)
	acc := f.acc
	var of int64 // sign bit set on overflow
	if bm == nil && mark != markNone {
		// Fast path: no NULLs (Q1's decimal128 products).
		if sel == nil {
			for j, g := range gids {
				v := vals[j]
				s := &acc[g]
				lo, c := addCarry(s.lo, v.lo)
				hi := s.hi + v.hi + int64(c)
				// Signed overflow: operands of one sign, result of the other.
				of |= (s.hi ^ hi) & (v.hi ^ hi)
				s.lo, s.hi = lo, hi
			}
		} else {
			sel = sel[:len(gids)]
			for j, g := range gids {
				v := vals[sel[j]]
				s := &acc[g]
				lo, c := addCarry(s.lo, v.lo)
				hi := s.hi + v.hi + int64(c)
				of |= (s.hi ^ hi) & (v.hi ^ hi)
				s.lo, s.hi = lo, hi
			}
		}
		if mark == markSeen {
			for _, g := range gids {
				f.seen[g] = true
			}
		} else {
			for _, g := range gids {
				f.cnt[g]++
			}
		}
	} else {
		for j, g := range gids {
			i := rowAt(sel, j)
			if bm != nil && !bitIsSet(bm, off+i) {
				continue
			}
			v := vals[i]
			s := &acc[g]
			lo, c := addCarry(s.lo, v.lo)
			hi := s.hi + v.hi + int64(c)
			of |= (s.hi ^ hi) & (v.hi ^ hi)
			s.lo, s.hi = lo, hi
			switch mark {
			case markSeen:
				f.seen[g] = true
			case markCount:
				f.cnt[g]++
			}
		}
	}
	if of < 0 {
		return errDecOverflow("sum")
	}
	return nil
}

func (f *sumDecFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	if !f.avg {
		return f.add128(gids, st[0], sel, markSeen)
	}
	if err := f.add128(gids, st[0], sel, markNone); err != nil {
		return err
	}
	return (&countFn{cnt: f.cnt}).merge(gids, st[1:], sel, n)
}

func (f *sumDecFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	if !f.avg {
		for g := start; g < end; g++ {
			if f.seen[g] && !f.acc[g].fits38() {
				return nil, errDecOverflow("sum")
			}
		}
		return arrayFromSlice(alloc, dec128Type(f.scale), f.acc[start:end], f.seen[start:end]), nil
	}
	k := int(avgScale(f.scale) - f.scale)
	out := make([]i128, end-start)
	seen := make([]bool, end-start)
	for g := start; g < end; g++ {
		c := f.cnt[g]
		if c == 0 {
			continue
		}
		m, of := f.acc[g].mulPow10(k)
		if of {
			return nil, errDecOverflow("avg")
		}
		q := m.divRound(uint64(c))
		if !q.fits38() {
			return nil, errDecOverflow("avg")
		}
		out[g-start], seen[g-start] = q, true
	}
	return arrayFromSlice(alloc, dec128Type(avgScale(f.scale)), out, seen), nil
}

func (f *sumDecFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	if !f.avg {
		return []arrow.Array{arrayFromSlice(alloc, dec128Type(f.scale), f.acc[start:end], f.seen[start:end])}
	}
	seen := make([]bool, end-start)
	for g := start; g < end; g++ {
		seen[g-start] = f.cnt[g] > 0
	}
	return []arrow.Array{arrayFromSlice(alloc, dec128Type(f.scale), f.acc[start:end], seen), arrayFromSlice(alloc, typInt64, f.cnt[start:end], nil)}
}

// -------------------------------------------------------------- min/max

// minMax is the state of every MIN/MAX: each group's extreme value so far
// and whether it has seen a non-NULL value. Its result and partial serve
// the fixed-width values; bool and bytes states bring their own.
type minMax[V any] struct {
	isMax bool
	dt    arrow.DataType
	vals  []V
	seen  []bool
}

func (f *minMax[V]) grow(n int)   { f.vals, f.seen = growTo(f.vals, n), growTo(f.seen, n) }
func (f *minMax[V]) bytes() int64 { return sliceBytes(f.vals) + sliceBytes(f.seen) }

func (f *minMax[V]) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	return arrayFromSlice(alloc, f.dt, f.vals[start:end], f.seen[start:end]), nil
}

func (f *minMax[V]) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	return []arrow.Array{arrayFromSlice(alloc, f.dt, f.vals[start:end], f.seen[start:end])}
}

type minMaxIntFn[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64] struct {
	minMax[T]
}

func (f *minMaxIntFn[T]) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	src := valuesOf[T](a)
	bm, off := validityOf(a)
	vals, seen := f.vals, f.seen
	if f.isMax {
		for j, g := range gids {
			i := rowAt(sel, j)
			if bm != nil && !bitIsSet(bm, off+i) {
				continue
			}
			if v := src[i]; !seen[g] || v > vals[g] {
				vals[g], seen[g] = v, true
			}
		}
		return nil
	}
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		if v := src[i]; !seen[g] || v < vals[g] {
			vals[g], seen[g] = v, true
		}
	}
	return nil
}

func (f *minMaxIntFn[T]) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

// floatLess orders floats with NaN above every number (PostgreSQL).
func floatLess[T float32 | float64](a, b T) bool {
	if a != a {
		return false
	}
	if b != b {
		return true
	}
	return a < b
}

type minMaxFloatFn[T float32 | float64] struct {
	minMax[T]
}

func (f *minMaxFloatFn[T]) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	src := valuesOf[T](a)
	bm, off := validityOf(a)
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		v := src[i]
		if !f.seen[g] || (f.isMax && floatLess(f.vals[g], v)) || (!f.isMax && floatLess(v, f.vals[g])) {
			f.vals[g], f.seen[g] = v, true
		}
	}
	return nil
}

func (f *minMaxFloatFn[T]) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

type minMaxDec128Fn struct {
	minMax[i128]
}

func (f *minMaxDec128Fn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	src := valuesOf[i128](a)
	bm, off := validityOf(a)
	want := -1
	if f.isMax {
		want = 1
	}
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		if v := src[i]; !f.seen[g] || v.cmp(f.vals[g]) == want {
			f.vals[g], f.seen[g] = v, true
		}
	}
	return nil
}

func (f *minMaxDec128Fn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

// minMaxIntervalFn is min and max of intervals, ordered by their span
// (months as 30 days; expr.IntervalSpan), as they compare.
type minMaxIntervalFn struct {
	minMax[arrow.MonthDayNanoInterval]
}

func (f *minMaxIntervalFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	src := valuesOf[arrow.MonthDayNanoInterval](a)
	bm, off := validityOf(a)
	want := -1
	if f.isMax {
		want = 1
	}
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		if v := src[i]; !f.seen[g] || expr.IntervalSpan(v).Cmp(expr.IntervalSpan(f.vals[g])) == want {
			f.vals[g], f.seen[g] = v, true
		}
	}
	return nil
}

func (f *minMaxIntervalFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

type minMaxBoolFn struct {
	minMax[bool]
}

func (f *minMaxBoolFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	src, soff := boolBitsOf(a)
	bm, off := validityOf(a)
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		v := bitIsSet(src, soff+i)
		if !f.seen[g] {
			f.vals[g], f.seen[g] = v, true
		} else if f.isMax {
			f.vals[g] = f.vals[g] || v
		} else {
			f.vals[g] = f.vals[g] && v
		}
	}
	return nil
}

func (f *minMaxBoolFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

func (f *minMaxBoolFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	n := end - start
	vb := newBuffer(alloc, (n+7)/8)
	dst := vb.Bytes()
	clear(dst)
	w := validityWriter{alloc: alloc, n: n}
	for g := start; g < end; g++ {
		if !f.seen[g] {
			w.setNull(g - start)
		} else if f.vals[g] {
			setBit(dst, g-start)
		}
	}
	return makeArray(f.dt, n, w.nulls, w.buf, vb), nil
}

func (f *minMaxBoolFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}

// minMaxBytesFn keeps each group's extreme string as a Go string (copied
// only when it changes).
type minMaxBytesFn struct {
	minMax[string]
	size int64 // bytes of the strings held
}

func (f *minMaxBytesFn) bytes() int64 { return f.minMax.bytes() + f.size }

func (f *minMaxBytesFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	offs, data := bytesOf(a)
	bm, off := validityOf(a)
	for j, g := range gids {
		i := rowAt(sel, j)
		if bm != nil && !bitIsSet(bm, off+i) {
			continue
		}
		v := data[offs[i]:offs[i+1]]
		if f.seen[g] {
			c := strings.Compare(unsafeString(v), f.vals[g])
			if (f.isMax && c <= 0) || (!f.isMax && c >= 0) {
				continue
			}
		}
		f.size += int64(len(v) - len(f.vals[g]))
		f.vals[g], f.seen[g] = string(v), true
	}
	return nil
}

// unsafeString views b as a string without copying, for comparisons only.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (f *minMaxBytesFn) merge(gids []uint32, st []arrow.Array, sel []int32, n int) error {
	return f.update(gids, st[0], sel, n)
}

func (f *minMaxBytesFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	return stringsArray(alloc, f.dt, f.vals[start:end], f.seen[start:end]), nil
}

// stringsArray builds a string array of type dt from per-group values,
// NULL where seen is false.
func stringsArray[S ~string | ~[]byte](alloc memory.Allocator, dt arrow.DataType, vals []S, seen []bool) arrow.Array {
	n := len(vals)
	total := 0
	for _, v := range vals {
		total += len(v)
	}
	ob := newBuffer(alloc, (n+1)*4)
	offs := castBytes[int32](ob.Bytes())
	db := newBuffer(alloc, total)
	data := db.Bytes()
	w := validityWriter{alloc: alloc, n: n}
	pos := 0
	for g, v := range vals {
		offs[g] = int32(pos)
		if !seen[g] {
			w.setNull(g)
			continue
		}
		pos += copy(data[pos:], v)
	}
	offs[n] = int32(pos)
	return makeArray(dt, n, w.nulls, w.buf, ob, db)
}

func (f *minMaxBytesFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	a, _ := f.result(alloc, start, end)
	return []arrow.Array{a}
}
