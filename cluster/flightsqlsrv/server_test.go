package flightsqlsrv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/engine"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	dir := t.TempDir()
	srv, err := Listen(Options{Listen: "127.0.0.1:0", Open: func() (engine.Conn, error) {
		return engine.OpenConn(dir, engine.Options{Parallelism: 2})
	}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return srv
}

func dial(t *testing.T, srv *Server) *flightsql.Client {
	t.Helper()
	c, err := flightsql.NewClient(srv.Addr(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestStreamsAsItComes: the first batch of a result that would take
// minutes to finish arrives at once, and a client that stops reading
// stops the statement.
func TestStreamsAsItComes(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	info, err := c.Execute(ctx, "select a from generate_series(1, 2000000000) a")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() || rdr.RecordBatch().NumRows() == 0 {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the first batch took %v", d)
	}
	if srv.Running() != 1 {
		t.Errorf("%d statements running while streaming", srv.Running())
	}
	cancel()
	rdr.Release()
	waitFor(t, "the abandoned statement to stop", func() bool { return srv.Running() == 0 })
}

// TestSessionLifecycle: a session per connection, closed when the
// connection ends.
func TestSessionLifecycle(t *testing.T) {
	srv := startServer(t)
	sessions := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.sessions)
	}
	a, b := dial(t, srv), dial(t, srv)
	ctx := context.Background()
	for _, c := range []*flightsql.Client{a, b, a} {
		if _, err := c.ExecuteUpdate(ctx, "set time zone 'UTC'"); err != nil {
			t.Fatal(err)
		}
	}
	if n := sessions(); n != 2 {
		t.Fatalf("%d sessions for two connections", n)
	}
	b.Close()
	waitFor(t, "the closed connection's session to end", func() bool { return sessions() == 1 })
}

// TestExpiry: tickets and prepared statements expire; a ticket of an
// expired statement, a malformed handle and another kind's handle are
// refused with a clear error.
func TestExpiry(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv)
	ctx := context.Background()
	info, err := c.Execute(ctx, "select 1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Prepare(ctx, "select $1")
	if err != nil {
		t.Fatal(err)
	}
	srv.expire(time.Now().Add(2 * time.Hour))
	_, err = c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		rdr, _ := c.DoGet(ctx, info.Endpoint[0].Ticket)
		for rdr.Next() {
		}
		err = rdr.Err()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "unknown or expired ticket") {
		t.Errorf("an expired ticket: %v", err)
	}
	if _, err := p.Execute(ctx); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "unknown prepared statement") {
		t.Errorf("an expired prepared statement: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("closing an expired prepared statement: %v", err)
	}
	srv.mu.Lock()
	n := len(srv.stmts) + len(srv.prepared)
	srv.mu.Unlock()
	if n != 0 {
		t.Errorf("%d statements left after expiry", n)
	}
}

// TestInterleavedStreams: two results of one connection (one session)
// read in turns, while a third statement runs.
func TestInterleavedStreams(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv)
	ctx := context.Background()
	var infos []*flight.FlightInfo
	for _, q := range []string{"select a from generate_series(1, 300000) a", "select a * 2 from generate_series(1, 300000) a"} {
		info, err := c.Execute(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	var rdrs []*flight.Reader
	for _, info := range infos {
		rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		rdrs = append(rdrs, rdr)
	}
	sums := make([]int64, 2)
	for live := 2; live > 0; {
		live = 0
		for i, rdr := range rdrs {
			if rdr.Next() {
				live++
				col := rdr.RecordBatch().Column(0).(*array.Int64)
				for j := 0; j < col.Len(); j++ {
					sums[i] += col.Value(j)
				}
			}
		}
		if _, err := c.ExecuteUpdate(ctx, "set time zone 'UTC'"); err != nil {
			t.Fatal(err)
		}
	}
	for i, rdr := range rdrs {
		if rdr.Err() != nil {
			t.Fatal(rdr.Err())
		}
		if want := int64(300000*300001/2) * int64(i+1); sums[i] != want {
			t.Errorf("stream %d: sum %d, want %d", i, sums[i], want)
		}
	}
}
