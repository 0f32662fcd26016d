package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/nicflow/nicflow/engine"
)

// startLimited serves a fresh database (a table t of 1,000 rows) with
// opts' limits; opens counts the sessions the server made.
func startLimited(t *testing.T, opts Options) (srv *Server, opens *atomic.Int64) {
	t.Helper()
	db, err := engine.OpenShared(t.TempDir(), engine.Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := db.Session(nil)
	r, err := s.Query(context.Background(), "create table t as select * from generate_series(1, 1000) as g(x)")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	opens = new(atomic.Int64)
	opts.Listen = "127.0.0.1:0"
	opts.Open = func() (engine.Conn, error) {
		opens.Add(1)
		return db.Conn(nil), nil
	}
	srv, err = Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return srv, opens
}

// rawClient is a connection speaking the protocol directly.
type rawClient struct {
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// login sends a startup message and reads up to ReadyForQuery; an
// ErrorResponse instead is returned.
func (c *rawClient) login() (*pgproto3.ErrorResponse, error) {
	c.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}})
	if err := c.fe.Flush(); err != nil {
		return nil, err
	}
	return c.untilReady()
}

// untilReady reads messages up to ReadyForQuery (nil) or an ErrorResponse.
func (c *rawClient) untilReady() (*pgproto3.ErrorResponse, error) {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.nc.SetReadDeadline(time.Time{})
	for {
		m, err := c.fe.Receive()
		if err != nil {
			return nil, err
		}
		switch m := m.(type) {
		case *pgproto3.ReadyForQuery:
			return nil, nil
		case *pgproto3.ErrorResponse:
			e := *m
			return &e, nil
		}
	}
}

// query runs q and reads to its ReadyForQuery; an ErrorResponse is
// returned.
func (c *rawClient) query(q string) (*pgproto3.ErrorResponse, error) {
	c.fe.Send(&pgproto3.Query{String: q})
	if err := c.fe.Flush(); err != nil {
		return nil, err
	}
	var first *pgproto3.ErrorResponse
	for {
		e, err := c.untilReady()
		if err != nil || e == nil {
			return first, err
		}
		if first == nil {
			first = e
		}
	}
}

// closedWithin waits for the server to close c, up to d; an
// ErrorResponse it sent before is returned.
func (c *rawClient) closedWithin(d time.Duration) (*pgproto3.ErrorResponse, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var got *pgproto3.ErrorResponse
	for {
		m, err := c.fe.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
				return got, nil
			}
			return got, err
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			ec := *e
			got = &ec
		}
	}
}

// counts returns the server's connections before and past their startup.
func (s *Server) counts() (starting, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phases[phaseStarting] + s.phases[phaseRefusing], s.phases[phaseSession]
}

