package tpch

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Codec names accepted by ParquetOptions.Codec.
var codecs = map[string]compress.Compression{
	"zstd":         compress.Codecs.Zstd,
	"snappy":       compress.Codecs.Snappy,
	"lz4":          compress.Codecs.Lz4Raw,
	"gzip":         compress.Codecs.Gzip,
	"uncompressed": compress.Codecs.Uncompressed,
	"none":         compress.Codecs.Uncompressed,
}

// ParquetOptions controls the Parquet files Generate writes.
type ParquetOptions struct {
	// Codec is the page compression: "snappy" (default), "zstd", "lz4",
	// "gzip" or "none" (see docs/decisions.md for the measurements).
	Codec string
	// RowGroupRows is the number of rows per row group (the last group of
	// a file may be smaller). partsupp and lineitem groups hold the rows of
	// RowGroupRows/4 parts or orders: about, not exactly, RowGroupRows rows.
	// Default 262144.
	RowGroupRows int
	// RowGroupsPerFile is the number of row groups per file. Default 4.
	RowGroupsPerFile int
}

// DefaultRowGroupRows is the default row group size: small enough that
// SF 0.1 tables still split into several groups for parallel scans and
// min/max pruning, large enough that per-group overhead stays negligible.
const DefaultRowGroupRows = 256 * 1024

func (o *ParquetOptions) ensureDefaults() {
	if o.Codec == "" {
		o.Codec = "snappy"
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.RowGroupsPerFile <= 0 {
		o.RowGroupsPerFile = 4
	}
}

// Validate checks the options (after defaults are applied).
func (o ParquetOptions) Validate() error {
	o.ensureDefaults()
	if _, ok := codecs[strings.ToLower(o.Codec)]; !ok {
		return nferr.Queryf("unknown Parquet codec %q (want zstd, snappy, lz4, gzip or none)", o.Codec)
	}
	return nil
}

// parquetSchema builds the Parquet schema of table t: required columns,
// INT64/INT32 integers, DECIMAL(15,2) on INT64, DATE on INT32, UTF8 strings.
func parquetSchema(t Table) *schema.GroupNode {
	defs := tableCols[t]
	fields := make(schema.FieldList, len(defs))
	req := parquet.Repetitions.Required
	for i, c := range defs {
		var n schema.Node
		var err error
		switch c.kind {
		case kInt64:
			n, err = schema.NewPrimitiveNodeLogical(c.name, req, schema.NewIntLogicalType(64, true), parquet.Types.Int64, -1, -1)
		case kInt32:
			n, err = schema.NewPrimitiveNodeLogical(c.name, req, schema.NewIntLogicalType(32, true), parquet.Types.Int32, -1, -1)
		case kDecimal:
			n, err = schema.NewPrimitiveNodeLogical(c.name, req, schema.NewDecimalLogicalType(15, 2), parquet.Types.Int64, -1, -1)
		case kDate:
			n, err = schema.NewPrimitiveNodeLogical(c.name, req, schema.DateLogicalType{}, parquet.Types.Int32, -1, -1)
		default:
			n, err = schema.NewPrimitiveNodeLogical(c.name, req, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
		}
		if err != nil {
			panic(fmt.Sprintf("tpch: building Parquet schema of %s: %v", t, err)) // static schema: a bug
		}
		fields[i] = n
	}
	g, err := schema.NewGroupNode("schema", req, fields, -1)
	if err != nil {
		panic(fmt.Sprintf("tpch: building Parquet schema of %s: %v", t, err))
	}
	return g
}

func writerProps(t Table, o ParquetOptions) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codecs[strings.ToLower(o.Codec)]),
		parquet.WithStats(true),
		parquet.WithDictionaryDefault(false),
		parquet.WithCreatedBy("nicflow tpch gen"),
		parquet.WithVersion(parquet.V2_6),
		// Rows are only counted by our row group logic; the library limit is
		// set above it so it never splits a group itself.
		parquet.WithMaxRowGroupLength(int64(o.RowGroupRows) * 2),
	}
	for _, c := range tableCols[t] {
		switch {
		case c.dict:
			opts = append(opts, parquet.WithDictionaryFor(c.name, true))
		case c.kind != kString:
			// Keys and prices of many distinct values: delta-encoded they
			// take 2-4 bytes a value where PLAIN takes 8 (snappy keeps
			// 4-6), and need no decompression (D73).
			opts = append(opts, parquet.WithEncodingFor(c.name, parquet.Encodings.DeltaBinaryPacked))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

// pqWriter writes batches of one table to one Parquet file, closing a row
// group every RowGroupRows rows.
type pqWriter struct {
	t      Table
	w      *file.Writer
	rg     file.BufferedRowGroupWriter
	rgRows int
	limit  int
	rows   int64
}

func newPQWriter(w io.Writer, t Table, o ParquetOptions) *pqWriter {
	fw := file.NewParquetWriter(w, parquetSchema(t), file.WithWriterProps(writerProps(t, o)))
	return &pqWriter{t: t, w: fw, limit: o.RowGroupRows}
}

// write appends the batch, closing a row group each time it reaches
// RowGroupRows rows (a batch may be split between two groups).
func (p *pqWriter) write(b *batch) error {
	for off := 0; off < b.n; {
		if p.rg == nil {
			rg, err := p.w.AppendBufferedRowGroupChecked()
			if err != nil {
				return nferr.IOf("writing Parquet for %s: %w", p.t, err)
			}
			p.rg, p.rgRows = rg, 0
		}
		n := min(b.n-off, p.limit-p.rgRows)
		if err := p.writeRows(b, off, off+n); err != nil {
			return err
		}
		off += n
		p.rgRows += n
		p.rows += int64(n)
		if p.rgRows >= p.limit {
			if err := p.closeGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *pqWriter) writeRows(b *batch, lo, hi int) (err error) {
	defer func() {
		// NB: the Parquet library may panic on internal errors; turn them
		// into errors naming the table.
		if r := recover(); r != nil {
			err = nferr.Internalf("writing Parquet for %s: %v", p.t, r)
		}
	}()
	for i, c := range tableCols[p.t] {
		cw, err := p.rg.Column(i)
		if err != nil {
			return nferr.IOf("writing Parquet column %s: %w", c.name, err)
		}
		col := &b.cols[i]
		switch c.kind {
		case kInt64, kDecimal:
			_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(col.i64[lo:hi], nil, nil)
		case kInt32, kDate:
			_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(col.i32[lo:hi], nil, nil)
		default:
			_, err = cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(col.str[lo:hi], nil, nil)
		}
		if err != nil {
			return nferr.IOf("writing Parquet column %s: %w", c.name, err)
		}
	}
	return nil
}

func (p *pqWriter) closeGroup() error {
	if p.rg == nil {
		return nil
	}
	rg := p.rg
	p.rg = nil
	if err := rg.Close(); err != nil {
		return nferr.IOf("closing Parquet row group of %s: %w", p.t, err)
	}
	return nil
}

// close finishes the file (footer with statistics).
func (p *pqWriter) close() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = nferr.Internalf("closing Parquet file of %s: %v", p.t, r)
		}
	}()
	if err := p.closeGroup(); err != nil {
		return err
	}
	if err := p.w.Close(); err != nil {
		return nferr.IOf("closing Parquet file of %s: %w", p.t, err)
	}
	return nil
}
