package shuffle

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// A link is one established connection to a peer: another agent, or across
// the worker/agent boundary. It multiplexes channels and runs credit-based
// flow control per (link, channel):
//
//   - The receiver grants each channel a window of Credits bytes (announced
//     in the hello). The sender's writer only sends a channel's frame when
//     the window covers it, or when nothing of that channel is in flight (so
//     a frame larger than the window still goes, alone).
//   - A received frame holds its size against the window until it is
//     released (routed, delivered and consumed); release sends the bytes
//     back in a credit frame, coalesced while the writer is busy.
//
// Windows are per channel so that one stalled exchange cannot take another
// one's share of the link. Control frames (credit, open, close, error) need
// no window.
//
// Goroutines: one writer (owns the conn's write side) and one reader. Any
// goroutine may enqueue frames or return credits.
type link struct {
	name string
	// peerNode is the node of the agent at the other end, or -1 for a
	// worker/agent (local) link.
	peerNode int
	opts     *Options
	h        linkHandler
	// codec compresses data frames on wire links between agents.
	codec Codec
	devq  Queue
	skip  int // frames left to send uncompressed (adaptive codec), writer-owned

	conn   frameConn
	window int // bytes per channel the peer granted us
	// batch bounds the bytes of one write: the link's aggregation size on
	// sockets, so that a frame is the unit of transfer, as an RDMA send is
	// in Buddy (coalescing several frames per system call would amount to
	// a larger AggSize). In process there is no system call to save.
	batch int

	mu      sync.Mutex
	wake    chan struct{}
	ctrl    []*frame
	out     map[uint64]*outChan
	ready   []*outChan
	credits map[uint64]int // credit bytes to return, per channel
	held    map[uint64]int // bytes of received frames not yet released
	// carried lists the channels whose data crossed this link between
	// agents: when it fails, only those may have lost messages. The agent
	// forgets a channel here when the channel ends on its node.
	carried map[uint64]struct{}
	started bool
	closed  bool
	// closing: the writer takes the link down after its next batch.
	closing  bool
	closeErr error
	err      error
	done     chan struct{}

	stats linkStats
}

// linkStats are cumulative counters, read by Agent.Stats.
type linkStats struct {
	framesOut, bytesOut, wireOut atomic.Int64
	framesIn, bytesIn            atomic.Int64
	compressed, skipped          atomic.Int64
}

type outChan struct {
	id      uint64
	credit  int
	q       []*frame
	inReady bool
}

// linkHandler receives what a link reads.
type linkHandler interface {
	// onFrame takes a verified data, open or close frame. Data frames hold
	// window on l until released.
	onFrame(l *link, f *frame)
	// onLinkDown is called once when the link fails or is closed.
	onLinkDown(l *link, err error)
}

func newLink(name string, opts *Options, h linkHandler) *link {
	return &link{
		name:    name,
		opts:    opts,
		h:       h,
		wake:    make(chan struct{}, 1),
		out:     make(map[uint64]*outChan),
		credits: make(map[uint64]int),
		held:    make(map[uint64]int),
		carried: make(map[uint64]struct{}),
		done:    make(chan struct{}),
	}
}

// start runs the link on an established, handshaken connection. window is
// the per-channel window the peer granted.
func (l *link) start(conn frameConn, window int, codec Codec, batch int) {
	l.mu.Lock()
	l.conn = conn
	l.window = window
	l.batch = maxBatchBytes
	if conn.isWire() {
		l.batch = batch
	}
	if conn.isWire() && codec != CodecNone {
		l.codec = codec
		// 16 outstanding requests: enough to keep a few engine threads busy
		// with one writer batch.
		l.devq = l.opts.Device.OpenQueue(writerDepth)
	}
	for _, oc := range l.out {
		oc.credit = window
		l.markReady(oc)
	}
	l.started = true
	closed := l.closed
	l.mu.Unlock()
	if closed {
		conn.close()
		return
	}
	go l.writer()
	go l.reader()
	l.signal()
}

const (
	// writerDepth bounds compression requests in flight per link writer.
	writerDepth = 16
	// maxBatchFrames and maxBatchBytes bound one hand-off of frames:
	// enough to amortize the writer's wake-up, small enough to interleave
	// channels fairly.
	maxBatchFrames = 64
	maxBatchBytes  = 512 << 10
)

