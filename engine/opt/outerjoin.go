package opt

import "github.com/nicflow/nicflow/engine/plan"

var ruleOuterJoin = &Rule{
	Name:   RuleOuterJoin,
	Shapes: "an outer join whose NULL-extended rows a filter above rejects becomes inner (or the other outer)",
	apply:  func(_ *optimizer, p plan.Plan) (plan.Plan, error) { return simplifyOuterJoins(p, plan.ColSet{}), nil },
}

// strictCols returns the columns for which e is NULL (or not TRUE) when
// the column is NULL: e rejects rows where those columns are NULL.
func strictCols(e plan.Expr) plan.ColSet {
	out := plan.ColSet{}
	switch x := e.(type) {
	case *plan.ColRef:
		out.Add(x.ID)
	case *plan.CastExpr:
		return strictCols(x.X)
	case *plan.Call:
		switch x.Fn {
		case plan.FnCoalesce, plan.FnIsNull, plan.FnDistinct, plan.FnNotDist, plan.FnOr, "nullif":
			return out
		case plan.FnNotNull:
			return strictCols(x.Args[0])
		case plan.FnAnd:
			for _, a := range x.Args {
				out.AddAll(strictCols(a))
			}
			return out
		}
		for _, a := range x.Args {
			if _, ok := a.(*plan.Const); ok {
				continue // no columns (and an IN list may hold 200,000)
			}
			out.AddAll(strictCols(a))
		}
	}
	return out
}

// simplifyOuterJoins turns outer joins into inner (or full into left or
// right) when a filter above rejects the NULLs the outer join would add.
// rejected holds the columns that filters above reject NULLs of.
func simplifyOuterJoins(p plan.Plan, rejected plan.ColSet) plan.Plan {
	switch n := p.(type) {
	case *plan.FilterNode:
		r := plan.ColSet{}
		r.AddAll(rejected)
		for _, c := range plan.Conjuncts(n.Cond) {
			r.AddAll(strictCols(c))
		}
		return &plan.FilterNode{Input: simplifyOuterJoins(n.Input, r), Cond: n.Cond}
	case *plan.ProjectNode:
		r := plan.ColSet{}
		for i, e := range n.Exprs {
			if rejected.Has(n.Cols[i].ID) {
				r.AddAll(strictCols(e))
			}
		}
		return &plan.ProjectNode{Input: simplifyOuterJoins(n.Input, r), Exprs: n.Exprs, Cols: n.Cols}
	case *plan.JoinNode:
		j := *n
		lc, rc := plan.ColSetOf(n.Left.Columns()), plan.ColSetOf(n.Right.Columns())
		lRej, rRej := rejected.Intersects(lc), rejected.Intersects(rc)
		switch n.Kind {
		case plan.JoinLeft:
			if rRej {
				j.Kind = plan.JoinInner
			}
		case plan.JoinRight:
			if lRej {
				j.Kind = plan.JoinInner
			}
		case plan.JoinSingle:
			// A single join whose right side cannot have two rows is a left
			// join; with its NULLs rejected, an inner join (TPC-H Q11, Q15,
			// Q22: a comparison with an uncorrelated aggregate).
			if rRej && AtMostOneRow(n.Right) {
				j.Kind = plan.JoinInner
			}
		case plan.JoinFull:
			switch {
			case lRej && rRej:
				j.Kind = plan.JoinInner
			case lRej:
				j.Kind = plan.JoinLeft
			case rRej:
				j.Kind = plan.JoinRight
			}
		}
		// Below an inner join, its condition rejects NULLs too.
		r := plan.ColSet{}
		r.AddAll(rejected)
		if j.Kind == plan.JoinInner {
			for _, c := range plan.Conjuncts(j.Cond) {
				r.AddAll(strictCols(c))
			}
			for _, q := range j.Equi {
				r.AddAll(strictCols(q.Left))
				r.AddAll(strictCols(q.Right))
			}
		}
		left, right := plan.ColSet{}, plan.ColSet{}
		switch j.Kind {
		case plan.JoinInner, plan.JoinSemi, plan.JoinAnti, plan.JoinMark, plan.JoinSingle, plan.JoinLeft:
			left = r
		}
		if j.Kind == plan.JoinInner || j.Kind == plan.JoinRight {
			right = r
		}
		j.Left = simplifyOuterJoins(n.Left, left)
		j.Right = simplifyOuterJoins(n.Right, right)
		return &j
	case *plan.SortNode, *plan.DistinctNode:
		return p.WithInputs([]plan.Plan{simplifyOuterJoins(p.Inputs()[0], rejected)})
	}
	in := p.Inputs()
	if len(in) == 0 {
		return p
	}
	nin := make([]plan.Plan, len(in))
	for i, c := range in {
		nin[i] = simplifyOuterJoins(c, plan.ColSet{})
	}
	return p.WithInputs(nin)
}

// AtMostOneRow reports plans that never return two rows: an aggregate
// without GROUP BY, LIMIT 0 or 1, one VALUES row, under filters and
// projections.
func AtMostOneRow(p plan.Plan) bool {
	for {
		switch n := p.(type) {
		case *plan.ProjectNode:
			p = n.Input
		case *plan.FilterNode:
			p = n.Input
		case *plan.AggregateNode:
			return len(n.Groups) == 0
		case *plan.LimitNode:
			return n.Limit >= 0 && n.Limit <= 1
		case *plan.TopNNode:
			return n.Limit <= 1
		case *plan.ValuesNode:
			return len(n.Rows) <= 1
		default:
			return false
		}
	}
}
