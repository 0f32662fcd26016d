package phys

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// BuildOptions say how Build instantiates a physical plan.
type BuildOptions struct {
	// Source runs the scans: the local database (*storage.DB) or a
	// storage.RemoteScanner.
	Source storage.Source
	// Analyze wraps every operator instance with counters (EXPLAIN
	// ANALYZE); Budget must then be the budget of the Env the plan runs
	// with, so that each operator can draw from a child of it.
	Analyze bool
	Budget  *exec.Budget
	// Remote builds the receivers of remote nodes (distributed fragments);
	// nil: a plan with remote nodes does not build.
	Remote RemoteBuilder
	// Task and Tasks (distributed fragments): the scans of a stage of
	// Tasks tasks read row-group tasks Task, Task+Tasks, ... (all of them
	// when the scan is replicated). Tasks 0 means 1.
	Task, Tasks int
	// StreamBase numbers this fragment's streams after those of the
	// stage's earlier tasks (row ids stay unique across tasks).
	StreamBase int
	// Stage, RemoteFilters and FilterHub (distributed fragments): the key
	// filters whose join or scan is in this stage but not both
	// (CrossStageKeyFilters), and what carries them between tasks.
	Stage         int
	RemoteFilters []RemoteKeyFilter
	FilterHub     FilterHub
}

// FilterHub carries a fragment's cross-stage key filters (RemoteKeyFilter)
// over the network.
type FilterHub interface {
	// Published is called once this task's join published its part of
	// filter id (or disabled it); it must not block.
	Published(id int, f *storage.KeyFilter)
	// Expect registers the filter object of id a scan of this task
	// applies: the hub publishes the merged filter into it when it comes.
	Expect(id int, f *storage.KeyFilter)
}

// RemoteBuilder makes the operators reading a remote node's receivers
// (one per stream), with the node's column schema.
type RemoteBuilder interface {
	Receivers(n *PhysNode, schema *arrow.Schema) ([]exec.Operator, error)
}

// Executable is a physical plan instantiated as exec operators: Root
// produces the result (one stream). The caller opens it with an Env,
// drains it and closes it (which closes everything).
type Executable struct {
	Root exec.Operator
	// Stats holds EXPLAIN ANALYZE counters by physical node ID (nil
	// without BuildOptions.Analyze).
	Stats map[int]*OpStats
}

// Build instantiates plan's operators. It does no I/O: files are opened
// when the operators are.
//
// A plan received from elsewhere (a coordinator) is checked node by node:
// a malformed plan is a KindData error, never a panic.
func Build(plan *PhysPlan, opts BuildOptions) (exe *Executable, err error) {
	if err := CheckPlan(plan); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			exe, err = nil, nferr.Internalf("build bug (please report): %v", r)
		}
	}()
	b := newBuilder(plan, opts)
	if opts.Analyze {
		if opts.Budget == nil {
			return nil, nferr.Internalf("build: Analyze needs the query's budget")
		}
		b.stats = map[int]*OpStats{}
	}
	if err := b.buildShared(plan.Shared); err != nil {
		return nil, err
	}
	ops, err := b.build(plan.Root)
	if err != nil {
		b.abandon()
		return nil, err
	}
	root, err := GatherOps(ops)
	if err != nil {
		b.abandon()
		return nil, err
	}
	return &Executable{Root: root, Stats: b.stats}, nil
}

// BuildStreams instantiates plan's operators like Build but returns the
// root's streams without gathering them (a distributed fragment sends
// every stream through its own shuffle sender).
func BuildStreams(plan *PhysPlan, opts BuildOptions) (ops []exec.Operator, stats map[int]*OpStats, err error) {
	if err := CheckPlan(plan); err != nil {
		return nil, nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			ops, stats, err = nil, nil, nferr.Internalf("build bug (please report): %v", r)
		}
	}()
	b := newBuilder(plan, opts)
	if opts.Analyze {
		if opts.Budget == nil {
			return nil, nil, nferr.Internalf("build: Analyze needs the query's budget")
		}
		b.stats = map[int]*OpStats{}
	}
	if err := b.buildShared(plan.Shared); err != nil {
		return nil, nil, err
	}
	ops, err = b.build(plan.Root)
	if err != nil {
		b.abandon()
		return nil, nil, err
	}
	return ops, b.stats, nil
}

