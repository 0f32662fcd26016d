package plan

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/civil"
)

// Constants: literal parsing, casts of constants and the typing helpers
// that depend on them (untyped string literals).

// ParseNumber types a numeric literal: an integer is int32 when it fits,
// else int64, else decimal(p,0); a literal with a point is the smallest
// decimal(p,s) holding it (0.06 is decimal(2,2)); a literal with an
// exponent is float64.
func ParseNumber(text string) (*Const, error) {
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s is out of range for double precision", text)
		}
		return &Const{Typ: TypFloat64, Val: f}, nil
	}
	if !strings.Contains(text, ".") {
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			if v >= math.MinInt32 && v <= math.MaxInt32 {
				return &Const{Typ: TypInt32, Val: int32(v)}, nil
			}
			return &Const{Typ: TypInt64, Val: v}, nil
		}
	}
	intPart, frac, _ := strings.Cut(text, ".")
	intPart = strings.TrimLeft(intPart, "0")
	s := int32(len(frac))
	p := int32(len(intPart)) + s
	if p == 0 {
		p = 1
	}
	if p > MaxDecimalPrecision {
		return nil, fmt.Errorf("number %s has more than %d digits", text, MaxDecimalPrecision)
	}
	u, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		u = new(big.Int)
	}
	return bigToConst(u, DecimalType(p, s))
}

// bigToConst builds a decimal constant of type t from an unscaled value,
// checking that it fits t's precision.
func bigToConst(u *big.Int, t arrow.DataType) (*Const, error) {
	p, _, _ := DecimalPS(t)
	if len(new(big.Int).Abs(u).String()) > int(p) && u.Sign() != 0 {
		return nil, fmt.Errorf("numeric value out of range for %s", TypeString(t))
	}
	if t.ID() == arrow.DECIMAL64 {
		return &Const{Typ: t, Val: u.Int64()}, nil
	}
	return &Const{Typ: t, Val: decimal128.FromBigInt(u)}, nil
}

// unscaled returns a numeric constant as an unscaled big integer and its
// scale (integers have scale 0).
func unscaled(c *Const) (*big.Int, int32, bool) {
	switch v := c.Val.(type) {
	case int32:
		return big.NewInt(int64(v)), 0, true
	case int64:
		_, s, _ := DecimalPS(c.Typ)
		if !IsDecimal(c.Typ) {
			s = 0
		}
		return big.NewInt(v), s, true
	case decimal128.Num:
		_, s, _ := DecimalPS(c.Typ)
		return v.BigInt(), s, true
	}
	return nil, 0, false
}

var bigTen = big.NewInt(10)

// rescale changes the scale of an unscaled value, rounding half away from
// zero when digits are dropped.
func rescale(u *big.Int, from, to int32) *big.Int {
	if to == from {
		return new(big.Int).Set(u)
	}
	if to > from {
		m := new(big.Int).Exp(bigTen, big.NewInt(int64(to-from)), nil)
		return new(big.Int).Mul(u, m)
	}
	d := new(big.Int).Exp(bigTen, big.NewInt(int64(from-to)), nil)
	return divRound(u, d)
}

