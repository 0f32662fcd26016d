package exec

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

var emptySchema = arrow.NewSchema(nil, nil)

// evalConst evaluates a column-free expression on one row.
func evalConst(t *testing.T, e expr.Expr) (any, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ce, err := expr.CompileExpr(e, emptySchema)
	if err != nil {
		return nil, err
	}
	arr, err := ce.Eval(mem, &Batch{N: 1})
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	if arr.Len() != 1 {
		t.Fatalf("%s: array of length %d", e, arr.Len())
	}
	return ArrayValue(arr, 0), nil
}

// evalRows evaluates e over rows of schema through a Project.
func evalRows(t *testing.T, schema *arrow.Schema, rows [][]any, e expr.Expr) ([]any, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, rows)
	src, err := NewBatchSource(schema, rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProject(src, []expr.Expr{e}, nil)
	if err != nil {
		src.Close()
		return nil, err
	}
	out, err := CollectRows(NewTestEnv(mem), p)
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(out))
	for i, r := range out {
		vals[i] = r[0]
	}
	return vals, nil
}

func date(s string) expr.Expr { return expr.LitDate(mustDate(s)) }

func dateV(s string) arrow.Date32 { return arrow.Date32(mustDate(s)) }

func dec(s string) expr.Expr {
	e, err := expr.ParseNumberLiteral(s)
	if err != nil {
		panic(err)
	}
	return e
}

