package exec

// A row-at-a-time reference interpreter for expressions, written
// independently of the vectorized kernels (big.Rat arithmetic, the time
// package for dates, a backtracking LIKE matcher). It uses ResultType only
// to learn the type (and so the decimal scale) a subexpression must have.

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

type refEvaluator struct {
	schema *arrow.Schema
	types  map[string]arrow.DataType
}

func newRef(schema *arrow.Schema) *refEvaluator {
	return &refEvaluator{schema: schema, types: map[string]arrow.DataType{}}
}

func (r *refEvaluator) typeOf(e expr.Expr) arrow.DataType {
	k := e.String()
	if t, ok := r.types[k]; ok {
		return t
	}
	t, err := expr.ResultType(e, r.schema)
	if err != nil {
		panic(fmt.Sprintf("ResultType(%s): %v", e, err))
	}
	r.types[k] = t
	return t
}

// errQuery is the reference's error: only the kind is compared.
var errQuery = nferr.Queryf("")

func toRat(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case int32:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	case Dec:
		return new(big.Rat).SetFrac(x.U, pow10Big(x.S)), true
	}
	return nil, false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	case Dec:
		return x.Float64()
	}
	panic(fmt.Sprintf("toFloat(%T)", v))
}

// roundRat rounds r to an integer, half away from zero.
func roundRat(r *big.Rat) *big.Int {
	num, den := new(big.Int).Set(r.Num()), r.Denom()
	neg := num.Sign() < 0
	num.Abs(num)
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Mul(m, big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return q
}

var maxDec38 = new(big.Int).Sub(pow10Big(38), big.NewInt(1))

// fromRat converts an exact value to a row value of type dt.
func fromRat(r *big.Rat, dt arrow.DataType) (any, error) {
	switch t := dt.(type) {
	case *arrow.Int32Type:
		i := roundRat(r)
		if !i.IsInt64() || i.Int64() != int64(int32(i.Int64())) {
			return nil, errQuery
		}
		return int32(i.Int64()), nil
	case *arrow.Int64Type:
		i := roundRat(r)
		if !i.IsInt64() {
			return nil, errQuery
		}
		return i.Int64(), nil
	case *arrow.Decimal64Type:
		u := roundRat(new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10Big(t.Scale))))
		if !u.IsInt64() {
			return nil, errQuery
		}
		return Dec{U: u, S: t.Scale}, nil
	case *arrow.Decimal128Type:
		u := roundRat(new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10Big(t.Scale))))
		if new(big.Int).Abs(u).Cmp(maxDec38) > 0 {
			return nil, errQuery
		}
		return Dec{U: u, S: t.Scale}, nil
	case *arrow.Float64Type:
		f, _ := r.Float64()
		return f, nil
	}
	panic(fmt.Sprintf("fromRat to %s", dt))
}

func dateTime(d arrow.Date32) time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func timeDate(t time.Time) arrow.Date32 { return arrow.Date32(t.Unix() / 86400) }

func refDateInRange(d int64) bool { return d >= int64(expr.MinDate) && d <= int64(expr.MaxDate) }

func refAddMonths(d arrow.Date32, months int64) (int64, bool) {
	y, m, day := dateTime(d).Date()
	t := int64(y)*12 + int64(m-1) + months
	ny, nm := t/12, t%12
	if nm < 0 {
		nm += 12
		ny--
	}
	if ny < 1 || ny > 9999 {
		return 0, false
	}
	last := time.Date(int(ny), time.Month(nm+2), 0, 0, 0, 0, 0, time.UTC).Day()
	if day > last {
		day = last
	}
	return int64(timeDate(time.Date(int(ny), time.Month(nm+1), day, 0, 0, 0, 0, time.UTC))), true
}

// cmpVals compares two non-NULL values of compatible types.
func cmpVals(a, b any) int {
	_, af := a.(float64)
	_, bf := b.(float64)
	if af || bf {
		return cmpFloatPG(toFloat(a), toFloat(b))
	}
	if ra, ok := toRat(a); ok {
		rb, _ := toRat(b)
		return ra.Cmp(rb)
	}
	return CompareValues(a, b)
}

