package bind

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
)

// quantified binds x op ANY|SOME|ALL (query). x = ANY is x IN, x <> ALL
// is x NOT IN; the others are a scalar subquery over an aggregate of the
// query's column (count(*), count(v), min(v), max(v)) whose CASE gives
// SQL's three-valued answer: ALL is TRUE over no row, FALSE when some
// value fails the comparison, NULL when only NULLs could; ANY is FALSE
// over no row, TRUE when some value passes, NULL when only NULLs could.
// The decorrelation rules then run it as any scalar subquery.
func (b *binder) quantified(x *sql.Quantified, s *scope, ctx *exprCtx) (plan.Expr, error) {
	if x.Param != nil {
		// Only while a statement is described: its value, an array
		// literal, is substituted before it runs.
		return b.expr(&sql.BinaryExpr{Pos: x.Pos, Op: x.Op, L: x.X, R: x.Param}, s, ctx)
	}
	if x.ArrayExpr != nil {
		return b.quantifiedValue(x, s, ctx)
	}
	if x.Query == nil {
		return b.quantifiedArray(x, s, ctx)
	}
	if x.Op == "=" && !x.All || x.Op == "<>" && x.All {
		in := &sql.InSubquery{Pos: x.Pos, X: x.X, Query: x.Query, Not: x.All}
		if b.filterIns[x] {
			b.markFilterIn(in)
		}
		return b.expr(in, s, ctx)
	}
	xe, err := b.expr(x.X, s, ctx)
	if err != nil {
		return nil, err
	}
	what := "ANY"
	if x.All {
		what = "ALL"
	}
	lp, err := b.subquery(x.Query, s, 1, what)
	if err != nil {
		return nil, err
	}
	sc := lp.Columns()[0]
	t, ok := plan.CommonTypeOf(sc.Type, xe)
	if !ok {
		return nil, b.errorf(x, "%s: types %s and %s cannot be compared", what, plan.TypeString(xe.Type()), plan.TypeString(sc.Type))
	}
	if xe, err = b.coerce(xe, t); err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	if !arrow.TypeEqual(t, sc.Type) {
		lp = b.castProject(lp, []plan.Expr{&plan.CastExpr{Zone: b.zone, X: plan.NewColRef(sc), Typ: t}})
		sc = lp.Columns()[0]
	}
	v := plan.NewColRef(sc)
	cnt := b.newCol("count", "", plan.TypInt64, false)
	cntv := b.newCol("count", "", plan.TypInt64, false)
	mn := b.newCol("min", "", t, true)
	mx := b.newCol("max", "", t, true)
	agg := &plan.AggregateNode{Input: lp,
		Aggs: []*plan.AggCall{
			{Fn: plan.AggCountStar, Typ: plan.TypInt64},
			{Fn: plan.AggCount, Arg: v, Typ: plan.TypInt64},
			{Fn: plan.AggMin, Arg: v, Typ: t},
			{Fn: plan.AggMax, Arg: v, Typ: t},
		},
		AggCols: []plan.Column{cnt, cntv, mn, mx},
	}
	cmp := func(fn string, a, c plan.Expr) plan.Expr { return b.newCall(fn, plan.TypBool, a, c) }
	fn := map[string]string{"<": plan.FnLt, "<=": plan.FnLe, ">": plan.FnGt, ">=": plan.FnGe, "=": plan.FnEq, "<>": plan.FnNe}[x.Op]
	// decided is the comparison that settles the answer (ALL: it fails
	// for some value; ANY: it holds for some value).
	var decided plan.Expr
	differs := b.newCall(plan.FnOr, plan.TypBool, cmp(plan.FnNe, plan.NewColRef(mn), xe), cmp(plan.FnNe, plan.NewColRef(mx), xe))
	switch {
	case x.Op == "=" || x.Op == "<>":
		decided = differs // = ALL fails, <> ANY holds, when some value differs
	case x.All:
		bound := mx // x > ALL: above the largest
		if x.Op == "<" || x.Op == "<=" {
			bound = mn
		}
		decided = b.newCall(plan.FnNot, plan.TypBool, cmp(fn, xe, plan.NewColRef(bound)))
	default:
		bound := mn // x > ANY: above the smallest
		if x.Op == "<" || x.Op == "<=" {
			bound = mx
		}
		decided = cmp(fn, xe, plan.NewColRef(bound))
	}
	empty, settled := plan.BoolConst(true), plan.BoolConst(false)
	if !x.All {
		empty, settled = plan.BoolConst(false), plan.BoolConst(true)
	}
	zero := &plan.Const{Typ: plan.TypInt64, Val: int64(0)}
	answer := &plan.CaseExpr{
		Whens: []plan.Expr{
			cmp(plan.FnEq, plan.NewColRef(cnt), zero),
			b.newCall(plan.FnIsNull, plan.TypBool, xe),
			decided,
			cmp(plan.FnGt, plan.NewColRef(cnt), plan.NewColRef(cntv)),
		},
		Thens: []plan.Expr{empty, plan.NullConst(plan.TypBool), settled, plan.NullConst(plan.TypBool)},
		Else:  b.newCall(plan.FnNot, plan.TypBool, settled),
		Typ:   plan.TypBool,
	}
	out := b.newCol(what, "", plan.TypBool, true)
	proj := &plan.ProjectNode{Input: agg, Exprs: []plan.Expr{answer}, Cols: []plan.Column{out}}
	return b.newSubquery(plan.SubScalar, nil, proj, plan.TypBool, x), nil
}

// quantifiedArray binds x op ANY (constant array) as x op e1 OR x op e2
// ... (ALL: AND), PostgreSQL's three-valued answer: FALSE for ANY of an
// empty array, TRUE for ALL of one.
func (b *binder) quantifiedArray(x *sql.Quantified, s *scope, ctx *exprCtx) (plan.Expr, error) {
	if len(x.Array) == 0 {
		// NB: x is still bound, for its errors.
		if _, err := b.expr(x.X, s, ctx); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypBool, Val: x.All}, nil
	}
	op := "OR"
	if x.All {
		op = "AND"
	}
	var e sql.Expr
	for _, el := range x.Array {
		c := &sql.BinaryExpr{Pos: x.Pos, Op: x.Op, L: x.X, R: el}
		if e == nil {
			e = c
		} else {
			e = &sql.BinaryExpr{Pos: x.Pos, Op: op, L: e, R: c}
		}
	}
	return b.expr(e, s, ctx)
}
