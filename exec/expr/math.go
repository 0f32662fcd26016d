package expr

import (
	"math"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Mathematical functions over double precision: sqrt, cbrt, exp, ln,
// log10, log(b, x), power, ceil, floor and trunc. Arguments of other numeric types
// are cast to double first; arguments outside a function's domain are a
// data error with PostgreSQL's message (sqrt of a negative number, the
// logarithm of zero or of a negative number, zero to a negative power, a
// negative number to a fractional power), and a result too large for a
// double is "value out of range: overflow".

// The mathematical functions.
const (
	FnSqrt  = "sqrt"  // sqrt(x) [1]
	FnCbrt  = "cbrt"  // cbrt(x) [1]
	FnExp   = "exp"   // exp(x) [1]
	FnLn    = "ln"    // ln(x) [1]
	FnLog10 = "log10" // log10(x) [1]
	FnPower = "power" // power(x, y) [2]
	FnCeil  = "ceil"  // ceil(x) [1]
	FnFloor = "floor" // floor(x) [1]
	FnTrunc = "trunc" // trunc(x) [1]
	// FnLogBase is log(b, x), the logarithm of x to base b [2]: b and x
	// positive, b not 1 (division by zero); an exact power of b gives
	// the exact whole number (log(10, 1000) is 3, not 2.9999999999999996).
	FnLogBase = "log"
)

func (c *compiler) compileMath(e *Expr, args []node, desc string) (node, error) {
	want := 1
	if e.Fn == FnPower || e.Fn == FnLogBase {
		want = 2
	}
	if err := arity(e, want, want); err != nil {
		return nil, err
	}
	f64 := arrow.PrimitiveTypes.Float64
	for i, a := range args {
		if !IsNumeric(a.dt()) && a.dt().ID() != arrow.NULL {
			return nil, nferr.Queryf("function %s(%s) does not exist in %s", e.Fn, TypeName(a.dt()), desc)
		}
		var err error
		if args[i], err = c.cast(a, f64, desc); err != nil {
			return nil, err
		}
	}
	f := &funcNode{desc: desc, t: f64, args: args}
	if e.Fn == FnPower {
		f.run = powerKernel
		return f, nil
	}
	if e.Fn == FnLogBase {
		f.run = logBaseKernel
		return f, nil
	}
	f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		out.f64 = Grow(out.f64, n)
		a, o := in[0].f64, out.f64
		// The domain, checked before computing: the smallest argument
		// tells (sqrt needs x >= 0, the logarithms x > 0).
		if e.Fn == FnSqrt || e.Fn == FnLn || e.Fn == FnLog10 {
			low := math.Inf(1)
			each(sel, n, func(i int32) { low = min(low, a[i]) })
			switch {
			case e.Fn == FnSqrt && low < 0:
				return errAt("cannot take square root of a negative number", f.desc)
			case e.Fn != FnSqrt && low == 0:
				return errAt("cannot take logarithm of zero", f.desc)
			case e.Fn != FnSqrt && low < 0:
				return errAt("cannot take logarithm of a negative number", f.desc)
			}
		}
		// One loop per function, with a direct call the compiler inlines
		// (no function value per row).
		switch e.Fn {
		case FnSqrt:
			each(sel, n, func(i int32) { o[i] = math.Sqrt(a[i]) })
		case FnCbrt:
			each(sel, n, func(i int32) { o[i] = math.Cbrt(a[i]) })
		case FnExp:
			each(sel, n, func(i int32) { o[i] = math.Exp(a[i]) })
		case FnLn:
			each(sel, n, func(i int32) { o[i] = math.Log(a[i]) })
		case FnLog10:
			each(sel, n, func(i int32) { o[i] = math.Log10(a[i]) })
		case FnCeil:
			each(sel, n, func(i int32) { o[i] = math.Ceil(a[i]) })
		case FnFloor:
			each(sel, n, func(i int32) { o[i] = math.Floor(a[i]) })
		case FnTrunc:
			each(sel, n, func(i int32) { o[i] = math.Trunc(a[i]) })
		}
		return checkFinite(o, a, sel, n, f.desc)
	}
	return f, nil
}

func powerKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.f64 = Grow(out.f64, n)
	x, y := in[0].f64, in[1].f64
	bad := ""
	each(sel, n, func(i int32) {
		switch {
		case x[i] == 0 && y[i] < 0:
			bad = "zero raised to a negative power is undefined"
		case x[i] < 0 && y[i] != math.Trunc(y[i]):
			bad = "a negative number raised to a non-integer power yields a complex result"
		}
		out.f64[i] = math.Pow(x[i], y[i])
	})
	if bad != "" {
		return errAt(bad, f.desc)
	}
	return checkFinite(out.f64, x, sel, n, f.desc)
}

func logBaseKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.f64 = Grow(out.f64, n)
	b, x, o := in[0].f64, in[1].f64, out.f64
	low, one := math.Inf(1), false
	each(sel, n, func(i int32) {
		low = min(low, b[i], x[i])
		one = one || b[i] == 1
	})
	switch {
	case low == 0:
		return errAt("cannot take logarithm of zero", f.desc)
	case low < 0:
		return errAt("cannot take logarithm of a negative number", f.desc)
	case one:
		return errAt("division by zero", f.desc)
	}
	each(sel, n, func(i int32) {
		r := math.Log2(x[i]) / math.Log2(b[i])
		// Snap to the whole number k when b^k is x exactly (the ratio
		// of two rounded logarithms misses it by an ulp or so).
		if k := math.Round(r); k != r && math.Abs(r-k) < 1e-9 && math.Pow(b[i], k) == x[i] {
			r = k
		}
		o[i] = r
	})
	return nil
}

// checkFinite fails on a result that overflowed to infinity from a finite
// argument (PostgreSQL's "value out of range: overflow").
func checkFinite(out, arg []float64, sel []int32, n int, desc string) error {
	bad := false
	each(sel, n, func(i int32) {
		bad = bad || (math.IsInf(out[i], 0) && !math.IsInf(arg[i], 0))
	})
	if bad {
		return errAt("value out of range: overflow", desc)
	}
	return nil
}

// FnRandom is random(): a double in [0, 1), a new one for every row (never
// folded into a constant).
const FnRandom = "random"

func (c *compiler) compileRandom(desc string) node {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	return &funcNode{t: arrow.PrimitiveTypes.Float64, desc: desc, run: func(f *funcNode, out *vec, _ []*vec, sel []int32, n int) error {
		out.f64 = Grow(out.f64, n)
		each(sel, n, func(i int32) { out.f64[i] = r.Float64() })
		return nil
	}}
}

// gcd and lcm over integers, PostgreSQL's: both arguments of one type
// (INTEGER or BIGINT, which the binder makes them), the result of that
// type and never negative; gcd(0, 0) is 0, lcm with a zero is 0; a result
// the type cannot hold (gcd(minimum, 0), a large lcm) is "integer out of
// range" / "bigint out of range".
const (
	FnGcd = "gcd" // gcd(a, b) [2]
	FnLcm = "lcm" // lcm(a, b) [2]
)

func (c *compiler) compileGcdLcm(e *Expr, args []node, desc string) (node, error) {
	if err := arity(e, 2, 2); err != nil {
		return nil, err
	}
	t := args[0].dt()
	if t.ID() == arrow.NULL {
		t = args[1].dt()
	}
	if t.ID() != arrow.INT32 && t.ID() != arrow.INT64 {
		return nil, nferr.Queryf("function %s(%s, %s) does not exist in %s", e.Fn, TypeName(args[0].dt()), TypeName(args[1].dt()), desc)
	}
	for _, a := range args {
		if a.dt().ID() == arrow.NULL {
			return newNullConst(t), nil
		}
		if !arrow.TypeEqual(a.dt(), t) {
			return nil, nferr.Queryf("function %s needs two integers of one type, not %s and %s, in %s", e.Fn, TypeName(args[0].dt()), TypeName(args[1].dt()), desc)
		}
	}
	lcm := e.Fn == FnLcm
	if t.ID() == arrow.INT32 {
		return &funcNode{args: args, t: t, desc: desc, run: func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
			out.i32 = Grow(out.i32, n)
			a, b, o := in[0].i32, in[1].i32, out.i32
			bad := false
			each(sel, n, func(i int32) {
				r, ovf := gcdLcm(int64(a[i]), int64(b[i]), lcm)
				bad = bad || ovf || r > math.MaxInt32
				o[i] = int32(r)
			})
			if bad {
				return errAt("integer out of range", f.desc)
			}
			return nil
		}}, nil
	}
	return &funcNode{args: args, t: t, desc: desc, run: func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		out.i64 = Grow(out.i64, n)
		a, b, o := in[0].i64, in[1].i64, out.i64
		bad := false
		each(sel, n, func(i int32) {
			r, ovf := gcdLcm(a[i], b[i], lcm)
			bad = bad || ovf
			o[i] = r
		})
		if bad {
			return errAt("bigint out of range", f.desc)
		}
		return nil
	}}, nil
}

// GcdLcm is gcd(a, b) (lcm false) or lcm(a, b), the kernels' arithmetic,
// for folding constants at plan time; ovf reports a result beyond int64.
func GcdLcm(a, b int64, lcm bool) (r int64, ovf bool) { return gcdLcm(a, b, lcm) }

// gcdLcm is gcd(a, b) (lcm false) or lcm(a, b), not negative; the bool
// reports a result beyond int64 (gcd(MinInt64, 0), gcd(MinInt64,
// MinInt64), a large lcm).
func gcdLcm(a, b int64, lcm bool) (int64, bool) {
	// In uint64: |MinInt64| fits.
	ua, ub := absU64(a), absU64(b)
	x, y := ua, ub
	for y != 0 {
		x, y = y, x%y
	}
	if !lcm {
		return int64(x), x > math.MaxInt64
	}
	if ua == 0 || ub == 0 {
		return 0, false
	}
	q := ua / x
	if q > math.MaxInt64/ub {
		return 0, true
	}
	return int64(q * ub), false
}
