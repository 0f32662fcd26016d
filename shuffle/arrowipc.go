package shuffle

import (
	"encoding/binary"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Arrow payloads. An exchange payload carrying a record batch is:
//
//	u64  schema fingerprint (xxh3 of the IPC schema message)
//	...  one Arrow IPC encapsulated record-batch message: continuation
//	     marker, metadata length, flatbuffer metadata, 8-byte aligned body
//
// The schema itself is never sent: both ends of an exchange know it from
// the plan. The fingerprint catches a plan mismatch (a KindInternal error)
// instead of misreading columns. Dictionary-encoded columns are not
// supported (the engine does not produce them).
const fingerprintSize = 8

// SchemaFingerprint identifies a schema in payloads.
func SchemaFingerprint(schema *arrow.Schema) uint64 {
	p := ipc.GetSchemaPayload(schema, memory.DefaultAllocator)
	defer p.Release()
	meta := p.Meta()
	defer meta.Release()
	return xxh3.Hash(meta.Bytes())
}

func checkIPCSchema(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		if hasDictionary(f.Type) {
			return nferr.Internalf("shuffle: column %q is dictionary-encoded, which exchanges do not carry", f.Name)
		}
	}
	return nil
}

func hasDictionary(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.DictionaryType:
		return true
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if hasDictionary(f.Type) {
				return true
			}
		}
	}
	return false
}

// BatchEncoder turns record batches of one schema into exchange payloads.
// Not safe for concurrent use; one per sending task.
type BatchEncoder struct {
	schema *arrow.Schema
	fp     uint64
	mem    memory.Allocator
	w      sliceWriter
}

