package shuffle

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// AgentConfig places one routing agent in the cluster.
type AgentConfig struct {
	// Node is this agent's node index: its position in Peers.
	Node int
	// Peers lists every node's agent address by node index ("host:port",
	// "mem:name"). Peers[Node] is where this agent listens unless Listen is
	// set. Entries may be updated later with SetPeer.
	Peers []string
	// Listen overrides the address to accept agent connections on (for
	// example "0.0.0.0:7500" or "127.0.0.1:0" when Peers[Node] is the
	// advertised address).
	Listen string
	// Local is where workers of this node connect in offload mode:
	// "unix:/path" (workers dial "unix:/path" or "shm:/path") or "mem:name".
	// Empty: no local listener; corun workers use Agent.Client.
	Local string
	// Mem is the in-process network for mem: addresses; nil uses a
	// process-wide default.
	Mem *MemNetwork
	// Options configure aggregation, threads, codecs and security.
	Options Options
	// Log receives connection-level events (rejected peers, lost links).
	// Nil: slog.Default().
	Log *slog.Logger
}

// Agent is a node's routing agent (Buddy, section 3). It accepts frames
// from local workers (clients) and from remote agents, and its routing
// threads re-aggregate every message by next hop: by destination node for
// remote receivers, by receiver for local ones. Connections go node to node,
// so their number grows with nodes, not with tasks.
//
// An Agent runs inside a worker process (corun: workers use Agent.Client)
// or alone in `nicflow agent` (offload: workers Dial its Local address).
type Agent struct {
	cfg  AgentConfig
	opts Options
	node int
	tls  *tls.Config // for dialing peers
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ln, lnLocal listener

	mu       sync.Mutex
	peers    []string
	out      []*link // outbound link per node, nil until first used
	links    map[*link]struct{}
	clients  map[*link]*clientState
	channels map[uint64]*channel
	closed   map[uint64]time.Time // recently finished channels: late frames are dropped
	// expired lists channels whose held frames were dropped after
	// PendingTimeout: opening one later is an error, not a silent hang.
	expired map[uint64]time.Time
	shut    bool

	in      chan *frame // the shared receive queue of the routing threads
	routers []*router

	stats agentCounters
}

type agentCounters struct {
	messages, parks, flushFull, flushTimeout, flushIdle atomic.Int64
	dropped, badFrames, rejected                        atomic.Int64
	remoteFramesOut, remoteBytesOut, remoteWireOut      atomic.Int64
	localFramesOut, localBytesOut                       atomic.Int64
	remoteFramesIn, remoteBytesIn                       atomic.Int64
	localFramesIn, localBytesIn                         atomic.Int64
	// Counters of links that went down (live links are summed on read).
	compressed, skipped atomic.Int64
}

// clientState tracks a connected worker's endpoints.
type clientState struct {
	eps map[epKey]struct{}
}

type epKey struct {
	ch               uint64
	sender, receiver int
}

// channel is an agent's view of one channel.
type channel struct {
	id   uint64
	spec *Spec // nil while pending: frames arrived before any local open
	// hop maps a receiver to its next-hop slot: the dense slot of its node
	// for remote receivers, nodes+i for the i-th local receiver.
	hop []int32
	// nodes is the number of remote nodes with receivers; slot i < nodes
	// of hop sends to node remote[i] (dense, whatever the node indexes).
	nodes  int
	remote []int
	recv   []int       // local slot i -> receiver index
	deliv  []*delivery // local slot i -> delivery to the receiver's client
	local  []int32     // receiver -> local slot, -1 when remote
	refs   int         // open local endpoints (agent.mu)

	pending      []*frame // frames held while spec == nil (agent.mu)
	pendingSince time.Time
	failed       error // set when a peer involved in the channel was lost

	// closing: no local endpoint is open; routers drop their state once
	// drained.
	closing atomic.Bool
}

// delivery hands frames for one local receiver to the client that opened
// it, holding them until it does.
type delivery struct {
	mu      sync.Mutex
	link    *link
	closed  bool
	pending []*frame
}

