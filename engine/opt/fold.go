package opt

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
)

var ruleFold = &Rule{
	Name:   RuleFold,
	Shapes: "constant expressions are evaluated, boolean expressions simplified, always-true filters dropped",
	apply:  func(_ *optimizer, p plan.Plan) (plan.Plan, error) { return foldConstants(p), nil },
}

// Rule: constant folding and boolean simplification.
//
//   - calls and casts over constants are evaluated
//     (date '1998-12-01' - interval '90' day becomes date '1998-09-02');
//     an evaluation error (1/0) is left for run time; a comparison or
//     arithmetic with a NULL operand is NULL
//   - AND/OR drop neutral constants and collapse on absorbing ones;
//     NOT NOT x is x; CASE drops WHEN FALSE/NULL arms
//   - common conjuncts of OR arms are factored out:
//     (a AND b) OR (a AND c) is a AND (b OR c), which lets TPC-H Q19's
//     join condition p_partkey = l_partkey become a join key
//   - a Filter whose condition folds to TRUE disappears
func foldConstants(p plan.Plan) plan.Plan {
	return plan.MapPlan(p, func(n plan.Plan) plan.Plan {
		switch x := n.(type) {
		case *plan.FilterNode:
			c := simplify(x.Cond)
			if k, ok := c.(*plan.Const); ok && k.Val == true {
				return x.Input
			}
			return &plan.FilterNode{Input: x.Input, Cond: c}
		}
		return mapNodeExprs(n, simplify)
	})
}

// mapNodeExprs returns n with f applied to every expression it evaluates.
func mapNodeExprs(n plan.Plan, f func(plan.Expr) plan.Expr) plan.Plan {
	mapList := func(es []plan.Expr) []plan.Expr {
		out := make([]plan.Expr, len(es))
		for i, e := range es {
			out[i] = f(e)
		}
		return out
	}
	mapKeys := func(ks []plan.SortKey) []plan.SortKey {
		out := make([]plan.SortKey, len(ks))
		for i, k := range ks {
			out[i] = k
			out[i].Expr = f(k.Expr)
		}
		return out
	}
	switch x := n.(type) {
	case *plan.ScanNode:
		c := *x
		c.Filters = mapList(x.Filters)
		return &c
	case *plan.FilterNode:
		return &plan.FilterNode{Input: x.Input, Cond: f(x.Cond)}
	case *plan.ProjectNode:
		c := *x
		c.Exprs = mapList(x.Exprs)
		return &c
	case *plan.AggregateNode:
		c := *x
		c.Groups = mapList(x.Groups)
		c.Aggs = make([]*plan.AggCall, len(x.Aggs))
		for i, a := range x.Aggs {
			na := *a
			if a.Arg != nil {
				na.Arg = f(a.Arg)
			}
			if a.Filter != nil {
				na.Filter = f(a.Filter)
			}
			c.Aggs[i] = &na
		}
		return &c
	case *plan.JoinNode:
		c := *x
		c.Equi = make([]plan.EquiCond, len(x.Equi))
		for i, e := range x.Equi {
			c.Equi[i] = plan.EquiCond{Left: f(e.Left), Right: f(e.Right)}
		}
		if x.Cond != nil {
			c.Cond = f(x.Cond)
			if k, ok := c.Cond.(*plan.Const); ok && k.Val == true {
				c.Cond = nil
			}
		}
		return &c
	case *plan.SortNode:
		return &plan.SortNode{Input: x.Input, Keys: mapKeys(x.Keys)}
	case *plan.TopNNode:
		c := *x
		c.Keys = mapKeys(x.Keys)
		return &c
	case *plan.WindowNode:
		c := *x
		c.Funcs = make([]*plan.WindowCall, len(x.Funcs))
		for i, w := range x.Funcs {
			nw := *w
			nw.Args = mapList(w.Args)
			nw.PartitionBy = mapList(w.PartitionBy)
			nw.OrderBy = mapKeys(w.OrderBy)
			c.Funcs[i] = &nw
		}
		return &c
	case *plan.UnnestNode:
		c := *x
		c.Arrays = mapList(x.Arrays)
		return &c
	case *plan.ValuesNode:
		c := *x
		c.Rows = make([][]plan.Expr, len(x.Rows))
		for i, r := range x.Rows {
			c.Rows[i] = mapList(r)
		}
		return &c
	}
	return n
}

// simplify folds constants and simplifies boolean structure, bottom-up.
func simplify(e plan.Expr) plan.Expr {
	return plan.MapExpr(e, simplifyNode)
}

