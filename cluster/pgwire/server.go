package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Options configure a server.
type Options struct {
	// Listen is the TCP address (default 127.0.0.1:5433). Without
	// UsersFile it must be a loopback address (local connections are
	// trusted).
	Listen string
	// UsersFile, when set, requires every connection to authenticate
	// with SCRAM-SHA-256 as one of its users (AddUser); the file is read
	// at each connection.
	UsersFile string
	// TLS, when set, accepts a client's SSL request (sslmode=require and
	// above); RequireTLS then refuses connections that do not ask for it.
	// With ClientCAs (and ClientAuth VerifyClientCertIfGiven or
	// RequireAndVerifyClientCert) a client's certificate is verified
	// against them and authenticates it: a connection whose verified
	// certificate's CommonName is the user it logs in as needs no
	// password, one whose CommonName differs is refused (PostgreSQL's
	// "cert" method), one without a certificate uses its password. Client
	// certificates need UsersFile (the user must exist), and a required
	// one implies RequireTLS.
	TLS        *tls.Config
	RequireTLS bool
	// Open makes the session of a new connection once it has logged in
	// (a session of an engine.SharedDB in this process, cluster.NewSQLConn
	// on a coordinator); the server closes it when the connection ends.
	// It must be cheap: it runs for every connection. Required.
	Open func() (engine.Conn, error)
	// Logger receives connection errors (default: slog's default).
	Logger *slog.Logger
	// LogStatements logs every statement a client sends (a simple query's
	// script, an extended-protocol Execute's statement with its parameters
	// substituted) and the error of each one that fails, at Info level
	// on Logger: what a client such as SQLAlchemy or psql sends
	// (PostgreSQL's log_statement = all).
	LogStatements bool

	// MaxConnections bounds the connections served at once (default
	// DefaultMaxConnections, PostgreSQL's max_connections): past it, a
	// startup message is answered with PostgreSQL's FATAL 53300 "sorry,
	// too many clients already", before authentication, and the
	// connection closed. Connections still before their startup message
	// (SSL negotiation) are bounded apart: past MaxConnections of them, a
	// new one has SSL declined and its startup message refused the same
	// way (within two seconds), and past twice as many it is sent the
	// refusal at once. A cancel request is no session: it is served
	// however many sessions there are.
	MaxConnections int
	// IdleTimeout closes a connection that has waited this long for its
	// next query (default DefaultIdleTimeout; negative: never), as
	// PostgreSQL's idle_session_timeout: after ReadyForQuery, outside a
	// transaction block. A connection in a block, between the messages
	// of an extended-protocol exchange (before its Sync) or running a
	// statement is not idle. It is sent FATAL 57P05 "terminating
	// connection due to idle-session timeout" before it is closed.
	IdleTimeout time.Duration
	// AuthTimeout bounds a connection's startup (default
	// DefaultAuthTimeout, PostgreSQL's authentication_timeout): SSL
	// negotiation, the startup message and authentication must be done
	// by then, else the connection is closed.
	AuthTimeout time.Duration
}

// Defaults of Options' limits.
const (
	// DefaultMaxConnections is PostgreSQL's default max_connections.
	DefaultMaxConnections = 100
	// DefaultIdleTimeout outlasts the idle times of connection pools
	// (pgxpool's 30 minutes, HikariCP's 10), which close their idle
	// connections first; PostgreSQL's idle_session_timeout is off by
	// default.
	DefaultIdleTimeout = time.Hour
	// DefaultAuthTimeout is PostgreSQL's authentication_timeout.
	DefaultAuthTimeout = time.Minute
)

// maxMessage bounds a client message (a query text or a Bind): a claimed
// length beyond it ends the connection instead of reserving memory.
const maxMessage = 64 << 20

