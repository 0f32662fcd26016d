package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/bytea"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The canonical text of values: what `nicflow sql` prints, what `nicflow
// tpch run --verify` hands to tpch.CheckAnswer (it matches tpch.Result's
// documented rendering), and what SQL test files expect:
//
//	integers       plain decimal ("42", "-7")
//	decimals       exactly their scale's digits ("12.30", "0.0500")
//	doubles        PostgreSQL's: the shortest round-trip digits, positional
//	               unless the exponent is below -4 or at least 15: "0.1",
//	               "1234567.5", "1e+21", "NaN", "Infinity"
//	dates          YYYY-MM-DD
//	timestamps     YYYY-MM-DD HH:MM:SS[.ffffff] (TIMESTAMPTZ: in the session
//	               zone with its offset after: "+00", "-04", "+05:30")
//	times          HH:MM:SS[.ffffff] (24:00:00 possible)
//	booleans       true / false
//	arrays         PostgreSQL's: {1,2,NULL}, {a,"b c","x\"y"} (elements
//	               as above, booleans t/f, quoted where they must be)
//	strings        as they are
//	bytea          PostgreSQL's hex format: \x48656c6c6f ('' is \x)
//	intervals      PostgreSQL's: "1 year 2 mons 3 days 04:05:06.5"
//	NULL           reported separately (null = true); callers print it
//	               their way (NULL, the empty field, JSON null)

// ValueFormatter renders the values of one column: it dispatches on the
// type once (NewValueFormatter) and then formats values by row.
type ValueFormatter struct {
	fn func(a arrow.Array, i int) string
}

// NewValueFormatter returns the formatter of a column type (TIMESTAMPTZ
// printed in UTC).
func NewValueFormatter(t arrow.DataType) (*ValueFormatter, error) { return NewValueFormatterIn(t, nil) }

// NewValueFormatterIn returns the formatter of a column type, TIMESTAMPTZ
// values printed in zone loc (nil: UTC) with their offset there:
// 2024-07-01 08:00:00-04, 2024-07-01 17:30:00+05:30.
func NewValueFormatterIn(t arrow.DataType, loc *time.Location) (*ValueFormatter, error) {
	var fn func(a arrow.Array, i int) string
	switch t := t.(type) {
	case *arrow.Int32Type:
		fn = func(a arrow.Array, i int) string { return strconv.FormatInt(int64(a.(*array.Int32).Value(i)), 10) }
	case *arrow.Int64Type:
		fn = func(a arrow.Array, i int) string { return strconv.FormatInt(a.(*array.Int64).Value(i), 10) }
	case *arrow.Float64Type:
		fn = func(a arrow.Array, i int) string {
			return expr.FormatFloat(a.(*array.Float64).Value(i))
		}
	case *arrow.BooleanType:
		fn = func(a arrow.Array, i int) string { return strconv.FormatBool(a.(*array.Boolean).Value(i)) }
	case *arrow.StringType:
		// NB: String.Value aliases the array's buffer; the copy keeps the
		// text valid after the batch is released (and its buffer reused).
		fn = func(a arrow.Array, i int) string { return strings.Clone(a.(*array.String).Value(i)) }
	case *arrow.BinaryType:
		fn = func(a arrow.Array, i int) string { return bytea.Format(a.(*array.Binary).Value(i)) }
	case *arrow.Date32Type:
		fn = func(a arrow.Array, i int) string { return expr.FormatDate(int32(a.(*array.Date32).Value(i))) }
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("cannot print values of type %s", t)
		}
		zone := t.TimeZone != ""
		fn = func(a arrow.Array, i int) string {
			if zone && loc != nil {
				return expr.FormatTimestampTZ(int64(a.(*array.Timestamp).Value(i)), loc)
			}
			return expr.FormatTimestamp(int64(a.(*array.Timestamp).Value(i)), zone)
		}
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("cannot print values of type %s", t)
		}
		fn = func(a arrow.Array, i int) string { return expr.FormatTime(int64(a.(*array.Time64).Value(i))) }
	case *arrow.Decimal64Type:
		s := t.Scale
		fn = func(a arrow.Array, i int) string { return formatScaled64(int64(a.(*array.Decimal64).Value(i)), s) }
	case *arrow.Decimal128Type:
		s := t.Scale
		fn = func(a arrow.Array, i int) string {
			v := a.(*array.Decimal128).Value(i)
			if v.HighBits() == 0 && v.LowBits() < 1<<63 || v.HighBits() == -1 && v.LowBits() >= 1<<63 {
				return formatScaled64(int64(v.LowBits()), s) // fits an int64: no big.Int
			}
			return plan.FormatUnscaled(v.BigInt(), s)
		}
	case *arrow.MonthDayNanoIntervalType:
		fn = func(a arrow.Array, i int) string {
			return expr.FormatInterval(a.(*array.MonthDayNanoInterval).Value(i))
		}
	case *arrow.ListType:
		// PostgreSQL's array text: {1,2,NULL}, {a,"b c"} (booleans t/f);
		// the texts of a batch's elements are made once per array.
		var last arrow.Array
		var text func(i int) string
		fn = func(a arrow.Array, i int) string {
			if a != last {
				var err error
				if text, err = expr.ArrayTexts(a); err != nil {
					return "?"
				}
				last = a
			}
			return text(i)
		}
		if _, err := expr.TypeOf(t); err != nil {
			return nil, fmt.Errorf("cannot print values of type %s", t)
		}
	case *arrow.NullType:
		fn = func(arrow.Array, int) string { return "" }
	default:
		return nil, fmt.Errorf("cannot print values of type %s", t)
	}
	return &ValueFormatter{fn: fn}, nil
}

