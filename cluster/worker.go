package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The worker side of the control plane: nicflow.Control/RunTask runs one
// task per stream and streams its events back (started, heartbeats with
// statistics, output data, done with final statistics and error);
// nicflow.Control/Cancel stops all tasks of a query and waits for them.
//
// INVARIANT: a task's executor context is canceled when (a) its stream ends
// (the coordinator canceled it, died, or the connection broke: gRPC cancels
// the stream's context), (b) a Cancel for its query arrives, (c) its
// coordinator or a node in Spec.Needs leaves the membership, or (d) the
// worker shuts down. So no task outlives its query.

const controlService = "nicflow.Control"

var (
	// NB: bidirectional: after the task's spec the coordinator sends the
	// merged cross-stage key filters (ftFilter) on the same stream.
	runTaskDesc = grpc.StreamDesc{StreamName: "RunTask", ServerStreams: true, ClientStreams: true}
	controlDesc = grpc.ServiceDesc{
		ServiceName: controlService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Cancel",
			Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				var f frame
				if err := dec(&f); err != nil {
					return nil, ToStatus(err)
				}
				return srv.(*worker).cancelRPC(ctx, &f)
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "RunTask",
			ServerStreams: true,
			ClientStreams: true,
			Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(*worker).runTask(stream) },
		}},
	}
)

// taskRequest is the header of an ftTaskSpec frame.
type taskRequest struct {
	QueryID     string   `json:"query_id"`
	TaskID      string   `json:"task_id"`
	Coordinator string   `json:"coordinator"`
	Spec        TaskSpec `json:"spec"`
}

// taskStatus is the header of ftStarted, ftHeartbeat and ftDone frames.
type taskStatus struct {
	Stats TaskStats  `json:"stats"`
	Err   *wireError `json:"err,omitempty"`
}

type cancelRequest struct {
	QueryID string     `json:"query_id"`
	Reason  *wireError `json:"reason,omitempty"`
	// Wait bounds how long the worker waits for the tasks to exit.
	Wait time.Duration `json:"wait"`
	// Complete: the query succeeded, and the tasks are stopped because
	// their output is no longer needed (they were finishing, or their
	// consumer stopped early: a LIMIT satisfied downstream). A task that
	// ends canceled by it reports success (and counts as ok): it was not
	// cut short by a cancel or a failure. Workers that predate the field
	// cancel the tasks as usual.
	Complete bool `json:"complete,omitempty"`
}

type cancelReply struct {
	Canceled     int `json:"canceled"`
	StillRunning int `json:"still_running"`
}

// TaskContext is what an Executor gets for one task.
type TaskContext struct {
	// QueryID and TaskID identify the task cluster-wide.
	QueryID, TaskID string
	// Coordinator is the ID of the coordinator that started the task.
	Coordinator string
	// Spec is the task as the coordinator sent it.
	Spec TaskSpec
	// Node is the worker running the task: Node.Keys() has the TLS
	// configurations for storage and shuffle connections, Node.Members()
	// the cluster.
	Node *Node
	// Stats are the task's live counters; executors update them.
	Stats *TaskCounters
	// Alloc allocates the task's Arrow buffers.
	Alloc memory.Allocator
	// Log is tagged with the query and task IDs.
	Log *slog.Logger

	maxBatch int
	started  time.Time

	sendMu   sync.Mutex
	send     func(*frame) error
	ipcw     *ipc.Writer
	schema   *arrow.Schema
	sendErr  error
	sentByte int64

	// filterMu guards onFilter and the filters that arrived before the
	// executor asked for them (SetFilterHandler).
	filterMu      sync.Mutex
	onFilter      func(id int, body []byte)
	filtersQueued []queuedFilter
}

type queuedFilter struct {
	id   int
	body []byte
}

// SendFilterPart sends the task's part of cross-stage key filter id (a
// marshaled storage.KeyFilterPart) to the coordinator.
func (tc *TaskContext) SendFilterPart(id int, body []byte) error {
	h, _ := json.Marshal(filterHeader{ID: id})
	return tc.send(&frame{Type: ftFilterPart, Header: h, Body: body})
}

