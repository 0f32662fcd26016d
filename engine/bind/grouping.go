package bind

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
)

// GROUP BY ROLLUP, CUBE and GROUPING SETS, and grouping().
//
// The GROUP BY elements expand into a list of grouping sets (the cross
// product of each element's sets: a plain key is one set of itself,
// ROLLUP (a, b) is (a, b), (a), (), CUBE every subset). The aggregate's
// input is bound once as a shared subplan (computed once), and each set is
// an aggregate over a scan of it, projected to one layout: the keys of the
// set, NULL for the others, the aggregates, and each grouping() call's
// value for the set; the branches are a UNION ALL whose columns are the
// aggCtx's group and aggregate columns, so HAVING, the select list, windows
// and ORDER BY bind above it as above one aggregate.

// groupingFn is one grouping(args) call: the group keys it names and the
// column that holds its value.
type groupingFn struct {
	keys []int
	col  plan.Column
}

// groupBy binds the GROUP BY elements into ac (keys and their columns)
// and returns the grouping sets (indexes into ac.groups), or nil for a
// plain GROUP BY.
func (b *binder) groupBy(sel *sql.Select, s *scope, ac *aggCtx, in []plan.Column) ([][]int, error) {
	hasSets := false
	for _, g := range sel.GroupBy {
		if _, ok := g.(*sql.GroupingSets); ok {
			hasSets = true
		}
	}
	add := func(g sql.Expr) (int, error) {
		e, err := b.groupKey(g, sel, s)
		if err != nil {
			return 0, err
		}
		k := plan.ExprKey(e)
		if i, dup := ac.groupKeys[k]; dup {
			return i, nil
		}
		ac.groupKeys[k] = len(ac.groups)
		ac.groups = append(ac.groups, e)
		var col plan.Column
		if c, ok := e.(*plan.ColRef); ok && ac.input.Has(c.ID) && !hasSets {
			col = plan.FindCol(in, c.ID) // a plain group key keeps its ID
		} else {
			col = b.newCol(e.String(), "", e.Type(), true)
			if c, ok := e.(*plan.ColRef); ok {
				col.Name = plan.FindCol(in, c.ID).Name
			}
		}
		ac.groupCols = append(ac.groupCols, col)
		return len(ac.groups) - 1, nil
	}
	sets := [][]int{{}}
	for _, g := range sel.GroupBy {
		var elem [][]int
		gs, ok := g.(*sql.GroupingSets)
		if !ok {
			i, err := add(g)
			if err != nil {
				return nil, err
			}
			elem = [][]int{{i}}
		} else {
			var lists [][]int
			for _, set := range gs.Sets {
				var ids []int
				for _, x := range set {
					i, err := add(x)
					if err != nil {
						return nil, err
					}
					ids = append(ids, i)
				}
				lists = append(lists, ids)
			}
			switch gs.Kind {
			case sql.GroupRollup:
				for n := len(lists); n >= 0; n-- {
					var set []int
					for _, l := range lists[:n] {
						set = append(set, l...)
					}
					elem = append(elem, set)
				}
			case sql.GroupCube:
				if len(lists) > 12 {
					return nil, b.errorf(g, "CUBE of %d expressions makes too many grouping sets (at most 12)", len(lists))
				}
				for mask := (1 << len(lists)) - 1; mask >= 0; mask-- {
					var set []int
					for i, l := range lists {
						if mask&(1<<(len(lists)-1-i)) != 0 {
							set = append(set, l...)
						}
					}
					elem = append(elem, set)
				}
			default:
				elem = lists
			}
		}
		var next [][]int
		for _, a := range sets {
			for _, e := range elem {
				next = append(next, append(append([]int(nil), a...), e...))
			}
		}
		sets = next
		if len(sets) > 4096 {
			return nil, b.errorf(g, "GROUP BY makes more than 4096 grouping sets")
		}
	}
	if !hasSets {
		return nil, nil
	}
	return sets, nil
}

