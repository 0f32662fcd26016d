package opt

import "github.com/nicflow/nicflow/engine/plan"

var ruleInlineShared = &Rule{
	Name:       RuleInlineShared,
	Shapes:     "a shared subplan (a view or CTE) read only once is replaced by its plan",
	WholeQuery: true,
	apply:      func(_ *optimizer, p plan.Plan) (plan.Plan, error) { return inlineShared(p), nil },
}

// inlineShared replaces the scans of a SharedDef read only once by its plan
// (renamed to the scan's column IDs).
func inlineShared(p plan.Plan) plan.Plan {
	uses := map[*plan.SharedDef]int{}
	plan.WalkPlanDeep(p, func(n plan.Plan) {
		if s, ok := n.(*plan.SharedScan); ok {
			uses[s.Def]++
		}
	})
	var inline func(plan.Plan) plan.Plan
	inline = func(q plan.Plan) plan.Plan {
		return plan.MapPlan(q, func(n plan.Plan) plan.Plan {
			if s, ok := n.(*plan.SharedScan); ok {
				if uses[s.Def] == 1 {
					in := inline(s.Def.Plan)
					cols := in.Columns()
					exprs := make([]plan.Expr, len(cols))
					for i, c := range cols {
						exprs[i] = plan.NewColRef(c)
					}
					return &plan.ProjectNode{Input: in, Exprs: exprs, Cols: s.Cols}
				}
				s.Def.Plan = inline(s.Def.Plan)
				return n
			}
			return mapNodeExprs(n, func(e plan.Expr) plan.Expr {
				return plan.MapExpr(e, func(x plan.Expr) plan.Expr {
					if s, ok := x.(*plan.SubqueryExpr); ok {
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
