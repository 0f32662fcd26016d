package sql

// Walk calls fn for n and, when fn returns true, for every node below n in
// source order. Identifiers and object names are not visited on their own.
func Walk(n Node, fn func(Node) bool) {
	if n == nil || isNilNode(n) || !fn(n) {
		return
	}
	expr := func(e Expr) {
		if e != nil {
			Walk(e, fn)
		}
	}
	exprs := func(es []Expr) {
		for _, e := range es {
			Walk(e, fn)
		}
	}
	items := func(its []*SelectItem) {
		for _, it := range its {
			Walk(it, fn)
		}
	}
	orders := func(os []*OrderItem) {
		for _, o := range os {
			Walk(o, fn)
		}
	}
	switch n := n.(type) {
	case *Query:
		for _, c := range n.With {
			Walk(c, fn)
		}
		Walk(n.Body, fn)
		orders(n.OrderBy)
		expr(n.Limit)
		expr(n.Offset)
	case *CTE:
		Walk(n.Query, fn)
	case *Select:
		exprs(n.DistinctOn)
		items(n.Items)
		for _, t := range n.From {
			Walk(t, fn)
		}
		expr(n.Where)
		exprs(n.GroupBy)
		expr(n.Having)
		for _, w := range n.Windows {
			Walk(w.Spec, fn)
		}
	case *SelectItem:
		expr(n.Expr)
	case *SetOp:
		Walk(n.Left, fn)
		Walk(n.Right, fn)
	case *Values:
		for _, r := range n.Rows {
			exprs(r)
		}
	case *OrderItem:
		expr(n.Expr)
	case *TableName:
		if n.Alias != nil {
			Walk(n.Alias, fn)
		}
	case *DerivedTable:
		Walk(n.Query, fn)
		if n.Alias != nil {
			Walk(n.Alias, fn)
		}
	case *TableFunc:
		exprs(n.Args)
		if n.Alias != nil {
			Walk(n.Alias, fn)
		}
	case *Join:
		Walk(n.Left, fn)
		Walk(n.Right, fn)
		expr(n.On)
	case *UnaryExpr:
		expr(n.X)
	case *BinaryExpr:
		expr(n.L)
		expr(n.R)
	case *IsExpr:
		expr(n.X)
	case *IsDistinct:
		expr(n.L)
		expr(n.R)
	case *RowExpr:
		exprs(n.Elems)
	case *Between:
		expr(n.X)
		expr(n.Lo)
		expr(n.Hi)
	case *InList:
		expr(n.X)
		exprs(n.List)
	case *InSubquery:
		expr(n.X)
		Walk(n.Query, fn)
	case *Exists:
		Walk(n.Query, fn)
	case *Subquery:
		Walk(n.Query, fn)
	case *ArraySubquery:
		Walk(n.Query, fn)
	case *FieldSelect:
		expr(n.X)
	case *Like:
		expr(n.X)
		expr(n.Pattern)
		expr(n.Escape)
	case *Case:
		expr(n.Operand)
		for _, w := range n.Whens {
			Walk(w, fn)
		}
		expr(n.Else)
	case *When:
		expr(n.Cond)
		expr(n.Result)
	case *Cast:
		expr(n.X)
		Walk(n.Type, fn)
	case *TypedLiteral:
		Walk(n.Type, fn)
	case *StructLit:
		exprs(n.Values)
	case *ArrayExpr:
		exprs(n.Elems)
	case *Subscript:
		expr(n.X)
		expr(n.Index)
	case *FuncCall:
		exprs(n.Args)
		orders(n.OrderBy)
		orders(n.WithinGroup)
		expr(n.Filter)
		if n.Over != nil {
			Walk(n.Over, fn)
		}
	case *WindowSpec:
		exprs(n.PartitionBy)
		orders(n.OrderBy)
		if n.Frame != nil {
			Walk(n.Frame, fn)
		}
	case *Frame:
		Walk(n.Start, fn)
		if n.End != nil {
			Walk(n.End, fn)
		}
	case *FrameBound:
		expr(n.Offset)
	case *Extract:
		expr(n.X)
	case *Quantified:
		expr(n.X)
		if n.Query != nil {
			Walk(n.Query, fn)
		}
		exprs(n.Array)
		expr(n.ArrayExpr)
		if n.Param != nil {
			Walk(n.Param, fn)
		}
	case *GroupingSets:
		for _, set := range n.Sets {
			exprs(set)
		}
	case *CreateView:
		Walk(n.Query, fn)
	case *CreateTable:
		for _, c := range n.Columns {
			Walk(c, fn)
		}
		for _, c := range n.Constraints {
			expr(c.Check)
		}
		if n.AsQuery != nil {
			Walk(n.AsQuery, fn)
		}
	case *CreateExternalTable:
		for _, c := range n.Columns {
			Walk(c, fn)
		}
	case *ColumnDef:
		Walk(n.Type, fn)
		expr(n.Default)
	case *Insert:
		Walk(n.Query, fn)
		if oc := n.OnConflict; oc != nil {
			for _, a := range oc.Set {
				expr(a.Value)
			}
			expr(oc.Where)
		}
		items(n.Returning)
	case *Delete:
		for _, t := range n.Using {
			Walk(t, fn)
		}
		expr(n.Where)
		items(n.Returning)
	case *Update:
		for _, a := range n.Set {
			expr(a.Value)
		}
		for _, t := range n.From {
			Walk(t, fn)
		}
		expr(n.Where)
		items(n.Returning)
	case *Copy:
		if n.Query != nil {
			Walk(n.Query, fn)
		}
		for _, o := range n.Options {
			Walk(o, fn)
		}
	case *Option:
		expr(n.Value)
	case *Explain:
		Walk(n.Stmt, fn)
	case *Set:
		expr(n.Value)
	}
}

// isNilNode reports a typed nil pointer stored in an interface.
func isNilNode(n Node) bool {
	switch n := n.(type) {
	case *Query:
		return n == nil
	case *TypeName:
		return n == nil
	case *FrameBound:
		return n == nil
	case *TableAlias:
		return n == nil
	}
	return false
}