// groupingCall binds grouping(e, ...): a bitmask with bit 1 (the first
// argument's highest) for each argument not grouped in the row's set.
func (b *binder) groupingCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (plan.Expr, error) {
	if ctx == nil || ctx.agg == nil || ctx.inAgg {
		return nil, b.errorf(x, "grouping() is only allowed in the select list, HAVING and ORDER BY of a grouped query")
	}
	if len(x.Args) == 0 || len(x.Args) > 31 {
		return nil, b.errorf(x, "grouping() takes 1 to 31 arguments")
	}
	ac := ctx.agg
	fn := groupingFn{}
	for _, a := range x.Args {
		e, err := b.expr(a, s, &exprCtx{clause: "grouping()"})
		if err != nil {
			return nil, err
		}
		i, ok := ac.groupKeys[plan.ExprKey(e)]
		if !ok {
			return nil, b.errorf(a, "arguments to GROUPING must be grouping expressions of the associated query level")
		}
		fn.keys = append(fn.keys, i)
	}
	fn.col = b.newCol("grouping", "", plan.TypInt32, false)
	ac.groupingFns = append(ac.groupingFns, fn)
	return plan.NewColRef(fn.col), nil
}

// groupingValue is grouping()'s value for a row of set.
func groupingValue(fn groupingFn, set []int) int32 {
	in := map[int]bool{}
	for _, k := range set {
		in[k] = true
	}
	var v int32
	for _, k := range fn.keys {
		v <<= 1
		if !in[k] {
			v |= 1
		}
	}
	return v
}

// aggregatePlan is the plan of a grouped query's aggregation over in: one
// aggregate, or with grouping sets the UNION ALL of one per set.
func (b *binder) aggregatePlan(in plan.Plan, ac *aggCtx, sets [][]int) plan.Plan {
	if len(ac.orderBy) > 0 {
		// NB: a sort in one stream below a one-stream aggregate: each
		// group's values arrive in the order.
		in = &plan.SortNode{Input: in, Keys: ac.orderBy}
	}
	if sets == nil {
		var p plan.Plan = &plan.AggregateNode{Input: in, Groups: ac.groups, GroupCols: ac.groupCols, Aggs: ac.aggs, AggCols: ac.aggCols}
		if len(ac.groupingFns) == 0 {
			return p
		}
		// Without grouping sets every key is grouped: grouping() is 0.
		return b.withGroupingZeros(p, ac)
	}
	if p, ok := b.setsFromFinest(in, ac, sets); ok {
		return p
	}
	b.nextDef++
	inCols := in.Columns()
	names := make([]string, len(inCols))
	for i, c := range inCols {
		names[i] = c.Name
	}
	def := &plan.SharedDef{ID: b.nextDef, Name: "grouping sets", Plan: in}
	return b.setsUnion(ac, sets, func(set []int) (*plan.AggregateNode, []plan.Expr) {
		scan := b.sharedScan(def, names, "")
		m := map[plan.ColumnID]plan.Expr{}
		for i, c := range inCols {
			m[c.ID] = plan.NewColRef(scan.Cols[i])
		}
		agg := b.setAggregate(scan, ac, set, func(k int) plan.Expr { return plan.Substitute(ac.groups[k], m) })
		for i, a := range ac.aggs {
			ca := *a
			if a.Arg != nil {
				ca.Arg = plan.Substitute(a.Arg, m)
			}
			if a.Filter != nil {
				ca.Filter = plan.Substitute(a.Filter, m)
			}
			agg.Aggs = append(agg.Aggs, &ca)
			agg.AggCols = append(agg.AggCols, b.newCol(ac.aggCols[i].Name, "", ac.aggCols[i].Type, ac.aggCols[i].Nullable))
		}
		return agg, plan.ColRefs(agg.AggCols)
	})
}

// setAggregate is the aggregate of one grouping set over in, grouped by
// the set's keys (key(k) is key k over in), its aggregates still to add.
func (b *binder) setAggregate(in plan.Plan, ac *aggCtx, set []int, key func(k int) plan.Expr) *plan.AggregateNode {
	agg := &plan.AggregateNode{Input: in}
	seen := map[int]bool{}
	for _, k := range set {
		if seen[k] {
			continue
		}
		seen[k] = true
		agg.Groups = append(agg.Groups, key(k))
		agg.GroupCols = append(agg.GroupCols, b.newCol(ac.groupCols[k].Name, "", ac.groupCols[k].Type, true))
	}
	return agg
}

