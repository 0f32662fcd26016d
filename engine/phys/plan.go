package phys

import (
	"runtime"
	"sort"
	"strings"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Physical planning: an optimized logical plan becomes a PhysPlan.
//
// Every logical node is lowered on its own, bottom-up, to one or a few
// physical nodes. A planned subtree is a pnode: its top physical node and
// the layout of its output, the logical ColumnID at each position, so
// expressions above map IDs to positions once per node. Layouts may carry
// more columns than the logical node lists (a scan's filter columns are
// dropped early instead; a join's computed keys are projected away right
// after it); positions are exact only where they must be: at the root, at
// set operations and at shared subplans, which project to their logical
// columns.
//
// Columns no ancestor needs are never read: planning passes down the set
// of needed IDs, scans project only those (a column used only by a filter
// storage evaluates is not even returned), and projections drop unneeded
// outputs.
//
// Parallelism (PlanOptions.Parallelism = P pipelines):
//
//	scans            min(P, row groups) instances over a shared task queue
//	hash aggregates  partial per stream -> gather -> final when the
//	                 estimated groups are few; hash repartition by the
//	                 group key into P single-phase aggregates when many
//	                 (and always for DISTINCT aggregates with groups);
//	                 local plans grouped on a key whose row groups hold
//	                 disjoint ranges: one segmented aggregate per scan
//	                 stream, no exchange (segment.go)
//	hash joins       the probe side's streams probe one table that all
//	                 build streams fill (exec.NewParallelHashJoin)
//	nested loops     the right side is broadcast to every left stream
//	sort             a sort per stream -> ordered merge
//	top-N            a top-N per stream -> ordered merge -> limit
//	limit            a limit per stream -> gather -> limit
//	distinct         hash repartition by every column -> a distinct each
//	window           hash repartition by the PARTITION BY key, or gather
//
// and the root gathers its streams.

// PlanOptions configure physical planning.
type PlanOptions struct {
	// Parallelism is the number of pipelines per node (default: the
	// number of CPUs Go may use).
	Parallelism int
	// RepartitionGroups: a parallel hash aggregate estimated to produce
	// more groups than this repartitions its input by the group key
	// instead of merging partial aggregates in one final aggregate
	// (default 100,000: below that, a final aggregate over P partial
	// results is cheap; above, it would redo most of the work on one
	// core).
	RepartitionGroups float64
	// Local: the plan runs in this process over the local database (not
	// cut into distributed stages), which allows segmented aggregation
	// (segment.go).
	Local bool
	// Disabled names physical rules not to apply (rules.go; SET
	// disabled_rules lists them with the optimizer's).
	Disabled []string
}

// Validate fills defaults and checks the options.
func (o *PlanOptions) Validate() error {
	if o.Parallelism == 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.Parallelism < 1 || o.Parallelism > MaxParallelism {
		return nferr.Queryf("parallelism %d out of range 1..%d", o.Parallelism, MaxParallelism)
	}
	if o.RepartitionGroups == 0 {
		o.RepartitionGroups = 100_000
	}
	for _, r := range o.Disabled {
		if !IsRule(r) {
			return nferr.Queryf("unknown physical rule %q (physical rules: %s)", r, strings.Join(RuleNames(), ", "))
		}
	}
	return nil
}

// semiBuildLeftFactor: a semi, anti or mark join builds on its left input
// only when that is this many times smaller than the right.
const semiBuildLeftFactor = 4

// rowsPerGroup is the row-group size assumed for tables whose files are
// unknown (tpch.DefaultRowGroupRows).
const rowsPerGroup = 256 * 1024

// MaxParallelism bounds pipelines per node: far more than any DPU or
// worker has cores, low enough that a typo does not start a million
// goroutines.
const MaxParallelism = 1024

// PlanPhysical lowers an optimized query plan to a physical plan; names
// are the result's column names.
func PlanPhysical(p plan.Plan, names []string, opts PlanOptions) (pp *PhysPlan, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			pp, err = nil, nferr.Internalf("physical planner bug (please report): %v", r)
		}
	}()
	pl := &physPlanner{opts: opts, est: opt.NewEstimator(), shared: map[*plan.SharedDef]int{}, disabled: map[string]bool{}, uses: map[string]int{}}
	for _, r := range opts.Disabled {
		pl.disabled[r] = true
	}
	cols := p.Columns()
	root, err := pl.plan(p, plan.ColSetOf(cols))
	if err != nil {
		return nil, err
	}
	if root, err = pl.exact(root, cols); err != nil {
		return nil, err
	}
	if root.n.Streams > 1 {
		root = pl.gather(root)
	}
	out := &PhysPlan{Root: root.n, Shared: pl.defs, Names: append([]string(nil), names...)}
	if len(out.Names) != len(cols) {
		return nil, nferr.Internalf("physical planner: %d names for %d columns", len(names), len(cols))
	}
	if !pl.disabled[RuleJoinKeyFilters] {
		// NB: filters are chosen when the plan (or a fragment of it) is
		// built; the count is the plan's own, before any cut into stages.
		roots := []*PhysNode{out.Root}
		for _, d := range out.Shared {
			roots = append(roots, d.Root)
		}
		pl.uses[RuleJoinKeyFilters] = len(keyFilterTargets(roots...))
	}
	out.Rules = pl.ruleUses()
	return out, nil
}

