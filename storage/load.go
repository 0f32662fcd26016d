package storage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/internal/pgarray"
)

// CopyOptions describe an input file for Copy (COPY t FROM 'file').
type CopyOptions struct {
	// Format: "csv", "tbl" (dbgen: '|'-separated with a trailing '|') or
	// "parquet". Empty: from the file extension (.csv, .tbl, .parquet).
	Format string
	// Delimiter separates fields (csv default ',', tbl default '|').
	Delimiter byte
	// Header: the first line holds column names (csv only) and is skipped.
	Header bool
	// Null is the text of a NULL field (default: the empty field). Only
	// nullable columns accept NULLs.
	Null string
	// Quote encloses csv fields that hold delimiters, line breaks or
	// quotes (doubled inside); 0 is '"'.
	Quote byte
	// ParseTimestampTZ, when set, reads TIMESTAMPTZ fields (the session
	// time zone's reader: a wall clock without an offset is in that
	// zone); nil reads them in UTC.
	ParseTimestampTZ func(b []byte) (us int64, ok, inRange bool)
	// Replace replaces the table's rows instead of appending.
	Replace bool
	// BatchRows is the number of rows parsed per record (default 65536).
	BatchRows int
	// Check, when set, sees every parsed record before it is appended (the
	// engine's CHECK constraints); its error fails the COPY, which then
	// leaves the table as it was.
	Check func(arrow.RecordBatch) error
	// Root, when set, is the file access root the input files open
	// through (files_root.go): a path leading outside it is refused.
	Root *FileRoot
}

// appendChecked appends rec after o.Check accepts it.
func (o *CopyOptions) appendChecked(app *Appender, rec arrow.RecordBatch) error {
	if o.Check != nil {
		if err := o.Check(rec); err != nil {
			return err
		}
	}
	return app.Append(rec)
}

// Validate fills defaults from the file name and checks the options.
func (o *CopyOptions) Validate(path string) error {
	if o.Format == "" {
		ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(path, compressedExt(path))))
		switch ext {
		case ".csv":
			o.Format = "csv"
		case ".tbl":
			o.Format = "tbl"
		case ".parquet":
			o.Format = "parquet"
		default:
			return nferr.Queryf("cannot tell the format of %s from its extension; give one (csv, tbl or parquet)", path)
		}
	}
	o.Format = strings.ToLower(o.Format)
	switch o.Format {
	case "csv":
		if o.Delimiter == 0 {
			o.Delimiter = ','
		}
	case "tbl":
		if o.Delimiter == 0 {
			o.Delimiter = '|'
		}
		if o.Header {
			return nferr.Queryf("tbl files have no header line")
		}
	case "text":
		// PostgreSQL's COPY text format: tab-separated, \N for NULL,
		// backslash escapes.
		if o.Delimiter == 0 {
			o.Delimiter = '\t'
		}
		if o.Null == "" {
			o.Null = `\N`
		}
		if o.Delimiter == '\\' {
			return nferr.Queryf("invalid delimiter %q for the text format", o.Delimiter)
		}
	case "parquet":
	default:
		return nferr.Queryf("unknown format %q (want csv, tbl, text or parquet)", o.Format)
	}
	if o.Delimiter == o.quote() || o.Delimiter == '\n' || o.Delimiter == '\r' {
		return nferr.Queryf("invalid delimiter %q", o.Delimiter)
	}
	if q := o.quote(); q == '\n' || q == '\r' {
		return nferr.Queryf("invalid quote %q", q)
	}
	if o.BatchRows <= 0 {
		o.BatchRows = 64 << 10
	}
	return nil
}

// Copy loads files into an existing table atomically: either all rows of
// all files are committed, or (on any bad row, error or crash) none, and
// no file is left behind. It returns the number of rows loaded.
func (db *DB) Copy(ctx context.Context, table string, paths []string, opts CopyOptions) (int64, error) {
	if len(paths) == 0 {
		return 0, nferr.Queryf("copy into %s: no input files", table)
	}
	for _, p := range paths {
		o := opts
		if err := o.Validate(p); err != nil {
			return 0, err
		}
	}
	app, err := db.NewAppender(table, AppendOptions{Replace: opts.Replace})
	if err != nil {
		return 0, err
	}
	for _, p := range paths {
		o := opts
		_ = o.Validate(p)
		var err error
		if o.Format == "parquet" {
			err = db.copyParquet(ctx, app, p, &o)
		} else {
			err = copyText(ctx, app, p, o)
		}
		if err != nil {
			app.Abort()
			return 0, err
		}
	}
	return app.Commit()
}

