package phys

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
)

// Arrays as grouping and DISTINCT keys. exec hashes no list column, so an
// array key is grouped on its text form (PostgreSQL's {1,2,NULL}, which
// names exactly one array of its type) and cast back to the array after
// the operator: GROUP BY tags, SELECT DISTINCT tags, and a DISTINCT or
// GROUP BY over rows holding arrays. Two arrays are one group when their
// texts are equal, which is PostgreSQL's array equality but for -0 and 0
// among floating-point elements (equal there, two texts here). A join on
// arrays joins on their texts (textOfArrayKeys). Sorting on arrays stays
// refused by exec (text does not order arrays as PostgreSQL does).

// textOfArrays replaces the array-typed expressions of es by their text
// and reports whether there was one.
func textOfArrays(es []plan.Expr) bool {
	found := false
	for i, e := range es {
		if plan.IsArray(e.Type()) {
			es[i] = &plan.CastExpr{X: e, Typ: plan.TypString}
			found = true
		}
	}
	return found
}

// arraysFromText casts back to arrays the columns of out (laid out as
// cols) that cols types as arrays and out holds as text.
func (pl *physPlanner) arraysFromText(out *pnode, cols []plan.Column) (*pnode, error) {
	exprs := make([]plan.Expr, len(cols))
	cast := false
	for i, c := range cols {
		exprs[i] = plan.NewColRef(c)
		if plan.IsArray(c.Type) && i < out.schema.NumFields() && out.schema.Field(i).Type.ID() == arrow.STRING {
			t := c
			t.Type = plan.TypString
			exprs[i] = &plan.CastExpr{X: plan.NewColRef(t), Typ: c.Type}
			cast = true
		}
	}
	if !cast {
		return out, nil
	}
	return pl.projectExprs(out, exprs, cols, out.n.EstRows)
}

// distinctOverArrays is DISTINCT of in (exactly cols) when some column
// is an array: the arrays as text, DISTINCT, the arrays back.
func (pl *physPlanner) distinctOverArrays(in *pnode, cols []plan.Column, est float64) (*pnode, bool, error) {
	exprs := make([]plan.Expr, len(cols))
	for i, c := range cols {
		exprs[i] = plan.NewColRef(c)
	}
	if !textOfArrays(exprs) {
		return nil, false, nil
	}
	text, err := pl.projectExprs(in, exprs, cols, in.n.EstRows)
	if err != nil {
		return nil, true, err
	}
	d, err := pl.distinct(text, est)
	if err != nil {
		return nil, true, err
	}
	out, err := pl.arraysFromText(d, cols)
	return out, true, err
}

// textOfArrayKeys is equi with each pair of array keys compared as text.
func textOfArrayKeys(equi []plan.EquiCond) []plan.EquiCond {
	var out []plan.EquiCond
	for i, e := range equi {
		if !plan.IsArray(e.Left.Type()) && !plan.IsArray(e.Right.Type()) {
			continue
		}
		if out == nil {
			out = append([]plan.EquiCond(nil), equi...)
		}
		out[i].Left = &plan.CastExpr{X: e.Left, Typ: plan.TypString}
		out[i].Right = &plan.CastExpr{X: e.Right, Typ: plan.TypString}
	}
	if out == nil {
		return equi
	}
	return out
}
