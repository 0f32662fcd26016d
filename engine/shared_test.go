package engine

import (
	"context"
	"os"
	"slices"
	"testing"
)

// TestSharedDB: sessions of one SharedDB keep their own settings, see
// each other's commits, and a query of one reads every row of the table
// it started on though another session drops it (and makes a new one of
// the name) meanwhile; the dropped files are deleted once the query's
// rows are closed.
func TestSharedDB(t *testing.T) {
	d, err := OpenShared(t.TempDir(), Options{Parallelism: 2, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, b := d.Session(nil), d.Session(nil)
	ctx := context.Background()
	exec := func(s *Session, q string) {
		t.Helper()
		r, err := s.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		r.Close()
	}
	exec(a, "create table t as select * from generate_series(1, 5000) as g(x)")
	if got := queryRows(t, b, "select count(*), sum(x) from t"); !slices.Equal(got, []string{"5000|12502500"}) {
		t.Fatalf("b sees %v of a's table", got)
	}
	exec(a, "set time zone 'Europe/Paris'")
	if got := queryRows(t, b, "show timezone"); slices.Equal(got, queryRows(t, a, "show timezone")) {
		t.Errorf("a's SET TIME ZONE reached b: %v", got)
	}

	old := d.DB()
	tb, err := old.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	var oldFiles []string
	for _, f := range tb.Files {
		oldFiles = append(oldFiles, old.Path(f))
	}
	r, err := a.Query(ctx, "select x from t")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	rec, err := r.Next()
	if err != nil || rec == nil {
		t.Fatalf("first batch: %v", err)
	}
	n += int(rec.NumRows())
	exec(b, "drop table t")
	exec(b, "create table t as select * from generate_series(1, 10) as g(x)")
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("reading a's query after b dropped and re-created its table: %v", err)
		}
		if rec == nil {
			break
		}
		n += int(rec.NumRows())
	}
	if n != 5000 {
		t.Errorf("a's query read %d rows, want the 5000 it started on", n)
	}
	for _, p := range oldFiles {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("replaced file deleted while a's query could read it: %v", err)
		}
	}
	r.Close()
	old.Close() // waits for the background deletion
	for _, p := range oldFiles {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("replaced file %s left after the query ended", p)
		}
	}
}

// TestSpillNamesPerProcess: two sessions' queries spilling at once never
// share a spill directory (named by the process and the query's number:
// numbered per session, both sessions' first queries collided).
func TestSpillNamesPerProcess(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenShared(dir, Options{Parallelism: 1, MemoryLimit: 4 << 20, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	const q = "select x, repeat('y', 100) from generate_series(1, 200000) as g(x) order by x desc"
	var open []*Result
	for i := 0; i < 2; i++ {
		s := d.Session(nil)
		r, err := s.Query(ctx, q)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		defer r.Close()
		if rec, err := r.Next(); err != nil || rec == nil {
			t.Fatalf("session %d: first batch: %v", i, err)
		}
		if r.env.Spill.Files() == 0 {
			t.Fatalf("session %d: the query did not spill", i)
		}
		open = append(open, r)
	}
	open[0].Close()
	n := 0
	for {
		rec, err := open[1].Next()
		if err != nil {
			t.Fatalf("second session's query after the first's closed: %v", err)
		}
		if rec == nil {
			break
		}
		n += int(rec.NumRows())
	}
	if n == 0 {
		t.Error("no rows")
	}
}
