package shuffle

import (
	"fmt"
	"strings"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Codec compresses frame bodies between agents.
type Codec uint8

const (
	// CodecNone sends bodies as they are.
	CodecNone Codec = iota
	// CodecS2 is klauspost/compress/s2: LZ4-class speed (several GB/s per
	// core), a Snappy-compatible format with better ratios.
	CodecS2
	// CodecZstd is zstd at its fastest level: slower than s2, smaller output;
	// for links that are slow compared with the cores.
	CodecZstd
	numCodecs
)

var codecNames = [...]string{CodecNone: "none", CodecS2: "s2", CodecZstd: "zstd"}

func (c Codec) String() string {
	if int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// ParseCodec reads "none", "s2" (also "lz4", which maps to s2: same speed
// class, one less dependency) or "zstd".
func ParseCodec(s string) (Codec, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "":
		return CodecNone, nil
	case "s2", "lz4":
		return CodecS2, nil
	case "zstd":
		return CodecZstd, nil
	}
	return 0, nferr.Queryf("unknown codec %q: want none, s2 or zstd", s)
}

// codecBackoff is how many frames a link sends uncompressed after a sample
// did not compress well enough: 64 frames of 32 KiB is 2 MiB, short enough
// to notice when the data changes and long enough to make the wasted sample
// negligible.
const codecBackoff = 64

// zstd encoders and decoders are expensive to build (tables, goroutines);
// one of each serves the whole process. Their EncodeAll and DecodeAll are
// safe for concurrent use.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdEnc, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		if zstdErr != nil {
			return
		}
		// DecodeAll writes into the caller's buffer, sized from the frame
		// header, and never beyond its capacity (WithDecodeAllCapLimit); a
		// hostile body cannot make it allocate more than maxFrameLimit.
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxFrameLimit), zstd.WithDecodeAllCapLimit(true))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compressInto compresses src with c, appending to dst[:0].
func compressInto(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecS2:
		if need := s2.MaxEncodedLen(len(src)); cap(dst) < need {
			dst = make([]byte, need)
		}
		return s2.Encode(dst[:cap(dst)], src), nil
	case CodecZstd:
		enc, _, err := zstdCodecs()
		if err != nil {
			return nil, nferr.Internalf("shuffle: zstd encoder: %v", err)
		}
		return enc.EncodeAll(src, dst[:0]), nil
	}
	return nil, nferr.Internalf("shuffle: compress with codec %v", c)
}

// decompressInto decompresses src into dst, which must have length rawLen
// (the length the frame header announces). Any mismatch or decoder failure
// is a KindData error; decoder panics are contained.
func decompressInto(c Codec, dst, src []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = nferr.Dataf("%v decoder failed: %v", c, r)
		}
	}()
	rawLen := len(dst)
	switch c {
	case CodecS2:
		n, derr := s2.DecodedLen(src)
		if derr != nil {
			return nferr.Dataf("s2 body: %v", derr)
		}
		if n != rawLen {
			return nferr.Dataf("s2 body decodes to %d bytes, header says %d", n, rawLen)
		}
		out, derr := s2.Decode(dst, src)
		if derr != nil {
			return nferr.Dataf("s2 body: %v", derr)
		}
		if len(out) != rawLen || (rawLen > 0 && &out[0] != &dst[0]) {
			return nferr.Dataf("s2 body decoded to %d bytes, header says %d", len(out), rawLen)
		}
		return nil
	case CodecZstd:
		_, dec, zerr := zstdCodecs()
		if zerr != nil {
			return nferr.Internalf("shuffle: zstd decoder: %v", zerr)
		}
		out, derr := dec.DecodeAll(src, dst[:0])
		if derr != nil {
			return nferr.Dataf("zstd body: %v", derr)
		}
		if len(out) != rawLen || (rawLen > 0 && &out[0] != &dst[0]) {
			return nferr.Dataf("zstd body decodes to %d bytes, header says %d", len(out), rawLen)
		}
		return nil
	}
	return nferr.Dataf("frame compressed with unknown codec %d", c)
}
