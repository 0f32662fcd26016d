package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/nicflow/nicflow/cluster/console"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/tpch"
)

// startPGServer serves dir over the PostgreSQL protocol on a free port.
func startPGServer(t *testing.T, dir string) string {
	t.Helper()
	return startPGServerOn(t, dir, false)
}

// startPGServerOn is startPGServer, creating the database when create
// (serve --create).
func startPGServerOn(t *testing.T, dir string, create bool) string {
	t.Helper()
	opts, err := sessionOptions("", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	// NB: sessions made as runServe makes them, of the database opened once.
	db, err := openServed(dir, create, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := pgwire.Listen(pgwire.Options{Listen: "127.0.0.1:0", Open: servedSessions(db, console.NewRegistry(0), "pgwire")})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() {
		srv.Close()
		db.Close()
	})
	return srv.Addr()
}

func pgConnect(t *testing.T, addr string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	c, err := pgConnectAs(t, addr, "nicflow", "", mode)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeTPCHThroughPgx runs the 22 TPC-H queries at SF 0.01 through
// pgx against the PostgreSQL protocol server and checks every answer:
// once with pgx's default extended protocol (prepared statements, binary
// results for the types it knows) and once with the simple protocol (text).
func TestServeTPCHThroughPgx(t *testing.T) {
	addr := startPGServer(t, tpchDir(t, 0.01))
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		c := pgConnect(t, addr, mode)
		for q := 1; q <= tpch.NumQueries; q++ {
			r := runTPCHQuery(context.Background(), pgRunner(c), q, 0.01, 1, true)
			if r.err != nil || r.verdict != "ok" {
				t.Errorf("mode %v Q%d: %v %s", mode, q, r.err, r.verdict)
			}
		}
	}
}

// TestServeBehaviour: statements of every kind, every type's values in
// both formats, errors with SQLSTATE and position, a cancel, and psql.
func TestServeBehaviour(t *testing.T) {
	dir := newDB(t)
	addr := startPGServer(t, dir)
	ctx := context.Background()
	for k, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		c := pgConnect(t, addr, mode)
		name := fmt.Sprintf("t%d", k)
		if _, err := c.Exec(ctx, "create table "+name+" (id int primary key, v text, d decimal(12,2), x double precision, b boolean, day date, ts timestamp, tz timestamptz, tm time, iv interval, by bytea)"); err != nil {
			t.Fatal(err)
		}
		tag, err := c.Exec(ctx, "insert into "+name+` values (1, 'a''b', -1234.50, 0.25, true, '2024-02-29', '2024-02-29 10:11:12.5', '2024-02-29 10:11:12+02', '23:59:59.999999', '1 mon 2 days 03:04:05', '\x00ff'), (2, null, null, null, null, null, null, null, null, null, null)`)
		if err != nil || tag.String() != "INSERT 0 2" {
			t.Fatalf("mode %v insert: %q %v", mode, tag, err)
		}
		var (
			id         int32
			v          *string
			d          pgtype.Numeric
			x          *float64
			b          *bool
			day, ts    pgtype.Date
			tsv, tzv   pgtype.Timestamp
			tztz       pgtype.Timestamptz
			tm         pgtype.Time
			iv         pgtype.Interval
			by         []byte
			unusedDate = day
		)
		_ = unusedDate
		_ = ts
		_ = tzv
		err = c.QueryRow(ctx, "select id, v, d, x, b, day, ts, tz, tm, iv, by from "+name+" where id = 1").Scan(&id, &v, &d, &x, &b, &day, &tsv, &tztz, &tm, &iv, &by)
		if err != nil {
			t.Fatalf("mode %v select: %v", mode, err)
		}
		got := fmt.Sprintf("%d|%s|%s|%v|%v|%s|%s|%s|%d|%d,%d,%d|%x", id, *v, pgText(d), *x, *b, day.Time.Format("2006-01-02"),
			tsv.Time.Format("2006-01-02 15:04:05.000000"), tztz.Time.UTC().Format("2006-01-02 15:04:05"), tm.Microseconds, iv.Months, iv.Days, iv.Microseconds, by)
		want := "1|a'b|-1234.50|0.25|true|2024-02-29|2024-02-29 10:11:12.500000|2024-02-29 08:11:12|86399999999|1,2,11045000000|00ff"
		if got != want {
			t.Errorf("mode %v values:\n got %s\nwant %s", mode, got, want)
		}
		var nulls int
		if err := c.QueryRow(ctx, "select count(*) from "+name+" where v is null and d is null and iv is null and by is null").Scan(&nulls); err != nil || nulls != 1 {
			t.Errorf("mode %v nulls: %d %v", mode, nulls, err)
		}
		// Parameters: values of every kind, never SQL text of their own.
		if mode == pgx.QueryExecModeCacheStatement {
			evil := "x'); drop table " + name + "; --"
			if _, err := c.Exec(ctx, "insert into "+name+" (id, v, d, x, b, day, ts, by) values ($1, $2, $3, $4, $5, $6, $7, $8)",
				3, evil, "7.25", 1.5, false, time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2020, 2, 29, 1, 2, 3, 4000, time.UTC), []byte{1, 2}); err != nil {
				t.Fatalf("insert with parameters: %v", err)
			}
			var gv string
			var gd pgtype.Numeric
			var gb bool
			var gday pgtype.Date
			var gby []byte
			err := c.QueryRow(ctx, "select v, d, b, day, by from "+name+" where id = $1 and x > $2 and v like $3", 3, 1.25, "x%").Scan(&gv, &gd, &gb, &gday, &gby)
			if err != nil || gv != evil || pgText(gd) != "7.25" || gb || gday.Time.Format("2006-01-02") != "2020-02-29" || fmt.Sprintf("%x", gby) != "0102" {
				t.Errorf("select with parameters: %q %s %v %v %x %v", gv, pgText(gd), gb, gday.Time, gby, err)
			}
			var cnt int64
			if err := c.QueryRow(ctx, "select count(*) from "+name+" where v = $1 or $1 is null", nil).Scan(&cnt); err != nil || cnt != 3 {
				t.Errorf("a NULL parameter: %d %v", cnt, err)
			}
			if _, err := c.Exec(ctx, "delete from "+name+" where id = $1", 3); err != nil {
				t.Errorf("delete with a parameter: %v", err)
			}
		}
		// Errors keep their kind as a SQLSTATE, with the position.
		_, err = c.Exec(ctx, "insert into "+name+" (id) values (1)")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" {
			t.Errorf("mode %v duplicate key: %v", mode, err)
		}
		_, err = c.Exec(ctx, "select nosuch from "+name)
		if !errors.As(err, &pe) || pe.Code != "42703" || pe.Position != 8 {
			t.Errorf("mode %v unknown column: %v (position %d)", mode, err, pe.Position)
		}
		// The connection goes on after an error.
		var one int32
		if err := c.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
			t.Errorf("mode %v after an error: %v", mode, err)
		}
		// A canceled statement stops and says so (SQLSTATE 57014).
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		start := time.Now()
		_, err = c.Exec(cctx, "select count(*) from generate_series(1, 2000000000) a")
		cancel()
		if err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("mode %v: a canceled statement: %v after %v", mode, err, time.Since(start))
		}
	}

	// psql, as users run it.
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not installed")
	}
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command("psql", "-h", host, "-p", port, "-U", "nicflow", "-A", "-t", "-c", "select id, v from t0 order by id; select 1 + 1").CombinedOutput()
	if err != nil || string(out) != "1|a'b\n2|\n2\n" {
		t.Errorf("psql: %q %v", out, err)
	}
	// psql's \dt and \d (list) send their catalog queries.
	for _, cmd := range []string{`\dt`, `\d`} {
		out, err := exec.Command("psql", "-h", host, "-p", port, "-U", "nicflow", "-A", "-t", "-c", cmd).CombinedOutput()
		if err != nil || string(out) != "public|t0|table|nicflow\npublic|t1|table|nicflow\n" {
			t.Errorf("psql %s: %q %v", cmd, out, err)
		}
	}
	out, _ = exec.Command("psql", "-h", host, "-p", port, "-U", "nicflow", "-c", "select 1 from\nnosuch").CombinedOutput()
	if !strings.Contains(string(out), `relation "nosuch" does not exist`) || !strings.Contains(string(out), "LINE 2: nosuch") {
		t.Errorf("psql error: %s", out)
	}
}

