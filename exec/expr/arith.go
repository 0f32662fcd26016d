package expr

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// kcode is a kernel's outcome. Kernels return a code, not an error, so
// their loops stay free of allocation; the node turns it into a KindQuery
// error naming its expression.
type kcode uint8

const (
	kOK       kcode = iota
	kOverflow       // result does not fit its type
	kDivZero        // division or modulo by zero
	kRange          // date out of range
	kBadInterval
	kTsRange // timestamp out of range
)

// binKernel computes out = a op b at the rows sel (nil: all n). Rows of sel
// are non-NULL in both inputs.
type binKernel func(out, a, b *vec, sel []int32, n int) kcode

// arithNode is a binary operator over two same-shaped inputs.
type arithNode struct {
	a, b    node
	t       arrow.DataType
	kern    binKernel
	desc    string
	ovfText string // "integer out of range", "decimal overflow", ...

	v     vec
	nulls []bool
	s1    []int32
}

func (x *arithNode) dt() arrow.DataType { return x.t }

func (x *arithNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	va, err := x.a.eval(b, sel)
	if err != nil {
		return nil, err
	}
	vb, err := x.b.eval(b, sel)
	if err != nil {
		return nil, err
	}
	s := sel
	x.v.nulls = orNulls(&x.nulls, sel, b.n, va.nulls, vb.nulls)
	if x.v.nulls != nil {
		// NB: kernels that can fail must not look at NULL rows (their
		// values are arbitrary), so they run over the non-NULL rows only.
		s = nonNullSel(&x.s1, sel, b.n, va.nulls, vb.nulls)
	}
	if code := x.kern(&x.v, va, vb, s, b.n); code != kOK {
		return nil, kernelError(code, x.ovfText, x.desc)
	}
	return &x.v, nil
}

func kernelError(code kcode, ovfText, desc string) error {
	switch code {
	case kDivZero:
		return errAt("division by zero", desc)
	case kRange:
		return errAt("date out of range", desc)
	case kBadInterval:
		return errAt("interval with a time of day cannot be added to a date", desc)
	case kTsRange:
		return errAt("timestamp out of range", desc)
	}
	if ovfText == "" {
		ovfText = "value out of range"
	}
	return errAt(ovfText, desc)
}

// unaryKernel computes out = op a at the rows sel (nil: all n). Rows of sel
// are non-NULL in a.
type unaryKernel func(out, a *vec, sel []int32, n int) kcode

// unaryNode applies a kernel to one input; NULL in, NULL out.
type unaryNode struct {
	x       node
	t       arrow.DataType
	kern    unaryKernel
	desc    string
	ovfText string

	v  vec
	s1 []int32
}

func (u *unaryNode) dt() arrow.DataType { return u.t }

func (u *unaryNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	va, err := u.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	s := sel
	u.v.nulls = va.nulls
	if va.nulls != nil {
		s = nonNullSel(&u.s1, sel, b.n, va.nulls, nil)
	}
	if code := u.kern(&u.v, va, s, b.n); code != kOK {
		return nil, kernelError(code, u.ovfText, u.desc)
	}
	return &u.v, nil
}

// ----------------------------------------------------------------- typing

