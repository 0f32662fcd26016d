package storage

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Column is one column of a table as the catalog records it.
type Column struct {
	Name string `json:"name"`
	// Type is the type's SQL-ish name: int32, int64, float64, bool, utf8,
	// date32, decimal(P,S). ParseType/TypeName convert to and from Arrow.
	Type     string `json:"type"`
	Nullable bool   `json:"nullable,omitempty"`
}

// physKind is how a column's values live in the scanner's typed buffers.
type physKind uint8

const (
	kInt32 physKind = iota // int32, date32
	kInt64                 // int64, decimal64 (unscaled)
	kFloat64
	kBool
	kString
	kDec128
	kList // an array column (listDecoder): vector.list
)

// TypeName is the catalog name of an Arrow type; it fails for types nicflow
// does not store.
func TypeName(t arrow.DataType) (string, error) {
	switch t := t.(type) {
	case *arrow.Int32Type:
		return "int32", nil
	case *arrow.Int64Type:
		return "int64", nil
	case *arrow.Float64Type:
		return "float64", nil
	case *arrow.BooleanType:
		return "bool", nil
	case *arrow.StringType:
		return "utf8", nil
	case *arrow.BinaryType:
		return "bytea", nil
	case *arrow.MonthDayNanoIntervalType:
		return "interval", nil
	case *arrow.Date32Type:
		return "date32", nil
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return "", nferr.Queryf("type %s: nicflow stores timestamps in microseconds", t)
		}
		if t.TimeZone != "" {
			return "timestamptz", nil
		}
		return "timestamp", nil
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond {
			return "", nferr.Queryf("type %s: nicflow stores times in microseconds", t)
		}
		return "time", nil
	case *arrow.Decimal64Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale), nil
	case *arrow.Decimal128Type:
		if t.Precision <= 18 {
			// INVARIANT: decimal(p<=18) is always decimal64 (decisions D4).
			return "", nferr.Queryf("type %s: decimal with precision <= 18 must be decimal64 (decisions D4)", t)
		}
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale), nil
	case *arrow.ListType:
		// An array column: its elements' type name and [] (one
		// dimension; no arrays of arrays or of intervals).
		et := t.Elem()
		if et.ID() == arrow.LIST || et.ID() == arrow.INTERVAL_MONTH_DAY_NANO || t.ElemField().Name == "int2vector" {
			return "", nferr.Queryf("type %s is not supported by nicflow storage (arrays of int32, int64, float64, bool, utf8, bytea, date32, timestamp, timestamptz, time or decimal are)", t)
		}
		en, err := TypeName(et)
		if err != nil {
			return "", err
		}
		return en + "[]", nil
	}
	return "", nferr.Queryf("type %s is not supported by nicflow storage (want int32, int64, float64, bool, utf8, bytea, date32, timestamp, timestamptz, time, decimal or an array of one of them)", t)
}

// ParseType turns a catalog type name into its Arrow type:
// int32, int64, float64, bool, utf8, bytea, date32, timestamp (microseconds),
// timestamptz (microseconds, UTC), time (microseconds since midnight), decimal(P,S) (P<=18 is
// decimal64, 19..38 decimal128), and T[] for an array of one of them. A few SQL spellings are accepted too
// (integer, bigint, double, boolean, varchar, text, date).
func ParseType(s string) (arrow.DataType, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if et, ok := strings.CutSuffix(t, "[]"); ok {
		e, err := ParseType(et)
		if err != nil {
			return nil, err
		}
		lt := arrow.ListOf(e)
		if _, err := TypeName(lt); err != nil {
			return nil, err
		}
		return lt, nil
	}
	switch t {
	case "int32", "int", "integer":
		return arrow.PrimitiveTypes.Int32, nil
	case "int64", "bigint":
		return arrow.PrimitiveTypes.Int64, nil
	case "float64", "double", "float8", "double precision":
		return arrow.PrimitiveTypes.Float64, nil
	case "bool", "boolean":
		return arrow.FixedWidthTypes.Boolean, nil
	case "utf8", "string", "text", "varchar":
		return arrow.BinaryTypes.String, nil
	case "bytea", "binary", "blob":
		return arrow.BinaryTypes.Binary, nil
	case "interval":
		return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
	case "date32", "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "timestamptz":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case "time":
		return arrow.FixedWidthTypes.Time64us, nil
	}
	if strings.HasPrefix(t, "varchar(") || strings.HasPrefix(t, "char(") {
		return arrow.BinaryTypes.String, nil
	}
	if rest, ok := strings.CutPrefix(t, "decimal("); ok && strings.HasSuffix(rest, ")") {
		ps := strings.Split(strings.TrimSuffix(rest, ")"), ",")
		if len(ps) == 2 {
			p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
			sc, err2 := strconv.Atoi(strings.TrimSpace(ps[1]))
			if err1 == nil && err2 == nil && p >= 1 && p <= 38 && sc >= 0 && sc <= p {
				if p <= 18 {
					return &arrow.Decimal64Type{Precision: int32(p), Scale: int32(sc)}, nil
				}
				return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
			}
		}
	}
	return nil, nferr.Queryf("unknown column type %q (want int32, int64, float64, bool, utf8, bytea, date32, timestamp, timestamptz, time or decimal(P,S) with 1<=P<=38, 0<=S<=P)", s)
}

