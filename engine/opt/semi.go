package opt

import "github.com/nicflow/nicflow/engine/plan"

var ruleSemiLift = &Rule{
	Name:   RuleSemiLift,
	Shapes: "a chain of semi/anti joins under inner joins is lifted above them when the joins filter harder (estimated join work)",
	apply: func(o *optimizer, p plan.Plan) (plan.Plan, error) {
		o.ensureEstimator()
		return o.placeSemiJoins(p), nil
	},
}

var ruleReduceGrouped = &Rule{
	Name:   RuleReduceGrouped,
	Shapes: "a join with a grouped subquery on its keys is first reduced to the keys the other side has, when that cuts the aggregate's input",
	apply: func(o *optimizer, p plan.Plan) (plan.Plan, error) {
		o.ensureEstimator()
		return o.reduceGroupedJoins(p), nil
	},
}

// ensureEstimator gives the cost-based rules an estimator when join_order
// (which makes one) is disabled.
func (o *optimizer) ensureEstimator() {
	if o.est == nil {
		o.est = NewEstimator()
	}
}

// Semi-join placement and grouped-join reduction: cost-based rules that
// run after every other rule (they were the first step of physical
// planning, on the plan the other rules leave).
//
// The optimizer's pushdown rule moves a semi or anti join (EXISTS, IN,
// NOT EXISTS, NOT IN) down to the relation its condition uses, below the
// inner joins of its query: right when the semi join filters hard (TPC-H
// Q18's IN keeps 57 of 1.5M orders), wrong when the inner joins filter
// harder and the semi join must probe (or build on) every row of a large
// relation first (Q21: the EXISTS and NOT EXISTS over lineitem run on 3.8M
// rows of l1 that the joins with one nation's suppliers would cut to 80k).
//
// So, for each inner-join tree whose leaf is a chain of semi/anti joins
// over a relation, the planner also costs the plan with the chain lifted
// to the top of the tree (the inner joins reordered without it) and keeps
// the cheaper: the sum over joins of estimated input and output rows, a
// hash join's work. Lifting is always correct: a semi or anti join only
// keeps or drops rows of its left input by their own values, and inner
// joins above carry each such row through unchanged.
//

// placeSemiJoins returns p with semi/anti join chains lifted where that is
// estimated cheaper.
func (o *optimizer) placeSemiJoins(p plan.Plan) plan.Plan {
	if j, ok := p.(*plan.JoinNode); ok && j.Kind == plan.JoinInner {
		p = o.liftSemis(j)
	}
	in := p.Inputs()
	if len(in) == 0 {
		return p
	}
	changed := false
	nin := make([]plan.Plan, len(in))
	for i, c := range in {
		nin[i] = o.placeSemiJoins(c)
		changed = changed || nin[i] != c
	}
	if !changed {
		return p
	}
	return p.WithInputs(nin)
}

// innerLeaves lists the leaves of the inner-join tree rooted at j.
func innerLeaves(p plan.Plan, out *[]plan.Plan) {
	if j, ok := p.(*plan.JoinNode); ok && j.Kind == plan.JoinInner {
		innerLeaves(j.Left, out)
		innerLeaves(j.Right, out)
		return
	}
	*out = append(*out, p)
}

// semiChain splits a leaf into its chain of semi/anti joins (outermost
// first) and the relation under them.
func semiChain(p plan.Plan) ([]*plan.JoinNode, plan.Plan) {
	var chain []*plan.JoinNode
	for {
		j, ok := p.(*plan.JoinNode)
		if !ok || (j.Kind != plan.JoinSemi && j.Kind != plan.JoinAnti) {
			return chain, p
		}
		chain = append(chain, j)
		p = j.Left
	}
}

// replaceLeaf rebuilds the inner-join tree p with leaf old replaced.
func replaceLeaf(p, old, new plan.Plan) plan.Plan {
	if p == old {
		return new
	}
	j, ok := p.(*plan.JoinNode)
	if !ok || j.Kind != plan.JoinInner {
		return p
	}
	l, r := replaceLeaf(j.Left, old, new), replaceLeaf(j.Right, old, new)
	if l == j.Left && r == j.Right {
		return p
	}
	c := *j
	c.Left, c.Right = l, r
	return &c
}

// joinWork estimates the rows a plan's joins read and write.
func (o *optimizer) joinWork(p plan.Plan) float64 {
	var w float64
	plan.WalkPlan(p, func(n plan.Plan) bool {
		if j, ok := n.(*plan.JoinNode); ok {
			w += o.est.Rows(j.Left) + o.est.Rows(j.Right) + o.est.Rows(j)
		}
		return true
	})
	return w
}

// liftMargin: lifting must save a tenth of the joins' work, so that noise
// in the estimates does not flip plans that are close.
const liftMargin = 0.9