func (d *delivery) deliver(f *frame) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		f.release()
		return
	}
	if d.link == nil {
		d.pending = append(d.pending, f)
		d.mu.Unlock()
		return
	}
	l := d.link
	d.mu.Unlock()
	l.enqueue(f)
}

func (d *delivery) attach(l *link) bool {
	d.mu.Lock()
	if d.link != nil || d.closed {
		d.mu.Unlock()
		return false
	}
	d.link = l
	p := d.pending
	d.pending = nil
	d.mu.Unlock()
	for _, f := range p {
		l.enqueue(f)
	}
	return true
}

// shutDown drops everything for the receiver from now on.
func (d *delivery) shutDown() {
	d.mu.Lock()
	d.closed = true
	p := d.pending
	d.pending = nil
	d.mu.Unlock()
	for _, f := range p {
		f.release()
	}
}

// NewAgent validates the configuration, starts listening and starts the
// routing threads.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	cfg.Options.SetDefaults()
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	if cfg.Node < 0 || cfg.Node >= len(cfg.Peers) || len(cfg.Peers) > maxSpecNodes {
		return nil, nferr.Queryf("shuffle: agent node %d is not an index into its %d peers", cfg.Node, len(cfg.Peers))
	}
	listen := cfg.Listen
	if listen == "" {
		listen = cfg.Peers[cfg.Node]
	}
	if listen == "" && len(cfg.Peers) > 1 {
		return nil, nferr.Queryf("shuffle: agent %d has no address to listen on", cfg.Node)
	}
	if len(cfg.Peers) > 1 {
		if err := cfg.Options.checkSecurity(); err != nil {
			return nil, err
		}
	}
	tlsConf, tlsClient, err := cfg.Options.tlsConfigs()
	if err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:      cfg,
		opts:     cfg.Options,
		node:     cfg.Node,
		tls:      tlsClient,
		log:      cfg.Log,
		peers:    append([]string(nil), cfg.Peers...),
		out:      make([]*link, len(cfg.Peers)),
		links:    make(map[*link]struct{}),
		clients:  make(map[*link]*clientState),
		channels: make(map[uint64]*channel),
		closed:   make(map[uint64]time.Time),
		expired:  make(map[uint64]time.Time),
		// 1024 frames: routers drain it continuously; the depth only
		// absorbs bursts from many links.
		in: make(chan *frame, 1024),
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	if listen != "" {
		if a.ln, err = listenAddr(listen, tlsConf, &a.opts, cfg.Mem); err != nil {
			return nil, err
		}
	}
	if cfg.Local != "" {
		if a.lnLocal, err = listenAddr(cfg.Local, nil, &a.opts, cfg.Mem); err != nil {
			if a.ln != nil {
				a.ln.close()
			}
			return nil, err
		}
	}
	for i := 0; i < a.opts.Threads; i++ {
		r := newRouter(a, i)
		a.routers = append(a.routers, r)
		a.wg.Add(1)
		go r.run()
	}
	if a.ln != nil {
		a.wg.Add(1)
		go a.acceptLoop(a.ln, roleAgent)
	}
	if a.lnLocal != nil {
		a.wg.Add(1)
		go a.acceptLoop(a.lnLocal, roleClient)
	}
	a.wg.Add(1)
	go a.janitor()
	return a, nil
}

// Node is the agent's node index.
func (a *Agent) Node() int { return a.node }

// Addr is the address the agent accepts agent connections on (with the
// actual port when it listened on port 0).
func (a *Agent) Addr() string {
	if a.ln == nil {
		return ""
	}
	return a.ln.addr()
}

// LocalAddr is the address workers dial in offload mode.
func (a *Agent) LocalAddr() string {
	if a.lnLocal == nil {
		return ""
	}
	return a.lnLocal.addr()
}

