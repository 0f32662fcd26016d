package shuffle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Client is a worker process's connection to its node's routing agent:
// the runtime library side of the hand-off. Endpoints and Exchanges are
// opened on a Client. Corun workers get one from Agent.Client (an
// in-process connection); offload workers Dial the agent's local address
// (a unix socket or a shared-memory ring). A Client is safe for concurrent
// use; each Endpoint is not (see Endpoint).
type Client struct {
	opts Options
	link *link
	node int

	mu     sync.Mutex
	recv   map[recvKey]*Endpoint
	eps    map[*Endpoint]struct{}
	err    error
	closed bool
	down   chan struct{}
}

type recvKey struct {
	ch       uint64
	receiver int
}

// Dial connects a worker to its node's agent at addr: "unix:/path" (frames
// over the socket), "shm:/path" (same socket, then a shared-memory ring) or
// "mem:name" (in-process). The agent must have been started with Local set
// to the socket or mem address.
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	opts.SetDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	conn, err := dialAddr(ctx, addr, nil, &opts, nil, "worker")
	if err != nil {
		return nil, err
	}
	return newClient(ctx, conn, opts)
}

// Client returns an in-process connection to this agent (corun mode).
func (a *Agent) Client() (*Client, error) {
	mine, theirs := memPair("agent", "worker")
	go a.serve(func() (frameConn, error) { return theirs, nil }, roleClient)
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.DialTimeout)
	defer cancel()
	return newClient(ctx, mine, a.opts)
}

func newClient(ctx context.Context, conn frameConn, opts Options) (*Client, error) {
	deadline, _ := ctx.Deadline()
	conn.setDeadline(deadline)
	if err := sendHello(conn, hello{role: roleClient, window: uint32(opts.Credits), maxFrame: uint32(opts.MaxFrame)}); err != nil {
		conn.close()
		return nil, nferr.Unavailablef("shuffle: hello to the agent at %s: %v", conn.peer(), err)
	}
	type result struct {
		h   hello
		err error
	}
	ch := make(chan result, 1)
	go func() {
		h, err := readHello(conn)
		ch <- result{h, err}
	}()
	var h hello
	select {
	case r := <-ch:
		if r.err != nil {
			conn.close()
			return nil, nferr.Wrap(nferr.KindUnavailable, r.err, "shuffle: agent at %s", conn.peer())
		}
		h = r.h
	case <-ctx.Done():
		conn.close()
		return nil, nferr.Unavailablef("shuffle: the agent at %s did not answer in time", conn.peer())
	}
	if h.role != roleAgent {
		conn.close()
		return nil, nferr.Dataf("shuffle: %s is not a routing agent", conn.peer())
	}
	conn.setDeadline(time.Time{})
	c := &Client{
		opts: opts,
		node: int(h.node),
		recv: make(map[recvKey]*Endpoint),
		eps:  make(map[*Endpoint]struct{}),
		down: make(chan struct{}),
	}
	c.link = newLink(fmt.Sprintf("agent of node %d (%s)", h.node, conn.peer()), &c.opts, c)
	c.link.peerNode = -1
	c.link.start(conn, int(h.window), CodecNone, opts.LocalAggSize)
	return c, nil
}

// Node is the index of the node whose agent this client talks to.
func (c *Client) Node() int { return c.node }

// Options are the client's options, defaults filled in.
func (c *Client) Options() Options { return c.opts }

// Close closes the connection; open endpoints fail with KindUnavailable.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.link.close(nil)
	return nil
}

