package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"os"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// WriteOptions control the Parquet files nicflow writes.
type WriteOptions struct {
	// RowGroupRows is the number of rows per row group (default 131072:
	// small enough for row-group pruning and parallel scans to bite, large
	// enough that per-row-group overhead stays under 1%).
	RowGroupRows int64
	// FileRows is the number of rows per file before the writer starts a new
	// one (default 8 row groups).
	FileRows int64
	// Compression: "snappy" (default: decompresses at memory speed),
	// "zstd" (smaller, slower to read), or "none".
	Compression string
}

// Validate checks the options and fills defaults.
func (o *WriteOptions) Validate() error {
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = 128 << 10
	}
	if o.FileRows <= 0 {
		o.FileRows = 8 * o.RowGroupRows
	}
	if o.FileRows < o.RowGroupRows {
		return nferr.Queryf("write options: FileRows %d is smaller than RowGroupRows %d", o.FileRows, o.RowGroupRows)
	}
	switch strings.ToLower(o.Compression) {
	case "", "snappy":
		o.Compression = "snappy"
	case "zstd", "none":
		o.Compression = strings.ToLower(o.Compression)
	default:
		return nferr.Queryf("write options: unknown compression %q (want snappy, zstd or none)", o.Compression)
	}
	return nil
}

func (o *WriteOptions) codec() compress.Compression {
	switch o.Compression {
	case "zstd":
		return compress.Codecs.Zstd
	case "none":
		return compress.Codecs.Uncompressed
	}
	return compress.Codecs.Snappy
}

// hashWriter checksums and counts what it writes.
type hashWriter struct {
	w io.Writer
	h *xxh3.Hasher
	n int64
	// err is the first write error: the Parquet writer reports it in its
	// own words, which lose the cause (a full disk).
	err error
}

func (h *hashWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if err != nil && h.err == nil {
		h.err = err
	}
	return n, err
}

// formatChecksum renders an xxh3-64 digest as the catalog stores it.
func formatChecksum(sum uint64) string { return fmt.Sprintf("xxh3:%016x", sum) }

// fileChecksum reads a whole file and returns its checksum and size.
func fileChecksum(path string) (string, int64, error) { return fileChecksumIn(nil, path) }

// fileChecksumIn is fileChecksum through root when it is set
// (files_root.go).
func fileChecksumIn(root *FileRoot, path string) (string, int64, error) {
	f, err := openFile(root, path)
	if err != nil {
		return "", 0, fileErr(path, err)
	}
	defer f.Close()
	h := xxh3.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, nferr.IOf("reading %s: %w", path, err)
	}
	return formatChecksum(h.Sum64()), n, nil
}

// recordChecksums fills f.FooterSum and every row group's chunk Sums
// from the file at path, whose footer is md: what scans check before they
// trust a footer or a chunk (integrity.go). It reads the file once, in
// order, and returns the whole-file checksum and size of the bytes it
// read: the sums and the whole-file checksum are of the same bytes, so a
// caller that finds the checksum it expects (a written file's, or an
// older catalog's, upgrade.go) knows the sums are of that file too.
func recordChecksums(path string, md *metadata.FileMetaData, f *File) (checksum string, size int64, err error) {
	return recordChecksumsIn(nil, path, md, f)
}

// recordChecksumsIn is recordChecksums through root when it is set
// (files_root.go).
func recordChecksumsIn(root *FileRoot, path string, md *metadata.FileMetaData, f *File) (checksum string, size int64, err error) {
	fh, err := openFile(root, path)
	if err != nil {
		return "", 0, fileErr(path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return "", 0, nferr.IOf("stat %s: %w", path, err)
	}
	size = st.Size()
	type chunk struct {
		rg, col       int
		start, length int64
	}
	chunks := make([]chunk, 0, len(f.RowGroups)*len(f.ColumnIndex))
	sums := make([][]uint64, len(f.RowGroups))
	for r := range f.RowGroups {
		rgm := md.RowGroup(r)
		sums[r] = make([]uint64, len(f.ColumnIndex))
		for i, pc := range f.ColumnIndex {
			cc, err := rgm.ColumnChunk(pc)
			if err != nil {
				return "", 0, nferr.Dataf("%s row group %d: %v", path, r, err)
			}
			start, length := chunkRange(cc)
			if start < 0 || length < 0 || start > size || length > size-start {
				return "", 0, nferr.Dataf("%s row group %d: column chunk at %d+%d lies outside the file of %d bytes", path, r, start, length, size)
			}
			chunks = append(chunks, chunk{r, i, start, length})
		}
	}
	sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].start < chunks[j].start })
	whole := xxh3.New()
	var buf []byte
	read := func(off, n int64) ([]byte, error) {
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := fh.ReadAt(b, off); err != nil {
			return nil, nferr.IOf("reading %s: %w", path, err)
		}
		return b, nil
	}
	// skipTo hashes the bytes between chunks (the leading magic, page
	// indexes) into the whole-file checksum, a block at a time.
	pos := int64(0)
	skipTo := func(end int64) error {
		for pos < end {
			b, err := read(pos, min(end-pos, 1<<20))
			if err != nil {
				return err
			}
			whole.Write(b)
			pos += int64(len(b))
		}
		return nil
	}
	for _, c := range chunks {
		if err := skipTo(c.start); err != nil {
			return "", 0, err
		}
		b, err := read(c.start, c.length)
		if err != nil {
			return "", 0, err
		}
		sums[c.rg][c.col] = xxh3.Hash(b)
		// Chunks do not overlap in a well-formed file; should they, each
		// byte still enters the whole-file checksum once.
		if end := c.start + c.length; end > pos {
			whole.Write(b[pos-c.start:])
			pos = end
		}
	}
	// The tail: the footer (and whatever precedes it after the last
	// chunk), read in one piece unless it is implausibly large.
	var tail []byte
	if size-pos <= 16<<20 {
		if tail, err = read(pos, size-pos); err != nil {
			return "", 0, err
		}
		whole.Write(tail)
		pos = size
	} else if err := skipTo(size); err != nil {
		return "", 0, err
	}
	var fsum uint64
	footer, ferr := footerBytes(bytes.NewReader(tail), int64(len(tail)))
	if ferr == nil {
		fsum = xxh3.Hash(footer)
	} else if fsum, err = footerSum(fh, size); err != nil {
		// The footer does not lie after the last chunk: only a broken
		// file is laid out so.
		return "", 0, nferr.Wrap(nferr.KindData, err, "%s", path)
	}
	if st, err := fh.Stat(); err != nil || st.Size() != size {
		return "", 0, nferr.Dataf("%s changed while it was being read", path)
	}
	f.FooterSum = fsum
	for r := range f.RowGroups {
		f.RowGroups[r].Sums = sums[r]
	}
	return formatChecksum(whole.Sum64()), size, nil
}