// SetPeer sets (or changes) node's agent address. A changed address means
// the node restarted (its old agent is gone): the outbound link to the old
// address, open or still dialing, is taken down, so that nothing is queued
// for a dead agent and the next frame for the node dials the new address.
// Channels that crossed the old link fail (KindUnavailable).
func (a *Agent) SetPeer(node int, addr string) error {
	a.mu.Lock()
	if node < 0 || node >= maxSpecNodes {
		a.mu.Unlock()
		return nferr.Queryf("shuffle: node %d out of range", node)
	}
	for len(a.peers) <= node {
		a.peers = append(a.peers, "")
		a.out = append(a.out, nil)
	}
	var stale *link
	old := a.peers[node]
	if old != "" && old != addr {
		stale, a.out[node] = a.out[node], nil
	}
	a.peers[node] = addr
	a.mu.Unlock()
	if stale != nil {
		stale.fail(nferr.Unavailablef("shuffle: node %d moved from %s to %s (it restarted)", node, old, addr))
	}
	return nil
}

// Close stops the agent: listeners, links and routing threads. Endpoints
// still open see KindUnavailable errors.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.shut {
		a.mu.Unlock()
		return nil
	}
	a.shut = true
	var links []*link
	for l := range a.links {
		links = append(links, l)
	}
	a.mu.Unlock()
	if a.ln != nil {
		a.ln.close()
	}
	if a.lnLocal != nil {
		a.lnLocal.close()
	}
	for _, l := range links {
		l.close(nil)
	}
	a.cancel()
	a.wg.Wait()
	// Frames still queued for routing hold windows of closed links only.
	for {
		select {
		case f := <-a.in:
			f.release()
		default:
			return nil
		}
	}
}