// buildShared instantiates the shared subplans, in order (one may read an
// earlier one); on error it abandons those built.
func (b *builder) buildShared(defs []*PhysShared) error {
	for _, d := range defs {
		ops, err := b.build(d.Root)
		if err == nil {
			var root exec.Operator
			root, err = GatherOps(ops)
			if err == nil {
				b.shared[d.ID] = &sharedMat{def: d, schema: root.Schema(), root: root}
				continue
			}
		}
		b.abandon()
		return err
	}
	return nil
}

// GatherOps returns the one operator of ops, or a gather over them.
func GatherOps(ops []exec.Operator) (exec.Operator, error) {
	if len(ops) == 1 {
		return ops[0], nil
	}
	g, err := exec.NewGather(ops)
	if err != nil {
		CloseAll(ops)
		return nil, err
	}
	return g, nil
}

type builder struct {
	opts   BuildOptions
	shared map[int]*sharedMat
	stats  map[int]*OpStats
	// keyFilters are the plan's join key filters (keyfilter.go); kf holds
	// the filter object of each, created by whichever of the scan and the
	// join is built first.
	keyFilters []keyFilterTarget
	kf         map[[2]int]*storage.KeyFilter // by (join node, key)
	// remoteJoin and remoteScan are the cross-stage filters this
	// fragment's joins publish and its scans apply (remoteFilters).
	remoteJoin []RemoteKeyFilter
	remoteScan []remoteScanFilter
	// segScan maps a scan node to the segmented aggregate it clocks;
	// clocks holds each such aggregate's clocks (one per stream), made
	// when its scan is built.
	segScan map[int]int
	clocks  map[int][]*exec.SegmentClock
	// work holds the work tables of the recursive nodes built so far.
	work map[int]*exec.WorkTable
	// mu serializes the builds made while the query runs (a recursive
	// term's runs, an apply's subqueries), which may come from several
	// streams at once.
	mu sync.Mutex
}

func newBuilder(plan *PhysPlan, opts BuildOptions) *builder {
	b := &builder{opts: opts, shared: map[int]*sharedMat{}, kf: map[[2]int]*storage.KeyFilter{},
		segScan: map[int]int{}, clocks: map[int][]*exec.SegmentClock{}}
	var segs func(n *PhysNode)
	segs = func(n *PhysNode) {
		if n == nil {
			return
		}
		if n.Kind == PhysHashAgg && n.Agg != nil && n.Agg.Segmented && len(n.Inputs) == 1 {
			if s := segmentScan(n.Inputs[0], n.Agg.GroupCols); s != nil && s.Streams == n.Streams {
				b.segScan[s.ID] = n.ID
			}
		}
		for _, in := range n.Inputs {
			segs(in)
		}
	}
	segs(plan.Root)
	for _, d := range plan.Shared {
		segs(d.Root)
	}
	// NB: a local scan applies key filters while decoding; a storage
	// node's records get them in exec.Scan as they arrive.
	roots := []*PhysNode{plan.Root}
	for _, d := range plan.Shared {
		roots = append(roots, d.Root)
	}
	b.keyFilters = keyFilterTargets(roots...)
	if opts.FilterHub != nil {
		b.remoteFilters(opts)
	}
	return b
}

// remoteFilters wires the fragment's cross-stage key filters: a join of
// this stage publishes into the object of its key, sized as planned, and
// tells the hub; a scan of this stage gets an object the hub publishes
// into when the merged filter arrives.
func (b *builder) remoteFilters(opts BuildOptions) {
	sends := map[*storage.KeyFilter][]int{}
	for _, r := range opts.RemoteFilters {
		switch opts.Stage {
		case r.JoinStage:
			f := b.keyFilterOf(r.Join, r.Key, r.Name)
			f.SetWords(r.Words)
			if sends[f] == nil {
				hub := opts.FilterHub
				f.Notify(func(f *storage.KeyFilter) {
					for _, id := range sends[f] {
						hub.Published(id, f)
					}
				})
			}
			sends[f] = append(sends[f], r.ID)
			b.remoteJoin = append(b.remoteJoin, r)
		case r.ScanStage:
			f := storage.NewKeyFilter(r.Name)
			opts.FilterHub.Expect(r.ID, f)
			b.remoteScan = append(b.remoteScan, remoteScanFilter{r: r, f: f})
		}
	}
}

// remoteScanFilter is the object a scan applies for a cross-stage filter.
type remoteScanFilter struct {
	r RemoteKeyFilter
	f *storage.KeyFilter
}

