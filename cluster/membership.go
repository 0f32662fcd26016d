package cluster

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/nicflow/nicflow/internal/nferr"
)

// EventType is a membership change.
type EventType uint8

const (
	// EventJoin: a node joined (or this node learnt of it).
	EventJoin EventType = iota + 1
	// EventUpdate: a node changed its advertised NodeInfo.
	EventUpdate
	// EventLeave: a node left gracefully (nicflow stopped it).
	EventLeave
	// EventFail: a node stopped answering and was declared dead.
	EventFail
)

func (e EventType) String() string {
	switch e {
	case EventJoin:
		return "join"
	case EventUpdate:
		return "update"
	case EventLeave:
		return "leave"
	case EventFail:
		return "fail"
	}
	return "event(" + strconv.Itoa(int(e)) + ")"
}

// MemberEvent is delivered to Node.Subscribe callbacks.
type MemberEvent struct {
	Type EventType
	Node NodeInfo
}

// membership wraps memberlist: it decodes NodeInfo from node metadata, keeps
// the set of alive members, and delivers events to subscribers in order on
// its own goroutine (memberlist calls its delegates with locks held, so they
// must never block).
type membership struct {
	log  *slog.Logger
	ml   *memberlist.Memberlist
	meta []byte

	mu      sync.RWMutex
	members map[string]NodeInfo
	subs    map[int]func(MemberEvent)
	nextSub int

	qmu    sync.Mutex
	qcond  *sync.Cond
	queue  []MemberEvent
	closed bool
	done   chan struct{}

	// lastConflict is when gossip last told of another incarnation of this
	// node at another address (unix ns); reclaiming is set while
	// reannounce runs.
	lastConflict atomic.Int64
	reclaiming   atomic.Bool
	probe        time.Duration
	name         string // this node's gossip name
	// conflictSeen: an older incarnation of this node was heard of since
	// it started (reannounce keeps the fast pace).
	conflictSeen atomic.Bool
	// gossip counts the bytes memberlist sends and receives
	// (gossip_count.go).
	gossip gossipCounters
}

// gossipConfig builds memberlist's configuration from the node options.
func gossipConfig(o *Options, keys *Keys, logw io.Writer) (*memberlist.Config, error) {
	var c *memberlist.Config
	if o.Gossip == "wan" {
		c = memberlist.DefaultWANConfig()
	} else {
		c = memberlist.DefaultLANConfig()
		// NB: LAN and local clusters of small nodes: probe twice a second
		// and suspect for 3*max(1,log10 N)*500ms, so a dead node is declared
		// within ~1-3 s (memberlist's LAN default takes ~5 s).
		c.ProbeInterval = 500 * time.Millisecond
		c.ProbeTimeout = 250 * time.Millisecond
		c.SuspicionMult = 3
		c.GossipInterval = 100 * time.Millisecond
		c.TCPTimeout = 3 * time.Second
		c.PushPullInterval = 15 * time.Second
		// NB: no LZW compression of gossip on a LAN: it saves bytes no
		// LAN is short of, and memberlist allocates a fresh 64 KiB
		// compressor table for every message it compresses, a third of an
		// idle node's CPU (a 64-worker local cluster: see D64).
		c.EnableCompression = false
	}
	// A node restarted under the same ID on another address (a container
	// rescheduled, a DPU rebooted onto a new port) takes its name back as
	// soon as its old incarnation is declared dead; memberlist's default
	// never lets it ("conflicting address").
	c.DeadNodeReclaimTime = time.Nanosecond
	host, port, err := net.SplitHostPort(o.GossipAddr)
	if err != nil {
		return nil, nferr.Queryf("gossip address %q: %v", o.GossipAddr, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	c.BindAddr = host
	c.BindPort, _ = strconv.Atoi(port)
	adv, err := resolveIP(o.AdvertiseHost)
	if err != nil {
		return nil, err
	}
	c.AdvertiseAddr = adv
	c.AdvertisePort = c.BindPort
	c.Name = o.NodeID
	c.SecretKey = keys.GossipKey()
	// INVARIANT: with a key, memberlist encrypts and authenticates (AES-GCM)
	// every packet and stream and drops anything else: a process without the
	// key can neither join nor inject state.
	c.GossipVerifyIncoming = true
	c.GossipVerifyOutgoing = true
	// NB: no timestamp prefix: slog stamps the record.
	c.Logger = log.New(logw, "", 0)
	return c, nil
}

func resolveIP(host string) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip.String(), nil
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return "", nferr.Queryf("advertise host %q does not resolve to an IP address: %v", host, err)
	}
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip.String(), nil
		}
	}
	return ips[0].String(), nil
}

