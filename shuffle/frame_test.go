package shuffle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// encodeFrames serializes frames as a link writes them.
func encodeFrames(t testing.TB, fs ...*frame) []byte {
	var buf bytes.Buffer
	fw := newFrameWriter(&buf)
	if err := fw.writeFrames(fs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dataFrame(ch uint64, msgs ...[]byte) *frame {
	f := &frame{typ: frameData, channel: ch}
	for i, m := range msgs {
		var h [msgHeaderSize]byte
		putMsgHeader(h[:], len(m), i, kindData)
		f.body = append(append(f.body, h[:]...), m...)
		f.count++
	}
	return f
}

func TestFrameRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 100000)
	f1 := dataFrame(7, []byte("a"), []byte("bcd"), nil)
	f2 := &frame{typ: frameCredit, channel: 9, aux: 4096}
	// A large message by reference: header in body, payload in extra.
	f3 := &frame{typ: frameData, channel: 7, count: 1, extra: big}
	putMsgHeader(f3.hdr[:], len(big), 3, kindData)
	f3.body = f3.hdr[:]
	wire := encodeFrames(t, f1, f2, f3)
	fr := newFrameReader(bytes.NewReader(wire), "peer X", DefaultMaxFrame, 0)
	g1, err := fr.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if g1.typ != frameData || g1.channel != 7 || g1.count != 3 || !bytes.Equal(g1.body, f1.body) {
		t.Fatalf("frame 1 differs: %+v", g1)
	}
	if err := checkMessages(g1.body, g1.count, 3, 100); err != nil {
		t.Fatal(err)
	}
	g2, err := fr.readFrame()
	if err != nil || g2.typ != frameCredit || g2.aux != 4096 || g2.channel != 9 {
		t.Fatalf("frame 2: %+v %v", g2, err)
	}
	g3, err := fr.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	size, dst, _ := readMsgHeader(g3.body)
	if size != uint32(len(big)) || dst != 3 || !bytes.Equal(g3.body[msgHeaderSize:], big) {
		t.Fatal("scatter-gather frame differs")
	}
	if _, err := fr.readFrame(); !errors.Is(err, errPeerClosed) {
		t.Fatalf("clean end: got %v", err)
	}
}

// TestCorruptFramesRejected: every single-byte corruption and every
// truncation of a valid stream is a KindData error naming the peer (or,
// for a cut exactly between frames, a clean end) and never a panic or a
// frame that differs from what was sent.
func TestCorruptFramesRejected(t *testing.T) {
	f := dataFrame(3, []byte("hello"), []byte("world!"))
	wire := encodeFrames(t, f)
	for i := range wire {
		for _, x := range []byte{0x01, 0x80, 0xFF} {
			bad := append([]byte(nil), wire...)
			bad[i] ^= x
			fr := newFrameReader(bytes.NewReader(bad), "node 4 (10.0.0.9:7500)", DefaultMaxFrame, 0)
			g, err := fr.readFrame()
			if err == nil {
				if err2 := checkMessages(g.body, g.count, -1, DefaultMaxFrame); err2 == nil && bytes.Equal(g.body, f.body) && g.channel == f.channel {
					t.Fatalf("byte %d ^ %#x: corrupted frame accepted unchanged", i, x)
				}
				t.Fatalf("byte %d ^ %#x: corrupted frame accepted", i, x)
			}
			if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "node 4") {
				t.Fatalf("byte %d: got %v, want KindData naming the peer", i, err)
			}
		}
	}
	for cut := 1; cut < len(wire); cut++ {
		fr := newFrameReader(bytes.NewReader(wire[:cut]), "node 4", DefaultMaxFrame, 0)
		_, err := fr.readFrame()
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("cut at %d: got %v, want a KindData truncation", cut, err)
		}
	}
}

func TestFrameLimits(t *testing.T) {
	f := dataFrame(1, bytes.Repeat([]byte("y"), 5000))
	wire := encodeFrames(t, f)
	fr := newFrameReader(bytes.NewReader(wire), "peer", 4096, 0)
	if _, err := fr.readFrame(); !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("oversized frame: got %v", err)
	}
	// A header announcing 1 GiB must not make the reader allocate it.
	var h [frameHeaderSize]byte
	putHeader(h[:], &header{typ: frameData, bodyLen: 1 << 30, rawLen: 1 << 30, count: 1})
	fr = newFrameReader(bytes.NewReader(h[:]), "peer", DefaultMaxFrame, 0)
	if _, err := fr.readFrame(); !nferr.Is(err, nferr.KindData) {
		t.Fatalf("huge header: got %v", err)
	}
}

func TestCheckMessages(t *testing.T) {
	f := dataFrame(1, []byte("abc"), []byte("de"))
	if err := checkMessages(f.body, 2, 2, 10); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		body      []byte
		count     uint32
		receivers int
		max       int
	}{
		"count":          {f.body, 3, 2, 10},
		"receiver":       {f.body, 2, 1, 10},
		"too big":        {f.body, 2, 2, 2},
		"truncated":      {f.body[:len(f.body)-1], 2, 2, 10},
		"partial header": {append(append([]byte(nil), f.body...), 1, 2, 3), 2, 2, 10},
	} {
		if err := checkMessages(c.body, c.count, c.receivers, c.max); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	bad := append([]byte(nil), f.body...)
	binary.LittleEndian.PutUint32(bad[4:8], uint32(numMsgKinds)<<24)
	if err := checkMessages(bad, 2, -1, 10); err == nil {
		t.Error("unknown kind accepted")
	}
}

// FuzzReadFrame feeds arbitrary bytes to the frame reader and the message
// checker: they must return errors, never panic, and anything accepted must
// re-encode to the same bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(encodeFrames(f, dataFrame(3, []byte("hello"), []byte("world!"))))
	f.Add(encodeFrames(f, &frame{typ: frameCredit, channel: 9, aux: 100}))
	f.Add(encodeFrames(f, &frame{typ: frameHello, body: hello{role: roleAgent, window: 1 << 20, maxFrame: 1 << 20}.encode()}))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := newFrameReader(bytes.NewReader(b), "fuzz", 1<<20, 0)
		for {
			g, err := fr.readFrame()
			if err != nil {
				return
			}
			if g.typ == frameData {
				_ = checkMessages(g.body, g.count, 1<<20, 1<<20)
			}
			if g.typ == frameOpen {
				_, _, _, _ = decodeOpen(g.body)
			}
		}
	})
}