// setsUnion is the UNION ALL of one branch per grouping set, in the
// aggCtx's layout: the set's keys (NULL for the others), the aggregates'
// values, each grouping() call's value for the set. branch returns the
// set's aggregate (made by setAggregate) and its aggregates' values over
// it. The last node's columns are the aggCtx's (renamed by a projection).
func (b *binder) setsUnion(ac *aggCtx, sets [][]int, branch func(set []int) (*plan.AggregateNode, []plan.Expr)) plan.Plan {
	out := append(append([]plan.Column(nil), ac.groupCols...), ac.aggCols...)
	for _, fn := range ac.groupingFns {
		out = append(out, fn.col)
	}
	var union plan.Plan
	for _, set := range sets {
		agg, vals := branch(set)
		pos := map[int]int{}
		for _, k := range set {
			if _, dup := pos[k]; !dup {
				pos[k] = len(pos)
			}
		}
		exprs := make([]plan.Expr, 0, len(out))
		for k, gc := range ac.groupCols {
			if p, ok := pos[k]; ok {
				exprs = append(exprs, plan.NewColRef(agg.GroupCols[p]))
			} else {
				exprs = append(exprs, plan.NullConst(gc.Type))
			}
		}
		exprs = append(exprs, vals...)
		for _, fn := range ac.groupingFns {
			exprs = append(exprs, &plan.Const{Typ: plan.TypInt32, Val: groupingValue(fn, set)})
		}
		var br plan.Plan = &plan.ProjectNode{Input: agg, Exprs: exprs, Cols: b.nullableCopies(out)}
		if union == nil {
			union = br
			continue
		}
		union = &plan.SetOpNode{Kind: plan.SetUnion, All: true, Left: union, Right: br, Cols: b.nullableCopies(out)}
	}
	for i := range out {
		out[i].Nullable = true
	}
	return &plan.ProjectNode{Input: union, Exprs: plan.ColRefs(union.Columns()), Cols: out}
}

// nullableCopies are fresh nullable columns named and typed as cols.
func (b *binder) nullableCopies(cols []plan.Column) []plan.Column {
	out := make([]plan.Column, len(cols))
	for i, c := range cols {
		out[i] = b.newCol(c.Name, "", c.Type, true)
	}
	return out
}

// withGroupingZeros adds the grouping() columns of a plain aggregate,
// where every key is grouped: 0.
func (b *binder) withGroupingZeros(p plan.Plan, ac *aggCtx) plan.Plan {
	cols := p.Columns()
	exprs := plan.ColRefs(cols)
	out := append([]plan.Column(nil), cols...)
	for _, fn := range ac.groupingFns {
		exprs = append(exprs, &plan.Const{Typ: plan.TypInt32, Val: int32(0)})
		out = append(out, fn.col)
	}
	return &plan.ProjectNode{Input: p, Exprs: exprs, Cols: out}
}

