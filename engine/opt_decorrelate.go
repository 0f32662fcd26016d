package engine

import (
	"github.com/nicflow/nicflow/internal/nferr"
)

var ruleDecorrelate = &Rule{
	Name:     RuleDecorrelate,
	Shapes:   "subqueries (scalar, IN, EXISTS, correlated or not) become joins; required: subqueries only run as joins",
	Required: true,
	apply:    func(o *optimizer, p Plan) (Plan, error) { return o.decorrelate(p) },
}

// Rule: subquery decorrelation. Every SubqueryExpr becomes a join:
//
//   - a conjunct EXISTS (q) / NOT EXISTS (q) of a filter: semi / anti join
//   - a conjunct x IN (q) / x NOT IN (q): semi join / null-aware anti join
//     on x = q's column
//   - EXISTS and IN anywhere else (under OR, in a select list): a mark join
//     whose boolean mark column replaces the subquery
//   - an uncorrelated scalar subquery: a single join (at most one row; the
//     value is NULL when the subquery returns none)
//   - a correlated scalar subquery (Q2, Q17, Q20, Q22): the correlated
//     predicates are pulled out of the subquery; an aggregate below them is
//     grouped by the inner side of the (equality) predicates, and the
//     result is left-joined on them; count(...) results are wrapped in
//     COALESCE(x, 0) so that an empty group still counts zero
//
// Correlated predicates are pulled up through filters, projections, inner
// joins (both sides), the left side of other joins, and aggregates (as
// group keys, equalities only). Other shapes (a correlated reference below
// a LIMIT, a window or a set operation, or a non-equality under an
// aggregate) are a KindQuery "not supported" error naming the subquery.
func (o *optimizer) decorrelate(p Plan) (Plan, error) {
	var err error
	out := mapPlan(p, func(n Plan) Plan {
		if err != nil {
			return n
		}
		var r Plan
		r, err = o.decorrelateNode(n)
		return r
	})
	return out, err
}

func (o *optimizer) decorrelateNode(n Plan) (Plan, error) {
	switch x := n.(type) {
	case *FilterNode:
		if !hasSubquery(x.Cond) {
			return n, nil
		}
		input := x.Input
		var rest []Expr
		for _, c := range conjuncts(x.Cond) {
			not := false
			inner := c
			if call, ok := c.(*Call); ok && call.Fn == fnNot {
				if s, ok := call.Args[0].(*SubqueryExpr); ok && s.Kind != SubScalar {
					not, inner = true, s
				}
			}
			if s, ok := inner.(*SubqueryExpr); ok && s.Kind != SubScalar && !hasSubquery(s.X) {
				j, err := o.semiJoin(input, s, not)
				if err != nil {
					return nil, err
				}
				input = j
				continue
			}
			in, e, err := o.rewriteSubqueries(input, c)
			if err != nil {
				return nil, err
			}
			input = in
			rest = append(rest, e)
		}
		if len(rest) == 0 {
			return input, nil
		}
		return &FilterNode{Input: input, Cond: andOf(rest)}, nil
	case *ProjectNode:
		input := x.Input
		exprs := make([]Expr, len(x.Exprs))
		changed := false
		for i, e := range x.Exprs {
			if !hasSubquery(e) {
				exprs[i] = e
				continue
			}
			in, ne, err := o.rewriteSubqueries(input, e)
			if err != nil {
				return nil, err
			}
			input, exprs[i], changed = in, ne, true
		}
		if !changed {
			return n, nil
		}
		return &ProjectNode{Input: input, Exprs: exprs, Cols: x.Cols}, nil
	}
	for _, e := range nodeExprs(n) {
		if hasSubquery(e) {
			return nil, nferr.Queryf("subqueries are not supported in %s", nodeName(n))
		}
	}
	return n, nil
}

func nodeName(n Plan) string {
	switch n.(type) {
	case *JoinNode:
		return "JOIN conditions"
	case *AggregateNode:
		return "GROUP BY or aggregate arguments"
	case *SortNode, *TopNNode:
		return "ORDER BY"
	case *WindowNode:
		return "window functions"
	case *ValuesNode:
		return "VALUES"
	}
	return "this position"
}

// subPlan returns a subquery's plan with its own subqueries decorrelated.
func (o *optimizer) subPlan(s *SubqueryExpr) (Plan, error) {
	return o.decorrelate(s.Plan)
}

