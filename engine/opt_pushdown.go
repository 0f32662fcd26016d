package engine

var rulePushdown = &Rule{
	Name:   RulePushdown,
	Shapes: "filters move down through projections, sorts and set operations, into joins (equalities become equi-join keys) and into scans",
	apply:  func(o *optimizer, p Plan) (Plan, error) { return o.pushdown(p), nil },
}

// Rule: predicate pushdown. Filter conjuncts move as far down as their
// columns allow: through projections (substituting the projected
// expressions), sorts, DISTINCT and set operations, below aggregates when
// they use group keys only, into the matching side of joins (respecting
// outer-join semantics), and finally into scans as ScanNode.Filters. At a
// join, conjuncts over both sides become its condition; equalities between
// the two sides become equi-join keys (EquiCond), the rest a residual.
// Comma-separated FROM lists thus become equi-joins.

func (o *optimizer) pushdown(p Plan) Plan { return o.push(p, nil) }

// filterOver puts the predicates that could not be pushed above p.
func filterOver(p Plan, preds []Expr) Plan {
	if len(preds) == 0 {
		return p
	}
	return &FilterNode{Input: p, Cond: andOf(preds)}
}

func (o *optimizer) push(p Plan, preds []Expr) Plan {
	switch n := p.(type) {
	case *FilterNode:
		return o.push(n.Input, append(preds, conjuncts(n.Cond)...))
	case *ScanNode:
		c := *n
		c.Filters = append(append([]Expr(nil), n.Filters...), preds...)
		return &c
	case *ProjectNode:
		m := map[ColumnID]Expr{}
		for i, e := range n.Exprs {
			m[n.Cols[i].ID] = e
		}
		var down []Expr
		for _, pr := range preds {
			down = append(down, substitute(pr, m))
		}
		return &ProjectNode{Input: o.push(n.Input, down), Exprs: n.Exprs, Cols: n.Cols}
	case *SortNode:
		return &SortNode{Input: o.push(n.Input, preds), Keys: n.Keys}
	case *DistinctNode:
		return &DistinctNode{Input: o.push(n.Input, preds)}
	case *AggregateNode:
		groups := map[ColumnID]Expr{}
		for i, g := range n.Groups {
			groups[n.GroupCols[i].ID] = g
		}
		aggCols := colSetOf(n.AggCols)
		var down, keep []Expr
		for _, pr := range preds {
			// Without GROUP BY a filter cannot move below: the aggregate
			// returns one row even over no input.
			if len(n.Groups) > 0 && !colsOf(pr).intersects(aggCols) {
				down = append(down, substitute(pr, groups))
			} else {
				keep = append(keep, pr)
			}
		}
		c := *n
		c.Input = o.push(n.Input, down)
		return filterOver(&c, keep)
	case *SetOpNode:
		lm, rm := map[ColumnID]Expr{}, map[ColumnID]Expr{}
		lc, rc := n.Left.Columns(), n.Right.Columns()
		for i, c := range n.Cols {
			lm[c.ID], rm[c.ID] = colRef(lc[i]), colRef(rc[i])
		}
		var lp, rp []Expr
		for _, pr := range preds {
			lp = append(lp, substitute(pr, lm))
			rp = append(rp, substitute(pr, rm))
		}
		c := *n
		c.Left, c.Right = o.push(n.Left, lp), o.push(n.Right, rp)
		return &c
	case *JoinNode:
		return o.pushJoin(n, preds)
	}
	// Limit, TopN, Window, Values, SharedScan: predicates stay above;
	// their inputs get their own pushdown.
	in := p.Inputs()
	if len(in) > 0 {
		nin := make([]Plan, len(in))
		for i, c := range in {
			nin[i] = o.push(c, nil)
		}
		p = p.withInputs(nin)
	}
	return filterOver(p, preds)
}

