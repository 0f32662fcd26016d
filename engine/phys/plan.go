package phys

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
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

// scanFilters splits a scan's filters into the predicates storage
// evaluates and the residual exec evaluates.
func scanFilters(n *plan.ScanNode) (preds []*storage.Predicate, residual []plan.Expr) {
	cols := map[plan.ColumnID]scanColumn{}
	for i, c := range n.Cols {
		f := n.Table.Schema.Field(n.Fields[i])
		cols[c.ID] = scanColumn{name: f.Name, typ: f.Type}
	}
	for _, f := range n.Filters {
		if p, ok := scanPredicate(f, cols); ok {
			preds = append(preds, p)
		} else {
			residual = append(residual, f)
		}
	}
	return preds, residual
}

// ScanFilter is the predicate storage evaluates for scan n (nil when none
// of its filters translates): every row the scan returns passes it.
func ScanFilter(n *plan.ScanNode) *storage.Predicate {
	preds, _ := scanFilters(n)
	return andPreds(preds)
}

func (pl *physPlanner) scan(n *plan.ScanNode, need plan.ColSet) (*pnode, error) {
	preds, residual := scanFilters(n)
	keep := union(need, plan.ColSet{})
	for _, r := range residual {
		keep.AddAll(plan.ColsOf(r))
	}
	table := n.Table.Name
	var tasks []storage.FileRange
	groups := 0
	st, _ := n.Table.Handle.(*storage.Table)
	if st != nil {
		table = st.QualifiedName()
		// NB: row groups the pushed filter's statistics rule out get no
		// task (the scan would skip them): a query reading a few row
		// groups of a big table then plans as few streams and tasks.
		may := st.RowGroupMayMatch(andPreds(preds))
		for _, f := range st.Files {
			for g := range f.RowGroups {
				groups++
				if may(f, g) {
					tasks = append(tasks, storage.FileRange{Path: f.Path, RowGroups: []int{g}})
				}
			}
		}
	} else {
		// NB: a table without storage (a test catalog) is one task: the
		// whole table (FileRange{} scans every file).
		tasks = []storage.FileRange{{}}
		groups = -1
	}
	spec := storage.ScanSpec{Table: table, Columns: []string{}}
	var layout []plan.ColumnID
	var pcols []PhysColumn
	for i, c := range n.Cols {
		if !keep.Has(c.ID) {
			continue
		}
		f := n.Table.Schema.Field(n.Fields[i])
		t, err := expr.TypeOf(f.Type)
		if err != nil {
			return nil, err
		}
		spec.Columns = append(spec.Columns, f.Name)
		layout = append(layout, c.ID)
		pcols = append(pcols, PhysColumn{Name: c.QualifiedName(), Type: t, Nullable: f.Nullable})
	}
	spec.Filter = andPreds(preds)
	streams := max(1, min(pl.opts.Parallelism, len(tasks)))
	if st == nil {
		// Without storage the table's row groups are unknown: assume
		// groups of rowsPerGroup rows (what `tpch gen` writes), so small
		// tables stay single-stream in EXPLAIN of test catalogs.
		streams = max(1, min(pl.opts.Parallelism, int(n.Table.RowCount()/rowsPerGroup)+1))
	}
	if st != nil && len(tasks) == 0 {
		tasks = nil // an empty table: no task at all
	}
	op := &ScanOp{Spec: spec, Tasks: tasks, RowGroups: groups, TableRows: float64(n.Table.RowCount())}
	if st != nil && len(tasks) > 1 {
		op.Clustered = clusteredCols(st, spec.Columns, pcols)
	}
	if len(residual) > 0 {
		op.Residual = logicalExprList(residual)
	}
	rows := pl.est.Rows(n)
	if op.Spec.Filter != nil && len(residual) == 0 && op.TableRows > 0 {
		// The estimate of what the pushed filter keeps: a storage node
		// filters a scan that keeps few rows (storage.ClientOptions.
		// ScanMode auto), and serves the stored bytes of the others.
		op.Spec.Selectivity = min(max(rows/op.TableRows, 1e-9), 1)
	}
	out, err := pl.node(&PhysNode{Kind: PhysScan, Streams: streams, Columns: pcols, Scan: op}, layout, rows)
	if err != nil {
		return nil, err
	}
	if len(residual) > 0 {
		return pl.filter(out, plan.AndOf(residual), rows)
	}
	return out, nil
}

// ---------------------------------------------------------------- row-wise operators

func (pl *physPlanner) filter(in *pnode, cond plan.Expr, est float64) (*pnode, error) {
	x, err := pl.physExpr(cond, in)
	if err != nil {
		return nil, err
	}
	return pl.node(&PhysNode{Kind: PhysFilter, Streams: in.n.Streams, Filter: &x}, in.layout, est, in)
}

