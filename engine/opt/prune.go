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

// prune drops columns no ancestor needs: scans read only needed columns,
// projections and aggregates drop unused outputs. required are the
// columns p's parent uses.
func prune(p plan.Plan, required plan.ColSet) plan.Plan {
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
		return &plan.FilterNode{Input: prune(n.Input, need(n.Cond)), Cond: n.Cond}
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
		c.Input = prune(n.Input, s)
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
			}
		}
		c.Input = prune(n.Input, s)
		return &c
	case *plan.JoinNode:
		s := need(plan.NodeExprs(n)...)
		j := *n
		j.Left = prune(n.Left, s)
		j.Right = prune(n.Right, s)
		return &j
	case *plan.SortNode:
		return &plan.SortNode{Input: prune(n.Input, need(plan.SortKeyExprs(n.Keys)...)), Keys: n.Keys}
	case *plan.TopNNode:
		c := *n
		c.Input = prune(n.Input, need(plan.SortKeyExprs(n.Keys)...))
		return &c
	case *plan.LimitNode:
		c := *n
		c.Input = prune(n.Input, required)
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
			return prune(n.Input, required)
		}
		c.Input = prune(n.Input, s)
		return &c
	case *plan.DistinctNode:
		return &plan.DistinctNode{Input: prune(n.Input, plan.ColSetOf(n.Input.Columns()))}
	case *plan.RecursiveNode:
		// Positional, like a set operation: every column of both terms.
		c := *n
		c.Anchor = prune(n.Anchor, plan.ColSetOf(n.Anchor.Columns()))
		c.Term = prune(n.Term, plan.ColSetOf(n.Term.Columns()))
		return &c
	case *plan.SetOpNode:
		c := *n
		c.Left = prune(n.Left, plan.ColSetOf(n.Left.Columns()))
		c.Right = prune(n.Right, plan.ColSetOf(n.Right.Columns()))
		return &c
	}
	return p
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
