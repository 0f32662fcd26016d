package engine

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/sql"
)

// expr binds an expression in scope s.
func (b *binder) expr(e sql.Expr, s *scope, ctx *exprCtx) (Expr, error) {
	switch x := e.(type) {
	case *sql.ColumnRef:
		c, err := b.resolve(s, x)
		if err != nil {
			return nil, err
		}
		return colRef(c), nil
	case *sql.Star:
		return nil, b.errorf(x, "* is only allowed in a select list or in count(*)")
	case *sql.Literal:
		return b.literal(x)
	case *sql.TypedLiteral:
		t, err := b.typeOf(x.Type)
		if err != nil {
			return nil, err
		}
		c, err := castConst(&Const{Typ: typString, Val: x.Value}, t)
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return c, nil
	case *sql.IntervalLit:
		iv, err := parseInterval(x.Value, x.Unit, x.ToUnit)
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return &Const{Typ: typInterval, Val: iv}, nil
	case *sql.UnaryExpr:
		arg, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case "NOT":
			if arg, err = b.boolCheck(arg, x.X, "NOT"); err != nil {
				return nil, err
			}
			return call(fnNot, typBool, arg), nil
		case "-":
			arg = resolveUntyped(arg, typInt32)
			if !isNumeric(arg.Type()) && !isNullType(arg.Type()) && !isInterval(arg.Type()) {
				return nil, b.errorf(x, "operator does not exist: -%s", typeString(arg.Type()))
			}
			return foldNow(call(fnNeg, arg.Type(), arg)), nil
		default: // "+"
			if !isNumeric(arg.Type()) {
				return nil, b.errorf(x, "operator does not exist: +%s", typeString(arg.Type()))
			}
			return arg, nil
		}
	case *sql.BinaryExpr:
		return b.binary(x, s, ctx)
	case *sql.IsExpr:
		arg, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		if x.What == sql.IsNull || x.What == sql.IsUnknown {
			if x.What == sql.IsUnknown {
				if arg, err = b.boolCheck(arg, x.X, "IS UNKNOWN"); err != nil {
					return nil, err
				}
			}
			fn := fnIsNull
			if x.Not {
				fn = fnNotNull
			}
			return call(fn, typBool, arg), nil
		}
		if arg, err = b.boolCheck(arg, x.X, "IS TRUE/FALSE"); err != nil {
			return nil, err
		}
		fn := fnNotDist
		if x.Not {
			fn = fnDistinct
		}
		return call(fn, typBool, arg, boolConst(x.What == sql.IsTrue)), nil
	case *sql.IsDistinct:
		l, r, err := b.comparable(x.L, x.R, s, ctx, x, "IS DISTINCT FROM")
		if err != nil {
			return nil, err
		}
		fn := fnDistinct
		if x.Not {
			fn = fnNotDist
		}
		return call(fn, typBool, l, r), nil
	case *sql.Between:
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		lo, err := b.expr(x.Lo, s, ctx)
		if err != nil {
			return nil, err
		}
		hi, err := b.expr(x.Hi, s, ctx)
		if err != nil {
			return nil, err
		}
		t, ok := commonTypeOf(typNull, xe, lo, hi)
		if !ok {
			return nil, b.errorf(x, "BETWEEN types %s, %s and %s cannot be compared", typeString(xe.Type()), typeString(lo.Type()), typeString(hi.Type()))
		}
		var cs [3]Expr
		for i, v := range []Expr{xe, lo, hi} {
			if cs[i], err = coerce(v, t); err != nil {
				return nil, b.errorf(x, "%v", err)
			}
		}
		e := Expr(andOf([]Expr{call(fnGe, typBool, cs[0], cs[1]), call(fnLe, typBool, cs[0], cs[2])}))
		if x.Not {
			e = call(fnNot, typBool, e)
		}
		return e, nil
	case *sql.InList:
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		list := []Expr{xe}
		for _, le := range x.List {
			v, err := b.expr(le, s, ctx)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		t, ok := commonTypeOf(typNull, list...)
		if !ok {
			return nil, b.errorf(x, "IN list types cannot be matched with %s", typeString(xe.Type()))
		}
		for i := range list {
			if list[i], err = coerce(list[i], t); err != nil {
				return nil, b.errorf(x, "%v", err)
			}
		}
		e := Expr(call(fnIn, typBool, list...))
		if x.Not {
			e = call(fnNot, typBool, e)
		}
		return e, nil
	case *sql.InSubquery:
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		plan, err := b.subquery(x.Query, s, 1, "IN")
		if err != nil {
			return nil, err
		}
		sc := plan.Columns()[0]
		t, ok := commonTypeOf(sc.Type, xe)
		if !ok {
			return nil, b.errorf(x, "IN: types %s and %s cannot be compared", typeString(xe.Type()), typeString(sc.Type))
		}
		if xe, err = coerce(xe, t); err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		if !arrow.TypeEqual(t, sc.Type) {
			plan = b.castProject(plan, []Expr{&CastExpr{X: colRef(sc), Typ: t}})
		}
		e := Expr(b.newSubquery(SubIn, xe, plan, typBool))
		if x.Not {
			e = call(fnNot, typBool, e)
		}
		return e, nil
	case *sql.Exists:
		plan, err := b.subquery(x.Query, s, -1, "EXISTS")
		if err != nil {
			return nil, err
		}
		return b.newSubquery(SubExists, nil, plan, typBool), nil
	case *sql.Subquery:
		plan, err := b.subquery(x.Query, s, 1, "a scalar subquery")
		if err != nil {
			return nil, err
		}
		return b.newSubquery(SubScalar, nil, plan, plan.Columns()[0].Type), nil
	case *sql.Like:
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		pat, err := b.expr(x.Pattern, s, ctx)
		if err != nil {
			return nil, err
		}
		args := []Expr{resolveUntyped(xe, typString), resolveUntyped(pat, typString)}
		if x.Escape != nil {
			esc, err := b.expr(x.Escape, s, ctx)
			if err != nil {
				return nil, err
			}
			args = append(args, resolveUntyped(esc, typString))
		}
		for i, a := range args {
			if !isString(a.Type()) && !isNullType(a.Type()) {
				what := []string{"operand", "pattern", "escape"}[i]
				return nil, b.errorf(x, "LIKE %s must be a string, not %s", what, typeString(a.Type()))
			}
		}
		if x.ILike {
			args[0] = call(fnLower, typString, args[0])
			args[1] = foldNow(call(fnLower, typString, args[1]))
		}
		e := Expr(call(fnLike, typBool, args...))
		if x.Not {
			e = call(fnNot, typBool, e)
		}
		return e, nil
	case *sql.Case:
		return b.caseExpr(x, s, ctx)
	case *sql.Cast:
		arg, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		t, err := b.typeOf(x.Type)
		if err != nil {
			return nil, err
		}
		if !canCast(arg.Type(), t) {
			return nil, b.errorf(x, "cannot cast type %s to %s", typeString(arg.Type()), typeString(t))
		}
		if c, ok := arg.(*Const); ok {
			v, err := castConst(c, t)
			if err != nil {
				return nil, b.errorf(x, "%v", err)
			}
			return v, nil
		}
		if arrow.TypeEqual(arg.Type(), t) {
			return arg, nil
		}
		return &CastExpr{X: arg, Typ: t}, nil
	case *sql.Extract:
		arg, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		arg = resolveUntyped(arg, typDate)
		switch x.Field {
		case "year", "month", "day", "quarter", "dow", "doy", "week", "isodow", "epoch":
		default:
			return nil, b.errorf(x, "EXTRACT field %q is not supported for dates (want year, quarter, month, week, day, dow, doy, isodow or epoch)", x.Field)
		}
		if !isDate(arg.Type()) && !isNullType(arg.Type()) {
			return nil, b.errorf(x, "EXTRACT needs a date, not %s", typeString(arg.Type()))
		}
		return foldNow(call(fnExtract, typInt64, &Const{Typ: typString, Val: x.Field}, arg)), nil
	case *sql.FuncCall:
		return b.funcCall(x, s, ctx)
	}
	return nil, b.errorf(e, "unsupported expression %T", e)
}

