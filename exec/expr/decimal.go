package expr

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Decimal arithmetic is exact integer arithmetic on unscaled values:
// decimal(p<=18, s) as int64, wider as 128-bit decimal128.Num. Result types
// are the binder's (docs/decisions.md D8; engine/plan/types.go):
//
//	a + b, a - b: s = max(s1, s2),  p = min(max(p1-s1, p2-s2) + s + 1, 38)
//	a * b:        s = min(s1+s2, 38), p = min(p1 + p2, 38)
//	a / b:        s = max(s1, 6),   p = min(p1 - s1 + s2 + s, 38)
//	a % b:        s = max(s1, s2),  p = min(min(p1-s1, p2-s2) + s, 38)
//
// Integers take part as decimal(10,0) (int32) and decimal(19,0) (int64).
// Quotients are rounded half away from zero; so are products whose scale
// s1+s2 exceeds 38. Overflow (a result beyond int64 for decimal64, beyond
// 38 digits for decimal128) is a KindQuery error naming the expression.

// pow10i64 holds 10^0 .. 10^18.
var pow10i64 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// maxDec128 is 10^38 - 1, the largest decimal128 magnitude nicflow keeps.
var MaxDec128 = decimal128.GetMaxValue(38)
var minDec128 = MaxDec128.Negate()

// fitsPrecision reports whether |n| < 10^p.
func fitsPrecision(n decimal128.Num, p int32) bool {
	return n.FitsInPrecision(p)
}

func in38(n decimal128.Num) bool {
	return !n.Greater(MaxDec128) && !n.Less(minDec128)
}

// add128 returns a+b and whether it stayed within 38 digits.
func add128(a, b decimal128.Num) (decimal128.Num, bool) {
	lo, c := bits.Add64(a.LowBits(), b.LowBits(), 0)
	hi := a.HighBits() + b.HighBits() + int64(c)
	r := decimal128.New(hi, lo)
	// NB: both operands are within 38 digits (< 2^127 / 2), so the int64
	// high word cannot wrap; the range check is the whole overflow test.
	return r, in38(r)
}

func sub128(a, b decimal128.Num) (decimal128.Num, bool) {
	lo, c := bits.Sub64(a.LowBits(), b.LowBits(), 0)
	hi := a.HighBits() - b.HighBits() - int64(c)
	r := decimal128.New(hi, lo)
	return r, in38(r)
}

// abs128 returns |a| as unsigned words and whether a was negative.
func abs128(a decimal128.Num) (hi, lo uint64, neg bool) {
	hi, lo = uint64(a.HighBits()), a.LowBits()
	if a.HighBits() < 0 {
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
		return hi, lo, true
	}
	return hi, lo, false
}

func fromMag(hi, lo uint64, neg bool) decimal128.Num {
	r := decimal128.New(int64(hi), lo)
	if neg {
		return r.Negate()
	}
	return r
}

// mul128 returns a*b and whether it stayed within 38 digits.
func mul128(a, b decimal128.Num) (decimal128.Num, bool) {
	ah, al, an := abs128(a)
	bh, bl, bn := abs128(b)
	if ah != 0 && bh != 0 {
		return decimal128.Num{}, false
	}
	hi, lo := bits.Mul64(al, bl)
	var ch, cl uint64
	if ah != 0 {
		ch, cl = bits.Mul64(ah, bl)
	} else if bh != 0 {
		ch, cl = bits.Mul64(al, bh)
	}
	if ch != 0 {
		return decimal128.Num{}, false
	}
	hi, c := bits.Add64(hi, cl, 0)
	if c != 0 || hi>>63 != 0 {
		return decimal128.Num{}, false
	}
	r := fromMag(hi, lo, an != bn)
	return r, in38(r)
}

// mul64to128 is the exact 128-bit product of two int64.
func Mul64to128(a, b int64) decimal128.Num {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	shi := int64(hi) - (a>>63)&b - (b>>63)&a
	return decimal128.New(shi, lo)
}

// ----------------------------------------------------------- compilation

