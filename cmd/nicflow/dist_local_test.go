package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nicflow/nicflow/engine/dist"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/storage"
	"github.com/nicflow/nicflow/tpch"
)

// tpchSmallGroups is tpchDir for TPC-H data written with small row groups
// (so that even SF 0.01 tables spread over several tasks of a distributed
// plan).
func tpchSmallGroups(t testing.TB, sf float64) string {
	return cachedTPCH(t, tpchData{sf: sf, smallGroups: true})
}

// adaptedQueries counts the queries distLocalAnswer saw re-planned at run
// time (dist.Adapt).
var adaptedQueries atomic.Int64

// distLocalAnswer runs a TPC-H query text (a script for Q15) through the
// distributed planner and the in-process runner.
func distLocalAnswer(t *testing.T, sess *engine.Session, text string, opts dist.DistOptions, alloc memory.Allocator) (tpch.Result, int64) {
	t.Helper()
	stmts, err := engine.SplitScript(text)
	if err != nil {
		t.Fatal(err)
	}
	var out tpch.Result
	var shuffled int64
	for k := range stmts {
		dq, err := sess.PrepareDistributed(context.Background(), text, k, opts)
		if err != nil {
			t.Fatalf("statement %d: %v", k+1, err)
		}
		if dq.Plan == nil {
			continue
		}
		res, err := dist.RunDistributedLocal(context.Background(), dq.Plan, dist.LocalDistOptions{Source: sess.DB(), Alloc: alloc})
		if err != nil {
			t.Fatalf("statement %d: %v\n%s", k+1, err, dist.ExplainDistributed(dq.Plan, nil))
		}
		shuffled += res.BytesShuffled
		if len(res.Plan.Adaptive) > 0 {
			adaptedQueries.Add(1)
			t.Logf("statement %d re-planned: %v", k+1, res.Plan.Adaptive)
		}
		out = tpch.Result{Columns: dq.Plan.Names}
		for _, rec := range res.Records {
			rows, err := engine.RowsText(rec, "")
			if err != nil {
				t.Fatal(err)
			}
			out.Rows = append(out.Rows, rows...)
			rec.Release()
		}
	}
	return out, shuffled
}

// TestDistributedPlansInProcess runs the 22 TPC-H queries through the
// distributed planner on 1, 2 and 4 simulated workers (shuffle agents on
// an in-process network) and checks every answer.
func TestDistributedPlansInProcess(t *testing.T) {
	sf := 0.01
	dir := tpchSmallGroups(t, sf)
	sess, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	// NB: with adaptive execution on (the default) and off: the static
	// plans must answer right by themselves, and the re-planned ones too.
	for _, c := range []struct {
		w     int
		waves int
	}{{1, 0}, {2, 0}, {4, 0}, {4, -1}} {
		t.Run(fmt.Sprintf("workers=%d/adaptive=%v", c.w, c.waves >= 0), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			before := adaptedQueries.Load()
			for q := 1; q <= tpch.NumQueries; q++ {
				params, _ := tpch.AnswerParams(q, sf)
				text, err := tpch.Query(q, params)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := distLocalAnswer(t, sess, text, dist.DistOptions{Workers: c.w, Parallelism: 2, AdaptiveWaves: c.waves}, mem)
				if err := tpch.CheckAnswer(q, sf, got); err != nil {
					t.Errorf("Q%d on %d workers: %v", q, c.w, err)
				}
			}
			n := adaptedQueries.Load() - before
			t.Logf("%d of %d queries re-planned at run time", n, tpch.NumQueries)
			if c.waves < 0 || c.w == 1 {
				if n > 0 {
					t.Errorf("%d queries re-planned with adaptive execution off or one worker", n)
				}
			} else if n == 0 {
				t.Errorf("no query re-planned at run time on %d workers", c.w)
			}
			if dist.DefaultHeld.Parts() != 0 {
				t.Errorf("%d held parts left after the queries", dist.DefaultHeld.Parts())
			}
		})
	}
}