// SchemaColumns converts an Arrow schema to catalog columns.
func SchemaColumns(s *arrow.Schema) ([]Column, error) {
	if s == nil || s.NumFields() == 0 {
		return nil, nferr.Queryf("a table needs at least one column")
	}
	cols := make([]Column, s.NumFields())
	seen := map[string]bool{}
	for i, f := range s.Fields() {
		if f.Name == "" {
			return nil, nferr.Queryf("column %d has an empty name", i+1)
		}
		ln := strings.ToLower(f.Name)
		if seen[ln] {
			return nil, nferr.Queryf("duplicate column name %q", f.Name)
		}
		seen[ln] = true
		tn, err := TypeName(f.Type)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindQuery, err, "column %s", f.Name)
		}
		cols[i] = Column{Name: f.Name, Type: tn, Nullable: f.Nullable}
	}
	return cols, nil
}

// ArrowSchema converts catalog columns to an Arrow schema.
func ArrowSchema(cols []Column) (*arrow.Schema, error) {
	fs := make([]arrow.Field, len(cols))
	for i, c := range cols {
		t, err := ParseType(c.Type)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindData, err, "column %s", c.Name)
		}
		fs[i] = arrow.Field{Name: c.Name, Type: t, Nullable: c.Nullable}
	}
	return arrow.NewSchema(fs, nil), nil
}

func kindOf(t arrow.DataType) physKind {
	switch t.ID() {
	case arrow.INT32, arrow.DATE32:
		return kInt32
	case arrow.INT64, arrow.DECIMAL64, arrow.TIMESTAMP, arrow.TIME64:
		return kInt64
	case arrow.FLOAT64:
		return kFloat64
	case arrow.BOOL:
		return kBool
	case arrow.STRING, arrow.BINARY:
		return kString // bytea: the same offsets and bytes
	case arrow.LIST:
		return kList
	default:
		return kDec128
	}
}

func decimalScale(t arrow.DataType) int32 {
	switch t := t.(type) {
	case *arrow.Decimal64Type:
		return t.Scale
	case *arrow.Decimal128Type:
		return t.Scale
	}
	return 0
}

