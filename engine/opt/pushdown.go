package opt

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
)

var rulePushdown = &Rule{
	Name:   RulePushdown,
	Shapes: "filters move down through projections, sorts and set operations, into joins (equalities become equi-join keys) and into scans",
	apply:  func(o *optimizer, p plan.Plan) (plan.Plan, error) { return o.pushdown(p), nil },
}

// Rule: predicate pushdown. Filter conjuncts move as far down as their
// columns allow: through projections (substituting the projected
// expressions), sorts, DISTINCT and set operations, below aggregates when
// they use group keys only, into the matching side of joins (respecting
// outer-join semantics), and finally into scans as ScanNode.Filters. At a
// join, conjuncts over both sides become its condition; equalities between
// the two sides become equi-join keys (EquiCond), the rest a residual.
// Comma-separated FROM lists thus become equi-joins.

func (o *optimizer) pushdown(p plan.Plan) plan.Plan { return o.push(p, nil) }

// filterOver puts the predicates that could not be pushed above p.
func filterOver(p plan.Plan, preds []plan.Expr) plan.Plan {
	if len(preds) == 0 {
		return p
	}
	return &plan.FilterNode{Input: p, Cond: plan.AndOf(preds)}
}

func (o *optimizer) push(p plan.Plan, preds []plan.Expr) plan.Plan {
	switch n := p.(type) {
	case *plan.FilterNode:
		return o.push(n.Input, append(preds, plan.Conjuncts(n.Cond)...))
	case *plan.ScanNode:
		c := *n
		c.Filters = append(append([]plan.Expr(nil), n.Filters...), preds...)
		return &c
	case *plan.ProjectNode:
		m := map[plan.ColumnID]plan.Expr{}
		for i, e := range n.Exprs {
			m[n.Cols[i].ID] = e
		}
		var down []plan.Expr
		for _, pr := range preds {
			// NB: simplify: a projected constant makes a comparison
			// constant ('s' = 's' in a branch of a UNION ALL).
			down = append(down, simplify(plan.Substitute(pr, m)))
		}
		return &plan.ProjectNode{Input: o.push(n.Input, down), Exprs: n.Exprs, Cols: n.Cols}
	case *plan.SortNode:
		return &plan.SortNode{Input: o.push(n.Input, preds), Keys: n.Keys}
	case *plan.DistinctNode:
		return &plan.DistinctNode{Input: o.push(n.Input, preds)}
	case *plan.AggregateNode:
		groups := map[plan.ColumnID]plan.Expr{}
		for i, g := range n.Groups {
			groups[n.GroupCols[i].ID] = g
		}
		aggCols := plan.ColSetOf(n.AggCols)
		groupCols := plan.ColSetOf(n.GroupCols)
		var down, keep []plan.Expr
		for _, pr := range preds {
			// Without GROUP BY a filter cannot move below: the aggregate
			// returns one row even over no input.
			switch {
			case len(n.Groups) == 0:
				keep = append(keep, pr)
			case !plan.ColsOf(pr).Intersects(aggCols):
				down = append(down, plan.Substitute(pr, groups))
			default:
				keep = append(keep, pr)
				// An OR whose every arm tests group keys implies the OR
				// of those tests, which filters the input (TPC-DS q4:
				// (year = 2001 AND total > 0) OR year = 2002).
				if d := deriveSide(pr, groupCols); d != nil {
					down = append(down, plan.Substitute(d, groups))
				}
			}
		}
		c := *n
		c.Input = o.push(n.Input, down)
		return filterOver(&c, keep)
	case *plan.SetOpNode:
		lm, rm := map[plan.ColumnID]plan.Expr{}, map[plan.ColumnID]plan.Expr{}
		lc, rc := n.Left.Columns(), n.Right.Columns()
		for i, c := range n.Cols {
			lm[c.ID], rm[c.ID] = plan.NewColRef(lc[i]), plan.NewColRef(rc[i])
		}
		var lp, rp []plan.Expr
		for _, pr := range preds {
			lp = append(lp, plan.Substitute(pr, lm))
			rp = append(rp, plan.Substitute(pr, rm))
		}
		c := *n
		c.Left, c.Right = o.push(n.Left, lp), o.push(n.Right, rp)
		return &c
	case *plan.JoinNode:
		return o.pushJoin(n, preds)
	}
	// Limit, TopN, Window, Values, SharedScan: predicates stay above;
	// their inputs get their own pushdown.
	in := p.Inputs()
	if len(in) > 0 {
		nin := make([]plan.Plan, len(in))
		for i, c := range in {
			nin[i] = o.push(c, nil)
		}
		p = p.WithInputs(nin)
	}
	return filterOver(p, preds)
}