// TestDistributedSharedSubplans checks both ways a shared subplan (a CTE
// read twice) runs on several workers: computed once in the stage holding
// both its readers, or, when its readers are in different stages, planned
// again at each; the answers match the embedded ones either way.
func TestDistributedSharedSubplans(t *testing.T) {
	dir := tpchSmallGroups(t, 0.01)
	sess, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, tc := range []struct {
		name, sql string
		once      bool
	}{
		{"one stage", `with t as (select l_suppkey, sum(l_quantity) q from lineitem group by l_suppkey)
			select count(*), sum(a.q) from t a, t b where a.l_suppkey = b.l_suppkey and b.q > 100`, true},
		{"two stages", `with m as (select max(o_orderkey) k from orders)
			select count(*) from lineitem where l_orderkey > (select k from m) - 1000
			union all
			select count(*) from orders where o_orderkey > (select k from m) - 2000`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := dist.DistOptions{Workers: 4, Parallelism: 2}
			dq, err := sess.PrepareDistributed(context.Background(), tc.sql, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			shared := 0
			for _, s := range dq.Plan.Stages {
				shared += len(s.Shared)
			}
			if once := shared > 0; once != tc.once {
				t.Fatalf("shared subplans in stages: %d, want computed once: %v\n%s", shared, tc.once, dist.ExplainDistributed(dq.Plan, nil))
			}
			got, _ := distLocalAnswer(t, sess, tc.sql, opts, mem)
			want, err := runQueryText(context.Background(), sess, tc.sql, true)
			if err != nil {
				t.Fatal(err)
			}
			sort.Slice(got.Rows, func(i, j int) bool { return fmt.Sprint(got.Rows[i]) < fmt.Sprint(got.Rows[j]) })
			sort.Slice(want.Rows, func(i, j int) bool { return fmt.Sprint(want.Rows[i]) < fmt.Sprint(want.Rows[j]) })
			if fmt.Sprint(got.Rows) != fmt.Sprint(want.Rows) || len(want.Rows) == 0 {
				t.Fatalf("distributed %v, embedded %v", got.Rows, want.Rows)
			}
		})
	}
}

