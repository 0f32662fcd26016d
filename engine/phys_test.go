package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/engine/phys"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// planTPCH binds, optimizes and physically plans TPC-H query q against
// the SF1 test catalog with parallelism p.
func planTPCH(t *testing.T, q, p int) (*bind.QueryStmt, *phys.PhysPlan) {
	t.Helper()
	qs := bindQuery(t, tpchQuery(t, q))
	opt, err := opt.Optimize(qs.Plan)
	if err != nil {
		t.Fatalf("Q%d: %v", q, err)
	}
	qs.Plan = opt
	pp, err := phys.PlanPhysical(qs.Plan, qs.Names, phys.PlanOptions{Parallelism: p})
	if err != nil {
		t.Fatalf("Q%d: %v", q, err)
	}
	return qs, pp
}

// TestPhysicalPlansTPCH pins the physical plans of the 22 TPC-H queries
// (SF1 statistics, 4 pipelines) in testdata/phys/tpch.golden, and checks
// that every plan survives a JSON round trip unchanged.
func TestPhysicalPlansTPCH(t *testing.T) {
	var b strings.Builder
	for q := 1; q <= 22; q++ {
		_, pp := planTPCH(t, q, 4)
		text := phys.ExplainLocalPhysical(pp, nil)
		fmt.Fprintf(&b, "-- Q%d (%s)\n%s\n", q, strings.Join(pp.Names, ", "), text)

		js, err := json.Marshal(pp)
		if err != nil {
			t.Fatalf("Q%d: marshal: %v", q, err)
		}
		var back phys.PhysPlan
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatalf("Q%d: unmarshal: %v", q, err)
		}
		js2, _ := json.Marshal(&back)
		if !bytes.Equal(js, js2) {
			t.Errorf("Q%d: the plan changes in a JSON round trip", q)
		}
		if got := phys.ExplainLocalPhysical(&back, nil); got != text {
			t.Errorf("Q%d: EXPLAIN differs after a JSON round trip:\n%s\nwant:\n%s", q, got, text)
		}
		checkPhysShape(t, q, pp)
	}
	checkGolden(t, "phys/tpch.golden", b.String())
}

// checkPhysShape asserts invariants of every physical plan: stream counts
// follow the rules of phys.go, the root is one stream, scans read only
// columns and use storage filters.
func checkPhysShape(t *testing.T, q int, pp *phys.PhysPlan) {
	t.Helper()
	if pp.Root.Streams != 1 {
		t.Errorf("Q%d: root has %d streams", q, pp.Root.Streams)
	}
	check := func(n *phys.PhysNode) {
		in := func(i int) int { return n.Inputs[i].Streams }
		switch n.Kind {
		case phys.PhysFilter, phys.PhysProject, phys.PhysHashAgg, phys.PhysSort, phys.PhysTopN, phys.PhysLimit, phys.PhysDistinct, phys.PhysWindow, phys.PhysMaxOneRow, phys.PhysRowID, phys.PhysSingleCheck:
			if n.Streams != in(0) {
				t.Errorf("Q%d: %s node %d has %d streams over %d", q, n.Kind, n.ID, n.Streams, in(0))
			}
		case phys.PhysExchange:
			if (n.Exchange.Kind == "gather" || n.Exchange.Kind == "merge") && n.Streams != 1 {
				t.Errorf("Q%d: %s with %d streams", q, n.Exchange.Kind, n.Streams)
			}
		case phys.PhysNLJoin:
			if in(0) != in(1) || n.Streams != in(0) {
				t.Errorf("Q%d: nested loop join over %d and %d streams", q, in(0), in(1))
			}
		case phys.PhysUnion:
			if n.Streams != in(0)+in(1) {
				t.Errorf("Q%d: union streams", q)
			}
		}
		if n.Kind != phys.PhysScan && n.Kind != phys.PhysValues && n.Kind != phys.PhysSharedScan && len(n.Inputs) == 0 {
			t.Errorf("Q%d: %s node %d has no input", q, n.Kind, n.ID)
		}
	}
	pp.Root.Walk(check)
	for _, d := range pp.Shared {
		d.Root.Walk(check)
	}
}

// ---------------------------------------------------------------- session behaviour

