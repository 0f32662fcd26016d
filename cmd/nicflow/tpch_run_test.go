package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"
	"github.com/nicflow/nicflow/engine/phys"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

// tpchDirs caches generated TPC-H databases for the tests of this package
// (generation dominates their time); TestMain removes them.
var tpchDirs struct {
	sync.Mutex
	dirs map[tpchData]string
}

// tpchData is a cached database: its scale factor, and whether it has small
// row groups (tpchSmallGroups).
type tpchData struct {
	sf          float64
	smallGroups bool
}

// tpchDir returns a TPC-H database at scale factor sf, generated on first
// use.
func tpchDir(t testing.TB, sf float64) string { return cachedTPCH(t, tpchData{sf: sf}) }

func cachedTPCH(t testing.TB, d tpchData) string {
	t.Helper()
	tpchDirs.Lock()
	defer tpchDirs.Unlock()
	if dir, ok := tpchDirs.dirs[d]; ok {
		return dir
	}
	pattern := fmt.Sprintf("nicflow-tpch-sf%g-", d.sf)
	opts := tpch.GenOptions{SF: d.sf, Format: tpch.FormatParquet}
	if d.smallGroups {
		// NB: 20,000-row groups: lineitem SF 0.1 has 30 of them, orders 8,
		// customer and part 1 (the replicated small tables).
		pattern = fmt.Sprintf("nicflow-tpch-rg-sf%g-", d.sf)
		opts.Parquet = tpch.ParquetOptions{RowGroupRows: 20_000, RowGroupsPerFile: 4}
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir = dir
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := runTpchGen(context.Background(), opts, &bytes.Buffer{}, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if tpchDirs.dirs == nil {
		tpchDirs.dirs = map[tpchData]string{}
	}
	tpchDirs.dirs[d] = dir
	return dir
}

func TestMain(m *testing.M) {
	if os.Getenv(testNodeEnv) == "1" {
		// A cluster node of a test (cluster_sql_test.go): this binary runs
		// as `nicflow <role> <flags>`.
		main()
		os.Exit(0)
	}
	code := m.Run()
	for _, d := range tpchDirs.dirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// TestTPCHAnswers generates SF 0.01 and SF 0.1 and runs the 22 queries
// through an embedded session, checking every answer; SF 0.1 runs with
// parallelism 1 and 3 and a small batch size at SF 0.01.
func TestTPCHAnswers(t *testing.T) {
	for _, tc := range []struct {
		sf   float64
		opts engine.Options
	}{
		{0.01, engine.Options{Parallelism: 2, BatchSize: 100}},
		{0.1, engine.Options{Parallelism: 3}},
		{0.1, engine.Options{Parallelism: 1, MemoryLimit: 512 << 20}},
	} {
		t.Run(fmt.Sprintf("sf%g-p%d", tc.sf, tc.opts.Parallelism), func(t *testing.T) {
			dir := tpchDir(t, tc.sf)
			sess, err := engine.Open(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			for q := 1; q <= tpch.NumQueries; q++ {
				r := runTPCHQuery(context.Background(), sessionRunner(sess), q, tc.sf, 1, true)
				if r.err != nil {
					t.Errorf("Q%d: %v", q, r.err)
					continue
				}
				if r.verdict != "ok" {
					t.Errorf("Q%d: %s", q, r.verdict)
				}
			}
		})
	}
}

// TestTPCHRulesDisabled runs the 22 queries at SF 0.01 with each optimizer
// rule that may be disabled turned off in turn (SET disabled_rules): the
// answers must not depend on any of them. Not pushdown: without it the
// comma joins of Q2, Q5, Q7-Q9 stay cross products (10^11 rows at SF 0.01).
func TestTPCHRulesDisabled(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := tpchDir(t, 0.01)
	var names []string
	for _, r := range opt.Rules {
		if r.Required || r.Name == opt.RulePushdown {
			continue
		}
		names = append(names, r.Name)
	}
	// Physical rules too (phys.Rules): each is an optimization only.
	names = append(names, phys.RuleNames()...)
	for _, name := range names {
		t.Run("no-"+name, func(t *testing.T) {
			sess, err := engine.Open(dir, engine.Options{Parallelism: 2, DisabledRules: []string{name}})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			for q := 1; q <= tpch.NumQueries; q++ {
				res := runTPCHQuery(context.Background(), sessionRunner(sess), q, 0.01, 1, true)
				if res.err != nil {
					t.Errorf("Q%d: %v", q, res.err)
				} else if res.verdict != "ok" {
					t.Errorf("Q%d: %s", q, res.verdict)
				}
			}
		})
	}
}

func TestTpchRunCommand(t *testing.T) {
	dir := tpchDir(t, 0.01)
	var out, errb bytes.Buffer
	err := runTpchRun(context.Background(), tpchRunFlags{dir: dir, queries: "1,6,13-14", runs: 2, verify: true, format: formatTable}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	s := out.String()
	for _, want := range []string{"TPC-H SF 0.01, 4 queries", "Q1 ", "Q6 ", "Q13 ", "Q14 ", "total", " ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Q2 ") {
		t.Errorf("ran a query not asked for:\n%s", s)
	}
	out.Reset()
	if err := runTpchRun(context.Background(), tpchRunFlags{dir: dir, queries: "6", runs: 1, format: formatCSV}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[0] != "query,rows,min_ms,median_ms,cpu_ms" || !strings.HasPrefix(lines[1], "Q6,1,") || !strings.HasPrefix(lines[2], "total,1,") {
		t.Errorf("csv output:\n%s", out.String())
	}
	for _, tc := range []struct {
		f    tpchRunFlags
		want string
	}{
		{tpchRunFlags{queries: "1", runs: 1, format: formatTable}, "--dir is required"},
		{tpchRunFlags{dir: dir, queries: "0-3", runs: 1, format: formatTable}, "--queries"},
		{tpchRunFlags{dir: dir, queries: "23", runs: 1, format: formatTable}, "--queries"},
		{tpchRunFlags{dir: dir, queries: "5-2", runs: 1, format: formatTable}, "--queries"},
		{tpchRunFlags{dir: dir, queries: "1", runs: 0, format: formatTable}, "--runs"},
		{tpchRunFlags{dir: dir, queries: "1", runs: 1, format: formatJSON}, "--format"},
		{tpchRunFlags{dir: t.TempDir(), queries: "1", runs: 1, format: formatTable}, "tpch-gen.json"},
	} {
		err := runTpchRun(context.Background(), tc.f, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.f, err, tc.want)
		}
	}
}

func TestParseQueryList(t *testing.T) {
	for in, want := range map[string]string{
		"1-22":  fmt.Sprint([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}),
		"3,1,3": "[1 3]", "2-4,9": "[2 3 4 9]", " 7 ": "[7]",
	} {
		got, err := parseQueryList(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: got %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ",", "x", "0", "1-", "22-23", "4-1"} {
		if _, err := parseQueryList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestSQLCommand(t *testing.T) {
	dir := tpchDir(t, 0.01)
	run := func(format string, args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := runSQL(context.Background(), sqlFlags{dir: dir, format: format}, args, nil, &out, &errb)
		return out.String(), errb.String(), err
	}
	out, _, err := run(formatTable, "select n_nationkey, n_name, n_nationkey * 1.5 as x from nation where n_nationkey < 2 order by 1; select NULL as n, date '1995-01-02' as d")
	if err != nil {
		t.Fatal(err)
	}
	want := ` n_nationkey | n_name    | x
-------------+-----------+-----
           0 | ALGERIA   | 0.0
           1 | ARGENTINA | 1.5
(2 rows)

 n    | d
------+------------
 NULL | 1995-01-02
(1 row)
`
	if out != want {
		t.Errorf("table output:\n%s\nwant:\n%s", out, want)
	}
	out, _, err = run(formatCSV, `select 'a,b' as s, '' as e, NULL as n, 2.50 as d`)
	if err != nil || out != "s,e,n,d\n\"a,b\",\"\",,2.50\n" {
		t.Errorf("csv output %q, %v", out, err)
	}
	out, _, err = run(formatJSON, `select 1 as i, 'x"y' as s, NULL as n, 0.10 as d, true as b, date '2000-01-01' as t; select 2 as i`)
	if err != nil || out != "{\"i\":1,\"s\":\"x\\\"y\",\"n\":null,\"d\":0.10,\"b\":true,\"t\":\"2000-01-01\"}\n{\"i\":2}\n" {
		t.Errorf("json output %q, %v", out, err)
	}
	out, errOut, err := run(formatCSV, "create view v as select 1 as one; select * from v; drop view v")
	if err != nil || out != "one\n1\n" || errOut != "CREATE VIEW\nDROP VIEW\n" {
		t.Errorf("statuses: out %q err %q, %v", out, errOut, err)
	}
	_, _, err = run(formatTable, "select nope from nation")
	if nferr.KindOf(err) != nferr.KindQuery || exitCodeFor(err) != 2 {
		t.Errorf("bad query: %v (kind %v)", err, nferr.KindOf(err))
	}
	var out2, errb bytes.Buffer
	err = runSQL(context.Background(), sqlFlags{dir: t.TempDir(), format: formatTable}, []string{"select 1"}, nil, &out2, &errb)
	if err == nil || !strings.Contains(err.Error(), "not a nicflow database") {
		t.Errorf("missing database: %v", err)
	}
	err = runSQL(context.Background(), sqlFlags{dir: dir, format: "xml"}, []string{"select 1"}, nil, &out2, &errb)
	if err == nil || !strings.Contains(err.Error(), "--format") {
		t.Errorf("bad format: %v", err)
	}
	err = runSQL(context.Background(), sqlFlags{dir: dir, format: formatTable, memoryLimit: "1KiB"}, []string{"select l_orderkey, count(*) from lineitem group by 1"}, nil, &out2, &errb)
	if nferr.KindOf(err) != nferr.KindResource || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Errorf("tiny memory limit: %v", err)
	}
}

func TestStatementComplete(t *testing.T) {
	for text, want := range map[string]bool{
		"select 1;":                   true,
		"select 1":                    false,
		"select ';'":                  false,
		"select ';';":                 true,
		"select 1; -- done":           true,
		"select 1 -- ;":               false,
		"select /* ; */ 1":            false,
		"select \"a;b\" from t;\n  ":  true,
		"select 'it''s';":             true,
		"select 'open;\n":             false,
		"/* a /* nested */ ; */ x ;":  true,
		"/* a /* nested */ ; */ x":    false,
		"":                            false,
		"create view v as select 1;;": true,
	} {
		if got := statementComplete(text); got != want {
			t.Errorf("%q: got %v, want %v", text, got, want)
		}
	}
}

// BenchmarkTPCH runs the 22 queries on TPC-H data and verifies every
// answer: the SF 1 check of the official answers is this benchmark
// (`NICFLOW_BENCH_SF=1 go test -run '^$' -bench TPCH -benchtime 1x
// ./cmd/nicflow`), too long for `go test`. NICFLOW_BENCH_DIR points it at
// data already generated (nicflow tpch gen); otherwise it generates
// NICFLOW_BENCH_SF (default 0.1) into a temp dir first. It reports each
// query's milliseconds per run and the total.
func BenchmarkTPCH(b *testing.B) {
	sf := 0.1
	if s := os.Getenv("NICFLOW_BENCH_SF"); s != "" {
		if _, err := fmt.Sscan(s, &sf); err != nil {
			b.Fatalf("NICFLOW_BENCH_SF=%q: %v", s, err)
		}
	}
	dir := os.Getenv("NICFLOW_BENCH_DIR")
	if dir == "" {
		dir = tpchDir(b, sf)
	} else {
		var err error
		if sf, err = tpch.GeneratedSF(dir); err != nil {
			b.Fatal(err)
		}
	}
	sess, err := engine.Open(dir, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	verify := tpch.HasAnswers(sf)
	per := make([]float64, tpch.NumQueries+1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for q := 1; q <= tpch.NumQueries; q++ {
			r := runTPCHQuery(context.Background(), sessionRunner(sess), q, sf, 1, verify)
			if r.err != nil {
				b.Fatalf("Q%d: %v", q, r.err)
			}
			if verify && r.verdict != "ok" {
				b.Fatalf("Q%d: %s", q, r.verdict)
			}
			per[q] += float64(r.times[0].Microseconds()) / 1000
		}
	}
	total := 0.0
	for q := 1; q <= tpch.NumQueries; q++ {
		b.ReportMetric(per[q]/float64(b.N), fmt.Sprintf("Q%d-ms", q))
		total += per[q]
	}
	b.ReportMetric(total/float64(b.N), "total-ms")
}

// TestSQLSpills runs queries whose every stateful operator must spill
// (sort, window, DISTINCT, count(DISTINCT), join and aggregate) at SF 0.01
// under a 256 KiB budget, checks their answers against the unlimited run,
// that EXPLAIN ANALYZE names the operators that spilled, and that no spill
// file is left behind.
func TestSQLSpills(t *testing.T) {
	dir := tpchDir(t, 0.01)
	spillDir := t.TempDir()
	run := func(limit, q string) (string, error) {
		var out, errb bytes.Buffer
		f := sqlFlags{dir: dir, format: formatCSV, memoryLimit: limit, parallel: 2, spill: spillFlags{dir: spillDir}}
		err := runSQL(context.Background(), f, []string{q}, nil, &out, &errb)
		return out.String(), err
	}
	for _, q := range []string{
		"select l_orderkey, l_linenumber, l_comment from lineitem order by l_comment desc, l_orderkey, l_linenumber",
		"select l_suppkey, l_orderkey, l_linenumber, rank() over (partition by l_suppkey order by l_extendedprice desc, l_orderkey, l_linenumber) r, sum(l_quantity) over (partition by l_suppkey) s from lineitem order by 1, 2, 3",
		"select count(*), sum(l_orderkey) from (select distinct l_orderkey, l_comment from lineitem) t",
		"select l_returnflag, count(distinct l_comment), max(distinct l_comment) from lineitem group by 1 order by 1",
		"select o_orderpriority, count(*), sum(l_extendedprice) from orders join lineitem on o_orderkey = l_orderkey group by 1 order by 1",
	} {
		want, err := run("", q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got, err := run("256KiB", q)
		if err != nil {
			t.Fatalf("%s under 256 KiB: %v", q, err)
		}
		if got != want {
			t.Errorf("%s: %d bytes of answer under 256 KiB, %d without a limit; they differ", q, len(got), len(want))
		}
		plan, err := run("256KiB", "explain analyze "+q)
		if err != nil || !strings.Contains(plan, "spilled") {
			t.Errorf("EXPLAIN ANALYZE %s shows no spilled operator (%v):\n%s", q, err, plan)
		}
		if ents, _ := os.ReadDir(spillDir); len(ents) != 0 {
			t.Fatalf("%s: %d entries left in the spill directory", q, len(ents))
		}
	}
}