// DefaultListen is the default address: PostgreSQL's port plus one.
const DefaultListen = "127.0.0.1:5433"

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Open == nil {
		return nferr.Internalf("pgwire: Options.Open is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.MaxConnections == 0:
		o.MaxConnections = DefaultMaxConnections
	case o.MaxConnections < 0:
		return nferr.Queryf("max connections %d: want at least 1", o.MaxConnections)
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	switch {
	case o.AuthTimeout == 0:
		o.AuthTimeout = DefaultAuthTimeout
	case o.AuthTimeout < 0:
		return nferr.Queryf("authentication timeout %v: want a positive duration", o.AuthTimeout)
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nferr.Queryf("listen address %q: %v", o.Listen, err)
	}
	if o.RequireTLS && o.TLS == nil {
		return nferr.Queryf("requiring TLS needs a certificate and key")
	}
	if o.TLS != nil && o.TLS.ClientCAs != nil {
		if o.UsersFile == "" {
			return nferr.Queryf("client certificates authenticate users of the users file: they need authentication on (--auth)")
		}
		if o.TLS.ClientAuth == tls.RequireAndVerifyClientCert {
			o.RequireTLS = true // no certificate without TLS
		}
	}
	if ip := net.ParseIP(host); o.UsersFile == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nferr.Queryf("listen address %q: listening beyond loopback addresses requires authentication (--auth, with users from `nicflow user add`)", o.Listen)
	}
	return nil
}

// Server is a PostgreSQL protocol server.
type Server struct {
	opts Options
	ln   net.Listener

	mu    sync.Mutex
	conns map[uint32]*conn // logged in, by process ID (cancel requests name it)
	// live are the connections accepted and not yet ended (Close ends
	// them), each in a phase (Options.MaxConnections bounds each count).
	live    map[net.Conn]struct{}
	phases  [phaseSession + 1]int
	refused refusals
	closed  bool
	wg      sync.WaitGroup
	nextPID uint32
}

// phase is where a connection stands, for Options.MaxConnections.
type phase int

const (
	phaseNone     phase = iota // refused at once, or not counted yet
	phaseStarting              // before its startup message
	// phaseRefusing: accepted with phaseStarting full, it is read (SSL
	// declined) for refusalWait, to answer its startup message with
	// PostgreSQL's refusal, which a client reads once SSL is declined
	// (libpq ignores an error sent instead of its SSL answer).
	phaseRefusing
	phaseSession // past its startup message: a session
)

// refusalWait bounds the wait for the startup message of a connection
// that is to be refused.
const refusalWait = 2 * time.Second

// refusals counts connections refused for Options.MaxConnections, to log
// them once in a while rather than one line each.
type refusals struct {
	n      int
	logged time.Time
}

// Listen opens the server's socket; Serve accepts connections on it.
func Listen(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, nferr.IOf("listening on %s: %w", opts.Listen, err)
	}
	return &Server{opts: opts, ln: ln, conns: map[uint32]*conn{}, live: map[net.Conn]struct{}{}, nextPID: 1000}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve accepts connections until Close; it returns nil after Close.
// Running out of file descriptors (or kernel memory) does not end it: it
// waits, up to a second, and accepts again, as net/http does.
func (s *Server) Serve() error {
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if acceptRetryable(err) {
				if backoff == 0 {
					s.opts.Logger.Warn("pgwire: accepting connections failed; retrying", "err", err)
				}
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return nferr.IOf("accepting: %w", err)
		}
		backoff = 0
		// NB: nothing here but bookkeeping: a connection's startup, and
		// its refusal past the limits, run on its own goroutine.
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.live[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(nc)
		}()
	}
}

// acceptRetryable: Accept failed for want of resources that connections
// ending give back (EMFILE, ENFILE, ENOBUFS, ENOMEM), or for a client
// that gave up (ECONNABORTED).
func acceptRetryable(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Close stops accepting, ends every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for nc := range s.live {
		nc.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// tooManyClients is PostgreSQL's refusal past max_connections.
var tooManyClients = &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "53300", Message: "sorry, too many clients already"}

// refuse counts a refusal for MaxConnections and logs the refusals, at
// most one line every ten seconds.
func (s *Server) refuse(phase string) {
	s.mu.Lock()
	s.refused.n++
	n := s.refused.n
	now := time.Now()
	log := now.Sub(s.refused.logged) >= 10*time.Second
	if log {
		s.refused.n, s.refused.logged = 0, now
	}
	s.mu.Unlock()
	if log {
		s.opts.Logger.Warn("pgwire: refused connections: too many clients (--pg-max-connections)", "refused", n, "phase", phase, "max", s.opts.MaxConnections)
	}
}

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn
	// raw is the TCP connection under nc (nc is a *tls.Conn after an SSL
	// request): its deadlines bound the startup and idle waits.
	raw    net.Conn
	be     *pgproto3.Backend
	sess   engine.Conn
	pid    uint32
	secret []byte
	tls    bool // the connection switched to TLS
	// phase is the server's count the connection is in (admit moves it).
	phase phase

	mu     sync.Mutex
	cancel context.CancelFunc // of the running statement, or nil

	stmts   map[string]*prepared
	portals map[string]*portal
	// failed: an extended-protocol error; messages are skipped until Sync.
	failed bool
	// copyIn and copyOut serve the running statement's COPY FROM STDIN
	// and TO STDOUT (copy.go).
	copyIn  copyIn
	copyOut copyOut
}