// subquery binds a subquery in scope s; want is the number of columns it
// must return (-1: any).
func (b *binder) subquery(q *sql.Query, s *scope, want int, what string) (Plan, error) {
	plan, _, err := b.query(q, s)
	if err != nil {
		return nil, err
	}
	if want > 0 && len(plan.Columns()) != want {
		return nil, b.errorf(q, "subquery for %s must return exactly one column, not %d", what, len(plan.Columns()))
	}
	return plan, nil
}

func (b *binder) newSubquery(kind SubqueryKind, x Expr, plan Plan, t arrow.DataType) *SubqueryExpr {
	b.nextSub++
	free := freeCols(plan)
	outer := make([]ColumnID, 0, len(free))
	for id := range free {
		outer = append(outer, id)
	}
	sortIDs(outer)
	return &SubqueryExpr{Kind: kind, X: x, Plan: plan, Outer: outer, Typ: t, ID: b.nextSub}
}

func (b *binder) literal(x *sql.Literal) (Expr, error) {
	switch x.Kind {
	case sql.LitNull:
		return nullConst(typNull), nil
	case sql.LitBool:
		return boolConst(x.Text == "true"), nil
	case sql.LitString:
		return &Const{Typ: typString, Val: x.Text, untyped: true}, nil
	}
	c, err := parseNumber(x.Text)
	if err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	return c, nil
}

