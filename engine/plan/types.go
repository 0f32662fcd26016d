package plan

import (
	"fmt"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
)

// Types of the logical plan are Arrow types (docs/architecture.md). These
// helpers classify them; the rules of arithmetic and common types are
// exec's (exec/expr/types.go: ArithType, DecimalResult, CommonType), which the
// binder calls, so that a plan's types are what execution produces. The
// rules, for reference:
//
//	numbers widen int32 -> int64 -> decimal -> float64
//	int32 viewed as a decimal is decimal(10,0), int64 decimal(19,0); an
//	  integer literal is the smallest decimal that holds it (24 -> decimal(2,0))
//	decimal(p1,s1) + - decimal(p2,s2): s = max(s1,s2),
//	  p = min(max(p1-s1, p2-s2) + s + 1, 38)
//	decimal * decimal: s = s1+s2, p = min(p1+p2, 38) (decimal(38,38) when
//	  s1+s2 > 38: the product is rounded)
//	decimal / decimal: s = max(s1, s2, 16), p = min(p1-s1+s2+s, 38), rounded half
//	  away from zero (PostgreSQL-like: at least 16 fractional digits)
//	decimal % decimal: s = max(s1,s2), p = max(min(min(p1-s1, p2-s2)+s, 38), 1)
//	integer / integer truncates (PostgreSQL)
//	sum(int32|int64) int64; sum(decimal(p,s)) decimal(38,s); sum(float) float64
//	avg(int|float) float64; avg(decimal(p,s)) decimal(38, expr.AvgScale(s))
//	  (exec/expr's rule: at least 16 fraction digits, rounded half away from 0)
//	count int64; min/max the argument's type
//	date +/- integer -> date; date +/- interval -> date (a constant interval
//	  with a time of day: timestamp); date - date -> int32
//	timestamp +/- interval -> timestamp; timestamp - timestamp -> interval;
//	  a date beside a timestamp is its midnight (common type timestamp)
//	time +/- interval -> time (the interval's time part, wrapped around
//	  midnight); time - time -> interval; date + time -> timestamp
//	comparisons, CASE, COALESCE, IN, UNION convert to the common type (the
//	  exec package's commonType): NULL takes the other type; numbers widen
//	  as above with decimals taking the larger scale and integer part; an
//	  untyped string literal takes the other side's type (date '...' rules)
//
// Decimals with p <= 18 are arrow decimal64, wider ones decimal128.

var (
	TypBool     = arrow.FixedWidthTypes.Boolean
	TypInt32    = arrow.PrimitiveTypes.Int32
	TypInt64    = arrow.PrimitiveTypes.Int64
	TypFloat64  = arrow.PrimitiveTypes.Float64
	TypString   = arrow.BinaryTypes.String
	TypDate     = arrow.FixedWidthTypes.Date32
	TypInterval = arrow.FixedWidthTypes.MonthDayNanoInterval
	TypNull     = arrow.Null
	// TypTimestamp is TIMESTAMP (microseconds, no zone); TypTimestampTZ
	// TIMESTAMPTZ (microseconds, UTC).
	TypTimestamp   arrow.DataType = expr.TimestampArrow
	TypTimestampTZ arrow.DataType = expr.TimestampTZArrow
	// TypTime is TIME (time of day, microseconds, no zone).
	TypTime arrow.DataType = expr.TimeArrow
)

// TypBinary is BYTEA (binary strings); its constants hold Bytea values.
var TypBinary arrow.DataType = arrow.BinaryTypes.Binary

// IsBinary reports BYTEA.
func IsBinary(t arrow.DataType) bool { return t.ID() == arrow.BINARY }

// maxDecimalPrecision is decimal128's limit; maxDecimal64Precision the
// largest precision an int64 always holds.
const (
	MaxDecimalPrecision   = 38
	maxDecimal64Precision = 18
)