// unnest plans an unnest node over the input columns needed above and
// by its arrays.
func (pl *physPlanner) unnest(n *plan.UnnestNode, need plan.ColSet) (*pnode, error) {
	inNeed := plan.ColSet{}
	for _, c := range n.Input.Columns() {
		if need.Has(c.ID) {
			inNeed.Add(c.ID)
		}
	}
	for _, a := range n.Arrays {
		inNeed.AddAll(plan.ColsOf(a))
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	op := &UnnestOp{}
	layout := append([]plan.ColumnID(nil), in.layout...)
	for i, a := range n.Arrays {
		x, err := pl.physExpr(a, in)
		if err != nil {
			return nil, err
		}
		op.Arrays = append(op.Arrays, x)
		op.Names = append(op.Names, n.Elems[i].QualifiedName(), n.Subs[i].QualifiedName())
		layout = append(layout, n.Elems[i].ID, n.Subs[i].ID)
	}
	op.Names = append(op.Names, n.Ord.QualifiedName())
	layout = append(layout, n.Ord.ID)
	return pl.node(&PhysNode{Kind: PhysUnnest, Streams: in.n.Streams, Unnest: op}, layout, pl.est.Rows(n), in)
}

func (pl *physPlanner) project(n *plan.ProjectNode, need plan.ColSet) (*pnode, error) {
	var idx []int
	for i, c := range n.Cols {
		if need.Has(c.ID) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 && len(n.Cols) > 0 {
		// NB: nothing above reads a column (count(*) over a derived
		// table): keep the narrowest, so batches still carry row counts
		// through operators that expect a column.
		idx = []int{opt.Narrowest(n.Cols)}
	}
	inNeed := plan.ColSet{}
	for _, i := range idx {
		inNeed.AddAll(plan.ColsOf(n.Exprs[i]))
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	exprs := make([]plan.Expr, len(idx))
	cols := make([]plan.Column, len(idx))
	for k, i := range idx {
		exprs[k], cols[k] = n.Exprs[i], n.Cols[i]
	}
	return pl.projectExprs(in, exprs, cols, pl.est.Rows(n))
}

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

func (pl *physPlanner) aggregate(n *plan.AggregateNode) (*pnode, error) {
	inNeed := plan.ColSet{}
	var exprs []plan.Expr
	for _, g := range n.Groups {
		inNeed.AddAll(plan.ColsOf(g))
		exprs = append(exprs, g)
	}
	for _, a := range n.Aggs {
		if a.Arg != nil {
			inNeed.AddAll(plan.ColsOf(a.Arg))
			exprs = append(exprs, a.Arg)
		}
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	in, pos, err := pl.ensure(in, exprs)
	if err != nil {
		return nil, err
	}
	spec := exec.HashAggSpec{GroupCols: pos[:len(n.Groups)]}
	k := len(n.Groups)
	distinct := false
	for i, a := range n.Aggs {
		as := exec.AggSpec{Func: exec.AggFunc(a.Fn), Distinct: a.Distinct, Name: n.AggCols[i].Name, Sep: a.Sep, Quantile: a.Quantile, Desc: a.Desc}
		if a.Arg != nil {
			as.Arg = pos[k]
			k++
		}
		// NB: "distinct" is any aggregate needing a group's rows in one
		// place (DISTINCT, quantiles): no partial and final split.
		distinct = distinct || exec.NeedsAllRows(as)
		spec.Aggs = append(spec.Aggs, as)
	}
	var layout []plan.ColumnID
	for _, c := range n.GroupCols {
		layout = append(layout, c.ID)
	}
	for _, c := range n.AggCols {
		layout = append(layout, c.ID)
	}
	groups := pl.est.Rows(n)
	var out *pnode
	switch {
	case pl.opts.Local && !distinct && len(spec.GroupCols) > 0 && segmentScan(in.n, spec.GroupCols) != nil && pl.use(RuleSegmentedAgg):
		// Every group's rows are in one stream and one row group: no
		// repartition, and groups are emitted a row group at a time.
		spec.Segmented = true
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: in.n.Streams, Agg: &spec}, layout, groups, in)
	case in.n.Streams == 1:
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: 1, Agg: &spec}, layout, groups, in)
	case distinct && len(spec.GroupCols) == 0:
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: 1, Agg: &spec}, layout, groups, pl.gather(in))
	case len(spec.GroupCols) > 0 && (distinct || n.Dedup || groups > pl.opts.RepartitionGroups && pl.use(RuleRepartitionAgg)):
		var rp *pnode
		if rp, err = pl.repartition(in, spec.GroupCols); err == nil {
			out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: rp.n.Streams, Agg: &spec}, layout, groups, rp)
		}
	default:
		partial, final, serr := exec.SplitAgg(spec)
		if serr != nil {
			return nil, serr
		}
		// The partial's layout: group keys, then each aggregate's states.
		var pLayout []plan.ColumnID
		pLayout = append(pLayout, layout[:len(n.GroupCols)]...)
		for range partialWidth(partial, in.schema) - len(n.GroupCols) {
			pLayout = append(pLayout, pl.newSynth())
		}
		pn, perr := pl.node(&PhysNode{Kind: PhysHashAgg, Streams: in.n.Streams, Agg: &partial}, pLayout, groups*float64(in.n.Streams), in)
		if perr != nil {
			return nil, perr
		}
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: 1, Agg: &final}, layout, groups, pl.gather(pn))
	}
	if err != nil {
		return nil, err
	}
	return pl.castTo(out, n.Columns())
}

// partialWidth is the number of columns of a partial aggregate's output.
func partialWidth(spec exec.HashAggSpec, in *arrow.Schema) int {
	a, err := exec.NewHashAgg(schemaStub{in}, spec)
	if err != nil {
		return len(spec.GroupCols) + len(spec.Aggs)
	}
	defer a.Close()
	return a.Schema().NumFields()
}

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

