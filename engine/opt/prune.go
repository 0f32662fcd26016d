package opt

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/plan"
)

var rulePrune = &Rule{
	Name:   RulePrune,
	Shapes: "columns and aggregates no ancestor reads are dropped; scans read only the columns used",
	apply:  func(_ *optimizer, p plan.Plan) (plan.Plan, error) { return prune(p, plan.ColSetOf(p.Columns())), nil },
}

// prune drops the columns of p no ancestor needs (required: those p's
// parent uses).
func prune(p plan.Plan, required plan.ColSet) plan.Plan {
	return (&pruner{}).prune(p, required)
}

// pruner prunes a plan; with uses set it also records which columns (by
// position) each SharedScan's ancestors read (pruneShared).
type pruner struct {
	uses map[*plan.SharedDef]map[int]bool
	seen map[*plan.SharedScan]bool
}

// prune drops columns no ancestor needs: scans read only needed columns,
// projections and aggregates drop unused outputs. required are the
// columns p's parent uses.
func (pr *pruner) prune(p plan.Plan, required plan.ColSet) plan.Plan {
	need := func(es ...plan.Expr) plan.ColSet {
		s := plan.ColSet{}
		s.AddAll(required)
		for _, e := range es {
			if e != nil {
				plan.ExprCols(e, s)
			}
		}
		return s
	}
	switch n := p.(type) {
	case *plan.ScanNode:
		fc := plan.ColSet{}
		for _, f := range n.Filters {
			plan.ExprCols(f, fc)
		}
		c := *n
		c.Cols, c.Fields = nil, nil
		for i, col := range n.Cols {
			if required.Has(col.ID) || fc.Has(col.ID) {
				c.Cols = append(c.Cols, col)
				c.Fields = append(c.Fields, n.Fields[i])
			}
		}
		if len(c.Cols) == 0 && len(n.Cols) > 0 {
			// NB: keep one column so the scan still yields row counts
			// (count(*)); the narrowest is the cheapest to read.
			i := Narrowest(n.Cols)
			c.Cols, c.Fields = []plan.Column{n.Cols[i]}, []int{n.Fields[i]}
		}
		return &c
	case *plan.FilterNode:
		return &plan.FilterNode{Input: pr.prune(n.Input, need(n.Cond)), Cond: n.Cond}
	case *plan.ProjectNode:
		c := &plan.ProjectNode{}
		for i, e := range n.Exprs {
			if required.Has(n.Cols[i].ID) {
				c.Exprs = append(c.Exprs, e)
				c.Cols = append(c.Cols, n.Cols[i])
			}
		}
		s := plan.ColSet{}
		for _, e := range c.Exprs {
			plan.ExprCols(e, s)
		}
		c.Input = pr.prune(n.Input, s)
		return c
	case *plan.AggregateNode:
		c := *n
		c.Aggs, c.AggCols = nil, nil
		s := plan.ColSet{}
		for _, g := range n.Groups {
			plan.ExprCols(g, s)
		}
		for i, a := range n.Aggs {
			if required.Has(n.AggCols[i].ID) {
				c.Aggs = append(c.Aggs, a)
				c.AggCols = append(c.AggCols, n.AggCols[i])
				if a.Arg != nil {
					plan.ExprCols(a.Arg, s)
				}
				if a.Filter != nil {
					plan.ExprCols(a.Filter, s)
				}
			}
		}
		c.Input = pr.prune(n.Input, s)
		return &c
	case *plan.JoinNode:
		s := need(plan.NodeExprs(n)...)
		j := *n
		j.Left = pr.prune(n.Left, s)
		j.Right = pr.prune(n.Right, s)
		return &j
	case *plan.SortNode:
		return &plan.SortNode{Input: pr.prune(n.Input, need(plan.SortKeyExprs(n.Keys)...)), Keys: n.Keys}
	case *plan.TopNNode:
		c := *n
		c.Input = pr.prune(n.Input, need(plan.SortKeyExprs(n.Keys)...))
		return &c
	case *plan.LimitNode:
		c := *n
		c.Input = pr.prune(n.Input, required)
		return &c
	case *plan.WindowNode:
		c := *n
		c.Funcs, c.FuncCols = nil, nil
		s := plan.ColSet{}
		s.AddAll(required)
		for i, w := range n.Funcs {
			if required.Has(n.FuncCols[i].ID) {
				c.Funcs = append(c.Funcs, w)
				c.FuncCols = append(c.FuncCols, n.FuncCols[i])
				for _, e := range append(append(append([]plan.Expr(nil), w.Args...), w.PartitionBy...), plan.SortKeyExprs(w.OrderBy)...) {
					plan.ExprCols(e, s)
				}
			}
		}
		if len(c.Funcs) == 0 {
			return pr.prune(n.Input, required)
		}
		c.Input = pr.prune(n.Input, s)
		return &c
	case *plan.DistinctNode:
		return &plan.DistinctNode{Input: pr.prune(n.Input, plan.ColSetOf(n.Input.Columns()))}
	case *plan.UnnestNode:
		// Every array stays (each decides how many rows an input row
		// makes); the input keeps the columns read above and by them.
		c := *n
		c.Input = pr.prune(n.Input, need(n.Arrays...))
		return &c
	case *plan.RecursiveNode:
		// Positional, like a set operation: every column of both terms.
		c := *n
		c.Anchor = pr.prune(n.Anchor, plan.ColSetOf(n.Anchor.Columns()))
		c.Term = pr.prune(n.Term, plan.ColSetOf(n.Term.Columns()))
		return &c
	case *plan.SetOpNode:
		c := *n
		c.Left = pr.prune(n.Left, plan.ColSetOf(n.Left.Columns()))
		c.Right = pr.prune(n.Right, plan.ColSetOf(n.Right.Columns()))
		return &c
	case *plan.SharedScan:
		if pr.uses != nil {
			pr.seen[n] = true
			u := pr.uses[n.Def]
			if u == nil {
				u = map[int]bool{}
				pr.uses[n.Def] = u
			}
			for i, c := range n.Cols {
				if required.Has(c.ID) {
					u[i] = true
				}
			}
		}
	}
	return p
}