// compileDecimalArith builds decimal +, -, *, /, % (integers take part as
// decimal(10,0) / decimal(19,0)).
func (c *compiler) compileDecimalArith(fn string, a, b node, desc string) (node, error) {
	p1, s1, _ := decimalPS(a.dt())
	p2, s2, _ := decimalPS(b.dt())
	var err error
	// Integers become decimals of their full width.
	if IsInteger(a.dt()) {
		if a, err = c.cast(a, decType(p1, 0), desc); err != nil {
			return nil, err
		}
	}
	if IsInteger(b.dt()) {
		if b, err = c.cast(b, decType(p2, 0), desc); err != nil {
			return nil, err
		}
	}
	const ovf = "decimal overflow"
	switch fn {
	case FnAdd, FnSub:
		p, s := DecimalResult(fn, p1, s1, p2, s2)
		wide := p > MaxDecimal64Precision
		if a, err = c.rescale(a, s, wide, desc); err != nil {
			return nil, err
		}
		if b, err = c.rescale(b, s, wide, desc); err != nil {
			return nil, err
		}
		if wide {
			k := addD128
			if fn == FnSub {
				k = subD128
			}
			return &arithNode{a: a, b: b, t: decType(p, s), kern: k, desc: desc, ovfText: ovf}, nil
		}
		k := addI64
		if fn == FnSub {
			k = subI64
		}
		return &arithNode{a: a, b: b, t: decType(p, s), kern: k, desc: desc, ovfText: ovf}, nil
	case FnMul:
		s := s1 + s2 // the exact product's scale
		p, _ := DecimalResult(fn, p1, s1, p2, s2)
		var n node
		switch {
		case p1+p2 <= MaxDecimal64Precision:
			if a, err = c.rescale(a, s1, false, desc); err != nil {
				return nil, err
			}
			if b, err = c.rescale(b, s2, false, desc); err != nil {
				return nil, err
			}
			n = &arithNode{a: a, b: b, t: decType(p, s), kern: mulI64, desc: desc, ovfText: ovf}
		case a.dt().ID() == arrow.DECIMAL64 && b.dt().ID() == arrow.DECIMAL64:
			// Two int64 multiply exactly into 128 bits: no overflow check.
			n = &arithNode{a: a, b: b, t: &arrow.Decimal128Type{Precision: p, Scale: s}, kern: mulI64toD128, desc: desc, ovfText: ovf}
		case s <= MaxDecimalPrecision && (a.dt().ID() == arrow.DECIMAL64) != (b.dt().ID() == arrow.DECIMAL64):
			// decimal128 * decimal64 (Q1's l_extendedprice * (1 -
			// l_discount) * (1 + l_tax)): no widening cast of the narrow
			// operand, and an int64 fast path per value.
			if b.dt().ID() != arrow.DECIMAL64 {
				a, b = b, a
			}
			n = &arithNode{a: a, b: b, t: &arrow.Decimal128Type{Precision: p, Scale: s}, kern: mulD128I64, desc: desc, ovfText: ovf}
		default:
			if a, err = c.rescale(a, s1, true, desc); err != nil {
				return nil, err
			}
			if b, err = c.rescale(b, s2, true, desc); err != nil {
				return nil, err
			}
			if s > MaxDecimalPrecision {
				// The exact product's scale cannot be stored: round it to
				// scale 38 (rare: both operands carry many fraction digits).
				n = &arithNode{a: a, b: b, t: decType(MaxDecimalPrecision, MaxDecimalPrecision), kern: mulScaledKernel(s - MaxDecimalPrecision), desc: desc, ovfText: ovf}
			} else {
				n = &arithNode{a: a, b: b, t: &arrow.Decimal128Type{Precision: p, Scale: s}, kern: mulD128, desc: desc, ovfText: ovf}
			}
		}
		return n, nil
	case FnDiv:
		p, s := DecimalResult(fn, p1, s1, p2, s2)
		if a, err = c.rescale(a, s1, true, desc); err != nil {
			return nil, err
		}
		if b, err = c.rescale(b, s2, true, desc); err != nil {
			return nil, err
		}
		shift := s - s1 + s2 // >= 0 since s >= s1
		t := decType(p, s)
		return &arithNode{a: a, b: b, t: t, kern: divDecKernel(shift, t.ID() == arrow.DECIMAL64), desc: desc, ovfText: ovf}, nil
	case FnMod:
		p, s := DecimalResult(fn, p1, s1, p2, s2)
		wide := max(p1-s1, p2-s2)+s > MaxDecimal64Precision
		if a, err = c.rescale(a, s, wide, desc); err != nil {
			return nil, err
		}
		if b, err = c.rescale(b, s, wide, desc); err != nil {
			return nil, err
		}
		var n node
		if wide {
			n = &arithNode{a: a, b: b, t: &arrow.Decimal128Type{Precision: p, Scale: s}, kern: modD128, desc: desc, ovfText: ovf}
		} else {
			n = &arithNode{a: a, b: b, t: decType(p, s), kern: modI64, desc: desc, ovfText: ovf}
		}
		return c.cast(n, decType(p, s), desc)
	}
	return nil, nferr.Internalf("decimal operator %s", fn)
}