var joinTypes = map[plan.JoinKind]exec.JoinType{
	plan.JoinInner: exec.JoinInner, plan.JoinLeft: exec.JoinLeft, plan.JoinRight: exec.JoinRight, plan.JoinFull: exec.JoinFull,
	plan.JoinSemi: exec.JoinSemi, plan.JoinAnti: exec.JoinAnti, plan.JoinMark: exec.JoinMark, plan.JoinSingle: exec.JoinLeft,
}

func (pl *physPlanner) join(n *plan.JoinNode, need plan.ColSet) (*pnode, error) {
	lcols, rcols := plan.ColSetOf(n.Left.Columns()), plan.ColSetOf(n.Right.Columns())
	all := union(need, plan.ColSet{})
	for _, e := range plan.NodeExprs(n) {
		all.AddAll(plan.ColsOf(e))
	}
	lneed, rneed := plan.ColSet{}, plan.ColSet{}
	for id := range all {
		if lcols.Has(id) {
			lneed.Add(id)
		}
		if rcols.Has(id) {
			rneed.Add(id)
		}
	}
	left, err := pl.plan(n.Left, lneed)
	if err != nil {
		return nil, err
	}
	right, err := pl.plan(n.Right, rneed)
	if err != nil {
		return nil, err
	}
	if left, err = pl.keepOnly(left, lneed); err != nil {
		return nil, err
	}
	if right, err = pl.keepOnly(right, rneed); err != nil {
		return nil, err
	}
	est := pl.est.Rows(n)
	equi, cond := n.Equi, n.Cond
	if len(equi) == 0 && cond != nil {
		// NB: pushdown makes a join condition's equalities between the sides
		// equi-join keys; with that rule disabled (SET disabled_rules) they
		// are still keys here, since some joins (FULL) run only on keys.
		equi, cond = opt.SplitEqui(plan.Conjuncts(cond), lcols, rcols)
	}
	if n.NullAware && len(equi) > 1 {
		// NB: exec's null-aware joins take one key (the IN comparison,
		// Equi[0]); correlation equalities become residual conditions,
		// which exec applies before deciding that a NULL makes the
		// comparison unknown.
		var extra []plan.Expr
		for _, e := range equi[1:] {
			extra = append(extra, plan.NewCall(plan.FnEq, plan.TypBool, e.Left, e.Right))
		}
		if cond != nil {
			extra = append(extra, cond)
		}
		equi, cond = equi[:1], plan.AndOf(extra)
	}
	if n.Kind == plan.JoinSingle {
		return pl.singleJoin(n, left, right, equi, cond, est)
	}
	if len(equi) == 0 {
		return pl.nlJoin(n, n.Kind, left, right, cond, est)
	}
	return pl.hashJoin(n, n.Kind, left, right, equi, cond, est)
}

func (pl *physPlanner) hashJoin(n *plan.JoinNode, kind plan.JoinKind, left, right *pnode, equi []plan.EquiCond, cond plan.Expr, est float64) (*pnode, error) {
	out, err := pl.hashJoinNode(n, kind, left, right, equi, cond, est)
	if err != nil {
		return nil, err
	}
	return pl.dropSynth(out)
}

// hashJoinNode plans the hash join node itself; computed key columns stay
// in its output.
func (pl *physPlanner) hashJoinNode(n *plan.JoinNode, kind plan.JoinKind, left, right *pnode, equi []plan.EquiCond, cond plan.Expr, est float64) (*pnode, error) {
	lk := make([]plan.Expr, len(equi))
	rk := make([]plan.Expr, len(equi))
	for i, e := range equi {
		lk[i], rk[i] = e.Left, e.Right
	}
	left, lpos, err := pl.ensure(left, lk)
	if err != nil {
		return nil, err
	}
	right, rpos, err := pl.ensure(right, rk)
	if err != nil {
		return nil, err
	}
	for i := range equi {
		lt, rt := left.schema.Field(lpos[i]).Type, right.schema.Field(rpos[i]).Type
		if !arrow.TypeEqual(lt, rt) {
			return nil, nferr.Internalf("physical planner: join key %s = %s has types %s and %s", equi[i].Left, equi[i].Right, plan.TypeString(lt), plan.TypeString(rt))
		}
	}
	spec := &exec.HashJoinSpec{Type: joinTypes[kind], LeftKeys: lpos, RightKeys: rpos, NullAware: n.NullAware, Build: exec.SideRight}
	if n.Build == plan.BuildLeft {
		spec.Build = exec.SideLeft
	}
	switch {
	case n.NullAware:
		spec.Build = exec.SideRight
	case kind == plan.JoinSemi || kind == plan.JoinAnti || kind == plan.JoinMark:
		// The optimizer builds these on the right; when the left input is
		// much smaller, building on it (and probing with the right, marking
		// the build rows that match) holds less and probes a smaller table.
		// NB: "much" because the right side is often a filtered aggregate
		// (TPC-H Q18: sum(l_quantity) > 300) whose estimate is a guess.
		if pl.est.Rows(n.Left)*semiBuildLeftFactor < pl.est.Rows(n.Right) && pl.use(RuleSemiBuildLeft) {
			spec.Build = exec.SideLeft
		}
	}
	layout := pl.joinLayout(kind, n, left, right)
	if cond != nil {
		joined := &pnode{layout: append(append([]plan.ColumnID(nil), left.layout...), right.layout...), schema: concatSchemas(left.schema, right.schema)}
		x, err := pl.physExpr(cond, joined)
		if err != nil {
			return nil, err
		}
		spec.Residual = &x
	}
	if kind == plan.JoinMark {
		spec.MarkName = n.Mark.Name
	}
	probe := left
	if spec.Build == exec.SideLeft {
		probe = right
	}
	return pl.node(&PhysNode{Kind: PhysHashJoin, Streams: probe.n.Streams, Join: spec, NoKeyFilters: pl.disabled[RuleJoinKeyFilters]}, layout, est, left, right)
}