// parquetNode is the Parquet leaf nicflow writes for an Arrow field
// (decisions D4: decimal(p<=18) is INT64-backed DECIMAL).
func parquetNode(f arrow.Field) (schema.Node, error) {
	rep := parquet.Repetitions.Required
	if f.Nullable {
		rep = parquet.Repetitions.Optional
	}
	switch t := f.Type.(type) {
	case *arrow.Int32Type:
		return schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewIntLogicalType(32, true), parquet.Types.Int32, 0, -1)
	case *arrow.Int64Type:
		return schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewIntLogicalType(64, true), parquet.Types.Int64, 0, -1)
	case *arrow.Float64Type:
		return schema.NewPrimitiveNode(f.Name, rep, parquet.Types.Double, -1, -1)
	case *arrow.BooleanType:
		return schema.NewPrimitiveNode(f.Name, rep, parquet.Types.Boolean, -1, -1)
	case *arrow.StringType:
		return schema.NewPrimitiveNodeLogical(f.Name, rep, schema.StringLogicalType{}, parquet.Types.ByteArray, 0, -1)
	case *arrow.BinaryType:
		// BYTE_ARRAY without an annotation: bytes, not text.
		return schema.NewPrimitiveNode(f.Name, rep, parquet.Types.ByteArray, -1, -1)
	case *arrow.Date32Type:
		return schema.NewPrimitiveNodeLogical(f.Name, rep, schema.DateLogicalType{}, parquet.Types.Int32, 0, -1)
	case *arrow.TimestampType:
		if t.Unit == arrow.Microsecond {
			lt := schema.NewTimestampLogicalType(t.TimeZone != "", schema.TimeUnitMicros)
			return schema.NewPrimitiveNodeLogical(f.Name, rep, lt, parquet.Types.Int64, 0, -1)
		}
	case *arrow.Time64Type:
		if t.Unit == arrow.Microsecond {
			lt := schema.NewTimeLogicalType(false, schema.TimeUnitMicros)
			return schema.NewPrimitiveNodeLogical(f.Name, rep, lt, parquet.Types.Int64, 0, -1)
		}
	case *arrow.Decimal64Type:
		return schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewDecimalLogicalType(t.Precision, t.Scale), parquet.Types.Int64, 0, -1)
	case *arrow.Decimal128Type:
		return schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewDecimalLogicalType(t.Precision, t.Scale), parquet.Types.FixedLenByteArray, 16, -1)
	case *arrow.MonthDayNanoIntervalType:
		// Parquet's INTERVAL (12 bytes of unsigned months, days and
		// milliseconds) loses microseconds and signs: 16 bytes instead,
		// named in the footer's intervalKey.
		return schema.NewPrimitiveNode(f.Name, rep, parquet.Types.FixedLenByteArray, -1, 16)
	case *arrow.ListType:
		// Parquet's standard three-level LIST: <rep> group name (LIST) {
		// repeated group list { optional <elem> element; } }.
		if _, err := TypeName(t); err != nil {
			return nil, err
		}
		elem, err := parquetNode(arrow.Field{Name: "element", Type: t.Elem(), Nullable: true})
		if err != nil {
			return nil, err
		}
		list, err := schema.NewGroupNode("list", parquet.Repetitions.Repeated, schema.FieldList{elem}, -1)
		if err != nil {
			return nil, err
		}
		return schema.NewGroupNodeLogical(f.Name, rep, schema.FieldList{list}, schema.ListLogicalType{}, -1)
	}
	return nil, nferr.Queryf("column %s: type %s cannot be stored", f.Name, f.Type)
}

// timestampScale is how a Parquet timestamp or time column's values
// convert to microseconds: multiplied by mul (milliseconds: 1000), or
// floor-divided by div (nanoseconds: 1000); int96 marks the legacy 12-byte
// form. It is (1, 1, false) for every other column.
func timestampScale(c *schema.Column) (mul, div int64, int96 bool) {
	if c.PhysicalType() == parquet.Types.Int96 {
		return 1, 1, true
	}
	var unit schema.TimeUnitType = schema.TimeUnitMicros
	switch l := c.LogicalType().(type) {
	case schema.TimeLogicalType:
		unit = l.TimeUnit()
	case schema.TimestampLogicalType:
		if c.PhysicalType() == parquet.Types.Int64 {
			unit = l.TimeUnit()
		}
	}
	switch unit {
	case schema.TimeUnitMillis:
		return 1000, 1, false
	case schema.TimeUnitNanos:
		return 1, 1000, false
	}
	return 1, 1, false
}

// scaleTimestamps converts timestamp values read in a column's own unit to
// microseconds (timestampScale's mul, div).
func scaleTimestamps(v []int64, mul, div int64) {
	switch {
	case mul != 1:
		for i := range v {
			v[i] *= mul
		}
	case div != 1:
		for i, x := range v {
			q := x / div
			if x%div < 0 {
				q--
			}
			v[i] = q
		}
	}
}

// int96Micros converts a legacy INT96 timestamp (8 bytes of nanoseconds
// into the day, then 4 bytes of Julian day number, little-endian) to
// microseconds since 1970-01-01.
func int96Micros(b [12]byte) int64 {
	nanos := int64(binary.LittleEndian.Uint64(b[:8]))
	julian := int64(binary.LittleEndian.Uint32(b[8:]))
	const julianEpoch = 2440588 // the Julian day of 1970-01-01
	return (julian-julianEpoch)*86_400_000_000 + nanos/1000
}