// keyFilter returns the filter object of t's join key (one for all the
// scans it reaches, the branches of a UNION ALL).
func (b *builder) keyFilter(t keyFilterTarget) *storage.KeyFilter {
	return b.keyFilterOf(t.Join, t.Key, keyFilterName(t))
}

func (b *builder) keyFilterOf(join, key int, name string) *storage.KeyFilter {
	id := [2]int{join, key}
	f := b.kf[id]
	if f == nil {
		f = storage.NewKeyFilter(name)
		b.kf[id] = f
	}
	return f
}

// scanKeyFilters are the key filters scan node n applies.
func (b *builder) scanKeyFilters(n *PhysNode) []storage.ScanKeyFilter {
	var out []storage.ScanKeyFilter
	for _, t := range b.keyFilters {
		if t.Scan == n.ID {
			out = append(out, storage.ScanKeyFilter{Column: t.Column, Filter: b.keyFilter(t)})
		}
	}
	for _, r := range b.remoteScan {
		if r.r.Scan == n.ID {
			out = append(out, storage.ScanKeyFilter{Column: r.r.Column, Filter: r.f, Wait: r.r.Wait})
		}
	}
	return out
}

// joinKeyFilters are the key filters join node n publishes.
func (b *builder) joinKeyFilters(n *PhysNode) []exec.JoinKeyFilter {
	var out []exec.JoinKeyFilter
	for _, t := range b.keyFilters {
		if t.Join == n.ID && !slices.ContainsFunc(out, func(k exec.JoinKeyFilter) bool { return k.Key == t.Key }) {
			out = append(out, exec.JoinKeyFilter{Key: t.Key, Filter: b.keyFilter(t)})
		}
	}
	for _, r := range b.remoteJoin {
		if r.Join == n.ID && !slices.ContainsFunc(out, func(k exec.JoinKeyFilter) bool { return k.Key == r.Key }) {
			out = append(out, exec.JoinKeyFilter{Key: r.Key, Filter: b.keyFilterOf(r.Join, r.Key, r.Name)})
		}
	}
	return out
}

// abandon frees shared subplans no reader owns (after a failed build).
func (b *builder) abandon() {
	for _, m := range b.shared {
		if m.refs.Load() == 0 {
			m.closeRoot()
		}
	}
}

func CloseAll(ops []exec.Operator) {
	for _, o := range ops {
		if o != nil {
			o.Close()
		}
	}
}

