package expr

import (
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Casts between the supported types. Rules (PostgreSQL's, unless noted):
//
//   - integer -> narrower integer, decimal -> integer, double -> integer:
//     range-checked; decimal rounds half away from zero, double rounds half
//     to even (rint), NaN and infinities are errors.
//   - integer/decimal -> decimal(p, s): rescaled (rounding half away from
//     zero when the scale shrinks) and checked against p digits.
//   - double -> decimal: the shortest decimal text of the double, rounded
//     half away from zero (0.285 -> 0.29, not 0.28 from binary noise).
//   - decimal/integer -> double: nearest double.
//   - date <-> timestamp: midnight / the day; timestamp <-> timestamptz: the
//     wall clock in the session time zone (zone.go; UTC: the same value).
//   - string -> integer/decimal/double/date/timestamp/boolean: surrounding spaces
//     allowed; anything else is "invalid input syntax" (KindData) naming
//     the value and the expression.
//   - anything -> string: canonical text (dates YYYY-MM-DD, decimals with
//     exactly s fraction digits, doubles in shortest round-trip form,
//     booleans true/false).
//   - boolean <-> integer: 1/0, non-zero is true.
//   - string -> bytea: PostgreSQL's input, hex (\x4142) or escape (AB,
//     \\ a backslash, \nnn octal); bytea -> string: hex (\x4142).

// castNode converts its input to another type.
type castNode struct {
	x        node
	from, to arrow.DataType
	desc     string
	fp, fs   int32 // source decimal precision/scale
	tp, ts   int32 // target decimal precision/scale
	run      func(c *castNode, out, a *vec, sel []int32, n int) error
	loc      *time.Location // the session time zone (nil: UTC)

	v   vec
	s1  []int32
	buf []byte
}

func (c *castNode) dt() arrow.DataType { return c.to }

func (c *castNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	va, err := c.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	s := sel
	c.v.nulls = va.nulls
	if va.nulls != nil {
		s = nonNullSel(&c.s1, sel, b.n, va.nulls, nil)
	}
	if err := c.run(c, &c.v, va, s, b.n); err != nil {
		return nil, err
	}
	return &c.v, nil
}

func (c *castNode) typeText() string { return TypeName(c.to) }

func (c *castNode) overflow(val string) error {
	return nferr.Dataf("value %s is out of range for type %s in %s", val, c.typeText(), c.desc)
}

func (c *castNode) invalid(val []byte) error {
	return nferr.Dataf("invalid input syntax for type %s: %q in %s", c.typeText(), string(val), c.desc)
}

// newCast builds the cast of x to type to, or a KindQuery error when no
// such cast exists.
func newCast(x node, to arrow.DataType, desc string, loc *time.Location) (node, error) {
	from := x.dt()
	if from.ID() == arrow.NULL {
		return newNullConst(to), nil
	}
	if (IsArray(from) || IsArray(to)) && (!arrow.TypeEqual(from, to) || IsInt2Vector(from) != IsInt2Vector(to)) {
		return newArrayCast(x, to, desc, loc)
	}
	c := &castNode{x: x, from: from, to: to, desc: desc, loc: loc}
	c.fp, c.fs, _ = decimalPS(from)
	c.tp, c.ts, _ = decimalPS(to)
	f, t := from.ID(), to.ID()
	switch {
	case arrow.TypeEqual(from, to):
		c.run = castCopy
	case timeCast(f, t) != nil:
		c.run = timeCast(f, t)
	case t == arrow.STRING:
		c.run = castToString
	case f == arrow.STRING:
		switch t {
		case arrow.INT32, arrow.INT64:
			c.run = castStringToInt
		case arrow.FLOAT64:
			c.run = castStringToFloat
		case arrow.DECIMAL64, arrow.DECIMAL128:
			c.run = castStringToDecimal
		case arrow.DATE32:
			c.run = castStringToDate
		case arrow.TIMESTAMP:
			c.run = castStringToTimestamp
		case arrow.BOOL:
			c.run = castStringToBool
		case arrow.BINARY:
			c.run = castStringToBinary
		case arrow.INTERVAL_MONTH_DAY_NANO:
			c.run = castStringToInterval
		default:
			return nil, cannotCast(from, to, desc)
		}
	case (f == arrow.INT32 || f == arrow.INT64) && (t == arrow.INT32 || t == arrow.INT64):
		c.run = castIntToInt
	case (f == arrow.INT32 || f == arrow.INT64) && t == arrow.FLOAT64:
		c.run = castIntToFloat
	case IsNumeric(from) && f != arrow.FLOAT64 && isDecimal(to):
		c.run = castToDecimal
	case isDecimal(from) && (t == arrow.INT32 || t == arrow.INT64):
		c.run = castDecimalToInt
	case isDecimal(from) && t == arrow.FLOAT64:
		c.run = castDecimalToFloat
	case f == arrow.FLOAT64 && (t == arrow.INT32 || t == arrow.INT64):
		c.run = castFloatToInt
	case f == arrow.FLOAT64 && isDecimal(to):
		c.run = castFloatToDecimal
	case f == arrow.DATE32 && t == arrow.TIMESTAMP:
		c.run = castDateToTimestamp
	case f == arrow.TIMESTAMP && t == arrow.DATE32:
		c.run = castTimestampToDate
	case f == arrow.TIMESTAMP && t == arrow.TIMESTAMP:
		c.run = castTimestampKind
	case f == arrow.BOOL && (t == arrow.INT32 || t == arrow.INT64):
		c.run = castBoolToInt
	case (f == arrow.INT32 || f == arrow.INT64) && t == arrow.BOOL:
		c.run = castIntToBool
	default:
		return nil, cannotCast(from, to, desc)
	}
	return c, nil
}

func cannotCast(from, to arrow.DataType, desc string) error {
	return nferr.Queryf("cannot cast %s to %s in %s", TypeName(from), TypeName(to), desc)
}

// ints reads an integer vector (int32 or int64) as int64 at row i.
func intAt(v *vec, k arrow.Type, i int32) int64 {
	if k == arrow.INT32 {
		return int64(v.i32[i])
	}
	return v.i64[i]
}

func castCopy(c *castNode, out, a *vec, sel []int32, n int) error {
	nulls := out.nulls
	*out = *a
	out.nulls = nulls
	return nil
}

func castIntToInt(c *castNode, out, a *vec, sel []int32, n int) error {
	if c.to.ID() == arrow.INT64 {
		// int32 -> int64 widens.
		out.i64 = Grow(out.i64, n)
		if sel == nil {
			for i, x := range a.i32[:n] {
				out.i64[i] = int64(x)
			}
		} else {
			for _, i := range sel {
				out.i64[i] = int64(a.i32[i])
			}
		}
		return nil
	}
	out.i32 = Grow(out.i32, n)
	bad := int32(-1)
	each(sel, n, func(i int32) {
		x := a.i64[i]
		if x != int64(int32(x)) && bad < 0 {
			bad = i
		}
		out.i32[i] = int32(x)
	})
	if bad >= 0 {
		return c.overflow(strconv.FormatInt(a.i64[bad], 10))
	}
	return nil
}

func castIntToFloat(c *castNode, out, a *vec, sel []int32, n int) error {
	out.f64 = Grow(out.f64, n)
	if c.from.ID() == arrow.INT32 {
		if sel == nil {
			for i, x := range a.i32[:n] {
				out.f64[i] = float64(x)
			}
		} else {
			for _, i := range sel {
				out.f64[i] = float64(a.i32[i])
			}
		}
		return nil
	}
	if sel == nil {
		for i, x := range a.i64[:n] {
			out.f64[i] = float64(x)
		}
	} else {
		for _, i := range sel {
			out.f64[i] = float64(a.i64[i])
		}
	}
	return nil
}

func castBoolToInt(c *castNode, out, a *vec, sel []int32, n int) error {
	if c.to.ID() == arrow.INT32 {
		out.i32 = Grow(out.i32, n)
		each(sel, n, func(i int32) { out.i32[i] = int32(b2i(a.b[i])) })
		return nil
	}
	out.i64 = Grow(out.i64, n)
	each(sel, n, func(i int32) { out.i64[i] = int64(b2i(a.b[i])) })
	return nil
}

func castIntToBool(c *castNode, out, a *vec, sel []int32, n int) error {
	out.b = Grow(out.b, n)
	k := c.from.ID()
	each(sel, n, func(i int32) { out.b[i] = intAt(a, k, i) != 0 })
	return nil
}

// decAt reads a decimal or integer vector as an unscaled decimal128.
func decAt(v *vec, k arrow.Type, i int32) decimal128.Num {
	switch k {
	case arrow.INT32:
		return decimal128.FromI64(int64(v.i32[i]))
	case arrow.INT64, arrow.DECIMAL64:
		return decimal128.FromI64(v.i64[i])
	}
	return v.d[i]
}

// castToDecimal converts an integer or decimal to decimal(tp, ts).
func castToDecimal(c *castNode, out, a *vec, sel []int32, n int) error {
	fk, tk := c.from.ID(), c.to.ID()
	delta := c.ts - c.fs
	// Fast path: decimal64/int64 -> decimal64.
	if (fk == arrow.DECIMAL64 || fk == arrow.INT64) && tk == arrow.DECIMAL64 {
		out.i64 = Grow(out.i64, n)
		if delta >= 0 {
			if rescaleUp64(out.i64, a.i64, delta, sel, n) {
				return c.firstOverflow(a, sel, n)
			}
		} else {
			rescaleDown64(out.i64, a.i64, -delta, sel, n)
		}
		if c.tp < MaxDecimal64Precision+1 && c.tp < c.fp-c.fs+c.ts+1 {
			// The target has fewer integer digits than the source: check.
			lim := pow10i64[c.tp]
			bad := false
			if sel == nil {
				for _, x := range out.i64[:n] {
					bad = bad || x >= lim || x <= -lim
				}
			} else {
				for _, i := range sel {
					x := out.i64[i]
					bad = bad || x >= lim || x <= -lim
				}
			}
			if bad {
				return c.firstOverflow(a, sel, n)
			}
		}
		return nil
	}
	// Fast path: an integer or decimal64 widened to decimal128 (scale up by
	// at most 18 digits): one exact 64x64-bit product per value, checked
	// against the target's digits only when it has fewer integer digits
	// than the source (Q1's (1 + l_tax) beside a decimal128 product).
	if (fk == arrow.DECIMAL64 || fk == arrow.INT64 || fk == arrow.INT32) && tk == arrow.DECIMAL128 && delta >= 0 && delta <= 18 {
		out.d = Grow(out.d, n)
		if fk == arrow.INT32 {
			widenToD128(out.d, a.i32, pow10i64[delta], sel, n)
		} else {
			widenToD128(out.d, a.i64, pow10i64[delta], sel, n)
		}
		if c.tp < c.fp-c.fs+c.ts {
			bad := int32(-1)
			each(sel, n, func(i int32) {
				if bad < 0 && !fitsPrecision(out.d[i], c.tp) {
					bad = i
				}
			})
			if bad >= 0 {
				return c.overflow(c.decText(a, bad))
			}
		}
		return nil
	}
	// General path through decimal128.
	var bad = int32(-1)
	if tk == arrow.DECIMAL64 {
		out.i64 = Grow(out.i64, n)
	} else {
		out.d = Grow(out.d, n)
	}
	each(sel, n, func(i int32) {
		r, ok := rescale128(decAt(a, fk, i), delta)
		if ok {
			ok = fitsPrecision(r, c.tp)
		}
		if !ok && bad < 0 {
			bad = i
		}
		if tk == arrow.DECIMAL64 {
			out.i64[i] = int64(r.LowBits())
		} else {
			out.d[i] = r
		}
	})
	if bad >= 0 {
		return c.overflow(c.decText(a, bad))
	}
	return nil
}

// widenToD128 writes a[i] * m as decimal128 (exact: |a| < 2^63, m <= 10^18).
func widenToD128[T int32 | int64](o []decimal128.Num, a []T, m int64, sel []int32, n int) {
	if m == 1 {
		if sel == nil {
			for i, v := range a[:n] {
				o[i] = decimal128.New(int64(v)>>63, uint64(int64(v)))
			}
			return
		}
		for _, i := range sel {
			v := int64(a[i])
			o[i] = decimal128.New(v>>63, uint64(v))
		}
		return
	}
	if sel == nil {
		for i, v := range a[:n] {
			o[i] = Mul64to128(int64(v), m)
		}
		return
	}
	for _, i := range sel {
		o[i] = Mul64to128(int64(a[i]), m)
	}
}

func (c *castNode) firstOverflow(a *vec, sel []int32, n int) error {
	fk := c.from.ID()
	bad := int32(-1)
	each(sel, n, func(i int32) {
		if bad >= 0 {
			return
		}
		r, ok := rescale128(decAt(a, fk, i), c.ts-c.fs)
		if !ok || !fitsPrecision(r, c.tp) {
			bad = i
		}
	})
	if bad < 0 {
		bad = 0
		if sel != nil {
			bad = sel[0]
		}
	}
	return c.overflow(c.decText(a, bad))
}

// decText prints source row i (a decimal or integer) for error messages.
func (c *castNode) decText(a *vec, i int32) string {
	return string(appendDecimal128(nil, decAt(a, c.from.ID(), i), c.fs))
}

func castDecimalToInt(c *castNode, out, a *vec, sel []int32, n int) error {
	fk := c.from.ID()
	is32 := c.to.ID() == arrow.INT32
	if is32 {
		out.i32 = Grow(out.i32, n)
	} else {
		out.i64 = Grow(out.i64, n)
	}
	bad := int32(-1)
	each(sel, n, func(i int32) {
		r, _ := rescale128(decAt(a, fk, i), -c.fs)
		fits := r.HighBits() == int64(r.LowBits())>>63
		x := int64(r.LowBits())
		if is32 {
			fits = fits && x == int64(int32(x))
			out.i32[i] = int32(x)
		} else {
			out.i64[i] = x
		}
		if !fits && bad < 0 {
			bad = i
		}
	})
	if bad >= 0 {
		return c.overflow(c.decText(a, bad))
	}
	return nil
}

var pow10f = func() (p [39]float64) {
	for i := range p {
		p[i] = math.Pow(10, float64(i))
	}
	return p
}()

func castDecimalToFloat(c *castNode, out, a *vec, sel []int32, n int) error {
	out.f64 = Grow(out.f64, n)
	div := pow10f[c.fs]
	if c.from.ID() == arrow.DECIMAL64 {
		each(sel, n, func(i int32) { out.f64[i] = decimalToFloat(a.i64[i], div, c.fs) })
		return nil
	}
	each(sel, n, func(i int32) {
		d := a.d[i]
		if lo := d.LowBits(); d.HighBits() == int64(lo)>>63 {
			out.f64[i] = decimalToFloat(int64(lo), div, c.fs)
			return
		}
		out.f64[i] = exactFloat(d.ToString(c.fs))
	})
	return nil
}

// decimalToFloat is the double nearest unscaled x * 10^-s (div = 10^s).
// NB: for |x| < 2^53 and s <= 22 both operands are exact, so the quotient
// is correctly rounded; beyond, the decimal text is parsed (correctly
// rounded too).
func decimalToFloat(x int64, div float64, s int32) float64 {
	if x > -(1<<53) && x < 1<<53 && s <= 22 {
		return float64(x) / div
	}
	return exactFloat(string(appendDecimal64(nil, x, s)))
}

func exactFloat(text string) float64 {
	f, _ := strconv.ParseFloat(text, 64)
	return f
}

func castFloatToInt(c *castNode, out, a *vec, sel []int32, n int) error {
	is32 := c.to.ID() == arrow.INT32
	lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
	if is32 {
		lo, hi = math.MinInt32, math.MaxInt32
		out.i32 = Grow(out.i32, n)
	} else {
		out.i64 = Grow(out.i64, n)
	}
	bad := int32(-1)
	each(sel, n, func(i int32) {
		r := math.RoundToEven(a.f64[i])
		// NB: float64(MaxInt64) is 2^63, itself out of range: hence >=.
		if !(r >= lo && r < hi || is32 && r == hi) {
			if bad < 0 {
				bad = i
			}
			r = 0
		}
		if is32 {
			out.i32[i] = int32(r)
		} else {
			out.i64[i] = int64(r)
		}
	})
	if bad >= 0 {
		return c.overflow(strconv.FormatFloat(a.f64[bad], 'g', -1, 64))
	}
	return nil
}

func castFloatToDecimal(c *castNode, out, a *vec, sel []int32, n int) error {
	is64 := c.to.ID() == arrow.DECIMAL64
	if is64 {
		out.i64 = Grow(out.i64, n)
	} else {
		out.d = Grow(out.d, n)
	}
	bad := int32(-1)
	each(sel, n, func(i int32) {
		x := a.f64[i]
		var r decimal128.Num
		ok := !math.IsNaN(x) && !math.IsInf(x, 0)
		if ok {
			c.buf = strconv.AppendFloat(c.buf[:0], x, 'g', -1, 64)
			r, ok = ParseDecimalBytes(c.buf, c.ts, true)
			ok = ok && fitsPrecision(r, c.tp)
		}
		if !ok && bad < 0 {
			bad = i
		}
		if is64 {
			out.i64[i] = int64(r.LowBits())
		} else {
			out.d[i] = r
		}
	})
	if bad >= 0 {
		return c.overflow(strconv.FormatFloat(a.f64[bad], 'g', -1, 64))
	}
	return nil
}

// ------------------------------------------------------------- to string

// strWriter builds a string vector row by row in ascending row order,
// keeping the offsets of skipped rows valid (empty strings).
type strWriter struct {
	v   *vec
	pos int // next offset index to set
}

func newStrWriter(v *vec, n int) strWriter {
	v.off = Grow(v.off, n+1)
	v.str = v.str[:0]
	return strWriter{v: v}
}

// at starts row i: rows since the last one become empty strings.
func (w *strWriter) at(i int32) {
	for ; w.pos <= int(i); w.pos++ {
		w.v.off[w.pos] = int32(len(w.v.str))
	}
}

// finish closes the vector of n rows.
func (w *strWriter) finish(n int) {
	for ; w.pos <= n; w.pos++ {
		w.v.off[w.pos] = int32(len(w.v.str))
	}
}

func castToString(c *castNode, out, a *vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	fk := c.from.ID()
	zone := HasZone(c.from)
	z := newTZCache(c.loc)
	each(sel, n, func(i int32) {
		w.at(i)
		s := out.str
		switch fk {
		case arrow.INT32:
			s = strconv.AppendInt(s, int64(a.i32[i]), 10)
		case arrow.INT64:
			s = strconv.AppendInt(s, a.i64[i], 10)
		case arrow.FLOAT64:
			s = appendFloat(s, a.f64[i])
		case arrow.DECIMAL64:
			s = appendDecimal64(s, a.i64[i], c.fs)
		case arrow.DECIMAL128:
			s = appendDecimal128(s, a.d[i], c.fs)
		case arrow.DATE32:
			s = appendDate(s, a.i32[i])
		case arrow.TIMESTAMP:
			if zone {
				s = z.appendTimestampTZ(s, a.i64[i])
			} else {
				s = appendTimestamp(s, a.i64[i], false)
			}
		case arrow.TIME64:
			s = civil.AppendTimeOfDay(s, a.i64[i])
		case arrow.BOOL:
			s = strconv.AppendBool(s, a.b[i])
		case arrow.STRING:
			s = append(s, a.strAt(i)...)
		case arrow.BINARY:
			s = bytea.AppendHex(s, a.strAt(i))
		case arrow.INTERVAL_MONTH_DAY_NANO:
			s = appendInterval(s, a.iv[i])
		}
		out.str = s
	})
	w.finish(n)
	return nil
}

// FormatInterval prints an interval as PostgreSQL does ("1 year 2 mons
// 3 days 04:05:06.5").
func FormatInterval(iv arrow.MonthDayNanoInterval) string { return string(appendInterval(nil, iv)) }

// appendInterval prints an interval as PostgreSQL does: "1 year 2 mons
// 3 days 04:05:06.5"; the zero interval is "00:00:00".
func appendInterval(dst []byte, iv arrow.MonthDayNanoInterval) []byte {
	start := len(dst)
	unit := func(v int64, one, many string) {
		if v == 0 {
			return
		}
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendInt(dst, v, 10)
		if v == 1 { // PostgreSQL: "-1 days"
			dst = append(dst, one...)
		} else {
			dst = append(dst, many...)
		}
	}
	unit(int64(iv.Months/12), " year", " years")
	unit(int64(iv.Months%12), " mon", " mons")
	unit(int64(iv.Days), " day", " days")
	ns := iv.Nanoseconds
	if ns == 0 && len(dst) > start {
		return dst
	}
	if len(dst) > start {
		dst = append(dst, ' ')
	}
	u := uint64(ns)
	if ns < 0 {
		dst = append(dst, '-')
		u = uint64(-ns)
	}
	secs := u / 1e9
	two := func(v uint64) { dst = append(dst, byte('0'+v/10), byte('0'+v%10)) }
	h := secs / 3600
	if h < 10 {
		dst = append(dst, '0')
	}
	dst = strconv.AppendUint(dst, h, 10)
	dst = append(dst, ':')
	two(secs / 60 % 60)
	dst = append(dst, ':')
	two(secs % 60)
	if frac := u % 1e9; frac != 0 {
		// Microseconds when exact, else nanoseconds, without trailing zeros.
		digits := []byte(strconv.FormatUint(frac+1e9, 10)[1:])
		for len(digits) > 0 && digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
		}
		dst = append(dst, '.')
		dst = append(dst, digits...)
	}
	return dst
}

// FormatFloat prints a double the way PostgreSQL does (appendFloat).
func FormatFloat(x float64) string { return string(appendFloat(nil, x)) }

// appendFloat prints a double the way PostgreSQL does: the shortest digits
// that read back exactly, in positional form unless the decimal exponent
// is below -4 or at least 15 (1234567, 0.0001, 1e+15, 1e-05); Infinity,
// -Infinity, NaN.
func appendFloat(dst []byte, x float64) []byte {
	switch {
	case math.IsInf(x, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(x, -1):
		return append(dst, "-Infinity"...)
	case x == 0 || math.IsNaN(x):
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	}
	if ax := math.Abs(x); ax >= 1e15 || ax < 1e-4 {
		return strconv.AppendFloat(dst, x, 'e', -1, 64)
	}
	return strconv.AppendFloat(dst, x, 'f', -1, 64)
}

// ------------------------------------------------------------ from string

// trimSign trims the spaces around b and takes a leading sign off.
func trimSign(b []byte) (digits []byte, neg bool) {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	b = b[i:j]
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		return b[1:], b[0] == '-'
	}
	return b, false
}

// parseInt parses a trimmed decimal integer; ok is false on bad syntax,
// overflow reports a valid number out of int64 range.
func parseInt(b []byte) (v int64, ok, overflow bool) {
	b, neg := trimSign(b)
	if len(b) == 0 {
		return 0, false, false
	}
	var u uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false, false
		}
		if u > (math.MaxUint64-9)/10 {
			overflow = true
			continue
		}
		u = u*10 + uint64(ch-'0')
	}
	if overflow {
		return 0, true, true
	}
	if neg {
		if u > 1<<63 {
			return 0, true, true
		}
		return -int64(u), true, false
	}
	if u > math.MaxInt64 {
		return 0, true, true
	}
	return int64(u), true, false
}