// semiJoin turns a conjunct [NOT] EXISTS / [NOT] IN into a semi or anti join.
func (o *optimizer) semiJoin(input Plan, s *SubqueryExpr, not bool) (Plan, error) {
	plan, err := o.subPlan(s)
	if err != nil {
		return nil, err
	}
	var inEqui []EquiCond
	if s.Kind == SubIn {
		inEqui = []EquiCond{{Left: s.X, Right: colRef(plan.Columns()[0])}}
	} else {
		plan = stripProjects(plan)
		if alwaysOneRow(plan) {
			// EXISTS over an aggregate without GROUP BY is always true.
			if not {
				return &FilterNode{Input: input, Cond: boolConst(false)}, nil
			}
			return input, nil
		}
	}
	right, preds, err := o.pullCorrelated(plan, colSetOf(input.Columns()), s)
	if err != nil {
		return nil, err
	}
	kind := JoinSemi
	if not {
		kind = JoinAnti
	}
	j := &JoinNode{Kind: kind, Left: input, Right: right, Equi: inEqui, Cond: andOf(preds)}
	if not && s.Kind == SubIn {
		j.NullAware = true
	}
	return j, nil
}

// stripProjects removes projections on top of an EXISTS subquery: only
// the existence of rows matters.
func stripProjects(p Plan) Plan {
	for {
		pr, ok := p.(*ProjectNode)
		if !ok || hasSubquery(andOf(pr.Exprs)) {
			return p
		}
		p = pr.Input
	}
}

// alwaysOneRow reports a plan that returns exactly one row whatever its
// input (an aggregate without GROUP BY).
func alwaysOneRow(p Plan) bool {
	a, ok := p.(*AggregateNode)
	return ok && len(a.Groups) == 0
}

// rewriteSubqueries replaces the subqueries in e (evaluated over input) by
// columns of joins added on top of input.
func (o *optimizer) rewriteSubqueries(input Plan, e Expr) (Plan, Expr, error) {
	var err error
	out := mapExpr(e, func(x Expr) Expr {
		s, ok := x.(*SubqueryExpr)
		if !ok || err != nil {
			return x
		}
		var r Expr
		input, r, err = o.rewriteOne(input, s)
		return r
	})
	return input, out, err
}

func (o *optimizer) rewriteOne(input Plan, s *SubqueryExpr) (Plan, Expr, error) {
	plan, err := o.subPlan(s)
	if err != nil {
		return nil, nil, err
	}
	inputCols := colSetOf(input.Columns())
	if s.Kind != SubScalar {
		// A mark join: the mark column is the predicate's value.
		var inEqui []EquiCond
		if s.Kind == SubIn {
			inEqui = []EquiCond{{Left: s.X, Right: colRef(plan.Columns()[0])}}
		} else {
			plan = stripProjects(plan)
			if alwaysOneRow(plan) {
				return input, boolConst(true), nil
			}
		}
		right, preds, err := o.pullCorrelated(plan, inputCols, s)
		if err != nil {
			return nil, nil, err
		}
		mark := o.newCol("mark", typBool, s.Kind == SubIn)
		j := &JoinNode{Kind: JoinMark, Left: input, Right: right, Equi: inEqui, Cond: andOf(preds), Mark: &mark, NullAware: s.Kind == SubIn}
		return j, colRef(mark), nil
	}
	// Scalar: the top projection is evaluated above the join.
	top := Expr(colRef(plan.Columns()[0]))
	below := plan
	if pr, ok := plan.(*ProjectNode); ok && len(pr.Exprs) == 1 {
		top, below = pr.Exprs[0], pr.Input
	}
	if !freeCols(below).intersects(inputCols) {
		if !colsOf(top).intersects(inputCols) {
			// Uncorrelated: a single join with the whole subquery.
			return &JoinNode{Kind: JoinSingle, Left: input, Right: plan}, colRef(plan.Columns()[0]), nil
		}
		below, top = o.presentMarker(below, top)
		return &JoinNode{Kind: JoinSingle, Left: input, Right: below}, top, nil
	}
	right, preds, err := o.pullCorrelated(below, inputCols, s)
	if err != nil {
		return nil, nil, err
	}
	kind := JoinSingle
	if agg, ok := right.(*AggregateNode); ok && groupedByEquiKeys(agg, preds, inputCols) {
		// Grouping on the join keys makes matches unique: a plain left join.
		kind = JoinLeft
		// The count bug: an absent group means count 0, not NULL.
		m := map[ColumnID]Expr{}
		for i, a := range agg.Aggs {
			if a.Fn == aggCount || a.Fn == aggCountStar {
				c := agg.AggCols[i]
				m[c.ID] = call(fnCoalesce, c.Type, colRef(c), &Const{Typ: typInt64, Val: int64(0)})
			}
		}
		top = substitute(top, m)
	} else {
		right, top = o.presentMarker(right, top)
	}
	return &JoinNode{Kind: kind, Left: input, Right: right, Cond: andOf(preds)}, top, nil
}

