package shuffle

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// router is one routing thread of an agent (Buddy, Algorithm 1). Threads
// share the agent's receive queue; each owns its send buffers, so the
// per-message loop takes no lock and touches no atomic. Completions (a
// buffer written to a socket or released by its receiver) come back on the
// thread's completion queue.
//
// Flushing: a buffer is flushed when the next message does not fit (full),
// when its first message is FlushTimeout old (timeout), and when the thread
// has received nothing for IdleTimeout (idle).
//
// Blocking: each destination may hold AgentBuffers buffers (filling, queued
// or in flight). When a message's destination has none left, the rest of
// the input frame goes on the blocklist, and the thread moves on; blocked
// frames are retried, in order, whenever buffers come back. Input frames
// hold their sender's window until routed, so the blocklist is bounded by
// the windows.
type router struct {
	a       *Agent
	id      int
	aggSize int
	large   int
	maxBufs int

	chans map[*channel]*routerChan
	block []parked
	spare []parked
	free  []*frame
	live  int // destinations with a buffer being filled

	compMu  sync.Mutex
	comp    []*frame
	compTmp []*frame
	wake    chan struct{}
	// dump asks the thread to describe its state (Agent.DebugState).
	dump chan chan string

	now, lastInput, lastSweep, lastDrop int64
	flushTimeout, idleTimeout           int64
}

type routerChan struct {
	ch          *channel
	dests       []dest
	outstanding int
	parked      int
}

type dest struct {
	cur         *frame
	outstanding int
}

type parked struct {
	rc  *routerChan
	f   *frame
	off int
}

// maxFree bounds the recycled buffers a thread keeps: beyond it they go
// back to the shared pool.
const maxFree = 256

var monoEpoch = time.Now()

func nanotime() int64 { return int64(time.Since(monoEpoch)) }

func newRouter(a *Agent, id int) *router {
	return &router{
		a:            a,
		id:           id,
		aggSize:      a.opts.AggSize,
		large:        a.opts.LargeMessage,
		maxBufs:      a.opts.AgentBuffers,
		chans:        make(map[*channel]*routerChan),
		wake:         make(chan struct{}, 1),
		dump:         make(chan chan string),
		flushTimeout: int64(a.opts.FlushTimeout),
		idleTimeout:  int64(a.opts.IdleTimeout),
	}
}

// recycle is the completion queue: any goroutine hands back a buffer the
// thread lent out.
func (r *router) recycle(f *frame) {
	r.compMu.Lock()
	r.comp = append(r.comp, f)
	r.compMu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *router) takeCompletions() int {
	r.compMu.Lock()
	if len(r.comp) == 0 {
		r.compMu.Unlock()
		return 0
	}
	done := r.comp
	r.comp = r.compTmp[:0]
	r.compMu.Unlock()
	for i, f := range done {
		rc := f.rchan
		rc.dests[f.slot].outstanding--
		rc.outstanding--
		buf := f.buf
		*f = frame{}
		if cap(buf) >= r.aggSize && len(r.free) < maxFree {
			f.buf, f.owner = buf, r
			r.free = append(r.free, f)
		} else {
			if buf != nil {
				putBuf(buf)
			}
			framePool.Put(f)
		}
		done[i] = nil
	}
	r.compTmp = done[:0]
	return len(done)
}

func (r *router) run() {
	defer r.a.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	in := r.a.in
	done := r.a.ctx.Done()
	for {
		worked := false
		if r.takeCompletions() > 0 {
			worked = true
			if len(r.block) > 0 {
				r.retry()
			}
		}
	take:
		// Up to 32 frames between completion checks: enough to amortize the
		// check, few enough to return buffers promptly.
		for i := 0; i < 32; i++ {
			select {
			case f := <-in:
				if i == 0 {
					r.now = nanotime()
				}
				r.input(f)
				worked = true
			default:
				break take
			}
		}
		r.now = nanotime()
		if worked {
			if r.live > 0 && r.now-r.lastSweep > r.flushTimeout/4 {
				r.sweep()
			}
			select {
			case <-done:
				r.shutdown()
				return
			case reply := <-r.dump:
				reply <- r.state()
			default:
			}
			continue
		}
		// Idle.
		if r.live > 0 && r.now-r.lastInput >= r.idleTimeout {
			r.flushAll()
		}
		r.dropClosed()
		var tc <-chan time.Time
		if r.live > 0 {
			timer.Reset(time.Duration(max(r.lastInput+r.idleTimeout-r.now, int64(10*time.Microsecond))))
			tc = timer.C
		}
		select {
		case f := <-in:
			r.now = nanotime()
			r.input(f)
		case <-r.wake:
		case <-tc:
		case reply := <-r.dump:
			reply <- r.state()
		case <-done:
			r.shutdown()
			return
		}
	}
}

