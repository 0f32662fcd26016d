package engine

import "github.com/apache/arrow-go/v18/arrow"

var rulePrune = &Rule{
	Name:   RulePrune,
	Shapes: "columns and aggregates no ancestor reads are dropped; scans read only the columns used",
	apply:  func(_ *optimizer, p Plan) (Plan, error) { return prune(p, colSetOf(p.Columns())), nil },
}

// prune drops columns no ancestor needs: scans read only needed columns,
// projections and aggregates drop unused outputs. required are the
// columns p's parent uses.
func prune(p Plan, required colSet) Plan {
	need := func(es ...Expr) colSet {
		s := colSet{}
		s.addAll(required)
		for _, e := range es {
			if e != nil {
				exprCols(e, s)
			}
		}
		return s
	}
	switch n := p.(type) {
	case *ScanNode:
		fc := colSet{}
		for _, f := range n.Filters {
			exprCols(f, fc)
		}
		c := *n
		c.Cols, c.Fields = nil, nil
		for i, col := range n.Cols {
			if required.has(col.ID) || fc.has(col.ID) {
				c.Cols = append(c.Cols, col)
				c.Fields = append(c.Fields, n.Fields[i])
			}
		}
		if len(c.Cols) == 0 && len(n.Cols) > 0 {
			// NB: keep one column so the scan still yields row counts
			// (count(*)); the narrowest is the cheapest to read.
			i := narrowest(n.Cols)
			c.Cols, c.Fields = []Column{n.Cols[i]}, []int{n.Fields[i]}
		}
		return &c
	case *FilterNode:
		return &FilterNode{Input: prune(n.Input, need(n.Cond)), Cond: n.Cond}
	case *ProjectNode:
		c := &ProjectNode{}
		for i, e := range n.Exprs {
			if required.has(n.Cols[i].ID) {
				c.Exprs = append(c.Exprs, e)
				c.Cols = append(c.Cols, n.Cols[i])
			}
		}
		s := colSet{}
		for _, e := range c.Exprs {
			exprCols(e, s)
		}
		c.Input = prune(n.Input, s)
		return c
	case *AggregateNode:
		c := *n
		c.Aggs, c.AggCols = nil, nil
		s := colSet{}
		for _, g := range n.Groups {
			exprCols(g, s)
		}
		for i, a := range n.Aggs {
			if required.has(n.AggCols[i].ID) {
				c.Aggs = append(c.Aggs, a)
				c.AggCols = append(c.AggCols, n.AggCols[i])
				if a.Arg != nil {
					exprCols(a.Arg, s)
				}
			}
		}
		c.Input = prune(n.Input, s)
		return &c
	case *JoinNode:
		s := need(nodeExprs(n)...)
		j := *n
		j.Left = prune(n.Left, s)
		j.Right = prune(n.Right, s)
		return &j
	case *SortNode:
		return &SortNode{Input: prune(n.Input, need(sortKeyExprs(n.Keys)...)), Keys: n.Keys}
	case *TopNNode:
		c := *n
		c.Input = prune(n.Input, need(sortKeyExprs(n.Keys)...))
		return &c
	case *LimitNode:
		c := *n
		c.Input = prune(n.Input, required)
		return &c
	case *WindowNode:
		c := *n
		c.Funcs, c.FuncCols = nil, nil
		s := colSet{}
		s.addAll(required)
		for i, w := range n.Funcs {
			if required.has(n.FuncCols[i].ID) {
				c.Funcs = append(c.Funcs, w)
				c.FuncCols = append(c.FuncCols, n.FuncCols[i])
				for _, e := range append(append(append([]Expr(nil), w.Args...), w.PartitionBy...), sortKeyExprs(w.OrderBy)...) {
					exprCols(e, s)
				}
			}
		}
		if len(c.Funcs) == 0 {
			return prune(n.Input, required)
		}
		c.Input = prune(n.Input, s)
		return &c
	case *DistinctNode:
		return &DistinctNode{Input: prune(n.Input, colSetOf(n.Input.Columns()))}
	case *SetOpNode:
		c := *n
		c.Left = prune(n.Left, colSetOf(n.Left.Columns()))
		c.Right = prune(n.Right, colSetOf(n.Right.Columns()))
		return &c
	}
	return p
}

// narrowest picks the column cheapest to read (fixed width first).
func narrowest(cols []Column) int {
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