func (pl *physPlanner) joinLayout(kind plan.JoinKind, n *plan.JoinNode, left, right *pnode) []plan.ColumnID {
	layout := append([]plan.ColumnID(nil), left.layout...)
	switch kind {
	case plan.JoinSemi, plan.JoinAnti:
	case plan.JoinMark:
		layout = append(layout, n.Mark.ID)
	default:
		layout = append(layout, right.layout...)
	}
	return layout
}

func concatSchemas(a, b *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append(append([]arrow.Field(nil), a.Fields()...), b.Fields()...), nil)
}

// nlJoin plans a join without equi keys as a nested loop join (its right
// side broadcast to every left stream).
func (pl *physPlanner) nlJoin(n *plan.JoinNode, kind plan.JoinKind, left, right *pnode, cond plan.Expr, est float64) (*pnode, error) {
	switch kind {
	case plan.JoinRight:
		// A right join is the left join with the inputs swapped; layouts
		// keep the IDs, so nothing above notices the order.
		kind, left, right = plan.JoinLeft, right, left
	case plan.JoinFull:
		return nil, nferr.Queryf("FULL JOIN is only supported with an equality condition between the two sides")
	}
	if n.NullAware {
		return nil, nferr.Internalf("physical planner: null-aware join without an equality")
	}
	spec := &exec.NestedLoopJoinSpec{Type: joinTypes[kind]}
	if kind == plan.JoinMark {
		spec.MarkName = n.Mark.Name
	}
	if cond != nil {
		joined := &pnode{layout: append(append([]plan.ColumnID(nil), left.layout...), right.layout...), schema: concatSchemas(left.schema, right.schema)}
		x, err := pl.physExpr(cond, joined)
		if err != nil {
			return nil, err
		}
		spec.Condition = &x
	}
	right, err := pl.spread(right, left.n.Streams)
	if err != nil {
		return nil, err
	}
	return pl.node(&PhysNode{Kind: PhysNLJoin, Streams: left.n.Streams, NLJoin: spec}, pl.joinLayout(kind, n, left, right), est, left, right)
}

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

// singleJoin plans a JoinSingle (a scalar subquery): a left join whose
// right side must match each left row at most once.
func (pl *physPlanner) singleJoin(n *plan.JoinNode, left, right *pnode, equi []plan.EquiCond, cond plan.Expr, est float64) (*pnode, error) {
	if len(equi) == 0 && cond == nil {
		// Uncorrelated: the subquery yields at most one row for all.
		if right.n.Streams > 1 {
			right = pl.gather(right)
		}
		one, err := pl.node(&PhysNode{Kind: PhysMaxOneRow, Streams: 1}, right.layout, 1, right)
		if err != nil {
			return nil, err
		}
		return pl.nlJoin(n, plan.JoinLeft, left, one, nil, est)
	}
	rid := pl.newSynth()
	idLayout := append(append([]plan.ColumnID(nil), left.layout...), rid)
	numbered, err := pl.node(&PhysNode{Kind: PhysRowID, Streams: left.n.Streams}, idLayout, left.n.EstRows, left)
	if err != nil {
		return nil, err
	}
	var joined *pnode
	if len(equi) > 0 {
		j := *n
		j.Build = plan.BuildRight
		joined, err = pl.hashJoinNode(&j, plan.JoinLeft, numbered, right, equi, cond, est)
	} else {
		joined, err = pl.nlJoin(n, plan.JoinLeft, numbered, right, cond, est)
	}
	if err != nil {
		return nil, err
	}
	checked, err := pl.node(&PhysNode{Kind: PhysSingleCheck, Streams: joined.n.Streams, SingleCheck: &SingleCheckOp{Col: layoutPos(joined.layout, rid)}}, joined.layout, est, joined)
	if err != nil {
		return nil, err
	}
	return pl.dropSynth(checked)
}

// ---------------------------------------------------------------- sort, limit, distinct

// sort plans ORDER BY keys, with a LIMIT when limit >= 0 (top-N).
func (pl *physPlanner) sort(input plan.Plan, keys []plan.SortKey, limit, offset int64, need plan.ColSet, est float64) (*pnode, error) {
	kneed := union(need, plan.ColSet{})
	exprs := make([]plan.Expr, len(keys))
	for i, k := range keys {
		kneed.AddAll(plan.ColsOf(k.Expr))
		exprs[i] = k.Expr
	}
	in, err := pl.plan(input, kneed)
	if err != nil {
		return nil, err
	}
	if in, err = pl.keepOnly(in, kneed); err != nil {
		return nil, err
	}
	in, pos, err := pl.ensure(in, exprs)
	if err != nil {
		return nil, err
	}
	sk := make([]exec.SortKey, len(keys))
	for i, k := range keys {
		sk[i] = exec.SortKey{Col: pos[i], Desc: k.Desc, Nulls: exec.NullsLast}
		if k.NullsFirst {
			sk[i].Nulls = exec.NullsFirst
		}
	}
	var out *pnode
	switch {
	case limit < 0:
		out, err = pl.node(&PhysNode{Kind: PhysSort, Streams: in.n.Streams, Sort: &exec.SortSpec{Keys: sk}}, in.layout, est, in)
		if err == nil && out.n.Streams > 1 {
			out, err = pl.merge(out, sk)
		}
	case in.n.Streams == 1:
		out, err = pl.node(&PhysNode{Kind: PhysTopN, Streams: 1, TopN: &exec.TopNSpec{Keys: sk, Limit: limit, Offset: offset}}, in.layout, est, in)
	default:
		local := &exec.TopNSpec{Keys: sk, Limit: limit + offset}
		out, err = pl.node(&PhysNode{Kind: PhysTopN, Streams: in.n.Streams, TopN: local}, in.layout, est*float64(in.n.Streams), in)
		if err == nil {
			out, err = pl.merge(out, sk)
		}
		if err == nil {
			out, err = pl.node(&PhysNode{Kind: PhysLimit, Streams: 1, Limit: &LimitOp{Limit: limit, Offset: offset}}, out.layout, est, out)
		}
	}
	if err != nil {
		return nil, err
	}
	return pl.dropSynth(out)
}

