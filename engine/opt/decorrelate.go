package opt

import (
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/internal/nferr"
)

var ruleDecorrelate = &Rule{
	Name:     RuleDecorrelate,
	Shapes:   "subqueries (scalar, IN, EXISTS, correlated or not) become joins; required: subqueries only run as joins",
	Required: true,
	apply:    func(o *optimizer, p plan.Plan) (plan.Plan, error) { return o.decorrelate(p) },
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
// group keys, equalities only). A scalar subquery whose aggregate sits
// above other correlated predicates is evaluated once per distinct outer
// value instead (decorrelate_domain.go). Other shapes (a correlated
// reference below a LIMIT, a window or a set operation, or two levels
// out) are evaluated row by row (apply.go).
func (o *optimizer) decorrelate(p plan.Plan) (plan.Plan, error) {
	var err error
	out := plan.MapPlan(p, func(n plan.Plan) plan.Plan {
		if err != nil {
			return n
		}
		var r plan.Plan
		r, err = o.decorrelateNode(n)
		return r
	})
	return out, err
}

func (o *optimizer) decorrelateNode(n plan.Plan) (plan.Plan, error) {
	if j, ok := n.(*plan.JoinNode); ok && j.Lateral {
		return o.lateral(j)
	}
	switch x := n.(type) {
	case *plan.FilterNode:
		if !plan.HasSubquery(x.Cond) {
			return n, nil
		}
		input := x.Input
		var rest []plan.Expr
		for _, c := range plan.Conjuncts(inOverOneRow(x.Cond)) {
			not := false
			inner := c
			if call, ok := c.(*plan.Call); ok && call.Fn == plan.FnNot {
				if s, ok := call.Args[0].(*plan.SubqueryExpr); ok && s.Kind != plan.SubScalar {
					not, inner = true, s
				}
			}
			if s, ok := inner.(*plan.SubqueryExpr); ok && s.Kind != plan.SubScalar && !plan.HasSubquery(s.X) {
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
		return &plan.FilterNode{Input: input, Cond: plan.AndOf(rest)}, nil
	case *plan.ProjectNode:
		input := x.Input
		exprs := make([]plan.Expr, len(x.Exprs))
		changed := false
		for i, e := range x.Exprs {
			if !plan.HasSubquery(e) {
				exprs[i] = e
				continue
			}
			in, ne, err := o.rewriteSubqueries(input, inOverOneRow(e))
			if err != nil {
				return nil, err
			}
			input, exprs[i], changed = in, ne, true
		}
		if !changed {
			return n, nil
		}
		return &plan.ProjectNode{Input: input, Exprs: exprs, Cols: x.Cols}, nil
	}
	if j, ok := n.(*plan.JoinNode); ok && j.Kind == plan.JoinInner && j.Cond != nil && plan.HasSubquery(j.Cond) {
		// An inner join's ON is a filter over its product: the conjuncts
		// holding subqueries move above the join and are rewritten there.
		var keep, sub []plan.Expr
		for _, c := range plan.Conjuncts(j.Cond) {
			if plan.HasSubquery(c) {
				sub = append(sub, c)
			} else {
				keep = append(keep, c)
			}
		}
		nj := *j
		nj.Cond = plan.AndOf(keep)
		return o.decorrelateNode(&plan.FilterNode{Input: &nj, Cond: plan.AndOf(sub)})
	}
	if j, ok := n.(*plan.JoinNode); ok && (j.Kind == plan.JoinLeft || j.Kind == plan.JoinRight) && j.Cond != nil && plan.HasSubquery(j.Cond) {
		// An outer join's ON conjunct over the inner (null-filled) side
		// alone filters that side before the join.
		inner, preserved := &j.Right, j.Left
		if j.Kind == plan.JoinRight {
			inner, preserved = &j.Left, j.Right
		}
		pcols := plan.ColSetOf(preserved.Columns())
		var keep, push []plan.Expr
		for _, c := range plan.Conjuncts(j.Cond) {
			if plan.HasSubquery(c) && !plan.ColsOf(c).Intersects(pcols) {
				push = append(push, c)
			} else {
				keep = append(keep, c)
			}
		}
		if len(push) > 0 {
			side, err := o.decorrelateNode(&plan.FilterNode{Input: *inner, Cond: plan.AndOf(push)})
			if err != nil {
				return nil, err
			}
			nj := *j
			nj.Cond = plan.AndOf(keep)
			if j.Kind == plan.JoinLeft {
				nj.Right = side
			} else {
				nj.Left = side
			}
			if plan.HasSubquery(nj.Cond) {
				return o.decorrelateNode(&nj)
			}
			return &nj, nil
		}
	}
	if j, ok := n.(*plan.JoinNode); ok && (j.Kind == plan.JoinLeft || j.Kind == plan.JoinRight) && j.Cond != nil && readsBothSides(j) {
		return o.outerJoinByRowID(j)
	}
	if j, ok := n.(*plan.JoinNode); ok && j.Kind == plan.JoinFull && (j.Cond != nil && readsBothSides(j) || !hasCrossEquality(j)) {
		// Also a FULL JOIN without an equality between its sides: a hash
		// join needs one, and a nested loop cannot tell which right rows
		// found no match across its streams.
		return o.fullJoinByRowID(j)
	}
	if j, ok := n.(*plan.JoinNode); ok && j.Cond != nil && plan.HasSubquery(j.Cond) {
		// A subquery reading one side's columns only (or none) is a value
		// of that side's rows: computed there, as a column the condition
		// reads.
		lc, rc := plan.ColSetOf(j.Left.Columns()), plan.ColSetOf(j.Right.Columns())
		nj := *j
		var cond []plan.Expr
		for _, c := range plan.Conjuncts(j.Cond) {
			if !plan.HasSubquery(c) {
				cond = append(cond, c)
				continue
			}
			// Each subquery is computed on the side whose columns it
			// reads (the left one when it reads none).
			var err error
			c = plan.MapExpr(c, func(x plan.Expr) plan.Expr {
				sq, ok := x.(*plan.SubqueryExpr)
				if !ok || err != nil {
					return x
				}
				cs := plan.ColsOf(sq)
				v := x
				switch {
				case cs.SubsetOf(lc):
					nj.Left, _, err = o.computeBelow(nj.Left, []*plan.Expr{&v})
				case cs.SubsetOf(rc):
					nj.Right, _, err = o.computeBelow(nj.Right, []*plan.Expr{&v})
				default:
					err = nferr.Internalf("subquery %d in a join's ON reads columns of both sides: not rewritten", sq.ID)
				}
				return v
			})
			if err != nil {
				return nil, err
			}
			cond = append(cond, c)
		}
		nj.Cond = plan.AndOf(cond)
		return &nj, nil
	}
	// GROUP BY expressions, aggregate and window arguments and sort keys
	// holding subqueries are computed below their node, as columns.
	var input, out plan.Plan
	var setInput func(plan.Plan)
	var slots []*plan.Expr
	switch x := n.(type) {
	case *plan.AggregateNode:
		c := *x
		c.Groups = append([]plan.Expr(nil), x.Groups...)
		for i := range c.Groups {
			slots = append(slots, &c.Groups[i])
		}
		c.Aggs = make([]*plan.AggCall, len(x.Aggs))
		for i, a := range x.Aggs {
			ac := *a
			if ac.Arg != nil {
				slots = append(slots, &ac.Arg)
			}
			if ac.Filter != nil {
				slots = append(slots, &ac.Filter)
			}
			c.Aggs[i] = &ac
		}
		input, out, setInput = x.Input, &c, func(p plan.Plan) { c.Input = p }
	case *plan.WindowNode:
		c := *x
		c.Funcs = make([]*plan.WindowCall, len(x.Funcs))
		for i, w := range x.Funcs {
			wc := *w
			wc.Args = append([]plan.Expr(nil), w.Args...)
			wc.PartitionBy = append([]plan.Expr(nil), w.PartitionBy...)
			var ks []*plan.Expr
			wc.OrderBy, ks = keySlots(w.OrderBy)
			slots = append(append(append(slots, exprSlots(wc.Args)...), exprSlots(wc.PartitionBy)...), ks...)
			c.Funcs[i] = &wc
		}
		input, out, setInput = x.Input, &c, func(p plan.Plan) { c.Input = p }
	case *plan.SortNode:
		c := *x
		c.Keys, slots = keySlots(x.Keys)
		input, out, setInput = x.Input, &c, func(p plan.Plan) { c.Input = p }
	case *plan.TopNNode:
		c := *x
		c.Keys, slots = keySlots(x.Keys)
		input, out, setInput = x.Input, &c, func(p plan.Plan) { c.Input = p }
	case *plan.UnnestNode:
		// unnest((SELECT array_agg(...) ...)): the arrays computed below.
		c := *x
		c.Arrays = append([]plan.Expr(nil), x.Arrays...)
		slots = exprSlots(c.Arrays)
		input, out, setInput = x.Input, &c, func(p plan.Plan) { c.Input = p }
	}
	if out != nil {
		in, changed, err := o.computeBelow(input, slots)
		if err != nil {
			return nil, err
		}
		if changed {
			// NB: a sort's output keeps the computed columns; the nodes
			// above read theirs by ID.
			setInput(in)
			return out, nil
		}
	}
	for _, e := range plan.NodeExprs(n) {
		if plan.HasSubquery(e) {
			return nil, nferr.Queryf("subqueries are not supported in %s", nodeName(n))
		}
	}
	return n, nil
}

// hasCrossEquality reports whether j has an equality between an
// expression of its left side and one of its right side (a hash join key).
func hasCrossEquality(j *plan.JoinNode) bool {
	if len(j.Equi) > 0 {
		return true
	}
	lc, rc := plan.ColSetOf(j.Left.Columns()), plan.ColSetOf(j.Right.Columns())
	for _, c := range plan.Conjuncts(j.Cond) {
		call, ok := c.(*plan.Call)
		if !ok || call.Fn != plan.FnEq || plan.HasSubquery(call) {
			continue
		}
		a, b := plan.ColsOf(call.Args[0]), plan.ColsOf(call.Args[1])
		if len(a) > 0 && len(b) > 0 && (a.SubsetOf(lc) && b.SubsetOf(rc) || a.SubsetOf(rc) && b.SubsetOf(lc)) {
			return true
		}
	}
	return false
}

// readsBothSides reports whether a subquery in j's ON reads columns of
// both of j's inputs.
func readsBothSides(j *plan.JoinNode) bool {
	lc, rc := plan.ColSetOf(j.Left.Columns()), plan.ColSetOf(j.Right.Columns())
	both := false
	plan.WalkExpr(j.Cond, func(x plan.Expr) bool {
		if sq, ok := x.(*plan.SubqueryExpr); ok {
			cs := plan.ColsOf(sq)
			both = both || cs.Intersects(lc) && cs.Intersects(rc)
			return false
		}
		return !both
	})
	return both
}

// outerJoinByRowID rewrites an outer join whose ON holds a subquery that
// reads both sides. The ON is a filter over the pairs of rows, so the
// pairs that match are an inner join, which decorrelates like any filter;
// the outer join then only has to add the preserved rows without a match.
// The preserved side P is numbered (a shared subplan; both reads see the
// same numbers) and
//
//	P LEFT JOIN I ON cond
//	  = P' LEFT JOIN (SELECT rid, I.* FROM P'' JOIN I ON cond) m ON P'.rid = m.rid
//
// where P' and P” read the numbered P (P” under P's column IDs, which
// cond reads; P' under fresh ones, renamed back to P's above the join).
func (o *optimizer) outerJoinByRowID(j *plan.JoinNode) (plan.Plan, error) {
	preserved, inner := j.Left, j.Right
	if j.Kind == plan.JoinRight {
		preserved, inner = j.Right, j.Left
	}
	pcols := preserved.Columns()
	rid := o.newCol("rid", plan.TypInt64, false)
	// NB: numbered in the order of all of P's columns, so that every
	// evaluation of the shared subplan (a cluster may compute it in each
	// stage that reads it) pairs the same rows with the same numbers:
	// rows tied in that order are equal, and which of them gets which
	// number changes nothing.
	def := o.numbered(preserved, rid)
	// The pairs that match: an inner join (its ON becomes a filter).
	var inLeft, inRight plan.Plan = &plan.SharedScan{Def: def, Cols: append(append([]plan.Column(nil), pcols...), rid)}, inner
	if j.Kind == plan.JoinRight {
		inLeft, inRight = inRight, inLeft
	}
	matched, err := o.decorrelateNode(&plan.JoinNode{Kind: plan.JoinInner, Left: inLeft, Right: inRight, Cond: j.Cond})
	if err != nil {
		return nil, err
	}
	icols := inner.Columns()
	mexprs := []plan.Expr{plan.NewColRef(rid)}
	for _, c := range icols {
		mexprs = append(mexprs, plan.NewColRef(c))
	}
	m := &plan.ProjectNode{Input: matched, Exprs: mexprs, Cols: append([]plan.Column{rid}, icols...)}
	// The preserved rows, under fresh IDs, joined to their matches.
	fresh := o.freshCopies(append(append([]plan.Column(nil), pcols...), rid))
	on := plan.NewCall(plan.FnEq, plan.TypBool, plan.NewColRef(fresh[len(pcols)]), plan.NewColRef(rid))
	var out plan.Plan
	if j.Kind == plan.JoinLeft {
		out = &plan.JoinNode{Kind: plan.JoinLeft, Left: &plan.SharedScan{Def: def, Cols: fresh}, Right: m, Cond: on}
	} else {
		out = &plan.JoinNode{Kind: plan.JoinRight, Left: m, Right: &plan.SharedScan{Def: def, Cols: fresh}, Cond: on}
	}
	// Back to the join's columns: P's under their IDs, I's as they are.
	rename := map[plan.ColumnID]plan.ColumnID{}
	for i, c := range pcols {
		rename[c.ID] = fresh[i].ID
	}
	var exprs []plan.Expr
	for _, c := range j.Columns() {
		ref := plan.NewColRef(c)
		if id, ok := rename[c.ID]; ok {
			ref.ID = id
		}
		exprs = append(exprs, ref)
	}
	return &plan.ProjectNode{Input: out, Exprs: exprs, Cols: j.Columns()}, nil
}

// numbered is p with its rows numbered in rid, as a shared subplan.
func (o *optimizer) numbered(p plan.Plan, rid plan.Column) *plan.SharedDef {
	var keys []plan.SortKey
	for _, c := range p.Columns() {
		keys = append(keys, plan.SortKey{Expr: plan.NewColRef(c)})
	}
	return &plan.SharedDef{ID: o.newDefID(), Name: "outer join rows",
		Plan: &plan.WindowNode{Input: p, Funcs: []*plan.WindowCall{{Fn: "row_number", OrderBy: keys, Typ: plan.TypInt64}}, FuncCols: []plan.Column{rid}}}
}

// freshCopies are new columns like cols (names, types, tables).
func (o *optimizer) freshCopies(cols []plan.Column) []plan.Column {
	out := make([]plan.Column, len(cols))
	for i, c := range cols {
		out[i] = o.newCol(c.Name, c.Type, c.Nullable)
		out[i].Table = c.Table
	}
	return out
}

// fullJoinByRowID is outerJoinByRowID for a FULL JOIN: both sides are
// numbered, the matching pairs (an inner join, decorrelated) are shared,
// and
//
//	L FULL JOIN R ON cond
//	  = SELECT L'.*, m.R* FROM L' LEFT JOIN m ON L'.lrid = m.lrid
//	    UNION ALL SELECT NULL..., R'.* FROM R' WHERE NOT EXISTS (m with R'.rrid)
//
// with m = SELECT lrid, rrid, R.* FROM L” JOIN R” ON cond.
func (o *optimizer) fullJoinByRowID(j *plan.JoinNode) (plan.Plan, error) {
	lcols, rcols := j.Left.Columns(), j.Right.Columns()
	lrid, rrid := o.newCol("lrid", plan.TypInt64, false), o.newCol("rrid", plan.TypInt64, false)
	defL, defR := o.numbered(j.Left, lrid), o.numbered(j.Right, rrid)
	matched, err := o.decorrelateNode(&plan.JoinNode{Kind: plan.JoinInner,
		Left:  &plan.SharedScan{Def: defL, Cols: append(append([]plan.Column(nil), lcols...), lrid)},
		Right: &plan.SharedScan{Def: defR, Cols: append(append([]plan.Column(nil), rcols...), rrid)},
		Cond:  j.Cond})
	if err != nil {
		return nil, err
	}
	mcols := append([]plan.Column{lrid, rrid}, rcols...)
	var mexprs []plan.Expr
	for _, c := range mcols {
		mexprs = append(mexprs, plan.NewColRef(c))
	}
	defM := &plan.SharedDef{ID: o.newDefID(), Name: "outer join matches", Plan: &plan.ProjectNode{Input: matched, Exprs: mexprs, Cols: mcols}}
	refs := func(cols []plan.Column) []plan.Expr {
		out := make([]plan.Expr, len(cols))
		for i, c := range cols {
			out[i] = plan.NewColRef(c)
		}
		return out
	}
	// The left rows with their matches, or NULLs.
	l1 := o.freshCopies(append(append([]plan.Column(nil), lcols...), lrid))
	m1 := o.freshCopies(mcols)
	left := &plan.JoinNode{Kind: plan.JoinLeft, Left: &plan.SharedScan{Def: defL, Cols: l1}, Right: &plan.SharedScan{Def: defM, Cols: m1},
		Cond: plan.NewCall(plan.FnEq, plan.TypBool, plan.NewColRef(l1[len(lcols)]), plan.NewColRef(m1[0]))}
	x := append(refs(l1[:len(lcols)]), refs(m1[2:])...)
	xcols := o.freshCopies(j.Columns())
	partX := &plan.ProjectNode{Input: left, Exprs: x, Cols: xcols}
	// The right rows without a match.
	r2 := o.freshCopies(append(append([]plan.Column(nil), rcols...), rrid))
	m2 := o.freshCopies(mcols)
	anti := &plan.JoinNode{Kind: plan.JoinAnti, Left: &plan.SharedScan{Def: defR, Cols: r2}, Right: &plan.SharedScan{Def: defM, Cols: m2},
		Cond: plan.NewCall(plan.FnEq, plan.TypBool, plan.NewColRef(r2[len(rcols)]), plan.NewColRef(m2[1]))}
	var y []plan.Expr
	for _, c := range lcols {
		y = append(y, plan.NullConst(c.Type))
	}
	y = append(y, refs(r2[:len(rcols)])...)
	partY := &plan.ProjectNode{Input: anti, Exprs: y, Cols: o.freshCopies(j.Columns())}
	return &plan.SetOpNode{Kind: plan.SetUnion, All: true, Left: partX, Right: partY, Cols: j.Columns()}, nil
}

// newDefID is an ID for a shared subplan the optimizer makes (EXPLAIN
// names shared subplans by it), above every ID the plan uses.
func (o *optimizer) newDefID() int {
	if o.nextDef == 0 {
		plan.WalkPlanDeep(o.root, func(n plan.Plan) {
			if s, ok := n.(*plan.SharedScan); ok {
				o.nextDef = max(o.nextDef, s.Def.ID)
			}
		})
	}
	o.nextDef++
	return o.nextDef
}

// keySlots copies keys, with the slots of their expressions.
func keySlots(keys []plan.SortKey) ([]plan.SortKey, []*plan.Expr) {
	c := append([]plan.SortKey(nil), keys...)
	slots := make([]*plan.Expr, len(c))
	for i := range c {
		slots[i] = &c[i].Expr
	}
	return c, slots
}

func exprSlots(es []plan.Expr) []*plan.Expr {
	out := make([]*plan.Expr, len(es))
	for i := range es {
		out[i] = &es[i]
	}
	return out
}

// computeBelow computes the expressions of slots that hold subqueries
// over input, in a projection (decorrelated) that keeps input's columns
// and adds one per such expression, which it writes into its slot as a
// reference to its column; it returns that plan, and whether there was any.
func (o *optimizer) computeBelow(input plan.Plan, slots []*plan.Expr) (plan.Plan, bool, error) {
	cols := append([]plan.Column(nil), input.Columns()...)
	exprs := plan.ColRefs(cols)
	for _, sl := range slots {
		if !plan.HasSubquery(*sl) {
			continue
		}
		c := o.newCol("subquery", (*sl).Type(), true)
		cols = append(cols, c)
		exprs = append(exprs, *sl)
		*sl = plan.NewColRef(c)
	}
	if len(cols) == len(input.Columns()) {
		return input, false, nil
	}
	p, err := o.decorrelateNode(&plan.ProjectNode{Input: input, Exprs: exprs, Cols: cols})
	return p, true, err
}

func nodeName(n plan.Plan) string {
	switch n.(type) {
	case *plan.JoinNode:
		return "JOIN conditions"
	case *plan.AggregateNode:
		return "GROUP BY or aggregate arguments"
	case *plan.SortNode, *plan.TopNNode:
		return "ORDER BY"
	case *plan.WindowNode:
		return "window functions"
	case *plan.ValuesNode:
		return "VALUES"
	}
	return "this position"
}

// subPlan returns a subquery's plan with its own subqueries decorrelated.
func (o *optimizer) subPlan(s *plan.SubqueryExpr) (plan.Plan, error) {
	return o.decorrelate(s.Plan)
}

// semiJoin turns a conjunct [NOT] EXISTS / [NOT] IN into a semi or anti join.
func (o *optimizer) semiJoin(input plan.Plan, s *plan.SubqueryExpr, not bool) (plan.Plan, error) {
	lp, err := o.subPlan(s)
	if err != nil {
		return nil, err
	}
	inEqui, lp, oneRow := existsShape(s, lp)
	if oneRow {
		if not {
			return &plan.FilterNode{Input: input, Cond: plan.BoolConst(false)}, nil
		}
		return input, nil
	}
	right, preds, err := o.pullCorrelated(lp, plan.ColSetOf(input.Columns()), s)
	if applyFallback(err) {
		in, v := o.apply(input, s, lp)
		if not {
			v = plan.NewCall(plan.FnNot, plan.TypBool, v)
		}
		return &plan.FilterNode{Input: in, Cond: v}, nil
	}
	if err != nil {
		return nil, err
	}
	kind := plan.JoinSemi
	if not {
		kind = plan.JoinAnti
	}
	j := &plan.JoinNode{Kind: kind, Left: input, Right: right, Equi: inEqui, Cond: plan.AndOf(preds)}
	if not && s.Kind == plan.SubIn {
		j.NullAware = true
	}
	return j, nil
}

// inOverOneRow rewrites x [NOT] IN (q), q correlated and returning exactly
// one row (an aggregate without GROUP BY), as x = (q): the same value,
// NULLs included, so that the scalar subquery's rewrites (the domain one
// among them) apply.
func inOverOneRow(e plan.Expr) plan.Expr {
	return plan.MapExpr(e, func(x plan.Expr) plan.Expr {
		s, ok := x.(*plan.SubqueryExpr)
		if !ok || s.Kind != plan.SubIn || len(s.Outer) == 0 || !alwaysOneRow(stripProjects(s.Plan)) {
			return x
		}
		col := s.Plan.Columns()[0]
		t, ok := plan.CommonType(col.Type, s.X.Type())
		if !ok {
			return x
		}
		sc := *s
		sc.Kind, sc.X, sc.Typ = plan.SubScalar, nil, col.Type
		l, err1 := plan.Coerce(s.X, t)
		r, err2 := plan.Coerce(&sc, t)
		if err1 != nil || err2 != nil {
			return x
		}
		return plan.NewCall(plan.FnEq, plan.TypBool, l, r)
	})
}

// existsShape prepares the plan lp of a [NOT] EXISTS or IN subquery for a
// semi, anti or mark join: IN's equality, or EXISTS's plan without its
// projections; oneRow reports an EXISTS over an aggregate without GROUP BY,
// which is always true.
func existsShape(s *plan.SubqueryExpr, lp plan.Plan) (inEqui []plan.EquiCond, out plan.Plan, oneRow bool) {
	if s.Kind == plan.SubIn {
		return []plan.EquiCond{{Left: s.X, Right: plan.NewColRef(lp.Columns()[0])}}, lp, false
	}
	lp = stripProjects(lp)
	return nil, lp, alwaysOneRow(lp)
}

// stripProjects removes projections on top of an EXISTS subquery: only
// the existence of rows matters.
func stripProjects(p plan.Plan) plan.Plan {
	for {
		pr, ok := p.(*plan.ProjectNode)
		if !ok || plan.HasSubquery(plan.AndOf(pr.Exprs)) {
			return p
		}
		p = pr.Input
	}
}

// alwaysOneRow reports a plan that returns exactly one row whatever its
// input (an aggregate without GROUP BY).
func alwaysOneRow(p plan.Plan) bool {
	a, ok := p.(*plan.AggregateNode)
	return ok && len(a.Groups) == 0
}

// rewriteSubqueries replaces the subqueries in e (evaluated over input) by
// columns of joins added on top of input.
func (o *optimizer) rewriteSubqueries(input plan.Plan, e plan.Expr) (plan.Plan, plan.Expr, error) {
	var err error
	out := plan.MapExpr(e, func(x plan.Expr) plan.Expr {
		s, ok := x.(*plan.SubqueryExpr)
		if !ok || err != nil {
			return x
		}
		var r plan.Expr
		input, r, err = o.rewriteOne(input, s)
		return r
	})
	return input, out, err
}

func (o *optimizer) rewriteOne(input plan.Plan, s *plan.SubqueryExpr) (plan.Plan, plan.Expr, error) {
	lp, err := o.subPlan(s)
	if err != nil {
		return nil, nil, err
	}
	inputCols := plan.ColSetOf(input.Columns())
	if s.Kind != plan.SubScalar {
		// A mark join: the mark column is the predicate's value.
		inEqui, lp, oneRow := existsShape(s, lp)
		if oneRow {
			return input, plan.BoolConst(true), nil
		}
		right, preds, err := o.pullCorrelated(lp, inputCols, s)
		if applyFallback(err) {
			in, v := o.apply(input, s, lp)
			return in, v, nil
		}
		if err != nil {
			return nil, nil, err
		}
		mark := o.newCol("mark", plan.TypBool, s.Kind == plan.SubIn)
		j := &plan.JoinNode{Kind: plan.JoinMark, Left: input, Right: right, Equi: inEqui, Cond: plan.AndOf(preds), Mark: &mark, NullAware: s.Kind == plan.SubIn}
		return j, plan.NewColRef(mark), nil
	}
	// Scalar: the top projection is evaluated above the join.
	top := plan.Expr(plan.NewColRef(lp.Columns()[0]))
	below := lp
	if pr, ok := lp.(*plan.ProjectNode); ok && len(pr.Exprs) == 1 {
		top, below = pr.Exprs[0], pr.Input
	}
	if !plan.FreeCols(below).Intersects(inputCols) {
		if !plan.ColsOf(top).Intersects(inputCols) {
			// Uncorrelated: a single join with the whole subquery.
			return &plan.JoinNode{Kind: plan.JoinSingle, Left: input, Right: lp}, plan.NewColRef(lp.Columns()[0]), nil
		}
		below, top = o.presentMarker(below, top)
		return &plan.JoinNode{Kind: plan.JoinSingle, Left: input, Right: below}, top, nil
	}
	right, preds, err := o.pullCorrelated(below, inputCols, s)
	if err != nil {
		if j, t, ok := o.domainScalar(input, below, top, inputCols); ok {
			return j, t, nil
		}
		if applyFallback(err) {
			in, v := o.apply(input, s, lp)
			return in, v, nil
		}
		return nil, nil, err
	}
	kind := plan.JoinSingle
	if agg, ok := right.(*plan.AggregateNode); ok && groupedByEquiKeys(agg, preds, inputCols) {
		// Grouping on the join keys makes matches unique: a plain left join.
		kind = plan.JoinLeft
		top = countOfNothing(agg, top)
	} else {
		right, top = o.presentMarker(right, top)
	}
	return &plan.JoinNode{Kind: kind, Left: input, Right: right, Cond: plan.AndOf(preds)}, top, nil
}

// countOfNothing fixes the count bug in top, evaluated above a left join
// with agg: an absent group means count 0, not NULL.
func countOfNothing(agg *plan.AggregateNode, top plan.Expr) plan.Expr {
	m := map[plan.ColumnID]plan.Expr{}
	for i, a := range agg.Aggs {
		if a.Fn == plan.AggCount || a.Fn == plan.AggCountStar {
			c := agg.AggCols[i]
			m[c.ID] = plan.NewCall(plan.FnCoalesce, c.Type, plan.NewColRef(c), &plan.Const{Typ: plan.TypInt64, Val: int64(0)})
		}
	}
	return plan.Substitute(top, m)
}

// innerSide is the argument (0 or 1) of the correlated equality c that is
// over the inner columns, the other being over the outer ones; false when c
// is not such an equality.
func innerSide(c *plan.Call, inner, outer plan.ColSet) (int, bool) {
	if c.Fn != plan.FnEq {
		return 0, false
	}
	for i := 0; i < 2; i++ {
		if ic := plan.ColsOf(c.Args[i]); len(ic) > 0 && ic.SubsetOf(inner) && plan.ColsOf(c.Args[1-i]).SubsetOf(outer) {
			return i, true
		}
	}
	return 0, false
}

// presentMarker makes a scalar subquery's top expression, evaluated above
// the join, NULL when the subquery had no row: when top is not NULL
// whenever the right side's columns are (a constant, an outer column,
// COALESCE), the right side gets a TRUE "present" column and top becomes
// CASE WHEN present THEN top END.
func (o *optimizer) presentMarker(right plan.Plan, top plan.Expr) (plan.Plan, plan.Expr) {
	rc := right.Columns()
	if strictCols(top).Intersects(plan.ColSetOf(rc)) {
		return right, top
	}
	present := o.newCol("present", plan.TypBool, false)
	exprs := make([]plan.Expr, 0, len(rc)+1)
	for _, c := range rc {
		exprs = append(exprs, plan.NewColRef(c))
	}
	exprs = append(exprs, plan.BoolConst(true))
	right = &plan.ProjectNode{Input: right, Exprs: exprs, Cols: append(append([]plan.Column(nil), rc...), present)}
	return right, &plan.CaseExpr{Whens: []plan.Expr{plan.NewColRef(present)}, Thens: []plan.Expr{top}, Typ: top.Type()}
}

// groupedByEquiKeys reports whether every group key of agg is equated by
// preds to an expression over the outer columns, so each outer row matches
// at most one group.
func groupedByEquiKeys(agg *plan.AggregateNode, preds []plan.Expr, outer plan.ColSet) bool {
	keyed := plan.ColSet{}
	for _, p := range preds {
		c, ok := p.(*plan.Call)
		if !ok || c.Fn != plan.FnEq {
			continue
		}
		for i := 0; i < 2; i++ {
			if r, ok := c.Args[i].(*plan.ColRef); ok && plan.ColsOf(c.Args[1-i]).SubsetOf(outer) {
				keyed.Add(r.ID)
			}
		}
	}
	for _, g := range agg.GroupCols {
		if !keyed.Has(g.ID) {
			return false
		}
	}
	return len(agg.GroupCols) > 0
}

// pullCorrelated removes the predicates of p that refer to outer columns
// and returns them, with p changed to output every inner column they use.
func (o *optimizer) pullCorrelated(p plan.Plan, outer plan.ColSet, s *plan.SubqueryExpr) (plan.Plan, []plan.Expr, error) {
	out, preds, err := o.pull(p, outer)
	if err != nil {
		return nil, nil, nferr.Queryf("subquery %d: %v", s.ID, err)
	}
	if plan.FreeCols(out).Intersects(outer) {
		return nil, nil, nferr.Queryf("subquery %d: this form of correlated subquery is not supported (an outer column is used where it cannot be pulled up)", s.ID)
	}
	return out, preds, nil
}

func refsOuter(e plan.Expr, outer plan.ColSet) bool { return plan.ColsOf(e).Intersects(outer) }

func (o *optimizer) pull(p plan.Plan, outer plan.ColSet) (plan.Plan, []plan.Expr, error) {
	if !plan.FreeCols(p).Intersects(outer) {
		return p, nil, nil
	}
	switch n := p.(type) {
	case *plan.FilterNode:
		in, preds, err := o.pull(n.Input, outer)
		if err != nil {
			return nil, nil, err
		}
		var keep []plan.Expr
		for _, c := range plan.Conjuncts(n.Cond) {
			if refsOuter(c, outer) {
				if plan.HasSubquery(c) {
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
		return &plan.FilterNode{Input: in, Cond: plan.AndOf(keep)}, preds, nil
	case *plan.ProjectNode:
		for _, e := range n.Exprs {
			if refsOuter(e, outer) {
				return nil, nil, errString("an outer column is used in a select list below the top of the subquery")
			}
		}
		in, preds, err := o.pull(n.Input, outer)
		if err != nil {
			return nil, nil, err
		}
		exprs, cols := append([]plan.Expr(nil), n.Exprs...), append([]plan.Column(nil), n.Cols...)
		have := plan.ColSetOf(cols)
		inCols := in.Columns()
		inSet := plan.ColSetOf(inCols)
		for _, pr := range preds {
			for id := range plan.ColsOf(pr) {
				// NB: columns of queries further out stay free references.
				if outer.Has(id) || have.Has(id) || !inSet.Has(id) {
					continue
				}
				c := plan.FindCol(inCols, id)
				exprs = append(exprs, plan.NewColRef(c))
				cols = append(cols, c)
				have.Add(id)
			}
		}
		return &plan.ProjectNode{Input: in, Exprs: exprs, Cols: cols}, preds, nil
	case *plan.JoinNode:
		l, lp, err := o.pull(n.Left, outer)
		if err != nil {
			return nil, nil, err
		}
		r, rp := n.Right, []plan.Expr(nil)
		if n.Kind == plan.JoinInner {
			if r, rp, err = o.pull(n.Right, outer); err != nil {
				return nil, nil, err
			}
		} else if plan.FreeCols(n.Right).Intersects(outer) {
			return nil, nil, errString("an outer column is used on the inner side of an outer, semi or anti join")
		}
		j := *n
		j.Left, j.Right = l, r
		preds := append(lp, rp...)
		if n.Cond != nil && refsOuter(n.Cond, outer) {
			if n.Kind != plan.JoinInner {
				return nil, nil, errString("an outer column is used in an outer join's condition")
			}
			var keep []plan.Expr
			for _, c := range plan.Conjuncts(n.Cond) {
				if refsOuter(c, outer) {
					preds = append(preds, c)
				} else {
					keep = append(keep, c)
				}
			}
			j.Cond = plan.AndOf(keep)
		}
		return &j, preds, nil
	case *plan.AggregateNode:
		for _, e := range plan.NodeExprs(n) {
			if refsOuter(e, outer) {
				return nil, nil, errString("an outer column is used inside an aggregate or GROUP BY")
			}
		}
		in, preds, err := o.pull(n.Input, outer)
		if err != nil {
			return nil, nil, err
		}
		if s, ok := n.Input.(*plan.SortNode); ok {
			// An ordered aggregate's sort (string_agg, array_agg with
			// ORDER BY) stays below it.
			if _, still := in.(*plan.SortNode); !still {
				in = &plan.SortNode{Input: in, Keys: s.Keys}
			}
		}
		agg := *n
		agg.Input = in
		agg.Groups = append([]plan.Expr(nil), n.Groups...)
		agg.GroupCols = append([]plan.Column(nil), n.GroupCols...)
		inCols := in.Columns()
		var out []plan.Expr
		for _, pr := range preds {
			c, ok := pr.(*plan.Call)
			if !ok || c.Fn != plan.FnEq {
				return nil, nil, errString("a correlated predicate below an aggregate must be an equality (inner = outer)")
			}
			innerIdx := -1
			inSet := plan.ColSetOf(inCols)
			for i := 0; i < 2; i++ {
				if ic := plan.ColsOf(c.Args[i]); len(ic) > 0 && ic.SubsetOf(inSet) && plan.ColsOf(c.Args[1-i]).SubsetOf(outer) {
					innerIdx = i
				}
			}
			if innerIdx < 0 {
				return nil, nil, errString("a correlated predicate below an aggregate must compare an inner expression with an outer one")
			}
			inner := c.Args[innerIdx]
			var gc plan.Column
			found := false
			for i, g := range agg.Groups {
				if plan.ExprEqual(g, inner) {
					gc, found = agg.GroupCols[i], true
				}
			}
			if !found {
				if r, ok := inner.(*plan.ColRef); ok {
					gc = plan.FindCol(inCols, r.ID)
				} else {
					gc = o.newCol("key", inner.Type(), true)
				}
				agg.Groups = append(agg.Groups, inner)
				agg.GroupCols = append(agg.GroupCols, gc)
			}
			args := []plan.Expr{plan.NewColRef(gc), c.Args[1-innerIdx]}
			if innerIdx == 1 {
				args[0], args[1] = args[1], args[0]
			}
			out = append(out, plan.NewCall(plan.FnEq, plan.TypBool, args...))
		}
		return &agg, out, nil
	}
	switch n := p.(type) {
	case *plan.LimitNode:
		return o.pullLimit(n, outer)
	case *plan.SortNode:
		// Without a LIMIT above it, a subquery's order means nothing.
		for _, k := range n.Keys {
			if refsOuter(k.Expr, outer) {
				return nil, nil, errString("an outer column is used in a subquery's ORDER BY")
			}
		}
		return o.pull(n.Input, outer)
	}
	return nil, nil, errString("an outer column is used below " + planKindName(p) + ", where it cannot be pulled up")
}

// pullLimit pulls correlated equalities up through [ORDER BY ...] LIMIT:
// the limit applies per outer value, so it becomes row_number() over the
// inner sides of the equalities (ordered as the ORDER BY) kept within
// (OFFSET, OFFSET+LIMIT].
func (o *optimizer) pullLimit(n *plan.LimitNode, outer plan.ColSet) (plan.Plan, []plan.Expr, error) {
	input := n.Input
	var keys []plan.SortKey
	if s, ok := input.(*plan.SortNode); ok {
		for _, k := range s.Keys {
			if refsOuter(k.Expr, outer) {
				return nil, nil, errString("an outer column is used in the ORDER BY of a subquery with LIMIT")
			}
		}
		keys, input = s.Keys, s.Input
	}
	in, preds, err := o.pull(input, outer)
	if err != nil {
		return nil, nil, err
	}
	inSet := plan.ColSetOf(in.Columns())
	var parts []plan.Expr
	for _, pr := range preds {
		c, ok := pr.(*plan.Call)
		inner, eq := 0, false
		if ok {
			inner, eq = innerSide(c, inSet, outer)
		}
		if !eq {
			return nil, nil, errString("a correlated predicate below LIMIT must be an equality of an inner expression and an outer one")
		}
		parts = append(parts, c.Args[inner])
	}
	rn := o.newCol("row_number", plan.TypInt64, false)
	w := &plan.WindowNode{Input: in, Funcs: []*plan.WindowCall{{Fn: "row_number", PartitionBy: parts, OrderBy: keys, Typ: plan.TypInt64}}, FuncCols: []plan.Column{rn}}
	cond := plan.Expr(plan.NewCall(plan.FnGt, plan.TypBool, plan.NewColRef(rn), &plan.Const{Typ: plan.TypInt64, Val: n.Offset}))
	if n.Limit >= 0 {
		cond = plan.AndOf([]plan.Expr{cond, plan.NewCall(plan.FnLe, plan.TypBool, plan.NewColRef(rn), &plan.Const{Typ: plan.TypInt64, Val: n.Offset + n.Limit})})
	}
	return &plan.FilterNode{Input: w, Cond: cond}, preds, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func planKindName(p plan.Plan) string {
	switch p.(type) {
	case *plan.SortNode, *plan.LimitNode, *plan.TopNNode:
		return "ORDER BY or LIMIT"
	case *plan.SetOpNode:
		return "a set operation"
	case *plan.WindowNode:
		return "a window function"
	case *plan.DistinctNode:
		return "DISTINCT"
	}
	return "this operator"
}