type physPlanner struct {
	opts   PlanOptions
	est    *opt.Estimator
	nextID int
	// synth numbers columns the physical plan adds (computed keys, row
	// ids): negative, so they never collide with logical IDs.
	synth  plan.ColumnID
	shared map[*plan.SharedDef]int
	defs   []*PhysShared
	// work holds the columns of the recursive CTEs' work tables;
	// hoisted counts the invariant parts of their terms (recursive.go).
	work    map[*plan.WorkTable][]PhysColumn
	hoisted int
	// params are the outer columns of the Apply subqueries being planned,
	// as exec parameters (apply.go); nparams numbers them.
	params  map[plan.ColumnID]expr.Expr
	nparams int
	// disabled are the physical rules not to apply, uses what the others
	// did (rules.go).
	disabled map[string]bool
	uses     map[string]int
}

// pnode is a planned subtree: its top node and output layout.
type pnode struct {
	n      *PhysNode
	layout []plan.ColumnID
	schema *arrow.Schema
}

func (pl *physPlanner) newSynth() plan.ColumnID {
	pl.synth--
	return pl.synth
}

// node finishes a physical node: ID, output schema (from exec's
// constructor over its inputs' schemas) and columns.
func (pl *physPlanner) node(n *PhysNode, layout []plan.ColumnID, est float64, inputs ...*pnode) (*pnode, error) {
	pl.nextID++
	n.ID = pl.nextID
	n.EstRows = est
	for _, in := range inputs {
		n.Inputs = append(n.Inputs, in.n)
	}
	var sch *arrow.Schema
	switch n.Kind {
	case PhysScan, PhysSharedScan, PhysRecursive, PhysWorkScan, PhysApply:
		sch = ColumnsSchema(n.Columns)
	case PhysUnion:
		sch = inputs[0].schema
	default:
		ss := make([]*arrow.Schema, len(inputs))
		for i, in := range inputs {
			ss[i] = in.schema
		}
		var err error
		if sch, err = OutputSchema(n, ss); err != nil {
			return nil, err
		}
	}
	if len(layout) != sch.NumFields() {
		return nil, nferr.Internalf("physical planner: %s node has %d columns, layout %d", n.Kind, sch.NumFields(), len(layout))
	}
	n.Columns = make([]PhysColumn, sch.NumFields())
	for i, f := range sch.Fields() {
		t, err := expr.TypeOf(f.Type)
		if err != nil {
			return nil, err
		}
		n.Columns[i] = PhysColumn{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return &pnode{n: n, layout: layout, schema: sch}, nil
}

func ColumnsSchema(cols []PhysColumn) *arrow.Schema {
	fs := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.Arrow(), Nullable: c.Nullable}
	}
	return arrow.NewSchema(fs, nil)
}

func (pl *physPlanner) plan(p plan.Plan, need plan.ColSet) (*pnode, error) {
	switch n := p.(type) {
	case *plan.ScanNode:
		return pl.scan(n, need)
	case *plan.FilterNode:
		in, err := pl.plan(n.Input, union(need, plan.ColsOf(n.Cond)))
		if err != nil {
			return nil, err
		}
		return pl.filter(in, n.Cond, pl.est.Rows(n))
	case *plan.ProjectNode:
		return pl.project(n, need)
	case *plan.AggregateNode:
		return pl.aggregate(n)
	case *plan.JoinNode:
		return pl.join(n, need)
	case *plan.SortNode:
		return pl.sort(n.Input, n.Keys, -1, 0, need, pl.est.Rows(n))
	case *plan.TopNNode:
		return pl.sort(n.Input, n.Keys, n.Limit, n.Offset, need, pl.est.Rows(n))
	case *plan.LimitNode:
		in, err := pl.plan(n.Input, need)
		if err != nil {
			return nil, err
		}
		return pl.limit(in, n.Limit, n.Offset, pl.est.Rows(n))
	case *plan.DistinctNode:
		in, err := pl.plan(n.Input, plan.ColSetOf(n.Input.Columns()))
		if err != nil {
			return nil, err
		}
		if in, err = pl.exact(in, n.Input.Columns()); err != nil {
			return nil, err
		}
		if out, ok, err := pl.distinctOverArrays(in, n.Input.Columns(), pl.est.Rows(n)); ok || err != nil {
			return out, err
		}
		return pl.distinct(in, pl.est.Rows(n))
	case *plan.SetOpNode:
		return pl.setOp(n)
	case *plan.WindowNode:
		return pl.window(n, need)
	case *plan.ValuesNode:
		return pl.values(n)
	case *plan.UnnestNode:
		return pl.unnest(n, need)
	case *plan.SeriesNode:
		spec := &exec.SeriesSpec{Start: n.Start, Stop: n.Stop, Step: n.Step, Name: n.Col.QualifiedName()}
		return pl.node(&PhysNode{Kind: PhysSeries, Streams: 1, Series: spec}, []plan.ColumnID{n.Col.ID}, float64(spec.Rows()))
	case *plan.SharedScan:
		return pl.sharedScan(n)
	case *plan.RecursiveNode:
		return pl.recursive(n)
	case *plan.WorkScan:
		return pl.workScan(n)
	case *plan.ApplyNode:
		return pl.apply(n, need)
	}
	return nil, nferr.Internalf("physical planner: unknown plan node %T", p)
}