// compileArith types and builds a + b, a - b, a * b, a / b, a % b.
func (c *compiler) compileArith(fn string, a, b node, desc string) (node, error) {
	ta, tb := a.dt(), b.dt()
	// An untyped NULL takes the other operand's type.
	if ta.ID() == arrow.NULL && tb.ID() == arrow.NULL {
		return newNullConst(arrow.PrimitiveTypes.Int32), nil
	}
	if ta.ID() == arrow.NULL {
		a, ta = newNullConst(tb), tb
	}
	if tb.ID() == arrow.NULL {
		b, tb = newNullConst(ta), ta
	}
	if IsTime(ta) || IsTime(tb) {
		return c.compileTimeArith(fn, a, b, desc)
	}
	// Timestamps, dates and intervals.
	if IsTimestamp(ta) || IsTimestamp(tb) {
		return c.compileTimestampArith(fn, a, b, desc)
	}
	if ta.ID() == arrow.DATE32 || tb.ID() == arrow.DATE32 || ta.ID() == arrow.INTERVAL_MONTH_DAY_NANO || tb.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return c.compileDateArith(fn, a, b, desc)
	}
	if !IsNumeric(ta) || !IsNumeric(tb) {
		return nil, nferr.Queryf("operator does not exist: %s %s %s in %s", TypeName(ta), infix[fn], TypeName(tb), desc)
	}
	mk := func(a, b node, t arrow.DataType, k binKernel, ovf string) (node, error) {
		return &arithNode{a: a, b: b, t: t, kern: k, desc: desc, ovfText: ovf}, nil
	}
	// Doubles.
	if ta.ID() == arrow.FLOAT64 || tb.ID() == arrow.FLOAT64 {
		f := arrow.PrimitiveTypes.Float64
		var err error
		if a, err = c.cast(a, f, desc); err != nil {
			return nil, err
		}
		if b, err = c.cast(b, f, desc); err != nil {
			return nil, err
		}
		k := map[string]binKernel{FnAdd: addF64, FnSub: subF64, FnMul: mulF64, FnDiv: divF64, FnMod: modF64}[fn]
		return mk(a, b, f, k, "double out of range")
	}
	// Integers: int32 op int32 stays int32 (overflow is an error), any
	// int64 makes int64.
	if IsInteger(ta) && IsInteger(tb) {
		t := arrow.PrimitiveTypes.Int32
		if ta.ID() == arrow.INT64 || tb.ID() == arrow.INT64 {
			t = arrow.PrimitiveTypes.Int64
		}
		var err error
		if a, err = c.cast(a, t, desc); err != nil {
			return nil, err
		}
		if b, err = c.cast(b, t, desc); err != nil {
			return nil, err
		}
		var k binKernel
		if t.ID() == arrow.INT32 {
			k = map[string]binKernel{FnAdd: addI32, FnSub: subI32, FnMul: mulI32, FnDiv: divI32, FnMod: modI32}[fn]
		} else {
			k = map[string]binKernel{FnAdd: addI64, FnSub: subI64, FnMul: mulI64, FnDiv: divI64, FnMod: modI64}[fn]
		}
		return mk(a, b, t, k, "integer out of range")
	}
	return c.compileDecimalArith(fn, a, b, desc)
}

func (c *compiler) compileNeg(x node, desc string) (node, error) {
	t := x.dt()
	mk := func(k unaryKernel, ovf string) (node, error) {
		return &unaryNode{x: x, t: t, kern: k, desc: desc, ovfText: ovf}, nil
	}
	switch t.ID() {
	case arrow.NULL:
		return newNullConst(arrow.PrimitiveTypes.Int32), nil
	case arrow.INT32:
		return mk(negI32, "integer out of range")
	case arrow.INT64:
		return mk(negI64, "integer out of range")
	case arrow.DECIMAL64:
		return mk(negI64, "decimal overflow")
	case arrow.FLOAT64:
		return mk(negF64, "")
	case arrow.DECIMAL128:
		return mk(negD128, "decimal overflow")
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return mk(negIv, "interval out of range")
	}
	return nil, nferr.Queryf("operator does not exist: - %s in %s", TypeName(t), desc)
}

