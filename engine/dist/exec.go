package dist

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/engine/phys"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
	"github.com/nicflow/nicflow/storage"
)

// Running distributed plans: fragments.
//
// DistPlan.Fragments turns a distributed plan into one Fragment per task:
// the stage's PhysNode tree, the task's index (its share of the scans),
// and the shuffle channels of its exchanges with the node of every sender
// and receiver. A fragment is plain data (JSON) so the coordinator can
// ship it to a worker; RunFragment runs one on whatever node received it:
// receivers of its input exchanges feed PhysRemote nodes, scans read
// through FragmentEnv.Source (storage.PlacedScanner on a worker), and the
// root's streams go to the output exchange's senders, or to
// FragmentEnv.Send for the root stage (the coordinator's result stream).
//
// Sender s of a stage's output exchange is stream s%S of task s/S (S the
// root's streams); receiver r of a remote node with R streams per task is
// stream r%R of task r/R. A hash exchange into a coalesced stage
// (Stage.Coalesced) keeps the partitions of the stage as planned: its
// partition p (of planned task p/R) goes to receiver Coalesced[p/R]*R +
// p%R (coalesceRoute).

// Fragment is the work of one task of a stage.
type Fragment struct {
	Query       string         `json:"query"`
	Stage       int            `json:"stage"`
	Task        int            `json:"task"`
	Tasks       int            `json:"tasks"`
	Parallelism int            `json:"parallelism"`
	Root        *phys.PhysNode `json:"root"`
	// Shared are the stage's shared subplans (Stage.Shared).
	Shared []*phys.PhysShared `json:"shared,omitempty"`
	Out    *StageOut          `json:"out,omitempty"`
	// OutGroups is the consuming stage's Stage.Coalesced (a hash output
	// into a coalesced stage): the task each planned consumer task's
	// partitions go to.
	OutGroups []int `json:"out_groups,omitempty"`
	// Names are the result's column names (root stage).
	Names []string `json:"names,omitempty"`
	// Channels are the shuffle channels of the exchanges this task uses,
	// by exchange number.
	Channels map[int]*shuffle.Spec `json:"channels,omitempty"`
	// Peers are the shuffle agents' addresses by node index (the nodes of
	// Channels).
	Peers map[int]string `json:"peers,omitempty"`
	// Tables and Storage locate the files of the scans (cluster workers,
	// which have no catalog).
	Tables  map[string]*storage.PlacedTable `json:"tables,omitempty"`
	Storage []storage.Node                  `json:"storage,omitempty"`
	// BatchSize and MemoryLimit configure the task's Env (0: defaults).
	BatchSize   int   `json:"batch_size,omitempty"`
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// Analyze: instead of its output, the task sends one TaskReport (a
	// one-row batch, ReportSchema) with per-operator figures.
	Analyze bool `json:"analyze,omitempty"`
	// KeyFilters are the plan's cross-stage key filters that this
	// stage's joins publish or its scans apply (filters.go).
	KeyFilters []phys.RemoteKeyFilter `json:"key_filters,omitempty"`
}

// ChannelID names exchange x of query number q in the cluster (shuffle
// channel ids: query << 16 | exchange, unique while in use).
func ChannelID(q uint64, x int) uint64 { return q<<16 | uint64(x&0xffff) }

