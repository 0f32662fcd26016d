package expr

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/nferr"
)

// This file defines the serializable expression tree. The planner builds
// Exprs, ships them (as JSON) to workers, and each operator instance compiles
// them against its input schema with CompileExpr (compile.go).

// TypeID names a nicflow value type.
type TypeID string

// The value types of expressions. Each maps to one Arrow type.
const (
	TypeNull     TypeID = "null"     // the type of an untyped NULL literal
	TypeBool     TypeID = "bool"     // arrow boolean
	TypeInt32    TypeID = "int32"    // arrow int32 (SQL INTEGER)
	TypeInt64    TypeID = "int64"    // arrow int64 (SQL BIGINT)
	TypeFloat64  TypeID = "float64"  // arrow float64 (SQL DOUBLE)
	TypeString   TypeID = "utf8"     // arrow utf8 (SQL VARCHAR)
	TypeDate     TypeID = "date32"   // arrow date32 (SQL DATE)
	TypeDecimal  TypeID = "decimal"  // arrow decimal64 when Precision <= 18, else decimal128
	TypeInterval TypeID = "interval" // arrow month_day_nano interval

	TypeTimestamp   TypeID = "timestamp"   // arrow timestamp[us] (SQL TIMESTAMP)
	TypeTimestampTZ TypeID = "timestamptz" // arrow timestamp[us, tz=UTC] (SQL TIMESTAMPTZ)
	TypeTime        TypeID = "time"        // arrow time64[us] (SQL TIME: time of day, no zone)
	TypeBinary      TypeID = "binary"      // arrow binary (SQL BYTEA)
	// TypeArray is a one-dimensional array of Elem (SQL T[]): an arrow
	// list whose items are Elem's type (array.go).
	TypeArray TypeID = "array"
)

// MaxDecimalPrecision is the largest decimal precision (decimal128).
const MaxDecimalPrecision = 38

// MaxDecimal64Precision is the largest precision stored as decimal64 (an
// int64 holds every 18-digit number).
const MaxDecimal64Precision = 18

// Type is a serializable value type: an ID plus precision and scale for
// decimals.
type Type struct {
	ID        TypeID `json:"id"`
	Precision int32  `json:"p,omitempty"`
	Scale     int32  `json:"s,omitempty"`
	// Elem is the element type of a TypeArray.
	Elem *Type `json:"elem,omitempty"`
	// Vector marks a TypeArray of Int32 as PostgreSQL's int2vector (the
	// catalogs' pg_index.indkey): subscripts from 0, text "1 2" (array.go).
	Vector bool `json:"vector,omitempty"`
}

// ArrayOf is the type elem[].
func ArrayOf(elem Type) Type { return Type{ID: TypeArray, Elem: &elem} }

// Convenience values of the simple types.
var (
	NullType     = Type{ID: TypeNull}
	BoolType     = Type{ID: TypeBool}
	Int32Type    = Type{ID: TypeInt32}
	Int64Type    = Type{ID: TypeInt64}
	Float64Type  = Type{ID: TypeFloat64}
	StringType   = Type{ID: TypeString}
	DateType     = Type{ID: TypeDate}
	IntervalType = Type{ID: TypeInterval}

	TimestampType   = Type{ID: TypeTimestamp}
	TimestampTZType = Type{ID: TypeTimestampTZ}
	TimeType        = Type{ID: TypeTime}
	BinaryType      = Type{ID: TypeBinary}
)

// DecimalType returns decimal(p, s).
func DecimalType(p, s int32) Type { return Type{ID: TypeDecimal, Precision: p, Scale: s} }