func (o *optimizer) pushJoin(n *plan.JoinNode, above []plan.Expr) plan.Plan {
	lc, rc := plan.ColSetOf(n.Left.Columns()), plan.ColSetOf(n.Right.Columns())
	// The join's own condition, as conjuncts (equi keys included).
	// INVARIANT: a null-aware join's first equi condition is its IN
	// comparison; it stays first and is never moved.
	var on []plan.Expr
	var pinned []plan.EquiCond
	equi := n.Equi
	if n.NullAware && len(equi) > 0 {
		pinned, equi = equi[:1], equi[1:]
	}
	for _, q := range equi {
		on = append(on, plan.NewCall(plan.FnEq, plan.TypBool, q.Left, q.Right))
	}
	on = append(on, plan.Conjuncts(n.Cond)...)
	var toLeft, toRight, keepOn, keepAbove []plan.Expr
	side := func(e plan.Expr) (onlyL, onlyR bool) {
		cs := plan.ColsOf(e)
		return cs.SubsetOf(lc) && len(cs) > 0, cs.SubsetOf(rc) && len(cs) > 0
	}
	switch n.Kind {
	case plan.JoinInner:
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
	case plan.JoinLeft, plan.JoinSemi, plan.JoinAnti, plan.JoinMark, plan.JoinSingle, plan.JoinRight:
		// The preserved side keeps all its rows and the other side is
		// null-filled (or only tested): a filter above the join moves to
		// the preserved side, an ON conjunct to the other side (and a semi
		// join's to either side).
		toKept, toOther := &toLeft, &toRight
		sides := side
		if n.Kind == plan.JoinRight {
			toKept, toOther = &toRight, &toLeft
			sides = func(e plan.Expr) (bool, bool) { l, r := side(e); return r, l }
		}
		for _, e := range above {
			if kept, _ := sides(e); kept {
				*toKept = append(*toKept, e)
			} else {
				keepAbove = append(keepAbove, e)
			}
		}
		for _, e := range on {
			kept, other := sides(e)
			switch {
			case other:
				*toOther = append(*toOther, e)
			case kept && n.Kind == plan.JoinSemi:
				*toKept = append(*toKept, e)
			default:
				keepOn = append(keepOn, e)
			}
		}
	default: // full
		keepAbove = above
		keepOn = on
	}
	// A filter on one side's join key holds for the other side's key too
	// in every row that can match (TPC-DS q78: ss_sold_year = 2000 also
	// filters the web and catalog sales it is left-joined with).
	switch {
	case n.Kind == plan.JoinInner:
		toRight = append(toRight, transferKeyPreds(toLeft, append(append([]plan.Expr(nil), on...), above...), lc, rc, toRight)...)
		toLeft = append(toLeft, transferKeyPreds(toRight, append(append([]plan.Expr(nil), on...), above...), rc, lc, toLeft)...)
	case !n.NullAware && (n.Kind == plan.JoinLeft || n.Kind == plan.JoinSemi || n.Kind == plan.JoinAnti):
		toRight = append(toRight, transferKeyPreds(toLeft, on, lc, rc, toRight)...)
	}
	j := *n
	j.Left = o.push(n.Left, toLeft)
	j.Right = o.push(n.Right, toRight)
	j.Equi, j.Cond = SplitEqui(keepOn, plan.ColSetOf(j.Left.Columns()), plan.ColSetOf(j.Right.Columns()))
	j.Equi = append(append([]plan.EquiCond(nil), pinned...), j.Equi...)
	if j.Kind == plan.JoinLeft {
		if anti, rest, ok := leftToAnti(&j, keepAbove); ok {
			return filterOver(anti, rest)
		}
	}
	if down, ok := pushSingleDown(&j, keepAbove); ok {
		return restoreColumns(down, j.Columns())
	}
	return filterOver(pushSemiDown(&j), keepAbove)
}