// wrongKey recognizes memberlist's errors for gossip under another key.
func wrongKey(msg string) bool {
	return strings.Contains(msg, "no installed keys could decrypt") || strings.Contains(msg, "remote state is not encrypted") ||
		strings.Contains(msg, "encryption is not configured")
}

// oneLine flattens a multi-line error (memberlist's joined errors).
func oneLine(err error) string {
	if err == nil {
		return "no answer"
	}
	f := strings.Fields(strings.ReplaceAll(err.Error(), "1 error occurred:", ""))
	return strings.TrimPrefix(strings.Join(f, " "), "* ")
}

// newMembership prepares the membership of self; subscribe before start so
// that no event is missed.
func newMembership(c *memberlist.Config, self NodeInfo, logger *slog.Logger) (*membership, error) {
	meta, err := encodeMeta(self)
	if err != nil {
		return nil, err
	}
	m := &membership{
		log:     logger,
		meta:    meta,
		members: map[string]NodeInfo{},
		subs:    map[int]func(MemberEvent){},
		done:    make(chan struct{}),
	}
	m.qcond = sync.NewCond(&m.qmu)
	go m.dispatch()
	return m, nil
}

// start opens the gossip ports.
func (m *membership) start(c *memberlist.Config) error {
	c.Delegate = (*metaDelegate)(m)
	c.Events = (*eventDelegate)(m)
	c.Conflict = (*conflictDelegate)(m)
	m.probe, m.name = c.ProbeInterval, c.Name
	if c.Transport == nil {
		if err := newCountingTransport(c, &m.gossip); err != nil {
			return err
		}
	}
	ml, err := memberlist.Create(c)
	if err != nil {
		if t, ok := c.Transport.(*countingTransport); ok {
			t.Shutdown()
		}
		return nferr.Unavailablef("starting gossip on %s:%d: %v", c.BindAddr, c.BindPort, err)
	}
	m.ml = ml
	return nil
}

func (m *membership) setMeta(b []byte) {
	m.mu.Lock()
	m.meta = b
	m.mu.Unlock()
}

