package opt

import (
	"slices"

	"github.com/nicflow/nicflow/engine/plan"
)

var ruleEagerAgg = &Rule{
	Name:   RuleEagerAgg,
	Shapes: "an aggregate over an inner join whose aggregates read one side only (or over a left join whose aggregates read its right side and whose groups read its left) is computed partly on that side first, grouped by its join keys and group keys, when that cuts the side's rows",
	apply: func(o *optimizer, p plan.Plan) (plan.Plan, error) {
		o.ensureEstimator()
		return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
			if a, ok := n.(*plan.AggregateNode); ok {
				if out, ok := o.eagerAgg(a); ok {
					return out
				}
			}
			return n
		}), nil
	},
}

// eagerMaxShare is the largest estimated share of a side's rows the
// partial aggregate may keep for the rewrite to apply.
const eagerMaxShare = 0.5

// eagerAgg rewrites Aggregate(G; aggs) over an inner join of S and T,
// where every aggregate reads S's columns only (or none: count(*)), into
//
//	Aggregate(G; combine(partials)) over
//	  Join(Aggregate(S's join keys and the S columns G reads; aggs) over S, T)
//
// (eager aggregation, Yan and Larson). A group of S rows equal on the
// join keys and on what G reads of S joins the same T rows as each of its
// rows did, so summing per group first and then over the joined groups
// gives every final group the same rows' values: sum and count become
// sums of the partial sums and counts, min and max of the partials. (A T
// row matching twice adds the group twice, as it added each row twice.)
// TPC-DS q4, q11, q74 group sales joined to customer on seven customer
// columns: the sales are first summed per customer key and year. Only
// when the estimator expects the partial to keep at most eagerMaxShare
// of S's rows, with GROUP BY, and without DISTINCT aggregates.
//
// Over a left join S is the right side only (the preserved left side's
// rows are not all joined ones), the groups read no S column (an
// unmatched left row groups on NULLs no partial row has), and count(*)
// is not rewritten (it counts unmatched left rows). An unmatched left row
// joins no partial row, so its counts come out NULL from the final sums:
// a projection above makes them 0 (D76).
func (o *optimizer) eagerAgg(a *plan.AggregateNode) (plan.Plan, bool) {
	if len(a.Groups) == 0 || len(a.Aggs) == 0 {
		return nil, false
	}
	in := a.Input
	sub := map[plan.ColumnID]plan.Expr{}
	if pr, ok := in.(*plan.ProjectNode); ok {
		for i, e := range pr.Exprs {
			sub[pr.Cols[i].ID] = e
		}
		in = pr.Input
	}
	j, ok := in.(*plan.JoinNode)
	if !ok || (j.Kind != plan.JoinInner && j.Kind != plan.JoinLeft) || len(j.Equi) == 0 {
		return nil, false
	}
	groups := make([]plan.Expr, len(a.Groups))
	for i, g := range a.Groups {
		groups[i] = plan.Substitute(g, sub)
	}
	args := make([]plan.Expr, len(a.Aggs))
	for i, c := range a.Aggs {
		switch c.Fn {
		case plan.AggSum, plan.AggCount, plan.AggCountStar, plan.AggMin, plan.AggMax:
		default:
			return nil, false
		}
		if c.Distinct || c.Filter != nil {
			return nil, false
		}
		if j.Kind == plan.JoinLeft && c.Fn == plan.AggCountStar {
			return nil, false // it counts the unmatched left rows too
		}
		if c.Arg != nil {
			args[i] = plan.Substitute(c.Arg, sub)
			if plan.HasSubquery(args[i]) || hasRandom(args[i]) {
				return nil, false
			}
		}
	}
	lc, rc := plan.ColSetOf(j.Left.Columns()), plan.ColSetOf(j.Right.Columns())
	for side := 0; side < 2; side++ {
		if j.Kind == plan.JoinLeft && side == 0 {
			continue // the preserved side: its rows are not only the joined ones
		}
		sCols, s := lc, j.Left
		if side == 1 {
			sCols, s = rc, j.Right
		}
		if out, ok := o.eagerSide(a, j, groups, args, s, sCols, side); ok {
			return out, true
		}
	}
	return nil, false
}