func TestExprValues(t *testing.T) {
	f := expr.LitFloat64
	nan := math.NaN()
	cases := []struct {
		e    expr.Expr
		want any
	}{
		// integers
		{expr.Div(expr.LitInt32(7), expr.LitInt32(2)), int32(3)},
		{expr.Div(expr.LitInt32(-7), expr.LitInt32(2)), int32(-3)},
		{expr.Mod(expr.LitInt32(7), expr.LitInt32(-2)), int32(1)},
		{expr.Mod(expr.LitInt32(-7), expr.LitInt32(2)), int32(-1)},
		{expr.Mod(expr.LitInt64(math.MinInt64), expr.LitInt64(-1)), int64(0)},
		{expr.Add(expr.LitInt32(1), expr.LitInt64(2)), int64(3)},
		{expr.Neg(expr.LitInt32(5)), int32(-5)},
		{expr.Abs(expr.LitInt64(-5)), int64(5)},
		// decimals
		{expr.Div(dec("1.00"), dec("3.00")), D("0.3333333333333333")},
		{expr.Div(dec("2.00"), dec("3.00")), D("0.6666666666666667")},
		{expr.Div(dec("-2.00"), dec("3.00")), D("-0.6666666666666667")},
		{expr.Div(dec("1"), dec("8")), int32(0)},
		{expr.Div(dec("1.0"), dec("8")), D("0.125000")},
		{expr.Mul(dec("1.25"), dec("0.05")), D("0.0625")},
		{expr.Add(dec("0.1"), dec("0.02")), D("0.12")},
		{expr.Sub(dec("0.1"), expr.LitInt32(1)), D("-0.9")},
		{expr.Mod(dec("7.5"), dec("2")), D("1.5")},
		{expr.Mod(dec("-7.5"), dec("2")), D("-1.5")},
		{expr.Mul(expr.LitDecimal(123456789012345678, 18, 2), expr.LitDecimal(100, 3, 2)), D("1234567890123456.7800")},
		{expr.Mul(dec("0.10000000000000000001"), dec("0.5000000000000000000")), D("0.05000000000000000000500000000000000000")},
		{expr.Div(dec("10.5"), dec("0.25")), D("42.000000")},
		{expr.Div(expr.LitDecimal(1, 18, 18), dec("3")), D("0.000000000000000000")},
		{expr.Round(dec("2.5"), 0), D("3")},
		{expr.Round(dec("-2.5"), 0), D("-3")},
		{expr.Round(dec("1.234"), 2), D("1.23")},
		{expr.Round(dec("1.235"), 2), D("1.24")},
		{expr.Round(dec("9.99"), 1), D("10.0")},
		{expr.Round(dec("1234.5"), -2), D("1200")},
		{expr.Round(dec("1.5"), 3), D("1.5")},
		{expr.Round(expr.LitInt32(1250), -2), int32(1300)},
		{expr.Round(expr.LitInt32(-1250), -2), int32(-1300)},
		{expr.Round(f(2.5), 0), 2.5 + 0.5},
		{expr.Round(f(-2.345), 2), -2.35},
		{expr.Abs(dec("-1.50")), D("1.50")},
		// doubles
		{expr.Div(f(1), f(4)), 0.25},
		{expr.Mul(f(1.5), expr.LitInt32(2)), 3.0},
		{expr.Add(dec("0.5"), f(0.25)), 0.75},
		{expr.Eq(f(nan), f(nan)), true},
		{expr.Gt(f(nan), f(math.MaxFloat64)), true},
		{expr.Eq(f(math.Copysign(0, -1)), f(0)), true},
		{expr.Lt(f(math.Inf(-1)), f(-math.MaxFloat64)), true},
		// comparisons across types
		{expr.Lt(dec("23.99"), expr.LitInt32(24)), true},
		{expr.Eq(dec("24.00"), expr.LitInt64(24)), true},
		{expr.Eq(dec("0.1"), f(0.1)), true},
		{expr.Ge(date("1994-01-01"), expr.LitString("1994-01-01")), true},
		{expr.Lt(expr.LitString("abc"), expr.LitString("abd")), true},
		{expr.Lt(expr.LitString("Z"), expr.LitString("a")), true},
		{expr.Eq(expr.LitBool(true), expr.LitBool(true)), true},
		{expr.Lt(expr.LitBool(false), expr.LitBool(true)), true},
		// NULL logic
		{expr.Eq(expr.LitNull(expr.NullType), expr.LitNull(expr.NullType)), nil},
		{expr.Eq(expr.LitInt32(1), expr.LitNull(expr.Int32Type)), nil},
		{expr.And(expr.LitNull(expr.BoolType), expr.LitBool(false)), false},
		{expr.And(expr.LitNull(expr.BoolType), expr.LitBool(true)), nil},
		{expr.Or(expr.LitNull(expr.BoolType), expr.LitBool(true)), true},
		{expr.Or(expr.LitNull(expr.BoolType), expr.LitBool(false)), nil},
		{expr.Not(expr.LitNull(expr.BoolType)), nil},
		{expr.IsNull(expr.LitNull(expr.Int32Type)), true},
		{expr.IsNotNull(expr.LitInt32(0)), true},
		{expr.IsDistinctFrom(expr.LitNull(expr.NullType), expr.LitNull(expr.NullType)), false},
		{expr.IsNotDistinctFrom(expr.LitNull(expr.Int32Type), expr.LitNull(expr.Int32Type)), true},
		{expr.IsDistinctFrom(expr.LitInt32(1), expr.LitNull(expr.Int32Type)), true},
		{expr.IsDistinctFrom(expr.LitString("a"), expr.LitString("a")), false},
		{expr.In(expr.LitInt32(1), expr.LitInt32(2), expr.LitNull(expr.NullType)), nil},
		{expr.In(expr.LitInt32(2), expr.LitInt32(2), expr.LitNull(expr.NullType)), true},
		{expr.NotIn(expr.LitInt32(1), expr.LitInt32(2), expr.LitNull(expr.NullType)), nil},
		{expr.NotIn(expr.LitInt32(1), expr.LitInt32(2), expr.LitInt32(3)), true},
		{expr.In(dec("1.50"), dec("1.5"), dec("2")), true},
		{expr.In(expr.LitString("b"), expr.LitString("a"), expr.LitString("b")), true},
		{expr.NullIf(expr.LitInt32(1), expr.LitInt32(1)), nil},
		{expr.NullIf(expr.LitInt32(1), expr.LitInt32(2)), int32(1)},
		{expr.Coalesce(expr.LitNull(expr.Int32Type), expr.LitInt32(2), expr.LitInt32(3)), int32(2)},
		{expr.Coalesce(expr.LitNull(expr.NullType), dec("1.5"), expr.LitInt32(2)), D("1.5")},
		{expr.Case([]expr.Expr{expr.LitBool(false), expr.LitNull(expr.BoolType)}, []expr.Expr{expr.LitInt32(1), expr.LitInt32(2)}, ptr(dec("3.5"))), D("3.5")},
		{expr.Case([]expr.Expr{expr.LitBool(false)}, []expr.Expr{expr.LitInt32(1)}, nil), nil},
		{expr.SimpleCase(expr.LitInt32(2), []expr.Expr{expr.LitInt32(1), expr.LitInt32(2)}, []expr.Expr{expr.LitString("one"), expr.LitString("two")}, nil), "two"},
		// casts
		{expr.Cast(expr.LitString(" 12.345 "), expr.DecimalType(5, 2)), D("12.35")},
		{expr.Cast(expr.LitString("-12.345"), expr.DecimalType(5, 2)), D("-12.35")},
		{expr.Cast(expr.LitString("1e2"), expr.DecimalType(5, 2)), D("100.00")},
		{expr.Cast(expr.LitString(".5"), expr.DecimalType(3, 0)), D("1")},
		{expr.Cast(expr.LitString("-0.004"), expr.DecimalType(3, 2)), D("0.00")},
		{expr.Cast(f(2.5), expr.Int32Type), int32(2)},
		{expr.Cast(f(3.5), expr.Int32Type), int32(4)},
		{expr.Cast(f(-2.5), expr.Int64Type), int64(-2)},
		{expr.Cast(dec("2.5"), expr.Int32Type), int32(3)},
		{expr.Cast(dec("-2.5"), expr.Int32Type), int32(-3)},
		{expr.Cast(f(0.285), expr.DecimalType(5, 2)), D("0.29")},
		{expr.Cast(f(1e-10), expr.DecimalType(5, 2)), D("0.00")},
		{expr.Cast(dec("1.255"), expr.DecimalType(4, 2)), D("1.26")},
		{expr.Cast(dec("1.5"), expr.DecimalType(30, 10)), D("1.5")},
		{expr.Cast(expr.LitDecimal128(mustNum("123456789012345678901234.5678"), 28, 4), expr.DecimalType(27, 3)), D("123456789012345678901234.568")},
		{expr.Cast(expr.LitInt32(42), expr.DecimalType(5, 2)), D("42.00")},
		{expr.Cast(dec("1.5"), expr.Float64Type), 1.5},
		{expr.Cast(expr.LitInt64(1<<53), expr.Float64Type), float64(1 << 53)},
		{expr.Cast(expr.LitString("  42 "), expr.Int32Type), int32(42)},
		{expr.Cast(expr.LitString("-9223372036854775808"), expr.Int64Type), int64(math.MinInt64)},
		{expr.Cast(expr.LitString("1.5e3"), expr.Float64Type), 1500.0},
		{expr.Cast(expr.LitString("Infinity"), expr.Float64Type), math.Inf(1)},
		{expr.Cast(expr.LitString("1994-1-5"), expr.DateType), dateV("1994-01-05")},
		{expr.Cast(expr.LitString("YES"), expr.BoolType), true},
		{expr.Cast(expr.LitString("off"), expr.BoolType), false},
		{expr.Cast(date("1994-01-05"), expr.StringType), "1994-01-05"},
		{expr.Cast(dec("-0.05"), expr.StringType), "-0.05"},
		{expr.Cast(dec("12.30"), expr.StringType), "12.30"},
		{expr.Cast(expr.LitDecimal128(mustNum("-123456789012345678901234.5678"), 28, 4), expr.StringType), "-123456789012345678901234.5678"},
		{expr.Cast(f(0.1), expr.StringType), "0.1"},
		{expr.Cast(f(1e20), expr.StringType), "1e+20"},
		{expr.Cast(f(math.Inf(-1)), expr.StringType), "-Infinity"},
		{expr.Cast(expr.LitBool(true), expr.StringType), "true"},
		{expr.Cast(expr.LitInterval(14, 3, 0), expr.StringType), "1 year 2 mons 3 days"},
		{expr.Cast(expr.LitInterval(1, 1, 0), expr.StringType), "1 mon 1 day"},
		{expr.Cast(expr.LitInterval(0, 0, 0), expr.StringType), "00:00:00"},
		{expr.Cast(expr.LitInterval(0, -2, -(3600*1e9+61e9+5e8)), expr.StringType), "-2 days -01:01:01.5"},
		{expr.Cast(expr.LitInt32(-7), expr.StringType), "-7"},
		{expr.Cast(expr.LitBool(true), expr.Int32Type), int32(1)},
		{expr.Cast(expr.LitInt64(0), expr.BoolType), false},
		// dates
		{expr.Add(date("2024-01-31"), expr.LitInterval(1, 0, 0)), dateV("2024-02-29")},
		{expr.Add(date("2023-01-31"), expr.LitInterval(1, 0, 0)), dateV("2023-02-28")},
		{expr.Sub(date("2024-03-31"), expr.LitInterval(1, 0, 0)), dateV("2024-02-29")},
		{expr.Add(date("2024-02-29"), expr.LitInterval(12, 0, 0)), dateV("2025-02-28")},
		{expr.Add(date("2024-01-31"), expr.LitInterval(1, 1, 0)), dateV("2024-03-01")},
		{expr.Add(date("1994-01-01"), expr.LitInterval(12, 0, 0)), dateV("1995-01-01")},
		{expr.Sub(date("1998-12-01"), expr.LitInterval(0, 90, 0)), dateV("1998-09-02")},
		{expr.Add(expr.LitInterval(0, 2, 0), date("2000-02-28")), dateV("2000-03-01")},
		{expr.Add(date("2000-01-01"), expr.LitInterval(0, 0, 2*expr.NanosPerDay)), dateV("2000-01-03")},
		{expr.Add(date("1999-12-31"), expr.LitInt32(1)), dateV("2000-01-01")},
		{expr.Add(expr.LitInt64(-1), date("2000-01-01")), dateV("1999-12-31")},
		{expr.Sub(date("2000-03-01"), date("2000-02-01")), int32(29)},
		{expr.Add(expr.LitInterval(1, 2, 3), expr.LitInterval(1, 1, 1)), arrow.MonthDayNanoInterval{Months: 2, Days: 3, Nanoseconds: 4}},
		{expr.Extract("year", date("2024-02-29")), int64(2024)},
		{expr.Extract("month", date("2024-02-29")), int64(2)},
		{expr.Extract("day", date("2024-02-29")), int64(29)},
		{expr.Extract("quarter", date("2024-11-01")), int64(4)},
		{expr.Extract("dow", date("2024-02-25")), int64(0)},
		{expr.Extract("doy", date("2024-12-31")), int64(366)},
		{expr.Extract("YEAR", date("0001-01-01")), int64(1)},
		// strings
		{expr.Substring(expr.LitString("hello"), expr.LitInt32(2), ptr(expr.LitInt32(3))), "ell"},
		{expr.Substring(expr.LitString("hello"), expr.LitInt32(0), ptr(expr.LitInt32(2))), "h"},
		{expr.Substring(expr.LitString("hello"), expr.LitInt32(-1), ptr(expr.LitInt32(3))), "h"},
		{expr.Substring(expr.LitString("hello"), expr.LitInt32(4), nil), "lo"},
		{expr.Substring(expr.LitString("hello"), expr.LitInt32(9), nil), ""},
		{expr.Substring(expr.LitString("日本語"), expr.LitInt32(2), nil), "本語"},
		{expr.Substring(expr.LitString("+1-555"), expr.LitInt32(1), ptr(expr.LitInt32(2))), "+1"},
		{expr.Length(expr.LitString("日本語")), int32(3)},
		{expr.Length(expr.LitString("")), int32(0)},
		{expr.Upper(expr.LitString("abc é")), "ABC É"},
		{expr.Lower(expr.LitString("ABC É")), "abc é"},
		{expr.Trim(expr.LitString("  x y  ")), "x y"},
		{expr.LTrim(expr.LitString("  x  ")), "x  "},
		{expr.RTrim(expr.LitString("  x  ")), "  x"},
		{expr.Call(expr.FnTrim, expr.LitString("xxaxx"), expr.LitString("x")), "a"},
		{expr.StrPos(expr.LitString("hello"), expr.LitString("l")), int32(3)},
		{expr.StrPos(expr.LitString("日本語"), expr.LitString("語")), int32(3)},
		{expr.StrPos(expr.LitString("abc"), expr.LitString("z")), int32(0)},
		{expr.StrPos(expr.LitString("abc"), expr.LitString("")), int32(1)},
		{expr.Concat(expr.LitString("a"), expr.LitString("b")), "ab"},
		{expr.Concat(expr.LitString("a"), expr.LitNull(expr.StringType)), nil},
		{expr.Concat(expr.LitString("n="), expr.LitInt32(5)), "n=5"},
		// LIKE
		{expr.Like(expr.LitString("PROMO BURNISHED"), "PROMO%"), true},
		{expr.Like(expr.LitString("xPROMO"), "PROMO%"), false},
		{expr.Like(expr.LitString("special requests and more requests"), "%special%requests%"), true},
		{expr.Like(expr.LitString("requests special"), "%special%requests%"), false},
		{expr.Like(expr.LitString("aXb"), "a_b"), true},
		{expr.Like(expr.LitString("aéb"), "a_b"), true},
		{expr.Like(expr.LitString("ab"), "a_b"), false},
		{expr.Like(expr.LitString("a.*b"), "a.*b"), true},
		{expr.Like(expr.LitString("aXXb"), "a.*b"), false},
		{expr.Like(expr.LitString("[x]"), "[%]"), true},
		{expr.Like(expr.LitString("a%b"), "a\\%b"), false}, // no default escape: \ is literal
		{expr.Like(expr.LitString("a\\xb"), "a\\%b"), true},
		{expr.LikeEscape(expr.LitString("a%b"), "a\\%b", "\\"), true},
		{expr.LikeEscape(expr.LitString("axb"), "a\\%b", "\\"), false},
		{expr.LikeEscape(expr.LitString("a_b"), "a#_b", "#"), true},
		{expr.LikeEscape(expr.LitString("axb"), "a#_b", "#"), false},
		{expr.LikeEscape(expr.LitString("a%"), "a%", ""), true},
		{expr.Like(expr.LitString(""), ""), true},
		{expr.Like(expr.LitString(""), "%"), true},
		{expr.Like(expr.LitString("x"), ""), false},
		{expr.Like(expr.LitString("abcabc"), "%bc"), true},
		{expr.Like(expr.LitString("ab"), "a%%b"), true},
		{expr.Like(expr.LitString("abc"), "_%_"), true},
		{expr.Like(expr.LitString("a"), "_%_"), false},
		{expr.Like(expr.LitString("xabcx"), "%a_c%"), true},
		{expr.NotLike(expr.LitString("abc"), "a%"), false},
		{expr.NotLike(expr.LitNull(expr.StringType), "a%"), nil},
		{expr.Like(expr.LitString("abc"), "%b_"), true},
	}
	for _, c := range cases {
		got, err := evalConst(t, c.e)
		if err != nil {
			t.Errorf("%s: %v", c.e, err)
			continue
		}
		if !ValuesEqual(got, c.want) {
			t.Errorf("%s = %v (%T), want %v (%T)", c.e, got, got, c.want, c.want)
		}
	}
}