// boolCheck requires a boolean (or NULL) expression.
func (b *binder) boolCheck(e Expr, at sql.Node, clause string) (Expr, error) {
	e = resolveUntyped(e, typBool)
	if c, ok := e.(*Const); ok && isString(c.Typ) {
		v, err := castConst(c, typBool)
		if err != nil {
			return nil, b.errorf(at, "argument of %s must be boolean: %v", clause, err)
		}
		return v, nil
	}
	if isNullType(e.Type()) {
		return nullConst(typBool), nil
	}
	if !isBool(e.Type()) {
		return nil, b.errorf(at, "argument of %s must be boolean, not %s", clause, typeString(e.Type()))
	}
	return e, nil
}

// comparable binds two operands and converts them to their common type.
func (b *binder) comparable(le, re sql.Expr, s *scope, ctx *exprCtx, at sql.Node, op string) (Expr, Expr, error) {
	l, err := b.expr(le, s, ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := b.expr(re, s, ctx)
	if err != nil {
		return nil, nil, err
	}
	t, ok := commonTypeOf(typNull, l, r)
	if !ok {
		return nil, nil, b.errorf(at, "operator does not exist: %s %s %s", typeString(l.Type()), op, typeString(r.Type()))
	}
	if l, err = coerce(l, t); err != nil {
		return nil, nil, b.errorf(le, "%v", err)
	}
	if r, err = coerce(r, t); err != nil {
		return nil, nil, b.errorf(re, "%v", err)
	}
	return l, r, nil
}

var cmpFns = map[string]string{"=": fnEq, "<>": fnNe, "<": fnLt, "<=": fnLe, ">": fnGt, ">=": fnGe}
var arithFns = map[string]string{"+": fnAdd, "-": fnSub, "*": fnMul, "/": fnDiv, "%": fnMod}

func (b *binder) binary(x *sql.BinaryExpr, s *scope, ctx *exprCtx) (Expr, error) {
	if fn, ok := cmpFns[x.Op]; ok {
		l, r, err := b.comparable(x.L, x.R, s, ctx, x, x.Op)
		if err != nil {
			return nil, err
		}
		if isInterval(l.Type()) {
			return nil, b.errorf(x, "comparing intervals is not supported")
		}
		return foldNow(call(fn, typBool, l, r)), nil
	}
	l, err := b.expr(x.L, s, ctx)
	if err != nil {
		return nil, err
	}
	r, err := b.expr(x.R, s, ctx)
	if err != nil {
		return nil, err
	}
	switch x.Op {
	case "AND", "OR":
		if l, err = b.boolCheck(l, x.L, x.Op); err != nil {
			return nil, err
		}
		if r, err = b.boolCheck(r, x.R, x.Op); err != nil {
			return nil, err
		}
		if x.Op == "AND" {
			return andOf([]Expr{l, r}), nil
		}
		return orOf([]Expr{l, r}), nil
	case "||":
		l, r = resolveUntyped(l, typString), resolveUntyped(r, typString)
		if !isString(l.Type()) && !isString(r.Type()) && !isNullType(l.Type()) && !isNullType(r.Type()) {
			return nil, b.errorf(x, "operator does not exist: %s || %s", typeString(l.Type()), typeString(r.Type()))
		}
		toStr := func(e Expr) Expr {
			if isString(e.Type()) {
				return e
			}
			if c, ok := e.(*Const); ok {
				if v, err := castConst(c, typString); err == nil {
					return v
				}
			}
			return &CastExpr{X: e, Typ: typString}
		}
		return foldNow(call(fnConcat, typString, toStr(l), toStr(r))), nil
	case "^":
		return nil, b.errorf(x, "operator ^ is not supported")
	}
	fn := arithFns[x.Op]
	// Untyped string literals take the other side's type ('1' + 1 is 2).
	l, r = resolveUntyped(l, r.Type()), resolveUntyped(r, l.Type())
	lt, rt := l.Type(), r.Type()
	// Dates and intervals.
	switch {
	case isDate(lt) && (isInteger(rt) || isInterval(rt)) && (fn == fnAdd || fn == fnSub),
		isInteger(lt) && isDate(rt) && fn == fnAdd,
		isInterval(lt) && isDate(rt) && fn == fnAdd:
		if iv, ok := intervalOf(l, r); ok && (iv.Nanoseconds != 0) {
			return nil, b.errorf(x, "adding an interval with hours, minutes or seconds to a date is not supported")
		}
		return foldNow(call(fn, typDate, l, r)), nil
	case isDate(lt) && isDate(rt) && fn == fnSub:
		return foldNow(call(fn, typInt32, l, r)), nil
	case isInterval(lt) && isInterval(rt) && (fn == fnAdd || fn == fnSub):
		return foldNow(call(fn, typInterval, l, r)), nil
	}
	t, ok := arithType(fn, lt, rt)
	if !ok {
		return nil, b.errorf(x, "operator does not exist: %s %s %s", typeString(lt), x.Op, typeString(rt))
	}
	// Operands: integer literals next to decimals become the smallest
	// decimal that holds them, so "1 - l_discount" stays decimal(15,2)-ish.
	l, r = shrinkIntLiteral(l, rt), shrinkIntLiteral(r, lt)
	if t2, ok := arithType(fn, l.Type(), r.Type()); ok {
		t = t2
	}
	if isFloat(t) {
		l, _ = coerce(l, typFloat64)
		r, _ = coerce(r, typFloat64)
	}
	return foldNow(call(fn, t, l, r)), nil
}

func intervalOf(a, b Expr) (arrow.MonthDayNanoInterval, bool) {
	for _, e := range []Expr{a, b} {
		if c, ok := e.(*Const); ok {
			if v, ok := c.Val.(arrow.MonthDayNanoInterval); ok {
				return v, true
			}
		}
	}
	return arrow.MonthDayNanoInterval{}, false
}

// shrinkIntLiteral turns an integer constant used with a decimal into the
// smallest decimal(p, 0) holding it.
func shrinkIntLiteral(e Expr, other arrow.DataType) Expr {
	c, ok := e.(*Const)
	if !ok || c.IsNull() || !isInteger(c.Typ) || !isDecimal(other) {
		return e
	}
	v := constInt(c)
	digits := int32(len(fmt.Sprint(absInt64(v))))
	d, err := castConst(c, decimalType(digits, 0))
	if err != nil {
		return e
	}
	return d
}

func absInt64(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

func (b *binder) caseExpr(x *sql.Case, s *scope, ctx *exprCtx) (Expr, error) {
	var operand Expr
	var err error
	if x.Operand != nil {
		if operand, err = b.expr(x.Operand, s, ctx); err != nil {
			return nil, err
		}
	}
	c := &CaseExpr{}
	var results []Expr
	for _, w := range x.Whens {
		cond, err := b.expr(w.Cond, s, ctx)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			t, ok := commonTypeOf(typNull, operand, cond)
			if !ok {
				return nil, b.errorf(w, "CASE operand of type %s cannot be compared with %s", typeString(operand.Type()), typeString(cond.Type()))
			}
			o, _ := coerce(operand, t)
			if cond, err = coerce(cond, t); err != nil {
				return nil, b.errorf(w.Cond, "%v", err)
			}
			cond = call(fnEq, typBool, o, cond)
		} else if cond, err = b.boolCheck(cond, w.Cond, "CASE WHEN"); err != nil {
			return nil, err
		}
		res, err := b.expr(w.Result, s, ctx)
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, cond)
		results = append(results, res)
	}
	if x.Else != nil {
		e, err := b.expr(x.Else, s, ctx)
		if err != nil {
			return nil, err
		}
		results = append(results, e)
	}
	// Untyped string results stay text; other results unify.
	t, ok := commonTypeOf(typNull, results...)
	if !ok {
		return nil, b.errorf(x, "CASE types cannot be matched: %s", typeList(results))
	}
	if isNullType(t) {
		t = typString
	}
	for i := range results {
		if results[i], err = coerce(results[i], t); err != nil {
			return nil, b.errorf(x, "%v", err)
		}
	}
	c.Thens = results[:len(x.Whens)]
	if x.Else != nil {
		c.Else = results[len(x.Whens)]
	}
	c.Typ = t
	return c, nil
}