func fileErr(path string, err error) error {
	if _, ok := nferr.As(err); ok {
		return err // a file access root's refusal (files_root.go)
	}
	if os.IsNotExist(err) {
		return nferr.Dataf("data file %s is missing", path)
	}
	return nferr.IOf("opening %s: %w", path, err)
}

// parquetWriter writes Arrow records of one schema into one Parquet file
// with the low-level column writers: pqarrow cannot write decimal64, and the
// typed writers avoid its per-column conversions.
type parquetWriter struct {
	path string
	f    *os.File
	hw   *hashWriter
	// w is created by the first write (open), when the encoding of each
	// integer column can be chosen from its values (deltaColumns).
	w    *file.Writer
	ps   *schema.GroupNode
	opts WriteOptions
	kv   metadata.KeyValueMetadata
	// pending holds the first records (retained) until they are enough
	// to choose the encodings from (deltaSample rows or deltaSampleBytes),
	// or the file ends; pendRows and pendBytes are their size.
	pending   []arrow.RecordBatch
	pendRows  int64
	pendBytes int64
	sch       *arrow.Schema
	rg        file.BufferedRowGroupWriter
	rgRows    int64
	maxRG     int64
	rows      int64

	def  []int16
	rep  []int16
	i32  []int32
	i64  []int64
	f64  []float64
	b    []bool
	ba   []parquet.ByteArray
	flba []parquet.FixedLenByteArray
	fbuf []byte
}

func parquetSchema(sch *arrow.Schema) (*schema.GroupNode, error) {
	fields := make(schema.FieldList, sch.NumFields())
	for i, f := range sch.Fields() {
		n, err := parquetNode(f)
		if err != nil {
			return nil, err
		}
		fields[i] = n
	}
	return schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
}

// newParquetWriter creates path for rows of sch; meta are key-value pairs
// for the footer (footerTableKey, footerWriteKey: what `catalog recover`
// reads back).
func newParquetWriter(path string, sch *arrow.Schema, opts WriteOptions, meta ...[2]string) (*parquetWriter, error) {
	if _, err := parquetSchema(sch); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nferr.OS(err, "creating %s", path)
	}
	w, err := newParquetWriterOn(f, path, sch, opts, meta...)
	if err != nil {
		f.Close()
		os.Remove(path)
	}
	return w, err
}

// newParquetWriterOn writes into f, the new file at path (which the
// caller removes when this fails).
func newParquetWriterOn(f *os.File, path string, sch *arrow.Schema, opts WriteOptions, meta ...[2]string) (*parquetWriter, error) {
	ps, err := parquetSchema(sch)
	if err != nil {
		return nil, err
	}
	hw := &hashWriter{w: f, h: xxh3.New()}
	kv := intervalMetadata(sch)
	for _, m := range meta {
		if err := kv.Append(m[0], m[1]); err != nil {
			return nil, nferr.Internalf("parquet footer of %s: %v", path, err)
		}
	}
	return &parquetWriter{path: path, f: f, hw: hw, ps: ps, opts: opts, kv: kv, sch: sch, maxRG: opts.RowGroupRows}, nil
}

// open creates the Parquet writer, choosing the encoding of integer
// columns from recs, the first rows written, and writes them.
func (pw *parquetWriter) open() error {
	recs := pw.pending
	pw.pending = nil
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	props := []parquet.WriterProperty{
		parquet.WithCompression(pw.opts.codec()),
		parquet.WithStats(true),
		parquet.WithCreatedBy("nicflow"),
		// NB: the row group length is enforced by parquetWriter itself.
		parquet.WithMaxRowGroupLength(pw.opts.RowGroupRows),
	}
	for _, name := range deltaColumns(recs) {
		props = append(props, parquet.WithDictionaryFor(name, false), parquet.WithEncodingFor(name, parquet.Encodings.DeltaBinaryPacked))
	}
	wopts := []file.WriteOption{file.WithWriterProps(parquet.NewWriterProperties(props...))}
	if pw.kv != nil {
		wopts = append(wopts, file.WithWriteMetadata(pw.kv))
	}
	w, err := file.NewParquetWriterWithError(pw.hw, pw.ps, wopts...)
	if err != nil {
		return pw.failed("writing", nferr.Internalf("parquet writer for %s: %v", pw.path, err))
	}
	pw.w = w
	for _, r := range recs {
		if err := pw.writeRecord(r); err != nil {
			return err
		}
	}
	return nil
}

// deltaSample is how many of a column's first values deltaColumns looks
// at (the writer holds back up to that many rows, or deltaSampleBytes of
// them, before it starts), and deltaMinSample the fewest it decides on.
const (
	deltaSample      = 64 << 10
	deltaSampleBytes = 16 << 20
	deltaMinSample   = 1024
)

// deltaColumns names the integer columns (int32, int64, dates, times,
// timestamps, decimals on INT64) of recs to write DELTA_BINARY_PACKED
// rather than with a dictionary: those with more than one distinct value
// in 8 of their first non-NULL values (keys, prices, times). A
// dictionary of so many values costs more than it saves (arrow-go's
// writer then falls back to PLAIN, which only compression shrinks), where
// deltas take a few bytes a value and need no decompression (D73). Few
// distinct values (flags, dates, codes) keep their dictionary, which
// filters test once per distinct value.
func deltaColumns(recs []arrow.RecordBatch) []string {
	if len(recs) == 0 {
		return nil
	}
	var out []string
	for i, f := range recs[0].Schema().Fields() {
		var n, distinct int
		switch f.Type.ID() {
		case arrow.INT64, arrow.TIMESTAMP, arrow.TIME64, arrow.DECIMAL64:
			n, distinct = sampleDistinct[int64](recs, i)
		case arrow.INT32, arrow.DATE32:
			n, distinct = sampleDistinct[int32](recs, i)
		default:
			continue
		}
		if n >= deltaMinSample && distinct*8 > n {
			out = append(out, f.Name)
		}
	}
	return out
}

// sampleDistinct counts the first deltaSample non-NULL values of column
// c of recs (of values of type T) and how many distinct ones they hold.
func sampleDistinct[T int32 | int64](recs []arrow.RecordBatch, c int) (n, distinct int) {
	seen := make(map[T]struct{}, 1024)
	for _, r := range recs {
		col := r.Column(c)
		vals := fixedValues[T](col)
		for j := 0; j < col.Len() && n < deltaSample; j++ {
			if col.IsNull(j) {
				continue
			}
			n++
			seen[vals[j]] = struct{}{}
		}
	}
	return n, len(seen)
}