// Fragments returns the fragments of every stage's tasks (by stage ID);
// node(stage, task) is the shuffle node index of the worker that will run
// the task, q the query number for channel ids.
func (dp *DistPlan) Fragments(query string, q uint64, node func(stage, task int) int) (map[int][]*Fragment, error) {
	if dp.Exchanges >= 1<<16 {
		return nil, nferr.Queryf("query %s needs %d exchanges (limit 65535)", query, dp.Exchanges)
	}
	chans := map[int]*shuffle.Spec{}
	for _, s := range dp.Stages {
		if s.Out == nil || s.Out.Kind == exec.ExchangeHeld {
			continue
		}
		c := dp.Stage(s.Out.Consumer)
		if c == nil {
			return nil, nferr.Internalf("distributed plan: stage %d sends to unknown stage %d", s.ID, s.Out.Consumer)
		}
		sp := &shuffle.Spec{ID: ChannelID(q, s.Out.Exchange)}
		for t := 0; t < s.Tasks; t++ {
			for range s.Root.Streams {
				sp.Senders = append(sp.Senders, node(s.ID, t))
			}
		}
		for t := 0; t < c.Tasks; t++ {
			for range s.Out.PerTask {
				sp.Receivers = append(sp.Receivers, node(c.ID, t))
			}
		}
		chans[s.Out.Exchange] = sp
	}
	out := map[int][]*Fragment{}
	for _, s := range dp.Stages {
		var groups []int
		if s.Out != nil && s.Out.Kind == exec.ExchangeHash {
			if c := dp.Stage(s.Out.Consumer); c != nil {
				groups = c.Coalesced
			}
		}
		used := map[int]*shuffle.Spec{}
		if s.Out != nil && s.Out.Kind != exec.ExchangeHeld {
			used[s.Out.Exchange] = chans[s.Out.Exchange]
		}
		s.Walk(func(n *phys.PhysNode) {
			if n.Kind == phys.PhysRemote && n.Remote.Held == "" {
				used[n.Remote.Exchange] = chans[n.Remote.Exchange]
			}
		})
		for t := 0; t < s.Tasks; t++ {
			f := &Fragment{Query: query, Stage: s.ID, Task: t, Tasks: s.Tasks, Parallelism: dp.Parallelism, Root: s.Root, Shared: s.Shared, Out: s.Out, Channels: used,
				OutGroups: groups, KeyFilters: dp.stageFilters(s.ID)}
			if s.Out == nil {
				f.Names = dp.Names
			}
			out[s.ID] = append(out[s.ID], f)
		}
	}
	return out, nil
}

// Scans lists the scan nodes of every stage (the coordinator adds the
// tables' placement to the fragments).
func (dp *DistPlan) Scans() []*phys.ScanOp {
	var out []*phys.ScanOp
	for _, s := range dp.Stages {
		s.Walk(func(n *phys.PhysNode) {
			if n.Kind == phys.PhysScan {
				out = append(out, n.Scan)
			}
		})
	}
	return out
}

// MarshalFragment encodes a fragment for shipping.
func MarshalFragment(f *Fragment) ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, nferr.Internalf("encoding fragment of stage %d: %v", f.Stage, err)
	}
	return b, nil
}

// UnmarshalFragment decodes and checks a shipped fragment (a malformed one
// is a KindData error).
func UnmarshalFragment(b []byte) (*Fragment, error) {
	var f Fragment
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nferr.Dataf("plan fragment: %v", err)
	}
	if f.Root == nil {
		return nil, nferr.Dataf("plan fragment without a root")
	}
	if f.Tasks < 1 || f.Task < 0 || f.Task >= f.Tasks || f.Tasks > phys.MaxParallelism {
		return nil, nferr.Dataf("plan fragment: task %d of %d", f.Task, f.Tasks)
	}
	if f.Parallelism < 1 || f.Parallelism > phys.MaxParallelism {
		return nil, nferr.Dataf("plan fragment: parallelism %d", f.Parallelism)
	}
	if err := checkGroups(f.OutGroups); err != nil {
		return nil, err
	}
	if len(f.OutGroups) > 0 && (f.Out == nil || f.Out.Kind != exec.ExchangeHash || len(f.Out.Splits) > 0) {
		return nil, nferr.Dataf("plan fragment: coalesced partitions of an output that is not a plain hash exchange")
	}
	if err := phys.CheckPlan(&phys.PhysPlan{Root: f.Root, Shared: f.Shared}); err != nil {
		return nil, err
	}
	return &f, nil
}