// SetFilterHandler sets fn to receive the merged cross-stage key filters
// the coordinator sends the task (those that came already first).
func (tc *TaskContext) SetFilterHandler(fn func(id int, body []byte)) {
	tc.filterMu.Lock()
	q := tc.filtersQueued
	tc.onFilter, tc.filtersQueued = fn, nil
	tc.filterMu.Unlock()
	for _, f := range q {
		fn(f.id, f.body)
	}
}

// filterArrived hands a merged filter to the executor's handler, or keeps
// it until there is one.
func (tc *TaskContext) filterArrived(id int, body []byte) {
	tc.filterMu.Lock()
	fn := tc.onFilter
	if fn == nil {
		tc.filtersQueued = append(tc.filtersQueued, queuedFilter{id, body})
	}
	tc.filterMu.Unlock()
	if fn != nil {
		fn(id, body)
	}
}

// readFilters reads what the coordinator sends after the task's spec (the
// merged cross-stage key filters) until the stream ends.
func (tc *TaskContext) readFilters(stream grpc.ServerStream) {
	for {
		var f frame
		if err := stream.RecvMsg(&f); err != nil {
			return
		}
		var h filterHeader
		if f.decodeHeader(ftFilter, &h) != nil {
			tc.Log.Debug("ignoring a control frame after the task spec", "type", f.Type)
			continue
		}
		tc.filterArrived(h.ID, f.Body)
	}
}

// Send streams one batch of the task's output to the coordinator, where
// Task.Output reads it. All batches of a task share one schema. Batches
// larger than half the message limit are split. Send blocks while the
// coordinator is not reading (back-pressure) and fails once the task is
// canceled. Safe for concurrent use; rec stays owned by the caller.
func (tc *TaskContext) Send(rec arrow.RecordBatch) error {
	tc.sendMu.Lock()
	defer tc.sendMu.Unlock()
	if tc.sendErr != nil {
		return tc.sendErr
	}
	if tc.ipcw == nil {
		tc.schema = rec.Schema()
		tc.ipcw = ipc.NewWriterWithPayloadWriter(&framePayloadWriter{tc: tc}, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(tc.Alloc))
	} else if !tc.schema.Equal(rec.Schema()) {
		return nferr.Internalf("task %s: output schema changed from %v to %v", tc.TaskID, tc.schema, rec.Schema())
	}
	if err := tc.writeSplit(rec); err != nil {
		tc.sendErr = err
		return err
	}
	return nil
}

func (tc *TaskContext) writeSplit(rec arrow.RecordBatch) error {
	if rec.NumRows() > 1 && recordBytes(rec) > int64(tc.maxBatch) {
		half := rec.NumRows() / 2
		a, b := rec.NewSlice(0, half), rec.NewSlice(half, rec.NumRows())
		defer a.Release()
		defer b.Release()
		if err := tc.writeSplit(a); err != nil {
			return err
		}
		return tc.writeSplit(b)
	}
	if err := tc.ipcw.Write(rec); err != nil {
		if nferr.KindOf(err) == nferr.KindInternal {
			if _, ok := nferr.As(err); !ok {
				return nferr.Wrap(nferr.KindInternal, err, "task %s: sending output", tc.TaskID)
			}
		}
		return err
	}
	return nil
}

func (tc *TaskContext) closeOutput() {
	tc.sendMu.Lock()
	defer tc.sendMu.Unlock()
	if tc.ipcw != nil {
		tc.ipcw.Close()
		tc.ipcw = nil
	}
	if tc.sendErr == nil {
		tc.sendErr = nferr.Internalf("task %s: Send after the executor returned", tc.TaskID)
	}
}