func newTestDB(t *testing.T, opts Options) *Session {
	t.Helper()
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func exec1(t *testing.T, s *Session, sql string) [][]string {
	t.Helper()
	r, err := s.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer r.Close()
	var out [][]string
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if rec == nil {
			return out
		}
		rows, err := RowsText(rec, "NULL")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
}

// numbers creates table name with column n = 1..rows (in batches of
// INSERT ... SELECT doubling).
func numbers(t *testing.T, s *Session, name string, rows int) {
	t.Helper()
	exec1(t, s, fmt.Sprintf("CREATE TABLE %s (n BIGINT)", name))
	exec1(t, s, fmt.Sprintf("INSERT INTO %s VALUES (1)", name))
	for have := 1; have < rows; have *= 2 {
		exec1(t, s, fmt.Sprintf("INSERT INTO %s SELECT n + %d FROM %s WHERE n + %d <= %d", name, have, name, have, rows))
	}
}

func TestSessionCancel(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	s := newTestDB(t, Options{Parallelism: 2, Alloc: alloc})
	numbers(t, s, "a", 3000)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := s.Query(ctx, "SELECT count(*) FROM a x, a y, a z WHERE x.n + y.n + z.n < 0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Next()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !nferr.Is(err, nferr.KindCanceled) {
			t.Errorf("canceled query: %v (kind %v)", err, nferr.KindOf(err))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("query did not stop after cancel")
	}
	r.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the canceled query, %d before", n, before)
	}
	alloc.AssertSize(t, 0)
}

func TestSessionCloseEarly(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	s := newTestDB(t, Options{Parallelism: 3, BatchSize: 64, Alloc: alloc})
	numbers(t, s, "a", 5000)
	// A result closed after one batch, and a script abandoned midway.
	r, err := s.Query(context.Background(), "SELECT n, n * 2 FROM a")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Next(); err != nil || rec == nil {
		t.Fatalf("first batch: %v", err)
	}
	r.Close()
	sc, err := s.Execute(context.Background(), "SELECT n FROM a ORDER BY n; SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Next(); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	alloc.AssertSize(t, 0)
}

func TestMemoryLimit(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2, MemoryLimit: 256 << 10})
	numbers(t, s, "a", 20000)
	_, err := s.Query(context.Background(), "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Query(context.Background(), "SELECT n, count(*) FROM a GROUP BY n ORDER BY n")
	if err == nil {
		err = r.drain()
		r.Close()
	}
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "memory limit exceeded in ") {
		t.Errorf("got %v, want a memory limit error", err)
	}
	// The same query passes once the limit is raised.
	exec1(t, s, "SET memory_limit = '64MiB'")
	if got := exec1(t, s, "SELECT count(*) FROM (SELECT n, count(*) FROM a GROUP BY n) t"); got[0][0] != "20000" {
		t.Errorf("count %v", got)
	}
}

func TestExplainAnalyze(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2, BatchSize: 1000})
	numbers(t, s, "a", 10000)
	rows := exec1(t, s, "EXPLAIN ANALYZE SELECT n % 10 AS k, count(*) FROM a WHERE n > 100 GROUP BY 1 ORDER BY 1")
	var text strings.Builder
	for _, r := range rows {
		text.WriteString(r[0] + "\n")
	}
	out := text.String()
	for _, want := range []string{"Logical plan:", "executed:", "Scan main.a [n] storage filter=[n > 100]", "actual 9900 in ", "HashAggregate", "peak", "Total: 10 rows in "} {
		if !strings.Contains(out, want) {
			t.Errorf("EXPLAIN ANALYZE lacks %q:\n%s", want, out)
		}
	}
	rows = exec1(t, s, "EXPLAIN SELECT count(*) FROM a")
	if !strings.Contains(rows[len(rows)-1][0], "Scan main.a []") {
		t.Errorf("EXPLAIN of count(*) should scan no column: %v", rows)
	}
}

func TestSingleJoinChecks(t *testing.T) {
	for _, p := range []int{1, 3} {
		s := newTestDB(t, Options{Parallelism: p, BatchSize: 5})
		numbers(t, s, "a", 50)
		numbers(t, s, "b", 50)
		// Each row of a matches one row of b: the correlated scalar
		// subquery is fine ...
		got := exec1(t, s, "SELECT sum(x) FROM (SELECT (SELECT b.n FROM b WHERE b.n = a.n + 0 AND b.n > 0) AS x FROM a) t")
		if got[0][0] != "1275" {
			t.Errorf("p%d: sum %v", p, got)
		}
		// ... until row 49 matches two rows.
		exec1(t, s, "INSERT INTO b VALUES (49)")
		_, err := s.Query(context.Background(), "SELECT a.n, (SELECT b.n FROM b WHERE b.n = a.n AND b.n > 0) FROM a")
		r, qerr := s.Query(context.Background(), "SELECT a.n, (SELECT b.n FROM b WHERE b.n = a.n AND b.n > 0) FROM a")
		if qerr == nil {
			qerr = r.drain()
			r.Close()
		}
		_ = err
		if qerr == nil || !strings.Contains(qerr.Error(), phys.ErrTooManyRows) {
			t.Errorf("p%d: got %v, want %q", p, qerr, phys.ErrTooManyRows)
		}
	}
}

// tpchSource stands in for storage when building plans of the TPC-H test
// catalog: it knows the schemas and opens nothing.
type tpchSource struct{ cat *plan.MemCatalog }