// checkGroups checks a coalescing (Stage.Coalesced): at most
// MaxParallelism planned tasks, starting at task 0, each the same task as
// the one before it or the next.
func checkGroups(g []int) error {
	if len(g) > phys.MaxParallelism {
		return nferr.Dataf("plan fragment: %d coalesced tasks (at most %d)", len(g), phys.MaxParallelism)
	}
	for i, t := range g {
		if (i == 0 && t != 0) || (i > 0 && t != g[i-1] && t != g[i-1]+1) {
			return nferr.Dataf("plan fragment: coalesced tasks %v are not contiguous groups", g)
		}
	}
	return nil
}

// coalesceRoute is the receiver of each hash partition of an exchange of
// perTask receivers per task into a stage coalesced by groups (nil when
// it is not).
func coalesceRoute(groups []int, perTask int) []int {
	if len(groups) == 0 {
		return nil
	}
	route := make([]int, len(groups)*perTask)
	for p := range route {
		route[p] = groups[p/perTask]*perTask + p%perTask
	}
	return route
}

// Exchanges shares the shuffle exchanges of one node between the tasks
// running on it (a channel is opened once per node: two tasks of a query
// on one worker, one sending and one receiving, use one Exchange). Safe
// for concurrent use.
type Exchanges struct {
	c  *shuffle.Client
	mu sync.Mutex
	m  map[uint64]*sharedExchange
}

type sharedExchange struct {
	x     *shuffle.Exchange
	refs  int
	timer *time.Timer
}

// exchangeLinger keeps a node's exchange open after its last task there
// released it: the shuffle layer refuses to reopen a channel soon after it
// closed, and a query's tasks on one node may start after others ended
// (they all start within milliseconds; 10 s is ample).
var exchangeLinger = 10 * time.Second

// NewExchanges returns the registry over a node's shuffle client.
func NewExchanges(c *shuffle.Client) *Exchanges {
	return &Exchanges{c: c, m: map[uint64]*sharedExchange{}}
}

func (e *Exchanges) acquire(spec *shuffle.Spec) (*shuffle.Exchange, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if sx := e.m[spec.ID]; sx != nil {
		sx.refs++
		if sx.timer != nil {
			sx.timer.Stop()
			sx.timer = nil
		}
		return sx.x, nil
	}
	x, err := shuffle.OpenExchange(e.c, spec)
	if err != nil {
		return nil, err
	}
	e.m[spec.ID] = &sharedExchange{x: x, refs: 1}
	return x, nil
}

func (e *Exchanges) release(id uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sx := e.m[id]
	if sx == nil {
		return
	}
	sx.refs--
	if sx.refs > 0 {
		return
	}
	sx.timer = time.AfterFunc(exchangeLinger, func() {
		e.mu.Lock()
		if e.m[id] != sx || sx.refs > 0 {
			e.mu.Unlock()
			return
		}
		delete(e.m, id)
		e.mu.Unlock()
		sx.x.Close()
	})
}

// Close closes every exchange (the node is stopping).
func (e *Exchanges) Close() {
	e.mu.Lock()
	m := e.m
	e.m = map[uint64]*sharedExchange{}
	e.mu.Unlock()
	for _, sx := range m {
		if sx.timer != nil {
			sx.timer.Stop()
		}
		sx.x.Close()
	}
}

// FragmentEnv is what RunFragment needs from the node running it.
type FragmentEnv struct {
	// Exchanges are the node's shuffle exchanges (needed when the
	// fragment has network exchanges).
	Exchanges *Exchanges
	// Source runs the scans.
	Source storage.Source
	// Alloc allocates Arrow buffers (default: Go allocator).
	Alloc memory.Allocator
	// Send receives the root stage's result batches (and the analyze
	// report of every task). The batch is borrowed.
	Send func(arrow.RecordBatch) error
	// Counters, when set, are updated while the fragment runs.
	Counters *FragmentCounters
	// Node names the node in analyze reports.
	Node string
	// SpillDir is where the fragment's operators spill (exec.Spill): ""
	// for the OS temporary directory, "off" for no spilling.
	SpillDir string
	// Memory, when set, is the node's memory shared by the tasks of every
	// query it runs (exec.NewNodeBudget): the task's budget (the query's
	// memory limit) draws from it too, so its operators spill when the
	// node is short even if the query's limit is not reached.
	Memory *exec.Budget
	// Filters carries the fragment's cross-stage key filters (nil: they
	// are not built: the joins publish none, the scans wait for none).
	Filters *TaskFilters
	// Held is the node's store of held outputs (adaptive waves; nil:
	// DefaultHeld).
	Held *HeldStore
}

