package opt

import (
	"slices"

	"github.com/nicflow/nicflow/engine/plan"
)

var ruleDistinctAgg = &Rule{
	Name:   RuleDistinctAgg,
	Shapes: "an aggregate whose functions all take DISTINCT of one argument becomes two grouping aggregates",
	apply:  func(o *optimizer, p plan.Plan) (plan.Plan, error) { return o.distinctAggs(p), nil },
}

// ---------------------------------------------------------------- distinct_agg

// distinctAggs rewrites an aggregate whose aggregates all take DISTINCT
// of one argument x (min and max of x may come without DISTINCT: they are
// the same) into two aggregates: the inner groups by the groups and x
// (making x distinct within each group), the outer groups by the groups
// and applies the functions without DISTINCT:
//
//	Aggregate group=[g] aggs=[count(DISTINCT x), sum(DISTINCT x)]
//	=> Aggregate group=[g] aggs=[count(x'), sum(x')]
//	     Aggregate group=[g', x']
//
// Both are plain grouping aggregates: they split into partial and final
// phases that run in parallel and across a cluster, and they spill, where
// the per-group DISTINCT sets of one aggregate do neither. NULL x forms an
// inner group that the outer functions skip, as DISTINCT does; an empty
// input gives the same empty groups (or the one global row). The outer
// aggregate keeps the original columns, so its parents are unchanged.
//
// An ordered aggregate (string_agg or array_agg with DISTINCT x ORDER BY
// x) reads a Sort on x: the sort moves between the two, over the distinct
// x', so the outer functions see x' in the order (not in the inner
// aggregate's output order, which a spill changes):
//
//	=> Aggregate group=[g] aggs=[array_agg(x')]
//	     Sort [x']
//	       Aggregate group=[g', x']
//
// A Sort on anything else is left as it is (the single-phase aggregate
// then makes x distinct in the order the rows arrive).
//
// An aggregate's FILTER (WHERE c) (array_agg's; the others' filters are
// CASE arguments) becomes an inner group key f = coalesce(c, false), and
// the outer function's FILTER (WHERE f): the rows c drops still form
// their groups (which then give NULL), and the distinct x of the rows c
// keeps are those with f true.
func (o *optimizer) distinctAggs(p plan.Plan) plan.Plan {
	return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
		a, ok := n.(*plan.AggregateNode)
		if !ok {
			return n
		}
		x := singleDistinctArg(a.Aggs)
		if x == nil {
			return n
		}
		in := a.Input
		sort, sorted := in.(*plan.SortNode)
		if sorted {
			for _, k := range sort.Keys {
				if !plan.ExprEqual(k.Expr, x) {
					return n
				}
			}
			in = sort.Input
		}
		inner := &plan.AggregateNode{Input: in, Dedup: true}
		outer := &plan.AggregateNode{GroupCols: a.GroupCols, AggCols: a.AggCols}
		for i, g := range a.Groups {
			c := o.newCol(a.GroupCols[i].Name, g.Type(), a.GroupCols[i].Nullable)
			c.Table = a.GroupCols[i].Table
			inner.Groups = append(inner.Groups, g)
			inner.GroupCols = append(inner.GroupCols, c)
			outer.Groups = append(outer.Groups, plan.NewColRef(c))
		}
		xc := o.newCol(x.String(), x.Type(), true)
		inner.Groups = append(inner.Groups, x)
		inner.GroupCols = append(inner.GroupCols, xc)
		var filters []plan.Expr
		var filterCols []plan.Column
		for _, ag := range a.Aggs {
			oa := &plan.AggCall{Fn: ag.Fn, Arg: plan.NewColRef(xc), Typ: ag.Typ, Sep: ag.Sep, Quantile: ag.Quantile, Desc: ag.Desc}
			if ag.Filter != nil {
				k := slices.IndexFunc(filters, func(f plan.Expr) bool { return plan.ExprEqual(f, ag.Filter) })
				if k < 0 {
					k = len(filters)
					filters = append(filters, ag.Filter)
					f := plan.NewCall(plan.FnCoalesce, plan.TypBool, ag.Filter, &plan.Const{Typ: plan.TypBool, Val: false})
					fc := o.newCol(f.String(), plan.TypBool, false)
					filterCols = append(filterCols, fc)
					inner.Groups = append(inner.Groups, f)
					inner.GroupCols = append(inner.GroupCols, fc)
				}
				oa.Filter = plan.NewColRef(filterCols[k])
			}
			outer.Aggs = append(outer.Aggs, oa)
		}
		outer.Input = inner
		if sorted {
			keys := make([]plan.SortKey, len(sort.Keys))
			for i, k := range sort.Keys {
				keys[i] = plan.SortKey{Expr: plan.NewColRef(xc), Desc: k.Desc, NullsFirst: k.NullsFirst}
			}
			outer.Input = &plan.SortNode{Input: inner, Keys: keys}
		}
		return outer
	})
}

// singleDistinctArg returns x when every aggregate is fn(DISTINCT x), or
// min(x) or max(x), with at least one DISTINCT; nil otherwise.
func singleDistinctArg(aggs []*plan.AggCall) plan.Expr {
	var x plan.Expr
	distinct := false
	for _, ag := range aggs {
		if ag.Arg == nil || (!ag.Distinct && ag.Fn != plan.AggMin && ag.Fn != plan.AggMax) {
			return nil
		}
		if x != nil && !plan.ExprEqual(x, ag.Arg) {
			return nil
		}
		x, distinct = ag.Arg, distinct || ag.Distinct
	}
	if !distinct {
		return nil
	}
	return x
}
