package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/engine/dist"

	"github.com/nicflow/nicflow/engine/phys"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
	"github.com/nicflow/nicflow/storage"
)

// Distributed SQL on a cluster: the coordinator's "sql" QueryRunner and
// the workers' "engine.fragment" Executor.
//
// The coordinator holds the database directory's catalog (an
// engine.Session on DIR: tables, statistics, and which storage nodes hold
// each file). For a request it plans statement k of the script into stages
// (engine.PlanDistributed) for the alive workers, places tables whose
// files are not on alive storage nodes (DB.Place, replication R), assigns
// wide stages' task t to worker t and single-task stages round-robin,
// reserves all tasks at once (q.Place, pinned), ships every task its
// fragment (JSON) with the shuffle channels, the workers' shuffle agent
// addresses and the placement of the tables it scans, and streams the root
// task's output to the client. A statement that changes the database runs
// on the coordinator's session instead (engine.DistQuery.Local), after
// which the storage nodes are pruned of the files the catalog no longer
// places on them (storage.DB.Prune).
//
// Every worker runs a corun shuffle agent (mutual TLS with the cluster's
// keys) whose address it advertises as its DataAddr; its node index in
// shuffle channels is ShuffleIndex(its node ID). Scans read through
// storage.PlacedScanner from the storage nodes holding the files (mutual
// TLS), with the projection and predicate, so filtering happens there.

// SQLKind is the request kind of SQL; FragmentTaskKind the task kind of
// plan fragments; PlaceKind the request that places every table on the
// storage nodes.
const (
	SQLKind          = "sql"
	FragmentTaskKind = "engine.fragment"
	PlaceKind        = "nicflow.place"
)

// Request parameters of SQLKind.
const (
	// ParamStatement is the 0-based statement of the script to run (the
	// earlier ones' SET query_retries are replayed); default the last.
	ParamStatement = "statement"
	// ParamReplication (PlaceKind) is the replication factor.
	ParamReplication = "replication"
)

// StatusMetadataKey is the result schema metadata key carrying the status
// of a statement without rows (CREATE VIEW).
const StatusMetadataKey = "nicflow.status"

// ShuffleIndex is a worker's node index in shuffle channels: a hash of its
// node ID (stable across restarts, known to every member without
// coordination). Two workers whose IDs collide are not used together: the
// coordinator keeps the one that started first and logs the other.
func ShuffleIndex(nodeID string) int {
	// NB: 65535 indexes (shuffle's limit is 65536 nodes).
	return int(xxh3.HashString(nodeID) % 65535)
}

// SQLOptions configure the coordinator's SQL runner.
type SQLOptions struct {
	// Replication is the number of storage nodes each file is placed on
	// when the coordinator places a table (default 1).
	Replication int
	// MemoryLimit is each task's memory budget (0: the worker's default).
	MemoryLimit int64
	// BatchSize of the tasks (0: default).
	BatchSize int
	// Parallelism overrides the streams per task (0: the smallest core
	// count the workers advertise, at least 2).
	Parallelism int
}

// SQLRunner is the coordinator's QueryRunner for SQL.
type SQLRunner struct {
	sess  *engine.Session
	opts  SQLOptions
	seq   atomic.Uint64
	place sync.Mutex

	once    sync.Once
	metrics *sqlMetrics

	repairMu  sync.Mutex
	repairDue *time.Timer // a repair of placements is scheduled

	coord atomic.Pointer[Coordinator] // whose queries SHOW QUERIES lists
}

// NewSQLRunner returns the runner over a coordinator's session (its
// catalog; the session must stay open while the runner serves).
func NewSQLRunner(sess *engine.Session, opts SQLOptions) *SQLRunner {
	if opts.Replication <= 0 {
		opts.Replication = 1
	}
	r := &SQLRunner{sess: sess, opts: opts}
	sess.SetQueryLister(r)
	// NB: query numbers name shuffle channels cluster-wide (q<<16 | x);
	// a random start keeps a restarted coordinator from reusing the
	// channels of its previous life while they linger.
	r.seq.Store(uint64(rand.Uint32()) << 8)
	return r
}

type sqlMetrics struct {
	queries  prometheus.Counter
	shuffled prometheus.Counter
}

func (r *SQLRunner) metricsOn(n *Node) *sqlMetrics {
	r.once.Do(func() {
		m := &sqlMetrics{
			queries:  prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_sql_queries_total", Help: "SQL statements run on the cluster."}),
			shuffled: prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_sql_shuffled_bytes_total", Help: "Payload bytes SQL queries sent through network exchanges."}),
		}
		n.Metrics().MustRegister(m.queries, m.shuffled)
		r.metrics = m
	})
	return r.metrics
}

// repairDelay gathers a burst of storage membership changes (a node's join
// and its Flight address arriving a gossip round later, several nodes
// restarting) into one repair.
const repairDelay = time.Second

// MemberChanged implements MemberWatcher: when storage nodes come, go or
// change, the placements of the catalog's tables are repaired (files a node
// lost or that were only on a node that left are sent again, up to the
// replication factor: storage.DB.Repair).
func (r *SQLRunner) MemberChanged(c *Coordinator, ev MemberEvent) {
	if ev.Node.Role != RoleStorage {
		return
	}
	r.repairMu.Lock()
	defer r.repairMu.Unlock()
	if r.repairDue != nil {
		r.repairDue.Reset(repairDelay)
		return
	}
	r.repairDue = time.AfterFunc(repairDelay, func() {
		r.repairMu.Lock()
		r.repairDue = nil
		r.repairMu.Unlock()
		r.repair(c)
	})
}

