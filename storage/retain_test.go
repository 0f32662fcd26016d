package storage

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPrune: a storage node drops, of the tables it received, the files
// the placing catalog rewrote away, the tables it dropped and a table it
// created again with other columns, keeps what is still placed on it, and
// never touches a table loaded on the node itself.
func TestPrune(t *testing.T) {
	coord := openTestDB(t, WriteOptions{RowGroupRows: 250, FileRows: 500})
	sch := testSchema()
	rng := rand.New(rand.NewSource(5))
	for _, name := range []string{"t", "u"} {
		mustCreate(t, coord, name, sch)
		appendRows(t, coord, name, sch, randomRows(rng, 0, 2000, 0.1))
	}
	n1 := startNode(t, "n1", 0)
	mustCreate(t, n1.db, "own", sch)
	appendRows(t, n1.db, "own", sch, randomRows(rng, 0, 100, 0))
	nodes := []Node{{ID: "n1", Addr: n1.srv.Addr()}}
	ctx := context.Background()
	for _, name := range []string{"t", "u"} {
		if err := coord.Place(ctx, name, nodes, 1, ClientOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	prune := func() PruneReport {
		t.Helper()
		reps, unreachable, err := coord.Prune(ctx, nodes, ClientOptions{})
		if err != nil || len(unreachable) > 0 {
			t.Fatalf("prune: %v, unreachable %v", err, unreachable)
		}
		return reps["n1"]
	}
	files := func(name string) int {
		m, _ := filepath.Glob(filepath.Join(n1.db.Dir(), name, "*.parquet"))
		return len(m)
	}
	if rep := prune(); rep != (PruneReport{}) {
		t.Errorf("nothing stale, yet pruned %v", rep)
	}

	// u rewritten (its rows replaced, as UPDATE does): n1's four old files
	// go; the new ones are not placed yet.
	app, err := coord.NewAppender("u", AppendOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := recordOf(memory.DefaultAllocator, sch, randomRows(rng, 0, 10, 0))
	err = app.Append(rec)
	rec.Release()
	if err == nil {
		_, err = app.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep := prune(); rep != (PruneReport{Files: 4}) || files("u") != 0 {
		t.Errorf("after rewriting u: %v, %d files of u on n1", rep, files("u"))
	}
	if err := coord.Place(ctx, "u", nodes, 1, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	if files("u") != 1 || len(mustTable(t, n1.db, "u").Files) != 1 {
		t.Errorf("u placed again: %d files on n1", files("u"))
	}

	// t dropped and created again with other columns: the old t goes, the
	// new one is placed.
	if err := coord.DropTable("t", false); err != nil {
		t.Fatal(err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mustCreate(t, coord, "t", other)
	if rep := prune(); rep != (PruneReport{Tables: 1}) || files("t") != 0 {
		t.Errorf("after recreating t: %v, %d files of t on n1", rep, files("t"))
	}
	appendRows(t, coord, "t", other, []row{{int64(1)}, {int64(2)}})
	if err := coord.Place(ctx, "t", nodes, 1, ClientOptions{}); err != nil {
		t.Fatalf("placing the new t: %v", err)
	}

	// Everything dropped on the coordinator: only n1's own table stays.
	for _, name := range []string{"t", "u"} {
		if err := coord.DropTable(name, false); err != nil {
			t.Fatal(err)
		}
	}
	if rep := prune(); rep != (PruneReport{Tables: 2}) {
		t.Errorf("after dropping everything: %v", rep)
	}
	if got := n1.db.Tables(); len(got) != 1 || got[0].Name != "own" || files("own") != 1 {
		t.Errorf("n1 holds %d tables after the prune, own has %d files", len(got), files("own"))
	}
	if _, err := os.Stat(filepath.Join(n1.db.Dir(), "u")); !os.IsNotExist(err) {
		t.Errorf("u's directory is still on n1: %v", err)
	}

	// A malformed request is bad data, not a crash.
	if _, err := n1.db.retain([]retainTable{{Table: ""}}); err == nil {
		t.Error("a retain request naming no table succeeded")
	}
}
