package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/emutest"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

// The cluster SQL tests run real clusters: every node is a process (this
// test binary re-executed as `nicflow <role>`, see TestMain), with real
// sockets, gossip and mutual TLS, through cluster.StartLocal, exactly as
// `nicflow cluster local` runs them.

// testNodeEnv makes a re-executed test binary run nicflow's main.
const testNodeEnv = "NICFLOW_TEST_MAIN"

// copyTPCH copies a generated TPC-H directory (catalog and Parquet files)
// so that a cluster can own it (its coordinator holds the catalog lock and
// records the placement in it).
func copyTPCH(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "catalog.lock" || strings.HasPrefix(rel, "cluster") {
			return nil
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// localSQLCluster starts a cluster on dir (which it owns) and returns it
// with a SQL client.
func localSQLCluster(t testing.TB, dir string, workers, storageNodes, replication int, workerArgs ...string) (*cluster.LocalCluster, *clusterSQL) {
	t.Helper()
	return localSQLClusterWith(t, dir, workers, storageNodes, replication, nil, workerArgs...)
}

// localSQLClusterWith is localSQLCluster with extra coordinator flags.
func localSQLClusterWith(t testing.TB, dir string, workers, storageNodes, replication int, coordArgs []string, workerArgs ...string) (*cluster.LocalCluster, *clusterSQL) {
	t.Helper()
	emutest.Skip(t, "the cluster's node processes")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc, err := cluster.StartLocal(ctx, cluster.LocalOptions{
		Dir: dir, Workers: workers, Storage: storageNodes, Replication: replication,
		Exe: exe, Env: []string{testNodeEnv + "=1"},
		Extra: map[cluster.Role][]string{cluster.RoleWorker: append([]string{"--cores", "2"}, workerArgs...), cluster.RoleCoordinator: coordArgs},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Stop() })
	if storageNodes > 0 {
		if err := placeTables(ctx, lc, replication, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := dialClusterSQL(lc.CoordinatorAddr, lc.KeyDir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	return lc, cs
}

// checkTPCHOnCluster runs the 22 queries and checks every answer.
func checkTPCHOnCluster(t *testing.T, cs *clusterSQL, sf float64, what string) {
	t.Helper()
	for q := 1; q <= tpch.NumQueries; q++ {
		r := runTPCHQuery(context.Background(), cs.runQueryText, q, sf, 1, true)
		if r.err != nil {
			t.Errorf("%s Q%d: %v", what, q, r.err)
			continue
		}
		if r.verdict != "ok" {
			t.Errorf("%s Q%d: %s", what, q, r.verdict)
		}
	}
}

// TestClusterTPCH runs the 22 TPC-H queries on clusters of processes and
// checks every answer at SF 0.1: on 1, 2 and 4 workers with 1 and 2
// storage nodes (small row groups, so that scans spread over every
// worker), and with the default row groups on 4 workers and 2 storage
// nodes with every file on both. Workers read the storage nodes' files themselves
// (they share this machine) except in the configurations marked flight,
// where every scan crosses Flight (with compressed scans and shuffles in
// two of them).
func TestClusterTPCH(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cluster runs take tens of seconds")
	}
	// NB: 20,000-row groups, so that lineitem (30 groups) and orders (8)
	// spread over every worker.
	small := tpchSmallGroups(t, 0.1)
	for _, c := range []struct {
		workers, storage, repl int
		flight                 bool
		codecs                 []string
	}{{1, 1, 1, false, nil}, {2, 1, 1, true, nil}, {4, 1, 1, false, nil}, {1, 2, 1, false, nil},
		{2, 2, 2, true, []string{"--scan-codec", "zstd", "--shuffle-codec", "s2"}}, {4, 2, 1, false, nil}} {
		name := fmt.Sprintf("sf0.1/workers=%d/storage=%d/replication=%d", c.workers, c.storage, c.repl)
		var args []string
		if c.flight {
			name += "/flight"
			args = []string{"--no-local-reads"}
		}
		if c.codecs != nil {
			name += "/compressed"
			args = append(args, c.codecs...)
		}
		t.Run(name, func(t *testing.T) {
			_, cs := localSQLCluster(t, copyTPCH(t, small), c.workers, c.storage, c.repl, args...)
			checkTPCHOnCluster(t, cs, 0.1, name)
			checkLocalReads(t, cs, !c.flight)
			checkRangeSplit(t, cs, c.workers > 1)
			if c.workers > 1 {
				checkCrossStageFilters(t, cs)
			}
		})
	}
	t.Run("sf0.1/default-row-groups/workers=4/storage=2/replication=2/flight/lz4", func(t *testing.T) {
		_, cs := localSQLCluster(t, copyTPCH(t, tpchDir(t, 0.1)), 4, 2, 2, "--no-local-reads", "--scan-codec", "lz4", "--shuffle-codec", "zstd")
		checkTPCHOnCluster(t, cs, 0.1, "SF 0.1")
	})
}

// checkLocalReads checks from EXPLAIN ANALYZE whether the workers read the
// storage nodes' files themselves (they share this machine) or over Flight.
func checkLocalReads(t *testing.T, cs *clusterSQL, want bool) {
	t.Helper()
	text := scriptOutput(t, cs, "explain analyze select count(*) from lineitem where l_quantity < 10")
	if got := strings.Contains(text, "read locally"); got != want {
		t.Errorf("workers read locally: %v, want %v; EXPLAIN ANALYZE:\n%s", got, want, text)
	}
}

// scriptOutput runs a script on the cluster and returns its CSV output.
func scriptOutput(t *testing.T, cs *clusterSQL, script string) string {
	t.Helper()
	var out bytes.Buffer
	if err := cs.runScript(context.Background(), script, formatCSV, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkRangeSplit checks from EXPLAIN that a join of orders and lineitem
// on the order key (both stored in key order) runs without an exchange,
// both scans split by key range, when there are several workers.
func checkRangeSplit(t *testing.T, cs *clusterSQL, want bool) {
	t.Helper()
	text := scriptOutput(t, cs, "explain select o_orderpriority, count(*) from orders, lineitem where o_orderkey = l_orderkey group by o_orderpriority")
	got := strings.Contains(text, "split by o_orderkey range") && strings.Contains(text, "split by l_orderkey range") && !strings.Contains(text, "hash [orders.o_orderkey]")
	if got != want {
		t.Errorf("orders and lineitem split by key range: %v, want %v; EXPLAIN:\n%s", got, want, text)
	}
	// A build side that is not split by the order key (orders joined to
	// customer on the customer key first) goes by range to the lineitem
	// scan's tasks (D72), and the answer is the embedded one.
	const q = "select c_mktsegment, count(*), sum(l_quantity) from lineitem, orders, customer where l_orderkey = o_orderkey and o_custkey = c_custkey and o_orderdate < date '1993-01-01' group by c_mktsegment order by 1"
	text = scriptOutput(t, cs, "explain "+q)
	if got := strings.Contains(text, "range [orders.o_orderkey]"); got != want {
		t.Errorf("build side sent by range: %v, want %v; EXPLAIN:\n%s", got, want, text)
	}
	if got, wantRows := scriptOutput(t, cs, q), scriptOutput(t, cs, "set disabled_rules = 'range_build'; "+q); got != wantRows {
		t.Errorf("%s: %s, with the build not sent by range %s", q, got, wantRows)
	}
}

// longQuery runs for minutes on SF 0.01 (a nested-loop join of lineitem
// with itself): something to cancel or to kill a node under.
const longQuery = "select count(*) from lineitem a, lineitem b where a.l_extendedprice < b.l_extendedprice - 100000.0"

// runningTasks reads a node's running tasks from its admin /status.
func runningTasks(t *testing.T, info cluster.NodeInfo) int {
	t.Helper()
	resp, err := http.Get("http://" + info.AdminAddr + "/status")
	if err != nil {
		t.Fatalf("status of %s: %v", info.ID, err)
	}
	defer resp.Body.Close()
	var st cluster.NodeStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("status of %s: %v", info.ID, err)
	}
	return len(st.Tasks)
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterSQLBehaviour checks what a cluster does besides answering:
// statements it refuses, EXPLAIN, keys, client cancellation, and a worker
// and a storage node killed mid-query.
func TestClusterSQLBehaviour(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cluster runs take tens of seconds")
	}
	dir := copyTPCH(t, tpchSmallGroups(t, 0.01))
	lc, cs := localSQLCluster(t, dir, 2, 2, 2)
	ctx := context.Background()
	run := func(sql string) (string, error) {
		var out, errb strings.Builder
		err := cs.runScript(ctx, sql, formatCSV, &out, &errb)
		return out.String() + errb.String(), err
	}

	t.Run("statements", func(t *testing.T) {
		out, err := run("select n_name from nation where n_nationkey < 3 order by 1")
		if err != nil || out != "n_name\nALGERIA\nARGENTINA\nBRAZIL\n" {
			t.Fatalf("query: %q, %v", out, err)
		}
		if _, err := run("set parallelism = 1"); !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "not supported on a cluster") {
			t.Errorf("set parallelism: %v", err)
		}
		// Views persist on the coordinator, as embedded.
		out, err = run("create view v as select n_name from nation where n_regionkey = 0; select count(*) from v")
		if err != nil || !strings.Contains(out, "CREATE VIEW") || !strings.Contains(out, "\n5\n") {
			t.Errorf("views across a script: %q, %v", out, err)
		}
		if out, err := run("select count(*) from v; drop view v"); err != nil || !strings.Contains(out, "\n5\n") {
			t.Errorf("a view in the next script: %q, %v", out, err)
		}
		if _, err := run("select count(*) from v"); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("a dropped view: %v", err)
		}
		if _, err := run("selec 1"); !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("syntax error: %v", err)
		}
		out, err = run("explain select l_returnflag, count(*) from lineitem group by 1")
		if err != nil || !strings.Contains(out, "Distributed plan") || !strings.Contains(out, "Stage 1: 2 task(s), output gather to stage 2") {
			t.Errorf("explain: %v\n%s", err, out)
		}
		out, err = run("explain analyze select l_returnflag, count(*) from lineitem group by 1")
		if err != nil || !strings.Contains(out, "on worker-1") || !strings.Contains(out, "on worker-2") || !strings.Contains(out, "shuffled") {
			t.Errorf("explain analyze: %v\n%s", err, out)
		}
	})

	t.Run("dml", func(t *testing.T) {
		// Statements that write run on the coordinator; queries place the
		// new files on the storage nodes, and the nodes drop the files
		// the coordinator no longer has.
		script := `create table acct (id integer primary key, owner varchar not null, cents bigint check (cents >= 0));
insert into acct values (1, 'ann', 100), (2, 'bob', 250), (3, 'cy', 0);
select sum(cents) from acct;
update acct set cents = cents + 50 where id <> 2;
select id, cents from acct order by id;
delete from acct where owner = 'bob';
select count(*), sum(cents) from acct`
		out, err := run(script)
		// (statuses go to stderr, after the results on stdout)
		want := "sum\n350\n\nid,cents\n1,150\n2,250\n3,50\n\ncount,sum\n2,200\nCREATE TABLE\nINSERT 0 3\nUPDATE 2\nDELETE 1\n"
		if err != nil || out != want {
			t.Fatalf("dml script:\n%s\nwant:\n%s\nerr: %v", out, want, err)
		}
		if _, err := run("insert into acct values (1, 'dup', 1)"); !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "acct") {
			t.Errorf("duplicate key: %v", err)
		}
		if out, err := run("update acct set cents = -1 where id = 1 returning id"); !nferr.Is(err, nferr.KindData) {
			t.Errorf("check violated: %q %v", out, err)
		}
		if out, err := run("insert into acct values (4, 'dee', 7) returning id, cents * 2 as twice"); err != nil || out != "id,twice\n4,14\n" {
			t.Errorf("returning: %q %v", out, err)
		}
		// Every storage node holds only the table's current files.
		current := func() int {
			var files int
			for _, id := range []string{"storage-1", "storage-2"} {
				m, _ := filepath.Glob(filepath.Join(dir, "cluster", id, "acct", "*.parquet"))
				files = max(files, len(m))
			}
			return files
		}
		if out, err := run("select count(*) from acct"); err != nil || out != "count\n3\n" {
			t.Fatalf("count: %q %v", out, err)
		}
		before := current()
		if _, err := run("update acct set owner = upper(owner)"); err != nil {
			t.Fatal(err)
		}
		if out, err := run("select string_agg(owner, ' ' order by id) from acct"); err != nil || out != "string_agg\nANN CY DEE\n" {
			t.Fatalf("after update: %q %v", out, err)
		}
		if n := current(); n > before || n == 0 {
			t.Errorf("storage nodes hold %d files of acct after a rewrite, %d before", n, before)
		}
		// A table dropped and created again with other columns.
		out, err = run("drop table acct; create table acct (day date, x double); insert into acct values ('2024-02-29', 1.5); select * from acct")
		if err != nil || !strings.HasPrefix(out, "day,x\n2024-02-29,1.5\n") {
			t.Errorf("recreated table: %q %v", out, err)
		}
		if _, err := run("drop table acct"); err != nil {
			t.Fatal(err)
		}
		if out, err := run("select 1 from acct"); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("dropped table: %q %v", out, err)
		}
		waitUntil(t, 10*time.Second, "the storage nodes dropped acct", func() bool { return current() == 0 })
	})

	t.Run("keys", func(t *testing.T) {
		if _, err := dialClusterSQL(lc.CoordinatorAddr, "", io.Discard); err == nil {
			t.Error("dialed without keys")
		}
		other := t.TempDir()
		if err := cluster.InitKeys(other, false); err != nil {
			t.Fatal(err)
		}
		bad, err := dialClusterSQL(lc.CoordinatorAddr, other, io.Discard)
		if err == nil {
			defer bad.Close()
			var out strings.Builder
			err = bad.runScript(ctx, "select 1", formatCSV, &out, io.Discard)
		}
		if err == nil || !(nferr.Is(err, nferr.KindAuth) || nferr.Is(err, nferr.KindUnavailable)) {
			t.Errorf("a client with another cluster's keys: %v", err)
		}
	})

	workerInfo := func(id string) cluster.NodeInfo {
		for _, n := range lc.Nodes {
			if n.ID == id {
				return n
			}
		}
		t.Fatalf("no node %s", id)
		return cluster.NodeInfo{}
	}

	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- cs.runScript(cctx, longQuery, formatCSV, io.Discard, io.Discard) }()
		waitUntil(t, 10*time.Second, "tasks running", func() bool { return runningTasks(t, workerInfo("worker-1")) > 0 })
		cancel()
		select {
		case err := <-done:
			if !nferr.Is(err, nferr.KindCanceled) {
				t.Errorf("canceled query: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the canceled query did not return within 5 s")
		}
		for _, w := range []string{"worker-1", "worker-2"} {
			waitUntil(t, 5*time.Second, "no task left on "+w, func() bool { return runningTasks(t, workerInfo(w)) == 0 })
		}
	})

	t.Run("storage node killed", func(t *testing.T) {
		// Every file is on both storage nodes: queries go on without one.
		if err := lc.Kill("storage-2"); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if _, err := cs.c.WaitForMembers(wctx, func(ms []cluster.NodeInfo) bool {
			for _, m := range ms {
				if m.ID == "storage-2" {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		r := runTPCHQuery(ctx, cs.runQueryText, 3, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q3 without storage-2: %v %s", r.err, r.verdict)
		}
	})

	t.Run("worker killed", func(t *testing.T) {
		// Retries off (the script's SET): run again without worker-2, the
		// query would take minutes. chaos_test.go has queries that finish.
		done := make(chan error, 1)
		go func() {
			done <- cs.runScript(ctx, "set query_retries = 0; "+longQuery, formatCSV, io.Discard, io.Discard)
		}()
		waitUntil(t, 10*time.Second, "tasks running", func() bool { return runningTasks(t, workerInfo("worker-2")) > 0 })
		killed := time.Now()
		if err := lc.Kill("worker-2"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "worker-2") {
				t.Errorf("query with a killed worker: %v", err)
			}
			t.Logf("failed %v after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
		case <-time.After(10 * time.Second):
			t.Fatal("the query did not fail within 10 s of the kill")
		}
		// Later queries avoid the dead worker.
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if _, err := cs.c.WaitForMembers(wctx, func(ms []cluster.NodeInfo) bool {
			for _, m := range ms {
				if m.ID == "worker-2" {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		r := runTPCHQuery(ctx, cs.runQueryText, 5, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q5 after the kill: %v %s", r.err, r.verdict)
		}
	})
}

// checkCrossStageFilters checks from EXPLAIN ANALYZE that a join key filter
// crossed from the join's stage to the scan's (TPC-H Q20: lineitem's
// l_partkey in partsupp's, built from a repartitioned partsupp) and
// dropped lineitem rows there.
func checkCrossStageFilters(t *testing.T, cs *clusterSQL) {
	t.Helper()
	text, err := tpch.Query(20, tpch.DefaultParams(20, 0.1))
	if err != nil {
		t.Fatal(err)
	}
	out := scriptOutput(t, cs, "explain analyze "+text)
	if !strings.Contains(out, "join filter 1: node") {
		t.Errorf("Q20 has no cross-stage key filter:\n%s", out)
		return
	}
	re := regexp.MustCompile(`l_partkey in partsupp\.ps_partkey: passed ([0-9.]+[kM]?) of ([0-9.]+[kM]?)`)
	m := re.FindStringSubmatch(out)
	t.Logf("Q20 cross-stage filter: %v", m)
	if m == nil || m[1] == m[2] {
		t.Errorf("Q20's cross-stage filter dropped no lineitem row (%v):\n%s", m, out)
	}
}

// TestManyWorkers runs a 12-worker cluster (more workers than this
// machine's cores: each gets one, and a share of memory) and checks a few
// TPC-H answers, on the first pass after the cluster starts: the short
// version of `nicflow bench scale`.
func TestManyWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 12-worker cluster takes seconds to start")
	}
	_, cs := localSQLCluster(t, copyTPCH(t, tpchSmallGroups(t, 0.01)), 12, 1, 1)
	for _, q := range []int{1, 3, 9, 18, 21} {
		r := runTPCHQuery(context.Background(), cs.runQueryText, q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q%d on 12 workers: %v %s", q, r.err, r.verdict)
		}
	}
	// Soft affinity (cluster/placement.go): a one-task scan of a table
	// goes to the worker the table hashes to, query after query (the
	// rotation moved it on with every query); a worker still busy with
	// an earlier task may send one elsewhere.
	on := map[string]int{}
	for i := 0; i < 6; i++ {
		out := scriptOutput(t, cs, "explain analyze select count(*) from nation")
		i := strings.Index(out, "task 0 on ")
		if i < 0 {
			t.Fatalf("no task line:\n%s", out)
		}
		on[strings.TrimSuffix(strings.Fields(out[i+len("task 0 on "):])[0], ":")]++
		scriptOutput(t, cs, "select count(*) from region")
	}
	best := 0
	for _, n := range on {
		best = max(best, n)
	}
	if best < 5 {
		t.Errorf("one-task scans of nation ran on %v, want one worker for at least 5 of 6", on)
	}
}
