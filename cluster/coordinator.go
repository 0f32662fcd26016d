package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Client protocol (Arrow Flight on the coordinator's control port, mutual
// TLS):
//
//   - DoGet(ticket): runs a request and streams its result as Arrow record
//     batches. The ticket is a JSON QueryRequest ({"v":1,"id":"...",
//     "kind":"sql","text":"select ..."}) or, for generic Flight clients, the
//     SQL text itself. Errors arrive as gRPC status errors carrying the
//     nferr kind (see ToStatus / FromStatus). Closing the stream (client gone,
//     Ctrl-C) cancels the query and every task of it.
//   - GetFlightInfo(descriptor cmd = ticket bytes): returns one endpoint whose
//     ticket runs the request on this coordinator (for Flight clients that
//     always go through GetFlightInfo).
//   - DoAction("progress", {"query_id"}): streams Progress snapshots (JSON)
//     whenever they change (at most every 100 ms), the last one final. The
//     client picks the query ID, so it can watch before the first batch.
//   - DoAction("cancel", {"query_id"}): cancels a running query.
//   - DoAction("members"): the alive members ([]NodeInfo as JSON).
//   - DoAction("queries"): the running queries' Progress.

// QueryRequest is a client request (the DoGet ticket).
type QueryRequest struct {
	// V is the ticket format version: 1.
	V int `json:"v"`
	// ID names the query (letters, digits, '-', '_'; at most 64). Empty: the
	// coordinator picks one. Clients set it to watch progress or cancel.
	ID string `json:"id,omitempty"`
	// Kind selects the runner: "sql" (default) or "nicflow.check".
	Kind string `json:"kind,omitempty"`
	// Text is the SQL text (or the request text of another kind).
	Text string `json:"text"`
	// Params are named options of the request.
	Params map[string]string `json:"params,omitempty"`
}

// maxTicket bounds a ticket (a SQL script): 16 MiB.
const maxTicket = 16 << 20

// ParseTicket reads a DoGet ticket: a JSON QueryRequest, or plain SQL.
func ParseTicket(b []byte) (QueryRequest, error) {
	var r QueryRequest
	if len(b) > maxTicket {
		return r, nferr.Queryf("request of %d bytes is larger than the %d-byte limit", len(b), maxTicket)
	}
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &r); err != nil {
			return r, nferr.Queryf("request ticket is not valid JSON: %v", err)
		}
		if r.V != 1 {
			return r, nferr.Queryf("request ticket version %d is not supported (want 1)", r.V)
		}
	} else {
		if !utf8.Valid(b) {
			return r, nferr.Queryf("request ticket is neither JSON nor UTF-8 SQL text")
		}
		r = QueryRequest{V: 1, Text: string(b)}
	}
	if r.Kind == "" {
		r.Kind = "sql"
	}
	if len(r.ID) > 64 {
		return r, nferr.Queryf("query id is longer than 64 characters")
	}
	for _, c := range r.ID {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return r, nferr.Queryf("query id %q may contain only letters, digits, '-' and '_'", r.ID)
		}
	}
	return r, nil
}

// Coordinator is the coordinator role's service: it accepts client requests
// over Flight, runs them through the QueryRunner, keeps the scheduler's view
// of the workers and fails queries when nodes die.
type Coordinator struct {
	node   *Node
	runner QueryRunner
	sched  *scheduler
	adm    *engine.Admission // Options.Memory shared by the queries (admission.go)
	gate   *runGate          // Options.MaxRunning: queries running on the workers (admission.go)

	mu       sync.Mutex
	queries  map[string]*Query
	recent   []QueryInfo // final progress of the last finished queries
	regWait  chan struct{}
	conns    map[string]*workerConn
	closed   bool
	stopDog  chan struct{}
	dogDone  chan struct{}
	querySeq uint64
	// suspects are workers a task just failed on by their fault: no new
	// tasks go there until the time given, unless the worker restarts.
	// NB: their own mutex: the scheduler asks while holding its own.
	smu      sync.Mutex
	suspects map[string]suspectEntry
}

type suspectEntry struct {
	until   time.Time
	started time.Time // the worker's Started when it became suspect
	why     string
	hung    *NodeInfo // set when it hung: pardoned once it answers pings again
}

type workerConn struct {
	info NodeInfo
	cc   *grpc.ClientConn
}

// recentQueries is how many finished queries keep their final progress for
// late "progress" watchers.
const recentQueries = 64