// TestServeAuth: with users, a connection logs in with SCRAM-SHA-256; a
// wrong password and an unknown user fail alike (28P01); without users
// the server refuses to listen beyond loopback.
func TestServeAuth(t *testing.T) {
	dir := newDB(t)
	users := pgwire.UsersFile(dir)
	if err := pgwire.AddUser(users, "alice", "short"); err == nil {
		t.Error("a 5-character password was accepted")
	}
	if err := pgwire.AddUser(users, "alice", "correct horse"); err != nil {
		t.Fatal(err)
	}
	open := func() (engine.Conn, error) { return engine.OpenConn(dir, engine.Options{Parallelism: 2}) }
	if _, err := pgwire.Listen(pgwire.Options{Listen: "0.0.0.0:0", Open: open}); err == nil {
		t.Error("listening on 0.0.0.0 without authentication was allowed")
	}
	srv, err := pgwire.Listen(pgwire.Options{Listen: "0.0.0.0:0", Open: open, UsersFile: users})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	_, port, _ := strings.Cut(srv.Addr(), "]:")
	if port == "" {
		_, port, _ = strings.Cut(srv.Addr(), ":")
	}
	ctx := context.Background()
	connect := func(user, pw string) (*pgx.Conn, error) {
		return pgx.Connect(ctx, fmt.Sprintf("postgres://%s:%s@127.0.0.1:%s/nicflow?sslmode=disable", user, pw, port))
	}
	c, err := connect("alice", "correct%20horse")
	if err != nil {
		t.Fatalf("alice with her password: %v", err)
	}
	var n int32
	if err := c.QueryRow(ctx, "select 6 * 7").Scan(&n); err != nil || n != 42 {
		t.Errorf("query after login: %d %v", n, err)
	}
	c.Close(ctx)
	for _, who := range [][2]string{{"alice", "wrong"}, {"mallory", "correct%20horse"}} {
		_, err := connect(who[0], who[1])
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Errorf("%s with a wrong password: %v", who[0], err)
		}
	}
	if err := pgwire.RemoveUser(users, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := connect("alice", "correct%20horse"); err == nil {
		t.Error("a removed user logged in")
	}
}

