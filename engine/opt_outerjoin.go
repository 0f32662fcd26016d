package engine

var ruleOuterJoin = &Rule{
	Name:   RuleOuterJoin,
	Shapes: "an outer join whose NULL-extended rows a filter above rejects becomes inner (or the other outer)",
	apply:  func(_ *optimizer, p Plan) (Plan, error) { return simplifyOuterJoins(p, colSet{}), nil },
}

// strictCols returns the columns for which e is NULL (or not TRUE) when
// the column is NULL: e rejects rows where those columns are NULL.
func strictCols(e Expr) colSet {
	out := colSet{}
	switch x := e.(type) {
	case *ColRef:
		out.add(x.ID)
	case *CastExpr:
		return strictCols(x.X)
	case *Call:
		switch x.Fn {
		case fnCoalesce, fnIsNull, fnDistinct, fnNotDist, fnOr, "nullif":
			return out
		case fnNotNull:
			return strictCols(x.Args[0])
		case fnAnd:
			for _, a := range x.Args {
				out.addAll(strictCols(a))
			}
			return out
		}
		for _, a := range x.Args {
			out.addAll(strictCols(a))
		}
	}
	return out
}

// simplifyOuterJoins turns outer joins into inner (or full into left or
// right) when a filter above rejects the NULLs the outer join would add.
// rejected holds the columns that filters above reject NULLs of.
func simplifyOuterJoins(p Plan, rejected colSet) Plan {
	switch n := p.(type) {
	case *FilterNode:
		r := colSet{}
		r.addAll(rejected)
		for _, c := range conjuncts(n.Cond) {
			r.addAll(strictCols(c))
		}
		return &FilterNode{Input: simplifyOuterJoins(n.Input, r), Cond: n.Cond}
	case *ProjectNode:
		r := colSet{}
		for i, e := range n.Exprs {
			if rejected.has(n.Cols[i].ID) {
				r.addAll(strictCols(e))
			}
		}
		return &ProjectNode{Input: simplifyOuterJoins(n.Input, r), Exprs: n.Exprs, Cols: n.Cols}
	case *JoinNode:
		j := *n
		lc, rc := colSetOf(n.Left.Columns()), colSetOf(n.Right.Columns())
		lRej, rRej := rejected.intersects(lc), rejected.intersects(rc)
		switch n.Kind {
		case JoinLeft:
			if rRej {
				j.Kind = JoinInner
			}
		case JoinRight:
			if lRej {
				j.Kind = JoinInner
			}
		case JoinSingle:
			// A single join whose right side cannot have two rows is a left
			// join; with its NULLs rejected, an inner join (TPC-H Q11, Q15,
			// Q22: a comparison with an uncorrelated aggregate).
			if rRej && atMostOneRow(n.Right) {
				j.Kind = JoinInner
			}
		case JoinFull:
			switch {
			case lRej && rRej:
				j.Kind = JoinInner
			case lRej:
				j.Kind = JoinLeft
			case rRej:
				j.Kind = JoinRight
			}
		}
		// Below an inner join, its condition rejects NULLs too.
		r := colSet{}
		r.addAll(rejected)
		if j.Kind == JoinInner {
			for _, c := range conjuncts(j.Cond) {
				r.addAll(strictCols(c))
			}
			for _, q := range j.Equi {
				r.addAll(strictCols(q.Left))
				r.addAll(strictCols(q.Right))
			}
		}
		left, right := colSet{}, colSet{}
		switch j.Kind {
		case JoinInner, JoinSemi, JoinAnti, JoinMark, JoinSingle, JoinLeft:
			left = r
		}
		if j.Kind == JoinInner || j.Kind == JoinRight {
			right = r
		}
		j.Left = simplifyOuterJoins(n.Left, left)
		j.Right = simplifyOuterJoins(n.Right, right)
		return &j
	case *SortNode, *DistinctNode:
		return p.withInputs([]Plan{simplifyOuterJoins(p.Inputs()[0], rejected)})
	}
	in := p.Inputs()
	if len(in) == 0 {
		return p
	}
	nin := make([]Plan, len(in))
	for i, c := range in {
		nin[i] = simplifyOuterJoins(c, colSet{})
	}
	return p.withInputs(nin)
}

// atMostOneRow reports plans that never return two rows: an aggregate
// without GROUP BY, LIMIT 0 or 1, one VALUES row, under filters and
// projections.
func atMostOneRow(p Plan) bool {
	for {
		switch n := p.(type) {
		case *ProjectNode:
			p = n.Input
		case *FilterNode:
			p = n.Input
		case *AggregateNode:
			return len(n.Groups) == 0
		case *LimitNode:
			return n.Limit >= 0 && n.Limit <= 1
		case *TopNNode:
			return n.Limit <= 1
		case *ValuesNode:
			return len(n.Rows) <= 1
		default:
			return false
		}
	}
}
