package bind

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
)

// Arrays (exec/expr/array.go): ARRAY[...], casts to and from text and
// between element types, a[i], x op ANY|ALL (array value), and the array
// functions. Array values are never plan constants: '{1,2}'::int[] stays
// a cast, which the compiler folds.

// arrayExpr binds ARRAY[e, ...]: its elements converted to their common
// type.
func (b *binder) arrayExpr(x *sql.ArrayExpr, s *scope, ctx *exprCtx) (plan.Expr, error) {
	if len(x.Elems) == 0 {
		return nil, b.errorf(x, "cannot determine the type of an empty array: cast it, as ARRAY[]::integer[]")
	}
	args := make([]plan.Expr, len(x.Elems))
	for i, e := range x.Elems {
		a, err := b.expr(e, s, ctx)
		if err != nil {
			return nil, err
		}
		if plan.IsArray(a.Type()) {
			return nil, b.errorf(e, "multidimensional arrays are not supported")
		}
		args[i] = a
	}
	t, ok := plan.CommonTypeOf(plan.TypNull, args...)
	if !ok {
		return nil, b.errorf(x, "ARRAY types %s cannot be matched", typeList(args))
	}
	if plan.IsNullType(t) {
		t = plan.TypString // ARRAY[NULL]: text[], as PostgreSQL's
	}
	for i, a := range args {
		var err error
		if args[i], err = b.coerce(plan.ResolveUntyped(a, t), t); err != nil {
			return nil, b.errorf(x.Elems[i], "%v", err)
		}
	}
	return b.newCall(expr.FnArray, plan.ArrayOf(t), args...), nil
}

// arrayCast binds a cast to or from an array type.
func (b *binder) arrayCast(x *sql.Cast, arg plan.Expr, t arrow.DataType) (plan.Expr, error) {
	from := arg.Type()
	if c, ok := arg.(*plan.Const); ok && c.IsNull() {
		return plan.NullConst(t), nil
	}
	switch {
	case arrow.TypeEqual(from, t) && expr.IsInt2Vector(from) == expr.IsInt2Vector(t):
		return arg, nil
	case plan.IsString(from) && plan.IsArray(t), plan.IsArray(from) && plan.IsString(t):
	case plan.IsArray(from) && plan.IsArray(t) && plan.CanCast(expr.ArrayElem(from), expr.ArrayElem(t)):
	default:
		return nil, b.errorf(x, "cannot cast type %s to %s", plan.TypeString(from), plan.TypeString(t))
	}
	if c, ok := arg.(*plan.Const); ok && c.Untyped {
		arg = &plan.Const{Typ: plan.TypString, Val: c.Val}
	}
	return &plan.CastExpr{Zone: b.zone, X: arg, Typ: t}, nil
}

// subscript binds a[i].
func (b *binder) subscript(x *sql.Subscript, s *scope, ctx *exprCtx) (plan.Expr, error) {
	a, err := b.expr(x.X, s, ctx)
	if err != nil {
		return nil, err
	}
	i, err := b.expr(x.Index, s, ctx)
	if err != nil {
		return nil, err
	}
	if plan.IsNullType(a.Type()) {
		return plan.NullConst(plan.TypNull), nil
	}
	if !plan.IsArray(a.Type()) {
		return nil, b.errorf(x, "cannot subscript type %s because it is not an array", plan.TypeString(a.Type()))
	}
	i = plan.ResolveUntyped(i, plan.TypInt64)
	if !plan.IsInteger(i.Type()) && !plan.IsNullType(i.Type()) {
		return nil, b.errorf(x.Index, "array subscript must have type integer, not %s", plan.TypeString(i.Type()))
	}
	return b.newCall(expr.FnArraySub, expr.ArrayElem(a.Type()), a, i), nil
}

// quantifiedValue binds x op ANY|ALL (array value): each element compared
// with x, PostgreSQL's three-valued answer (ANY of an empty array FALSE,
// ALL TRUE; NULL when no element decides and some is NULL).
func (b *binder) quantifiedValue(x *sql.Quantified, s *scope, ctx *exprCtx) (plan.Expr, error) {
	xe, err := b.expr(x.X, s, ctx)
	if err != nil {
		return nil, err
	}
	ae, err := b.expr(x.ArrayExpr, s, ctx)
	if err != nil {
		return nil, err
	}
	what := "ANY"
	if x.All {
		what = "ALL"
	}
	if c, ok := ae.(*plan.Const); ok && c.Untyped {
		// ANY ('{1,2}' || ...) and the like: the array literal typed as x's.
		ae = plan.ResolveUntyped(ae, plan.ArrayOf(xe.Type()))
	}
	if !plan.IsArray(ae.Type()) {
		return nil, b.errorf(x.ArrayExpr, "op %s (array) requires an array on the right, not %s", what, plan.TypeString(ae.Type()))
	}
	et := expr.ArrayElem(ae.Type())
	t, ok := plan.CommonTypeOf(et, xe)
	if !ok {
		return nil, b.errorf(x, "operator does not exist: %s %s %s(%s)", plan.TypeString(xe.Type()), x.Op, what, plan.TypeString(ae.Type()))
	}
	if xe, err = b.coerce(plan.ResolveUntyped(xe, t), t); err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	if !arrow.TypeEqual(t, et) {
		ae = &plan.CastExpr{Zone: b.zone, X: ae, Typ: plan.ArrayOf(t)}
	}
	fn := expr.FnArrayAny
	if x.All {
		fn = expr.FnArrayAll
	}
	return b.newCall(fn, plan.TypBool, &plan.Const{Typ: plan.TypString, Val: cmpFns[x.Op]}, xe, ae), nil
}

