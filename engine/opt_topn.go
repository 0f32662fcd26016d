package engine

var ruleTopN = &Rule{
	Name:   RuleTopN,
	Shapes: "a LIMIT over a sort (or over a projection of one) becomes a top-N",
	apply:  func(_ *optimizer, p Plan) (Plan, error) { return topN(p), nil },
}

// topN turns Limit over Sort (possibly through projections) into TopN.
func topN(p Plan) Plan {
	return mapPlan(p, func(n Plan) Plan {
		l, ok := n.(*LimitNode)
		if !ok || l.Limit < 0 {
			return n
		}
		switch in := l.Input.(type) {
		case *SortNode:
			return &TopNNode{Input: in.Input, Keys: in.Keys, Limit: l.Limit, Offset: l.Offset}
		case *ProjectNode:
			if s, ok := in.Input.(*SortNode); ok {
				return &ProjectNode{Input: &TopNNode{Input: s.Input, Keys: s.Keys, Limit: l.Limit, Offset: l.Offset}, Exprs: in.Exprs, Cols: in.Cols}
			}
		}
		return n
	})
}