// build instantiates node n: one operator per output stream.
func (b *builder) build(n *PhysNode) ([]exec.Operator, error) {
	ins := make([][]exec.Operator, len(n.Inputs))
	for i, in := range n.Inputs {
		ops, err := b.build(in)
		if err != nil {
			for _, o := range ins[:i] {
				CloseAll(o)
			}
			return nil, err
		}
		ins[i] = ops
	}
	var ops []exec.Operator
	var err error
	switch n.Kind {
	case PhysScan:
		ops, err = b.scan(n)
	case PhysSharedScan:
		m := b.shared[n.Shared.Def]
		if m == nil {
			return nil, nferr.Internalf("build: shared subplan %d is not defined", n.Shared.Def)
		}
		m.refs.Add(1)
		ops = []exec.Operator{&sharedReader{m: m}}
	case PhysRecursive:
		ops, err = b.recursive(n, ins)
	case PhysApply:
		ops, err = b.applyOps(n, ins)
	case PhysWorkScan:
		w := b.work[n.Work.Work]
		if w == nil {
			return nil, nferr.Internalf("build: work table %d read outside its recursive node", n.Work.Work)
		}
		ops = []exec.Operator{exec.NewWorkTableScan(w)}
	case PhysRemote:
		if b.opts.Remote == nil {
			return nil, nferr.Internalf("build: remote node %d outside a distributed fragment", n.ID)
		}
		ops, err = b.opts.Remote.Receivers(n, ColumnsSchema(n.Columns))
	case PhysRowID:
		if len(ins) != 1 {
			return nil, nferr.Internalf("build: row id node %d has %d inputs", n.ID, len(ins))
		}
		for i, in := range ins[0] {
			ops = append(ops, newRowID(in, b.opts.StreamBase+i))
		}
	case PhysUnion:
		// UNION ALL concatenates the streams: nothing to instantiate, and
		// nothing to count (EXPLAIN ANALYZE sums the inputs).
		for _, o := range ins {
			ops = append(ops, o...)
		}
		return ops, nil
	default:
		ops, err = instantiate(n, ins)
		if err == nil && n.Kind == PhysHashJoin {
			if kf := b.joinKeyFilters(n); len(kf) > 0 {
				exec.SetKeyFilters(ops, kf)
			}
		}
		if err == nil && n.Kind == PhysHashAgg {
			if c := b.clocks[n.ID]; c != nil {
				exec.SetSegmentClocks(ops, c)
				delete(b.clocks, n.ID)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if len(ops) != n.Streams {
		CloseAll(ops)
		return nil, nferr.Internalf("build: %s node %d has %d streams, planned %d", n.Kind, n.ID, len(ops), n.Streams)
	}
	if b.stats != nil {
		// NB: a recursive term is built again for every run: its nodes
		// add up their runs' statistics.
		st := b.stats[n.ID]
		if st == nil {
			st = &OpStats{}
			b.stats[n.ID] = st
		}
		st.Instances += len(ops)
		if n.Kind == PhysScan {
			for _, k := range b.scanKeyFilters(n) {
				st.KeyFilters = append(st.KeyFilters, k.Filter)
			}
		}
		for i, o := range ops {
			child := b.opts.Budget.Child()
			st.budgets = append(st.budgets, child)
			ops[i] = &instrumented{op: o, st: st, budget: child}
			if ms, ok := o.(*morselScan); ok {
				st.Scan = ms.q
			}
		}
	}
	if checkContracts {
		for i, o := range ops {
			ops[i] = exec.Checked(o, fmt.Sprintf("%s node %d", n.Kind, n.ID))
		}
	}
	return ops, nil
}

// TaskShare is the row groups [lo, hi) of a scan's units (ScanOp.Tasks, in
// file order) that task of tasks reads when the scan is not split by
// range: a contiguous block, so that a task reads whole runs of files and
// the files storage.DB.Place puts on one node (contiguous blocks in file
// order too) are read by one task, not a slice of every node's.
func TaskShare(units, task, tasks int) (lo, hi int) {
	return task * units / tasks, (task + 1) * units / tasks
}

func (b *builder) scan(n *PhysNode) ([]exec.Operator, error) {
	if b.opts.Source == nil {
		return nil, nferr.Internalf("build: scan of %s without a storage source", n.Scan.Spec.Table)
	}
	sch, err := b.opts.Source.ScanSchema(n.Scan.Spec)
	if err != nil {
		return nil, err
	}
	tasks := n.Scan.Tasks
	spec := n.Scan.Spec
	switch {
	case b.opts.Tasks <= 1 || n.Scan.Replicated:
	case n.Scan.Range != nil:
		if tasks, spec, err = RangeTasks(n.Scan, b.opts.Task, b.opts.Tasks); err != nil {
			return nil, err
		}
	default:
		lo, hi := TaskShare(len(tasks), b.opts.Task, b.opts.Tasks)
		tasks = tasks[lo:hi]
	}
	q := &TaskQueue{tasks: tasks}
	kf := b.scanKeyFilters(n)
	var clocks []*exec.SegmentClock
	if agg, ok := b.segScan[n.ID]; ok {
		for range n.Streams {
			clocks = append(clocks, &exec.SegmentClock{})
		}
		b.clocks[agg] = clocks
	}
	ops := make([]exec.Operator, n.Streams)
	for i := range ops {
		ops[i] = &morselScan{src: b.opts.Source, spec: spec, q: q, schema: sch, keyFilters: kf}
		if clocks != nil {
			ops[i].(*morselScan).clock = clocks[i]
		}
	}
	return ops, nil
}

// RangeTasks is task t's share of a range-split scan: the row groups whose
// value range meets part t, and the scan's filter with the part's bounds
// (so a row group straddling two parts gives each its own rows).
func RangeTasks(s *ScanOp, t, tasks int) ([]storage.FileRange, storage.ScanSpec, error) {
	r := s.Range
	spec := s.Spec
	if r.Parts != tasks || len(r.Col.Min) != len(s.Tasks) || len(r.Col.Max) != len(s.Tasks) {
		return nil, spec, nferr.Internalf("build: scan of %s split in %d ranges over %d row groups, for %d tasks and %d row groups",
			spec.Table, r.Parts, len(r.Col.Min), tasks, len(s.Tasks))
	}
	var preds []*storage.Predicate
	if spec.Filter != nil {
		preds = append(preds, spec.Filter)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if t > 0 {
		lo = r.Bound(t)
		preds = append(preds, storage.Cmp(r.Col.Name, storage.OpGe, storage.Int(lo)))
	}
	last := t == r.Parts-1
	if !last {
		hi = r.Bound(t + 1)
		preds = append(preds, storage.Cmp(r.Col.Name, storage.OpLt, storage.Int(hi)))
	}
	var mine []storage.FileRange
	for i, fr := range s.Tasks {
		if r.Col.Max[i] >= lo && (last || r.Col.Min[i] < hi) {
			mine = append(mine, fr)
		}
	}
	spec.Filter = andPreds(preds)
	return mine, spec, nil
}

// instantiate builds the exec operators of a node over its inputs'
// operators (ins[i] holds input i's streams). It owns the inputs: on error
// it closes them. The planner calls it with schema stubs to learn a
// node's output schema; the builder with the real inputs.
// checkContracts wraps every operator in a checker of the Operator
// contract (exec.Checked) when the code runs under go test.
var checkContracts = testing.Testing()

func instantiate(n *PhysNode, ins [][]exec.Operator) ([]exec.Operator, error) {
	one := func(f func(in exec.Operator, stream int) (exec.Operator, error)) ([]exec.Operator, error) {
		if len(ins) != 1 {
			for _, o := range ins {
				CloseAll(o)
			}
			return nil, nferr.Internalf("build: %s node %d has %d inputs, want 1", n.Kind, n.ID, len(ins))
		}
		out := make([]exec.Operator, 0, len(ins[0]))
		for i, in := range ins[0] {
			op, err := f(in, i)
			if err != nil {
				CloseAll(out)
				CloseAll(ins[0][i:])
				return nil, err
			}
			out = append(out, op)
		}
		return out, nil
	}
	switch n.Kind {
	case PhysValues:
		v, err := exec.NewValues(n.Values.Names, n.Values.Rows)
		if err != nil {
			return nil, err
		}
		return []exec.Operator{v}, nil
	case PhysSeries:
		v, err := exec.NewSeries(*n.Series)
		if err != nil {
			return nil, err
		}
		return []exec.Operator{v}, nil
	case PhysFilter:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return exec.NewFilter(in, *n.Filter) })
	case PhysProject:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) {
			return exec.NewProject(in, n.Project.Exprs, n.Project.Names)
		})
	case PhysUnnest:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) {
			return exec.NewUnnest(in, n.Unnest.Arrays, n.Unnest.Names)
		})
	case PhysHashAgg:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return exec.NewHashAgg(in, *n.Agg) })
	case PhysSort:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return exec.NewSort(in, *n.Sort) })
	case PhysTopN:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return exec.NewTopN(in, *n.TopN) })
	case PhysLimit:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) {
			return exec.NewLimit(in, n.Limit.Limit, n.Limit.Offset)
		})
	case PhysDistinct:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return exec.NewDistinct(in, *n.Distinct) })
	case PhysWindow:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return exec.NewWindow(in, *n.Window) })
	case PhysMaxOneRow:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) { return &maxOneRow{in: in}, nil })
	case PhysRowID:
		return one(func(in exec.Operator, i int) (exec.Operator, error) { return newRowID(in, i), nil })
	case PhysSingleCheck:
		return one(func(in exec.Operator, _ int) (exec.Operator, error) {
			if c := n.SingleCheck.Col; c < 0 || c >= in.Schema().NumFields() || in.Schema().Field(c).Type.ID() != arrow.INT64 {
				return nil, nferr.Internalf("build: single check column %d is not a row id", c)
			}
			return &singleCheck{in: in, col: n.SingleCheck.Col}, nil
		})
	case PhysExchange:
		if len(ins) != 1 {
			return nil, nferr.Internalf("build: exchange node %d has %d inputs", n.ID, len(ins))
		}
		return exec.NewLocalExchange(*n.Exchange, ins[0])
	case PhysHashJoin:
		if len(ins) != 2 {
			for _, o := range ins {
				CloseAll(o)
			}
			return nil, nferr.Internalf("build: join node %d has %d inputs", n.ID, len(ins))
		}
		left, right := ins[0], ins[1]
		if len(left) == 1 && len(right) == 1 {
			j, err := exec.NewHashJoin(left[0], right[0], *n.Join)
			if err != nil {
				left[0].Close()
				right[0].Close()
				return nil, err
			}
			return []exec.Operator{j}, nil
		}
		probes, builds := left, right
		if n.Join.Build == exec.SideLeft {
			probes, builds = right, left
		}
		ops, err := exec.NewParallelHashJoin(probes, builds, *n.Join)
		if err != nil {
			CloseAll(left)
			CloseAll(right)
			return nil, err
		}
		return ops, nil
	case PhysNLJoin:
		if len(ins) != 2 {
			for _, o := range ins {
				CloseAll(o)
			}
			return nil, nferr.Internalf("build: join node %d has %d inputs", n.ID, len(ins))
		}
		left, right := ins[0], ins[1]
		if len(right) != len(left) {
			CloseAll(left)
			CloseAll(right)
			return nil, nferr.Internalf("build: nested loop join node %d: %d left streams, %d right", n.ID, len(left), len(right))
		}
		out := make([]exec.Operator, 0, len(left))
		for i := range left {
			j, err := exec.NewNestedLoopJoin(left[i], right[i], *n.NLJoin)
			if err != nil {
				CloseAll(out)
				CloseAll(left[i:])
				CloseAll(right[i:])
				return nil, err
			}
			out = append(out, j)
		}
		return out, nil
	}
	for _, o := range ins {
		CloseAll(o)
	}
	return nil, nferr.Internalf("build: unknown physical node kind %q", n.Kind)
}