// Open opens an endpoint of the channel spec on this node: sender task
// sender and/or receiver task receiver (-1 for neither). Both must run on
// the client's node. Opening with both -1 holds the channel open on the
// node (see Exchange).
func (c *Client) Open(spec *Spec, sender, receiver int) (*Endpoint, error) {
	if err := spec.Validate(maxSpecNodes); err != nil {
		return nil, err
	}
	if sender < -1 || sender >= len(spec.Senders) || receiver < -1 || receiver >= len(spec.Receivers) {
		return nil, nferr.Internalf("shuffle: channel %#x has no sender %d or receiver %d", spec.ID, sender, receiver)
	}
	if sender >= 0 && spec.Senders[sender] != c.node {
		return nil, nferr.Internalf("shuffle: channel %#x: sender %d runs on node %d, this worker is on node %d", spec.ID, sender, spec.Senders[sender], c.node)
	}
	if receiver >= 0 && spec.Receivers[receiver] != c.node {
		return nil, nferr.Internalf("shuffle: channel %#x: receiver %d runs on node %d, this worker is on node %d", spec.ID, receiver, spec.Receivers[receiver], c.node)
	}
	e := newEndpoint(c, spec, sender, receiver)
	c.mu.Lock()
	if c.err != nil || c.closed {
		err := c.err
		c.mu.Unlock()
		if err == nil {
			err = nferr.Unavailablef("shuffle: client closed")
		}
		return nil, err
	}
	if receiver >= 0 {
		k := recvKey{spec.ID, receiver}
		if c.recv[k] != nil {
			c.mu.Unlock()
			return nil, nferr.Internalf("shuffle: channel %#x: receiver %d is already open", spec.ID, receiver)
		}
		c.recv[k] = e
	}
	c.eps[e] = struct{}{}
	c.mu.Unlock()
	f := newFrame()
	f.typ, f.channel = frameOpen, spec.ID
	f.body = encodeOpen(spec, sender, receiver)
	// INVARIANT: an open travels as a control frame, ahead of any data. In
	// the channel's queue it could sit behind frames waiting for window
	// that the agent only returns once this very receiver is open (frames
	// for it are held until then): a deadlock seen with one channel per
	// round (sssp) when a rank opened its next round late. Data of this
	// endpoint is queued after this call returns, so it cannot overtake.
	c.link.enqueueCtrl(f)
	return e, nil
}

func (c *Client) forget(e *Endpoint) {
	c.mu.Lock()
	delete(c.eps, e)
	if e.receiver >= 0 {
		k := recvKey{e.id, e.receiver}
		if c.recv[k] == e {
			delete(c.recv, k)
		}
	}
	c.mu.Unlock()
}

// onFrame takes deliveries and channel errors from the agent.
func (c *Client) onFrame(l *link, f *frame) {
	switch f.typ {
	case frameData:
		c.mu.Lock()
		e := c.recv[recvKey{f.channel, int(f.aux)}]
		c.mu.Unlock()
		if e == nil {
			f.release()
			return
		}
		e.deliver(f)
	case frameError:
		err := decodeErrorFrame(f.body, l.name)
		ch := f.channel
		f.release()
		c.mu.Lock()
		var hit []*Endpoint
		for e := range c.eps {
			if e.id == ch {
				hit = append(hit, e)
			}
		}
		c.mu.Unlock()
		for _, e := range hit {
			e.fail(err)
		}
	default:
		f.release()
	}
}

func (c *Client) onLinkDown(_ *link, err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.down)
	}
	var all []*Endpoint
	for e := range c.eps {
		all = append(all, e)
	}
	c.mu.Unlock()
	for _, e := range all {
		e.fail(err)
	}
}

func (c *Client) isDown() bool {
	select {
	case <-c.down:
		return true
	default:
		return false
	}
}

// DebugState describes the client's link and endpoints (for diagnosing a
// stalled exchange).
func (c *Client) DebugState() string {
	var b strings.Builder
	b.WriteString(c.link.state())
	c.mu.Lock()
	eps := make([]*Endpoint, 0, len(c.eps))
	for e := range c.eps {
		eps = append(eps, e)
	}
	c.mu.Unlock()
	for _, e := range eps {
		e.inMu.Lock()
		inbox := len(e.inbox)
		e.inMu.Unlock()
		e.compMu.Lock()
		comp := len(e.comp)
		e.compMu.Unlock()
		fmt.Fprintf(&b, "endpoint %#x sender %d receiver %d: inbox %d, completions %d\n", e.id, e.sender, e.receiver, inbox, comp)
	}
	return b.String()
}