func mustNum(s string) decimal128.Num {
	v, ok := expr.ParseDecimalBytes([]byte(strings.ReplaceAll(s, ".", "")), 0, false)
	if !ok {
		panic(s)
	}
	return v
}

func TestExprErrors(t *testing.T) {
	cases := []struct {
		e    expr.Expr
		kind nferr.Kind
		msg  string
	}{
		{expr.Add(expr.LitInt32(math.MaxInt32), expr.LitInt32(1)), nferr.KindData, "integer out of range in (2147483647 + 1)"},
		{expr.Mul(expr.LitInt64(math.MaxInt64/2), expr.LitInt64(3)), nferr.KindData, "integer out of range in (4611686018427387903 * 3)"},
		{expr.Neg(expr.LitInt32(math.MinInt32)), nferr.KindData, "integer out of range in (- -2147483648)"},
		{expr.Div(expr.LitInt64(math.MinInt64), expr.LitInt64(-1)), nferr.KindData, "integer out of range"},
		{expr.Div(expr.LitInt32(1), expr.LitInt32(0)), nferr.KindData, "division by zero in (1 / 0)"},
		{expr.Mod(expr.LitInt32(1), expr.LitInt32(0)), nferr.KindData, "division by zero in (1 % 0)"},
		{expr.Div(dec("1.5"), dec("0.0")), nferr.KindData, "division by zero in (1.5 / 0.0)"},
		{expr.Div(expr.LitFloat64(1), expr.LitFloat64(0)), nferr.KindData, "division by zero in (1.0 / 0.0)"},
		{expr.Mul(expr.LitDecimal128(expr.MaxDec128, 38, 0), expr.LitInt32(10)), nferr.KindData, "decimal overflow in (99999999999999999999999999999999999999 * 10)"},
		{expr.Cast(expr.LitString("abc"), expr.Int32Type), nferr.KindData, `invalid input syntax for type INTEGER: "abc" in CAST('abc' AS INTEGER)`},
		{expr.Cast(expr.LitString(""), expr.Int64Type), nferr.KindData, `invalid input syntax for type BIGINT: "" in CAST('' AS BIGINT)`},
		{expr.Cast(expr.LitString("99999999999"), expr.Int32Type), nferr.KindData, `value "99999999999" is out of range for type INTEGER in CAST('99999999999' AS INTEGER)`},
		{expr.Cast(expr.LitString("1.2.3"), expr.DecimalType(5, 2)), nferr.KindData, `invalid input syntax for type DECIMAL(5,2): "1.2.3"`},
		{expr.Cast(expr.LitString("12345.678"), expr.DecimalType(5, 2)), nferr.KindData, `value "12345.678" is out of range for type DECIMAL(5,2)`},
		{expr.Cast(dec("12345.678"), expr.DecimalType(5, 2)), nferr.KindData, "value 12345.678 is out of range for type DECIMAL(5,2) in CAST(12345.678 AS DECIMAL(5,2))"},
		{expr.Cast(expr.LitString("2024-02-30"), expr.DateType), nferr.KindData, `invalid input syntax for type DATE: "2024-02-30" in CAST('2024-02-30' AS DATE)`},
		{expr.Cast(expr.LitString("10000-01-01"), expr.DateType), nferr.KindData, `date out of range: "10000-01-01"`},
		{expr.Cast(expr.LitString("maybe"), expr.BoolType), nferr.KindData, `invalid input syntax for type BOOLEAN: "maybe"`},
		{expr.Cast(expr.LitString("1_000"), expr.Float64Type), nferr.KindData, `invalid input syntax for type DOUBLE: "1_000"`},
		{expr.Cast(expr.LitFloat64(math.NaN()), expr.Int32Type), nferr.KindData, "value NaN is out of range for type INTEGER"},
		{expr.Cast(expr.LitFloat64(3e9), expr.Int32Type), nferr.KindData, "value 3e+09 is out of range for type INTEGER"},
		{expr.Cast(expr.LitInt64(1<<40), expr.Int32Type), nferr.KindData, "value 1099511627776 is out of range for type INTEGER"},
		{expr.Cast(dec("1e40"), expr.Int64Type), nferr.KindData, ""},
		{expr.Add(date("9999-12-31"), expr.LitInt32(1)), nferr.KindData, "date out of range in (DATE '9999-12-31' + 1)"},
		{expr.Add(date("9999-12-01"), expr.LitInterval(1, 0, 0)), nferr.KindData, "date out of range in"},
		{expr.Add(date("2000-01-01"), expr.LitInterval(0, 0, 5)), nferr.KindData, "interval with a time of day cannot be added to a date in"},
		{expr.Substring(expr.LitString("abc"), expr.LitInt32(1), ptr(expr.LitInt32(-1))), nferr.KindQuery, "negative substring length not allowed in substring('abc' FROM 1 FOR -1)"},
		{expr.Abs(expr.LitInt32(math.MinInt32)), nferr.KindData, "integer out of range in abs(-2147483648)"},
		{expr.Round(expr.LitDecimal128(expr.MaxDec128, 38, 0), -1), nferr.KindData, "decimal overflow"},
		{expr.Mul(dec("1.00000000000000000001"), dec("2.00000000000000000001")), nferr.KindData, "decimal overflow in"},
	}
	for _, c := range cases {
		_, err := evalConst(t, c.e)
		if err == nil {
			t.Errorf("%s: no error, want %q", c.e, c.msg)
			continue
		}
		if nferr.KindOf(err) != c.kind || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %q (%s), want %q (%s)", c.e, err, nferr.KindOf(err), c.msg, c.kind)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	cases := []struct {
		e   expr.Expr
		msg string
	}{
		{expr.Add(expr.Col(0, "d"), expr.Col(1, "s")), "operator does not exist: DATE + VARCHAR in (d + s)"},
		{expr.Lt(expr.Col(0, "d"), expr.Col(2, "i")), "operator does not exist: DATE < INTEGER in (d < i)"},
		{expr.And(expr.Col(2, "i"), expr.LitBool(true)), "argument of (i AND TRUE) must be BOOLEAN, not INTEGER"},
		{expr.Col(7, "x"), "column x: index 7 out of range (input has 3 columns)"},
		{expr.Call("frobnicate", expr.Col(2, "i")), `unknown function "frobnicate" in frobnicate(i)`},
		{expr.Call(expr.FnAdd, expr.Col(2, "i")), "wrong number of arguments (1) for add"},
		{expr.Like(expr.Col(2, "i"), "a%"), "LIKE needs VARCHAR operands, not INTEGER"},
		{expr.LikeEscape(expr.Col(1, "s"), "a\\", "\\"), "LIKE pattern must not end with the escape character"},
		{expr.LikeEscape(expr.Col(1, "s"), "a", "ab"), "invalid escape string \"ab\""},
		{expr.Cast(expr.Col(0, "d"), expr.Int32Type), "cannot cast DATE to INTEGER in CAST(d AS INTEGER)"},
		{expr.Cast(expr.Col(2, "i"), expr.DecimalType(50, 2)), "decimal precision 50 out of range 1..38"},
		{expr.Ge(expr.Col(0, "d"), expr.LitString("soon")), `invalid input syntax for type DATE: "soon"`},
		{expr.Extract("hour", expr.Col(0, "d")), `unsupported EXTRACT field "hour"`},
		{expr.Upper(expr.Col(2, "i")), "function upper needs VARCHAR, not INTEGER"},
		{expr.Case([]expr.Expr{expr.LitBool(true)}, []expr.Expr{expr.Col(0, "d")}, ptr(expr.Col(2, "i"))), "types DATE and INTEGER cannot be matched"},
		{expr.Round(expr.Col(2, "i"), 40), "round digits 40 out of range"},
		{expr.Expr{Kind: "bogus"}, `unknown expression kind "bogus"`},
		{expr.Expr{Kind: expr.KindLiteral, Type: &expr.Type{ID: expr.TypeInt32}, Value: "x"}, `invalid INTEGER literal "x"`},
	}
	for _, c := range cases {
		_, err := expr.CompileExpr(c.e, schema)
		if err == nil || nferr.KindOf(err) != nferr.KindQuery || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v (%s), want KindQuery %q", c.e, err, nferr.KindOf(err), c.msg)
		}
	}
}