// prepared is a statement of the extended protocol.
type prepared struct {
	sql string
	// given are the parameters' type OIDs Parse named (0 where it named
	// none); params are their OIDs as described: the client's, else the
	// type their context gives them (engine.Conn.DescribeStatement), set
	// when described.
	given  []uint32
	params []uint32
	// described: parameters and columns computed (Describe); rows false
	// for a statement without rows.
	described bool
	rows      bool
	names     []string
	types     []arrow.DataType
}

type portal struct {
	stmt *prepared
	// formats are Bind's result format codes (PostgreSQL's rule: none is
	// all text, one is every column's, else one per column).
	formats []int16
	// sql is the statement with its parameters' values substituted.
	sql string
	// run is the portal's statement while its rows are sent in parts
	// (Execute with a row limit: PortalSuspended between them); nil
	// before the first Execute.
	run *portalRun
}

// portalRun is a suspended portal's running statement: its result, read
// where the last Execute stopped, and the context that cancels it.
type portalRun struct {
	rows   *rowSender
	cancel context.CancelFunc
	done   func()
}

// closePortal closes portal name: a running statement is canceled and
// its result released.
func (c *conn) closePortal(name string) {
	p := c.portals[name]
	if p == nil {
		return
	}
	delete(c.portals, name)
	if p.run != nil {
		p.run.rows.close()
		p.run.done()
		p.run = nil
	}
}

// closePortals closes every portal (Sync ends the implicit transaction,
// and with it the portals, as PostgreSQL does outside a transaction
// block; the connection's end).
func (c *conn) closePortals() {
	for name := range c.portals {
		c.closePortal(name)
	}
}

func (s *Server) handle(nc net.Conn) {
	c := &conn{s: s, nc: nc, raw: nc, stmts: map[string]*prepared{}, portals: map[string]*portal{}}
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.live, nc)
		s.phases[c.phase]--
		s.mu.Unlock()
	}()
	s.mu.Lock()
	switch {
	case s.phases[phaseStarting] < s.opts.MaxConnections:
		c.phase = phaseStarting
	case s.phases[phaseRefusing] < s.opts.MaxConnections:
		c.phase = phaseRefusing
	}
	s.phases[c.phase]++
	s.mu.Unlock()
	if c.phase == phaseNone {
		// NB: a flood of connections that send nothing: refused at once,
		// without waiting for their startup message.
		s.refuse("accept")
		if b, err := tooManyClients.Encode(nil); err == nil {
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			nc.Write(b) //nolint:errcheck // closing anyway
		}
		return
	}
	c.be = pgproto3.NewBackend(nc, nc)
	c.be.SetMaxBodyLen(maxMessage)
	// NB: the whole startup (TLS handshake, authentication included)
	// must end by the deadline: a client that stalls is closed.
	wait := s.opts.AuthTimeout
	if c.phase == phaseRefusing {
		wait = min(wait, refusalWait)
	}
	nc.SetDeadline(time.Now().Add(wait))
	if !c.startup() {
		return
	}
	nc.SetDeadline(time.Time{})
	defer func() {
		s.mu.Lock()
		delete(s.conns, c.pid)
		s.mu.Unlock()
		c.closePortals()
		c.sess.Close()
	}()
	if err := c.loop(); err != nil && !clientLeft(err) {
		s.opts.Logger.Warn("pgwire connection ended", "remote", nc.RemoteAddr().String(), "err", err)
	}
}