func (pl *physPlanner) limit(in *pnode, limit, offset int64, est float64) (*pnode, error) {
	if in.n.Streams > 1 {
		if limit >= 0 {
			local, err := pl.node(&PhysNode{Kind: PhysLimit, Streams: in.n.Streams, Limit: &LimitOp{Limit: limit + offset, Offset: 0}}, in.layout, est, in)
			if err != nil {
				return nil, err
			}
			in = local
		}
		in = pl.gather(in)
	}
	return pl.node(&PhysNode{Kind: PhysLimit, Streams: 1, Limit: &LimitOp{Limit: limit, Offset: offset}}, in.layout, est, in)
}

func (pl *physPlanner) distinct(in *pnode, est float64) (*pnode, error) {
	if in.n.Streams > 1 {
		keys := make([]int, len(in.layout))
		for i := range keys {
			keys[i] = i
		}
		var err error
		if in, err = pl.repartition(in, keys); err != nil {
			return nil, err
		}
	}
	return pl.node(&PhysNode{Kind: PhysDistinct, Streams: in.n.Streams, Distinct: &exec.DistinctSpec{}}, in.layout, est, in)
}

// ---------------------------------------------------------------- set operations

// planExact plans p with exactly its columns, in order.
func (pl *physPlanner) planExact(p plan.Plan) (*pnode, error) {
	in, err := pl.plan(p, plan.ColSetOf(p.Columns()))
	if err != nil {
		return nil, err
	}
	return pl.exact(in, p.Columns())
}

func (pl *physPlanner) setOp(n *plan.SetOpNode) (*pnode, error) {
	side := func(p plan.Plan) (*pnode, error) {
		in, err := pl.planExact(p)
		if err != nil {
			return nil, err
		}
		// Positional: both sides take the set operation's types.
		cols := make([]plan.Column, len(n.Cols))
		for i, c := range p.Columns() {
			cols[i] = c
			cols[i].Type = n.Cols[i].Type
			if plan.IsNullType(cols[i].Type) {
				cols[i].Type = plan.TypString
			}
		}
		return pl.castTo(in, cols)
	}
	left, err := side(n.Left)
	if err != nil {
		return nil, err
	}
	right, err := side(n.Right)
	if err != nil {
		return nil, err
	}
	est := pl.est.Rows(n)
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		layout[i] = c.ID
	}
	left.layout, right.layout = layout, layout
	if n.Kind == plan.SetUnion {
		u, err := pl.node(&PhysNode{Kind: PhysUnion, Streams: left.n.Streams + right.n.Streams}, layout, est, left, right)
		if err != nil {
			return nil, err
		}
		if n.All {
			return u, nil
		}
		return pl.distinct(u, est)
	}
	// INTERSECT and EXCEPT: a semi or anti join on every column, NULLs
	// equal; the ALL forms number the copies of each row first, so that
	// the n-th copy on the left matches the n-th on the right.
	if !n.All {
		if !rowsDistinct(n.Left) {
			if left, err = pl.distinct(left, est); err != nil {
				return nil, err
			}
		}
	} else {
		if left, err = pl.numberCopies(left); err != nil {
			return nil, err
		}
		if right, err = pl.numberCopies(right); err != nil {
			return nil, err
		}
	}
	left, lk, err := pl.nullSafeKeys(left)
	if err != nil {
		return nil, err
	}
	right, rk, err := pl.nullSafeKeys(right)
	if err != nil {
		return nil, err
	}
	jt := exec.JoinSemi
	if n.Kind == plan.SetExcept {
		jt = exec.JoinAnti
	}
	spec := &exec.HashJoinSpec{Type: jt, LeftKeys: lk, RightKeys: rk, Build: exec.SideRight}
	j, err := pl.node(&PhysNode{Kind: PhysHashJoin, Streams: left.n.Streams, Join: spec}, left.layout, est, left, right)
	if err != nil {
		return nil, err
	}
	return pl.dropSynth(j)
}

// rowsDistinct reports plans whose rows are distinct by construction:
// DISTINCT, a set operation without ALL (TPC-DS q38's INTERSECT of
// SELECT DISTINCTs made each left input distinct twice), an aggregate
// with only group keys, under projections that keep every column.
func rowsDistinct(p plan.Plan) bool {
	switch n := p.(type) {
	case *plan.DistinctNode:
		return true
	case *plan.SetOpNode:
		return !n.All
	case *plan.AggregateNode:
		return len(n.Aggs) == 0 && len(n.Groups) > 0
	case *plan.ProjectNode:
		in := n.Input.Columns()
		seen := plan.ColSet{}
		for _, e := range n.Exprs {
			if r, ok := e.(*plan.ColRef); ok {
				seen.Add(r.ID)
			}
		}
		for _, c := range in {
			if !seen.Has(c.ID) {
				return false
			}
		}
		return rowsDistinct(n.Input)
	}
	return false
}