func typeList(es []Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = typeString(e.Type())
	}
	return strings.Join(s, ", ")
}

// funcCall binds aggregates, window functions and scalar functions.
func (b *binder) funcCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (Expr, error) {
	name := x.Name.Name
	if x.Over != nil {
		return b.windowCall(x, s, ctx)
	}
	if isAggregateName(name) {
		return b.aggregateCall(x, s, ctx)
	}
	if x.Star || x.Distinct {
		return nil, b.errorf(x, "%s(%s...) is only valid for aggregate functions", name, map[bool]string{true: "*", false: "DISTINCT "}[x.Star])
	}
	if x.Filter != nil {
		return nil, b.errorf(x, "FILTER is only valid for aggregate functions")
	}
	if name == "row_number" || name == "rank" || name == "dense_rank" {
		return nil, b.errorf(x, "window function %s requires an OVER clause", name)
	}
	args := make([]Expr, len(x.Args))
	for i, a := range x.Args {
		e, err := b.expr(a, s, ctx)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	e, err := scalarFunc(name, args)
	if err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	return foldNow(e), nil
}

// aggregateCall binds count/sum/avg/min/max into the SELECT's aggregate
// context and returns a reference to the aggregate's output column.
func (b *binder) aggregateCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (Expr, error) {
	name := x.Name.Name
	if ctx.inAgg {
		return nil, b.errorf(x, "aggregate function calls cannot be nested")
	}
	if ctx.agg == nil {
		return nil, b.errorf(x, "aggregate functions are not allowed in %s", ctx.clause)
	}
	// agg(x) FILTER (WHERE c) is agg(CASE WHEN c THEN x END): aggregates
	// skip NULLs, so the rows failing c do not count (count(*) counts the
	// constant 1 instead).
	var filter Expr
	if x.Filter != nil {
		f, err := b.expr(x.Filter, s, &exprCtx{clause: "FILTER", inAgg: true})
		if err != nil {
			return nil, err
		}
		if filter, err = b.boolCheck(f, x.Filter, "FILTER"); err != nil {
			return nil, err
		}
		if hasSubquery(filter) {
			return nil, b.errorf(x.Filter, "subqueries inside FILTER are not supported")
		}
	}
	withFilter := func(arg Expr) Expr {
		if filter == nil {
			return arg
		}
		return &CaseExpr{Whens: []Expr{filter}, Thens: []Expr{arg}, Typ: arg.Type()}
	}
	ac := &AggCall{Fn: name, Distinct: x.Distinct}
	switch {
	case x.Star:
		if name != "count" {
			return nil, b.errorf(x, "%s(*) is not valid; only count(*)", name)
		}
		ac.Fn, ac.Typ = aggCountStar, typInt64
		if filter != nil {
			ac.Fn, ac.Arg = aggCount, withFilter(&Const{Typ: typInt32, Val: int32(1)})
		}
	case len(x.Args) != 1:
		return nil, b.errorf(x, "%s takes exactly one argument, got %d", name, len(x.Args))
	default:
		actx := &exprCtx{clause: ctx.clause, agg: nil, inAgg: true}
		arg, err := b.expr(x.Args[0], s, actx)
		if err != nil {
			if actx.agg == nil && strings.Contains(err.Error(), "aggregate functions are not allowed") {
				return nil, b.errorf(x.Args[0], "aggregate function calls cannot be nested")
			}
			return nil, err
		}
		if hasSubquery(arg) {
			return nil, b.errorf(x.Args[0], "subqueries inside aggregate arguments are not supported")
		}
		arg = resolveUntyped(arg, typString)
		t := arg.Type()
		switch name {
		case "count":
			ac.Typ = typInt64
		case "sum", "avg":
			if !isNumeric(t) && !isNullType(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, typeString(t))
			}
			ac.Typ = aggResultType(name, t)
		case "min", "max":
			if isNullType(t) {
				t = typInt32
			}
			ac.Typ = t
		}
		ac.Arg = withFilter(arg)
	}
	key := ac.Fn + "|" + fmt.Sprint(ac.Distinct) + "|"
	if ac.Arg != nil {
		key += exprKey(ac.Arg)
	}
	a := ctx.agg
	if i, ok := a.aggKeys[key]; ok {
		return colRef(a.aggCols[i]), nil
	}
	text := ac.String()
	col := b.newCol(text, "", ac.Typ, ac.Fn != aggCount && ac.Fn != aggCountStar)
	a.aggKeys[key] = len(a.aggs)
	a.aggs = append(a.aggs, ac)
	a.aggCols = append(a.aggCols, col)
	return colRef(col), nil
}