// state describes the thread's buffers and blocklist (for DebugState).
func (r *router) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "router %d: %d parked, %d filling, %d free\n", r.id, len(r.block), r.live, len(r.free))
	for ch, rc := range r.chans {
		fmt.Fprintf(&b, "  channel %#x: outstanding %d, parked %d, closing %v:", ch.id, rc.outstanding, rc.parked, ch.closing.Load())
		for i, d := range rc.dests {
			if d.outstanding > 0 || d.cur != nil {
				fmt.Fprintf(&b, " slot%d=%d", i, d.outstanding)
				if d.cur != nil {
					fmt.Fprintf(&b, "(+%dB)", len(d.cur.body))
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (r *router) input(f *frame) {
	r.lastInput = r.now
	ch := f.ch
	rc := r.chans[ch]
	if rc == nil {
		rc = &routerChan{ch: ch, dests: make([]dest, ch.nodes+len(ch.recv))}
		r.chans[ch] = rc
	}
	r.route(rc, f, 0)
}

// route routes the messages of f from byte off. It returns false when it
// parked the rest of f on the blocklist.
func (r *router) route(rc *routerChan, f *frame, off int) bool {
	fromRemote := f.from != nil && f.from.peerNode >= 0
	body := f.body
	if off == 0 && (f.extra != nil || (f.count == 1 && len(body)-msgHeaderSize >= r.large)) {
		// A large message travels as its own frame: forward it, no copy.
		_, dst, _ := readMsgHeader(body)
		slot, ok := rc.ch.slotFor(dst, fromRemote)
		if !ok {
			r.misrouted(rc, f, dst)
			return true
		}
		r.a.stats.messages.Add(1)
		// NB: f may be another router's buffer (in-process links hand frames
		// over by reference): its rchan and slot belong to its owner.
		f.count = 1
		r.dispatch(rc, int(slot), f)
		return true
	}
	n := 0
	for off < len(body) {
		size := int(le32(body[off:]))
		dst := le32(body[off+4:]) & dstMask
		m := msgHeaderSize + size
		slot, ok := rc.ch.slotFor(dst, fromRemote)
		if !ok {
			r.misrouted(rc, f, dst)
			return true
		}
		d := &rc.dests[slot]
		cur := d.cur
		if cur == nil || len(cur.body)+m > r.aggSize {
			if cur != nil {
				r.flush(rc, int(slot), &r.a.stats.flushFull)
			}
			if d.outstanding >= r.maxBufs {
				r.a.stats.messages.Add(int64(n))
				r.park(rc, f, off)
				return false
			}
			if m > r.aggSize {
				// Bigger than a buffer: a frame of its own (copied; large
				// messages from well-behaved senders arrive alone and are
				// forwarded above instead).
				nf := r.newBuf(rc, int(slot), m)
				nf.body = append(nf.body, body[off:off+m]...)
				nf.count = 1
				r.dispatch(rc, int(slot), nf)
				off += m
				n++
				continue
			}
			cur = r.newBuf(rc, int(slot), r.aggSize)
			cur.firstT = r.now
			d.cur = cur
			r.live++
		}
		cur.body = append(cur.body, body[off:off+m]...)
		cur.count++
		off += m
		n++
	}
	r.a.stats.messages.Add(int64(n))
	f.release()
	return true
}

// slotFor returns the slot the messages for receiver dst of the channel go
// to; ok is false for a receiver the channel does not have or, when
// fromRemote (a message from a remote node), one on another node: the
// router then fails the channel (misrouted). Small enough to inline into
// the router's per-message loop.
func (ch *channel) slotFor(dst uint32, fromRemote bool) (slot int32, ok bool) {
	if int(dst) < len(ch.hop) {
		slot = ch.hop[dst]
		return slot, !fromRemote || int(slot) >= ch.nodes
	}
	return 0, false
}

// misrouted fails rc's channel for a message for receiver dst that it
// cannot route (channel.slotFor), and drops f.
func (r *router) misrouted(rc *routerChan, f *frame, dst uint32) {
	ch := rc.ch
	if int(dst) >= len(ch.hop) {
		r.bad(rc, f, nferr.Dataf("shuffle: message for receiver %d of channel %#x, which has %d", dst, ch.id, len(ch.hop)))
		return
	}
	r.bad(rc, f, nferr.Dataf("shuffle: %s sent a message for receiver %d, which runs on node %d (do the nodes disagree on the channel?)", f.from.name, dst, ch.remote[ch.hop[dst]]))
}

// bad fails the channel for a message that cannot be routed and drops f.
func (r *router) bad(rc *routerChan, f *frame, err error) {
	f.release()
	r.a.failChannel(rc.ch, err)
}

func (r *router) newBuf(rc *routerChan, slot int, size int) *frame {
	var f *frame
	if size <= r.aggSize && len(r.free) > 0 {
		f = r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
	} else {
		f = newFrame()
		f.buf = getBuf(max(size, r.aggSize))
		f.owner = r
	}
	f.body = f.buf[:0]
	f.rchan, f.slot = rc, slot
	rc.dests[slot].outstanding++
	rc.outstanding++
	return f
}

func (r *router) park(rc *routerChan, f *frame, off int) {
	r.a.stats.parks.Add(1)
	rc.parked++
	r.block = append(r.block, parked{rc: rc, f: f, off: off})
}

// retry re-runs blocked frames in the order they blocked.
func (r *router) retry() {
	old := r.block
	r.block = r.spare[:0]
	for i, p := range old {
		p.rc.parked--
		r.route(p.rc, p.f, p.off)
		old[i] = parked{}
	}
	r.spare = old[:0]
}

// flush sends a destination's buffer on its way.
func (r *router) flush(rc *routerChan, slot int, reason interface{ Add(int64) int64 }) {
	d := &rc.dests[slot]
	f := d.cur
	d.cur = nil
	r.live--
	reason.Add(1)
	f.typ, f.channel = frameData, rc.ch.id
	r.dispatch(rc, slot, f)
}

// dispatch hands a frame to its next hop.
func (r *router) dispatch(rc *routerChan, slot int, f *frame) {
	ch := rc.ch
	f.typ, f.channel = frameData, ch.id
	if slot < ch.nodes {
		f.aux = 0
		r.a.sendRemote(ch.remote[slot], f, ch)
		return
	}
	i := slot - ch.nodes
	f.aux = uint32(ch.recv[i])
	r.a.stats.localFramesOut.Add(1)
	r.a.stats.localBytesOut.Add(int64(f.size()))
	ch.deliv[i].deliver(f)
}

// sweep flushes buffers older than FlushTimeout, and now and then forgets
// finished channels (a thread that is never idle would otherwise keep
// them all).
func (r *router) sweep() {
	r.lastSweep = r.now
	if r.now-r.lastDrop > int64(100*time.Millisecond) {
		r.lastDrop = r.now
		r.dropClosed()
	}
	for _, rc := range r.chans {
		for i := range rc.dests {
			if c := rc.dests[i].cur; c != nil && r.now-c.firstT >= r.flushTimeout {
				r.flush(rc, i, &r.a.stats.flushTimeout)
			}
		}
	}
}

// flushAll flushes every partly filled buffer (idle timeout).
func (r *router) flushAll() {
	r.lastSweep = r.now
	for _, rc := range r.chans {
		for i := range rc.dests {
			if rc.dests[i].cur != nil {
				r.flush(rc, i, &r.a.stats.flushIdle)
			}
		}
	}
}

// dropClosed forgets channels that ended on this node once this thread
// holds nothing of theirs.
func (r *router) dropClosed() {
	for ch, rc := range r.chans {
		if ch.closing.Load() && rc.outstanding == 0 && rc.parked == 0 {
			delete(r.chans, ch)
		}
	}
}

// shutdown releases everything the thread holds (agent closing).
func (r *router) shutdown() {
	for _, p := range r.block {
		p.f.release()
	}
	r.block = nil
	for _, rc := range r.chans {
		for i := range rc.dests {
			if c := rc.dests[i].cur; c != nil {
				rc.dests[i].cur = nil
				c.release()
			}
		}
	}
	r.takeCompletions()
}
