package shuffle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Frame wire format. A frame is the unit a link carries: a 40-byte
// little-endian header followed by bodyLen bytes.
//
//	 0  u32  magic "NFS1" (format version 1)
//	 4  u8   frame type (data, credit, hello, open, close, error)
//	 5  u8   codec of the body (CodecNone, CodecS2, CodecZstd)
//	 6  u16  reserved, zero
//	 8  u64  channel (the exchange the frame belongs to; 0 for link control)
//	16  u32  aux: receiver index of a delivery frame, credit bytes, ...
//	20  u32  count: number of messages in a data frame
//	24  u32  rawLen: body length before compression
//	28  u32  bodyLen: bytes that follow the header
//	32  u64  checksum: xxh3 of the body seeded with xxh3 of bytes 0-31
//
// INVARIANT: a frame read from a socket is fully verified (magic, type,
// reserved bits, lengths against MaxFrame, checksum, and for data frames
// every message header) before anything routes or delivers it; a bad frame
// is a KindData error naming the peer and closes that connection only.
const (
	frameHeaderSize = 40
	frameMagic      = 0x3153464E // "NFS1" little-endian
)

const (
	frameData   uint8 = iota + 1 // body: concatenated messages
	frameCredit                  // aux: bytes of window returned for channel
	frameHello                   // body: handshake (see transport.go)
	frameOpen                    // body: channel spec and the endpoint's indexes
	frameClose                   // body: the closed endpoint's indexes
	frameError                   // body: kind (u8) and text; channel 0: the sender closes next
	numFrameTypes
)

var frameTypeNames = [...]string{"?", "data", "credit", "hello", "open", "close", "error"}

// frame is a frame in memory. Data frames keep their messages in body,
// uncompressed, except between the codec and the socket.
type frame struct {
	typ     uint8
	codec   Codec
	channel uint64
	aux     uint32
	count   uint32
	// rawLen is the uncompressed body length of a compressed frame.
	rawLen uint32
	// body holds messages or a control payload.
	body []byte
	// extra, when set, is the payload of the single large message whose
	// 8-byte header is body: it is sent by scatter-gather, never copied.
	extra []byte
	// buf is the pooled backing array of body (nil when body is not pooled).
	buf []byte

	// owner gets the frame back when it is released: a router's completion
	// queue, an endpoint's buffer ring, or nil for frames that return their
	// buffer to the global pool.
	owner frameOwner
	// creditLink and creditN: a received frame holds creditN bytes of the
	// sender's window on creditLink until it is released.
	creditLink *link
	creditN    int

	// Agent bookkeeping for frames a routing thread filled.
	slot   int
	rchan  *routerChan
	firstT int64 // monotonic nanoseconds of the first message (flush timeout)
	// from names the link a received frame came from (for errors).
	from *link
	// ch is the agent channel a received data frame belongs to.
	ch *channel
	// hdr holds the message header of a large message sent by reference.
	hdr [msgHeaderSize]byte
}

// frameOwner takes back frames it lent out (send completion).
type frameOwner interface {
	recycle(f *frame)
}

// size is the frame's weight against flow-control windows: header plus
// uncompressed body. Sender and receiver compute it identically.
func (f *frame) size() int { return frameHeaderSize + len(f.body) + len(f.extra) }

// release ends the frame's life at this hop: the window it held goes back
// to its sender and the frame goes back to its owner (or to the pool).
func (f *frame) release() {
	if l := f.creditLink; l != nil {
		f.creditLink = nil
		l.returnCredit(f.channel, f.creditN)
	}
	if f.owner != nil {
		f.owner.recycle(f)
		return
	}
	f.free()
}

// free returns a pool-owned frame's buffer and the frame itself.
func (f *frame) free() {
	if f.buf != nil {
		putBuf(f.buf)
	}
	*f = frame{}
	framePool.Put(f)
}

var framePool = sync.Pool{New: func() any { return new(frame) }}

func newFrame() *frame { return framePool.Get().(*frame) }

// Buffers of frames read from sockets and of control frames come from
// power-of-two size classes. NB: sync.Pool is justified here by the
// histogram benchmark: without it every 32 KiB frame read is a fresh
// allocation and GC dominates the agent's profile.
const (
	minBufClass = 9  // 512 B
	maxBufClass = 30 // 1 GiB = maxFrameLimit
)

var bufPools [maxBufClass + 1]sync.Pool

