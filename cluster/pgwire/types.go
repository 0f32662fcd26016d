package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// PostgreSQL type OIDs (pg_type) of nicflow's types.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidFloat8      = 701
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidInterval    = 1186
	oidNumeric     = 1700
)

// typeOID is the OID, size and type modifier of an Arrow type as
// PostgreSQL describes it (text for a type nicflow does not name).
func typeOID(t arrow.DataType) (oid uint32, size int16, mod int32) {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return oidBool, 1, -1
	case *arrow.Int32Type:
		return oidInt4, 4, -1
	case *arrow.Int64Type:
		return oidInt8, 8, -1
	case *arrow.Float64Type:
		return oidFloat8, 8, -1
	case *arrow.Decimal64Type:
		return oidNumeric, -1, (t.Precision<<16 | t.Scale) + 4
	case *arrow.Decimal128Type:
		return oidNumeric, -1, (t.Precision<<16 | t.Scale) + 4
	case *arrow.Date32Type:
		return oidDate, 4, -1
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return oidTimestampTZ, 8, -1
		}
		return oidTimestamp, 8, -1
	case *arrow.Time64Type:
		return oidTime, 8, -1
	case *arrow.MonthDayNanoIntervalType:
		return oidInterval, 16, -1
	case *arrow.BinaryType:
		return oidBytea, -1, -1
	case *arrow.ListType:
		// An array: its array type's OID (pg_type.typarray of the
		// element's), in PostgreSQL's text form {1,2,NULL}; int2vector
		// its own (22), "1 2".
		if expr.IsInt2Vector(t) {
			return oidInt2Vector, -1, -1
		}
		elem, _, _ := typeOID(t.Elem())
		if a, ok := arrayOIDs[elem]; ok {
			return a, -1, -1
		}
		return oidTextArray, -1, -1
	}
	return oidText, -1, -1
}

// The array types' OIDs (PostgreSQL's _bool, _int4, ...) by element OID.
const (
	oidInt2Vector = 22
	oidTextArray  = 1009
)

var arrayOIDs = map[uint32]uint32{
	oidBool: 1000, oidBytea: 1001, oidInt4: 1007, oidText: oidTextArray, oidInt8: 1016, oidFloat8: 1022,
	oidDate: 1182, oidTime: 1183, oidTimestamp: 1115, oidTimestampTZ: 1185, oidInterval: 1187, oidNumeric: 1231,
}

// rowDescription describes a result's columns (all in text format).
func rowDescription(sch *arrow.Schema) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, sch.NumFields())}
	for i, f := range sch.Fields() {
		oid, size, mod := typeOID(f.Type)
		rd.Fields[i] = pgproto3.FieldDescription{Name: []byte(f.Name), DataTypeOID: oid, DataTypeSize: size, TypeModifier: mod, Format: 0}
	}
	return rd
}

// sqlState is the SQLSTATE of an error: syntax errors 42601, other query
// errors 42000 (or 42P01 / 42703 for a missing relation or column), data
// errors 22000 (22012 division by zero, 22003 out of range, 23505 and
// 23503 for key violations), resources 53000, cancellation 57014,
// unavailable nodes 08006, authentication 28000 (28P01 a wrong password,
// 42501 "permission denied"), busy 55006, I/O 58030, internal errors
// XX000.
func sqlState(err error) string {
	msg := err.Error()
	switch nferr.KindOf(err) {
	case nferr.KindQuery:
		switch {
		case strings.Contains(msg, "syntax error"):
			return "42601"
		case strings.Contains(msg, "does not exist") && (strings.Contains(msg, "relation") || strings.Contains(msg, "table")):
			return "42P01"
		case strings.Contains(msg, "column") && strings.Contains(msg, "does not exist"):
			return "42703"
		case strings.Contains(msg, "current transaction is aborted"):
			return "25P02" // in_failed_sql_transaction
		case strings.Contains(msg, "cannot run inside a transaction block"):
			return "25001" // active_sql_transaction, as PostgreSQL's CREATE DATABASE
		case strings.Contains(msg, "is not supported"):
			return "0A000" // feature_not_supported
		}
		return "42000"
	case nferr.KindData:
		switch {
		case strings.Contains(msg, "division by zero"):
			return "22012"
		case strings.Contains(msg, "out of range"):
			return "22003"
		case strings.Contains(msg, "duplicate key"):
			return "23505"
		case strings.Contains(msg, "foreign key"):
			return "23503"
		case strings.Contains(msg, "violates check constraint"):
			return "23514"
		case strings.Contains(msg, "null value"):
			return "23502"
		}
		return "22000"
	case nferr.KindResource:
		return "53000"
	case nferr.KindCanceled:
		return "57014"
	case nferr.KindUnavailable:
		return "08006"
	case nferr.KindAuth:
		if strings.Contains(msg, "password authentication failed") {
			return "28P01"
		}
		if strings.HasPrefix(msg, "permission denied") {
			return "42501" // insufficient_privilege: a file outside --file-root, SET spill_dir
		}
		return "28000"
	case nferr.KindBusy:
		return "55006"
	case nferr.KindIO:
		return "58030"
	}
	return "XX000"
}