func newCoordinator(n *Node, r QueryRunner) (*Coordinator, error) {
	adm, err := newCoordinatorAdmission(&n.opts)
	if err != nil {
		return nil, err
	}
	labels := prometheus.Labels{"node": n.self.ID, "role": n.self.Role.String()}
	n.metrics.reg.MustRegister(AdmissionCollectors(adm, labels)...)
	c := &Coordinator{
		node: n, runner: r, sched: newScheduler(), adm: adm, gate: newRunGate(n.opts.MaxRunning, n.opts.MaxQueued),
		queries: map[string]*Query{}, conns: map[string]*workerConn{}, suspects: map[string]suspectEntry{},
		regWait: make(chan struct{}), stopDog: make(chan struct{}), dogDone: make(chan struct{}),
	}
	c.sched.exclude = c.isSuspect
	n.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_workers_queries_running", ConstLabels: labels,
			Help: "Queries running on the workers now (at most --max-running)."},
			func() float64 { r, _ := c.gate.counts(); return float64(r) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_workers_queries_waiting", ConstLabels: labels,
			Help: "Queries waiting for one of the --max-running places on the workers."},
			func() float64 { _, w := c.gate.counts(); return float64(w) }))
	go c.watchdog()
	return c, nil
}

func (c *Coordinator) register(s *grpc.Server) {
	flight.RegisterFlightServiceServer(s, &flightService{c: c})
}

// Node is the coordinator's node.
func (c *Coordinator) Node() *Node { return c.node }

// Workers returns the scheduler's view of the workers.
func (c *Coordinator) Workers() []WorkerLoad { return c.sched.loads() }

func (c *Coordinator) onMemberEvent(ev MemberEvent) {
	if w, ok := c.runner.(MemberWatcher); ok {
		w.MemberChanged(c, ev)
	}
	switch ev.Type {
	case EventJoin, EventUpdate:
		c.sched.update(ev.Node)
		if ev.Node.Role == RoleWorker && ev.Node.ControlAddr != "" {
			// The control connection's TLS handshake happens now, in
			// the background, rather than inside the first query's
			// task starts (a fresh 16-worker cluster's first query
			// spent 290 ms dialing them one after another).
			if cc, err := c.conn(ev.Node); err == nil {
				cc.Connect()
			}
		}
		c.smu.Lock()
		if s, ok := c.suspects[ev.Node.ID]; ok && (ev.Type == EventJoin || !s.started.Equal(ev.Node.Started)) {
			// Back after gossip declared it dead (a hung process that
			// resumed), or restarted: alive again.
			delete(c.suspects, ev.Node.ID)
		}
		c.smu.Unlock()
	case EventLeave, EventFail:
		c.sched.remove(ev.Node.ID)
		if ev.Node.Role == RoleWorker {
			c.suspect(ev.Node, nferr.Unavailablef("worker %s left the cluster", ev.Node.ID))
		}
		c.mu.Lock()
		wc := c.conns[ev.Node.ID]
		delete(c.conns, ev.Node.ID)
		qs := make([]*Query, 0, len(c.queries))
		for _, q := range c.queries {
			qs = append(qs, q)
		}
		c.mu.Unlock()
		if wc != nil {
			wc.cc.Close()
		}
		how := "left the cluster"
		if ev.Type == EventFail {
			how = "failed (no answer to gossip probes)"
		}
		for _, q := range qs {
			if q.dependsOn(ev.Node.ID) {
				q.Fail(nferr.Unavailablef("%s %s (%s) %s during query %s", roleOr(ev.Node.Role, "node"), ev.Node.ID, ev.Node.GossipAddr, how, q.ID))
			}
		}
	}
}

// suspect keeps new tasks off worker n for Options.SuspectFor after a task
// failed by its fault (or it left), until it restarts.
func (c *Coordinator) suspect(n NodeInfo, why error) {
	c.smu.Lock()
	defer c.smu.Unlock()
	if _, ok := c.suspects[n.ID]; !ok {
		c.node.log.Info("worker suspected: no new tasks for a while", "worker", n.ID, "for", time.Duration(c.node.opts.SuspectFor), "why", why)
	}
	c.suspects[n.ID] = suspectEntry{until: time.Now().Add(time.Duration(c.node.opts.SuspectFor)), started: n.Started, why: why.Error()}
}

// suspectHung makes hung worker n a suspect until it answers gossip pings
// again (a stopped process resumed, a frozen VM thawed) or SuspectFor ends.
func (c *Coordinator) suspectHung(n NodeInfo, why error) {
	c.suspect(n, why)
	c.smu.Lock()
	e := c.suspects[n.ID]
	e.hung = &n
	c.suspects[n.ID] = e
	c.smu.Unlock()
}

// hungSuspects lists the workers suspected because they hung.
func (c *Coordinator) hungSuspects() []NodeInfo {
	c.smu.Lock()
	defer c.smu.Unlock()
	var out []NodeInfo
	for _, e := range c.suspects {
		if e.hung != nil {
			out = append(out, *e.hung)
		}
	}
	return out
}