// repair brings every placed table back to the replication factor on the
// alive storage nodes.
func (r *SQLRunner) repair(c *Coordinator) {
	var nodes []storage.Node
	for _, m := range c.node.Members() {
		if m.Role == RoleStorage && m.FlightAddr != "" && !m.Leaving {
			nodes = append(nodes, storage.Node{ID: m.ID, Addr: m.FlightAddr})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	r.place.Lock()
	defer r.place.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := r.sess.DB().Repair(ctx, nodes, r.opts.Replication, storage.ClientOptions{TLS: c.node.Keys().ClientTLS()})
	log := c.node.Logger()
	switch {
	case err != nil:
		log.Warn("repairing placements failed; the next storage change or query placement tries again", "err", err)
	case rep.Copied > 0 || len(rep.Unreachable) > 0:
		log.Info("repaired placements", "files_copied", rep.Copied, "unreachable", rep.Unreachable, "nodes", len(nodes))
	}
	r.pruneLocked(ctx, c, nodes)
}

// prune drops, on every alive storage node, the files and tables the
// catalog no longer places there (after a statement rewrote or dropped
// tables on the coordinator): storage.DB.Prune. A node that cannot be
// reached is pruned by a later statement, placement or repair.
func (r *SQLRunner) prune(c *Coordinator) {
	var nodes []storage.Node
	for _, m := range c.node.Members() {
		if m.Role == RoleStorage && m.FlightAddr != "" && !m.Leaving {
			nodes = append(nodes, storage.Node{ID: m.ID, Addr: m.FlightAddr})
		}
	}
	if len(nodes) == 0 {
		return
	}
	r.place.Lock()
	defer r.place.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.pruneLocked(ctx, c, nodes)
}

// pruneLocked is prune with r.place held (no placement runs meanwhile:
// a file sent but not yet recorded would be dropped).
func (r *SQLRunner) pruneLocked(ctx context.Context, c *Coordinator, nodes []storage.Node) {
	reps, unreachable, err := r.sess.DB().Prune(ctx, nodes, storage.ClientOptions{TLS: c.node.Keys().ClientTLS()})
	log := c.node.Logger()
	if err != nil {
		log.Warn("pruning storage nodes failed", "err", err)
		return
	}
	for id, rep := range reps {
		if rep.Tables > 0 || rep.Files > 0 {
			log.Info("pruned storage node", "node", id, "tables_dropped", rep.Tables, "files_removed", rep.Files)
		}
	}
	if len(unreachable) > 0 {
		log.Warn("storage nodes not pruned (unreachable)", "nodes", unreachable)
	}
}

// RunQuery implements QueryRunner: PlaceKind and SQLKind requests.
func (r *SQLRunner) RunQuery(q *Query, out ResultWriter) error {
	if q.Kind == PlaceKind {
		return r.runPlace(q, out)
	}
	m := r.metricsOn(q.c.node)
	m.queries.Inc()
	k := -1
	if s, ok := q.Params[ParamStatement]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nferr.Queryf("parameter %s=%q: want a statement index", ParamStatement, s)
		}
		k = n
	}
	if k < 0 {
		stmts, err := engine.SplitScript(q.Text)
		if err != nil {
			return err
		}
		k = len(stmts) - 1
	}
	r.coord.Store(q.c)
	began := time.Now()
	// Admission (admission.go): the statement reserves its share of the
	// coordinator's memory before it is planned (a statement run here
	// plans and runs under the session's lock: it must not wait there).
	ctx := q.Context()
	admit, timeout, err := r.sess.ClusterStatement(ctx, q.Text, k)
	if err != nil {
		return err
	}
	q.SetTimeout(timeout)
	switch admit {
	case engine.AdmitQuery:
		// NB: what the coordinator holds of a query run in stages is its
		// result held back for retries (at most RetryBuffer).
		if _, err := q.Admit(ctx, min(q.c.node.opts.QueryMemory, q.c.node.opts.RetryBuffer)); err != nil {
			return err
		}
	case engine.AdmitLocal:
		b, err := q.Admit(ctx, q.c.node.opts.QueryMemory)
		if err != nil {
			return err
		}
		ctx = engine.WithBudget(ctx, b)
	}
	workers := r.workers(q)
	if len(workers) == 0 {
		return nferr.Unavailablef("query %s: no worker with a shuffle agent in the cluster (start one with `nicflow worker`)", q.ID)
	}
	par := r.opts.Parallelism
	if par <= 0 {
		par = workers[0].Cores
		for _, w := range workers {
			par = min(par, w.Cores)
		}
		par = max(par, 2)
	}
	dq, err := r.sess.PrepareDistributed(ctx, q.Text, k, dist.DistOptions{Workers: len(workers), Parallelism: par})
	if err != nil {
		return err
	}
	planned := time.Since(began)
	if dq.Retries >= 0 {
		q.SetRetries(dq.Retries)
	}
	if dq.Zone != "" {
		out = zonedWriter{out, dq.Zone}
	}
	if dq.Local != nil {
		if dq.Changed {
			r.prune(q.c)
		}
		return writeLocal(dq.Local, out)
	}
	if dq.Explain && !dq.Analyze {
		return writeLocal(engine.TextResult(dq.ExplainText(nil, 0, 0)), out)
	}
	// NB: the workers' CPU is not theirs to admit; the coordinator runs
	// at most MaxRunning queries on them (admission.go, runGate). A query
	// that reads no data (select 1, a pool's health check) is not held
	// behind the queries that do.
	if admit == engine.AdmitQuery {
		release, err := q.c.gate.acquire(ctx, workers, q.setQueued)
		if err != nil {
			return err
		}
		defer release()
	}
	start := time.Now()
	res, err := r.run(q, dq, workers, out)
	if err != nil {
		return err
	}
	// Where the coordinator's time went (--log-level debug): a query
	// slower on a cluster than embedded shows here whether planning,
	// the adaptive waves, starting tasks or the tasks themselves cost it.
	q.c.node.log.Debug("query phases", "query", q.ID, "admit_and_plan", planned, "gate", start.Sub(began)-planned,
		"waves", res.waves, "start", res.start, "first_batch", res.first, "total", time.Since(began))
	m.shuffled.Add(float64(res.shuffled))
	if dq.Explain {
		text := dq.ExplainText(res.stats, res.rows, time.Since(start))
		return writeLocal(engine.TextResult(text), out)
	}
	return nil
}

