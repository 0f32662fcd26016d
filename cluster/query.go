package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Query is one client request running on the coordinator. The QueryRunner
// uses it to place and start tasks, declare stages and dependencies, and
// report failures. Its methods are safe for concurrent use.
//
// INVARIANT: when RunQuery returns, the coordinator cancels Context(), asks
// every worker still running a task of the query to stop it and waits for
// the confirmation (bounded), and releases all placements. When the query
// succeeded, the workers are asked first (the tasks are stopped as
// complete: their output is no longer needed) and Context() is canceled
// after their confirmations, with errQueryDone as its cause; tasks that
// end then count as ok, not canceled (stopTasks). A failure of any
// task, or the death of a node the query depends on, cancels Context() with
// that error as its cause and is what the client receives.
//
// Attempts: when an attempt fails because a node died, hung or its
// connection broke (KindUnavailable), the coordinator ends it as above and
// calls RunQuery again on the same Query (same ID, progress and client),
// up to the query's retry limit, while none of the result has reached the
// client (coordinator.go, runRegistered). Each attempt has its own
// Context, tasks, placements and watched nodes; the runner must not keep
// any of them across calls.
type Query struct {
	// ID names the query (in errors, progress and on workers).
	ID string
	// Kind is the request kind ("sql", "nicflow.check").
	Kind string
	// Text is the request text (the SQL).
	Text string
	// Params are the request's named options.
	Params map[string]string

	c       *Coordinator
	parent  context.Context // the client's: the query's whole life
	started time.Time
	wg      sync.WaitGroup
	seq     atomic.Uint64

	mu         sync.Mutex
	ctx        context.Context // the current attempt's
	cancel     context.CancelCauseFunc
	attempt    int      // 0 for the first attempt
	retried    []string // why each earlier attempt failed
	maxRetries int      // -1: the coordinator's QueryRetries
	canceled   bool     // the client canceled: never retried
	tasks      []*Task
	stages     map[int]*StageProgress
	placements map[uint64]Placement
	watch      map[string]bool
	failErr    error
	state      string
	errMsg     string
	changed    chan struct{}
	// filterPart receives the tasks' parts of cross-stage key filters
	// (OnFilterPart).
	filterPart func(t *Task, id int, body []byte)
	// Admission (admission.go): the grant of the coordinator's memory
	// and its budget (set by Admit, for the query's whole life), whether
	// it waits for one now, since when and how long it waited before.
	grant    *engine.Grant
	budget   *exec.Budget
	queued   bool
	queuedAt time.Time
	waited   time.Duration
	// deadline and timeout: SetTimeout's statement timeout.
	deadline time.Time
	timeout  *time.Timer
	// completed is closed when the query succeeded and its remaining
	// tasks are being stopped (stopTasks with done): their output is no
	// longer needed, and a task ending from then on is not cut short by
	// a cancel or a failure (recvLoop: stopped).
	completed     chan struct{}
	completedOnce sync.Once
}

// complete marks the query as having its whole result (stopTasks).
func (q *Query) complete() { q.completedOnce.Do(func() { close(q.completed) }) }

func (q *Query) isComplete() bool {
	select {
	case <-q.completed:
		return true
	default:
		return false
	}
}

// OnFilterPart sets fn to receive each part of a cross-stage join key
// filter a task of the current attempt sends (before its tasks start).
func (q *Query) OnFilterPart(fn func(t *Task, id int, body []byte)) {
	q.mu.Lock()
	q.filterPart = fn
	q.mu.Unlock()
}

func (q *Query) onFilterPart() func(t *Task, id int, body []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.filterPart
}

// Context is canceled when the query's current attempt ends, fails or is
// canceled; its cause (context.Cause) is the error.
func (q *Query) Context() context.Context {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ctx
}

// Attempt is the number of the current attempt: 0 for the first, 1 for
// the first retry.
func (q *Query) Attempt() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.attempt
}

// SetRetries sets how many times the query may be retried after a node
// failure (a request's SET query_retries), overriding the coordinator's
// default; negative: never.
func (q *Query) SetRetries(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.maxRetries = max(n, 0)
}

