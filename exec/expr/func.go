package expr

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// abs, round and extract.

func (c *compiler) compileAbs(x node, desc string) (node, error) {
	t := x.dt()
	mk := func(k unaryKernel, ovf string) (node, error) {
		return &unaryNode{x: x, t: t, kern: k, desc: desc, ovfText: ovf}, nil
	}
	switch t.ID() {
	case arrow.NULL:
		return newNullConst(arrow.PrimitiveTypes.Int32), nil
	case arrow.INT32:
		return mk(absI32, "integer out of range")
	case arrow.INT64, arrow.DECIMAL64:
		return mk(absI64, "integer out of range")
	case arrow.FLOAT64:
		return mk(absF64, "")
	case arrow.DECIMAL128:
		return mk(absD128, "decimal overflow")
	}
	return nil, nferr.Queryf("function abs(%s) does not exist in %s", TypeName(t), desc)
}

// absChecked writes |a| at the rows sel (nil: all n); |minVal| overflows.
func absChecked[T integer](o, a []T, sel []int32, n int, minVal T) bool {
	bad := 0
	each(sel, n, func(i int32) {
		x := a[i]
		bad |= b2i(x == minVal)
		if x < 0 {
			x = -x
		}
		o[i] = x
	})
	return bad != 0
}

func absI32(out, a *vec, sel []int32, n int) kcode {
	out.i32 = Grow(out.i32, n)
	return okIf(absChecked(out.i32, a.i32, sel, n, math.MinInt32), kOverflow)
}

func absI64(out, a *vec, sel []int32, n int) kcode {
	out.i64 = Grow(out.i64, n)
	return okIf(absChecked(out.i64, a.i64, sel, n, math.MinInt64), kOverflow)
}

func absF64(out, a *vec, sel []int32, n int) kcode {
	out.f64 = Grow(out.f64, n)
	each(sel, n, func(i int32) { out.f64[i] = math.Abs(a.f64[i]) })
	return kOK
}

func absD128(out, a *vec, sel []int32, n int) kcode {
	out.d = Grow(out.d, n)
	each(sel, n, func(i int32) { out.d[i] = a.d[i].Abs() })
	return kOK
}

// compileRound builds round(x [, digits]) with digits an integer constant:
// decimals round half away from zero to max(digits, 0) fraction digits
// (negative digits round to tens, hundreds...); doubles round half away from
// zero; integers round to 10^-digits when digits < 0.
func (c *compiler) compileRound(args []node, desc string) (node, error) {
	x := args[0]
	var d int64
	if len(args) == 2 {
		dc, ok := args[1].(*constNode)
		if !ok || !(dc.k == pI32 || dc.k == pI64) {
			return nil, nferr.Queryf("the digits of %s must be an integer constant", desc)
		}
		if dc.null {
			return newNullConst(x.dt()), nil
		}
		d = dc.i64
	}
	if d > MaxDecimalPrecision || d < -MaxDecimalPrecision {
		return nil, nferr.Queryf("round digits %d out of range -38..38 in %s", d, desc)
	}
	digits := int32(d)
	t := x.dt()
	switch {
	case t.ID() == arrow.NULL:
		return x, nil
	case t.ID() == arrow.FLOAT64:
		return &funcNode{args: []node{x}, t: t, desc: desc, digits: digits, run: roundFloatKernel}, nil
	case IsInteger(t):
		if digits >= 0 {
			return x, nil
		}
		i64, err := c.cast(x, arrow.PrimitiveTypes.Int64, desc)
		if err != nil {
			return nil, err
		}
		r := &funcNode{args: []node{i64}, t: arrow.PrimitiveTypes.Int64, desc: desc, digits: digits, run: roundIntKernel}
		return c.cast(r, t, desc)
	case isDecimal(t):
		p, s, _ := decimalPS(t)
		if digits >= s {
			return x, nil
		}
		ts := max(digits, 0)
		tp := min(p-s+ts+1, MaxDecimalPrecision) // +1: 9.99 rounds to 10.0
		tp = max(tp, 1)
		wide, err := c.rescale(x, s, true, desc)
		if err != nil {
			return nil, err
		}
		r := &funcNode{args: []node{wide}, t: &arrow.Decimal128Type{Precision: tp, Scale: ts}, desc: desc, digits: digits, fs: s, ts: ts, run: roundDecimalKernel}
		return c.cast(r, decType(tp, ts), desc)
	}
	return nil, nferr.Queryf("function round(%s) does not exist in %s", TypeName(t), desc)
}

func roundFloatKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.f64 = Grow(out.f64, n)
	a := in[0]
	if f.digits == 0 {
		each(sel, n, func(i int32) { out.f64[i] = math.Round(a.f64[i]) })
		return nil
	}
	p := math.Pow(10, float64(f.digits))
	each(sel, n, func(i int32) {
		x := a.f64[i]
		r := math.Round(x*p) / p
		if math.IsInf(x*p, 0) {
			r = x // too large to have fraction digits
		}
		out.f64[i] = r
	})
	return nil
}

func roundIntKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	a := in[0]
	k := -f.digits
	var err error
	each(sel, n, func(i int32) {
		x := a.i64[i]
		if k > 18 {
			out.i64[i] = 0
			return
		}
		m := pow10i64[k]
		r, ovf := mul64(roundDiv64(x, m), m)
		if ovf && err == nil {
			err = errAt("integer out of range", f.desc)
		}
		out.i64[i] = r
	})
	return err
}

func roundDecimalKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.d = Grow(out.d, n)
	a := in[0]
	var err error
	each(sel, n, func(i int32) {
		r, _ := rescale128(a.d[i], f.digits-f.fs) // to scale digits (may be negative)
		if f.digits < 0 {
			var ok bool
			if r, ok = rescale128(r, -f.digits); !ok && err == nil {
				err = errAt("decimal overflow", f.desc)
			}
		}
		out.d[i] = r
	})
	return err
}

// ExtractFields are the fields EXTRACT takes from a date, in the order
// error messages list them.
var ExtractFields = []string{"year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "epoch"}

// extractFuncs computes each field from days since 1970-01-01: the one
// definition the kernel and constant folding (ExtractValue) share.
var extractFuncs = map[string]func(days int64) int64{
	"year":    func(d int64) int64 { y, _, _ := CivilFromDays(d); return y },
	"quarter": func(d int64) int64 { _, m, _ := CivilFromDays(d); return int64(m-1)/3 + 1 },
	"month":   func(d int64) int64 { _, m, _ := CivilFromDays(d); return int64(m) },
	"day":     func(d int64) int64 { _, _, dd := CivilFromDays(d); return int64(dd) },
	// 1970-01-01 was a Thursday (4); Sunday is 0.
	"dow": func(d int64) int64 { return ((d+4)%7 + 7) % 7 },
	// ISO: Monday 1 .. Sunday 7.
	"isodow": func(d int64) int64 { w := ((d+4)%7 + 7) % 7; return ((w + 6) % 7) + 1 },
	"doy":    func(d int64) int64 { y, _, _ := CivilFromDays(d); return d - DaysFromCivil(y, 1, 1) + 1 },
	"week":   isoWeek,
	"epoch":  func(d int64) int64 { return d * 86400 },
}

// isoWeek is the ISO 8601 week number of the date days: weeks start on
// Monday, and week 1 holds the year's first Thursday.
func isoWeek(d int64) int64 {
	isodow := (((d+4)%7+7)%7+6)%7 + 1
	thursday := d - isodow + 4 // the Thursday of d's week decides its year
	y, _, _ := CivilFromDays(thursday)
	return (thursday-DaysFromCivil(y, 1, 1))/7 + 1
}

// ExtractValue returns field of the date days (days since 1970-01-01); ok
// is false for a field not in ExtractFields.
func ExtractValue(field string, days int64) (v int64, ok bool) {
	f := extractFuncs[field]
	if f == nil {
		return 0, false
	}
	return f(days), true
}

func (c *compiler) compileExtract(args []node, desc string) (node, error) {
	fc, ok := args[0].(*constNode)
	if !ok || fc.k != pStr {
		return nil, nferr.Queryf("EXTRACT needs a field name in %s", desc)
	}
	field := ExtractFieldName(fc.s)
	x := args[1]
	if x.dt().ID() == arrow.NULL {
		return newNullConst(arrow.PrimitiveTypes.Int64), nil
	}
	if !ValidExtract(field, x.dt()) {
		if x.dt().ID() != arrow.DATE32 && !IsTimestamp(x.dt()) && !IsTime(x.dt()) && x.dt().ID() != arrow.INTERVAL_MONTH_DAY_NANO {
			return nil, nferr.Queryf("EXTRACT from %s is not supported in %s (DATE, TIMESTAMP, TIMESTAMPTZ, TIME or INTERVAL)", TypeName(x.dt()), desc)
		}
		return nil, nferr.Queryf("unsupported EXTRACT field %q in %s (%s)", fc.s, desc, strings.Join(ExtractFieldsOf(x.dt()), ", "))
	}
	if IsTimestamp(x.dt()) {
		fn := &funcNode{args: []node{x}, t: ExtractResultType(field, x.dt()), desc: desc, field: field, run: extractTsKernel}
		if HasZone(x.dt()) {
			fn.loc = c.loc
		}
		return fn, nil
	}
	if IsTime(x.dt()) {
		return &funcNode{args: []node{x}, t: ExtractResultType(field, x.dt()), desc: desc, field: field, run: extractTimeKernel}, nil
	}
	if x.dt().ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return &funcNode{args: []node{x}, t: ExtractResultType(field, x.dt()), desc: desc, field: field, run: extractIntervalKernel}, nil
	}
	return &funcNode{args: []node{x}, t: arrow.PrimitiveTypes.Int64, desc: desc, field: field, run: extractKernel}, nil
}

// ExtractFieldsOf lists the fields EXTRACT takes from a value of type dt.
func ExtractFieldsOf(dt arrow.DataType) []string {
	if dt.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return IntervalFields
	}
	if IsTime(dt) {
		return TimeFields
	}
	if IsTimestamp(dt) {
		fs := append(append([]string(nil), ExtractFields...), TimestampFields...)
		if HasZone(dt) {
			fs = append(fs, ZoneFields...)
		}
		return fs
	}
	return ExtractFields
}

func extractKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	a, fn := in[0], extractFuncs[f.field]
	each(sel, n, func(i int32) { out.i64[i] = fn(int64(a.i32[i])) })
	return nil
}