// pardon lifts the suspicion of worker n when it answers a ping again.
func (c *Coordinator) pardon(n NodeInfo) {
	if c.node.members.ping(n) != nil {
		return
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	if e, ok := c.suspects[n.ID]; ok && e.hung != nil {
		delete(c.suspects, n.ID)
		c.node.log.Info("worker answers again: suspicion lifted", "worker", n.ID)
	}
}

func (c *Coordinator) isSuspect(n NodeInfo) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	s, ok := c.suspects[n.ID]
	switch {
	case !ok:
		return false
	case time.Now().After(s.until) || !s.started.Equal(n.Started):
		delete(c.suspects, n.ID)
		return false
	}
	return true
}

// linkDown returns the control connection to worker n (this
// incarnation) when gRPC reports it neither ready nor connecting, else nil
// (also when there is none: nothing is dialed). A cheap test, made for
// every worker of every query; linkLost then decides.
func (c *Coordinator) linkDown(n NodeInfo) *grpc.ClientConn {
	c.mu.Lock()
	wc, ok := c.conns[n.ID]
	c.mu.Unlock()
	if !ok || wc.info.ControlAddr != n.ControlAddr || !wc.info.Started.Equal(n.Started) {
		return nil
	}
	if st := wc.cc.GetState(); st == connectivity.Ready || st == connectivity.Connecting {
		return nil
	}
	return wc.cc
}

// linkLost reports whether cc, a link linkDown returned, is lost: a
// reconnect does not come up within linkCheck. A killed worker's
// connection drops at once, while gossip takes a second or more to
// declare it dead: a query retried after one killed worker used to place
// tasks on a second one killed with it, and fail again (D66).
func linkLost(cc *grpc.ClientConn) bool {
	// NB: idle also after gRPC's idle timeout on a quiet link: try to
	// connect and see.
	ctx, cancel := context.WithTimeout(context.Background(), linkCheck)
	defer cancel()
	cc.Connect()
	for {
		switch st := cc.GetState(); st {
		case connectivity.Ready:
			return false
		case connectivity.TransientFailure, connectivity.Shutdown:
			return true
		default:
			if !cc.WaitForStateChange(ctx, st) {
				return false // undecided in time: not lost
			}
		}
	}
}

// linkCheck bounds how long linkLost waits for a reconnect.
const linkCheck = 100 * time.Millisecond

// conn returns the (shared) gRPC connection to a worker.
func (c *Coordinator) conn(n NodeInfo) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nferr.Unavailablef("coordinator %s is shutting down", c.node.ID())
	}
	if wc, ok := c.conns[n.ID]; ok && wc.info.ControlAddr == n.ControlAddr && wc.info.Started.Equal(n.Started) {
		return wc.cc, nil
	} else if ok {
		wc.cc.Close()
	}
	if n.ControlAddr == "" {
		return nil, nferr.Unavailablef("worker %s advertises no control address", n.ID)
	}
	cc, err := grpc.NewClient(n.ControlAddr, dialOptions(c.node.keys, c.node.opts.MaxMessageSize)...)
	if err != nil {
		return nil, nferr.Unavailablef("worker %s (%s): %v", n.ID, n.ControlAddr, err)
	}
	c.conns[n.ID] = &workerConn{info: n, cc: cc}
	return cc, nil
}

func newQueryID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run runs a request as if a client had sent it (used by in-process
// callers and tests); out receives the result.
func (c *Coordinator) Run(ctx context.Context, req QueryRequest, out ResultWriter) error {
	if req.Kind == "" {
		req.Kind = "sql"
	}
	q, err := c.newQuery(ctx, req)
	if err != nil {
		return err
	}
	err = c.runRegistered(q, out)
	return err
}

func (c *Coordinator) newQuery(ctx context.Context, req QueryRequest) (*Query, error) {
	if req.ID == "" {
		req.ID = newQueryID()
	}
	retries := -1
	if v, ok := req.Params[ParamRetries]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return nil, nferr.Queryf("parameter %s=%q: want 0 to 100 retries", ParamRetries, v)
		}
		retries = n
	}
	qctx, cancel := context.WithCancelCause(ctx)
	q := &Query{
		ID: req.ID, Kind: req.Kind, Text: req.Text, Params: req.Params,
		c: c, parent: ctx, ctx: qctx, cancel: cancel, maxRetries: retries, started: time.Now(),
		stages: map[int]*StageProgress{}, placements: map[uint64]Placement{}, watch: map[string]bool{},
		changed: make(chan struct{}), state: "running", completed: make(chan struct{}),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cancel(nil)
		return nil, nferr.Unavailablef("coordinator %s is shutting down", c.node.ID())
	}
	if _, dup := c.queries[q.ID]; dup {
		cancel(nil)
		return nil, nferr.Queryf("a query with id %s is already running", q.ID)
	}
	for _, p := range c.recent {
		if p.QueryID == q.ID {
			cancel(nil)
			return nil, nferr.Queryf("query id %s was used by a recent query; choose another", q.ID)
		}
	}
	c.queries[q.ID] = q
	close(c.regWait)
	c.regWait = make(chan struct{})
	c.node.metrics.queriesStarted.Inc()
	c.node.metrics.queriesRunning.Inc()
	return q, nil
}