// Workers returns the alive workers the query may use: not those a task
// failed on a moment ago (suspects, see Coordinator), unless every alive
// worker is a suspect: then all of them (trying beats refusing; a worker
// still dead or hung fails the attempt again).
func (q *Query) Workers() []NodeInfo {
	all := q.membersOf(RoleWorker)
	var out []NodeInfo
	for _, w := range all {
		if !q.c.isSuspect(w) {
			out = append(out, w)
		}
	}
	// NB: links not up are checked at once, so that a cluster whose links
	// all went idle waits one linkCheck, not one per worker.
	lost := make([]bool, len(out))
	var wg sync.WaitGroup
	for i, w := range out {
		if cc := q.c.linkDown(w); cc != nil {
			wg.Go(func() { lost[i] = linkLost(cc) })
		}
	}
	wg.Wait()
	kept := out[:0]
	for i, w := range out {
		if lost[i] {
			q.c.suspect(w, nferr.Unavailablef("worker %s (%s): the control connection is lost", w.ID, w.ControlAddr))
			continue
		}
		kept = append(kept, w)
	}
	out = kept
	if len(out) == 0 {
		return all
	}
	return out
}

// StorageNodes returns the alive storage nodes.
func (q *Query) StorageNodes() []NodeInfo { return q.membersOf(RoleStorage) }

func (q *Query) membersOf(r Role) []NodeInfo {
	var out []NodeInfo
	for _, m := range q.c.node.Members() {
		if m.Role == r {
			out = append(out, m)
		}
	}
	return out
}

// DefineStage names a stage and its number of tasks for progress reports
// (optional: stages also appear as their tasks start).
func (q *Query) DefineStage(stage int, name string, tasks int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	sp := q.stageLocked(stage)
	sp.Name = name
	if tasks > sp.Tasks {
		sp.Tasks = tasks
	}
	q.signalLocked()
}

func (q *Query) stageLocked(stage int) *StageProgress {
	sp, ok := q.stages[stage]
	if !ok {
		sp = &StageProgress{Stage: stage}
		q.stages[stage] = sp
	}
	return sp
}

// Watch makes the query fail as soon as one of these nodes leaves or fails
// (storage nodes whose data a plan reads, for example). Nodes running the
// query's tasks are watched already.
func (q *Query) Watch(nodeIDs ...string) error {
	q.mu.Lock()
	for _, id := range nodeIDs {
		q.watch[id] = true
	}
	q.mu.Unlock()
	for _, id := range nodeIDs {
		if _, ok := q.c.node.Member(id); !ok {
			err := nferr.Unavailablef("node %s needed by query %s is not in the cluster", id, q.ID)
			q.Fail(err)
			return err
		}
	}
	return nil
}

func (q *Query) dependsOn(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.watch[id] {
		return true
	}
	// NB: a task that has ended may still have output in flight in its
	// node's shuffle agent: the query depends on every node it ran a task
	// on until it ends.
	for _, t := range q.tasks {
		if t.node.ID == id {
			return true
		}
		for _, n := range t.spec.Needs {
			if n == id && !t.isDone() {
				return true
			}
		}
	}
	return false
}

// Fail ends the query with err (the first failure wins) and cancels its
// context; tasks stop. The runner returns soon after; the client receives
// err.
func (q *Query) Fail(err error) {
	if err == nil {
		return
	}
	q.mu.Lock()
	if q.failErr == nil {
		q.failErr = err
	}
	if nferr.Is(err, nferr.KindCanceled) {
		q.canceled = true
	}
	cancel := q.cancel
	q.mu.Unlock()
	cancel(err)
}

// nextAttempt prepares the query for another run after an attempt that
// failed with err and has been ended (tasks stopped, placements released).
func (q *Query) nextAttempt(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.attempt++
	q.retried = append(q.retried, err.Error())
	q.tasks, q.failErr = nil, nil
	q.stages = map[int]*StageProgress{}
	q.placements = map[uint64]Placement{}
	q.watch = map[string]bool{}
	q.ctx, q.cancel = context.WithCancelCause(q.parent)
	q.signalLocked()
}