// linePos finds "line L, column C" in an error message.
var linePos = regexp.MustCompile(`line (\d+), column (\d+)`)

// errorResponse is err as PostgreSQL sends it: the first line of the
// message (the caret drawing nicflow adds is for terminals), and the
// position of the error in src (1-based characters) when it names one.
func errorResponse(err error, src string) *pgproto3.ErrorResponse {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	e := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: sqlState(err), Message: msg}
	if m := linePos.FindStringSubmatch(msg); m != nil && src != "" {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		off, ok := 0, true
		for l := 1; l < line && ok; l++ {
			i := strings.IndexByte(src[off:], '\n')
			if i < 0 {
				ok = false
				break
			}
			off += i + 1
		}
		if ok {
			// NB: columns count bytes in nicflow's messages; PostgreSQL's
			// position counts characters.
			e.Position = int32(utf8.RuneCountInString(src[:min(off+col-1, len(src))]) + 1)
		}
	}
	return e
}

// pgEpochDays is 2000-01-01 in days since 1970-01-01 (PostgreSQL's
// binary dates and timestamps count from it).
const pgEpochDays = 10957

// binaryValue is value i of col in PostgreSQL's binary format; text is
// its text format (numeric is encoded from it).
func binaryValue(col arrow.Array, i int, text string) ([]byte, error) {
	switch a := col.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case *array.Int32:
		return binary.BigEndian.AppendUint32(nil, uint32(a.Value(i))), nil
	case *array.Int64:
		return binary.BigEndian.AppendUint64(nil, uint64(a.Value(i))), nil
	case *array.Float64:
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(a.Value(i))), nil
	case *array.String:
		return []byte(a.Value(i)), nil
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.Date32:
		return binary.BigEndian.AppendUint32(nil, uint32(int32(a.Value(i))-pgEpochDays)), nil
	case *array.Timestamp:
		return binary.BigEndian.AppendUint64(nil, uint64(int64(a.Value(i))-pgEpochDays*86400_000000)), nil
	case *array.Time64:
		return binary.BigEndian.AppendUint64(nil, uint64(a.Value(i))), nil
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		b := binary.BigEndian.AppendUint64(nil, uint64(v.Nanoseconds/1000))
		b = binary.BigEndian.AppendUint32(b, uint32(v.Days))
		return binary.BigEndian.AppendUint32(b, uint32(v.Months)), nil
	case *array.Decimal64, *array.Decimal128:
		return numericBinary(text)
	}
	return nil, nferr.Queryf("binary format of type %s is not supported: request text (format 0)", col.DataType())
}

