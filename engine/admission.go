package engine

// Admission control (docs/decisions.md D54).
//
// A server's sessions share one node budget: each query reserves its
// memory limit (clamped to the node's memory) before it runs, and runs
// under a budget of what it was granted, drawn from the node budget, so
// concurrent queries spill rather than overcommit the machine. A query
// whose reservation does not fit waits in a FIFO queue, bounded, until it
// fits, its context ends (cancel, statement timeout) or the server closes.
// The query at the head of the queue is admitted with what is free once
// at least MinGrant is: a big query cannot hold back small ones behind it
// for ever, and one admitted with less than it asked for spills sooner.
// A query that reads no data and holds no state (`select 1`) is not
// admitted at all (exempt): it runs at once, whatever the queue.

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// AdmissionOptions configure a node's admission control.
type AdmissionOptions struct {
	// Memory is the node's memory shared by concurrent queries, in bytes
	// (required, > 0).
	Memory int64
	// MinGrant is the least memory a query is admitted with (default
	// Memory/16, at least 4 MiB and at most Memory): the query at the head
	// of the queue starts with what is free once MinGrant is.
	MinGrant int64
	// MaxQueued bounds the queries waiting for memory (default 256); one
	// more fails at once with a resource error.
	MaxQueued int
	// Node names the node in errors (default "the server"; a cluster's
	// coordinator: "the coordinator"): "raise <Node>'s --memory".
	Node string
	// Reservation names what sets a query's reservation in errors
	// (default "memory_limit").
	Reservation string
}

// Validate fills defaults and checks the options.
func (o *AdmissionOptions) Validate() error {
	if o.Memory <= 0 {
		return nferr.Queryf("admission: node memory %d must be positive", o.Memory)
	}
	if o.MinGrant < 0 {
		return nferr.Queryf("admission: minimum grant %d must not be negative", o.MinGrant)
	}
	if o.MinGrant == 0 {
		o.MinGrant = max(o.Memory/16, 4<<20)
	}
	o.MinGrant = min(o.MinGrant, o.Memory)
	if o.MaxQueued < 0 {
		return nferr.Queryf("admission: queue length %d must not be negative", o.MaxQueued)
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = 256
	}
	if o.Node == "" {
		o.Node = "the server"
	}
	if o.Reservation == "" {
		o.Reservation = "memory_limit"
	}
	return nil
}

// Admission is a node's admission control, shared by its sessions
// (Options.Admission). Safe for concurrent use.
type Admission struct {
	opts AdmissionOptions
	node *exec.Budget

	mu      sync.Mutex
	granted int64      // memory held by running queries
	running int        // queries admitted and not released
	queue   *list.List // of *waiter, oldest first

	admitted atomic.Int64
	rejected atomic.Int64
	waitNs   atomic.Int64 // total time admitted queries waited
	exempted atomic.Int64 // queries that needed no admission (exempt)
}

type waiter struct {
	want  int64
	grant int64         // set when admitted
	ready chan struct{} // closed when admitted
}

// NewAdmission validates opts and returns the node's admission control.
func NewAdmission(opts AdmissionOptions) (*Admission, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Admission{opts: opts, node: exec.NewNodeBudget(opts.Memory, opts.Node+"'s --memory"), queue: list.New()}, nil
}

// Grant is a query's admitted share of the node's memory.
type Grant struct {
	a     *Admission
	bytes int64
	once  sync.Once
}

// Bytes is the memory granted.
func (g *Grant) Bytes() int64 { return g.bytes }

// Budget is the query's budget: its grant, drawn from the node's memory.
func (g *Grant) Budget() *exec.Budget { return exec.NewBudgetUnder(g.a.node, g.bytes) }

// Release returns the grant to the node and admits waiting queries that
// now fit. Later calls do nothing.
func (g *Grant) Release() {
	g.once.Do(func() {
		a := g.a
		a.mu.Lock()
		a.granted -= g.bytes
		a.running--
		a.admitLocked()
		a.mu.Unlock()
	})
}