func (o *optimizer) eagerSide(a *plan.AggregateNode, j *plan.JoinNode, groups, args []plan.Expr, s plan.Plan, sCols plan.ColSet, side int) (plan.Plan, bool) {
	for _, e := range args {
		if e != nil && !plan.ColsOf(e).SubsetOf(sCols) {
			return nil, false
		}
	}
	// The partial's group keys: every S column the join or the groups
	// read (a group mixing both sides is left alone).
	keys := plan.ColSet{}
	for _, g := range groups {
		cs := plan.ColsOf(g)
		if cs.Intersects(sCols) && (!cs.SubsetOf(sCols) || j.Kind == plan.JoinLeft) {
			// NB: a left join's unmatched rows group on NULL right
			// columns, which no partial row carries.
			return nil, false
		}
		if cs.SubsetOf(sCols) {
			keys.AddAll(cs)
		}
	}
	for _, q := range j.Equi {
		e := q.Left
		if side == 1 {
			e = q.Right
		}
		keys.AddAll(plan.ColsOf(e))
	}
	if j.Cond != nil {
		for id := range plan.ColsOf(j.Cond) {
			if sCols.Has(id) {
				keys.Add(id)
			}
		}
	}
	var keyCols []plan.Column
	for _, c := range s.Columns() {
		if keys.Has(c.ID) {
			keyCols = append(keyCols, c)
		}
	}
	if len(keyCols) == 0 {
		return nil, false
	}
	// Worth it only when the partial groups are much fewer than S's rows.
	sStats := o.est.stats(s)
	groupsEst := 1.0
	for _, c := range keyCols {
		groupsEst *= sStats.ndv(c.ID)
	}
	if sStats.Rows < 1 || groupsEst > eagerMaxShare*sStats.Rows {
		return nil, false
	}
	partial := &plan.AggregateNode{Input: s}
	rename := map[plan.ColumnID]plan.Expr{}
	for _, c := range keyCols {
		nc := o.newCol(c.Name, c.Type, c.Nullable)
		partial.Groups = append(partial.Groups, plan.NewColRef(c))
		partial.GroupCols = append(partial.GroupCols, nc)
		rename[c.ID] = plan.NewColRef(nc)
	}
	final := &plan.AggregateNode{GroupCols: a.GroupCols, AggCols: slices.Clone(a.AggCols)}
	// A left join's unmatched left rows meet no partial row: a count
	// summed over only those is NULL, and a projection makes it 0.
	var zeroed []int
	for i, c := range a.Aggs {
		pc := *c
		pt := c.Typ
		if c.Fn == plan.AggCount || c.Fn == plan.AggCountStar {
			pt = plan.TypInt64
		}
		pc.Arg = args[i]
		pc.Typ = pt
		col := o.newCol(a.AggCols[i].Name, pt, true)
		partial.Aggs = append(partial.Aggs, &pc)
		partial.AggCols = append(partial.AggCols, col)
		fn := c.Fn
		if fn == plan.AggCount || fn == plan.AggCountStar {
			// NB: under an inner join every final group has a partial
			// row: never NULL.
			fn = plan.AggSum
			if j.Kind == plan.JoinLeft {
				final.AggCols[i] = o.newCol(a.AggCols[i].Name, c.Typ, true)
				zeroed = append(zeroed, i)
			}
		}
		final.Aggs = append(final.Aggs, &plan.AggCall{Fn: fn, Arg: plan.NewColRef(col), Typ: c.Typ})
	}
	nj := *j
	nj.Equi = make([]plan.EquiCond, len(j.Equi))
	for i, q := range j.Equi {
		nj.Equi[i] = plan.EquiCond{Left: plan.Substitute(q.Left, rename), Right: plan.Substitute(q.Right, rename)}
	}
	if j.Cond != nil {
		nj.Cond = plan.Substitute(j.Cond, rename)
	}
	other := j.Right
	if side == 1 {
		nj.Right = partial
		other = j.Left
	} else {
		nj.Left = partial
	}
	// The partial side is now the smaller one more often: build on it
	// when it is expected to be.
	if groupsEst < o.est.stats(other).Rows {
		nj.Build = plan.BuildRight
		if side == 0 {
			nj.Build = plan.BuildLeft
		}
	}
	final.Input = &nj
	for _, g := range groups {
		final.Groups = append(final.Groups, plan.Substitute(g, rename))
	}
	if len(zeroed) == 0 {
		return final, true
	}
	pr := &plan.ProjectNode{Input: final, Cols: slices.Concat(a.GroupCols, a.AggCols)}
	for _, c := range a.GroupCols {
		pr.Exprs = append(pr.Exprs, plan.NewColRef(c))
	}
	for i, c := range final.AggCols {
		var e plan.Expr = plan.NewColRef(c)
		if slices.Contains(zeroed, i) {
			e = plan.NewCall(plan.FnCoalesce, c.Type, e, &plan.Const{Typ: plan.TypInt64, Val: int64(0)})
		}
		pr.Exprs = append(pr.Exprs, e)
	}
	return pr, true
}
