package shuffle

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Transports. Every connection, whatever carries it, is a frameConn: frames
// in, frames out. Three carriers sit behind it:
//
//   - byte streams (streamConn): TCP between agents (optionally TLS), a unix
//     socket or a shared-memory ring between a worker and its offloaded
//     agent. Frames are serialized with a checksum and verified on arrival.
//   - in-process (memConn): frame objects are handed over by reference; for
//     embedded mode and tests (several agents in one process).
//
// Addresses pick the carrier: "mem:NAME", "unix:/path", "shm:/path" (dial
// only: a unix socket that negotiates a shared-memory ring), "tcp:host:port"
// or plain "host:port", or "SCHEME:..." of a Transport registered by
// another module (RegisterTransport: a byte stream the agent frames).
type frameConn interface {
	// writeFrames sends frames in order. On wire conns the caller keeps the
	// frames (and releases them after); on in-process conns ownership passes
	// to the peer, and frames not handed over are released.
	writeFrames(fs []*frame) error
	// readFrame returns the next frame; errPeerClosed at a clean end.
	readFrame() (*frame, error)
	setDeadline(t time.Time)
	close() error
	// isWire: frames cross a byte stream (checksums, codecs apply).
	isWire() bool
	peer() string
}

// streamConn carries frames over a byte stream.
type streamConn struct {
	c    net.Conn
	fw   *frameWriter
	fr   *frameReader
	name string
	// onClose runs after the stream closes (shared-memory cleanup).
	onClose func()
	once    sync.Once
}

// newStreamConn frames a byte stream; aggSize sizes its read buffer.
func newStreamConn(c net.Conn, name string, maxFrame, aggSize int) *streamConn {
	return &streamConn{c: c, fw: newFrameWriter(c), fr: newFrameReader(c, name, maxFrame, aggSize+frameHeaderSize), name: name}
}

func (s *streamConn) writeFrames(fs []*frame) error { return s.fw.writeFrames(fs) }
func (s *streamConn) readFrame() (*frame, error)    { return s.fr.readFrame() }
func (s *streamConn) setDeadline(t time.Time)       { _ = s.c.SetDeadline(t) }
func (s *streamConn) isWire() bool                  { return true }
func (s *streamConn) peer() string                  { return s.name }
func (s *streamConn) close() error {
	err := s.c.Close()
	s.once.Do(func() {
		if s.onClose != nil {
			s.onClose()
		}
	})
	return err
}

// MemNetwork is an in-process network: agents and clients of one process
// (embedded mode, tests) listen and dial on it by name. The zero value is not
// usable; call NewMemNetwork.
type MemNetwork struct {
	mu        sync.Mutex
	listeners map[string]*memListener
}

// NewMemNetwork returns an empty in-process network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{listeners: make(map[string]*memListener)}
}

// defaultMemNetwork serves "mem:" addresses when no network is given.
var defaultMemNetwork = NewMemNetwork()

type memListener struct {
	net    *MemNetwork
	name   string
	conns  chan *memConn
	closed chan struct{}
	once   sync.Once
}

// memPipeDepth: frames queued per direction of an in-process connection
// before the writer blocks; credits keep data far below it.
const memPipeDepth = 1024

type memPipe struct {
	closed chan struct{}
	once   sync.Once
}

type memConn struct {
	in   chan *frame
	out  chan *frame
	p    *memPipe
	name string
}

func memPair(a, b string) (*memConn, *memConn) {
	p := &memPipe{closed: make(chan struct{})}
	ab := make(chan *frame, memPipeDepth)
	ba := make(chan *frame, memPipeDepth)
	return &memConn{in: ba, out: ab, p: p, name: b}, &memConn{in: ab, out: ba, p: p, name: a}
}

func (m *memConn) writeFrames(fs []*frame) error {
	for i, f := range fs {
		// The frame's window at the previous hop ends here: the peer
		// charges it to its own window when it reads it.
		if l := f.creditLink; l != nil {
			f.creditLink = nil
			l.returnCredit(f.channel, f.creditN)
		}
		select {
		case m.out <- f:
		case <-m.p.closed:
			for _, g := range fs[i:] {
				g.release()
			}
			return errPeerClosed
		}
	}
	return nil
}

func (m *memConn) readFrame() (*frame, error) {
	select {
	case f := <-m.in:
		return f, nil
	case <-m.p.closed:
		return nil, errPeerClosed
	}
}

func (m *memConn) setDeadline(time.Time) {}
func (m *memConn) isWire() bool          { return false }
func (m *memConn) peer() string          { return m.name }
func (m *memConn) close() error {
	m.p.once.Do(func() { close(m.p.closed) })
	return nil
}