func (c *compiler) compileDateArith(fn string, a, b node, desc string) (node, error) {
	ta, tb := a.dt().ID(), b.dt().ID()
	date := arrow.FixedWidthTypes.Date32
	iv := arrow.FixedWidthTypes.MonthDayNanoInterval
	mk := func(a, b node, t arrow.DataType, k binKernel) (node, error) {
		return &arithNode{a: a, b: b, t: t, kern: k, desc: desc, ovfText: "interval out of range"}, nil
	}
	toI64 := func(x node) (node, error) { return c.cast(x, arrow.PrimitiveTypes.Int64, desc) }
	switch {
	case fn == FnAdd && ta == arrow.DATE32 && (tb == arrow.INT32 || tb == arrow.INT64):
		b, err := toI64(b)
		if err != nil {
			return nil, err
		}
		return mk(a, b, date, dateAddDays)
	case fn == FnAdd && (ta == arrow.INT32 || ta == arrow.INT64) && tb == arrow.DATE32:
		a, err := toI64(a)
		if err != nil {
			return nil, err
		}
		return mk(b, a, date, dateAddDays)
	case fn == FnSub && ta == arrow.DATE32 && (tb == arrow.INT32 || tb == arrow.INT64):
		b, err := toI64(b)
		if err != nil {
			return nil, err
		}
		return mk(a, b, date, dateSubDays)
	case fn == FnSub && ta == arrow.DATE32 && tb == arrow.DATE32:
		return &arithNode{a: a, b: b, t: arrow.PrimitiveTypes.Int32, kern: dateDiff, desc: desc, ovfText: "integer out of range"}, nil
	case fn == FnAdd && ta == arrow.DATE32 && tb == arrow.INTERVAL_MONTH_DAY_NANO:
		return mk(a, b, date, dateAddInterval)
	case fn == FnAdd && ta == arrow.INTERVAL_MONTH_DAY_NANO && tb == arrow.DATE32:
		return mk(b, a, date, dateAddInterval)
	case fn == FnSub && ta == arrow.DATE32 && tb == arrow.INTERVAL_MONTH_DAY_NANO:
		return mk(a, b, date, dateSubInterval)
	case (fn == FnAdd || fn == FnSub) && ta == arrow.INTERVAL_MONTH_DAY_NANO && tb == arrow.INTERVAL_MONTH_DAY_NANO:
		if fn == FnAdd {
			return mk(a, b, iv, addIv)
		}
		return mk(a, b, iv, subIv)
	case (fn == FnMul || fn == FnDiv) && ta == arrow.INTERVAL_MONTH_DAY_NANO && IsNumeric(b.dt()),
		fn == FnMul && IsNumeric(a.dt()) && tb == arrow.INTERVAL_MONTH_DAY_NANO:
		if ta != arrow.INTERVAL_MONTH_DAY_NANO {
			a, b = b, a
		}
		f, err := c.cast(b, arrow.PrimitiveTypes.Float64, desc)
		if err != nil {
			return nil, err
		}
		k := ivMul
		if fn == FnDiv {
			k = ivDiv
		}
		return mk(a, f, iv, k)
	}
	return nil, nferr.Queryf("operator does not exist: %s %s %s in %s", TypeName(a.dt()), infix[fn], TypeName(b.dt()), desc)
}

// ------------------------------------------------------- integer kernels

type integer interface{ ~int32 | ~int64 }

func addChecked[T integer](o, a, b []T, sel []int32, n int) bool {
	var ovf T
	if sel == nil {
		o, a, b = o[:n], a[:n], b[:n]
		for i := range o {
			r := a[i] + b[i]
			ovf |= (a[i] ^ r) & (b[i] ^ r) // sign bit set iff the signs of a and b agree and r's differs
			o[i] = r
		}
	} else {
		for _, i := range sel {
			r := a[i] + b[i]
			ovf |= (a[i] ^ r) & (b[i] ^ r)
			o[i] = r
		}
	}
	return ovf < 0
}

func subChecked[T integer](o, a, b []T, sel []int32, n int) bool {
	var ovf T
	if sel == nil {
		o, a, b = o[:n], a[:n], b[:n]
		for i := range o {
			r := a[i] - b[i]
			ovf |= (a[i] ^ b[i]) & (a[i] ^ r) // signs of a and b differ and r's differs from a's
			o[i] = r
		}
	} else {
		for _, i := range sel {
			r := a[i] - b[i]
			ovf |= (a[i] ^ b[i]) & (a[i] ^ r)
			o[i] = r
		}
	}
	return ovf < 0
}