func (a *Agent) acceptLoop(ln listener, role uint8) {
	defer a.wg.Done()
	for {
		upgrade, err := ln.accept()
		if err != nil {
			select {
			case <-a.ctx.Done():
				return
			default:
			}
			a.mu.Lock()
			shut := a.shut
			a.mu.Unlock()
			if shut {
				return
			}
			a.log.Warn("shuffle: accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go a.serve(upgrade, role)
	}
}

// serve upgrades an accepted connection, checks its hello and runs it.
// Anything wrong closes this connection only.
func (a *Agent) serve(upgrade func() (frameConn, error), role uint8) {
	conn, err := upgrade()
	if err != nil {
		a.stats.rejected.Add(1)
		a.log.Warn("shuffle: rejected connection", "err", err)
		return
	}
	conn.setDeadline(time.Now().Add(a.opts.DialTimeout))
	h, err := readHello(conn)
	if err == nil && h.role != role {
		err = nferr.Authf("shuffle: %s connected as a %s on the %s port", conn.peer(), roleName(h.role), roleName(role))
	}
	if err == nil && role == roleAgent && (int(h.node) == a.node || int(h.node) >= maxSpecNodes) {
		err = nferr.Dataf("shuffle: %s claims node %d (this agent is node %d)", conn.peer(), h.node, a.node)
	}
	if err != nil {
		a.stats.rejected.Add(1)
		a.log.Warn("shuffle: rejected connection", "peer", conn.peer(), "err", err)
		if !nferr.Is(err, nferr.KindUnavailable) {
			sendReject(conn, err)
		}
		conn.close()
		return
	}
	if err := sendHello(conn, hello{role: roleAgent, node: uint32(a.node), window: uint32(a.opts.Credits), maxFrame: uint32(a.opts.MaxFrame)}); err != nil {
		conn.close()
		return
	}
	conn.setDeadline(time.Time{})
	var l *link
	if role == roleAgent {
		l = newLink(fmt.Sprintf("node %d (%s)", h.node, conn.peer()), &a.opts, a)
		l.peerNode = int(h.node)
	} else {
		l = newLink(conn.peer(), &a.opts, a)
		l.peerNode = -1
	}
	if !a.register(l, role == roleClient) {
		conn.close()
		return
	}
	batch := a.opts.AggSize
	if role == roleClient {
		batch = a.opts.LocalAggSize
	}
	l.start(conn, int(h.window), CodecNone, batch)
}

func roleName(r uint8) string {
	switch r {
	case roleAgent:
		return "agent"
	case roleClient:
		return "worker"
	}
	return fmt.Sprintf("role %d", r)
}

func (a *Agent) register(l *link, client bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.shut {
		return false
	}
	a.links[l] = struct{}{}
	if client {
		a.clients[l] = &clientState{eps: make(map[epKey]struct{})}
	}
	return true
}

// Warm dials the outbound link to node (SetPeer's address) now, if it is not
// up or being dialed, so that a query's first frames to it do not pay the
// handshake: a cluster of N nodes has N x (N-1) links, and dialing them
// all during the first queries starves small nodes of CPU.
// It returns once the link is up, failed, or DialTimeout passed (callers
// bound how many dials run at once by how many Warm calls they make).
func (a *Agent) Warm(node int) {
	if node == a.node {
		return
	}
	l := a.peerLink(node)
	if l == nil {
		return
	}
	deadline := time.Now().Add(a.opts.DialTimeout)
	for !l.connected() && !l.down() && time.Now().Before(deadline) {
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// peerLink returns the outbound link to node, dialing it on first use.
func (a *Agent) peerLink(node int) *link {
	a.mu.Lock()
	if node < 0 || node >= len(a.out) {
		a.mu.Unlock()
		return nil
	}
	if l := a.out[node]; l != nil && !l.down() {
		a.mu.Unlock()
		return l
	}
	if a.shut {
		a.mu.Unlock()
		return nil
	}
	addr := a.peers[node]
	l := newLink(fmt.Sprintf("node %d (%s)", node, addr), &a.opts, a)
	l.peerNode = node
	a.out[node] = l
	a.links[l] = struct{}{}
	a.mu.Unlock()
	go a.dialPeer(node, addr, l)
	return l
}

// dialPeer connects l to node, retrying until DialTimeout.
func (a *Agent) dialPeer(node int, addr string, l *link) {
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.DialTimeout)
	defer cancel()
	backoff := 20 * time.Millisecond
	var last error
	for {
		if addr == "" {
			last = nferr.Unavailablef("shuffle: no address for node %d", node)
		} else if conn, window, err := a.handshakePeer(ctx, node, addr); err == nil {
			l.start(conn, window, a.opts.Codec, a.opts.AggSize)
			return
		} else {
			last = err
			if nferr.Is(err, nferr.KindAuth) || nferr.Is(err, nferr.KindData) {
				break // retrying cannot fix a wrong key or a wrong peer
			}
		}
		select {
		case <-ctx.Done():
			l.fail(nferr.Wrap(nferr.KindUnavailable, last, "shuffle: node %d unreachable after %v", node, a.opts.DialTimeout))
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
	l.fail(last)
}

// handshakePeer dials node and exchanges hellos; it returns the window the
// peer grants.
func (a *Agent) handshakePeer(ctx context.Context, node int, addr string) (frameConn, int, error) {
	conn, err := dialAddr(ctx, addr, a.tls, &a.opts, a.cfg.Mem, fmt.Sprintf("node%d", a.node))
	if err != nil {
		return nil, 0, err
	}
	deadline, _ := ctx.Deadline()
	conn.setDeadline(deadline)
	if err := sendHello(conn, hello{role: roleAgent, node: uint32(a.node), window: uint32(a.opts.Credits), maxFrame: uint32(a.opts.MaxFrame)}); err != nil {
		conn.close()
		return nil, 0, nferr.Unavailablef("shuffle: hello to node %d (%s): %v", node, addr, err)
	}
	h, err := readHello(conn)
	if err != nil {
		conn.close()
		if !nferr.Is(err, nferr.KindAuth) && !nferr.Is(err, nferr.KindData) {
			err = nferr.Unavailablef("shuffle: hello from node %d (%s): %v", node, addr, err)
		}
		return nil, 0, err
	}
	if h.role != roleAgent || int(h.node) != node {
		conn.close()
		return nil, 0, nferr.Dataf("shuffle: %s answered as %s %d, expected the agent of node %d", addr, roleName(h.role), h.node, node)
	}
	conn.setDeadline(time.Time{})
	return conn, int(h.window), nil
}