// Acquire reserves want bytes (clamped to the node's memory) for a query,
// waiting in the queue while they do not fit. queued, when not nil, is
// called with true when the query starts waiting and false when it stops.
// It fails when the queue is full, or when ctx ends while waiting (a
// statement timeout, a cancel), with an error saying so.
func (a *Admission) Acquire(ctx context.Context, want int64, queued func(bool)) (*Grant, error) {
	if want <= 0 || want > a.opts.Memory {
		want = a.opts.Memory
	}
	w := &waiter{want: want, ready: make(chan struct{})}
	a.mu.Lock()
	if a.queue.Len() == 0 {
		if grant := a.fitLocked(want); grant > 0 {
			a.granted += grant
			a.running++
			a.mu.Unlock()
			a.admitted.Add(1)
			return &Grant{a: a, bytes: grant}, nil
		}
	}
	if a.queue.Len() >= a.opts.MaxQueued {
		running, granted := a.running, a.granted
		a.mu.Unlock()
		a.rejected.Add(1)
		return nil, &nferr.Error{Kind: nferr.KindBusy, Msg: fmt.Sprintf("admission queue full: %d queries wait for memory, %d running hold %s of %s's %s (retry later, or raise %s's --memory or --max-queued)",
			a.opts.MaxQueued, running, exec.FormatBytes(granted), a.opts.Node, exec.FormatBytes(a.opts.Memory), a.opts.Node)}
	}
	el := a.queue.PushBack(w)
	a.admitLocked()
	a.mu.Unlock()
	start := time.Now()
	if queued != nil {
		queued(true)
		defer queued(false)
	}
	select {
	case <-w.ready:
		a.admitted.Add(1)
		a.waitNs.Add(int64(time.Since(start)))
		return &Grant{a: a, bytes: w.grant}, nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	select {
	case <-w.ready:
		// Admitted as the context ended: give the grant back.
		a.granted -= w.grant
		a.running--
	default:
		a.queue.Remove(el)
	}
	a.admitLocked()
	running, granted := a.running, a.granted
	a.mu.Unlock()
	a.rejected.Add(1)
	waited := time.Since(start).Round(time.Millisecond)
	why := "canceled"
	if ctx.Err() == context.DeadlineExceeded {
		why = "statement timeout"
	}
	return nil, &nferr.Error{Kind: nferr.KindCanceled, Cause: ctx.Err(), Msg: fmt.Sprintf("%s: the query waited %s in the admission queue for %s of memory and never started; %d running queries hold %s of %s's %s (raise %s's --memory, or lower %s)",
		why, waited, exec.FormatBytes(want), running, exec.FormatBytes(granted), a.opts.Node, exec.FormatBytes(a.opts.Memory), a.opts.Node, a.opts.Reservation)}
}

// admitLocked admits waiting queries in order while they fit; the head is
// admitted with what is free once that is at least MinGrant.
func (a *Admission) admitLocked() {
	for a.queue.Len() > 0 {
		el := a.queue.Front()
		w := el.Value.(*waiter)
		if w.grant = a.fitLocked(w.want); w.grant == 0 {
			return
		}
		a.queue.Remove(el)
		a.granted += w.grant
		a.running++
		close(w.ready)
	}
}

// fitLocked is what a query asking want would be granted now: want when
// it fits, else what is free when that is at least MinGrant, else 0.
func (a *Admission) fitLocked(want int64) int64 {
	free := a.opts.Memory - a.granted
	switch {
	case want <= free:
		return want
	case free >= a.opts.MinGrant:
		return free
	}
	return 0
}

// exempt reports whether a query's plan needs no admission, and counts
// it: a plan that reads no data and holds no more than its own literals
// (only values, project, filter, limit, union, exchange, max_one_row,
// single_check and nested-loop join nodes, and apply whose subquery is the same; no
// shared subplan), such as `select 1`, `select (select 1)`, `select
// now()` or `select version()`, the health checks of connection pools and
// drivers. Such a query holds a batch at a time and reserves nothing from
// its budget, so it must not wait behind big queries for memory it does
// not use: under load (`nicflow bench load`, 16 clients running TPC-H
// SF 1) a `select 1` waited seconds in the queue.
func (a *Admission) exempt(pp *phys.PhysPlan) bool {
	if len(pp.Shared) > 0 || !statelessNode(pp.Root) {
		return false
	}
	a.exempted.Add(1)
	return true
}

func statelessNode(n *phys.PhysNode) bool {
	if n == nil {
		return true
	}
	switch n.Kind {
	case phys.PhysValues, phys.PhysProject, phys.PhysFilter, phys.PhysLimit, phys.PhysMaxOneRow, phys.PhysSingleCheck, phys.PhysUnion, phys.PhysExchange:
	case phys.PhysNLJoin:
		// NB: it holds its inner side, here rows of the plan's own
		// literals (a scalar subquery of constants).
	case phys.PhysApply:
		if n.Apply == nil || !statelessNode(n.Apply.Sub) {
			return false
		}
	default:
		return false
	}
	for _, in := range n.Inputs {
		if !statelessNode(in) {
			return false
		}
	}
	return true
}

// AdmissionStats are an Admission's figures.
type AdmissionStats struct {
	Memory   int64         // the node's memory
	Granted  int64         // memory held by running queries
	Running  int           // queries admitted and not ended
	Queued   int           // queries waiting for memory
	Admitted int64         // queries admitted since the start
	Rejected int64         // queries that never started: queue full, or ended while waiting
	Waited   time.Duration // total time admitted queries waited
	Exempted int64         // queries that needed no admission (exempt)
}

// Stats returns the current figures.
func (a *Admission) Stats() AdmissionStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdmissionStats{Memory: a.opts.Memory, Granted: a.granted, Running: a.running, Queued: a.queue.Len(),
		Admitted: a.admitted.Load(), Rejected: a.rejected.Load(), Waited: time.Duration(a.waitNs.Load()), Exempted: a.exempted.Load()}
}
