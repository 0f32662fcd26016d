package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Admission control on the coordinator (docs/decisions.md D54): the
// coordinator's Memory is shared by the queries it runs, through the
// engine's admission type (engine.Admission, as `nicflow serve` shares
// its --memory). A runner reserves a query's share with Query.Admit before
// it starts the query; the query waits in the coordinator's bounded queue
// while the share does not fit (shown as "queued" in its Progress), and
// holds its grant for its whole life, retries included: the result held
// back for retries (retryWriter) and what the coordinator runs itself are
// charged to it. The grant is returned when the query finishes.

// StateQueued is a running query's Progress.State while it waits for
// memory on the coordinator.
const StateQueued = "queued"

// newCoordinatorAdmission is the coordinator's admission control over
// opts.Memory.
func newCoordinatorAdmission(opts *Options) (*engine.Admission, error) {
	return engine.NewAdmission(engine.AdmissionOptions{
		Memory: opts.Memory, MaxQueued: opts.MaxQueued,
		Node: "the coordinator", Reservation: "the coordinator's --query-memory or --retry-buffer",
	})
}

// Admission is the coordinator's admission control (its Memory shared by
// the queries it runs).
func (c *Coordinator) Admission() *engine.Admission { return c.adm }

// Admit reserves want bytes of the coordinator's memory for the query (at
// most Options.Memory), waiting in the coordinator's queue while they do
// not fit: until they do, until a sixteenth of the memory (at least
// 4 MiB) is free (the query is then granted that), or until ctx ends (a
// cancel, the statement timeout: SetTimeout's deadline bounds the wait
// too) or the queue is full, with an error saying so (KindCanceled,
// KindBusy). It returns the query's budget: its grant, drawn from the
// coordinator's memory. The first call of a query admits it; later calls
// (a retried attempt) return the same budget. The grant is returned when
// the query finishes.
func (q *Query) Admit(ctx context.Context, want int64) (*exec.Budget, error) {
	q.mu.Lock()
	if q.budget != nil {
		b := q.budget
		q.mu.Unlock()
		return b, nil
	}
	deadline := q.deadline
	q.mu.Unlock()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	g, err := q.c.adm.Acquire(ctx, want, q.setQueued)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.ID, err)
	}
	q.mu.Lock()
	q.grant, q.budget = g, g.Budget()
	b := q.budget
	q.mu.Unlock()
	return b, nil
}

// setQueued marks the query waiting for memory (or not).
func (q *Query) setQueued(queued bool) {
	q.mu.Lock()
	q.queued = queued
	if queued {
		q.queuedAt = time.Now()
	} else {
		q.waited += time.Since(q.queuedAt)
	}
	q.signalLocked()
	q.mu.Unlock()
}

// admitted is the query's budget once Admit has admitted it, else nil.
func (q *Query) admitted() *exec.Budget {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.budget
}

// SetTimeout bounds the query's life to d from its arrival (a script's
// statement_timeout): Admit waits no longer, and a query still running
// then fails with a canceled error saying so. Only the first call counts;
// d <= 0 does nothing.
func (q *Query) SetTimeout(d time.Duration) {
	if d <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.deadline.IsZero() {
		return
	}
	q.deadline = q.started.Add(d)
	q.timeout = time.AfterFunc(time.Until(q.deadline), func() {
		q.mu.Lock()
		queued := q.queued
		q.mu.Unlock()
		if queued {
			return // Admit's own deadline ends the wait, saying so
		}
		q.Fail(nferr.Wrap(nferr.KindCanceled, context.DeadlineExceeded, "canceling statement due to statement timeout: query %s ran longer than %v", q.ID, d))
	})
}

// releaseAdmission stops the statement timer and returns the query's
// grant (its end).
func (q *Query) releaseAdmission() {
	q.mu.Lock()
	g, t := q.grant, q.timeout
	q.grant, q.timeout = nil, nil
	q.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	if g != nil {
		g.Release()
	}
}

