package plan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// ValidatePlan checks a plan's internal consistency: every column
// reference resolves to a column of the node's input(s) (or of an
// enclosing query, for subqueries) with the same type, computed columns
// have their expression's type, and equi-join keys have equal types. The
// binder's and optimizer's tests run it on every plan; a physical planner
// may run it before lowering. Errors are KindInternal: an invalid plan is
// a bug.
func ValidatePlan(p Plan) error {
	return validate(p, map[ColumnID]arrow.DataType{}, map[*SharedDef]bool{})
}

func colTypes(cols []Column) map[ColumnID]arrow.DataType {
	m := make(map[ColumnID]arrow.DataType, len(cols))
	for _, c := range cols {
		m[c.ID] = c.Type
	}
	return m
}

func validate(p Plan, outer map[ColumnID]arrow.DataType, seen map[*SharedDef]bool) error {
	bad := func(format string, args ...any) error {
		return nferr.Internalf("invalid plan at %T: %s", p, fmt.Sprintf(format, args...))
	}
	scope := func(cols ...[]Column) map[ColumnID]arrow.DataType {
		m := map[ColumnID]arrow.DataType{}
		for k, v := range outer {
			m[k] = v
		}
		for _, cs := range cols {
			for k, v := range colTypes(cs) {
				m[k] = v
			}
		}
		return m
	}
	for i, in := range p.Inputs() {
		avail := outer
		if j, ok := p.(*JoinNode); ok && j.Lateral && i == 1 {
			avail = scope(j.Left.Columns()) // the right side may read the left one's columns
		}
		if err := validate(in, avail, seen); err != nil {
			return err
		}
	}
	check := func(e Expr, avail map[ColumnID]arrow.DataType) error {
		var err error
		WalkExpr(e, func(x Expr) bool {
			switch y := x.(type) {
			case *ColRef:
				t, ok := avail[y.ID]
				if !ok {
					err = bad("column %s (#%d) is not available", y.Name, y.ID)
				} else if !arrow.TypeEqual(t, y.Typ) {
					err = bad("column %s (#%d) has type %s, the reference says %s", y.Name, y.ID, TypeString(t), TypeString(y.Typ))
				}
			case *SubqueryExpr:
				if e2 := validate(y.Plan, avail, seen); e2 != nil {
					err = e2
				}
			}
			return err == nil
		})
		return err
	}
	var in []Column
	if len(p.Inputs()) == 1 {
		in = p.Inputs()[0].Columns()
	}
	switch n := p.(type) {
	case *ScanNode:
		if len(n.Cols) != len(n.Fields) {
			return bad("%d columns but %d fields", len(n.Cols), len(n.Fields))
		}
		for i, c := range n.Cols {
			f := n.Fields[i]
			if f < 0 || f >= n.Table.Schema.NumFields() || !arrow.TypeEqual(n.Table.Schema.Field(f).Type, c.Type) {
				return bad("column %s does not match field %d of %s", c.Name, f, n.Table.Name)
			}
		}
		for _, f := range n.Filters {
			if err := check(f, scope(n.Cols)); err != nil {
				return err
			}
		}
	case *ProjectNode:
		if len(n.Exprs) != len(n.Cols) {
			return bad("%d expressions but %d columns", len(n.Exprs), len(n.Cols))
		}
		for i, e := range n.Exprs {
			if err := check(e, scope(in)); err != nil {
				return err
			}
			if !arrow.TypeEqual(e.Type(), n.Cols[i].Type) {
				return bad("column %s has type %s but its expression %s has %s", n.Cols[i].Name, TypeString(n.Cols[i].Type), e, TypeString(e.Type()))
			}
		}
	case *AggregateNode:
		if len(n.Groups) != len(n.GroupCols) || len(n.Aggs) != len(n.AggCols) {
			return bad("group or aggregate lists do not match their columns")
		}
		for i, g := range n.Groups {
			if err := check(g, scope(in)); err != nil {
				return err
			}
			if !arrow.TypeEqual(g.Type(), n.GroupCols[i].Type) {
				return bad("group column %s type mismatch", n.GroupCols[i].Name)
			}
		}
		for i, a := range n.Aggs {
			if a.Arg != nil {
				if err := check(a.Arg, scope(in)); err != nil {
					return err
				}
			}
			if a.Filter != nil {
				if err := check(a.Filter, scope(in)); err != nil {
					return err
				}
			}
			if !arrow.TypeEqual(a.Typ, n.AggCols[i].Type) {
				return bad("aggregate %s type mismatch", a)
			}
		}
	case *JoinNode:
		l, r := n.Left.Columns(), n.Right.Columns()
		for _, q := range n.Equi {
			if err := check(q.Left, scope(l)); err != nil {
				return err
			}
			if err := check(q.Right, scope(r)); err != nil {
				return err
			}
			if !arrow.TypeEqual(q.Left.Type(), q.Right.Type()) {
				return bad("join keys %s and %s have different types %s and %s", q.Left, q.Right, TypeString(q.Left.Type()), TypeString(q.Right.Type()))
			}
		}
		if n.Cond != nil {
			if err := check(n.Cond, scope(l, r)); err != nil {
				return err
			}
		}
		if (n.Kind == JoinMark) != (n.Mark != nil) {
			return bad("mark column present iff mark join")
		}
		if n.NullAware && len(n.Equi) == 0 {
			return bad("null-aware join without its IN comparison")
		}
	case *RecursiveNode:
		a, t := n.Anchor.Columns(), n.Term.Columns()
		if len(a) != len(n.Cols) || len(t) != len(n.Cols) {
			return bad("recursive CTE terms have %d and %d columns, output %d", len(a), len(t), len(n.Cols))
		}
		for i, c := range n.Cols {
			if !arrow.TypeEqual(a[i].Type, c.Type) || !arrow.TypeEqual(t[i].Type, c.Type) {
				return bad("recursive CTE column %d types differ", i+1)
			}
		}
	case *ApplyNode:
		sc := n.Sub.Columns()
		if !n.Table && (len(sc) != 1 || !arrow.TypeEqual(sc[0].Type, n.Col.Type)) {
			return bad("apply of a subquery of %d columns for a column of type %s", len(sc), TypeString(n.Col.Type))
		}
		if err := validate(n.Sub, scope(n.Input.Columns()), seen); err != nil {
			return err
		}
	case *WorkScan:
		if n.Work == nil {
			return bad("work table scan without its work table")
		}
	case *SetOpNode:
		l, r := n.Left.Columns(), n.Right.Columns()
		if len(l) != len(n.Cols) || len(r) != len(n.Cols) {
			return bad("set operation inputs have %d and %d columns, output %d", len(l), len(r), len(n.Cols))
		}
		for i, c := range n.Cols {
			if !arrow.TypeEqual(l[i].Type, c.Type) || !arrow.TypeEqual(r[i].Type, c.Type) {
				return bad("set operation column %d types differ", i+1)
			}
		}
	case *ValuesNode:
		for _, row := range n.Rows {
			if len(row) != len(n.Cols) {
				return bad("row of %d values for %d columns", len(row), len(n.Cols))
			}
			for i, e := range row {
				if err := check(e, scope()); err != nil {
					return err
				}
				if !arrow.TypeEqual(e.Type(), n.Cols[i].Type) {
					return bad("value %s has type %s, column %s", e, TypeString(e.Type()), TypeString(n.Cols[i].Type))
				}
			}
		}
	case *SharedScan:
		dc := n.Def.Plan.Columns()
		if len(dc) != len(n.Cols) {
			return bad("shared scan of %d columns over a plan of %d", len(n.Cols), len(dc))
		}
		for i := range dc {
			if !arrow.TypeEqual(dc[i].Type, n.Cols[i].Type) {
				return bad("shared scan column %d type differs", i+1)
			}
		}
		if !seen[n.Def] {
			seen[n.Def] = true
			if err := validate(n.Def.Plan, map[ColumnID]arrow.DataType{}, seen); err != nil {
				return err
			}
		}
	default:
		for _, e := range NodeExprs(p) {
			if err := check(e, scope(in)); err != nil {
				return err
			}
		}
	}
	if f, ok := p.(*FilterNode); ok && !IsBool(f.Cond.Type()) {
		return bad("filter condition %s is not boolean", f.Cond)
	}
	return nil
}
