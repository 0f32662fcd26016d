package engine

var ruleInlineShared = &Rule{
	Name:       RuleInlineShared,
	Shapes:     "a shared subplan (a view or CTE) read only once is replaced by its plan",
	WholeQuery: true,
	apply:      func(_ *optimizer, p Plan) (Plan, error) { return inlineShared(p), nil },
}

// inlineShared replaces the scans of a SharedDef read only once by its plan
// (renamed to the scan's column IDs).
func inlineShared(p Plan) Plan {
	uses := map[*SharedDef]int{}
	walkPlanDeep(p, func(n Plan) {
		if s, ok := n.(*SharedScan); ok {
			uses[s.Def]++
		}
	})
	var inline func(Plan) Plan
	inline = func(q Plan) Plan {
		return mapPlan(q, func(n Plan) Plan {
			if s, ok := n.(*SharedScan); ok {
				if uses[s.Def] == 1 {
					in := inline(s.Def.Plan)
					cols := in.Columns()
					exprs := make([]Expr, len(cols))
					for i, c := range cols {
						exprs[i] = colRef(c)
					}
					return &ProjectNode{Input: in, Exprs: exprs, Cols: s.Cols}
				}
				s.Def.Plan = inline(s.Def.Plan)
				return n
			}
			return mapNodeExprs(n, func(e Expr) Expr {
				return mapExpr(e, func(x Expr) Expr {
					if s, ok := x.(*SubqueryExpr); ok {
						c := *s
						c.Plan = inline(s.Plan)
						return &c
					}
					return x
				})
			})
		})
	}
	return inline(p)
}
