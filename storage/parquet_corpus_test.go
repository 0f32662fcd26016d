package storage

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/nicflow/nicflow/internal/nferr"
)

// corpusColumn is one column of the corpus files: its Parquet node, the
// catalog type nicflow reads it as, and per row the value written and
// the value nicflow must read (nil: NULL).
type corpusColumn struct {
	node     schema.Node
	want     string // catalog type
	encoding parquet.Encoding
	// gen makes row r's value: what the Parquet writer takes and what
	// nicflow must read (as corpusValue gives it).
	gen func(rng *rand.Rand, r int) (written, read any)
}

func mustNode(t testing.TB, n schema.Node, err error) schema.Node {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// corpusColumns are the corpus files' columns: every physical type, the
// logical types nicflow reads (UUID, INT96, ENUM, JSON, BSON, FLOAT16,
// INTERVAL, decimals, timestamps in other units) and FIXED_LEN_BYTE_ARRAY
// without an annotation.
func corpusColumns(t testing.TB) []corpusColumn {
	opt := parquet.Repetitions.Optional
	prim := func(name string, typ parquet.Type, length int32) schema.Node {
		n, err := schema.NewPrimitiveNode(name, opt, typ, -1, length)
		return mustNode(t, n, err)
	}
	logical := func(name string, lt schema.LogicalType, typ parquet.Type, length int) schema.Node {
		n, err := schema.NewPrimitiveNodeLogical(name, opt, lt, typ, length, -1)
		return mustNode(t, n, err)
	}
	randBytes := func(rng *rand.Rand, n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	// Strings with a small domain, so that dictionaries form.
	words := []string{"", "alpha", "beta", "gamma", "δέλτα", "e\x00f", strings.Repeat("long", 40)}
	const day = 86_400_000_000
	id, err := schema.NewPrimitiveNodeLogical("id", parquet.Repetitions.Required, schema.NewIntLogicalType(64, true), parquet.Types.Int64, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := schema.NewPrimitiveNodeConverted("iv", opt, parquet.Types.FixedLenByteArray, schema.ConvertedTypes.Interval, 12, 0, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	return []corpusColumn{
		{node: id, want: "int64", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(_ *rand.Rand, r int) (any, any) { return int64(r), int64(r) }},
		{node: prim("i32", parquet.Types.Int32, -1), want: "int32", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := int32(rng.Intn(100) - 50)
				if rng.Intn(10) == 0 {
					v = math.MinInt32 + int32(rng.Intn(3))
				}
				return v, v
			}},
		{node: prim("i64", parquet.Types.Int64, -1), want: "int64", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := rng.Int63() - rng.Int63(); return v, v }},
		{node: prim("f32", parquet.Types.Float, -1), want: "float64", encoding: parquet.Encodings.ByteStreamSplit,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := float32(rng.NormFloat64()); return v, float64(v) }},
		{node: prim("f64", parquet.Types.Double, -1), want: "float64", encoding: parquet.Encodings.ByteStreamSplit,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := float64(rng.Intn(20)) / 4; return v, v }},
		{node: prim("b", parquet.Types.Boolean, -1), want: "bool", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := rng.Intn(2) == 0; return v, v }},
		{node: logical("s", schema.StringLogicalType{}, parquet.Types.ByteArray, 0), want: "utf8", encoding: parquet.Encodings.DeltaLengthByteArray,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := words[rng.Intn(len(words))]
				return parquet.ByteArray(v), v
			}},
		{node: prim("raw", parquet.Types.ByteArray, -1), want: "bytea", encoding: parquet.Encodings.DeltaByteArray,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := randBytes(rng, rng.Intn(5))
				return parquet.ByteArray(v), "b:" + string(v)
			}},
		{node: logical("d", schema.DateLogicalType{}, parquet.Types.Int32, 0), want: "date32", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := int32(rng.Intn(40000) - 20000); return v, v }},
		{node: logical("ts", schema.NewTimestampLogicalType(false, schema.TimeUnitMicros), parquet.Types.Int64, 0), want: "timestamp", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := rng.Int63n(200*365*day) - 100*365*day; return v, v }},
		{node: logical("tsz", schema.NewTimestampLogicalType(true, schema.TimeUnitNanos), parquet.Types.Int64, 0), want: "timestamptz", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := rng.Int63n(math.MaxInt64/2) - math.MaxInt64/4
				us := v / 1000
				if v%1000 < 0 {
					us--
				}
				return v, us
			}},
		{node: logical("dec64", schema.NewDecimalLogicalType(15, 2), parquet.Types.Int64, 0), want: "decimal(15,2)", encoding: parquet.Encodings.DeltaBinaryPacked,
			gen: func(rng *rand.Rand, _ int) (any, any) { v := rng.Int63n(2e14) - 1e14; return v, v }},
		{node: logical("dec128", schema.NewDecimalLogicalType(30, 4), parquet.Types.FixedLenByteArray, 16), want: "decimal(30,4)", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := decimal128.New(rng.Int63n(1<<40)-(1<<39), rng.Uint64())
				b := make([]byte, 16)
				binary.BigEndian.PutUint64(b, uint64(v.HighBits()))
				binary.BigEndian.PutUint64(b[8:], v.LowBits())
				return parquet.FixedLenByteArray(b), v
			}},
		{node: logical("u", schema.UUIDLogicalType{}, parquet.Types.FixedLenByteArray, 16), want: "utf8", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				b := randBytes(rng, 16)
				if rng.Intn(4) == 0 {
					b = []byte{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00}
				}
				h := hex.EncodeToString(b)
				return parquet.FixedLenByteArray(b), h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
			}},
		{node: prim("legacy", parquet.Types.Int96, -1), want: "timestamp", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				us := rng.Int63n(300*365*day) - 150*365*day
				days, tod := us/day, us%day
				if tod < 0 {
					days, tod = days-1, tod+day
				}
				var v parquet.Int96
				binary.LittleEndian.PutUint64(v[:8], uint64(tod*1000+rng.Int63n(1000)))
				binary.LittleEndian.PutUint32(v[8:], uint32(days+2440588))
				return v, us
			}},
		{node: logical("e", schema.EnumLogicalType{}, parquet.Types.ByteArray, 0), want: "utf8", encoding: parquet.Encodings.DeltaByteArray,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := []string{"RED", "GREEN", "BLUE"}[rng.Intn(3)]
				return parquet.ByteArray(v), v
			}},
		{node: logical("j", schema.JSONLogicalType{}, parquet.Types.ByteArray, 0), want: "utf8", encoding: parquet.Encodings.DeltaLengthByteArray,
			gen: func(rng *rand.Rand, r int) (any, any) {
				v := fmt.Sprintf(`{"k": %d, "a": [1, "x"]}`, rng.Intn(50))
				return parquet.ByteArray(v), v
			}},
		{node: logical("bs", schema.BSONLogicalType{}, parquet.Types.ByteArray, 0), want: "bytea", encoding: parquet.Encodings.DeltaLengthByteArray,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				// A BSON document {"x": int32}.
				doc := []byte{12, 0, 0, 0, 0x10, 'x', 0, 0, 0, 0, 0, 0}
				binary.LittleEndian.PutUint32(doc[7:], uint32(rng.Intn(1000)))
				return parquet.ByteArray(doc), "b:" + string(doc)
			}},
		{node: logical("h", schema.Float16LogicalType{}, parquet.Types.FixedLenByteArray, 2), want: "float64", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				f := float16.New(float32(rng.NormFloat64() * 100))
				b := make([]byte, 2)
				binary.LittleEndian.PutUint16(b, f.Uint16())
				return parquet.FixedLenByteArray(b), float64(f.Float32())
			}},
		{node: iv, want: "interval", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				m, d, ms := uint32(rng.Intn(500)), uint32(rng.Intn(40)), uint32(rng.Int63n(1<<31))
				b := make([]byte, 12)
				binary.LittleEndian.PutUint32(b, m)
				binary.LittleEndian.PutUint32(b[4:], d)
				binary.LittleEndian.PutUint32(b[8:], ms)
				return parquet.FixedLenByteArray(b), arrow.MonthDayNanoInterval{Months: int32(m), Days: int32(d), Nanoseconds: int64(ms) * 1_000_000}
			}},
		{node: prim("fl", parquet.Types.FixedLenByteArray, 5), want: "bytea", encoding: parquet.Encodings.Plain,
			gen: func(rng *rand.Rand, _ int) (any, any) {
				v := randBytes(rng, 5)
				return parquet.FixedLenByteArray(v), "b:" + string(v)
			}},
	}
}

