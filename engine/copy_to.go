package engine

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/nicflow/nicflow/engine/bind"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// copyTo runs COPY ... TO: the query's rows streamed into a Parquet file
// (nicflow's layout, storage.ParquetFile) or a CSV file (values in their
// canonical text, run_format.go; fields quoted as PostgreSQL's CSV
// quotes them). The file appears whole or not at all: it is written under
// a temporary name and renamed when the last row is in.
func (s *Session) copyTo(ctx context.Context, x *bind.CopyToStmt) (*Result, error) {
	var out CopyOut
	var root *storage.FileRoot
	if x.Stdout {
		if out = copyOutOf(ctx); out == nil {
			return nil, nferr.Queryf("COPY TO STDOUT needs a client that receives the rows (psql, a driver's copy-out, nicflow sql); write to a file instead")
		}
	} else {
		var err error
		if root, err = fileAccess(s.db, s.opts.FileAccess, x.File); err != nil {
			return nil, err
		}
	}
	r, err := s.startQuery(ctx, x.Query, false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var w rowSink
	switch {
	case x.Stdout:
		if err := out.Begin(r.Schema.NumFields()); err != nil {
			return nil, err
		}
		w, err = newTextSink(out, "STDOUT", r.Schema, x, s.TimeZone())
	case x.Format == "parquet":
		w, err = newParquetSink(root, x.File, r.Schema)
	default:
		w, err = newCSVSink(root, x.File, r.Schema, x, s.TimeZone())
	}
	if err != nil {
		return nil, err
	}
	var n int64
	for {
		rec, err := r.Next()
		if err == nil && rec == nil {
			break
		}
		if err == nil {
			err = w.write(rec)
		}
		if err != nil {
			w.abort()
			return nil, err
		}
		n += rec.NumRows()
	}
	if err := w.close(); err != nil {
		return nil, err
	}
	return status("COPY "+strconv.FormatInt(n, 10), n), nil
}

// rowSink is a file COPY TO writes.
type rowSink interface {
	write(rec arrow.RecordBatch) error
	close() error
	abort()
}

type parquetSink struct{ f *storage.ParquetFile }

func newParquetSink(root *storage.FileRoot, path string, sch *arrow.Schema) (*parquetSink, error) {
	f, err := storage.CreateParquetFile(root, path, sch, storage.WriteOptions{})
	if nferr.Is(err, nferr.KindAuth) {
		return nil, err
	}
	if err != nil {
		return nil, nferr.Wrap(nferr.KindOf(err), err, "COPY TO %s", path)
	}
	return &parquetSink{f: f}, nil
}

func (p *parquetSink) write(rec arrow.RecordBatch) error { return p.f.Write(rec) }
func (p *parquetSink) close() error                      { _, err := p.f.Close(); return err }
func (p *parquetSink) abort()                            { p.f.Abort() }

// csvSink writes CSV: delimiter-separated fields, a field quoted (with ""
// for a quote inside) when it holds the delimiter, a quote or a line
// break, or when it equals the NULL text; NULL is the NULL text unquoted.
// In PostgreSQL's text format (text) a field's backslashes, line breaks,
// tabs and delimiters are escaped with a backslash instead, and NULL is
// \N. It writes a file (path, storage.NewFile: renamed into place at
// close) or a client's copy stream (f nil).
type csvSink struct {
	path  string
	f     *storage.NewFile
	w     *bufio.Writer
	z     io.WriteCloser // the compressor (.gz, .zst), or nil
	fmts  []*ValueFormatter
	delim byte
	null  string
	text  bool
	line  []byte
}

func newSink(path string, sch *arrow.Schema, x *bind.CopyToStmt, loc *time.Location) (*csvSink, error) {
	c := &csvSink{path: path, delim: byte(x.Delimiter), null: x.Null, text: x.Format == "text"}
	for _, f := range sch.Fields() {
		vf, err := NewValueFormatterIn(f.Type, loc) // TIMESTAMPTZ in the session zone, as PostgreSQL
		if err != nil {
			return nil, nferr.Queryf("COPY TO: column %s: %v", f.Name, err)
		}
		c.fmts = append(c.fmts, vf)
	}
	return c, nil
}

// newTextSink writes the rows to a client's copy stream w (named what in
// errors).
func newTextSink(w io.Writer, what string, sch *arrow.Schema, x *bind.CopyToStmt, loc *time.Location) (*csvSink, error) {
	c, err := newSink(what, sch, x, loc)
	if err != nil {
		return nil, err
	}
	c.w = bufio.NewWriterSize(w, 64<<10)
	if x.Header {
		if err := c.writeHeader(sch); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *csvSink) writeHeader(sch *arrow.Schema) error {
	c.line = c.line[:0]
	for i, f := range sch.Fields() {
		if i > 0 {
			c.line = append(c.line, c.delim)
		}
		c.line = c.field(c.line, f.Name)
	}
	c.line = append(c.line, '\n')
	if _, err := c.w.Write(c.line); err != nil {
		return nferr.OS(err, "writing %s", c.path)
	}
	return nil
}

func newCSVSink(root *storage.FileRoot, path string, sch *arrow.Schema, x *bind.CopyToStmt, loc *time.Location) (*csvSink, error) {
	abs, err := storage.AbsPath(path)
	if err != nil {
		return nil, nferr.Queryf("file %s: %v", path, err)
	}
	c, err := newSink(abs, sch, x, loc)
	if err != nil {
		return nil, err
	}
	if c.f, err = storage.CreateFile(root, abs); err != nil {
		if nferr.Is(err, nferr.KindQuery) {
			return nil, nferr.Queryf("COPY TO %s: directory %s does not exist", path, filepath.Dir(path))
		}
		return nil, err
	}
	var out io.Writer = c.f
	switch lower := strings.ToLower(abs); {
	case strings.HasSuffix(lower, ".gz"):
		c.z = gzip.NewWriter(c.f)
	case strings.HasSuffix(lower, ".zst") || strings.HasSuffix(lower, ".zstd"):
		if c.z, err = zstd.NewWriter(c.f); err != nil {
			c.f.Abort()
			return nil, nferr.Internalf("zstd writer: %v", err)
		}
	}
	if c.z != nil {
		out = c.z
	}
	c.w = bufio.NewWriterSize(out, 256<<10)
	if x.Header {
		if err := c.writeHeader(sch); err != nil {
			c.abort()
			return nil, err
		}
	}
	return c, nil
}

// field appends v, quoted (csv) or escaped (text) when it must be.
func (c *csvSink) field(dst []byte, v string) []byte {
	if c.text {
		return appendTextField(dst, v, c.delim)
	}
	if v != c.null && !strings.ContainsAny(v, "\"\r\n"+string(c.delim)) {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	dst = append(dst, strings.ReplaceAll(v, `"`, `""`)...)
	return append(dst, '"')
}

func (c *csvSink) write(rec arrow.RecordBatch) error {
	for i := 0; i < int(rec.NumRows()); i++ {
		c.line = c.line[:0]
		for j, vf := range c.fmts {
			if j > 0 {
				c.line = append(c.line, c.delim)
			}
			v, null := vf.Format(rec.Column(j), i)
			if null {
				c.line = append(c.line, c.null...)
			} else {
				c.line = c.field(c.line, v)
			}
		}
		c.line = append(c.line, '\n')
		if _, err := c.w.Write(c.line); err != nil {
			return nferr.OS(err, "writing %s", c.path)
		}
	}
	return nil
}

// appendTextField appends v in PostgreSQL's COPY text format: backslash,
// line breaks, tab and the delimiter escaped with a backslash.
func appendTextField(dst []byte, v string, delim byte) []byte {
	for i := 0; i < len(v); i++ {
		switch ch := v[i]; ch {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if ch == delim {
				dst = append(dst, '\\')
			}
			dst = append(dst, ch)
		}
	}
	return dst
}

func (c *csvSink) close() error {
	err := c.w.Flush()
	if c.f == nil {
		if err != nil {
			return nferr.OS(err, "writing %s", c.path)
		}
		return nil
	}
	if err == nil && c.z != nil {
		err = c.z.Close()
	}
	if err == nil {
		err = c.f.Sync()
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.f.Abort()
		return nferr.OS(err, "writing %s", c.path)
	}
	return c.f.Commit()
}

func (c *csvSink) abort() {
	if c.f == nil {
		return
	}
	if c.z != nil {
		c.z.Close()
	}
	c.f.Abort()
}
