package phys

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"slices"
)

// planExact plans p with exactly its columns, in order.
func (pl *physPlanner) planExact(p plan.Plan) (*pnode, error) {
	in, err := pl.plan(p, plan.ColSetOf(p.Columns()))
	if err != nil {
		return nil, err
	}
	return pl.exact(in, p.Columns())
}

func (pl *physPlanner) setOp(n *plan.SetOpNode) (*pnode, error) {
	if n.Kind == plan.SetUnion && n.All || !slices.ContainsFunc(n.Cols, func(c plan.Column) bool { return plan.IsArray(c.Type) }) {
		return pl.setOpOf(n, false)
	}
	// Rows holding arrays are compared on the arrays' text (arraykeys.go).
	out, err := pl.setOpOf(n, true)
	if err != nil {
		return nil, err
	}
	return pl.arraysFromText(out, n.Cols)
}

// setOpOf plans n, its sides' arrays as text when arraysAsText.
func (pl *physPlanner) setOpOf(n *plan.SetOpNode, arraysAsText bool) (*pnode, error) {
	side := func(p plan.Plan) (*pnode, error) {
		in, err := pl.planExact(p)
		if err != nil {
			return nil, err
		}
		// Positional: both sides take the set operation's types.
		cols := make([]plan.Column, len(n.Cols))
		for i, c := range p.Columns() {
			cols[i] = c
			cols[i].Type = n.Cols[i].Type
			if plan.IsNullType(cols[i].Type) {
				cols[i].Type = plan.TypString
			}
		}
		if in, err = pl.castTo(in, cols); err != nil || !arraysAsText {
			return in, err
		}
		exprs := make([]plan.Expr, len(cols))
		for i, c := range cols {
			exprs[i] = plan.NewColRef(c)
			if plan.IsArray(c.Type) {
				cols[i].Type = plan.TypString
			}
		}
		textOfArrays(exprs)
		return pl.projectExprs(in, exprs, cols, in.n.EstRows)
	}
	left, err := side(n.Left)
	if err != nil {
		return nil, err
	}
	right, err := side(n.Right)
	if err != nil {
		return nil, err
	}
	est := pl.est.Rows(n)
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		layout[i] = c.ID
	}
	left.layout, right.layout = layout, layout
	if n.Kind == plan.SetUnion {
		u, err := pl.node(&PhysNode{Kind: PhysUnion, Streams: left.n.Streams + right.n.Streams}, layout, est, left, right)
		if err != nil {
			return nil, err
		}
		if n.All {
			return u, nil
		}
		return pl.distinct(u, est)
	}
	// INTERSECT and EXCEPT: a semi or anti join on every column, NULLs
	// equal; the ALL forms number the copies of each row first, so that
	// the n-th copy on the left matches the n-th on the right.
	if !n.All {
		if !rowsDistinct(n.Left) {
			if left, err = pl.distinct(left, est); err != nil {
				return nil, err
			}
		}
	} else {
		if left, err = pl.numberCopies(left); err != nil {
			return nil, err
		}
		if right, err = pl.numberCopies(right); err != nil {
			return nil, err
		}
	}
	left, lk, err := pl.nullSafeKeys(left)
	if err != nil {
		return nil, err
	}
	right, rk, err := pl.nullSafeKeys(right)
	if err != nil {
		return nil, err
	}
	jt := exec.JoinSemi
	if n.Kind == plan.SetExcept {
		jt = exec.JoinAnti
	}
	spec := &exec.HashJoinSpec{Type: jt, LeftKeys: lk, RightKeys: rk, Build: exec.SideRight}
	j, err := pl.node(&PhysNode{Kind: PhysHashJoin, Streams: left.n.Streams, Join: spec}, left.layout, est, left, right)
	if err != nil {
		return nil, err
	}
	return pl.dropSynth(j)
}