func (fe FragmentEnv) held() *HeldStore {
	if fe.Held != nil {
		return fe.Held
	}
	return DefaultHeld
}

// FragmentCounters are a task's live figures.
type FragmentCounters struct {
	// Out counts the rows and batches the task produced (sent or
	// streamed to the coordinator), Sent and Received the network
	// exchanges' payloads.
	Out            exec.NetCounters
	Sent, Received exec.NetCounters
	// Spilled is what the task wrote to spill files (set when it ends).
	Spilled atomic.Int64
	// HeldSpilled is what a held task wrote to its node's held spill
	// files (the rows past the store's memory limit), and
	// HeldSpillFiles counts its files. EXPLAIN ANALYZE shows both on the
	// held stage's root.
	HeldSpilled, HeldSpillFiles atomic.Int64
	// Hist is a held stage's key histogram (phys.HeldPart.Hist; set when
	// the task ends, nil without StageOut.HistKeys).
	Hist []int64
}

// TaskReport is one task's EXPLAIN ANALYZE figures.
type TaskReport struct {
	Stage         int                `json:"stage"`
	Task          int                `json:"task"`
	Node          string             `json:"node"`
	Rows          int64              `json:"rows"`
	BytesSent     int64              `json:"bytes_sent"`
	BytesReceived int64              `json:"bytes_received"`
	Wall          time.Duration      `json:"wall"`
	Ops           map[int]OpFigures  `json:"ops"`
	Scans         map[int]ScanTotals `json:"scans,omitempty"`
}

// OpFigures are one node's counters in one task.
type OpFigures struct {
	Instances int   `json:"instances"`
	Rows      int64 `json:"rows"`
	Batches   int64 `json:"batches"`
	Nanos     int64 `json:"nanos"`
	Peak      int64 `json:"peak"`
	Spilled   int64 `json:"spilled,omitempty"`
	SpillFile int64 `json:"spill_files,omitempty"`
}

// ScanTotals are one scan's row-group counts in one task.
type ScanTotals struct {
	RowGroupsTotal  int64 `json:"rg_total"`
	RowGroupsPruned int64 `json:"rg_pruned"`
	// LocalScans counts reads of a storage node's files done by the
	// worker itself (storage.ScanStats.LocalScans); ByteScans those of
	// the stored bytes a node served, WireBytes what crossed the network
	// and BytesRead the Parquet bytes of the chunks read.
	LocalScans int64 `json:"local,omitempty"`
	ByteScans  int64 `json:"byte_scans,omitempty"`
	WireBytes  int64 `json:"wire,omitempty"`
	BytesRead  int64 `json:"read,omitempty"`
	// Filters are the scan's join key filters' counters.
	Filters []FilterTotals `json:"filters,omitempty"`
}

// FilterTotals are one join key filter's counters in one task's scan.
type FilterTotals struct {
	Name   string `json:"name"`
	Tested int64  `json:"tested"`
	Passed int64  `json:"passed"`
	Off    bool   `json:"off,omitempty"`
}

// ReportSchema is the schema of an analyze report batch: one row, the
// TaskReport as JSON.
var ReportSchema = arrow.NewSchema([]arrow.Field{{Name: "task_report", Type: arrow.BinaryTypes.String}}, nil)

// DistStats are a distributed query's EXPLAIN ANALYZE figures: operator
// counters summed over each stage's tasks, and per-task reports.
type DistStats struct {
	Ops   map[int]map[int]*phys.OpStats
	Tasks map[int][]TaskReport
	// BytesShuffled is the payload bytes every exchange sent.
	BytesShuffled int64
}