// Validate reports whether t is a well-formed type.
func (t Type) Validate() error {
	switch t.ID {
	case TypeNull, TypeBool, TypeInt32, TypeInt64, TypeFloat64, TypeString, TypeDate, TypeInterval,
		TypeTimestamp, TypeTimestampTZ, TypeTime, TypeBinary:
		if t.Precision != 0 || t.Scale != 0 {
			return nferr.Queryf("type %s takes no precision or scale", t.ID)
		}
		return nil
	case TypeArray:
		if t.Elem == nil || t.Elem.ID == TypeArray || t.Elem.ID == TypeNull {
			return nferr.Queryf("an array type needs a scalar element type")
		}
		if t.Vector && t.Elem.ID != TypeInt32 {
			return nferr.Queryf("an int2vector holds integers, not %s", t.Elem)
		}
		return t.Elem.Validate()
	case TypeDecimal:
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
			return nferr.Queryf("decimal precision %d out of range 1..%d", t.Precision, MaxDecimalPrecision)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return nferr.Queryf("decimal scale %d out of range 0..%d", t.Scale, t.Precision)
		}
		return nil
	}
	return nferr.Queryf("unknown type %q", string(t.ID))
}

// Arrow returns the Arrow type of t.
func (t Type) Arrow() arrow.DataType {
	switch t.ID {
	case TypeNull:
		return arrow.Null
	case TypeBool:
		return arrow.FixedWidthTypes.Boolean
	case TypeInt32:
		return arrow.PrimitiveTypes.Int32
	case TypeInt64:
		return arrow.PrimitiveTypes.Int64
	case TypeFloat64:
		return arrow.PrimitiveTypes.Float64
	case TypeString:
		return arrow.BinaryTypes.String
	case TypeDate:
		return arrow.FixedWidthTypes.Date32
	case TypeInterval:
		return arrow.FixedWidthTypes.MonthDayNanoInterval
	case TypeTimestamp:
		return TimestampArrow
	case TypeTimestampTZ:
		return TimestampTZArrow
	case TypeTime:
		return TimeArrow
	case TypeBinary:
		return arrow.BinaryTypes.Binary
	case TypeDecimal:
		if t.Precision <= MaxDecimal64Precision {
			return &arrow.Decimal64Type{Precision: t.Precision, Scale: t.Scale}
		}
		return &arrow.Decimal128Type{Precision: t.Precision, Scale: t.Scale}
	case TypeArray:
		if t.Elem == nil {
			return nil
		}
		if t.Vector {
			return Int2VectorArrow
		}
		return ArrowList(t.Elem.Arrow())
	}
	return nil
}

// TypeOf returns the Type of an Arrow type, or a KindQuery error when
// nicflow does not compute on that type.
func TypeOf(dt arrow.DataType) (Type, error) {
	switch t := dt.(type) {
	case *arrow.NullType:
		return NullType, nil
	case *arrow.BooleanType:
		return BoolType, nil
	case *arrow.Int32Type:
		return Int32Type, nil
	case *arrow.Int64Type:
		return Int64Type, nil
	case *arrow.Float64Type:
		return Float64Type, nil
	case *arrow.StringType:
		return StringType, nil
	case *arrow.BinaryType:
		return BinaryType, nil
	case *arrow.Date32Type:
		return DateType, nil
	case *arrow.MonthDayNanoIntervalType:
		return IntervalType, nil
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			break
		}
		if t.TimeZone != "" {
			return TimestampTZType, nil
		}
		return TimestampType, nil
	case *arrow.Time64Type:
		if t.Unit == arrow.Microsecond {
			return TimeType, nil
		}
	case *arrow.Decimal64Type:
		return DecimalType(t.Precision, t.Scale), nil
	case *arrow.Decimal128Type:
		return DecimalType(t.Precision, t.Scale), nil
	case *arrow.ListType:
		et, err := TypeOf(t.Elem())
		if err != nil || et.ID == TypeArray || et.ID == TypeNull {
			break
		}
		at := ArrayOf(et)
		at.Vector = IsInt2Vector(dt)
		return at, nil
	}
	return Type{}, nferr.Queryf("unsupported column type %s", dt)
}

