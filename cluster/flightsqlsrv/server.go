package flightsqlsrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
)

// DefaultListen is the default address: Flight SQL's customary port, on
// the loopback interface.
const DefaultListen = "127.0.0.1:31337"

// Options configure a server. Only Open differs between `nicflow serve`
// (an embedded session on a database directory) and a cluster
// coordinator (a session that plans across the cluster).
type Options struct {
	// Listen is the TCP address (default DefaultListen). Without UsersFile
	// it must be a loopback address (local clients are trusted).
	Listen string
	// Open makes the engine session of a new client connection (and
	// user); the server closes it when the connection ends. Required.
	Open func() (engine.Conn, error)
	// UsersFile, when set, requires every call to authenticate as one of
	// its users (pgwire.AddUser: the same SCRAM-SHA-256 verifiers the
	// PostgreSQL protocol uses): basic authentication (user and password,
	// checked against the stored verifier) gives a bearer token that later
	// calls present. Basic authentication sends the password itself, so a
	// server with users listens beyond loopback only with TLS.
	UsersFile string
	// TLS, when set, makes the server speak TLS only (gRPC has no
	// in-band upgrade: a client connects with grpc+tls://). With ClientCAs
	// (mutual TLS), a client certificate that verifies against them
	// authenticates the user its CommonName names, with no password; a
	// client without one logs in with basic authentication (unless
	// ClientAuth requires a certificate). Client certificates need
	// UsersFile: the user must exist.
	TLS *tls.Config
	// TokenTTL is how long a bearer token is valid (default 12h); a
	// client then logs in again. Removing a user or changing the password
	// revokes the user's tokens at once.
	TokenTTL time.Duration
	// StatementTTL is how long a statement's ticket stays valid for DoGet
	// (default 10 minutes).
	StatementTTL time.Duration
	// PreparedTTL closes a prepared statement unused for this long
	// (default 1 hour), so clients that vanish leak nothing.
	PreparedTTL time.Duration
	// Version is the server version GetSqlInfo reports (default "dev").
	Version string
	// Logger receives errors that reach no client (default: slog's
	// default).
	Logger *slog.Logger
	// Alloc allocates the batches the server builds (metadata, converted
	// columns, parameters read); default memory.DefaultAllocator.
	Alloc memory.Allocator
}

// Limits of the server's tables: a client past them gets a resource
// error instead of the server growing without bound.
const (
	maxStatements = 100_000
	maxPrepared   = 10_000
	maxTokens     = 100_000
	maxMessage    = 64 << 20
)

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Open == nil {
		return nferr.Internalf("flightsqlsrv: Options.Open is required")
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = 12 * time.Hour
	}
	if o.StatementTTL <= 0 {
		o.StatementTTL = 10 * time.Minute
	}
	if o.PreparedTTL <= 0 {
		o.PreparedTTL = time.Hour
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nferr.Queryf("Flight SQL listen address %q: %v", o.Listen, err)
	}
	if o.TLS != nil && o.TLS.ClientCAs != nil && o.UsersFile == "" {
		return nferr.Queryf("client certificates authenticate users of the users file: they need authentication on (--auth)")
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	switch {
	case !loopback && o.UsersFile == "":
		return nferr.Queryf("Flight SQL listen address %q: listening beyond loopback addresses requires authentication (--auth, with users from `nicflow user add`)", o.Listen)
	case !loopback && o.TLS == nil:
		return nferr.Queryf("Flight SQL listen address %q: Flight SQL clients send their password itself (basic authentication), so listening beyond loopback addresses requires TLS (--tls-cert and --tls-key)", o.Listen)
	}
	return nil
}

// Server is an Arrow Flight SQL server.
type Server struct {
	opts Options
	ln   net.Listener
	gs   *grpc.Server
	h    *handler

	nextConn atomic.Uint64
	running  atomic.Int64 // statements running (tests watch it)

	mu       sync.Mutex
	sessions map[sessKey]*session
	stmts    map[handle]*statement
	prepared map[handle]*prepared
	tokens   map[[32]byte]*token
	auth     authState
	closed   bool
	stop     chan struct{}
	janitor  sync.WaitGroup
	streams  sync.WaitGroup // DoGet streams' goroutines
}

// Listen opens the server's socket; Serve answers calls on it.
func Listen(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, nferr.IOf("listening on %s: %w", opts.Listen, err)
	}
	s := &Server{
		opts: opts, ln: ln,
		sessions: map[sessKey]*session{},
		stmts:    map[handle]*statement{},
		prepared: map[handle]*prepared{},
		tokens:   map[[32]byte]*token{},
		stop:     make(chan struct{}),
	}
	s.h = newHandler(s)
	gopts := []grpc.ServerOption{
		grpc.StatsHandler(connTagger{s}),
		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor),
		grpc.MaxRecvMsgSize(maxMessage),
	}
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.gs = grpc.NewServer(gopts...)
	flight.RegisterFlightServiceServer(s.gs, flightsql.NewFlightServerWithAllocator(s.h, opts.Alloc))
	s.janitor.Add(1)
	go s.sweep()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve answers calls until Close; it returns nil after Close.
func (s *Server) Serve() error {
	err := s.gs.Serve(s.ln)
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	if err != nil {
		return nferr.IOf("serving Flight SQL: %w", err)
	}
	return nil
}