func (q *Query) failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failErr
}

// Place reserves workers for reqs (all or none, see scheduler), waiting
// while memory is short. Placements not passed to Start are released with
// Release or when the query ends.
func (q *Query) Place(reqs []TaskRequest) ([]Placement, error) {
	ctx := q.Context()
	if err := ctx.Err(); err != nil {
		return nil, q.ctxErr()
	}
	ps, err := q.c.sched.place(ctx, append([]TaskRequest(nil), reqs...))
	if err != nil {
		if ctx.Err() != nil {
			return nil, q.ctxErr()
		}
		return nil, err
	}
	q.mu.Lock()
	for _, p := range ps {
		q.placements[p.id] = p
	}
	q.mu.Unlock()
	return ps, nil
}

// Release returns unused placements.
func (q *Query) Release(ps ...Placement) {
	q.mu.Lock()
	for _, p := range ps {
		if _, ok := q.placements[p.id]; ok {
			delete(q.placements, p.id)
			q.c.sched.release(p.id)
		}
	}
	q.mu.Unlock()
}

func (q *Query) ctxErr() error { return ctxErrOf(q.Context()) }

func ctxErrOf(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil {
		return nferr.With(nferr.KindCanceled, c)
	}
	return nferr.With(nferr.KindCanceled, ctx.Err())
}

// Start ships spec to the worker of p and returns the running task. The
// placement's resources stay reserved until the task ends.
func (q *Query) Start(p Placement, spec TaskSpec) (*Task, error) {
	q.mu.Lock()
	if _, ok := q.placements[p.id]; !ok {
		q.mu.Unlock()
		return nil, nferr.Internalf("query %s: placement on %s was not made by this query or is already used", q.ID, p.Node.ID)
	}
	delete(q.placements, p.id)
	ctx := q.ctx
	q.mu.Unlock()
	if ctx.Err() != nil {
		q.c.sched.release(p.id)
		return nil, ctxErrOf(ctx)
	}
	n := q.c.node
	t := &Task{
		q: q, ctx: ctx, node: p.Node, spec: spec, placement: p.id,
		id:   fmt.Sprintf("%s/s%d.t%d.%d", q.ID, spec.Stage, spec.Index, q.seq.Add(1)),
		out:  make(chan *frame, 8),
		done: make(chan struct{}),
	}
	t.stats = TaskStats{TaskID: t.id, Node: p.Node.ID, Stage: spec.Stage, Index: spec.Index}
	t.lastSeen.Store(time.Now().UnixNano())
	cc, err := q.c.conn(p.Node)
	if err != nil {
		q.c.sched.release(p.id)
		return nil, err
	}
	stream, err := cc.NewStream(ctx, &runTaskDesc, "/"+controlService+"/RunTask", grpc.CallContentSubtype(codecName))
	if err == nil {
		// NB: the send side stays open: merged key filters follow the
		// spec (SendFilter).
		err = stream.SendMsg(jsonFrame(ftTaskSpec, taskRequest{QueryID: q.ID, TaskID: t.id, Coordinator: n.ID(), Spec: spec}))
		t.stream = stream
	}
	if err != nil {
		q.c.sched.release(p.id)
		if ctx.Err() != nil {
			return nil, ctxErrOf(ctx)
		}
		err = t.remoteErr(err)
		q.c.suspect(t.node, err)
		q.Fail(err)
		return nil, err
	}
	q.mu.Lock()
	q.tasks = append(q.tasks, t)
	sp := q.stageLocked(spec.Stage)
	if sp.started.IsZero() {
		sp.started = time.Now()
	}
	sp.Running++
	if sp.Running+sp.Done+sp.Failed > sp.Tasks {
		sp.Tasks = sp.Running + sp.Done + sp.Failed
	}
	q.signalLocked()
	q.mu.Unlock()
	n.metrics.tasksStarted.Inc()
	n.metrics.tasksRunning.Inc()
	q.wg.Add(1)
	go t.recvLoop(stream)
	// A node the task needs may have died before the task was started: the
	// membership event that fails the query for it (MemberChanged and
	// depends) came before the task was in q.tasks. Checked after the append,
	// so that no death falls between the check and the watch. NB: the
	// coordinator's view decides; a worker's may lag (see checkNeeds).
	for _, id := range spec.Needs {
		if _, ok := n.Member(id); !ok {
			q.Fail(nferr.Unavailablef("task %s needs node %s, which is not in the cluster", t.id, id))
			break
		}
	}
	return t, nil
}

