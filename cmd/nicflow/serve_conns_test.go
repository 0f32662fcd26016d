package main

import (
	"context"
	"errors"
	"net"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/nicflow/nicflow/cluster/console"
	"github.com/nicflow/nicflow/cluster/pgwire"
)

// rawLogin opens a connection and logs in (trust); an ErrorResponse the
// server answers instead is returned.
func rawLogin(addr string) (net.Conn, *pgproto3.ErrorResponse, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "nicflow"}})
	if err := fe.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	for {
		m, err := fe.Receive()
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		switch m := m.(type) {
		case *pgproto3.ReadyForQuery:
			nc.SetDeadline(time.Time{})
			return nc, nil, nil
		case *pgproto3.ErrorResponse:
			e := *m
			nc.Close()
			return nil, &e, nil
		}
	}
}

// openFDs is the number of file descriptors this process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestServeIdleFlood: `nicflow serve`'s PostgreSQL server (its database
// opened once, its sessions made per connection as runServe makes them)
// takes a flood of idle logged-in connections up to --pg-max-connections
// with one socket each and nothing else (a session that opened the
// database per connection held a lock file, made logins take tens of ms
// one after the other, and kept the server busy for minutes after they
// closed); an existing session's query answers throughout; connections
// past the limit are refused with SQLSTATE 53300; and the server closes
// promptly with them all open. Figures go to the log (-v).
func TestServeIdleFlood(t *testing.T) {
	const (
		limit = 2000
		over  = 200
		par   = 32
	)
	// NB: each connection is two descriptors here, the client's and the
	// server's.
	need := uint64(2*(limit+over) + 256)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if rl.Cur < need {
		if rl.Max < need {
			t.Skipf("needs %d file descriptors; the hard limit is %d", need, rl.Max)
		}
		raised := rl
		raised.Cur = need
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			t.Skipf("raising the file descriptor limit to %d: %v", need, err)
		}
		defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}

	dir := newDB(t)
	opts, err := sessionOptions("", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	db, err := openServed(dir, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	po := pgwire.Options{Listen: "127.0.0.1:0"}
	if err := (pgLimits{maxConns: limit, idleTimeout: time.Hour, authTimeout: time.Minute}).apply(&po); err != nil {
		t.Fatal(err)
	}
	po.Open = servedSessions(db, console.NewRegistry(0), "pgwire")
	srv, err := pgwire.Listen(po)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()
	addr := srv.Addr()

	ctx := context.Background()
	existing := pgConnect(t, addr, pgx.QueryExecModeSimpleProtocol)
	defer existing.Close(ctx)
	if _, err := existing.Exec(ctx, "create table lineitem as select * from generate_series(1, 100000) as g(x)"); err != nil {
		t.Fatal(err)
	}
	count := func() (time.Duration, error) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		var n int64
		err := existing.QueryRow(qctx, "select count(*) from lineitem where x % 7 = 0").Scan(&n)
		if err == nil && n != 14285 {
			err = errors.New("wrong count")
		}
		return time.Since(start), err
	}
	if _, err := count(); err != nil {
		t.Fatal(err)
	}

	// The flood, while the existing session queries.
	fds0 := openFDs(t)
	stop := make(chan struct{})
	var queries []time.Duration
	queryErr := make(chan error, 1)
	go func() {
		defer close(queryErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, err := count()
			if err != nil {
				queryErr <- err
				return
			}
			queries = append(queries, d)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	idle := make([]net.Conn, limit-1)
	lat := make([]time.Duration, limit-1)
	errs := make(chan error, par)
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < par; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(idle); i += par {
				t0 := time.Now()
				nc, e, err := rawLogin(addr)
				lat[i] = time.Since(t0)
				if err == nil && e != nil {
					err = errors.New(e.Code + " " + e.Message)
				}
				if err != nil {
					errs <- err
					return
				}
				idle[i] = nc
			}
		}()
	}
	wg.Wait()
	flood := time.Since(start)
	close(errs)
	defer func() {
		for _, nc := range idle {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	for err := range errs {
		t.Fatalf("login within the limit: %v", err)
	}
	fds := openFDs(t) - fds0
	close(stop)
	if err := <-queryErr; err != nil {
		t.Fatalf("the existing session's query during the flood: %v", err)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(queries, func(i, j int) bool { return queries[i] < queries[j] })
	if len(queries) == 0 {
		t.Fatal("the existing session ran no query during the flood")
	}
	t.Logf("%d idle connections in %v (%d at a time): login p50 %v, p99 %v; %.2f descriptors per connection (client and server side); existing session's query during the flood: %d runs, p50 %v, max %v",
		len(idle), flood, par, lat[len(lat)/2], lat[len(lat)*99/100], float64(fds)/float64(len(idle)), len(queries), queries[len(queries)/2], queries[len(queries)-1])
	if per := float64(fds) / float64(len(idle)); per > 2.2 {
		t.Errorf("%.2f descriptors per idle connection (the client's and the server's socket are 2): a session holds more than its socket", per)
	}

	// Past the limit: refused at once, clearly.
	start = time.Now()
	for i := 0; i < over; i++ {
		nc, e, err := rawLogin(addr)
		if nc != nil {
			nc.Close()
			t.Fatalf("connection %d past the limit of %d logged in", i+1, limit)
		}
		if err != nil || e == nil || e.Code != "53300" || e.Message != "sorry, too many clients already" {
			t.Fatalf("connection %d past the limit: %v %+v, want FATAL 53300", i+1, err, e)
		}
	}
	t.Logf("%d connections past the limit refused with 53300 in %v", over, time.Since(start))
	d, err := count()
	if err != nil {
		t.Fatalf("the existing session's query with %d connections open: %v", limit, err)
	}
	t.Logf("existing session's query with %d connections open: %v", limit, d)

	start = time.Now()
	srv.Close()
	closed = true
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("closing the server with %d connections open took %v", limit, d)
	} else {
		t.Logf("server closed with %d connections open in %v", limit, d)
	}
}

// TestPGLimitFlags: the connection limit flags reach pgwire.Options, and
// values out of range are usage errors.
func TestPGLimitFlags(t *testing.T) {
	var po pgwire.Options
	if err := (pgLimits{maxConns: 7, idleTimeout: 0, authTimeout: time.Second}).apply(&po); err != nil {
		t.Fatal(err)
	}
	if po.MaxConnections != 7 || po.IdleTimeout >= 0 || po.AuthTimeout != time.Second {
		t.Errorf("options %d %v %v; want 7, never (negative), 1s", po.MaxConnections, po.IdleTimeout, po.AuthTimeout)
	}
	for _, bad := range []pgLimits{
		{maxConns: 0, idleTimeout: time.Hour, authTimeout: time.Minute},
		{maxConns: 1, idleTimeout: -time.Second, authTimeout: time.Minute},
		{maxConns: 1, idleTimeout: time.Hour, authTimeout: 0},
	} {
		var ue *usageError
		if err := bad.apply(&po); !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", bad, err)
		}
	}
}
