package shuffle

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestParquetPageOffload: with decompression offloaded to an emulated NIC
// engine, blocks of every codec decode right on the device; a request the
// device fails (injected) or refuses (closed device) decodes on the CPU; a
// corrupt block is the codec's error, not a device failure; restore puts
// the CPU codecs back.
func TestParquetPageOffload(t *testing.T) {
	dev, err := NewNICDevice(NICOptions{Engines: 2, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	restore, err := OffloadParquetDecompression(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	plain := bytes.Repeat([]byte("nicflow pages on the NIC engine "), 4000)
	for _, c := range offloadedCodecs {
		codec, err := compress.GetCodec(c)
		if err != nil {
			continue
		}
		_, ok := codec.(*deviceCodec)
		if !ok {
			t.Fatalf("%s: codec %T is not offloaded", c, codec)
		}
		enc := codec.Encode(nil, plain)
		d0 := PageOffload.DevicePages.Load()
		out, err := compress.Decode(codec, make([]byte, len(plain)), enc)
		if err != nil || !bytes.Equal(out, plain) {
			t.Fatalf("%s on the device: %v", c, err)
		}
		if PageOffload.DevicePages.Load() != d0+1 {
			t.Errorf("%s: the device did not decode the block", c)
		}
		if _, err := compress.Decode(codec, make([]byte, len(plain)), enc[:len(enc)/3]); err == nil && c != compress.Codecs.Lz4 {
			t.Errorf("%s: a cut block decoded without an error", c)
		}
	}

	// Every request failed by the device falls back to the CPU.
	dev.failEvery = 1
	zc, _ := compress.GetCodec(compress.Codecs.Zstd)
	enc := zc.Encode(nil, plain)
	c0 := PageOffload.CPUPages.Load()
	for i := 0; i < 5; i++ {
		if out, err := compress.Decode(zc, make([]byte, len(plain)), enc); err != nil || !bytes.Equal(out, plain) {
			t.Fatalf("fallback after a device failure: %v", err)
		}
	}
	if got := PageOffload.CPUPages.Load() - c0; got != 5 {
		t.Errorf("%d of 5 failed requests ran on the CPU", got)
	}
	dev.failEvery = 0

	// A Parquet file of every codec reads back equal through arrow-go's
	// page reader (the codec registry's other user).
	for _, c := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Gzip, compress.Codecs.Lz4Raw, compress.Codecs.Brotli} {
		readBackParquet(t, c)
	}

	// A closed device refuses: pages decode on the CPU.
	dev.Close()
	c0 = PageOffload.CPUPages.Load()
	if out, err := compress.Decode(zc, make([]byte, len(plain)), enc); err != nil || !bytes.Equal(out, plain) {
		t.Fatalf("closed device: %v", err)
	}
	if PageOffload.CPUPages.Load() != c0+1 {
		t.Error("a closed device's request did not run on the CPU")
	}
	restore()
	if codec, _ := compress.GetCodec(compress.Codecs.Zstd); codec == zc {
		t.Error("restore left the device codec registered")
	}
}

func readBackParquet(t *testing.T, c compress.Compression) {
	t.Helper()
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer alloc.AssertSize(t, 0)
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(alloc, sch)
	defer b.Release()
	const n = 50000
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i * 7))
		b.Field(1).(*array.StringBuilder).Append("row " + string(rune('a'+i%26)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(c), parquet.WithDataPageSize(8<<10), parquet.WithDictionaryDefault(false))
	w, err := pqarrow.NewFileWriter(sch, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d0 := PageOffload.DevicePages.Load()
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()), file.WithReadProps(parquet.NewReaderProperties(alloc)))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, alloc)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	defer tbl.Release()
	if tbl.NumRows() != n {
		t.Fatalf("%s: %d rows", c, tbl.NumRows())
	}
	ks := tbl.Column(0).Data().Chunks()
	i := 0
	for _, ch := range ks {
		for _, v := range ch.(*array.Int64).Int64Values() {
			if v != int64(i*7) {
				t.Fatalf("%s: row %d = %d", c, i, v)
			}
			i++
		}
	}
	if got := PageOffload.DevicePages.Load() - d0; got < 10 {
		t.Errorf("%s: %d pages decoded on the device, want every page (more than 10)", c, got)
	}
}