// RunningQueries implements engine.QueryLister: SHOW QUERIES on a
// cluster lists the coordinator's running queries, a query waiting for
// the coordinator's memory as "queued" (its elapsed time is its wait so
// far).
func (r *SQLRunner) RunningQueries() []engine.QueryInfo {
	c := r.coord.Load()
	if c == nil {
		return nil
	}
	running, _ := c.Queries()
	out := make([]engine.QueryInfo, 0, len(running))
	for _, q := range running {
		var rows int64
		top := -1
		for _, s := range q.Stages {
			if s.Stage > top {
				top, rows = s.Stage, s.Rows
			}
		}
		out = append(out, engine.QueryInfo{ID: q.QueryID, State: q.State, Source: "cluster", SQL: q.Text, Started: q.Started, Rows: rows})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// workers are the alive workers with a shuffle agent, in a stable order,
// without shuffle-index collisions.
func (r *SQLRunner) workers(q *Query) []NodeInfo {
	var ws []NodeInfo
	for _, w := range q.Workers() {
		if w.DataAddr != "" && !w.Leaving {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool {
		if !ws[i].Started.Equal(ws[j].Started) {
			return ws[i].Started.Before(ws[j].Started)
		}
		return ws[i].ID < ws[j].ID
	})
	seen := map[int]string{}
	out := ws[:0]
	for _, w := range ws {
		i := ShuffleIndex(w.ID)
		if other, ok := seen[i]; ok {
			q.c.node.Logger().Warn("two workers share a shuffle index; rename one (--node-id)", "worker", w.ID, "other", other, "index", i)
			continue
		}
		seen[i] = w.ID
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func writeLocal(res *engine.Result, out ResultWriter) error {
	defer res.Close()
	if res.Schema == nil {
		md := arrow.NewMetadata([]string{StatusMetadataKey}, []string{res.Status})
		return out.SetSchema(arrow.NewSchema(nil, &md))
	}
	if err := out.SetSchema(res.Schema); err != nil {
		return err
	}
	for {
		rec, err := res.Next()
		if err != nil || rec == nil {
			return err
		}
		if err := out.Write(rec); err != nil {
			return err
		}
	}
}

// zonedWriter names the statement's time zone in the result schema
// (ZoneMetadataKey), so that clients print TIMESTAMPTZ values in it.
type zonedWriter struct {
	ResultWriter
	zone string
}

func (w zonedWriter) SetSchema(s *arrow.Schema) error {
	md := s.Metadata()
	keys := append(append([]string(nil), md.Keys()...), ZoneMetadataKey)
	vals := append(append([]string(nil), md.Values()...), w.zone)
	m := arrow.NewMetadata(keys, vals)
	return w.ResultWriter.SetSchema(arrow.NewSchema(s.Fields(), &m))
}

type runResult struct {
	rows     int64
	shuffled int64
	stats    *dist.DistStats
	// waves is the time the adaptive waves took, start the time to
	// start the plan's tasks after them, first the time from run's
	// start to the first result batch.
	waves, start, first time.Duration
}

func (r *SQLRunner) run(q *Query, dq *engine.DistQuery, workers []NodeInfo, out ResultWriter) (runResult, error) {
	var res runResult
	began := time.Now()
	// Adaptive execution: the build sides whose size decides the plan run
	// first (waves of held stages), and the rest is planned with their
	// real sizes (dist.Adapt).
	dp, err := dist.Adapt(q.Context(), dq.Plan, fmt.Sprintf("%s.%d", q.ID, r.seq.Add(1)), func(ctx context.Context, wave *dist.DistPlan) (map[string][]phys.HeldPart, *dist.DistStats, error) {
		return r.runWave(q, dq, wave, workers)
	})
	if err != nil {
		return res, err
	}
	dq.Plan = dp
	res.waves = time.Since(began)
	tasks, root, err := r.startTasks(q, dq, dp, workers)
	if err != nil {
		return res, err
	}
	res.start = time.Since(began) - res.waves
	if dq.Analyze {
		reports, rows, err := collectReports(q, tasks)
		if err != nil {
			return res, err
		}
		res.rows, res.stats = rows, dist.CollectStats(reports)
	} else {
		o := root.Output()
		defer o.Release()
		schemaSet := false
		for {
			rec, err := o.Next()
			if err != nil {
				return res, err
			}
			if rec == nil {
				break
			}
			if !schemaSet {
				res.first = time.Since(began)
				if err := out.SetSchema(rec.Schema()); err != nil {
					return res, err
				}
				schemaSet = true
			}
			res.rows += rec.NumRows()
			if err := out.Write(rec); err != nil {
				return res, err
			}
		}
		if !schemaSet {
			if err := out.SetSchema(resultSchema(dp)); err != nil {
				return res, err
			}
		}
		if _, err := root.Wait(); err != nil {
			return res, err
		}
	}
	for _, t := range tasks {
		if t != root {
			res.shuffled += t.Stats().BytesOut
		}
	}
	return res, nil
}

// startTasks places and starts every task of dp; root is the root stage's
// task (nil for an adaptive wave, whose stages are held).
func (r *SQLRunner) startTasks(q *Query, dq *engine.DistQuery, dp *dist.DistPlan, workers []NodeInfo) ([]*Task, *Task, error) {
	tables, storageNodes, needs, err := r.placement(q, dp)
	if err != nil {
		return nil, nil, err
	}
	if len(needs) > 0 {
		if err := q.Watch(needs...); err != nil {
			return nil, nil, err
		}
	}
	w := len(workers)
	qn := r.seq.Add(1)
	byIndex := map[int]NodeInfo{}
	for _, wk := range workers {
		byIndex[ShuffleIndex(wk.ID)] = wk
	}
	// NB: each query starts its tasks at another worker, so that queries
	// using fewer tasks than there are workers (small ones, dist's
	// widestScan) spread over all of them. A task reading a held output
	// runs where it is held.
	off := int(qn % uint64(w))
	// Wide stages' tasks go where their row groups are (placement.go).
	storageHost := map[string]string{}
	for _, sn := range q.StorageNodes() {
		if !sn.Leaving {
			storageHost[sn.ID] = nodeHost(sn)
		}
	}
	hosts := make([]string, w)
	for i, wk := range workers {
		hosts[i] = nodeHost(wk)
	}
	// Stages of fewer tasks than workers that scan tables start at the
	// worker their tables hash to, unless it is busy (soft affinity,
	// placement.go): a table's small scans keep meeting the same warm
	// connections, handshakes and footers.
	affinity := map[int]int{}
	for _, s := range dp.Stages {
		if _, held := dp.HeldNode(s.ID, 0); held || s.Tasks >= w {
			continue
		}
		if key := stageTables(s); key != "" {
			affinity[s.ID] = affinityStart(key, workers)
		}
	}
	var busy map[string]bool
	if len(affinity) > 0 && q.c != nil {
		busy = busyWorkers(q.c.sched.loads())
	}
	rotation := func(stage, task int) int {
		if s := dp.Stage(stage); s != nil && s.Tasks == 1 {
			return (stage + off) % w
		}
		return (task + off) % w
	}
	def := func(stage, task int) int {
		if a, ok := affinity[stage]; ok {
			if i := (a + task) % w; !busy[workers[i].ID] {
				return i
			}
		}
		return rotation(stage, task)
	}
	byData := map[int][]int{}
	for _, s := range dp.Stages {
		if _, held := dp.HeldNode(s.ID, 0); held || s.Tasks <= 1 || s.Tasks > w {
			continue
		}
		if a := placeByData(taskRowGroupHosts(s, tables, storageHost), hosts, func(t int) int { return def(s.ID, t) }); a != nil {
			byData[s.ID] = a
		}
	}
	worker := func(stage, task int) NodeInfo {
		if n, ok := dp.HeldNode(stage, task); ok {
			if wk, ok := byIndex[n]; ok {
				return wk
			}
		}
		if a := byData[stage]; task < len(a) {
			return workers[a[task]]
		}
		return workers[def(stage, task)]
	}
	for _, s := range dp.Stages {
		for t := 0; t < s.Tasks; t++ {
			if n, ok := dp.HeldNode(s.ID, t); ok {
				if _, ok := byIndex[n]; !ok {
					return nil, nil, nferr.Unavailablef("query %s: the worker holding part %d of stage %d's input left the cluster", q.ID, t, s.ID)
				}
			}
		}
	}
	node := func(stage, task int) int { return ShuffleIndex(worker(stage, task).ID) }
	frags, err := dp.Fragments(q.ID, qn, node)
	if err != nil {
		return nil, nil, err
	}
	peers := map[int]string{}
	for _, wk := range workers {
		peers[ShuffleIndex(wk.ID)] = wk.DataAddr
	}
	var reqs []TaskRequest
	type planned struct {
		f    *dist.Fragment
		spec TaskSpec
	}
	var all []planned
	for _, s := range dp.Stages {
		name := fmt.Sprintf("stage %d", s.ID)
		if s.Out == nil {
			name += " (result)"
		} else {
			name += " (" + string(s.Out.Kind) + ")"
		}
		q.DefineStage(s.ID, name, s.Tasks)
		scans := map[string]*storage.PlacedTable{}
		s.Walk(func(n *phys.PhysNode) {
			if n.Kind == phys.PhysScan {
				scans[n.Scan.Spec.Table] = tables[n.Scan.Spec.Table]
			}
		})
		for t, f := range frags[s.ID] {
			f.Peers, f.Tables, f.Storage = peers, scans, storageNodes
			f.MemoryLimit, f.BatchSize, f.Analyze = r.opts.MemoryLimit, r.opts.BatchSize, dq.Analyze
			b, err := dist.MarshalFragment(f)
			if err != nil {
				return nil, nil, err
			}
			spec := TaskSpec{Kind: FragmentTaskKind, Stage: s.ID, Index: t, Fragment: b}
			if len(scans) > 0 {
				spec.Needs = needs
			}
			all = append(all, planned{f: f, spec: spec})
			reqs = append(reqs, TaskRequest{Stage: s.ID, Cores: 1, Node: worker(s.ID, t).ID})
		}
	}
	places, err := q.Place(reqs)
	if err != nil {
		return nil, nil, err
	}
	relay := relayFilters(q, dp)
	started, err := startAll(q, places, func(i int) TaskSpec { return all[i].spec })
	if err != nil {
		return nil, nil, err
	}
	var root *Task
	for i, t := range started {
		relay.started(t)
		if all[i].f.Out == nil {
			root = t
		}
	}
	return started, root, nil
}

// startConcurrency bounds the task starts in flight at once: each is a
// stream opened to a worker and the task's spec sent on it, a round trip
// that one after another made a 64-task stage wait for 64 of them.
const startConcurrency = 16

// startAll starts the task of each placement (spec(i) for places[i]),
// up to startConcurrency at once. On the first failure it starts no more
// (their placements are released) and returns that error; the tasks that
// did start are the query's and end with it.
func startAll(q *Query, places []Placement, spec func(i int) TaskSpec) ([]*Task, error) {
	tasks := make([]*Task, len(places))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		sem     = make(chan struct{}, startConcurrency)
		skipped []Placement
	)
	for i, p := range places {
		sem <- struct{}{}
		mu.Lock()
		failed := first != nil
		if failed {
			skipped = append(skipped, p)
		}
		mu.Unlock()
		if failed {
			<-sem
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			t, err := q.Start(p, spec(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			tasks[i] = t
		}()
	}
	wg.Wait()
	if first != nil {
		q.Release(skipped...)
		return nil, first
	}
	return tasks, nil
}

// runWave runs an adaptive wave to its end and returns its held outputs'
// parts: per task, the worker holding it and its rows.
func (r *SQLRunner) runWave(q *Query, dq *engine.DistQuery, wave *dist.DistPlan, workers []NodeInfo) (map[string][]phys.HeldPart, *dist.DistStats, error) {
	tasks, _, err := r.startTasks(q, dq, wave, workers)
	if err != nil {
		return nil, nil, err
	}
	var stats *dist.DistStats
	if dq.Analyze {
		// NB: an analyzed held task sends its report as its output.
		reports, _, err := collectReports(q, tasks)
		if err != nil {
			return nil, nil, err
		}
		stats = dist.CollectStats(reports)
	}
	parts := map[string][]phys.HeldPart{}
	for _, s := range wave.Stages {
		if s.Out != nil && s.Out.Kind == exec.ExchangeHeld {
			parts[s.Out.Held] = make([]phys.HeldPart, s.Tasks)
		}
	}
	for _, t := range tasks {
		st, err := t.Wait()
		if err != nil {
			return nil, nil, err
		}
		s := wave.Stage(t.Spec().Stage)
		if s == nil || s.Out == nil || s.Out.Kind != exec.ExchangeHeld {
			continue
		}
		parts[s.Out.Held][t.Spec().Index] = phys.HeldPart{Node: ShuffleIndex(t.Node().ID), Rows: st.Rows, Hist: st.Hist}
	}
	return parts, stats, nil
}

func resultSchema(dp *dist.DistPlan) *arrow.Schema {
	fs := make([]arrow.Field, len(dp.Columns))
	for i, c := range dp.Columns {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.Arrow(), Nullable: c.Nullable}
		if i < len(dp.Names) {
			fs[i].Name = dp.Names[i]
		}
	}
	return arrow.NewSchema(fs, nil)
}

// collectReports reads every task's analyze report.
func collectReports(q *Query, tasks []*Task) ([]dist.TaskReport, int64, error) {
	reports := make([]dist.TaskReport, len(tasks))
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := t.Output()
			defer o.Release()
			got := false
			for {
				rec, err := o.Next()
				if err != nil {
					errs[i] = err
					q.Fail(err)
					return
				}
				if rec == nil {
					break
				}
				rep, err := dist.DecodeReport(rec)
				if err != nil {
					errs[i] = err
					q.Fail(err)
					return
				}
				reports[i], got = rep, true
			}
			if !got {
				errs[i] = nferr.Internalf("task %s sent no analyze report", t.ID())
			}
		}()
	}
	wg.Wait()
	var rows int64
	for i, err := range errs {
		if err != nil {
			return nil, 0, err
		}
		if tasks[i].Spec().Stage == tasks[len(tasks)-1].Spec().Stage {
			rows += reports[i].Rows
		}
	}
	return reports, rows, nil
}

// placement returns the placed tables the plan scans (placing those whose
// files are not all on alive storage nodes first), the alive storage
// nodes, and the IDs of the nodes holding the scanned files.
func (r *SQLRunner) placement(q *Query, dp *dist.DistPlan) (map[string]*storage.PlacedTable, []storage.Node, []string, error) {
	alive := map[string]NodeInfo{}
	var nodes []storage.Node
	for _, s := range q.StorageNodes() {
		if s.FlightAddr != "" && !s.Leaving {
			alive[s.ID] = s
			nodes = append(nodes, storage.Node{ID: s.ID, Addr: s.FlightAddr})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	tables := map[string]*storage.PlacedTable{}
	needSet := map[string]bool{}
	for _, sc := range dp.Scans() {
		name := sc.Spec.Table
		if _, ok := tables[name]; ok {
			continue
		}
		pt, err := r.placed(q, name, alive, nodes)
		if err != nil {
			return nil, nil, nil, err
		}
		tables[name] = pt
		for _, ns := range pt.Files {
			for _, n := range ns {
				if _, ok := alive[n]; ok {
					needSet[n] = true
					break
				}
			}
		}
	}
	var needs []string
	for n := range needSet {
		needs = append(needs, n)
	}
	sort.Strings(needs)
	return tables, nodes, needs, nil
}

// placed returns a table's placement, placing it on the alive storage
// nodes when a file has no alive replica.
func (r *SQLRunner) placed(q *Query, name string, alive map[string]NodeInfo, nodes []storage.Node) (*storage.PlacedTable, error) {
	ok := func(pt *storage.PlacedTable) bool {
		for _, ns := range pt.Files {
			have := false
			for _, n := range ns {
				if _, a := alive[n]; a {
					have = true
				}
			}
			if !have {
				return false
			}
		}
		return true
	}
	db := r.sess.DB()
	if pt, err := db.PlacedTable(name); err == nil && ok(pt) {
		return pt, nil
	}
	if len(nodes) == 0 {
		return nil, nferr.Unavailablef("query %s: table %s is not on any alive storage node, and no storage node is in the cluster to place it on (start one with `nicflow storage`)", q.ID, name)
	}
	r.place.Lock()
	defer r.place.Unlock()
	if pt, err := db.PlacedTable(name); err == nil && ok(pt) {
		return pt, nil
	}
	// A table dropped and created again under its name must not meet its
	// old self on the nodes: drop what the catalog no longer places first.
	r.pruneLocked(q.Context(), q.c, nodes)
	repl := min(r.opts.Replication, len(nodes))
	q.c.node.Logger().Info("placing table on storage nodes", "table", name, "nodes", len(nodes), "replication", repl)
	if err := db.Place(q.Context(), name, nodes, repl, storage.ClientOptions{TLS: q.c.node.Keys().ClientTLS()}); err != nil {
		return nil, err
	}
	return db.PlacedTable(name)
}

// runPlace places every table of the catalog (PlaceKind) and returns one
// row per table.
func (r *SQLRunner) runPlace(q *Query, out ResultWriter) error {
	repl := r.opts.Replication
	if s, ok := q.Params[ParamReplication]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nferr.Queryf("parameter %s=%q: want a positive number", ParamReplication, s)
		}
		repl = n
	}
	var nodes []storage.Node
	alive := map[string]NodeInfo{}
	for _, s := range q.StorageNodes() {
		if s.FlightAddr != "" && !s.Leaving {
			nodes = append(nodes, storage.Node{ID: s.ID, Addr: s.FlightAddr})
			alive[s.ID] = s
		}
	}
	if len(nodes) == 0 {
		return nferr.Unavailablef("no storage node in the cluster to place tables on")
	}
	if repl > len(nodes) {
		return nferr.Queryf("replication %d exceeds the %d storage nodes", repl, len(nodes))
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	sch := arrow.NewSchema([]arrow.Field{{Name: "table", Type: arrow.BinaryTypes.String}, {Name: "files", Type: arrow.PrimitiveTypes.Int64}, {Name: "nodes", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	r.place.Lock()
	defer r.place.Unlock()
	db := r.sess.DB()
	copts := storage.ClientOptions{TLS: q.c.node.Keys().ClientTLS()}
	for _, t := range db.Tables() {
		if t.External {
			continue
		}
		if err := db.Place(q.Context(), t.QualifiedName(), nodes, repl, copts); err != nil {
			return err
		}
	}
	// The catalog's placement may be stale (a node restarted with an empty
	// directory, a database copied without its nodes' state): check what
	// the nodes hold and send what they lack, then drop what they hold
	// that the catalog no longer has.
	if _, err := db.Repair(q.Context(), nodes, repl, copts); err != nil {
		return err
	}
	r.pruneLocked(q.Context(), q.c, nodes)
	for _, t := range db.Tables() {
		if t.External {
			continue
		}
		name := t.QualifiedName()
		pt, err := db.PlacedTable(name)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for _, ns := range pt.Files {
			for _, n := range ns {
				used[n] = true
			}
		}
		var ids []string
		for n := range used {
			ids = append(ids, n)
		}
		sort.Strings(ids)
		b.Field(0).(*array.StringBuilder).Append(name)
		b.Field(1).(*array.Int64Builder).Append(int64(len(pt.Files)))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprint(ids))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := out.SetSchema(sch); err != nil {
		return err
	}
	return out.Write(rec)
}

// ---------------------------------------------------------------- worker

// SQLWorker is a worker's Executor for plan fragments. Start its shuffle
// agent with Start once the node runs; tasks that arrive before fail with
// KindUnavailable (the coordinator only uses workers advertising a data
// address, which Start sets).
type SQLWorker struct {
	mu    sync.Mutex
	node  *Node
	agent *shuffle.Agent
	xs    *dist.Exchanges
	cl    *shuffle.Client
	peers map[int]string

	scanned, scannedBytes, sent, received, spilled prometheus.Counter
	// scanSeconds: the fragments' scans, open to end; shuffleSeconds: the
	// streams of their network exchanges, first payload to end, by side.
	scanSeconds    prometheus.Histogram
	shuffleSeconds *prometheus.HistogramVec

	// memory is the node's --memory, shared by the tasks of every query
	// on it: each task's budget draws from it (engine.FragmentEnv.Memory).
	memory *exec.Budget

	// alloc is shared by the worker's fragments: buffers freed by one task
	// are reused by the next (engine.NewPoolAllocator).
	alloc memory.Allocator
	// storage is shared by the worker's fragments too: one connection per
	// storage node, and local-read handshakes reused across tasks.
	storage *storage.ClientPool
}

// NewSQLWorker returns the executor (register it under FragmentTaskKind).
func NewSQLWorker() *SQLWorker {
	return &SQLWorker{alloc: engine.NewPoolAllocator(), storage: storage.NewClientPool()}
}

// Start runs the node's corun shuffle agent on listen (host:port; empty:
// the advertise host, any port), advertises its address as the node's
// data address, and registers the shuffle and scan counters on the node's
// metrics.
func (w *SQLWorker) Start(n *Node, listen string) error {
	if listen == "" {
		listen = net.JoinHostPort(n.opts.AdvertiseHost, "0")
	}
	idx := ShuffleIndex(n.ID())
	peers := make([]string, idx+1)
	keys := n.Keys()
	codec, err := shuffle.ParseCodec(n.opts.ShuffleCodec)
	if err != nil {
		return err
	}
	a, err := shuffle.NewAgent(shuffle.AgentConfig{Node: idx, Peers: peers, Listen: listen, Log: n.Logger(),
		Options: shuffle.Options{TLS: keys.ServerTLS(), TLSClient: keys.ClientTLS(), Codec: codec, Credits: shuffleCredits(n.opts.Memory)}})
	if err != nil {
		return err
	}
	cl, err := a.Client()
	if err != nil {
		a.Close()
		return err
	}
	addr := a.Addr()
	if h, p, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
			addr = net.JoinHostPort(n.opts.AdvertiseHost, p)
		}
	}
	if n.opts.DataAddr != "" {
		addr = n.opts.DataAddr
	}
	w.mu.Lock()
	w.node, w.agent, w.cl, w.xs, w.peers = n, a, cl, dist.NewExchanges(cl), map[int]string{idx: addr}
	w.scanned = prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_scan_rows_total", Help: "Rows fragments on this worker read from storage nodes (after filtering there)."})
	w.scannedBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_scan_bytes_total", Help: "Arrow bytes fragments on this worker read from storage nodes."})
	w.sent = prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_shuffle_sent_bytes_total", Help: "Payload bytes this worker's fragments sent through network exchanges."})
	w.received = prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_shuffle_received_bytes_total", Help: "Payload bytes this worker's fragments received from network exchanges."})
	w.spilled = prometheus.NewCounter(prometheus.CounterOpts{Name: "nicflow_spilled_bytes_total", Help: "Bytes this worker's fragments wrote to spill files (what did not fit in memory)."})
	w.scanSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nicflow_scan_seconds", Buckets: LatencyBuckets,
		Help: "Scan latency on a worker: a fragment's scan of one table's files, from its open to its end (over Flight or local reads)."})
	w.shuffleSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nicflow_shuffle_seconds", Buckets: LatencyBuckets,
		Help: "Shuffle latency on a worker: one stream of a network exchange from its first payload to its end; side send (closed after its last payload) or receive (every sender done)."}, []string{"side"})
	w.memory = exec.NewNodeBudget(n.opts.Memory, "the worker's --memory")
	if n.opts.Memory > 0 {
		// Held outputs of adaptive waves (a query's build sides, waiting
		// for the re-planned rest) may use a quarter of the node.
		dist.DefaultHeld.SetLimit(n.opts.Memory / 4)
	}
	w.mu.Unlock()
	reg := n.Metrics()
	reg.MustRegister(w.scanned, w.scannedBytes, w.sent, w.received, w.spilled, w.scanSeconds, w.shuffleSeconds)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_held_memory_bytes", Help: "Memory the held outputs of adaptive waves take on this worker now (at most a quarter of its --memory)."},
		func() float64 { return float64(dist.DefaultHeld.Used()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_held_disk_bytes", Help: "Bytes of held outputs on this worker's disk now (what did not fit in their memory share), in --spill-dir."},
		func() float64 { return float64(dist.DefaultHeld.OnDisk()) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nicflow_held_spilled_bytes_total", Help: "Bytes of held outputs this worker ever wrote to spill files (also in nicflow_spilled_bytes_total)."},
		func() float64 { return float64(dist.DefaultHeld.Spilled()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_task_memory_bytes", Help: "Memory the tasks on this worker hold now (of its --memory)."},
		func() float64 { return float64(w.memory.Used()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_shuffle_agent_frames_dropped", Help: "Frames the shuffle agent dropped (no local task took them)."},
		func() float64 { return float64(a.Stats().Dropped) }))
	// The agent's aggregation, as Buddy measures it: messages routed, and
	// the frames (network-sized buffers) and bytes sent to other agents.
	for _, g := range []struct {
		name, help string
		v          func(shuffle.AgentStats) int64
	}{
		{"nicflow_shuffle_agent_messages", "Messages the shuffle agent routed.", func(s shuffle.AgentStats) int64 { return s.Messages }},
		{"nicflow_shuffle_agent_remote_frames", "Frames the shuffle agent sent to other agents.", func(s shuffle.AgentStats) int64 { return s.RemoteFramesOut }},
		{"nicflow_shuffle_agent_remote_bytes", "Bytes (headers included, before compression) the shuffle agent sent to other agents.", func(s shuffle.AgentStats) int64 { return s.RemoteBytesOut }},
		{"nicflow_shuffle_agent_channels", "Shuffle channels the agent tracks now.", func(s shuffle.AgentStats) int64 { return int64(s.Channels) }},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 { return float64(g.v(a.Stats())) }))
	}
	// Parquet pages decompressed on an offload device and on the CPU
	// (worker --decode-device; the CPU count is every page without one
	// only when a device is set: shuffle.PageOffload counts device codecs).
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nicflow_page_decode_pages_total", Help: "Parquet pages this worker decompressed through --decode-device: where=device ran on the device, where=cpu fell back to the worker's cores (the device refused or failed them).", ConstLabels: prometheus.Labels{"where": "device"}},
		func() float64 { return float64(shuffle.PageOffload.DevicePages.Load()) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nicflow_page_decode_pages_total", Help: "Parquet pages this worker decompressed through --decode-device: where=device ran on the device, where=cpu fell back to the worker's cores (the device refused or failed them).", ConstLabels: prometheus.Labels{"where": "cpu"}},
		func() float64 { return float64(shuffle.PageOffload.CPUPages.Load()) }))
	go func() {
		<-n.Done()
		w.Close()
	}()
	if err := n.SetServiceAddrs(addr, ""); err != nil {
		return err
	}
	w.warmLinks(n)
	return nil
}

// warmLinks dials the shuffle links to every other worker as it joins (and
// to those already there), a few at a time and spread over a second or
// two, instead of during the first query that sends to it.
func (w *SQLWorker) warmLinks(n *Node) {
	sem := make(chan struct{}, 4)
	// later runs dial, four at a time, after a random wait of up to 2 s,
	// so that N nodes joining at once do not all dial each other in the
	// same instant.
	later := func(dial func()) {
		go func() {
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(2 * time.Second)))):
			case <-n.Done():
				return
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			dial()
		}()
	}
	warm := func(m NodeInfo) {
		if m.Role == RoleStorage && m.FlightAddr != "" && !m.Leaving {
			// NB: also the Flight connection to each storage node, which
			// the first scan of a worker otherwise pays for (TLS; ~15 ms
			// of a trivial query's 17 on a loaded 64-worker cluster).
			later(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := w.storage.Warm(ctx, m.FlightAddr, storage.ClientOptions{TLS: n.Keys().ClientTLS()}); err != nil {
					n.log.Debug("warming the connection to a storage node", "node", m.ID, "err", err)
				}
			})
			return
		}
		if m.Role != RoleWorker || m.DataAddr == "" || m.ID == n.ID() {
			return
		}
		idx := ShuffleIndex(m.ID)
		w.mu.Lock()
		a := w.agent
		if a == nil {
			w.mu.Unlock()
			return
		}
		if w.peers[idx] != m.DataAddr {
			if a.SetPeer(idx, m.DataAddr) != nil {
				w.mu.Unlock()
				return
			}
			w.peers[idx] = m.DataAddr
		}
		w.mu.Unlock()
		later(func() { a.Warm(idx) })
	}
	n.Subscribe(func(ev MemberEvent) {
		if ev.Type == EventJoin || ev.Type == EventUpdate {
			warm(ev.Node)
		}
	})
	for _, m := range n.Members() {
		warm(m)
	}
}