func (o *optimizer) liftSemis(j *plan.JoinNode) plan.Plan {
	var leaves []plan.Plan
	innerLeaves(j, &leaves)
	for _, leaf := range leaves {
		chain, base := semiChain(leaf)
		if len(chain) == 0 {
			continue
		}
		// The chain's conditions must only use the base relation's columns
		// (and their right sides'), which pushdown guarantees.
		baseCols := plan.ColSetOf(base.Columns())
		ok := true
		for _, s := range chain {
			rc := plan.ColSetOf(s.Right.Columns())
			for _, e := range plan.NodeExprs(s) {
				for id := range plan.ColsOf(e) {
					ok = ok && (baseCols.Has(id) || rc.Has(id))
				}
			}
		}
		if !ok {
			continue
		}
		tree := replaceLeaf(j, leaf, base)
		tree = o.reorderJoins(tree)
		cand := tree
		for i := len(chain) - 1; i >= 0; i-- {
			c := *chain[i]
			c.Left = cand
			cand = &c
		}
		if o.joinWork(cand) < liftMargin*o.joinWork(j) {
			// Parents may read the tree's columns by position (set
			// operations, shared subplans): keep their order.
			return restoreColumns(cand, j.Columns())
		}
	}
	return j
}

// Reducing a grouped input by its join partner (semi-join reduction).
//
// A decorrelated scalar subquery (TPC-H Q17's avg(l_quantity) per part,
// Q2's min(ps_supplycost) per part) becomes an aggregate over the whole
// inner relation joined on its group key with the few rows of the outer
// query that need it: Q17 averages 6M lineitem rows into 200k groups to
// keep 204. When an inner join equates an aggregate's group key with a
// column of a small relation S (a filtered scan), the planner also
// semi-joins the aggregate's input with S on that key: groups S would
// drop are then never built. S is read twice (it is small: at most
// 1/reduceFactor of the aggregate's input, and a scan).

// reduceFactor: the partner must be this many times smaller than the
// aggregate's input for the extra semi join to pay.
const reduceFactor = 10

// reduceGroupedJoins applies the semi-join reduction everywhere in p.
func (o *optimizer) reduceGroupedJoins(p plan.Plan) plan.Plan {
	return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
		j, ok := n.(*plan.JoinNode)
		if !ok || j.Kind != plan.JoinInner || len(j.Equi) == 0 {
			return n
		}
		if nl, ok := o.reduceSide(j.Left, j.Right, j.Equi, true); ok {
			c := *j
			c.Left = nl
			return &c
		}
		if nr, ok := o.reduceSide(j.Right, j.Left, j.Equi, false); ok {
			c := *j
			c.Right = nr
			return &c
		}
		return n
	})
}

// reduceSide rewrites side a (an aggregate, possibly under projections
// and filters that pass its group keys through) when b is a small scan
// and an equality joins a group key with a column of b.
func (o *optimizer) reduceSide(a, b plan.Plan, equi []plan.EquiCond, aIsLeft bool) (plan.Plan, bool) {
	if !isSmallScan(b) {
		return nil, false
	}
	// Find the aggregate under projections and filters.
	var path []plan.Plan
	cur := a
	for {
		switch x := cur.(type) {
		case *plan.ProjectNode:
			path = append(path, x)
			cur = x.Input
			continue
		case *plan.FilterNode:
			path = append(path, x)
			cur = x.Input
			continue
		}
		break
	}
	agg, ok := cur.(*plan.AggregateNode)
	if !ok || len(agg.Groups) == 0 {
		return nil, false
	}
	if o.est.Rows(b)*reduceFactor > o.est.Rows(agg.Input) {
		return nil, false
	}
	var semi []plan.EquiCond
	for _, e := range equi {
		ae, be := e.Left, e.Right
		if !aIsLeft {
			ae, be = e.Right, e.Left
		}
		r, ok := ae.(*plan.ColRef)
		if !ok {
			continue
		}
		// The reference must reach a group key unchanged through the path.
		if !passesThrough(path, r.ID) {
			continue
		}
		for i, g := range agg.GroupCols {
			if g.ID == r.ID {
				if _, isCol := agg.Groups[i].(*plan.ColRef); isCol || plan.ColsOf(agg.Groups[i]).SubsetOf(plan.ColSetOf(agg.Input.Columns())) {
					semi = append(semi, plan.EquiCond{Left: agg.Groups[i], Right: be})
				}
			}
		}
	}
	if len(semi) == 0 {
		return nil, false
	}
	na := *agg
	na.Input = &plan.JoinNode{Kind: plan.JoinSemi, Left: agg.Input, Right: b, Equi: semi, Build: plan.BuildRight}
	var out plan.Plan = &na
	for i := len(path) - 1; i >= 0; i-- {
		out = path[i].WithInputs([]plan.Plan{out})
	}
	return out, true
}

// isSmallScan reports a scan, possibly under filters and projections.
func isSmallScan(p plan.Plan) bool {
	for {
		switch x := p.(type) {
		case *plan.ScanNode:
			return true
		case *plan.FilterNode:
			p = x.Input
		case *plan.ProjectNode:
			p = x.Input
		default:
			return false
		}
	}
}

// passesThrough reports whether column id leaves path (projections and
// filters, outermost first) as it entered: a projection must output it
// as a bare reference (which keeps the ID).
func passesThrough(path []plan.Plan, id plan.ColumnID) bool {
	for _, p := range path {
		if pr, ok := p.(*plan.ProjectNode); ok {
			found := false
			for i, c := range pr.Cols {
				if r, ok := pr.Exprs[i].(*plan.ColRef); ok && c.ID == id && r.ID == id {
					found = true
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}
