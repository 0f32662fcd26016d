package engine

import (
	"github.com/apache/arrow-go/v18/arrow"
)

var ruleFold = &Rule{
	Name:   RuleFold,
	Shapes: "constant expressions are evaluated, boolean expressions simplified, always-true filters dropped",
	apply:  func(_ *optimizer, p Plan) (Plan, error) { return foldConstants(p), nil },
}

// Rule: constant folding and boolean simplification.
//
//   - calls and casts over constants are evaluated
//     (date '1998-12-01' - interval '90' day becomes date '1998-09-02');
//     an evaluation error (1/0) is left for run time
//   - AND/OR drop neutral constants and collapse on absorbing ones;
//     NOT NOT x is x; CASE drops WHEN FALSE/NULL arms
//   - common conjuncts of OR arms are factored out:
//     (a AND b) OR (a AND c) is a AND (b OR c), which lets TPC-H Q19's
//     join condition p_partkey = l_partkey become a join key
//   - a Filter whose condition folds to TRUE disappears
func foldConstants(p Plan) Plan {
	return mapPlan(p, func(n Plan) Plan {
		switch x := n.(type) {
		case *FilterNode:
			c := simplify(x.Cond)
			if k, ok := c.(*Const); ok && k.Val == true {
				return x.Input
			}
			return &FilterNode{Input: x.Input, Cond: c}
		}
		return mapNodeExprs(n, simplify)
	})
}

// mapNodeExprs returns n with f applied to every expression it evaluates.
func mapNodeExprs(n Plan, f func(Expr) Expr) Plan {
	mapList := func(es []Expr) []Expr {
		out := make([]Expr, len(es))
		for i, e := range es {
			out[i] = f(e)
		}
		return out
	}
	mapKeys := func(ks []SortKey) []SortKey {
		out := make([]SortKey, len(ks))
		for i, k := range ks {
			out[i] = k
			out[i].Expr = f(k.Expr)
		}
		return out
	}
	switch x := n.(type) {
	case *ScanNode:
		c := *x
		c.Filters = mapList(x.Filters)
		return &c
	case *FilterNode:
		return &FilterNode{Input: x.Input, Cond: f(x.Cond)}
	case *ProjectNode:
		c := *x
		c.Exprs = mapList(x.Exprs)
		return &c
	case *AggregateNode:
		c := *x
		c.Groups = mapList(x.Groups)
		c.Aggs = make([]*AggCall, len(x.Aggs))
		for i, a := range x.Aggs {
			na := *a
			if a.Arg != nil {
				na.Arg = f(a.Arg)
			}
			c.Aggs[i] = &na
		}
		return &c
	case *JoinNode:
		c := *x
		c.Equi = make([]EquiCond, len(x.Equi))
		for i, e := range x.Equi {
			c.Equi[i] = EquiCond{Left: f(e.Left), Right: f(e.Right)}
		}
		if x.Cond != nil {
			c.Cond = f(x.Cond)
			if k, ok := c.Cond.(*Const); ok && k.Val == true {
				c.Cond = nil
			}
		}
		return &c
	case *SortNode:
		return &SortNode{Input: x.Input, Keys: mapKeys(x.Keys)}
	case *TopNNode:
		c := *x
		c.Keys = mapKeys(x.Keys)
		return &c
	case *WindowNode:
		c := *x
		c.Funcs = make([]*WindowCall, len(x.Funcs))
		for i, w := range x.Funcs {
			nw := *w
			nw.Args = mapList(w.Args)
			nw.PartitionBy = mapList(w.PartitionBy)
			nw.OrderBy = mapKeys(w.OrderBy)
			c.Funcs[i] = &nw
		}
		return &c
	case *ValuesNode:
		c := *x
		c.Rows = make([][]Expr, len(x.Rows))
		for i, r := range x.Rows {
			c.Rows[i] = mapList(r)
		}
		return &c
	}
	return n
}

// simplify folds constants and simplifies boolean structure, bottom-up.
func simplify(e Expr) Expr {
	return mapExpr(e, simplifyNode)
}