// write appends rec (which must have the writer's schema), cutting row
// groups at maxRG rows. The first rows are held back (retained) until
// they are enough to choose the integer columns' encodings from (open).
func (pw *parquetWriter) write(rec arrow.RecordBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = pw.failed("writing", nferr.Internalf("writing %s: parquet writer panicked: %v", pw.path, r))
		}
	}()
	if pw.w == nil {
		rec.Retain()
		pw.pending = append(pw.pending, rec)
		pw.pendRows += rec.NumRows()
		pw.pendBytes += int64(recordBytes(rec))
		if pw.pendRows < deltaSample && pw.pendBytes < deltaSampleBytes {
			return nil
		}
		return pw.open()
	}
	return pw.writeRecord(rec)
}

// writeRecord writes rec, cutting row groups at maxRG rows.
func (pw *parquetWriter) writeRecord(rec arrow.RecordBatch) (err error) {
	n := rec.NumRows()
	off := int64(0)
	for off < n {
		if pw.rg == nil {
			rg, err := pw.w.AppendBufferedRowGroupChecked()
			if err != nil {
				return pw.failed("writing", nferr.IOf("writing %s: %v", pw.path, err))
			}
			pw.rg, pw.rgRows = rg, 0
		}
		take := min(n-off, pw.maxRG-pw.rgRows)
		for c := 0; c < int(rec.NumCols()); c++ {
			cw, err := pw.rg.Column(c)
			if err != nil {
				return pw.failed("writing", nferr.IOf("writing %s: %v", pw.path, err))
			}
			if err := pw.writeColumn(cw, rec.Column(c), int(off), int(take)); err != nil {
				return pw.failed("writing", nferr.Wrap(nferr.KindIO, err, "writing column %s of %s", pw.sch.Field(c).Name, pw.path))
			}
		}
		pw.rgRows += take
		pw.rows += take
		off += take
		if pw.rgRows >= pw.maxRG {
			if err := pw.rg.Close(); err != nil {
				return pw.failed("writing", nferr.IOf("writing %s: %v", pw.path, err))
			}
			pw.rg = nil
		}
	}
	return nil
}

// defLevels fills pw.def for arr[off:off+n] and returns them with the
// number of non-null values, or nil when the column is required.
func (pw *parquetWriter) defLevels(cw file.ColumnChunkWriter, arr arrow.Array, off, n int) ([]int16, int) {
	if cw.Descr().MaxDefinitionLevel() == 0 {
		return nil, n
	}
	if cap(pw.def) < n {
		pw.def = make([]int16, n)
	}
	def := pw.def[:n]
	nn := 0
	for i := range def {
		if arr.IsValid(off + i) {
			def[i] = 1
			nn++
		} else {
			def[i] = 0
		}
	}
	return def, nn
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// fixedValues returns the values of a fixed-width array (its offset
// applied), without copying.
func fixedValues[T int32 | int64 | float64](arr arrow.Array) []T {
	d := arr.Data()
	return arrow.GetData[T](d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+d.Len()]
}

// validValues returns the values of src that are not NULL: src itself when
// hasNulls is false, else its nn valid values (those of arr's rows off+i)
// gathered into *buf, which is kept for reuse.
func validValues[T any](src []T, arr arrow.Array, off int, hasNulls bool, nn int, buf *[]T) []T {
	if !hasNulls {
		return src
	}
	vals := grow(*buf, nn)[:0]
	for i, v := range src {
		if arr.IsValid(off + i) {
			vals = append(vals, v)
		}
	}
	*buf = vals
	return vals
}

func (pw *parquetWriter) writeColumn(cw file.ColumnChunkWriter, arr arrow.Array, off, n int) error {
	if arr.Len() == 0 || n == 0 {
		return nil
	}
	if la, ok := arr.(*array.List); ok {
		return pw.writeList(cw, la, off, n)
	}
	def, nn := pw.defLevels(cw, arr, off, n)
	return pw.writeLeaf(cw, arr, off, n, nn, def, nil)
}

// writeList writes rows off..off+n of a list column: its levels (a NULL
// list, an empty one, then each element, NULL or not: listLevels) and its
// elements' values.
func (pw *parquetWriter) writeList(cw file.ColumnChunkWriter, la *array.List, off, n int) error {
	listDef, elemDef := listLevels(cw.Descr())
	maxDef := cw.Descr().MaxDefinitionLevel()
	child := la.ListValues()
	start, _ := la.ValueOffsets(off)
	_, end := la.ValueOffsets(off + n - 1)
	levels := n + int(end-start)
	pw.def = grow(pw.def, levels)[:0]
	pw.rep = grow(pw.rep, levels)[:0]
	nn := 0
	for i := off; i < off+n; i++ {
		if la.IsNull(i) {
			pw.def, pw.rep = append(pw.def, listDef-1), append(pw.rep, 0)
			continue
		}
		s, e := la.ValueOffsets(i)
		if s == e {
			pw.def, pw.rep = append(pw.def, listDef), append(pw.rep, 0)
			continue
		}
		for j := s; j < e; j++ {
			d := elemDef
			if child.IsValid(int(j)) {
				d = maxDef
				nn++
			}
			r := int16(1)
			if j == s {
				r = 0
			}
			pw.def, pw.rep = append(pw.def, d), append(pw.rep, r)
		}
	}
	if end == start {
		// Only NULL or empty lists: levels, no value.
		return pw.writeLeaf(cw, child, int(start), 0, 0, pw.def, pw.rep)
	}
	return pw.writeLeaf(cw, child, int(start), int(end-start), nn, pw.def, pw.rep)
}

// writeLeaf writes the values of arr's rows off..off+n that are not NULL
// (nn of them) with the levels def and rep (nil: none).
func (pw *parquetWriter) writeLeaf(cw file.ColumnChunkWriter, arr arrow.Array, off, n, nn int, def, rep []int16) error {
	if n == 0 {
		return writeLevels(cw, def, rep)
	}
	hasNulls := def != nil && nn < n
	valid := func(i int) bool { return !hasNulls || arr.IsValid(off+i) }
	var err error
	switch w := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		_, err = w.WriteBatch(validValues(fixedValues[int32](arr)[off:off+n], arr, off, hasNulls, nn, &pw.i32), def, rep)
	case *file.Int64ColumnChunkWriter:
		_, err = w.WriteBatch(validValues(fixedValues[int64](arr)[off:off+n], arr, off, hasNulls, nn, &pw.i64), def, rep)
	case *file.Float64ColumnChunkWriter:
		_, err = w.WriteBatch(validValues(fixedValues[float64](arr)[off:off+n], arr, off, hasNulls, nn, &pw.f64), def, rep)
	case *file.BooleanColumnChunkWriter:
		ba := arr.(*array.Boolean)
		pw.b = pw.b[:0]
		for i := 0; i < n; i++ {
			if valid(i) {
				pw.b = append(pw.b, ba.Value(off+i))
			}
		}
		_, err = w.WriteBatch(pw.b, def, rep)
	case *file.ByteArrayColumnChunkWriter:
		// utf8 or binary: the same offsets and bytes.
		sa, ok := arr.(interface {
			ValueOffsets() []int32
			ValueBytes() []byte
		})
		if !ok {
			return fmt.Errorf("unexpected array %s for BYTE_ARRAY", arr.DataType())
		}
		pw.ba = pw.ba[:0]
		offs := sa.ValueOffsets()
		data := sa.ValueBytes()
		base := offs[0] // NB: ValueBytes starts at the first value's offset
		for i := 0; i < n; i++ {
			if valid(i) {
				pw.ba = append(pw.ba, parquet.ByteArray(data[offs[off+i]-base:offs[off+i+1]-base]))
			}
		}
		_, err = w.WriteBatch(pw.ba, def, rep)
	case *file.FixedLenByteArrayColumnChunkWriter:
		var value func(i int) decimal128.Num
		switch da := arr.(type) {
		case *array.Decimal128:
			value = da.Value
		case *array.MonthDayNanoInterval:
			value = func(i int) decimal128.Num { return intervalNum(da.Value(i)) }
		default:
			return fmt.Errorf("unexpected array %s for FIXED_LEN_BYTE_ARRAY", arr.DataType())
		}
		pw.fbuf = grow(pw.fbuf, 16*nn)
		pw.flba = pw.flba[:0]
		k := 0
		for i := 0; i < n; i++ {
			if valid(i) {
				v := value(off + i)
				b := pw.fbuf[16*k : 16*k+16]
				binary.BigEndian.PutUint64(b[0:8], uint64(v.HighBits()))
				binary.BigEndian.PutUint64(b[8:16], v.LowBits())
				pw.flba = append(pw.flba, b)
				k++
			}
		}
		_, err = w.WriteBatch(pw.flba, def, rep)
	default:
		return fmt.Errorf("unsupported parquet column writer %T", cw)
	}
	return err
}