func mulChecked32(o, a, b []int32, sel []int32, n int) bool {
	ovf := 0
	if sel == nil {
		o, a, b = o[:n], a[:n], b[:n]
		for i := range o {
			r := int64(a[i]) * int64(b[i])
			ovf |= b2i(r != int64(int32(r)))
			o[i] = int32(r)
		}
	} else {
		for _, i := range sel {
			r := int64(a[i]) * int64(b[i])
			ovf |= b2i(r != int64(int32(r)))
			o[i] = int32(r)
		}
	}
	return ovf != 0
}

// mul64 returns a*b and whether it overflowed int64: the signed high word
// of the 128-bit product must be the sign extension of the low word.
func mul64(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	shi := int64(hi) - (a>>63)&b - (b>>63)&a
	return int64(lo), shi != int64(lo)>>63
}

func mulChecked64(o, a, b []int64, sel []int32, n int) bool {
	ovf := false
	if sel == nil {
		o, a, b = o[:n], a[:n], b[:n]
		for i := range o {
			r, bad := mul64(a[i], b[i])
			ovf = ovf || bad
			o[i] = r
		}
	} else {
		for _, i := range sel {
			r, bad := mul64(a[i], b[i])
			ovf = ovf || bad
			o[i] = r
		}
	}
	return ovf
}

// anyZero reports whether b is 0 at some row of sel.
func anyZero[T integer | float64](b []T, sel []int32, n int) bool {
	z := 0
	if sel == nil {
		for _, x := range b[:n] {
			z |= b2i(x == 0)
		}
	} else {
		for _, i := range sel {
			z |= b2i(b[i] == 0)
		}
	}
	return z != 0
}

// divChecked divides, truncating toward zero. The divisors were checked
// for zero; the minimum value divided by -1 overflows.
func divChecked[T integer](o, a, b []T, sel []int32, n int, minVal T) bool {
	ovf := 0
	if sel == nil {
		o, a, b = o[:n], a[:n], b[:n]
		for i := range o {
			ovf |= b2i(a[i] == minVal && b[i] == -1)
			o[i] = a[i] / b[i]
		}
	} else {
		for _, i := range sel {
			ovf |= b2i(a[i] == minVal && b[i] == -1)
			o[i] = a[i] / b[i]
		}
	}
	return ovf != 0
}

func modInts[T integer](o, a, b []T, sel []int32, n int) {
	// NB: Go defines minVal % -1 as 0 without trapping, which is the SQL
	// answer too.
	if sel == nil {
		o, a, b = o[:n], a[:n], b[:n]
		for i := range o {
			o[i] = a[i] % b[i]
		}
	} else {
		for _, i := range sel {
			o[i] = a[i] % b[i]
		}
	}
}

func okIf(bad bool, code kcode) kcode {
	if bad {
		return code
	}
	return kOK
}

func addI32(out, a, b *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	return okIf(addChecked(out.i32, a.i32, b.i32, sel, n), kOverflow)
}
func subI32(out, a, b *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	return okIf(subChecked(out.i32, a.i32, b.i32, sel, n), kOverflow)
}
func mulI32(out, a, b *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	return okIf(mulChecked32(out.i32, a.i32, b.i32, sel, n), kOverflow)
}
func divI32(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero(b.i32, sel, n) {
		return kDivZero
	}
	out.i32 = Grow(out.i32, n)
	return okIf(divChecked(out.i32, a.i32, b.i32, sel, n, math.MinInt32), kOverflow)
}
func modI32(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero(b.i32, sel, n) {
		return kDivZero
	}
	out.i32 = Grow(out.i32, n)
	modInts(out.i32, a.i32, b.i32, sel, n)
	return kOK
}
func addI64(out, a, b *vec, sel []int32, n int) kcode {
	out.i64 = Grow(out.i64, n)
	return okIf(addChecked(out.i64, a.i64, b.i64, sel, n), kOverflow)
}
func subI64(out, a, b *vec, sel []int32, n int) kcode {
	out.i64 = Grow(out.i64, n)
	return okIf(subChecked(out.i64, a.i64, b.i64, sel, n), kOverflow)
}
func mulI64(out, a, b *vec, sel []int32, n int) kcode {
	out.i64 = Grow(out.i64, n)
	return okIf(mulChecked64(out.i64, a.i64, b.i64, sel, n), kOverflow)
}
func divI64(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero(b.i64, sel, n) {
		return kDivZero
	}
	out.i64 = Grow(out.i64, n)
	return okIf(divChecked(out.i64, a.i64, b.i64, sel, n, math.MinInt64), kOverflow)
}
func modI64(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero(b.i64, sel, n) {
		return kDivZero
	}
	out.i64 = Grow(out.i64, n)
	modInts(out.i64, a.i64, b.i64, sel, n)
	return kOK
}