// Close stops the server: running statements are canceled, every
// connection ends and every session is closed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	for _, st := range s.stmts {
		st.cancelRun()
	}
	s.mu.Unlock()
	s.gs.Stop()
	s.streams.Wait()
	s.janitor.Wait()
	s.mu.Lock()
	var open []*session
	for k, ss := range s.sessions {
		delete(s.sessions, k)
		ss.closing = true
		if ss.refs == 0 {
			open = append(open, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range open {
		ss.close()
	}
	return nil
}

// sweep drops expired statements, prepared statements and tokens.
func (s *Server) sweep() {
	defer s.janitor.Done()
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.expire(now)
		}
	}
}

func (s *Server) expire(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, st := range s.stmts {
		if now.After(st.expires) && st.runs == 0 {
			delete(s.stmts, h)
		}
	}
	for h, p := range s.prepared {
		if now.Sub(p.used) > s.opts.PreparedTTL {
			delete(s.prepared, h)
		}
	}
	for k, t := range s.tokens {
		if now.After(t.expires) {
			delete(s.tokens, k)
		}
	}
}

// ---------------------------------------------------------------- sessions

// A session is the engine session of one client connection and user: its
// settings (SET TIME ZONE, ...) last as long as the connection, as in
// PostgreSQL. gRPC multiplexes calls on a connection, so calls may use
// a session concurrently: the engine plans one statement at a time and
// runs the queries it started independently.
type session struct {
	key sessKey

	once sync.Once
	sess engine.Conn
	err  error

	// refs and closing are guarded by Server.mu: the connection ended
	// (closing) and the last call using the session closes it.
	refs    int
	closing bool
}

type sessKey struct {
	conn uint64
	user string
}

func (ss *session) open(o func() (engine.Conn, error)) (engine.Conn, error) {
	ss.once.Do(func() { ss.sess, ss.err = o() })
	return ss.sess, ss.err
}

func (ss *session) close() {
	ss.once.Do(func() { ss.err = nferr.Internalf("session closed") })
	if ss.sess != nil {
		ss.sess.Close()
	}
}

type connKey struct{}
type userKey struct{}

// acquire returns the session of the call's connection and user (opened
// at its first use) and the function that releases it.
func (s *Server) acquire(ctx context.Context) (engine.Conn, func(), error) {
	conn, _ := ctx.Value(connKey{}).(uint64)
	if conn == 0 {
		return nil, nil, nferr.Internalf("a call without a connection")
	}
	key := sessKey{conn, userOf(ctx)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, nferr.Unavailablef("the server is shutting down")
	}
	ss := s.sessions[key]
	if ss == nil {
		ss = &session{key: key}
		s.sessions[key] = ss
	}
	ss.refs++
	s.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			s.mu.Lock()
			ss.refs--
			last := ss.refs == 0 && ss.closing
			s.mu.Unlock()
			if last {
				ss.close()
			}
		})
	}
	sess, err := ss.open(s.opts.Open)
	if err != nil {
		release()
		return nil, nil, err
	}
	return sess, release, nil
}

// connEnded closes the sessions of a connection (at their last call).
func (s *Server) connEnded(conn uint64) {
	s.mu.Lock()
	var idle []*session
	for k, ss := range s.sessions {
		if k.conn != conn {
			continue
		}
		delete(s.sessions, k)
		ss.closing = true
		if ss.refs == 0 {
			idle = append(idle, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range idle {
		ss.close()
	}
}

// connTagger numbers connections (the session key) and closes their
// sessions when they end.
type connTagger struct{ s *Server }

func (c connTagger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, c.s.nextConn.Add(1))
}

func (c connTagger) HandleConn(ctx context.Context, st stats.ConnStats) {
	if _, ok := st.(*stats.ConnEnd); ok {
		if conn, _ := ctx.Value(connKey{}).(uint64); conn != 0 {
			c.s.connEnded(conn)
		}
	}
}

func (connTagger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTagger) HandleRPC(context.Context, stats.RPCStats)                       {}

// ---------------------------------------------------------------- interceptors

// The interceptors authenticate each call, turn errors into gRPC statuses
// that keep their kind (nferr.ToStatus: a bad query is InvalidArgument, a
// canceled one Canceled, with the engine's message) and turn a panic into
// an internal error instead of ending the process.

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer s.recoverCall(info.FullMethod, &err)
	ctx, err = s.authenticate(ctx, info.FullMethod, func(md map[string]string) { grpc.SetHeader(ctx, mdOf(md)) })
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err = handler(ctx, req)
	return resp, toStatus(err)
}

func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer s.recoverCall(info.FullMethod, &err)
	ctx, err := s.authenticate(ss.Context(), info.FullMethod, func(md map[string]string) {
		ss.SetHeader(mdOf(md))
		ss.SetTrailer(mdOf(md))
	})
	if err != nil {
		return toStatus(err)
	}
	return toStatus(handler(srv, &ctxStream{ServerStream: ss, ctx: ctx}))
}

func (s *Server) recoverCall(method string, err *error) {
	if r := recover(); r != nil {
		s.opts.Logger.Error("Flight SQL call panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, fmt.Sprintf("internal error in %s: %v", method, r))
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *ctxStream) Context() context.Context { return c.ctx }

// toStatus is err as a gRPC status: nferr errors keep their kind and
// message; context errors become Canceled or DeadlineExceeded; statuses
// pass.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		if _, nf := nferr.As(err); !nf {
			return err
		}
	}
	if _, nf := nferr.As(err); !nf && errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return nferr.ToStatus(nferr.With(nferr.KindInternal, err))
}

// Running is the number of statements running now.
func (s *Server) Running() int64 { return s.running.Load() }