// clientLeft: err is the client closing its connection, which is no
// error of the server's to log (pgproto3 reports an end of input, even
// between messages, as io.ErrUnexpectedEOF).
func clientLeft(err error) bool {
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, syscall.EPIPE, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// admit makes the connection a session, unless MaxConnections are served
// already or it was accepted past the starting ones: then it sends
// PostgreSQL's refusal.
func (c *conn) admit() bool {
	s := c.s
	s.mu.Lock()
	if c.phase != phaseStarting || s.phases[phaseSession] >= s.opts.MaxConnections {
		s.mu.Unlock()
		s.refuse("startup")
		c.be.Send(tooManyClients)
		c.be.Flush()
		return false
	}
	s.phases[phaseStarting]--
	s.phases[phaseSession]++
	c.phase = phaseSession
	s.mu.Unlock()
	return true
}

// startup runs the startup phase: encryption requests declined, a cancel
// request served, then the startup message answered (trust).
func (c *conn) startup() bool {
	for {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			return false
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if c.s.opts.TLS == nil || c.tls || c.phase == phaseRefusing {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return false
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return false
			}
			tc := tls.Server(c.nc, c.s.opts.TLS)
			if err := tc.Handshake(); err != nil {
				return false
			}
			c.nc, c.tls = tc, true
			c.be = pgproto3.NewBackend(tc, tc)
			c.be.SetMaxBodyLen(maxMessage)
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false
			}
		case *pgproto3.CancelRequest:
			c.s.cancel(m.ProcessID, m.SecretKey)
			return false
		case *pgproto3.StartupMessage:
			if !c.admit() {
				return false
			}
			if c.s.opts.RequireTLS && !c.tls {
				c.be.Send(errorResponse(&nferr.Error{Kind: nferr.KindAuth, Msg: "this server accepts TLS connections only (sslmode=require)"}, ""))
				c.be.Flush()
				return false
			}
			if c.s.opts.UsersFile != "" {
				auth := c.authenticate
				if cn, ok := c.clientCert(); ok {
					auth = func(user string) error { return c.certAuthenticate(user, cn) }
				}
				if err := auth(m.Parameters["user"]); err != nil {
					c.be.Send(errorResponse(err, ""))
					c.be.Flush()
					return false
				}
			}
			// NB: the session is made only for a client that logged in.
			sess, err := c.s.opts.Open()
			if err != nil {
				c.be.Send(errorResponse(err, ""))
				c.be.Flush()
				return false
			}
			c.sess = sess
			c.secret = make([]byte, 4)
			rand.Read(c.secret)
			c.s.mu.Lock()
			c.s.nextPID++
			c.pid = c.s.nextPID
			c.s.conns[c.pid] = c
			c.s.mu.Unlock()
			c.be.Send(&pgproto3.AuthenticationOk{})
			for _, p := range [][2]string{
				{"server_version", "16.0 (nicflow)"},
				{"server_encoding", "UTF8"},
				{"client_encoding", "UTF8"},
				{"DateStyle", "ISO, MDY"},
				{"IntervalStyle", "postgres"},
				{"TimeZone", "UTC"},
				{"integer_datetimes", "on"},
				{"standard_conforming_strings", "on"},
				{"application_name", m.Parameters["application_name"]},
			} {
				c.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
			}
			c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
			c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.sess.TxStatus()})
			return c.be.Flush() == nil
		default:
			return false
		}
	}
}

// authenticate runs SCRAM-SHA-256 with the client for user: the server's
// first and final messages as PostgreSQL sends them (AuthenticationSASL,
// SASLContinue, SASLFinal); any failure is one error, 28P01.
func (c *conn) authenticate(user string) error {
	failed := &nferr.Error{Kind: nferr.KindAuth, Msg: fmt.Sprintf("password authentication failed for user %q", user)}
	srv, err := scramServer(c.s.opts.UsersFile, user)
	if err != nil {
		return err
	}
	conv := srv.NewConversation()
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return err
	}
	msg, err := c.receive()
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		return failed
	}
	out, err := conv.Step(string(first.Data))
	if err != nil {
		return failed
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(out)})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return err
	}
	if msg, err = c.receive(); err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return failed
	}
	out, err = conv.Step(string(resp.Data))
	if err != nil || !conv.Valid() {
		return failed
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(out)})
	return nil
}