// pushSingleDown moves an uncorrelated single join (a scalar subquery
// that does not depend on the row) below an inner join, to the input
// whose columns the filters reading its value compare it with, and those
// filters with it: they then filter that input before the larger join
// (TPC-DS q6: d_month_seq = (SELECT DISTINCT d_month_seq ...) filters
// date_dim, not the join of store_sales with four tables). The subquery
// still runs once and still fails on a second row.
func pushSingleDown(j *plan.JoinNode, above []plan.Expr) (plan.Plan, bool) {
	if j.Kind != plan.JoinSingle || len(j.Equi) > 0 || j.Cond != nil {
		return nil, false
	}
	inner, ok := j.Left.(*plan.JoinNode)
	if !ok || inner.Kind != plan.JoinInner {
		return nil, false
	}
	rc := plan.ColSetOf(j.Right.Columns())
	var mine, rest []plan.Expr
	need := plan.ColSet{}
	for _, e := range above {
		cs := plan.ColsOf(e)
		if !cs.Intersects(rc) {
			rest = append(rest, e)
			continue
		}
		mine = append(mine, e)
		for id := range cs {
			if !rc.Has(id) {
				need.Add(id)
			}
		}
	}
	if len(mine) == 0 || len(need) == 0 {
		return nil, false
	}
	for i, child := range []plan.Plan{inner.Left, inner.Right} {
		if !need.SubsetOf(plan.ColSetOf(child.Columns())) {
			continue
		}
		nj := *j
		nj.Left = child
		down, ok := pushSingleDown(&nj, mine)
		if !ok {
			down = filterOver(&nj, mine)
		}
		ni := *inner
		if i == 0 {
			ni.Left = down
		} else {
			ni.Right = down
		}
		return filterOver(&ni, rest), true
	}
	return nil, false
}

// transferKeyPreds returns, for the predicates preds over the from side
// that read only columns equal (by a conjunct of eqs, "from = to" between
// two plain columns of one type) to columns of the to side, the same
// predicates over those columns, leaving out any already in have. A row
// of the to side whose key fails such a predicate has no partner on the
// from side once preds filter it, so the join loses nothing by dropping
// it first (inner, left-outer from the preserved side, semi and anti
// joins; not a null-aware one, whose NULL keys count). Floating-point
// keys are left alone (0 = -0, yet they differ to some predicates), as
// are predicates with subqueries or random().
func transferKeyPreds(preds, eqs []plan.Expr, from, to plan.ColSet, have []plan.Expr) []plan.Expr {
	m := map[plan.ColumnID]plan.Expr{}
	for _, e := range eqs {
		a, b, ok := columnEquality(e)
		if !ok || arrow.IsFloating(a.Typ.ID()) {
			continue
		}
		if to.Has(a.ID) && from.Has(b.ID) {
			a, b = b, a
		}
		if from.Has(a.ID) && to.Has(b.ID) {
			if _, dup := m[a.ID]; !dup {
				m[a.ID] = b
			}
		}
	}
	if len(m) == 0 {
		return nil
	}
	var out []plan.Expr
next:
	for _, pr := range preds {
		cs := plan.ColsOf(pr)
		if len(cs) == 0 || plan.HasSubquery(pr) || hasRandom(pr) {
			continue
		}
		for id := range cs {
			if _, ok := m[id]; !ok {
				continue next
			}
		}
		d := plan.Substitute(pr, m)
		for _, h := range append(have, out...) {
			if plan.ExprEqual(h, d) {
				continue next
			}
		}
		out = append(out, d)
	}
	return out
}

func hasRandom(e plan.Expr) bool {
	found := false
	plan.WalkExpr(e, func(x plan.Expr) bool {
		if c, ok := x.(*plan.Call); ok && c.Fn == expr.FnRandom {
			found = true
		}
		return !found
	})
	return found
}

// leftToAnti turns a left join under a filter "k IS NULL", where k is a
// right-side column the join matches with "=" (never NULL in a joined
// row), into an anti join: the filter keeps exactly the left rows
// without a match (TPC-DS q78, q80: sales LEFT JOIN returns WHERE the
// return's key IS NULL). The right columns, NULL in every such row, are
// projected as NULL constants under their IDs. It returns the plan and
// the filters that remain.
func leftToAnti(j *plan.JoinNode, filters []plan.Expr) (plan.Plan, []plan.Expr, bool) {
	keys := plan.ColSet{}
	for _, q := range j.Equi {
		if r, ok := q.Right.(*plan.ColRef); ok {
			keys.Add(r.ID)
		}
	}
	at := -1
	for i, f := range filters {
		if c, ok := f.(*plan.Call); ok && c.Fn == plan.FnIsNull && len(c.Args) == 1 {
			if r, ok := c.Args[0].(*plan.ColRef); ok && keys.Has(r.ID) {
				at = i
				break
			}
		}
	}
	if at < 0 {
		return nil, nil, false
	}
	anti := *j
	anti.Kind = plan.JoinAnti
	cols := j.Columns()
	exprs := make([]plan.Expr, len(cols))
	nl := len(j.Left.Columns())
	for i, c := range cols {
		if i < nl {
			exprs[i] = plan.NewColRef(c)
		} else {
			exprs[i] = plan.NullConst(c.Type)
		}
	}
	rest := append(append([]plan.Expr(nil), filters[:at]...), filters[at+1:]...)
	return &plan.ProjectNode{Input: pushSemiDown(&anti), Exprs: exprs, Cols: cols}, rest, true
}

