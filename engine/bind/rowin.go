package bind

import (
	"fmt"
	"slices"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
)

// Row IN subqueries, (a, b) [NOT] IN (SELECT x, y ...) (and = ANY, <>
// ALL), rewritten before binding into EXISTS subqueries over the query as
// a derived table, with SQL's three-valued answer:
//
//	TRUE   a row equals (a, b) pair by pair
//	NULL   otherwise, some row equals it but for pairs with a NULL
//	FALSE  otherwise
//
// which is
//
//	CASE WHEN EXISTS (SELECT 1 FROM (q) r(c1, c2) WHERE r.c1 = a AND r.c2 = b) THEN TRUE
//	     WHEN EXISTS (... WHERE (r.c1 = a OR r.c1 IS NULL OR a IS NULL) AND (...)) THEN NULL
//	     ELSE FALSE END
//
// Where a NULL filters as FALSE (a conjunct of WHERE, HAVING or ON: see
// markFilterIns) the answer needs one EXISTS: IN is the first (a semi
// join on the pairs' equalities) and NOT IN the negation of the second.
// Elsewhere (a select list, under OR or NOT) the CASE is used whole; its
// second EXISTS joins on no equality, so it is the slow form.

// markFilterIns records the row IN subqueries among the top-level AND
// conjuncts of the condition e, whose NULL answer filters as FALSE.
func (b *binder) markFilterIns(e sql.Expr) {
	switch x := e.(type) {
	case *sql.BinaryExpr:
		if x.Op == "AND" {
			b.markFilterIns(x.L)
			b.markFilterIns(x.R)
		}
	case *sql.InSubquery:
		if isRow(x.X) {
			b.markFilterIn(x)
		}
	case *sql.Quantified:
		// = ANY and <> ALL become IN and NOT IN (quantified).
		if isRow(x.X) && x.Query != nil {
			b.markFilterIn(x)
		}
	}
}

func (b *binder) markFilterIn(x sql.Expr) {
	if b.filterIns == nil {
		b.filterIns = map[sql.Expr]bool{}
	}
	b.filterIns[x] = true
}

// rowInSubquery rewrites x, whose left side is the row r, as above; the
// subquery is bound once first to check that it returns one column per
// element of r.
func (b *binder) rowInSubquery(x *sql.InSubquery, r *sql.RowExpr, s *scope) (sql.Expr, error) {
	n := len(r.Elems)
	if n == 0 {
		return nil, b.errorf(x, "cannot compare rows of zero length")
	}
	for _, e := range r.Elems {
		if b.hasAggregate([]*sql.SelectItem{{Expr: e}}, nil) {
			// The rewrite moves the row into the subquery's WHERE, where
			// this query's aggregates cannot be computed.
			return nil, b.errorf(e, "a row compared with a subquery may not hold an aggregate yet (group in a derived table, then compare its columns)")
		}
	}
	at := x.Pos
	from, col, err := b.rowQuery(x.Query, x.Query, n, s, "IN", "row_in")
	if err != nil {
		return nil, err
	}
	bin := func(op string, l, r sql.Expr) sql.Expr { return &sql.BinaryExpr{Pos: at, Op: op, L: l, R: r} }
	isNull := func(e sql.Expr) sql.Expr { return &sql.IsExpr{Pos: at, X: e, What: sql.IsNull} }
	exists := func(pairs []sql.Expr) sql.Expr {
		one := &sql.Literal{Pos: at, Kind: sql.LitNumber, Text: "1"}
		f := *from // NB: each subquery its own FROM node
		sel := &sql.Select{Pos: at, Items: []*sql.SelectItem{{Pos: at, Expr: one}}, From: []sql.TableExpr{&f}, Where: foldBinary(at, "AND", pairs)}
		return &sql.Exists{Pos: at, Query: &sql.Query{Pos: at, Body: sel}}
	}
	equal := make([]sql.Expr, n)
	maybe := make([]sql.Expr, n)
	for i, a := range r.Elems {
		equal[i] = bin("=", col(i), a)
		maybe[i] = foldBinary(at, "OR", []sql.Expr{bin("=", col(i), a), isNull(col(i)), isNull(a)})
	}
	lit := func(kind sql.LitKind, text string) sql.Expr { return &sql.Literal{Pos: at, Kind: kind, Text: text} }
	not := func(e sql.Expr) sql.Expr { return &sql.UnaryExpr{Pos: at, Op: "NOT", X: e} }
	switch {
	case b.filterIns[x] && !x.Not:
		return exists(equal), nil
	case b.filterIns[x]:
		return not(exists(maybe)), nil
	}
	e := sql.Expr(&sql.Case{Pos: at, Whens: []*sql.When{
		{Pos: at, Cond: exists(equal), Result: lit(sql.LitBool, "true")},
		{Pos: at, Cond: exists(maybe), Result: lit(sql.LitNull, "NULL")},
	}, Else: lit(sql.LitBool, "false")})
	if x.Not {
		e = not(e)
	}
	return e, nil
}

