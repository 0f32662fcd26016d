package storage

import (
	"context"
	"math/rand"
	"os"
	"slices"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestRepair: a node that left is replaced, a node that lost a file gets
// it again, the catalog records where the good copies are, and scans read
// the table throughout; a node asked for a table it lost says the
// placement is stale (KindUnavailable), and scans fail over.
func TestRepair(t *testing.T) {
	coord := openTestDB(t, WriteOptions{RowGroupRows: 250, FileRows: 500})
	sch := testSchema()
	mustCreate(t, coord, "t", sch)
	appendRows(t, coord, "t", sch, randomRows(rand.New(rand.NewSource(3)), 0, 2000, 0.1))
	n1, n2, n3 := startNode(t, "n1", 0), startNode(t, "n2", 0), startNode(t, "n3", 0)
	node := func(id string, n *testNode) Node { return Node{ID: id, Addr: n.srv.Addr()} }
	ctx := context.Background()
	if err := coord.Place(ctx, "t", []Node{node("n1", n1), node("n2", n2)}, 2, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	all := ScanSpec{Table: "t"}.AllColumns(mustTable(t, coord, "t"))
	want, _ := scanAll(t, coord, all, ScanOptions{})

	// n2 leaves; n3 joins: every file gets its second copy on n3.
	n2.srv.Stop(0)
	rep, err := coord.Repair(ctx, []Node{node("n1", n1), node("n3", n3)}, 2, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, coord, "t")
	if rep.Copied != len(tb.Files) {
		t.Errorf("copied %d files, want %d", rep.Copied, len(tb.Files))
	}
	for _, f := range tb.Files {
		// n2 could not be asked: it stays listed, last.
		if !slices.Equal(f.Nodes, []string{"n1", "n3", "n2"}) {
			t.Errorf("file %s on %v, want [n1 n3 n2]", f.Path, f.Nodes)
		}
	}
	// A second repair finds nothing to do.
	if rep, err := coord.Repair(ctx, []Node{node("n1", n1), node("n3", n3)}, 2, ClientOptions{}); err != nil || rep.Copied != 0 {
		t.Errorf("second repair: %+v %v", rep, err)
	}

	// n1 loses a file on disk: it is sent again.
	lost := tb.Files[0]
	if err := os.Remove(n1.db.Path(mustTable(t, n1.db, "t").Files[0])); err != nil {
		t.Fatal(err)
	}
	rs := NewRemoteScanner(coord, []Node{node("n1", n1), node("n3", n3)}, ClientOptions{})
	defer rs.Close()
	got, err := drainRemote(t, rs, all)
	if err != nil || len(got) != len(want) {
		t.Fatalf("scan with a file lost on n1 (fails over to n3): %d rows, %v", len(got), err)
	}
	rep, err = coord.Repair(ctx, []Node{node("n1", n1), node("n3", n3)}, 2, ClientOptions{})
	if err != nil || rep.Copied != 1 {
		t.Fatalf("repair of a lost file: %+v %v", rep, err)
	}
	if f := mustTable(t, coord, "t").Files[0]; f.Path != lost.Path || !slices.Contains(f.Nodes, "n1") {
		t.Errorf("after the repair: %s on %v", f.Path, f.Nodes)
	}

	// A node that never had the table: a stale placement, not a query error.
	n4 := startNode(t, "n4", 0)
	if err := n4.srv.holds(ScanSpec{Table: "t"}); !nferr.Is(err, nferr.KindUnavailable) {
		t.Errorf("scan of a table the node lacks: %v", err)
	}
}

func drainRemote(t *testing.T, rs *RemoteScanner, spec ScanSpec) ([]row, error) {
	it, err := rs.OpenScan(context.Background(), spec, ScanOptions{})
	if err != nil {
		return nil, err
	}
	return drain(t, it)
}