// String prints t as SQL: INTEGER, DECIMAL(15,2), ...
func (t Type) String() string {
	switch t.ID {
	case TypeNull:
		return "NULL"
	case TypeBool:
		return "BOOLEAN"
	case TypeInt32:
		return "INTEGER"
	case TypeInt64:
		return "BIGINT"
	case TypeFloat64:
		return "DOUBLE"
	case TypeString:
		return "VARCHAR"
	case TypeDate:
		return "DATE"
	case TypeInterval:
		return "INTERVAL"
	case TypeTimestamp:
		return "TIMESTAMP"
	case TypeTimestampTZ:
		return "TIMESTAMPTZ"
	case TypeTime:
		return "TIME"
	case TypeBinary:
		return "BYTEA"
	case TypeDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case TypeArray:
		if t.Vector {
			return "INT2VECTOR"
		}
		if t.Elem != nil {
			return t.Elem.String() + "[]"
		}
	}
	return fmt.Sprintf("TYPE(%s)", string(t.ID))
}

// ExprKind tags the variant of an Expr.
type ExprKind string

// The kinds of expressions.
const (
	KindColumn  ExprKind = "column"  // input column Index (Name for display)
	KindLiteral ExprKind = "literal" // constant Value of Type (Null: NULL)
	KindCall    ExprKind = "call"    // function or operator Fn over Args
	KindCast    ExprKind = "cast"    // CAST(Args[0] AS Type)
	KindCase    ExprKind = "case"    // CASE WHEN Args[0] THEN Args[1] ... [ELSE Args[last]] END
)

// Function names of KindCall expressions. Arity in brackets.
const (
	FnAdd = "add" // a + b [2]: numbers; date +/- int (days) or interval; interval + interval
	FnSub = "sub" // a - b [2]: numbers; date - int, date - interval, date - date (days, INTEGER)
	FnMul = "mul" // a * b [2]
	FnDiv = "div" // a / b [2]: integers truncate; decimals per docs/decisions.md (D6)
	FnMod = "mod" // a % b [2]
	FnNeg = "neg" // -a [1]

	FnEq = "eq" // a = b [2]
	FnNe = "ne" // a <> b [2]
	FnLt = "lt" // a < b [2]
	FnLe = "le" // a <= b [2]
	FnGt = "gt" // a > b [2]
	FnGe = "ge" // a >= b [2]

	FnAnd = "and" // a AND b AND ... [>=2], three-valued
	FnOr  = "or"  // a OR b OR ... [>=2], three-valued
	FnNot = "not" // NOT a [1]

	FnIsNull            = "is_null"              // a IS NULL [1]
	FnIsNotNull         = "is_not_null"          // a IS NOT NULL [1]
	FnIsDistinctFrom    = "is_distinct_from"     // a IS DISTINCT FROM b [2]
	FnIsNotDistinctFrom = "is_not_distinct_from" // a IS NOT DISTINCT FROM b [2]

	FnIn   = "in"   // a IN (b, c, ...) [>=2]
	FnLike = "like" // a LIKE pattern [ESCAPE e] [2-3]

	FnCoalesce = "coalesce" // coalesce(a, b, ...) [>=1]
	FnNullIf   = "nullif"   // nullif(a, b) [2]
	FnAbs      = "abs"      // abs(a) [1]
	FnRound    = "round"    // round(a [, digits]) [1-2], digits an integer literal

	FnSubstring = "substring" // substring(s FROM start [FOR len]) [2-3], 1-based characters
	FnUpper     = "upper"     // upper(s) [1]
	FnLower     = "lower"     // lower(s) [1]
	FnLength    = "length"    // length(s) in characters [1]
	FnTrim      = "trim"      // trim(s [, chars]) both ends [1-2]
	FnLTrim     = "ltrim"     // ltrim(s [, chars]) [1-2]
	FnRTrim     = "rtrim"     // rtrim(s [, chars]) [1-2]
	FnConcat    = "concat"    // a || b [2]; NULL if either is NULL
	FnStrPos    = "strpos"    // strpos(s, sub): 1-based character position, 0 if absent [2]

	FnExtract = "extract" // EXTRACT(field FROM date or timestamp) [2]: Args[0] a string literal field

	FnDateTrunc     = "date_trunc"     // date_trunc(unit, timestamp) [2]: Args[0] a string literal unit
	FnToTimestamp   = "to_timestamp"   // to_timestamp(seconds since 1970) TIMESTAMPTZ [1]
	FnMakeTimestamp = "make_timestamp" // make_timestamp(y, mo, d, h, mi, seconds) [6]
	FnMakeTime      = "make_time"      // make_time(h, mi, seconds) TIME [3]
	FnTimezone      = "timezone"       // timezone(zone, ts): ts AT TIME ZONE zone [2]: TIMESTAMP <-> TIMESTAMPTZ
)