// aggResultType is the result type of sum or avg over t.
func aggResultType(fn string, t arrow.DataType) arrow.DataType {
	switch {
	case isNullType(t), isInteger(t):
		if fn == aggAvg {
			return typFloat64
		}
		return typInt64
	case isFloat(t):
		return typFloat64
	}
	_, s, _ := decimalPS(t)
	if fn == aggAvg {
		return decimalType(maxDecimalPrecision, min(s+4, maxDecimalPrecision))
	}
	return decimalType(maxDecimalPrecision, s)
}

// windowCall binds a window function into the SELECT's window context.
func (b *binder) windowCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (Expr, error) {
	name := x.Name.Name
	if ctx.win == nil || ctx.inAgg {
		return nil, b.errorf(x, "window functions are not allowed in %s", ctx.clause)
	}
	if x.Filter != nil || x.Distinct {
		return nil, b.errorf(x, "FILTER and DISTINCT are not supported in window functions")
	}
	// Arguments, partitions and orders are evaluated above the aggregate
	// (if any): bind them in the same context (aggregates allowed), then
	// map group keys.
	inner := &exprCtx{clause: "window function", agg: ctx.agg}
	bindAbove := func(e sql.Expr) (Expr, error) {
		v, err := b.expr(e, s, inner)
		if err != nil {
			return nil, err
		}
		if ctx.agg != nil {
			return b.aboveAgg(v, ctx.agg, e)
		}
		return v, nil
	}
	wc := &WindowCall{Fn: name}
	switch name {
	case "row_number", "rank", "dense_rank":
		if len(x.Args) != 0 || x.Star {
			return nil, b.errorf(x, "%s takes no arguments", name)
		}
		wc.Typ = typInt64
	case "count", "sum", "avg", "min", "max":
		if x.Star {
			if name != "count" {
				return nil, b.errorf(x, "%s(*) is not valid", name)
			}
			wc.Fn, wc.Typ = aggCountStar, typInt64
			break
		}
		if len(x.Args) != 1 {
			return nil, b.errorf(x, "%s takes exactly one argument", name)
		}
		arg, err := bindAbove(x.Args[0])
		if err != nil {
			return nil, err
		}
		t := arg.Type()
		switch name {
		case "count":
			wc.Typ = typInt64
		case "sum", "avg":
			if !isNumeric(t) && !isNullType(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, typeString(t))
			}
			wc.Typ = aggResultType(name, t)
		default:
			wc.Typ = t
		}
		wc.Args = []Expr{arg}
	default:
		return nil, b.errorf(x, "window function %s does not exist (want row_number, rank, dense_rank, count, sum, avg, min or max)", name)
	}
	for _, p := range x.Over.PartitionBy {
		e, err := bindAbove(p)
		if err != nil {
			return nil, err
		}
		wc.PartitionBy = append(wc.PartitionBy, e)
	}
	for _, o := range x.Over.OrderBy {
		e, err := bindAbove(o.Expr)
		if err != nil {
			return nil, err
		}
		wc.OrderBy = append(wc.OrderBy, sortKey(e, o))
	}
	if f := x.Over.Frame; f != nil {
		wf := &WindowFrame{Mode: strings.ToLower(f.Mode.String())}
		var err error
		if wf.Start, wf.StartOffset, err = b.frameBound(f.Start, s); err != nil {
			return nil, err
		}
		wf.End, wf.EndOffset = BoundCurrentRow, nil
		if f.End != nil {
			if wf.End, wf.EndOffset, err = b.frameBound(f.End, s); err != nil {
				return nil, err
			}
		}
		if wf.Start == BoundUnboundedFollowing || wf.End == BoundUnboundedPreceding || wf.Start > wf.End {
			return nil, b.errorf(f, "window frame starts after it ends")
		}
		if wf.Mode != "rows" && (wf.StartOffset != nil || wf.EndOffset != nil) {
			return nil, b.errorf(f, "%s frames with offsets are not supported yet; use ROWS", strings.ToUpper(wf.Mode))
		}
		wc.Frame = wf
	}
	key := wc.Fn
	for _, a := range wc.Args {
		key += "|" + exprKey(a)
	}
	key += "|" + fmt.Sprint(len(wc.PartitionBy), len(wc.OrderBy))
	for _, p := range wc.PartitionBy {
		key += "|" + exprKey(p)
	}
	for _, o := range wc.OrderBy {
		key += "|" + o.String() + exprKey(o.Expr)
	}
	if wc.Frame != nil {
		key += fmt.Sprintf("|%+v", *wc.Frame)
	}
	if i, ok := ctx.win.keys[key]; ok {
		return colRef(ctx.win.cols[i]), nil
	}
	col := b.newCol(name, "", wc.Typ, true)
	ctx.win.keys[key] = len(ctx.win.calls)
	ctx.win.calls = append(ctx.win.calls, wc)
	ctx.win.cols = append(ctx.win.cols, col)
	return colRef(col), nil
}