func (c *Coordinator) runRegistered(q *Query, out ResultWriter) (err error) {
	c.node.log.Debug("query started", "query", q.ID, "kind", q.Kind)
	rw := &retryWriter{out: out, limit: c.node.opts.RetryBuffer, budget: q.admitted}
	for {
		err = c.runAttempt(q, rw)
		if err == nil {
			err = rw.flush()
		}
		if !c.retryable(q, rw, err) {
			break
		}
		c.stopTasks(q, time.Second, false)
		rw.reset()
		c.node.log.Info("retrying query after a node failure", "query", q.ID, "attempt", q.Attempt()+1, "err", err)
		q.nextAttempt(err)
		c.node.metrics.queryRetries.Inc()
		// Give membership a moment to see a dead node as dead, so that
		// the next attempt plans without it.
		select {
		case <-time.After(retryPause(q.Attempt())):
		case <-q.parent.Done():
		}
	}
	rw.release()
	// NB: the coordinator's memory is free once the result is: a waiting
	// query need not wait for finish's confirmations from the workers.
	q.releaseAdmission()
	c.finish(q, err)
	return err
}

// retryPause is the wait before a query's attempt n (1 for the first
// retry). The workers that failed are suspects already (stopTasks probes
// them), so the first retry waits only for a burst of reports to settle;
// later ones wait longer, for gossip to declare a dead node dead (a storage
// node that died mid-scan is still listed for a second or two).
func retryPause(n int) time.Duration {
	switch {
	case n <= 1:
		return 50 * time.Millisecond
	case n == 2:
		return time.Second
	}
	return 2 * time.Second
}

// runAttempt runs the query's current attempt and returns its error: the
// failure that ended it rather than the cancellation the runner saw.
func (c *Coordinator) runAttempt(q *Query, out ResultWriter) (err error) {
	func() {
		defer func() {
			if r := recover(); r != nil {
				c.node.log.Error("query runner panicked", "query", q.ID, "panic", r, "stack", string(debug.Stack()))
				err = nferr.Internalf("query %s: runner panicked: %v", q.ID, r)
			}
		}()
		err = c.runner.RunQuery(q, out)
	}()
	if f := q.failure(); f != nil {
		// NB: the runner usually sees only the cancellation a task failure
		// or a node death caused; the client must get the cause.
		err = f
	} else if err != nil && nferr.Is(err, nferr.KindCanceled) {
		if cause := context.Cause(q.Context()); cause != nil && !nferr.Is(cause, nferr.KindCanceled) && cause != context.Canceled {
			err = cause
		}
	}
	return err
}

