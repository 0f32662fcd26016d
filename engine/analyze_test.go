package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/bind"
	"github.com/nicflow/nicflow/engine/dist"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TestAnalyze: ANALYZE reports its tag for every table, named tables and
// columns; what it names must exist (a query error at the name); it runs
// inside a transaction block (it writes nothing); and the statistics the
// optimizer reads are current after a write without it, which is why it
// has nothing to recompute.
func TestAnalyze(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(q string) (string, error) {
		t.Helper()
		r, err := s.Query(ctx, q)
		if err != nil {
			return "", err
		}
		defer r.Close()
		return r.Status, nil
	}
	for _, q := range []string{"create table t (a int, b text)", "insert into t values (1, 'x'), (2, 'y'), (2, null)", "create view v as select a from t"} {
		if _, err := run(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"analyze", "ANALYSE", "analyze verbose", "analyze t", "analyze verbose t (a, B), t (b)", "analyze (verbose false, skip_locked) public.t"} {
		tag, err := run(q)
		if err != nil || tag != "ANALYZE" {
			t.Errorf("%s: got %q, %v; want ANALYZE", q, tag, err)
		}
	}
	for q, want := range map[string]string{
		"analyze nope":         `line 1, column 9: relation "nope" does not exist`,
		"analyze t, nope (a)":  `line 1, column 12: relation "nope" does not exist`,
		"analyze v":            `line 1, column 9: cannot analyze "v": it is a view (only tables have statistics)`,
		"analyze t (a, c)":     `line 1, column 15: column "c" of relation "t" does not exist`,
		"analyze t (a, b, a)":  `line 1, column 18: column "a" of relation "t" appears more than once`,
		"analyze other.t":      `schema-qualified name other.t is not supported`,
		"analyze verbose 1":    `line 1, column 17: expected a table name, found number 1`,
		"analyze (verbose) tt": `relation "tt" does not exist`,
	} {
		_, err := run(q)
		if err == nil || nferr.KindOf(err) != nferr.KindQuery || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v (kind %v), want a query error with %q", q, err, nferr.KindOf(err), want)
		}
	}
	// A table dropped between binding and running (another session of a
	// shared database) is named.
	if _, err := s.analyze(&bind.AnalyzeStmt{Tables: []bind.AnalyzeTable{{Name: "gone"}}}); err == nil || !strings.Contains(err.Error(), `relation "gone" does not exist`) {
		t.Errorf("a table gone at run time: %v", err)
	}
	// In a transaction block: allowed, the block stays usable.
	for _, q := range []string{"begin", "analyze t", "select 1", "commit"} {
		if _, err := run(q); err != nil {
			t.Fatalf("in a block, %s: %v", q, err)
		}
	}
	// The optimizer's statistics follow writes without ANALYZE.
	rows := func() int64 {
		t.Helper()
		def, err := s.cat.LookupTable("t")
		if err != nil || def == nil || def.Stats == nil {
			t.Fatalf("lookup t: %v %v", def, err)
		}
		return def.Stats.Rows
	}
	if n := rows(); n != 3 {
		t.Fatalf("rows after the insert: %d, want 3", n)
	}
	if _, err := run("insert into t values (3, 'z'), (4, 'w')"); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 5 {
		t.Fatalf("rows after a second insert, before ANALYZE: %d, want 5", n)
	}
	def, _ := s.cat.LookupTable("t")
	if cs := def.Stats.Columns[1]; cs.Nulls != 1 {
		t.Errorf("nulls of b: %d, want 1", cs.Nulls)
	}

	// On a cluster the coordinator runs it on its catalog (nothing
	// changes, no memory admitted); errors are the same.
	dq, err := s.PrepareDistributed(ctx, "set timezone = 'UTC'; analyze t (a)", 1, dist.DistOptions{Workers: 2, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if dq.Local == nil || dq.Local.Status != "ANALYZE" || dq.Changed {
		t.Errorf("cluster: local %+v, changed %v", dq.Local, dq.Changed)
	}
	if _, err := s.PrepareDistributed(ctx, "analyze nope", 0, dist.DistOptions{Workers: 2, Parallelism: 1}); err == nil || !strings.Contains(err.Error(), `relation "nope" does not exist`) {
		t.Errorf("cluster, unknown table: %v", err)
	}
	if a, _, err := s.ClusterStatement(ctx, "analyze t", 0); err != nil || a != AdmitNone {
		t.Errorf("cluster admit: %v %v", a, err)
	}
}