func (b *binder) frameBound(fb *sql.FrameBound, s *scope) (FrameBoundKind, Expr, error) {
	switch fb.Kind {
	case sql.UnboundedPreceding:
		return BoundUnboundedPreceding, nil, nil
	case sql.UnboundedFollowing:
		return BoundUnboundedFollowing, nil, nil
	case sql.CurrentRow:
		return BoundCurrentRow, nil, nil
	}
	e, err := b.expr(fb.Offset, s, &exprCtx{clause: "window frame"})
	if err != nil {
		return 0, nil, err
	}
	c, ok, err := foldToConst(e)
	if err != nil || !ok || !isInteger(c.Typ) || c.IsNull() || constInt(c) < 0 {
		return 0, nil, b.errorf(fb, "window frame offset must be a constant non-negative integer")
	}
	kind := BoundPreceding
	if fb.Kind == sql.Following {
		kind = BoundFollowing
	}
	return kind, c, nil
}

// scalarFunc types a call of a scalar function.
func scalarFunc(name string, args []Expr) (Expr, error) {
	n := len(args)
	arity := func(lo, hi int) error {
		if n < lo || n > hi {
			if lo == hi {
				return fmt.Errorf("function %s takes %d arguments, got %d", name, lo, n)
			}
			return fmt.Errorf("function %s takes %d to %d arguments, got %d", name, lo, hi, n)
		}
		return nil
	}
	str := func(i int) error {
		args[i] = resolveUntyped(args[i], typString)
		if t := args[i].Type(); !isString(t) && !isNullType(t) {
			return fmt.Errorf("function %s: argument %d must be a string, not %s", name, i+1, typeString(t))
		}
		return nil
	}
	integer := func(i int) error {
		args[i] = resolveUntyped(args[i], typInt64)
		if t := args[i].Type(); !isInteger(t) && !isNullType(t) {
			return fmt.Errorf("function %s: argument %d must be an integer, not %s", name, i+1, typeString(t))
		}
		return nil
	}
	switch name {
	case "coalesce":
		if n == 0 {
			return nil, fmt.Errorf("coalesce needs at least one argument")
		}
		t, ok := commonTypeOf(typNull, args...)
		if !ok {
			return nil, fmt.Errorf("COALESCE types cannot be matched: %s", typeList(args))
		}
		for i := range args {
			args[i], _ = coerce(args[i], t)
		}
		return call(fnCoalesce, t, args...), nil
	case "nullif":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		t, ok := commonTypeOf(typNull, args...)
		if !ok {
			return nil, fmt.Errorf("NULLIF types cannot be matched: %s", typeList(args))
		}
		for i := range args {
			args[i], _ = coerce(args[i], t)
		}
		return call("nullif", t, args...), nil
	case "abs":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if !isNumeric(args[0].Type()) {
			return nil, fmt.Errorf("function abs(%s) does not exist", typeString(args[0].Type()))
		}
		return call("abs", args[0].Type(), args...), nil
	case "round":
		if err := arity(1, 2); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if !isNumeric(t) {
			return nil, fmt.Errorf("function round(%s) does not exist", typeString(t))
		}
		digits := int64(0)
		if n == 2 {
			c, ok := args[1].(*Const)
			if !ok || !isInteger(c.Typ) || c.IsNull() {
				return nil, fmt.Errorf("round: the number of digits must be an integer constant")
			}
			digits = constInt(c)
			args[1] = &Const{Typ: typInt32, Val: int32(digits)}
		}
		if isDecimal(t) {
			p, s, _ := decimalPS(t)
			ns := min(max(int32(digits), 0), s)
			t = decimalType(min(p-s+ns+1, maxDecimalPrecision), ns)
		}
		return call("round", t, args...), nil
	case "upper", "lower":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		return call(name, typString, args...), nil
	case "length", "char_length", "character_length":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		return call("length", typInt32, args...), nil
	case "btrim", "trim", "ltrim", "rtrim":
		if err := arity(1, 2); err != nil {
			return nil, err
		}
		for i := range args {
			if err := str(i); err != nil {
				return nil, err
			}
		}
		fn := name
		if fn == "btrim" {
			fn = "trim"
		}
		return call(fn, typString, args...), nil
	case "substring", "substr":
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		for i := 1; i < n; i++ {
			if err := integer(i); err != nil {
				return nil, err
			}
		}
		return call("substring", typString, args...), nil
	case "strpos", "position":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		if name == "position" {
			// POSITION(sub IN s) is strpos(s, sub).
			args[0], args[1] = args[1], args[0]
		}
		for i := range args {
			if err := str(i); err != nil {
				return nil, err
			}
		}
		return call("strpos", typInt32, args...), nil
	case "concat":
		if n == 0 {
			return nil, fmt.Errorf("concat needs at least one argument")
		}
		// concat() skips NULLs, unlike ||.
		var out Expr
		for _, a := range args {
			a = resolveUntyped(a, typString)
			if !isString(a.Type()) {
				a = &CastExpr{X: a, Typ: typString}
			}
			a = call(fnCoalesce, typString, a, &Const{Typ: typString, Val: ""})
			if out == nil {
				out = a
			} else {
				out = call(fnConcat, typString, out, a)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("function %s does not exist", name)
}