// clientCert returns the CommonName of the connection's client
// certificate, when it sent one that verified against Options.TLS's
// ClientCAs.
func (c *conn) clientCert() (string, bool) {
	tc, ok := c.nc.(*tls.Conn)
	if !ok || c.s.opts.TLS == nil || c.s.opts.TLS.ClientCAs == nil {
		return "", false
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return "", false
	}
	return st.PeerCertificates[0].Subject.CommonName, true
}

// certAuthenticate authenticates user by a verified client certificate
// whose CommonName is cn: it must be the user's name, and the user must
// exist (PostgreSQL's "cert" method). No password is asked.
func (c *conn) certAuthenticate(user, cn string) error {
	if cn != user {
		return &nferr.Error{Kind: nferr.KindAuth, Msg: fmt.Sprintf("certificate authentication failed for user %q: the client certificate is for %q", user, cn)}
	}
	_, ok, err := LookupUser(c.s.opts.UsersFile, user)
	if err != nil {
		return err
	}
	if !ok {
		return &nferr.Error{Kind: nferr.KindAuth, Msg: fmt.Sprintf("certificate authentication failed for user %q: no such user (nicflow user add)", user)}
	}
	return nil
}

// cancel cancels the statement running on connection pid if key matches.
func (s *Server) cancel(pid uint32, key []byte) {
	s.mu.Lock()
	c := s.conns[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret, key) != 1 {
		return
	}
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

// context is a cancellable context for one statement.
// It carries the connection's COPY streams; when the statement ends, a
// copy-in it did not finish is drained.
func (c *conn) context() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	c.copyIn = copyIn{c: c}
	c.copyOut = copyOut{c: c}
	ctx = engine.WithCopyOut(engine.WithCopyIn(ctx, &c.copyIn), &c.copyOut)
	return ctx, func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
		c.copyIn.finish() //nolint:errcheck // a broken connection ends at the next receive
	}
}

// receive reads the next message; a decoder that panics on malformed
// bytes ends the connection, not the server.
func (c *conn) receive() (msg pgproto3.FrontendMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, nferr.Dataf("malformed protocol message: %v", r)
		}
	}()
	return c.be.Receive()
}

// idleSessionTimeout is PostgreSQL's notice to a connection it closes
// for idle_session_timeout.
var idleSessionTimeout = &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P05", Message: "terminating connection due to idle-session timeout"}

func (c *conn) loop() error {
	// idle: the last message sent was ReadyForQuery (the startup's, a
	// query's, a Sync's); outside a transaction block, the wait for the
	// next message is then bounded by Options.IdleTimeout.
	idle := true
	for {
		armed := false
		if t := c.s.opts.IdleTimeout; t > 0 && idle && c.sess.TxStatus() == 'I' {
			c.raw.SetReadDeadline(time.Now().Add(t))
			armed = true
		}
		msg, err := c.receive()
		if err != nil {
			if armed && errors.Is(err, os.ErrDeadlineExceeded) {
				c.raw.SetWriteDeadline(time.Now().Add(5 * time.Second))
				c.be.Send(idleSessionTimeout)
				c.be.Flush()
				return nil
			}
			return err
		}
		if armed {
			// NB: a statement's own reads (COPY FROM STDIN) are not bounded.
			c.raw.SetReadDeadline(time.Time{})
		}
		idle = false
		switch msg.(type) {
		case *pgproto3.Query, *pgproto3.Sync:
			idle = true
		}
		if c.failed {
			if _, ok := msg.(*pgproto3.Sync); !ok {
				if _, ok := msg.(*pgproto3.Terminate); !ok {
					continue
				}
			}
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			c.simpleQuery(m.String)
			c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.sess.TxStatus()})
		case *pgproto3.Parse:
			c.parse(m)
		case *pgproto3.Bind:
			c.bind(m)
		case *pgproto3.Describe:
			c.describe(m)
		case *pgproto3.Execute:
			c.execute(m)
		case *pgproto3.Close:
			if m.ObjectType == 'S' {
				delete(c.stmts, m.Name)
			} else {
				c.closePortal(m.Name)
			}
			c.be.Send(&pgproto3.CloseComplete{})
		case *pgproto3.Sync:
			c.failed = false
			if c.sess.TxStatus() == 'I' {
				// NB: Sync ends the implicit transaction, and with it
				// the portals; inside BEGIN ... COMMIT they live on, so
				// that a client fetches a suspended portal in parts.
				c.closePortals()
			}
			c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.sess.TxStatus()})
		case *pgproto3.Flush:
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// The rest of a copy-in that failed: PostgreSQL drops it.
		case *pgproto3.Terminate:
			return c.be.Flush()
		default:
			c.fail(nferr.Queryf("protocol message %T is not supported", msg), "")
		}
		if err := c.be.Flush(); err != nil {
			return err
		}
	}
}

