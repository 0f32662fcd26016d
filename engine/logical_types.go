package engine

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Types of the logical plan are Arrow types (docs/architecture.md). These
// helpers classify them and implement the typing rules of the binder:
//
//	numbers widen int32 -> int64 -> decimal -> float64
//	int32 viewed as a decimal is decimal(10,0), int64 decimal(19,0); an
//	  integer literal is the smallest decimal that holds it (24 -> decimal(2,0))
//	decimal(p1,s1) + - decimal(p2,s2): s = max(s1,s2),
//	  p = min(max(p1-s1, p2-s2) + s + 1, 38)
//	decimal * decimal: s = s1+s2, p = min(p1+p2, 38)
//	decimal / decimal: s = max(s1, 6), p = min(p1-s1+s2+s, 38), rounded half
//	  away from zero (PostgreSQL-like: at least six fractional digits)
//	decimal % decimal: s = max(s1,s2), p = min(min(p1-s1, p2-s2)+s, 38)
//	integer / integer truncates (PostgreSQL)
//	sum(int32|int64) int64; sum(decimal(p,s)) decimal(38,s); sum(float) float64
//	avg(int|float) float64; avg(decimal(p,s)) decimal(38, min(s+4, 38))
//	  (the exec package's rule: four more digits, rounded half away from 0)
//	count int64; min/max the argument's type
//	date +/- integer -> date; date +/- interval -> date; date - date -> int32
//	comparisons, CASE, COALESCE, IN, UNION convert to the common type (the
//	  exec package's commonType): NULL takes the other type; numbers widen
//	  as above with decimals taking the larger scale and integer part; an
//	  untyped string literal takes the other side's type (date '...' rules)
//
// Decimals with p <= 18 are arrow decimal64, wider ones decimal128.

var (
	typBool     = arrow.FixedWidthTypes.Boolean
	typInt32    = arrow.PrimitiveTypes.Int32
	typInt64    = arrow.PrimitiveTypes.Int64
	typFloat64  = arrow.PrimitiveTypes.Float64
	typString   = arrow.BinaryTypes.String
	typDate     = arrow.FixedWidthTypes.Date32
	typInterval = arrow.FixedWidthTypes.MonthDayNanoInterval
	typNull     = arrow.Null
)

// maxDecimalPrecision is decimal128's limit; maxDecimal64Precision the
// largest precision an int64 always holds.
const (
	maxDecimalPrecision   = 38
	maxDecimal64Precision = 18
)

// decimalType is decimal(p, s) in its storage width.
func decimalType(p, s int32) arrow.DataType {
	if p > maxDecimalPrecision {
		p = maxDecimalPrecision
	}
	if s > p {
		s = p
	}
	if p <= maxDecimal64Precision {
		return &arrow.Decimal64Type{Precision: p, Scale: s}
	}
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

func isInteger(t arrow.DataType) bool { return t.ID() == arrow.INT32 || t.ID() == arrow.INT64 }
func isDecimal(t arrow.DataType) bool {
	return t.ID() == arrow.DECIMAL64 || t.ID() == arrow.DECIMAL128
}
func isFloat(t arrow.DataType) bool   { return t.ID() == arrow.FLOAT64 }
func isNumeric(t arrow.DataType) bool { return isInteger(t) || isDecimal(t) || isFloat(t) }
func isString(t arrow.DataType) bool  { return t.ID() == arrow.STRING }
func isDate(t arrow.DataType) bool    { return t.ID() == arrow.DATE32 }
func isBool(t arrow.DataType) bool    { return t.ID() == arrow.BOOL }
func isNullType(t arrow.DataType) bool {
	return t.ID() == arrow.NULL
}
func isInterval(t arrow.DataType) bool { return t.ID() == arrow.INTERVAL_MONTH_DAY_NANO }

// decimalPS returns the precision and scale of a decimal, or of an integer
// viewed as a decimal.
func decimalPS(t arrow.DataType) (p, s int32, ok bool) {
	switch t := t.(type) {
	case *arrow.Decimal64Type:
		return t.Precision, t.Scale, true
	case *arrow.Decimal128Type:
		return t.Precision, t.Scale, true
	case *arrow.Int32Type:
		return 10, 0, true
	case *arrow.Int64Type:
		return 19, 0, true
	}
	return 0, 0, false
}

// commonType is the type both operands of a comparison (CASE branches,
// COALESCE, IN lists, set operations) are converted to.
func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	if arrow.TypeEqual(a, b) {
		return a, true
	}
	if isNullType(a) {
		return b, true
	}
	if isNullType(b) {
		return a, true
	}
	if !isNumeric(a) || !isNumeric(b) {
		return nil, false
	}
	if isFloat(a) || isFloat(b) {
		return typFloat64, true
	}
	if isInteger(a) && isInteger(b) {
		return typInt64, true
	}
	p1, s1, _ := decimalPS(a)
	p2, s2, _ := decimalPS(b)
	s := max(s1, s2)
	return decimalType(min(max(p1-s1, p2-s2)+s, maxDecimalPrecision), s), true
}

// arithType is the result type of a binary arithmetic operator fn (add,
// sub, mul, div, mod) on numbers, or false.
func arithType(fn string, a, b arrow.DataType) (arrow.DataType, bool) {
	if isNullType(a) {
		a = b
	}
	if isNullType(b) {
		b = a
	}
	if isNullType(a) {
		return typInt32, true
	}
	if !isNumeric(a) || !isNumeric(b) {
		return nil, false
	}
	if isFloat(a) || isFloat(b) {
		return typFloat64, true
	}
	if isInteger(a) && isInteger(b) {
		if a.ID() == arrow.INT64 || b.ID() == arrow.INT64 {
			return typInt64, true
		}
		return typInt32, true
	}
	p1, s1, _ := decimalPS(a)
	p2, s2, _ := decimalPS(b)
	switch fn {
	case fnAdd, fnSub:
		s := max(s1, s2)
		return decimalType(min(max(p1-s1, p2-s2)+s+1, maxDecimalPrecision), s), true
	case fnMul:
		return decimalType(min(p1+p2, maxDecimalPrecision), min(s1+s2, maxDecimalPrecision)), true
	case fnDiv:
		s := max(s1, 6)
		return decimalType(min(p1-s1+s2+s, maxDecimalPrecision), s), true
	case fnMod:
		s := max(s1, s2)
		return decimalType(min(min(p1-s1, p2-s2)+s, maxDecimalPrecision), s), true
	}
	return nil, false
}

// typeString prints a type the way SQL users know it.
func typeString(t arrow.DataType) string {
	if t == nil {
		return "?"
	}
	switch t := t.(type) {
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
	case arrow.DATE32:
		return "date"
	case arrow.BOOL:
		return "boolean"
	case arrow.NULL:
		return "unknown"
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return "interval"
	}
	return t.String()
}
