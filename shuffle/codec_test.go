package shuffle

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

func TestCodecRoundTrip(t *testing.T) {
	text := bytes.Repeat([]byte("lineitem|1996-03-13|N|O|DELIVER IN PERSON|TRUCK|"), 2000)
	random := make([]byte, 50000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, c := range []Codec{CodecS2, CodecZstd} {
		for _, src := range [][]byte{text, random, {}, []byte("x")} {
			comp, err := compressInto(c, nil, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(src) == len(text) && len(comp) > len(src)/10 {
				t.Errorf("%v compresses repetitive text only to %d of %d bytes", c, len(comp), len(src))
			}
			out := make([]byte, len(src))
			if err := decompressInto(c, out, comp); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			if !bytes.Equal(out, src) {
				t.Fatalf("%v round trip differs", c)
			}
			// Announced sizes that lie, and corrupt bodies, are KindData.
			if len(src) > 0 {
				if err := decompressInto(c, make([]byte, len(src)-1), comp); !nferr.Is(err, nferr.KindData) {
					t.Errorf("%v with a wrong raw length: %v", c, err)
				}
			}
			if len(comp) > 4 {
				bad := append([]byte(nil), comp...)
				for i := 0; i < len(bad); i += 3 {
					bad[i] ^= 0x5A
				}
				err := decompressInto(c, make([]byte, len(src)), bad)
				if err != nil && !nferr.Is(err, nferr.KindData) {
					t.Errorf("%v corrupt body: %v is not KindData", c, err)
				}
			}
		}
	}
	if _, err := ParseCodec("brotli"); !nferr.Is(err, nferr.KindQuery) {
		t.Fatal("unknown codec accepted")
	}
}

// TestCompressedLinks runs traffic over TCP with each codec and device,
// and checks that compressible frames were compressed and incompressible
// ones skipped by the adaptive codec.
func TestCompressedLinks(t *testing.T) {
	nic, err := NewNICDevice(NICOptions{Engines: 2, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer nic.Close()
	for _, tc := range []struct {
		name  string
		codec Codec
		dev   Device
	}{
		{"s2-cpu", CodecS2, nil},
		{"zstd-cpu", CodecZstd, nil},
		{"s2-nic", CodecS2, nic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 2, tcpCorun, Options{AggSize: 8192, Codec: tc.codec, Device: tc.dev})
			// payloadFor fills bytes with a short arithmetic pattern: it
			// compresses well.
			runAllToAll(t, c, 2, 3000, 200, 21)
			s := c.agents[0].Stats()
			if s.Compressed == 0 {
				t.Fatalf("no frame was compressed: %+v", s)
			}
			if s.RemoteWireBytesOut >= s.RemoteBytesOut {
				t.Fatalf("wire bytes %d not below raw bytes %d", s.RemoteWireBytesOut, s.RemoteBytesOut)
			}
		})
	}
	if nic.Served() == 0 {
		t.Fatal("the NIC device served no request")
	}
}

func TestAdaptiveCodecSkipsIncompressible(t *testing.T) {
	c := newCluster(t, 2, tcpCorun, Options{AggSize: 8192, Codec: CodecS2})
	spec := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	ctx := context.Background()
	s, r := openPair(t, c, spec)
	rng := rand.New(rand.NewPCG(3, 4))
	go func() {
		for i := 0; i < 2000; i++ {
			p := make([]byte, 1000)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			s.Send(ctx, 0, p)
		}
		s.Close()
	}()
	n := countMessages(t, ctx, r)
	if n != 2000 {
		t.Fatalf("got %d messages", n)
	}
	st := c.agents[0].Stats()
	if st.CompressSkipped < 10*st.Compressed || st.CompressSkipped == 0 {
		t.Fatalf("adaptive codec compressed %d and skipped %d frames of random bytes", st.Compressed, st.CompressSkipped)
	}
}

// TestDeviceFallback: a device that refuses (full queue) or fails requests
// still gets every frame through, on the CPU.
func TestDeviceFallback(t *testing.T) {
	nic, err := NewNICDevice(NICOptions{Engines: 1, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	nic.failEvery = 3
	defer nic.Close()
	q := nic.OpenQueue(4)
	src := bytes.Repeat([]byte("abc"), 10000)
	for i := 0; i < 50; i++ {
		r := &Request{Op: OpCompress, Codec: CodecS2, Src: src}
		runOn(q, r)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		d := &Request{Op: OpDecompress, Codec: CodecS2, Src: r.Out, Dst: make([]byte, len(src))}
		runOn(q, d)
		if d.Err != nil || !bytes.Equal(d.Out, src) {
			t.Fatalf("decompress: %v", d.Err)
		}
	}
	// Corrupt input is a data error, not a device failure: no fallback
	// hides it.
	d := &Request{Op: OpDecompress, Codec: CodecS2, Src: []byte("garbage!"), Dst: make([]byte, 10)}
	runOn(q, d)
	if !nferr.Is(d.Err, nferr.KindData) {
		t.Fatalf("corrupt input: %v", d.Err)
	}
	c := newCluster(t, 2, tcpCorun, Options{AggSize: 4096, Codec: CodecS2, Device: nic})
	runAllToAll(t, c, 1, 2000, 300, 22)
	if nic.Refused() == 0 {
		t.Log("note: the one-slot queue never refused a request")
	}
	nic.Close()
	// A closed device refuses everything; the CPU takes over.
	r := &Request{Op: OpCompress, Codec: CodecZstd, Src: src}
	runOn(q, r)
	if r.Err != nil || len(r.Out) == 0 {
		t.Fatalf("closed device: %v", r.Err)
	}
	if _, err := NewNICDevice(NICOptions{Engines: -1}); err == nil || !strings.Contains(err.Error(), "engines") {
		t.Fatalf("bad options accepted: %v", err)
	}
}
