package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/dist"
	"github.com/nicflow/nicflow/engine/sql"
)

// TestClusterScripts: each statement of a script is sent to a cluster
// with only the SET statements before it, at its own line and column, so
// the coordinator parses a statement's worth of text (not the whole
// script per statement) and an error still points into the user's script.
func TestClusterScripts(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Query(ctx, "create table t (a int, b text)")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	script := "select 1;\n" +
		"set timezone = 'UTC'; select a from t;\n" +
		"insert into t values (1, 'x');\n" +
		"set query_retries =\n  2;\n" +
		"select a,\n       nosuch\n  from t;\n" +
		"set disabled_rules = ''; select 2; select b from t where\n    a = 'x' +;\n"
	// A syntax error anywhere is the whole script's, as before.
	if _, err := ClusterScripts(script); err == nil || !strings.Contains(err.Error(), "line 10, column 14") {
		t.Fatalf("syntax error: %v", err)
	}
	script = strings.Replace(script, "'x' +;", "'x' || nope;", 1)
	cs, err := ClusterScripts(script)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := sql.Parse(script)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(orig) {
		t.Fatalf("%d scripts for %d statements", len(cs), len(orig))
	}
	wantSets := 0
	for k, c := range cs {
		got, err := sql.Parse(c.Text)
		if err != nil {
			t.Fatalf("statement %d: its script %q does not parse: %v", k, c.Text, err)
		}
		if c.Index >= len(got) || got[c.Index].Text != orig[k].Text || got[c.Index].Start.Line != orig[k].Start.Line || got[c.Index].Start.Col != orig[k].Start.Col {
			t.Fatalf("statement %d (%q at %d:%d): script %q index %d", k, orig[k].Text, orig[k].Start.Line, orig[k].Start.Col, c.Text, c.Index)
		}
		sets := 0
		for _, g := range got[:c.Index] {
			if _, ok := g.Stmt.(*sql.Set); !ok {
				t.Errorf("statement %d: its script carries %q, not a SET", k, g.Text)
			}
			sets++
		}
		if sets != wantSets {
			t.Errorf("statement %d: %d SETs before it, want %d", k, sets, wantSets)
		}
		if _, ok := orig[k].Stmt.(*sql.Set); ok {
			wantSets++
		}
	}
	// The coordinator's errors name the user's line and column.
	for k, want := range map[int]string{5: `line 7, column 8: column "nosuch" does not exist`, 8: `line 10, column 16: column "nope" does not exist`} {
		_, err := s.PrepareDistributed(ctx, cs[k].Text, cs[k].Index, dist.DistOptions{Workers: 2, Parallelism: 1})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("statement %d: got %v, want %q", k, err, want)
		}
	}
	// The SETs before a statement still apply to it.
	dq, err := s.PrepareDistributed(ctx, cs[7].Text, cs[7].Index, dist.DistOptions{Workers: 2, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if dq.Retries != 2 {
		t.Errorf("query_retries before statement 7: %d, want 2", dq.Retries)
	}
	// Statements on one line keep their columns.
	cs, err = ClusterScripts("set timezone = 'UTC'; set query_retries = 1; select 1")
	if err != nil {
		t.Fatal(err)
	}
	if cs[2].Text != "set timezone = 'UTC';set query_retries = 1;  select 1" || cs[2].Index != 2 {
		t.Errorf("placed on one line: %+v", cs[2])
	}
}
