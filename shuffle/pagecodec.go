package shuffle

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Parquet page decompression on an offload device (issue 29, item 1;
// docs/decisions.md D57). Storage nodes serve Parquet pages as stored
// (D50), so the worker that scans them decompresses every page. On a
// SmartNIC that work belongs on the NIC's decompression engine, driven
// through request/response queues as Lynx drives accelerators: no code
// that reads pages changes. OffloadParquetDecompression replaces the
// process's Parquet codecs (arrow-go's compress registry, which both of
// nicflow's page readers, storage/parquet_pages.go and arrow-go's, take
// their codec from) with wrappers whose Decode submits an OpKernel request
// to the device and waits for it; a device that refuses (its queue is
// full) or fails a request leaves the page to the submitter's core, so a
// saturated or broken engine slows pages down but never fails them. A
// corrupt page is the codec's error, reported as it would be on the CPU.
//
// Encoding (COPY TO, writes of tables) stays on the CPU: the wrappers
// delegate it. The wrappers do not stream (arrow-go then decodes each page
// whole, as it does for any registered codec without streaming).

// PageOffloadStats count the pages decompressed since the process started:
// on the device, and on the CPU after the device refused or failed them.
type PageOffloadStats struct {
	DevicePages, CPUPages atomic.Int64
	// DeviceBytes is the decompressed bytes the device produced.
	DeviceBytes atomic.Int64
}

// PageOffload is the process's page offload statistics.
var PageOffload PageOffloadStats

// offloadedCodecs are the Parquet codecs a device can take.
var offloadedCodecs = []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Brotli,
	compress.Codecs.Zstd, compress.Codecs.Lz4Raw, compress.Codecs.Lz4}

var pageOffloadMu sync.Mutex

// OffloadParquetDecompression routes the process's Parquet page
// decompression through dev, each decode with at most depth requests
// outstanding on its queue. Call it when the process starts, before any
// Parquet is read (the codec registry is not safe to change while pages
// are decoded); restore puts the CPU codecs back (tests).
func OffloadParquetDecompression(dev Device) (restore func(), err error) {
	if dev == nil {
		return nil, nferr.Internalf("shuffle: no device to offload Parquet decompression to")
	}
	pageOffloadMu.Lock()
	defer pageOffloadMu.Unlock()
	saved := map[compress.Compression]compress.Codec{}
	for _, c := range offloadedCodecs {
		inner, err := compress.GetCodec(c)
		if err != nil {
			continue // a codec arrow-go lacks (LZO) stays unsupported
		}
		if dc, ok := inner.(*deviceCodec); ok {
			inner = dc.inner // offloaded twice: the last device wins
		}
		saved[c] = inner
		compress.RegisterCodec(c, &deviceCodec{inner: inner, dev: dev})
	}
	return func() {
		pageOffloadMu.Lock()
		defer pageOffloadMu.Unlock()
		for c, inner := range saved {
			compress.RegisterCodec(c, inner)
		}
	}, nil
}

// deviceCodec is a Parquet codec whose block decoding runs on a device.
type deviceCodec struct {
	inner compress.Codec
	dev   Device
	// queues are response queues of depth 1: a decoder submits one page
	// and waits for it, so each call takes its own (pooled) queue and no
	// response can reach another caller.
	queues sync.Pool
}

func (c *deviceCodec) Encode(dst, src []byte) []byte { return c.inner.Encode(dst, src) }
func (c *deviceCodec) EncodeLevel(dst, src []byte, level int) []byte {
	return c.inner.EncodeLevel(dst, src, level)
}
func (c *deviceCodec) CompressBound(n int64) int64 { return c.inner.CompressBound(n) }

// Decode is compress.Codec's form; nicflow's readers call DecodeWithError
// (through compress.Decode).
func (c *deviceCodec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err) // compress.Decode recovers a Codec's panic into an error
	}
	return out
}

// DecodeWithError decompresses one block on the device, or on this core
// when the device refuses or fails it.
func (c *deviceCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	q, _ := c.queues.Get().(Queue)
	if q == nil {
		q = c.dev.OpenQueue(1)
	}
	r := &Request{Op: OpKernel, Src: src, Dst: dst, Kernel: c.cpuDecode}
	if !q.Submit(r) {
		c.queues.Put(q)
		return c.fallback(dst, src)
	}
	<-q.Done()
	c.queues.Put(q)
	return c.result(r)
}

// result is a completed request's block, decoded on this core when the
// device failed it.
func (c *deviceCodec) result(r *Request) ([]byte, error) {
	var de *DeviceError
	if errors.As(r.Err, &de) {
		return c.fallback(r.Dst, r.Src)
	}
	if r.Err == nil {
		PageOffload.DevicePages.Add(1)
		PageOffload.DeviceBytes.Add(int64(len(r.Out)))
	}
	return r.Out, r.Err
}

// fallback decodes a block the device refused or failed on this core.
func (c *deviceCodec) fallback(dst, src []byte) ([]byte, error) {
	PageOffload.CPUPages.Add(1)
	return c.cpuDecode(dst, src)
}

// DecodeBatch decompresses srcs[i] into dsts[i] (outs[i], errs[i]):
// every block is submitted before any is waited for, so that one decoder's
// pages (storage's page reader hands over a window of a column chunk's
// pages) keep several of the device's engines busy; a block the device
// refuses or fails runs on this core.
func (c *deviceCodec) DecodeBatch(dsts, srcs, outs [][]byte, errs []error) {
	q := c.dev.OpenQueue(len(srcs))
	defer q.Close()
	reqs := make([]*Request, len(srcs))
	sent := 0
	for i := range srcs {
		r := &Request{Op: OpKernel, Src: srcs[i], Dst: dsts[i], Kernel: c.cpuDecode}
		if q.Submit(r) {
			reqs[i] = r
			sent++
			continue
		}
		outs[i], errs[i] = c.fallback(dsts[i], srcs[i])
	}
	for ; sent > 0; sent-- {
		<-q.Done()
	}
	for i, r := range reqs {
		if r != nil {
			outs[i], errs[i] = c.result(r)
		}
	}
}

func (c *deviceCodec) cpuDecode(dst, src []byte) ([]byte, error) {
	return compress.Decode(c.inner, dst, src)
}