// arrayFunc binds the array functions (nil: not one of them).
func (b *binder) arrayFunc(name string, args []plan.Expr) (plan.Expr, error) {
	arr := func(i int) error {
		if plan.IsArray(args[i].Type()) {
			return nil
		}
		if c, ok := args[i].(*plan.Const); ok && c.Untyped {
			args[i] = plan.ResolveUntyped(args[i], plan.ArrayOf(plan.TypString))
			return nil
		}
		if arrow.TypeEqual(args[i].Type(), plan.TypNull) {
			// NB: a column of NULLs (pg_database.datacl): a text[] of
			// NULLs, as psql's \l reads it.
			args[i] = &plan.CastExpr{Zone: b.zone, X: args[i], Typ: plan.ArrayOf(plan.TypString)}
			return nil
		}
		return fmt.Errorf("function %s(%s) does not exist: argument %d must be an array", name, typeList(args), i+1)
	}
	arity := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			return fmt.Errorf("function %s takes %d to %d arguments, got %d", name, lo, hi, len(args))
		}
		return nil
	}
	typed := func(i int, t arrow.DataType, what string) error {
		args[i] = plan.ResolveUntyped(args[i], t)
		at := args[i].Type()
		switch {
		case plan.IsNullType(at), arrow.TypeEqual(at, t):
			return nil
		case plan.IsInteger(t) && plan.IsInteger(at):
			return nil
		}
		return fmt.Errorf("function %s: argument %d must be %s, not %s", name, i+1, what, plan.TypeString(at))
	}
	switch name {
	case "array_length", "array_upper", "array_lower":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		if err := typed(1, plan.TypInt64, "an integer"); err != nil {
			return nil, err
		}
		// array_upper(a, 1) is the length: PostgreSQL's arrays here start at 1.
		n := b.newCall(expr.FnArrayLength, plan.TypInt32, args...)
		if name != "array_lower" {
			return n, nil
		}
		// array_lower: 1 where the dimension exists (array_length is not NULL).
		return &plan.CaseExpr{Whens: []plan.Expr{b.newCall(plan.FnNotNull, plan.TypBool, n)}, Thens: []plan.Expr{&plan.Const{Typ: plan.TypInt32, Val: int32(1)}},
			Else: plan.NullConst(plan.TypInt32), Typ: plan.TypInt32}, nil
	case "cardinality":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		return b.newCall(expr.FnCardinality, plan.TypInt32, args...), nil
	case "array_to_string":
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			if err := typed(i, plan.TypString, "text"); err != nil {
				return nil, err
			}
		}
		return b.newCall(expr.FnArrayToString, plan.TypString, args...), nil
	case "string_to_array":
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		for i := range args {
			if err := typed(i, plan.TypString, "text"); err != nil {
				return nil, err
			}
		}
		return b.newCall(expr.FnStringToArray, plan.ArrayOf(plan.TypString), args...), nil
	case "array_append", "array_prepend", "array_cat":
		// PostgreSQL's: a || x, x || a and a || b, with the element
		// side an element even when it is an untyped literal.
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		ai, ei := 0, 1
		if name == "array_prepend" {
			ai, ei = 1, 0
		}
		if name == "array_cat" {
			// An untyped literal ('{7,8}') is the other side's array.
			for i, o := range []int{1, 0} {
				if c, ok := args[i].(*plan.Const); ok && c.Untyped && plan.IsArray(args[o].Type()) {
					args[i] = plan.ResolveUntyped(args[i], args[o].Type())
				}
			}
		}
		if err := arr(ai); err != nil {
			return nil, err
		}
		if name == "array_cat" {
			if err := arr(ei); err != nil {
				return nil, err
			}
		} else {
			args[ei] = plan.ResolveUntyped(args[ei], expr.ArrayElem(args[ai].Type()))
			if plan.IsArray(args[ei].Type()) {
				return nil, fmt.Errorf("function %s(%s) does not exist: argument %d must be an element", name, typeList(args), ei+1)
			}
		}
		return b.concatArrays(args[0], args[1])
	case "array_position":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		et := expr.ArrayElem(args[0].Type())
		t, ok := plan.CommonTypeOf(et, args[1])
		if !ok {
			return nil, fmt.Errorf("function array_position(%s) does not exist", typeList(args))
		}
		x, err := b.coerce(plan.ResolveUntyped(args[1], t), t)
		if err != nil {
			return nil, err
		}
		a := args[0]
		if !arrow.TypeEqual(t, et) {
			a = &plan.CastExpr{Zone: b.zone, X: a, Typ: plan.ArrayOf(t)}
		}
		return b.newCall(expr.FnArrayPosition, plan.TypInt32, a, x), nil
	}
	return nil, nil
}