// copyParquet rewrites a Parquet file's rows into the table (columns are
// matched by name, types must agree).
func (db *DB) copyParquet(ctx context.Context, app *Appender, path string, o *CopyOptions) error {
	md, size, err := readFooterIn(o.Root, path)
	if err != nil {
		return err
	}
	f, err := fileFromFooter(path, md, app.cols)
	if err != nil {
		return err
	}
	f.Path, f.Size = path, size
	f.Checksum = "external"
	src := &Table{Schema: app.schema, Name: app.name, Columns: app.cols, Files: []*File{f}, root: o.Root}
	spec := ScanSpec{Table: src.QualifiedName()}.AllColumns(src)
	spec.BatchSize = 64 << 10
	sc, err := db.newScanner(src, spec, ScanOptions{})
	if err != nil {
		return err
	}
	defer sc.Close()
	for {
		rec, err := sc.Next(ctx)
		if err != nil {
			return err
		}
		if rec == nil {
			return nil
		}
		err = o.appendChecked(app, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}

// fieldParser parses one text field into a column builder.
type colBuilder struct {
	name     string
	typ      arrow.DataType
	kind     physKind
	nullable bool
	prec     int32
	scale    int32
	v        vector
	// tzParse reads TIMESTAMPTZ text (CopyOptions.ParseTimestampTZ).
	tzParse func(b []byte) (us int64, ok, inRange bool)
	// An array column: its elements' builder, and where each row's
	// elements start in it (ends[i] is the end of row i's).
	elem *colBuilder
	ends []int32
}

// newColBuilder is the builder of a text column of field fd.
func newColBuilder(fd arrow.Field, tzParse func(b []byte) (us int64, ok, inRange bool)) *colBuilder {
	c := &colBuilder{name: fd.Name, typ: fd.Type, kind: kindOf(fd.Type), nullable: fd.Nullable, tzParse: tzParse}
	switch t := fd.Type.(type) {
	case *arrow.Decimal64Type:
		c.prec, c.scale = t.Precision, t.Scale
	case *arrow.Decimal128Type:
		c.prec, c.scale = t.Precision, t.Scale
	case *arrow.ListType:
		c.elem = newColBuilder(arrow.Field{Name: fd.Name + " element", Type: t.Elem(), Nullable: true}, tzParse)
	}
	c.reset()
	return c
}

func (c *colBuilder) reset() {
	c.v = vector{kind: c.kind, valid: c.v.valid[:0], i32: c.v.i32[:0], i64: c.v.i64[:0], f64: c.v.f64[:0], b: c.v.b[:0],
		offs: append(c.v.offs[:0], 0), data: c.v.data[:0], d128: c.v.d128[:0]}
	if c.elem != nil {
		c.elem.reset()
		c.ends = c.ends[:0]
	}
}

// array builds the column's n rows.
func (c *colBuilder) array(n int) arrow.Array {
	v := c.v
	v.n = n
	if !slices.Contains(v.valid, false) {
		v.valid = nil
	}
	if c.elem == nil {
		return materialize(memory.DefaultAllocator, c.typ, &v, nil, n)
	}
	elems := c.elem.array(len(c.elem.v.valid))
	defer elems.Release()
	offs := make([]int32, n+1)
	for i := 0; i < n; i++ {
		offs[i+1] = c.ends[i]
	}
	var validity *memory.Buffer
	nulls := 0
	if v.valid != nil {
		validity = memory.NewResizableBuffer(memory.DefaultAllocator)
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		for i, ok := range v.valid {
			bitutil.SetBitTo(validity.Bytes(), i, ok)
			if !ok {
				nulls++
			}
		}
		defer validity.Release()
	}
	data := array.NewData(c.typ, n, []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))}, []arrow.ArrayData{elems.Data()}, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// add parses field b; why explains a failure.
func (c *colBuilder) add(b []byte, isNull bool) (why string) {
	if c.elem != nil {
		return c.addArray(b, isNull)
	}
	if isNull {
		if !c.nullable {
			return "NULL in a NOT NULL column"
		}
		c.v.valid = append(c.v.valid, false)
		switch c.kind {
		case kInt32:
			c.v.i32 = append(c.v.i32, 0)
		case kInt64:
			c.v.i64 = append(c.v.i64, 0)
		case kFloat64:
			c.v.f64 = append(c.v.f64, 0)
		case kBool:
			c.v.b = append(c.v.b, false)
		case kString:
			c.v.offs = append(c.v.offs, int32(len(c.v.data)))
		case kDec128:
			c.v.d128 = append(c.v.d128, decimal128.Num{})
		}
		return ""
	}
	c.v.valid = append(c.v.valid, true)
	switch c.typ.ID() {
	case arrow.INT32:
		x, why := parseInt(b, 32)
		return appendParsed(&c.v.i32, int32(x), why)
	case arrow.DATE32:
		x, why := parseDate(b)
		return appendParsed(&c.v.i32, x, why)
	case arrow.INT64:
		x, why := parseInt(b, 64)
		return appendParsed(&c.v.i64, x, why)
	case arrow.TIMESTAMP:
		tz := c.typ.(*arrow.TimestampType).TimeZone != ""
		if tz && c.tzParse != nil {
			us, ok, inRange := c.tzParse(b)
			switch {
			case !ok:
				return appendParsed(&c.v.i64, 0, "not a timestamp")
			case !inRange:
				return appendParsed(&c.v.i64, 0, "timestamp out of range (years 0001 to 9999)")
			}
			return appendParsed(&c.v.i64, us, "")
		}
		x, why := parseTimestamp(b, tz)
		return appendParsed(&c.v.i64, x, why)
	case arrow.TIME64:
		x, why := parseTime(b)
		return appendParsed(&c.v.i64, x, why)
	case arrow.DECIMAL64:
		x, why := parseDecimalPrec(b, c.prec, c.scale)
		return appendParsed(&c.v.i64, x, why)
	case arrow.FLOAT64:
		x, why := parseFloat(b)
		return appendParsed(&c.v.f64, x, why)
	case arrow.BOOL:
		x, why := parseBool(b)
		return appendParsed(&c.v.b, x, why)
	case arrow.STRING:
		c.v.data = append(c.v.data, b...)
		c.v.offs = append(c.v.offs, int32(len(c.v.data)))
	case arrow.BINARY:
		// PostgreSQL's bytea input: \x hex or the escape format.
		data, msg := bytea.Parse(c.v.data, b)
		if msg != "" {
			c.v.valid = c.v.valid[:len(c.v.valid)-1]
			return msg
		}
		c.v.data = data
		c.v.offs = append(c.v.offs, int32(len(c.v.data)))
	case arrow.INTERVAL_MONTH_DAY_NANO:
		iv, err := civil.ParseInterval(string(b))
		if err != nil {
			c.v.valid = c.v.valid[:len(c.v.valid)-1]
			return "not an interval"
		}
		c.v.d128 = append(c.v.d128, intervalNum(arrow.MonthDayNanoInterval{Months: iv.Months, Days: iv.Days, Nanoseconds: iv.Nanos}))
	case arrow.DECIMAL128:
		num, err := decimal128.FromString(string(b), c.prec, c.scale)
		if err != nil {
			return "not a decimal(" + fmt.Sprint(c.prec, ",", c.scale) + ")"
		}
		if s := string(b); strings.ContainsAny(s, "eE") {
			return "not a decimal number"
		}
		c.v.d128 = append(c.v.d128, num)
	}
	return ""
}

// addArray parses an array field, PostgreSQL's text form ({1,2,NULL},
// {"a b",c}), element by element with the element type's parser.
func (c *colBuilder) addArray(b []byte, isNull bool) (why string) {
	if isNull {
		if !c.nullable {
			return "NULL in a NOT NULL column"
		}
		c.v.valid = append(c.v.valid, false)
		c.ends = append(c.ends, int32(len(c.elem.v.valid)))
		return ""
	}
	elems, nulls, ok := pgarray.Parse(string(b))
	if !ok {
		return "not an array (PostgreSQL's text form: {1,2,NULL})"
	}
	for i, e := range elems {
		if why := c.elem.add([]byte(e), nulls[i]); why != "" {
			return fmt.Sprintf("element %d: %s", i+1, why)
		}
	}
	c.v.valid = append(c.v.valid, true)
	c.ends = append(c.ends, int32(len(c.elem.v.valid)))
	return ""
}

// appendParsed appends a parsed value x to vals, unless parsing failed
// (why, which it returns, is not "").
func appendParsed[T any](vals *[]T, x T, why string) string {
	if why == "" {
		*vals = append(*vals, x)
	}
	return why
}

// maxLineBytes bounds one input line (a corrupt file without newlines must
// not eat all memory).
const maxLineBytes = 16 << 20

// copyText parses a csv or tbl file into the appender.
func copyText(ctx context.Context, app *Appender, path string, o CopyOptions) error {
	return parseText(ctx, path, app.Schema(), o, "copy into "+app.name, func(rec arrow.RecordBatch) error {
		return o.appendChecked(app, rec)
	})
}

// parseText parses the csv or tbl file path into records of schema sch
// (o.BatchRows rows each), handed to emit; what names the operation in
// errors ("copy into t").
func parseText(ctx context.Context, path string, sch *arrow.Schema, o CopyOptions, what string, emit func(arrow.RecordBatch) error) error {
	cols := make([]*colBuilder, sch.NumFields())
	for i, fd := range sch.Fields() {
		cols[i] = newColBuilder(fd, o.ParseTimestampTZ)
	}
	flush := func() error {
		n := len(cols[0].v.valid)
		if n == 0 {
			return nil
		}
		arrs := make([]arrow.Array, len(cols))
		for i, c := range cols {
			arrs[i] = c.array(n)
		}
		rec := array.NewRecordBatch(sch, arrs, int64(n))
		for _, a := range arrs {
			a.Release()
		}
		err := emit(rec)
		rec.Release()
		for _, c := range cols {
			c.reset()
		}
		return err
	}
	err := textRecords(path, o, what, func(lineNo int, fields [][]byte, quoted []bool) error {
		if len(fields) != len(cols) {
			return nferr.Dataf("%s:%d: expected %d fields, found %d", path, lineNo, len(cols), len(fields))
		}
		for i, c := range cols {
			fb := fields[i]
			isNull := !quoted[i] && string(fb) == o.Null
			if why := c.add(fb, isNull); why != "" {
				return nferr.Dataf("%s:%d: column %s (field %d): %s: %q", path, lineNo, c.name, i+1, why, truncate(fb, 40))
			}
		}
		if len(cols[0].v.valid) >= o.BatchRows {
			if err := ctx.Err(); err != nil {
				return nferr.With(nferr.KindCanceled, err)
			}
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// textRecords calls fn with the fields of each record of the csv or tbl
// file path (after the header line when o.Header), with the record's
// first line number; a quoted csv field may span lines.
func textRecords(path string, o CopyOptions, what string, fn func(lineNo int, fields [][]byte, quoted []bool) error) error {
	f, err := openText(o.Root, path, what)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	q := o.quote()
	lineNo := 0
	var fields [][]byte
	var quoted []bool
	var buf []byte
	for {
		line, rerr := readLine(r, &buf)
		var bad *corruptInput
		if errors.As(rerr, &bad) {
			return nferr.Dataf("%s: damaged compressed data near line %d: %v", path, lineNo+1, bad.err)
		}
		if rerr != nil && rerr != io.EOF {
			return nferr.Wrap(nferr.KindIO, rerr, "reading %s line %d", path, lineNo+1)
		}
		if line == nil && rerr == io.EOF {
			break
		}
		lineNo++
		first := lineNo
		// CSV fields may hold newlines inside quotes: keep reading.
		if o.Format == "csv" {
			for bytes.Count(line, []byte{q})%2 == 1 {
				more, err2 := readLine(r, nil)
				if more == nil {
					return nferr.Dataf("%s:%d: unterminated quoted field", path, first)
				}
				lineNo++
				line = append(append(line, '\n'), more...)
				if err2 == io.EOF {
					break
				}
			}
		}
		if first == 1 && o.Header {
			if rerr == io.EOF {
				break
			}
			continue
		}
		if len(line) == 0 && rerr == io.EOF {
			break
		}
		if o.Format == "text" && string(line) == `\.` {
			break // PostgreSQL's end-of-data marker
		}
		if len(line) == 0 {
			return nferr.Dataf("%s:%d: empty line", path, first)
		}
		fields, quoted, err = splitFields(line, o, fields[:0], quoted[:0])
		if err != nil {
			return nferr.Dataf("%s:%d: %v", path, first, err)
		}
		if err := fn(first, fields, quoted); err != nil {
			return err
		}
		if rerr == io.EOF {
			break
		}
	}
	return nil
}

// splitTextFields splits a line of PostgreSQL's COPY text format: fields
// separated by the delimiter (a delimiter after a backslash is data), each
// unescaped (\b \f \n \r \t \v \\, \digits in octal, \xhh in hex, any
// other character after a backslash as itself). A field that reads o.Null
// before unescaping is NULL (quoted false); every other field is marked
// quoted, so that an escaped \\N stays the text \N.
func splitTextFields(line []byte, o CopyOptions, fields [][]byte, quoted []bool) ([][]byte, []bool, error) {
	d := o.Delimiter
	start := 0
	esc := false
	for i := 0; i <= len(line); i++ {
		if i < len(line) {
			if line[i] == '\\' {
				if i+1 == len(line) {
					return nil, nil, fmt.Errorf("a backslash ends the line")
				}
				i++ // the escaped byte is data
				esc = true
				continue
			}
			if line[i] != d {
				continue
			}
		}
		raw := line[start:i]
		start = i + 1
		hadEsc := esc
		esc = false
		if string(raw) == o.Null {
			fields = append(fields, raw)
			quoted = append(quoted, false)
			continue
		}
		if !hadEsc {
			fields = append(fields, raw)
			quoted = append(quoted, true)
			continue
		}
		val, err := unescapeText(raw)
		if err != nil {
			return nil, nil, err
		}
		fields = append(fields, val)
		quoted = append(quoted, true)
	}
	return fields, quoted, nil
}

// unescapeText reads one field's backslash escapes (splitTextFields).
func unescapeText(raw []byte) ([]byte, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		if ch != '\\' {
			out = append(out, ch)
			continue
		}
		i++
		if i == len(raw) {
			return nil, fmt.Errorf("a backslash ends the line")
		}
		switch c := raw[i]; {
		case c == 'b':
			out = append(out, '\b')
		case c == 'f':
			out = append(out, '\f')
		case c == 'n':
			out = append(out, '\n')
		case c == 'r':
			out = append(out, '\r')
		case c == 't':
			out = append(out, '\t')
		case c == 'v':
			out = append(out, '\v')
		case c >= '0' && c <= '7':
			v := 0
			j := i
			for ; j < len(raw) && j < i+3 && raw[j] >= '0' && raw[j] <= '7'; j++ {
				v = v*8 + int(raw[j]-'0')
			}
			out = append(out, byte(v))
			i = j - 1
		case c == 'x' && i+1 < len(raw) && isHex(raw[i+1]):
			v := 0
			j := i + 1
			for ; j < len(raw) && j < i+3 && isHex(raw[j]); j++ {
				v = v*16 + hexVal(raw[j])
			}
			out = append(out, byte(v))
			i = j - 1
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// quote is the csv quote character.
func (o *CopyOptions) quote() byte {
	if o.Quote == 0 {
		return '"'
	}
	return o.Quote
}

// compressedExt is the compression suffix of a file name (".gz", ".zst"
// or ".zstd"), or "".
func compressedExt(path string) string {
	lower := strings.ToLower(path)
	for _, ext := range []string{".gz", ".zst", ".zstd"} {
		if strings.HasSuffix(lower, ext) {
			return path[len(path)-len(ext):]
		}
	}
	return ""
}

// corruptInput marks a decompression error: the file is damaged (bad
// data), not unreadable.
type corruptInput struct{ err error }

func (c *corruptInput) Error() string { return c.err.Error() }

// decompressed reads a decompressor, marking its errors as corruptInput.
type decompressed struct {
	r     io.Reader
	close func()
	f     io.Closer
}

func (d *decompressed) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = &corruptInput{err}
	}
	return n, err
}

func (d *decompressed) Close() error {
	if d.close != nil {
		d.close()
	}
	return d.f.Close()
}

// openText opens a text file (through root when it is set),
// decompressing it when its name ends in .gz (gzip) or .zst/.zstd
// (zstandard).
func openText(root *FileRoot, path, what string) (io.ReadCloser, error) {
	f, err := openFile(root, path)
	if err != nil {
		if _, ok := nferr.As(err); ok {
			return nil, err // the root's refusal
		}
		if os.IsNotExist(err) {
			return nil, nferr.Queryf("%s: %s does not exist", what, path)
		}
		return nil, nferr.IOf("%s: %w", what, err)
	}
	switch strings.ToLower(compressedExt(path)) {
	case ".gz":
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nferr.Dataf("%s: %s is not a gzip file: %v", what, path, err)
		}
		return &decompressed{r: zr, close: func() { zr.Close() }, f: f}, nil
	case ".zst", ".zstd":
		zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, nferr.Dataf("%s: %s is not a zstd file: %v", what, path, err)
		}
		return &decompressed{r: zr, close: zr.Close, f: f}, nil
	}
	return f, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// readLine returns the next line without its "\n" or "\r\n". At the end of
// input it returns (nil, io.EOF), or the last unterminated line with
// io.EOF.
func readLine(r *bufio.Reader, buf *[]byte) ([]byte, error) {
	var out []byte
	if buf != nil {
		out = (*buf)[:0]
	}
	for {
		chunk, err := r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxLineBytes {
			return nil, nferr.Dataf("line longer than %d bytes", maxLineBytes)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if buf != nil {
			*buf = out
		}
		if err == io.EOF {
			if len(out) == 0 {
				return nil, io.EOF
			}
			return trimEOL(out), io.EOF
		}
		if err != nil {
			return nil, err
		}
		return trimEOL(out), nil
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// splitFields splits a line. tbl: fields end with the delimiter (dbgen
// writes a trailing one). csv: RFC 4180 quoting ("a ""b""", embedded
// delimiters and newlines).
func splitFields(line []byte, o CopyOptions, fields [][]byte, quoted []bool) ([][]byte, []bool, error) {
	d, q := o.Delimiter, o.quote()
	if o.Format == "text" {
		return splitTextFields(line, o, fields, quoted)
	}
	csv := o.Format != "tbl"
	if !csv {
		if len(line) == 0 || line[len(line)-1] != d {
			return nil, nil, fmt.Errorf("line does not end with the %q delimiter (dbgen .tbl format)", d)
		}
		line = line[:len(line)-1]
	}
	for {
		if csv && len(line) > 0 && line[0] == q {
			// Quoted field: unescape "" into a fresh slice.
			var val []byte
			i := 1
			closed := false
			for i < len(line) {
				if line[i] == q {
					if i+1 < len(line) && line[i+1] == q {
						val = append(val, q)
						i += 2
						continue
					}
					closed = true
					i++
					break
				}
				val = append(val, line[i])
				i++
			}
			if !closed {
				return nil, nil, fmt.Errorf("unterminated quoted field")
			}
			if val == nil {
				val = []byte{}
			}
			fields = append(fields, val)
			quoted = append(quoted, true)
			if i == len(line) {
				return fields, quoted, nil
			}
			if line[i] != d {
				return nil, nil, fmt.Errorf("unexpected character %q after a quoted field", line[i])
			}
			line = line[i+1:]
			continue
		}
		i := bytes.IndexByte(line, d)
		if i < 0 {
			fields = append(fields, line)
			quoted = append(quoted, false)
			return fields, quoted, nil
		}
		fields = append(fields, line[:i])
		quoted = append(quoted, false)
		line = line[i+1:]
	}
}
