package expr

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Parameters. A KindParam stands for a value known only when the
// expression runs: the outer column of a subquery evaluated row by row
// (the planner's Apply). Index numbers the parameter within its plan
// (unique across nested subqueries), Type is its type and Name names it
// for display. A parameter must be bound (BindParams) before the
// expression compiles: CompileExpr refuses one.

// KindParam is a parameter; see above.
const KindParam ExprKind = "param"

// Param is parameter slot of type t, displayed as name.
func Param(slot int, name string, t Type) Expr {
	return Expr{Kind: KindParam, Index: slot, Name: name, Type: &t}
}

// HasParams reports whether e holds a parameter.
func HasParams(e Expr) bool {
	if e.Kind == KindParam {
		return true
	}
	for _, a := range e.Args {
		if HasParams(a) {
			return true
		}
	}
	return false
}

// BindParams returns e with every parameter of a slot in vals replaced by
// its value (a literal); e itself is not changed.
func BindParams(e Expr, vals map[int]Expr) Expr {
	return mapParams(e, func(p Expr) Expr {
		if v, ok := vals[p.Index]; ok {
			return v
		}
		return p
	})
}

// NullParams returns e with every parameter replaced by a NULL of its
// type: the expression a planner compiles to check the types of one that
// holds parameters.
func NullParams(e Expr) Expr {
	return mapParams(e, func(p Expr) Expr { return LitNull(*p.Type) })
}

// mapParams returns e with each parameter p replaced by f(p), copying only
// the nodes above a parameter.
func mapParams(e Expr, f func(Expr) Expr) Expr {
	if e.Kind == KindParam {
		return f(e)
	}
	if !HasParams(e) {
		return e
	}
	c := e
	c.Args = make([]Expr, len(e.Args))
	for i, a := range e.Args {
		c.Args[i] = mapParams(a, f)
	}
	return c
}

// LiteralAt is the literal of row i of a.
func LiteralAt(a arrow.Array, i int) (Expr, error) {
	t, err := TypeOf(a.DataType())
	if err != nil {
		return Expr{}, err
	}
	if a.IsNull(i) {
		return LitNull(t), nil
	}
	switch v := a.(type) {
	case *array.Boolean:
		return LitBool(v.Value(i)), nil
	case *array.Int32:
		return LitInt32(v.Value(i)), nil
	case *array.Int64:
		return LitInt64(v.Value(i)), nil
	case *array.Float64:
		return LitFloat64(v.Value(i)), nil
	case *array.String:
		return LitString(v.Value(i)), nil
	case *array.Date32:
		return LitDate(int32(v.Value(i))), nil
	case *array.Timestamp:
		return LitTimestamp(int64(v.Value(i)), t.ID == TypeTimestampTZ), nil
	case *array.Time64:
		return LitTime(int64(v.Value(i))), nil
	case *array.Decimal64:
		return lit(t, string(appendDecimal64(nil, int64(v.Value(i)), t.Scale))), nil
	case *array.Decimal128:
		return lit(t, string(appendDecimal128(nil, v.Value(i), t.Scale))), nil
	case *array.List:
		// An array: its text form cast back to its type.
		text, err := ArrayTexts(v)
		if err != nil {
			return Expr{}, err
		}
		return Cast(LitString(text(i)), t), nil
	}
	return Expr{}, nferr.Queryf("a value of type %s cannot be a parameter", t)
}

// paramName is a parameter's display text.
func (e Expr) paramName() string {
	if e.Name != "" {
		return e.Name
	}
	return "$" + strconv.Itoa(e.Index)
}