// rescale casts decimal x to scale s, stored as decimal128 when wide
// (else decimal64), keeping its integer digits.
func (c *compiler) rescale(x node, s int32, wide bool, desc string) (node, error) {
	p, sx, _ := decimalPS(x.dt())
	np := min(p-sx+s, MaxDecimalPrecision)
	np = max(np, 1)
	var t arrow.DataType
	if wide {
		if x.dt().ID() == arrow.DECIMAL128 && sx == s {
			return x, nil
		}
		t = &arrow.Decimal128Type{Precision: np, Scale: s}
	} else {
		if x.dt().ID() == arrow.DECIMAL64 && sx == s {
			return x, nil
		}
		if np > MaxDecimal64Precision {
			np = MaxDecimal64Precision
		}
		t = &arrow.Decimal64Type{Precision: np, Scale: s}
	}
	return c.cast(x, t, desc)
}

// --------------------------------------------------------------- kernels

func addD128(out, a, b *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	ok := true
	if sel == nil {
		for i := 0; i < n; i++ {
			r, good := add128(a.d[i], b.d[i])
			ok = ok && good
			out.d[i] = r
		}
	} else {
		for _, i := range sel {
			r, good := add128(a.d[i], b.d[i])
			ok = ok && good
			out.d[i] = r
		}
	}
	return okIf(!ok, kOverflow)
}

func subD128(out, a, b *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	ok := true
	if sel == nil {
		for i := 0; i < n; i++ {
			r, good := sub128(a.d[i], b.d[i])
			ok = ok && good
			out.d[i] = r
		}
	} else {
		for _, i := range sel {
			r, good := sub128(a.d[i], b.d[i])
			ok = ok && good
			out.d[i] = r
		}
	}
	return okIf(!ok, kOverflow)
}

// fits64 reports whether x is an int64 in 128 bits.
func fits64(x decimal128.Num) bool { return x.HighBits() == int64(x.LowBits())>>63 }

// mulD128 multiplies decimal128 values. NB: values that fit int64 (most
// money products) take the exact 64x64->128-bit product: |a*b| < 2^126 <
// 10^38, so it cannot overflow; others take mul128 with its checks.
func mulD128(out, a, b *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	ok := true
	one := func(x, y decimal128.Num) decimal128.Num {
		if fits64(x) && fits64(y) {
			return Mul64to128(int64(x.LowBits()), int64(y.LowBits()))
		}
		r, good := mul128(x, y)
		ok = ok && good
		return r
	}
	if sel == nil {
		x, y, o := a.d[:n], b.d[:n], out.d[:n]
		for i := range o {
			o[i] = one(x[i], y[i])
		}
	} else {
		for _, i := range sel {
			out.d[i] = one(a.d[i], b.d[i])
		}
	}
	return okIf(!ok, kOverflow)
}

