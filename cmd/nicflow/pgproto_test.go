package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	gosql "database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/cluster/flightsqlsrv"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
)

// stmtWatcher is an engine.Observer that counts the statements running.
type stmtWatcher struct {
	mu      sync.Mutex
	running map[*engine.Statement]bool
}

func (w *stmtWatcher) StatementStarted(st *engine.Statement) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running[st] = true
}

func (w *stmtWatcher) StatementEnded(st *engine.Statement, _ error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running, st)
}

// only returns the one statement running (nil if none or several).
func (w *stmtWatcher) only() *engine.Statement {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.running) != 1 {
		return nil
	}
	for st := range w.running {
		return st
	}
	return nil
}

// waitIdle waits until no statement runs.
func (w *stmtWatcher) waitIdle(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n := len(w.running)
		w.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%s: the statement still runs", what)
}

// protoClient speaks the protocol's messages to a server directly
// (pgproto3's Frontend, as pgx does underneath), to send what pgx's API
// does not: Execute with a row limit.
type protoClient struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialProto(t *testing.T, addr string) *protoClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	p := &protoClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
	p.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "nicflow"}})
	p.flush()
	for {
		if _, ok := p.recv().(*pgproto3.ReadyForQuery); ok {
			return p
		}
	}
}

func (p *protoClient) send(msgs ...pgproto3.FrontendMessage) {
	for _, m := range msgs {
		p.fe.Send(m)
	}
	p.flush()
}

func (p *protoClient) flush() {
	p.t.Helper()
	if err := p.fe.Flush(); err != nil {
		p.t.Fatal(err)
	}
}

func (p *protoClient) recv() pgproto3.BackendMessage {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	m, err := p.fe.Receive()
	if err != nil {
		p.t.Fatalf("receiving: %v", err)
	}
	return m
}

// expect reads n messages and returns them in a compact form: each
// message's type, a DataRow as its values, a CommandComplete as its tag.
func (p *protoClient) expect(n int) string {
	p.t.Helper()
	var out []string
	for range n {
		switch m := p.recv().(type) {
		case *pgproto3.DataRow:
			var vals []string
			for _, v := range m.Values {
				vals = append(vals, string(v))
			}
			out = append(out, "row("+strings.Join(vals, ",")+")")
		case *pgproto3.CommandComplete:
			out = append(out, "complete("+string(m.CommandTag)+")")
		case *pgproto3.ErrorResponse:
			out = append(out, "error("+m.Message+")")
		case *pgproto3.ReadyForQuery:
			out = append(out, "ready")
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		}
	}
	return strings.Join(out, " ")
}