// Tasks returns the tasks started so far.
func (q *Query) Tasks() []*Task {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]*Task(nil), q.tasks...)
}

// Stats returns the latest statistics of every task started so far.
func (q *Query) Stats() []TaskStats {
	ts := q.Tasks()
	out := make([]TaskStats, len(ts))
	for i, t := range ts {
		out[i] = t.Stats()
	}
	return out
}

// Progress is the query's progress now.
func (q *Query) Progress() Progress {
	p, _ := q.progressAndWait()
	return p
}

func (q *Query) progressAndWait() (Progress, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := Progress{QueryID: q.ID, Kind: q.Kind, State: q.state, Elapsed: time.Since(q.started).Round(time.Millisecond), Error: q.errMsg,
		Attempt: q.attempt, Retried: append([]string(nil), q.retried...), Queued: q.waited}
	if q.queued {
		p.Queued += time.Since(q.queuedAt)
		if p.State == "running" {
			p.State = StateQueued
		}
	}
	p.Queued = p.Queued.Round(time.Millisecond)
	for _, sp := range q.stages {
		s := *sp
		s.Rows, s.BytesIn, s.BytesOut, s.ScanWire, s.ScanRead = 0, 0, 0, 0, 0
		p.Stages = append(p.Stages, s)
	}
	idx := map[int]int{}
	sort.Slice(p.Stages, func(i, j int) bool { return p.Stages[i].Stage < p.Stages[j].Stage })
	for i, s := range p.Stages {
		idx[s.Stage] = i
	}
	for _, t := range q.tasks {
		st := t.Stats()
		s := &p.Stages[idx[st.Stage]]
		s.Rows += st.Rows
		s.BytesIn += st.BytesIn
		s.BytesOut += st.BytesOut
		s.ScanWire += st.ScanWire
		s.ScanRead += st.ScanRead
	}
	return p, q.changed
}

func (q *Query) signalLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Task is a task running on a worker, as the coordinator sees it.
type Task struct {
	q         *Query
	ctx       context.Context // its attempt's
	id        string
	node      NodeInfo
	spec      TaskSpec
	placement uint64

	lastSeen atomic.Int64 // unix ns of the last frame received
	blocked  atomic.Bool  // delivering output to a slow consumer: not the worker's fault

	out  chan *frame
	done chan struct{}

	// stream is the task's control stream; sendMu serializes what the
	// coordinator sends on it after the spec (SendFilter).
	stream grpc.ClientStream
	sendMu sync.Mutex

	mu      sync.Mutex
	stats   TaskStats
	err     error
	gotDone bool // the worker reported the end (ftDone)

	outOnce sync.Once
	output  *TaskOutput
}

// ID is the task's cluster-wide ID ("<query>/s<stage>.t<index>.<seq>").
func (t *Task) ID() string { return t.id }

// SendFilter sends the task a merged cross-stage key filter (a marshaled
// storage.KeyFilterPart). A task that ended no longer reads it: the error
// is then of no consequence.
func (t *Task) SendFilter(id int, body []byte) error {
	if t.stream == nil {
		return nil
	}
	h, _ := json.Marshal(filterHeader{ID: id})
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.stream.SendMsg(&frame{Type: ftFilter, Header: h, Body: body})
}

// Node is the worker running the task.
func (t *Task) Node() NodeInfo { return t.node }

// Spec is the task as it was sent.
func (t *Task) Spec() TaskSpec { return t.spec }