func cmpFloatPG(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// refLike is a backtracking LIKE over runes (esc < 0: none).
func refLike(s, p []rune, esc rune) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	if p[0] == esc && len(p) > 1 {
		return len(s) > 0 && s[0] == p[1] && refLike(s[1:], p[2:], esc)
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if refLike(s[i:], p[1:], esc) {
				return true
			}
		}
		return false
	case '_':
		return len(s) > 0 && refLike(s[1:], p[1:], esc)
	}
	return len(s) > 0 && s[0] == p[0] && refLike(s[1:], p[1:], esc)
}

func (r *refEvaluator) literal(e expr.Expr) any {
	ce, err := expr.CompileExpr(e, r.schema)
	if err != nil {
		panic(err)
	}
	mem := memory.NewGoAllocator()
	arr, err := ce.Eval(mem, &Batch{N: 1})
	if err != nil {
		panic(err)
	}
	defer arr.Release()
	return ArrayValue(arr, 0)
}

// eval computes e on one row. lazy AND/OR follow the engine's value
// semantics (later operands only where not yet decided).
func (r *refEvaluator) eval(e expr.Expr, row []any) (any, error) {
	switch e.Kind {
	case expr.KindColumn:
		return row[e.Index], nil
	case expr.KindLiteral:
		return r.literal(e), nil
	case expr.KindCast:
		x, err := r.eval(e.Args[0], row)
		if err != nil || x == nil {
			return nil, err
		}
		return r.cast(x, r.typeOf(e))
	case expr.KindCase:
		i := 0
		for ; i+1 < len(e.Args); i += 2 {
			c, err := r.eval(e.Args[i], row)
			if err != nil {
				return nil, err
			}
			if c == true {
				v, err := r.eval(e.Args[i+1], row)
				if err != nil || v == nil {
					return nil, err
				}
				return r.convert(v, r.typeOf(e))
			}
		}
		if i < len(e.Args) {
			v, err := r.eval(e.Args[i], row)
			if err != nil || v == nil {
				return nil, err
			}
			return r.convert(v, r.typeOf(e))
		}
		return nil, nil
	}
	switch e.Fn {
	case expr.FnAnd, expr.FnOr:
		decided := e.Fn == expr.FnOr
		res := any(!decided)
		for _, a := range e.Args {
			v, err := r.eval(a, row)
			if err != nil {
				return nil, err
			}
			if v == decided {
				return decided, nil
			}
			if v == nil {
				res = nil
			}
		}
		return res, nil
	case expr.FnCoalesce:
		for _, a := range e.Args {
			v, err := r.eval(a, row)
			if err != nil {
				return nil, err
			}
			if v != nil {
				return r.convert(v, r.typeOf(e))
			}
		}
		return nil, nil
	case expr.FnIsNull, expr.FnIsNotNull:
		v, err := r.eval(e.Args[0], row)
		if err != nil {
			return nil, err
		}
		return (v == nil) == (e.Fn == expr.FnIsNull), nil
	}
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		v, err := r.eval(a, row)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch e.Fn {
	case expr.FnIsDistinctFrom, expr.FnIsNotDistinctFrom:
		a, b := args[0], args[1]
		var distinct bool
		switch {
		case a == nil && b == nil:
			distinct = false
		case a == nil || b == nil:
			distinct = true
		default:
			distinct = cmpVals(a, b) != 0
		}
		return distinct == (e.Fn == expr.FnIsDistinctFrom), nil
	case expr.FnNot:
		if args[0] == nil {
			return nil, nil
		}
		return !args[0].(bool), nil
	case expr.FnIn:
		if args[0] == nil {
			return nil, nil
		}
		sawNull := false
		for _, it := range args[1:] {
			if it == nil {
				sawNull = true
				continue
			}
			if cmpVals(args[0], it) == 0 {
				return true, nil
			}
		}
		if sawNull {
			return nil, nil
		}
		return false, nil
	}
	for _, a := range args {
		if a == nil {
			return nil, nil
		}
	}
	rt := r.typeOf(e)
	switch e.Fn {
	case expr.FnEq, expr.FnNe, expr.FnLt, expr.FnLe, expr.FnGt, expr.FnGe:
		c := cmpVals(args[0], args[1])
		return map[string]bool{expr.FnEq: c == 0, expr.FnNe: c != 0, expr.FnLt: c < 0, expr.FnLe: c <= 0, expr.FnGt: c > 0, expr.FnGe: c >= 0}[e.Fn], nil
	case expr.FnAdd, expr.FnSub, expr.FnMul, expr.FnDiv, expr.FnMod:
		return r.arith(e.Fn, args[0], args[1], rt)
	case expr.FnNeg:
		switch x := args[0].(type) {
		case float64:
			return -x, nil
		case arrow.MonthDayNanoInterval:
			return arrow.MonthDayNanoInterval{Months: -x.Months, Days: -x.Days, Nanoseconds: -x.Nanoseconds}, nil
		}
		q, _ := toRat(args[0])
		return fromRat(q.Neg(q), rt)
	case expr.FnAbs:
		if x, ok := args[0].(float64); ok {
			return math.Abs(x), nil
		}
		q, _ := toRat(args[0])
		return fromRat(q.Abs(q), rt)
	case expr.FnRound:
		d := int32(0)
		if len(args) > 1 {
			d = args[1].(int32)
		}
		if x, ok := args[0].(float64); ok {
			p := math.Pow(10, float64(d))
			return math.Round(x*p) / p, nil
		}
		q, _ := toRat(args[0])
		p := new(big.Rat).SetInt(pow10Big(int32(math.Abs(float64(d)))))
		if d >= 0 {
			q = new(big.Rat).Quo(new(big.Rat).SetInt(roundRat(new(big.Rat).Mul(q, p))), p)
		} else {
			q = new(big.Rat).Mul(new(big.Rat).SetInt(roundRat(new(big.Rat).Quo(q, p))), p)
		}
		return fromRat(q, rt)
	case expr.FnLike:
		esc := rune(-1)
		if len(args) > 2 {
			if s := args[2].(string); s != "" {
				esc, _ = utf8.DecodeRuneInString(s)
			}
		}
		return refLike([]rune(args[0].(string)), []rune(args[1].(string)), esc), nil
	case expr.FnUpper:
		return strings.ToUpper(args[0].(string)), nil
	case expr.FnLower:
		return strings.ToLower(args[0].(string)), nil
	case expr.FnLength:
		return int32(utf8.RuneCountInString(args[0].(string))), nil
	case expr.FnTrim, expr.FnLTrim, expr.FnRTrim:
		cut := " "
		if len(args) > 1 {
			cut = args[1].(string)
		}
		s := args[0].(string)
		switch e.Fn {
		case expr.FnTrim:
			return strings.Trim(s, cut), nil
		case expr.FnLTrim:
			return strings.TrimLeft(s, cut), nil
		}
		return strings.TrimRight(s, cut), nil
	case expr.FnConcat:
		return fmt.Sprint(args[0]) + fmt.Sprint(args[1]), nil
	case expr.FnStrPos:
		s, sub := args[0].(string), args[1].(string)
		i := strings.Index(s, sub)
		if i < 0 {
			return int32(0), nil
		}
		return int32(utf8.RuneCountInString(s[:i]) + 1), nil
	case expr.FnSubstring:
		rs := []rune(args[0].(string))
		start := toI64(args[1])
		end := int64(math.MaxInt64)
		if len(args) > 2 {
			l := toI64(args[2])
			if l < 0 {
				return nil, errQuery
			}
			end = start + l
		}
		from := max(start, 1)
		to := min(end, int64(len(rs))+1)
		if to <= from {
			return "", nil
		}
		return string(rs[from-1 : to-1]), nil
	case expr.FnExtract:
		t := dateTime(args[1].(arrow.Date32))
		switch args[0].(string) {
		case "year":
			return int64(t.Year()), nil
		case "month":
			return int64(t.Month()), nil
		case "day":
			return int64(t.Day()), nil
		case "quarter":
			return int64((t.Month()-1)/3 + 1), nil
		case "dow":
			return int64(t.Weekday()), nil
		case "isodow":
			return int64((t.Weekday()+6)%7 + 1), nil
		case "doy":
			return int64(t.YearDay()), nil
		case "week":
			_, w := t.ISOWeek()
			return int64(w), nil
		case "epoch":
			return t.Unix(), nil
		}
	}
	panic("reference: unsupported function " + e.Fn)
}