// TestServePortalSuspension: Execute with a row limit sends that many
// rows and PortalSuspended, and the next Execute of the portal resumes
// where it stopped, for several portals in turns; Close of a portal and
// Sync (the unnamed portal, as PostgreSQL ends the implicit transaction)
// stop its statement. An endless result is streamed, never buffered.
func TestServePortalSuspension(t *testing.T) {
	dir := newDB(t)
	w := &stmtWatcher{running: map[*engine.Statement]bool{}}
	srv, err := pgwire.Listen(pgwire.Options{Listen: "127.0.0.1:0", Open: func() (engine.Conn, error) {
		return engine.OpenConn(dir, engine.Options{Parallelism: 2, Observer: w})
	}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	p := dialProto(t, srv.Addr())
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}

	// Twelve rows in parts of five: the last part ends with the tag,
	// which counts that Execute's rows as PostgreSQL's does.
	p.send(&pgproto3.Parse{Name: "s12", Query: "select * from generate_series(1, 12) order by 1"},
		&pgproto3.Bind{PreparedStatement: "s12", DestinationPortal: "p"},
		&pgproto3.Execute{Portal: "p", MaxRows: 5}, &pgproto3.Flush{})
	check("first part", p.expect(8), "ParseComplete BindComplete row(1) row(2) row(3) row(4) row(5) PortalSuspended")
	p.send(&pgproto3.Execute{Portal: "p", MaxRows: 5}, &pgproto3.Flush{})
	check("second part", p.expect(6), "row(6) row(7) row(8) row(9) row(10) PortalSuspended")
	p.send(&pgproto3.Execute{Portal: "p", MaxRows: 5}, &pgproto3.Sync{})
	check("last part", p.expect(4), "row(11) row(12) complete(SELECT 2) ready")

	// A limit that meets the end exactly suspends (no look-ahead); the
	// next Execute completes with no rows.
	p.send(&pgproto3.Bind{PreparedStatement: "s12", DestinationPortal: "q"}, &pgproto3.Execute{Portal: "q", MaxRows: 12}, &pgproto3.Flush{})
	if got := p.expect(14); !strings.HasSuffix(got, "row(12) PortalSuspended") {
		t.Errorf("exact limit: %s", got)
	}
	p.send(&pgproto3.Execute{Portal: "q", MaxRows: 12}, &pgproto3.Sync{})
	check("after an exact limit", p.expect(2), "complete(SELECT 0) ready")

	// Two portals read in turns, one without a limit (all the rest), in
	// binary format; a statement runs between their parts.
	p.send(&pgproto3.Parse{Name: "s3", Query: "select * from generate_series(1, 3) order by 1"},
		&pgproto3.Bind{PreparedStatement: "s12", DestinationPortal: "a"},
		&pgproto3.Bind{PreparedStatement: "s3", DestinationPortal: "b"},
		&pgproto3.Execute{Portal: "a", MaxRows: 2},
		&pgproto3.Execute{Portal: "b", MaxRows: 1},
		&pgproto3.Execute{Portal: "a", MaxRows: 1},
		&pgproto3.Flush{})
	check("in turns", p.expect(10), "ParseComplete BindComplete BindComplete row(1) row(2) PortalSuspended row(1) PortalSuspended row(3) PortalSuspended")
	p.send(&pgproto3.Parse{Query: "select 'between'"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		&pgproto3.Execute{Portal: "b"}, &pgproto3.Execute{Portal: "a", MaxRows: 10}, &pgproto3.Flush{})
	check("resumed", p.expect(17), "ParseComplete BindComplete row(between) complete(SELECT 1) row(2) row(3) complete(SELECT 2) row(4) row(5) row(6) row(7) row(8) row(9) row(10) row(11) row(12) complete(SELECT 9)")
	p.send(&pgproto3.Sync{})
	check("sync", p.expect(1), "ready")

	// An endless result: the first rows come at once, the engine has made
	// only a few batches more, and Close stops the statement.
	start := time.Now()
	p.send(&pgproto3.Parse{Name: "big", Query: "select * from generate_series(1, 1000000000000)"},
		&pgproto3.Bind{PreparedStatement: "big", DestinationPortal: "big"},
		&pgproto3.Execute{Portal: "big", MaxRows: 3}, &pgproto3.Flush{})
	check("endless", p.expect(6), "ParseComplete BindComplete row(1) row(2) row(3) PortalSuspended")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the first rows of an endless result took %v", d)
	}
	st := w.only()
	if st == nil {
		t.Fatal("the suspended portal's statement is not running")
	}
	time.Sleep(200 * time.Millisecond) // time enough to run far ahead if it did not wait
	if n := st.Rows(); n > 10_000_000 {
		t.Errorf("the suspended statement made %d rows: the result is not streamed", n)
	}
	p.send(&pgproto3.Execute{Portal: "big", MaxRows: 2}, &pgproto3.Flush{})
	check("endless resumed", p.expect(3), "row(4) row(5) PortalSuspended")
	p.send(&pgproto3.Close{ObjectType: 'P', Name: "big"}, &pgproto3.Flush{})
	check("close", p.expect(1), "CloseComplete")
	w.waitIdle(t, "after Close")
	p.send(&pgproto3.Execute{Portal: "big", MaxRows: 1}, &pgproto3.Sync{})
	check("a closed portal", p.expect(2), `error(portal "big" does not exist) ready`)

	// Sync closes the unnamed portal and stops its statement.
	p.send(&pgproto3.Bind{PreparedStatement: "big"}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})
	check("unnamed", p.expect(4), "BindComplete row(1) PortalSuspended ready")
	w.waitIdle(t, "after Sync")
	p.send(&pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})
	check("the unnamed portal after Sync", p.expect(2), `error(portal "" does not exist) ready`)

	// The connection ending stops a suspended statement too.
	p.send(&pgproto3.Bind{PreparedStatement: "big", DestinationPortal: "left"}, &pgproto3.Execute{Portal: "left", MaxRows: 1}, &pgproto3.Flush{})
	check("left open", p.expect(3), "BindComplete row(1) PortalSuspended")
	p.nc.Close()
	w.waitIdle(t, "after the client left")

	// pgx, whose Execute has no limit, still gets every row.
	c := pgConnect(t, srv.Addr(), pgx.QueryExecModeCacheStatement)
	var n int64
	if err := c.QueryRow(context.Background(), "select count(*) from generate_series(1, $1)", 100000).Scan(&n); err != nil || n != 100000 {
		t.Errorf("pgx: %d %v", n, err)
	}
}