// mulD128I64 multiplies decimal128 a by decimal64 b, with mulD128's int64
// fast path.
func mulD128I64(out, a, b *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	ok := true
	one := func(x decimal128.Num, y int64) decimal128.Num {
		if fits64(x) {
			return Mul64to128(int64(x.LowBits()), y)
		}
		r, good := mul128(x, decimal128.FromI64(y))
		ok = ok && good
		return r
	}
	if sel == nil {
		x, y, o := a.d[:n], b.i64[:n], out.d[:n]
		for i := range o {
			o[i] = one(x[i], y[i])
		}
	} else {
		for _, i := range sel {
			out.d[i] = one(a.d[i], b.i64[i])
		}
	}
	return okIf(!ok, kOverflow)
}

func mulI64toD128(out, a, b *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	if sel == nil {
		x, y, o := a.i64[:n], b.i64[:n], out.d[:n]
		for i := range o {
			o[i] = Mul64to128(x[i], y[i])
		}
	} else {
		for _, i := range sel {
			out.d[i] = Mul64to128(a.i64[i], b.i64[i])
		}
	}
	return kOK
}

// mulScaledKernel multiplies decimal128 operands and divides the exact
// product by 10^down, rounding half away from zero (big-integer path; only
// for products whose scale exceeds 38).
func mulScaledKernel(down int32) binKernel {
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(down)), nil)
	return func(out, a, b *vec, sel []int32, n int) kcode {
		out.d = Grow(out.d, n)
		bad := false
		each(sel, n, func(i int32) {
			x := a.d[i].BigInt()
			x.Mul(x, b.d[i].BigInt())
			q, r := x.QuoRem(x, div, new(big.Int))
			if r.Abs(r).Lsh(r, 1).Cmp(div) >= 0 {
				if a.d[i].Sign()*b.d[i].Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				} else {
					q.Add(q, big.NewInt(1))
				}
			}
			if q.BitLen() > 127 {
				bad = true
				return
			}
			v := decimal128.FromBigInt(q)
			bad = bad || !in38(v)
			out.d[i] = v
		})
		return okIf(bad, kOverflow)
	}
}

func isZero128(x decimal128.Num) bool { return x.HighBits() == 0 && x.LowBits() == 0 }

func anyZero128(b []decimal128.Num, sel []int32, n int) bool {
	if sel == nil {
		for _, x := range b[:n] {
			if isZero128(x) {
				return true
			}
		}
		return false
	}
	for _, i := range sel {
		if isZero128(b[i]) {
			return true
		}
	}
	return false
}

// divRound returns round(a * 10^shift / b), half away from zero, and
// whether it fits 38 digits. b is not zero.
func divRound(a, b decimal128.Num, shift int32) (decimal128.Num, bool) {
	// Fast path: everything in int64.
	if a.HighBits() == int64(a.LowBits())>>63 && b.HighBits() == int64(b.LowBits())>>63 && shift <= 18 {
		x, y := int64(a.LowBits()), int64(b.LowBits())
		lim := math.MaxInt64 / pow10i64[shift]
		if x <= lim && x >= -lim && y != math.MinInt64 {
			x *= pow10i64[shift]
			q, r := x/y, x%y
			if r < 0 {
				r = -r
			}
			ay := y
			if ay < 0 {
				ay = -ay
			}
			if r >= ay-r { // 2|r| >= |b|, written without overflow
				if (x < 0) != (y < 0) {
					q--
				} else {
					q++
				}
			}
			return decimal128.FromI64(q), true
		}
	}
	// Middle path: int64 operands whose scaled dividend needs 128 bits
	// (a price divided by 2 at scale 16: TPC-DS q4, q11, q74), in
	// 128-by-64-bit division.
	if a.HighBits() == int64(a.LowBits())>>63 && b.HighBits() == int64(b.LowBits())>>63 && shift <= 19 {
		if q, ok := divRound64(int64(a.LowBits()), int64(b.LowBits()), shift); ok {
			return q, in38(q)
		}
	}
	return divRoundBig(a, b, shift)
}