// writeLevels writes levels without values (lists all NULL or empty).
func writeLevels(cw file.ColumnChunkWriter, def, rep []int16) error {
	var err error
	switch w := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		_, err = w.WriteBatch(nil, def, rep)
	case *file.Int64ColumnChunkWriter:
		_, err = w.WriteBatch(nil, def, rep)
	case *file.Float64ColumnChunkWriter:
		_, err = w.WriteBatch(nil, def, rep)
	case *file.BooleanColumnChunkWriter:
		_, err = w.WriteBatch(nil, def, rep)
	case *file.ByteArrayColumnChunkWriter:
		_, err = w.WriteBatch(nil, def, rep)
	case *file.FixedLenByteArrayColumnChunkWriter:
		_, err = w.WriteBatch(nil, def, rep)
	default:
		return fmt.Errorf("unsupported parquet column writer %T", cw)
	}
	return err
}

// finish closes the file (footer, fsync) and returns its size, checksum
// and footer metadata.
func (pw *parquetWriter) finish() (size int64, checksum string, md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = pw.failed("closing", nferr.Internalf("closing %s: parquet writer panicked: %v", pw.path, r))
		}
	}()
	if pw.w == nil {
		if err := pw.open(); err != nil {
			pw.f.Close()
			return 0, "", nil, err
		}
	}
	if pw.rg != nil {
		if err := pw.rg.Close(); err != nil {
			pw.f.Close()
			return 0, "", nil, pw.failed("writing", nferr.IOf("writing %s: %v", pw.path, err))
		}
		pw.rg = nil
	}
	if err := pw.w.Close(); err != nil {
		pw.f.Close()
		return 0, "", nil, pw.failed("writing", nferr.IOf("writing %s: %v", pw.path, err))
	}
	md, err = pw.w.FileMetadata()
	if err != nil {
		pw.f.Close()
		return 0, "", nil, nferr.Internalf("footer of %s: %v", pw.path, err)
	}
	if err := pw.f.Sync(); err != nil {
		pw.f.Close()
		return 0, "", nil, nferr.OS(err, "syncing %s", pw.path)
	}
	if err := pw.f.Close(); err != nil {
		return 0, "", nil, nferr.OS(err, "closing %s", pw.path)
	}
	return pw.hw.n, formatChecksum(pw.hw.h.Sum64()), md, nil
}

// failed is the error of a failed write: the file's own write error when
// there was one (a full disk is KindResource), else err.
func (pw *parquetWriter) failed(op string, err error) error {
	if pw.hw.err != nil {
		return nferr.OS(pw.hw.err, "%s %s", op, pw.path)
	}
	return err
}

// abort closes and removes a file that will not be committed.
func (pw *parquetWriter) abort() {
	for _, r := range pw.pending {
		r.Release()
	}
	pw.pending = nil
	if pw.f != nil {
		pw.f.Close()
	}
	os.Remove(pw.path)
}

// ---------------------------------------------------------------------------
// Footers -> catalog metadata.

// readFooter opens path and parses its Parquet footer, containing panics of
// the decoder.
func readFooter(path string) (md *metadata.FileMetaData, size int64, err error) {
	return readFooterIn(nil, path)
}

// readFooterIn is readFooter through root when it is set (files_root.go).
func readFooterIn(root *FileRoot, path string) (md *metadata.FileMetaData, size int64, err error) {
	f, err := openFile(root, path)
	if err != nil {
		return nil, 0, fileErr(path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, nferr.IOf("stat %s: %w", path, err)
	}
	md, err = parseFooter(path, f)
	return md, st.Size(), err
}

// parseFooter parses the footer of the Parquet file r (named path in
// errors), containing panics of the decoder.
func parseFooter(path string, r parquet.ReaderAtSeeker) (md *metadata.FileMetaData, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			md, err = nil, nferr.Dataf("%s is not a readable Parquet file (corrupt footer: %v)", path, rec)
		}
	}()
	rdr, err := file.NewParquetReader(r)
	if err != nil {
		return nil, nferr.Dataf("%s is not a readable Parquet file: %v", path, err)
	}
	md = rdr.MetaData()
	return md, nil
}