// rowsDistinct reports plans whose rows are distinct by construction:
// DISTINCT, a set operation without ALL (TPC-DS q38's INTERSECT of
// SELECT DISTINCTs made each left input distinct twice), an aggregate
// with only group keys, under projections that keep every column.
func rowsDistinct(p plan.Plan) bool {
	switch n := p.(type) {
	case *plan.DistinctNode:
		return true
	case *plan.SetOpNode:
		return !n.All
	case *plan.AggregateNode:
		return len(n.Aggs) == 0 && len(n.Groups) > 0
	case *plan.ProjectNode:
		in := n.Input.Columns()
		seen := plan.ColSet{}
		for _, e := range n.Exprs {
			if r, ok := e.(*plan.ColRef); ok {
				seen.Add(r.ID)
			}
		}
		for _, c := range in {
			if !seen.Has(c.ID) {
				return false
			}
		}
		return rowsDistinct(n.Input)
	}
	return false
}

// numberCopies appends row_number() over (partition by every column).
func (pl *physPlanner) numberCopies(in *pnode) (*pnode, error) {
	keys := make([]int, len(in.layout))
	for i := range keys {
		keys[i] = i
	}
	if in.n.Streams > 1 {
		var err error
		if in, err = pl.repartition(in, keys); err != nil {
			return nil, err
		}
	}
	spec := &exec.WindowSpec{PartitionBy: keys, Funcs: []exec.WindowFuncSpec{{Func: exec.WinRowNumber, Name: "copy"}}}
	layout := append(append([]plan.ColumnID(nil), in.layout...), pl.newSynth())
	return pl.node(&PhysNode{Kind: PhysWindow, Streams: in.n.Streams, Window: spec}, layout, in.n.EstRows, in)
}

// nullSafeKeys returns join keys over every column of in that treat NULLs
// as equal: a nullable column c becomes two keys, coalesce(c, zero) and
// c IS NULL.
func (pl *physPlanner) nullSafeKeys(in *pnode) (*pnode, []int, error) {
	var exprs []plan.Expr
	for i, id := range in.layout {
		f := in.schema.Field(i)
		c := &plan.ColRef{ID: id, Name: f.Name, Typ: f.Type}
		if id < 0 {
			// NB: a synthetic column here is a copy number (never NULL);
			// give it a positive stand-in ID for the translation.
			exprs = append(exprs, c)
			continue
		}
		if !f.Nullable {
			exprs = append(exprs, c)
			continue
		}
		zero, ok := zeroConst(f.Type)
		if !ok {
			return nil, nil, nferr.Queryf("set operation over a column of type %s is not supported", plan.TypeString(f.Type))
		}
		exprs = append(exprs, plan.NewCall(plan.FnCoalesce, f.Type, c, zero), plan.NewCall(plan.FnIsNull, plan.TypBool, c))
	}
	return pl.ensure(in, exprs)
}

func zeroConst(t arrow.DataType) (*plan.Const, bool) {
	switch t.ID() {
	case arrow.INT32:
		return &plan.Const{Typ: t, Val: int32(0)}, true
	case arrow.INT64, arrow.DECIMAL64:
		return &plan.Const{Typ: t, Val: int64(0)}, true
	case arrow.DECIMAL128:
		c, err := plan.CastConst(&plan.Const{Typ: plan.TypInt64, Val: int64(0)}, t)
		return c, err == nil
	case arrow.FLOAT64:
		return &plan.Const{Typ: t, Val: float64(0)}, true
	case arrow.STRING:
		return &plan.Const{Typ: t, Val: ""}, true
	case arrow.BINARY:
		return &plan.Const{Typ: t, Val: plan.Bytea("")}, true
	case arrow.DATE32:
		return &plan.Const{Typ: t, Val: arrow.Date32(0)}, true
	case arrow.TIMESTAMP:
		return &plan.Const{Typ: t, Val: arrow.Timestamp(0)}, true
	case arrow.TIME64:
		return &plan.Const{Typ: t, Val: arrow.Time64(0)}, true
	case arrow.BOOL:
		return &plan.Const{Typ: t, Val: false}, true
	case arrow.NULL:
		return &plan.Const{Typ: plan.TypString, Val: ""}, true
	}
	return nil, false
}