// negChecked negates a at the rows sel (nil: all n); negating minVal
// overflows.
func negChecked[T integer](o, a []T, sel []int32, n int, minVal T) bool {
	ovf := 0
	if sel == nil {
		for i, x := range a[:n] {
			ovf |= b2i(x == minVal)
			o[i] = -x
		}
	} else {
		for _, i := range sel {
			ovf |= b2i(a[i] == minVal)
			o[i] = -a[i]
		}
	}
	return ovf != 0
}

func negI32(out, a *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	return okIf(negChecked(out.i32, a.i32, sel, n, math.MinInt32), kOverflow)
}

func negI64(out, a *vec, sel []int32, n int) kcode {
	out.i64 = Grow(out.i64, n)
	return okIf(negChecked(out.i64, a.i64, sel, n, math.MinInt64), kOverflow)
}

// -------------------------------------------------------- double kernels

func addF64(out, a, b *vec, sel []int32, n int) kcode {
	o := Grow(out.f64, n)
	out.f64 = o
	if sel == nil {
		x, y := a.f64[:n], b.f64[:n]
		for i := range o {
			o[i] = x[i] + y[i]
		}
	} else {
		for _, i := range sel {
			o[i] = a.f64[i] + b.f64[i]
		}
	}
	return kOK
}

func subF64(out, a, b *vec, sel []int32, n int) kcode {
	o := Grow(out.f64, n)
	out.f64 = o
	if sel == nil {
		x, y := a.f64[:n], b.f64[:n]
		for i := range o {
			o[i] = x[i] - y[i]
		}
	} else {
		for _, i := range sel {
			o[i] = a.f64[i] - b.f64[i]
		}
	}
	return kOK
}

func mulF64(out, a, b *vec, sel []int32, n int) kcode {
	o := Grow(out.f64, n)
	out.f64 = o
	if sel == nil {
		x, y := a.f64[:n], b.f64[:n]
		for i := range o {
			o[i] = x[i] * y[i]
		}
	} else {
		for _, i := range sel {
			o[i] = a.f64[i] * b.f64[i]
		}
	}
	return kOK
}

// divF64 follows PostgreSQL: dividing a double by zero is an error, not
// an infinity.
func divF64(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero(b.f64, sel, n) {
		return kDivZero
	}
	o := Grow(out.f64, n)
	out.f64 = o
	if sel == nil {
		x, y := a.f64[:n], b.f64[:n]
		for i := range o {
			o[i] = x[i] / y[i]
		}
	} else {
		for _, i := range sel {
			o[i] = a.f64[i] / b.f64[i]
		}
	}
	return kOK
}

func modF64(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero(b.f64, sel, n) {
		return kDivZero
	}
	o := Grow(out.f64, n)
	out.f64 = o
	if sel == nil {
		for i := range o {
			o[i] = math.Mod(a.f64[i], b.f64[i])
		}
	} else {
		for _, i := range sel {
			o[i] = math.Mod(a.f64[i], b.f64[i])
		}
	}
	return kOK
}

func negF64(out, a *vec, sel []int32, n int) kcode {
	out.f64 = Grow(out.f64, n)
	if sel == nil {
		for i, x := range a.f64[:n] {
			out.f64[i] = -x
		}
	} else {
		for _, i := range sel {
			out.f64[i] = -a.f64[i]
		}
	}
	return kOK
}