func (o *optimizer) pushJoin(n *JoinNode, above []Expr) Plan {
	lc, rc := colSetOf(n.Left.Columns()), colSetOf(n.Right.Columns())
	// The join's own condition, as conjuncts (equi keys included).
	// INVARIANT: a null-aware join's first equi condition is its IN
	// comparison; it stays first and is never moved.
	var on []Expr
	var pinned []EquiCond
	equi := n.Equi
	if n.NullAware && len(equi) > 0 {
		pinned, equi = equi[:1], equi[1:]
	}
	for _, q := range equi {
		on = append(on, call(fnEq, typBool, q.Left, q.Right))
	}
	on = append(on, conjuncts(n.Cond)...)
	var toLeft, toRight, keepOn, keepAbove []Expr
	side := func(e Expr) (onlyL, onlyR bool) {
		cs := colsOf(e)
		return cs.subsetOf(lc) && len(cs) > 0, cs.subsetOf(rc) && len(cs) > 0
	}
	switch n.Kind {
	case JoinInner:
		for _, e := range append(above, on...) {
			l, r := side(e)
			switch {
			case l:
				toLeft = append(toLeft, e)
			case r:
				toRight = append(toRight, e)
			default:
				keepOn = append(keepOn, e)
				// An OR over both sides implies an OR over each side's
				// own conjuncts: push those down too (TPC-H Q7, Q19).
				if d := deriveSide(e, lc); d != nil {
					toLeft = append(toLeft, d)
				}
				if d := deriveSide(e, rc); d != nil {
					toRight = append(toRight, d)
				}
			}
		}
	case JoinLeft, JoinSemi, JoinAnti, JoinMark, JoinSingle:
		for _, e := range above {
			if l, _ := side(e); l {
				toLeft = append(toLeft, e)
			} else {
				keepAbove = append(keepAbove, e)
			}
		}
		for _, e := range on {
			l, r := side(e)
			switch {
			case r:
				toRight = append(toRight, e)
			case l && n.Kind == JoinSemi:
				toLeft = append(toLeft, e)
			default:
				keepOn = append(keepOn, e)
			}
		}
	case JoinRight:
		for _, e := range above {
			if _, r := side(e); r {
				toRight = append(toRight, e)
			} else {
				keepAbove = append(keepAbove, e)
			}
		}
		for _, e := range on {
			if l, _ := side(e); l {
				toLeft = append(toLeft, e)
			} else {
				keepOn = append(keepOn, e)
			}
		}
	default: // full
		keepAbove = above
		keepOn = on
	}
	j := *n
	j.Left = o.push(n.Left, toLeft)
	j.Right = o.push(n.Right, toRight)
	j.Equi, j.Cond = splitEqui(keepOn, colSetOf(j.Left.Columns()), colSetOf(j.Right.Columns()))
	j.Equi = append(append([]EquiCond(nil), pinned...), j.Equi...)
	return filterOver(pushSemiDown(&j), keepAbove)
}

// deriveSide returns, for an OR whose every arm has conjuncts over cols
// only, the OR of those conjuncts: a predicate implied by e that uses cols
// only. It returns nil when some arm says nothing about cols.
func deriveSide(e Expr, cols colSet) Expr {
	c, ok := e.(*Call)
	if !ok || c.Fn != fnOr {
		return nil
	}
	var arms []Expr
	for _, d := range disjuncts(e) {
		var parts []Expr
		for _, k := range conjuncts(d) {
			if cs := colsOf(k); len(cs) > 0 && cs.subsetOf(cols) && !hasSubquery(k) {
				parts = append(parts, k)
			}
		}
		if len(parts) == 0 {
			return nil
		}
		arms = append(arms, andOf(parts))
	}
	return simplify(orOf(arms))
}

// pushSemiDown moves a semi or anti join below an inner join when it only
// uses columns of one of that join's inputs: it then filters that input
// before the (larger) join (TPC-H Q18's IN subquery filters orders, not
// the orders-lineitem join).
func pushSemiDown(j *JoinNode) Plan {
	if j.Kind != JoinSemi && j.Kind != JoinAnti {
		return j
	}
	inner, ok := j.Left.(*JoinNode)
	if !ok || inner.Kind != JoinInner {
		return j
	}
	need := colSet{}
	for _, e := range nodeExprs(j) {
		exprCols(e, need)
	}
	for i, child := range []Plan{inner.Left, inner.Right} {
		cc := colSetOf(child.Columns())
		used := colSet{}
		for id := range need {
			if colSetOf(inner.Columns()).has(id) {
				used.add(id)
			}
		}
		if len(used) > 0 && used.subsetOf(cc) {
			nj := *j
			nj.Left = child
			ni := *inner
			if i == 0 {
				ni.Left = pushSemiDown(&nj)
			} else {
				ni.Right = pushSemiDown(&nj)
			}
			return &ni
		}
	}
	return j
}

// splitEqui separates equalities between the two sides (join keys, left
// expression first) from the residual condition.
func splitEqui(conds []Expr, lc, rc colSet) ([]EquiCond, Expr) {
	var equi []EquiCond
	var rest []Expr
	for _, e := range conds {
		if c, ok := e.(*Call); ok && c.Fn == fnEq {
			a, b := colsOf(c.Args[0]), colsOf(c.Args[1])
			if len(a) > 0 && len(b) > 0 && !hasSubquery(e) {
				switch {
				case a.subsetOf(lc) && b.subsetOf(rc):
					equi = append(equi, EquiCond{Left: c.Args[0], Right: c.Args[1]})
					continue
				case a.subsetOf(rc) && b.subsetOf(lc):
					equi = append(equi, EquiCond{Left: c.Args[1], Right: c.Args[0]})
					continue
				}
			}
		}
		rest = append(rest, e)
	}
	return equi, andOf(rest)
}