// Done is closed when the task has ended.
func (t *Task) Done() <-chan struct{} { return t.done }

func (t *Task) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Stats are the latest statistics the worker reported.
func (t *Task) Stats() TaskStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Wait waits for the task to end and returns its final statistics and
// error. It returns early with the query's error when the query ends.
func (t *Task) Wait() (TaskStats, error) {
	select {
	case <-t.done:
	case <-t.ctx.Done():
		select {
		case <-t.done:
		case <-time.After(100 * time.Millisecond):
			return t.Stats(), ctxErrOf(t.ctx)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats, t.err
}

// Err is the task's error once it has ended (nil while running).
func (t *Task) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// abort ends the task with err (first error wins) and fails the query.
func (t *Task) abort(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.mu.Unlock()
	t.q.Fail(err)
}

func (t *Task) remoteErr(err error) error {
	remote := fmt.Sprintf("worker %s (%s)", t.node.ID, t.node.ControlAddr)
	e := FromStatus(err, "")
	if nferr.Is(e, nferr.KindCanceled) && t.ctx.Err() == nil && !nferr.ReportedByPeer(err) {
		// Not our cancel: the connection to the worker was closed under
		// us (the worker was declared dead a moment ago).
		e = nferr.Unavailablef("%v", err)
	}
	if nferr.Is(e, nferr.KindUnavailable) {
		return nferr.Unavailablef("%s failed during task %s of query %s: %v", remote, t.id, t.q.ID, e)
	}
	k, msg := nferr.Encode(e)
	return nferr.Decode(k, msg, remote)
}

func (t *Task) recvLoop(stream grpc.ClientStream) {
	q := t.q
	ctx := t.ctx
	n := q.c.node
	defer q.wg.Done()
	var result error
	reported := false // result is the worker's own report of its task's failure
	dropped := false  // output frames were dropped after the query completed
	for {
		var f frame
		err := stream.RecvMsg(&f)
		t.lastSeen.Store(time.Now().UnixNano())
		if err != nil {
			t.mu.Lock()
			got := t.gotDone
			t.mu.Unlock()
			switch {
			case got:
				// NB: once the worker reported the end (ftDone), its
				// report is the task's result: the stream's end after it,
				// EOF or the cancel of the query that ended meanwhile
				// (the result delivered, stopTasks), changes nothing. (A
				// canceled stream after a done frame made a task that
				// had succeeded, and its stage, count as canceled.)
			case ctx.Err() != nil:
				result = ctxErrOf(ctx)
			case errors.Is(err, io.EOF):
				result = nferr.Unavailablef("worker %s (%s) ended task %s without a result", t.node.ID, t.node.ControlAddr, t.id)
				q.c.suspect(t.node, result)
			default:
				// The stream broke: the worker died, or the network
				// between us did.
				result = t.remoteErr(err)
				if nferr.Is(result, nferr.KindUnavailable) && !nferr.ReportedByPeer(err) {
					q.c.suspect(t.node, result)
				}
			}
			break
		}
		switch f.Type {
		case ftStarted, ftHeartbeat, ftDone:
			var st taskStatus
			if err := f.decodeHeader(f.Type, &st); err != nil {
				result = nferr.Wrap(nferr.KindData, err, "worker %s, task %s", t.node.ID, t.id)
				break
			}
			st.Stats.TaskID, st.Stats.Node = t.id, t.node.ID
			t.mu.Lock()
			t.stats = st.Stats
			if f.Type == ftDone {
				t.gotDone = true
				t.stats.Done = true
			}
			t.mu.Unlock()
			q.mu.Lock()
			q.signalLocked()
			q.mu.Unlock()
			if f.Type == ftDone {
				result = st.Err.err(fmt.Sprintf("worker %s", t.node.ID))
				reported = result != nil
			}
			continue
		case ftFilterPart:
			var h filterHeader
			if err := f.decodeHeader(ftFilterPart, &h); err != nil {
				result = nferr.Wrap(nferr.KindData, err, "worker %s, task %s", t.node.ID, t.id)
				break
			}
			if fn := q.onFilterPart(); fn != nil {
				fn(t, h.ID, f.Body)
			}
			continue
		case ftData:
			n.metrics.bytesReceived.Add(float64(len(f.Meta) + len(f.Body)))
			t.blocked.Store(true)
			delivered := false
			select {
			case t.out <- &f:
				delivered = true
			case <-ctx.Done():
			case <-q.completed:
			}
			t.blocked.Store(false)
			t.lastSeen.Store(time.Now().UnixNano())
			if delivered {
				continue
			}
			if ctx.Err() == nil {
				// The query has its result and nobody reads this output
				// any more: drop it, and read on to the worker's report,
				// so that a worker sending it is not held by flow control
				// while it stops the task (stopTasks). The output is cut:
				// the task cannot end without an error.
				dropped = true
				continue
			}
			// NB: a frame not delivered ends the task with its cancel: a
			// reader must never see a stream with a frame missing. (The
			// loop went on, dropping some frames of a canceled task and
			// passing others, the select being random: under bench load's
			// cancels the coordinator read streams without their schema,
			// "malformed" (22000), or truncated ones that ended cleanly
			// once the worker's done frame came, a wrong answer.)
			result = ctxErrOf(ctx)
		default:
			result = nferr.Dataf("worker %s sent an unexpected frame type %d for task %s", t.node.ID, f.Type, t.id)
		}
		break
	}
	t.sendMu.Lock()
	_ = stream.CloseSend()
	t.sendMu.Unlock()
	if result == nil && dropped {
		result = nferr.Wrap(nferr.KindCanceled, errQueryDone, "task %s: output dropped after query %s completed", t.id, q.ID)
	}
	// stopped: the task ended canceled after its query had its whole
	// result (a task still finishing, or one whose consumer needed no
	// more: a LIMIT satisfied downstream). Not cut short by a cancel or a
	// failure: it counts as ok in the metrics and its stage's progress,
	// and fails nothing.
	stopped := result != nil && nferr.Is(result, nferr.KindCanceled) && q.isComplete()
	if result != nil && nferr.Is(result, nferr.KindCanceled) && ctx.Err() == nil && !stopped {
		// A worker-side cancellation we did not ask for (the worker is
		// shutting down, or saw a node die): not the client's doing.
		result = nferr.Unavailablef("worker %s canceled task %s: %v", t.node.ID, t.id, result)
	}
	t.mu.Lock()
	if t.err == nil {
		t.err = result
	}
	result = t.err
	t.mu.Unlock()
	q.c.sched.release(t.placement)
	q.mu.Lock()
	sp := q.stageLocked(t.spec.Stage)
	sp.Running--
	if result == nil || stopped {
		sp.Done++
	} else {
		sp.Failed++
		if sp.failed == nil {
			sp.failed = result
		}
	}
	if sp.Running == 0 && sp.Done+sp.Failed >= sp.Tasks && !sp.ended {
		// The stage's last task ended (stages are declared with their
		// task count, DefineStage, before their tasks start).
		sp.ended = true
		n.metrics.stageSeconds.WithLabelValues(resultLabel(sp.failed)).Observe(time.Since(sp.started).Seconds())
	}
	q.signalLocked()
	q.mu.Unlock()
	n.metrics.tasksRunning.Dec()
	if stopped {
		n.metrics.tasksFinished.WithLabelValues("ok").Inc()
	} else {
		n.metrics.tasksFinished.WithLabelValues(resultLabel(result)).Inc()
	}
	close(t.done)
	close(t.out)
	if result != nil && !stopped && !(nferr.Is(result, nferr.KindCanceled) && ctx.Err() != nil) {
		if reported && nferr.Is(result, nferr.KindUnavailable) {
			q.failAfterGrace(result)
		} else {
			q.Fail(result)
		}
	}
}

// peerLossGrace is how long a worker's report that it lost another node
// (a shuffle peer, a storage node) waits before it fails the query: the
// membership usually confirms a death within it, and the death, naming the
// node that died, is the error the client should see (the first failure
// wins).
const peerLossGrace = 2 * time.Second

// failAfterGrace fails the current attempt with err after peerLossGrace,
// unless it has failed or ended by then.
func (q *Query) failAfterGrace(err error) {
	q.mu.Lock()
	attempt, ctx := q.attempt, q.ctx
	q.mu.Unlock()
	go func() {
		select {
		case <-time.After(peerLossGrace):
		case <-ctx.Done():
			return
		}
		q.mu.Lock()
		same := q.attempt == attempt
		q.mu.Unlock()
		if same {
			q.Fail(err)
		}
	}()
}

// Output returns the reader of the batches the task sends (TaskContext.Send
// on the worker). A task whose output is not read blocks when its buffer
// (8 messages) is full.
func (t *Task) Output() *TaskOutput {
	t.outOnce.Do(func() { t.output = &TaskOutput{t: t, alloc: memory.DefaultAllocator} })
	return t.output
}

// TaskOutput reads a task's output batches. It is used by one goroutine.
type TaskOutput struct {
	t     *Task
	alloc memory.Allocator
	msgs  taskMessages
	rdr   *ipc.Reader
	eof   bool
	err   error
}

// SetAllocator sets the allocator for decoded batches (before the first
// Next; tests pass a checked allocator).
func (o *TaskOutput) SetAllocator(a memory.Allocator) { o.alloc = a }

// Next returns the next batch, or (nil, nil) at the end of a successful
// task's output. The batch is valid until the next call of Next or
// Release; keep it longer with Retain. An error of the task or the query
// ends the output with that error.
func (o *TaskOutput) Next() (rec arrow.RecordBatch, err error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.eof {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = nferr.Dataf("worker %s sent a malformed output batch for task %s: %v", o.t.node.ID, o.t.id, r)
			o.err = err
			rec = nil
		}
	}()
	if o.rdr == nil {
		o.msgs.t = o.t
		rdr, err := ipc.NewReaderFromMessageReader(&o.msgs, ipc.WithAllocator(o.alloc))
		if err != nil {
			return nil, o.end(err)
		}
		o.rdr = rdr
	}
	if o.rdr.Next() {
		return o.rdr.RecordBatch(), nil
	}
	return nil, o.end(o.rdr.Err())
}

// end decides how the output ends: the task's own error first, then a
// malformed stream, else a clean end.
func (o *TaskOutput) end(err error) error {
	if err == nil || errors.Is(err, io.EOF) || o.t.isDone() {
		<-o.t.done
		if terr := o.t.Err(); terr != nil {
			o.err = terr
			return terr
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if _, ok := nferr.As(err); !ok {
			err = nferr.Dataf("worker %s sent a malformed output stream for task %s: %v", o.t.node.ID, o.t.id, err)
		}
		o.err = err
		return err
	}
	o.eof = true
	return nil
}

// Release frees the current batch and the reader. Next must not be called
// afterwards.
func (o *TaskOutput) Release() {
	if o.rdr != nil {
		o.rdr.Release()
		o.rdr = nil
	}
	o.msgs.Release()
	if o.err == nil {
		o.err = nferr.Internalf("task %s: output read after Release", o.t.id)
	}
}

// taskMessages is an ipc.MessageReader over a task's data frames.
type taskMessages struct {
	t   *Task
	cur *ipc.Message
}

func (m *taskMessages) Message() (*ipc.Message, error) {
	if m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
	f, ok := <-m.t.out
	if !ok {
		<-m.t.done
		if err := m.t.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	// NB: flatbuffers index without bounds checks; a header shorter than
	// its root offset would read out of range (Next recovers, but refuse
	// the obvious case early).
	if len(f.Meta) < 8 {
		return nil, nferr.Dataf("worker %s sent an output message with a %d-byte header", m.t.node.ID, len(f.Meta))
	}
	m.cur = ipc.NewMessage(memory.NewBufferBytes(f.Meta), memory.NewBufferBytes(f.Body))
	return m.cur, nil
}

func (m *taskMessages) Retain() {}

func (m *taskMessages) Release() {
	if m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
}
