package shuffle

import (
	"encoding/binary"
	"fmt"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Message wire format (Buddy, section 3): an 8-byte little-endian header
// followed by the payload. Messages of any size are concatenated freely in
// one buffer; nothing is padded.
//
//	bytes 0-3  payload size in bytes
//	bytes 4-7  destination: bits 0-23 the receiver's index in its channel,
//	           bits 24-31 the message kind (data, end of stream, error)
const (
	msgHeaderSize = 8
	// MaxReceivers is the number of receivers a channel can address with the
	// 24-bit destination field.
	MaxReceivers = 1 << 24
	dstMask      = MaxReceivers - 1
)

// msgKind tells the runtime library what a message carries. The routing
// agent never looks at it: it routes by destination only.
type msgKind uint8

const (
	// kindData is an application payload.
	kindData msgKind = iota
	// kindEOS ends one sender's stream to one receiver. Payload: sender index
	// (u32) and the number of data messages the sender sent to this receiver
	// (u64). See the termination protocol in doc.go.
	kindEOS
	// kindError reports a sender's failure to every receiver. Payload: sender
	// index (u32, or agentSender when the routing agent raises it), the
	// nferr.Kind (u8) and the message text.
	kindError
	numMsgKinds
)

// agentSender marks an error raised by a routing agent (a lost peer or
// worker) rather than by a sender task.
const agentSender = ^uint32(0)

const (
	eosPayloadSize   = 12
	errorPayloadHead = 5
	// maxErrorText bounds error texts carried in messages; longer texts are
	// cut (an error message is for humans, not a data channel).
	maxErrorText = 4096
)

func putMsgHeader(b []byte, size int, dst int, k msgKind) {
	binary.LittleEndian.PutUint32(b[0:4], uint32(size))
	binary.LittleEndian.PutUint32(b[4:8], uint32(dst)|uint32(k)<<24)
}

func readMsgHeader(b []byte) (size uint32, dst uint32, k msgKind) {
	size = binary.LittleEndian.Uint32(b[0:4])
	w := binary.LittleEndian.Uint32(b[4:8])
	return size, w & dstMask, msgKind(w >> 24)
}

func appendEOS(b []byte, dst int, sender int, count uint64) []byte {
	var m [msgHeaderSize + eosPayloadSize]byte
	putMsgHeader(m[:], eosPayloadSize, dst, kindEOS)
	binary.LittleEndian.PutUint32(m[8:12], uint32(sender))
	binary.LittleEndian.PutUint64(m[12:20], count)
	return append(b, m[:]...)
}

func errorPayload(sender uint32, err error) []byte {
	k, text := nferr.Encode(err)
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	p := make([]byte, errorPayloadHead+len(text))
	binary.LittleEndian.PutUint32(p[0:4], sender)
	p[4] = byte(k)
	copy(p[5:], text)
	return p
}

func appendError(b []byte, dst int, payload []byte) []byte {
	var h [msgHeaderSize]byte
	putMsgHeader(h[:], len(payload), dst, kindError)
	b = append(b, h[:]...)
	return append(b, payload...)
}

// parseEOS reads an end-of-stream payload.
func parseEOS(p []byte) (sender uint32, count uint64, err error) {
	if len(p) != eosPayloadSize {
		return 0, 0, fmt.Errorf("end-of-stream message of %d bytes, want %d", len(p), eosPayloadSize)
	}
	return binary.LittleEndian.Uint32(p[0:4]), binary.LittleEndian.Uint64(p[4:12]), nil
}

// parseError reads an error payload.
func parseError(p []byte) (sender uint32, k nferr.Kind, text string, err error) {
	if len(p) < errorPayloadHead {
		return 0, 0, "", fmt.Errorf("error message of %d bytes, want at least %d", len(p), errorPayloadHead)
	}
	return binary.LittleEndian.Uint32(p[0:4]), nferr.Kind(p[4]), string(p[5:]), nil
}

// checkMessages walks a buffer of concatenated messages and verifies that it
// holds exactly count well-formed messages whose destinations are below
// receivers and whose payloads are at most maxMsg bytes. It is how every
// frame from outside the process is vetted before it is routed or
// delivered, so the routing loop itself can trust lengths.
func checkMessages(body []byte, count uint32, receivers int, maxMsg int) error {
	off, n := 0, uint32(0)
	for off < len(body) {
		if len(body)-off < msgHeaderSize {
			return fmt.Errorf("truncated message header at byte %d of %d", off, len(body))
		}
		size, dst, k := readMsgHeader(body[off:])
		if int64(size) > int64(maxMsg) {
			return fmt.Errorf("message of %d bytes at byte %d exceeds the limit of %d", size, off, maxMsg)
		}
		if k >= numMsgKinds {
			return fmt.Errorf("message of unknown kind %d at byte %d", k, off)
		}
		if receivers >= 0 && int(dst) >= receivers {
			return fmt.Errorf("message to receiver %d at byte %d, channel has %d", dst, off, receivers)
		}
		end := off + msgHeaderSize + int(size)
		if end > len(body) || end < off {
			return fmt.Errorf("message of %d bytes at byte %d overruns the frame of %d bytes", size, off, len(body))
		}
		off = end
		n++
	}
	if n != count {
		return fmt.Errorf("frame holds %d messages, header says %d", n, count)
	}
	return nil
}
