package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/tpch"
)

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// pgConnectAs connects to addr as user with password.
func pgConnectAs(t *testing.T, addr, user, password string, mode pgx.QueryExecMode) (*pgx.Conn, error) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s:%s@%s:%s/nicflow?sslmode=disable", url.PathEscape(user), url.PathEscape(password), host, port))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, nil
}

// TestCoordinatorServesClients: a coordinator started with --pg-listen
// and --flightsql-listen serves its cluster to PostgreSQL and Flight SQL
// clients: logins only, the 22 TPC-H queries at SF 0.01 run on the
// workers through pgx (extended and simple protocol) and arrow-go's Flight
// SQL client (answers checked), and a connection's SET statements (time
// zone, client settings) stay with it.
func TestCoordinatorServesClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a cluster of processes")
	}
	dir := copyTPCH(t, tpchDir(t, 0.01))
	if err := pgwire.AddUser(pgwire.UsersFile(dir), "alice", "s3cret pass"); err != nil {
		t.Fatal(err)
	}
	addr, faddr := freeAddr(t), freeAddr(t)
	localSQLClusterWith(t, dir, 2, 1, 1, []string{"--pg-listen", addr, "--flightsql-listen", faddr})
	var c *pgx.Conn
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err = pgConnectAs(t, addr, "alice", "s3cret pass", pgx.QueryExecModeCacheStatement); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgConnectAs(t, addr, "alice", "wrong", pgx.QueryExecModeSimpleProtocol); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if _, err := pgConnectAs(t, addr, "nicflow", "", pgx.QueryExecModeSimpleProtocol); err == nil {
		t.Fatal("a connection without a password was accepted on a cluster")
	}
	simple, err := pgConnectAs(t, addr, "alice", "s3cret pass", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, conn := range []*pgx.Conn{c, simple} {
		for q := 1; q <= tpch.NumQueries; q++ {
			r := runTPCHQuery(ctx, pgRunner(conn), q, 0.01, 1, true)
			if r.err != nil || r.verdict != "ok" {
				t.Errorf("Q%d: %v %s", q, r.err, r.verdict)
			}
		}
	}

	one := func(conn *pgx.Conn, q string) string {
		t.Helper()
		var s string
		if err := conn.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	// Session settings: the zone applies to this connection only.
	if _, err := simple.Exec(ctx, "set time zone 'America/New_York'"); err != nil {
		t.Fatal(err)
	}
	if _, err := simple.Exec(ctx, "set extra_float_digits = 3"); err != nil {
		t.Fatal(err)
	}
	const ts = "select cast(timestamptz '2024-01-01 12:00:00+00' as text) from nation limit 1"
	if got := one(simple, ts); got != "2024-01-01 07:00:00-05" {
		t.Errorf("in New York: %q", got)
	}
	if got := one(simple, "show timezone"); got != "America/New_York" {
		t.Errorf("show timezone: %q", got)
	}
	if got := one(c, ts); got != "2024-01-01 12:00:00+00" {
		t.Errorf("another connection sees the zone: %q", got)
	}
	// Writes run on the coordinator; the next query reads them on the workers.
	tag, err := c.Exec(ctx, "create table pg_t (a int, b varchar)")
	if err != nil {
		t.Fatal(err)
	}
	if tag, err = c.Exec(ctx, "insert into pg_t values (1, 'x'), (2, 'y'), (3, null)"); err != nil || tag.String() != "INSERT 0 3" {
		t.Fatalf("insert: %v %q", err, tag)
	}
	if got := one(simple, "select cast(sum(a) as varchar) || '/' || cast(count(b) as varchar) from pg_t"); got != "6/2" {
		t.Errorf("sum/count: %q", got)
	}
	// Errors keep their kind: SQLSTATE and message.
	_, err = c.Exec(ctx, "select * from no_such_table")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42P01" {
		t.Errorf("missing table: %v", err)
	}
	_, err = simple.Exec(ctx, "set memory_limit = '1GiB'")
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "not supported on a cluster") {
		t.Errorf("set memory_limit: %v", err)
	}
	// A transaction block on the cluster: reads run, a write is refused.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := one(c, "select cast(count(*) as varchar) from pg_t"); got != "3" || c.PgConn().TxStatus() != 'T' {
		t.Errorf("read in a block: %q, status %q", got, c.PgConn().TxStatus())
	}
	if _, err := tx.Exec(ctx, "delete from pg_t"); err == nil || !strings.Contains(err.Error(), "cannot run inside a transaction block") {
		t.Errorf("a write in a block on the cluster: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The connection is still usable after errors.
	if got := one(c, "select cast(count(*) as varchar) from region"); got != "5" {
		t.Errorf("after errors: %q", got)
	}

	// Flight SQL: a token for alice, then the 22 queries on the workers.
	fc := flightClient(t, faddr)
	if _, err := fc.Execute(ctx, "select 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Flight SQL without credentials: %v", err)
	}
	actx, err := fc.Client.AuthenticateBasicToken(ctx, "alice", "s3cret pass")
	if err != nil {
		t.Fatal(err)
	}
	for q := 1; q <= tpch.NumQueries; q++ {
		r := runTPCHQuery(actx, flightRunner(fc), q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Flight SQL Q%d: %v %s", q, r.err, r.verdict)
		}
	}
	if got := flightQueryCtx(t, actx, fc, "select count(*) from pg_t"); fmt.Sprint(got) != "[[3]]" {
		t.Errorf("Flight SQL reads the table pgx wrote: %v", got)
	}
}