// TestCrossStageKeyFilters runs TPC-H queries whose join and probe scan
// are in different stages on 4 simulated workers: the join's tasks send
// their parts, the merged filter reaches the scan's tasks (which wait for
// it: their builds are small), the scan drops rows with it, and the answers
// are right; with the filters' wait off the answers are right too
// (whenever the filter comes).
func TestCrossStageKeyFilters(t *testing.T) {
	sf := 0.01
	dir := tpchSmallGroups(t, sf)
	sess, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	dropped := 0
	for _, q := range []int{9, 17, 18, 20, 21} {
		params, _ := tpch.AnswerParams(q, sf)
		text, err := tpch.Query(q, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, wait := range []time.Duration{0, -1} {
			opts := dist.DistOptions{Workers: 4, Parallelism: 2, KeyFilterWait: wait}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			got, _ := distLocalAnswer(t, sess, text, opts, mem)
			mem.AssertSize(t, 0)
			if err := tpch.CheckAnswer(q, sf, got); err != nil {
				t.Errorf("Q%d (wait %v): %v", q, wait, err)
			}
		}
		// With the wait (the default): count what the filters dropped, in
		// the static plan (adaptive execution would run another, whose
		// scans and filters are not dq.Plan's).
		stmts, _ := engine.SplitScript(text)
		for k := range stmts {
			dq, err := sess.PrepareDistributed(context.Background(), text, k, dist.DistOptions{Workers: 4, Parallelism: 2, AdaptiveWaves: -1})
			if err != nil {
				t.Fatal(err)
			}
			if dq.Plan == nil || len(dq.Plan.KeyFilters) == 0 {
				continue
			}
			res, err := dist.RunDistributedLocal(context.Background(), dq.Plan, dist.LocalDistOptions{Source: sess.DB(), Analyze: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, kf := range dq.Plan.KeyFilters {
				st := res.Stats.Ops[kf.ScanStage][kf.Scan]
				if st == nil {
					t.Errorf("Q%d: no figures of scan node %d", q, kf.Scan)
					continue
				}
				for _, f := range st.KeyFilters {
					if f.Name != kf.Name {
						continue
					}
					k := f.Stats()
					t.Logf("Q%d filter %s: passed %d of %d", q, f.Name, k.Passed, k.Tested)
					if k.Tested > 0 && k.Passed < k.Tested {
						dropped++
					}
				}
			}
		}
	}
	if dropped == 0 {
		t.Fatal("no cross-stage filter dropped a row")
	}
}

// TestAdaptiveStrategyChanges runs joins whose build side is estimated
// far from its real size on 4 simulated workers: adaptive execution
// changes how the build reaches the probe (or prunes the join), and the
// answer equals the embedded one and the static plan's.
// adaptiveTables opens a session over probe (4,000 rows) and dim (20,000
// rows whose a and b are equal, so a filter on both is estimated as if they
// were independent), in small row groups. NB: probe's keys are a
// permutation of 1..4000, not in order: a probe stored in key order would
// have its build sent by range whatever its size (D72), with nothing to
// adapt.
func adaptiveTables(t *testing.T) *engine.Session {
	t.Helper()
	sess, err := engine.Open(t.TempDir(), engine.Options{Storage: storage.Options{Write: storage.WriteOptions{RowGroupRows: 500, FileRows: 2000}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	for _, q := range []string{
		`create table probe as select (i * 2671) % 4000 + 1 as k, i % 7 as v from generate_series(1, 4000) g(i)`,
		`create table dim as select i as k, i % 10 as a, i % 10 as b from generate_series(1, 20000) g(i)`,
	} {
		r, err := sess.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	return sess
}

// adaptiveAnswer runs sql with dist.RunDistributedLocal under a checked
// allocator and returns its rows and the plan that ran.
func adaptiveAnswer(t *testing.T, sess *engine.Session, sql string, o dist.DistOptions) ([][]string, *dist.DistPlan) {
	t.Helper()
	dq, err := sess.PrepareDistributed(context.Background(), sql, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	got, res, err := localAnswer(t, dq.Plan, dist.LocalDistOptions{Source: sess.DB()})
	if err != nil {
		t.Fatal(err)
	}
	return got, res.Plan
}

// localAnswer runs plan with dist.RunDistributedLocal under a checked
// allocator (o.Alloc is set) and returns its rows.
func localAnswer(t *testing.T, plan *dist.DistPlan, o dist.LocalDistOptions) ([][]string, *dist.LocalDistResult, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	o.Alloc = mem
	res, err := dist.RunDistributedLocal(context.Background(), plan, o)
	if err != nil {
		return nil, nil, err
	}
	var got [][]string
	for _, rec := range res.Records {
		rows, err := engine.RowsText(rec, "")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows...)
		rec.Release()
	}
	mem.AssertSize(t, 0)
	return got, res, nil
}

func TestAdaptiveStrategyChanges(t *testing.T) {
	sess := adaptiveTables(t)
	for _, c := range []struct {
		name, sql string
		after     string // the strategy the re-planned build must have
	}{
		// Estimated a tenth of dim (LIKE's default selectivity:
		// repartitioned with the probe), has 20 rows: broadcast.
		{"estimated large, is small", `select count(*), sum(p.v) from probe p join (select k from dim where cast(k as varchar) like '%777') d on p.k = d.k + 0`, "broadcast"},
		// Estimated a hundredth of dim (broadcast), has a tenth:
		// repartitioned.
		{"estimated small, is large", `select count(*), sum(p.v) from probe p join (select k from dim where a = 3 and b = 3) d on p.k = d.k + 0`, "hash"},
		// Empty build side of an inner join: the join is pruned.
		{"empty build", `select count(*), sum(p.v) from probe p join (select k from dim where cast(k as varchar) like '%zz%') d on p.k = d.k + 0`, "pruned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := embeddedAnswer(t, sess, c.sql)
			static, _ := distLocalAnswer(t, sess, c.sql, dist.DistOptions{Workers: 4, Parallelism: 2, AdaptiveWaves: -1}, memory.DefaultAllocator)
			got, ran := adaptiveAnswer(t, sess, c.sql, dist.DistOptions{Workers: 4, Parallelism: 2})
			changed := false
			for _, st := range ran.Adaptive {
				t.Logf("%v", st)
				changed = changed || (st.After == c.after && st.Before != st.After)
			}
			if !changed {
				t.Errorf("no build side changed to %s at run time: %v\n%s", c.after, ran.Adaptive, dist.ExplainDistributed(ran, nil))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(static.Rows) != fmt.Sprint(want) {
				t.Errorf("answers differ:\nadaptive %v\nstatic   %v\nembedded %v", got, static.Rows, want)
			}
		})
	}
}

// TestAdaptiveSkewSplit: a build side estimated small (broadcast) proves
// large and is repartitioned, and 80% of its rows have one key: the task
// receiving that key is split (the build rows spread over the new tasks, the
// probe rows of its partitions copied to each), and the answer is the
// embedded one.
func TestAdaptiveSkewSplit(t *testing.T) {
	sess := adaptiveTables(t)
	// 2,000 build rows (estimated 200): 1,600 of key 1, 400 of distinct
	// keys; probe keys 1..4000 with every third row's key 1 as well.
	sql := `select count(*), sum(p.v), sum(d.k) from (select case when k % 3 = 0 then 1 else k end as k, v from probe) p
		join (select case when k < 16000 then 1 else k % 4000 end as k from dim where a = 3 and b = 3) d on p.k = d.k + 0`
	want := embeddedAnswer(t, sess, sql)
	for _, skew := range []int64{500, -1} {
		o := dist.DistOptions{Workers: 4, Parallelism: 2, SkewRows: skew}
		if skew < 0 {
			o.SkewFactor = -1
		}
		got, ran := adaptiveAnswer(t, sess, sql, o)
		split := ""
		coalesced := false
		for _, st := range ran.Adaptive {
			t.Logf("%v", st)
			if st.Split != "" {
				split = st.Split
			}
			coalesced = coalesced || st.Coalesce != nil
		}
		plan := dist.ExplainDistributed(ran, nil)
		switch {
		case skew > 0 && (split == "" || !strings.Contains(plan, "spread over tasks") || !strings.Contains(plan, "copied to tasks")):
			t.Errorf("no task split:\n%s", plan)
		case skew > 0 && coalesced:
			// NB: the join's 6,000 rows are under the coalescing target;
			// its split stage must keep its tasks all the same.
			t.Errorf("a split stage was coalesced:\n%s", plan)
		case skew < 0 && split != "":
			t.Errorf("split with skew splits off: %s", split)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("skew rows %d: answers differ:\nadaptive %v\nembedded %v\n%s", skew, got, want, plan)
		}
	}
}

// embeddedAnswer runs a query in the session (one process, no stages).
func embeddedAnswer(t *testing.T, sess *engine.Session, text string) [][]string {
	t.Helper()
	r, err := sess.Query(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out [][]string
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			return out
		}
		rows, err := engine.RowsText(rec, "")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
}

// TestAdaptiveCoalesce: a build side estimated small (broadcast) proves
// larger and is repartitioned with the probe, but both sides hold a few
// thousand rows: the join stage runs as one task (or two or three under a
// lower SET adaptive_coalesce_rows) instead of one per worker, EXPLAIN ANALYZE
// says so and shows that many task reports, and the answer is the
// embedded one; with SET adaptive_coalesce_rows = -1 nothing coalesces.
func TestAdaptiveCoalesce(t *testing.T) {
	sess := adaptiveTables(t)
	// 2,000 build rows (estimated 200) and 4,000 probe rows: at most
	// 6,000 rows reach the join's 4 planned tasks (about 1,500 each).
	sql := `select count(*), sum(p.v), sum(d.k) from probe p join (select k from dim where a = 3 and b = 3) d on p.k = d.k + 0`
	want := embeddedAnswer(t, sess, sql)
	set := func(v string) {
		r, err := sess.Query(context.Background(), "SET adaptive_coalesce_rows = "+v)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	defer set("default")
	for _, c := range []struct {
		set      string
		min, max int // the join stage's tasks (0: not coalesced)
	}{{"default", 1, 1}, {"3000", 2, 3}, {"-1", 0, 0}} {
		set(c.set)
		o := dist.DistOptions{Workers: 4, Parallelism: 2}
		got, ran := adaptiveAnswer(t, sess, sql, o)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("adaptive_coalesce_rows %s: answers differ:\nadaptive %v\nembedded %v\n%s", c.set, got, want, dist.ExplainDistributed(ran, nil))
		}
		var steps []dist.CoalesceStep
		for _, st := range ran.Adaptive {
			t.Logf("%s: %v", c.set, st)
			if st.Coalesce != nil {
				steps = append(steps, *st.Coalesce)
			}
		}
		if c.max == 0 {
			if len(steps) > 0 {
				t.Errorf("coalesced with adaptive_coalesce_rows = -1: %v", steps)
			}
			continue
		}
		if len(steps) != 1 || steps[0].From != 4 || steps[0].To < c.min || steps[0].To > c.max || steps[0].Rows > 6000 || steps[0].Rows < 4000 || steps[0].Partitions != 8 {
			t.Fatalf("adaptive_coalesce_rows %s: coalesced %v, want one stage of 4 tasks -> %d..%d (at most 6000 rows over 8 partitions)\n%s", c.set, steps, c.min, c.max, dist.ExplainDistributed(ran, nil))
		}
		tasks := steps[0].To
		// EXPLAIN ANALYZE of the same statement: the step, and one task
		// report per coalesced task of the stage.
		dq, err := sess.PrepareDistributed(context.Background(), sql, 0, o)
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		res, err := dist.RunDistributedLocal(context.Background(), dq.Plan, dist.LocalDistOptions{Source: sess.DB(), Alloc: mem, Analyze: true})
		if err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
		text := dist.ExplainDistributed(res.Plan, res.Stats)
		line := fmt.Sprintf("Adaptive wave 1: stage %d inputs %d rows over 8 partitions: coalesced 4 tasks -> %d", steps[0].Stage, steps[0].Rows, tasks)
		head := fmt.Sprintf("Stage %d: %d task(s) (coalesced from 4), output", steps[0].Stage, tasks)
		if !strings.Contains(text, line) || !strings.Contains(text, head) {
			t.Errorf("EXPLAIN ANALYZE lacks %q or %q:\n%s", line, head, text)
		}
		if n := len(res.Stats.Tasks[steps[0].Stage]); n != tasks {
			t.Errorf("stage %d reported %d tasks, want %d:\n%s", steps[0].Stage, n, tasks, text)
		}
		// The wave that ran first is shown too, each of its tasks with
		// its figures.
		if len(res.Plan.Waves) != 1 || res.Plan.Waves[0].Stats == nil || !strings.Contains(text, "Wave 1 (ran before the stages above, ") {
			t.Fatalf("EXPLAIN ANALYZE lacks the wave that ran first:\n%s", text)
		}
		for _, s := range res.Plan.Waves[0].Plan.Stages {
			if n := len(res.Plan.Waves[0].Stats.Tasks[s.ID]); n != s.Tasks || !strings.Contains(text, fmt.Sprintf("Stage %d: ", s.ID)) {
				t.Errorf("wave stage %d: %d task reports of %d, or not shown:\n%s", s.ID, n, s.Tasks, text)
			}
		}
	}
}

// TestAdaptiveHeldSpill: a held build side larger than its node's held
// memory (4 KiB here) writes the rest of its rows to spill files; the
// re-planned query answers as embedded, every file is gone at the end and
// nothing leaks. With spilling off the wave fails with a resource error
// and the static plan answers instead.
func TestAdaptiveHeldSpill(t *testing.T) {
	sess := adaptiveTables(t)
	sql := `select count(*), sum(p.v), sum(d.k) from probe p join (select k from dim where a = 3 and b = 3) d on p.k = d.k + 0`
	want := embeddedAnswer(t, sess, sql)
	for _, spillDir := range []string{t.TempDir(), "off"} {
		dq, err := sess.PrepareDistributed(context.Background(), sql, 0, dist.DistOptions{Workers: 4, Parallelism: 2})
		if err != nil {
			t.Fatal(err)
		}
		store := dist.NewHeldStore(4 << 10)
		got, res, err := localAnswer(t, dq.Plan, dist.LocalDistOptions{Source: sess.DB(), Held: store, SpillDir: spillDir, BatchSize: 256})
		if err != nil {
			t.Fatalf("spill dir %s: %v", spillDir, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("spill dir %s: answers differ:\nadaptive %v\nembedded %v", spillDir, got, want)
		}
		replanned := false
		for _, st := range res.Plan.Adaptive {
			replanned = replanned || st.Before != st.After
		}
		if store.Used() != 0 || store.OnDisk() != 0 || store.Parts() != 0 {
			t.Errorf("spill dir %s: %d bytes in memory, %d on disk, %d parts left", spillDir, store.Used(), store.OnDisk(), store.Parts())
		}
		if spillDir == "off" {
			if store.Spilled() != 0 || replanned {
				t.Errorf("spilling off: %d bytes spilled, re-planned %v (want the static plan)", store.Spilled(), replanned)
			}
			continue
		}
		if store.Spilled() == 0 || !replanned {
			t.Errorf("no held rows spilled (%d bytes) or not re-planned (%v)", store.Spilled(), res.Plan.Adaptive)
		}
		var files []string
		filepath.WalkDir(spillDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		if len(files) > 0 {
			t.Errorf("spill files left: %v", files)
		}
	}
}

// TestSegmentedRangeAggregates: an aggregate grouped on lineitem's order
// key over a scan split by value range on it runs segmented in each task
// (no exchange between the task's streams; groups emitted a row group at a
// time), and answers as embedded; with segmented_agg disabled it does not.
func TestSegmentedRangeAggregates(t *testing.T) {
	// NB: SF 0.1 in 20,000-row groups (also cluster_sql_test's): lineitem
	// has 30 row groups, enough for a range split over 3 and 4 workers.
	sf := 0.1
	dir := tpchSmallGroups(t, sf)
	sess, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	const own = "select l_orderkey, sum(l_quantity) as q, count(*) as n from lineitem group by l_orderkey order by q desc, l_orderkey limit 25"
	ref, err := runQueryText(context.Background(), sess, own, true)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := tpch.AnswerParams(18, sf)
	q18, err := tpch.Query(18, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{3, 4} {
		opts := dist.DistOptions{Workers: w, Parallelism: 2, AdaptiveWaves: -1}
		for _, c := range []struct {
			name, text string
		}{{"own", own}, {"Q18", q18}} {
			dq, err := sess.PrepareDistributed(context.Background(), c.text, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			plan := dist.ExplainDistributed(dq.Plan, nil)
			if !strings.Contains(plan, "split by l_orderkey range") || !strings.Contains(plan, "HashAggregate segmented group=[lineitem.l_orderkey]") {
				t.Errorf("%s on %d workers: no segmented aggregate over a range split:\n%s", c.name, w, plan)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			got, _ := distLocalAnswer(t, sess, c.text, opts, mem)
			mem.AssertSize(t, 0)
			if c.name == "Q18" {
				if err := tpch.CheckAnswer(18, sf, got); err != nil {
					t.Errorf("Q18 on %d workers: %v", w, err)
				}
			} else if fmt.Sprint(got.Rows) != fmt.Sprint(ref.Rows) {
				t.Errorf("%s on %d workers:\n%v\nembedded:\n%v", c.name, w, got.Rows, ref.Rows)
			}
		}
	}
	if _, err := sess.Query(context.Background(), "set disabled_rules = 'segmented_agg'"); err != nil {
		t.Fatal(err)
	}
	dq, err := sess.PrepareDistributed(context.Background(), own, 0, dist.DistOptions{Workers: 4, Parallelism: 2, AdaptiveWaves: -1})
	if err != nil {
		t.Fatal(err)
	}
	if plan := dist.ExplainDistributed(dq.Plan, nil); strings.Contains(plan, "segmented") {
		t.Errorf("segmented_agg disabled, yet:\n%s", plan)
	}
}