func (tc *TaskContext) snapshot(done bool) TaskStats {
	return TaskStats{
		TaskID: tc.TaskID, Node: tc.Node.ID(), Stage: tc.Spec.Stage, Index: tc.Spec.Index,
		Rows: tc.Stats.Rows.Load(), Batches: tc.Stats.Batches.Load(),
		BytesIn: tc.Stats.BytesIn.Load(), BytesOut: tc.Stats.BytesOut.Load(),
		ScanWire: tc.Stats.ScanWire.Load(), ScanRead: tc.Stats.ScanRead.Load(),
		PeakMemory: tc.Stats.peak.Load(), Wall: time.Since(tc.started), Done: done,
		Hist: tc.hist(done),
	}
}

// hist is the task's key histogram for its final report (nil before).
func (tc *TaskContext) hist(done bool) []int64 {
	if h := tc.Stats.Hist.Load(); done && h != nil {
		return *h
	}
	return nil
}

// framePayloadWriter turns IPC payloads into ftData frames.
type framePayloadWriter struct {
	tc  *TaskContext
	buf bytes.Buffer
}

func (w *framePayloadWriter) Start() error { return nil }
func (w *framePayloadWriter) Close() error { return nil }
func (w *framePayloadWriter) WritePayload(p ipc.Payload) error {
	m := p.Meta()
	defer m.Release()
	w.buf.Reset()
	if err := p.SerializeBody(&w.buf); err != nil {
		return nferr.Internalf("serializing output batch: %v", err)
	}
	f := &frame{Type: ftData, Meta: append([]byte(nil), m.Bytes()...), Body: w.buf.Bytes()}
	n := int64(len(f.Meta) + len(f.Body))
	if err := w.tc.send(f); err != nil {
		return err
	}
	w.tc.Stats.BytesOut.Add(n)
	w.tc.Node.metrics.bytesSent.Add(float64(n))
	return nil
}

type worker struct {
	node *Node
	exec Executor

	mu     sync.Mutex
	tasks  map[string]*runningTask
	closed bool
}

type runningTask struct {
	tc     *TaskContext
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func newWorker(n *Node, e Executor) *worker {
	return &worker{node: n, exec: e, tasks: map[string]*runningTask{}}
}

func (w *worker) register(s *grpc.Server) { s.RegisterService(&controlDesc, w) }

// checkCoordinator allows only peers whose certificate says coordinator.
func checkCoordinator(ctx context.Context) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", nferr.Authf("control call without a peer")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return "", nferr.Authf("control call from %s without TLS", p.Addr)
	}
	name, role, err := PeerIdentity(ti.State)
	if err != nil {
		return "", err
	}
	if role != RoleCoordinator {
		return "", nferr.Authf("%s %s (%s) may not run or cancel tasks: only coordinators may", role, name, p.Addr)
	}
	return name, nil
}

