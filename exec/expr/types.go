package expr

import "github.com/apache/arrow-go/v18/arrow"

// The typing rules of expressions, in one place: the binder (engine)
// types every expression with these functions, and the compiler builds
// kernels whose results have these types, so a plan's types are what
// execution produces.

// DecimalPS returns the precision and scale of a decimal type, and of an
// integer type viewed as a decimal (int32: 10 digits, int64: 19).
func DecimalPS(dt arrow.DataType) (p, s int32, ok bool) {
	switch t := dt.(type) {
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

func decimalPS(dt arrow.DataType) (p, s int32, ok bool) { return DecimalPS(dt) }

// DivMinScale is the fewest fraction digits of a decimal quotient and of
// an average: PostgreSQL keeps at least 16 significant digits (1.00/3.00 is
// 0.3333333333333333...), which a fixed scale of 16 gives for quotients
// below 1 and exceeds above.
const DivMinScale = 16

// AvgScale is the scale of avg over decimal(p, s): at least DivMinScale
// fraction digits, as a quotient.
func AvgScale(s int32) int32 { return min(max(s, DivMinScale), MaxDecimalPrecision) }

// DecimalResult is the precision and scale of fn (FnAdd, FnSub, FnMul,
// FnDiv, FnMod) on decimals (p1, s1) and (p2, s2) (integers as DecimalPS
// views them), as PostgreSQL and DuckDB type them within 38 digits: + and
// - keep the larger scale and add a digit; * adds the scales (rounded to
// scale 38 when it cannot be stored); / keeps the larger scale and at least
// DivMinScale fraction digits;
// % keeps the larger scale and the smaller integer part.
func DecimalResult(fn string, p1, s1, p2, s2 int32) (p, s int32) {
	switch fn {
	case FnAdd, FnSub:
		s = max(s1, s2)
		return min(max(p1-s1, p2-s2)+s+1, MaxDecimalPrecision), s
	case FnMul:
		s = s1 + s2
		if s > MaxDecimalPrecision {
			return MaxDecimalPrecision, MaxDecimalPrecision
		}
		return max(min(p1+p2, MaxDecimalPrecision), s), s
	case FnDiv:
		s = max(s1, s2, DivMinScale)
		return min(p1-s1+s2+s, MaxDecimalPrecision), s
	case FnMod:
		s = max(s1, s2)
		return max(min(min(p1-s1, p2-s2)+s, MaxDecimalPrecision), 1), s
	}
	return 0, 0
}

// ArithType is the result type of binary arithmetic fn (FnAdd, FnSub,
// FnMul, FnDiv, FnMod) on numbers a and b, or false: NULL takes the other
// operand's type (int32 when both are NULL); a double makes a double;
// integers stay integers (int64 if either is); otherwise DecimalResult.
func ArithType(fn string, a, b arrow.DataType) (arrow.DataType, bool) {
	if a.ID() == arrow.NULL {
		a = b
	}
	if b.ID() == arrow.NULL {
		b = a
	}
	if a.ID() == arrow.NULL {
		return arrow.PrimitiveTypes.Int32, true
	}
	if !IsNumeric(a) || !IsNumeric(b) {
		return nil, false
	}
	if a.ID() == arrow.FLOAT64 || b.ID() == arrow.FLOAT64 {
		return arrow.PrimitiveTypes.Float64, true
	}
	if IsInteger(a) && IsInteger(b) {
		if a.ID() == arrow.INT64 || b.ID() == arrow.INT64 {
			return arrow.PrimitiveTypes.Int64, true
		}
		return arrow.PrimitiveTypes.Int32, true
	}
	p1, s1, _ := DecimalPS(a)
	p2, s2, _ := DecimalPS(b)
	switch fn {
	case FnAdd, FnSub, FnMul, FnDiv, FnMod:
		return decType(DecimalResult(fn, p1, s1, p2, s2)), true
	}
	return nil, false
}

// timeCommonType is the common type of dates and timestamps: a date
// widens to a timestamp (its midnight), a TIMESTAMP to a TIMESTAMPTZ.
func timeCommonType(a, b arrow.DataType) (arrow.DataType, bool) {
	ta, tb := IsTimestamp(a), IsTimestamp(b)
	switch {
	case ta && tb, ta && b.ID() == arrow.DATE32, tb && a.ID() == arrow.DATE32:
		if HasZone(a) || HasZone(b) {
			return TimestampTZArrow, true
		}
		return TimestampArrow, true
	}
	return nil, false
}

// CommonType is the type two operands of a comparison, CASE branches,
// COALESCE, IN lists or set operations are converted to: equal types
// stay; NULL takes the other type; numbers widen int32 -> int64 -> decimal
// -> double; decimals take the larger scale and the larger integer part.
func CommonType(a, b arrow.DataType) (arrow.DataType, bool) {
	if arrow.TypeEqual(a, b) {
		return a, true
	}
	if a.ID() == arrow.NULL {
		return b, true
	}
	if b.ID() == arrow.NULL {
		return a, true
	}
	if t, ok := timeCommonType(a, b); ok {
		return t, true
	}
	if IsArray(a) || IsArray(b) {
		// Arrays of a common element type (int[] and bigint[]: bigint[]).
		if !IsArray(a) || !IsArray(b) {
			return nil, false
		}
		et, ok := CommonType(ArrayElem(a), ArrayElem(b))
		if !ok {
			return nil, false
		}
		return ArrowList(et), true
	}
	if !IsNumeric(a) || !IsNumeric(b) {
		return nil, false
	}
	if a.ID() == arrow.FLOAT64 || b.ID() == arrow.FLOAT64 {
		return arrow.PrimitiveTypes.Float64, true
	}
	if IsInteger(a) && IsInteger(b) {
		return arrow.PrimitiveTypes.Int64, true
	}
	p1, s1, _ := DecimalPS(a)
	p2, s2, _ := DecimalPS(b)
	s := max(s1, s2)
	return decType(min(max(p1-s1, p2-s2)+s, MaxDecimalPrecision), s), true
}