func castStringToInt(c *castNode, out, a *vec, sel []int32, n int) error {
	is32 := c.to.ID() == arrow.INT32
	if is32 {
		out.i32 = Grow(out.i32, n)
	} else {
		out.i64 = Grow(out.i64, n)
	}
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		v, ok, ovf := parseInt(s)
		switch {
		case !ok:
			err = c.invalid(s)
		case ovf || (is32 && v != int64(int32(v))):
			err = c.overflow(strconv.Quote(string(s)))
		case is32:
			out.i32[i] = int32(v)
		default:
			out.i64[i] = v
		}
	})
	return err
}

func castStringToFloat(c *castNode, out, a *vec, sel []int32, n int) error {
	out.f64 = Grow(out.f64, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		t := TrimSpaceBytes(s)
		v, perr := strconv.ParseFloat(string(t), 64)
		if perr != nil && !isRangeErr(perr) || len(t) == 0 || t[0] == '_' || hasUnderscore(t) || isHexFloat(t) {
			err = c.invalid(s)
			return
		}
		if perr != nil {
			err = c.overflow(strconv.Quote(string(s)))
			return
		}
		out.f64[i] = v
	})
	return err
}

// hasUnderscore and isHexFloat reject Go-only float syntax that SQL does
// not accept (1_000, 0x1p4).
func hasUnderscore(b []byte) bool {
	for _, c := range b {
		if c == '_' {
			return true
		}
	}
	return false
}

