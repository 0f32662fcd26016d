package exec

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// scanTestDB makes a table t(k int64, v decimal(15,2), s utf8) of n rows in
// row groups of 100 rows: k = i, v = (i % 50) + 0.25, s = "x" or NULL.
func scanTestDB(t *testing.T, n int) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{Write: storage.WriteOptions{RowGroupRows: 100}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if err := db.CreateTable("t", sch, storage.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, n)
	for i := range rows {
		var s any = "x"
		if i%3 == 0 {
			s = nil
		}
		rows[i] = []any{int64(i), DecU(int64(i%50)*100+25, 2), s}
	}
	rec := MakeRecord(t, memory.DefaultAllocator, sch, rows)
	defer rec.Release()
	app, err := db.NewAppender("t", storage.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Append(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestScanOperator(t *testing.T) {
	db := scanTestDB(t, 1000)
	spec := storage.ScanSpec{
		Table:   "t",
		Columns: []string{"s", "k"},
		// k < 300 prunes 7 of 10 row groups; v = 1.25 keeps 1 row in 50.
		Filter: storage.And(storage.Cmp("k", storage.OpLt, storage.Int(300)), storage.Cmp("v", storage.OpEq, storage.Decimal(125, 2))),
	}
	for _, par := range []int{1, 3} {
		for _, bs := range []int{1, 7, 8192} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			env := NewTestEnv(mem)
			env.BatchSize = bs
			op, err := NewScan(db, spec, ScanConfig{Parallelism: par})
			if err != nil {
				t.Fatal(err)
			}
			if got := op.Schema().Field(0).Name; got != "s" {
				t.Fatalf("schema field 0 = %s, want s", got)
			}
			if err := op.Open(env); err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				b, err := op.Next()
				if err != nil {
					t.Fatal(err)
				}
				if b == nil {
					break
				}
				if b.Sel != nil || b.Len() == 0 || b.Len() > bs || len(b.Cols) != 2 {
					t.Fatalf("bad batch: sel=%v len=%d cols=%d", b.Sel, b.Len(), len(b.Cols))
				}
				for i := 0; i < b.N; i++ {
					k := b.Cols[1].(interface{ Value(int) int64 }).Value(i)
					if k >= 300 || k%50 != 1 {
						t.Fatalf("row k=%d does not pass the filter", k)
					}
				}
				n += b.Len()
			}
			if b, err := op.Next(); b != nil || err != nil {
				t.Fatalf("Next after end = %v, %v", b, err)
			}
			st := op.Stats()
			if n != 6 || st.RowGroupsPruned != 7 || st.RowGroupsTotal != 10 {
				t.Fatalf("parallelism %d batch %d: %d rows, stats %+v; want 6 rows, 7 of 10 row groups pruned", par, bs, n, st)
			}
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
			if err := op.Close(); err != nil {
				t.Fatal("second Close:", err)
			}
			mem.AssertSize(t, 0)
		}
	}
}

func TestScanOperatorCountStar(t *testing.T) {
	db := scanTestDB(t, 1000)
	env := NewTestEnv(memory.NewGoAllocator())
	op, err := NewScan(db, storage.ScanSpec{Table: "t"}, ScanConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := op.Open(env); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		b, err := op.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		n += b.Len()
	}
	if n != 1000 || op.Stats().BytesRead != 0 {
		t.Fatalf("count(*) = %d (bytes read %d), want 1000 without reading", n, op.Stats().BytesRead)
	}
}

func TestScanOperatorErrorsAndLifecycle(t *testing.T) {
	db := scanTestDB(t, 1000)
	if _, err := NewScan(db, storage.ScanSpec{Table: "nope"}, ScanConfig{}); !nferr.Is(err, nferr.KindQuery) {
		t.Fatalf("unknown table: %v, want a query error", err)
	}
	if _, err := NewScan(db, storage.ScanSpec{Table: "t", Columns: []string{"zz"}}, ScanConfig{}); !nferr.Is(err, nferr.KindQuery) {
		t.Fatalf("unknown column: %v, want a query error", err)
	}
	// Close before Open.
	op, err := NewScan(db, storage.ScanSpec{Table: "t", Columns: []string{"k"}}, ScanConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	// Cancellation with parallel workers, then Close: no goroutine leaks.
	before := runtime.NumGoroutine()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	ctx, cancel := context.WithCancel(context.Background())
	env := NewTestEnv(mem)
	env.Ctx = ctx
	env.BatchSize = 10
	op, err = NewScan(db, storage.ScanSpec{Table: "t", Columns: []string{"k", "v", "s"}}, ScanConfig{Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Open(env); err != nil {
		t.Fatal(err)
	}
	if b, err := op.Next(); err != nil || b == nil {
		t.Fatalf("first Next: %v, %v", b, err)
	}
	cancel()
	b, err := op.Next()
	if b != nil || !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("Next after cancel = %v, %v; want a canceled error", b, err)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines after Close, %d before: the scan leaked workers", g, before)
	}
}

// TestScanOperatorRemote runs the scan operator over a storage node: the
// same rows as the local scan, through Flight on 127.0.0.1.
func TestScanOperatorRemote(t *testing.T) {
	coord := scanTestDB(t, 1000)
	nodeDB, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer nodeDB.Close()
	srv, err := storage.NewServer(nodeDB, "127.0.0.1:0", storage.ServerOptions{NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Stop(time.Second)
	nodes := []storage.Node{{ID: "n1", Addr: srv.Addr()}}
	if err := coord.Place(context.Background(), "t", nodes, 1, storage.ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := storage.NewRemoteScanner(coord, nodes, storage.ClientOptions{})
	defer rs.Close()
	spec := storage.ScanSpec{Table: "t", Columns: []string{"k", "s"}, Filter: storage.IsNotNull("s")}
	count := func(src storage.Source) int {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		op, err := NewScan(src, spec, ScanConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		if err := op.Open(NewTestEnv(mem)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			b, err := op.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				return n
			}
			if b.Sel != nil || b.Cols[1].NullN() != 0 {
				t.Fatalf("remote batch with a selection or NULLs")
			}
			n += b.Len()
		}
	}
	local, remote := count(coord), count(rs)
	if local != 666 || remote != local {
		t.Fatalf("local scan %d rows, remote %d; want 666 both", local, remote)
	}
}
