package phys

import (
	"sort"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/plan"
)

// Common subexpressions. TPC-H Q1 sums l_extendedprice * (1 - l_discount)
// and that product times (1 + l_tax): computed separately, the decimal
// multiplication runs twice per row. Before a projection computes several
// expressions, the planner finds the subexpressions that occur more than
// once and computes each once, in a projection below, as a column the
// expressions then read.
//
// Only subexpressions every row evaluates are shared: none inside CASE,
// AND, OR, COALESCE or NULLIF arguments after the first, which may run
// for some rows only (and must not fail for the others: CASE WHEN x <> 0
// THEN y / x).

// cseCandidates counts the shareable subexpressions of es by their key.
func cseCandidates(es []plan.Expr) (map[string]int, map[string]plan.Expr) {
	count := map[string]int{}
	expr := map[string]plan.Expr{}
	var visit func(e plan.Expr)
	visit = func(e plan.Expr) {
		switch x := e.(type) {
		case *plan.Call:
			if len(plan.ColsOf(x)) > 0 {
				k := plan.ExprKey(x)
				count[k]++
				expr[k] = x
			}
			switch x.Fn {
			case plan.FnAnd, plan.FnOr, plan.FnCoalesce, "nullif":
				if len(x.Args) > 0 {
					visit(x.Args[0])
				}
				return
			}
			for _, a := range x.Args {
				visit(a)
			}
		case *plan.CastExpr:
			if len(plan.ColsOf(x)) > 0 {
				k := plan.ExprKey(x)
				count[k]++
				expr[k] = x
			}
			visit(x.X)
		case *plan.CaseExpr:
			if len(x.Whens) > 0 {
				visit(x.Whens[0])
			}
		}
	}
	for _, e := range es {
		visit(e)
	}
	return count, expr
}

// cse computes the common subexpressions of exprs over in (one projection
// appending them as columns) and returns the expressions rewritten to read
// them. Without common subexpressions it returns its arguments.
func (pl *physPlanner) cse(in *pnode, exprs []plan.Expr) (*pnode, []plan.Expr, error) {
	if pl.disabled[RuleCSE] {
		return in, exprs, nil
	}
	var hoisted []plan.Expr
	var ids []plan.ColumnID
	for {
		count, byKey := cseCandidates(exprs)
		var keys []string
		for k, n := range count {
			if n >= 2 {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			break
		}
		// The largest first: sharing it may make its parts unshared.
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) > len(keys[j])
			}
			return keys[i] < keys[j]
		})
		e := byKey[keys[0]]
		id := pl.newSynth()
		ref := &plan.ColRef{ID: id, Name: e.String(), Typ: e.Type()}
		k := keys[0]
		for i := range exprs {
			exprs[i] = plan.MapExpr(exprs[i], func(x plan.Expr) plan.Expr {
				if plan.ExprKey(x) == k {
					return ref
				}
				return x
			})
		}
		hoisted = append(hoisted, e)
		ids = append(ids, id)
	}
	if len(hoisted) == 0 {
		return in, exprs, nil
	}
	pl.use(RuleCSE)
	// NB: hoisted expressions are not rewritten (each reads only the
	// input's columns), so one projection computes them all.
	op := &ProjectOp{}
	layout := append([]plan.ColumnID(nil), in.layout...)
	for i, c := range in.n.Columns {
		op.Exprs = append(op.Exprs, expr.Col(i, c.Name))
		op.Names = append(op.Names, c.Name)
	}
	for i, h := range hoisted {
		x, err := pl.physExpr(h, in)
		if err != nil {
			return nil, nil, err
		}
		op.Exprs = append(op.Exprs, x)
		op.Names = append(op.Names, h.String())
		layout = append(layout, ids[i])
	}
	out, err := pl.node(&PhysNode{Kind: PhysProject, Streams: in.n.Streams, Project: op}, layout, in.n.EstRows, in)
	if err != nil {
		return nil, nil, err
	}
	return out, exprs, nil
}