// BenchmarkPageDecode decompresses a 64 KiB zstd or Snappy page on the
// CPU and through the NIC engine's queues (one engine thread): the cost
// of the hop per page beside the decompression itself.
func BenchmarkPageDecode(b *testing.B) {
	page := make([]byte, 64<<10)
	for i := range page {
		page[i] = byte(i * 7 % 61)
	}
	for _, c := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Zstd} {
		inner, _ := compress.GetCodec(c)
		enc := inner.Encode(nil, page)
		dst := make([]byte, len(page))
		b.Run(c.String()+"/cpu", func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := compress.Decode(inner, dst, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.String()+"/nic", func(b *testing.B) {
			dev, err := NewNICDevice(NICOptions{Engines: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer dev.Close()
			dc := &deviceCodec{inner: inner, dev: dev}
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := compress.Decode(dc, dst, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeviceDecodeBatch: a batch of blocks decodes on the device, blocks
// the device fails or refuses decode on the CPU, a corrupt block is its
// own error.
func TestDeviceDecodeBatch(t *testing.T) {
	dev := offloadToNIC(t, NICOptions{Engines: 2, Depth: 3})
	zc, _ := compress.GetCodec(compress.Codecs.Zstd)
	bd := zc.(*deviceCodec)
	var plains, srcs [][]byte
	for i := 0; i < 8; i++ {
		p := bytes.Repeat([]byte{byte('a' + i), 'x', byte(i)}, 3000+i*100)
		plains = append(plains, p)
		srcs = append(srcs, zc.Encode(nil, p))
	}
	srcs[5] = srcs[5][:len(srcs[5])/2] // corrupt
	run := func() ([][]byte, []error) {
		dsts := make([][]byte, len(srcs))
		for i := range dsts {
			dsts[i] = make([]byte, len(plains[i]))
		}
		outs, errs := make([][]byte, len(srcs)), make([]error, len(srcs))
		bd.DecodeBatch(dsts, srcs, outs, errs)
		return outs, errs
	}
	check := func(what string, outs [][]byte, errs []error) {
		t.Helper()
		for i := range srcs {
			if i == 5 {
				if errs[i] == nil {
					t.Errorf("%s: the corrupt block decoded", what)
				}
				continue
			}
			if errs[i] != nil || !bytes.Equal(outs[i], plains[i]) {
				t.Errorf("%s: block %d: %v", what, i, errs[i])
			}
		}
	}
	d0, c0 := PageOffload.DevicePages.Load(), PageOffload.CPUPages.Load()
	outs, errs := run()
	check("on the device", outs, errs)
	// NB: depth 3 with 2 engines: some blocks are refused and run here.
	if PageOffload.DevicePages.Load() == d0 || PageOffload.DevicePages.Load()-d0+PageOffload.CPUPages.Load()-c0 < 7 {
		t.Errorf("device %d, cpu %d of 7 good blocks", PageOffload.DevicePages.Load()-d0, PageOffload.CPUPages.Load()-c0)
	}
	dev.failEvery = 2
	outs, errs = run()
	check("half failed by the device", outs, errs)
	dev.failEvery = 0
	dev.Close()
	outs, errs = run()
	check("closed device", outs, errs)
}

// BenchmarkDeviceDecodeBatch: one decoder's 8 pages (64 KiB each, zstd) on
// an emulated NIC engine with 2 engine threads, submitted one at a time
// (what a page reader did) or as one batch.
func BenchmarkDeviceDecodeBatch(b *testing.B) {
	dev := offloadToNIC(b, NICOptions{Engines: 2})
	defer dev.Close()
	zc, _ := compress.GetCodec(compress.Codecs.Zstd)
	bd := zc.(*deviceCodec)
	var srcs, dsts [][]byte
	for i := 0; i < 8; i++ {
		p := make([]byte, 64<<10)
		for j := range p {
			p[j] = byte((j * (i + 7)) % 251 / 3)
		}
		srcs = append(srcs, zc.Encode(nil, p))
		dsts = append(dsts, make([]byte, len(p)))
	}
	outs, errs := make([][]byte, 8), make([]error, 8)
	b.Run("one-at-a-time", func(b *testing.B) {
		b.SetBytes(8 << 16)
		b.ReportAllocs()
		for b.Loop() {
			for i := range srcs {
				if _, err := compress.Decode(zc, dsts[i], srcs[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		b.SetBytes(8 << 16)
		b.ReportAllocs()
		for b.Loop() {
			bd.DecodeBatch(dsts, srcs, outs, errs)
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// offloadToNIC starts an emulated NIC engine and routes the process's
// Parquet decompression to it until the test ends.
func offloadToNIC(tb testing.TB, o NICOptions) *NICDevice {
	tb.Helper()
	dev, err := NewNICDevice(o)
	if err != nil {
		tb.Fatal(err)
	}
	restore, err := OffloadParquetDecompression(dev)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(restore)
	return dev
}