// Close stops the shuffle agent.
func (w *SQLWorker) Close() {
	w.mu.Lock()
	xs, cl, a := w.xs, w.cl, w.agent
	w.xs, w.cl, w.agent = nil, nil, nil
	w.mu.Unlock()
	if xs != nil {
		xs.Close()
	}
	if cl != nil {
		cl.Close()
	}
	if a != nil {
		a.Close()
	}
	w.storage.Close()
}

// Execute implements Executor.
func (w *SQLWorker) Execute(ctx context.Context, tc *TaskContext) error {
	w.mu.Lock()
	xs, a, mem := w.xs, w.agent, w.memory
	w.mu.Unlock()
	if xs == nil {
		return nferr.Unavailablef("worker %s: shuffle agent not running", tc.Node.ID())
	}
	f, err := dist.UnmarshalFragment(tc.Spec.Fragment)
	if err != nil {
		return err
	}
	w.mu.Lock()
	for i, addr := range f.Peers {
		if w.peers[i] != addr {
			if err := a.SetPeer(i, addr); err != nil {
				w.mu.Unlock()
				return err
			}
			w.peers[i] = addr
		}
	}
	w.mu.Unlock()
	var src storage.Source
	if len(f.Tables) > 0 {
		ps := storage.NewPlacedScanner(f.Tables, f.Storage, storage.ClientOptions{TLS: tc.Node.Keys().ClientTLS(), LocalReads: !tc.Node.opts.NoLocalReads, Pool: w.storage, Codec: tc.Node.opts.ScanCodec, ScanMode: tc.Node.opts.ScanMode})
		defer ps.Close()
		src = countingSource{Source: ps, rows: w.scanned, bytes: w.scannedBytes, seconds: w.scanSeconds, task: tc.Stats}
	}
	ctr := &dist.FragmentCounters{}
	sendSec, recvSec := w.shuffleSeconds.WithLabelValues("send"), w.shuffleSeconds.WithLabelValues("receive")
	ctr.Sent.Stream = func(d time.Duration) { sendSec.Observe(d.Seconds()) }
	ctr.Received.Stream = func(d time.Duration) { recvSec.Observe(d.Seconds()) }
	done := make(chan struct{})
	var last [2]int64
	publish := func() {
		tc.Stats.Rows.Store(ctr.Out.Rows.Load())
		tc.Stats.Batches.Store(ctr.Out.Batches.Load())
		s, r := ctr.Sent.Bytes.Load(), ctr.Received.Bytes.Load()
		tc.Stats.BytesIn.Store(r)
		if f.Out != nil {
			tc.Stats.BytesOut.Store(s)
		}
		w.sent.Add(float64(s - last[0]))
		w.received.Add(float64(r - last[1]))
		last = [2]int64{s, r}
	}
	go func() {
		// NB: heartbeats go out every 100 ms by default; publishing four
		// times a second keeps progress current without flooding clients.
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				publish()
			case <-done:
				return
			}
		}
	}()
	err = dist.RunFragment(ctx, f, dist.FragmentEnv{Exchanges: xs, Source: src, Alloc: w.alloc, Send: tc.Send, Counters: ctr, Node: tc.Node.ID(),
		SpillDir: tc.Node.opts.SpillDir, Memory: mem, Filters: taskFilters(tc, f)})
	close(done)
	publish()
	if ctr.Hist != nil {
		tc.Stats.Hist.Store(&ctr.Hist)
	}
	w.spilled.Add(float64(ctr.Spilled.Load() + ctr.HeldSpilled.Load()))
	if err != nil && ctx.Err() != nil && !nferr.Is(err, nferr.KindCanceled) {
		// The query ended (canceled, or failed elsewhere): whatever this
		// task saw since is a consequence, not the cause.
		err = nferr.With(nferr.KindCanceled, context.Cause(ctx))
	}
	return err
}