// retryable says whether a failed attempt is run again: a node failure
// (KindUnavailable), retries left, nothing of the result sent to the
// client, the client still there and the coordinator not shutting down.
func (c *Coordinator) retryable(q *Query, rw *retryWriter, err error) bool {
	if err == nil || !nferr.Is(err, nferr.KindUnavailable) || rw.sent || q.parent.Err() != nil {
		return false
	}
	q.mu.Lock()
	limit, attempt, canceled := q.maxRetries, q.attempt, q.canceled
	q.mu.Unlock()
	if limit < 0 {
		limit = c.node.opts.QueryRetries
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	return !canceled && !closed && attempt < limit
}

// stopTasks ends the query's current attempt: cancels its context, asks
// every worker that may still run one of its tasks to cancel them and
// confirm within wait, waits for the tasks and releases the placements. A
// worker that does not answer (dead, hung) becomes a suspect: the next
// attempt runs without it.
//
// done says the query succeeded: its result is complete, and the tasks
// still running are not needed any more (they are finishing, or their
// consumer stopped early: a LIMIT). Then the query is marked complete
// (Query.completed) and the workers are asked to stop the tasks as
// complete (cancelRequest.Complete) before the context is canceled, so
// that the worker, the coordinator and the stage metrics all record
// those tasks as ok, not canceled (see the doc comment of nodeMetrics).
func (c *Coordinator) stopTasks(q *Query, wait time.Duration, done bool) {
	q.mu.Lock()
	cancel := q.cancel
	q.mu.Unlock()
	if done {
		q.complete()
	} else {
		cancel(errQueryEnded)
	}
	byWorker := map[string]NodeInfo{}
	q.mu.Lock()
	for _, t := range q.tasks {
		select {
		case <-t.done:
			t.mu.Lock()
			got := t.gotDone
			t.mu.Unlock()
			if got {
				continue
			}
		default:
		}
		byWorker[t.node.ID] = t.node
	}
	q.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range byWorker {
		if _, alive := c.node.Member(n.ID); !alive || c.isSuspect(n) {
			// NB: a suspect (dead, hung) would keep the retry waiting
			// for a cancel it cannot answer; its tasks see their streams
			// canceled when it runs again.
			continue
		}
		wg.Add(1)
		go func(n NodeInfo) {
			defer wg.Done()
			if err := c.cancelOn(n, q.ID, done, wait); err != nil {
				c.suspect(n, nferr.Unavailablef("worker %s did not answer the cancel of query %s: %v", n.ID, q.ID, err))
			}
		}(n)
	}
	wg.Wait()
	if done {
		// NB: after the workers' confirmations: a task's stream canceled
		// first would end it as canceled on its worker.
		cancel(errQueryDone)
	}
	q.wg.Wait()
	q.mu.Lock()
	for id := range q.placements {
		c.sched.release(id)
	}
	q.placements = map[uint64]Placement{}
	q.mu.Unlock()
}

// finish stops every task of q and waits for them, releases resources and
// publishes the final progress.
func (c *Coordinator) finish(q *Query, err error) {
	c.stopTasks(q, 3*time.Second, err == nil)
	q.mu.Lock()
	switch {
	case err == nil:
		q.state = "done"
	case nferr.Is(err, nferr.KindCanceled):
		q.state = "canceled"
	default:
		q.state = "failed"
	}
	if err != nil {
		q.errMsg = err.Error()
	}
	q.signalLocked()
	q.mu.Unlock()
	final := q.Progress()
	c.mu.Lock()
	delete(c.queries, q.ID)
	c.recent = append(c.recent, QueryInfo{Progress: final, Text: clipText(q.Text), Started: q.started})
	if len(c.recent) > recentQueries {
		c.recent = c.recent[len(c.recent)-recentQueries:]
	}
	c.mu.Unlock()
	c.node.metrics.queriesRunning.Dec()
	c.node.metrics.queriesFinished.WithLabelValues(resultLabel(err)).Inc()
	c.node.metrics.querySeconds.WithLabelValues(resultLabel(err)).Observe(time.Since(q.started).Seconds())
	c.node.log.Debug("query finished", "query", q.ID, "state", final.State, "elapsed", final.Elapsed, "err", err)
}

var errQueryEnded = nferr.With(nferr.KindCanceled, context.Canceled)

// errQueryDone is the cause of a query's context, and of its tasks'
// cancellation on the workers, when the query succeeded and its remaining
// tasks are stopped because their output is no longer needed.
var errQueryDone = nferr.Wrap(nferr.KindCanceled, context.Canceled, "query completed: output no longer needed")

// cancelOn sends Cancel for a query to one worker and waits for its reply;
// the error says the worker did not answer. complete: the query succeeded
// (errQueryDone, cancelRequest.Complete).
func (c *Coordinator) cancelOn(n NodeInfo, queryID string, complete bool, wait time.Duration) error {
	reason := errQueryEnded
	if complete {
		reason = errQueryDone
	}
	cc, err := c.conn(n)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+wait/2)
	defer cancel()
	var rep frame
	err = cc.Invoke(ctx, "/"+controlService+"/Cancel", jsonFrame(ftCancel, cancelRequest{QueryID: queryID, Reason: toWireError(reason), Wait: wait, Complete: complete}), &rep, grpc.CallContentSubtype(codecName))
	if err != nil {
		c.node.log.Debug("cancel failed", "worker", n.ID, "query", queryID, "err", err)
		return err
	}
	var r cancelReply
	if rep.decodeHeader(ftAck, &r) == nil && r.StillRunning > 0 {
		c.node.log.Warn("tasks did not stop in time", "worker", n.ID, "query", queryID, "still_running", r.StillRunning)
	}
	return nil
}