// appendUUID appends the canonical text form of a 16-byte UUID
// (8-4-4-4-12 lowercase hex digits, as PostgreSQL prints a uuid).
func appendUUID(dst, b []byte) []byte {
	const hexDigits = "0123456789abcdef"
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

// parquetInterval converts Parquet's INTERVAL (little-endian unsigned
// 32-bit months, days and milliseconds) to the decimal128 whose memory is
// Arrow's month-day-nano value (intervalNum). Months and days above
// 2^31-1, which no writer produces, wrap to negative values.
func parquetInterval(b []byte) decimal128.Num {
	return intervalNum(arrow.MonthDayNanoInterval{
		Months:      int32(binary.LittleEndian.Uint32(b[0:4])),
		Days:        int32(binary.LittleEndian.Uint32(b[4:8])),
		Nanoseconds: int64(binary.LittleEndian.Uint32(b[8:12])) * 1_000_000,
	})
}

// arrowTypeOfParquet maps a Parquet leaf column to nicflow's Arrow type, or
// explains why it cannot be read.
func arrowTypeOfParquet(c *schema.Column) (arrow.DataType, error) {
	if c.MaxRepetitionLevel() > 0 || c.MaxDefinitionLevel() > 1 {
		return nil, fmt.Errorf("column %s is nested or repeated, which nicflow does not read", c.Path())
	}
	return leafArrowType(c)
}

// leafArrowType maps a Parquet leaf's physical and logical types to
// nicflow's Arrow type, wherever the leaf sits (a list's element too).
func leafArrowType(c *schema.Column) (arrow.DataType, error) {
	lt := c.LogicalType()
	if dec, ok := lt.(schema.DecimalLogicalType); ok {
		p, s := dec.Precision(), dec.Scale()
		switch c.PhysicalType() {
		case parquet.Types.Int32, parquet.Types.Int64:
			if p > 18 {
				p = 18
			}
			return &arrow.Decimal64Type{Precision: p, Scale: s}, nil
		case parquet.Types.FixedLenByteArray, parquet.Types.ByteArray:
			if c.PhysicalType() == parquet.Types.ByteArray {
				return nil, fmt.Errorf("column %s: BYTE_ARRAY decimals are not supported", c.Path())
			}
			if c.TypeLength() > 16 {
				return nil, fmt.Errorf("column %s: decimal wider than 16 bytes", c.Path())
			}
			if p <= 18 {
				return &arrow.Decimal64Type{Precision: p, Scale: s}, nil
			}
			return &arrow.Decimal128Type{Precision: p, Scale: s}, nil
		}
	}
	switch c.PhysicalType() {
	case parquet.Types.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case parquet.Types.Int32:
		switch l := lt.(type) {
		case schema.DateLogicalType:
			return arrow.FixedWidthTypes.Date32, nil
		case schema.TimeLogicalType:
			// TIME(MILLIS): widened to microseconds (timestampScale).
			if l.TimeUnit() == schema.TimeUnitMillis {
				return arrow.FixedWidthTypes.Time64us, nil
			}
			return nil, fmt.Errorf("column %s: INT32 with logical type %s is not supported", c.Path(), lt)
		case schema.IntLogicalType:
			if !l.IsSigned() {
				return arrow.PrimitiveTypes.Int64, nil
			}
		case schema.NoLogicalType, schema.NullLogicalType:
		default:
			if lt != nil && !lt.IsNone() {
				return nil, fmt.Errorf("column %s: INT32 with logical type %s is not supported", c.Path(), lt)
			}
		}
		return arrow.PrimitiveTypes.Int32, nil
	case parquet.Types.Int96:
		// Legacy Impala/Spark timestamps: nanoseconds of a Julian day,
		// read as TIMESTAMP (as DuckDB and Spark read them).
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case parquet.Types.Int64:
		switch l := lt.(type) {
		case schema.TimestampLogicalType:
			if l.IsAdjustedToUTC() {
				return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
			}
			return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
		case schema.TimeLogicalType:
			// TIME(MICROS) or TIME(NANOS), adjusted to UTC or not: a
			// time of day in microseconds (nanoseconds round down).
			if l.TimeUnit() == schema.TimeUnitMicros || l.TimeUnit() == schema.TimeUnitNanos {
				return arrow.FixedWidthTypes.Time64us, nil
			}
			return nil, fmt.Errorf("column %s: INT64 with logical type %s is not supported", c.Path(), lt)
		case schema.IntLogicalType:
			if !l.IsSigned() {
				// UINT_64 up to 18446744073709551615: a decimal(20,0)
				// holds every value (DuckDB has UBIGINT; PostgreSQL has no
				// unsigned type, and its numeric is what this is).
				return &arrow.Decimal128Type{Precision: 20, Scale: 0}, nil
			}
		default:
			if lt != nil && !lt.IsNone() {
				return nil, fmt.Errorf("column %s: INT64 with logical type %s is not supported", c.Path(), lt)
			}
		}
		return arrow.PrimitiveTypes.Int64, nil
	case parquet.Types.Float, parquet.Types.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case parquet.Types.ByteArray:
		// Text when annotated as text (STRING/UTF8, ENUM, JSON), bytes
		// (bytea) otherwise, as DuckDB reads them.
		switch lt.(type) {
		case schema.StringLogicalType, schema.EnumLogicalType, schema.JSONLogicalType:
			return arrow.BinaryTypes.String, nil
		}
		return arrow.BinaryTypes.Binary, nil
	case parquet.Types.FixedLenByteArray:
		n := c.TypeLength()
		switch lt.(type) {
		case schema.UUIDLogicalType:
			// nicflow has no uuid type: the canonical text form
			// (8-4-4-4-12 lowercase hex digits), as PostgreSQL prints one.
			if n != 16 {
				return nil, fmt.Errorf("column %s: UUID of %d bytes (want 16)", c.Path(), n)
			}
			return arrow.BinaryTypes.String, nil
		case schema.Float16LogicalType:
			if n != 2 {
				return nil, fmt.Errorf("column %s: FLOAT16 of %d bytes (want 2)", c.Path(), n)
			}
			return arrow.PrimitiveTypes.Float64, nil
		case schema.IntervalLogicalType:
			// Parquet's INTERVAL: unsigned months, days and milliseconds.
			if n != 12 {
				return nil, fmt.Errorf("column %s: INTERVAL of %d bytes (want 12)", c.Path(), n)
			}
			return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
		case schema.NoLogicalType, schema.NullLogicalType, nil:
			if c.ConvertedType() == schema.ConvertedTypes.Interval && n == 12 {
				return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
			}
			// Bytes without an annotation: bytea (DuckDB reads a BLOB).
			return arrow.BinaryTypes.Binary, nil
		}
		return nil, fmt.Errorf("column %s: FIXED_LEN_BYTE_ARRAY(%d) with logical type %s is not supported", c.Path(), n, lt)
	}
	return nil, fmt.Errorf("column %s: Parquet type %s is not supported", c.Path(), c.PhysicalType())
}

// Intervals. nicflow stores an INTERVAL column as FIXED_LEN_BYTE_ARRAY(16)
// (Parquet's own INTERVAL holds unsigned months, days and milliseconds:
// no negative or sub-millisecond values), the 16 bytes those of the
// decimal128 whose in-memory layout is Arrow's month-day-nano value
// (intervalNum), so that scans decode it as they decode decimal128. The
// footer's key-value metadata names the interval columns (intervalKey),
// which tells them from other 16-byte values.

// intervalKey is the footer metadata key listing interval columns (their
// names, comma-separated).
const intervalKey = "nicflow.interval_columns"

// intervalNum is the decimal128 whose memory holds iv as Arrow lays it
// out: months and days in the low word, nanoseconds in the high one.
func intervalNum(iv arrow.MonthDayNanoInterval) decimal128.Num {
	lo := uint64(uint32(iv.Months)) | uint64(uint32(iv.Days))<<32
	return decimal128.New(iv.Nanoseconds, lo)
}

// intervalMetadata is the footer metadata naming sch's interval columns,
// or nil.
func intervalMetadata(sch *arrow.Schema) metadata.KeyValueMetadata {
	var names []string
	for _, f := range sch.Fields() {
		if f.Type.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
			names = append(names, f.Name)
		}
	}
	if names == nil {
		return nil
	}
	kv := make(metadata.KeyValueMetadata, 0, 1)
	if err := kv.Append(intervalKey, strings.Join(names, ",")); err != nil {
		return nil
	}
	return kv
}

// intervalColumns are the interval columns a footer names.
func intervalColumns(md *metadata.FileMetaData) map[string]bool {
	kv := md.KeyValueMetadata()
	if kv == nil {
		return nil
	}
	v := kv.FindValue(intervalKey)
	if v == nil {
		return nil
	}
	out := map[string]bool{}
	for _, n := range strings.Split(*v, ",") {
		out[n] = true
	}
	return out
}

// arrowTypeOfColumn is arrowTypeOfParquet knowing the file's interval
// columns.
func arrowTypeOfColumn(c *schema.Column, intervals map[string]bool) (arrow.DataType, error) {
	if intervals[c.Name()] && c.PhysicalType() == parquet.Types.FixedLenByteArray && c.TypeLength() == 16 {
		return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
	}
	return arrowTypeOfParquet(c)
}
