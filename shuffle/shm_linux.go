//go:build linux

package shuffle

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Shared-memory transport between a worker and its offloaded agent: two
// single-producer single-consumer byte rings in one memory file (memfd),
// which the worker creates and passes to the agent over the agent's unix
// socket (SCM_RIGHTS). The ring carries the same verified frame stream as a
// socket; what it saves is the system calls: a side only enters the kernel
// (futex) to sleep when its ring is empty or full, and to wake a sleeper.
// The socket stays open, unused, as the liveness signal: when either
// process dies its end closes, and the other side shuts the rings.
//
// Ring layout (each ring: 128-byte header, then size data bytes):
//
//	 0  u64  tail: bytes ever written (producer); futex word = low 32 bits
//	16  u32  consumer sleeping (1) on tail
//	64  u64  head: bytes ever read (consumer); futex word = low 32 bits
//	80  u32  producer sleeping (1) on head
//	96  u32  closed
//
// Ring 0 carries worker to agent, ring 1 agent to worker.
const (
	ringHeader   = 128
	offTail      = 0
	offConsSleep = 16
	offHead      = 64
	offProdSleep = 80
	offClosed    = 96
	// shmRingSize: 2 MiB per direction, a default window's worth of frames.
	shmRingSize = 2 << 20
	// shmSpin: tries before sleeping on the futex. A waiting side yields
	// between tries, so spinning costs the other process little.
	shmSpin = 64
	// shmNap bounds each futex sleep so that closing is noticed promptly
	// even if a wake is lost.
	shmNap = 20 * time.Millisecond
)

type ring struct {
	mem  []byte // header + data, inside the shared mapping
	data []byte
	mask uint64
}

func newRing(mem []byte) ring {
	return ring{mem: mem, data: mem[ringHeader:], mask: uint64(len(mem)-ringHeader) - 1}
}

// shmConn is a net.Conn over two rings.
type shmConn struct {
	sock    *net.UnixConn
	mapping []byte
	tx, rx  ring
	// mu: Read and Write hold it shared; close holds it exclusively before
	// unmapping, so no goroutine touches the mapping after it is gone.
	mu       sync.RWMutex
	closed   atomic.Bool
	deadline atomic.Int64 // unix nanos, 0 = none
	local    net.Addr
	remote   net.Addr
}

func mapShm(fd int, size int) ([]byte, error) {
	return syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func newShmConn(sock *net.UnixConn, mapping []byte, worker bool) *shmConn {
	half := len(mapping) / 2
	r0, r1 := newRing(mapping[:half]), newRing(mapping[half:])
	s := &shmConn{sock: sock, mapping: mapping, local: sock.LocalAddr(), remote: sock.RemoteAddr()}
	if worker {
		s.tx, s.rx = r0, r1
	} else {
		s.tx, s.rx = r1, r0
	}
	// The socket is the liveness signal: nothing is sent on it after setup,
	// so a read returning means the peer is gone.
	go func() {
		var b [1]byte
		_, _ = sock.Read(b[:])
		s.shut()
	}()
	return s
}

// shut marks both rings closed and wakes any sleeper.
func (s *shmConn) shut() {
	if s.closed.Swap(true) {
		return
	}
	s.mu.RLock()
	if s.mapping != nil {
		for _, r := range []ring{s.tx, s.rx} {
			word32(r.mem, offClosed).Store(1)
			futexWakeAll(raw32(r.mem, offTail))
			futexWakeAll(raw32(r.mem, offHead))
		}
	}
	s.mu.RUnlock()
}

func (s *shmConn) ringClosed(r ring) bool {
	return s.closed.Load() || word32(r.mem, offClosed).Load() != 0
}

func (s *shmConn) expired() bool {
	d := s.deadline.Load()
	return d != 0 && time.Now().UnixNano() > d
}

// Write copies p into the transmit ring, waiting while it is full.
func (s *shmConn) Write(p []byte) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mapping == nil {
		return 0, net.ErrClosed
	}
	r := s.tx
	size := uint64(len(r.data))
	tail := word64(r.mem, offTail)
	head := word64(r.mem, offHead)
	written := 0
	spins := 0
	for len(p) > 0 {
		if s.ringClosed(r) {
			return written, net.ErrClosed
		}
		t, h := tail.Load(), head.Load()
		free := size - (t - h)
		if free == 0 {
			if err := s.wait(r, offProdSleep, offHead, h, &spins); err != nil {
				return written, err
			}
			continue
		}
		spins = 0
		n := min(free, uint64(len(p)))
		start := t & r.mask
		c := copy(r.data[start:min(start+n, size)], p[:n])
		if uint64(c) < n {
			copy(r.data[:n-uint64(c)], p[c:n])
		}
		tail.Store(t + n)
		if word32(r.mem, offConsSleep).Load() != 0 {
			futexWakeAll(raw32(r.mem, offTail))
		}
		p = p[n:]
		written += int(n)
	}
	return written, nil
}