// corpusFile is one way of writing the corpus.
type corpusFile struct {
	codec    compress.Compression
	pageV2   bool
	encoding string // "dict", "plain" or "other" (delta, byte stream split)
}

func (c corpusFile) String() string {
	v := "v1"
	if c.pageV2 {
		v = "v2"
	}
	return fmt.Sprintf("%s-%s-%s", strings.ToLower(c.codec.String()), v, c.encoding)
}

// writeCorpus writes rows of cols to path with arrow-go's low-level file
// writer as f says, in row groups of rgRows; it returns what nicflow must
// read, per row and column. Every optional column is NULL in about one
// row of seven (and in every row of the last row group's first 30).
func writeCorpus(t testing.TB, path string, cols []corpusColumn, f corpusFile, rows, rgRows int, seed int64) [][]any {
	t.Helper()
	fields := make(schema.FieldList, len(cols))
	for i, c := range cols {
		fields[i] = c.node
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(f.codec),
		parquet.WithDataPageSize(512), // many pages per chunk
		parquet.WithBatchSize(37),
		parquet.WithDictionaryDefault(f.encoding == "dict"),
		parquet.WithCreatedBy("nicflow corpus test (arrow-go low-level writer)"),
	}
	if f.pageV2 {
		opts = append(opts, parquet.WithDataPageVersion(parquet.DataPageV2))
	}
	if f.encoding == "dict" {
		// Dictionaries even where values are all distinct.
		for _, c := range cols {
			opts = append(opts, parquet.WithDictionaryCostFallbackFor(c.node.Name(), false))
		}
	}
	if f.encoding == "other" {
		for _, c := range cols {
			if c.encoding != parquet.Encodings.Plain {
				opts = append(opts, parquet.WithEncodingFor(c.node.Name(), c.encoding))
			}
		}
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw := file.NewParquetWriter(out, root, file.WithWriterProps(parquet.NewWriterProperties(opts...)))
	rng := rand.New(rand.NewSource(seed))
	want := make([][]any, rows)
	for r := range want {
		want[r] = make([]any, len(cols))
	}
	for start := 0; start < rows; start += rgRows {
		end := min(start+rgRows, rows)
		rgw := pw.AppendRowGroup()
		for ci, c := range cols {
			cw, err := rgw.NextColumn()
			if err != nil {
				t.Fatal(err)
			}
			var defs []int16
			var vals []any
			for r := start; r < end; r++ {
				null := ci > 0 && (rng.Intn(7) == 0 || (end == rows && r-start < 30))
				if null {
					defs = append(defs, 0)
					continue
				}
				w, rd := c.gen(rng, r)
				want[r][ci] = rd
				vals = append(vals, w)
				defs = append(defs, 1)
			}
			if ci == 0 {
				defs = nil // required
			}
			if err := writeBatch(cw, vals, defs); err != nil {
				t.Fatalf("%s column %s: %v", f, c.node.Name(), err)
			}
			if err := cw.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rgw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// writeBatch writes dense values (of the writer's Go type) with their
// definition levels.
func writeBatch(cw file.ColumnChunkWriter, vals []any, defs []int16) error {
	var err error
	switch w := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		_, err = w.WriteBatch(typed[int32](vals), defs, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = w.WriteBatch(typed[int64](vals), defs, nil)
	case *file.Int96ColumnChunkWriter:
		_, err = w.WriteBatch(typed[parquet.Int96](vals), defs, nil)
	case *file.Float32ColumnChunkWriter:
		_, err = w.WriteBatch(typed[float32](vals), defs, nil)
	case *file.Float64ColumnChunkWriter:
		_, err = w.WriteBatch(typed[float64](vals), defs, nil)
	case *file.BooleanColumnChunkWriter:
		_, err = w.WriteBatch(typed[bool](vals), defs, nil)
	case *file.ByteArrayColumnChunkWriter:
		_, err = w.WriteBatch(typed[parquet.ByteArray](vals), defs, nil)
	case *file.FixedLenByteArrayColumnChunkWriter:
		_, err = w.WriteBatch(typed[parquet.FixedLenByteArray](vals), defs, nil)
	default:
		err = fmt.Errorf("writer %T", cw)
	}
	return err
}

func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

// corpusValue is a record's value as the corpus compares it (bytea as
// "b:" and its bytes).
func corpusValue(t testing.TB, col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return "b:" + string(a.Value(i))
	case *array.Date32:
		return int32(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Decimal64:
		return int64(a.Value(i))
	case *array.Decimal128:
		return a.Value(i)
	case *array.MonthDayNanoInterval:
		return a.Value(i)
	case *array.List:
		// A list as the text of its elements' values: [1 2 <nil>].
		s, e := a.ValueOffsets(i)
		vals := make([]any, 0, e-s)
		for j := s; j < e; j++ {
			vals = append(vals, corpusValue(t, a.ListValues(), int(j)))
		}
		return fmt.Sprint(vals)
	}
	t.Fatalf("unexpected array %T", col)
	return nil
}

// scanCorpus reads table's columns names (with filter) and returns the
// rows by id (column 0 must be id).
func scanCorpus(t testing.TB, db *DB, alloc memory.Allocator, table string, names []string, filter *Predicate) map[int64][]any {
	t.Helper()
	sc, err := db.NewScanner(ScanSpec{Table: table, Columns: names, Filter: filter, BatchSize: 64}, ScanOptions{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	out := map[int64][]any{}
	for {
		rec, err := sc.Next(context.Background())
		if err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		if rec == nil {
			return out
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				row[c] = corpusValue(t, rec.Column(c), r)
			}
			id := row[0].(int64)
			if _, dup := out[id]; dup {
				t.Fatalf("%s: row %d read twice", table, id)
			}
			out[id] = row
		}
		rec.Release()
	}
}

// TestParquetCorpus writes the corpus with every codec arrow-go's writer
// has, data pages v1 and v2, dictionary, plain and the other encodings
// (delta, byte stream split), nulls in every optional column, and reads
// every file as a file table: every column has its type, and every value
// of every row is the one written, read whole and read with a filter
// that skips rows (so that each decoder skips).
func TestParquetCorpus(t *testing.T) {
	cols := corpusColumns(t)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.node.Name()
	}
	codecs := []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip,
		compress.Codecs.Brotli, compress.Codecs.Zstd, compress.Codecs.Lz4Raw}
	dir := t.TempDir()
	db := openTestDB(t, WriteOptions{})
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	const rows = 700
	n := 0
	for _, codec := range codecs {
		for _, v2 := range []bool{false, true} {
			for _, enc := range []string{"dict", "plain", "other"} {
				cf := corpusFile{codec: codec, pageV2: v2, encoding: enc}
				n++
				path := filepath.Join(dir, cf.String()+".parquet")
				want := writeCorpus(t, path, cols, cf, rows, 300, int64(n))
				checkEncodings(t, path, cf, cols)
				name, err := FileTableName(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				tb, err := db.Table(name)
				if err != nil {
					t.Fatalf("%s: %v", cf, err)
				}
				if len(tb.Unreadable) != 0 {
					t.Fatalf("%s: unreadable columns %v", cf, tb.Unreadable)
				}
				if len(tb.Columns) != len(cols) {
					t.Fatalf("%s: %d columns, want %d", cf, len(tb.Columns), len(cols))
				}
				for i, c := range cols {
					if tb.Columns[i].Name != names[i] || tb.Columns[i].Type != c.want {
						t.Errorf("%s: column %d is %s %s, want %s %s", cf, i, tb.Columns[i].Name, tb.Columns[i].Type, names[i], c.want)
					}
				}
				check := func(what string, got map[int64][]any, from int) {
					t.Helper()
					if len(got) != rows-from {
						t.Fatalf("%s %s: %d rows, want %d", cf, what, len(got), rows-from)
					}
					bad := 0
					for r := from; r < rows; r++ {
						for c := range cols {
							if g := got[int64(r)][c]; g != want[r][c] && bad < 5 {
								bad++
								t.Errorf("%s %s: row %d column %s: read %#v, wrote %#v", cf, what, r, names[c], g, want[r][c])
							}
						}
					}
				}
				check("whole", scanCorpus(t, db, alloc, name, names, nil), 0)
				// Rows 0..449 fail the filter: whole chunks of 64 rows of
				// every other column are skipped, and row group 0 pruned.
				check("filtered", scanCorpus(t, db, alloc, name, names, Cmp("id", OpGe, Int(450))), 450)
			}
		}
	}
	// A UUID's statistics prune as its text orders: an equality on a
	// UUID finds exactly its rows.
	path := filepath.Join(dir, "snappy-v1-dict.parquet")
	want := writeCorpus(t, path, cols, corpusFile{codec: compress.Codecs.Snappy, encoding: "dict"}, rows, 100, 99)
	name, _ := FileTableName(path, nil)
	const fixed = "123e4567-e89b-12d3-a456-426614174000"
	got := scanCorpus(t, db, alloc, name, []string{"id", "u"}, Cmp("u", OpEq, Str(fixed)))
	wantN := 0
	for r := range want {
		if want[r][13] == fixed {
			wantN++
			if got[int64(r)] == nil {
				t.Errorf("uuid = %s: row %d missing", fixed, r)
			}
		}
	}
	if len(got) != wantN || wantN == 0 {
		t.Errorf("uuid = %s: %d rows, want %d", fixed, len(got), wantN)
	}
	if names[13] != "u" {
		t.Fatalf("column 13 is %s", names[13])
	}
}

// nestedRecord is a record with flat columns beside nested ones: id, a
// LIST of int32, a STRUCT whose field a shares its name with the flat
// column a, a MAP, name, and a.
func nestedRecord(alloc memory.Allocator, rows int) arrow.RecordBatch {
	st := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: st, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(alloc, sch)
	defer b.Release()
	for r := 0; r < rows; r++ {
		b.Field(0).(*array.Int64Builder).Append(int64(r))
		lb := b.Field(1).(*array.ListBuilder)
		if r%5 == 4 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := 0; k < r%4; k++ {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(r*10 + k))
			}
		}
		sb := b.Field(2).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(-r))
		sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("s", r))
		mb := b.Field(3).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Int32Builder).Append(int32(r))
		if r%3 == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprint("name", r))
		}
		b.Field(5).(*array.Int32Builder).Append(int32(r * 7))
	}
	return b.NewRecordBatch()
}