// presentMarker makes a scalar subquery's top expression, evaluated above
// the join, NULL when the subquery had no row: when top is not NULL
// whenever the right side's columns are (a constant, an outer column,
// COALESCE), the right side gets a TRUE "present" column and top becomes
// CASE WHEN present THEN top END.
func (o *optimizer) presentMarker(right Plan, top Expr) (Plan, Expr) {
	rc := right.Columns()
	if strictCols(top).intersects(colSetOf(rc)) {
		return right, top
	}
	present := o.newCol("present", typBool, false)
	exprs := make([]Expr, 0, len(rc)+1)
	for _, c := range rc {
		exprs = append(exprs, colRef(c))
	}
	exprs = append(exprs, boolConst(true))
	right = &ProjectNode{Input: right, Exprs: exprs, Cols: append(append([]Column(nil), rc...), present)}
	return right, &CaseExpr{Whens: []Expr{colRef(present)}, Thens: []Expr{top}, Typ: top.Type()}
}

// groupedByEquiKeys reports whether every group key of agg is equated by
// preds to an expression over the outer columns, so each outer row matches
// at most one group.
func groupedByEquiKeys(agg *AggregateNode, preds []Expr, outer colSet) bool {
	keyed := colSet{}
	for _, p := range preds {
		c, ok := p.(*Call)
		if !ok || c.Fn != fnEq {
			continue
		}
		for i := 0; i < 2; i++ {
			if r, ok := c.Args[i].(*ColRef); ok && colsOf(c.Args[1-i]).subsetOf(outer) {
				keyed.add(r.ID)
			}
		}
	}
	for _, g := range agg.GroupCols {
		if !keyed.has(g.ID) {
			return false
		}
	}
	return len(agg.GroupCols) > 0
}

// pullCorrelated removes the predicates of p that refer to outer columns
// and returns them, with p changed to output every inner column they use.
func (o *optimizer) pullCorrelated(p Plan, outer colSet, s *SubqueryExpr) (Plan, []Expr, error) {
	out, preds, err := o.pull(p, outer)
	if err != nil {
		return nil, nil, nferr.Queryf("subquery %d: %v", s.ID, err)
	}
	if freeCols(out).intersects(outer) {
		return nil, nil, nferr.Queryf("subquery %d: this form of correlated subquery is not supported (an outer column is used where it cannot be pulled up)", s.ID)
	}
	return out, preds, nil
}

func refsOuter(e Expr, outer colSet) bool { return colsOf(e).intersects(outer) }