// arrayConcat binds a || b with an array on a side: the arrays' elements
// one after the other (array_cat: a NULL array adds none, both NULL is
// NULL), an element on the other side a one-element array, as
// PostgreSQL's array || array, array || element and element || array.
func (b *binder) arrayConcat(x *sql.BinaryExpr, l, r plan.Expr) (plan.Expr, error) {
	// An untyped literal beside an array is an array ('{1,2}').
	if plan.IsArray(l.Type()) {
		if c, ok := r.(*plan.Const); ok && c.Untyped {
			r = plan.ResolveUntyped(r, l.Type())
		}
	} else if c, ok := l.(*plan.Const); ok && c.Untyped {
		l = plan.ResolveUntyped(l, r.Type())
	}
	e, err := b.concatArrays(l, r)
	if err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	return e, nil
}

// concatArrays is l || r with an array on a side (arrayConcat, whose
// untyped literals are resolved): the common element type's array_cat.
func (b *binder) concatArrays(l, r plan.Expr) (plan.Expr, error) {
	elemOf := func(e plan.Expr) arrow.DataType {
		if plan.IsArray(e.Type()) {
			return expr.ArrayElem(e.Type())
		}
		return e.Type()
	}
	et, ok := plan.CommonType(elemOf(l), elemOf(r))
	if !ok || plan.IsArray(et) {
		return nil, fmt.Errorf("operator does not exist: %s || %s", plan.TypeString(l.Type()), plan.TypeString(r.Type()))
	}
	if plan.IsNullType(et) {
		et = plan.TypString
	}
	at := plan.ArrayOf(et)
	side := func(e plan.Expr) (plan.Expr, error) {
		if !plan.IsArray(e.Type()) {
			v, err := b.coerce(plan.ResolveUntyped(e, et), et)
			if err != nil {
				return nil, err
			}
			return b.newCall(expr.FnArray, at, v), nil
		}
		if !arrow.TypeEqual(e.Type(), at) || expr.IsInt2Vector(e.Type()) {
			return &plan.CastExpr{Zone: b.zone, X: e, Typ: at}, nil
		}
		return e, nil
	}
	var err error
	if l, err = side(l); err != nil {
		return nil, err
	}
	if r, err = side(r); err != nil {
		return nil, err
	}
	return b.newCall(expr.FnArrayCat, at, l, r), nil
}

// arrayContains binds PostgreSQL's array operators a @> b (a holds every
// element of b), a <@ b (b holds every element of a) and a && b (they
// share an element), over arrays of a common element type; an untyped
// literal beside an array is an array ('{1,2}').
func (b *binder) arrayContains(x *sql.BinaryExpr, l, r plan.Expr) (plan.Expr, error) {
	if c, ok := r.(*plan.Const); ok && c.Untyped && plan.IsArray(l.Type()) {
		r = plan.ResolveUntyped(r, l.Type())
	}
	if c, ok := l.(*plan.Const); ok && c.Untyped && plan.IsArray(r.Type()) {
		l = plan.ResolveUntyped(l, r.Type())
	}
	if !plan.IsArray(l.Type()) || !plan.IsArray(r.Type()) {
		return nil, b.errorf(x, "operator does not exist: %s %s %s (nicflow's %s takes arrays)", plan.TypeString(l.Type()), x.Op, plan.TypeString(r.Type()), x.Op)
	}
	et, ok := plan.CommonType(expr.ArrayElem(l.Type()), expr.ArrayElem(r.Type()))
	if !ok || plan.IsArray(et) {
		return nil, b.errorf(x, "operator does not exist: %s %s %s", plan.TypeString(l.Type()), x.Op, plan.TypeString(r.Type()))
	}
	at := plan.ArrayOf(et)
	cast := func(e plan.Expr) plan.Expr {
		if arrow.TypeEqual(e.Type(), at) {
			return e
		}
		return &plan.CastExpr{Zone: b.zone, X: e, Typ: at}
	}
	l, r = cast(l), cast(r)
	switch x.Op {
	case "<@":
		return b.newCall(expr.FnArrayContains, plan.TypBool, r, l), nil
	case "&&":
		return b.newCall(expr.FnArrayOverlap, plan.TypBool, l, r), nil
	}
	return b.newCall(expr.FnArrayContains, plan.TypBool, l, r), nil
}