func toI64(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	}
	panic(fmt.Sprintf("toI64(%T)", v))
}

func (r *refEvaluator) arith(fn string, a, b any, rt arrow.DataType) (any, error) {
	// Dates and intervals.
	if da, ok := a.(arrow.Date32); ok {
		switch y := b.(type) {
		case arrow.Date32:
			return int32(int64(da) - int64(y)), nil
		case arrow.MonthDayNanoInterval:
			sign := int64(1)
			if fn == expr.FnSub {
				sign = -1
			}
			d, ok := refAddMonths(da, sign*int64(y.Months))
			if !ok {
				return nil, errQuery
			}
			d += sign * int64(y.Days)
			if !refDateInRange(d) {
				return nil, errQuery
			}
			return arrow.Date32(d), nil
		default:
			n := toI64(b)
			if fn == expr.FnSub {
				n = -n
			}
			d := int64(da) + n
			if !refDateInRange(d) {
				return nil, errQuery
			}
			return arrow.Date32(d), nil
		}
	}
	if db, ok := b.(arrow.Date32); ok {
		return r.arith(fn, db, a, rt)
	}
	if rt.ID() == arrow.FLOAT64 {
		x, y := toFloat(a), toFloat(b)
		switch fn {
		case expr.FnAdd:
			return x + y, nil
		case expr.FnSub:
			return x - y, nil
		case expr.FnMul:
			return x * y, nil
		case expr.FnDiv:
			if y == 0 {
				return nil, errQuery
			}
			return x / y, nil
		}
		if y == 0 {
			return nil, errQuery
		}
		return math.Mod(x, y), nil
	}
	x, _ := toRat(a)
	y, _ := toRat(b)
	var q *big.Rat
	switch fn {
	case expr.FnAdd:
		q = new(big.Rat).Add(x, y)
	case expr.FnSub:
		q = new(big.Rat).Sub(x, y)
	case expr.FnMul:
		q = new(big.Rat).Mul(x, y)
	case expr.FnDiv, expr.FnMod:
		if y.Sign() == 0 {
			return nil, errQuery
		}
		quo := new(big.Rat).Quo(x, y)
		if fn == expr.FnDiv && expr.IsInteger(rt) {
			// truncate toward zero
			t := new(big.Int).Quo(quo.Num(), quo.Denom())
			q = new(big.Rat).SetInt(t)
		} else if fn == expr.FnDiv {
			q = quo
		} else {
			t := new(big.Int).Quo(quo.Num(), quo.Denom())
			q = new(big.Rat).Sub(x, new(big.Rat).Mul(y, new(big.Rat).SetInt(t)))
		}
	}
	return fromRat(q, rt)
}

// convert widens a branch value to the CASE/COALESCE result type.
func (r *refEvaluator) convert(v any, rt arrow.DataType) (any, error) {
	if q, ok := toRat(v); ok && expr.IsNumeric(rt) {
		if rt.ID() == arrow.FLOAT64 {
			f, _ := q.Float64()
			return f, nil
		}
		return fromRat(q, rt)
	}
	return v, nil
}

func (r *refEvaluator) cast(v any, rt arrow.DataType) (any, error) {
	switch rt.ID() {
	case arrow.FLOAT64:
		return toFloat(v), nil
	case arrow.STRING:
		switch x := v.(type) {
		case arrow.Date32:
			return dateTime(x).Format("2006-01-02"), nil
		case Dec:
			return x.String(), nil
		}
		return fmt.Sprint(v), nil
	}
	if q, ok := toRat(v); ok {
		return fromRat(q, rt)
	}
	if f, ok := v.(float64); ok {
		if expr.IsInteger(rt) {
			return fromRat(new(big.Rat).SetFloat64(math.RoundToEven(f)), rt)
		}
	}
	return nil, errors.New("reference cast not supported")
}