// Expr is a serializable expression tree: plain data with a Kind tag, so it
// encodes to JSON (encoding/json) as is and ships to workers. Build Exprs
// with the constructors below; compile them with CompileExpr.
//
// Typing happens when compiling: a column's type comes from the input
// schema, a literal's and a cast's from Type, a call's from its arguments.
type Expr struct {
	Kind ExprKind `json:"kind"`
	// Index is the input column of a KindColumn.
	Index int `json:"index,omitempty"`
	// Name is the display name of a KindColumn (used by String).
	Name string `json:"name,omitempty"`
	// Fn is the function of a KindCall (one of the Fn constants).
	Fn string `json:"fn,omitempty"`
	// Type is the type of a KindLiteral and the target of a KindCast.
	Type *Type `json:"type,omitempty"`
	// Value is a KindLiteral's value as text (see Lit* constructors):
	// integers and decimals in decimal notation, floats in Go's shortest
	// round-tripping form ("NaN", "+Inf" allowed), booleans "true"/"false",
	// dates YYYY-MM-DD, intervals "months:days:nanos", strings as is,
	// bytea as PostgreSQL's hex text (\x4142).
	Value string `json:"value,omitempty"`
	// Null marks a NULL literal of Type.
	Null bool `json:"null,omitempty"`
	// Args are the operands of calls, casts and CASE.
	Args []Expr `json:"args,omitempty"`
	// Zone is the session time zone of a call or cast (LoadZone's names;
	// "" is UTC): the binder stamps it on every call and cast of a
	// statement, and CompileExpr compiles the whole tree in the first zone
	// it finds, so that a fragment shipped to a worker computes as the
	// session would.
	Zone string `json:"zone,omitempty"`
}

// ---------------------------------------------------------------- leaves

// Col refers to input column i; name is for display only.
func Col(i int, name string) Expr { return Expr{Kind: KindColumn, Index: i, Name: name} }

func lit(t Type, v string) Expr { return Expr{Kind: KindLiteral, Type: &t, Value: v} }

// LitNull is a NULL of type t (NullType for an untyped NULL, which takes the
// type its context needs).
func LitNull(t Type) Expr { return Expr{Kind: KindLiteral, Type: &t, Null: true} }

// LitBool is a BOOLEAN literal.
func LitBool(v bool) Expr { return lit(BoolType, strconv.FormatBool(v)) }

// LitInt32 is an INTEGER literal.
func LitInt32(v int32) Expr { return lit(Int32Type, strconv.FormatInt(int64(v), 10)) }

// LitInt64 is a BIGINT literal.
func LitInt64(v int64) Expr { return lit(Int64Type, strconv.FormatInt(v, 10)) }

// LitFloat64 is a DOUBLE literal.
func LitFloat64(v float64) Expr { return lit(Float64Type, strconv.FormatFloat(v, 'g', -1, 64)) }

// LitString is a VARCHAR literal.
func LitString(v string) Expr { return lit(StringType, v) }

// LitBinary is a BYTEA literal of the bytes b (Value: PostgreSQL's hex
// text, \x...).
func LitBinary(b []byte) Expr { return lit(BinaryType, bytea.Format(b)) }

// LitDate is a DATE literal of days since 1970-01-01.
func LitDate(days int32) Expr { return lit(DateType, FormatDate(days)) }

// LitTimestamp is a TIMESTAMP (zone false) or TIMESTAMPTZ literal of
// microseconds since 1970-01-01 00:00:00 (UTC).
func LitTimestamp(us int64, zone bool) Expr {
	if zone {
		return lit(TimestampTZType, FormatTimestamp(us, true))
	}
	return lit(TimestampType, FormatTimestamp(us, false))
}