// watchdog fails tasks whose worker hangs: silent for HangAfter and not
// answering a direct gossip ping, or silent for HeartbeatTimeout whatever
// the ping says. A worker that answers the ping is busy, not hung.
func (c *Coordinator) watchdog() {
	defer close(c.dogDone)
	timeout := time.Duration(c.node.opts.HeartbeatTimeout)
	hangAfter := time.Duration(c.node.opts.HangAfter)
	t := time.NewTicker(time.Duration(c.node.opts.HeartbeatInterval))
	defer t.Stop()
	probing := map[string]bool{} // nodes with a ping in flight
	probed := make(chan string, 16)
	lastPardon := time.Now()
	for {
		select {
		case <-c.stopDog:
			return
		case id := <-probed:
			delete(probing, id)
			continue
		case <-t.C:
		}
		if time.Since(lastPardon) >= time.Second {
			lastPardon = time.Now()
			for _, n := range c.hungSuspects() {
				if !probing[n.ID] {
					probing[n.ID] = true
					go func() {
						c.pardon(n)
						select {
						case probed <- n.ID:
						case <-c.stopDog:
						}
					}()
				}
			}
		}
		now := time.Now().UnixNano()
		c.mu.Lock()
		qs := make([]*Query, 0, len(c.queries))
		for _, q := range c.queries {
			qs = append(qs, q)
		}
		c.mu.Unlock()
		silentOn := map[string][]*Task{}
		for _, q := range qs {
			for _, tk := range q.Tasks() {
				if tk.isDone() || tk.blocked.Load() {
					continue
				}
				silent := time.Duration(now - tk.lastSeen.Load())
				switch {
				case silent > timeout:
					err := nferr.Unavailablef("worker %s (%s) sent nothing for %v during task %s of query %s",
						tk.node.ID, tk.node.ControlAddr, silent.Round(time.Millisecond), tk.id, q.ID)
					c.suspect(tk.node, err)
					tk.abort(err)
				case silent > hangAfter:
					silentOn[tk.node.ID] = append(silentOn[tk.node.ID], tk)
				}
			}
		}
		for id, tasks := range silentOn {
			if probing[id] {
				continue
			}
			probing[id] = true
			go c.probeHang(tasks, probed)
		}
	}
}

// hangPings is how many gossip pings in a row a silent worker must miss,
// over at least hangConfirm, to count as hung: a process starved of CPU
// (dozens of nodes on a few cores, its first TLS handshakes with every
// peer) can miss pings for a second, a stopped one misses them all.
//
// Unless the cluster is responsive: when other workers (references)
// answer a ping within hangRefRTT while the silent one does not, the
// machine and the network are not starved, and hangPingsFast misses over
// hangConfirmFast suffice (a stopped worker on a 16-worker cluster was
// detected 2.5 s after it stopped, which made each query it hung take
// 2.5-2.9 s against 20-240 ms; D66).
const (
	hangPings   = 3
	hangConfirm = 2 * time.Second

	hangPingsFast   = 2
	hangConfirmFast = 400 * time.Millisecond
	hangRefRTT      = 100 * time.Millisecond
	hangRefs        = 2
)

// responsive reports whether up to hangRefs alive workers other than n
// (not suspects) all answer a ping within hangRefRTT; false when there is
// none to ask.
func (c *Coordinator) responsive(n NodeInfo) bool {
	var refs []NodeInfo
	for _, m := range c.node.Members() {
		if m.Role == RoleWorker && m.ID != n.ID && !c.isSuspect(m) {
			refs = append(refs, m)
		}
	}
	if len(refs) == 0 {
		return false
	}
	mrand.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
	refs = refs[:min(len(refs), hangRefs)]
	ok := make(chan bool, len(refs))
	for _, m := range refs {
		go func() {
			rtt, err := c.node.members.pingRTT(m)
			ok <- err == nil && rtt <= hangRefRTT
		}()
	}
	all := true
	for range refs {
		all = <-ok && all
	}
	return all
}

// probeHang pings the worker of tasks (all on one node, silent for
// HangAfter); when it does not answer, the worker hangs: it becomes a
// suspect and its tasks fail as unavailable, so the query retries without
// it. done receives the node's ID when the probe is over.
func (c *Coordinator) probeHang(tasks []*Task, done chan<- string) {
	n := tasks[0].node
	defer func() {
		select {
		case done <- n.ID:
		case <-c.stopDog:
		}
	}()
	start := time.Now()
	// NB: a worker starved of CPU (dozens of nodes on a few cores, a GC
	// pause) may miss one ping: hangPings in a row, each after its
	// predecessor's timeout, and a task that spoke meanwhile, are needed
	// before the worker counts as hung.
	var perr error
	pings, confirm := hangPings, hangConfirm
	for i := 0; ; i++ {
		if perr = c.node.members.ping(n); perr == nil {
			return
		}
		spoke := false
		for _, tk := range tasks {
			spoke = spoke || time.Unix(0, tk.lastSeen.Load()).After(start)
		}
		if spoke {
			return
		}
		if i == 0 && c.responsive(n) {
			pings, confirm = hangPingsFast, hangConfirmFast
		}
		if i+1 >= pings && time.Since(start) >= confirm {
			break
		}
		// NB: a missed ping already took the probe timeout (250 ms on a
		// LAN); with responsive peers the next ping goes out at once.
		pause := 100 * time.Millisecond
		if pings == hangPingsFast {
			pause = 0
		}
		select {
		case <-time.After(pause):
		case <-c.stopDog:
			return
		}
	}
	c.node.metrics.hangsDetected.Inc()
	how := fmt.Sprintf("%d pings missed over %v", pings, time.Since(start).Round(time.Millisecond))
	if pings == hangPingsFast {
		how += fmt.Sprintf(", while other workers answered within %v", hangRefRTT)
	}
	for _, tk := range tasks {
		if tk.isDone() {
			continue
		}
		silent := time.Since(time.Unix(0, tk.lastSeen.Load()))
		if silent < time.Since(start) {
			continue // it spoke while we pinged: not hung after all
		}
		err := nferr.Unavailablef("worker %s (%s) hangs: silent for %v during task %s of query %s and %v (%s)",
			n.ID, n.ControlAddr, silent.Round(time.Millisecond), tk.id, tk.q.ID, perr, how)
		c.suspectHung(n, err)
		tk.abort(err)
	}
}