// AdmissionCollectors are the Prometheus series of a node's admission
// control, with labels as constant labels (nil for none): queue length,
// running queries, granted and shared memory, admitted and rejected
// queries and the time admitted queries waited. `nicflow serve` and the
// coordinator export the same names.
func AdmissionCollectors(a *engine.Admission, labels prometheus.Labels) []prometheus.Collector {
	stat := func(f func(engine.AdmissionStats) float64) func() float64 {
		return func() float64 { return f(a.Stats()) }
	}
	g := func(name, help string, f func(engine.AdmissionStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, stat(f))
	}
	c := func(name, help string, f func(engine.AdmissionStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, stat(f))
	}
	return []prometheus.Collector{
		g("nicflow_admission_queued", "Queries waiting for memory.", func(s engine.AdmissionStats) float64 { return float64(s.Queued) }),
		g("nicflow_admission_running", "Queries admitted and not ended.", func(s engine.AdmissionStats) float64 { return float64(s.Running) }),
		g("nicflow_admission_granted_bytes", "Memory granted to running queries.", func(s engine.AdmissionStats) float64 { return float64(s.Granted) }),
		g("nicflow_admission_memory_bytes", "The memory queries share (--memory).", func(s engine.AdmissionStats) float64 { return float64(s.Memory) }),
		c("nicflow_admission_admitted_total", "Queries admitted.", func(s engine.AdmissionStats) float64 { return float64(s.Admitted) }),
		c("nicflow_admission_rejected_total", "Queries that never started: the queue was full, or they were canceled or timed out waiting.", func(s engine.AdmissionStats) float64 { return float64(s.Rejected) }),
		c("nicflow_admission_wait_seconds_total", "Time admitted queries waited for memory.", func(s engine.AdmissionStats) float64 { return s.Waited.Seconds() }),
		c("nicflow_admission_exempted_total", "Queries that read no data and hold no state (select 1), run without admission.", func(s engine.AdmissionStats) float64 { return float64(s.Exempted) }),
	}
}

// runGate bounds the queries running on the workers at once
// (Options.MaxRunning): Acquire waits, in arrival order, while the bound is
// reached. The bound is the option, or else four per alive worker core
// (at least 16), taken anew at each arrival and release (workers join and
// leave).
type runGate struct {
	fixed     int // Options.MaxRunning
	maxQueued int

	mu      sync.Mutex
	running int
	limit   int // the bound last computed
	waiting []chan struct{}
}

func newRunGate(fixed, maxQueued int) *runGate {
	return &runGate{fixed: fixed, maxQueued: maxQueued}
}

// bound is the number of queries that may run with workers' cores.
func (g *runGate) bound(workers []NodeInfo) int {
	if g.fixed != 0 {
		return g.fixed
	}
	cores := 0
	for _, w := range workers {
		cores += max(w.Cores, 1)
	}
	return max(4*cores, 16)
}

// acquire admits one query to run on workers, waiting (queued(true)
// before, queued(false) after) while the bound is reached, until ctx ends
// (a canceled error) or, with maxQueued queries already waiting, failing at
// once with a busy error. release gives the place back (once).
func (g *runGate) acquire(ctx context.Context, workers []NodeInfo, queued func(bool)) (release func(), err error) {
	g.mu.Lock()
	g.limit = g.bound(workers)
	if g.limit < 0 || (g.running < g.limit && len(g.waiting) == 0) {
		g.running++
		g.mu.Unlock()
		return g.releaser(), nil
	}
	if len(g.waiting) >= g.maxQueued {
		n := len(g.waiting)
		g.mu.Unlock()
		return nil, nferr.Busyf("the coordinator runs %d queries on the workers (max_running) and %d more are waiting (max_queued): retry later", g.limit, n)
	}
	ch := make(chan struct{})
	g.waiting = append(g.waiting, ch)
	g.mu.Unlock()
	queued(true)
	defer queued(false)
	select {
	case <-ch:
		return g.releaser(), nil
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.waiting, ch); i >= 0 {
			g.waiting = slices.Delete(g.waiting, i, i+1)
			g.mu.Unlock()
			return nil, nferr.Wrap(nferr.KindCanceled, context.Cause(ctx), "waiting for one of the %d queries running on the workers (max_running) to end", g.limit)
		}
		g.mu.Unlock()
		// NB: admitted as it was canceled: give the place on.
		g.releaser()()
		return nil, nferr.Wrap(nferr.KindCanceled, context.Cause(ctx), "waiting for one of the queries running on the workers (max_running) to end")
	}
}

func (g *runGate) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.running--
			for len(g.waiting) > 0 && (g.limit < 0 || g.running < g.limit) {
				close(g.waiting[0])
				g.waiting = g.waiting[1:]
				g.running++
			}
		})
	}
}

// Running and Waiting are the queries running on the workers and those
// waiting to.
func (g *runGate) counts() (running, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, len(g.waiting)
}