// divRound is a/b rounded half away from zero.
func divRound(a, b *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	r2 := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2))
	if r2.Cmp(new(big.Int).Abs(b)) >= 0 {
		if (a.Sign() < 0) != (b.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// ConstInt returns an integer constant's value.
func ConstInt(c *Const) int64 {
	switch v := c.Val.(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// ConstFloat returns a numeric constant as a float64.
func ConstFloat(c *Const) float64 {
	if f, ok := c.Val.(float64); ok {
		return f
	}
	u, s, ok := unscaled(c)
	if !ok {
		return 0
	}
	f, _ := new(big.Rat).SetFrac(u, new(big.Int).Exp(bigTen, big.NewInt(int64(s)), nil)).Float64()
	return f
}

// CanCast reports whether CAST(x AS to) is allowed for x of type from.
func CanCast(from, to arrow.DataType) bool {
	switch {
	case arrow.TypeEqual(from, to), IsNullType(from), IsString(from), IsString(to):
		return true
	case IsNumeric(from) && IsNumeric(to):
		return true
	case IsTemporal(from) && IsTimestamp(to), IsTimestamp(from) && IsDate(to):
		return true
	case IsTimestamp(from) && IsTime(to), IsInterval(from) && IsTime(to), IsTime(from) && IsInterval(to):
		return true
	case IsBool(from) && IsInteger(to), IsInteger(from) && IsBool(to):
		return true
	case IsArray(from) && IsArray(to):
		return CanCast(expr.ArrayElem(from), expr.ArrayElem(to))
	}
	return false
}

// CastConst converts a constant to type t, as CAST would in UTC.
func CastConst(c *Const, t arrow.DataType) (*Const, error) { return CastConstIn(c, t, "") }

// CastConstIn converts a constant to type t, as CAST would in the session
// time zone zone ("": UTC).
func CastConstIn(c *Const, t arrow.DataType, zone string) (*Const, error) {
	if c.Param != nil {
		return c.Param.resolve(t), nil
	}
	if arrow.TypeEqual(c.Typ, t) {
		return &Const{Typ: t, Val: c.Val}, nil
	}
	if c.IsNull() {
		return NullConst(t), nil
	}
	if zone != "" && (IsTimestamp(c.Typ) && expr.HasZone(c.Typ) || IsTimestamp(t) && expr.HasZone(t)) {
		loc, err := expr.LoadZone(zone)
		if err != nil {
			return nil, err
		}
		if loc != nil {
			return castConstZone(c, t, loc)
		}
	}
	if s, ok := c.Val.(string); ok {
		return parseAs(s, t)
	}
	if IsString(t) {
		switch v := c.Val.(type) {
		case string:
			return &Const{Typ: t, Val: v}, nil
		case Bytea:
			return &Const{Typ: t, Val: bytea.Format([]byte(v))}, nil
		case arrow.Date32:
			return &Const{Typ: t, Val: v.FormattedString()}, nil
		case arrow.Timestamp:
			return &Const{Typ: t, Val: expr.FormatTimestamp(int64(v), expr.HasZone(c.Typ))}, nil
		case arrow.Time64:
			return &Const{Typ: t, Val: expr.FormatTime(int64(v))}, nil
		case bool:
			return &Const{Typ: t, Val: strconv.FormatBool(v)}, nil
		}
		return &Const{Typ: t, Val: strings.Trim(FormatConst(c), "'")}, nil
	}
	switch v := c.Val.(type) {
	case arrow.Date32:
		if IsTimestamp(t) {
			return &Const{Typ: t, Val: arrow.Timestamp(int64(v) * expr.UsPerDay)}, nil
		}
	case arrow.Timestamp:
		switch {
		case IsTimestamp(t):
			return &Const{Typ: t, Val: v}, nil
		case IsDate(t):
			days, _ := expr.SplitTimestamp(int64(v))
			return &Const{Typ: t, Val: arrow.Date32(days)}, nil
		case IsTime(t):
			_, tod := expr.SplitTimestamp(int64(v))
			return &Const{Typ: t, Val: arrow.Time64(tod)}, nil
		}
	case arrow.MonthDayNanoInterval:
		if IsTime(t) {
			return &Const{Typ: t, Val: arrow.Time64(expr.IntervalToTime(v))}, nil
		}
	case arrow.Time64:
		if IsInterval(t) {
			return &Const{Typ: t, Val: expr.TimeToInterval(int64(v))}, nil
		}
	}
	switch {
	case IsNumeric(c.Typ) && IsInteger(t):
		var v int64
		if f, ok := c.Val.(float64); ok {
			r := math.RoundToEven(f)
			if math.IsNaN(r) || r < math.MinInt64 || r >= math.MaxInt64 {
				return nil, fmt.Errorf("value %v is out of range for %s", f, TypeString(t))
			}
			v = int64(r)
		} else if i, ok := c.Val.(int32); ok {
			v = int64(i) // NB: no big.Int for the common case (IN lists)
		} else if i, ok := c.Val.(int64); ok && !IsDecimal(c.Typ) {
			v = i
		} else {
			u, s, _ := unscaled(c)
			r := rescale(u, s, 0)
			if !r.IsInt64() {
				return nil, fmt.Errorf("value %s is out of range for %s", FormatConst(c), TypeString(t))
			}
			v = r.Int64()
		}
		if t.ID() == arrow.INT32 {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return nil, fmt.Errorf("value %d is out of range for integer", v)
			}
			return &Const{Typ: t, Val: int32(v)}, nil
		}
		return &Const{Typ: t, Val: v}, nil
	case IsNumeric(c.Typ) && IsDecimal(t):
		_, ts, _ := DecimalPS(t)
		var u *big.Int
		if f, ok := c.Val.(float64); ok {
			r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'f', -1, 64))
			if !ok {
				return nil, fmt.Errorf("value %v cannot be converted to %s", f, TypeString(t))
			}
			m := new(big.Int).Exp(bigTen, big.NewInt(int64(ts)), nil)
			r.Mul(r, new(big.Rat).SetInt(m))
			u = divRound(r.Num(), r.Denom())
		} else {
			v, s, _ := unscaled(c)
			u = rescale(v, s, ts)
		}
		return bigToConst(u, t)
	case IsNumeric(c.Typ) && IsFloat(t):
		return &Const{Typ: t, Val: ConstFloat(c)}, nil
	case IsBool(c.Typ) && IsInteger(t):
		v := int64(0)
		if c.Val.(bool) {
			v = 1
		}
		return CastConst(&Const{Typ: TypInt64, Val: v}, t)
	case IsInteger(c.Typ) && IsBool(t):
		return BoolConst(ConstInt(c) != 0), nil
	}
	return nil, fmt.Errorf("cannot cast %s to %s", TypeString(c.Typ), TypeString(t))
}

// Bytea is the value of a BYTEA constant: its bytes (a string type of its
// own, so that it is comparable and never taken for text).
type Bytea string

// castConstZone is CastConstIn of a conversion to or from TIMESTAMPTZ in
// zone loc (not UTC).
func castConstZone(c *Const, t arrow.DataType, loc *time.Location) (*Const, error) {
	from := c.Typ
	switch v := c.Val.(type) {
	case string:
		if IsTimestamp(t) {
			us, err := expr.ParseTimestampTZ(strings.TrimSpace(v), loc)
			if err != nil {
				return nil, err
			}
			return &Const{Typ: t, Val: arrow.Timestamp(us)}, nil
		}
	case arrow.Date32:
		if IsTimestamp(t) {
			return &Const{Typ: t, Val: arrow.Timestamp(expr.TimestampFromLocal(int64(v)*expr.UsPerDay, loc))}, nil
		}
	case arrow.Timestamp:
		us := int64(v)
		switch {
		case IsString(t):
			return &Const{Typ: t, Val: expr.FormatTimestampTZ(us, loc)}, nil
		case IsTimestamp(t) && expr.HasZone(t): // from TIMESTAMP
			return &Const{Typ: t, Val: arrow.Timestamp(expr.TimestampFromLocal(us, loc))}, nil
		}
		w := expr.TimestampToLocal(us, loc)
		if expr.HasZone(from) {
			days, tod := expr.SplitTimestamp(w)
			switch {
			case IsTimestamp(t):
				return &Const{Typ: t, Val: arrow.Timestamp(w)}, nil
			case IsDate(t):
				return &Const{Typ: t, Val: arrow.Date32(days)}, nil
			case IsTime(t):
				return &Const{Typ: t, Val: arrow.Time64(tod)}, nil
			}
		}
	}
	return CastConst(c, t)
}

// parseAs parses a string as a value of type t (PostgreSQL input syntax).
func parseAs(s string, t arrow.DataType) (*Const, error) {
	in := strings.TrimSpace(s)
	bad := func() (*Const, error) {
		return nil, fmt.Errorf("invalid input syntax for type %s: %q", TypeString(t), s)
	}
	switch {
	case IsString(t):
		return &Const{Typ: t, Val: s}, nil
	case IsBinary(t):
		b, msg := bytea.ParseString(s)
		if msg != "" {
			return nil, errors.New(msg)
		}
		return &Const{Typ: t, Val: Bytea(b)}, nil
	case IsDate(t):
		d, err := expr.ParseDate(in)
		if err != nil {
			return nil, err
		}
		return &Const{Typ: t, Val: arrow.Date32(d)}, nil
	case IsBool(t):
		switch strings.ToLower(in) {
		case "t", "true", "yes", "y", "on", "1":
			return BoolConst(true), nil
		case "f", "false", "no", "n", "off", "0":
			return BoolConst(false), nil
		}
		return bad()
	case IsInteger(t):
		v, err := strconv.ParseInt(in, 10, 64)
		if err != nil {
			return bad()
		}
		return CastConst(&Const{Typ: TypInt64, Val: v}, t)
	case IsFloat(t):
		f, err := strconv.ParseFloat(in, 64)
		if err != nil {
			return bad()
		}
		return &Const{Typ: t, Val: f}, nil
	case IsDecimal(t):
		neg := strings.HasPrefix(in, "-")
		num := strings.TrimPrefix(strings.TrimPrefix(in, "-"), "+")
		if num == "" || strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 || num == "." {
			return bad()
		}
		c, err := ParseNumber(num)
		if err != nil {
			return nil, err
		}
		if neg {
			c, err = EvalCall(NewCall(FnNeg, c.Typ, c))
			if err != nil {
				return nil, err
			}
		}
		return CastConst(c, t)
	case IsInterval(t):
		iv, err := ParseInterval(s, "", "")
		if err != nil {
			return nil, err
		}
		return &Const{Typ: t, Val: iv}, nil
	case IsTimestamp(t):
		us, err := expr.ParseTimestamp(in, expr.HasZone(t))
		if err != nil {
			return nil, err
		}
		return &Const{Typ: t, Val: arrow.Timestamp(us)}, nil
	case IsTime(t):
		us, err := expr.ParseTime(in)
		if err != nil {
			return nil, err
		}
		return &Const{Typ: t, Val: arrow.Time64(us)}, nil
	}
	return bad()
}

// ParseInterval parses an interval literal: INTERVAL '90' DAY (value and
// unit) or INTERVAL '3 months 2 days' (PostgreSQL's unit list, read by
// civil.ParseInterval, which storage shares for CSV input).
func ParseInterval(value, unit, toUnit string) (arrow.MonthDayNanoInterval, error) {
	if unit != "" {
		if toUnit != "" {
			return arrow.MonthDayNanoInterval{}, fmt.Errorf("INTERVAL ... %s TO %s is not supported; write INTERVAL '...' with units", strings.ToUpper(unit), strings.ToUpper(toUnit))
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil {
			return arrow.MonthDayNanoInterval{}, fmt.Errorf("invalid interval value %q for unit %s: want an integer", value, strings.ToUpper(unit))
		}
		var iv civil.Interval
		if err := iv.AddUnit(n, unit); err != nil {
			return arrow.MonthDayNanoInterval{}, err
		}
		return arrow.MonthDayNanoInterval{Months: iv.Months, Days: iv.Days, Nanoseconds: iv.Nanos}, nil
	}
	iv, err := civil.ParseInterval(value)
	if err != nil {
		return arrow.MonthDayNanoInterval{}, err
	}
	return arrow.MonthDayNanoInterval{Months: iv.Months, Days: iv.Days, Nanoseconds: iv.Nanos}, nil
}

// isUntyped reports whether e is a string literal whose type is still open.
func isUntyped(e Expr) bool {
	c, ok := e.(*Const)
	return ok && c.Untyped
}

// ResolveUntyped converts an untyped string literal to t when t is a
// concrete non-string type and the text parses; otherwise e is returned
// as is (typed as text).
func ResolveUntyped(e Expr, t arrow.DataType) Expr {
	c, ok := e.(*Const)
	if !ok || !c.Untyped || t == nil || IsNullType(t) {
		return e
	}
	if c.Param != nil {
		return c.Param.resolve(t)
	}
	if IsString(t) {
		return &Const{Typ: TypString, Val: c.Val}
	}
	if IsArray(t) {
		// '{1,2}' beside an array: cast when it runs (array constants
		// are not plan constants).
		return &CastExpr{X: &Const{Typ: TypString, Val: c.Val}, Typ: t}
	}
	if tp, ts, ok := DecimalPS(t); ok {
		// NB: a number with more fraction digits than the decimal beside
		// it keeps them ('0.0001' beside a decimal(12,2) is not 0.00), as
		// a numeric literal would.
		if ip, fs, ok := decimalDigits(c.Val.(string)); ok && fs > ts {
			t = DecimalType(min(MaxDecimalPrecision, max(ip, tp-ts)+fs), min(fs, MaxDecimalPrecision-1))
		}
	}
	v, err := CastConst(&Const{Typ: TypString, Val: c.Val}, t)
	if err != nil {
		return e
	}
	return v
}

// decimalDigits counts the integer and fraction digits of a plain
// decimal number's text ([+-]digits[.digits]); ok false for anything else.
func decimalDigits(text string) (ip, fs int32, ok bool) {
	text = strings.TrimSpace(text)
	text = strings.TrimLeft(strings.TrimLeft(text, "+-"), "0")
	intPart, frac, _ := strings.Cut(text, ".")
	if intPart == "" && frac == "" && !strings.Contains(text, ".") && text != "" {
		return 0, 0, false
	}
	for _, r := range intPart + frac {
		if r < '0' || r > '9' {
			return 0, 0, false
		}
	}
	return int32(len(intPart)), int32(len(frac)), true
}

// CommonTypeOf folds commonType over the types of es, starting from t. An
// untyped string literal adopts the others' type; all-untyped is text.
func CommonTypeOf(t arrow.DataType, es ...Expr) (arrow.DataType, bool) {
	sawUntyped := false
	for _, e := range es {
		if isUntyped(e) {
			sawUntyped = true
			continue
		}
		var ok bool
		if t, ok = CommonType(t, e.Type()); !ok {
			return nil, false
		}
	}
	if sawUntyped && IsNullType(t) {
		t = TypString
	}
	return t, true
}

// Coerce converts e to type t (an implicit conversion the binder decided
// on): constants are converted now, other expressions get a CastExpr.
func Coerce(e Expr, t arrow.DataType) (Expr, error) { return CoerceIn(e, t, "") }

// CoerceIn is Coerce in the session time zone zone ("": UTC).
func CoerceIn(e Expr, t arrow.DataType, zone string) (Expr, error) {
	if c, ok := e.(*Const); ok && c.Param != nil {
		return c.Param.resolve(t), nil
	}
	if arrow.TypeEqual(e.Type(), t) {
		if c, ok := e.(*Const); ok && c.Untyped {
			return &Const{Typ: c.Typ, Val: c.Val}, nil
		}
		return e, nil
	}
	if c, ok := e.(*Const); ok && (!IsArray(t) || c.IsNull()) {
		return CastConstIn(c, t, zone)
	}
	return &CastExpr{X: e, Typ: t, Zone: zone}, nil
}

// FoldNow folds a freshly built call whose arguments are all constants;
// an evaluation error (1/0) leaves the call for run time, where it fails
// only if a row reaches it.
//
// A comparison or arithmetic with a NULL constant operand, and NULL IN
// (list), fold to NULL whatever the other operands are: they are not
// evaluated, nor can they fail (x * y = NULL is NULL even where x * y overflows, as in DuckDB;
// PostgreSQL evaluates it and fails).
func FoldNow(e Expr) Expr {
	c, ok := e.(*Call)
	if !ok {
		return e
	}
	switch c.Fn {
	case FnEq, FnNe, FnLt, FnLe, FnGt, FnGe, FnAdd, FnSub, FnMul, FnDiv, FnMod, FnNeg:
		for _, a := range c.Args {
			if k, ok := a.(*Const); ok && k.IsNull() {
				return NullConst(c.Typ)
			}
		}
	case FnIn:
		// NULL IN (list) is NULL whatever the list holds.
		if k, ok := c.Args[0].(*Const); ok && k.IsNull() {
			return NullConst(c.Typ)
		}
	}
	for _, a := range c.Args {
		if _, ok := a.(*Const); !ok {
			return e
		}
	}
	v, err := EvalCall(c)
	if err != nil || v == nil {
		return e
	}
	return v
}

// FoldToConst folds e completely, if it is constant.
func FoldToConst(e Expr) (*Const, bool, error) {
	var ferr error
	out := MapExpr(e, func(x Expr) Expr {
		switch y := x.(type) {
		case *Call:
			for _, a := range y.Args {
				if _, ok := a.(*Const); !ok {
					return x
				}
			}
			v, err := EvalCall(y)
			if err != nil {
				if ferr == nil {
					ferr = err
				}
				return x
			}
			if v != nil {
				return v
			}
		case *CastExpr:
			if c, ok := y.X.(*Const); ok {
				v, err := CastConstIn(c, y.Typ, y.Zone)
				if err != nil {
					if ferr == nil {
						ferr = err
					}
					return x
				}
				return v
			}
		}
		return x
	})
	if ferr != nil {
		return nil, false, ferr
	}
	c, ok := out.(*Const)
	return c, ok, nil
}
