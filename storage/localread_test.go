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
		spec := all
		spec.Filter = randomPredicate(rng, 2)
		if i%5 == 0 {
			spec.Columns = []string{"s", "id"}
		}
		if i%7 == 0 {
			spec.Columns = nil // count(*)
		}
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