// deriveSide returns, for an OR whose every arm has conjuncts over cols
// only, the OR of those conjuncts: a predicate implied by e that uses cols
// only. It returns nil when some arm says nothing about cols.
func deriveSide(e plan.Expr, cols plan.ColSet) plan.Expr {
	c, ok := e.(*plan.Call)
	if !ok || c.Fn != plan.FnOr {
		return nil
	}
	var arms []plan.Expr
	for _, d := range plan.Disjuncts(e) {
		var parts []plan.Expr
		for _, k := range plan.Conjuncts(d) {
			if cs := plan.ColsOf(k); len(cs) > 0 && cs.SubsetOf(cols) && !plan.HasSubquery(k) {
				parts = append(parts, k)
			}
		}
		if len(parts) == 0 {
			return nil
		}
		arms = append(arms, plan.AndOf(parts))
	}
	return simplify(plan.OrOf(arms))
}

// pushSemiDown moves a semi or anti join below an inner join when it only
// uses columns of one of that join's inputs: it then filters that input
// before the (larger) join (TPC-H Q18's IN subquery filters orders, not
// the orders-lineitem join).
func pushSemiDown(j *plan.JoinNode) plan.Plan {
	if j.Kind != plan.JoinSemi && j.Kind != plan.JoinAnti {
		return j
	}
	inner, ok := j.Left.(*plan.JoinNode)
	if !ok || inner.Kind != plan.JoinInner {
		return j
	}
	need := plan.ColSet{}
	for _, e := range plan.NodeExprs(j) {
		plan.ExprCols(e, need)
	}
	for i, child := range []plan.Plan{inner.Left, inner.Right} {
		cc := plan.ColSetOf(child.Columns())
		used := plan.ColSet{}
		for id := range need {
			if plan.ColSetOf(inner.Columns()).Has(id) {
				used.Add(id)
			}
		}
		if len(used) > 0 && used.SubsetOf(cc) {
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

// SplitEqui separates equalities between the two sides (join keys, left
// expression first) from the residual condition.
func SplitEqui(conds []plan.Expr, lc, rc plan.ColSet) ([]plan.EquiCond, plan.Expr) {
	var equi []plan.EquiCond
	var rest []plan.Expr
	for _, e := range conds {
		if c, ok := e.(*plan.Call); ok && c.Fn == plan.FnEq {
			a, b := plan.ColsOf(c.Args[0]), plan.ColsOf(c.Args[1])
			if len(a) > 0 && len(b) > 0 && !plan.HasSubquery(e) {
				switch {
				case a.SubsetOf(lc) && b.SubsetOf(rc):
					equi = append(equi, plan.EquiCond{Left: c.Args[0], Right: c.Args[1]})
					continue
				case a.SubsetOf(rc) && b.SubsetOf(lc):
					equi = append(equi, plan.EquiCond{Left: c.Args[1], Right: c.Args[0]})
					continue
				}
			}
		}
		rest = append(rest, e)
	}
	return equi, plan.AndOf(rest)
}

// filterShared gives a shared subplan (a CTE read twice or more) the OR
// of the filters over its scans when every scan of it is filtered: rows
// that no reader keeps are not made (TPC-DS q4, q11, q74: each reader of
// year_total takes one channel and one year). Readers keep their own
// filters. Scans inside other shared subplans are not seen here, so
// their defs are left as they are.
func filterShared(root plan.Plan) {
	total := map[*plan.SharedDef]int{}
	plan.WalkPlanDeep(root, func(n plan.Plan) {
		if s, ok := n.(*plan.SharedScan); ok {
			total[s.Def]++
		}
	})
	preds := map[*plan.SharedDef][]plan.Expr{}
	plan.WalkPlan(root, func(n plan.Plan) bool {
		f, ok := n.(*plan.FilterNode)
		if !ok {
			return true
		}
		s, ok := f.Input.(*plan.SharedScan)
		if !ok || plan.HasSubquery(f.Cond) || hasRandom(f.Cond) {
			return true
		}
		defCols := s.Def.Plan.Columns()
		m := map[plan.ColumnID]plan.Expr{}
		for i, c := range s.Cols {
			m[c.ID] = plan.NewColRef(defCols[i])
		}
		preds[s.Def] = append(preds[s.Def], plan.Substitute(f.Cond, m))
		return true
	})
	for d, ps := range preds {
		if len(ps) != total[d] {
			continue
		}
		cond := simplify(plan.OrOf(ps))
		if k, ok := cond.(*plan.Const); ok && k.Val == true {
			continue
		}
		d.Plan = &plan.FilterNode{Input: d.Plan, Cond: cond}
	}
}