// LitTime is a TIME literal of microseconds since midnight.
func LitTime(us int64) Expr { return lit(TimeType, FormatTime(us)) }

// LitDecimal is the DECIMAL(p, s) literal unscaled * 10^-s.
func LitDecimal(unscaled int64, p, s int32) Expr {
	return lit(DecimalType(p, s), decimal128.FromI64(unscaled).ToString(s))
}

// LitDecimal128 is the DECIMAL(p, s) literal unscaled * 10^-s.
func LitDecimal128(unscaled decimal128.Num, p, s int32) Expr {
	return lit(DecimalType(p, s), unscaled.ToString(s))
}

// LitInterval is an INTERVAL literal of months, days and nanoseconds.
func LitInterval(months, days int32, nanos int64) Expr {
	return lit(IntervalType, fmt.Sprintf("%d:%d:%d", months, days, nanos))
}

// ParseNumberLiteral types a SQL numeric literal the way the binder should:
// an integer that fits int32 is INTEGER, else BIGINT, else DECIMAL(p,0);
// a literal with a point is DECIMAL(p, s) with s the digits after the point
// and p the significant digits (at least s+1); one with an exponent is
// DOUBLE. Errors are KindQuery.
func ParseNumberLiteral(s string) (Expr, error) {
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return Expr{}, nferr.Queryf("invalid number %q", s)
		}
		return LitFloat64(f), nil
	}
	if !strings.Contains(s, ".") {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			if v == int64(int32(v)) {
				return LitInt32(int32(v)), nil
			}
			return LitInt64(v), nil
		}
	}
	p, sc, ok := decimalLiteralShape(s)
	if !ok {
		return Expr{}, nferr.Queryf("invalid number %q", s)
	}
	if p > MaxDecimalPrecision {
		return Expr{}, nferr.Queryf("number %q has more than %d digits", s, MaxDecimalPrecision)
	}
	n, err := decimal128.FromString(s, p, sc)
	if err != nil {
		return Expr{}, nferr.Queryf("invalid number %q", s)
	}
	return LitDecimal128(n, p, sc), nil
}

// decimalLiteralShape returns the precision and scale of a plain decimal
// literal [+-]digits[.digits].
func decimalLiteralShape(s string) (p, sc int32, ok bool) {
	t := strings.TrimLeft(s, "+-")
	if len(s)-len(t) > 1 {
		return 0, 0, false
	}
	intPart, frac, _ := strings.Cut(t, ".")
	if intPart == "" && frac == "" {
		return 0, 0, false
	}
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
	}
	intPart = strings.TrimLeft(intPart, "0")
	sc = int32(len(frac))
	p = int32(len(intPart)) + sc
	if p < sc+1 {
		p = sc + 1
	}
	return p, sc, true
}

// ------------------------------------------------------------- operators

// Call is the generic constructor of a KindCall.
func Call(fn string, args ...Expr) Expr { return Expr{Kind: KindCall, Fn: fn, Args: args} }

// Cast is CAST(x AS t).
func Cast(x Expr, t Type) Expr { return Expr{Kind: KindCast, Type: &t, Args: []Expr{x}} }

// Arithmetic.
func Add(a, b Expr) Expr { return Call(FnAdd, a, b) }
func Sub(a, b Expr) Expr { return Call(FnSub, a, b) }
func Mul(a, b Expr) Expr { return Call(FnMul, a, b) }
func Div(a, b Expr) Expr { return Call(FnDiv, a, b) }
func Mod(a, b Expr) Expr { return Call(FnMod, a, b) }
func Neg(a Expr) Expr    { return Call(FnNeg, a) }

// Comparisons.
func Eq(a, b Expr) Expr { return Call(FnEq, a, b) }
func Ne(a, b Expr) Expr { return Call(FnNe, a, b) }
func Lt(a, b Expr) Expr { return Call(FnLt, a, b) }
func Le(a, b Expr) Expr { return Call(FnLe, a, b) }
func Gt(a, b Expr) Expr { return Call(FnGt, a, b) }
func Ge(a, b Expr) Expr { return Call(FnGe, a, b) }

