package storage

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// batchCodec is a batch decoder over a CPU codec (what a device codec
// looks like to the page reader), counting its batches and pages; every
// fifth page fails when fail is set.
type batchCodec struct {
	compress.Codec
	batches, pages atomic.Int64
	fail           bool
}

func (c *batchCodec) DecodeBatch(dsts, srcs, outs [][]byte, errs []error) {
	c.batches.Add(1)
	for i := range srcs {
		n := c.pages.Add(1)
		if c.fail && n%5 == 0 {
			errs[i] = errBatchTest
			continue
		}
		outs[i], errs[i] = compress.Decode(c.Codec, dsts[i], srcs[i])
	}
}

var errBatchTest = &batchTestError{}

type batchTestError struct{}

func (*batchTestError) Error() string { return "injected batch failure" }

// TestPageBatchDecode: with a codec that decompresses several pages at
// once (a device's), the flat decoder hands it windows of a chunk's pages,
// reads every value as arrow-go does (skips included), and a page the batch
// failed is the chunk's error, never a wrong value.
func TestPageBatchDecode(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(11))
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	rec := recordOf(alloc, testSchema(), randomRows(rng, 0, 3000, 0.2))
	defer rec.Release()
	for _, v := range []struct {
		name  string
		codec compress.Compression
		props []parquet.WriterProperty
	}{
		{"zstd-v2", compress.Codecs.Zstd, []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(300), parquet.WithBatchSize(64)}},
		{"snappy-v1", compress.Codecs.Snappy, []parquet.WriterProperty{parquet.WithDataPageSize(400), parquet.WithBatchSize(50)}},
	} {
		p := filepath.Join(dir, v.name+".parquet")
		writeWithProps(t, p, rec, parquet.NewWriterProperties(append(v.props, parquet.WithCompression(v.codec), parquet.WithStats(true))...))
		inner, err := compress.GetCodec(v.codec)
		if err != nil {
			t.Fatal(err)
		}
		bc := &batchCodec{Codec: inner}
		compress.RegisterCodec(v.codec, bc)
		func() {
			defer compress.RegisterCodec(v.codec, inner)
			flatVsArrow(t, p, rng, nil)
		}()
		t.Logf("%s: %d pages in %d batches", v.name, bc.pages.Load(), bc.batches.Load())
		if bc.batches.Load() == 0 || bc.pages.Load() < 2*bc.batches.Load() {
			t.Errorf("%s: %d pages in %d batches: the reader did not batch pages", v.name, bc.pages.Load(), bc.batches.Load())
		}
		// A failed page is an error of its chunk.
		var pr pageReader
		raw := readFileBytes(t, p)
		chunk := firstChunk(t, raw)
		bc = &batchCodec{Codec: inner, fail: true}
		pr.reset(chunk, bc, 0)
		pr.maxPage = maxPageBytes
		failed := false
		for {
			h, ok, err := pr.header()
			if err != nil || !ok {
				break
			}
			if _, err := pr.body(h); err != nil {
				failed = true
				break
			}
		}
		if !failed {
			t.Errorf("%s: no page of the chunk failed (%d pages decoded)", v.name, bc.pages.Load())
		}
	}
}

func readFileBytes(t *testing.T, p string) []byte {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// firstChunk is the bytes of the file's first column chunk with the most
// pages (the first row group's widest).
func firstChunk(t *testing.T, raw []byte) []byte {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	rgm := rdr.MetaData().RowGroup(0)
	var best []byte
	for c := 0; c < rdr.MetaData().Schema.NumColumns(); c++ {
		cc, err := rgm.ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		start, length := chunkRange(cc)
		if b := chunkBytes(t, raw, start, length); len(b) > len(best) {
			best = b
		}
	}
	return best
}
