package storage

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/zeebo/xxh3"
)

// writeWithProps writes rec to a new Parquet file at path through
// nicflow's column writers with the given writer properties.
func writeWithProps(t testing.TB, path string, rec arrow.RecordBatch, props *parquet.WriterProperties) {
	t.Helper()
	ps, err := parquetSchema(rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hw := &hashWriter{w: f, h: xxh3.New()}
	pw := &parquetWriter{path: path, f: f, hw: hw, w: file.NewParquetWriter(hw, ps, file.WithWriterProps(props)), sch: rec.Schema(), maxRG: 1 << 40}
	if err := pw.write(rec); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := pw.finish(); err != nil {
		t.Fatal(err)
	}
}

// writeExotic writes the physical layouts nicflow's writer never makes:
// INT32 UINT_32, FLOAT, FIXED_LEN_BYTE_ARRAY(8) decimal(12,2), INT32
// decimal(7,2), nullable, every fifth row NULL. It returns the expected
// values (nil = NULL) per column.
func writeExotic(t testing.TB, path string, n int, props *parquet.WriterProperties, rng *rand.Rand) [][]any {
	t.Helper()
	fields := schema.FieldList{
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("u32", parquet.Repetitions.Optional, schema.NewIntLogicalType(32, false), parquet.Types.Int32, 0, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNode("f32", parquet.Repetitions.Optional, parquet.Types.Float, -1, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("dflba", parquet.Repetitions.Optional, schema.NewDecimalLogicalType(12, 2), parquet.Types.FixedLenByteArray, 8, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("dec32", parquet.Repetitions.Required, schema.NewDecimalLogicalType(7, 2), parquet.Types.Int32, 0, -1)),
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := file.NewParquetWriter(f, root, file.WithWriterProps(props))
	rg := w.AppendRowGroup()
	want := make([][]any, 4)
	def := make([]int16, n)
	for i := range def {
		if i%5 != 3 {
			def[i] = 1
		}
	}
	// u32: values across the whole unsigned range, few distinct ones.
	var u []int32
	for i := 0; i < n; i++ {
		if def[i] == 0 {
			want[0] = append(want[0], nil)
			continue
		}
		v := uint32(rng.Intn(7)) * 0x2aaaaaaa
		u = append(u, int32(v))
		want[0] = append(want[0], int64(v))
	}
	cw, _ := rg.NextColumn()
	if _, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch(u, def, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	var fl []float32
	for i := 0; i < n; i++ {
		if def[i] == 0 {
			want[1] = append(want[1], nil)
			continue
		}
		v := float32(rng.Intn(1000)) / 4
		fl = append(fl, v)
		want[1] = append(want[1], float64(v))
	}
	cw, _ = rg.NextColumn()
	if _, err := cw.(*file.Float32ColumnChunkWriter).WriteBatch(fl, def, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	var fb []parquet.FixedLenByteArray
	for i := 0; i < n; i++ {
		if def[i] == 0 {
			want[2] = append(want[2], nil)
			continue
		}
		v := int64(rng.Intn(2_000_000_000)) - 1_000_000_000
		b := make([]byte, 8)
		for k := 0; k < 8; k++ {
			b[7-k] = byte(uint64(v) >> (8 * k))
		}
		fb = append(fb, b)
		want[2] = append(want[2], v)
	}
	cw, _ = rg.NextColumn()
	if _, err := cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch(fb, def, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	var d32 []int32
	for i := 0; i < n; i++ {
		v := int32(rng.Intn(2_000_000) - 1_000_000)
		d32 = append(d32, v)
		want[3] = append(want[3], int64(v))
	}
	cw, _ = rg.NextColumn()
	if _, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch(d32, nil, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	if err := rg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// vecValue is row i of a vector (either form) as a reference value.
func vecValue(v *vector, i int) any {
	if v.valid != nil && !v.valid[i] {
		return nil
	}
	src, j := v, i
	if v.dict != nil {
		src, j = v.dict, int(v.idx[i])
	}
	switch v.kind {
	case kInt32:
		return src.i32[j]
	case kInt64:
		return src.i64[j]
	case kFloat64:
		return src.f64[j]
	case kBool:
		return src.b[j]
	case kString:
		return string(src.str(j))
	case kDec128:
		return src.d128[j]
	}
	return nil
}

// chunkBytes returns a column chunk's bytes in a buffer with the slack
// the flat decoder expects.
func chunkBytes(t testing.TB, raw []byte, start, length int64) []byte {
	t.Helper()
	if start < 0 || start+length > int64(len(raw)) {
		t.Fatalf("chunk %d+%d outside the file", start, length)
	}
	b := make([]byte, length, length+bitReaderSlack)
	copy(b, raw[start:start+length])
	return b
}

// flatVsArrow reads every column chunk of the file at path with the flat
// decoder and with arrow-go's column readers, in random batch sizes with
// random skips, and fails on any difference. It returns how many chunks the
// flat decoder took and how many of them were dictionary-only.
func flatVsArrow(t *testing.T, path string, rng *rand.Rand, want [][]any) (flat, dictOnly int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		rgm := md.RowGroup(rg)
		rows := int(rgm.NumRows())
		for c := 0; c < md.Schema.NumColumns(); c++ {
			descr := md.Schema.Column(c)
			typ, err := arrowTypeOfParquet(descr)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if !flatChunkSupported(md, cc, descr) {
				t.Logf("%s: column %s not read by the flat decoder (encodings %v)", filepath.Base(path), descr.Name(), cc.Encodings())
				continue
			}
			flat++
			cr, err := rdr.RowGroup(rg).Column(c)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := newColDecoder(cr, typ, descr.Name())
			if err != nil {
				t.Fatal(err)
			}
			start, length := chunkRange(cc)
			fd := &flatDecoder{}
			if err := fd.reset(descr.Name(), descr, cc, kindOf(typ), int64(rows), chunkBytes(t, raw, start, length)); err != nil {
				t.Fatal(err)
			}
			if fd.dictOnly {
				dictOnly++
			}
			var rv, fv vector
			for off := 0; off < rows; {
				n := min(rows-off, 1+rng.Intn(700))
				if rng.Intn(4) == 0 {
					if err := ref.skip(n); err != nil {
						t.Fatal(err)
					}
					if err := fd.skip(n); err != nil {
						t.Fatalf("%s column %s: skip %d at %d: %v", path, descr.Name(), n, off, err)
					}
					off += n
					continue
				}
				if err := ref.read(&rv, n); err != nil {
					t.Fatal(err)
				}
				if err := fd.read(&fv, n); err != nil {
					t.Fatalf("%s column %s: read %d at %d: %v", path, descr.Name(), n, off, err)
				}
				if fd.dictOnly != (fv.dict != nil) {
					t.Fatalf("column %s: dictOnly %v but dictionary form %v", descr.Name(), fd.dictOnly, fv.dict != nil)
				}
				for i := 0; i < n; i++ {
					a, b := vecValue(&rv, i), vecValue(&fv, i)
					if a != b {
						t.Fatalf("%s row group %d column %s row %d: flat %v, arrow %v", filepath.Base(path), rg, descr.Name(), off+i, b, a)
					}
					if want != nil && rg == 0 && b != want[c][off+i] {
						t.Fatalf("column %s row %d: %v, want %v", descr.Name(), off+i, b, want[c][off+i])
					}
				}
				off += n
			}
			cr.Close()
			if err := fd.read(&fv, 1); err == nil {
				t.Fatalf("column %s: read past the end of the chunk succeeded", descr.Name())
			}
		}
	}
	return flat, dictOnly
}

// TestFlatDecoderMatchesArrow reads files written with many writer
// settings (codecs, dictionary on/off/falling back, page versions, tiny
// pages, nulls, every stored type and the foreign layouts) with the flat
// decoder and with arrow-go's readers.
func TestFlatDecoderMatchesArrow(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	rows := randomRows(rng, 0, 3000, 0.2)
	// Strings with more distinct values than testWords, for dictionary
	// fallback to PLAIN.
	for i := range rows {
		if rows[i][4] != nil && i%3 == 0 {
			rows[i][4] = fmt.Sprintf("w%d-%s", rng.Intn(2000), rows[i][4])
		}
	}
	rec := recordOf(alloc, testSchema(), rows)
	defer rec.Release()
	type variant struct {
		name  string
		props []parquet.WriterProperty
	}
	variants := []variant{
		{"snappy-dict-v1", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy)}},
		{"none-plain-v1", []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}},
		{"zstd-dict-v2-small-pages", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(300), parquet.WithBatchSize(64)}},
		{"lz4raw-plain-v2", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Lz4Raw), parquet.WithDictionaryDefault(false), parquet.WithDataPageVersion(parquet.DataPageV2)}},
		{"gzip-dict-fallback-small-pages", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Gzip), parquet.WithDictionaryPageSizeLimit(256), parquet.WithDataPageSize(500), parquet.WithBatchSize(50)}},
		{"none-dict-fallback-v2", []parquet.WriterProperty{parquet.WithDictionaryPageSizeLimit(1000), parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(700), parquet.WithBatchSize(100)}},
		{"snappy-delta-v1-small-pages", append(deltaInts(), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDataPageSize(300), parquet.WithBatchSize(64))},
		{"none-delta-v2", append(deltaInts(), parquet.WithDataPageVersion(parquet.DataPageV2))},
	}
	var totalDict, totalFlat int
	for _, v := range variants {
		p := filepath.Join(dir, v.name+".parquet")
		writeWithProps(t, p, rec, parquet.NewWriterProperties(append(v.props, parquet.WithStats(true))...))
		flat, dict := flatVsArrow(t, p, rng, nil)
		if flat != rec.Schema().NumFields() {
			t.Fatalf("%s: the flat decoder read %d of %d columns", v.name, flat, rec.Schema().NumFields())
		}
		totalFlat += flat
		totalDict += dict
		p = filepath.Join(dir, v.name+"-exotic.parquet")
		want := writeExotic(t, p, 2500, parquet.NewWriterProperties(v.props...), rng)
		if flat, _ := flatVsArrow(t, p, rng, want); flat != 4 {
			t.Fatalf("%s: the flat decoder read %d of 4 exotic columns", v.name, flat)
		}
	}
	if totalDict == 0 || totalDict == totalFlat {
		t.Fatalf("%d of %d chunks dictionary-only: the variants should cover both forms", totalDict, totalFlat)
	}
	// Encodings the flat decoder leaves to arrow-go.
	p := filepath.Join(dir, "delta.parquet")
	writeWithProps(t, p, rec, parquet.NewWriterProperties(parquet.WithDictionaryDefault(false),
		parquet.WithEncodingFor("id", parquet.Encodings.DeltaBinaryPacked), parquet.WithEncodingFor("s", parquet.Encodings.DeltaByteArray)))
	if flat, _ := flatVsArrow(t, p, rng, nil); flat != rec.Schema().NumFields()-1 {
		t.Fatalf("delta file: the flat decoder read %d columns, want all but the DELTA_BYTE_ARRAY one", flat)
	}
}