// TestServeFileRoot: with --auth --file-root R, a client's glob or path
// reaches no file outside R through a symbolic link in R, and SET
// spill_dir is refused alike for any path (issue 28, items 7 and 8);
// --auth alone gives no file access.
func TestServeFileRoot(t *testing.T) {
	dir, root, outside := newDB(t), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "passwd"), []byte("root:x:0:0:secret:/root:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "hostname"), []byte("secret\n"), 0o644)
	os.WriteFile(filepath.Join(root, "ok.csv"), []byte("a\ninside\n"), 0o644)
	os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(root, "passwd_link"))
	os.Symlink(outside, filepath.Join(root, "etc_link"))
	saved := serveFlags
	t.Cleanup(func() { serveFlags = saved })
	serveFlags.auth, serveFlags.parallel = true, 2
	opts, err := serveOptions()
	if err != nil || opts.FileAccess != engine.FileAccessNone {
		t.Fatalf("--auth: file access %q, %v", opts.FileAccess, err)
	}
	serveFlags.fileRoot = filepath.Join(root, "missing")
	if _, err := serveOptions(); err == nil {
		t.Error("--file-root of a missing directory was accepted")
	}
	serveFlags.fileRoot = root
	if opts, err = serveOptions(); err != nil || opts.FileAccess != root {
		t.Fatalf("--file-root: %q, %v", opts.FileAccess, err)
	}
	srv, err := pgwire.Listen(pgwire.Options{Listen: "127.0.0.1:0", Open: func() (engine.Conn, error) { return engine.OpenConn(dir, opts) }})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	c := pgConnect(t, srv.Addr(), pgx.QueryExecModeSimpleProtocol)
	ctx := context.Background()
	denied := func(q string) string {
		t.Helper()
		rows, err := c.Query(ctx, q)
		if err == nil {
			for rows.Next() {
				t.Errorf("%s returned %v", q, rows.RawValues())
			}
			rows.Close()
			err = rows.Err()
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" || !strings.HasPrefix(pe.Message, "permission denied") {
			t.Errorf("%s: %v", q, err)
			return ""
		}
		return pe.Message
	}
	for _, q := range []string{
		"select * from read_csv('" + root + "/passwd_lin[k]', header=false, delim=':')",
		"select * from read_csv('" + root + "/passwd_lin?', header=false, delim=':')",
		"select * from read_csv('" + root + "/etc_link/hostname', header=false)",
		"select * from read_csv('/etc/passwd', header=false, delim=':')",
	} {
		denied(q)
	}
	var n int64
	if err := c.QueryRow(ctx, "select count(*) from read_csv('"+root+"/*/hostname', header=false)").Scan(&n); err == nil {
		t.Errorf("a glob through a link read %d rows outside the root", n)
	}
	var v string
	if err := c.QueryRow(ctx, "select a from read_csv('"+root+"/o?.csv')").Scan(&v); err != nil || v != "inside" {
		t.Errorf("a file inside the root: %q, %v", v, err)
	}
	a, b := denied("set spill_dir = '"+outside+"'"), denied("set spill_dir = '"+filepath.Join(outside, "missing")+"'")
	if a != b {
		t.Errorf("SET spill_dir answers differ: %q, %q", a, b)
	}
}