func (l *link) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// enqueue queues a data frame (or an ordered control frame of a channel:
// close) for sending. It takes ownership of f; if the link is down the
// frame is released and enqueue returns false.
func (l *link) enqueue(f *frame) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		f.release()
		return false
	}
	oc := l.out[f.channel]
	if oc == nil {
		oc = &outChan{id: f.channel, credit: l.window}
		l.out[f.channel] = oc
	}
	oc.q = append(oc.q, f)
	if f.typ == frameData && l.peerNode >= 0 {
		l.carried[f.channel] = struct{}{}
	}
	if l.started {
		l.markReady(oc)
	}
	l.mu.Unlock()
	l.signal()
	return true
}

// enqueueCtrl queues a control frame that needs no window.
func (l *link) enqueueCtrl(f *frame) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		f.release()
		return false
	}
	l.ctrl = append(l.ctrl, f)
	l.mu.Unlock()
	l.signal()
	return true
}

// canSend: the head frame fits the window, or nothing is in flight.
// Caller holds l.mu.
func (l *link) canSend(oc *outChan) bool {
	if len(oc.q) == 0 {
		return false
	}
	f := oc.q[0]
	if f.typ != frameData {
		return true
	}
	return oc.credit >= f.size() || oc.credit >= l.window
}

func (l *link) markReady(oc *outChan) {
	if !oc.inReady && l.canSend(oc) {
		oc.inReady = true
		l.ready = append(l.ready, oc)
	}
}

// addCredit records bytes the peer released.
func (l *link) addCredit(ch uint64, n int) {
	l.mu.Lock()
	if oc := l.out[ch]; oc != nil {
		oc.credit += n
		if oc.credit > l.window {
			// More returned than sent: a confused peer. Clamp rather than
			// grow the window without bound.
			oc.credit = l.window
		}
		if len(oc.q) == 0 && oc.credit == l.window {
			delete(l.out, ch)
		} else {
			l.markReady(oc)
		}
	}
	l.mu.Unlock()
	l.signal()
}

// returnCredit is called when a frame received on l is released. The
// writer is woken at once; credits coalesce only while it is busy writing.
//
// NB: credits are never withheld to batch them: whether the frames still
// held get released can depend on what the sender sends next, and a
// sender short of window sends nothing.
func (l *link) returnCredit(ch uint64, n int) {
	l.mu.Lock()
	if !l.closed {
		if h := l.held[ch] - n; h > 0 {
			l.held[ch] = h
		} else {
			delete(l.held, ch)
		}
		l.credits[ch] += n
	}
	l.mu.Unlock()
	l.signal()
}

// hold charges a received frame to its channel's window; a peer that
// overruns the window it was granted (beyond one oversized frame) is
// misbehaving.
func (l *link) hold(ch uint64, n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[ch] + n
	if h > l.opts.Credits+l.opts.MaxFrame+frameHeaderSize {
		return nferr.Dataf("shuffle: %s overran the flow-control window of channel %#x (%d bytes held, window %d)", l.name, ch, h, l.opts.Credits)
	}
	l.held[ch] = h
	if l.peerNode >= 0 {
		l.carried[ch] = struct{}{}
	}
	return nil
}

// carriedChannels returns the channels whose data crossed the link.
func (l *link) carriedChannels() map[uint64]struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[uint64]struct{}, len(l.carried))
	for ch := range l.carried {
		m[ch] = struct{}{}
	}
	return m
}

// forget drops a finished channel from the carried set.
func (l *link) forget(ch uint64) {
	l.mu.Lock()
	delete(l.carried, ch)
	l.mu.Unlock()
}