func (o *optimizer) pull(p Plan, outer colSet) (Plan, []Expr, error) {
	if !freeCols(p).intersects(outer) {
		return p, nil, nil
	}
	switch n := p.(type) {
	case *FilterNode:
		in, preds, err := o.pull(n.Input, outer)
		if err != nil {
			return nil, nil, err
		}
		var keep []Expr
		for _, c := range conjuncts(n.Cond) {
			if refsOuter(c, outer) {
				if hasSubquery(c) {
					return nil, nil, errString("a correlated predicate holds another subquery")
				}
				preds = append(preds, c)
			} else {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			return in, preds, nil
		}
		return &FilterNode{Input: in, Cond: andOf(keep)}, preds, nil
	case *ProjectNode:
		for _, e := range n.Exprs {
			if refsOuter(e, outer) {
				return nil, nil, errString("an outer column is used in a select list below the top of the subquery")
			}
		}
		in, preds, err := o.pull(n.Input, outer)
		if err != nil {
			return nil, nil, err
		}
		exprs, cols := append([]Expr(nil), n.Exprs...), append([]Column(nil), n.Cols...)
		have := colSetOf(cols)
		inCols := in.Columns()
		inSet := colSetOf(inCols)
		for _, pr := range preds {
			for id := range colsOf(pr) {
				// NB: columns of queries further out stay free references.
				if outer.has(id) || have.has(id) || !inSet.has(id) {
					continue
				}
				c := findCol(inCols, id)
				exprs = append(exprs, colRef(c))
				cols = append(cols, c)
				have.add(id)
			}
		}
		return &ProjectNode{Input: in, Exprs: exprs, Cols: cols}, preds, nil
	case *JoinNode:
		l, lp, err := o.pull(n.Left, outer)
		if err != nil {
			return nil, nil, err
		}
		r, rp := n.Right, []Expr(nil)
		if n.Kind == JoinInner {
			if r, rp, err = o.pull(n.Right, outer); err != nil {
				return nil, nil, err
			}
		} else if freeCols(n.Right).intersects(outer) {
			return nil, nil, errString("an outer column is used on the inner side of an outer, semi or anti join")
		}
		j := *n
		j.Left, j.Right = l, r
		preds := append(lp, rp...)
		if n.Cond != nil && refsOuter(n.Cond, outer) {
			if n.Kind != JoinInner {
				return nil, nil, errString("an outer column is used in an outer join's condition")
			}
			var keep []Expr
			for _, c := range conjuncts(n.Cond) {
				if refsOuter(c, outer) {
					preds = append(preds, c)
				} else {
					keep = append(keep, c)
				}
			}
			j.Cond = andOf(keep)
		}
		return &j, preds, nil
	case *AggregateNode:
		for _, e := range nodeExprs(n) {
			if refsOuter(e, outer) {
				return nil, nil, errString("an outer column is used inside an aggregate or GROUP BY")
			}
		}
		in, preds, err := o.pull(n.Input, outer)
		if err != nil {
			return nil, nil, err
		}
		agg := *n
		agg.Input = in
		agg.Groups = append([]Expr(nil), n.Groups...)
		agg.GroupCols = append([]Column(nil), n.GroupCols...)
		inCols := in.Columns()
		var out []Expr
		for _, pr := range preds {
			c, ok := pr.(*Call)
			if !ok || c.Fn != fnEq {
				return nil, nil, errString("a correlated predicate below an aggregate must be an equality (inner = outer)")
			}
			innerIdx := -1
			inSet := colSetOf(inCols)
			for i := 0; i < 2; i++ {
				if ic := colsOf(c.Args[i]); len(ic) > 0 && ic.subsetOf(inSet) && colsOf(c.Args[1-i]).subsetOf(outer) {
					innerIdx = i
				}
			}
			if innerIdx < 0 {
				return nil, nil, errString("a correlated predicate below an aggregate must compare an inner expression with an outer one")
			}
			inner := c.Args[innerIdx]
			var gc Column
			found := false
			for i, g := range agg.Groups {
				if exprEqual(g, inner) {
					gc, found = agg.GroupCols[i], true
				}
			}
			if !found {
				if r, ok := inner.(*ColRef); ok {
					gc = findCol(inCols, r.ID)
				} else {
					gc = o.newCol("key", inner.Type(), true)
				}
				agg.Groups = append(agg.Groups, inner)
				agg.GroupCols = append(agg.GroupCols, gc)
			}
			args := []Expr{colRef(gc), c.Args[1-innerIdx]}
			if innerIdx == 1 {
				args[0], args[1] = args[1], args[0]
			}
			out = append(out, call(fnEq, typBool, args...))
		}
		return &agg, out, nil
	}
	return nil, nil, errString("an outer column is used below " + planKindName(p) + ", where it cannot be pulled up")
}

type errString string

func (e errString) Error() string { return string(e) }

func planKindName(p Plan) string {
	switch p.(type) {
	case *SortNode, *LimitNode, *TopNNode:
		return "ORDER BY or LIMIT"
	case *SetOpNode:
		return "a set operation"
	case *WindowNode:
		return "a window function"
	case *DistinctNode:
		return "DISTINCT"
	}
	return "this operator"
}