// numberCopies appends row_number() over (partition by every column).
func (pl *physPlanner) numberCopies(in *pnode) (*pnode, error) {
	keys := make([]int, len(in.layout))
	for i := range keys {
		keys[i] = i
	}
	if in.n.Streams > 1 {
		var err error
		if in, err = pl.repartition(in, keys); err != nil {
			return nil, err
		}
	}
	spec := &exec.WindowSpec{PartitionBy: keys, Funcs: []exec.WindowFuncSpec{{Func: exec.WinRowNumber, Name: "copy"}}}
	layout := append(append([]plan.ColumnID(nil), in.layout...), pl.newSynth())
	return pl.node(&PhysNode{Kind: PhysWindow, Streams: in.n.Streams, Window: spec}, layout, in.n.EstRows, in)
}

// nullSafeKeys returns join keys over every column of in that treat NULLs
// as equal: a nullable column c becomes two keys, coalesce(c, zero) and
// c IS NULL.
func (pl *physPlanner) nullSafeKeys(in *pnode) (*pnode, []int, error) {
	var exprs []plan.Expr
	for i, id := range in.layout {
		f := in.schema.Field(i)
		c := &plan.ColRef{ID: id, Name: f.Name, Typ: f.Type}
		if id < 0 {
			// NB: a synthetic column here is a copy number (never NULL);
			// give it a positive stand-in ID for the translation.
			exprs = append(exprs, c)
			continue
		}
		if !f.Nullable {
			exprs = append(exprs, c)
			continue
		}
		zero, ok := zeroConst(f.Type)
		if !ok {
			return nil, nil, nferr.Queryf("set operation over a column of type %s is not supported", plan.TypeString(f.Type))
		}
		exprs = append(exprs, plan.NewCall(plan.FnCoalesce, f.Type, c, zero), plan.NewCall(plan.FnIsNull, plan.TypBool, c))
	}
	return pl.ensure(in, exprs)
}

func zeroConst(t arrow.DataType) (*plan.Const, bool) {
	switch t.ID() {
	case arrow.INT32:
		return &plan.Const{Typ: t, Val: int32(0)}, true
	case arrow.INT64, arrow.DECIMAL64:
		return &plan.Const{Typ: t, Val: int64(0)}, true
	case arrow.DECIMAL128:
		c, err := plan.CastConst(&plan.Const{Typ: plan.TypInt64, Val: int64(0)}, t)
		return c, err == nil
	case arrow.FLOAT64:
		return &plan.Const{Typ: t, Val: float64(0)}, true
	case arrow.STRING:
		return &plan.Const{Typ: t, Val: ""}, true
	case arrow.BINARY:
		return &plan.Const{Typ: t, Val: plan.Bytea("")}, true
	case arrow.DATE32:
		return &plan.Const{Typ: t, Val: arrow.Date32(0)}, true
	case arrow.TIMESTAMP:
		return &plan.Const{Typ: t, Val: arrow.Timestamp(0)}, true
	case arrow.TIME64:
		return &plan.Const{Typ: t, Val: arrow.Time64(0)}, true
	case arrow.BOOL:
		return &plan.Const{Typ: t, Val: false}, true
	case arrow.NULL:
		return &plan.Const{Typ: plan.TypString, Val: ""}, true
	}
	return nil, false
}

// ---------------------------------------------------------------- windows

var frameBounds = map[plan.FrameBoundKind]exec.BoundKind{
	plan.BoundUnboundedPreceding: exec.UnboundedPreceding, plan.BoundPreceding: exec.Preceding, plan.BoundCurrentRow: exec.CurrentRow,
	plan.BoundFollowing: exec.Following, plan.BoundUnboundedFollowing: exec.UnboundedFollowing,
}