// rowSubqueries turns a subquery compared with a row ((a, b) = (SELECT x,
// y ...)) into the row of its columns, each a scalar subquery over the
// query as a derived table: (SELECT r.c1 FROM (q) r(c1, c2)), ... Each
// keeps a scalar subquery's rules (NULL for no row, an error for more than
// one), so the row comparison rewrite applies as to two row constructors.
func (b *binder) rowSubqueries(l, r sql.Expr, s *scope) (sql.Expr, sql.Expr, error) {
	expand := func(e, other sql.Expr) (sql.Expr, error) {
		sub, ok := e.(*sql.Subquery)
		row, isRow := other.(*sql.RowExpr)
		if !ok || !isRow {
			return e, nil
		}
		at := sub.Pos
		from, col, err := b.rowQuery(sub.Query, sub, len(row.Elems), s, "a row comparison", "row_sub")
		if err != nil {
			return nil, err
		}
		out := &sql.RowExpr{Pos: at}
		for i := range row.Elems {
			f := *from // NB: each subquery its own FROM node
			sel := &sql.Select{Pos: at, Items: []*sql.SelectItem{{Pos: at, Expr: col(i)}}, From: []sql.TableExpr{&f}}
			out.Elems = append(out.Elems, &sql.Subquery{Pos: at, Query: &sql.Query{Pos: at, Body: sel}})
		}
		return out, nil
	}
	l2, err := expand(l, r)
	if err != nil {
		return nil, nil, err
	}
	r2, err := expand(r, l)
	if err != nil {
		return nil, nil, err
	}
	return l2, r2, nil
}

// recordText is a row value as output, ROW(a, b) or a whole-row reference
// t: PostgreSQL's record text, (1,"a b",) (fields as their types print
// them, booleans t and f, NULL as nothing, quoted as record_out quotes
// them). nicflow has no record type: the value is text, so it prints as
// PostgreSQL prints the record; a comparison of rows is rewritten pair by
// pair before it gets here (rowCompare), and ORDER BY (a, b) sorts by a,
// then b (flattenRowOrder).
func (b *binder) recordText(elems []sql.Expr, s *scope, ctx *exprCtx) (plan.Expr, error) {
	str := func(v string) plan.Expr { return &plan.Const{Typ: plan.TypString, Val: v} }
	cat := func(l, r plan.Expr) plan.Expr { return b.newCall(plan.FnConcat, plan.TypString, l, r) }
	out := str("(")
	for i, e := range elems {
		v, err := b.expr(e, s, ctx)
		if err != nil {
			return nil, err
		}
		v = plan.ResolveUntyped(v, plan.TypString)
		var text plan.Expr
		switch t := v.Type(); {
		case plan.IsNullType(t):
			text = plan.NullConst(plan.TypString)
		case plan.IsString(t):
			text = v
		case plan.IsBool(t):
			text = &plan.CaseExpr{Whens: []plan.Expr{v, b.newCall(plan.FnNot, plan.TypBool, v)}, Thens: []plan.Expr{str("t"), str("f")}, Else: plan.NullConst(plan.TypString), Typ: plan.TypString}
		default:
			text = &plan.CastExpr{Zone: b.zone, X: v, Typ: plan.TypString}
		}
		if i > 0 {
			out = cat(out, str(","))
		}
		out = cat(out, b.newCall(plan.FnCoalesce, plan.TypString, b.newCall(expr.FnRecordElem, plan.TypString, text), str("")))
	}
	return cat(out, str(")")), nil
}

// flattenRowOrder is order with each row item ORDER BY (a, b) as its
// fields' items (nil: none was a row).
func flattenRowOrder(order []*sql.OrderItem) []*sql.OrderItem {
	if !slices.ContainsFunc(order, func(o *sql.OrderItem) bool { return isRow(o.Expr) }) {
		return nil
	}
	var out []*sql.OrderItem
	for _, o := range order {
		r, ok := o.Expr.(*sql.RowExpr)
		if !ok {
			out = append(out, o)
			continue
		}
		for _, e := range r.Elems {
			c := *o
			c.Expr = e
			out = append(out, &c)
		}
	}
	return out
}

// rowQuery checks that q (compared with a row of n fields; at for errors)
// returns n columns, and returns it as a derived table prefix_N(prefix_N_c1,
// ...) with a reference to its column i.
func (b *binder) rowQuery(q *sql.Query, at sql.Node, n int, s *scope, what, prefix string) (*sql.DerivedTable, func(i int) sql.Expr, error) {
	lp, err := b.subquery(q, s, -1, what)
	if err != nil {
		return nil, nil, err
	}
	switch got := len(lp.Columns()); {
	case got > n:
		return nil, nil, b.errorf(at, "subquery has too many columns (%d for a row of %d)", got, n)
	case got < n:
		return nil, nil, b.errorf(at, "subquery has too few columns (%d for a row of %d)", got, n)
	}
	pos := q.Pos
	b.nextRowIn++
	alias := fmt.Sprintf("%s_%d", prefix, b.nextRowIn)
	cols := make([]sql.Ident, n)
	for i := range cols {
		cols[i] = sql.Ident{Pos: pos, Name: fmt.Sprintf("%s_c%d", alias, i+1)}
	}
	from := &sql.DerivedTable{Pos: pos, Query: q, Alias: &sql.TableAlias{Pos: pos, Name: sql.Ident{Pos: pos, Name: alias}, Columns: cols}}
	col := func(i int) sql.Expr {
		return &sql.ColumnRef{Pos: pos, Parts: []sql.Ident{{Pos: pos, Name: alias}, cols[i]}}
	}
	return from, col, nil
}
