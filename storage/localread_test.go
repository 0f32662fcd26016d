package storage

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// placedOn creates table t (3000 rows in 6 files of 2 row groups) in a
// coordinator database and places it on the given node alone.
func placedOn(t *testing.T, n *testNode, id string) *DB {
	t.Helper()
	coord := openTestDB(t, WriteOptions{RowGroupRows: 250, FileRows: 500})
	sch := testSchema()
	mustCreate(t, coord, "t", sch)
	appendRows(t, coord, "t", sch, randomRows(rand.New(rand.NewSource(11)), 0, 3000, 0.1))
	if err := coord.Place(context.Background(), "t", []Node{{ID: id, Addr: n.srv.Addr()}}, 1, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	return coord
}

// remoteScan runs spec through rs and returns its rows and statistics.
func remoteScan(t *testing.T, rs *RemoteScanner, spec ScanSpec, opts ScanOptions) ([]row, ScanStats, error) {
	t.Helper()
	it, err := rs.OpenScan(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	st := it.(interface{ Stats() ScanStats })
	rows, err := drain(t, it)
	return rows, st.Stats(), err
}

// TestLocalReads checks short-circuit reads: a client that sees a storage
// node's directory scans the files itself with the same answers as the
// node; one that cannot prove it (another token, a node refusing) falls
// back to Flight; a damaged file is a data error naming it.
func TestLocalReads(t *testing.T) {
	n1 := startNode(t, "n1", 4<<10)
	coord := placedOn(t, n1, "n1")
	tb := mustTable(t, coord, "t")
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	local := NewRemoteScanner(coord, nil, ClientOptions{LocalReads: true})
	defer local.Close()
	remote := NewRemoteScanner(coord, nil, ClientOptions{})
	defer remote.Close()

	rng := rand.New(rand.NewSource(3))
	all := ScanSpec{Table: "t"}.AllColumns(tb)
	for i := 0; i < 30; i++ {
		spec := variedSpec(all, rng, i)
		want, _ := scanAll(t, coord, spec, ScanOptions{})
		for _, par := range []int{1, 3} {
			got, st, err := remoteScan(t, local, spec, ScanOptions{Alloc: alloc, Parallelism: par})
			if err != nil {
				t.Fatalf("local read %s: %v", spec.Filter, err)
			}
			if st.LocalScans == 0 && len(want) > 0 {
				t.Fatalf("scan %s went over Flight, want a local read", spec.Filter)
			}
			sortRows(got)
			sortRows(want)
			if !equalRows(got, want) {
				t.Fatalf("local read %s (parallelism %d): %d rows, want %d", spec.Filter, par, len(got), len(want))
			}
		}
		_, st, err := remoteScan(t, remote, spec, ScanOptions{Alloc: alloc})
		if err != nil || st.LocalScans != 0 {
			t.Fatalf("scan without LocalReads: local scans %d, err %v", st.LocalScans, err)
		}
	}

	// A node whose token this client cannot match, and a node refusing
	// local reads: both answer over Flight.
	n2 := startNode(t, "n2", 4<<10)
	if err := os.WriteFile(filepath.Join(n2.db.Dir(), localReadToken), []byte("not-the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv3, err := NewServer(db, "127.0.0.1:0", ServerOptions{NodeID: "n3", DisableLocalReads: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv3.Serve()
	t.Cleanup(func() { srv3.Stop(time.Second); db.Close() })
	n3 := &testNode{db: db, srv: srv3}
	for _, c := range []struct {
		id string
		n  *testNode
	}{{"n2", n2}, {"n3", n3}} {
		co := placedOn(t, c.n, c.id)
		rs := NewRemoteScanner(co, nil, ClientOptions{LocalReads: true})
		spec := ScanSpec{Table: "t"}.AllColumns(mustTable(t, co, "t"))
		want, _ := scanAll(t, co, spec, ScanOptions{})
		got, st, err := remoteScan(t, rs, spec, ScanOptions{Alloc: alloc})
		rs.Close()
		if err != nil || st.LocalScans != 0 || len(got) != len(want) {
			t.Fatalf("node %s: %d rows (want %d), local scans %d, err %v", c.id, len(got), len(want), st.LocalScans, err)
		}
	}

	// A truncated file on n1: the local read fails as bad data, naming it.
	f := tb.Files[0]
	p := filepath.Join(n1.db.Dir(), f.Path)
	if err := os.Truncate(p, f.Size/2); err != nil {
		t.Fatal(err)
	}
	_, _, err = remoteScan(t, local, all, ScanOptions{Alloc: alloc})
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), p) {
		t.Fatalf("local read of a truncated file: %v (kind %v), want a data error naming %s", err, nferr.KindOf(err), p)
	}
}

// TestClientPool checks that scanners sharing a ClientPool share one
// connection per node and reuse a local-read handshake only while it is
// valid: a table replaced under the same file names, or a token file
// rewritten (a restarted node), makes the next scan ask again.
func TestClientPool(t *testing.T) {
	n1 := startNode(t, "n1", 4<<10)
	coord := placedOn(t, n1, "n1")
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	pool := NewClientPool()
	defer pool.Close()
	key := n1.srv.Addr() + "\x00t"
	cached := func() *localTable {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		return pool.local[key]
	}
	scan := func(co *DB) ([]row, ScanStats) {
		t.Helper()
		rs := NewRemoteScanner(co, nil, ClientOptions{LocalReads: true, Pool: pool})
		defer rs.Close()
		spec := ScanSpec{Table: "t"}.AllColumns(mustTable(t, co, "t"))
		got, st, err := remoteScan(t, rs, spec, ScanOptions{Alloc: alloc})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := scanAll(t, co, spec, ScanOptions{})
		sortRows(got)
		sortRows(want)
		if !equalRows(got, want) {
			t.Fatalf("pooled scan: %d rows, want %d", len(got), len(want))
		}
		return got, st
	}
	_, st := scan(coord)
	first := cached()
	if st.LocalScans == 0 || first == nil || first.table == nil {
		t.Fatalf("first pooled scan: local scans %d, handshake %+v", st.LocalScans, first)
	}
	_, st = scan(coord)
	if st.LocalScans == 0 || cached() != first {
		t.Fatalf("second pooled scan: local scans %d, handshake reused %v", st.LocalScans, cached() == first)
	}
	pool.mu.Lock()
	conns := len(pool.m)
	pool.mu.Unlock()
	if conns != 1 {
		t.Fatalf("pool holds %d connections, want 1", conns)
	}

	// The table replaced under the same file names: new checksums, a new
	// handshake, the new rows.
	if err := coord.DropTable("t", false); err != nil {
		t.Fatal(err)
	}
	if err := n1.db.DropTable("t", false); err != nil {
		t.Fatal(err)
	}
	sch := testSchema()
	mustCreate(t, coord, "t", sch)
	appendRows(t, coord, "t", sch, randomRows(rand.New(rand.NewSource(12)), 0, 2000, 0.1))
	if err := coord.Place(context.Background(), "t", []Node{{ID: "n1", Addr: n1.srv.Addr()}}, 1, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, st := scan(coord)
	second := cached()
	if len(rows) != 2000 || st.LocalScans == 0 || second == first {
		t.Fatalf("scan of the replaced table: %d rows, local scans %d, handshake reused %v", len(rows), st.LocalScans, second == first)
	}

	// A rewritten token file: the pooled answer no longer holds; the node
	// still announces its own token, which now fails to match, so the scan
	// goes over Flight.
	if _, err := writeLocalToken(n1.db.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, st = scan(coord); st.LocalScans != 0 || cached() == second {
		t.Fatalf("scan after the token changed: local scans %d (want 0), handshake reused %v", st.LocalScans, cached() == second)
	}

	pool.Close()
	rs := NewRemoteScanner(coord, nil, ClientOptions{Pool: pool})
	defer rs.Close()
	_, _, err := remoteScan(t, rs, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{Alloc: alloc})
	if !nferr.Is(err, nferr.KindUnavailable) {
		t.Fatalf("scan through a closed pool: %v, want unavailable", err)
	}
}