// setsFromFinest plans grouping sets whose aggregates combine (sum,
// count, min, max, avg, none DISTINCT or ordered) as one aggregate over
// every key, shared, and each set an aggregate of that one's rows: sums
// and counts summed, min of mins, max of maxes, avg as the sum of sums
// over the sum of counts (the division avg itself does: same type, one
// rounding). The input's rows are hashed once, not once per set, and only
// the finest groups are kept (TPC-DS q22: 2.3M inventory rows to 9k
// groups, then four coarser sets over those). ok is false when an
// aggregate does not combine so; then each set reads the input.
func (b *binder) setsFromFinest(in plan.Plan, ac *aggCtx, sets [][]int) (plan.Plan, bool) {
	if len(ac.orderBy) > 0 {
		return nil, false
	}
	// Each aggregate's parts in the finest aggregate: one, or avg's sum
	// and count.
	type parts struct {
		first, n int
		sumTyp   arrow.DataType
	}
	var partial []*plan.AggCall
	ps := make([]parts, len(ac.aggs))
	for i, a := range ac.aggs {
		if a.Distinct || a.Filter != nil {
			return nil, false
		}
		switch a.Fn {
		case plan.AggSum, plan.AggCount, plan.AggCountStar, plan.AggMin, plan.AggMax:
			c := *a
			ps[i] = parts{first: len(partial), n: 1}
			partial = append(partial, &c)
		case plan.AggAvg:
			at := a.Arg.Type()
			if !plan.IsNumeric(at) {
				return nil, false
			}
			st := plan.AggResultType(plan.AggSum, at)
			if avgOf(plan.NewColRef(plan.Column{Type: st}), plan.NewColRef(plan.Column{Type: plan.TypInt64}), a.Typ) == nil {
				return nil, false
			}
			ps[i] = parts{first: len(partial), n: 2, sumTyp: st}
			partial = append(partial, &plan.AggCall{Fn: plan.AggSum, Arg: a.Arg, Typ: st}, &plan.AggCall{Fn: plan.AggCount, Arg: a.Arg, Typ: plan.TypInt64})
		default:
			return nil, false
		}
	}
	fin := &plan.AggregateNode{Input: in, Groups: ac.groups}
	var names []string
	for _, gc := range ac.groupCols {
		fin.GroupCols = append(fin.GroupCols, b.newCol(gc.Name, "", gc.Type, true))
		names = append(names, gc.Name)
	}
	for k, pa := range partial {
		fin.Aggs = append(fin.Aggs, pa)
		fin.AggCols = append(fin.AggCols, b.newCol(pa.String(), "", pa.Typ, true))
		names = append(names, fin.AggCols[k].Name)
	}
	b.nextDef++
	def := &plan.SharedDef{ID: b.nextDef, Name: "grouping sets", Plan: fin}
	ng := len(ac.groups)
	return b.setsUnion(ac, sets, func(set []int) (*plan.AggregateNode, []plan.Expr) {
		scan := b.sharedScan(def, names, "")
		agg := b.setAggregate(scan, ac, set, func(k int) plan.Expr { return plan.NewColRef(scan.Cols[k]) })
		for k, pa := range partial {
			fn := pa.Fn
			switch fn {
			case plan.AggCount, plan.AggCountStar:
				fn = plan.AggSum
			}
			agg.Aggs = append(agg.Aggs, &plan.AggCall{Fn: fn, Arg: plan.NewColRef(scan.Cols[ng+k]), Typ: pa.Typ})
			agg.AggCols = append(agg.AggCols, b.newCol(pa.String(), "", pa.Typ, true))
		}
		vals := make([]plan.Expr, len(ac.aggs))
		for i, a := range ac.aggs {
			p := ps[i]
			v := plan.Expr(plan.NewColRef(agg.AggCols[p.first]))
			switch a.Fn {
			case plan.AggCount, plan.AggCountStar:
				// NB: a set without keys over no rows sums no counts.
				v = plan.NewCall(plan.FnCoalesce, plan.TypInt64, v, &plan.Const{Typ: plan.TypInt64, Val: int64(0)})
			case plan.AggAvg:
				v = avgOf(v, plan.NewColRef(agg.AggCols[p.first+1]), a.Typ)
			}
			vals[i] = v
		}
		return agg, vals
	}), true
}

// avgOf is sum / count as avg computes it, of type t: a decimal sum
// divided by the count at avg's scale (one rounding, half away from zero),
// an integer or float sum as float64 over the count as float64; NULL
// when the count is 0. It returns nil when the division would not have
// type t.
func avgOf(sum, count plan.Expr, t arrow.DataType) plan.Expr {
	nz := plan.NewCall("nullif", plan.TypInt64, count, &plan.Const{Typ: plan.TypInt64, Val: int64(0)})
	st := sum.Type()
	switch {
	case plan.IsDecimal(st):
		dt, ok := plan.ArithType(plan.FnDiv, st, plan.TypInt64)
		if !ok || !arrow.TypeEqual(dt, t) {
			return nil
		}
		return plan.NewCall(plan.FnDiv, t, sum, nz)
	case plan.IsInteger(st) || plan.IsFloat(st):
		if !arrow.TypeEqual(t, plan.TypFloat64) {
			return nil
		}
		return plan.NewCall(plan.FnDiv, t, &plan.CastExpr{X: sum, Typ: plan.TypFloat64}, &plan.CastExpr{X: nz, Typ: plan.TypFloat64})
	}
	return nil
}
