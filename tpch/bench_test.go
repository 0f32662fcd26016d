package tpch

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Benchmarks of the hot generator paths (go test -bench . ./tpch). Rows
// are driver rows (orders, parts...); bytes are .tbl bytes.

func benchGroup(b *testing.B, driver Table, wantChild bool, format bool) {
	sc, err := NewScale(1)
	if err != nil {
		b.Fatal(err)
	}
	pool := textPool()
	const rows = 8192
	a := newBatch(driver, rows)
	var c *batch
	if wantChild {
		c = newBatch(childOf(driver), rows*4)
	}
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	var bytes int64
	for i := 0; i < b.N; i++ {
		start := int64(i%100)*rows + 1
		g := newGroupGen(sc, pool, driver, start)
		a.reset()
		if c != nil {
			c.reset()
		}
		g.rows(start, rows, a, c)
		if format {
			buf = appendTbl(buf[:0], a)
			if c != nil {
				buf = appendTbl(buf, c)
			}
			bytes += int64(len(buf))
		}
	}
	if format {
		b.SetBytes(bytes / int64(b.N))
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "driver-rows/s")
}

func BenchmarkGenOrdersLineitem(b *testing.B)    { benchGroup(b, Orders, true, false) }
func BenchmarkGenOrdersLineitemTbl(b *testing.B) { benchGroup(b, Orders, true, true) }
func BenchmarkGenPartPartsupp(b *testing.B)      { benchGroup(b, Part, true, false) }
func BenchmarkGenPartPartsuppTbl(b *testing.B)   { benchGroup(b, Part, true, true) }
func BenchmarkGenCustomerTbl(b *testing.B)       { benchGroup(b, Customer, false, true) }
func BenchmarkGenSupplierTbl(b *testing.B)       { benchGroup(b, Supplier, false, true) }

// BenchmarkTextPool measures building the first 16 MiB of the pool.
func BenchmarkTextPool(b *testing.B) {
	const size = 16 << 20
	b.SetBytes(size)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = buildTextPool(size)
	}
}

// BenchmarkWriteTblLineitemSF01 is the single-threaded streaming API.
func BenchmarkWriteTblLineitemSF01(b *testing.B) {
	WarmTextPool()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := WriteTbl(context.Background(), io.Discard, Lineitem, 0.1); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(74246996) // dbgen's lineitem.tbl at SF 0.1
}

// BenchmarkParquetLineitemSF01 writes SF 0.1 lineitem to Parquet in memory.
func BenchmarkParquetLineitemSF01(b *testing.B) {
	WarmTextPool()
	sc, _ := NewScale(0.1)
	for _, codec := range []string{"snappy", "zstd", "lz4"} {
		b.Run(codec, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			for i := 0; i < b.N; i++ {
				cw := &countWriter{}
				if err := writeLineitemParquet(cw, sc, codec); err != nil {
					b.Fatal(err)
				}
				size = cw.n
			}
			b.ReportMetric(float64(size)/1e6, "file-MB")
		})
	}
}

// writeLineitemParquet writes the lineitem table of scale sc to w as
// Parquet compressed with codec.
func writeLineitemParquet(w io.Writer, sc Scale, codec string) error {
	o := ParquetOptions{Codec: codec}
	o.ensureDefaults()
	pw := newPQWriter(w, Lineitem, o)
	if err := generateRange(context.Background(), sc, Orders, 1, sc.Orders, false, true, pw.write); err != nil {
		return err
	}
	return pw.close()
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkParquetReadLineitemSF01 reads SF 0.1 lineitem back with pqarrow
// (all columns, from memory), per codec.
func BenchmarkParquetReadLineitemSF01(b *testing.B) {
	WarmTextPool()
	sc, _ := NewScale(0.1)
	for _, codec := range []string{"snappy", "zstd", "lz4"} {
		b.Run(codec, func(b *testing.B) {
			var buf bytes.Buffer
			if err := writeLineitemParquet(&buf, sc, codec); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pf, err := file.NewParquetReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: false, BatchSize: 64 << 10}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				tbl, err := fr.ReadTable(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				tbl.Release()
			}
		})
	}
}