// Format returns the text of row i of a and whether it is NULL (the text
// is then empty).
func (f *ValueFormatter) Format(a arrow.Array, i int) (string, bool) {
	// NB: an arrow Null array has no validity bitmap, so IsNull is false.
	if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
		return "", true
	}
	return f.fn(a, i), false
}

// formatScaled64 prints an unscaled int64 with s fractional digits.
func formatScaled64(u int64, s int32) string {
	if s <= 0 {
		return strconv.FormatInt(u, 10)
	}
	sign := ""
	abs := uint64(u)
	if u < 0 {
		sign, abs = "-", uint64(-u) // NB: -MinInt64 wraps to itself, whose uint64 is right
	}
	digits := strconv.FormatUint(abs, 10)
	if pad := int(s) + 1 - len(digits); pad > 0 {
		digits = "0000000000000000000000000000000000000000"[:pad] + digits
	}
	cut := len(digits) - int(s)
	return sign + digits[:cut] + "." + digits[cut:]
}

// RowsText renders every row of rec in the canonical text; NULLs become
// null (the caller's choice: "" for tpch.Result, "NULL" for tests).
func RowsText(rec arrow.RecordBatch, null string) ([][]string, error) {
	return RowsTextIn(rec, null, nil)
}

// RowsTextIn is RowsText with TIMESTAMPTZ values printed in zone loc.
func RowsTextIn(rec arrow.RecordBatch, null string, loc *time.Location) ([][]string, error) {
	fs := make([]*ValueFormatter, rec.NumCols())
	for c := range fs {
		f, err := NewValueFormatterIn(rec.Column(c).DataType(), loc)
		if err != nil {
			return nil, err
		}
		fs[c] = f
	}
	out := make([][]string, rec.NumRows())
	for r := range out {
		row := make([]string, len(fs))
		for c, f := range fs {
			s, isNull := f.Format(rec.Column(c), r)
			if isNull {
				s = null
			}
			row[c] = s
		}
		out[r] = row
	}
	return out, nil
}

// ScriptText runs script on s and returns the column names and rows of its
// last row-returning statement (earlier statements run for their effect:
// TPC-H's Q15 is create view, select, drop view), each row in the
// canonical text with NULL as "", or, when keep is false, as many nil rows
// (a count without formatting).
func ScriptText(ctx context.Context, s *Session, script string, keep bool) (cols []string, rows [][]string, err error) {
	sc, err := s.Execute(ctx, script)
	if err != nil {
		return nil, nil, err
	}
	defer sc.Close()
	for {
		r, err := sc.Next()
		if err != nil {
			return nil, nil, err
		}
		if r == nil {
			return cols, rows, nil
		}
		if r.Schema == nil {
			continue
		}
		cols, rows = nil, nil
		for _, f := range r.Schema.Fields() {
			cols = append(cols, f.Name)
		}
		for {
			rec, err := r.Next()
			if err != nil {
				return nil, nil, err
			}
			if rec == nil {
				break
			}
			if !keep {
				rows = append(rows, make([][]string, rec.NumRows())...)
				continue
			}
			text, err := RowsText(rec, "")
			if err != nil {
				return nil, nil, err
			}
			rows = append(rows, text...)
		}
	}
}
