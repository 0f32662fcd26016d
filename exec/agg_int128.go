package exec

// 128-bit integer arithmetic for decimal sums and averages.
//
// Written by hand: decimal128.Num divides through math/big (hundreds of ns),
// too slow for finalizing millions of groups; these helpers are a handful of
// bits.Add64/Mul64/Div64 calls with explicit overflow checks.

import "math/bits"

// i128 is a two's complement 128-bit integer, laid out like an Arrow
// decimal128 value (low word first).
type i128 struct {
	lo uint64
	hi int64
}

func i128From(v int64) i128 { return i128{lo: uint64(v), hi: v >> 63} }

// addInt64 adds v. It cannot overflow in practice: see the INVARIANT at the
// decimal sum.
func (a *i128) addInt64(v int64) {
	lo, c := bits.Add64(a.lo, uint64(v), 0)
	a.lo = lo
	a.hi += v>>63 + int64(c)
}

// add returns a+b and whether it overflowed 128 bits.
func (a i128) add(b i128) (i128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi := a.hi + b.hi + int64(c)
	// Overflow iff both operands have the same sign and the result differs.
	of := (a.hi >= 0) == (b.hi >= 0) && (hi >= 0) != (a.hi >= 0)
	return i128{lo: lo, hi: hi}, of
}

func (a i128) neg() i128 {
	lo, c := bits.Sub64(0, a.lo, 0)
	return i128{lo: lo, hi: -a.hi - int64(c)}
}

func (a i128) isNeg() bool { return a.hi < 0 }

// cmp compares a and b.
func (a i128) cmp(b i128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// abs returns |a| as an unsigned (hi, lo) pair and a's sign.
func (a i128) abs() (hi, lo uint64, neg bool) {
	if a.hi < 0 {
		n := a.neg()
		return uint64(n.hi), n.lo, true
	}
	return uint64(a.hi), a.lo, false
}

func fromAbs(hi, lo uint64, neg bool) i128 {
	r := i128{lo: lo, hi: int64(hi)}
	if neg {
		return r.neg()
	}
	return r
}

// pow10u64 holds 10^0 .. 10^19, the powers of ten an uint64 holds.
var pow10u64 = func() [20]uint64 {
	var p [20]uint64
	p[0] = 1
	for i := 1; i < 20; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// mulPow10 returns a * 10^k (k <= 19) and whether it overflowed 127 bits.
func (a i128) mulPow10(k int) (i128, bool) {
	if k == 0 {
		return a, false
	}
	hi, lo, neg := a.abs()
	m := pow10u64[k]
	h1, l1 := bits.Mul64(lo, m)
	h2, l2 := bits.Mul64(hi, m)
	if h2 != 0 {
		return i128{}, true
	}
	nh, c := bits.Add64(h1, l2, 0)
	if c != 0 || nh>>63 != 0 {
		return i128{}, true
	}
	return fromAbs(nh, l1, neg), false
}

// divRound returns a / d rounded half away from zero (d > 0).
func (a i128) divRound(d uint64) i128 {
	hi, lo, neg := a.abs()
	qh, r1 := hi/d, hi%d
	ql, r := bits.Div64(r1, lo, d)
	// Round half away from zero: compare 2r with d without overflow.
	if r >= d-r {
		var c uint64
		ql, c = bits.Add64(ql, 1, 0)
		qh += c
	}
	return fromAbs(qh, ql, neg)
}

// float64 converts a to the nearest float64 (within an ulp).
func (a i128) float64() float64 {
	hi, lo, neg := a.abs()
	f := float64(hi)*18446744073709551616.0 + float64(lo)
	if neg {
		return -f
	}
	return f
}

// maxDecimal38 is 10^38 - 1, the largest unscaled decimal(38, s).
var maxDecimal38 = func() i128 {
	// 10^38 - 1 = 0x4B3B4CA85A86C47A_098A223FFFFFFFFF
	return i128{lo: 0x098a223fffffffff, hi: 0x4b3b4ca85a86c47a}
}()

// fits38 reports whether a fits decimal(38, s): |a| <= 10^38 - 1.
func (a i128) fits38() bool {
	if a.isNeg() {
		return a.neg().cmp(maxDecimal38) <= 0 && a.cmp(i128{hi: -1 << 63}) != 0
	}
	return a.cmp(maxDecimal38) <= 0
}