func union(a, b plan.ColSet) plan.ColSet {
	out := plan.ColSet{}
	out.AddAll(a)
	out.AddAll(b)
	return out
}

// ---------------------------------------------------------------- scans

// ---------------------------------------------------------------- row-wise operators

// projectExprs computes exprs over in; the output layout is cols' IDs.
func (pl *physPlanner) projectExprs(in *pnode, exprs []plan.Expr, cols []plan.Column, est float64) (*pnode, error) {
	in, exprs, err := pl.cse(in, append([]plan.Expr(nil), exprs...))
	if err != nil {
		return nil, err
	}
	op := &ProjectOp{}
	layout := make([]plan.ColumnID, len(exprs))
	for i, e := range exprs {
		x, err := pl.physExpr(e, in)
		if err != nil {
			return nil, err
		}
		op.Exprs = append(op.Exprs, x)
		op.Names = append(op.Names, cols[i].QualifiedName())
		layout[i] = cols[i].ID
	}
	return pl.node(&PhysNode{Kind: PhysProject, Streams: in.n.Streams, Project: op}, layout, est, in)
}

// exact projects in to exactly cols (IDs, order and types), unless it
// already is.
func (pl *physPlanner) exact(in *pnode, cols []plan.Column) (*pnode, error) {
	same := len(in.layout) == len(cols)
	for i := 0; same && i < len(cols); i++ {
		same = in.layout[i] == cols[i].ID && arrow.TypeEqual(in.schema.Field(i).Type, cols[i].Type) && !plan.IsNullType(cols[i].Type)
	}
	if same {
		return in, nil
	}
	cols = append([]plan.Column(nil), cols...)
	exprs := make([]plan.Expr, len(cols))
	for i, c := range cols {
		exprs[i] = plan.NewColRef(c)
		if plan.IsNullType(c.Type) {
			exprs[i] = plan.NullConst(plan.TypString)
			cols[i].Type = plan.TypString
		}
	}
	return pl.projectExprs(in, exprs, cols, in.n.EstRows)
}

// keepOnly projects in to the columns of keep (in layout order) when it
// carries others: a zero-copy projection that saves a copying consumer
// (join build, sort, aggregate states) from carrying dead columns.
func (pl *physPlanner) keepOnly(in *pnode, keep plan.ColSet) (*pnode, error) {
	var idx []int
	for i, id := range in.layout {
		if keep.Has(id) && layoutPos(in.layout, id) == i {
			idx = append(idx, i)
		}
	}
	if len(idx) == len(in.layout) || len(idx) == 0 {
		return in, nil
	}
	op := &ProjectOp{}
	layout := make([]plan.ColumnID, len(idx))
	for k, i := range idx {
		op.Exprs = append(op.Exprs, expr.Col(i, in.n.Columns[i].Name))
		op.Names = append(op.Names, in.n.Columns[i].Name)
		layout[k] = in.layout[i]
	}
	return pl.node(&PhysNode{Kind: PhysProject, Streams: in.n.Streams, Project: op}, layout, in.n.EstRows, in)
}