// logStatement logs a statement the client sent (Options.LogStatements).
func (c *conn) logStatement(how, text string) {
	if c.s.opts.LogStatements {
		c.s.opts.Logger.Info("pgwire: statement", "remote", c.raw.RemoteAddr().String(), "protocol", how, "sql", text)
	}
}

// fail sends an error; in the extended protocol the messages until Sync
// are then skipped.
func (c *conn) fail(err error, src string) {
	if c.s.opts.LogStatements {
		c.s.opts.Logger.Info("pgwire: statement failed", "remote", c.raw.RemoteAddr().String(), "err", err.Error())
	}
	c.be.Send(errorResponse(err, src))
	c.failed = true
}

// simpleQuery runs a script: each statement's rows and command tag; the
// first error ends it.
func (c *conn) simpleQuery(script string) {
	defer func() { c.failed = false }()
	c.logStatement("query", script)
	if emptyStatement(script) {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	ctx, done := c.context()
	defer done()
	sc, err := c.sess.Execute(ctx, script)
	if err != nil {
		c.fail(err, script)
		return
	}
	defer sc.Close()
	for {
		r, err := sc.Next()
		if err != nil {
			c.fail(err, script)
			return
		}
		if r == nil {
			return
		}
		if r.Schema != nil {
			c.be.Send(rowDescription(r.Schema))
		}
		if err := c.sendResult(r, script, nil); err != nil {
			return
		}
	}
}

// sendResult sends a result's rows (the row description already sent)
// in formats (Bind's codes; nil: text) and its command tag, and closes it.
func (c *conn) sendResult(r *engine.Result, src string, formats []int16) error {
	rs, err := newRowSender(r, formats)
	if err != nil {
		r.Close()
		c.fail(err, src)
		return err
	}
	defer rs.close()
	_, err = c.sendRows(rs, src, 0)
	return err
}

// rowSender sends a result's rows as DataRows, all at once or in parts
// (a portal's Execute with a row limit): it keeps the batch it stopped in
// and the row to resume at, and reads the next batch only when that one
// is sent, so a result is never held whole.
type rowSender struct {
	r       *engine.Result
	formats []int16
	fmts    []*engine.ValueFormatter
	// elems are the element formatters of array columns (nil for
	// another), for their binary format.
	elems []*engine.ValueFormatter
	rec   arrow.RecordBatch // the result's batch being sent (valid until its next Next)
	row   int               // the next row of rec to send
	n     int64             // rows sent by the current Execute
}

func newRowSender(r *engine.Result, formats []int16) (*rowSender, error) {
	rs := &rowSender{r: r, formats: formats}
	if r.Schema == nil {
		return rs, nil
	}
	rs.fmts = make([]*engine.ValueFormatter, r.Schema.NumFields())
	rs.elems = make([]*engine.ValueFormatter, r.Schema.NumFields())
	for i, f := range r.Schema.Fields() {
		vf, err := engine.NewValueFormatterIn(f.Type, r.Zone)
		if err != nil {
			return nil, err
		}
		rs.fmts[i] = vf
		if lt, ok := f.Type.(*arrow.ListType); ok {
			if rs.elems[i], err = engine.NewValueFormatterIn(lt.Elem(), r.Zone); err != nil {
				return nil, err
			}
		}
	}
	return rs, nil
}

func (rs *rowSender) close() { rs.r.Close() }

// sendRows sends up to limit rows (0: all that remain) and, when the
// result ends, its command tag: done is then true. Stopping at the limit
// sends nothing more (the caller sends PortalSuspended), even when no
// row remains, as PostgreSQL does. An error is sent (fail) and returned.
func (c *conn) sendRows(rs *rowSender, src string, limit int64) (done bool, err error) {
	r := rs.r
	if r.Schema == nil {
		c.copyOut.end()
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(r.Status)})
		return true, nil
	}
	rs.n = 0
	for limit <= 0 || rs.n < limit {
		if rs.rec == nil || rs.row >= int(rs.rec.NumRows()) {
			// NB: rows go out batch by batch as the engine makes them.
			if rs.rec != nil {
				if err := c.be.Flush(); err != nil {
					return false, err
				}
			}
			rec, err := r.Next()
			if err != nil {
				rs.rec = nil
				c.fail(err, src)
				return false, err
			}
			if rec == nil {
				tag := r.Status
				if tag == "" {
					// NB: the rows of this Execute, as PostgreSQL counts
					// a suspended portal's last part.
					tag = "SELECT " + strconv.FormatInt(rs.n, 10)
				}
				rs.rec = nil
				c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
				return true, nil
			}
			rs.rec, rs.row = rec, 0
			continue
		}
		if err := c.sendRow(rs, rs.row); err != nil {
			c.fail(err, src)
			return false, err
		}
		rs.row++
		rs.n++
	}
	return false, nil
}