func (l *link) writer() {
	var batch []*frame
	var origBody [][]byte
	var origExtra [][]byte
	for {
		l.mu.Lock()
		for len(l.ctrl) == 0 && len(l.ready) == 0 && len(l.credits) == 0 && !l.closed && !l.closing {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if l.closed {
			l.mu.Unlock()
			return
		}
		batch = batch[:0]
		for ch, n := range l.credits {
			f := newFrame()
			f.typ, f.channel, f.aux = frameCredit, ch, uint32(n)
			batch = append(batch, f)
		}
		clear(l.credits)
		batch = append(batch, l.ctrl...)
		clear(l.ctrl)
		l.ctrl = l.ctrl[:0]
		bytes := 0
		for len(l.ready) > 0 && len(batch) < maxBatchFrames && bytes < l.batch {
			// One frame per ready channel per round: channels share the link
			// fairly.
			n := 0
			for i, oc := range l.ready {
				if len(batch) >= maxBatchFrames || bytes >= l.batch {
					n += copy(l.ready[n:], l.ready[i:])
					break
				}
				if !l.canSend(oc) {
					oc.inReady = false
					continue
				}
				f := oc.q[0]
				oc.q[0] = nil
				oc.q = oc.q[1:]
				if f.typ == frameData {
					oc.credit -= f.size()
				}
				batch = append(batch, f)
				bytes += f.size()
				if l.canSend(oc) {
					l.ready[n] = oc
					n++
				} else {
					oc.inReady = false
				}
			}
			clear(l.ready[n:])
			l.ready = l.ready[:n]
		}
		closing := l.closing
		l.mu.Unlock()

		wire := l.conn.isWire()
		if wire {
			origBody = origBody[:0]
			origExtra = origExtra[:0]
			for _, f := range batch {
				origBody = append(origBody, f.body)
				origExtra = append(origExtra, f.extra)
			}
			l.compress(batch)
		}
		for _, f := range batch {
			if f.typ == frameData {
				l.stats.framesOut.Add(1)
				l.stats.bytesOut.Add(int64(f.size()))
				l.stats.wireOut.Add(int64(frameHeaderSize + len(f.body) + len(f.extra)))
			}
		}
		err := l.conn.writeFrames(batch)
		if wire {
			// Send completion: restore bodies the codec replaced, then hand
			// every frame back to its owner.
			for i, f := range batch {
				if f.codec != CodecNone {
					putBuf(f.body)
					f.codec = CodecNone
				}
				f.body, f.extra = origBody[i], origExtra[i]
				f.release()
			}
		}
		clear(batch)
		if err != nil {
			l.fail(nferr.Unavailablef("shuffle: sending to %s: %v", l.name, err))
			return
		}
		if closing {
			l.fail(l.closeErr)
			return
		}
	}
}

// compress replaces the bodies of data frames with compressed ones where it
// pays, running the codec on the link's device.
func (l *link) compress(batch []*frame) {
	if l.codec == CodecNone {
		return
	}
	reqs := make([]Request, 0, len(batch))
	idx := make([]int, 0, len(batch))
	for i, f := range batch {
		if f.typ != frameData || len(f.body)+len(f.extra) < minCompress {
			continue
		}
		if l.skip > 0 {
			l.skip--
			l.stats.skipped.Add(1)
			continue
		}
		src := f.body
		if f.extra != nil {
			// The codec needs one contiguous input; compression copies anyway.
			src = make([]byte, 0, len(f.body)+len(f.extra))
			src = append(append(src, f.body...), f.extra...)
		}
		reqs = append(reqs, Request{Op: OpCompress, Codec: l.codec, Src: src, Dst: getBuf(len(src))[:0]})
		idx = append(idx, i)
	}
	// Submit all, up to the queue depth at a time; refused ones run here.
	outstanding := 0
	for i := range reqs {
		r := &reqs[i]
		if outstanding >= writerDepth || !l.devq.Submit(r) {
			r.Run()
			continue
		}
		outstanding++
	}
	for ; outstanding > 0; outstanding-- {
		r := <-l.devq.Done()
		var de *DeviceError
		if errors.As(r.Err, &de) {
			r.Err, r.Out = nil, nil
			r.Run()
		}
	}
	for i := range reqs {
		r := &reqs[i]
		f := batch[idx[i]]
		if r.Err != nil || float64(len(r.Out)) > float64(len(r.Src))*(1-l.opts.CodecMinSaving) {
			// Not worth it (or failed): send raw, and stop sampling for a while.
			putBuf(r.Out)
			if r.Err == nil && l.opts.CodecMinSaving > 0 {
				l.skip = codecBackoff
			}
			l.stats.skipped.Add(1)
			continue
		}
		f.rawLen = uint32(len(r.Src))
		f.codec = l.codec
		f.body, f.extra = r.Out, nil
		l.stats.compressed.Add(1)
	}
}

// minCompress: bodies below 512 bytes are not worth a codec call.
const minCompress = 512

func (l *link) reader() {
	for {
		f, err := l.conn.readFrame()
		if err != nil {
			if errors.Is(err, errPeerClosed) {
				err = nferr.Unavailablef("shuffle: %s closed the connection", l.name)
			} else if _, ok := nferr.As(err); !ok {
				err = nferr.Unavailablef("shuffle: reading from %s: %v", l.name, err)
			}
			l.fail(err)
			return
		}
		switch f.typ {
		case frameCredit:
			l.addCredit(f.channel, int(f.aux))
			f.release()
		case frameData:
			if err := l.acceptData(f); err != nil {
				f.release()
				l.fail(err)
				return
			}
			l.h.onFrame(l, f)
		case frameOpen, frameClose:
			l.h.onFrame(l, f)
		case frameError:
			if f.channel != 0 {
				// A channel-scoped error (an open the agent refused): the
				// link itself is fine.
				l.h.onFrame(l, f)
				continue
			}
			err := decodeErrorFrame(f.body, l.name)
			f.release()
			l.fail(err)
			return
		default:
			t := f.typ
			f.release()
			l.fail(nferr.Dataf("shuffle: unexpected %s frame from %s", frameTypeNames[t], l.name))
			return
		}
	}
}

// acceptData decompresses and vets a data frame from a wire link and
// charges it to the channel's window.
func (l *link) acceptData(f *frame) error {
	if l.conn.isWire() {
		if f.codec != CodecNone {
			r := Request{Op: OpDecompress, Codec: f.codec, Src: f.body, Dst: getBuf(int(f.rawLen))}
			runOn(l.devq, &r)
			if r.Err != nil {
				putBuf(r.Dst)
				return nferr.Wrap(nferr.KindData, r.Err, "shuffle: corrupt compressed frame from %s", l.name)
			}
			putBuf(f.buf)
			f.buf, f.body, f.codec = r.Dst, r.Dst, CodecNone
		}
		if err := checkMessages(f.body, f.count, -1, l.opts.MaxMessage); err != nil {
			return nferr.Dataf("shuffle: corrupt data frame from %s: %v", l.name, err)
		}
		if f.count == 0 {
			return nferr.Dataf("shuffle: empty data frame from %s", l.name)
		}
	}
	n := f.size()
	l.stats.framesIn.Add(1)
	l.stats.bytesIn.Add(int64(n))
	if err := l.hold(f.channel, n); err != nil {
		return err
	}
	f.creditLink, f.creditN, f.from = l, n, l
	return nil
}

// fail takes the link down: queued frames are released, the connection is
// closed and the handler told, once.
func (l *link) fail(err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.err = err
	var drop []*frame
	drop = append(drop, l.ctrl...)
	l.ctrl = nil
	for _, oc := range l.out {
		drop = append(drop, oc.q...)
		oc.q = nil
	}
	l.ready = nil
	conn := l.conn
	l.mu.Unlock()
	close(l.done)
	l.signal()
	for _, f := range drop {
		f.release()
	}
	if conn != nil {
		conn.close()
	}
	if l.devq != nil {
		l.devq.Close()
	}
	l.h.onLinkDown(l, err)
}

// close takes the link down after sending what is queued for control,
// including an error frame telling the peer why when reason is set. It
// waits at most a second for the writer.
func (l *link) close(reason error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	if !l.started {
		l.mu.Unlock()
		l.fail(nferr.Unavailablef("shuffle: link to %s closed", l.name))
		return
	}
	if reason != nil {
		l.ctrl = append(l.ctrl, errorFrame(reason))
	}
	l.closing = true
	l.closeErr = nferr.Unavailablef("shuffle: link to %s closed", l.name)
	l.mu.Unlock()
	l.signal()
	select {
	case <-l.done:
	case <-time.After(time.Second):
		l.fail(l.closeErr)
	}
}

// down reports whether the link has failed or closed.
// connected reports whether the link has its connection (started).
func (l *link) connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn != nil
}

func (l *link) down() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func errorFrame(err error) *frame {
	k, text := nferr.Encode(err)
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	f := newFrame()
	f.typ = frameError
	f.body = append([]byte{byte(k)}, text...)
	return f
}

func decodeErrorFrame(b []byte, peer string) error {
	if len(b) < 1 {
		return nferr.Dataf("shuffle: empty error frame from %s", peer)
	}
	return nferr.Decode(nferr.Kind(b[0]), string(b[1:]), peer)
}

// state describes the link's queues and windows (for DebugState).
func (l *link) state() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "link %s: started %v closed %v closing %v window %d ctrl %d ready %d\n", l.name, l.started, l.closed, l.closing, l.window, len(l.ctrl), len(l.ready))
	for id, oc := range l.out {
		fmt.Fprintf(&b, "  out %#x: queued %d, credit %d, ready %v\n", id, len(oc.q), oc.credit, oc.inReady)
	}
	for id, n := range l.held {
		fmt.Fprintf(&b, "  held %#x: %d bytes\n", id, n)
	}
	for id, n := range l.credits {
		fmt.Fprintf(&b, "  credits to return %#x: %d bytes\n", id, n)
	}
	return b.String()
}