func (c *Coordinator) runningProgress() []Progress {
	c.mu.Lock()
	qs := make([]*Query, 0, len(c.queries))
	for _, q := range c.queries {
		qs = append(qs, q)
	}
	c.mu.Unlock()
	out := make([]Progress, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.Progress())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].QueryID < out[j].QueryID })
	return out
}

// QueryInfo is a running or recent query as a status page shows it: its
// progress, its request text (the first 4 KiB) and when it started.
type QueryInfo struct {
	Progress
	Text    string    `json:"text"`
	Started time.Time `json:"started"`
}

// maxInfoText bounds QueryInfo.Text: a status page needs no 16 MiB
// script, and 64 recent ones stay small.
const maxInfoText = 4 << 10

func clipText(s string) string {
	if len(s) <= maxInfoText {
		return s
	}
	i := maxInfoText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Queries returns the running queries (by ID) and the last finished ones
// (oldest first, at most 64).
func (c *Coordinator) Queries() (running, recent []QueryInfo) {
	c.mu.Lock()
	qs := make([]*Query, 0, len(c.queries))
	for _, q := range c.queries {
		qs = append(qs, q)
	}
	recent = append([]QueryInfo(nil), c.recent...)
	c.mu.Unlock()
	for _, q := range qs {
		running = append(running, QueryInfo{Progress: q.Progress(), Text: clipText(q.Text), Started: q.started})
	}
	sort.Slice(running, func(i, j int) bool { return running[i].QueryID < running[j].QueryID })
	return running, recent
}

// Cancel cancels a running query as a client's cancel action does; it
// reports whether a query with that ID was running.
func (c *Coordinator) Cancel(id string) bool {
	c.mu.Lock()
	q := c.queries[id]
	c.mu.Unlock()
	if q == nil {
		return false
	}
	q.Fail(nferr.Wrap(nferr.KindCanceled, context.Canceled, "query %s canceled by an operator", q.ID))
	return true
}

// lookup finds a running query, or the final progress of a recent one,
// waiting up to wait for a query that has not registered yet.
func (c *Coordinator) lookup(ctx context.Context, id string, wait time.Duration) (*Query, *Progress, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		q := c.queries[id]
		var p *Progress
		if q == nil {
			for i := len(c.recent) - 1; i >= 0; i-- {
				if c.recent[i].QueryID == id {
					pp := c.recent[i].Progress
					p = &pp
					break
				}
			}
		}
		ch := c.regWait
		c.mu.Unlock()
		if q != nil || p != nil {
			return q, p, nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil, nil, nferr.Queryf("no query with id %s on this coordinator", id)
		case <-ctx.Done():
			return nil, nil, nferr.With(nferr.KindCanceled, ctx.Err())
		}
	}
}

func (c *Coordinator) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	qs := make([]*Query, 0, len(c.queries))
	for _, q := range c.queries {
		qs = append(qs, q)
	}
	c.mu.Unlock()
	for _, q := range qs {
		q.Fail(nferr.Unavailablef("coordinator %s is shutting down", c.node.ID()))
	}
	// Give the runners a moment to observe the cancellation and finish.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		n := len(c.queries)
		c.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(c.stopDog)
	<-c.dogDone
	c.mu.Lock()
	for id, wc := range c.conns {
		wc.cc.Close()
		delete(c.conns, id)
	}
	c.mu.Unlock()
}

// flightService is the client-facing Flight service.
type flightService struct {
	flight.BaseFlightServer
	c *Coordinator
}

func (s *flightService) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	req, err := ParseTicket(t.GetTicket())
	if err != nil {
		return ToStatus(err)
	}
	q, err := s.c.newQuery(stream.Context(), req)
	if err != nil {
		return ToStatus(err)
	}
	out := &flightResult{stream: stream, m: s.c.node.metrics}
	err = s.c.runRegistered(q, out)
	if err == nil {
		err = out.close()
	} else {
		out.abandon()
	}
	return ToStatus(err)
}

