package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// startSQLCluster starts, in this process, a coordinator running SQL over
// a new database (its SQL runner) and one worker with the fragment
// executor and a shuffle agent; opts adjusts the coordinator's options.
func startSQLCluster(t *testing.T, opts func(*Options)) (*Node, *SQLRunner) {
	t.Helper()
	keys := testKeyDir(t)
	ctx := context.Background()
	sess, err := engine.Open(t.TempDir(), engine.Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	r := NewSQLRunner(sess, SQLOptions{Parallelism: 2})
	co := testOptions(t, RoleCoordinator, "coord", keys)
	opts(&co)
	coord, err := StartNode(ctx, co, Services{Runner: RunnerMux{SQLKind: r}})
	if err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	t.Cleanup(func() { coord.Close() })
	sw := NewSQLWorker()
	w, err := StartNode(ctx, testOptions(t, RoleWorker, "w1", keys, coord.Self().GossipAddr), Services{Executor: ExecutorMux{FragmentTaskKind: sw}})
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	if err := sw.Start(w, ""); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := coord.WaitMembers(wctx, func(ms []NodeInfo) bool {
		for _, m := range ms {
			if m.Role == RoleWorker && m.DataAddr != "" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the scheduler to see the worker", func() bool { return len(coord.Coordinator().Workers()) == 1 })
	return coord, r
}

// heldResult is a ResultWriter whose first Write blocks until release is
// closed: its query, done on the workers, keeps its grant of the
// coordinator's memory while the coordinator hands over its result.
type heldResult struct {
	release chan struct{}
	mu      sync.Mutex
	sum     int64
}

func (h *heldResult) SetSchema(*arrow.Schema) error { return nil }

func (h *heldResult) Write(rec arrow.RecordBatch) error {
	<-h.release
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sum += rec.Column(0).(*array.Int64).Value(0)
	return nil
}

// sumQuery sums 1..n on the workers.
func sumQuery(n int) string {
	return fmt.Sprintf("select sum(x) as s from generate_series(1, %d) as g(x)", n)
}

// tableResult collects a result's rows as strings by column name.
type tableResult struct {
	names  []string
	rows   []map[string]string
	status string // a statement without rows: its status (StatusMetadataKey)
}

func (r *tableResult) SetSchema(s *arrow.Schema) error {
	r.status, _ = s.Metadata().GetValue(StatusMetadataKey)
	r.names = nil
	for _, f := range s.Fields() {
		r.names = append(r.names, f.Name)
	}
	return nil
}

func (r *tableResult) Write(rec arrow.RecordBatch) error {
	for i := 0; i < int(rec.NumRows()); i++ {
		row := map[string]string{}
		for c, name := range r.names {
			row[name] = rec.Column(c).ValueStr(i)
		}
		r.rows = append(r.rows, row)
	}
	return nil
}

// metricValue sums the samples of a gauge or counter on a node's /metrics
// registry.
func metricValue(t *testing.T, n *Node, name string) float64 {
	t.Helper()
	fams, err := n.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		var v float64
		for _, m := range f.GetMetric() {
			v += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
		return v
	}
	t.Fatalf("no series %s on the coordinator's /metrics", name)
	return 0
}

// TestCoordinatorAdmission: a small coordinator memory (8 MiB, 4 MiB per
// query) shared by concurrent queries: two run, the next ones wait in the
// queue (queued in SHOW QUERIES and the progress, with their wait), one
// whose statement_timeout passes while it waits fails saying so, one
// past max_queued is refused at once, and once the running ones end the
// queued ones run and answer right; the metrics count all of it.
func TestCoordinatorAdmission(t *testing.T) {
	coord, _ := startSQLCluster(t, func(o *Options) {
		o.Memory, o.QueryMemory, o.RetryBuffer, o.MaxQueued = 8<<20, 4<<20, 4<<20, 2
	})
	c := coord.Coordinator()
	ctx := context.Background()
	type outcome struct {
		sum int64
		err error
	}
	release := make(chan struct{})
	run := func(id, text string) chan outcome {
		done := make(chan outcome, 1)
		go func() {
			h := &heldResult{release: release}
			err := c.Run(ctx, QueryRequest{ID: id, Kind: SQLKind, Text: text}, h)
			h.mu.Lock()
			defer h.mu.Unlock()
			done <- outcome{h.sum, err}
		}()
		return done
	}
	stats := func() engine.AdmissionStats { return c.Admission().Stats() }

	// Two queries hold 4 MiB each: the coordinator's 8 MiB are granted.
	done := map[string]chan outcome{"a1": run("a1", sumQuery(1000)), "a2": run("a2", sumQuery(2000))}
	waitFor(t, 20*time.Second, "two queries admitted", func() bool { s := stats(); return s.Running == 2 && s.Granted == 8<<20 })

	// The next one waits.
	done["b"] = run("b", sumQuery(3000))
	waitFor(t, 10*time.Second, "b queued", func() bool { return stats().Queued == 1 })

	// One whose statement timeout passes while it waits fails saying so.
	start := time.Now()
	got := <-run("d", "set statement_timeout = 300;\n"+sumQuery(10))
	if !nferr.Is(got.err, nferr.KindCanceled) || !strings.Contains(got.err.Error(), "statement timeout") ||
		!strings.Contains(got.err.Error(), "admission queue") || !strings.Contains(got.err.Error(), "the coordinator's --memory") {
		t.Fatalf("query past its statement timeout in the queue: %v (kind %v)", got.err, nferr.KindOf(got.err))
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 5*time.Second {
		t.Errorf("the timed-out query ended after %v, want about 300ms", el)
	}

	done["c"] = run("c", sumQuery(4000))
	waitFor(t, 10*time.Second, "b and c queued", func() bool { return stats().Queued == 2 })

	// SHOW QUERIES and the progress show them queued, with their wait.
	show := &tableResult{}
	if err := c.Run(ctx, QueryRequest{Kind: SQLKind, Text: "show queries"}, show); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, row := range show.rows {
		states[row["id"]] = row["state"]
	}
	if states["b"] != StateQueued || states["c"] != StateQueued || states["a1"] != "running" || states["a2"] != "running" {
		t.Errorf("SHOW QUERIES states %v, want b and c queued, a1 and a2 running", states)
	}
	running, _ := c.Queries()
	for _, q := range running {
		if q.QueryID == "b" && (q.State != StateQueued || q.Queued <= 0) {
			t.Errorf("progress of b: state %s, queued %v", q.State, q.Queued)
		}
	}
	if got := metricValue(t, coord, "nicflow_admission_queued"); got != 2 {
		t.Errorf("nicflow_admission_queued = %v, want 2", got)
	}

	// The queue is full: one more is refused at once.
	start = time.Now()
	got = <-run("e", sumQuery(5))
	if !nferr.Is(got.err, nferr.KindBusy) || !strings.Contains(got.err.Error(), "admission queue full") || !strings.Contains(got.err.Error(), "--max-queued") {
		t.Fatalf("query past a full queue: %v (kind %v)", got.err, nferr.KindOf(got.err))
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("the refusal took %v", el)
	}

	// The running ones end: the queued ones run and answer right.
	close(release)
	want := map[string]int64{"a1": 1000 * 1001 / 2, "a2": 2000 * 2001 / 2, "b": 3000 * 3001 / 2, "c": 4000 * 4001 / 2}
	for id, ch := range done {
		select {
		case o := <-ch:
			if o.err != nil || o.sum != want[id] {
				t.Errorf("query %s: sum %d, %v; want %d", id, o.sum, o.err, want[id])
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("query %s did not end", id)
		}
	}
	s := stats()
	if s.Admitted != 4 || s.Rejected != 2 || s.Queued != 0 || s.Running != 0 || s.Granted != 0 || s.Waited <= 0 {
		t.Errorf("admission figures %+v: want 4 admitted, 2 rejected, none queued or running, some wait", s)
	}
	for name, want := range map[string]float64{"nicflow_admission_admitted_total": 4, "nicflow_admission_rejected_total": 2, "nicflow_admission_running": 0} {
		if got := metricValue(t, coord, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(t, coord, "nicflow_admission_wait_seconds_total"); got <= 0 {
		t.Errorf("nicflow_admission_wait_seconds_total = %v, want > 0", got)
	}
}

// TestRetryWriterChargesGrant: the result a query holds back for retries
// is charged to its grant; once the grant cannot cover the next batch the
// result streams (no more retries), and what was held is uncharged as it
// is sent or dropped.
func TestRetryWriterChargesGrant(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := func(rows int) arrow.RecordBatch {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := 0; i < rows; i++ {
			b.Append(int64(i))
		}
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(rows))
	}
	budget := exec.NewBudget(1 << 20)
	var admitted *exec.Budget
	out := &tableCount{}
	w := &retryWriter{out: out, limit: 64 << 20, budget: func() *exec.Budget { return admitted }}

	// Before admission nothing is charged; a failed attempt's rows are
	// dropped.
	rec := batch(1000)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	w.reset()
	admitted = budget
	for i := 0; i < 3; i++ { // 3 x 256 KiB: held, charged
		rec := batch(32 << 10)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if w.sent || out.rows != 0 || budget.Used() < 3*(256<<10) {
		t.Fatalf("after 768 KiB: sent %v, client rows %d, charged %d", w.sent, out.rows, budget.Used())
	}
	rec = batch(64 << 10) // 512 KiB more: beyond the 1 MiB grant
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if !w.sent || out.rows != 3*(32<<10)+64<<10 || budget.Used() != 0 {
		t.Fatalf("past the grant: sent %v, client rows %d, charged %d", w.sent, out.rows, budget.Used())
	}
	w.release()
}

type tableCount struct{ rows int64 }

func (c *tableCount) SetSchema(*arrow.Schema) error { return nil }
func (c *tableCount) Write(rec arrow.RecordBatch) error {
	c.rows += rec.NumRows()
	return nil
}

// TestCoordinatorAdmissionLocal: a statement the coordinator runs itself
// (INSERT ... SELECT on its copy of the database) is admitted with
// QueryMemory and runs under that grant; SET, SHOW and DDL without a query
// are not admitted (they never queue).
func TestCoordinatorAdmissionLocal(t *testing.T) {
	coord, _ := startSQLCluster(t, func(o *Options) { o.Memory, o.QueryMemory = 8<<20, 8<<20 })
	c := coord.Coordinator()
	ctx := context.Background()
	for _, text := range []string{"create table t (x bigint)", "set timezone = 'UTC'", "show tables", "explain select 1"} {
		if err := c.Run(ctx, QueryRequest{Kind: SQLKind, Text: text}, &tableResult{}); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	if s := c.Admission().Stats(); s.Admitted != 0 {
		t.Fatalf("statements without a query were admitted: %+v", s)
	}
	// A grant that holds every byte: the insert waits, then runs.
	hold, err := c.Admission().Acquire(ctx, 8<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ins := &tableResult{}
	go func() {
		done <- c.Run(ctx, QueryRequest{Kind: SQLKind, Text: "insert into t select x from generate_series(1, 5000) as g(x)"}, ins)
	}()
	waitFor(t, 10*time.Second, "the insert queued", func() bool { return c.Admission().Stats().Queued == 1 })
	hold.Release()
	if err := <-done; err != nil || ins.status != "INSERT 0 5000" {
		t.Fatalf("insert: %q, %v", ins.status, err)
	}
	if s := c.Admission().Stats(); s.Admitted != 2 || s.Granted != 0 || s.Waited <= 0 {
		t.Errorf("admission figures %+v: want the holder and the insert admitted, the insert after a wait", s)
	}
}
