package shuffle

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Exchange is one node's part of a channel, as the engine's exchange
// operators (hash repartition, broadcast, gather) use it. Every node that
// runs a task of the stage opens the Exchange with the same Spec; the
// Exchange keeps the channel open on the node until Close, so a receiver
// task that starts late still gets messages that arrived before it.
//
//	x, _ := shuffle.OpenExchange(client, spec)
//	defer x.Close()
//	s, _ := x.Sender(task)            // producing side, one goroutine
//	s.Send(ctx, dest, payload)        // payload ownership passes to the layer
//	s.Close()                         // end of stream (or s.Fail(err))
//	r, _ := x.Receiver(task)          // consuming side, one goroutine
//	for { p, err := r.Next(ctx); if p == nil { break } ... }
//
// Sender and Receiver are separate endpoints, so a task may block sending
// while another goroutine receives. The rule that keeps an exchange from
// deadlocking: every receiver keeps draining (Next) while senders send.
type Exchange struct {
	c    *Client
	spec *Spec
	hold *Endpoint

	mu        sync.Mutex
	senders   map[int]*Sender
	receivers map[int]*Receiver
	closed    bool
}

// OpenExchange opens the channel described by spec on the client's node.
func OpenExchange(c *Client, spec *Spec) (*Exchange, error) {
	hold, err := c.Open(spec, -1, -1)
	if err != nil {
		return nil, err
	}
	return &Exchange{c: c, spec: spec, hold: hold, senders: map[int]*Sender{}, receivers: map[int]*Receiver{}}, nil
}

// Spec is the exchange's channel.
func (x *Exchange) Spec() *Spec { return x.spec }

// Sender opens the sending side of sender task task (which must run on
// this node).
func (x *Exchange) Sender(task int) (*Sender, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ep, err := x.openLocked("sender", task, x.senders[task] != nil, task, -1)
	if err != nil {
		return nil, err
	}
	s := &Sender{ep: ep, flushAfter: x.c.opts.FlushTimeout}
	x.senders[task] = s
	return s, nil
}

// Receiver opens the receiving side of receiver task task (which must run
// on this node).
func (x *Exchange) Receiver(task int) (*Receiver, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ep, err := x.openLocked("receiver", task, x.receivers[task] != nil, -1, task)
	if err != nil {
		return nil, err
	}
	r := &Receiver{ep: ep}
	x.receivers[task] = r
	return r, nil
}

// openLocked opens the endpoint of one task of the exchange (role names it
// in errors; sender and receiver as for Client.Open) unless the exchange is
// closed or the task's side is open already. x.mu must be held.
func (x *Exchange) openLocked(role string, task int, opened bool, sender, receiver int) (*Endpoint, error) {
	if x.closed {
		return nil, nferr.Internalf("shuffle: exchange %#x is closed", x.spec.ID)
	}
	if opened {
		return nil, nferr.Internalf("shuffle: exchange %#x: %s %d opened twice", x.spec.ID, role, task)
	}
	return x.c.Open(x.spec, sender, receiver)
}

// Close closes every sender and receiver still open (a sender that did not
// end its stream fails it with KindCanceled) and releases the channel on
// this node. Call it once the tasks using the exchange have returned, or
// after canceling their contexts: it waits for a Send or Next in progress.
// Idempotent.
func (x *Exchange) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	senders, receivers := x.senders, x.receivers
	x.mu.Unlock()
	for _, s := range senders {
		s.abort()
	}
	for _, r := range receivers {
		r.Close()
	}
	return x.hold.Close()
}

// Sender is the sending side of one task. Its methods may be called from
// any goroutine but not concurrently (one producing task).
type Sender struct {
	mu         sync.Mutex
	ep         *Endpoint
	flushAfter time.Duration
	timer      *time.Timer
	armed      bool
	done       bool
}

// Send sends payload to receiver task dest, waiting while all buffers are
// in flight. Ownership of payload passes to the shuffle layer: payloads of
// LargeMessage bytes or more travel by reference and must not be modified
// afterwards; smaller ones are copied. A partly filled buffer is flushed
// at the latest FlushTimeout after its first message.
func (s *Sender) Send(ctx context.Context, dest int, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ep.Send(ctx, dest, payload); err != nil {
		return err
	}
	s.arm()
	return nil
}

// Broadcast sends payload to every receiver (a broadcast exchange). Large
// payloads are shared by reference, not copied per receiver.
func (s *Sender) Broadcast(ctx context.Context, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := 0; r < s.ep.nrecv; r++ {
		if err := s.ep.Send(ctx, r, payload); err != nil {
			return err
		}
	}
	s.arm()
	return nil
}

// arm schedules a flush of the partly filled buffer. Caller holds s.mu.
func (s *Sender) arm() {
	if s.armed || s.ep.cur == nil || s.ep.cur.count == 0 {
		return
	}
	s.armed = true
	if s.timer == nil {
		s.timer = time.AfterFunc(s.flushAfter, s.timedFlush)
	} else {
		s.timer.Reset(s.flushAfter)
	}
}

func (s *Sender) timedFlush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if !s.done {
		s.ep.Flush()
	}
}

// Flush hands buffered messages to the agent now.
func (s *Sender) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.ep.Flush()
	}
}

// Sent returns the messages and payload bytes sent so far (for the
// engine's per-task statistics).
func (s *Sender) Sent() (msgs, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ep.Sent()
}

// Close ends the stream: receivers finish once they have every message.
func (s *Sender) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end() {
		return nil
	}
	err := s.ep.CloseSend()
	if cerr := s.ep.Close(); err == nil {
		err = cerr
	}
	return err
}

// Fail ends the stream with err: every receiver's Next returns it, with
// its nferr kind, naming this sender.
func (s *Sender) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end() {
		return
	}
	s.ep.FailSend(err)
	s.ep.Close()
}

func (s *Sender) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end() {
		return
	}
	s.ep.Close() // fails the stream with KindCanceled
}

// end marks the stream ended and stops the flush timer, for Close, Fail
// and abort: false when it had ended already. s.mu must be held.
func (s *Sender) end() bool {
	if s.done {
		return false
	}
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
	return true
}

// Receiver is the receiving side of one task. Next is called by one
// goroutine; Close may come from another and waits for a Next in progress
// to return (cancel its context first).
type Receiver struct {
	mu     sync.Mutex
	ep     *Endpoint
	closed bool
}

// Next returns the next payload, waiting for one. It returns (nil, nil)
// at the end of the stream (every sender closed and every message
// received), a sender's error with its kind, KindUnavailable when a node
// or the agent is lost, or KindCanceled when ctx is done. The payload is
// valid until the next call of Next or Close.
func (r *Receiver) Next(ctx context.Context) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nferr.Internalf("shuffle: receiver of exchange %#x is closed", r.ep.id)
	}
	p, err := r.ep.Recv(ctx)
	if err == io.EOF {
		return nil, nil
	}
	return p, err
}

// Received returns the messages and payload bytes received so far. Call it
// from the goroutine that calls Next, or after Next returned.
func (r *Receiver) Received() (msgs, bytes int64) { return r.ep.Received() }

// Close releases the receiver; frames still queued for it are dropped.
func (r *Receiver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.ep.Close()
}
