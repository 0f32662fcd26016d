package shuffle

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Endpoint is one task's end of a channel: Buddy's runtime library. A
// sender endpoint aggregates outgoing messages of any size and any
// destination into Options.Buffers buffers of LocalAggSize bytes and hands
// full ones to the node's agent while it fills the next (pipelining). A
// receiver endpoint reads the frames the agent delivers, detects the end of
// the stream and surfaces senders' errors.
//
// Concurrency: an Endpoint is used by one goroutine at a time. An endpoint
// that both sends and receives (a Buddy rank) must not block in Send: use
// TrySend and drain TryRecv when it returns false, since the buffers it
// waits for may only come back once its own inbox is consumed. Exchange
// wraps separate send and receive endpoints for the engine.
//
// Termination (see doc.go): each sender ends its stream with an
// end-of-stream message to every receiver carrying the number of data
// messages it sent to that receiver; a receiver is done when it has an
// end of stream from every sender and has received the sum of their counts.
type Endpoint struct {
	c        *Client
	spec     *Spec
	id       uint64
	sender   int
	receiver int
	nrecv    int

	// Send side.
	aggSize   int
	large     int
	maxMsg    int
	buffers   int
	cur       *frame
	free      []*frame
	inflight  int
	sent      []uint64
	sentBytes int64
	sendDone  bool
	compMu    sync.Mutex
	comp      []*frame
	compTmp   []*frame
	compWake  chan struct{}

	// Receive side.
	inMu     sync.Mutex
	inbox    []*frame
	inWake   chan struct{}
	rf       *frame
	roff     int
	eosFrom  []bool
	eosCount int
	expect   uint64
	got      uint64
	gotBytes int64
	recvErr  error
	recvDone bool
	// failed is set (once) by the client when the agent refuses the
	// endpoint or is lost; the send side reports it.
	failed atomic.Pointer[error]

	closed bool
}

func newEndpoint(c *Client, spec *Spec, sender, receiver int) *Endpoint {
	e := &Endpoint{
		c:        c,
		spec:     spec,
		id:       spec.ID,
		sender:   sender,
		receiver: receiver,
		nrecv:    len(spec.Receivers),
		aggSize:  c.opts.LocalAggSize,
		large:    c.opts.LargeMessage,
		maxMsg:   c.opts.MaxMessage,
		buffers:  c.opts.Buffers,
		compWake: make(chan struct{}, 1),
		inWake:   make(chan struct{}, 1),
	}
	if sender >= 0 {
		e.sent = make([]uint64, e.nrecv)
	}
	if receiver >= 0 {
		e.eosFrom = make([]bool, len(spec.Senders))
	}
	return e
}

// Spec is the endpoint's channel.
func (e *Endpoint) Spec() *Spec { return e.spec }

// recycle takes back a frame the agent side is done with (send completion).
func (e *Endpoint) recycle(f *frame) {
	e.compMu.Lock()
	e.comp = append(e.comp, f)
	e.compMu.Unlock()
	select {
	case e.compWake <- struct{}{}:
	default:
	}
}

func (e *Endpoint) takeCompletions() {
	e.compMu.Lock()
	if len(e.comp) == 0 {
		e.compMu.Unlock()
		return
	}
	done := e.comp
	e.comp = e.compTmp[:0]
	e.compMu.Unlock()
	for i, f := range done {
		e.inflight--
		buf := f.buf
		*f = frame{}
		if buf != nil && !e.closed {
			f.buf, f.owner = buf, e
			e.free = append(e.free, f)
		} else {
			if buf != nil {
				putBuf(buf)
			}
			framePool.Put(f)
		}
		done[i] = nil
	}
	e.compTmp = done[:0]
}

func (e *Endpoint) sendCheck(dst int, n int) error {
	switch {
	case e.sender < 0:
		return nferr.Internalf("shuffle: channel %#x: endpoint is not a sender", e.id)
	case e.sendDone:
		return nferr.Internalf("shuffle: channel %#x: sender %d sent after the end of its stream", e.id, e.sender)
	case dst < 0 || dst >= e.nrecv:
		return nferr.Internalf("shuffle: channel %#x: no receiver %d (channel has %d)", e.id, dst, e.nrecv)
	case n > e.maxMsg:
		return nferr.Resourcef("shuffle: channel %#x: message of %d bytes exceeds MaxMessage (%d)", e.id, n, e.maxMsg)
	}
	return nil
}