// countingSource counts the rows and bytes scans return (the node's scan
// counters).
type countingSource struct {
	storage.Source
	rows, bytes prometheus.Counter
	seconds     prometheus.Observer // scan open to end (or close)
	// task gets each scan's bytes on the wire and Parquet bytes read.
	task *TaskCounters
}

func (c countingSource) OpenScan(ctx context.Context, spec storage.ScanSpec, opts storage.ScanOptions) (storage.RecordIterator, error) {
	start := time.Now()
	it, err := c.Source.OpenScan(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	return &countingIter{RecordIterator: it, c: c, start: start}, nil
}

type countingIter struct {
	storage.RecordIterator
	c     countingSource
	start time.Time
	ended bool
}

// AppliesKeyFilters and LastFiltered say what the counted iterator says
// (storage.KeyFilterApplier, storage.KeyFilterReporter): exec.Scan filters
// only what it did not.
func (it *countingIter) AppliesKeyFilters() bool {
	a, ok := it.RecordIterator.(storage.KeyFilterApplier)
	return ok && a.AppliesKeyFilters()
}

func (it *countingIter) LastFiltered() bool {
	r, ok := it.RecordIterator.(storage.KeyFilterReporter)
	return ok && r.LastFiltered()
}

func (it *countingIter) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := it.RecordIterator.Next(ctx)
	if rec != nil {
		it.c.rows.Add(float64(rec.NumRows()))
		it.c.bytes.Add(float64(recordBytes(rec)))
	} else if err == nil {
		it.end()
	}
	return rec, err
}

