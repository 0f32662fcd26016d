package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// This file holds the interfaces the engine implements to plug into the
// cluster: a QueryRunner on the coordinator and Executors on workers.
//
//	client ──Flight DoGet(ticket)──► coordinator: QueryRunner.RunQuery(q, out)
//	                                     │ q.Place(requests) → placements
//	                                     │ q.Start(placement, TaskSpec) → *Task
//	                                     ▼
//	                 nicflow.Control/RunTask (mTLS, frames)
//	                                     ▼
//	                worker: Executor.Execute(ctx, *TaskContext)
//	                   tc.Send(batch) ──► Task.Output() on the coordinator
//	                   tc.Stats (rows, bytes) ──► heartbeats ──► Task.Stats()

// QueryRunner runs one client request on the coordinator. The engine
// implements it: parse and plan q.Text, place and start tasks through q, and
// write result batches to out. RunQuery returns when the query is complete;
// an error is sent to the client with its nferr kind. When q.Context() is
// done (client cancel, a task failed, a node died) RunQuery should return
// promptly; the coordinator then stops every task of the query.
type QueryRunner interface {
	RunQuery(q *Query, out ResultWriter) error
}

// QueryRunnerFunc adapts a function to QueryRunner.
type QueryRunnerFunc func(q *Query, out ResultWriter) error

// RunQuery calls f.
func (f QueryRunnerFunc) RunQuery(q *Query, out ResultWriter) error { return f(q, out) }

// ParamRetries is the request parameter that sets how many times the
// query is run again after a node failure (0 to 100), overriding the
// coordinator's QueryRetries; a script's SET query_retries overrides both.
const ParamRetries = "retries"

// ResultWriter streams a query's result to the client.
type ResultWriter interface {
	// SetSchema declares the result schema; call it before the first Write
	// (Write declares the first batch's schema if it was not called). A
	// query with no result columns need not call either.
	SetSchema(s *arrow.Schema) error
	// Write sends one batch; the batch stays owned by the caller.
	Write(rec arrow.RecordBatch) error
}

// RunnerMux routes requests to runners by QueryRequest.Kind ("sql",
// "nicflow.check", ...).
type RunnerMux map[string]QueryRunner

// RunQuery dispatches on q.Kind.
func (m RunnerMux) RunQuery(q *Query, out ResultWriter) error {
	r, ok := m[q.Kind]
	if !ok {
		return errUnknownKind(q.Kind, m)
	}
	return r.RunQuery(q, out)
}

// MemberWatcher is implemented by runners that react to membership changes
// (the SQL runner repairs placements when storage nodes come and go). The
// coordinator calls it from its event loop: it must not block.
type MemberWatcher interface {
	MemberChanged(c *Coordinator, ev MemberEvent)
}

// MemberChanged forwards the event to every runner that watches members
// (each once).
func (m RunnerMux) MemberChanged(c *Coordinator, ev MemberEvent) {
	seen := map[MemberWatcher]bool{}
	for _, r := range m {
		if w, ok := r.(MemberWatcher); ok && !seen[w] {
			seen[w] = true
			w.MemberChanged(c, ev)
		}
	}
}

// Executor runs task fragments on a worker. The engine implements it: decode
// tc.Spec.Fragment, build operators, run them until done or ctx is canceled,
// count rows and bytes in tc.Stats, and Send output batches to the
// coordinator when the fragment is a query's root. Errors keep their nferr
// kind across the wire. ctx is canceled when the query is canceled or
// fails; Execute must then return promptly and leak no goroutines.
type Executor interface {
	Execute(ctx context.Context, tc *TaskContext) error
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, tc *TaskContext) error

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, tc *TaskContext) error { return f(ctx, tc) }

// ExecutorMux routes tasks to executors by TaskSpec.Kind.
type ExecutorMux map[string]Executor

// Execute dispatches on tc.Spec.Kind.
func (m ExecutorMux) Execute(ctx context.Context, tc *TaskContext) error {
	e, ok := m[tc.Spec.Kind]
	if !ok {
		return errUnknownTaskKind(tc.Spec.Kind, m)
	}
	return e.Execute(ctx, tc)
}

// TaskSpec is what the coordinator ships to a worker: an opaque fragment
// and the metadata to run it. It is encoded as JSON inside a control frame.
type TaskSpec struct {
	// Kind selects the executor on the worker ("engine.fragment",
	// "nicflow.check.gen").
	Kind string `json:"kind"`
	// Stage and Index identify the task within its query's plan (for
	// progress, statistics and error messages).
	Stage int `json:"stage"`
	Index int `json:"index"`
	// Fragment is the serialized plan fragment, opaque to the cluster.
	Fragment []byte `json:"fragment,omitempty"`
	// Meta carries small named parameters (partition counts, shuffle ids,
	// peer addresses).
	Meta map[string]string `json:"meta,omitempty"`
	// Needs lists other nodes (usually storage nodes) the task depends on:
	// when one of them fails, the query fails at once naming it.
	Needs []string `json:"needs,omitempty"`
}