// TrySend sends payload to receiver dst without blocking. It returns false
// when all of the endpoint's buffers are in flight; the caller should make
// progress elsewhere (drain its inbox) and try again.
//
// Payloads shorter than LargeMessage are copied before TrySend returns.
// Larger ones are sent by reference: the caller must not modify them after
// a successful TrySend (they may be read until the receiver is done).
func (e *Endpoint) TrySend(dst int, payload []byte) (bool, error) {
	m := msgHeaderSize + len(payload)
	cur := e.cur
	if cur != nil && len(cur.body)+m <= e.aggSize && len(payload) < e.large && !e.sendDone && uint(dst) < uint(e.nrecv) {
		// Fast path: append to the current buffer.
		b := cur.body
		n := len(b)
		b = b[:n+m]
		putMsgHeader(b[n:], len(payload), dst, kindData)
		copy(b[n+msgHeaderSize:], payload)
		cur.body = b
		cur.count++
		e.sent[dst]++
		e.sentBytes += int64(len(payload))
		return true, nil
	}
	if err := e.sendCheck(dst, len(payload)); err != nil {
		return false, err
	}
	if len(payload) >= e.large || m > e.aggSize {
		return e.sendLarge(dst, payload)
	}
	if cur != nil {
		e.flushCur()
	}
	if !e.acquire() {
		return false, e.sendErr()
	}
	cur = e.cur
	b := cur.body
	b = b[:m]
	putMsgHeader(b, len(payload), dst, kindData)
	copy(b[msgHeaderSize:], payload)
	cur.body = b
	cur.count = 1
	e.sent[dst]++
	e.sentBytes += int64(len(payload))
	return true, nil
}

// sendErr is the reason sending cannot proceed, if any.
func (e *Endpoint) sendErr() error {
	if err := e.failed.Load(); err != nil {
		return *err
	}
	if e.c.isDown() {
		e.c.mu.Lock()
		err := e.c.err
		e.c.mu.Unlock()
		return err
	}
	return nil
}

// acquire makes a fresh buffer current, if one is free.
func (e *Endpoint) acquire() bool {
	e.takeCompletions()
	if e.sendErr() != nil {
		return false
	}
	var f *frame
	if n := len(e.free); n > 0 {
		f = e.free[n-1]
		e.free = e.free[:n-1]
	} else if e.inflight < e.buffers {
		f = newFrame()
		f.buf = getBuf(e.aggSize)
		f.owner = e
	} else {
		return false
	}
	e.inflight++
	f.body = f.buf[:0]
	f.count = 0
	e.cur = f
	return true
}

func (e *Endpoint) sendLarge(dst int, payload []byte) (bool, error) {
	e.takeCompletions()
	if err := e.sendErr(); err != nil {
		return false, err
	}
	if e.inflight >= e.buffers && e.cur != nil {
		// The buffer being filled counts against Buffers: send it on its
		// way, or nothing would ever come back to make room.
		e.flushCur()
	}
	if e.inflight >= e.buffers {
		return false, nil
	}
	f := newFrame()
	f.owner = e
	f.typ, f.channel, f.count = frameData, e.id, 1
	putMsgHeader(f.hdr[:], len(payload), dst, kindData)
	f.body = f.hdr[:]
	f.extra = payload
	e.inflight++
	e.sent[dst]++
	e.sentBytes += int64(len(payload))
	e.c.link.enqueue(f)
	return true, nil
}

// flushCur hands the current buffer to the agent.
func (e *Endpoint) flushCur() {
	f := e.cur
	if f == nil {
		return
	}
	e.cur = nil
	if f.count == 0 {
		e.free = append(e.free, f)
		e.inflight--
		return
	}
	f.typ, f.channel = frameData, e.id
	e.c.link.enqueue(f)
}

// Flush hands the partly filled buffer, if any, to the agent now.
func (e *Endpoint) Flush() { e.flushCur() }

// Send sends payload to receiver dst, waiting for a free buffer when all
// are in flight. Only for endpoints whose inbox another goroutine drains
// (or that do not receive); see Endpoint. Ownership of payload is as for
// TrySend.
func (e *Endpoint) Send(ctx context.Context, dst int, payload []byte) error {
	for {
		ok, err := e.TrySend(dst, payload)
		if ok || err != nil {
			return err
		}
		select {
		case <-e.compWake:
		case <-e.c.down:
		case <-ctx.Done():
			return nferr.With(nferr.KindCanceled, ctx.Err())
		}
	}
}