// DecimalType is decimal(p, s) in its storage width.
func DecimalType(p, s int32) arrow.DataType {
	if p > MaxDecimalPrecision {
		p = MaxDecimalPrecision
	}
	if s > p {
		s = p
	}
	if p <= maxDecimal64Precision {
		return &arrow.Decimal64Type{Precision: p, Scale: s}
	}
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

func IsInteger(t arrow.DataType) bool { return t.ID() == arrow.INT32 || t.ID() == arrow.INT64 }
func IsDecimal(t arrow.DataType) bool {
	return t.ID() == arrow.DECIMAL64 || t.ID() == arrow.DECIMAL128
}
func IsFloat(t arrow.DataType) bool   { return t.ID() == arrow.FLOAT64 }
func IsNumeric(t arrow.DataType) bool { return IsInteger(t) || IsDecimal(t) || IsFloat(t) }
func IsString(t arrow.DataType) bool  { return t.ID() == arrow.STRING }
func IsDate(t arrow.DataType) bool    { return t.ID() == arrow.DATE32 }
func IsBool(t arrow.DataType) bool    { return t.ID() == arrow.BOOL }
func IsNullType(t arrow.DataType) bool {
	return t.ID() == arrow.NULL
}
func IsInterval(t arrow.DataType) bool { return t.ID() == arrow.INTERVAL_MONTH_DAY_NANO }

// IsTimestamp reports TIMESTAMP and TIMESTAMPTZ; IsTemporal dates too.
func IsTimestamp(t arrow.DataType) bool { return expr.IsTimestamp(t) }
func IsTemporal(t arrow.DataType) bool  { return IsDate(t) || IsTimestamp(t) }

// IsArray reports an array type (an arrow list, exec/expr/array.go).
func IsArray(t arrow.DataType) bool { return expr.IsArray(t) }

// ArrayOf is the type elem[].
func ArrayOf(elem arrow.DataType) arrow.DataType { return expr.ArrowList(elem) }

// ArrayElemType is the element type of an array type (nil for another).
func ArrayElemType(t arrow.DataType) arrow.DataType { return expr.ArrayElem(t) }

// TypInt2Vector is PostgreSQL's int2vector (pg_index.indkey): an array of
// integers subscripted from 0, printed "1 2" (exec/expr/array.go).
var TypInt2Vector = expr.Int2VectorArrow

// IsTime reports TIME (not a temporal type above: it has no date).
func IsTime(t arrow.DataType) bool { return expr.IsTime(t) }

// decimalPS, commonType and arithType are exec's typing rules
// (exec/expr/types.go): the one authority the binder and the compiler share.
func DecimalPS(t arrow.DataType) (p, s int32, ok bool) { return expr.DecimalPS(t) }

func CommonType(a, b arrow.DataType) (arrow.DataType, bool) { return expr.CommonType(a, b) }

func ArithType(fn string, a, b arrow.DataType) (arrow.DataType, bool) {
	return expr.ArithType(fn, a, b)
}

// TypeString prints a type the way SQL users know it.
func TypeString(t arrow.DataType) string {
	if t == nil {
		return "?"
	}
	switch t := t.(type) {
	case *arrow.ListType:
		if expr.IsInt2Vector(t) {
			return "int2vector"
		}
		return TypeString(t.Elem()) + "[]"
	case *arrow.Decimal64Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	switch t.ID() {
	case arrow.INT32:
		return "integer"
	case arrow.INT64:
		return "bigint"
	case arrow.FLOAT64:
		return "double"
	case arrow.STRING:
		return "varchar"
	case arrow.BINARY:
		return "bytea"
	case arrow.DATE32:
		return "date"
	case arrow.BOOL:
		return "boolean"
	case arrow.NULL:
		return "unknown"
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return "interval"
	case arrow.TIMESTAMP:
		if expr.HasZone(t) {
			return "timestamp with time zone"
		}
		return "timestamp"
	case arrow.TIME64:
		return "time"
	}
	return t.String()
}

// AggResultType is the result type of sum or avg over t.
func AggResultType(fn string, t arrow.DataType) arrow.DataType {
	switch {
	case IsNullType(t), IsInteger(t):
		if fn == AggAvg {
			return TypFloat64
		}
		return TypInt64
	case IsFloat(t):
		return TypFloat64
	}
	_, s, _ := DecimalPS(t)
	if fn == AggAvg {
		return DecimalType(MaxDecimalPrecision, expr.AvgScale(s))
	}
	return DecimalType(MaxDecimalPrecision, s)
}
