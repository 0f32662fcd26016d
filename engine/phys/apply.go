package phys

import (
	"fmt"
	"maps"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Apply (plan.ApplyNode): a subquery evaluated for each input row. Its
// outer columns become exec parameters (expr.Param, numbered across the
// plan so that a nested apply's are distinct); the parts of the subquery
// that read no parameter are shared subplans computed once, as in a
// recursive term (recursive.go), and the rest is one stream built again,
// with the parameters bound, for each distinct binding (ops.go).

// apply plans an apply node.
func (pl *physPlanner) apply(n *plan.ApplyNode, need plan.ColSet) (*pnode, error) {
	inCols := n.Input.Columns()
	inSet := plan.ColSetOf(inCols)
	needIn := plan.ColSet{}
	for _, c := range inCols {
		if need.Has(c.ID) {
			needIn.Add(c.ID)
		}
	}
	for _, c := range n.Outer {
		if inSet.Has(c.ID) {
			needIn.Add(c.ID)
		}
	}
	in, err := pl.plan(n.Input, needIn)
	if err != nil {
		return nil, err
	}
	saved := pl.params
	params := maps.Clone(saved)
	if params == nil {
		params = map[plan.ColumnID]expr.Expr{}
	}
	op := &ApplyOp{SubID: n.SubID}
	for _, c := range n.Outer {
		if !inSet.Has(c.ID) {
			if _, ok := saved[c.ID]; !ok {
				return nil, nferr.Internalf("physical planner: subquery %d reads column %s, which neither its input nor an enclosing subquery has", n.SubID, c.QualifiedName())
			}
			continue
		}
		pos := layoutPos(in.layout, c.ID)
		if pos < 0 {
			return nil, nferr.Internalf("physical planner: subquery %d's outer column %s is not in its input", n.SubID, c.QualifiedName())
		}
		t, err := expr.TypeOf(c.Type)
		if err != nil {
			return nil, err
		}
		slot := pl.nparams
		pl.nparams++
		params[c.ID] = expr.Param(slot, c.QualifiedName(), t)
		op.Params = append(op.Params, slot)
		op.Cols = append(op.Cols, pos)
	}
	pl.params = params
	sub, err := pl.planExact(pl.hoistInvariant(n.Sub, fmt.Sprintf("subquery %d", n.SubID)))
	pl.params = saved
	if err != nil {
		return nil, err
	}
	if sub.n.Streams > 1 {
		sub = pl.gather(sub)
	}
	if err := checkRerun(sub.n, fmt.Sprintf("subquery %d", n.SubID)); err != nil {
		return nil, err
	}
	op.Sub = sub.n
	if n.Table {
		op.Table, op.Left = true, n.Left
		cols := append([]PhysColumn(nil), in.n.Columns...)
		for _, c := range sub.n.Columns {
			c.Nullable = c.Nullable || n.Left
			cols = append(cols, c)
		}
		layout := append(append([]plan.ColumnID(nil), in.layout...), sub.layout...)
		return pl.node(&PhysNode{Kind: PhysApply, Streams: in.n.Streams, Columns: cols, Apply: op}, layout, pl.est.Rows(n), in)
	}
	t, err := expr.TypeOf(n.Col.Type)
	if err != nil {
		return nil, err
	}
	cols := append(append([]PhysColumn(nil), in.n.Columns...), PhysColumn{Name: n.Col.QualifiedName(), Type: t, Nullable: true})
	layout := append(append([]plan.ColumnID(nil), in.layout...), n.Col.ID)
	return pl.node(&PhysNode{Kind: PhysApply, Streams: in.n.Streams, Columns: cols, Apply: op}, layout, pl.est.Rows(n), in)
}

// bindParams copies a tree built for each run with the parameters of vals
// bound (the expressions of filters, projections, values, join conditions,
// and of nested recursive terms and apply subqueries).
func bindParams(n *PhysNode, vals map[int]expr.Expr) *PhysNode {
	c := mapExprs(n, func(e expr.Expr) expr.Expr { return expr.BindParams(e, vals) })
	if t := c.Rerun(); t != nil {
		c = c.WithRerun(bindParams(t, vals))
	}
	c.Inputs = make([]*PhysNode, len(n.Inputs))
	for i, in := range n.Inputs {
		c.Inputs[i] = bindParams(in, vals)
	}
	return c
}

// mapExprs copies node n (not its inputs) with f applied to each of its
// expressions: filters, projections, values, join conditions.
func mapExprs(n *PhysNode, f func(expr.Expr) expr.Expr) *PhysNode {
	c := *n
	if n.Filter != nil {
		x := f(*n.Filter)
		c.Filter = &x
	}
	if n.Project != nil {
		p := *n.Project
		p.Exprs = mapAll(n.Project.Exprs, f)
		c.Project = &p
	}
	if n.Values != nil {
		v := *n.Values
		v.Rows = make([][]expr.Expr, len(n.Values.Rows))
		for i, r := range n.Values.Rows {
			v.Rows[i] = mapAll(r, f)
		}
		c.Values = &v
	}
	if n.Unnest != nil {
		u := *n.Unnest
		u.Arrays = mapAll(n.Unnest.Arrays, f)
		c.Unnest = &u
	}
	if n.Join != nil && n.Join.Residual != nil {
		j := *n.Join
		r := f(*n.Join.Residual)
		j.Residual = &r
		c.Join = &j
	}
	if n.NLJoin != nil && n.NLJoin.Condition != nil {
		j := *n.NLJoin
		r := f(*n.NLJoin.Condition)
		j.Condition = &r
		c.NLJoin = &j
	}
	return &c
}

func mapAll(es []expr.Expr, f func(expr.Expr) expr.Expr) []expr.Expr {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		out[i] = f(e)
	}
	return out
}