// deltaInts are writer settings with every integer column of testSchema
// and writeExotic's DELTA_BINARY_PACKED (INT64, INT32, decimals on both,
// dates, unsigned INT32).
func deltaInts() []parquet.WriterProperty {
	props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}
	for _, c := range []string{"id", "i32", "price", "d", "u32", "dec32"} {
		props = append(props, parquet.WithEncodingFor(c, parquet.Encodings.DeltaBinaryPacked))
	}
	return props
}

// TestDeltaExtremes reads DELTA_BINARY_PACKED columns whose deltas span
// the whole 64- and 32-bit ranges (wrapping sums, 64- and 32-bit wide
// miniblocks), with NULLs, long runs of one value (0-bit miniblocks) and
// pages of odd lengths, with the flat decoder and with arrow-go's.
func TestDeltaExtremes(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	fields := schema.FieldList{
		schema.MustPrimitive(schema.NewPrimitiveNode("a", parquet.Repetitions.Optional, parquet.Types.Int64, -1, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNode("b", parquet.Repetitions.Required, parquet.Types.Int32, -1, -1)),
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, pageSize := range []int64{64, 1000, 1 << 20} {
		path := filepath.Join(t.TempDir(), "extremes.parquet")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(pageSize), parquet.WithBatchSize(37),
			parquet.WithEncodingFor("a", parquet.Encodings.DeltaBinaryPacked), parquet.WithEncodingFor("b", parquet.Encodings.DeltaBinaryPacked))
		w := file.NewParquetWriter(f, root, file.WithWriterProps(props))
		rg := w.AppendRowGroup()
		const n = 3001
		want := make([][]any, 2)
		var a []int64
		var b []int32
		def := make([]int16, n)
		for i := range n {
			var x int64
			switch r := rng.Intn(10); {
			case i >= 1000 && i < 1400:
				x = 42 // one value: 0-bit miniblocks
			case r < 3:
				x = math.MaxInt64 - int64(rng.Intn(3))
			case r < 6:
				x = math.MinInt64 + int64(rng.Intn(3))
			default:
				x = rng.Int63() - rng.Int63()
			}
			if i%7 == 3 {
				want[0] = append(want[0], nil)
			} else {
				def[i] = 1
				a = append(a, x)
				want[0] = append(want[0], x)
			}
			y := int32(x)
			b = append(b, y)
			want[1] = append(want[1], y)
		}
		cw, _ := rg.NextColumn()
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(a, def, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		cw, _ = rg.NextColumn()
		if _, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch(b, nil, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		if err := rg.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if flat, _ := flatVsArrow(t, path, rng, want); flat != 2 {
			t.Fatalf("page size %d: the flat decoder read %d of 2 columns", pageSize, flat)
		}
		// A page whose first rows are skipped is decoded whole all the
		// same (a skip counts its rows as gone before it loads the page).
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := file.NewParquetReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		md := rdr.MetaData()
		for c := range 2 {
			descr := md.Schema.Column(c)
			cc, _ := md.RowGroup(0).ColumnChunk(c)
			typ, _ := arrowTypeOfParquet(descr)
			start, length := chunkRange(cc)
			fd := &flatDecoder{}
			if err := fd.reset(descr.Name(), descr, cc, kindOf(typ), n, chunkBytes(t, raw, start, length)); err != nil {
				t.Fatal(err)
			}
			var v vector
			if err := fd.skip(5); err != nil {
				t.Fatalf("page size %d column %s: skip: %v", pageSize, descr.Name(), err)
			}
			if err := fd.read(&v, 10); err != nil {
				t.Fatalf("page size %d column %s: read after a skip: %v", pageSize, descr.Name(), err)
			}
			for i := range 10 {
				if got := vecValue(&v, i); got != want[c][5+i] {
					t.Fatalf("page size %d column %s row %d: %v, want %v", pageSize, descr.Name(), 5+i, got, want[c][5+i])
				}
			}
		}
		rdr.Close()
	}
}

// TestRLEHybrid checks the RLE/bit-packing decoder on runs written by
// hand: every bit width, runs split across reads, truncated last runs and
// skips.
func TestRLEHybrid(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for w := 0; w <= 32; w++ {
		var enc []byte
		var want []uint32
		mask := uint64(1)<<uint(w) - 1
		for r := 0; r < 20; r++ {
			if rng.Intn(2) == 0 { // RLE run
				cnt := 1 + rng.Intn(40)
				v := uint32(rng.Uint64() & mask)
				enc = appendUvarint(enc, uint64(cnt)<<1)
				for k := 0; k < (w+7)/8; k++ {
					enc = append(enc, byte(v>>(8*k)))
				}
				for k := 0; k < cnt; k++ {
					want = append(want, v)
				}
				continue
			}
			groups := 1 + rng.Intn(5)
			vals := make([]uint32, groups*8)
			for i := range vals {
				vals[i] = uint32(rng.Uint64() & mask)
			}
			enc = appendUvarint(enc, uint64(groups)<<1|1)
			enc = append(enc, packBits(vals, w)...)
			want = append(want, vals...)
		}
		for trial := 0; trial < 4; trial++ {
			// Trial 0 has no slack beyond the data (the careful paths).
			buf := append([]byte(nil), enc...)
			if trial > 0 {
				buf = append(buf, make([]byte, bitReaderSlack)...)[:len(enc)]
			}
			var d rleDecoder
			if err := d.init(buf, w); err != nil {
				t.Fatal(err)
			}
			for off := 0; off < len(want); {
				n := min(len(want)-off, 1+rng.Intn(30))
				if rng.Intn(3) == 0 {
					if err := d.skip(n); err != nil {
						t.Fatalf("w=%d skip: %v", w, err)
					}
					off += n
					continue
				}
				out := make([]int32, n)
				mx, err := d.decode(out, trial%2 == 0)
				if err != nil {
					t.Fatalf("w=%d: %v", w, err)
				}
				var wantMax uint32
				for i := range out {
					if uint32(out[i]) != want[off+i] {
						t.Fatalf("w=%d value %d: %d, want %d", w, off+i, uint32(out[i]), want[off+i])
					}
					wantMax = max(wantMax, want[off+i])
				}
				if trial%2 == 0 && mx != wantMax {
					t.Fatalf("w=%d: max %d, want %d", w, mx, wantMax)
				}
				off += n
			}
			if _, err := d.decode(make([]int32, 1), false); err == nil {
				t.Fatalf("w=%d: decoding past the end succeeded", w)
			}
		}
	}
	// A truncated last bit-packed run yields the values its bytes hold.
	var d rleDecoder
	enc := appendUvarint(nil, 4<<1|1) // claims 32 values of width 3
	enc = append(enc, packBits([]uint32{1, 2, 3, 4, 5, 6, 7, 0}, 3)...)
	if err := d.init(enc, 3); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, 8)
	if _, err := d.decode(out, true); err != nil || fmt.Sprint(out) != "[1 2 3 4 5 6 7 0]" {
		t.Fatalf("truncated run: %v %v", out, err)
	}
	if _, err := d.decode(out[:1], true); err == nil {
		t.Fatal("decoding past a truncated run succeeded")
	}
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// packBits packs values LSB first, w bits each (Parquet's bit-packed runs).
func packBits(vals []uint32, w int) []byte {
	out := make([]byte, (len(vals)*w+7)/8)
	for i, v := range vals {
		for b := 0; b < w; b++ {
			if v>>uint(b)&1 == 1 {
				bit := i*w + b
				out[bit/8] |= 1 << (bit % 8)
			}
		}
	}
	return out
}

// TestDictFilterMatchesRowByRow evaluates random predicates over vectors in
// dictionary form and over the same rows as plain values (the row-by-row
// kernels), with NULLs, selections, several dictionaries through one
// scratch (the mask cache must notice the change) and padded dictionaries.
func TestDictFilterMatchesRowByRow(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	sch := testSchema()
	scratch := &filterScratch{}
	for chunk := 0; chunk < 40; chunk++ {
		n := 1 + rng.Intn(600)
		rows := randomRows(rng, chunk*1000, n, 0.25)
		if chunk%2 == 0 {
			// Only short strings: materializeDict's word-copy path.
			for _, r := range rows {
				if s, ok := r[4].(string); ok && len(s) > 8 {
					r[4] = s[:8]
				}
			}
		}
		alloc := memory.NewGoAllocator()
		rec := recordOf(alloc, sch, rows)
		plain := make([]*vector, sch.NumFields())
		dict := make([]*vector, sch.NumFields())
		for c := range plain {
			plain[c] = &vector{}
			arrayToVector(rec.Column(c), plain[c])
			dict[c] = dictionaryForm(plain[c], n, rng)
		}
		for k := 0; k < 25; k++ {
			p := randomPredicate(rng, 2)
			cn, err := compilePredicate(p, sch, func(name string) (int, bool) { return fieldIndex(sch, name), true }, 0)
			if err != nil {
				t.Fatal(err)
			}
			var sel []int32
			if rng.Intn(2) == 0 {
				for i := 0; i < n; i++ {
					if rng.Intn(3) > 0 {
						sel = append(sel, int32(i))
					}
				}
			}
			got := cn.filter(dict, sel, n, make([]int32, n), scratch)
			want := cn.filter(plain, sel, n, make([]int32, n), &filterScratch{})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("chunk %d predicate %s: dictionary form kept %v, row by row %v", chunk, p, got, want)
			}
			// And the reference evaluator agrees.
			var ref []int32
			for i := 0; i < n; i++ {
				if (sel == nil || containsInt32(sel, int32(i))) && refEval(p, sch, rows[i]) {
					ref = append(ref, int32(i))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(ref) && !(len(got) == 0 && len(ref) == 0) {
				t.Fatalf("chunk %d predicate %s: kept %v, reference %v", chunk, p, got, ref)
			}
		}
		// Materializing either form gives the same arrays.
		for c := range plain {
			var sel []int32
			for i := 0; i < n; i += 1 + rng.Intn(3) {
				sel = append(sel, int32(i))
			}
			a := materialize(alloc, sch.Field(c).Type, plain[c], sel, n)
			b := materialize(alloc, sch.Field(c).Type, dict[c], sel, n)
			if !arrayEqual(a, b) {
				t.Fatalf("column %s: materialized dictionary form %v, plain %v", sch.Field(c).Name, b, a)
			}
			a.Release()
			b.Release()
		}
		rec.Release()
	}
}

func containsInt32(s []int32, x int32) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func arrayEqual(a, b arrow.Array) bool {
	if a.Len() != b.Len() || a.NullN() != b.NullN() {
		return false
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// dictionaryForm builds v's rows in dictionary form: distinct non-null
// values in random order, padded to a power of two like the decoder's.
func dictionaryForm(v *vector, n int, rng *rand.Rand) *vector {
	keys := map[any]int32{}
	var order []int
	for i := 0; i < n; i++ {
		if v.valid != nil && !v.valid[i] {
			continue
		}
		k := vecValue(v, i)
		if _, ok := keys[k]; !ok {
			keys[k] = int32(len(order))
			order = append(order, i)
		}
	}
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	for j, i := range order {
		keys[vecValue(v, i)] = int32(j)
	}
	dn := len(order)
	size := 1 << bitsLen(dn)
	d := &vector{kind: v.kind, n: size}
	out := &vector{kind: v.kind, n: n, dict: d, dictN: dn, dictID: dictIDs.Add(1), valid: v.valid, idx: make([]int32, n)}
	switch v.kind {
	case kInt32:
		d.i32 = make([]int32, size)
	case kInt64:
		d.i64 = make([]int64, size)
	case kFloat64:
		d.f64 = make([]float64, size)
	case kBool:
		d.b = make([]bool, size)
	case kDec128:
		d.d128 = make([]decimal128.Num, size)
	case kString:
		d.offs = make([]int32, size+1)
	}
	for j, i := range order {
		switch v.kind {
		case kInt32:
			d.i32[j] = v.i32[i]
		case kInt64:
			d.i64[j] = v.i64[i]
		case kFloat64:
			d.f64[j] = v.f64[i]
		case kBool:
			d.b[j] = v.b[i]
		case kDec128:
			d.d128[j] = v.d128[i]
		case kString:
			d.data = append(d.data, v.str(i)...)
			d.offs[j+1] = int32(len(d.data))
		}
	}
	if v.kind == kString {
		for j := dn + 1; j <= size; j++ {
			d.offs[j] = d.offs[dn]
		}
	}
	for i := 0; i < n; i++ {
		if v.valid != nil && !v.valid[i] {
			out.idx[i] = int32(dn)
			continue
		}
		out.idx[i] = keys[vecValue(v, i)]
	}
	return out
}

func bitsLen(n int) int {
	b := 0
	for n > 0 {
		b++
		n >>= 1
	}
	return b
}

// FuzzFlatChunk feeds arbitrary bytes to the flat decoder as a column
// chunk of each physical type (with and without a codec, required and
// optional): it may fail, never panic or loop. The seeds are real chunks.
func FuzzFlatChunk(f *testing.F) {
	dir := f.TempDir()
	alloc := memory.NewGoAllocator()
	rec := recordOf(alloc, testSchema(), randomRows(randSource(9), 0, 200, 0.3))
	defer rec.Release()
	// Two files: dictionary and PLAIN pages, and DELTA_BINARY_PACKED
	// integers; a chunk is read with the metadata of either.
	var mds [2]*metadata.FileMetaData
	for i, props := range [][]parquet.WriterProperty{nil, deltaInts()} {
		p := filepath.Join(dir, fmt.Sprintf("seed%d.parquet", i))
		writeWithProps(f, p, rec, parquet.NewWriterProperties(append(props, parquet.WithDataPageSize(200), parquet.WithBatchSize(40))...))
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(raw))
		if err != nil {
			f.Fatal(err)
		}
		mds[i] = pf.MetaData()
		for c := 0; c < mds[i].Schema.NumColumns(); c++ {
			cc, _ := mds[i].RowGroup(0).ColumnChunk(c)
			start, length := chunkRange(cc)
			f.Add(raw[start:start+length], uint8(c), false, i == 1)
		}
	}
	f.Add([]byte{0x15, 0x00}, uint8(0), true, false)
	f.Fuzz(func(t *testing.T, chunk []byte, col uint8, snappy, delta bool) {
		md := mds[0]
		if delta {
			md = mds[1]
		}
		c := int(col) % md.Schema.NumColumns()
		descr := md.Schema.Column(c)
		cc, _ := md.RowGroup(0).ColumnChunk(c)
		typ, _ := arrowTypeOfParquet(descr)
		fd := &flatDecoder{}
		buf := make([]byte, len(chunk), len(chunk)+bitReaderSlack)
		copy(buf, chunk)
		if err := fd.reset(descr.Name(), descr, cc, kindOf(typ), 200, buf); err != nil {
			return
		}
		if snappy {
			fd.pages.codec, _ = compress.GetCodec(compress.Codecs.Snappy)
		}
		var v vector
		for i := 0; i < 10; i++ {
			var err error
			if i%3 == 1 {
				err = fd.skip(20)
			} else {
				err = fd.read(&v, 20)
			}
			if err != nil {
				return
			}
			for r := 0; r < 20; r++ {
				_ = vecValue(&v, r)
			}
		}
	})
}

// FuzzPageHeader decodes arbitrary bytes as a page header: errors are
// fine, panics and out-of-range sizes are not.
func FuzzPageHeader(f *testing.F) {
	f.Add([]byte{0x15, 0x00, 0x15, 0x90, 0x01, 0x15, 0x90, 0x01, 0x2c, 0x15, 0x10, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00})
	f.Add([]byte{})
	f.Add([]byte{0x1c, 0x1c, 0x1c, 0x1c, 0x1c, 0x1c, 0x1c})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := parsePageHeader(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("header length %d of %d bytes", n, len(b))
		}
		if h.compressed < 0 || h.uncompressed < 0 || h.compressed > maxPageBytes || h.uncompressed > maxPageBytes {
			t.Fatalf("sizes %d/%d accepted", h.compressed, h.uncompressed)
		}
	})
}

// BenchmarkColumnDecode decodes one 256Ki-row column chunk with the flat
// decoder (and, for snappy, with arrow-go's column reader) for each codec
// (nicflow's writer settings otherwise): a PLAIN int64 column of ascending
// keys (l_orderkey-like), a dictionary-encoded string column of 7 values
// (l_shipmode-like) and a dictionary-encoded date column of 2,526 values
// (l_shipdate-like). MB/s are of uncompressed column bytes.
//
//	go test ./storage -run '^$' -bench ColumnDecode -benchtime 20x
func BenchmarkColumnDecode(b *testing.B) {
	const rows = 256 << 10
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "mode", Type: arrow.BinaryTypes.String},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	rng := rand.New(rand.NewSource(1))
	modes := []string{"AIR", "AIR REG", "FOB", "MAIL", "RAIL", "SHIP", "TRUCK"}
	rs := make([]row, rows)
	for i := range rs {
		rs[i] = row{int64(i*4 + rng.Intn(4)), modes[rng.Intn(len(modes))], int32(8036 + rng.Intn(2526))}
	}
	rec := recordOf(memory.NewGoAllocator(), sch, rs)
	defer rec.Release()
	for _, codec := range []struct {
		name string
		c    compress.Compression
	}{{"snappy", compress.Codecs.Snappy}, {"lz4raw", compress.Codecs.Lz4Raw}, {"zstd", compress.Codecs.Zstd}, {"none", compress.Codecs.Uncompressed}} {
		p := filepath.Join(b.TempDir(), codec.name+".parquet")
		writeWithProps(b, p, rec, parquet.NewWriterProperties(parquet.WithCompression(codec.c),
			parquet.WithDictionaryFor("key", false), parquet.WithMaxRowGroupLength(rows)))
		raw, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		md := pf.MetaData()
		for c := 0; c < 3; c++ {
			descr := md.Schema.Column(c)
			cc, _ := md.RowGroup(0).ColumnChunk(c)
			typ, _ := arrowTypeOfParquet(descr)
			start, length := chunkRange(cc)
			chunk := chunkBytes(b, raw, start, length)
			b.Run(codec.name+"/"+descr.Name()+"/flat", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(cc.TotalUncompressedSize())
				fd := &flatDecoder{}
				var v vector
				for i := 0; i < b.N; i++ {
					if err := fd.reset(descr.Name(), descr, cc, kindOf(typ), rows, chunk); err != nil {
						b.Fatal(err)
					}
					for off := 0; off < rows; off += 8192 {
						if err := fd.read(&v, 8192); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
			if codec.name != "snappy" {
				continue
			}
			b.Run(codec.name+"/"+descr.Name()+"/arrow", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(cc.TotalUncompressedSize())
				var v vector
				for i := 0; i < b.N; i++ {
					cr, err := pf.RowGroup(0).Column(c)
					if err != nil {
						b.Fatal(err)
					}
					d, err := newColDecoder(cr, typ, descr.Name())
					if err != nil {
						b.Fatal(err)
					}
					for off := 0; off < rows; off += 8192 {
						if err := d.read(&v, 8192); err != nil {
							b.Fatal(err)
						}
					}
					cr.Close()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
		pf.Close()
	}
}

// BenchmarkMaterializeDictStrings gathers 98% of an 8192-row batch of a
// 3-value dictionary string column (Q1's l_returnflag) into an Arrow array.
func BenchmarkMaterializeDictStrings(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	d := &vector{kind: kString, n: 4, offs: []int32{0, 1, 2, 3, 3}, data: []byte("AFN")}
	v := &vector{kind: kString, n: 8192, dict: d, dictN: 3, dictID: dictIDs.Add(1), idx: make([]int32, 8192)}
	for i := range v.idx {
		v.idx[i] = int32(rng.Intn(3))
	}
	var sel []int32
	for i := 0; i < 8192; i++ {
		if rng.Intn(50) > 0 {
			sel = append(sel, int32(i))
		}
	}
	alloc := memory.NewGoAllocator()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		a := materialize(alloc, arrow.BinaryTypes.String, v, sel, 8192)
		a.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(sel)), "ns/value")
}

// TestRLELevels checks definition-level decoding into validity (a level
// equal to the maximum is a present value) on hand-written runs: the
// one-bit fast path and wider levels, reads of every size that split runs
// and bytes, skips between them, and data without slack after it.
func TestRLELevels(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, w := range []int{1, 2, 3} {
		maxDef := uint32(1)<<uint(w) - 1
		for trial := 0; trial < 6; trial++ {
			var enc []byte
			var want []uint32
			for r := 0; r < 30; r++ {
				if rng.Intn(3) == 0 {
					cnt := 1 + rng.Intn(70)
					v := uint32(rng.Intn(int(maxDef) + 1))
					enc = appendUvarint(enc, uint64(cnt)<<1)
					enc = append(enc, byte(v))
					for k := 0; k < cnt; k++ {
						want = append(want, v)
					}
					continue
				}
				groups := 1 + rng.Intn(9)
				vals := make([]uint32, groups*8)
				for i := range vals {
					vals[i] = uint32(rng.Intn(int(maxDef) + 1))
				}
				enc = appendUvarint(enc, uint64(groups)<<1|1)
				enc = append(enc, packBits(vals, w)...)
				want = append(want, vals...)
			}
			buf := append([]byte(nil), enc...)
			if trial%2 == 1 {
				buf = append(buf, make([]byte, bitReaderSlack)...)[:len(enc)]
			}
			var d rleDecoder
			if err := d.init(buf, w); err != nil {
				t.Fatal(err)
			}
			for off := 0; off < len(want); {
				n := min(len(want)-off, 1+rng.Intn(45))
				if rng.Intn(4) == 0 {
					if err := d.skip(n); err != nil {
						t.Fatal(err)
					}
					off += n
					continue
				}
				valid := make([]bool, n)
				nn, err := d.levels(valid, maxDef)
				if err != nil {
					t.Fatalf("w=%d: %v", w, err)
				}
				wantNN := 0
				for i := range valid {
					if exp := want[off+i] == maxDef; valid[i] != exp {
						t.Fatalf("w=%d level %d: valid %v, level %d", w, off+i, valid[i], want[off+i])
					}
					if valid[i] {
						wantNN++
					}
				}
				if nn != wantNN {
					t.Fatalf("w=%d: %d present, want %d", w, nn, wantNN)
				}
				off += n
			}
		}
	}
}

// TestSpreadFill checks that dense values land on the valid rows, in
// order, and NULL rows get the fill value: no NULLs, all NULLs, NULLs at
// both ends, in runs and alone.
func TestSpreadFill(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 2000; trial++ {
		n := rng.Intn(300)
		valid := make([]bool, n)
		density := rng.Float64()
		var dense []int32
		for i := range valid {
			valid[i] = rng.Float64() < density
			if valid[i] {
				dense = append(dense, int32(1000+len(dense)))
			}
		}
		vals := make([]int32, n)
		for i := range vals {
			vals[i] = -7 // garbage beyond the dense prefix
		}
		copy(vals, dense)
		spreadFill(vals, valid, len(dense), -1)
		k := 0
		for i, ok := range valid {
			want := int32(-1)
			if ok {
				want = dense[k]
				k++
			}
			if vals[i] != want {
				t.Fatalf("trial %d row %d: %d, want %d", trial, i, vals[i], want)
			}
		}
	}
}