func (s tpchSource) ScanSchema(spec storage.ScanSpec) (*arrow.Schema, error) {
	t, _ := s.cat.LookupTable(spec.Table)
	if t == nil {
		return nil, nferr.Queryf("no table %q", spec.Table)
	}
	var fs []arrow.Field
	for _, c := range spec.Columns {
		i := t.ColumnIndex(c)
		if i < 0 {
			return nil, nferr.Queryf("no column %q", c)
		}
		fs = append(fs, t.Schema.Field(i))
	}
	return arrow.NewSchema(fs, nil), nil
}

func (s tpchSource) OpenScan(context.Context, storage.ScanSpec, storage.ScanOptions) (storage.RecordIterator, error) {
	return nil, nferr.Unavailablef("test source opens no scan")
}

// TestBuildTPCHPlans instantiates every TPC-H plan (after a JSON round
// trip, as a worker would receive it) and closes it unopened.
func TestBuildTPCHPlans(t *testing.T) {
	src := tpchSource{plan.TPCHCatalog()}
	for q := 1; q <= 22; q++ {
		for _, p := range []int{1, 4} {
			_, pp := planTPCH(t, q, p)
			js, _ := json.Marshal(pp)
			var back phys.PhysPlan
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			exe, err := phys.Build(&back, phys.BuildOptions{Source: src})
			if err != nil {
				t.Fatalf("Q%d p%d: %v", q, p, err)
			}
			if n := exe.Root.Schema().NumFields(); n != len(pp.Names) {
				t.Errorf("Q%d: root has %d columns, %d names", q, n, len(pp.Names))
			}
			if err := exe.Root.Close(); err != nil {
				t.Errorf("Q%d: close: %v", q, err)
			}
		}
	}
}

// FuzzBuildPhysPlan feeds Build with mutated plans (a worker builds what
// a coordinator sends): errors are fine, panics and internal errors are
// not.
func FuzzBuildPhysPlan(f *testing.F) {
	// NB: small plans only: the fuzzer mutates large inputs slowly.
	for _, q := range []int{6, 14} {
		qs := bindQueryFuzz(q)
		if qs == nil {
			continue
		}
		pp, err := phys.PlanPhysical(qs.Plan, qs.Names, phys.PlanOptions{Parallelism: 2})
		if err != nil {
			continue
		}
		js, _ := json.Marshal(pp)
		f.Add(js)
	}
	// A recursive CTE and a subquery run per row: trees built per run.
	for _, text := range []string{
		"with recursive r(k) as (select 1 union select n_nationkey from r join nation on n_regionkey = k) select k from r",
		"select n_name, (select r_name from region where r_regionkey >= n_regionkey order by r_name limit 1) from nation",
	} {
		stmts, err := newTestSession().bindScript(text)
		if err != nil {
			f.Fatal(err)
		}
		qs := stmts[0].(*bind.QueryStmt)
		p, err := opt.Optimize(qs.Plan)
		if err != nil {
			f.Fatal(err)
		}
		pp, err := phys.PlanPhysical(p, qs.Names, phys.PlanOptions{Parallelism: 2})
		if err != nil {
			f.Fatal(err)
		}
		js, _ := json.Marshal(pp)
		f.Add(js)
	}
	f.Add([]byte(`{"root":{"kind":"filter","streams":1,"inputs":[{"kind":"values","streams":1,"values":{"names":["a"],"rows":[[{"kind":"literal","type":{"id":"int32"},"value":"1"}]]}}],"filter":{"kind":"column","index":7}}}`))
	f.Add([]byte(`{"root":{"kind":"hash_join","streams":2,"inputs":[{"kind":"scan","streams":2,"scan":{"spec":{"table":"nation","columns":["n_nationkey"]}}},{"kind":"scan","streams":1,"scan":{"spec":{"table":"region","columns":["r_regionkey"]}}}],"join":{"Type":"inner","LeftKeys":[0],"RightKeys":[0]}}}`))
	src := tpchSource{plan.TPCHCatalog()}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p phys.PhysPlan
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		exe, err := phys.Build(&p, phys.BuildOptions{Source: src})
		if err != nil {
			if nferr.KindOf(err) == nferr.KindInternal && strings.Contains(err.Error(), "bug") {
				t.Fatalf("build panicked: %v", err)
			}
			return
		}
		exe.Root.Close()
	})
}

// bindQueryFuzz binds and optimizes TPC-H query q without a testing.T.
func bindQueryFuzz(q int) *bind.QueryStmt {
	b, err := os.ReadFile(filepath.Join("sql", "testdata", "tpch", fmt.Sprintf("q%02d.sql", q)))
	if err != nil {
		return nil
	}
	stmts, err := newTestSession().bindScript(string(b))
	if err != nil {
		return nil
	}
	for _, st := range stmts {
		if qs, ok := st.(*bind.QueryStmt); ok {
			if p, err := opt.Optimize(qs.Plan); err == nil {
				qs.Plan = p
				return qs
			}
		}
	}
	return nil
}