// Between is x BETWEEN lo AND hi, i.e. x >= lo AND x <= hi.
func Between(x, lo, hi Expr) Expr { return And(Ge(x, lo), Le(x, hi)) }

// And is the n-ary three-valued AND; one argument returns it unchanged.
func And(args ...Expr) Expr {
	if len(args) == 1 {
		return args[0]
	}
	return Call(FnAnd, args...)
}

// Or is the n-ary three-valued OR; one argument returns it unchanged.
func Or(args ...Expr) Expr {
	if len(args) == 1 {
		return args[0]
	}
	return Call(FnOr, args...)
}

// Not is three-valued NOT.
func Not(a Expr) Expr { return Call(FnNot, a) }

// Null tests.
func IsNull(a Expr) Expr                  { return Call(FnIsNull, a) }
func IsNotNull(a Expr) Expr               { return Call(FnIsNotNull, a) }
func IsDistinctFrom(a, b Expr) Expr       { return Call(FnIsDistinctFrom, a, b) }
func IsNotDistinctFrom(a, b Expr) Expr    { return Call(FnIsNotDistinctFrom, a, b) }
func In(x Expr, list ...Expr) Expr        { return Call(FnIn, append([]Expr{x}, list...)...) }
func NotIn(x Expr, list ...Expr) Expr     { return Not(In(x, list...)) }
func Like(x Expr, pattern string) Expr    { return Call(FnLike, x, LitString(pattern)) }
func NotLike(x Expr, pattern string) Expr { return Not(Like(x, pattern)) }

// LikeEscape is x LIKE pattern ESCAPE escape (escape: one character).
func LikeEscape(x Expr, pattern, escape string) Expr {
	return Call(FnLike, x, LitString(pattern), LitString(escape))
}

// Case is the searched CASE WHEN whens[i] THEN thens[i] ... ELSE els END;
// els may be nil (ELSE NULL).
func Case(whens, thens []Expr, els *Expr) Expr {
	args := make([]Expr, 0, 2*len(whens)+1)
	for i := range whens {
		args = append(args, whens[i], thens[i])
	}
	if els != nil {
		args = append(args, *els)
	}
	return Expr{Kind: KindCase, Args: args}
}

// SimpleCase is CASE operand WHEN vals[i] THEN thens[i] ... ELSE els END,
// rewritten as the searched CASE WHEN operand = vals[i] THEN ...
func SimpleCase(operand Expr, vals, thens []Expr, els *Expr) Expr {
	whens := make([]Expr, len(vals))
	for i, v := range vals {
		whens[i] = Eq(operand, v)
	}
	return Case(whens, thens, els)
}

// Functions.
func Coalesce(args ...Expr) Expr { return Call(FnCoalesce, args...) }
func NullIf(a, b Expr) Expr      { return Call(FnNullIf, a, b) }
func Abs(a Expr) Expr            { return Call(FnAbs, a) }

// Round is round(x, digits); digits may be negative.
func Round(x Expr, digits int32) Expr { return Call(FnRound, x, LitInt32(digits)) }

// Substring is substring(s FROM start [FOR length]); length may be nil.
func Substring(s, start Expr, length *Expr) Expr {
	if length == nil {
		return Call(FnSubstring, s, start)
	}
	return Call(FnSubstring, s, start, *length)
}

func Upper(s Expr) Expr       { return Call(FnUpper, s) }
func Lower(s Expr) Expr       { return Call(FnLower, s) }
func Length(s Expr) Expr      { return Call(FnLength, s) }
func Trim(s Expr) Expr        { return Call(FnTrim, s) }
func LTrim(s Expr) Expr       { return Call(FnLTrim, s) }
func RTrim(s Expr) Expr       { return Call(FnRTrim, s) }
func Concat(a, b Expr) Expr   { return Call(FnConcat, a, b) }
func StrPos(s, sub Expr) Expr { return Call(FnStrPos, s, sub) }