// CollectStats sums task reports by stage and node.
func CollectStats(reports []TaskReport) *DistStats {
	ds := &DistStats{Ops: map[int]map[int]*phys.OpStats{}, Tasks: map[int][]TaskReport{}}
	for _, r := range reports {
		ds.Tasks[r.Stage] = append(ds.Tasks[r.Stage], r)
		ds.BytesShuffled += r.BytesSent
		m := ds.Ops[r.Stage]
		if m == nil {
			m = map[int]*phys.OpStats{}
			ds.Ops[r.Stage] = m
		}
		for id, f := range r.Ops {
			st := m[id]
			if st == nil {
				st = &phys.OpStats{}
				m[id] = st
			}
			st.Instances += f.Instances
			st.Rows.Add(f.Rows)
			st.Batches.Add(f.Batches)
			// NB: tasks run concurrently: the stage's time is the slowest
			// task's, not the sum.
			if f.Nanos > st.Nanos.Load() {
				st.Nanos.Store(f.Nanos)
			}
			st.RemotePeak += f.Peak
			st.RemoteSpilled += f.Spilled
			st.RemoteSpillFiles += f.SpillFile
		}
		for id, s := range r.Scans {
			st := m[id]
			if st == nil {
				continue
			}
			if st.Scan == nil {
				st.Scan = &phys.TaskQueue{}
			}
			st.Scan.AddStats(storage.ScanStats{RowGroupsTotal: s.RowGroupsTotal, RowGroupsPruned: s.RowGroupsPruned, LocalScans: s.LocalScans,
				ByteScans: s.ByteScans, WireBytes: s.WireBytes, BytesRead: s.BytesRead})
			for _, ft := range s.Filters {
				i := slices.IndexFunc(st.KeyFilters, func(f *storage.KeyFilter) bool { return f.Name == ft.Name })
				if i < 0 {
					st.KeyFilters = append(st.KeyFilters, storage.NewKeyFilter(ft.Name))
					i = len(st.KeyFilters) - 1
				}
				st.KeyFilters[i].Tally(ft.Tested, ft.Passed, ft.Off)
			}
		}
	}
	return ds
}

// DecodeReport reads an analyze report batch.
func DecodeReport(rec arrow.RecordBatch) (TaskReport, error) {
	var r TaskReport
	if rec.NumCols() != 1 || rec.NumRows() != 1 {
		return r, nferr.Dataf("task report: %d columns, %d rows", rec.NumCols(), rec.NumRows())
	}
	s, ok := rec.Column(0).(*array.String)
	if !ok {
		return r, nferr.Dataf("task report: column of type %s", rec.Column(0).DataType())
	}
	if err := json.Unmarshal([]byte(s.Value(0)), &r); err != nil {
		return r, nferr.Dataf("task report: %v", err)
	}
	return r, nil
}

type remoteBuilder struct {
	f     *Fragment
	xs    map[int]*shuffle.Exchange
	recvd *exec.NetCounters
	held  *HeldStore
}

func (rb *remoteBuilder) Receivers(n *phys.PhysNode, schema *arrow.Schema) ([]exec.Operator, error) {
	if n.Remote.Held != "" {
		return heldReaders(rb.held, n, rb.f.Task, schema)
	}
	x := rb.xs[n.Remote.Exchange]
	if x == nil {
		return nil, nferr.Dataf("plan fragment: exchange %d has no channel", n.Remote.Exchange)
	}
	ops := make([]exec.Operator, 0, n.Streams)
	for s := 0; s < n.Streams; s++ {
		r, err := x.Receiver(rb.f.Task*n.Streams + s)
		if err != nil {
			phys.CloseAll(ops)
			return nil, err
		}
		ops = append(ops, exec.NewNetReceiver(schema, r, rb.recvd))
	}
	return ops, nil
}