func (pl *physPlanner) window(n *plan.WindowNode, need plan.ColSet) (*pnode, error) {
	inCols := plan.ColSetOf(n.Input.Columns())
	inNeed := plan.ColSet{}
	for id := range need {
		if inCols.Has(id) {
			inNeed.Add(id)
		}
	}
	for _, e := range plan.NodeExprs(n) {
		inNeed.AddAll(plan.ColsOf(e))
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	if in, err = pl.keepOnly(in, inNeed); err != nil {
		return nil, err
	}
	// Functions with the same PARTITION BY and ORDER BY share an operator.
	type group struct {
		key   string
		funcs []int
	}
	var groups []*group
	byKey := map[string]*group{}
	for i, f := range n.Funcs {
		var b strings.Builder
		for _, p := range f.PartitionBy {
			b.WriteString(plan.ExprKey(p) + ";")
		}
		b.WriteString("|")
		for _, k := range f.OrderBy {
			fmt.Fprintf(&b, "%s %v %v;", plan.ExprKey(k.Expr), k.Desc, k.NullsFirst)
		}
		g := byKey[b.String()]
		if g == nil {
			g = &group{key: b.String()}
			byKey[g.key] = g
			groups = append(groups, g)
		}
		g.funcs = append(g.funcs, i)
	}
	// Parallel when every function partitions by the same key.
	samePart := len(n.Funcs[0].PartitionBy) > 0
	for _, f := range n.Funcs[1:] {
		samePart = samePart && len(f.PartitionBy) == len(n.Funcs[0].PartitionBy)
		for j := 0; samePart && j < len(f.PartitionBy); j++ {
			samePart = plan.ExprEqual(f.PartitionBy[j], n.Funcs[0].PartitionBy[j])
		}
	}
	if in.n.Streams > 1 {
		if samePart {
			var pos []int
			if in, pos, err = pl.ensure(in, n.Funcs[0].PartitionBy); err != nil {
				return nil, err
			}
			if in, err = pl.repartition(in, pos); err != nil {
				return nil, err
			}
		} else {
			in = pl.gather(in)
		}
	}
	est := pl.est.Rows(n)
	for _, g := range groups {
		f0 := n.Funcs[g.funcs[0]]
		var exprs []plan.Expr
		exprs = append(exprs, f0.PartitionBy...)
		for _, k := range f0.OrderBy {
			exprs = append(exprs, k.Expr)
		}
		for _, fi := range g.funcs {
			exprs = append(exprs, n.Funcs[fi].Args...)
		}
		var pos []int
		if in, pos, err = pl.ensure(in, exprs); err != nil {
			return nil, err
		}
		spec := &exec.WindowSpec{PartitionBy: pos[:len(f0.PartitionBy)]}
		k := len(f0.PartitionBy)
		for _, sk := range f0.OrderBy {
			key := exec.SortKey{Col: pos[k], Desc: sk.Desc, Nulls: exec.NullsLast}
			if sk.NullsFirst {
				key.Nulls = exec.NullsFirst
			}
			spec.OrderBy = append(spec.OrderBy, key)
			k++
		}
		layout := append([]plan.ColumnID(nil), in.layout...)
		for _, fi := range g.funcs {
			f := n.Funcs[fi]
			ws := exec.WindowFuncSpec{Func: exec.WindowFunc(f.Fn), Name: n.FuncCols[fi].Name, N: f.N, IgnoreNulls: f.IgnoreNulls}
			if len(f.Args) > 0 {
				ws.Arg = pos[k]
				k += len(f.Args)
			}
			if f.Frame != nil {
				var key arrow.DataType
				if len(f.OrderBy) == 1 {
					key = f.OrderBy[0].Expr.Type()
				}
				fr, err := windowFrame(f.Frame, key)
				if err != nil {
					return nil, err
				}
				ws.Frame = fr
			}
			spec.Funcs = append(spec.Funcs, ws)
			layout = append(layout, n.FuncCols[fi].ID)
		}
		if in, err = pl.node(&PhysNode{Kind: PhysWindow, Streams: in.n.Streams, Window: spec}, layout, est, in); err != nil {
			return nil, err
		}
	}
	if in, err = pl.dropSynth(in); err != nil {
		return nil, err
	}
	// Window results take the binder's types.
	var cols []plan.Column
	for _, id := range in.layout {
		for i, c := range n.FuncCols {
			if c.ID == id {
				cols = append(cols, n.FuncCols[i])
			}
		}
		for _, c := range n.Input.Columns() {
			if c.ID == id {
				cols = append(cols, c)
			}
		}
	}
	if len(cols) == len(in.layout) {
		return pl.castTo(in, cols)
	}
	return in, nil
}

func windowFrame(f *plan.WindowFrame, key arrow.DataType) (*exec.WindowFrame, error) {
	var mode exec.FrameMode
	switch f.Mode {
	case "rows":
		mode = exec.FrameRows
	case "range":
		mode = exec.FrameRange
	case "groups":
		mode = exec.FrameGroups
	default:
		return nil, nferr.Queryf("%s window frames are not supported (use ROWS, RANGE or GROUPS)", strings.ToUpper(f.Mode))
	}
	bound := func(k plan.FrameBoundKind, off plan.Expr) (exec.FrameBound, error) {
		b := exec.FrameBound{Kind: frameBounds[k]}
		if off == nil {
			return b, nil
		}
		c, ok := off.(*plan.Const)
		if !ok || c.IsNull() {
			return b, nferr.Queryf("window frame offset %s must be a constant", off)
		}
		if mode == exec.FrameRows || mode == exec.FrameGroups {
			if !plan.IsInteger(c.Typ) {
				return b, nferr.Queryf("window frame offset %s must be an integer constant", off)
			}
			b.Offset = plan.ConstInt(c)
			return b, nil
		}
		return rangeOffset(b, c, key)
	}
	s, err := bound(f.Start, f.StartOffset)
	if err != nil {
		return nil, err
	}
	e, err := bound(f.End, f.EndOffset)
	if err != nil {
		return nil, err
	}
	return &exec.WindowFrame{Mode: mode, Start: s, End: e, Exclude: exec.FrameExclusion(f.Exclude)}, nil
}

// rangeOffset puts a RANGE offset c in the units of the ORDER BY key: the
// key's own for numbers (unscaled for decimals), days for dates,
// microseconds for timestamps.
func rangeOffset(b exec.FrameBound, c *plan.Const, key arrow.DataType) (exec.FrameBound, error) {
	if key == nil {
		return b, nferr.Queryf("RANGE with an offset needs one ORDER BY key")
	}
	if iv, ok := c.Val.(arrow.MonthDayNanoInterval); ok {
		if iv.Months != 0 && !plan.IsDate(key) && key.ID() != arrow.TIMESTAMP {
			return b, nferr.Queryf("RANGE offsets in months need a date or timestamp ORDER BY key")
		}
		b.Months = iv.Months
		us := int64(iv.Days)*expr.UsPerDay + iv.Nanoseconds/1000
		if plan.IsDate(key) {
			us /= expr.UsPerDay
		}
		b.Offset = us
		return b, nil
	}
	switch {
	case plan.IsFloat(key):
		b.OffsetF = plan.ConstFloat(c)
	case plan.IsDecimal(key):
		_, s, _ := plan.DecimalPS(key)
		v, err := plan.CastConst(c, plan.DecimalType(38, s))
		if err != nil {
			return b, err
		}
		u, ok := v.Val.(decimal128.Num)
		if !ok || !u.BigInt().IsInt64() {
			return b, nferr.Queryf("RANGE offset %s is too large", plan.FormatConst(c))
		}
		b.Offset = u.BigInt().Int64()
	default: // integers, and days of a date
		if !plan.IsInteger(c.Typ) {
			f := plan.ConstFloat(c)
			if f != math.Trunc(f) {
				return b, nferr.Queryf("RANGE offset %s of an integer key must be an integer", plan.FormatConst(c))
			}
			b.Offset = int64(f)
			break
		}
		b.Offset = plan.ConstInt(c)
		if plan.IsTimestamp(key) {
			return b, nferr.Queryf("RANGE offset of a timestamp key must be an interval")
		}
	}
	return b, nil
}

// ---------------------------------------------------------------- leaves

func (pl *physPlanner) values(n *plan.ValuesNode) (*pnode, error) {
	empty := &pnode{schema: arrow.NewSchema(nil, nil)}
	op := &ValuesOp{Names: make([]string, len(n.Cols))}
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		op.Names[i] = c.Name
		layout[i] = c.ID
	}
	for _, row := range n.Rows {
		cells := make([]expr.Expr, len(row))
		for i, e := range row {
			x, err := pl.physExpr(e, empty)
			if err != nil {
				return nil, err
			}
			t := n.Cols[i].Type
			if plan.IsNullType(t) {
				t = plan.TypString
			}
			et, err := expr.TypeOf(t)
			if err != nil {
				return nil, err
			}
			cells[i] = expr.Cast(x, et)
		}
		op.Rows = append(op.Rows, cells)
	}
	return pl.node(&PhysNode{Kind: PhysValues, Streams: 1, Values: op}, layout, float64(len(n.Rows)))
}