func (w *worker) runTask(stream grpc.ServerStream) error {
	if _, err := checkCoordinator(stream.Context()); err != nil {
		return ToStatus(err)
	}
	var f frame
	if err := stream.RecvMsg(&f); err != nil {
		return ToStatus(nferr.Dataf("reading task: %v", err))
	}
	var req taskRequest
	if err := f.decodeHeader(ftTaskSpec, &req); err != nil {
		return ToStatus(err)
	}
	if req.TaskID == "" || req.QueryID == "" {
		return ToStatus(nferr.Dataf("task request without query or task ID"))
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	tc := &TaskContext{
		QueryID: req.QueryID, TaskID: req.TaskID, Coordinator: req.Coordinator, Spec: req.Spec,
		Node: w.node, Stats: &TaskCounters{}, Alloc: memory.DefaultAllocator,
		Log:      w.node.log.With("query", req.QueryID, "task", req.TaskID),
		maxBatch: w.node.opts.MaxMessageSize / 2,
		started:  time.Now(),
	}
	var sendMu sync.Mutex
	tc.send = func(f *frame) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		if err := stream.SendMsg(f); err != nil {
			if c := context.Cause(ctx); c != nil {
				return nferr.With(nferr.KindCanceled, c)
			}
			return nferr.Unavailablef("task %s: coordinator %s: %v", tc.TaskID, tc.Coordinator, err)
		}
		return nil
	}
	go tc.readFilters(stream)
	rt := &runningTask{tc: tc, cancel: cancel, done: make(chan struct{})}
	defer close(rt.done)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ToStatus(nferr.Unavailablef("worker %s is shutting down", w.node.ID()))
	}
	if _, dup := w.tasks[req.TaskID]; dup {
		w.mu.Unlock()
		return ToStatus(nferr.Internalf("task %s is already running on %s", req.TaskID, w.node.ID()))
	}
	w.tasks[req.TaskID] = rt
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.tasks, req.TaskID)
		w.mu.Unlock()
	}()
	w.checkNeeds(tc)
	m := w.node.metrics
	m.tasksStarted.Inc()
	m.tasksRunning.Inc()
	defer m.tasksRunning.Dec()
	start := time.Now()

	if err := tc.send(jsonFrame(ftStarted, taskStatus{Stats: tc.snapshot(false)})); err != nil {
		m.tasksFinished.WithLabelValues(resultLabel(err)).Inc()
		m.taskSeconds.WithLabelValues(resultLabel(err)).Observe(time.Since(start).Seconds())
		return nil
	}
	hbDone := make(chan struct{})
	hbStopped := make(chan struct{})
	go func() {
		defer close(hbStopped)
		t := time.NewTicker(time.Duration(w.node.opts.HeartbeatInterval))
		defer t.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if tc.send(jsonFrame(ftHeartbeat, taskStatus{Stats: tc.snapshot(false)})) != nil {
					return
				}
			}
		}
	}()
	err := w.execute(ctx, tc)
	close(hbDone)
	<-hbStopped
	tc.closeOutput()
	if err == nil && ctx.Err() != nil {
		// NB: an executor that ignores cancellation and returns nil must not
		// report success for a canceled task.
		err = nferr.With(nferr.KindCanceled, context.Cause(ctx))
	}
	if err != nil && nferr.Is(err, nferr.KindCanceled) {
		if c := context.Cause(ctx); errors.Is(c, errQueryDone) {
			// Stopped because its query had its whole result
			// (cancelRequest.Complete): its output was not needed any
			// more, so it ends as ok. Only a cancel: an error of its own
			// stays one.
			err = nil
		} else if c != nil && !nferr.Is(c, nferr.KindCanceled) {
			err = c // canceled because a node died: report that
		}
	}
	m.tasksFinished.WithLabelValues(resultLabel(err)).Inc()
	m.taskSeconds.WithLabelValues(resultLabel(err)).Observe(time.Since(start).Seconds())
	st := tc.snapshot(true)
	m.taskRows.Add(float64(st.Rows))
	if err != nil {
		tc.Log.Debug("task failed", "err", err)
	}
	tc.send(jsonFrame(ftDone, taskStatus{Stats: st, Err: toWireError(err)})) //nolint:errcheck // the coordinator may be gone
	return nil
}

// execute runs the executor, containing panics.
func (w *worker) execute(ctx context.Context, tc *TaskContext) (err error) {
	defer func() {
		if r := recover(); r != nil {
			tc.Log.Error("task panicked", "panic", r, "stack", string(debug.Stack()))
			err = nferr.Internalf("task %s (%s) panicked on worker %s: %v", tc.TaskID, tc.Spec.Kind, w.node.ID(), r)
		}
	}()
	return w.exec.Execute(ctx, tc)
}

func (w *worker) cancelRPC(ctx context.Context, f *frame) (any, error) {
	if _, err := checkCoordinator(ctx); err != nil {
		return nil, ToStatus(err)
	}
	var req cancelRequest
	if err := f.decodeHeader(ftCancel, &req); err != nil {
		return nil, ToStatus(err)
	}
	reason := req.Reason.err("")
	if reason == nil {
		reason = nferr.With(nferr.KindCanceled, context.Canceled)
	}
	if req.Complete {
		reason = errQueryDone
	}
	wait := req.Wait
	if wait <= 0 || wait > 30*time.Second {
		wait = 5 * time.Second
	}
	rep := w.cancelWhere(func(tc *TaskContext) bool { return tc.QueryID == req.QueryID }, reason, wait)
	return jsonFrame(ftAck, rep), nil
}