// TestServeParamTypes: Describe reports the types PostgreSQL would infer
// for parameters Parse left untyped, pgx then sends values of those types
// (binary where it can), and they bind, in pgx's describing modes.
func TestServeParamTypes(t *testing.T) {
	addr := startPGServer(t, newDB(t))
	ctx := context.Background()
	setup := pgConnect(t, addr, pgx.QueryExecModeSimpleProtocol)
	if _, err := setup.Exec(ctx, "create table pt (id int, big bigint, d decimal(12,2), x double precision, v text, day date, ts timestamp, tz timestamptz, iv interval, tm time, b boolean)"); err != nil {
		t.Fatal(err)
	}
	// The OIDs of ParameterDescription.
	pc := setup.PgConn()
	for i, c := range []struct {
		sql  string
		oids []uint32
		want string
	}{
		{sql: "select v from pt where id = $1", want: "[23]"},
		{sql: "select v from pt where big = $1 or $2 < x", want: "[20 701]"},
		{sql: "select v from pt limit $1 offset $2", want: "[20 20]"},
		{sql: "select d + $1 from pt", want: "[1700]"},
		{sql: "select $1::date, cast($2 as timestamptz)", want: "[1082 1184]"},
		{sql: "select v from pt where v like $1", want: "[25]"},
		{sql: "select $1", want: "[25]"},
		{sql: "insert into pt (id, big, d, x, v, day, ts, tz, iv, tm, b) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)", want: "[23 20 1700 701 25 1082 1114 1184 1186 1083 16]"},
		{sql: "select v from pt where id = $1", oids: []uint32{20}, want: "[20]"},
	} {
		sd, err := pc.Prepare(ctx, fmt.Sprintf("d%d", i), c.sql, c.oids)
		if err != nil || fmt.Sprint(sd.ParamOIDs) != c.want {
			t.Errorf("%s: parameter OIDs %v (want %s) %v", c.sql, sd.ParamOIDs, c.want, err)
		}
	}

	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	ts := time.Date(2024, 2, 29, 10, 11, 12, 500000000, time.UTC)
	tz := time.Date(2024, 2, 29, 10, 11, 12, 0, time.FixedZone("", 2*3600))
	dec := func(unscaled int64, exp int32) pgtype.Numeric {
		return pgtype.Numeric{Int: big.NewInt(unscaled), Exp: exp, Valid: true}
	}
	for k, mode := range []pgx.QueryExecMode{pgx.QueryExecModeDescribeExec, pgx.QueryExecModeCacheDescribe} {
		c := pgConnect(t, addr, mode)
		id := int64(10 * (k + 1))
		tag, err := c.Exec(ctx, "insert into pt (id, big, d, x, v, day, ts, tz, iv, tm, b) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
			id, int64(1)<<40, dec(-123456, -2), 0.25, "it's", day, ts, tz, 26*time.Hour+3*time.Second, pgtype.Time{Microseconds: 3600_000001, Valid: true}, true)
		if err != nil || tag.String() != "INSERT 0 1" {
			t.Fatalf("mode %v: insert with typed parameters: %v %v", mode, tag, err)
		}
		var (
			gd  pgtype.Numeric
			gv  string
			gts time.Time
			gtz time.Time
			giv pgtype.Interval
			gtm pgtype.Time
			gx  float64
		)
		err = c.QueryRow(ctx, "select d, v, ts, tz, iv, tm, x from pt where id = $1 and big >= $2 and d < $3 and x < $4 and v like $5 and day = $6 and ts >= $7 and tz = $8 and b = $9 limit $10",
			id, int64(1)<<40, dec(0, 0), 1.5, "it%", day, ts, tz, true, int64(5)).Scan(&gd, &gv, &gts, &gtz, &giv, &gtm, &gx)
		got := fmt.Sprintf("%s|%s|%s|%s|%d,%d,%d|%d|%g", pgText(gd), gv, gts.UTC().Format("2006-01-02 15:04:05.000"), gtz.UTC().Format("15:04:05"), giv.Months, giv.Days, giv.Microseconds, gtm.Microseconds, gx)
		if want := "-1234.56|it's|2024-02-29 10:11:12.500|08:11:12|0,0,93603000000|3600000001|0.25"; err != nil || got != want {
			t.Errorf("mode %v: select with typed parameters:\n got %s %v\nwant %s", mode, got, err, want)
		}
		// Each context on its own, with the value's result.
		for _, q := range []struct {
			sql  string
			args []any
			want string
		}{
			{"select d + $1 from pt where id = $2", []any{dec(75, -2), id}, "-1233.81"},
			{"select d * $1 from pt where id = $2", []any{2.0, id}, "-2469.1200"},
			{"select d + $1 from pt where id = $2", []any{dec(1, -4), id}, "-1234.5599"},
			{"select x + $1 from pt where id = $2", []any{0.5, id}, "0.75"},
			{"select $1::date + 1", []any{day}, "2024-03-01"},
			{"select count(*) from pt where v like $1 and id = $2", []any{"it%", id}, "1"},
			{"select count(*) from pt where id = $1", []any{"10"}, "1"},
			{"select big from pt where id = $1 limit $2", []any{id, 1}, "1099511627776"},
			{"select $1 || 'x'", []any{"a"}, "ax"},
			{"select extract(year from $1::timestamp)", []any{ts}, "2024"},
		} {
			var v any
			if err := c.QueryRow(ctx, q.sql, q.args...).Scan(&v); err != nil || pgText(v) != q.want {
				t.Errorf("mode %v: %s: %v (%T) %v, want %s", mode, q.sql, pgText(v), v, err, q.want)
			}
		}
		// A value that does not fit its parameter's type fails cleanly.
		_, err = c.Exec(ctx, "select * from pt where id = $1", "ten")
		var pe *pgconn.PgError
		if err == nil {
			t.Errorf("mode %v: a text parameter for an integer was accepted", mode)
		} else if errors.As(err, &pe) && pe.Code == "XX000" {
			t.Errorf("mode %v: a bad parameter is an internal error: %v", mode, err)
		}
	}
}

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a certificate for cn (a server's for 127.0.0.1, else a
// client's) and writes it and its key to dir/file.pem and dir/file.key.
func (ca *testCA) issue(t *testing.T, dir, file, cn string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := os.WriteFile(filepath.Join(dir, file+".pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file+".key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeClientCerts: with --tls-client-ca, pgx and arrow-go's Flight
// SQL client log in with a certificate whose CommonName is the user, and
// no password; a certificate for another user, for a user who does not
// exist, or from another CA is refused; a password still works unless a
// certificate is required.
func TestServeClientCerts(t *testing.T) {
	dir := newDB(t)
	certs := t.TempDir()
	ca, other := newTestCA(t, "nicflow test CA"), newTestCA(t, "another CA")
	caFile := filepath.Join(certs, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	serverCert := ca.issue(t, certs, "server", "127.0.0.1", true)
	alice := ca.issue(t, certs, "alice", "alice", false)
	bob := ca.issue(t, certs, "bob", "bob", false)
	carol := ca.issue(t, certs, "carol", "carol", false)
	forged := other.issue(t, certs, "forged", "alice", false)
	users := pgwire.UsersFile(dir)
	for _, u := range []string{"alice", "bob"} {
		if err := pgwire.AddUser(users, u, "correct horse"); err != nil {
			t.Fatal(err)
		}
	}
	open := func() (engine.Conn, error) { return engine.OpenConn(dir, engine.Options{Parallelism: 2}) }
	start := func(required bool) (*pgwire.Server, *flightsqlsrv.Server) {
		po := pgwire.Options{Listen: "127.0.0.1:0", Open: open, UsersFile: users, TLS: &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}}
		if err := clientCertOptions(&po, caFile, required); err != nil {
			t.Fatal(err)
		}
		pg, err := pgwire.Listen(po)
		if err != nil {
			t.Fatal(err)
		}
		go pg.Serve()
		t.Cleanup(func() { pg.Close() })
		fs := startFlightSQL(t, dir, func(o *flightsqlsrv.Options) { o.UsersFile, o.TLS = users, po.TLS })
		return pg, fs
	}
	ctx := context.Background()
	pgLogin := func(addr, user, password, certFile string) error {
		url := fmt.Sprintf("postgres://%s:%s@%s/nicflow?sslmode=verify-full&sslrootcert=%s", user, password, addr, caFile)
		if password == "" {
			url = fmt.Sprintf("postgres://%s@%s/nicflow?sslmode=verify-full&sslrootcert=%s", user, addr, caFile)
		}
		if certFile != "" {
			url += fmt.Sprintf("&sslcert=%s.pem&sslkey=%s.key", filepath.Join(certs, certFile), filepath.Join(certs, certFile))
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(cctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var who string
		if err := c.QueryRow(cctx, "select 'in as ' || $1", user).Scan(&who); err != nil {
			return err
		}
		return nil
	}
	pg, fs := start(false)
	// PostgreSQL: the certificate is the login; no password is asked.
	if err := pgLogin(pg.Addr(), "alice", "", "alice"); err != nil {
		t.Errorf("alice with her certificate: %v", err)
	}
	for _, c := range []struct{ user, cert, why string }{
		{"alice", "bob", `the client certificate is for "bob"`},
		{"carol", "carol", "no such user"},
	} {
		err := pgLogin(pg.Addr(), c.user, "correct%20horse", c.cert)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28000" || !strings.Contains(pe.Message, c.why) {
			t.Errorf("%s with %s's certificate: %v", c.user, c.cert, err)
		}
	}
	// A certificate from another CA: the client does not offer it (the
	// server names its CA), so it logs in with nothing; forced on the
	// server, the handshake fails, password or not.
	if err := pgLogin(pg.Addr(), "alice", "", "forged"); err == nil {
		t.Error("a certificate from another CA logged in")
	}
	fcfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://alice:correct%%20horse@%s/nicflow?sslmode=verify-full&sslrootcert=%s", pg.Addr(), caFile))
	if err != nil {
		t.Fatal(err)
	}
	fcfg.TLSConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &forged, nil }
	if c, err := pgx.ConnectConfig(ctx, fcfg); err == nil {
		c.Close(ctx)
		t.Error("a certificate from another CA was accepted")
	}
	if err := pgLogin(pg.Addr(), "alice", "correct%20horse", ""); err != nil {
		t.Errorf("alice with her password and no certificate: %v", err)
	}
	if err := pgLogin(pg.Addr(), "alice", "wrong", ""); err == nil {
		t.Error("a wrong password was accepted")
	}

	// Flight SQL: mutual TLS names the user, with no credentials.
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	fclient := func(addr string, cert *tls.Certificate) *flightsql.Client {
		cfg := &tls.Config{RootCAs: pool}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		return flightClient(t, addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}
	run := func(c *flightsql.Client, cctx context.Context) error {
		cctx, cancel := context.WithTimeout(cctx, 10*time.Second)
		defer cancel()
		info, err := c.Execute(cctx, "select 40 + 2")
		if err != nil {
			return err
		}
		_, rows, err := flightFetch(cctx, c, info)
		if err == nil && fmt.Sprint(rows) != "[[42]]" {
			err = fmt.Errorf("rows %v", rows)
		}
		return err
	}
	if err := run(fclient(fs.Addr(), &alice), ctx); err != nil {
		t.Errorf("Flight SQL with alice's certificate: %v", err)
	}
	if err := run(fclient(fs.Addr(), &carol), ctx); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Flight SQL with the certificate of a user who does not exist: %v", err)
	}
	if err := run(fclient(fs.Addr(), &forged), ctx); err == nil {
		t.Error("Flight SQL: a certificate from another CA was accepted")
	}
	bc := fclient(fs.Addr(), &bob)
	if _, err := bc.Client.AuthenticateBasicToken(ctx, "alice", "correct horse"); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), `certificate is for user "bob"`) {
		t.Errorf("Flight SQL: bob's certificate with alice's password: %v", err)
	}
	nc := fclient(fs.Addr(), nil)
	if err := run(nc, ctx); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Flight SQL without a certificate or a password: %v", err)
	}
	actx, err := nc.Client.AuthenticateBasicToken(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatalf("Flight SQL: alice with her password: %v", err)
	}
	if err := run(nc, actx); err != nil {
		t.Errorf("Flight SQL: alice with her password: %v", err)
	}

	// Required: no certificate, no connection, whatever the password.
	pg, fs = start(true)
	if err := pgLogin(pg.Addr(), "alice", "", "alice"); err != nil {
		t.Errorf("required: alice with her certificate: %v", err)
	}
	if err := pgLogin(pg.Addr(), "alice", "correct%20horse", ""); err == nil {
		t.Error("required: a password without a certificate was accepted")
	}
	if _, err := pgx.Connect(ctx, "postgres://alice:correct%20horse@"+pg.Addr()+"/nicflow?sslmode=disable"); err == nil {
		t.Error("required: a plain connection was accepted")
	}
	if err := run(fclient(fs.Addr(), &alice), ctx); err != nil {
		t.Errorf("required: Flight SQL with alice's certificate: %v", err)
	}
	nc = fclient(fs.Addr(), nil)
	if _, err := nc.Client.AuthenticateBasicToken(ctx, "alice", "correct horse"); err == nil {
		t.Error("required: Flight SQL without a certificate was accepted")
	}

	// The options' own checks.
	po := pgwire.Options{Listen: "127.0.0.1:0", Open: open}
	if err := clientCertOptions(&po, caFile, false); err == nil {
		t.Error("--tls-client-ca without --tls-cert was accepted")
	}
	po.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}}
	if err := clientCertOptions(&po, caFile, false); err == nil {
		t.Error("--tls-client-ca without --auth was accepted")
	}
	po.UsersFile = users
	if err := clientCertOptions(&po, filepath.Join(certs, "alice.key"), false); err == nil {
		t.Error("a CA file without a certificate was accepted")
	}
	if err := clientCertOptions(&po, "", true); err == nil {
		t.Error("--tls-client-cert-required without --tls-client-ca was accepted")
	}
}