// OutputSchema instantiates n over schema stubs of its inputs (one stream
// each) to validate its spec and learn its output schema.
func OutputSchema(n *PhysNode, inputs []*arrow.Schema) (*arrow.Schema, error) {
	ins := make([][]exec.Operator, len(inputs))
	for i, s := range inputs {
		ins[i] = []exec.Operator{schemaStub{s}}
	}
	saved := n.Streams
	// NB: a node of a subquery run per row may hold parameters; NULLs of
	// their types stand for them here.
	ops, err := instantiate(mapExprs(n, expr.NullParams), ins)
	n.Streams = saved
	if err != nil {
		return nil, err
	}
	defer CloseAll(ops)
	if len(ops) == 0 {
		return nil, nferr.Internalf("planner: %s node produced no operator", n.Kind)
	}
	return ops[0].Schema(), nil
}

// maxPlanDepth bounds the nesting of a plan checked or built (recursion
// over a hostile plan must not exhaust the stack); real plans are tens of
// levels deep.
const maxPlanDepth = 1000

// maxInstances bounds the operator instances of one plan, and
// maxExchangeFan the queues of one exchange (inputs x outputs, each queue
// holding up to max(2, inputs) batches): a coordinator plans a few
// streams per core, while a hostile plan could ask for millions.
const (
	maxInstances   = 1 << 16
	maxExchangeFan = 1 << 14
)