// cancelWhere cancels matching tasks and waits up to wait for them to end.
func (w *worker) cancelWhere(match func(*TaskContext) bool, reason error, wait time.Duration) cancelReply {
	w.mu.Lock()
	var hit []*runningTask
	for _, rt := range w.tasks {
		if match(rt.tc) {
			hit = append(hit, rt)
		}
	}
	w.mu.Unlock()
	for _, rt := range hit {
		rt.cancel(reason)
	}
	rep := cancelReply{Canceled: len(hit)}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, rt := range hit {
		select {
		case <-rt.done:
		case <-timer.C:
			rep.StillRunning++
			continue
		}
	}
	return rep
}

func (w *worker) onMemberEvent(ev MemberEvent) {
	if ev.Type != EventLeave && ev.Type != EventFail {
		return
	}
	id := ev.Node.ID
	how := "left the cluster"
	if ev.Type == EventFail {
		how = "failed"
	}
	reason := nferr.Unavailablef("%s %s (%s) %s", roleOr(ev.Node.Role, "node"), id, ev.Node.GossipAddr, how)
	go w.cancelWhere(func(tc *TaskContext) bool {
		if tc.Coordinator == id {
			return true
		}
		for _, n := range tc.Spec.Needs {
			if n == id {
				return true
			}
		}
		return false
	}, reason, 0)
}

// checkNeeds makes sure this worker's membership knows the nodes the task
// needs, so that (c) of the invariant above cancels the task when one of
// them fails. Gossip is eventually consistent: the coordinator that
// scheduled the task saw them alive, but this worker may not have heard of
// one yet (a lost gossip packet on a loaded machine), or may still hold an
// older incarnation as dead. So an unknown node is not a failure: the worker
// syncs its membership with the coordinator's once and runs the task. If the
// node is really gone, the task's connection to it fails (naming it) and the
// coordinator, which sees the node fail, cancels the query.
func (w *worker) checkNeeds(tc *TaskContext) {
	var missing []string
	for _, id := range tc.Spec.Needs {
		if _, ok := w.node.Member(id); !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return
	}
	coord, ok := w.node.Member(tc.Coordinator)
	if !ok {
		return
	}
	if err := w.node.members.sync(coord.GossipAddr); err != nil {
		w.node.log.Debug("membership sync with the coordinator failed", "task", tc.TaskID, "err", err)
	}
	for _, id := range missing {
		if _, ok := w.node.Member(id); !ok {
			w.node.log.Warn("running a task that needs a node this worker does not see; the coordinator does", "task", tc.TaskID, "node", id)
		}
	}
}

func roleOr(r Role, def string) string {
	if r == 0 {
		return def
	}
	return r.String()
}

func (w *worker) running() []TaskStats {
	w.mu.Lock()
	out := make([]TaskStats, 0, len(w.tasks))
	for _, rt := range w.tasks {
		out = append(out, rt.tc.snapshot(false))
	}
	w.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out
}

// close cancels every task; graceful waits up to 2 s for them to end.
func (w *worker) close(graceful bool) {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	wait := time.Duration(0)
	if graceful {
		wait = 2 * time.Second
	}
	w.cancelWhere(func(*TaskContext) bool { return true }, nferr.Unavailablef("worker %s is shutting down", w.node.ID()), wait)
}

func errUnknownTaskKind(kind string, m ExecutorMux) error {
	return nferr.Internalf("no executor for task kind %q on this worker (it runs %v): mixed nicflow versions?", kind, slices.Sorted(maps.Keys(m)))
}

func errUnknownKind(kind string, m RunnerMux) error {
	return nferr.Queryf("this coordinator does not run %q requests (it runs %v)", kind, slices.Sorted(maps.Keys(m)))
}
