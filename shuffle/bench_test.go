package shuffle

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkHistogram runs Buddy's histogram pattern in process: every rank
// sends 8-byte increments to random ranks. One op is one message; the
// figure to read is ns/op (or its inverse, messages per second).
func BenchmarkHistogram(b *testing.B) {
	for _, mode := range []clusterMode{allModes[0], allModes[1]} {
		for _, agg := range []int{1 << 10, 4 << 10, 16 << 10} {
			b.Run(fmt.Sprintf("%s/agg=%dKiB", mode.name, agg>>10), func(b *testing.B) {
				c := newCluster(b, 2, mode, Options{AggSize: agg})
				benchHistogram(b, c, 2)
			})
		}
	}
}

func benchHistogram(b *testing.B, c *cluster, perNode int) {
	nodes := len(c.clients)
	ranks := nodes * perNode
	spec := UniformSpec(nextChanID(), nodes, perNode)
	per := b.N/ranks + 1
	b.ReportAllocs()
	b.SetBytes(msgHeaderSize + 8)
	b.ResetTimer()
	var wg sync.WaitGroup
	for r := 0; r < ranks; r++ {
		ep, err := c.clients[r/perNode].Open(spec, r, r)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func(r int, ep *Endpoint) {
			defer wg.Done()
			defer ep.Close()
			var msg [8]byte
			x := uint64(r)*0x9E3779B97F4A7C15 + 1
			var sum uint64
			drain := func() {
				for {
					p, ok, err := ep.TryRecv()
					if err != nil || !ok {
						return
					}
					sum += binary.LittleEndian.Uint64(p)
				}
			}
			for i := 0; i < per; i++ {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				binary.LittleEndian.PutUint64(msg[:], x)
				dst := int(x % uint64(ranks))
				for {
					ok, err := ep.TrySend(dst, msg[:])
					if err != nil {
						b.Error(err)
						return
					}
					if ok {
						break
					}
					drain()
					in, bufs := ep.Wait()
					select {
					case <-in:
					case <-bufs:
					}
				}
			}
			ep.CloseSend()
			for {
				p, err := ep.Recv(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Error(err)
					return
				}
				sum += binary.LittleEndian.Uint64(p)
			}
		}(r, ep)
	}
	wg.Wait()
}

func BenchmarkFrameWriteRead(b *testing.B) {
	f := &frame{typ: frameData, channel: 1}
	var h [msgHeaderSize]byte
	for len(f.body) < 32<<10-24 {
		putMsgHeader(h[:], 8, 0, kindData)
		f.body = append(append(f.body, h[:]...), 1, 2, 3, 4, 5, 6, 7, 8)
		f.count++
	}
	var buf bytes.Buffer
	fw := newFrameWriter(&buf)
	b.ReportAllocs()
	b.SetBytes(int64(len(f.body)))
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := fw.writeFrames([]*frame{f}); err != nil {
			b.Fatal(err)
		}
		fr := newFrameReader(&buf, "bench", DefaultMaxFrame, 0)
		g, err := fr.readFrame()
		if err != nil {
			b.Fatal(err)
		}
		if err := checkMessages(g.body, g.count, 1, DefaultMaxFrame); err != nil {
			b.Fatal(err)
		}
		g.release()
	}
}

func BenchmarkBatchEncodeDecode(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := buildBatch(mem, 0, 8192, -1, 1)
	defer rec.Release()
	enc, _ := NewBatchEncoder(testSchema, mem)
	dec, _ := NewBatchDecoder(testSchema, mem)
	defer dec.Close()
	p, _ := enc.Encode(rec)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for i := 0; i < b.N; i++ {
		p, err := enc.Encode(rec)
		if err != nil {
			b.Fatal(err)
		}
		r, err := dec.Decode(p)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}