func TestResultTypes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "p", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
		{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
		{Name: "j", Type: arrow.PrimitiveTypes.Int64},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	p, w, i, j, d := expr.Col(0, "p"), expr.Col(1, "w"), expr.Col(2, "i"), expr.Col(3, "j"), expr.Col(4, "d")
	cases := []struct {
		e    expr.Expr
		want string
	}{
		{expr.Mul(p, p), "decimal(30, 4)"},
		{expr.Add(p, p), "decimal64(16, 2)"},
		{expr.Sub(expr.LitInt32(1), p), "decimal64(16, 2)"},
		{expr.Mul(p, expr.Sub(expr.LitInt32(1), p)), "decimal(31, 4)"},
		{expr.Div(p, p), "decimal(31, 16)"},
		{expr.Div(w, w), "decimal(38, 16)"},
		{expr.Mul(w, w), "decimal(38, 8)"},
		{expr.Add(w, p), "decimal(38, 4)"},
		{expr.Mod(p, expr.LitInt32(7)), "decimal64(12, 2)"},
		{expr.Add(i, i), "int32"},
		{expr.Add(i, j), "int64"},
		{expr.Add(i, p), "decimal64(16, 2)"},
		{expr.Mul(j, p), "decimal(34, 2)"},
		{expr.Div(i, expr.LitFloat64(2)), "float64"},
		{expr.Sub(d, d), "int32"},
		{expr.Add(d, expr.LitInterval(1, 0, 0)), "date32"},
		{expr.Sub(d, i), "date32"},
		{expr.Extract("year", d), "int64"},
		{expr.Round(p, 0), "decimal64(14, 0)"},
		{expr.Round(w, 2), "decimal(37, 2)"},
		{expr.Case([]expr.Expr{expr.LitBool(true)}, []expr.Expr{i}, ptr(p)), "decimal64(15, 2)"},
		{expr.Coalesce(i, j), "int64"},
		{expr.Lt(p, i), "bool"},
		{expr.Neg(p), "decimal64(15, 2)"},
	}
	for _, c := range cases {
		got, err := expr.ResultType(c.e, schema)
		if err != nil {
			t.Errorf("%s: %v", c.e, err)
			continue
		}
		if got.String() != c.want {
			t.Errorf("%s: type %s, want %s", c.e, got, c.want)
		}
	}
}

