package cluster

import (
	"encoding/binary"
	"encoding/json"

	"github.com/zeebo/xxh3"
	"google.golang.org/grpc/encoding"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The control plane between coordinator and workers is a gRPC service
// ("nicflow.Control") whose messages are frames in our own binary codec
// (content-subtype "nfctl") instead of generated protobuf code:
//
//	frame := magic "NF" | version u8 | type u8 | uvarint len | header (JSON)
//	       | uvarint len | meta | body (rest) | xxh3-64 of everything before (u64 LE)
//
// gRPC bounds every message (Options.MaxMessageSize) and TLS authenticates
// every byte; the checksum still catches a corrupting codec or proxy and
// makes a garbage frame a KindData error rather than a misread task.
const (
	frameMagic0, frameMagic1 = 'N', 'F'
	frameVersion             = 1
	codecName                = "nfctl"
)

// frame types.
const (
	ftTaskSpec  = 1 // coordinator -> worker: the task to run (header: taskRequest)
	ftStarted   = 2 // worker -> coordinator: the task is running (header: taskStatus)
	ftHeartbeat = 3 // worker -> coordinator: still running, current stats (header: taskStatus)
	ftData      = 4 // worker -> coordinator: one Arrow IPC message (meta: flatbuffer header, body)
	ftDone      = 5 // worker -> coordinator: finished (header: taskStatus with final stats and error)
	ftCancel    = 6 // coordinator -> worker: cancel a query's tasks (header: cancelRequest)
	ftAck       = 7 // reply to ftCancel (header: cancelReply)
	// ftFilterPart: worker -> coordinator, the task's part of a
	// cross-stage join key filter (header: filterHeader; body:
	// storage.KeyFilterPart's bytes); ftFilter: coordinator -> worker,
	// the merged filter for a task's scans (same layout).
	ftFilterPart = 8
	ftFilter     = 9
	ftMax        = ftFilter
)

// filterHeader names the cross-stage key filter of an ftFilterPart or
// ftFilter frame (dist.DistPlan.KeyFilters).
type filterHeader struct {
	ID int `json:"id"`
}

type frame struct {
	Type   byte
	Header []byte // JSON
	Meta   []byte
	Body   []byte
}

func (f *frame) marshal() []byte {
	n := 4 + 2*binary.MaxVarintLen64 + len(f.Header) + len(f.Meta) + len(f.Body) + 8
	b := make([]byte, 0, n)
	b = append(b, frameMagic0, frameMagic1, frameVersion, f.Type)
	b = binary.AppendUvarint(b, uint64(len(f.Header)))
	b = append(b, f.Header...)
	b = binary.AppendUvarint(b, uint64(len(f.Meta)))
	b = append(b, f.Meta...)
	b = append(b, f.Body...)
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
}

// unmarshalFrame parses a frame. Slices of f alias b. It never panics.
func unmarshalFrame(b []byte, f *frame) error {
	if len(b) < 4+2+8 {
		return nferr.Dataf("control frame of %d bytes is too short", len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxh3.Hash(body) != sum {
		return nferr.Dataf("control frame checksum mismatch (%d bytes)", len(b))
	}
	if body[0] != frameMagic0 || body[1] != frameMagic1 {
		return nferr.Dataf("control frame has bad magic %q", body[:2])
	}
	if body[2] != frameVersion {
		return nferr.Dataf("control frame version %d, this node speaks %d (mixed nicflow versions?)", body[2], frameVersion)
	}
	if body[3] == 0 || body[3] > ftMax {
		return nferr.Dataf("control frame has unknown type %d", body[3])
	}
	f.Type = body[3]
	p := 4
	for _, dst := range []*[]byte{&f.Header, &f.Meta} {
		l, k := binary.Uvarint(body[p:])
		if k <= 0 || l > uint64(len(body)-p-k) {
			return nferr.Dataf("control frame: bad length at byte %d", p)
		}
		p += k
		*dst = body[p : p+int(l)]
		p += int(l)
	}
	f.Body = body[p:]
	return nil
}

// frameCodec is the gRPC codec for frames.
type frameCodec struct{}

func (frameCodec) Name() string { return codecName }

func (frameCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, nferr.Internalf("control codec: cannot marshal %T", v)
	}
	return f.marshal(), nil
}

func (frameCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return nferr.Internalf("control codec: cannot unmarshal into %T", v)
	}
	// NB: gRPC may reuse data after Unmarshal returns; keep a private copy.
	return unmarshalFrame(append([]byte(nil), data...), f)
}

func init() { encoding.RegisterCodec(frameCodec{}) }

func jsonFrame(t byte, v any) *frame {
	h, err := json.Marshal(v)
	if err != nil {
		// INVARIANT: only our own plain structs are marshaled here.
		panic("cluster: marshaling control header: " + err.Error())
	}
	return &frame{Type: t, Header: h}
}

func (f *frame) decodeHeader(want byte, v any) error {
	if f.Type != want {
		return nferr.Dataf("control frame: got type %d, want %d", f.Type, want)
	}
	if err := json.Unmarshal(f.Header, v); err != nil {
		return nferr.Dataf("control frame type %d: bad header: %v", f.Type, err)
	}
	return nil
}

// wireError is an nferr error on the wire.
type wireError struct {
	Kind nferr.Kind `json:"kind"`
	Msg  string     `json:"msg"`
}

func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	k, m := nferr.Encode(err)
	return &wireError{Kind: k, Msg: m}
}

func (w *wireError) err(remote string) error {
	if w == nil {
		return nil
	}
	return nferr.Decode(w.Kind, w.Msg, remote)
}

// ToStatus turns an error into a gRPC status error that keeps its nferr
// kind (nferr.ToStatus).
func ToStatus(err error) error { return nferr.ToStatus(err) }

// FromStatus turns an error of a gRPC or Flight call to remote back into
// an nferr error (nferr.FromStatus).
func FromStatus(err error, remote string) error { return nferr.FromStatus(err, remote) }