// TaskRequest asks the scheduler for a place to run one task.
type TaskRequest struct {
	// Stage of the task (for progress accounting).
	Stage int
	// Cores the task will keep busy (default 1). Cores are a soft limit: the
	// scheduler balances by free cores and may oversubscribe.
	Cores int
	// Memory the task reserves in bytes (default 0). Memory is a hard limit:
	// a task is placed only where it fits, and waits for memory otherwise.
	Memory int64
	// Node pins the task to one worker (by ID); empty lets the scheduler pick.
	Node string
	// Prefer lists worker IDs that should be chosen first when they fit
	// (locality: the worker co-located with a storage node).
	Prefer []string
}

// Placement is a worker chosen for a TaskRequest, with its resources
// reserved. Pass it to Query.Start, or release it with Query.Release; the
// query releases unused placements when it ends.
type Placement struct {
	Node    NodeInfo
	Request TaskRequest
	id      uint64
}

// TaskStats are a task's counters, reported with every heartbeat and at the
// end; EXPLAIN ANALYZE and progress read them.
type TaskStats struct {
	TaskID string `json:"task_id"`
	Node   string `json:"node"`
	Stage  int    `json:"stage"`
	Index  int    `json:"index"`
	// Rows and Batches the task produced.
	Rows    int64 `json:"rows"`
	Batches int64 `json:"batches"`
	// BytesIn read (storage, shuffle) and BytesOut written (shuffle, results).
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// ScanWire is what the task's scans received from storage nodes over
	// the network; ScanRead the Parquet bytes of the column chunks they
	// read (storage.ScanStats.WireBytes, BytesRead).
	ScanWire int64 `json:"scan_wire,omitempty"`
	ScanRead int64 `json:"scan_read,omitempty"`
	// PeakMemory is the largest memory reservation the executor reported.
	PeakMemory int64 `json:"peak_memory"`
	// Wall is the task's running time so far (or in total when done).
	Wall time.Duration `json:"wall"`
	// Done is set in the final report.
	Done bool `json:"done"`
	// Hist is a held task's key histogram (final report only;
	// phys.HeldPart.Hist: adaptive skew splits).
	Hist []int64 `json:"hist,omitempty"`
}

// TaskCounters are the live counters an executor updates while it runs
// (atomically: pipelines may run on several goroutines).
type TaskCounters struct {
	Rows, Batches, BytesIn, BytesOut atomic.Int64
	ScanWire, ScanRead               atomic.Int64
	peak                             atomic.Int64
	// Hist is set once the task ended (a held task's key histogram).
	Hist atomic.Pointer[[]int64]
}

// ObserveMemory records a memory reservation level; the peak is reported.
func (c *TaskCounters) ObserveMemory(bytes int64) {
	for {
		p := c.peak.Load()
		if bytes <= p || c.peak.CompareAndSwap(p, bytes) {
			return
		}
	}
}

// Progress is the state of a query as the client sees it.
type Progress struct {
	QueryID string          `json:"query_id"`
	Kind    string          `json:"kind"`
	State   string          `json:"state"` // "running", "queued" (waiting for memory), "done", "failed", "canceled"
	Elapsed time.Duration   `json:"elapsed"`
	Stages  []StageProgress `json:"stages"`
	Error   string          `json:"error,omitempty"`
	// Attempt is the number of the current (or last) attempt, 0 for the
	// first; Retried says why each earlier attempt failed (a node died,
	// hung or became unreachable). Stages are the current attempt's.
	Attempt int      `json:"attempt,omitempty"`
	Retried []string `json:"retried,omitempty"`
	// Queued is how long the query waited for the coordinator's memory
	// (admission control), so far while State is "queued".
	Queued time.Duration `json:"queued,omitempty"`
}

// StageProgress sums the tasks of one stage.
type StageProgress struct {
	Stage    int    `json:"stage"`
	Name     string `json:"name,omitempty"`
	Tasks    int    `json:"tasks"`
	Running  int    `json:"running"`
	Done     int    `json:"done"`
	Failed   int    `json:"failed"`
	Rows     int64  `json:"rows"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
	// ScanWire and ScanRead sum the tasks' (TaskStats).
	ScanWire int64 `json:"scan_wire,omitempty"`
	ScanRead int64 `json:"scan_read,omitempty"`

	started time.Time // the start of the stage's first task (stage_seconds)
	failed  error     // its first task's failure
	ended   bool      // stage_seconds observed
}

// Final reports whether the query has ended.
func (p Progress) Final() bool { return p.State != "" && p.State != "running" }

// recordBytes approximates a batch's size: the bytes of all its buffers
// (children and dictionaries included).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}