func (s *flightService) GetFlightInfo(ctx context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if d.GetType() != flight.DescriptorCMD {
		return nil, ToStatus(nferr.Queryf("flight descriptor must be a command (the request), not a path"))
	}
	req, err := ParseTicket(d.GetCmd())
	if err != nil {
		return nil, ToStatus(err)
	}
	if req.ID == "" {
		req.ID = newQueryID()
	}
	tkt, _ := json.Marshal(req)
	return &flight.FlightInfo{
		FlightDescriptor: d,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// Action names of the coordinator's Flight service.
const (
	ActionProgress = "progress"
	ActionCancel   = "cancel"
	ActionMembers  = "members"
	ActionQueries  = "queries"
)

func (s *flightService) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range []*flight.ActionType{
		{Type: ActionProgress, Description: `stream progress of a query: body {"query_id":"..."}`},
		{Type: ActionCancel, Description: `cancel a query: body {"query_id":"..."}`},
		{Type: ActionMembers, Description: "list the alive cluster members"},
		{Type: ActionQueries, Description: "list the running queries"},
	} {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}

type queryRef struct {
	QueryID string `json:"query_id"`
}

func (s *flightService) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return ToStatus(nferr.Internalf("encoding %s result: %v", a.GetType(), err))
		}
		return stream.Send(&flight.Result{Body: b})
	}
	switch a.GetType() {
	case ActionMembers:
		return send(s.c.node.Members())
	case ActionQueries:
		return send(s.c.runningProgress())
	case ActionCancel, ActionProgress:
		var ref queryRef
		if err := json.Unmarshal(a.GetBody(), &ref); err != nil || ref.QueryID == "" {
			return ToStatus(nferr.Queryf(`action %s needs a body {"query_id":"..."}`, a.GetType()))
		}
		wait := time.Duration(0)
		if a.GetType() == ActionProgress {
			// NB: the client starts watching as it sends the query; give the
			// query a moment to register.
			wait = 10 * time.Second
		}
		q, final, err := s.c.lookup(stream.Context(), ref.QueryID, wait)
		if err != nil {
			return ToStatus(err)
		}
		if a.GetType() == ActionCancel {
			if q != nil {
				q.Fail(nferr.With(nferr.KindCanceled, nferr.Wrap(nferr.KindCanceled, context.Canceled, "query %s canceled by the client", q.ID)))
			}
			return send(map[string]bool{"canceled": q != nil})
		}
		if final != nil {
			return send(final)
		}
		return s.streamProgress(q, stream, send)
	}
	return ToStatus(nferr.Queryf("unknown action %q (see ListActions)", a.GetType()))
}

func (s *flightService) streamProgress(q *Query, stream flight.FlightService_DoActionServer, send func(any) error) error {
	for {
		p, changed := q.progressAndWait()
		if err := send(p); err != nil {
			return err
		}
		if p.Final() {
			return nil
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
		// NB: at most 10 updates a second: a terminal needs no more. The
		// end of the query is not delayed: the final snapshot goes out at
		// once (clients wait for it, e.g. for the bytes shuffled).
		select {
		case <-time.After(100 * time.Millisecond):
		case <-q.Context().Done():
		case <-stream.Context().Done():
			return nil
		}
	}
}

// flightResult writes a query's result to a DoGet stream.
type flightResult struct {
	stream flight.FlightService_DoGetServer
	w      *flight.Writer
	schema *arrow.Schema
	m      *nodeMetrics
}

func (r *flightResult) SetSchema(s *arrow.Schema) error {
	if r.w != nil {
		if !r.schema.Equal(s) {
			return nferr.Internalf("result schema changed from %v to %v", r.schema, s)
		}
		return nil
	}
	r.schema = s
	r.w = flight.NewRecordWriter(r.stream, ipc.WithSchema(s))
	return nil
}

func (r *flightResult) Write(rec arrow.RecordBatch) error {
	if r.w == nil {
		if err := r.SetSchema(rec.Schema()); err != nil {
			return err
		}
	} else if !r.schema.Equal(rec.Schema()) {
		return nferr.Internalf("result batch schema %v differs from the result schema %v", rec.Schema(), r.schema)
	}
	if err := r.w.Write(rec); err != nil {
		if ctxErr := r.stream.Context().Err(); ctxErr != nil {
			return nferr.Wrap(nferr.KindCanceled, ctxErr, "client went away")
		}
		return nferr.Unavailablef("sending result to the client: %v", err)
	}
	r.m.bytesSent.Add(float64(recordBytes(rec)))
	return nil
}

func (r *flightResult) close() error {
	if r.w == nil {
		r.SetSchema(arrow.NewSchema(nil, nil)) //nolint:errcheck // cannot fail: no writer yet
	}
	if err := r.w.Close(); err != nil {
		return nferr.Unavailablef("finishing the result stream: %v", err)
	}
	return nil
}

func (r *flightResult) abandon() {
	if r.w != nil {
		r.w.Close()
	}
}