// TestUserAddNeedsDatabase: user add refuses a directory without a
// database (a mistyped --dir) instead of writing users.json where no
// server reads it.
func TestUserAddNeedsDatabase(t *testing.T) {
	t.Setenv("NICFLOW_PASSWORD", "correct horse")
	empty := t.TempDir()
	_, err := runCLI(t, "user", "add", "--dir", empty, "alice")
	if err == nil || !strings.Contains(err.Error(), "is not a nicflow database") || !strings.Contains(err.Error(), "--create") {
		t.Errorf("user add on an empty directory: %v", err)
	}
	if _, err := os.Stat(pgwire.UsersFile(empty)); err == nil {
		t.Error("users.json written without a database")
	}
	dir := newDB(t)
	if out, err := runCLI(t, "user", "add", "--dir", dir, "alice"); err != nil || !strings.Contains(out, "user alice added") {
		t.Errorf("user add: %q, %v", out, err)
	}
}

// TestServeTLS: a client asking for SSL gets TLS; with RequireTLS a plain
// connection is refused.
func TestServeTLS(t *testing.T) {
	dir := newDB(t)
	cert := newTestCA(t, "test CA").issue(t, t.TempDir(), "server", "127.0.0.1", true)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	srv, err := pgwire.Listen(pgwire.Options{Listen: "127.0.0.1:0", TLS: cfg, RequireTLS: true,
		Open: func() (engine.Conn, error) { return engine.OpenConn(dir, engine.Options{Parallelism: 2}) }})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, "postgres://nicflow@"+srv.Addr()+"/nicflow?sslmode=require")
	if err != nil {
		t.Fatalf("sslmode=require: %v", err)
	}
	if !c.PgConn().Conn().(*tls.Conn).ConnectionState().HandshakeComplete {
		t.Error("the connection is not TLS")
	}
	var n int32
	if err := c.QueryRow(ctx, "select 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Errorf("query over TLS: %d %v", n, err)
	}
	c.Close(ctx)
	if _, err := pgx.Connect(ctx, "postgres://nicflow@"+srv.Addr()+"/nicflow?sslmode=disable"); err == nil {
		t.Error("a plain connection was accepted with RequireTLS")
	}
}