func isHexFloat(b []byte) bool {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	return len(b) > 1 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')
}

// TrimSpaceBytes trims ASCII white space around b.
func TrimSpaceBytes(b []byte) []byte { return civil.TrimSpace(b) }

func castStringToDecimal(c *castNode, out, a *vec, sel []int32, n int) error {
	is64 := c.to.ID() == arrow.DECIMAL64
	if is64 {
		out.i64 = Grow(out.i64, n)
	} else {
		out.d = Grow(out.d, n)
	}
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		r, ok := ParseDecimalBytes(s, c.ts, true)
		if !ok {
			// NB: at a hugely negative scale every well-formed number
			// rounds to 0 and parses: failing then is a syntax error.
			if _, wellFormed := ParseDecimalBytes(s, -1000, true); wellFormed {
				err = c.overflow(strconv.Quote(string(s)))
			} else {
				err = c.invalid(s)
			}
			return
		}
		if !fitsPrecision(r, c.tp) {
			err = c.overflow(strconv.Quote(string(s)))
			return
		}
		if is64 {
			out.i64[i] = int64(r.LowBits())
		} else {
			out.d[i] = r
		}
	})
	return err
}

func castStringToDate(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		d, ok := parseDate(s)
		if !ok {
			err = c.invalid(s)
			return
		}
		if d < MinDate || d > MaxDate {
			err = nferr.Dataf("date out of range: %q in %s", string(s), c.desc)
			return
		}
		out.i32[i] = d
	})
	return err
}

