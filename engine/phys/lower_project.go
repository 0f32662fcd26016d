package phys

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/opt"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
)

func (pl *physPlanner) filter(in *pnode, cond plan.Expr, est float64) (*pnode, error) {
	x, err := pl.physExpr(cond, in)
	if err != nil {
		return nil, err
	}
	return pl.node(&PhysNode{Kind: PhysFilter, Streams: in.n.Streams, Filter: &x}, in.layout, est, in)
}

// unnest plans an unnest node over the input columns needed above and
// by its arrays.
func (pl *physPlanner) unnest(n *plan.UnnestNode, need plan.ColSet) (*pnode, error) {
	inNeed := plan.ColSet{}
	for _, c := range n.Input.Columns() {
		if need.Has(c.ID) {
			inNeed.Add(c.ID)
		}
	}
	for _, a := range n.Arrays {
		inNeed.AddAll(plan.ColsOf(a))
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	op := &UnnestOp{}
	layout := append([]plan.ColumnID(nil), in.layout...)
	for i, a := range n.Arrays {
		x, err := pl.physExpr(a, in)
		if err != nil {
			return nil, err
		}
		op.Arrays = append(op.Arrays, x)
		op.Names = append(op.Names, n.Elems[i].QualifiedName(), n.Subs[i].QualifiedName())
		layout = append(layout, n.Elems[i].ID, n.Subs[i].ID)
	}
	op.Names = append(op.Names, n.Ord.QualifiedName())
	layout = append(layout, n.Ord.ID)
	return pl.node(&PhysNode{Kind: PhysUnnest, Streams: in.n.Streams, Unnest: op}, layout, pl.est.Rows(n), in)
}

func (pl *physPlanner) project(n *plan.ProjectNode, need plan.ColSet) (*pnode, error) {
	var idx []int
	for i, c := range n.Cols {
		if need.Has(c.ID) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 && len(n.Cols) > 0 {
		// NB: nothing above reads a column (count(*) over a derived
		// table): keep the narrowest, so batches still carry row counts
		// through operators that expect a column.
		idx = []int{opt.Narrowest(n.Cols)}
	}
	inNeed := plan.ColSet{}
	for _, i := range idx {
		inNeed.AddAll(plan.ColsOf(n.Exprs[i]))
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	exprs := make([]plan.Expr, len(idx))
	cols := make([]plan.Column, len(idx))
	for k, i := range idx {
		exprs[k], cols[k] = n.Exprs[i], n.Cols[i]
	}
	return pl.projectExprs(in, exprs, cols, pl.est.Rows(n))
}

func (pl *physPlanner) values(n *plan.ValuesNode) (*pnode, error) {
	empty := &pnode{schema: arrow.NewSchema(nil, nil)}
	op := &ValuesOp{Names: make([]string, len(n.Cols))}
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		op.Names[i] = c.Name
		layout[i] = c.ID
	}
	for _, row := range n.Rows {
		cells := make([]expr.Expr, len(row))
		for i, e := range row {
			x, err := pl.physExpr(e, empty)
			if err != nil {
				return nil, err
			}
			t := n.Cols[i].Type
			if plan.IsNullType(t) {
				t = plan.TypString
			}
			et, err := expr.TypeOf(t)
			if err != nil {
				return nil, err
			}
			cells[i] = expr.Cast(x, et)
		}
		op.Rows = append(op.Rows, cells)
	}
	return pl.node(&PhysNode{Kind: PhysValues, Streams: 1, Values: op}, layout, float64(len(n.Rows)))
}

func (pl *physPlanner) sharedScan(n *plan.SharedScan) (*pnode, error) {
	id, ok := pl.shared[n.Def]
	if !ok {
		cols := n.Def.Plan.Columns()
		root, err := pl.plan(n.Def.Plan, plan.ColSetOf(cols))
		if err != nil {
			return nil, err
		}
		if root, err = pl.exact(root, cols); err != nil {
			return nil, err
		}
		id = len(pl.defs)
		pl.shared[n.Def] = id
		pl.defs = append(pl.defs, &PhysShared{ID: id, Name: n.Def.Name, Root: root.n})
	}
	def := pl.defs[id]
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		layout[i] = c.ID
	}
	cols := append([]PhysColumn(nil), def.Root.Columns...)
	for i := range cols {
		if i < len(n.Cols) {
			cols[i].Name = n.Cols[i].QualifiedName()
		}
	}
	return pl.node(&PhysNode{Kind: PhysSharedScan, Streams: 1, Columns: cols, Shared: &SharedOp{Def: id}}, layout, pl.est.Rows(n))
}