// TestServeCopy: COPY FROM STDIN and TO STDOUT over the protocol, in
// text and csv format, through pgx's copy calls and psql's \copy; a
// failed copy leaves the table as it was and the connection usable.
func TestServeCopy(t *testing.T) {
	dir := newDB(t)
	addr := startPGServer(t, dir)
	c := pgConnect(t, addr, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	if _, err := c.Exec(ctx, "create table cp (id int, s varchar, d date)"); err != nil {
		t.Fatal(err)
	}
	pc := c.PgConn()
	tag, err := pc.CopyFrom(ctx, strings.NewReader("1\thello\t2024-01-02\n2\ttab\\there\t\\N\n3\t\\\\N\t2024-03-04\n\\.\n"), "copy cp from stdin")
	if err != nil || tag.RowsAffected() != 3 {
		t.Fatalf("copy from stdin (text): %v %v", tag, err)
	}
	if tag, err = pc.CopyFrom(ctx, strings.NewReader("id,s,d\n4,\"a,b\",2024-05-06\n5,,\n"), "copy cp from stdin (format csv, header)"); err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("copy from stdin (csv): %v %v", tag, err)
	}
	// A bad row fails the copy, naming STDIN and the line; nothing is added.
	_, err = pc.CopyFrom(ctx, strings.NewReader("6\tx\t2024-01-01\n7\ty\n"), "copy cp from stdin")
	if err == nil || !strings.Contains(err.Error(), "STDIN:2: expected 3 fields, found 2") {
		t.Fatalf("bad row: %v", err)
	}
	var buf strings.Builder
	if tag, err = pc.CopyTo(ctx, &buf, "copy (select * from cp order by id) to stdout"); err != nil || tag.String() != "COPY 5" {
		t.Fatalf("copy to stdout: %v %v", tag, err)
	}
	want := "1\thello\t2024-01-02\n2\ttab\\there\t\\N\n3\t\\\\N\t2024-03-04\n4\ta,b\t2024-05-06\n5\t\\N\t\\N\n"
	if buf.String() != want {
		t.Errorf("copy to stdout (text):\n got %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	if _, err = pc.CopyTo(ctx, &buf, "copy cp to stdout with csv header"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "id,s,d\n") || !strings.Contains(buf.String(), "4,\"a,b\",2024-05-06\n") {
		t.Errorf("copy to stdout (csv): %q", buf.String())
	}
	buf.Reset()
	if _, err = pc.CopyTo(ctx, &buf, "copy (select * from cp where id > 100) to stdout"); err != nil || buf.Len() != 0 {
		t.Errorf("empty copy: %q %v", buf.String(), err)
	}
	if _, err = pc.CopyFrom(ctx, strings.NewReader(""), "copy cp from stdin binary"); err == nil || !strings.Contains(err.Error(), "binary is not supported") {
		t.Errorf("binary copy: %v", err)
	}
	var n int
	if err := c.QueryRow(ctx, "select count(*) from cp").Scan(&n); err != nil || n != 5 {
		t.Errorf("rows after the copies: %d %v", n, err)
	}

	// psql's \copy sends COPY ... FROM STDIN / TO STDOUT with the old
	// option syntax.
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not installed")
	}
	host, port, _ := strings.Cut(addr, ":")
	in := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(in, []byte("10,ten,2020-10-10\n11,\"el,even\",\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	got, err := exec.Command("psql", "-h", host, "-p", port, "-U", "nicflow", "-A", "-t",
		"-c", `\copy cp from '`+in+`' csv`,
		"-c", `\copy (select id, s from cp where id >= 10 order by id) to '`+out+`'`).CombinedOutput()
	if err != nil || string(got) != "COPY 2\nCOPY 2\n" {
		t.Fatalf("psql \\copy: %q %v", got, err)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != "10\tten\n11\tel,even\n" {
		t.Errorf("psql \\copy to: %q %v", b, err)
	}
}

// psqlRunner runs a TPC-H query text (a script for Q15) through psql
// itself, unaligned with a unit separator between fields: the rows of the
// script's query, as a psql user sees them.
func psqlRunner(addr string) textRunner {
	host, port, _ := strings.Cut(addr, ":")
	return func(ctx context.Context, text string, keep bool) (tpch.Result, int64, error) {
		cmd := exec.CommandContext(ctx, "psql", "-X", "-q", "-A", "-F", "\x1f", "-P", "footer=off", "-v", "ON_ERROR_STOP=1",
			"-h", host, "-p", port, "-U", "nicflow", "-f", "-")
		cmd.Stdin = strings.NewReader(text)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return tpch.Result{}, 0, fmt.Errorf("psql: %v: %s", err, out)
		}
		// NB: one trailing newline only: a row of one NULL is an empty line.
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		res := tpch.Result{Columns: strings.Split(lines[0], "\x1f")}
		for _, l := range lines[1:] {
			res.Rows = append(res.Rows, strings.Split(l, "\x1f"))
		}
		return res, -1, nil
	}
}

// TestServeTPCHThroughPsql runs the 22 TPC-H queries at SF 0.01 through
// psql against the PostgreSQL protocol server and checks every answer.
func TestServeTPCHThroughPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not installed (Debian: apt-get install postgresql-client)")
	}
	addr := startPGServer(t, tpchDir(t, 0.01))
	for q := 1; q <= tpch.NumQueries; q++ {
		r := runTPCHQuery(context.Background(), psqlRunner(addr), q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q%d: %v %s", q, r.err, r.verdict)
		}
	}
}