func (pl *physPlanner) sharedScan(n *plan.SharedScan) (*pnode, error) {
	id, ok := pl.shared[n.Def]
	if !ok {
		cols := n.Def.Plan.Columns()
		root, err := pl.plan(n.Def.Plan, plan.ColSetOf(cols))
		if err != nil {
			return nil, err
		}
		if root, err = pl.exact(root, cols); err != nil {
			return nil, err
		}
		id = len(pl.defs)
		pl.shared[n.Def] = id
		pl.defs = append(pl.defs, &PhysShared{ID: id, Name: n.Def.Name, Root: root.n})
	}
	def := pl.defs[id]
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		layout[i] = c.ID
	}
	cols := append([]PhysColumn(nil), def.Root.Columns...)
	for i := range cols {
		if i < len(n.Cols) {
			cols[i].Name = n.Cols[i].QualifiedName()
		}
	}
	return pl.node(&PhysNode{Kind: PhysSharedScan, Streams: 1, Columns: cols, Shared: &SharedOp{Def: id}}, layout, pl.est.Rows(n))
}

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

// clusteredCols finds the scan's integer output columns without NULLs
// whose row groups hold disjoint value ranges once sorted (a neighbour may
// share its edge value: dbgen's lineitem rows of one order can straddle two
// row groups). One row group per task, in st's file order.
func clusteredCols(st *storage.Table, names []string, cols []PhysColumn) []ClusterCol {
	var out []ClusterCol
	for i, name := range names {
		if k := cols[i].Type.ID; k != expr.TypeInt32 && k != expr.TypeInt64 {
			continue
		}
		tc := st.ColumnIndex(name)
		if tc < 0 {
			continue
		}
		cc := ClusterCol{Out: i, Name: name}
		ok := true
		for _, f := range st.Files {
			for g := 0; g < len(f.RowGroups) && ok; g++ {
				stats := f.RowGroups[g].Columns
				ok = tc < len(stats) && stats[tc].Nulls == 0 && stats[tc].Min != nil && stats[tc].Max != nil &&
					stats[tc].Min.Kind == storage.KindInt && stats[tc].Max.Kind == storage.KindInt
				if ok {
					cc.Min = append(cc.Min, stats[tc].Min.Int)
					cc.Max = append(cc.Max, stats[tc].Max.Int)
					cc.Rows = append(cc.Rows, f.RowGroups[g].Rows)
				}
			}
		}
		if !ok || len(cc.Min) < 2 {
			continue
		}
		order := cc.byMin()
		for j := 1; j < len(order) && ok; j++ {
			ok = cc.Max[order[j-1]] <= cc.Min[order[j]]
		}
		if !ok {
			continue
		}
		// NB: sorted and disjoint, the last range ends highest.
		cc.Lo, cc.Hi = cc.Min[order[0]], cc.Max[order[len(order)-1]]
		out = append(out, cc)
	}
	return out
}