// RunFragment runs one task of a distributed plan until its output is
// complete, ctx ends or something fails.
func RunFragment(ctx context.Context, f *Fragment, fe FragmentEnv) (err error) {
	start := time.Now()
	if fe.Alloc == nil {
		fe.Alloc = memory.DefaultAllocator
	}
	ctr := fe.Counters
	if ctr == nil {
		ctr = &FragmentCounters{}
	}
	xs := map[int]*shuffle.Exchange{}
	defer func() {
		for _, x := range xs {
			fe.Exchanges.release(x.Spec().ID)
		}
	}()
	for id, sp := range f.Channels {
		if sp == nil {
			return nferr.Dataf("plan fragment: exchange %d has no channel", id)
		}
		if fe.Exchanges == nil {
			return nferr.Internalf("stage %d task %d: exchanges without a shuffle client", f.Stage, f.Task)
		}
		x, err := fe.Exchanges.acquire(sp)
		if err != nil {
			return err
		}
		xs[id] = x
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := f.MemoryLimit
	if limit <= 0 && fe.Memory == nil {
		limit = exec.DefaultMemoryLimit()
	}
	env := &exec.Env{Ctx: ctx, Alloc: fe.Alloc, Budget: exec.NewBudgetUnder(fe.Memory, limit), BatchSize: f.BatchSize, Parallelism: f.Parallelism}
	if fe.SpillDir != "off" {
		dir := fe.SpillDir
		if dir == "" {
			dir = os.TempDir()
		}
		env.Spill = exec.NewSpill(dir, fmt.Sprintf("%s-s%d-t%d", f.Query, f.Stage, f.Task), 0)
		defer func() {
			ctr.Spilled.Store(env.Spill.Written())
			env.Spill.Close()
		}()
	}
	if env.BatchSize <= 0 {
		env.BatchSize = exec.DefaultBatchSize
	}
	ops, stats, err := phys.BuildStreams(&phys.PhysPlan{Root: f.Root, Shared: f.Shared}, phys.BuildOptions{
		Source: fe.Source, Analyze: f.Analyze, Budget: env.Budget,
		Remote: &remoteBuilder{f: f, xs: xs, recvd: &ctr.Received, held: fe.held()},
		Task:   f.Task, Tasks: f.Tasks, StreamBase: f.Task * phys.MaxParallelism,
		Stage: f.Stage, RemoteFilters: f.KeyFilters, FilterHub: fe.filterHub(),
	})
	if err != nil {
		return err
	}
	switch {
	case f.Out == nil:
		err = runRootFragment(env, f, fe, ops, ctr)
	case f.Out.Kind == exec.ExchangeHeld:
		err = holdFragment(env, f, fe.held(), fe.SpillDir, ops, ctr)
	default:
		err = sendFragment(env, f, xs, ops, ctr)
	}
	if err != nil {
		return err
	}
	if f.Analyze {
		return sendReport(f, fe, stats, ctr, time.Since(start))
	}
	return nil
}

func runRootFragment(env *exec.Env, f *Fragment, fe FragmentEnv, ops []exec.Operator, ctr *FragmentCounters) error {
	root, err := phys.GatherOps(ops)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Open(env); err != nil {
		return err
	}
	fs := make([]arrow.Field, len(f.Root.Columns))
	for i, c := range f.Root.Columns {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.Arrow(), Nullable: c.Nullable}
		if i < len(f.Names) {
			fs[i].Name = f.Names[i]
		}
	}
	sch := arrow.NewSchema(fs, nil)
	if root.Schema().NumFields() != len(fs) {
		return nferr.Internalf("stage %d: root has %d columns, the plan %d", f.Stage, root.Schema().NumFields(), len(fs))
	}
	for {
		b, err := root.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		ctr.Out.Rows.Add(int64(b.Len()))
		ctr.Out.Batches.Add(1)
		if f.Analyze || fe.Send == nil {
			continue
		}
		d := exec.Compact(env.Alloc, b)
		rec := array.NewRecordBatch(sch, d.Cols, int64(d.N))
		for _, c := range d.Cols {
			c.Release()
		}
		err = fe.Send(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}

func sendFragment(env *exec.Env, f *Fragment, xs map[int]*shuffle.Exchange, ops []exec.Operator, ctr *FragmentCounters) error {
	x := xs[f.Out.Exchange]
	if x == nil {
		phys.CloseAll(ops)
		return nferr.Dataf("plan fragment: output exchange %d has no channel", f.Out.Exchange)
	}
	senders := make([]*shuffle.Sender, len(ops))
	for i := range ops {
		s, err := x.Sender(f.Task*len(ops) + i)
		if err != nil {
			phys.CloseAll(ops)
			return err
		}
		senders[i] = s
	}
	receivers := len(x.Spec().Receivers)
	if n := len(f.OutGroups); n > 0 && (f.Out.PerTask < 1 || (f.OutGroups[n-1]+1)*f.Out.PerTask != receivers) {
		phys.CloseAll(ops)
		return nferr.Dataf("plan fragment: partitions coalesced into %d tasks of %d receivers, the channel has %d", f.OutGroups[n-1]+1, f.Out.PerTask, receivers)
	}
	spec := exec.NetSendSpec{Kind: f.Out.Kind, Keys: f.Out.Keys, Cuts: f.Out.Cuts, Receivers: receivers,
		Splits: sendSplits(f.Out.Splits, f.Out.PerTask), SplitCopy: f.Out.SplitCopy, Route: coalesceRoute(f.OutGroups, f.Out.PerTask)}
	err := exec.NetSend(env, ops, phys.ColumnsSchema(f.Root.Columns), senders, spec, &ctr.Sent)
	ctr.Out.Rows.Store(ctr.Sent.Rows.Load())
	ctr.Out.Batches.Store(ctr.Sent.Batches.Load())
	return err
}

func sendReport(f *Fragment, fe FragmentEnv, stats map[int]*phys.OpStats, ctr *FragmentCounters, wall time.Duration) error {
	r := TaskReport{Stage: f.Stage, Task: f.Task, Node: fe.Node, Rows: ctr.Out.Rows.Load(),
		BytesSent: ctr.Sent.Bytes.Load(), BytesReceived: ctr.Received.Bytes.Load(), Wall: wall,
		Ops: map[int]OpFigures{}, Scans: map[int]ScanTotals{}}
	for id, st := range stats {
		sp, files := st.Spilled()
		r.Ops[id] = OpFigures{Instances: st.Instances, Rows: st.Rows.Load(), Batches: st.Batches.Load(), Nanos: st.Nanos.Load(), Peak: st.PeakBytes(),
			Spilled: sp, SpillFile: files}
		if st.Scan != nil {
			t := st.Scan.Totals()
			sc := ScanTotals{RowGroupsTotal: t.RowGroupsTotal, RowGroupsPruned: t.RowGroupsPruned, LocalScans: t.LocalScans,
				ByteScans: t.ByteScans, WireBytes: t.WireBytes, BytesRead: t.BytesRead}
			for _, f := range st.KeyFilters {
				k := f.Stats()
				sc.Filters = append(sc.Filters, FilterTotals{Name: f.Name, Tested: k.Tested, Passed: k.Passed, Off: k.Off})
			}
			r.Scans[id] = sc
		}
	}
	if n := ctr.HeldSpilled.Load(); n > 0 {
		o := r.Ops[f.Root.ID]
		o.Spilled += n
		o.SpillFile += ctr.HeldSpillFiles.Load()
		r.Ops[f.Root.ID] = o
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nferr.Internalf("task report: %v", err)
	}
	bld := array.NewStringBuilder(fe.Alloc)
	defer bld.Release()
	bld.Append(string(b))
	col := bld.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(ReportSchema, []arrow.Array{col}, 1)
	defer rec.Release()
	if fe.Send == nil {
		return nil
	}
	return fe.Send(rec)
}