// end observes the scan's latency once: at its end, or when it is closed
// early (a LIMIT reached, a failure elsewhere).
func (it *countingIter) end() {
	if it.ended {
		return
	}
	it.ended = true
	if it.c.seconds != nil {
		it.c.seconds.Observe(time.Since(it.start).Seconds())
	}
	if it.c.task != nil {
		st := it.Stats()
		it.c.task.ScanWire.Add(st.WireBytes)
		it.c.task.ScanRead.Add(st.BytesRead)
	}
}

func (it *countingIter) Close() error {
	it.end()
	return it.RecordIterator.Close()
}

// Cross-stage join key filters on a cluster (engine/dist/filters.go): each
// task of a join's stage sends its part to the coordinator (ftFilterPart),
// the coordinator's relay merges them and sends the filter to every task
// of the scan's stage (ftFilter), those started later included.

// filterRelay is a query attempt's relay; nil when the plan has no
// cross-stage filters.
type filterRelay struct {
	r       *dist.FilterRelay
	mu      sync.Mutex
	byStage map[int][]*Task
}

func relayFilters(q *Query, dp *dist.DistPlan) *filterRelay {
	if len(dp.KeyFilters) == 0 {
		return nil
	}
	fr := &filterRelay{byStage: map[int][]*Task{}}
	fr.r = dist.NewFilterRelay(dp, func(kf phys.RemoteKeyFilter, p storage.KeyFilterPart) {
		b, _ := p.MarshalBinary()
		fr.mu.Lock()
		ts := append([]*Task(nil), fr.byStage[kf.ScanStage]...)
		fr.mu.Unlock()
		for _, t := range ts {
			go t.SendFilter(kf.ID, b) //nolint:errcheck // a task that ended needs no filter
		}
	})
	q.OnFilterPart(func(t *Task, id int, body []byte) {
		p, err := storage.UnmarshalKeyFilterPart(body)
		if err != nil {
			// A garbled part: the filter passes everything (and the
			// scans stop waiting for it).
			p = storage.KeyFilterPart{Disabled: true}
		}
		fr.r.Part(id, t.Spec().Index, p)
	})
	return fr
}

