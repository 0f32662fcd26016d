package opt

import (
	"github.com/nicflow/nicflow/engine/plan"
)

// Domain decorrelation of a scalar subquery whose correlated predicates
// sit below an aggregate and are not all equalities (the "unnesting
// arbitrary queries" approach of Neumann and Kemper, as DuckDB does it):
//
//	SELECT a, (SELECT count(*) FROM t AS x WHERE x.b < o.b) FROM o
//
// The outer columns the subquery uses form a domain D = DISTINCT o.b (under
// fresh column IDs d). The subquery is evaluated once per domain value:
// the dependent join D ⋈ x is an inner join whose condition is the
// correlated predicates with o.b replaced by d, and the aggregate also
// groups by d. The outer rows then take their value by a left join on
// o.b = d (IS NOT DISTINCT FROM when o.b may be NULL: a NULL outer value
// has its own domain row); a missing group is an empty one, so count
// becomes COALESCE(count, 0).
//
// Filters and projections above a grouped aggregate (HAVING, a select
// list) stay above it, passing the domain columns through.
//
// domainScalar returns ok = false when below is not such an aggregate
// whose correlation the pull-up can move into the dependent join; the
// caller then reports the original error.
func (o *optimizer) domainScalar(input plan.Plan, below plan.Plan, top plan.Expr, inputCols plan.ColSet) (plan.Plan, plan.Expr, bool) {
	// NB: the domain is the DISTINCT outer values, and arrays are not
	// hashed: a subquery correlated on one runs per row.
	belowFree := plan.FreeCols(below)
	for _, c := range input.Columns() {
		if belowFree.Has(c.ID) && plan.IsArray(c.Type) {
			return nil, nil, false
		}
	}
	var chain []plan.Plan // filters and projections above the aggregate, top first
	var agg *plan.AggregateNode
	for n := below; agg == nil; {
		switch x := n.(type) {
		case *plan.FilterNode:
			chain, n = append(chain, x), x.Input
		case *plan.ProjectNode:
			chain, n = append(chain, x), x.Input
		case *plan.AggregateNode:
			agg = x
		default:
			return nil, nil, false
		}
	}
	for _, c := range chain {
		for _, e := range plan.NodeExprs(c) {
			if refsOuter(e, inputCols) {
				return nil, nil, false
			}
		}
	}
	if len(agg.Groups) == 0 && len(chain) > 0 {
		// Projections over the one group fold into top, evaluated above the
		// join (where count's COALESCE goes). A HAVING over one group of
		// an empty input would need the aggregate of nothing: not
		// rewritten.
		for _, c := range chain {
			pr, ok := c.(*plan.ProjectNode)
			if !ok {
				return nil, nil, false
			}
			top = plan.Substitute(top, projectionDefs(pr))
		}
		chain = nil
	}
	for _, e := range plan.NodeExprs(agg) {
		if refsOuter(e, inputCols) {
			return nil, nil, false
		}
	}
	// The domain: the outer columns the subquery refers to, deduplicated.
	var outerCols []plan.Column
	free := plan.FreeCols(agg.Input)
	for _, c := range input.Columns() {
		if free.Has(c.ID) {
			outerCols = append(outerCols, c)
		}
	}
	if len(outerCols) == 0 {
		return nil, nil, false
	}
	dcols := make([]plan.Column, len(outerCols))
	dexprs := make([]plan.Expr, len(outerCols))
	subst := map[plan.ColumnID]plan.Expr{}
	dset := plan.ColSet{}
	for i, c := range outerCols {
		dcols[i] = o.newCol("domain_"+c.Name, c.Type, c.Nullable)
		dexprs[i] = plan.NewColRef(c)
		subst[c.ID] = plan.NewColRef(dcols[i])
		dset.Add(dcols[i].ID)
	}
	domain := &plan.DistinctNode{Input: &plan.ProjectNode{Input: input, Exprs: dexprs, Cols: dcols}}
	// The subquery over the domain's columns instead of the outer ones.
	sub := substitutePlan(agg.Input, subst)
	inner, preds, err := o.pull(sub, dset)
	if err != nil || plan.FreeCols(inner).Intersects(dset) || plan.FreeCols(inner).Intersects(inputCols) {
		return nil, nil, false
	}
	dep := &plan.JoinNode{Kind: plan.JoinInner, Left: domain, Right: inner, Cond: plan.AndOf(preds)}
	nagg := *agg
	nagg.Input = dep
	nagg.Groups = append(append([]plan.Expr(nil), agg.Groups...), plan.ColRefs(dcols)...)
	nagg.GroupCols = append(append([]plan.Column(nil), agg.GroupCols...), dcols...)
	// Each outer row meets at most one group when the subquery had no
	// GROUP BY of its own; otherwise a single join checks at run time.
	kind := plan.JoinSingle
	if len(agg.Groups) == 0 {
		kind = plan.JoinLeft
		top = countOfNothing(agg, top)
	}
	var right plan.Plan = &nagg
	for i := len(chain) - 1; i >= 0; i-- {
		switch x := chain[i].(type) {
		case *plan.FilterNode:
			right = &plan.FilterNode{Input: right, Cond: x.Cond}
		case *plan.ProjectNode:
			right = &plan.ProjectNode{Input: right, Exprs: append(append([]plan.Expr(nil), x.Exprs...), plan.ColRefs(dcols)...), Cols: append(append([]plan.Column(nil), x.Cols...), dcols...)}
		}
	}
	if kind == plan.JoinSingle {
		right, top = o.presentMarker(right, top)
	}
	conds := make([]plan.Expr, len(outerCols))
	for i, c := range outerCols {
		fn := plan.FnEq
		if c.Nullable {
			fn = plan.FnNotDist
		}
		conds[i] = plan.NewCall(fn, plan.TypBool, plan.NewColRef(c), plan.NewColRef(dcols[i]))
	}
	return &plan.JoinNode{Kind: kind, Left: input, Right: right, Cond: plan.AndOf(conds)}, top, true
}

// projectionDefs maps each column of projection pr to its expression.
func projectionDefs(pr *plan.ProjectNode) map[plan.ColumnID]plan.Expr {
	m := make(map[plan.ColumnID]plan.Expr, len(pr.Cols))
	for i, c := range pr.Cols {
		m[c.ID] = pr.Exprs[i]
	}
	return m
}

// substitutePlan replaces column references by m in every expression of
// every node of p.
func substitutePlan(p plan.Plan, m map[plan.ColumnID]plan.Expr) plan.Plan {
	return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
		return mapNodeExprs(n, func(e plan.Expr) plan.Expr { return plan.Substitute(e, m) })
	})
}
