package shuffle

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// onFrame takes frames read by the agent's links.
func (a *Agent) onFrame(l *link, f *frame) {
	switch f.typ {
	case frameOpen:
		a.onOpen(l, f)
	case frameClose:
		a.onClose(l, f)
	case frameData:
		a.onData(l, f)
	default:
		f.release()
	}
}

func (a *Agent) onData(l *link, f *frame) {
	if l.peerNode >= 0 {
		a.stats.remoteFramesIn.Add(1)
		a.stats.remoteBytesIn.Add(int64(f.size()))
	} else {
		a.stats.localFramesIn.Add(1)
		a.stats.localBytesIn.Add(int64(f.size()))
	}
	a.mu.Lock()
	ch := a.channels[f.channel]
	if ch == nil {
		if _, done := a.closed[f.channel]; done || l.peerNode < 0 || a.shut {
			// Late frames of a finished channel (its receivers are gone), or
			// data from a worker that never opened the channel.
			a.mu.Unlock()
			a.stats.dropped.Add(1)
			f.release()
			return
		}
		if len(a.channels) >= a.opts.MaxChannels {
			a.mu.Unlock()
			f.release()
			l.close(nferr.Resourcef("shuffle: node %d tracks %d channels, the limit (MaxChannels)", a.node, a.opts.MaxChannels))
			return
		}
		ch = &channel{id: f.channel, pendingSince: time.Now()}
		a.channels[f.channel] = ch
	}
	if ch.spec == nil {
		// No local task has opened the channel yet: hold the frame. It keeps
		// its window on the link, so a peer cannot pile up more than that.
		ch.pending = append(ch.pending, f)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	f.ch = ch
	a.in <- f
}

func (a *Agent) onOpen(l *link, f *frame) {
	spec, sender, receiver, err := decodeOpen(f.body)
	f.release()
	if err != nil {
		l.close(nferr.Dataf("shuffle: bad open frame from %s: %v", l.name, err))
		return
	}
	a.mu.Lock()
	cs := a.clients[l]
	if cs == nil || a.shut {
		a.mu.Unlock()
		return
	}
	err = spec.Validate(len(a.peers))
	if err == nil && sender >= 0 && spec.Senders[sender] != a.node {
		err = nferr.Internalf("shuffle: channel %#x: sender %d runs on node %d, not on this node %d", spec.ID, sender, spec.Senders[sender], a.node)
	}
	if err == nil && receiver >= 0 && spec.Receivers[receiver] != a.node {
		err = nferr.Internalf("shuffle: channel %#x: receiver %d runs on node %d, not on this node %d", spec.ID, receiver, spec.Receivers[receiver], a.node)
	}
	key := epKey{ch: spec.ID, sender: sender, receiver: receiver}
	if _, dup := cs.eps[key]; err == nil && dup {
		err = nferr.Internalf("shuffle: channel %#x: endpoint (sender %d, receiver %d) opened twice", spec.ID, sender, receiver)
	}
	var ch *channel
	var pending []*frame
	if err == nil {
		ch, pending, err = a.openChannel(spec)
	}
	if err == nil && receiver >= 0 && !ch.deliv[ch.local[receiver]].attach(l) {
		err = nferr.Internalf("shuffle: channel %#x: receiver %d opened twice", spec.ID, receiver)
	}
	if err != nil {
		a.mu.Unlock()
		a.stats.rejected.Add(1)
		ef := errorFrame(err)
		ef.channel = spec.ID
		l.enqueueCtrl(ef)
		return
	}
	cs.eps[key] = struct{}{}
	ch.refs++
	ch.closing.Store(false)
	failed := ch.failed
	a.mu.Unlock()
	for _, p := range pending {
		p.ch = ch
		a.in <- p
	}
	if failed != nil && receiver >= 0 {
		a.injectError(ch, int(ch.local[receiver]), failed)
	}
}

// openChannel registers spec, or checks it against the registered one.
// Caller holds a.mu. It returns frames held while the channel was pending.
func (a *Agent) openChannel(spec *Spec) (*channel, []*frame, error) {
	ch := a.channels[spec.ID]
	if ch != nil && ch.spec != nil {
		if !ch.spec.equal(spec) {
			return nil, nil, nferr.Internalf("shuffle: channel %#x opened with two different specs on node %d", spec.ID, a.node)
		}
		return ch, nil, nil
	}
	if ch == nil {
		if t, ok := a.expired[spec.ID]; ok {
			return nil, nil, nferr.Resourcef("shuffle: channel %#x: node %d dropped its frames at %s, %v after they arrived without a local task to take them (PendingTimeout)", spec.ID, a.node, t.Format(time.RFC3339), a.opts.PendingTimeout)
		}
		if len(a.channels) >= a.opts.MaxChannels {
			return nil, nil, nferr.Resourcef("shuffle: node %d tracks %d channels, the limit (MaxChannels)", a.node, a.opts.MaxChannels)
		}
		delete(a.closed, spec.ID)
		ch = &channel{id: spec.ID}
		a.channels[spec.ID] = ch
	}
	ch.spec = spec
	// NB: remote destinations get dense slots: node indexes may be sparse
	// (a cluster numbers nodes by a hash of their names), and routers walk
	// every slot of a channel when they flush.
	slotOf := map[int]int32{}
	ch.remote = nil
	for _, n := range spec.Receivers {
		if _, ok := slotOf[n]; !ok && n != a.node {
			slotOf[n] = int32(len(ch.remote))
			ch.remote = append(ch.remote, n)
		}
	}
	ch.nodes = len(ch.remote)
	ch.hop = make([]int32, len(spec.Receivers))
	ch.local = make([]int32, len(spec.Receivers))
	for r, n := range spec.Receivers {
		if n == a.node {
			ch.local[r] = int32(len(ch.recv))
			ch.hop[r] = int32(ch.nodes + len(ch.recv))
			ch.recv = append(ch.recv, r)
			ch.deliv = append(ch.deliv, &delivery{})
		} else {
			ch.local[r] = -1
			ch.hop[r] = slotOf[n]
		}
	}
	p := ch.pending
	ch.pending = nil
	return ch, p, nil
}

func (a *Agent) onClose(l *link, f *frame) {
	sender, receiver, err := decodeClose(f.body)
	ch := f.channel
	f.release()
	if err != nil {
		l.close(nferr.Dataf("shuffle: bad close frame from %s: %v", l.name, err))
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cs := a.clients[l]
	if cs == nil {
		return
	}
	key := epKey{ch: ch, sender: sender, receiver: receiver}
	if _, ok := cs.eps[key]; !ok {
		return
	}
	delete(cs.eps, key)
	a.releaseEndpoint(key)
}

// releaseEndpoint drops one local endpoint of a channel; the last one ends
// the channel on this node. Caller holds a.mu.
func (a *Agent) releaseEndpoint(key epKey) {
	ch := a.channels[key.ch]
	if ch == nil {
		return
	}
	if key.receiver >= 0 && ch.spec != nil {
		ch.deliv[ch.local[key.receiver]].shutDown()
	}
	ch.refs--
	if ch.refs > 0 {
		return
	}
	// NB: frames of this channel already queued for routing carry the
	// channel pointer and are still routed (a closed sender's last data must
	// leave the node); routers drop their state when drained.
	ch.closing.Store(true)
	for _, d := range ch.deliv {
		d.shutDown()
	}
	delete(a.channels, key.ch)
	a.closed[key.ch] = time.Now()
	for l := range a.links {
		l.forget(key.ch)
	}
}

// onLinkDown cleans up after a lost link.
func (a *Agent) onLinkDown(l *link, err error) {
	a.mu.Lock()
	if _, ok := a.links[l]; ok && l.peerNode >= 0 {
		a.stats.remoteWireOut.Add(l.stats.wireOut.Load())
		a.stats.compressed.Add(l.stats.compressed.Load())
		a.stats.skipped.Add(l.stats.skipped.Load())
	}
	delete(a.links, l)
	if l.peerNode >= 0 && l.peerNode < len(a.out) && a.out[l.peerNode] == l {
		a.out[l.peerNode] = nil
	}
	shut := a.shut
	var orphans []epKey
	if cs := a.clients[l]; cs != nil {
		delete(a.clients, l)
		for key := range cs.eps {
			orphans = append(orphans, key)
		}
	}
	var failed []*channel
	if l.peerNode >= 0 && !shut {
		// Only channels whose data crossed this link can have lost messages
		// (a connection that carried nothing, say a stray one claiming to be
		// that node, fails nothing).
		carried := l.carriedChannels()
		for id, ch := range a.channels {
			if _, ok := carried[id]; ok && ch.spec != nil && ch.failed == nil {
				ch.failed = err
				failed = append(failed, ch)
			}
		}
	}
	var senders []struct {
		ch     *channel
		sender int
	}
	for _, key := range orphans {
		if ch := a.channels[key.ch]; ch != nil && key.sender >= 0 && ch.spec != nil {
			senders = append(senders, struct {
				ch     *channel
				sender int
			}{ch, key.sender})
		}
	}
	a.mu.Unlock()
	if l.peerNode >= 0 && !shut && len(failed) > 0 {
		a.log.Warn("shuffle: lost a peer agent", "node", l.peerNode, "err", err)
	}
	for _, ch := range failed {
		for i := range ch.deliv {
			a.injectError(ch, i, err)
		}
	}
	// A worker that vanished mid-stream leaves its receivers waiting for an
	// end of stream that will never come: tell them why instead.
	for _, s := range senders {
		a.broadcastError(s.ch, uint32(s.sender), nferr.Wrap(nferr.KindUnavailable, err, "shuffle: sender %d of channel %#x lost its worker", s.sender, s.ch.id))
	}
	if len(orphans) > 0 {
		a.mu.Lock()
		for _, key := range orphans {
			a.releaseEndpoint(key)
		}
		a.mu.Unlock()
	}
}

// injectError delivers an agent-raised error to local receiver slot i.
func (a *Agent) injectError(ch *channel, i int, err error) {
	f := newFrame()
	f.typ, f.channel, f.count, f.aux = frameData, ch.id, 1, uint32(ch.recv[i])
	f.body = appendError(nil, ch.recv[i], errorPayload(agentSender, err))
	ch.deliv[i].deliver(f)
}

// broadcastError routes an error from sender to every receiver of ch, as
// if the sender had sent it.
func (a *Agent) broadcastError(ch *channel, sender uint32, err error) {
	p := errorPayload(sender, err)
	var body []byte
	for r := range ch.spec.Receivers {
		body = appendError(body, r, p)
	}
	f := newFrame()
	f.typ, f.channel, f.count = frameData, ch.id, uint32(len(ch.spec.Receivers))
	f.body = body
	f.ch = ch
	select {
	case a.in <- f:
	case <-a.ctx.Done():
		f.release()
	}
}

// failChannel reports a channel-level error (a corrupt message) to the
// channel's local receivers, once.
func (a *Agent) failChannel(ch *channel, err error) {
	a.stats.badFrames.Add(1)
	a.mu.Lock()
	first := ch.failed == nil && !a.shut
	if first {
		ch.failed = err
	}
	a.mu.Unlock()
	if first {
		a.log.Warn("shuffle: channel failed", "channel", ch.id, "err", err)
		for i := range ch.deliv {
			a.injectError(ch, i, err)
		}
	}
}

// sendRemote queues a frame of ch for node's agent. A frame that cannot be
// queued (the link is down or the agent closing) fails ch: its messages
// would otherwise be lost without a word.
func (a *Agent) sendRemote(node int, f *frame, ch *channel) {
	l := a.peerLink(node)
	a.stats.remoteFramesOut.Add(1)
	a.stats.remoteBytesOut.Add(int64(f.size()))
	if l == nil {
		a.stats.dropped.Add(1)
		f.release()
	} else if l.enqueue(f) {
		return
	}
	a.failChannel(ch, nferr.Unavailablef("shuffle: node %d cannot reach node %d: its link is down", a.node, node))
}

// janitor expires channels that were never opened locally and forgets old
// finished channels.
func (a *Agent) janitor() {
	defer a.wg.Done()
	// Checking once a second is plenty for timeouts measured in minutes
	// (shorter ones, in tests, are checked four times per timeout).
	t := time.NewTicker(min(time.Second, max(a.opts.PendingTimeout/4, time.Millisecond)))
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case now := <-t.C:
			var drop []*frame
			a.mu.Lock()
			for id, ch := range a.channels {
				if ch.spec == nil && now.Sub(ch.pendingSince) > a.opts.PendingTimeout {
					drop = append(drop, ch.pending...)
					delete(a.channels, id)
					a.closed[id] = now
					a.expired[id] = now
					a.log.Warn("shuffle: dropped frames of a channel no local task opened", "channel", id, "frames", len(ch.pending))
				}
			}
			// Remember finished channels for 10 minutes: longer than any
			// straggling frame can take to arrive.
			for id, t := range a.closed {
				if now.Sub(t) > 10*time.Minute {
					delete(a.closed, id)
					delete(a.expired, id)
				}
			}
			a.mu.Unlock()
			a.stats.dropped.Add(int64(len(drop)))
			for _, f := range drop {
				f.release()
			}
		}
	}
}

