package exec

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

var emptySchema = arrow.NewSchema(nil, nil)

// evalConst evaluates a column-free expression on one row.
func evalConst(t *testing.T, e Expr) (any, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ce, err := CompileExpr(e, emptySchema)
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
func evalRows(t *testing.T, schema *arrow.Schema, rows [][]any, e Expr) ([]any, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, rows)
	src, err := NewBatchSource(schema, rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProject(src, []Expr{e}, nil)
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

func date(s string) Expr { return LitDate(mustDate(s)) }

func dateV(s string) arrow.Date32 { return arrow.Date32(mustDate(s)) }

func dec(s string) Expr {
	e, err := ParseNumberLiteral(s)
	if err != nil {
		panic(err)
	}
	return e
}

func TestExprValues(t *testing.T) {
	f := LitFloat64
	nan := math.NaN()
	cases := []struct {
		e    Expr
		want any
	}{
		// integers
		{Div(LitInt32(7), LitInt32(2)), int32(3)},
		{Div(LitInt32(-7), LitInt32(2)), int32(-3)},
		{Mod(LitInt32(7), LitInt32(-2)), int32(1)},
		{Mod(LitInt32(-7), LitInt32(2)), int32(-1)},
		{Mod(LitInt64(math.MinInt64), LitInt64(-1)), int64(0)},
		{Add(LitInt32(1), LitInt64(2)), int64(3)},
		{Neg(LitInt32(5)), int32(-5)},
		{Abs(LitInt64(-5)), int64(5)},
		// decimals
		{Div(dec("1.00"), dec("3.00")), D("0.333333")},
		{Div(dec("2.00"), dec("3.00")), D("0.666667")},
		{Div(dec("-2.00"), dec("3.00")), D("-0.666667")},
		{Div(dec("1"), dec("8")), int32(0)},
		{Div(dec("1.0"), dec("8")), D("0.125000")},
		{Mul(dec("1.25"), dec("0.05")), D("0.0625")},
		{Add(dec("0.1"), dec("0.02")), D("0.12")},
		{Sub(dec("0.1"), LitInt32(1)), D("-0.9")},
		{Mod(dec("7.5"), dec("2")), D("1.5")},
		{Mod(dec("-7.5"), dec("2")), D("-1.5")},
		{Mul(LitDecimal(123456789012345678, 18, 2), LitDecimal(100, 3, 2)), D("1234567890123456.7800")},
		{Mul(dec("0.10000000000000000001"), dec("0.5000000000000000000")), D("0.05000000000000000000500000000000000000")},
		{Div(dec("10.5"), dec("0.25")), D("42.000000")},
		{Div(LitDecimal(1, 18, 18), dec("3")), D("0.000000000000000000")},
		{Round(dec("2.5"), 0), D("3")},
		{Round(dec("-2.5"), 0), D("-3")},
		{Round(dec("1.234"), 2), D("1.23")},
		{Round(dec("1.235"), 2), D("1.24")},
		{Round(dec("9.99"), 1), D("10.0")},
		{Round(dec("1234.5"), -2), D("1200")},
		{Round(dec("1.5"), 3), D("1.5")},
		{Round(LitInt32(1250), -2), int32(1300)},
		{Round(LitInt32(-1250), -2), int32(-1300)},
		{Round(f(2.5), 0), 2.5 + 0.5},
		{Round(f(-2.345), 2), -2.35},
		{Abs(dec("-1.50")), D("1.50")},
		// doubles
		{Div(f(1), f(4)), 0.25},
		{Mul(f(1.5), LitInt32(2)), 3.0},
		{Add(dec("0.5"), f(0.25)), 0.75},
		{Eq(f(nan), f(nan)), true},
		{Gt(f(nan), f(math.MaxFloat64)), true},
		{Eq(f(math.Copysign(0, -1)), f(0)), true},
		{Lt(f(math.Inf(-1)), f(-math.MaxFloat64)), true},
		// comparisons across types
		{Lt(dec("23.99"), LitInt32(24)), true},
		{Eq(dec("24.00"), LitInt64(24)), true},
		{Eq(dec("0.1"), f(0.1)), true},
		{Ge(date("1994-01-01"), LitString("1994-01-01")), true},
		{Lt(LitString("abc"), LitString("abd")), true},
		{Lt(LitString("Z"), LitString("a")), true},
		{Eq(LitBool(true), LitBool(true)), true},
		{Lt(LitBool(false), LitBool(true)), true},
		// NULL logic
		{Eq(LitNull(NullType), LitNull(NullType)), nil},
		{Eq(LitInt32(1), LitNull(Int32Type)), nil},
		{And(LitNull(BoolType), LitBool(false)), false},
		{And(LitNull(BoolType), LitBool(true)), nil},
		{Or(LitNull(BoolType), LitBool(true)), true},
		{Or(LitNull(BoolType), LitBool(false)), nil},
		{Not(LitNull(BoolType)), nil},
		{IsNull(LitNull(Int32Type)), true},
		{IsNotNull(LitInt32(0)), true},
		{IsDistinctFrom(LitNull(NullType), LitNull(NullType)), false},
		{IsNotDistinctFrom(LitNull(Int32Type), LitNull(Int32Type)), true},
		{IsDistinctFrom(LitInt32(1), LitNull(Int32Type)), true},
		{IsDistinctFrom(LitString("a"), LitString("a")), false},
		{In(LitInt32(1), LitInt32(2), LitNull(NullType)), nil},
		{In(LitInt32(2), LitInt32(2), LitNull(NullType)), true},
		{NotIn(LitInt32(1), LitInt32(2), LitNull(NullType)), nil},
		{NotIn(LitInt32(1), LitInt32(2), LitInt32(3)), true},
		{In(dec("1.50"), dec("1.5"), dec("2")), true},
		{In(LitString("b"), LitString("a"), LitString("b")), true},
		{NullIf(LitInt32(1), LitInt32(1)), nil},
		{NullIf(LitInt32(1), LitInt32(2)), int32(1)},
		{Coalesce(LitNull(Int32Type), LitInt32(2), LitInt32(3)), int32(2)},
		{Coalesce(LitNull(NullType), dec("1.5"), LitInt32(2)), D("1.5")},
		{Case([]Expr{LitBool(false), LitNull(BoolType)}, []Expr{LitInt32(1), LitInt32(2)}, ptr(dec("3.5"))), D("3.5")},
		{Case([]Expr{LitBool(false)}, []Expr{LitInt32(1)}, nil), nil},
		{SimpleCase(LitInt32(2), []Expr{LitInt32(1), LitInt32(2)}, []Expr{LitString("one"), LitString("two")}, nil), "two"},
		// casts
		{Cast(LitString(" 12.345 "), DecimalType(5, 2)), D("12.35")},
		{Cast(LitString("-12.345"), DecimalType(5, 2)), D("-12.35")},
		{Cast(LitString("1e2"), DecimalType(5, 2)), D("100.00")},
		{Cast(LitString(".5"), DecimalType(3, 0)), D("1")},
		{Cast(LitString("-0.004"), DecimalType(3, 2)), D("0.00")},
		{Cast(f(2.5), Int32Type), int32(2)},
		{Cast(f(3.5), Int32Type), int32(4)},
		{Cast(f(-2.5), Int64Type), int64(-2)},
		{Cast(dec("2.5"), Int32Type), int32(3)},
		{Cast(dec("-2.5"), Int32Type), int32(-3)},
		{Cast(f(0.285), DecimalType(5, 2)), D("0.29")},
		{Cast(f(1e-10), DecimalType(5, 2)), D("0.00")},
		{Cast(dec("1.255"), DecimalType(4, 2)), D("1.26")},
		{Cast(dec("1.5"), DecimalType(30, 10)), D("1.5")},
		{Cast(LitDecimal128(mustNum("123456789012345678901234.5678"), 28, 4), DecimalType(27, 3)), D("123456789012345678901234.568")},
		{Cast(LitInt32(42), DecimalType(5, 2)), D("42.00")},
		{Cast(dec("1.5"), Float64Type), 1.5},
		{Cast(LitInt64(1<<53), Float64Type), float64(1 << 53)},
		{Cast(LitString("  42 "), Int32Type), int32(42)},
		{Cast(LitString("-9223372036854775808"), Int64Type), int64(math.MinInt64)},
		{Cast(LitString("1.5e3"), Float64Type), 1500.0},
		{Cast(LitString("Infinity"), Float64Type), math.Inf(1)},
		{Cast(LitString("1994-1-5"), DateType), dateV("1994-01-05")},
		{Cast(LitString("YES"), BoolType), true},
		{Cast(LitString("off"), BoolType), false},
		{Cast(date("1994-01-05"), StringType), "1994-01-05"},
		{Cast(dec("-0.05"), StringType), "-0.05"},
		{Cast(dec("12.30"), StringType), "12.30"},
		{Cast(LitDecimal128(mustNum("-123456789012345678901234.5678"), 28, 4), StringType), "-123456789012345678901234.5678"},
		{Cast(f(0.1), StringType), "0.1"},
		{Cast(f(1e20), StringType), "1e+20"},
		{Cast(f(math.Inf(-1)), StringType), "-Infinity"},
		{Cast(LitBool(true), StringType), "true"},
		{Cast(LitInterval(14, 3, 0), StringType), "1 year 2 mons 3 days"},
		{Cast(LitInterval(1, 1, 0), StringType), "1 mon 1 day"},
		{Cast(LitInterval(0, 0, 0), StringType), "00:00:00"},
		{Cast(LitInterval(0, -2, -(3600*1e9+61e9+5e8)), StringType), "-2 days -01:01:01.5"},
		{Cast(LitInt32(-7), StringType), "-7"},
		{Cast(LitBool(true), Int32Type), int32(1)},
		{Cast(LitInt64(0), BoolType), false},
		// dates
		{Add(date("2024-01-31"), LitInterval(1, 0, 0)), dateV("2024-02-29")},
		{Add(date("2023-01-31"), LitInterval(1, 0, 0)), dateV("2023-02-28")},
		{Sub(date("2024-03-31"), LitInterval(1, 0, 0)), dateV("2024-02-29")},
		{Add(date("2024-02-29"), LitInterval(12, 0, 0)), dateV("2025-02-28")},
		{Add(date("2024-01-31"), LitInterval(1, 1, 0)), dateV("2024-03-01")},
		{Add(date("1994-01-01"), LitInterval(12, 0, 0)), dateV("1995-01-01")},
		{Sub(date("1998-12-01"), LitInterval(0, 90, 0)), dateV("1998-09-02")},
		{Add(LitInterval(0, 2, 0), date("2000-02-28")), dateV("2000-03-01")},
		{Add(date("2000-01-01"), LitInterval(0, 0, 2*nanosPerDay)), dateV("2000-01-03")},
		{Add(date("1999-12-31"), LitInt32(1)), dateV("2000-01-01")},
		{Add(LitInt64(-1), date("2000-01-01")), dateV("1999-12-31")},
		{Sub(date("2000-03-01"), date("2000-02-01")), int32(29)},
		{Add(LitInterval(1, 2, 3), LitInterval(1, 1, 1)), arrow.MonthDayNanoInterval{Months: 2, Days: 3, Nanoseconds: 4}},
		{Extract("year", date("2024-02-29")), int32(2024)},
		{Extract("month", date("2024-02-29")), int32(2)},
		{Extract("day", date("2024-02-29")), int32(29)},
		{Extract("quarter", date("2024-11-01")), int32(4)},
		{Extract("dow", date("2024-02-25")), int32(0)},
		{Extract("doy", date("2024-12-31")), int32(366)},
		{Extract("YEAR", date("0001-01-01")), int32(1)},
		// strings
		{Substring(LitString("hello"), LitInt32(2), ptr(LitInt32(3))), "ell"},
		{Substring(LitString("hello"), LitInt32(0), ptr(LitInt32(2))), "h"},
		{Substring(LitString("hello"), LitInt32(-1), ptr(LitInt32(3))), "h"},
		{Substring(LitString("hello"), LitInt32(4), nil), "lo"},
		{Substring(LitString("hello"), LitInt32(9), nil), ""},
		{Substring(LitString("日本語"), LitInt32(2), nil), "本語"},
		{Substring(LitString("+1-555"), LitInt32(1), ptr(LitInt32(2))), "+1"},
		{Length(LitString("日本語")), int32(3)},
		{Length(LitString("")), int32(0)},
		{Upper(LitString("abc é")), "ABC É"},
		{Lower(LitString("ABC É")), "abc é"},
		{Trim(LitString("  x y  ")), "x y"},
		{LTrim(LitString("  x  ")), "x  "},
		{RTrim(LitString("  x  ")), "  x"},
		{Call(FnTrim, LitString("xxaxx"), LitString("x")), "a"},
		{StrPos(LitString("hello"), LitString("l")), int32(3)},
		{StrPos(LitString("日本語"), LitString("語")), int32(3)},
		{StrPos(LitString("abc"), LitString("z")), int32(0)},
		{StrPos(LitString("abc"), LitString("")), int32(1)},
		{Concat(LitString("a"), LitString("b")), "ab"},
		{Concat(LitString("a"), LitNull(StringType)), nil},
		{Concat(LitString("n="), LitInt32(5)), "n=5"},
		// LIKE
		{Like(LitString("PROMO BURNISHED"), "PROMO%"), true},
		{Like(LitString("xPROMO"), "PROMO%"), false},
		{Like(LitString("special requests and more requests"), "%special%requests%"), true},
		{Like(LitString("requests special"), "%special%requests%"), false},
		{Like(LitString("aXb"), "a_b"), true},
		{Like(LitString("aéb"), "a_b"), true},
		{Like(LitString("ab"), "a_b"), false},
		{Like(LitString("a.*b"), "a.*b"), true},
		{Like(LitString("aXXb"), "a.*b"), false},
		{Like(LitString("[x]"), "[%]"), true},
		{Like(LitString("a%b"), "a\\%b"), false}, // no default escape: \ is literal
		{Like(LitString("a\\xb"), "a\\%b"), true},
		{LikeEscape(LitString("a%b"), "a\\%b", "\\"), true},
		{LikeEscape(LitString("axb"), "a\\%b", "\\"), false},
		{LikeEscape(LitString("a_b"), "a#_b", "#"), true},
		{LikeEscape(LitString("axb"), "a#_b", "#"), false},
		{LikeEscape(LitString("a%"), "a%", ""), true},
		{Like(LitString(""), ""), true},
		{Like(LitString(""), "%"), true},
		{Like(LitString("x"), ""), false},
		{Like(LitString("abcabc"), "%bc"), true},
		{Like(LitString("ab"), "a%%b"), true},
		{Like(LitString("abc"), "_%_"), true},
		{Like(LitString("a"), "_%_"), false},
		{Like(LitString("xabcx"), "%a_c%"), true},
		{NotLike(LitString("abc"), "a%"), false},
		{NotLike(LitNull(StringType), "a%"), nil},
		{Like(LitString("abc"), "%b_"), true},
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
	v, ok := parseDecimalBytes([]byte(strings.ReplaceAll(s, ".", "")), 0, false)
	if !ok {
		panic(s)
	}
	return v
}

func TestExprErrors(t *testing.T) {
	cases := []struct {
		e    Expr
		kind nferr.Kind
		msg  string
	}{
		{Add(LitInt32(math.MaxInt32), LitInt32(1)), nferr.KindData, "integer out of range in (2147483647 + 1)"},
		{Mul(LitInt64(math.MaxInt64/2), LitInt64(3)), nferr.KindData, "integer out of range in (4611686018427387903 * 3)"},
		{Neg(LitInt32(math.MinInt32)), nferr.KindData, "integer out of range in (- -2147483648)"},
		{Div(LitInt64(math.MinInt64), LitInt64(-1)), nferr.KindData, "integer out of range"},
		{Div(LitInt32(1), LitInt32(0)), nferr.KindData, "division by zero in (1 / 0)"},
		{Mod(LitInt32(1), LitInt32(0)), nferr.KindData, "division by zero in (1 % 0)"},
		{Div(dec("1.5"), dec("0.0")), nferr.KindData, "division by zero in (1.5 / 0.0)"},
		{Div(LitFloat64(1), LitFloat64(0)), nferr.KindData, "division by zero in (1.0 / 0.0)"},
		{Mul(LitDecimal128(maxDec128, 38, 0), LitInt32(10)), nferr.KindData, "decimal overflow in (99999999999999999999999999999999999999 * 10)"},
		{Cast(LitString("abc"), Int32Type), nferr.KindData, `invalid input syntax for type INTEGER: "abc" in CAST('abc' AS INTEGER)`},
		{Cast(LitString(""), Int64Type), nferr.KindData, `invalid input syntax for type BIGINT: "" in CAST('' AS BIGINT)`},
		{Cast(LitString("99999999999"), Int32Type), nferr.KindData, `value "99999999999" is out of range for type INTEGER in CAST('99999999999' AS INTEGER)`},
		{Cast(LitString("1.2.3"), DecimalType(5, 2)), nferr.KindData, `invalid input syntax for type DECIMAL(5,2): "1.2.3"`},
		{Cast(LitString("12345.678"), DecimalType(5, 2)), nferr.KindData, `value "12345.678" is out of range for type DECIMAL(5,2)`},
		{Cast(dec("12345.678"), DecimalType(5, 2)), nferr.KindData, "value 12345.678 is out of range for type DECIMAL(5,2) in CAST(12345.678 AS DECIMAL(5,2))"},
		{Cast(LitString("2024-02-30"), DateType), nferr.KindData, `invalid input syntax for type DATE: "2024-02-30" in CAST('2024-02-30' AS DATE)`},
		{Cast(LitString("10000-01-01"), DateType), nferr.KindData, `date out of range: "10000-01-01"`},
		{Cast(LitString("maybe"), BoolType), nferr.KindData, `invalid input syntax for type BOOLEAN: "maybe"`},
		{Cast(LitString("1_000"), Float64Type), nferr.KindData, `invalid input syntax for type DOUBLE: "1_000"`},
		{Cast(LitFloat64(math.NaN()), Int32Type), nferr.KindData, "value NaN is out of range for type INTEGER"},
		{Cast(LitFloat64(3e9), Int32Type), nferr.KindData, "value 3e+09 is out of range for type INTEGER"},
		{Cast(LitInt64(1<<40), Int32Type), nferr.KindData, "value 1099511627776 is out of range for type INTEGER"},
		{Cast(dec("1e40"), Int64Type), nferr.KindData, ""},
		{Add(date("9999-12-31"), LitInt32(1)), nferr.KindData, "date out of range in (DATE '9999-12-31' + 1)"},
		{Add(date("9999-12-01"), LitInterval(1, 0, 0)), nferr.KindData, "date out of range in"},
		{Add(date("2000-01-01"), LitInterval(0, 0, 5)), nferr.KindData, "interval with a time of day cannot be added to a date in"},
		{Substring(LitString("abc"), LitInt32(1), ptr(LitInt32(-1))), nferr.KindQuery, "negative substring length not allowed in substring('abc' FROM 1 FOR -1)"},
		{Abs(LitInt32(math.MinInt32)), nferr.KindData, "integer out of range in abs(-2147483648)"},
		{Round(LitDecimal128(maxDec128, 38, 0), -1), nferr.KindData, "decimal overflow"},
		{Mul(dec("1.00000000000000000001"), dec("2.00000000000000000001")), nferr.KindData, "decimal overflow in"},
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
		e   Expr
		msg string
	}{
		{Add(Col(0, "d"), Col(1, "s")), "operator does not exist: DATE + VARCHAR in (d + s)"},
		{Lt(Col(0, "d"), Col(2, "i")), "operator does not exist: DATE < INTEGER in (d < i)"},
		{And(Col(2, "i"), LitBool(true)), "argument of (i AND TRUE) must be BOOLEAN, not INTEGER"},
		{Col(7, "x"), "column x: index 7 out of range (input has 3 columns)"},
		{Call("frobnicate", Col(2, "i")), `unknown function "frobnicate" in frobnicate(i)`},
		{Call(FnAdd, Col(2, "i")), "wrong number of arguments (1) for add"},
		{Like(Col(2, "i"), "a%"), "LIKE needs VARCHAR operands, not INTEGER"},
		{LikeEscape(Col(1, "s"), "a\\", "\\"), "LIKE pattern must not end with the escape character"},
		{LikeEscape(Col(1, "s"), "a", "ab"), "invalid escape string \"ab\""},
		{Cast(Col(0, "d"), Int32Type), "cannot cast DATE to INTEGER in CAST(d AS INTEGER)"},
		{Cast(Col(2, "i"), DecimalType(50, 2)), "decimal precision 50 out of range 1..38"},
		{Ge(Col(0, "d"), LitString("soon")), `invalid input syntax for type DATE: "soon"`},
		{Extract("hour", Col(0, "d")), `unsupported EXTRACT field "hour"`},
		{Upper(Col(2, "i")), "function upper needs VARCHAR, not INTEGER"},
		{Case([]Expr{LitBool(true)}, []Expr{Col(0, "d")}, ptr(Col(2, "i"))), "types DATE and INTEGER cannot be matched"},
		{Round(Col(2, "i"), 40), "round digits 40 out of range"},
		{Expr{Kind: "bogus"}, `unknown expression kind "bogus"`},
		{Expr{Kind: KindLiteral, Type: &Type{ID: TypeInt32}, Value: "x"}, `invalid INTEGER literal "x"`},
	}
	for _, c := range cases {
		_, err := CompileExpr(c.e, schema)
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
	p, w, i, j, d := Col(0, "p"), Col(1, "w"), Col(2, "i"), Col(3, "j"), Col(4, "d")
	cases := []struct {
		e    Expr
		want string
	}{
		{Mul(p, p), "decimal(30, 4)"},
		{Add(p, p), "decimal64(16, 2)"},
		{Sub(LitInt32(1), p), "decimal64(16, 2)"},
		{Mul(p, Sub(LitInt32(1), p)), "decimal(31, 4)"},
		{Div(p, p), "decimal(21, 6)"},
		{Div(w, w), "decimal(38, 6)"},
		{Mul(w, w), "decimal(38, 8)"},
		{Add(w, p), "decimal(38, 4)"},
		{Mod(p, LitInt32(7)), "decimal64(12, 2)"},
		{Add(i, i), "int32"},
		{Add(i, j), "int64"},
		{Add(i, p), "decimal64(16, 2)"},
		{Mul(j, p), "decimal(34, 2)"},
		{Div(i, LitFloat64(2)), "float64"},
		{Sub(d, d), "int32"},
		{Add(d, LitInterval(1, 0, 0)), "date32"},
		{Sub(d, i), "date32"},
		{Extract("year", d), "int32"},
		{Round(p, 0), "decimal64(14, 0)"},
		{Round(w, 2), "decimal(37, 2)"},
		{Case([]Expr{LitBool(true)}, []Expr{i}, ptr(p)), "decimal64(15, 2)"},
		{Coalesce(i, j), "int64"},
		{Lt(p, i), "bool"},
		{Neg(p), "decimal64(15, 2)"},
	}
	for _, c := range cases {
		got, err := ResultType(c.e, schema)
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
	l := Col(0, "l_extendedprice")
	cases := []struct {
		e    Expr
		want string
	}{
		{Div(l, Col(1, "l_quantity")), "(l_extendedprice / l_quantity)"},
		{Between(Col(2, "l_discount"), dec("0.05"), dec("0.07")), "((l_discount >= 0.05) AND (l_discount <= 0.07))"},
		{Ge(Col(3, "l_shipdate"), date("1994-01-01")), "(l_shipdate >= DATE '1994-01-01')"},
		{Add(Col(3, "d"), LitInterval(12, 0, 0)), "(d + INTERVAL '1' YEAR)"},
		{Sub(Col(3, "d"), LitInterval(0, 90, 0)), "(d - INTERVAL '90' DAY)"},
		{Add(Col(3, "d"), LitInterval(3, 0, 0)), "(d + INTERVAL '3' MONTH)"},
		{NotLike(Col(4, "s"), "%it's%"), "(s NOT LIKE '%it''s%')"},
		{NotIn(Col(5, "n"), LitInt32(1), LitInt32(2)), "(n NOT IN (1, 2))"},
		{Case([]Expr{Gt(Col(5, "n"), LitInt32(0))}, []Expr{LitString("pos")}, ptr(LitNull(NullType))), "CASE WHEN (n > 0) THEN 'pos' ELSE NULL END"},
		{Cast(Col(5, "n"), DecimalType(15, 2)), "CAST(n AS DECIMAL(15,2))"},
		{Extract("year", Col(3, "d")), "EXTRACT(YEAR FROM d)"},
		{Substring(Col(4, "s"), LitInt32(1), ptr(LitInt32(2))), "substring(s FROM 1 FOR 2)"},
		{IsNotNull(Col(4, "s")), "(s IS NOT NULL)"},
		{Col(9, ""), "#9"},
		{LitNull(DateType), "CAST(NULL AS DATE)"},
		{LitFloat64(2), "2.0"},
		{Neg(LitInt32(1)), "(- 1)"},
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
		e, err := ParseNumberLiteral(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got := string(e.Type.ID) + " " + e.Value
		if e.Type.ID == TypeDecimal {
			got = "decimal(" + itoa(e.Type.Precision) + "," + itoa(e.Type.Scale) + ") " + e.Value
		} else if e.Type.ID == TypeFloat64 {
			got = "float64 " + e.Value
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"", "1.2.3", "abc", "--1", "1e999", strings.Repeat("9", 39)} {
		if _, err := ParseNumberLiteral(bad); !nferr.Is(err, nferr.KindQuery) {
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
	x, y := Col(0, "x"), Col(1, "y")
	rows := [][]any{{0, 5}, {2, 5}, {nil, 5}, {0, nil}, {5, 0}}
	got, err := evalRows(t, schema, rows, Case([]Expr{Ne(x, LitInt32(0))}, []Expr{Div(y, x)}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{nil, int32(2), nil, nil, int32(0)}
	for i := range want {
		if !ValuesEqual(got[i], want[i]) {
			t.Errorf("case row %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := evalRows(t, schema, rows[:3], Coalesce(y, Div(LitInt32(1), x))); err != nil {
		t.Errorf("coalesce evaluated a decided row: %v", err)
	}
	if _, err := evalRows(t, schema, rows, And(Ne(x, LitInt32(0)), Gt(Div(y, x), LitInt32(0)))); err != nil {
		t.Errorf("AND evaluated a FALSE row: %v", err)
	}
	// The same division without the guard fails, naming the expression.
	_, err = evalRows(t, schema, rows, Div(y, x))
	if err == nil || err.Error() != "division by zero in (y / x)" {
		t.Errorf("unguarded division: got %v", err)
	}
	// In a filter the guard works too.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, rows)
	src, _ := NewBatchSource(schema, rec)
	rec.Release()
	f, err := NewFilter(src, And(Ne(x, LitInt32(0)), Gt(Div(y, x), LitInt32(0))))
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
	for _, e := range []Expr{
		Gt(Col(0, "x"), LitInt32(6)),
		Or(Lt(Col(0, "x"), LitInt32(3)), Gt(Col(0, "x"), LitInt32(60))),
		Not(In(Col(0, "x"), LitInt32(5), LitInt32(9))),
	} {
		ce, err := CompileExpr(e, schema)
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
	for _, e := range []Expr{Add(Col(0, "a"), LitInt32(1)), Col(1, "b"), Upper(Col(2, "s")), IsNull(Col(3, "n")), Coalesce(Col(0, "a"), LitInt64(7))} {
		ce, err := CompileExpr(e, schema)
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
			case FnIsNull:
				if v != true {
					t.Errorf("%s row %d = %v", e, i, v)
				}
			case FnCoalesce:
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
			if sel, err := ce.EvalFilter(b); err != nil || (e.Fn != FnIsNull && len(sel) != 0) {
				t.Errorf("%s filter: %v %v", e, sel, err)
			}
		}
	}
}