// pruneShared drops the columns of shared subplans (a CTE read twice or
// more, the input of grouping sets) that none of their scans' ancestors
// reads: each def then produces only the columns some scan uses, and
// its scans list those, in the def's order (SharedScans read by
// position). Without it a def keeps every column its body names (TPC-DS
// q22's grouping sets materialized all 50 columns of item and date_dim).
// A def with a scan the pruner cannot see into stays whole.
func pruneShared(root plan.Plan) plan.Plan {
	pr := &pruner{uses: map[*plan.SharedDef]map[int]bool{}, seen: map[*plan.SharedScan]bool{}}
	root = pr.prune(root, plan.ColSetOf(root.Columns()))
	// Defs read by defs: until no def needs more columns.
	done := map[*plan.SharedDef]int{}
	for changed := true; changed; {
		changed = false
		var defs []*plan.SharedDef
		for d := range pr.uses {
			defs = append(defs, d)
		}
		for _, d := range defs {
			if n, ok := done[d]; ok && n == len(pr.uses[d]) {
				continue
			}
			done[d] = len(pr.uses[d])
			changed = true
			pr.prune(d.Plan, sharedRequired(d, pr.uses[d]))
		}
	}
	whole := map[*plan.SharedDef]bool{}
	plan.WalkPlanDeep(root, func(n plan.Plan) {
		if s, ok := n.(*plan.SharedScan); ok && !pr.seen[s] {
			whole[s.Def] = true
		}
	})
	keep := map[*plan.SharedDef][]int{}
	for d, u := range pr.uses {
		cols := d.Plan.Columns()
		if whole[d] || len(u) == len(cols) {
			continue
		}
		var idx []int
		for i := range cols {
			if u[i] {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			// NB: one column keeps the row count (count(*) of a CTE).
			idx = []int{Narrowest(cols)}
		}
		want := make([]plan.Column, len(idx))
		for k, i := range idx {
			want[k] = cols[i]
		}
		keep[d] = idx
		d.Plan = restoreColumns(pr.prune(d.Plan, plan.ColSetOf(want)), want)
	}
	if len(keep) == 0 {
		return root
	}
	rescan := func(p plan.Plan) plan.Plan {
		return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
			s, ok := n.(*plan.SharedScan)
			if !ok || keep[s.Def] == nil {
				return n
			}
			c := *s
			c.Cols = make([]plan.Column, len(keep[s.Def]))
			for k, i := range keep[s.Def] {
				c.Cols[k] = s.Cols[i]
			}
			return &c
		})
	}
	for d := range pr.uses {
		d.Plan = rescan(d.Plan)
	}
	return rescan(root)
}

// sharedRequired are the columns of d at the positions in u.
func sharedRequired(d *plan.SharedDef, u map[int]bool) plan.ColSet {
	out := plan.ColSet{}
	for i, c := range d.Plan.Columns() {
		if u[i] {
			out.Add(c.ID)
		}
	}
	return out
}

// Narrowest picks the column cheapest to read (fixed width first).
func Narrowest(cols []plan.Column) int {
	best, bestW := 0, 1<<30
	for i, c := range cols {
		w := 16
		if fw, ok := c.Type.(arrow.FixedWidthDataType); ok {
			w = fw.BitWidth()
		}
		if w < bestW {
			best, bestW = i, w
		}
	}
	return best
}
