package flightsqlsrv

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// wireType is the Arrow type a column of type t goes out as: the engine's
// own, except DECIMAL of up to 18 digits (Decimal64), which goes out as
// Decimal128 of the same precision and scale, the decimal every Arrow
// implementation reads (Arrow Java and older pyarrow have no Decimal64).
func wireType(t arrow.DataType) arrow.DataType {
	if d, ok := t.(*arrow.Decimal64Type); ok {
		return &arrow.Decimal128Type{Precision: d.Precision, Scale: d.Scale}
	}
	return t
}

// wireSchema is the schema of a result as clients see it: names and wire
// types, every column nullable (the planner does not say which are not,
// and FlightInfo and the stream must agree).
func wireSchema(names []string, types []arrow.DataType) *arrow.Schema {
	fs := make([]arrow.Field, len(names))
	for i := range names {
		fs[i] = arrow.Field{Name: names[i], Type: wireType(types[i]), Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

// paramSchema is the parameter schema of a prepared statement whose
// parameters $1... have types params (inferred from their context, text
// where none types them): field i is $i+1, in its wire type, except that
// every integer is int64, so that a client's integer binds whatever the
// column's width (arrow-go's database/sql driver builds values to this
// schema and has only int64 for Go's integers). The server accepts values
// of any Arrow type all the same: each is cast to its own type's SQL type
// and then typed by its context.
func paramSchema(params []arrow.DataType) *arrow.Schema {
	fs := make([]arrow.Field, len(params))
	for i, t := range params {
		if arrow.IsInteger(t.ID()) {
			t = arrow.PrimitiveTypes.Int64
		}
		fs[i] = arrow.Field{Name: "$" + strconv.Itoa(i+1), Type: wireType(t), Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

func schemaOf(s *arrow.Schema) *arrow.Schema {
	names := make([]string, s.NumFields())
	types := make([]arrow.DataType, s.NumFields())
	for i, f := range s.Fields() {
		names[i], types[i] = f.Name, f.Type
	}
	return wireSchema(names, types)
}

// wireRecord is rec in schema sch (wireSchema of its schema): columns
// converted where the wire type differs; the caller owns the result.
func wireRecord(mem memory.Allocator, sch *arrow.Schema, rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		if d, ok := c.(*array.Decimal64); ok {
			b := array.NewDecimal128Builder(mem, sch.Field(i).Type.(*arrow.Decimal128Type))
			b.Reserve(d.Len())
			for j := 0; j < d.Len(); j++ {
				if d.IsNull(j) {
					b.AppendNull()
					continue
				}
				b.Append(decimal128.FromI64(int64(d.Value(j))))
			}
			cols[i] = b.NewArray()
			b.Release()
			continue
		}
		c.Retain()
		cols[i] = c
	}
	out := array.NewRecordBatch(sch, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// maxParamRows bounds the rows of parameters one DoPut binds (each row
// runs the statement once).
const maxParamRows = 100_000

// paramRows turns a batch of parameters (column i is $i+1, a row per
// execution) into their values: SQL text and the type to cast to, or an
// untyped literal for strings (the context types them, as a PostgreSQL
// parameter of unspecified type).
func paramRows(rec arrow.RecordBatch) ([][]sql.ParamValue, error) {
	rows := make([][]sql.ParamValue, rec.NumRows())
	for r := range rows {
		rows[r] = make([]sql.ParamValue, rec.NumCols())
	}
	for c, col := range rec.Columns() {
		for r := range rows {
			v, err := paramValue(col, r)
			if err != nil {
				return nil, nferr.Queryf("parameter $%d (%s): %v", c+1, col.DataType(), err)
			}
			rows[r][c] = v
		}
	}
	return rows, nil
}

func paramValue(col arrow.Array, i int) (sql.ParamValue, error) {
	v := sql.ParamValue{}
	switch a := col.(type) {
	case *array.Null:
		v.Null = true
		return v, nil
	case *array.Int8:
		v.Type, v.Text = "BIGINT", strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		v.Type, v.Text = "BIGINT", strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		v.Type, v.Text = "INTEGER", strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		v.Type, v.Text = "BIGINT", strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		v.Type, v.Text = "BIGINT", strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		v.Type, v.Text = "BIGINT", strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		v.Type, v.Text = "BIGINT", strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		v.Type, v.Text = "DECIMAL(20,0)", strconv.FormatUint(a.Value(i), 10)
	case *array.Float32:
		v.Type, v.Text = "DOUBLE PRECISION", strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		v.Type, v.Text = "DOUBLE PRECISION", strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.Boolean:
		v.Type, v.Text = "BOOLEAN", strconv.FormatBool(a.Value(i))
	case *array.String:
		v.Text = a.Value(i)
	case *array.LargeString:
		v.Text = a.Value(i)
	case *array.StringView:
		v.Text = a.Value(i)
	case *array.Binary:
		v.Type, v.Text = "BYTEA", `\x`+hex.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		v.Type, v.Text = "BYTEA", `\x`+hex.EncodeToString(a.Value(i))
	case *array.BinaryView:
		v.Type, v.Text = "BYTEA", `\x`+hex.EncodeToString(a.Value(i))
	case *array.Date32:
		v.Type, v.Text = "DATE", a.Value(i).ToTime().Format("2006-01-02")
	case *array.Date64:
		v.Type, v.Text = "DATE", a.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		tm := a.Value(i).ToTime(t.Unit).UTC()
		v.Type, v.Text = "TIMESTAMP", tm.Format("2006-01-02 15:04:05.999999")
		if t.TimeZone != "" {
			v.Type, v.Text = "TIMESTAMPTZ", v.Text+"+00"
		}
	case *array.Time32:
		d := time.Duration(a.Value(i)) * a.DataType().(*arrow.Time32Type).Unit.Multiplier()
		v.Type, v.Text = "TIME", timeOfDay(d)
	case *array.Time64:
		d := time.Duration(a.Value(i)) * a.DataType().(*arrow.Time64Type).Unit.Multiplier()
		v.Type, v.Text = "TIME", timeOfDay(d)
	case *array.Decimal64:
		t := a.DataType().(*arrow.Decimal64Type)
		v.Type, v.Text = fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), scaled(big.NewInt(int64(a.Value(i))), t.Scale)
	case *array.Decimal128:
		t := a.DataType().(*arrow.Decimal128Type)
		v.Type, v.Text = fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), scaled(a.Value(i).BigInt(), t.Scale)
	case *array.Decimal256:
		t := a.DataType().(*arrow.Decimal256Type)
		v.Type, v.Text = fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), scaled(a.Value(i).BigInt(), t.Scale)
	case *array.Dictionary:
		if a.IsNull(i) {
			v.Null = true
			return v, nil
		}
		return paramValue(a.Dictionary(), a.GetValueIndex(i))
	default:
		return v, fmt.Errorf("parameters of this type are not supported: send it as a string")
	}
	if col.IsNull(i) {
		return sql.ParamValue{Null: true, Type: v.Type}, nil
	}
	if v.Type == "TIME" && v.Text == "" {
		return v, fmt.Errorf("a time of day out of range")
	}
	return v, nil
}

// scaled prints an unscaled decimal with scale digits after the point.
func scaled(n *big.Int, scale int32) string {
	s := new(big.Int).Abs(n).String()
	if scale > 0 {
		for len(s) <= int(scale) {
			s = "0" + s
		}
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	} else if scale < 0 {
		for range -scale {
			s += "0"
		}
	}
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}

func timeOfDay(d time.Duration) string {
	if d < 0 || d >= 24*time.Hour {
		return ""
	}
	return time.Unix(0, int64(d)).UTC().Format("15:04:05.999999")
}