func simplifyNode(e plan.Expr) plan.Expr {
	switch x := e.(type) {
	case *plan.CastExpr:
		if c, ok := x.X.(*plan.Const); ok {
			if v, err := plan.CastConst(c, x.Typ); err == nil {
				return v
			}
		}
		if arrow.TypeEqual(x.X.Type(), x.Typ) && expr.IsInt2Vector(x.X.Type()) == expr.IsInt2Vector(x.Typ) {
			return x.X
		}
	case *plan.CaseExpr:
		c := &plan.CaseExpr{Typ: x.Typ, Else: x.Else}
		for i, w := range x.Whens {
			if k, ok := w.(*plan.Const); ok {
				if k.Val == true {
					if len(c.Whens) == 0 {
						return x.Thens[i]
					}
					c.Else = x.Thens[i]
					break
				}
				continue // FALSE or NULL never matches
			}
			c.Whens = append(c.Whens, w)
			c.Thens = append(c.Thens, x.Thens[i])
		}
		if len(c.Whens) == 0 {
			if c.Else == nil {
				return plan.NullConst(x.Typ)
			}
			return c.Else
		}
		return c
	case *plan.Call:
		switch x.Fn {
		case plan.FnAnd:
			return simplifyAnd(x)
		case plan.FnOr:
			return simplifyOr(x)
		case plan.FnNot:
			if inner, ok := x.Args[0].(*plan.Call); ok && inner.Fn == plan.FnNot {
				return inner.Args[0]
			}
		}
		return plan.FoldNow(x)
	}
	return e
}

func simplifyAnd(x *plan.Call) plan.Expr {
	var args []plan.Expr
	seen := map[string]bool{}
	sawNull := false
	for _, a := range x.Args {
		for _, c := range plan.Conjuncts(a) {
			if k, ok := c.(*plan.Const); ok {
				switch {
				case k.Val == false:
					return plan.BoolConst(false)
				case k.Val == true:
					continue
				case k.IsNull():
					sawNull = true
					continue
				}
			}
			if key := plan.ExprKey(c); !seen[key] {
				seen[key] = true
				args = append(args, c)
			}
		}
	}
	if sawNull {
		args = append(args, plan.NullConst(plan.TypBool))
	}
	switch len(args) {
	case 0:
		return plan.BoolConst(true)
	case 1:
		return args[0]
	}
	return &plan.Call{Fn: plan.FnAnd, Args: args, Typ: plan.TypBool}
}

func simplifyOr(x *plan.Call) plan.Expr {
	var args []plan.Expr
	seen := map[string]bool{}
	sawNull := false
	for _, a := range x.Args {
		for _, d := range plan.Disjuncts(a) {
			if k, ok := d.(*plan.Const); ok {
				switch {
				case k.Val == true:
					return plan.BoolConst(true)
				case k.Val == false:
					continue
				case k.IsNull():
					sawNull = true
					continue
				}
			}
			if key := plan.ExprKey(d); !seen[key] {
				seen[key] = true
				args = append(args, d)
			}
		}
	}
	if sawNull {
		args = append(args, plan.NullConst(plan.TypBool))
	}
	switch len(args) {
	case 0:
		return plan.BoolConst(false)
	case 1:
		return args[0]
	}
	if f := factorOr(args); f != nil {
		return f
	}
	return &plan.Call{Fn: plan.FnOr, Args: args, Typ: plan.TypBool}
}

// factorOr pulls the conjuncts common to every disjunct out of an OR:
// (a AND b) OR (a AND c) becomes a AND (b OR c). It returns nil when no
// conjunct is common.
func factorOr(disj []plan.Expr) plan.Expr {
	sets := make([][]plan.Expr, len(disj))
	counts := map[string]int{}
	for i, d := range disj {
		sets[i] = plan.Conjuncts(d)
		local := map[string]bool{}
		for _, c := range sets[i] {
			k := plan.ExprKey(c)
			if !local[k] {
				local[k] = true
				counts[k]++
			}
		}
	}
	var common []plan.Expr
	commonKeys := map[string]bool{}
	for _, c := range sets[0] {
		k := plan.ExprKey(c)
		if counts[k] == len(disj) && !commonKeys[k] {
			commonKeys[k] = true
			common = append(common, c)
		}
	}
	if len(common) == 0 {
		return nil
	}
	var rest []plan.Expr
	for _, s := range sets {
		var r []plan.Expr
		for _, c := range s {
			if !commonKeys[plan.ExprKey(c)] {
				r = append(r, c)
			}
		}
		if len(r) == 0 {
			// One arm is just the common part: the OR is implied by it.
			return plan.AndOf(common)
		}
		rest = append(rest, plan.AndOf(r))
	}
	return plan.AndOf(append(common, simplifyOr(&plan.Call{Fn: plan.FnOr, Args: rest, Typ: plan.TypBool})))
}

// ---------------------------------------------------------------- evaluation