// waitCounts waits until the server counts starting and sessions.
func waitCounts(t *testing.T, s *Server, starting, sessions int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, se := s.counts()
		if st == starting && se == sessions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server counts %d starting and %d sessions, want %d and %d", st, se, starting, sessions)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMaxConnections: past MaxConnections, a startup message is answered
// with FATAL 53300 and the connection closed, while the sessions served
// go on answering; a session that ends frees its place. Connections that
// send nothing are bounded apart: past as many again, one is read with SSL
// declined and refused at its startup message, and past twice as many it
// is refused at once. A cancel request is served though every session is
// taken.
func TestMaxConnections(t *testing.T) {
	const max = 8
	srv, _ := startLimited(t, Options{MaxConnections: max})
	var sessions []*rawClient
	for i := 0; i < max; i++ {
		c := dialRaw(t, srv.Addr())
		if e, err := c.login(); err != nil || e != nil {
			t.Fatalf("session %d of %d: %v %v", i+1, max, err, e)
		}
		sessions = append(sessions, c)
	}
	for i := 0; i < 3; i++ {
		c := dialRaw(t, srv.Addr())
		e, err := c.login()
		if err != nil || e == nil || e.Code != "53300" || e.Severity != "FATAL" || e.Message != "sorry, too many clients already" {
			t.Fatalf("connection %d past the limit: %v %+v, want FATAL 53300", max+i+1, err, e)
		}
		if _, err := c.closedWithin(5 * time.Second); err != nil {
			t.Errorf("a refused connection stays open: %v", err)
		}
	}
	if e, err := sessions[0].query("select count(*) from t"); err != nil || e != nil {
		t.Fatalf("a session's query while others were refused: %v %v", err, e)
	}

	// A cancel request is no session: it is read and served.
	cr := dialRaw(t, srv.Addr())
	cr.fe.Send(&pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}})
	cr.fe.Flush()
	if e, err := cr.closedWithin(5 * time.Second); err != nil || e != nil {
		t.Errorf("cancel request with every session taken: %v %+v, want the connection closed without a word", err, e)
	}

	sessions[max-1].nc.Close()
	waitCounts(t, srv, 0, max-1)
	c := dialRaw(t, srv.Addr())
	if e, err := c.login(); err != nil || e != nil {
		t.Fatalf("a place freed by a session's end: %v %v", err, e)
	}

	// Connections that never send their startup message: past max of
	// them, a client asking for SSL is declined and its startup message
	// refused, which libpq reports; past twice max, refused at once.
	var silent []*rawClient
	for i := 0; i < max; i++ {
		silent = append(silent, dialRaw(t, srv.Addr()))
	}
	waitCounts(t, srv, max, max)
	late := dialRaw(t, srv.Addr())
	late.fe.Send(&pgproto3.SSLRequest{})
	late.fe.Flush()
	b := make([]byte, 1)
	if _, err := io.ReadFull(late.nc, b); err != nil || b[0] != 'N' {
		t.Errorf("SSL request past %d starting connections: %q %v, want N", max, b, err)
	}
	if e, err := late.login(); err != nil || e == nil || e.Code != "53300" {
		t.Errorf("startup past %d starting connections: %v %+v, want FATAL 53300", max, err, e)
	}
	for i := 0; i < max; i++ {
		silent = append(silent, dialRaw(t, srv.Addr()))
	}
	waitCounts(t, srv, 2*max, max)
	over := dialRaw(t, srv.Addr())
	e, err := over.closedWithin(5 * time.Second)
	if err != nil || e == nil || e.Code != "53300" {
		t.Errorf("connection past %d starting ones: %v %+v, want FATAL 53300 at once", 2*max, err, e)
	}
	for _, c := range silent {
		c.nc.Close()
	}
	waitCounts(t, srv, 0, max)
	if e, err := sessions[1].query("select count(*) from t"); err != nil || e != nil {
		t.Errorf("a session's query after the flood: %v %v", err, e)
	}
}