// arrayBinary is array i of l in PostgreSQL's binary format (array_send):
// dimensions (0 for an empty array, else 1), whether an element is NULL,
// the element type's OID, the length and lower bound, then each element
// as its length (-1: NULL) and binary value; elems formats an element's
// text (numeric is encoded from it). An int2vector's elements are int2
// (two bytes) from subscript 0.
func arrayBinary(l *array.List, i int, elems *engine.ValueFormatter) ([]byte, error) {
	s, e := l.ValueOffsets(i)
	child := l.ListValues()
	vector := expr.IsInt2Vector(l.DataType())
	elemOID, _, _ := typeOID(child.DataType())
	lower := uint32(1)
	if vector {
		elemOID, lower = oidInt2, 0
	}
	hasNull := uint32(0)
	for j := s; j < e; j++ {
		if child.IsNull(int(j)) {
			hasNull = 1
		}
	}
	b := binary.BigEndian.AppendUint32(nil, 1)
	if e == s {
		b = binary.BigEndian.AppendUint32(nil, 0)
	}
	b = binary.BigEndian.AppendUint32(b, hasNull)
	b = binary.BigEndian.AppendUint32(b, elemOID)
	if e == s {
		return b, nil
	}
	b = binary.BigEndian.AppendUint32(b, uint32(e-s))
	b = binary.BigEndian.AppendUint32(b, lower)
	for j := int(s); j < int(e); j++ {
		if child.IsNull(j) {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
			continue
		}
		if vector {
			b = binary.BigEndian.AppendUint32(b, 2)
			b = binary.BigEndian.AppendUint16(b, uint16(child.(*array.Int32).Value(j)))
			continue
		}
		text, _ := elems.Format(child, j)
		v, err := binaryValue(child, j, text)
		if err != nil {
			return nil, err
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b, nil
}

// numericBinary encodes a decimal's text ("-123.4500") as PostgreSQL's
// binary numeric: base-10000 digits around the decimal point.
func numericBinary(s string) ([]byte, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	dscale := len(frac)
	// Pad both parts to whole groups of four digits.
	if r := len(intPart) % 4; r != 0 {
		intPart = strings.Repeat("0", 4-r) + intPart
	}
	if r := len(frac) % 4; r != 0 {
		frac += strings.Repeat("0", 4-r)
	}
	all := intPart + frac
	var digits []uint16
	for k := 0; k < len(all); k += 4 {
		d, err := strconv.Atoi(all[k : k+4])
		if err != nil {
			return nil, nferr.Internalf("numeric %q: %v", s, err)
		}
		digits = append(digits, uint16(d))
	}
	weight := len(intPart)/4 - 1
	// Strip leading and trailing zero groups.
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, neg = 0, false
	}
	sign := uint16(0)
	if neg {
		sign = 0x4000
	}
	b := binary.BigEndian.AppendUint16(nil, uint16(len(digits)))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, uint16(dscale))
	for _, d := range digits {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b, nil
}

// paramTypes are the SQL types of parameter OIDs a client names ("" for
// an unspecified or unknown one: the value stays an untyped literal).
var paramTypes = map[uint32]string{
	oidBool: "BOOLEAN", oidBytea: "BYTEA", oidInt8: "BIGINT", 21: "SMALLINT", oidInt4: "INTEGER", oidText: "TEXT",
	700: "REAL", oidFloat8: "DOUBLE PRECISION", 1043: "VARCHAR", oidDate: "DATE", oidTime: "TIME",
	oidTimestamp: "TIMESTAMP", oidTimestampTZ: "TIMESTAMPTZ", oidInterval: "INTERVAL",
	// NB: numeric is left untyped too: Parse carries no precision, and
	// nicflow's bare NUMERIC is decimal(18,3), which would round the value.
}

// paramArrowType is the engine type of a parameter type OID a client
// named in Parse (as CAST to paramTypes' name makes it), or nil for an
// unspecified or unknown one, whose type is then inferred.
func paramArrowType(oid uint32) arrow.DataType {
	switch oid {
	case oidBool:
		return plan.TypBool
	case oidBytea:
		return plan.TypBinary
	case oidInt8:
		return plan.TypInt64
	case 21, oidInt4:
		return plan.TypInt32
	case oidText, 1043, 19:
		return plan.TypString
	case 700, oidFloat8:
		return plan.TypFloat64
	case oidDate:
		return plan.TypDate
	case oidTime:
		return plan.TypTime
	case oidTimestamp:
		return plan.TypTimestamp
	case oidTimestampTZ:
		return plan.TypTimestampTZ
	case oidInterval:
		return plan.TypInterval
	}
	// NB: numeric (whose precision Parse cannot carry) and unknown types
	// are inferred like unspecified ones.
	return nil
}

// paramValue decodes a Bind parameter of type oid in format (0 text, 1
// binary) into its text and SQL type.
func paramValue(oid uint32, format int16, raw []byte) (sql.ParamValue, error) {
	v := sql.ParamValue{Type: paramTypes[oid]}
	if oid == oidText || oid == 1043 {
		v.Type = "" // text: let the context type it, as an untyped literal
	}
	if raw == nil {
		v.Null = true
		return v, nil
	}
	if format == 0 {
		v.Text = string(raw)
		return v, nil
	}
	bad := func() (sql.ParamValue, error) {
		return v, nferr.Dataf("binary parameter of type OID %d with %d bytes: malformed", oid, len(raw))
	}
	switch oid {
	case 0, oidText, 1043, 19:
		v.Text = string(raw)
	case oidBool:
		if len(raw) != 1 {
			return bad()
		}
		v.Text = strconv.FormatBool(raw[0] != 0)
	case 21:
		if len(raw) != 2 {
			return bad()
		}
		v.Text = strconv.Itoa(int(int16(binary.BigEndian.Uint16(raw))))
	case oidInt4:
		if len(raw) != 4 {
			return bad()
		}
		v.Text = strconv.Itoa(int(int32(binary.BigEndian.Uint32(raw))))
	case oidInt8:
		if len(raw) != 8 {
			return bad()
		}
		v.Text = strconv.FormatInt(int64(binary.BigEndian.Uint64(raw)), 10)
	case 700:
		if len(raw) != 4 {
			return bad()
		}
		v.Text = strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(raw))), 'g', -1, 32)
	case oidFloat8:
		if len(raw) != 8 {
			return bad()
		}
		v.Text = strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(raw)), 'g', -1, 64)
	case oidBytea:
		v.Text = `\x` + hex.EncodeToString(raw)
	case oidDate:
		if len(raw) != 4 {
			return bad()
		}
		days := int64(int32(binary.BigEndian.Uint32(raw))) + pgEpochDays
		v.Text = time.Unix(days*86400, 0).UTC().Format("2006-01-02")
	case oidTimestamp, oidTimestampTZ:
		if len(raw) != 8 {
			return bad()
		}
		us := int64(binary.BigEndian.Uint64(raw)) + pgEpochDays*86400_000000
		v.Text = time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
		if oid == oidTimestampTZ {
			v.Text += "+00"
		}
	case oidTime:
		if len(raw) != 8 {
			return bad()
		}
		us := int64(binary.BigEndian.Uint64(raw))
		if us < 0 || us > 86400_000000 {
			return bad()
		}
		v.Text = time.UnixMicro(us).UTC().Format("15:04:05.999999")
		if us == 86400_000000 {
			v.Text = "24:00:00"
		}
	case oidInterval:
		if len(raw) != 16 {
			return bad()
		}
		us := int64(binary.BigEndian.Uint64(raw))
		days := int32(binary.BigEndian.Uint32(raw[8:]))
		months := int32(binary.BigEndian.Uint32(raw[12:]))
		v.Text = fmt.Sprintf("%d mons %d days %d microseconds", months, days, us)
	case oidNumeric:
		t, err := numericText(raw)
		if err != nil {
			return v, err
		}
		v.Text = t
	default:
		return v, nferr.Queryf("binary parameters of type OID %d are not supported: send it in text format", oid)
	}
	return v, nil
}