// --------------------------------------------------- date and intervals

// dateAddDays adds b days (int64) to dates a; results outside years
// 0001..9999 are errors.
func dateAddDays(out, a, b *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	bad := 0
	lo, hi := int64(MinDate), int64(MaxDate)
	if sel == nil {
		for i := 0; i < n; i++ {
			d := b.i64[i]
			// Clamp first so the sum cannot wrap; any |d| >= 2^32 is out of
			// range anyway.
			d = max(min(d, 1<<32), -1<<32)
			r := int64(a.i32[i]) + d
			bad |= b2i(r < lo || r > hi)
			out.i32[i] = int32(r)
		}
	} else {
		for _, i := range sel {
			d := max(min(b.i64[i], 1<<32), -1<<32)
			r := int64(a.i32[i]) + d
			bad |= b2i(r < lo || r > hi)
			out.i32[i] = int32(r)
		}
	}
	return okIf(bad != 0, kRange)
}

func dateSubDays(out, a, b *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	bad := 0
	lo, hi := int64(MinDate), int64(MaxDate)
	if sel == nil {
		for i := 0; i < n; i++ {
			d := max(min(b.i64[i], 1<<32), -1<<32)
			r := int64(a.i32[i]) - d
			bad |= b2i(r < lo || r > hi)
			out.i32[i] = int32(r)
		}
	} else {
		for _, i := range sel {
			d := max(min(b.i64[i], 1<<32), -1<<32)
			r := int64(a.i32[i]) - d
			bad |= b2i(r < lo || r > hi)
			out.i32[i] = int32(r)
		}
	}
	return okIf(bad != 0, kRange)
}

// dateDiff is date - date in days (INTEGER).
func dateDiff(out, a, b *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	bad := 0
	if sel == nil {
		for i := 0; i < n; i++ {
			r := int64(a.i32[i]) - int64(b.i32[i])
			bad |= b2i(r != int64(int32(r)))
			out.i32[i] = int32(r)
		}
	} else {
		for _, i := range sel {
			r := int64(a.i32[i]) - int64(b.i32[i])
			bad |= b2i(r != int64(int32(r)))
			out.i32[i] = int32(r)
		}
	}
	return okIf(bad != 0, kOverflow)
}

const NanosPerDay = 86400 * 1000 * 1000 * 1000

// dateAddIv adds an interval to a date the PostgreSQL way: months first
// (clamping the day to the end of the month: 2024-01-31 + 1 month =
// 2024-02-29), then days. A time of day (nanoseconds that are not whole
// days) is an error: nicflow has no timestamps.
func dateAddIv(d int32, iv arrow.MonthDayNanoInterval, sign int64) (int32, kcode) {
	if iv.Nanoseconds%NanosPerDay != 0 {
		return 0, kBadInterval
	}
	if d < MinDate || d > MaxDate {
		return 0, kRange
	}
	r := int64(d)
	if iv.Months != 0 {
		r = addMonths(d, sign*int64(iv.Months))
	}
	r += sign * (int64(iv.Days) + iv.Nanoseconds/NanosPerDay)
	if r < int64(MinDate) || r > int64(MaxDate) {
		return 0, kRange
	}
	return int32(r), kOK
}

func dateIvKernel(out, a, b *vec, sel []int32, n int, sign int64) kcode {
	out.i32 = Grow(out.i32, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			r, code := dateAddIv(a.i32[i], b.iv[i], sign)
			if code != kOK {
				return code
			}
			out.i32[i] = r
		}
	} else {
		for _, i := range sel {
			r, code := dateAddIv(a.i32[i], b.iv[i], sign)
			if code != kOK {
				return code
			}
			out.i32[i] = r
		}
	}
	return kOK
}