// join contacts the seeds until one answers or the deadline passes.
func (m *membership) join(seeds []string, timeout time.Duration, stop <-chan struct{}) error {
	if len(seeds) == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	backoff := 100 * time.Millisecond
	for {
		n, err := m.ml.Join(seeds)
		if n > 0 {
			m.announceAfterJoin()
			return nil
		}
		if err != nil && wrongKey(err.Error()) {
			// The seed answered, but under another key: waiting will not help.
			return nferr.Authf("the cluster at %v answered with another cluster key: this node's keys are not the cluster's (copy the cluster's key directory, or issue one with `nicflow cluster cert`)", seeds)
		}
		if time.Now().After(deadline) {
			return nferr.Unavailablef("could not join the cluster through %v within %v: %s (is the seed up and reachable?)", seeds, timeout, oneLine(err))
		}
		m.log.Debug("join failed, retrying", "seeds", seeds, "err", err)
		select {
		case <-time.After(backoff):
		case <-stop:
			return nferr.Unavailablef("node stopped while joining %v", seeds)
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}

// Members returns the alive members, sorted by role then ID.
func (m *membership) list() []NodeInfo {
	m.mu.RLock()
	out := make([]NodeInfo, 0, len(m.members))
	for _, n := range m.members {
		out = append(out, n)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role < out[j].Role
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (m *membership) get(id string) (NodeInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, ok := m.members[id]
	return n, ok
}

func (m *membership) subscribe(fn func(MemberEvent)) func() {
	m.mu.Lock()
	id := m.nextSub
	m.nextSub++
	m.subs[id] = fn
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

func (m *membership) emit(ev MemberEvent) {
	m.qmu.Lock()
	if !m.closed {
		m.queue = append(m.queue, ev)
		m.qcond.Signal()
	}
	m.qmu.Unlock()
}

func (m *membership) dispatch() {
	defer close(m.done)
	for {
		m.qmu.Lock()
		for len(m.queue) == 0 && !m.closed {
			m.qcond.Wait()
		}
		if m.closed {
			m.qmu.Unlock()
			return
		}
		ev := m.queue[0]
		m.queue = m.queue[1:]
		m.qmu.Unlock()
		m.mu.RLock()
		subs := make([]func(MemberEvent), 0, len(m.subs))
		for _, fn := range m.subs {
			subs = append(subs, fn)
		}
		m.mu.RUnlock()
		for _, fn := range subs {
			fn(ev)
		}
	}
}

func (m *membership) stopDispatch() {
	m.qmu.Lock()
	m.closed = true
	m.qcond.Broadcast()
	m.qmu.Unlock()
	<-m.done
}

// leave announces a graceful departure and stops gossip.
func (m *membership) leave(timeout time.Duration) {
	if err := m.ml.Leave(timeout); err != nil {
		m.log.Debug("leave", "err", err)
	}
	m.ml.Shutdown()
	m.stopDispatch()
}

// crash stops gossip without a goodbye, as a killed process would.
func (m *membership) crash() {
	m.ml.Shutdown()
	m.stopDispatch()
}

func (m *membership) nodeInfo(n *memberlist.Node) (NodeInfo, bool) {
	info, err := decodeMeta(n.Meta)
	if err != nil {
		m.log.Warn("ignoring member with unreadable metadata", "node", n.Name, "addr", n.Address(), "err", err)
		return NodeInfo{}, false
	}
	info.ID = n.Name
	info.GossipAddr = n.Address()
	return info, true
}

type metaDelegate membership

func (d *metaDelegate) NodeMeta(limit int) []byte {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if len(d.meta) > limit {
		return nil
	}
	return d.meta
}
func (d *metaDelegate) NotifyMsg([]byte)                           {}
func (d *metaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *metaDelegate) LocalState(join bool) []byte                { return nil }
func (d *metaDelegate) MergeRemoteState(buf []byte, join bool)     {}

// conflictDelegate hears of another node under this node's name at
// another address: this node restarted (a new port, a new host) while the
// cluster still knows its old incarnation. The others refuse the new
// address until they declare the old one dead, and they say so only to
// the old address; so this node announces itself again, with a higher
// incarnation, until the conflict has been quiet for a few seconds: the
// first announcement after the old incarnation's death takes its name
// back (Config.DeadNodeReclaimTime).
type conflictDelegate membership

// NB: memberlist calls it holding its node lock: no memberlist method may
// be called here.
func (d *conflictDelegate) NotifyConflict(existing, other *memberlist.Node) {
	m := (*membership)(d)
	if existing.Name != m.name || existing.Address() == other.Address() {
		return
	}
	m.lastConflict.Store(time.Now().UnixNano())
	m.conflictSeen.Store(true)
	if m.reclaiming.CompareAndSwap(false, true) {
		m.log.Info("an older incarnation of this node is still in the cluster; announcing this one until it is taken", "old", other.Address())
		go m.reannounce()
	}
}

// reannounce re-broadcasts this node's alive state every probe interval
// while conflicts keep coming, and for 15 s after the last one. NB: the
// others take the new address only once they declare the old incarnation
// dead, which on a loaded machine can take well over the LAN profile's
// ~2 s; 5 s was too short under `make test` load.
//
// After a join without a conflict (announceAfterJoin) the announcements
// back off, doubling from the probe interval to 4 s: each is a broadcast
// every node gossips on, so a cluster of N nodes started at once pays
// O(N^2) of them, and every probe interval for 15 s made a starting
// 16-worker cluster send 267 KiB/s of gossip (bench scale) against 13 at
// rest. A conflict heard meanwhile brings back the probe-interval pace.
func (m *membership) reannounce() {
	defer m.reclaiming.Store(false)
	quiet := 15 * time.Second
	fast := max(m.probe, 100*time.Millisecond)
	wait := fast
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, m.lastConflict.Load())) > quiet {
			return
		}
		m.ml.UpdateNode(time.Second) //nolint:errcheck // best effort: the next tick tries again
		if m.conflictSeen.Load() {
			wait = fast
		} else {
			wait = min(2*wait, 4*time.Second)
		}
		t.Reset(wait)
	}
}

// announceAfterJoin re-broadcasts this node's alive state for the quiet
// period after it joined, as reannounce does after a conflict. NB: a node
// restarted under its ID while the others still suspect its old
// incarnation hears of itself as suspect, not alive: memberlist refutes
// once, the others drop that refutation as a conflicting address, declare
// the old incarnation dead a moment later with its old incarnation number
// (which the new node ignores), and then nothing tells them of the new
// address until a push-pull, up to 15 s later (TestRestartedNodeRejoinsUnderItsID
// failed so under load). Announcing for a while after every join costs
// one small broadcast per probe interval.
func (m *membership) announceAfterJoin() {
	m.lastConflict.Store(time.Now().UnixNano())
	if m.reclaiming.CompareAndSwap(false, true) {
		go m.reannounce()
	}
}

type eventDelegate membership

func (d *eventDelegate) NotifyJoin(n *memberlist.Node) { d.record(n, EventJoin) }

func (d *eventDelegate) NotifyUpdate(n *memberlist.Node) { d.record(n, EventUpdate) }

// record stores what a join or an update (typ) says of member n and emits
// the event; a node whose metadata does not decode is ignored.
func (d *eventDelegate) record(n *memberlist.Node, typ EventType) {
	m := (*membership)(d)
	info, ok := m.nodeInfo(n)
	if !ok {
		return
	}
	m.mu.Lock()
	m.members[info.ID] = info
	m.mu.Unlock()
	m.emit(MemberEvent{Type: typ, Node: info})
}

func (d *eventDelegate) NotifyLeave(n *memberlist.Node) {
	m := (*membership)(d)
	m.mu.Lock()
	info, ok := m.members[n.Name]
	delete(m.members, n.Name)
	m.mu.Unlock()
	if !ok {
		info = NodeInfo{ID: n.Name, GossipAddr: n.Address()}
	}
	// NB: memberlist does not tell a graceful leave from a death here (the
	// Node's State field is not maintained); a leaving node advertises
	// Leaving in its metadata first (Node.shutdown).
	t := EventFail
	if info.Leaving {
		t = EventLeave
	}
	m.emit(MemberEvent{Type: t, Node: info})
}

// slogWriter forwards memberlist's log lines ("[DEBUG] memberlist: ...") to
// slog at the matching level.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	lvl := slog.LevelInfo
	for _, t := range []struct {
		tag string
		lvl slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}} {
		if _, after, ok := strings.Cut(line, t.tag); ok {
			// The level goes into the record; a timestamp before the tag
			// (a logger with one) is slog's to write.
			lvl, line = t.lvl, strings.TrimSpace(after)
			break
		}
	}
	w.log.Log(context.Background(), lvl, line, "component", "gossip")
	return len(p), nil
}

// ping asks node id's gossip agent directly whether it is alive (one UDP
// ping, answered by memberlist's own goroutines, timing out after the
// probe timeout). A process stopped (SIGSTOP), frozen or cut off does not
// answer; a busy one does.
// sync merges the full membership state of the node at addr (a gossip
// push-pull) into this one's.
func (m *membership) sync(addr string) error {
	if _, err := m.ml.Join([]string{addr}); err != nil {
		return nferr.Unavailablef("membership sync with %s: %s", addr, oneLine(err))
	}
	return nil
}

func (m *membership) ping(info NodeInfo) error {
	_, err := m.pingRTT(info)
	return err
}

// pingRTT pings info's gossip agent directly and returns the round trip.
func (m *membership) pingRTT(info NodeInfo) (time.Duration, error) {
	addr, err := net.ResolveUDPAddr("udp", info.GossipAddr)
	if err != nil {
		return 0, nferr.Unavailablef("node %s: gossip address %q: %v", info.ID, info.GossipAddr, err)
	}
	rtt, err := m.ml.Ping(info.ID, addr)
	if err != nil {
		return 0, nferr.Unavailablef("node %s (%s) does not answer gossip pings: %v", info.ID, info.GossipAddr, err)
	}
	return rtt, nil
}