// schemaOfFooter derives the table schema of a Parquet file: the columns
// nicflow reads, in file order (unreadableOfFooter lists the others). A
// file with none of them is KindData naming why.
func schemaOfFooter(path string, md *metadata.FileMetaData) (*arrow.Schema, error) {
	cols := footerColumns(path, md)
	fs := make([]arrow.Field, 0, len(cols))
	for _, c := range cols {
		if c.bad == nil {
			fs = append(fs, arrow.Field{Name: c.name, Type: c.typ, Nullable: c.nullable})
		}
	}
	if len(fs) == 0 {
		if len(cols) > 0 {
			return nil, nferr.Dataf("%s has no column nicflow reads: %v", path, cols[0].bad.Err())
		}
		return nil, nferr.Dataf("%s has no columns", path)
	}
	return arrow.NewSchema(fs, nil), nil
}

// fileFromFooter fills a File's row groups and statistics from a footer,
// matching the file's columns to the table's by name and checking types.
func fileFromFooter(path string, md *metadata.FileMetaData, cols []Column) (*File, error) {
	sc := md.Schema
	f := &File{Rows: md.NumRows, ColumnIndex: make([]int, len(cols))}
	ivs := intervalColumns(md)
	for i, c := range cols {
		want, err := ParseType(c.Type)
		if err != nil {
			return nil, err
		}
		idx := -1
		for j := 0; j < sc.NumColumns(); j++ {
			if strings.EqualFold(sc.Column(j).ColumnPath()[0], c.Name) {
				idx = j
				break
			}
		}
		if idx < 0 {
			return nil, nferr.Dataf("%s has no column %s", path, c.Name)
		}
		var got arrow.DataType
		if lt, ok := listColumn(sc, idx); ok {
			got = lt
		} else if len(sc.Column(idx).ColumnPath()) > 1 || sc.Column(idx).MaxRepetitionLevel() > 0 {
			return nil, fileColumnUnreadable(path, md, sc.Column(idx).ColumnPath()[0])
		} else if got, err = arrowTypeOfColumn(sc.Column(idx), ivs); err != nil {
			return nil, fileColumnUnreadable(path, md, sc.Column(idx).ColumnPath()[0])
		}
		if !arrow.TypeEqual(got, want) {
			return nil, nferr.Dataf("%s: column %s has type %s, the table says %s", path, c.Name, got, c.Type)
		}
		if !c.Nullable && sc.Column(idx).MaxDefinitionLevel() > 0 {
			// A nullable file column in a NOT NULL table column: accepted
			// only if the statistics prove there are no nulls (checked
			// below).
		}
		f.ColumnIndex[i] = idx
	}
	for r := 0; r < md.NumRowGroups(); r++ {
		rgm := md.RowGroup(r)
		rg := RowGroup{Rows: rgm.NumRows(), Bytes: rgm.TotalCompressedSize(), Columns: make([]ColumnStats, len(cols))}
		if rg.Bytes == 0 {
			rg.Bytes = rgm.TotalByteSize()
		}
		for i, c := range cols {
			cc, err := rgm.ColumnChunk(f.ColumnIndex[i])
			if err != nil {
				return nil, nferr.Dataf("%s row group %d column %s: %v", path, r, c.Name, err)
			}
			st, err := statsOf(cc, c, sc.Column(f.ColumnIndex[i]))
			if err != nil {
				return nil, nferr.Dataf("%s row group %d column %s: %v", path, r, c.Name, err)
			}
			if !c.Nullable && st.Nulls > 0 {
				return nil, nferr.Dataf("%s row group %d: column %s holds %d nulls but is NOT NULL", path, r, c.Name, st.Nulls)
			}
			rg.Columns[i] = st
		}
		f.RowGroups = append(f.RowGroups, rg)
	}
	return f, nil
}

// fileColumnUnreadable is the error of a table column matched to the
// file column name, which nicflow does not read.
func fileColumnUnreadable(path string, md *metadata.FileMetaData, name string) error {
	for _, c := range footerColumns(path, md) {
		if c.name == name && c.bad != nil {
			return c.bad.Err()
		}
	}
	return nferr.Dataf("%s: column %s cannot be read", path, name)
}

func statsOf(cc *metadata.ColumnChunkMetaData, c Column, descr *schema.Column) (st ColumnStats, err error) {
	st.Nulls = -1 // unknown until proven
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt statistics: %v", r)
		}
	}()
	if descr.MaxRepetitionLevel() > 0 {
		// A list's leaf statistics are its elements': they say nothing
		// of its rows (their null count counts empty lists and NULL
		// elements too).
		return st, nil
	}
	ok, err := cc.StatsSet()
	if err != nil || !ok {
		return st, nil
	}
	ts, err := cc.Statistics()
	if err != nil || ts == nil {
		return st, nil
	}
	if ts.HasNullCount() {
		st.Nulls = ts.NullCount()
	}
	if ts.HasDistinctCount() {
		st.Distinct = ts.DistinctCount()
	}
	if !ts.HasMinMax() {
		return st, nil
	}
	if lt, ok := descr.LogicalType().(schema.IntLogicalType); ok && !lt.IsSigned() {
		// Unsigned minima and maxima read as signed would be wrong past
		// 2^31 (2^63); older writers ordered them as signed, too.
		return st, nil
	}
	t, err := ParseType(c.Type)
	if err != nil {
		return st, err
	}
	if t.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return st, nil // 16 bytes that do not order as intervals do
	}
	scale := decimalScale(t)
	mul, div, int96 := timestampScale(descr)
	if int96 {
		return st, nil // INT96 statistics have no defined order
	}
	mk := func(v int64) *Value {
		switch t.ID() {
		case arrow.DATE32:
			x := Date(int32(v))
			return &x
		case arrow.TIMESTAMP:
			w := []int64{v}
			scaleTimestamps(w, mul, div)
			x := Timestamp(w[0])
			return &x
		case arrow.TIME64:
			w := []int64{v}
			scaleTimestamps(w, mul, div)
			x := Time(w[0])
			return &x
		case arrow.DECIMAL64:
			x := Decimal(v, scale)
			return &x
		}
		x := Int(v)
		return &x
	}
	switch s := ts.(type) {
	case *metadata.Int32Statistics:
		st.Min, st.Max = mk(int64(s.Min())), mk(int64(s.Max()))
	case *metadata.Int64Statistics:
		st.Min, st.Max = mk(s.Min()), mk(s.Max())
	case *metadata.Float64Statistics:
		lo, hi := Float(s.Min()), Float(s.Max())
		st.Min, st.Max = &lo, &hi
	case *metadata.Float32Statistics:
		lo, hi := Float(float64(s.Min())), Float(float64(s.Max()))
		st.Min, st.Max = &lo, &hi
	case *metadata.BooleanStatistics:
		lo, hi := Bool(s.Min()), Bool(s.Max())
		st.Min, st.Max = &lo, &hi
	case *metadata.ByteArrayStatistics:
		if t.ID() != arrow.STRING {
			// NB: bytea keeps no bounds: catalog values are text, and
			// no predicate on bytea reaches storage.
			return st, nil
		}
		lo := string(s.Min())
		if len(lo) > maxStatString {
			lo = lo[:maxStatString]
		}
		l := Str(lo)
		st.Min = &l
		if hi := string(s.Max()); len(hi) <= maxStatString {
			h := Str(hi)
			st.Max = &h
		}
	case *metadata.FixedLenByteArrayStatistics:
		if _, uuid := descr.LogicalType().(schema.UUIDLogicalType); uuid && t.ID() == arrow.STRING {
			// UUIDs order as unsigned bytes, as their hex text does.
			if len(s.Min()) == 16 && len(s.Max()) == 16 {
				lo, hi := Str(string(appendUUID(nil, s.Min()))), Str(string(appendUUID(nil, s.Max())))
				st.Min, st.Max = &lo, &hi
			}
			return st, nil
		}
		if t.ID() != arrow.DECIMAL64 && t.ID() != arrow.DECIMAL128 {
			// NB: FLOAT16, Parquet intervals and bytea keep no bounds
			// here (their bytes do not order as their values do).
			return st, nil
		}
		lo, ok1 := beDecimal(s.Min())
		hi, ok2 := beDecimal(s.Max())
		if !ok1 || !ok2 {
			return st, nil
		}
		if t.ID() == arrow.DECIMAL64 {
			if !lo.IsInt64() || !hi.IsInt64() {
				return st, nil
			}
			st.Min, st.Max = mk(lo.Int64()), mk(hi.Int64())
		} else {
			l := Value{Kind: KindDecimal128, Str: lo.String(), Scale: scale}
			h := Value{Kind: KindDecimal128, Str: hi.String(), Scale: scale}
			st.Min, st.Max = &l, &h
		}
	}
	return st, nil
}