func simplifyNode(e Expr) Expr {
	switch x := e.(type) {
	case *CastExpr:
		if c, ok := x.X.(*Const); ok {
			if v, err := castConst(c, x.Typ); err == nil {
				return v
			}
		}
		if arrow.TypeEqual(x.X.Type(), x.Typ) {
			return x.X
		}
	case *CaseExpr:
		c := &CaseExpr{Typ: x.Typ, Else: x.Else}
		for i, w := range x.Whens {
			if k, ok := w.(*Const); ok {
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
				return nullConst(x.Typ)
			}
			return c.Else
		}
		return c
	case *Call:
		switch x.Fn {
		case fnAnd:
			return simplifyAnd(x)
		case fnOr:
			return simplifyOr(x)
		case fnNot:
			if inner, ok := x.Args[0].(*Call); ok && inner.Fn == fnNot {
				return inner.Args[0]
			}
		}
		return foldNow(x)
	}
	return e
}

func simplifyAnd(x *Call) Expr {
	var args []Expr
	seen := map[string]bool{}
	sawNull := false
	for _, a := range x.Args {
		for _, c := range conjuncts(a) {
			if k, ok := c.(*Const); ok {
				switch {
				case k.Val == false:
					return boolConst(false)
				case k.Val == true:
					continue
				case k.IsNull():
					sawNull = true
					continue
				}
			}
			if key := exprKey(c); !seen[key] {
				seen[key] = true
				args = append(args, c)
			}
		}
	}
	if sawNull {
		args = append(args, nullConst(typBool))
	}
	switch len(args) {
	case 0:
		return boolConst(true)
	case 1:
		return args[0]
	}
	return &Call{Fn: fnAnd, Args: args, Typ: typBool}
}

func simplifyOr(x *Call) Expr {
	var args []Expr
	seen := map[string]bool{}
	sawNull := false
	for _, a := range x.Args {
		for _, d := range disjuncts(a) {
			if k, ok := d.(*Const); ok {
				switch {
				case k.Val == true:
					return boolConst(true)
				case k.Val == false:
					continue
				case k.IsNull():
					sawNull = true
					continue
				}
			}
			if key := exprKey(d); !seen[key] {
				seen[key] = true
				args = append(args, d)
			}
		}
	}
	if sawNull {
		args = append(args, nullConst(typBool))
	}
	switch len(args) {
	case 0:
		return boolConst(false)
	case 1:
		return args[0]
	}
	if f := factorOr(args); f != nil {
		return f
	}
	return &Call{Fn: fnOr, Args: args, Typ: typBool}
}

// factorOr pulls the conjuncts common to every disjunct out of an OR:
// (a AND b) OR (a AND c) becomes a AND (b OR c). It returns nil when no
// conjunct is common.
func factorOr(disj []Expr) Expr {
	sets := make([][]Expr, len(disj))
	counts := map[string]int{}
	for i, d := range disj {
		sets[i] = conjuncts(d)
		local := map[string]bool{}
		for _, c := range sets[i] {
			k := exprKey(c)
			if !local[k] {
				local[k] = true
				counts[k]++
			}
		}
	}
	var common []Expr
	commonKeys := map[string]bool{}
	for _, c := range sets[0] {
		k := exprKey(c)
		if counts[k] == len(disj) && !commonKeys[k] {
			commonKeys[k] = true
			common = append(common, c)
		}
	}
	if len(common) == 0 {
		return nil
	}
	var rest []Expr
	for _, s := range sets {
		var r []Expr
		for _, c := range s {
			if !commonKeys[exprKey(c)] {
				r = append(r, c)
			}
		}
		if len(r) == 0 {
			// One arm is just the common part: the OR is implied by it.
			return andOf(common)
		}
		rest = append(rest, andOf(r))
	}
	return andOf(append(common, simplifyOr(&Call{Fn: fnOr, Args: rest, Typ: typBool})))
}

// ---------------------------------------------------------------- evaluation