func bufClass(n int) int {
	if n <= 1<<minBufClass {
		return minBufClass
	}
	return bits.Len(uint(n - 1))
}

// getBuf returns a slice of length n from the pool.
func getBuf(n int) []byte {
	c := bufClass(n)
	if c > maxBufClass {
		return make([]byte, n)
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// putBuf returns a slice obtained from getBuf.
func putBuf(b []byte) {
	c := bufClass(cap(b))
	if c > maxBufClass || cap(b) != 1<<c {
		return
	}
	b = b[:0]
	bufPools[c].Put(&b)
}

// header is a decoded frame header.
type header struct {
	typ      uint8
	codec    Codec
	channel  uint64
	aux      uint32
	count    uint32
	rawLen   uint32
	bodyLen  uint32
	checksum uint64
}

func putHeader(b []byte, h *header) {
	binary.LittleEndian.PutUint32(b[0:4], frameMagic)
	b[4] = h.typ
	b[5] = byte(h.codec)
	b[6], b[7] = 0, 0
	binary.LittleEndian.PutUint64(b[8:16], h.channel)
	binary.LittleEndian.PutUint32(b[16:20], h.aux)
	binary.LittleEndian.PutUint32(b[20:24], h.count)
	binary.LittleEndian.PutUint32(b[24:28], h.rawLen)
	binary.LittleEndian.PutUint32(b[28:32], h.bodyLen)
	binary.LittleEndian.PutUint64(b[32:40], h.checksum)
}

// parseHeader decodes and checks a header against the limits; it does not
// check the checksum (the body is not read yet).
func parseHeader(b []byte, maxFrame int) (header, error) {
	var h header
	if m := binary.LittleEndian.Uint32(b[0:4]); m != frameMagic {
		return h, fmt.Errorf("bad magic %#08x (not a nicflow shuffle peer, or a different version)", m)
	}
	h.typ = b[4]
	h.codec = Codec(b[5])
	if h.typ == 0 || h.typ >= numFrameTypes {
		return h, fmt.Errorf("unknown frame type %d", h.typ)
	}
	if h.codec >= numCodecs {
		return h, fmt.Errorf("unknown codec %d", h.codec)
	}
	if b[6] != 0 || b[7] != 0 {
		return h, fmt.Errorf("reserved header bits set")
	}
	h.channel = binary.LittleEndian.Uint64(b[8:16])
	h.aux = binary.LittleEndian.Uint32(b[16:20])
	h.count = binary.LittleEndian.Uint32(b[20:24])
	h.rawLen = binary.LittleEndian.Uint32(b[24:28])
	h.bodyLen = binary.LittleEndian.Uint32(b[28:32])
	h.checksum = binary.LittleEndian.Uint64(b[32:40])
	if int64(h.bodyLen) > int64(maxFrame) || int64(h.rawLen) > int64(maxFrame) {
		return h, fmt.Errorf("%s frame of %d bytes (%d uncompressed) exceeds the limit of %d", frameTypeNames[h.typ], h.bodyLen, h.rawLen, maxFrame)
	}
	if h.codec == CodecNone && h.rawLen != h.bodyLen {
		return h, fmt.Errorf("uncompressed frame with body %d bytes but raw length %d", h.bodyLen, h.rawLen)
	}
	if h.typ != frameData && h.count != 0 {
		return h, fmt.Errorf("%s frame with a message count", frameTypeNames[h.typ])
	}
	if h.typ != frameData && h.codec != CodecNone {
		return h, fmt.Errorf("compressed %s frame", frameTypeNames[h.typ])
	}
	return h, nil
}

func checksum(hdr []byte, body []byte) uint64 {
	return xxh3.HashSeed(body, xxh3.Hash(hdr[:32]))
}

// frameWriter writes frames to a byte stream, coalescing a batch of frames
// into one vectored write where the stream supports it.
type frameWriter struct {
	w      io.Writer
	bw     *bufio.Writer // for streams without writev (TLS, shared memory)
	hasher *xxh3.Hasher
	hdrs   []byte
	bufs   net.Buffers
}

// writevCapable reports whether net.Buffers.WriteTo turns into one writev.
func writevCapable(w io.Writer) bool {
	switch w.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

func newFrameWriter(w io.Writer) *frameWriter {
	fw := &frameWriter{w: w, hasher: xxh3.New()}
	if !writevCapable(w) {
		// 64 KiB: two default frames per write system call or TLS record
		// group; larger frames bypass the buffer.
		fw.bw = bufio.NewWriterSize(w, 64<<10)
	}
	return fw
}

// writeFrames writes frames whose bodies are ready for the wire (already
// compressed when f.codec says so; rawLen set for compressed frames).
func (fw *frameWriter) writeFrames(frames []*frame) error {
	need := len(frames) * frameHeaderSize
	if cap(fw.hdrs) < need {
		fw.hdrs = make([]byte, need)
	}
	fw.hdrs = fw.hdrs[:need]
	fw.bufs = fw.bufs[:0]
	for i, f := range frames {
		hb := fw.hdrs[i*frameHeaderSize : (i+1)*frameHeaderSize]
		n := len(f.body) + len(f.extra)
		raw := uint32(n)
		if f.codec != CodecNone {
			raw = f.rawLen
		}
		h := header{typ: f.typ, codec: f.codec, channel: f.channel, aux: f.aux, count: f.count, rawLen: raw, bodyLen: uint32(n)}
		putHeader(hb, &h)
		if f.extra == nil {
			h.checksum = checksum(hb, f.body)
		} else {
			fw.hasher.ResetSeed(xxh3.Hash(hb[:32]))
			fw.hasher.Write(f.body)
			fw.hasher.Write(f.extra)
			h.checksum = fw.hasher.Sum64()
		}
		binary.LittleEndian.PutUint64(hb[32:40], h.checksum)
		fw.bufs = append(fw.bufs, hb)
		if len(f.body) > 0 {
			fw.bufs = append(fw.bufs, f.body)
		}
		if len(f.extra) > 0 {
			fw.bufs = append(fw.bufs, f.extra)
		}
	}
	if fw.bw == nil {
		bufs := fw.bufs
		_, err := bufs.WriteTo(fw.w)
		clear(fw.bufs[:cap(fw.bufs)])
		return err
	}
	for _, b := range fw.bufs {
		if _, err := fw.bw.Write(b); err != nil {
			return err
		}
	}
	clear(fw.bufs[:cap(fw.bufs)])
	return fw.bw.Flush()
}

// frameReader reads and verifies frames from a byte stream.
type frameReader struct {
	r        *bufio.Reader
	peer     string
	maxFrame int
	hdr      [frameHeaderSize]byte
}

// newFrameReader reads frames from r. bufSize is the read buffer: one
// aggregation buffer plus its header, so that a frame arrives in one read
// system call (bigger frames bypass the buffer).
func newFrameReader(r io.Reader, peer string, maxFrame, bufSize int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, max(bufSize, 4096)), peer: peer, maxFrame: maxFrame}
}

// errPeerClosed is returned when the stream ends cleanly between frames.
var errPeerClosed = errors.New("connection closed")

// readFrame reads the next frame. The body is verified against the checksum
// but not decompressed. A stream that ends between frames returns
// errPeerClosed; one that ends inside a frame, or carries a bad frame,
// returns a KindData error naming the peer.
func (fr *frameReader) readFrame() (*frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if err == io.EOF {
			return nil, errPeerClosed
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nferr.Dataf("shuffle: truncated frame header from %s", fr.peer)
		}
		return nil, err
	}
	h, err := parseHeader(fr.hdr[:], fr.maxFrame)
	if err != nil {
		return nil, nferr.Dataf("shuffle: corrupt frame from %s: %v", fr.peer, err)
	}
	f := newFrame()
	f.typ, f.codec, f.channel, f.aux, f.count, f.rawLen = h.typ, h.codec, h.channel, h.aux, h.count, h.rawLen
	if h.bodyLen > 0 {
		f.buf = getBuf(int(h.bodyLen))
		f.body = f.buf
		if _, err := io.ReadFull(fr.r, f.body); err != nil {
			f.free()
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, nferr.Dataf("shuffle: truncated %s frame from %s: want %d body bytes", frameTypeNames[h.typ], fr.peer, h.bodyLen)
			}
			return nil, err
		}
	}
	if sum := checksum(fr.hdr[:], f.body); sum != h.checksum {
		f.free()
		return nil, nferr.Dataf("shuffle: corrupt %s frame from %s: checksum %#016x, header says %#016x", frameTypeNames[h.typ], fr.peer, sum, h.checksum)
	}
	return f, nil
}