// ensure makes every expression of exprs a column of in: bare column
// references are found in the layout, other expressions are appended by
// one projection (identical ones once). It returns the positions.
func (pl *physPlanner) ensure(in *pnode, exprs []plan.Expr) (*pnode, []int, error) {
	pos := make([]int, len(exprs))
	var extra []plan.Expr
	keys := map[string]int{}
	for i, e := range exprs {
		if r, ok := e.(*plan.ColRef); ok {
			if p := layoutPos(in.layout, r.ID); p >= 0 {
				pos[i] = p
				continue
			}
		}
		k := plan.ExprKey(e)
		if j, ok := keys[k]; ok {
			pos[i] = j
			continue
		}
		pos[i] = len(in.layout) + len(extra)
		keys[k] = pos[i]
		extra = append(extra, e)
	}
	if len(extra) == 0 {
		return in, pos, nil
	}
	base := len(in.layout)
	in, extra, err := pl.cse(in, extra)
	if err != nil {
		return nil, nil, err
	}
	if shift := len(in.layout) - base; shift > 0 {
		// The shared subexpressions' columns come before the extras.
		for i := range pos {
			if pos[i] >= base {
				pos[i] += shift
			}
		}
	}
	op := &ProjectOp{}
	layout := append([]plan.ColumnID(nil), in.layout...)
	for i, c := range in.n.Columns {
		op.Exprs = append(op.Exprs, expr.Col(i, c.Name))
		op.Names = append(op.Names, c.Name)
	}
	for _, e := range extra {
		x, err := pl.physExpr(e, in)
		if err != nil {
			return nil, nil, err
		}
		op.Exprs = append(op.Exprs, x)
		op.Names = append(op.Names, e.String())
		layout = append(layout, pl.newSynth())
	}
	out, err := pl.node(&PhysNode{Kind: PhysProject, Streams: in.n.Streams, Project: op}, layout, in.n.EstRows, in)
	return out, pos, err
}

// dropSynth projects away the columns the physical plan added.
func (pl *physPlanner) dropSynth(in *pnode) (*pnode, error) {
	keep := plan.ColSet{}
	for _, id := range in.layout {
		if id > 0 {
			keep.Add(id)
		}
	}
	return pl.keepOnly(in, keep)
}

// ---------------------------------------------------------------- exchanges

func (pl *physPlanner) gather(in *pnode) *pnode {
	out, err := pl.node(&PhysNode{Kind: PhysExchange, Streams: 1, Exchange: &exec.ExchangeSpec{Kind: exec.ExchangeGather}}, in.layout, in.n.EstRows, in)
	if err != nil {
		// NB: a gather accepts any input; an error here is a planner bug.
		panic(err)
	}
	return out
}

func (pl *physPlanner) repartition(in *pnode, keys []int) (*pnode, error) {
	spec := &exec.ExchangeSpec{Kind: exec.ExchangeHash, Keys: keys, Outputs: pl.opts.Parallelism}
	return pl.node(&PhysNode{Kind: PhysExchange, Streams: spec.Outputs, Exchange: spec}, in.layout, in.n.EstRows, in)
}

func (pl *physPlanner) merge(in *pnode, keys []exec.SortKey) (*pnode, error) {
	spec := &exec.ExchangeSpec{Kind: exec.ExchangeMerge, SortKeys: keys}
	return pl.node(&PhysNode{Kind: PhysExchange, Streams: 1, Exchange: spec}, in.layout, in.n.EstRows, in)
}

func (pl *physPlanner) broadcast(in *pnode, m int) (*pnode, error) {
	spec := &exec.ExchangeSpec{Kind: exec.ExchangeBroadcast, Outputs: m}
	return pl.node(&PhysNode{Kind: PhysExchange, Streams: m, Exchange: spec}, in.layout, in.n.EstRows, in)
}

// ---------------------------------------------------------------- aggregates

// castTo casts the columns of in whose types differ from cols' (same
// layout) to the logical types.
func (pl *physPlanner) castTo(in *pnode, cols []plan.Column) (*pnode, error) {
	differ := false
	for i, c := range cols {
		if i < in.schema.NumFields() && !plan.IsNullType(c.Type) && !arrow.TypeEqual(in.schema.Field(i).Type, c.Type) {
			differ = true
		}
	}
	if !differ {
		return in, nil
	}
	exprs := make([]plan.Expr, len(cols))
	for i, c := range cols {
		exprs[i] = plan.NewColRef(c)
	}
	return pl.projectExprs(in, exprs, cols, in.n.EstRows)
}

// ---------------------------------------------------------------- joins

// spread gives in exactly m streams: one gathers, several broadcast.
func (pl *physPlanner) spread(in *pnode, m int) (*pnode, error) {
	switch {
	case m == 1 && in.n.Streams == 1:
		return in, nil
	case m == 1:
		return pl.gather(in), nil
	}
	return pl.broadcast(in, m)
}

// ---------------------------------------------------------------- sort, limit, distinct

// ---------------------------------------------------------------- set operations

// ---------------------------------------------------------------- windows

// ---------------------------------------------------------------- leaves

// sortedNodeIDs lists the IDs of a plan's nodes (tests, EXPLAIN).
func sortedNodeIDs(p *PhysPlan) []int {
	var ids []int
	visit := func(n *PhysNode) { ids = append(ids, n.ID) }
	for _, d := range p.Shared {
		d.Root.Walk(visit)
	}
	p.Root.Walk(visit)
	sort.Ints(ids)
	return ids
}