// TestIdleTimeout: a connection idle outside a transaction block is told
// 57P05 and closed after IdleTimeout; one in a block, one between the
// messages of an extended-protocol exchange and one in a COPY FROM STDIN
// waiting for data are not idle.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	srv, _ := startLimited(t, Options{IdleTimeout: idle})
	login := func() *rawClient {
		c := dialRaw(t, srv.Addr())
		if e, err := c.login(); err != nil || e != nil {
			t.Fatalf("login: %v %v", err, e)
		}
		return c
	}
	plain, block, extended, copying := login(), login(), login(), login()
	if e, err := block.query("begin"); err != nil || e != nil {
		t.Fatal(err, e)
	}
	extended.fe.Send(&pgproto3.Parse{Query: "select 1"})
	extended.fe.Flush()
	copying.fe.Send(&pgproto3.Query{String: "copy t from stdin"})
	copying.fe.Flush()
	start := time.Now()
	e, err := plain.closedWithin(5 * time.Second)
	if err != nil || e == nil || e.Code != "57P05" || e.Severity != "FATAL" {
		t.Fatalf("idle connection: %v %+v, want FATAL 57P05 then closed", err, e)
	}
	if d := time.Since(start); d < idle/2 {
		t.Errorf("closed after %v, before its idle timeout %v", d, idle)
	}
	time.Sleep(3 * idle)
	if e, err := block.query("select count(*) from t"); err != nil || e != nil {
		t.Errorf("connection in a transaction block closed as idle: %v %v", err, e)
	}
	extended.fe.Send(&pgproto3.Sync{})
	extended.fe.Flush()
	if e, err := extended.untilReady(); err != nil || e != nil {
		t.Errorf("connection between Parse and Sync closed as idle: %v %v", err, e)
	}
	copying.fe.Send(&pgproto3.CopyData{Data: []byte("1001\n")})
	copying.fe.Send(&pgproto3.CopyDone{})
	copying.fe.Flush()
	if e, err := copying.untilReady(); err != nil || e != nil {
		t.Errorf("COPY FROM STDIN waiting for data closed as idle: %v %v", err, e)
	}
	// After its Sync the extended connection is idle too.
	if _, err := extended.closedWithin(5 * time.Second); err != nil {
		t.Errorf("idle after Sync: %v", err)
	}
	waitCounts(t, srv, 0, 2)
}

// TestAuthTimeout: a connection that does not finish its startup within
// AuthTimeout is closed (one that sends nothing, one that sends part of
// its startup message, one that does not answer SCRAM), and no session is
// made for a client that failed to log in.
func TestAuthTimeout(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users.json")
	if err := AddUser(users, "alice", "password1"); err != nil {
		t.Fatal(err)
	}
	srv, opens := startLimited(t, Options{AuthTimeout: 300 * time.Millisecond, UsersFile: users})
	silent, partial, noSCRAM := dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr())
	partial.nc.Write([]byte{0, 0, 0, 40, 0, 3})
	noSCRAM.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "alice"}})
	noSCRAM.fe.Flush()
	for name, c := range map[string]*rawClient{"silent": silent, "partial startup": partial, "no SCRAM answer": noSCRAM} {
		if _, err := c.closedWithin(5 * time.Second); err != nil {
			t.Errorf("%s connection not closed after the authentication timeout: %v", name, err)
		}
	}
	waitCounts(t, srv, 0, 0)
	host, port, _ := net.SplitHostPort(srv.Addr())
	dsn := fmt.Sprintf("host=%s port=%s user=alice sslmode=disable password=", host, port)
	if c, err := pgconn.Connect(context.Background(), dsn+"wrong-one"); err == nil {
		c.Close(context.Background())
		t.Fatal("logged in with a wrong password")
	}
	if n := opens.Load(); n != 0 {
		t.Errorf("%d sessions made for connections that did not log in", n)
	}
	c, err := pgconn.Connect(context.Background(), dsn+"password1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	time.Sleep(500 * time.Millisecond) // past the authentication timeout: logged in, not bound by it
	if _, err := c.Exec(context.Background(), "select count(*) from t").ReadAll(); err != nil {
		t.Errorf("a session past the authentication timeout: %v", err)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("%d sessions made for one login", n)
	}
}

// flakyListener fails its first Accepts as a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestAcceptOutOfFiles: Accept failing with EMFILE does not end Serve.
func TestAcceptOutOfFiles(t *testing.T) {
	srv, _ := startLimited(t, Options{})
	srv.Close()
	srv2, err := Listen(Options{Listen: "127.0.0.1:0", Open: srv.opts.Open})
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: srv2.ln}
	fl.fails.Store(3)
	srv2.ln = fl
	served := make(chan error, 1)
	go func() { served <- srv2.Serve() }()
	defer srv2.Close()
	c := dialRaw(t, srv2.Addr())
	if e, err := c.login(); err != nil || e != nil {
		t.Fatalf("login after EMFILE: %v %v", err, e)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve ended: %v", err)
	default:
	}
}