// ScaleInterval multiplies an interval by f as PostgreSQL does: each
// field scaled, the fraction of months carried into days (30 a month) and
// the fraction of days into the time (24 hours a day).
func ScaleInterval(iv arrow.MonthDayNanoInterval, f float64) (arrow.MonthDayNanoInterval, bool) {
	r, ok := civil.Interval{Months: iv.Months, Days: iv.Days, Nanos: iv.Nanoseconds}.Scale(f)
	if !ok {
		return iv, false
	}
	return arrow.MonthDayNanoInterval{Months: r.Months, Days: r.Days, Nanoseconds: r.Nanos}, true
}

func ivScale(out, a, b *vec, sel []int32, n int, div bool) kcode {
	out.iv = Grow(out.iv, n)
	code := kOK
	each(sel, n, func(i int32) {
		f := b.f64[i]
		if div {
			if f == 0 {
				code = kDivZero
				return
			}
			f = 1 / f
		}
		r, ok := ScaleInterval(a.iv[i], f)
		if !ok {
			code = kOverflow
		}
		out.iv[i] = r
	})
	return code
}

func ivMul(out, a, b *vec, sel []int32, n int) kcode { return ivScale(out, a, b, sel, n, false) }
func ivDiv(out, a, b *vec, sel []int32, n int) kcode { return ivScale(out, a, b, sel, n, true) }

func dateAddInterval(out, a, b *vec, sel []int32, n int) kcode {
	return dateIvKernel(out, a, b, sel, n, 1)
}

func dateSubInterval(out, a, b *vec, sel []int32, n int) kcode {
	return dateIvKernel(out, a, b, sel, n, -1)
}

func ivArith(out, a, b *vec, sel []int32, n int, sign int64) kcode {
	out.iv = Grow(out.iv, n)
	one := func(x, y arrow.MonthDayNanoInterval) (arrow.MonthDayNanoInterval, bool) {
		m := int64(x.Months) + sign*int64(y.Months)
		d := int64(x.Days) + sign*int64(y.Days)
		ns, ok := int64(0), true
		if sign > 0 {
			s := x.Nanoseconds + y.Nanoseconds
			ok = (x.Nanoseconds^s)&(y.Nanoseconds^s) >= 0
			ns = s
		} else {
			s := x.Nanoseconds - y.Nanoseconds
			ok = (x.Nanoseconds^y.Nanoseconds)&(x.Nanoseconds^s) >= 0
			ns = s
		}
		ok = ok && m == int64(int32(m)) && d == int64(int32(d))
		return arrow.MonthDayNanoInterval{Months: int32(m), Days: int32(d), Nanoseconds: ns}, ok
	}
	rows := sel
	if rows == nil {
		for i := 0; i < n; i++ {
			r, ok := one(a.iv[i], b.iv[i])
			if !ok {
				return kOverflow
			}
			out.iv[i] = r
		}
		return kOK
	}
	for _, i := range rows {
		r, ok := one(a.iv[i], b.iv[i])
		if !ok {
			return kOverflow
		}
		out.iv[i] = r
	}
	return kOK
}

func addIv(out, a, b *vec, sel []int32, n int) kcode { return ivArith(out, a, b, sel, n, 1) }
func subIv(out, a, b *vec, sel []int32, n int) kcode { return ivArith(out, a, b, sel, n, -1) }

func negIv(out, a *vec, sel []int32, n int) kcode {
	out.iv = Grow(out.iv, n)
	neg := func(x arrow.MonthDayNanoInterval) (arrow.MonthDayNanoInterval, bool) {
		ok := x.Months != math.MinInt32 && x.Days != math.MinInt32 && x.Nanoseconds != math.MinInt64
		return arrow.MonthDayNanoInterval{Months: -x.Months, Days: -x.Days, Nanoseconds: -x.Nanoseconds}, ok
	}
	if sel == nil {
		for i := 0; i < n; i++ {
			r, ok := neg(a.iv[i])
			if !ok {
				return kOverflow
			}
			out.iv[i] = r
		}
		return kOK
	}
	for _, i := range sel {
		r, ok := neg(a.iv[i])
		if !ok {
			return kOverflow
		}
		out.iv[i] = r
	}
	return kOK
}