func castStringToInterval(c *castNode, out, a *vec, sel []int32, n int) error {
	out.iv = Grow(out.iv, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		iv, perr := civil.ParseInterval(string(s))
		if perr != nil {
			err = nferr.Dataf("invalid input syntax for type interval: %q in %s", string(s), c.desc)
			return
		}
		out.iv[i] = arrow.MonthDayNanoInterval{Months: iv.Months, Days: iv.Days, Nanoseconds: iv.Nanos}
	})
	return err
}

func castStringToBool(c *castNode, out, a *vec, sel []int32, n int) error {
	out.b = Grow(out.b, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		v, ok := parseBool(TrimSpaceBytes(s))
		if !ok {
			err = c.invalid(s)
			return
		}
		out.b[i] = v
	})
	return err
}

// castStringToBinary reads bytea input text (internal/bytea).
func castStringToBinary(c *castNode, out, a *vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		w.at(i)
		var msg string
		if out.str, msg = bytea.Parse(out.str, a.strAt(i)); msg != "" {
			err = nferr.Dataf("%s in %s", msg, c.desc)
		}
	})
	w.finish(n)
	return err
}

// parseBool accepts PostgreSQL's spellings, case-insensitively.
func parseBool(b []byte) (bool, bool) {
	if len(b) > 5 {
		return false, false
	}
	var low [5]byte
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		low[i] = ch
	}
	switch string(low[:len(b)]) {
	case "t", "true", "y", "yes", "on", "1":
		return true, true
	case "f", "false", "n", "no", "off", "0":
		return false, true
	}
	return false, false
}