// Extract is EXTRACT(field FROM x) for field one of ExtractFields (dow:
// 0 = Sunday; isodow: 1 = Monday; week: ISO 8601; epoch: seconds); the
// result is BIGINT.
func Extract(field string, x Expr) Expr {
	return Call(FnExtract, LitString(strings.ToLower(field)), x)
}

// ------------------------------------------------------------- printing

var infix = map[string]string{
	FnAdd: "+", FnSub: "-", FnMul: "*", FnDiv: "/", FnMod: "%",
	FnEq: "=", FnNe: "<>", FnLt: "<", FnLe: "<=", FnGt: ">", FnGe: ">=",
	FnIsDistinctFrom: "IS DISTINCT FROM", FnIsNotDistinctFrom: "IS NOT DISTINCT FROM",
	FnConcat: "||",
}

// String prints e as SQL-like text, used in error messages and EXPLAIN.
func (e Expr) String() string {
	var sb strings.Builder
	e.format(&sb)
	return sb.String()
}

func (e Expr) format(sb *strings.Builder) {
	switch e.Kind {
	case KindColumn:
		if e.Name != "" {
			sb.WriteString(e.Name)
		} else {
			fmt.Fprintf(sb, "#%d", e.Index)
		}
	case KindLiteral:
		e.formatLiteral(sb)
	case KindParam:
		sb.WriteString(e.paramName())
	case KindCast:
		sb.WriteString("CAST(")
		e.arg(0).format(sb)
		sb.WriteString(" AS ")
		if e.Type != nil {
			sb.WriteString(e.Type.String())
		}
		sb.WriteString(")")
	case KindCase:
		sb.WriteString("CASE")
		i := 0
		for ; i+1 < len(e.Args); i += 2 {
			sb.WriteString(" WHEN ")
			e.Args[i].format(sb)
			sb.WriteString(" THEN ")
			e.Args[i+1].format(sb)
		}
		if i < len(e.Args) {
			sb.WriteString(" ELSE ")
			e.Args[i].format(sb)
		}
		sb.WriteString(" END")
	case KindCall:
		e.formatCall(sb)
	default:
		fmt.Fprintf(sb, "<%s>", string(e.Kind))
	}
}

func (e Expr) arg(i int) Expr {
	if i < len(e.Args) {
		return e.Args[i]
	}
	return Expr{Kind: "missing"}
}

func (e Expr) formatCall(sb *strings.Builder) {
	if op, ok := infix[e.Fn]; ok && len(e.Args) == 2 {
		sb.WriteString("(")
		e.Args[0].format(sb)
		sb.WriteString(" " + op + " ")
		e.Args[1].format(sb)
		sb.WriteString(")")
		return
	}
	switch e.Fn {
	case FnAnd, FnOr:
		sb.WriteString("(")
		for i, a := range e.Args {
			if i > 0 {
				sb.WriteString(" " + strings.ToUpper(e.Fn) + " ")
			}
			a.format(sb)
		}
		sb.WriteString(")")
		return
	case FnNot:
		if a := e.arg(0); a.Kind == KindCall && (a.Fn == FnLike || a.Fn == FnIn) && len(a.Args) >= 2 {
			sb.WriteString("(")
			a.Args[0].format(sb)
			sb.WriteString(" NOT")
			a.formatLikeIn(sb)
			sb.WriteString(")")
			return
		}
		sb.WriteString("(NOT ")
		e.arg(0).format(sb)
		sb.WriteString(")")
		return
	case FnNeg:
		sb.WriteString("(- ")
		e.arg(0).format(sb)
		sb.WriteString(")")
		return
	case FnIsNull, FnIsNotNull:
		sb.WriteString("(")
		e.arg(0).format(sb)
		if e.Fn == FnIsNull {
			sb.WriteString(" IS NULL)")
		} else {
			sb.WriteString(" IS NOT NULL)")
		}
		return
	case FnLike, FnIn:
		if len(e.Args) >= 2 {
			sb.WriteString("(")
			e.Args[0].format(sb)
			e.formatLikeIn(sb)
			sb.WriteString(")")
			return
		}
	case FnExtract:
		if len(e.Args) == 2 && e.Args[0].Kind == KindLiteral {
			sb.WriteString("EXTRACT(" + strings.ToUpper(e.Args[0].Value) + " FROM ")
			e.Args[1].format(sb)
			sb.WriteString(")")
			return
		}
	case FnSubstring:
		if len(e.Args) >= 2 {
			sb.WriteString("substring(")
			e.Args[0].format(sb)
			sb.WriteString(" FROM ")
			e.Args[1].format(sb)
			if len(e.Args) > 2 {
				sb.WriteString(" FOR ")
				e.Args[2].format(sb)
			}
			sb.WriteString(")")
			return
		}
	}
	sb.WriteString(e.Fn + "(")
	for i, a := range e.Args {
		if i > 0 {
			sb.WriteString(", ")
		}
		a.format(sb)
	}
	sb.WriteString(")")
}