// AgentStats are an agent's cumulative counters.
type AgentStats struct {
	// Messages routed by the routing threads.
	Messages int64
	// Parks counts input frames put on a blocklist because a destination
	// had no free buffer.
	Parks int64
	// Flushes of aggregation buffers: full, after FlushTimeout, when idle.
	FlushFull, FlushTimeout, FlushIdle int64
	// Frames and bytes (uncompressed, with headers) sent to other agents, and
	// the bytes that went on the wire after compression.
	RemoteFramesOut, RemoteBytesOut, RemoteWireBytesOut int64
	// Frames and bytes received from other agents.
	RemoteFramesIn, RemoteBytesIn int64
	// Frames and bytes delivered to local receivers, and received from
	// local senders.
	LocalFramesOut, LocalBytesOut, LocalFramesIn, LocalBytesIn int64
	// Frames compressed, and frames sent raw by the adaptive codec.
	Compressed, CompressSkipped int64
	// Dropped counts frames for finished or unknown channels; BadFrames
	// messages that failed their channel; Rejected connections and opens.
	Dropped, BadFrames, Rejected int64
	// Channels currently tracked.
	Channels int
}

// Stats returns the agent's counters.
func (a *Agent) Stats() AgentStats {
	s := AgentStats{
		Messages:        a.stats.messages.Load(),
		Parks:           a.stats.parks.Load(),
		FlushFull:       a.stats.flushFull.Load(),
		FlushTimeout:    a.stats.flushTimeout.Load(),
		FlushIdle:       a.stats.flushIdle.Load(),
		RemoteFramesOut: a.stats.remoteFramesOut.Load(),
		RemoteBytesOut:  a.stats.remoteBytesOut.Load(),
		RemoteFramesIn:  a.stats.remoteFramesIn.Load(),
		RemoteBytesIn:   a.stats.remoteBytesIn.Load(),
		LocalFramesOut:  a.stats.localFramesOut.Load(),
		LocalBytesOut:   a.stats.localBytesOut.Load(),
		LocalFramesIn:   a.stats.localFramesIn.Load(),
		LocalBytesIn:    a.stats.localBytesIn.Load(),
		Dropped:         a.stats.dropped.Load(),
		BadFrames:       a.stats.badFrames.Load(),
		Rejected:        a.stats.rejected.Load(),
	}
	a.mu.Lock()
	s.Channels = len(a.channels)
	for l := range a.links {
		if l.peerNode >= 0 {
			s.RemoteWireBytesOut += l.stats.wireOut.Load()
			s.Compressed += l.stats.compressed.Load()
			s.CompressSkipped += l.stats.skipped.Load()
		}
	}
	a.mu.Unlock()
	s.RemoteWireBytesOut += a.stats.remoteWireOut.Load()
	s.Compressed += a.stats.compressed.Load()
	s.CompressSkipped += a.stats.skipped.Load()
	return s
}

