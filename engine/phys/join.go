package phys

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/opt"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

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
	equi = textOfArrayKeys(equi)
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
	probe, build := left, right
	if spec.Build == exec.SideLeft {
		probe, build = right, left
	}
	// The hash table is sized from the estimate when the first rows
	// arrive (bounded in exec: it may be far off, and a task of a
	// distributed plan may build a share of it).
	spec.BuildRows = int64(build.n.EstRows)
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