// sendRow sends row i of rs's batch as a DataRow.
func (c *conn) sendRow(rs *rowSender, i int) error {
	rec := rs.rec
	vals := make([][]byte, len(rs.fmts))
	for j, vf := range rs.fmts {
		col := rec.Column(j)
		if col.IsNull(i) {
			continue // nil: NULL
		}
		v, _ := vf.Format(col, i)
		if col.DataType().ID() == arrow.BOOL {
			v = v[:1] // t or f
		}
		if formatOf(rs.formats, j) == 1 {
			if l, ok := col.(*array.List); ok {
				b, err := arrayBinary(l, i, rs.elems[j])
				if err != nil {
					return err
				}
				vals[j] = b
				continue
			}
			b, err := binaryValue(col, i, v)
			if err != nil {
				return err
			}
			vals[j] = b
			continue
		}
		vals[j] = []byte(v)
	}
	c.be.Send(&pgproto3.DataRow{Values: vals})
	return nil
}

// emptyStatement: the text holds no statement (blank or only ';'), which
// PostgreSQL answers with EmptyQueryResponse.
func emptyStatement(s string) bool {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), ";")) == ""
}

// formatOf is column j's format code among Bind's codes.
func formatOf(formats []int16, j int) int16 {
	switch {
	case len(formats) == 1:
		return formats[0]
	case j < len(formats):
		return formats[j]
	}
	return 0
}

func (c *conn) parse(m *pgproto3.Parse) {
	n, err := sql.ParamCount(m.Query)
	if err != nil {
		c.fail(err, m.Query)
		return
	}
	n = max(n, len(m.ParameterOIDs))
	given := make([]uint32, n)
	copy(given, m.ParameterOIDs)
	if m.Name != "" {
		if _, dup := c.stmts[m.Name]; dup {
			c.fail(&nferr.Error{Kind: nferr.KindQuery, Msg: fmt.Sprintf("prepared statement %q already exists", m.Name)}, "")
			return
		}
	}
	c.stmts[m.Name] = &prepared{sql: m.Query, given: given}
	c.be.Send(&pgproto3.ParseComplete{})
}