// Read copies available bytes from the receive ring, waiting while it is
// empty.
func (s *shmConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mapping == nil {
		return 0, io.EOF
	}
	r := s.rx
	size := uint64(len(r.data))
	tail := word64(r.mem, offTail)
	head := word64(r.mem, offHead)
	spins := 0
	for {
		h, t := head.Load(), tail.Load()
		if t != h {
			n := min(t-h, uint64(len(p)))
			start := h & r.mask
			c := copy(p[:n], r.data[start:min(start+n, size)])
			if uint64(c) < n {
				copy(p[c:n], r.data[:n-uint64(c)])
			}
			head.Store(h + n)
			if word32(r.mem, offProdSleep).Load() != 0 {
				futexWakeAll(raw32(r.mem, offHead))
			}
			return int(n), nil
		}
		if s.ringClosed(r) {
			return 0, io.EOF
		}
		if err := s.wait(r, offConsSleep, offTail, t, &spins); err != nil {
			return 0, err
		}
	}
}

// wait is one wait of a ring's producer for free space or its consumer for
// data: until the other side moves the index at offset watch (head for the
// producer, tail for the consumer) away from old. The first shmSpin times
// it only yields; then it raises the sleeping flag at offset flag, so the
// other side wakes it, and sleeps on the index's futex word. Its caller
// checks the ring again after each wait; the error is errDeadline.
func (s *shmConn) wait(r ring, flag, watch int, old uint64, spins *int) error {
	if s.expired() {
		return errDeadline
	}
	if *spins < shmSpin {
		*spins++
		runtime.Gosched()
		return nil
	}
	word32(r.mem, flag).Store(1)
	if word64(r.mem, watch).Load() == old && !s.ringClosed(r) {
		futexSleep(raw32(r.mem, watch), uint32(old), shmNap)
	}
	word32(r.mem, flag).Store(0)
	return nil
}

var errDeadline = nferr.Unavailablef("shuffle: shared-memory ring: deadline exceeded")

func (s *shmConn) Close() error {
	s.shut()
	err := s.sock.Close()
	s.mu.Lock()
	if s.mapping != nil {
		_ = syscall.Munmap(s.mapping)
		s.mapping = nil
	}
	s.mu.Unlock()
	return err
}

func (s *shmConn) LocalAddr() net.Addr  { return s.local }
func (s *shmConn) RemoteAddr() net.Addr { return s.remote }
func (s *shmConn) SetDeadline(t time.Time) error {
	if t.IsZero() {
		s.deadline.Store(0)
	} else {
		s.deadline.Store(t.UnixNano())
	}
	return nil
}
func (s *shmConn) SetReadDeadline(t time.Time) error  { return s.SetDeadline(t) }
func (s *shmConn) SetWriteDeadline(t time.Time) error { return s.SetDeadline(t) }

// dialShm creates the rings and hands them to the agent.
func dialShm(c *net.UnixConn, name string, opts *Options) (frameConn, error) {
	size := 2 * (ringHeader + shmRingSize)
	fd, err := unix.MemfdCreate("nicflow-shuffle", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nferr.IOf("shuffle: creating the shared-memory ring: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, nferr.IOf("shuffle: sizing the shared-memory ring: %v", err)
	}
	mapping, err := mapShm(fd, size)
	if err != nil {
		return nil, nferr.IOf("shuffle: mapping the shared-memory ring: %v", err)
	}
	if _, err := c.Write([]byte{localShm}); err != nil {
		_ = syscall.Munmap(mapping)
		return nil, nferr.Unavailablef("shuffle: %s: %v", name, err)
	}
	var msg [8]byte
	binary.LittleEndian.PutUint64(msg[:], uint64(size))
	if _, _, err := c.WriteMsgUnix(msg[:], unix.UnixRights(fd), nil); err != nil {
		_ = syscall.Munmap(mapping)
		return nil, nferr.Unavailablef("shuffle: %s: passing the ring: %v", name, err)
	}
	return newStreamConn(newShmConn(c, mapping, true), name, opts.MaxFrame, opts.LocalAggSize), nil
}

// acceptShm receives the rings from a worker.
func acceptShm(c *net.UnixConn, name string, maxFrame, aggSize int) (frameConn, error) {
	var msg [8]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(msg[:], oob)
	if err != nil || n != 8 {
		return nil, nferr.Dataf("shuffle: %s: reading the ring descriptor: %v", name, err)
	}
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(cmsgs) != 1 {
		return nil, nferr.Dataf("shuffle: %s: no ring descriptor: %v", name, err)
	}
	fds, err := unix.ParseUnixRights(&cmsgs[0])
	if err != nil || len(fds) != 1 {
		return nil, nferr.Dataf("shuffle: %s: bad ring descriptor: %v", name, err)
	}
	fd := fds[0]
	defer unix.Close(fd)
	size := binary.LittleEndian.Uint64(msg[:])
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Size) != size || size != 2*(ringHeader+shmRingSize) {
		return nil, nferr.Dataf("shuffle: %s: ring of %d bytes, file has %d, want %d", name, size, st.Size, 2*(ringHeader+shmRingSize))
	}
	mapping, err := mapShm(fd, int(size))
	if err != nil {
		return nil, nferr.IOf("shuffle: mapping the ring from %s: %v", name, err)
	}
	return newStreamConn(newShmConn(c, mapping, false), name+" (shm)", maxFrame, aggSize), nil
}