func (n *MemNetwork) listen(name string) (*memListener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[name]; ok {
		return nil, nferr.IOf("shuffle: mem:%s is already in use", name)
	}
	l := &memListener{net: n, name: name, conns: make(chan *memConn, 16), closed: make(chan struct{})}
	n.listeners[name] = l
	return l, nil
}

func (n *MemNetwork) dial(ctx context.Context, name, from string) (*memConn, error) {
	n.mu.Lock()
	l := n.listeners[name]
	n.mu.Unlock()
	if l == nil {
		return nil, nferr.Unavailablef("shuffle: nothing listens on mem:%s", name)
	}
	mine, theirs := memPair("mem:"+from, "mem:"+name)
	select {
	case l.conns <- theirs:
		return mine, nil
	case <-l.closed:
		return nil, nferr.Unavailablef("shuffle: mem:%s closed", name)
	case <-ctx.Done():
		return nil, nferr.With(nferr.KindCanceled, ctx.Err())
	}
}

// listener accepts connections; upgrading them (TLS, shared memory) happens
// in the returned function, on the caller's per-connection goroutine, so a
// slow or hostile peer never blocks Accept.
type listener interface {
	accept() (upgrade func() (frameConn, error), err error)
	close() error
	addr() string
}

func (l *memListener) accept() (func() (frameConn, error), error) {
	select {
	case c := <-l.conns:
		return func() (frameConn, error) { return c, nil }, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) close() error {
	l.once.Do(func() {
		close(l.closed)
		l.net.mu.Lock()
		delete(l.net.listeners, l.name)
		l.net.mu.Unlock()
	})
	return nil
}

func (l *memListener) addr() string { return "mem:" + l.name }

// netListener accepts TCP (optionally TLS) or unix-socket connections.
type netListener struct {
	ln       net.Listener
	tls      *tls.Config
	maxFrame int
	aggSize  int
	unix     bool
	timeout  time.Duration
	// path is the unix socket file, removed on close.
	path string
	// scheme is a registered transport's ("" or "tcp": plain host:port).
	scheme string
}

func (l *netListener) accept() (func() (frameConn, error), error) {
	c, err := l.ln.Accept()
	if err != nil {
		return nil, err
	}
	return func() (frameConn, error) {
		name := c.RemoteAddr().String()
		if l.unix {
			return acceptLocal(c, l.maxFrame, l.aggSize, l.timeout)
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if l.tls != nil {
			t := tls.Server(c, l.tls)
			_ = c.SetDeadline(time.Now().Add(l.timeout))
			if err := t.Handshake(); err != nil {
				c.Close()
				return nil, handshakeErr(name, err)
			}
			_ = c.SetDeadline(time.Time{})
			return newStreamConn(t, name, l.maxFrame, l.aggSize), nil
		}
		return newStreamConn(c, name, l.maxFrame, l.aggSize), nil
	}, nil
}

func (l *netListener) close() error {
	err := l.ln.Close()
	if l.path != "" {
		_ = os.Remove(l.path)
	}
	return err
}

func (l *netListener) addr() string {
	if l.unix {
		return "unix:" + l.path
	}
	if l.scheme != "" && l.scheme != "tcp" {
		return l.scheme + ":" + l.ln.Addr().String()
	}
	return l.ln.Addr().String()
}

// Transport carries byte streams between shuffle agents for the addresses
// of one URL scheme ("tcp:host:port", "rdma:host:port"): the seam through
// which a transport of another module (RDMA verbs, a DPU's own channel)
// plugs in without touching this package. The agent frames what a
// transport carries (checksums, aggregation, flow control, TLS when the
// agent has a TLS configuration), so a transport only moves bytes.
// Register it with RegisterTransport before agents start. "tcp" is
// registered here; "mem", "unix" and "shm" are built in (in-process
// frames, and a worker's local connection to its agent).
type Transport interface {
	// Listen opens a listener on addr (the address without its scheme).
	Listen(addr string) (net.Listener, error)
	// Dial connects to addr (without its scheme); ctx bounds the attempt.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

var (
	transportsMu sync.RWMutex
	transports   = map[string]Transport{"tcp": tcpTransport{}}
)

// RegisterTransport makes t carry the addresses "scheme:...". A scheme of
// the built-in carriers, or one registered already, is refused.
func RegisterTransport(scheme string, t Transport) error {
	if scheme == "" || strings.ContainsAny(scheme, ":/") || t == nil {
		return nferr.Queryf("shuffle: transport scheme %q", scheme)
	}
	transportsMu.Lock()
	defer transportsMu.Unlock()
	if _, dup := transports[scheme]; dup || scheme == "mem" || scheme == "unix" || scheme == "shm" {
		return nferr.Queryf("shuffle: transport %q is already registered", scheme)
	}
	transports[scheme] = t
	return nil
}

func transportOf(scheme string) Transport {
	transportsMu.RLock()
	defer transportsMu.RUnlock()
	return transports[scheme]
}

// tcpTransport is TCP, the default carrier between agents.
type tcpTransport struct{}

func (tcpTransport) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (tcpTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// Frames are already aggregated; Nagle would only add latency.
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}

// splitAddr returns the scheme ("mem", "unix", "shm", or a registered
// transport's; "tcp" without one) and the rest.
func splitAddr(addr string) (scheme, rest string) {
	for _, s := range []string{"mem", "unix", "shm"} {
		if strings.HasPrefix(addr, s+":") {
			return s, strings.TrimPrefix(strings.TrimPrefix(addr, s+":"), "//")
		}
	}
	if i := strings.Index(addr, ":"); i > 0 && transportOf(addr[:i]) != nil {
		return addr[:i], strings.TrimPrefix(addr[i+1:], "//")
	}
	return "tcp", addr
}

// listenAddr opens a listener. tlsConf applies to TCP only.
func listenAddr(addr string, tlsConf *tls.Config, opts *Options, mem *MemNetwork) (listener, error) {
	scheme, rest := splitAddr(addr)
	switch scheme {
	case "mem":
		if mem == nil {
			mem = defaultMemNetwork
		}
		return mem.listen(rest)
	case "unix":
		// A stale socket file from a crashed agent would block the bind.
		if fi, err := os.Lstat(rest); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(rest)
		}
		ln, err := net.Listen("unix", rest)
		if err != nil {
			return nil, nferr.IOf("shuffle: listening on %s: %v", addr, err)
		}
		// Only the agent's user may connect (see auth.go).
		if err := os.Chmod(rest, 0o600); err != nil {
			ln.Close()
			return nil, nferr.IOf("shuffle: securing %s: %v", rest, err)
		}
		return &netListener{ln: ln, maxFrame: opts.MaxFrame, aggSize: opts.LocalAggSize, unix: true, path: rest, timeout: opts.DialTimeout}, nil
	}
	if t := transportOf(scheme); t != nil {
		ln, err := t.Listen(rest)
		if err != nil {
			return nil, nferr.IOf("shuffle: listening on %s: %v", addr, err)
		}
		return &netListener{ln: ln, tls: tlsConf, maxFrame: opts.MaxFrame, aggSize: opts.AggSize, timeout: opts.DialTimeout, scheme: scheme}, nil
	}
	return nil, nferr.Queryf("shuffle: cannot listen on %q: want host:port, unix:/path, mem:name or a registered transport's scheme", addr)
}

// dialAddr connects to addr and returns the connection before the hello.
func dialAddr(ctx context.Context, addr string, tlsConf *tls.Config, opts *Options, mem *MemNetwork, from string) (frameConn, error) {
	scheme, rest := splitAddr(addr)
	switch scheme {
	case "mem":
		if mem == nil {
			mem = defaultMemNetwork
		}
		return mem.dial(ctx, rest, from)
	case "unix", "shm":
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", rest)
		if err != nil {
			return nil, nferr.Unavailablef("shuffle: connecting to the agent at %s: %v", addr, err)
		}
		return dialLocal(c.(*net.UnixConn), scheme == "shm", addr, opts)
	}
	if t := transportOf(scheme); t != nil {
		c, err := t.Dial(ctx, rest)
		if err != nil {
			return nil, nferr.Unavailablef("shuffle: connecting to %s: %v", addr, err)
		}
		if tlsConf != nil {
			conf := tlsConf
			if conf.ServerName == "" && !conf.InsecureSkipVerify {
				conf = conf.Clone()
				if h, _, err := net.SplitHostPort(rest); err == nil {
					conf.ServerName = h
				}
			}
			tc := tls.Client(c, conf)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, handshakeErr(addr, err)
			}
			return newStreamConn(tc, addr, opts.MaxFrame, opts.AggSize), nil
		}
		return newStreamConn(c, addr, opts.MaxFrame, opts.AggSize), nil
	}
	return nil, nferr.Queryf("shuffle: cannot dial %q", addr)
}

// Local connection preamble, before frames: the worker sends one byte,
// 'F' for frames over the socket or 'S' for a shared-memory ring, whose
// memory file descriptor follows as SCM_RIGHTS with the ring size.
const (
	localFramed = 'F'
	localShm    = 'S'
)

func acceptLocal(c net.Conn, maxFrame, aggSize int, timeout time.Duration) (frameConn, error) {
	uc := c.(*net.UnixConn)
	name := "worker"
	if uid, pid, err := peerCred(uc); err == nil {
		if uid != os.Getuid() {
			c.Close()
			return nil, nferr.Authf("shuffle: local connection from uid %d refused (agent runs as uid %d)", uid, os.Getuid())
		}
		name = fmt.Sprintf("worker pid %d", pid)
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		c.Close()
		return nil, nferr.Unavailablef("shuffle: %s: reading the connection preamble: %v", name, err)
	}
	switch b[0] {
	case localFramed:
		_ = c.SetDeadline(time.Time{})
		return newStreamConn(c, name, maxFrame, aggSize), nil
	case localShm:
		sc, err := acceptShm(uc, name, maxFrame, aggSize)
		if err != nil {
			c.Close()
			return nil, err
		}
		_ = c.SetDeadline(time.Time{})
		return sc, nil
	}
	c.Close()
	return nil, nferr.Dataf("shuffle: %s sent an unknown preamble %#x", name, b[0])
}

func dialLocal(c *net.UnixConn, shm bool, addr string, opts *Options) (frameConn, error) {
	if !shm {
		if _, err := c.Write([]byte{localFramed}); err != nil {
			c.Close()
			return nil, nferr.Unavailablef("shuffle: %s: %v", addr, err)
		}
		return newStreamConn(c, "agent "+addr, opts.MaxFrame, opts.LocalAggSize), nil
	}
	sc, err := dialShm(c, "agent "+addr, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	return sc, nil
}

// Hello: the first frame each way on every connection.
//
//	u8  role (roleAgent, roleClient)
//	u8  reserved
//	u16 reserved
//	u32 node index (agents) or 0
//	u32 window: bytes per channel the sender of the hello grants its peer
//	u32 max frame the sender of the hello accepts
const (
	roleAgent  = 1
	roleClient = 2
	helloSize  = 16
)

type hello struct {
	role     uint8
	node     uint32
	window   uint32
	maxFrame uint32
}

func (h hello) encode() []byte {
	b := make([]byte, helloSize)
	b[0] = h.role
	binary.LittleEndian.PutUint32(b[4:8], h.node)
	binary.LittleEndian.PutUint32(b[8:12], h.window)
	binary.LittleEndian.PutUint32(b[12:16], h.maxFrame)
	return b
}

func sendHello(c frameConn, h hello) error {
	f := newFrame()
	f.typ = frameHello
	f.body = h.encode()
	err := c.writeFrames([]*frame{f})
	if c.isWire() {
		f.release()
	}
	return err
}

func readHello(c frameConn) (hello, error) {
	f, err := c.readFrame()
	if err != nil {
		return hello{}, err
	}
	defer f.release()
	if f.typ == frameError {
		return hello{}, decodeErrorFrame(f.body, c.peer())
	}
	if f.typ != frameHello || len(f.body) != helloSize {
		return hello{}, nferr.Dataf("shuffle: %s did not start with a hello", c.peer())
	}
	h := hello{
		role:     f.body[0],
		node:     binary.LittleEndian.Uint32(f.body[4:8]),
		window:   binary.LittleEndian.Uint32(f.body[8:12]),
		maxFrame: binary.LittleEndian.Uint32(f.body[12:16]),
	}
	if h.role != roleAgent && h.role != roleClient {
		return hello{}, nferr.Dataf("shuffle: %s sent a hello with unknown role %d", c.peer(), h.role)
	}
	if h.window < minAggSize || h.maxFrame < minAggSize {
		return hello{}, nferr.Dataf("shuffle: %s sent a hello with window %d and max frame %d", c.peer(), h.window, h.maxFrame)
	}
	return h, nil
}

// sendReject tells the peer why its hello was refused.
func sendReject(c frameConn, err error) {
	f := errorFrame(err)
	c.setDeadline(time.Now().Add(time.Second))
	_ = c.writeFrames([]*frame{f})
	if c.isWire() {
		f.release()
	}
}

// handshakeErr classifies a failed TLS handshake: cut short by the network
// (the peer died or restarted mid-handshake: reset, closed, timed out) it
// is KindUnavailable; refused credentials are KindAuth.
func handshakeErr(peer string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nferr.Unavailablef("shuffle: TLS handshake with %s cut short: %v", peer, err)
	}
	return nferr.Authf("shuffle: TLS handshake with %s failed: %v", peer, err)
}