// TestServeTransactions: drivers' transaction blocks. pgx's Begin/Commit
// and Rollback run; ReadyForQuery reports the block ('T', 'E' after an
// error); a write inside a block is refused and fails it.
func TestServeTransactions(t *testing.T) {
	addr := startPGServer(t, newDB(t))
	ctx := context.Background()
	c := pgConnect(t, addr, pgx.QueryExecModeCacheStatement)
	if _, err := c.Exec(ctx, "create table tb (a int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "insert into tb values (1), (2)"); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.PgConn().TxStatus(); s != 'T' {
		t.Errorf("in a block: status %q", s)
	}
	var n int
	if err := tx.QueryRow(ctx, "select sum(a) from tb").Scan(&n); err != nil || n != 3 {
		t.Errorf("read in a block: %d %v", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if s := c.PgConn().TxStatus(); s != 'I' {
		t.Errorf("after COMMIT: status %q", s)
	}
	tx, err = c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, "insert into tb values (3)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "cannot run inside a transaction block") {
		t.Errorf("a write in a block: %v", err)
	}
	if s := c.PgConn().TxStatus(); s != 'E' {
		t.Errorf("after an error in a block: status %q", s)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "select count(*) from tb").Scan(&n); err != nil || n != 2 {
		t.Errorf("after ROLLBACK: %d rows, %v", n, err)
	}
}

// A port another process holds is an error that names the flag to move.
func TestListenHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = pgwire.Listen(pgwire.Options{Listen: ln.Addr().String(), Open: func() (engine.Conn, error) { return nil, nil }})
	if err == nil {
		t.Fatal("listening on a taken port succeeded")
	}
	if got := listenHint(err, "--pg-listen").Error(); !strings.Contains(got, "choose another with --pg-listen ADDR") {
		t.Errorf("pg: %s", got)
	}
	if got := listenHint(err, "--http-listen").Error(); !strings.Contains(got, "--http-listen ADDR, or --http-listen off") {
		t.Errorf("console: %s", got)
	}
}

// TestServeArrays: array results go out with their array type OIDs, in
// text (simple protocol) and in PostgreSQL's binary array format (pgx's
// extended protocol asks for binary), and pgx decodes them as arrays:
// NULL elements, empty arrays, text elements that need quotes, int2vector.
func TestServeArrays(t *testing.T) {
	addr := startPGServerOn(t, t.TempDir(), true)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		c := pgConnect(t, addr, mode)
		var ints []*int32
		var bigs []int64
		var texts []string
		var empty []int32
		var nums []pgtype.Numeric
		err := c.QueryRow(context.Background(), "select array[1, null, 3], array[cast(7 as bigint)], array['a', 'b c', ''], cast('{}' as int[]), array[1.50, 2]").Scan(&ints, &bigs, &texts, &empty, &nums)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if len(ints) != 3 || *ints[0] != 1 || ints[1] != nil || *ints[2] != 3 || fmt.Sprint(bigs) != "[7]" || fmt.Sprintf("%q", texts) != `["a" "b c" ""]` || len(empty) != 0 || len(nums) != 2 {
			t.Errorf("%v: got %v %v %q %v %v", mode, ints, bigs, texts, empty, nums)
		}
		if f, _ := nums[0].Float64Value(); f.Float64 != 1.5 {
			t.Errorf("%v: numeric[] element %v", mode, nums[0])
		}
		rows, err := c.Query(context.Background(), "select array[true, false], cast('1 3' as int2vector)")
		if err != nil {
			t.Fatal(err)
		}
		if fds := rows.FieldDescriptions(); len(fds) != 2 || fds[0].DataTypeOID != 1000 || fds[1].DataTypeOID != 22 {
			t.Errorf("%v: array OIDs %+v", mode, fds)
		}
		rows.Close()
		c.Close(context.Background())
	}
}