// le32 reads a little-endian u32 (the routing loop's only decoding).
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// DebugState describes the agent's links, routing threads and channels:
// queues, windows, parked frames and held deliveries. For diagnosing a
// stalled exchange (`nicflow agent` prints it on SIGUSR1).
func (a *Agent) DebugState() string {
	var b strings.Builder
	a.mu.Lock()
	links := make([]*link, 0, len(a.links))
	for l := range a.links {
		links = append(links, l)
	}
	fmt.Fprintf(&b, "agent of node %d: %d links, %d channels, receive queue %d\n", a.node, len(a.links), len(a.channels), len(a.in))
	for id, ch := range a.channels {
		fmt.Fprintf(&b, "channel %#x: refs %d, pending %d, failed %v\n", id, ch.refs, len(ch.pending), ch.failed)
		for i, d := range ch.deliv {
			d.mu.Lock()
			fmt.Fprintf(&b, "  receiver %d: attached %v, closed %v, held %d\n", ch.recv[i], d.link != nil, d.closed, len(d.pending))
			d.mu.Unlock()
		}
	}
	a.mu.Unlock()
	for _, l := range links {
		b.WriteString(l.state())
	}
	for _, r := range a.routers {
		reply := make(chan string, 1)
		select {
		case r.dump <- reply:
			b.WriteString(<-reply)
		case <-time.After(time.Second):
			fmt.Fprintf(&b, "router %d: busy, no answer in 1s\n", r.id)
		case <-a.ctx.Done():
		}
	}
	return b.String()
}
