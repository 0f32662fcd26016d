package opt

import (
	"github.com/nicflow/nicflow/engine/plan"
)

// LATERAL joins (plan.JoinNode.Lateral): the right side reads columns of
// the left one, so it stands for one relation per left row. Part of the
// decorrelation rule, tried in this order:
//
//   - no reference is left (an earlier rewrite removed it): an ordinary
//     join;
//   - an inner join with unnest or generate_series over the left rows
//     (FROM t, unnest(t.a)): an Unnest of the left side itself;
//   - an inner join (or a left one ON TRUE) with an aggregate without
//     GROUP BY, under projections, over correlated equalities
//     (LATERAL (SELECT count(*), sum(x) FROM s WHERE s.k = t.k)): the
//     aggregate grouped by the inner keys, left-joined on them, count
//     made 0 for a left row without a group (one row per left row, as
//     the aggregate of nothing is);
//   - the correlated predicates pulled up (through filters, projections,
//     inner joins, GROUP BY, and ORDER BY ... LIMIT, which becomes a
//     row_number per left key: the top-N-per-group idiom): a join on them;
//   - otherwise an ApplyNode in table mode runs the right side once per
//     distinct binding of the left columns it reads (apply.go's fallback,
//     which refuses no shape).
func (o *optimizer) lateral(j *plan.JoinNode) (plan.Plan, error) {
	lcols := plan.ColSetOf(j.Left.Columns())
	plain := func(right plan.Plan, preds []plan.Expr) (plan.Plan, error) {
		nj := *j
		nj.Lateral = false
		nj.Right = right
		if len(preds) > 0 {
			if j.Cond != nil {
				preds = append(preds, j.Cond)
			}
			nj.Cond = plan.AndOf(preds)
		}
		// The condition may hold subqueries of its own.
		return o.decorrelateNode(&nj)
	}
	if !plan.FreeCols(j.Right).Intersects(lcols) {
		return plain(j.Right, nil)
	}
	if u, ok := j.Right.(*plan.UnnestNode); ok && j.Kind == plan.JoinInner && isOneEmptyRow(u.Input) {
		nu := *u
		nu.Input = j.Left
		if j.Cond == nil {
			return &nu, nil
		}
		return o.decorrelateNode(&plan.FilterNode{Input: &nu, Cond: j.Cond})
	}
	if p, ok := o.lateralAggregate(j, lcols); ok {
		return p, nil
	}
	if !scalarAggOverOuter(j.Right, lcols) {
		if inner, preds, err := o.pull(j.Right, lcols); err == nil && !plan.FreeCols(inner).Intersects(lcols) {
			return plain(inner, preds)
		}
	}
	sub := j.Right
	if j.Cond != nil {
		// ON reads both sides: evaluated inside, per left row.
		sub = &plan.FilterNode{Input: sub, Cond: j.Cond}
	}
	o.nextLateral++
	return &plan.ApplyNode{Input: j.Left, Sub: sub, Outer: freeColumns(sub), SubID: o.nextLateral, Table: true, Left: j.Kind == plan.JoinLeft}, nil
}

// lateralAggregate rewrites a lateral join whose right side is an
// aggregate without GROUP BY (under projections only) over correlated
// equalities; ok is false for other shapes.
func (o *optimizer) lateralAggregate(j *plan.JoinNode, lcols plan.ColSet) (plan.Plan, bool) {
	if j.Kind != plan.JoinInner && !(j.Kind == plan.JoinLeft && isTrue(j.Cond)) {
		return nil, false
	}
	var chain []*plan.ProjectNode // top first
	n := j.Right
	for {
		pr, ok := n.(*plan.ProjectNode)
		if !ok {
			break
		}
		for _, e := range pr.Exprs {
			if refsOuter(e, lcols) {
				return nil, false
			}
		}
		chain, n = append(chain, pr), pr.Input
	}
	agg, ok := n.(*plan.AggregateNode)
	if !ok || len(agg.Groups) > 0 || scalarAggOverOuter(agg.Input, lcols) {
		return nil, false
	}
	pulled, preds, err := o.pull(agg, lcols)
	if err != nil || plan.FreeCols(pulled).Intersects(lcols) || len(preds) == 0 {
		return nil, false
	}
	join := &plan.JoinNode{Kind: plan.JoinLeft, Left: j.Left, Right: pulled, Cond: plan.AndOf(preds)}
	// The right side's output columns, computed above the join from the
	// aggregate's (count of no row is 0).
	var outCols []plan.Column
	var outExprs []plan.Expr
	if len(chain) == 0 {
		for _, c := range agg.Columns() {
			outCols = append(outCols, c)
			outExprs = append(outExprs, countOfNothing(agg, plan.NewColRef(c)))
		}
	} else {
		top := chain[0]
		outCols = top.Cols
		defs := make([]map[plan.ColumnID]plan.Expr, len(chain)-1)
		for i, pr := range chain[1:] {
			defs[i] = projectionDefs(pr)
		}
		for _, e := range top.Exprs {
			for _, m := range defs {
				e = plan.Substitute(e, m)
			}
			outExprs = append(outExprs, countOfNothing(agg, e))
		}
	}
	exprs := plan.ColRefs(j.Left.Columns())
	cols := append([]plan.Column(nil), j.Left.Columns()...)
	for i, c := range outCols {
		if outExprs[i].Type() == nil || !sameType(outExprs[i], c) {
			return nil, false
		}
		exprs = append(exprs, outExprs[i])
		cols = append(cols, c)
	}
	var out plan.Plan = &plan.ProjectNode{Input: join, Exprs: exprs, Cols: cols}
	if j.Kind == plan.JoinInner && j.Cond != nil {
		out = &plan.FilterNode{Input: out, Cond: j.Cond}
	}
	d, err := o.decorrelateNode(out)
	if err != nil {
		return nil, false
	}
	return d, true
}

// scalarAggOverOuter reports whether p holds an aggregate without GROUP BY
// whose input reads outer columns: pulling the correlation above it would
// lose the one row it makes of an empty input.
func scalarAggOverOuter(p plan.Plan, outer plan.ColSet) bool {
	found := false
	plan.WalkPlan(p, func(n plan.Plan) bool {
		if a, ok := n.(*plan.AggregateNode); ok && len(a.Groups) == 0 && plan.FreeCols(a.Input).Intersects(outer) {
			found = true
		}
		return !found
	})
	return found
}

// isOneEmptyRow reports whether p is VALUES of one row without columns
// (a function in FROM reads nothing else).
func isOneEmptyRow(p plan.Plan) bool {
	v, ok := p.(*plan.ValuesNode)
	return ok && len(v.Rows) == 1 && len(v.Rows[0]) == 0
}

// isTrue reports whether e is nil or the constant TRUE (LEFT JOIN
// LATERAL ... ON TRUE).
func isTrue(e plan.Expr) bool {
	if e == nil {
		return true
	}
	c, ok := e.(*plan.Const)
	return ok && !c.IsNull() && c.Val == true
}

func sameType(e plan.Expr, c plan.Column) bool {
	return plan.TypeString(e.Type()) == plan.TypeString(c.Type)
}