// CloseSend ends this sender's stream: it flushes and tells every receiver
// how many messages to expect from it. It does not block (the end-of-stream
// messages travel in a frame of their own, outside the buffer ring).
func (e *Endpoint) CloseSend() error {
	if e.sender < 0 {
		return nferr.Internalf("shuffle: channel %#x: endpoint is not a sender", e.id)
	}
	if e.sendDone {
		return nil
	}
	e.flushCur()
	e.sendDone = true
	var body []byte
	count := 0
	for r := 0; r < e.nrecv; r++ {
		body = appendEOS(body, r, e.sender, e.sent[r])
		count++
		if len(body)+msgHeaderSize+eosPayloadSize > e.aggSize || r == e.nrecv-1 {
			e.sendFrame(body, count)
			body, count = nil, 0
		}
	}
	return e.sendErr()
}

// FailSend ends this sender's stream with an error: every receiver's next
// call returns err, with its nferr kind, naming this sender.
func (e *Endpoint) FailSend(err error) {
	if e.sender < 0 || e.sendDone {
		return
	}
	e.flushCur()
	e.sendDone = true
	p := errorPayload(uint32(e.sender), err)
	var body []byte
	count := 0
	for r := 0; r < e.nrecv; r++ {
		body = appendError(body, r, p)
		count++
		if len(body)+msgHeaderSize+len(p) > e.aggSize || r == e.nrecv-1 {
			e.sendFrame(body, count)
			body, count = nil, 0
		}
	}
}

func (e *Endpoint) sendFrame(body []byte, count int) {
	f := newFrame()
	f.typ, f.channel, f.count = frameData, e.id, uint32(count)
	f.body = body
	e.c.link.enqueue(f)
}

// deliver queues a frame from the agent (client reader goroutine).
func (e *Endpoint) deliver(f *frame) {
	e.inMu.Lock()
	if e.closed {
		e.inMu.Unlock()
		f.release()
		return
	}
	e.inbox = append(e.inbox, f)
	e.inMu.Unlock()
	select {
	case e.inWake <- struct{}{}:
	default:
	}
}

// fail injects an error into the endpoint's inbox (lost agent, refused
// open); the receive side reports it in order, the send side at its next
// buffer.
func (e *Endpoint) fail(err error) {
	// A sender learns at its next buffer (an open the agent refused, a lost
	// agent): its messages would go nowhere.
	e.failed.CompareAndSwap(nil, &err)
	f := newFrame()
	f.typ, f.channel, f.count = frameData, e.id, 1
	f.body = appendError(nil, max(e.receiver, 0), errorPayload(agentSender, err))
	e.deliver(f)
	select {
	case e.compWake <- struct{}{}:
	default:
	}
}

// TryRecv returns the next data message if one is ready: (payload, true,
// nil). It returns (nil, false, nil) when nothing is ready yet, and
// (nil, false, io.EOF) once every sender's stream has ended and all their
// messages were received. A sender's error, or a lost agent, is returned
// as is (its nferr kind preserved) by this and every later call.
//
// The payload is valid until the next call of TryRecv, Recv or Close.
func (e *Endpoint) TryRecv() ([]byte, bool, error) {
	if e.recvErr != nil {
		return nil, false, e.recvErr
	}
	if e.recvDone {
		return nil, false, io.EOF
	}
	if e.receiver < 0 {
		return nil, false, nferr.Internalf("shuffle: channel %#x: endpoint is not a receiver", e.id)
	}
	for {
		f := e.rf
		if f == nil {
			e.inMu.Lock()
			if len(e.inbox) == 0 {
				e.inMu.Unlock()
				return nil, false, nil
			}
			f = e.inbox[0]
			e.inbox[0] = nil
			e.inbox = e.inbox[1:]
			e.inMu.Unlock()
			e.rf, e.roff = f, 0
		}
		var p []byte
		var k msgKind
		if f.extra != nil {
			// One large message sent by reference.
			if e.roff > 0 {
				e.releaseCur()
				continue
			}
			_, _, k = readMsgHeader(f.body)
			p = f.extra
			e.roff = 1
		} else {
			if e.roff >= len(f.body) {
				e.releaseCur()
				continue
			}
			b := f.body[e.roff:]
			if len(b) < msgHeaderSize {
				return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: truncated message header delivered to receiver %d", e.id, e.receiver))
			}
			var size uint32
			size, _, k = readMsgHeader(b)
			if int64(size) > int64(len(b)-msgHeaderSize) {
				return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: message of %d bytes overruns its frame at receiver %d", e.id, size, e.receiver))
			}
			p = b[msgHeaderSize : msgHeaderSize+int(size)]
			e.roff += msgHeaderSize + int(size)
		}
		switch k {
		case kindData:
			e.got++
			e.gotBytes += int64(len(p))
			if e.eosCount == len(e.eosFrom) {
				if e.got > e.expect {
					return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: receiver %d got %d messages, its senders sent %d", e.id, e.receiver, e.got, e.expect))
				}
				if e.got == e.expect {
					e.recvDone = true
				}
			}
			return p, true, nil
		case kindEOS:
			s, n, err := parseEOS(p)
			if err != nil || int(s) >= len(e.eosFrom) || e.eosFrom[s] {
				if err == nil {
					err = fmt.Errorf("unexpected end of stream from sender %d", s)
				}
				return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: receiver %d: %v", e.id, e.receiver, err))
			}
			e.eosFrom[s] = true
			e.eosCount++
			e.expect += n
			if e.eosCount == len(e.eosFrom) {
				if e.got > e.expect {
					return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: receiver %d got %d messages, its senders sent %d", e.id, e.receiver, e.got, e.expect))
				}
				if e.got == e.expect {
					e.recvDone = true
					e.releaseCur()
					return nil, false, io.EOF
				}
			}
		case kindError:
			s, kind, text, err := parseError(p)
			if err != nil {
				return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: receiver %d: %v", e.id, e.receiver, err))
			}
			where := fmt.Sprintf("sender %d (node %d)", s, e.senderNode(s))
			if s == agentSender {
				where = fmt.Sprintf("routing agent of node %d", e.c.node)
			}
			return nil, false, e.setErr(nferr.Decode(kind, text, where))
		default:
			return nil, false, e.setErr(nferr.Dataf("shuffle: channel %#x: message of unknown kind %d", e.id, k))
		}
	}
}