// numericText decodes PostgreSQL's binary numeric (numericBinary's
// inverse: base-10000 digits, the weight of the first, sign, display
// scale) into its text.
func numericText(raw []byte) (string, error) {
	bad := nferr.Dataf("binary numeric parameter with %d bytes: malformed", len(raw))
	if len(raw) < 8 {
		return "", bad
	}
	ndigits := int(binary.BigEndian.Uint16(raw))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign := binary.BigEndian.Uint16(raw[4:])
	dscale := int(binary.BigEndian.Uint16(raw[6:]))
	switch sign {
	case 0xC000:
		return "NaN", nil
	case 0xD000:
		return "Infinity", nil
	case 0xF000:
		return "-Infinity", nil
	case 0, 0x4000:
	default:
		return "", bad
	}
	if len(raw) != 8+2*ndigits || dscale > 0x3FFF || weight > 0x3FFF || weight < -0x3FFF {
		return "", bad
	}
	digit := func(i int) int {
		if i < 0 || i >= ndigits {
			return 0
		}
		return int(binary.BigEndian.Uint16(raw[8+2*i:]))
	}
	for i := range ndigits {
		if digit(i) > 9999 {
			return "", bad
		}
	}
	var b strings.Builder
	if sign == 0x4000 {
		b.WriteByte('-')
	}
	// Digit i counts 10000^(weight-i).
	if weight < 0 {
		b.WriteByte('0')
	} else {
		b.WriteString(strconv.Itoa(digit(0)))
		for i := 1; i <= weight; i++ {
			fmt.Fprintf(&b, "%04d", digit(i))
		}
	}
	if dscale > 0 {
		var frac strings.Builder
		for i := weight + 1; frac.Len() < dscale; i++ {
			fmt.Fprintf(&frac, "%04d", digit(i))
		}
		b.WriteByte('.')
		b.WriteString(frac.String()[:dscale])
	}
	return b.String(), nil
}