// NewBatchEncoder returns an encoder for batches of schema. mem allocates
// the temporary buffers of the IPC encoder.
func NewBatchEncoder(schema *arrow.Schema, mem memory.Allocator) (*BatchEncoder, error) {
	if err := checkIPCSchema(schema); err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &BatchEncoder{schema: schema, fp: SchemaFingerprint(schema), mem: mem}, nil
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Encode returns a fresh payload for rec (its ownership passes to the
// caller, typically straight into Sender.Send). The batch is copied once,
// into the payload.
func (e *BatchEncoder) Encode(rec arrow.RecordBatch) ([]byte, error) {
	if !rec.Schema().Equal(e.schema) {
		return nil, nferr.Internalf("shuffle: batch schema %s differs from the exchange schema %s", rec.Schema(), e.schema)
	}
	p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(e.mem))
	if err != nil {
		return nil, nferr.Internalf("shuffle: encoding a batch: %v", err)
	}
	defer p.Release()
	size := fingerprintSize + 16
	if m := p.Meta(); m != nil {
		size += m.Len() + 8
		m.Release()
	}
	for i := 0; i < int(rec.NumCols()); i++ {
		for _, b := range rec.Column(i).Data().Buffers() {
			if b != nil {
				size += b.Len() + 8
			}
		}
	}
	e.w.b = make([]byte, fingerprintSize, size)
	binary.LittleEndian.PutUint64(e.w.b, e.fp)
	if _, err := p.WritePayload(&e.w); err != nil {
		return nil, nferr.Internalf("shuffle: encoding a batch: %v", err)
	}
	out := e.w.b
	e.w.b = nil
	return out, nil
}

// BatchDecoder turns payloads back into record batches of one schema. Not
// safe for concurrent use; one per receiving task.
type BatchDecoder struct {
	schema *arrow.Schema
	fp     uint64
	mem    memory.Allocator
	msgs   *payloadMessages
	rdr    *ipc.Reader
}

// NewBatchDecoder returns a decoder for payloads of schema; decoded
// batches are allocated from mem.
func NewBatchDecoder(schema *arrow.Schema, mem memory.Allocator) (*BatchDecoder, error) {
	if err := checkIPCSchema(schema); err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &BatchDecoder{schema: schema, fp: SchemaFingerprint(schema), mem: mem}, nil
}

// Decode returns the batch in payload, which the caller must Release. The
// payload is not referenced after Decode returns (the batch's buffers are
// copied into mem, one copy). A payload that does not decode is a KindData
// error; one for another schema is KindInternal.
func (d *BatchDecoder) Decode(payload []byte) (rec arrow.RecordBatch, err error) {
	if len(payload) < fingerprintSize+8 {
		return nil, nferr.Dataf("shuffle: batch payload of %d bytes is too short", len(payload))
	}
	if fp := binary.LittleEndian.Uint64(payload); fp != d.fp {
		return nil, nferr.Internalf("shuffle: batch payload for schema %#016x, the exchange schema is %#016x (plans disagree)", fp, d.fp)
	}
	defer func() {
		if r := recover(); r != nil {
			d.reset()
			rec, err = nil, nferr.Dataf("shuffle: corrupt batch payload: %v", r)
		}
	}()
	msg, err := d.message(payload[fingerprintSize:])
	if err != nil {
		return nil, err
	}
	if d.rdr == nil {
		d.msgs = &payloadMessages{schema: ipc.GetSchemaPayload(d.schema, d.mem)}
		d.rdr, err = ipc.NewReaderFromMessageReader(d.msgs, ipc.WithAllocator(d.mem), ipc.WithSchema(d.schema))
		if err != nil {
			msg.Release()
			d.reset()
			return nil, nferr.Internalf("shuffle: batch decoder: %v", err)
		}
	}
	d.msgs.next = msg
	r, err := d.rdr.Read()
	if err != nil {
		d.reset()
		return nil, nferr.Dataf("shuffle: corrupt batch payload: %v", err)
	}
	r.Retain()
	for i := 0; i < int(r.NumCols()); i++ {
		if v, ok := r.Column(i).(interface{ ValidateFull() error }); ok {
			if err := v.ValidateFull(); err != nil {
				r.Release()
				return nil, nferr.Dataf("shuffle: corrupt batch payload: column %q: %v", d.schema.Field(i).Name, err)
			}
		}
	}
	return r, nil
}

// message parses one encapsulated IPC message and copies its body into
// allocator memory.
func (d *BatchDecoder) message(b []byte) (*ipc.Message, error) {
	if binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		return nil, nferr.Dataf("shuffle: batch payload lacks the IPC continuation marker")
	}
	metaLen := int(int32(binary.LittleEndian.Uint32(b[4:8])))
	if metaLen <= 0 || metaLen > len(b)-8 {
		return nil, nferr.Dataf("shuffle: batch payload: metadata of %d bytes in %d", metaLen, len(b)-8)
	}
	metaBytes := append([]byte(nil), b[8:8+metaLen]...)
	rest := b[8+metaLen:]
	// Probe the metadata with an untracked empty body first: a garbage
	// flatbuffer panics here (recovered by Decode) before any allocator
	// memory is at stake.
	probe := ipc.NewMessage(memory.NewBufferBytes(metaBytes), memory.NewBufferBytes(nil))
	t, n := probe.Type(), probe.BodyLen()
	if t != ipc.MessageRecordBatch {
		return nil, nferr.Dataf("shuffle: batch payload holds an IPC %v message", t)
	}
	if n != int64(len(rest)) {
		return nil, nferr.Dataf("shuffle: batch payload body of %d bytes, metadata says %d", len(rest), n)
	}
	meta := memory.NewBufferBytes(metaBytes)
	body := memory.NewResizableBuffer(d.mem)
	body.Resize(len(rest))
	copy(body.Bytes(), rest)
	msg := ipc.NewMessage(meta, body)
	meta.Release()
	body.Release()
	return msg, nil
}

// reset drops the IPC reader after an error (it stops at its first one).
func (d *BatchDecoder) reset() {
	if d.rdr != nil {
		d.rdr.Release()
		d.rdr = nil
	}
	if d.msgs != nil {
		d.msgs.Release()
		d.msgs = nil
	}
}

// Close releases the decoder.
func (d *BatchDecoder) Close() { d.reset() }

// payloadMessages feeds an ipc.Reader: first the schema (built locally),
// then one message per Decode.
type payloadMessages struct {
	schema    ipc.Payload
	sentSchem bool
	next      *ipc.Message
	last      *ipc.Message
}

func (m *payloadMessages) Message() (*ipc.Message, error) {
	if m.last != nil {
		m.last.Release()
		m.last = nil
	}
	if !m.sentSchem {
		m.sentSchem = true
		var w sliceWriter
		if _, err := m.schema.WritePayload(&w); err != nil {
			return nil, err
		}
		metaLen := int(binary.LittleEndian.Uint32(w.b[4:8]))
		meta := memory.NewBufferBytes(w.b[8 : 8+metaLen])
		body := memory.NewBufferBytes(nil)
		m.last = ipc.NewMessage(meta, body)
		return m.last, nil
	}
	if m.next == nil {
		return nil, io.EOF
	}
	m.last, m.next = m.next, nil
	return m.last, nil
}

func (m *payloadMessages) Retain() {}

func (m *payloadMessages) Release() {
	if m.last != nil {
		m.last.Release()
		m.last = nil
	}
	if m.next != nil {
		m.next.Release()
		m.next = nil
	}
	m.schema.Release()
}