// TestFlightSQLParamSchema: a prepared statement reports its parameters'
// types, inferred from their context (integers as int64); a client binds
// values built to that schema, and arrow-go's database/sql driver, which
// builds them to it, binds a Go integer where the column is an integer.
func TestFlightSQLParamSchema(t *testing.T) {
	dir := newDB(t)
	srv := startFlightSQL(t, dir, nil)
	c := flightClient(t, srv.Addr())
	ctx := context.Background()
	for _, q := range []string{
		"create table ps (id int, d decimal(12,2), day date, v text, ts timestamp)",
		"insert into ps values (1, 1.50, '2024-01-01', 'one', '2024-01-01 10:00'), (2, 2.50, '2024-02-01', 'two', '2024-02-01 10:00')",
	} {
		if _, err := c.ExecuteUpdate(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sel, err := c.Prepare(ctx, "select id, v from ps where id >= $1 and d > $2 and day >= $3 and v like $4 and ts < $5 limit $6")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close(ctx)
	ps := sel.ParameterSchema()
	var got []string
	for _, f := range ps.Fields() {
		got = append(got, f.Name+" "+f.Type.String())
	}
	if want := "[$1 int64 $2 decimal(12, 2) $3 date32 $4 utf8 $5 timestamp[us] $6 int64]"; fmt.Sprint(got) != want {
		t.Errorf("parameter schema:\n got %v\nwant %s", got, want)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, ps)
	rb.Field(0).(*array.Int64Builder).Append(1)
	rb.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(200))
	rb.Field(2).(*array.Date32Builder).Append(arrow.Date32FromTime(time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)))
	rb.Field(3).(*array.StringBuilder).Append("t%")
	rb.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()))
	rb.Field(5).(*array.Int64Builder).Append(10)
	params := rb.NewRecordBatch()
	rb.Release()
	sel.SetParameters(params)
	params.Release()
	info, err := sel.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, rows, err := flightFetch(ctx, c, info); err != nil || fmt.Sprint(rows) != "[[2 two]]" {
		t.Errorf("prepared query with parameters of the reported schema: %v %v", rows, err)
	}
	// A statement without parameters reports none.
	p0, err := c.Prepare(ctx, "select 1")
	if err != nil {
		t.Fatal(err)
	}
	if s := p0.ParameterSchema(); s != nil && s.NumFields() != 0 {
		t.Errorf("parameters of a statement without any: %v", s)
	}
	p0.Close(ctx)

	db, err := gosql.Open("flightsql", "flightsql://"+srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("select v from ps where id = $1 and v <> $2", 2, "x").Scan(&v); err != nil || v != "two" {
		t.Errorf("database/sql with an integer for an int column: %q %v", v, err)
	}
	if _, err := db.Query("select v from ps where id = $1", 1, 2); err == nil {
		t.Error("database/sql: two values for one parameter were accepted")
	}
}

