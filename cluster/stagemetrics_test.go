package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// resultCount sums the counter values, or histogram sample counts, of the
// series name{result=result} on n's /metrics registry.
func resultCount(t *testing.T, n *Node, name, result string) float64 {
	t.Helper()
	fams, err := n.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					v += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return v
}

// TestStageResultAfterDelivery: a query whose last stage ended with the
// client's result complete while an upstream task was still running (its
// output all consumed; the end of a shuffle sender, or work above a LIMIT
// that was satisfied) records its stages and tasks as ok, on the
// coordinator and on the workers; a canceled query's stage and tasks are
// canceled, a failed one's an error.
func TestStageResultAfterDelivery(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := context.Background()
	results := []string{"ok", "canceled", "error"}
	type counts map[string]float64
	snap := func() (stages, coordTasks, workerTasks, workerSeconds counts) {
		stages, coordTasks, workerTasks, workerSeconds = counts{}, counts{}, counts{}, counts{}
		for _, r := range results {
			stages[r] = resultCount(t, tc.coord, "nicflow_stage_seconds", r)
			coordTasks[r] = resultCount(t, tc.coord, "nicflow_tasks_finished_total", r)
			for _, w := range tc.workers {
				workerTasks[r] += resultCount(t, w, "nicflow_tasks_finished_total", r)
				workerSeconds[r] += resultCount(t, w, "nicflow_task_seconds", r)
			}
		}
		return
	}
	check := func(what string, before, after counts, want counts) {
		t.Helper()
		for _, r := range results {
			if d := after[r] - before[r]; d != want[r] {
				t.Errorf("%s{result=%q} grew by %v, want %v", what, r, d, want[r])
			}
		}
	}
	workersIdle := func() {
		waitFor(t, 5*time.Second, "the tasks to end on the workers", func() bool {
			for _, w := range tc.workers {
				if metricValue(t, w, "nicflow_tasks_running") != 0 {
					return false
				}
			}
			return liveTasks.Load() == 0
		})
	}

	// Run 2 floods: stage 0 goes on sending output nobody reads; the
	// coordinator drops it once the query is complete, so that the worker
	// can stop the task at once (not held by flow control until the
	// cancel times out).
	for i := range 3 {
		var params map[string]string
		if i == 2 {
			params = map[string]string{"flood": "1"}
		}
		s0, c0, w0, ws0 := snap()
		start := time.Now()
		rows, err := tc.runKind(ctx, kindTail, params)
		if err != nil || rows != 1 {
			t.Fatalf("run %d: %d rows, %v", i, rows, err)
		}
		t.Logf("run %d: %v", i, time.Since(start))
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Errorf("run %d took %v: the stopped task was not stopped at once", i, d)
		}
		workersIdle()
		s1, c1, w1, ws1 := snap()
		ok2 := counts{"ok": 2}
		check("coordinator nicflow_stage_seconds_count", s0, s1, ok2)
		check("coordinator nicflow_tasks_finished_total", c0, c1, ok2)
		check("workers' nicflow_tasks_finished_total", w0, w1, ok2)
		check("workers' nicflow_task_seconds_count", ws0, ws1, ok2)
	}

	// A query the client cancels: its stage and tasks were cut short.
	s0, c0, w0, _ := snap()
	qctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := tc.runKind(qctx, kindSleep, map[string]string{"tasks": "2"})
		done <- err
	}()
	waitFor(t, 10*time.Second, "2 sleeping tasks", func() bool { return liveTasks.Load() == 2 })
	cancel()
	if err := <-done; !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("canceled query: %v", err)
	}
	waitFor(t, 5*time.Second, "the query to end on the coordinator", func() bool { return len(tc.coord.Coordinator().runningProgress()) == 0 })
	workersIdle()
	s1, c1, w1, _ := snap()
	check("canceled query: coordinator nicflow_stage_seconds_count", s0, s1, counts{"canceled": 1})
	check("canceled query: coordinator nicflow_tasks_finished_total", c0, c1, counts{"canceled": 2})
	check("canceled query: workers' nicflow_tasks_finished_total", w0, w1, counts{"canceled": 2})

	// A failed task: an error.
	s0, c0, w0, _ = snap()
	if _, err := tc.runKind(ctx, kindFail, map[string]string{"tasks": "1"}); err == nil || !strings.Contains(err.Error(), "bad row 42") {
		t.Fatalf("failing query: %v", err)
	}
	workersIdle()
	s1, c1, w1, _ = snap()
	check("failed query: coordinator nicflow_stage_seconds_count", s0, s1, counts{"error": 1})
	check("failed query: coordinator nicflow_tasks_finished_total", c0, c1, counts{"error": 1})
	check("failed query: workers' nicflow_tasks_finished_total", w0, w1, counts{"error": 1})
}