// started registers a task that may apply filters, and sends it those
// merged before it started.
func (fr *filterRelay) started(t *Task) {
	if fr == nil {
		return
	}
	st := t.Spec().Stage
	fr.mu.Lock()
	fr.byStage[st] = append(fr.byStage[st], t)
	fr.mu.Unlock()
	for id, p := range fr.r.Merged(st) {
		b, _ := p.MarshalBinary()
		go t.SendFilter(id, b) //nolint:errcheck // as above
	}
}

// taskFilters is a fragment task's end of the cross-stage filters (nil
// when its stage has none).
func taskFilters(tc *TaskContext, f *dist.Fragment) *dist.TaskFilters {
	if len(f.KeyFilters) == 0 {
		return nil
	}
	tf := dist.NewTaskFilters(func(id int, p storage.KeyFilterPart) {
		b, _ := p.MarshalBinary()
		if err := tc.SendFilterPart(id, b); err != nil {
			tc.Log.Debug("key filter part not sent", "filter", id, "err", err)
		}
	})
	tc.SetFilterHandler(func(id int, body []byte) {
		p, err := storage.UnmarshalKeyFilterPart(body)
		if err != nil {
			tc.Log.Warn("a key filter from the coordinator is malformed; the scans pass every row", "filter", id, "err", err)
			p = storage.KeyFilterPart{Disabled: true}
		}
		tf.Deliver(id, p)
	})
	return tf
}

// shuffleCredits is the flow-control window a worker grants each (peer,
// channel): a receiving task may hold a window from every peer, so a
// small node (one of dozens of local workers, a DPU with little memory)
// grants less. 1/512 of the node's memory, from 256 KiB to shuffle's
// default 2 MiB (a node of 1 GiB or more keeps the default).
func shuffleCredits(memory int64) int {
	return int(min(max(memory/512, 256<<10), shuffle.DefaultCredits))
}