// beDecimal decodes a big-endian two's complement integer.
func beDecimal(b []byte) (*big.Int, bool) {
	if len(b) == 0 || len(b) > 16 {
		return nil, false
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v, true
}

// beToDecimal128 decodes a big-endian FLBA decimal of up to 16 bytes.
func beToDecimal128(b []byte) decimal128.Num {
	var buf [16]byte
	fill := byte(0)
	if len(b) > 0 && b[0]&0x80 != 0 {
		fill = 0xff
	}
	for i := 0; i < 16-len(b); i++ {
		buf[i] = fill
	}
	copy(buf[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:]))
}

// ---------------------------------------------------------------------------
// Column decoding: Parquet column chunk -> vector.

// colDecoder reads one column chunk of one row group into vectors. The
// conversion from the Parquet physical type to the vector kind is chosen
// once, when the decoder is built.
type colDecoder struct {
	name     string
	kind     physKind
	maxDef   int16
	maxRep   int16 // a list's element: levels, not rows (listDecoder)
	rep      []int16
	unsigned bool
	r        file.ColumnChunkReader
	i32r     *file.Int32ColumnChunkReader
	i64r     *file.Int64ColumnChunkReader
	f32r     *file.Float32ColumnChunkReader
	f64r     *file.Float64ColumnChunkReader
	br       *file.BooleanColumnChunkReader
	bar      *file.ByteArrayColumnChunkReader
	flr      *file.FixedLenByteArrayColumnChunkReader
	i96r     *file.Int96ColumnChunkReader
	// tsMul, tsDiv convert timestamps to microseconds (timestampScale).
	tsMul, tsDiv int64
	def          []int16
	s96          []parquet.Int96
	s32          []int32
	sf32         []float32
	sba          []parquet.ByteArray
	sfl          []parquet.FixedLenByteArray
	// flba is how FIXED_LEN_BYTE_ARRAY values convert (fillFLBA).
	flba flbaForm
}

// flbaForm is what a FIXED_LEN_BYTE_ARRAY column's values are.
type flbaForm uint8

const (
	flbaDecimal    flbaForm = iota // big-endian two's complement (DECIMAL)
	flbaInterval16                 // nicflow's interval: the decimal128 of Arrow's month-day-nano memory
	flbaInterval12                 // Parquet's INTERVAL: little-endian uint32 months, days, milliseconds
	flbaUUID                       // 16 bytes, as text 8-4-4-4-12
	flbaFloat16                    // IEEE half precision, little-endian
	flbaBytes                      // bytea
)

func newColDecoder(r file.ColumnChunkReader, t arrow.DataType, name string) (*colDecoder, error) {
	d := &colDecoder{name: name, kind: kindOf(t), maxDef: r.Descriptor().MaxDefinitionLevel(), r: r}
	d.tsMul, d.tsDiv, _ = timestampScale(r.Descriptor())
	if lt, ok := r.Descriptor().LogicalType().(schema.IntLogicalType); ok && !lt.IsSigned() {
		d.unsigned = true // UINT_32 read as int64, UINT_64 as decimal(20,0)
	}
	ok := false
	switch rr := r.(type) {
	case *file.Int32ColumnChunkReader:
		d.i32r, ok = rr, d.kind == kInt32 || d.kind == kInt64
	case *file.Int64ColumnChunkReader:
		d.i64r, ok = rr, d.kind == kInt64 || d.kind == kDec128 && d.unsigned
	case *file.Float32ColumnChunkReader:
		d.f32r, ok = rr, d.kind == kFloat64
	case *file.Float64ColumnChunkReader:
		d.f64r, ok = rr, d.kind == kFloat64
	case *file.BooleanColumnChunkReader:
		d.br, ok = rr, d.kind == kBool
	case *file.ByteArrayColumnChunkReader:
		d.bar, ok = rr, d.kind == kString
	case *file.FixedLenByteArrayColumnChunkReader:
		d.flr, ok = rr, true
		d.flba = flbaDecimal
		switch lt := r.Descriptor().LogicalType(); {
		case t.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
			// nicflow's 16-byte interval reads as a decimal128 does;
			// Parquet's own is 12 bytes.
			if r.Descriptor().TypeLength() == 12 {
				d.flba = flbaInterval12
			}
			ok = r.Descriptor().TypeLength() == 12 || r.Descriptor().TypeLength() == 16
		case d.kind == kString:
			d.flba = flbaBytes
			if _, isUUID := lt.(schema.UUIDLogicalType); isUUID {
				d.flba = flbaUUID
				ok = t.ID() == arrow.STRING && r.Descriptor().TypeLength() == 16
			}
		case d.kind == kFloat64:
			d.flba = flbaFloat16
			ok = r.Descriptor().TypeLength() == 2
		default:
			ok = d.kind == kInt64 || d.kind == kDec128
		}
	case *file.Int96ColumnChunkReader:
		d.i96r, ok = rr, t.ID() == arrow.TIMESTAMP
	}
	if !ok {
		return nil, nferr.Dataf("column %s: Parquet type %s cannot be read as %s", name, r.Type(), t)
	}
	return d, nil
}