func (c *conn) bind(m *pgproto3.Bind) {
	st := c.stmts[m.PreparedStatement]
	if st == nil {
		c.fail(nferr.Queryf("prepared statement %q does not exist", m.PreparedStatement), "")
		return
	}
	if len(m.Parameters) != len(st.given) {
		c.fail(&nferr.Error{Kind: nferr.KindQuery, Msg: fmt.Sprintf("bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), m.PreparedStatement, len(st.given))}, "")
		return
	}
	vals := make([]sql.ParamValue, len(m.Parameters))
	for i, raw := range m.Parameters {
		oid := st.given[i]
		if oid == 0 && st.described {
			oid = st.params[i]
		}
		v, err := paramValue(oid, formatOf(m.ParameterFormatCodes, i), raw)
		if err != nil {
			c.fail(err, "")
			return
		}
		if st.given[i] == 0 {
			// NB: a parameter whose type was inferred (Describe) stays an
			// untyped literal: its context types it, as it did when its
			// type was described; a cast would round a numeric to
			// NUMERIC's default scale.
			v.Type = ""
		}
		vals[i] = v
	}
	bound, err := sql.BindParams(st.sql, vals)
	if err != nil {
		c.fail(err, st.sql)
		return
	}
	for _, f := range m.ResultFormatCodes {
		if f != 0 && f != 1 {
			c.fail(&nferr.Error{Kind: nferr.KindQuery, Msg: fmt.Sprintf("unknown result format code %d", f)}, "")
			return
		}
	}
	c.closePortal(m.DestinationPortal)
	c.portals[m.DestinationPortal] = &portal{stmt: st, formats: m.ResultFormatCodes, sql: bound}
	c.be.Send(&pgproto3.BindComplete{})
}

// describeStmt plans st once to learn its parameters' types (those
// Parse did not name are inferred from their context) and its columns.
func (c *conn) describeStmt(st *prepared) error {
	if st.described {
		return nil
	}
	if emptyStatement(st.sql) {
		st.described, st.params = true, st.given
		return nil
	}
	given := make([]arrow.DataType, len(st.given))
	for i, oid := range st.given {
		given[i] = paramArrowType(oid)
	}
	d, err := c.sess.DescribeStatement(st.sql, given)
	if err != nil {
		return err
	}
	st.params = make([]uint32, len(st.given))
	for i := range st.params {
		switch {
		case st.given[i] != 0:
			st.params[i] = st.given[i] // the client's, as PostgreSQL echoes it
		case i < len(d.Params):
			st.params[i], _, _ = typeOID(d.Params[i])
		default:
			st.params[i] = oidText
		}
	}
	st.described, st.rows, st.names, st.types = true, d.Rows, d.Names, d.Types
	return nil
}

func (c *conn) describe(m *pgproto3.Describe) {
	var st *prepared
	var formats []int16
	if m.ObjectType == 'S' {
		st = c.stmts[m.Name]
	} else if p := c.portals[m.Name]; p != nil {
		st, formats = p.stmt, p.formats
	}
	if st == nil {
		c.fail(nferr.Queryf("%s %q does not exist", map[byte]string{'S': "prepared statement", 'P': "portal"}[m.ObjectType], m.Name), "")
		return
	}
	if err := c.describeStmt(st); err != nil {
		c.fail(err, st.sql)
		return
	}
	if m.ObjectType == 'S' {
		c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: append([]uint32(nil), st.params...)})
	}
	if !st.rows {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	fs := make([]arrow.Field, len(st.types))
	for i, t := range st.types {
		fs[i] = arrow.Field{Name: st.names[i], Type: t}
	}
	// NB: a portal's description carries the formats its Bind chose.
	rd := rowDescription(arrow.NewSchema(fs, nil))
	for j := range rd.Fields {
		rd.Fields[j].Format = formatOf(formats, j)
	}
	c.be.Send(rd)
}

// execute runs a portal's statement, or resumes a suspended one: with a
// row limit (maxRows > 0) it sends that many rows and PortalSuspended,
// keeping the statement running until the next Execute of the portal,
// its Close, or Sync; the last part ends with the command tag.
func (c *conn) execute(m *pgproto3.Execute) {
	p := c.portals[m.Portal]
	if p == nil {
		c.fail(nferr.Queryf("portal %q does not exist", m.Portal), "")
		return
	}
	src := p.sql
	if p.run == nil {
		c.logStatement("execute", src)
		if emptyStatement(src) {
			c.be.Send(&pgproto3.EmptyQueryResponse{})
			return
		}
		ctx, done := c.context()
		c.mu.Lock()
		cancel := c.cancel
		c.mu.Unlock()
		r, err := engine.QueryConn(ctx, c.sess, src)
		if err != nil {
			done()
			c.fail(err, src)
			c.closePortal(m.Portal)
			return
		}
		rs, err := newRowSender(r, p.formats)
		if err != nil {
			r.Close()
			done()
			c.fail(err, src)
			c.closePortal(m.Portal)
			return
		}
		p.run = &portalRun{rows: rs, cancel: cancel, done: done}
	} else {
		// A cancel request now cancels the portal's statement.
		c.mu.Lock()
		c.cancel = p.run.cancel
		c.mu.Unlock()
	}
	done, err := c.sendRows(p.run.rows, src, int64(m.MaxRows))
	if done || err != nil {
		c.closePortal(m.Portal)
		return
	}
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
	c.be.Send(&pgproto3.PortalSuspended{})
}