func TestExprString(t *testing.T) {
	l := expr.Col(0, "l_extendedprice")
	cases := []struct {
		e    expr.Expr
		want string
	}{
		{expr.Div(l, expr.Col(1, "l_quantity")), "(l_extendedprice / l_quantity)"},
		{expr.Between(expr.Col(2, "l_discount"), dec("0.05"), dec("0.07")), "((l_discount >= 0.05) AND (l_discount <= 0.07))"},
		{expr.Ge(expr.Col(3, "l_shipdate"), date("1994-01-01")), "(l_shipdate >= DATE '1994-01-01')"},
		{expr.Add(expr.Col(3, "d"), expr.LitInterval(12, 0, 0)), "(d + INTERVAL '1' YEAR)"},
		{expr.Sub(expr.Col(3, "d"), expr.LitInterval(0, 90, 0)), "(d - INTERVAL '90' DAY)"},
		{expr.Add(expr.Col(3, "d"), expr.LitInterval(3, 0, 0)), "(d + INTERVAL '3' MONTH)"},
		{expr.NotLike(expr.Col(4, "s"), "%it's%"), "(s NOT LIKE '%it''s%')"},
		{expr.NotIn(expr.Col(5, "n"), expr.LitInt32(1), expr.LitInt32(2)), "(n NOT IN (1, 2))"},
		{expr.Case([]expr.Expr{expr.Gt(expr.Col(5, "n"), expr.LitInt32(0))}, []expr.Expr{expr.LitString("pos")}, ptr(expr.LitNull(expr.NullType))), "CASE WHEN (n > 0) THEN 'pos' ELSE NULL END"},
		{expr.Cast(expr.Col(5, "n"), expr.DecimalType(15, 2)), "CAST(n AS DECIMAL(15,2))"},
		{expr.Extract("year", expr.Col(3, "d")), "EXTRACT(YEAR FROM d)"},
		{expr.Substring(expr.Col(4, "s"), expr.LitInt32(1), ptr(expr.LitInt32(2))), "substring(s FROM 1 FOR 2)"},
		{expr.IsNotNull(expr.Col(4, "s")), "(s IS NOT NULL)"},
		{expr.Col(9, ""), "#9"},
		{expr.LitNull(expr.DateType), "CAST(NULL AS DATE)"},
		{expr.LitFloat64(2), "2.0"},
		{expr.Neg(expr.LitInt32(1)), "(- 1)"},
	}
	for _, c := range cases {
		if got := c.e.String(); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}

func TestParseNumberLiteral(t *testing.T) {
	cases := []struct{ in, want string }{
		{"24", "int32 24"}, {"3000000000", "int64 3000000000"},
		{"0.05", "decimal(3,2) 0.05"}, {"123.45", "decimal(5,2) 123.45"},
		{"100.00", "decimal(5,2) 100.00"}, {"99999999999999999999", "decimal(20,0) 99999999999999999999"},
		{"1e3", "float64 1000"}, {".5", "decimal(2,1) 0.5"},
	}
	for _, c := range cases {
		e, err := expr.ParseNumberLiteral(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got := string(e.Type.ID) + " " + e.Value
		if e.Type.ID == expr.TypeDecimal {
			got = "decimal(" + itoa(e.Type.Precision) + "," + itoa(e.Type.Scale) + ") " + e.Value
		} else if e.Type.ID == expr.TypeFloat64 {
			got = "float64 " + e.Value
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"", "1.2.3", "abc", "--1", "1e999", strings.Repeat("9", 39)} {
		if _, err := expr.ParseNumberLiteral(bad); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%q: got %v, want KindQuery", bad, err)
		}
	}
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }

// TestLazyEvaluation: rows that a CASE branch, a COALESCE argument or an
// earlier conjunct excludes are never computed, so they cannot fail.
func TestLazyEvaluation(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	x, y := expr.Col(0, "x"), expr.Col(1, "y")
	rows := [][]any{{0, 5}, {2, 5}, {nil, 5}, {0, nil}, {5, 0}}
	got, err := evalRows(t, schema, rows, expr.Case([]expr.Expr{expr.Ne(x, expr.LitInt32(0))}, []expr.Expr{expr.Div(y, x)}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{nil, int32(2), nil, nil, int32(0)}
	for i := range want {
		if !ValuesEqual(got[i], want[i]) {
			t.Errorf("case row %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := evalRows(t, schema, rows[:3], expr.Coalesce(y, expr.Div(expr.LitInt32(1), x))); err != nil {
		t.Errorf("coalesce evaluated a decided row: %v", err)
	}
	if _, err := evalRows(t, schema, rows, expr.And(expr.Ne(x, expr.LitInt32(0)), expr.Gt(expr.Div(y, x), expr.LitInt32(0)))); err != nil {
		t.Errorf("AND evaluated a FALSE row: %v", err)
	}
	// The same division without the guard fails, naming the expression.
	_, err = evalRows(t, schema, rows, expr.Div(y, x))
	if err == nil || err.Error() != "division by zero in (y / x)" {
		t.Errorf("unguarded division: got %v", err)
	}
	// In a filter the guard works too.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, rows)
	src, _ := NewBatchSource(schema, rec)
	rec.Release()
	f, err := NewFilter(src, expr.And(expr.Ne(x, expr.LitInt32(0)), expr.Gt(expr.Div(y, x), expr.LitInt32(0))))
	if err != nil {
		t.Fatal(err)
	}
	out, err := CollectRows(NewTestEnv(mem), f)
	if err != nil || len(out) != 1 {
		t.Fatalf("filter: %v rows, err %v", out, err)
	}
}

// TestSelectionNotMutated: evaluating over a batch never writes to the
// batch's Sel (it is borrowed from the producer).
func TestSelectionNotMutated(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := make([][]any, 100)
	for i := range rows {
		rows[i] = []any{i}
	}
	rec := MakeRecord(t, mem, schema, rows)
	defer rec.Release()
	sel := []int32{1, 5, 9, 50, 99}
	keep := append([]int32(nil), sel...)
	b := &Batch{Cols: rec.Columns(), N: 100, Sel: sel}
	for _, e := range []expr.Expr{
		expr.Gt(expr.Col(0, "x"), expr.LitInt32(6)),
		expr.Or(expr.Lt(expr.Col(0, "x"), expr.LitInt32(3)), expr.Gt(expr.Col(0, "x"), expr.LitInt32(60))),
		expr.Not(expr.In(expr.Col(0, "x"), expr.LitInt32(5), expr.LitInt32(9))),
	} {
		ce, err := expr.CompileExpr(e, schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ce.EvalFilter(b); err != nil {
			t.Fatal(err)
		}
		arr, err := ce.Eval(mem, b)
		if err != nil {
			t.Fatal(err)
		}
		arr.Release()
		for i := range sel {
			if sel[i] != keep[i] {
				t.Fatalf("%s modified the batch selection: %v", e, sel)
			}
		}
	}
}

// TestAllNullColumns: arrays built without value buffers (all NULL) and
// of the null type evaluate as NULLs.
func TestAllNullColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.Null, Nullable: true},
	}, nil)
	cols := []arrow.Array{
		array.MakeArrayOfNull(mem, arrow.PrimitiveTypes.Int64, 5),
		array.MakeArrayOfNull(mem, arrow.FixedWidthTypes.Boolean, 5),
		array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, 5),
		array.NewNull(5),
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	b := &Batch{Cols: cols, N: 5}
	for _, e := range []expr.Expr{expr.Add(expr.Col(0, "a"), expr.LitInt32(1)), expr.Col(1, "b"), expr.Upper(expr.Col(2, "s")), expr.IsNull(expr.Col(3, "n")), expr.Coalesce(expr.Col(0, "a"), expr.LitInt64(7))} {
		ce, err := expr.CompileExpr(e, schema)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		arr, err := ce.Eval(mem, b)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		for i := 0; i < 5; i++ {
			v := ArrayValue(arr, i)
			switch e.Fn {
			case expr.FnIsNull:
				if v != true {
					t.Errorf("%s row %d = %v", e, i, v)
				}
			case expr.FnCoalesce:
				if v != int64(7) {
					t.Errorf("%s row %d = %v", e, i, v)
				}
			default:
				if v != nil {
					t.Errorf("%s row %d = %v", e, i, v)
				}
			}
		}
		arr.Release()
		if ce.Type().ID() == arrow.BOOL {
			if sel, err := ce.EvalFilter(b); err != nil || (e.Fn != expr.FnIsNull && len(sel) != 0) {
				t.Errorf("%s filter: %v %v", e, sel, err)
			}
		}
	}
}