// TestServeAnalyze: ANALYZE completes with the tag ANALYZE, as psql
// prints it, by the simple and the extended protocol; an unknown table is
// an error naming it.
func TestServeAnalyze(t *testing.T) {
	dir := newDB(t)
	srv, err := pgwire.Listen(pgwire.Options{Listen: "127.0.0.1:0", Open: func() (engine.Conn, error) {
		return engine.OpenConn(dir, engine.Options{Parallelism: 1})
	}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	p := dialProto(t, srv.Addr())
	p.send(&pgproto3.Query{String: "create table an (a int); analyze; analyze verbose an (a)"})
	if got, want := p.expect(4), "complete(CREATE TABLE) complete(ANALYZE) complete(ANALYZE) ready"; got != want {
		t.Errorf("simple:\n got %s\nwant %s", got, want)
	}
	p.send(&pgproto3.Parse{Query: "analyze an"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got, want := p.expect(5), "ParseComplete BindComplete NoData complete(ANALYZE) ready"; got != want {
		t.Errorf("extended:\n got %s\nwant %s", got, want)
	}
	p.send(&pgproto3.Query{String: "analyze nope"})
	if got := p.expect(2); !strings.Contains(got, `relation "nope" does not exist`) || !strings.HasSuffix(got, "ready") {
		t.Errorf("unknown table: %s", got)
	}
}