// divRoundBig is divRound in exact big-integer arithmetic (wide operands
// are rare in divisions, which mostly divide aggregates).
func divRoundBig(a, b decimal128.Num, shift int32) (decimal128.Num, bool) {
	x := a.BigInt()
	x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	y := b.BigInt()
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.CmpAbs(y) >= 0 {
		if x.Sign()*y.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if q.BitLen() > 127 {
		return decimal128.Num{}, false
	}
	res := decimal128.FromBigInt(q)
	return res, in38(res)
}

// divRound64 returns round(x * 10^shift / y), half away from zero, for
// shift <= 19 (10^shift fits 64 bits), computing the dividend in 128 bits.
// It reports false when the quotient does not fit 127 bits.
func divRound64(x, y int64, shift int32) (decimal128.Num, bool) {
	neg := (x < 0) != (y < 0)
	ux, uy := absU64(x), absU64(y)
	m := uint64(1)
	for i := int32(0); i < shift; i++ {
		m *= 10
	}
	hi, lo := bits.Mul64(ux, m)
	qhi, r := hi/uy, hi%uy
	qlo, rem := bits.Div64(r, lo, uy)
	if rem >= uy-rem { // 2*rem >= uy, without overflow
		var c uint64
		qlo, c = bits.Add64(qlo, 1, 0)
		qhi += c
	}
	if qhi>>63 != 0 {
		return decimal128.Num{}, false
	}
	q := decimal128.New(int64(qhi), qlo)
	if neg {
		q = q.Negate()
	}
	return q, true
}

func absU64(v int64) uint64 {
	if v < 0 {
		return uint64(-v) // NB: MinInt64 wraps to 2^63, its magnitude
	}
	return uint64(v)
}

// divDecKernel divides decimal128 operands with the given scale shift into
// a decimal64 (out64) or decimal128 result.
func divDecKernel(shift int32, out64 bool) binKernel {
	return func(out, a, b *vec, sel []int32, n int) kcode {
		if anyZero128(b.d, sel, n) {
			return kDivZero
		}
		if out64 {
			out.i64 = Grow(out.i64, n)
		} else {
			out.d = Grow(out.d, n)
		}
		one := func(i int32) bool {
			q, ok := divRound(a.d[i], b.d[i], shift)
			if !ok {
				return false
			}
			if out64 {
				if q.HighBits() != int64(q.LowBits())>>63 {
					return false
				}
				out.i64[i] = int64(q.LowBits())
			} else {
				out.d[i] = q
			}
			return true
		}
		if sel == nil {
			for i := 0; i < n; i++ {
				if !one(int32(i)) {
					return kOverflow
				}
			}
			return kOK
		}
		for _, i := range sel {
			if !one(i) {
				return kOverflow
			}
		}
		return kOK
	}
}

func modD128(out, a, b *vec, sel []int32, n int) kcode {
	if anyZero128(b.d, sel, n) {
		return kDivZero
	}
	out.d = Grow(out.d, n)
	one := func(x, y decimal128.Num) decimal128.Num {
		if x.HighBits() == int64(x.LowBits())>>63 && y.HighBits() == int64(y.LowBits())>>63 {
			return decimal128.FromI64(int64(x.LowBits()) % int64(y.LowBits()))
		}
		_, r := x.Div(y)
		return r
	}
	if sel == nil {
		for i := 0; i < n; i++ {
			out.d[i] = one(a.d[i], b.d[i])
		}
	} else {
		for _, i := range sel {
			out.d[i] = one(a.d[i], b.d[i])
		}
	}
	return kOK
}

func negD128(out, a *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			out.d[i] = a.d[i].Negate()
		}
	} else {
		for _, i := range sel {
			out.d[i] = a.d[i].Negate()
		}
	}
	return kOK
}

// ------------------------------------------------------------ rescaling