// writeNested writes nestedRecord's rows to path with pqarrow.
func writeNested(t testing.TB, path string, rows int) {
	t.Helper()
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	rec := nestedRecord(alloc, rows)
	defer rec.Release()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), out, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(40), parquet.WithAllocator(alloc)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(alloc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetNestedColumns reads a file whose nested columns (a LIST, a
// STRUCT, a MAP) sit beside flat ones, written by arrow-go's pqarrow in
// row groups of 40 rows: its file table and external table read the flat
// columns (the flat a, not the struct's field a) and the list (NULL lists,
// empty ones, values) with every value right, whole and filtered, and list
// the struct and the map as unreadable with an error naming column and
// file; loading the file into a table that wants a nested column as
// another type fails, while a load into the file's own columns works.
func TestParquetNestedColumns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nested.parquet")
	const rows = 100
	writeNested(t, path, rows)
	db := openTestDB(t, WriteOptions{})
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)

	checkTable := func(tb *Table) {
		t.Helper()
		var got []string
		for _, c := range tb.Columns {
			got = append(got, c.Name+" "+c.Type)
		}
		if strings.Join(got, ", ") != "id int64, arr int32[], name utf8, a int32" {
			t.Errorf("columns %v", got)
		}
		var bad []string
		for _, u := range tb.Unreadable {
			bad = append(bad, u.Name+" "+u.Kind)
			err := u.Err()
			if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "column "+u.Name+" of ") || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v (kind %v): want KindData naming column %s and %s", err, nferr.KindOf(err), u.Name, path)
			}
		}
		if strings.Join(bad, ", ") != "st STRUCT, m MAP" {
			t.Errorf("unreadable %v", bad)
		}
	}
	name, err := FileTableName(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	checkTable(tb)
	if msg := tb.Unreadable[0].Err().Error(); !strings.Contains(msg, "struct<a: int32") {
		t.Errorf("message %q does not say what the struct holds", msg)
	}
	wantArr := func(r int) any {
		if r%5 == 4 {
			return nil
		}
		var vals []any
		for k := 0; k < r%4; k++ {
			vals = append(vals, int32(r*10+k))
		}
		return fmt.Sprint(vals)
	}
	checkRows := func(table string) {
		t.Helper()
		got := scanCorpus(t, db, alloc, table, []string{"id", "name", "a", "arr"}, nil)
		if len(got) != rows {
			t.Fatalf("%d rows", len(got))
		}
		for r := 0; r < rows; r++ {
			var wantName any = fmt.Sprint("name", r)
			if r%3 == 0 {
				wantName = nil
			}
			if g := got[int64(r)]; g[1] != wantName || g[2] != int32(r*7) || g[3] != wantArr(r) {
				t.Fatalf("row %d: %v, want name %v a %d arr %v", r, g, wantName, r*7, wantArr(r))
			}
		}
		// Filtered on another column: the list's rows follow the
		// selection within each batch and across row groups.
		got = scanCorpus(t, db, alloc, table, []string{"id", "arr"}, Cmp("a", OpGe, Int(7*55)))
		if len(got) != rows-55 {
			t.Fatalf("filtered: %d rows", len(got))
		}
		for r := 55; r < rows; r++ {
			if g := got[int64(r)]; g[1] != wantArr(r) {
				t.Fatalf("filtered row %d: %v, want arr %v", r, g, wantArr(r))
			}
		}
	}
	checkRows(name)

	// An external table over the directory: the same, kept in the catalog.
	if err := db.RegisterExternal(context.Background(), "ext", dir, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	db = reopenDB(t, db)
	checkTable(mustTable(t, db, "ext"))
	checkRows("ext")

	// Loading: a table with a nested column's name fails naming it; a
	// table of the flat columns loads them.
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "arr", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	if err := db.CreateTable("wantsarr", sch, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Copy(context.Background(), "wantsarr", []string{path}, CopyOptions{})
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "column arr has type list<item: int32, nullable>, the table says int32") {
		t.Errorf("copy into a table with arr: %v (kind %v)", err, nferr.KindOf(err))
	}
	sch = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "st", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	if err := db.CreateTable("wantsst", sch, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Copy(context.Background(), "wantsst", []string{path}, CopyOptions{})
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "column st of "+path) || !strings.Contains(err.Error(), "STRUCT") {
		t.Errorf("copy into a table with st: %v (kind %v)", err, nferr.KindOf(err))
	}
	cols, _, err := InferColumns([]string{path}, CopyOptions{Format: "parquet"})
	if err != nil {
		t.Fatal(err)
	}
	fsch, err := ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable("flat", fsch, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Copy(context.Background(), "flat", []string{path}, CopyOptions{}); err != nil || n != rows {
		t.Fatalf("copy: %d rows, %v", n, err)
	}
	checkRows("flat")
	bad, err := ParquetUnreadable(nil, path)
	if err != nil || len(bad) != 2 {
		t.Errorf("ParquetUnreadable: %v, %v", bad, err)
	}

	// A file of nested columns only has nothing to read.
	only := filepath.Join(t.TempDir(), "only.parquet")
	alloc2 := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := nestedRecord(alloc2, 3)
	writeParquet(t, only, rec.Schema().Fields()[2:3], rec, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	rec.Release()
	alloc2.AssertSize(t, 0)
	oname, _ := FileTableName(only, nil)
	if _, err := db.Table(oname); !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "no column nicflow reads") || !strings.Contains(err.Error(), "column st of") {
		t.Errorf("nested-only file: %v (kind %v)", err, nferr.KindOf(err))
	}
}

// checkEncodings checks that the corpus file path holds what cf says:
// its codec, page version and, per column, the encoding asked for.
func checkEncodings(t *testing.T, path string, cf corpusFile, cols []corpusColumn) {
	t.Helper()
	md, _, err := readFooter(path)
	if err != nil {
		t.Fatal(err)
	}
	if md.NumRowGroups() < 2 {
		t.Fatalf("%s: %d row groups", cf, md.NumRowGroups())
	}
	for i, c := range cols {
		cc, err := md.RowGroup(0).ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Compression() != cf.codec {
			t.Fatalf("%s column %s: codec %s", cf, c.node.Name(), cc.Compression())
		}
		want := parquet.Encodings.Plain
		switch {
		case cf.encoding == "dict" && c.node.(*schema.PrimitiveNode).PhysicalType() != parquet.Types.Boolean &&
			c.node.(*schema.PrimitiveNode).PhysicalType() != parquet.Types.Int96: // arrow-go has no INT96 dictionaries
			want = parquet.Encodings.RLEDict
		case cf.encoding == "other":
			want = c.encoding
		}
		found := false
		for _, e := range cc.Encodings() {
			found = found || e == want || (want == parquet.Encodings.RLEDict && e == parquet.Encodings.PlainDict)
		}
		if !found {
			t.Errorf("%s column %s: encodings %v, want %s", cf, c.node.Name(), cc.Encodings(), want)
		}
	}
}

// TestParquetLegacyList reads a list in Parquet's legacy two-level form
// (optional group arr (LIST) { repeated int32 element; }, as older Spark
// and parquet-mr wrote them) and a required three-level list of strings
// with required elements: NULL, empty and filled lists, across two row
// groups.
func TestParquetLegacyList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legacy.parquet")
	id := nodeOf(schema.NewPrimitiveNode("id", parquet.Repetitions.Required, parquet.Types.Int64, -1, -1))
	elem := nodeOf(schema.NewPrimitiveNode("element", parquet.Repetitions.Repeated, parquet.Types.Int32, -1, -1))
	arr := nodeOf(schema.NewGroupNodeLogical("arr", parquet.Repetitions.Optional, schema.FieldList{elem}, schema.ListLogicalType{}, -1))
	selem := nodeOf(schema.NewPrimitiveNodeLogical("item", parquet.Repetitions.Required, schema.StringLogicalType{}, parquet.Types.ByteArray, 0, -1))
	slist := nodeOf(schema.NewGroupNode("list", parquet.Repetitions.Repeated, schema.FieldList{selem}, -1))
	strs := nodeOf(schema.NewGroupNodeLogical("strs", parquet.Repetitions.Required, schema.FieldList{slist}, schema.ListLogicalType{}, -1))
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{id, arr, strs}, -1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw := file.NewParquetWriter(out, root)
	// Row group 1: ids 0-3: arr [1 2], NULL, [], [3]; strs [a], [], [b c], [].
	// Row group 2: ids 4-5: arr [], [4 5 6]; strs [d], [e].
	type rg struct {
		ids            []int64
		arrV           []int32
		arrDef, arrRep []int16
		strV           []parquet.ByteArray
		strDef, strRep []int16
	}
	groups := []rg{
		{ids: []int64{0, 1, 2, 3}, arrV: []int32{1, 2, 3}, arrDef: []int16{2, 2, 0, 1, 2}, arrRep: []int16{0, 1, 0, 0, 0},
			strV: []parquet.ByteArray{[]byte("a"), []byte("b"), []byte("c")}, strDef: []int16{1, 0, 1, 1, 0}, strRep: []int16{0, 0, 0, 1, 0}},
		{ids: []int64{4, 5}, arrV: []int32{4, 5, 6}, arrDef: []int16{1, 2, 2, 2}, arrRep: []int16{0, 0, 1, 1},
			strV: []parquet.ByteArray{[]byte("d"), []byte("e")}, strDef: []int16{1, 1}, strRep: []int16{0, 0}},
	}
	for _, g := range groups {
		rgw := pw.AppendRowGroup()
		cw, _ := rgw.NextColumn()
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(g.ids, nil, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		cw, _ = rgw.NextColumn()
		if _, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch(g.arrV, g.arrDef, g.arrRep); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		cw, _ = rgw.NextColumn()
		if _, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(g.strV, g.strDef, g.strRep); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		rgw.Close()
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t, WriteOptions{})
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	name, err := FileTableName(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, db, name)
	var cols []string
	for _, c := range tb.Columns {
		cols = append(cols, fmt.Sprint(c.Name, " ", c.Type, " ", c.Nullable))
	}
	if got := strings.Join(cols, ", "); got != "id int64 false, arr int32[] true, strs utf8[] false" {
		t.Fatalf("columns %s", got)
	}
	got := scanCorpus(t, db, alloc, name, []string{"id", "arr", "strs"}, nil)
	want := map[int64][2]any{
		0: {"[1 2]", "[a]"}, 1: {nil, "[]"}, 2: {"[]", "[b c]"}, 3: {"[3]", "[]"}, 4: {"[]", "[d]"}, 5: {"[4 5 6]", "[e]"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows", len(got))
	}
	for id, w := range want {
		if g := got[id]; g[1] != w[0] || g[2] != w[1] {
			t.Errorf("row %d: %v, want %v", id, g, w)
		}
	}
	got = scanCorpus(t, db, alloc, name, []string{"id", "strs"}, Cmp("id", OpGe, Int(3)))
	if len(got) != 3 || got[3][1] != "[]" || got[5][1] != "[e]" {
		t.Errorf("filtered: %v", got)
	}
}

// nodeOf is a schema constructor's node; its error panics (test schemas
// are fixed).
func nodeOf[N schema.Node](n N, err error) schema.Node {
	if err != nil {
		panic(err)
	}
	return n
}