// read decodes the next n rows into v (of a repeated column, n levels:
// each slot of v one level, valid where a value is; d.def and d.rep keep
// the levels).
func (d *colDecoder) read(v *vector, n int) error {
	v.kind, v.n = d.kind, n
	v.dict = nil
	var def, rep []int16
	if d.maxDef > 0 {
		d.def = grow(d.def, n)
		def = d.def
	}
	if d.maxRep > 0 {
		d.rep = grow(d.rep, n)
		rep = d.rep
	}
	var total int64
	var nv int
	var err error
	switch {
	case d.i32r != nil && d.kind == kInt32:
		v.i32 = grow(v.i32, n)
		total, nv, err = d.i32r.ReadBatch(int64(n), v.i32, def, rep)
		if err == nil && nv < n {
			spread(v.i32[:n], def[:total], nv, d.maxDef)
		}
	case d.i32r != nil: // INT32 decimal, unsigned or TIME(MILLIS) widened to int64
		d.s32 = grow(d.s32, n)
		v.i64 = grow(v.i64, n)
		total, nv, err = d.i32r.ReadBatch(int64(n), d.s32, def, rep)
		if d.unsigned {
			for i := 0; i < nv; i++ {
				v.i64[i] = int64(uint32(d.s32[i]))
			}
		} else {
			for i := 0; i < nv; i++ {
				v.i64[i] = int64(d.s32[i])
			}
		}
		scaleTimestamps(v.i64[:nv], d.tsMul, d.tsDiv) // TIME(MILLIS)
		if err == nil && nv < n {
			spread(v.i64[:n], def[:total], nv, d.maxDef)
		}
	case d.i64r != nil && d.kind == kDec128: // UINT_64
		v.i64 = grow(v.i64, n)
		v.d128 = grow(v.d128, n)
		total, nv, err = d.i64r.ReadBatch(int64(n), v.i64, def, rep)
		for i := 0; i < nv; i++ {
			v.d128[i] = decimal128.FromU64(uint64(v.i64[i]))
		}
		if err == nil && nv < n {
			spread(v.d128[:n], def[:total], nv, d.maxDef)
		}
	case d.i64r != nil:
		v.i64 = grow(v.i64, n)
		total, nv, err = d.i64r.ReadBatch(int64(n), v.i64, def, rep)
		scaleTimestamps(v.i64[:nv], d.tsMul, d.tsDiv)
		if err == nil && nv < n {
			spread(v.i64[:n], def[:total], nv, d.maxDef)
		}
	case d.i96r != nil:
		d.s96 = grow(d.s96, n)
		v.i64 = grow(v.i64, n)
		total, nv, err = d.i96r.ReadBatch(int64(n), d.s96, def, rep)
		for i := 0; i < nv; i++ {
			v.i64[i] = int96Micros(d.s96[i])
		}
		if err == nil && nv < n {
			spread(v.i64[:n], def[:total], nv, d.maxDef)
		}
	case d.f64r != nil:
		v.f64 = grow(v.f64, n)
		total, nv, err = d.f64r.ReadBatch(int64(n), v.f64, def, rep)
		if err == nil && nv < n {
			spread(v.f64[:n], def[:total], nv, d.maxDef)
		}
	case d.f32r != nil:
		d.sf32 = grow(d.sf32, n)
		v.f64 = grow(v.f64, n)
		total, nv, err = d.f32r.ReadBatch(int64(n), d.sf32, def, rep)
		for i := 0; i < nv; i++ {
			v.f64[i] = float64(d.sf32[i])
		}
		if err == nil && nv < n {
			spread(v.f64[:n], def[:total], nv, d.maxDef)
		}
	case d.br != nil:
		v.b = grow(v.b, n)
		total, nv, err = d.br.ReadBatch(int64(n), v.b, def, rep)
		if err == nil && nv < n {
			spread(v.b[:n], def[:total], nv, d.maxDef)
		}
	case d.bar != nil:
		d.sba = grow(d.sba, n)
		total, nv, err = d.bar.ReadBatch(int64(n), d.sba, def, rep)
		if err == nil {
			d.fillStrings(v, n, def[:min(int(total), len(def))], nv)
		}
	case d.flr != nil:
		d.sfl = grow(d.sfl, n)
		total, nv, err = d.flr.ReadBatch(int64(n), d.sfl, def, rep)
		if err == nil {
			err = d.fillFLBA(v, n, def[:min(int(total), len(def))], nv)
		}
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), "column ") {
			return err
		}
		return fmt.Errorf("column %s: %v", d.name, err)
	}
	if d.maxDef == 0 {
		total = int64(nv)
	}
	if total != int64(n) {
		return fmt.Errorf("column %s: expected %d values, the column chunk holds %d", d.name, n, total)
	}
	if nv < n {
		v.valid = grow(v.valid, n)
		for i, l := range def[:n] {
			v.valid[i] = l == d.maxDef
		}
	} else {
		v.valid = nil
	}
	return nil
}

// spread moves nv dense values to their row positions given definition
// levels (those at maxDef hold a value; back to front, in place); null
// slots keep the zero value.
func spread[T any](vals []T, def []int16, nv int, maxDef int16) {
	var zero T
	j := nv - 1
	for i := len(def) - 1; i >= 0; i-- {
		if def[i] == maxDef {
			vals[i] = vals[j]
			j--
		} else {
			vals[i] = zero
		}
	}
}

func (d *colDecoder) fillStrings(v *vector, n int, def []int16, nv int) {
	v.offs = grow(v.offs, n+1)
	size := 0
	for _, s := range d.sba[:nv] {
		size += len(s)
	}
	if cap(v.data) < size {
		v.data = make([]byte, 0, size+size/4)
	}
	v.data = v.data[:0]
	v.offs[0] = 0
	if nv == n {
		for i, s := range d.sba[:n] {
			v.data = append(v.data, s...)
			v.offs[i+1] = int32(len(v.data))
		}
		return
	}
	j := 0
	for i := 0; i < n; i++ {
		if i < len(def) && def[i] == d.maxDef {
			v.data = append(v.data, d.sba[j]...)
			j++
		}
		v.offs[i+1] = int32(len(v.data))
	}
}