// rescaleUp64 multiplies by 10^k, reporting overflow of int64.
func rescaleUp64(o, a []int64, k int32, sel []int32, n int) bool {
	if k > 18 {
		// Only zero survives.
		bad := false
		each(sel, n, func(i int32) { bad = bad || a[i] != 0; o[i] = 0 })
		return bad
	}
	m := pow10i64[k]
	lim := math.MaxInt64 / m
	bad := 0
	if sel == nil {
		for i := 0; i < n; i++ {
			x := a[i]
			bad |= b2i(x > lim || x < -lim)
			o[i] = x * m
		}
	} else {
		for _, i := range sel {
			x := a[i]
			bad |= b2i(x > lim || x < -lim)
			o[i] = x * m
		}
	}
	return bad != 0
}

// roundDiv64 is x / m rounded half away from zero (m > 0).
func roundDiv64(x, m int64) int64 {
	q, r := x/m, x%m
	if r < 0 {
		if -r >= m-(-r) {
			q--
		}
	} else if r >= m-r {
		q++
	}
	return q
}

// rescaleDown64 divides by 10^k, rounding half away from zero.
func rescaleDown64(o, a []int64, k int32, sel []int32, n int) {
	if k > 18 {
		// |x| < 9.3e18 < 0.5e19 <= 0.5 * 10^k: everything rounds to zero.
		each(sel, n, func(i int32) { o[i] = 0 })
		return
	}
	m := pow10i64[k]
	if sel == nil {
		for i := 0; i < n; i++ {
			o[i] = roundDiv64(a[i], m)
		}
	} else {
		for _, i := range sel {
			o[i] = roundDiv64(a[i], m)
		}
	}
}

// each calls f for every row of sel (nil: all n). For rare paths only: the
// closure call costs what the hot loops avoid.
func each(sel []int32, n int, f func(i int32)) {
	if sel == nil {
		for i := 0; i < n; i++ {
			f(int32(i))
		}
		return
	}
	for _, i := range sel {
		f(i)
	}
}

// pow10Num returns 10^k as decimal128 (k <= 38).
func pow10Num(k int32) decimal128.Num { return decimal128.GetScaleMultiplier(int(k)) }

// rescale128 changes the scale of x by delta digits (positive: multiply,
// negative: divide rounding half away from zero); ok is false on overflow
// of 38 digits.
func rescale128(x decimal128.Num, delta int32) (decimal128.Num, bool) {
	switch {
	case delta == 0:
		return x, in38(x)
	case delta > 0:
		if delta > 38 {
			return decimal128.Num{}, isZero128(x)
		}
		return mul128(x, pow10Num(delta))
	}
	k := -delta
	if k > 38 {
		return decimal128.Num{}, true
	}
	hi, lo, neg := abs128(x)
	if k <= 19 {
		m := uint64(1)
		for i := int32(0); i < k; i++ {
			m *= 10
		}
		qhi := hi / m
		r1 := hi % m
		qlo, r := bits.Div64(r1, lo, m)
		if r >= m-r {
			var c uint64
			qlo, c = bits.Add64(qlo, 1, 0)
			qhi += c
		}
		return fromMag(qhi, qlo, neg), true
	}
	q, r := x.Div(pow10Num(k))
	rh, rl, _ := abs128(r)
	half := pow10Num(k - 1).Mul(decimal128.FromU64(5))
	if decimal128.New(int64(rh), rl).GreaterEqual(half) {
		if neg {
			q = q.Sub(decimal128.FromI64(1))
		} else {
			q = q.Add(decimal128.FromI64(1))
		}
	}
	return q, true
}

// --------------------------------------------------------------- parsing