func (e *Endpoint) senderNode(s uint32) int {
	if int(s) < len(e.spec.Senders) {
		return e.spec.Senders[s]
	}
	return -1
}

func (e *Endpoint) setErr(err error) error {
	e.recvErr = err
	e.releaseCur()
	return err
}

func (e *Endpoint) releaseCur() {
	if e.rf != nil {
		e.rf.release()
		e.rf = nil
		e.roff = 0
	}
}

// Recv returns the next data message, waiting for one; io.EOF at the end
// of the stream. An endpoint that also sends flushes its partly filled
// buffer before waiting (a task waiting for input has nothing more to send
// right now). The payload is valid until the next call.
func (e *Endpoint) Recv(ctx context.Context) ([]byte, error) {
	for {
		p, ok, err := e.TryRecv()
		if ok {
			return p, nil
		}
		if err != nil {
			return nil, err
		}
		if e.cur != nil && e.cur.count > 0 {
			e.flushCur()
		}
		select {
		case <-e.inWake:
		case <-ctx.Done():
			return nil, nferr.With(nferr.KindCanceled, ctx.Err())
		}
	}
}

// Sent returns the data messages and payload bytes this endpoint has sent.
func (e *Endpoint) Sent() (msgs, bytes int64) {
	for _, n := range e.sent {
		msgs += int64(n)
	}
	return msgs, e.sentBytes
}

// Received returns the data messages and payload bytes received so far.
func (e *Endpoint) Received() (msgs, bytes int64) { return int64(e.got), e.gotBytes }

// Done reports whether the receive side has reached the end of the stream.
func (e *Endpoint) Done() bool { return e.recvDone }

// Wait returns a channel that receives a value whenever new frames arrive
// or buffers come back, for callers that poll several endpoints.
func (e *Endpoint) Wait() (inbox, buffers <-chan struct{}) { return e.inWake, e.compWake }

// Close closes the endpoint. A sender that has not ended its stream fails
// it with KindCanceled, so receivers do not wait forever. Frames still
// queued for the endpoint are dropped.
func (e *Endpoint) Close() error {
	if e.closed {
		return nil
	}
	if e.sender >= 0 && !e.sendDone {
		e.FailSend(nferr.With(nferr.KindCanceled, fmt.Errorf("shuffle: channel %#x: sender %d closed before the end of its stream", e.id, e.sender)))
	}
	e.flushCur()
	e.inMu.Lock()
	e.closed = true
	inbox := e.inbox
	e.inbox = nil
	e.inMu.Unlock()
	e.releaseCur()
	for _, f := range inbox {
		f.release()
	}
	e.takeCompletions()
	for _, f := range e.free {
		putBuf(f.buf)
		*f = frame{}
		framePool.Put(f)
	}
	e.free = nil
	e.c.forget(e)
	f := newFrame()
	f.typ, f.channel = frameClose, e.id
	f.body = encodeClose(e.sender, e.receiver)
	e.c.link.enqueue(f)
	return nil
}