func (d *colDecoder) fillFLBA(v *vector, n int, def []int16, nv int) error {
	switch d.flba {
	case flbaUUID, flbaBytes:
		d.fillFLBAStrings(v, n, def, nv)
		return nil
	case flbaFloat16:
		v.f64 = grow(v.f64, n)
		j := 0
		for i := 0; i < n; i++ {
			if nv != n && !(i < len(def) && def[i] == d.maxDef) {
				v.f64[i] = 0
				continue
			}
			b := d.sfl[j]
			j++
			if len(b) != 2 {
				return fmt.Errorf("column %s: FLOAT16 value of %d bytes", d.name, len(b))
			}
			v.f64[i] = float64(float16.FromBits(binary.LittleEndian.Uint16(b)).Float32())
		}
		return nil
	case flbaInterval12:
		v.d128 = grow(v.d128, n)
		j := 0
		for i := 0; i < n; i++ {
			if nv != n && !(i < len(def) && def[i] == d.maxDef) {
				v.d128[i] = decimal128.Num{}
				continue
			}
			b := d.sfl[j]
			j++
			if len(b) != 12 {
				return fmt.Errorf("column %s: INTERVAL value of %d bytes", d.name, len(b))
			}
			v.d128[i] = parquetInterval(b)
		}
		return nil
	}
	if d.kind == kInt64 {
		v.i64 = grow(v.i64, n)
	} else {
		v.d128 = grow(v.d128, n)
	}
	j := 0
	for i := 0; i < n; i++ {
		present := nv == n || (i < len(def) && def[i] == d.maxDef)
		if !present {
			if d.kind == kInt64 {
				v.i64[i] = 0
			} else {
				v.d128[i] = decimal128.Num{}
			}
			continue
		}
		b := d.sfl[j]
		j++
		num := beToDecimal128(b)
		if d.kind == kInt64 {
			if num.HighBits() != int64(num.LowBits())>>63 {
				return fmt.Errorf("column %s: decimal value does not fit 64 bits", d.name)
			}
			v.i64[i] = int64(num.LowBits())
		} else {
			v.d128[i] = num
		}
	}
	return nil
}

// fillFLBAStrings fills a text or bytea vector from FIXED_LEN_BYTE_ARRAY
// values: UUIDs in their canonical text form, other bytes as they are.
func (d *colDecoder) fillFLBAStrings(v *vector, n int, def []int16, nv int) {
	v.offs = grow(v.offs, n+1)
	size := 0
	for _, s := range d.sfl[:nv] {
		size += len(s)
	}
	if d.flba == flbaUUID {
		size = 36 * nv
	}
	if cap(v.data) < size {
		v.data = make([]byte, 0, size+size/4)
	}
	v.data = v.data[:0]
	v.offs[0] = 0
	j := 0
	for i := 0; i < n; i++ {
		if nv == n || (i < len(def) && def[i] == d.maxDef) {
			if d.flba == flbaUUID {
				v.data = appendUUID(v.data, d.sfl[j])
			} else {
				v.data = append(v.data, d.sfl[j]...)
			}
			j++
		}
		v.offs[i+1] = int32(len(v.data))
	}
}

// skip discards the next n rows.
func (d *colDecoder) skip(n int) error {
	var err error
	switch {
	case d.i32r != nil:
		_, err = d.i32r.Skip(int64(n))
	case d.i64r != nil:
		_, err = d.i64r.Skip(int64(n))
	case d.f64r != nil:
		_, err = d.f64r.Skip(int64(n))
	case d.f32r != nil:
		_, err = d.f32r.Skip(int64(n))
	case d.br != nil:
		_, err = d.br.Skip(int64(n))
	case d.bar != nil:
		_, err = d.bar.Skip(int64(n))
	case d.flr != nil:
		_, err = d.flr.Skip(int64(n))
	case d.i96r != nil:
		_, err = d.i96r.Skip(int64(n))
	}
	if err != nil {
		return fmt.Errorf("column %s: %v", d.name, err)
	}
	return nil
}

var _ = bitutil.BitIsSet

// addDistinctFromDictionaries fills ColumnStats.Distinct from dictionary
// pages: when every data page of a column chunk is dictionary-encoded, the
// dictionary holds exactly the chunk's distinct non-null values. Only the
// dictionary page is read (a buffered stream, not the whole chunk).
// Failures leave the estimate unknown: it is an optimization.
func addDistinctFromDictionaries(path string, md *metadata.FileMetaData, f *File) {
	addDistinctFromDictionariesIn(nil, path, md, f)
}

// addDistinctFromDictionariesIn is addDistinctFromDictionaries through
// root when it is set (files_root.go).
func addDistinctFromDictionariesIn(root *FileRoot, path string, md *metadata.FileMetaData, f *File) {
	osf, err := openFile(root, path)
	if err != nil {
		return
	}
	defer osf.Close()
	defer func() { recover() }() // a corrupt page header only loses the estimate
	props := parquet.NewReaderProperties(nil)
	props.BufferedStreamEnabled = true
	props.BufferSize = 64 << 10 // grows as the dictionary page needs
	rdr, err := file.NewParquetReader(osf, file.WithMetadata(md), file.WithReadProps(props))
	if err != nil {
		return
	}
	for r := range f.RowGroups {
		rg := rdr.RowGroup(r)
		for c, pc := range f.ColumnIndex {
			cc, err := rg.MetaData().ColumnChunk(pc)
			if err != nil || !cc.HasDictionaryPage() || !allDictEncoded(cc) || md.Schema.Column(pc).MaxRepetitionLevel() > 0 {
				// NB: a list's dictionary holds its elements, not its rows.
				continue
			}
			pr, err := rg.GetColumnPageReader(pc)
			if err != nil || !pr.Next() {
				continue
			}
			if p := pr.Page(); p != nil && p.Type() == file.PageTypeDictionaryPage {
				f.RowGroups[r].Columns[c].Distinct = int64(p.NumValues())
			}
		}
	}
}

func allDictEncoded(cc *metadata.ColumnChunkMetaData) bool {
	es := cc.EncodingStats()
	if len(es) == 0 {
		return false // unknown: a writer may have fallen back to PLAIN
	}
	for _, s := range es {
		if s.PageType == file.PageTypeDataPage || s.PageType == file.PageTypeDataPageV2 {
			if s.Encoding != parquet.Encodings.PlainDict && s.Encoding != parquet.Encodings.RLEDict {
				return false
			}
		}
	}
	return true
}