// parseDecimalBytes parses [spaces][+-]digits[.digits][e[+-]digits][spaces]
// into an unscaled value of the given scale. When round is false, digits
// beyond the scale must be zeros; when true they round half away from zero.
// ok is false on bad syntax or a result beyond 38 digits.
func ParseDecimalBytes(b []byte, scale int32, round bool) (decimal128.Num, bool) {
	b, neg := trimSign(b)
	// The value is D * 10^e10, D the significant digits.
	var digits [80]byte // 80 digits: more than 38 kept plus rounding context
	nd, e10 := 0, 0
	extraNZ := false // a non-zero fraction digit beyond the buffer
	seenPoint, seenDigit := false, false
	k := 0
	for ; k < len(b); k++ {
		ch := b[k]
		if ch == '.' {
			if seenPoint {
				return decimal128.Num{}, false
			}
			seenPoint = true
			continue
		}
		if ch < '0' || ch > '9' {
			break
		}
		seenDigit = true
		switch {
		case nd == 0 && ch == '0':
			if seenPoint {
				e10--
			}
		case nd < len(digits):
			digits[nd] = ch - '0'
			nd++
			if seenPoint {
				e10--
			}
		case seenPoint:
			extraNZ = extraNZ || ch != '0'
		default:
			e10++ // an integer digit beyond the buffer: far too large anyway
		}
	}
	if !seenDigit {
		return decimal128.Num{}, false
	}
	if k < len(b) && (b[k] == 'e' || b[k] == 'E') {
		k++
		eneg := false
		if k < len(b) && (b[k] == '+' || b[k] == '-') {
			eneg = b[k] == '-'
			k++
		}
		v, n := parseDigits(b[k:], 4) // |exponent| < 10000 is plenty
		if n == 0 {
			return decimal128.Num{}, false
		}
		k += n
		if eneg {
			v = -v
		}
		e10 += int(v)
	}
	if k != len(b) {
		return decimal128.Num{}, false
	}
	if nd == 0 {
		return decimal128.Num{}, true
	}
	t := e10 + int(scale)
	keep, zeros := nd, 0
	first, rest := 0, extraNZ
	if t >= 0 {
		zeros = t
	} else {
		keep = nd + t
		if keep >= 0 {
			if keep < nd {
				first = int(digits[keep])
			}
			for d := keep + 1; d < nd; d++ {
				rest = rest || digits[d] != 0
			}
		} else {
			rest = true // all digits are below the first dropped position
			keep = 0
		}
	}
	if keep+zeros > 38 {
		return decimal128.Num{}, false
	}
	var hi, lo uint64
	for d := 0; d < keep+zeros; d++ {
		var dig uint64
		if d < keep {
			dig = uint64(digits[d])
		}
		h1, l1 := bits.Mul64(lo, 10)
		hi = hi*10 + h1
		var c uint64
		lo, c = bits.Add64(l1, dig, 0)
		hi += c
	}
	if first != 0 || rest {
		if !round {
			return decimal128.Num{}, false
		}
		if first >= 5 {
			var c uint64
			lo, c = bits.Add64(lo, 1, 0)
			hi += c
		}
	}
	r := fromMag(hi, lo, neg)
	if !in38(r) {
		return decimal128.Num{}, false
	}
	return r, true
}

// appendDecimal64 appends unscaled v at scale s as text ("-12.30").
func appendDecimal64(dst []byte, v int64, s int32) []byte {
	if s == 0 {
		return strconv.AppendInt(dst, v, 10)
	}
	var tmp [24]byte
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = uint64(-v)
	}
	digits := strconv.AppendUint(tmp[:0], u, 10)
	return appendPoint(dst, digits, s)
}

func appendPoint(dst, digits []byte, s int32) []byte {
	if len(digits) <= int(s) {
		dst = append(dst, '0', '.')
		for i := len(digits); i < int(s); i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-int(s)]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-int(s):]...)
}

// appendDecimal128 appends unscaled v at scale s as text.
func appendDecimal128(dst []byte, v decimal128.Num, s int32) []byte {
	if v.HighBits() == int64(v.LowBits())>>63 {
		return appendDecimal64(dst, int64(v.LowBits()), s)
	}
	bi := v.BigInt()
	if bi.Sign() < 0 {
		dst = append(dst, '-')
		bi.Neg(bi)
	}
	return appendPoint(dst, bi.Append(nil, 10), s)
}