// CheckPlan verifies that every node has its kind's spec and inputs, and
// that stream counts are positive and bounded.
func CheckPlan(p *PhysPlan) error {
	if p == nil || p.Root == nil {
		return nferr.Dataf("physical plan: no root")
	}
	total := 0
	count := func(n *PhysNode) { total += max(n.Streams, 0) }
	for _, d := range p.Shared {
		if d != nil && d.Root != nil {
			d.Root.Walk(count)
		}
	}
	p.Root.Walk(count)
	if total > maxInstances {
		// A limit the query's size hits: the query's fault.
		return nferr.Queryf("query too large: its plan needs %d operator instances (limit %d)", total, maxInstances)
	}
	ids := map[int]bool{}
	for _, d := range p.Shared {
		if d == nil || d.Root == nil {
			return nferr.Dataf("physical plan: shared subplan without a root")
		}
		if ids[d.ID] {
			return nferr.Dataf("physical plan: shared subplan %d defined twice", d.ID)
		}
		ids[d.ID] = true
		if err := checkNode(d.Root, 0, ids); err != nil {
			return err
		}
	}
	return checkNode(p.Root, 0, ids)
}

func checkNode(n *PhysNode, depth int, defs map[int]bool) error {
	if n == nil {
		return nferr.Dataf("physical plan: nil node")
	}
	if depth > maxPlanDepth {
		return nferr.Queryf("query too complex: its plan nests deeper than %d operators", maxPlanDepth)
	}
	if n.Streams < 1 || n.Streams > MaxParallelism {
		return nferr.Dataf("physical plan: %s node %d has %d streams (want 1..%d)", n.Kind, n.ID, n.Streams, MaxParallelism)
	}
	inputs, ok := map[PhysKind]int{PhysScan: 0, PhysValues: 0, PhysSeries: 0, PhysSharedScan: 0, PhysWorkScan: 0, PhysRemote: 0, PhysHashJoin: 2, PhysNLJoin: 2}[n.Kind]
	if !ok {
		inputs = 1
	}
	if n.Kind == PhysUnion {
		if len(n.Inputs) < 1 {
			return nferr.Dataf("physical plan: union node %d has no input", n.ID)
		}
	} else if len(n.Inputs) != inputs {
		return nferr.Dataf("physical plan: %s node %d has %d inputs, want %d", n.Kind, n.ID, len(n.Inputs), inputs)
	}
	var spec bool
	switch n.Kind {
	case PhysScan:
		spec = n.Scan != nil
	case PhysValues:
		spec = n.Values != nil
	case PhysSeries:
		spec = n.Series != nil && n.Series.Step != 0 && n.Streams == 1
	case PhysFilter:
		spec = n.Filter != nil
	case PhysProject:
		spec = n.Project != nil && len(n.Project.Names) == len(n.Project.Exprs)
	case PhysUnnest:
		spec = n.Unnest != nil && len(n.Unnest.Arrays) > 0 && len(n.Unnest.Names) == 2*len(n.Unnest.Arrays)+1
	case PhysHashAgg:
		spec = n.Agg != nil
	case PhysHashJoin:
		spec = n.Join != nil
	case PhysNLJoin:
		spec = n.NLJoin != nil
	case PhysSort:
		spec = n.Sort != nil
	case PhysTopN:
		spec = n.TopN != nil
	case PhysLimit:
		spec = n.Limit != nil
	case PhysDistinct:
		spec = n.Distinct != nil
	case PhysWindow:
		spec = n.Window != nil
	case PhysExchange:
		spec = n.Exchange != nil
		if spec && (n.Exchange.Kind == exec.ExchangeHash || n.Exchange.Kind == exec.ExchangeBroadcast) && (n.Exchange.Outputs < 1 || n.Exchange.Outputs > MaxParallelism) {
			return nferr.Dataf("physical plan: exchange node %d has %d outputs", n.ID, n.Exchange.Outputs)
		}
		if spec && len(n.Inputs) == 1 && n.Inputs[0] != nil && n.Inputs[0].Streams*n.Streams > maxExchangeFan {
			return nferr.Dataf("physical plan: exchange node %d joins %d streams to %d (limit %d queues)", n.ID, n.Inputs[0].Streams, n.Streams, maxExchangeFan)
		}
	case PhysSharedScan:
		spec = n.Shared != nil && defs[n.Shared.Def]
	case PhysSingleCheck:
		spec = n.SingleCheck != nil
	case PhysRecursive:
		spec = n.Recursive != nil && n.Recursive.Term != nil && n.Streams == 1
	case PhysWorkScan:
		spec = n.Work != nil && n.Streams == 1
	case PhysApply:
		spec = n.Apply != nil && n.Apply.Sub != nil && len(n.Apply.Params) == len(n.Apply.Cols)
		for _, c := range n.Apply.Cols {
			if spec && (c < 0 || c >= len(n.Inputs[0].Columns)) {
				return nferr.Dataf("physical plan: apply node %d binds a parameter to input column %d of %d", n.ID, c, len(n.Inputs[0].Columns))
			}
		}
	case PhysRemote:
		spec = n.Remote != nil
	case PhysUnion, PhysMaxOneRow, PhysRowID:
		spec = true
	default:
		return nferr.Dataf("physical plan: unknown node kind %q", n.Kind)
	}
	if !spec {
		return nferr.Dataf("physical plan: %s node %d lacks its spec", n.Kind, n.ID)
	}
	for _, in := range n.Inputs {
		if err := checkNode(in, depth+1, defs); err != nil {
			return err
		}
	}
	if t := n.Rerun(); t != nil {
		return checkNode(t, depth+1, defs)
	}
	return nil
}

// andPreds is the conjunction of preds (nil for none).
func andPreds(preds []*storage.Predicate) *storage.Predicate {
	switch len(preds) {
	case 0:
		return nil
	case 1:
		return preds[0]
	}
	return storage.And(preds...)
}