// formatLikeIn prints " LIKE p [ESCAPE e]" or " IN (a, b)" (without the
// left operand).
func (e Expr) formatLikeIn(sb *strings.Builder) {
	if e.Fn == FnLike {
		sb.WriteString(" LIKE ")
		e.Args[1].format(sb)
		if len(e.Args) > 2 {
			sb.WriteString(" ESCAPE ")
			e.Args[2].format(sb)
		}
		return
	}
	sb.WriteString(" IN (")
	for i, a := range e.Args[1:] {
		if i > 0 {
			sb.WriteString(", ")
		}
		a.format(sb)
	}
	sb.WriteString(")")
}

func (e Expr) formatLiteral(sb *strings.Builder) {
	if e.Type == nil {
		sb.WriteString("<untyped literal>")
		return
	}
	if e.Null {
		if e.Type.ID == TypeNull {
			sb.WriteString("NULL")
		} else {
			sb.WriteString("CAST(NULL AS " + e.Type.String() + ")")
		}
		return
	}
	switch e.Type.ID {
	case TypeString:
		sb.WriteString("'" + strings.ReplaceAll(e.Value, "'", "''") + "'")
	case TypeDate:
		sb.WriteString("DATE '" + e.Value + "'")
	case TypeBinary:
		sb.WriteString("'" + e.Value + "'::BYTEA")
	case TypeTimestamp, TypeTimestampTZ, TypeTime:
		sb.WriteString(e.Type.String() + " '" + e.Value + "'")
	case TypeBool:
		sb.WriteString(strings.ToUpper(e.Value))
	case TypeInterval:
		var m, d int32
		var ns int64
		if _, err := fmt.Sscanf(e.Value, "%d:%d:%d", &m, &d, &ns); err != nil {
			sb.WriteString("INTERVAL '" + e.Value + "'")
			return
		}
		switch {
		case d == 0 && ns == 0 && m%12 == 0 && m != 0:
			fmt.Fprintf(sb, "INTERVAL '%d' YEAR", m/12)
		case d == 0 && ns == 0:
			fmt.Fprintf(sb, "INTERVAL '%d' MONTH", m)
		case m == 0 && ns == 0:
			fmt.Fprintf(sb, "INTERVAL '%d' DAY", d)
		default:
			fmt.Fprintf(sb, "INTERVAL '%d months %d days %d ns'", m, d, ns)
		}
	case TypeFloat64:
		sb.WriteString(e.Value)
		if !strings.ContainsAny(e.Value, ".eEnN") {
			sb.WriteString(".0")
		}
	default:
		sb.WriteString(e.Value)
	}
}

// MarshalExprs and UnmarshalExprs are the wire form of expression lists
// (plain encoding/json; exported for symmetry with the planner's codecs).
func MarshalExprs(es []Expr) ([]byte, error) { return json.Marshal(es) }

// UnmarshalExprs decodes MarshalExprs output; malformed input is KindData.
func UnmarshalExprs(b []byte) ([]Expr, error) {
	var es []Expr
	if err := json.Unmarshal(b, &es); err != nil {
		return nil, nferr.Dataf("decoding expressions: %v", err)
	}
	return es, nil
}
