package opt

import "github.com/nicflow/nicflow/engine/plan"

var ruleTopN = &Rule{
	Name:   RuleTopN,
	Shapes: "a LIMIT over a sort (or over a projection of one) becomes a top-N",
	apply:  func(_ *optimizer, p plan.Plan) (plan.Plan, error) { return topN(p), nil },
}

// topN turns Limit over Sort (possibly through projections) into TopN.
func topN(p plan.Plan) plan.Plan {
	return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
		l, ok := n.(*plan.LimitNode)
		if !ok || l.Limit < 0 {
			return n
		}
		switch in := l.Input.(type) {
		case *plan.SortNode:
			return &plan.TopNNode{Input: in.Input, Keys: in.Keys, Limit: l.Limit, Offset: l.Offset}
		case *plan.ProjectNode:
			if s, ok := in.Input.(*plan.SortNode); ok {
				return &plan.ProjectNode{Input: &plan.TopNNode{Input: s.Input, Keys: s.Keys, Limit: l.Limit, Offset: l.Offset}, Exprs: in.Exprs, Cols: in.Cols}
			}
		}
		return n
	})
}
