package bind

import (
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/buildinfo"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/sql"
)

// expr binds an expression in scope s.
func (b *binder) expr(e sql.Expr, s *scope, ctx *exprCtx) (plan.Expr, error) {
	switch x := e.(type) {
	case *sql.ColumnRef:
		if len(x.Parts) == 1 {
			if a, ok := b.fnArgs[x.Parts[0].Name]; ok {
				return a, nil // an argument of a SQL function, bound where it was called
			}
		}
		c, err := b.resolve(s, x)
		if err != nil {
			if cols, _ := b.rowColumns(x, s); cols != nil {
				return b.recordText(cols, s, ctx) // a whole row, as a record
			}
			return nil, err
		}
		return plan.NewColRef(c), nil
	case *sql.Star:
		return nil, b.errorf(x, "* is only allowed in a select list or in count(*)")
	case *sql.Literal:
		return b.literal(x)
	case *sql.TypedLiteral:
		t, err := b.typeOf(x.Type)
		if err != nil {
			return nil, err
		}
		c, err := b.castConst(&plan.Const{Typ: plan.TypString, Val: x.Value}, t)
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return c, nil
	case *sql.IntervalLit:
		iv, err := plan.ParseInterval(x.Value, x.Unit, x.ToUnit)
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return &plan.Const{Typ: plan.TypInterval, Val: iv}, nil
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
			return b.newCall(plan.FnNot, plan.TypBool, arg), nil
		case "-":
			arg = plan.ResolveUntyped(arg, plan.TypInt32)
			if !plan.IsNumeric(arg.Type()) && !plan.IsNullType(arg.Type()) && !plan.IsInterval(arg.Type()) {
				return nil, b.errorf(x, "operator does not exist: -%s", plan.TypeString(arg.Type()))
			}
			return plan.FoldNow(b.newCall(plan.FnNeg, arg.Type(), arg)), nil
		default: // "+"
			// Unary plus is the identity on every type, as SQLite and
			// MySQL read it (PostgreSQL defines it on numbers only):
			// generated SQL writes "+ col" for text columns too.
			return arg, nil
		}
	case *sql.BinaryExpr:
		return b.binary(x, s, ctx)
	case *sql.IsExpr:
		if r, ok := x.X.(*sql.RowExpr); ok && (x.What == sql.IsNull || x.What == sql.IsUnknown) {
			// A row IS NULL when every field is, IS NOT NULL when none
			// is (SQL's rule, PostgreSQL's).
			parts := make([]sql.Expr, len(r.Elems))
			for i, e := range r.Elems {
				parts[i] = &sql.IsExpr{Pos: x.Pos, X: e, What: sql.IsNull, Not: x.Not}
			}
			return b.expr(foldBinary(x.Pos, "AND", parts), s, ctx)
		}
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
			fn := plan.FnIsNull
			if x.Not {
				fn = plan.FnNotNull
			}
			return b.newCall(fn, plan.TypBool, arg), nil
		}
		if arg, err = b.boolCheck(arg, x.X, "IS TRUE/FALSE"); err != nil {
			return nil, err
		}
		fn := plan.FnNotDist
		if x.Not {
			fn = plan.FnDistinct
		}
		return b.newCall(fn, plan.TypBool, arg, plan.BoolConst(x.What == sql.IsTrue)), nil
	case *sql.RowExpr:
		return b.recordText(x.Elems, s, ctx)
	case *sql.IsDistinct:
		if isRow(x.L) || isRow(x.R) {
			l, r, err := b.rowSubqueries(x.L, x.R, s)
			if err != nil {
				return nil, err
			}
			y := *x
			y.L, y.R = l, r
			e, err := rowDistinct(&y)
			if err != nil {
				return nil, b.errorf(x, "%v", err)
			}
			return b.expr(e, s, ctx)
		}
		l, r, err := b.comparable(x.L, x.R, s, ctx, x, "IS DISTINCT FROM")
		if err != nil {
			return nil, err
		}
		fn := plan.FnDistinct
		if x.Not {
			fn = plan.FnNotDist
		}
		return b.newCall(fn, plan.TypBool, l, r), nil
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
		t, ok := plan.CommonTypeOf(plan.TypNull, xe, lo, hi)
		if !ok {
			return nil, b.errorf(x, "BETWEEN types %s, %s and %s cannot be compared", plan.TypeString(xe.Type()), plan.TypeString(lo.Type()), plan.TypeString(hi.Type()))
		}
		var cs [3]plan.Expr
		for i, v := range []plan.Expr{xe, lo, hi} {
			if cs[i], err = b.coerce(v, t); err != nil {
				return nil, b.errorf(x, "%v", err)
			}
		}
		e := plan.Expr(plan.AndOf([]plan.Expr{b.newCall(plan.FnGe, plan.TypBool, cs[0], cs[1]), b.newCall(plan.FnLe, plan.TypBool, cs[0], cs[2])}))
		if x.Not {
			e = b.newCall(plan.FnNot, plan.TypBool, e)
		}
		return e, nil
	case *sql.InList:
		if isRow(x.X) && len(x.List) > 0 {
			// (a, b) IN ((1, 2), ...): a row equality per item, ORed.
			eqs := make([]sql.Expr, len(x.List))
			for i, it := range x.List {
				eq, err := rowCompare("=", x.X, it)
				if err != nil {
					return nil, b.errorf(it, "%v", err)
				}
				eqs[i] = eq
			}
			e := foldBinary(x.Pos, "OR", eqs)
			if x.Not {
				e = &sql.UnaryExpr{Pos: x.Pos, Op: "NOT", X: e}
			}
			return b.expr(e, s, ctx)
		}
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		if len(x.List) == 0 {
			// x IN () holds for no x, not even NULL (SQLite).
			return plan.BoolConst(x.Not), nil
		}
		list := make([]plan.Expr, 1, 1+len(x.List))
		list[0] = xe
		for _, le := range x.List {
			v, err := b.expr(le, s, ctx)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		t, ok := plan.CommonTypeOf(plan.TypNull, list...)
		if !ok {
			return nil, b.errorf(x, "IN list types cannot be matched with %s", plan.TypeString(xe.Type()))
		}
		for i := range list {
			if list[i], err = b.coerce(list[i], t); err != nil {
				return nil, b.errorf(x, "%v", err)
			}
		}
		e := plan.FoldNow(b.newCall(plan.FnIn, plan.TypBool, list...))
		if x.Not {
			e = b.newCall(plan.FnNot, plan.TypBool, e)
		}
		return e, nil
	case *sql.InSubquery:
		if r, ok := x.X.(*sql.RowExpr); ok {
			e, err := b.rowInSubquery(x, r, s)
			if err != nil {
				return nil, err
			}
			return b.expr(e, s, ctx)
		}
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		lp, err := b.subquery(x.Query, s, 1, "IN")
		if err != nil {
			return nil, err
		}
		sc := lp.Columns()[0]
		t, ok := plan.CommonTypeOf(sc.Type, xe)
		if !ok {
			return nil, b.errorf(x, "IN: types %s and %s cannot be compared", plan.TypeString(xe.Type()), plan.TypeString(sc.Type))
		}
		if xe, err = b.coerce(xe, t); err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		if !arrow.TypeEqual(t, sc.Type) {
			lp = b.castProject(lp, []plan.Expr{&plan.CastExpr{Zone: b.zone, X: plan.NewColRef(sc), Typ: t}})
		}
		e := plan.Expr(b.newSubquery(plan.SubIn, xe, lp, plan.TypBool, x.Query))
		if x.Not {
			e = b.newCall(plan.FnNot, plan.TypBool, e)
		}
		return e, nil
	case *sql.Quantified:
		return b.quantified(x, s, ctx)
	case *sql.Exists:
		lp, err := b.subquery(x.Query, s, -1, "EXISTS")
		if err != nil {
			return nil, err
		}
		return b.newSubquery(plan.SubExists, nil, lp, plan.TypBool, x.Query), nil
	case *sql.ArraySubquery:
		return b.arraySubqueryExpr(x, s, ctx)
	case *sql.FieldSelect:
		// (t.rec).f: a record is its fields as columns "rec.f"
		// (_pg_expandarray's, selectListUnnest).
		ref, ok := x.X.(*sql.ColumnRef)
		if !ok {
			return nil, b.errorf(x, "field selection (x).%s is supported on a record column only", x.Field.Name)
		}
		r := *ref
		r.Parts = append([]sql.Ident(nil), ref.Parts...)
		last := r.Parts[len(r.Parts)-1]
		last.Name += "." + x.Field.Name
		r.Parts[len(r.Parts)-1] = last
		return b.expr(&r, s, ctx)
	case *sql.Subquery:
		lp, err := b.subquery(x.Query, s, 1, "a scalar subquery")
		if err != nil {
			return nil, err
		}
		return b.newSubquery(plan.SubScalar, nil, lp, lp.Columns()[0].Type, x.Query), nil
	case *sql.Like:
		xe, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		pat, err := b.expr(x.Pattern, s, ctx)
		if err != nil {
			return nil, err
		}
		args := []plan.Expr{plan.ResolveUntyped(xe, plan.TypString), plan.ResolveUntyped(pat, plan.TypString)}
		if x.Escape != nil {
			esc, err := b.expr(x.Escape, s, ctx)
			if err != nil {
				return nil, err
			}
			args = append(args, plan.ResolveUntyped(esc, plan.TypString))
		}
		for i, a := range args {
			if !plan.IsString(a.Type()) && !plan.IsNullType(a.Type()) {
				what := []string{"operand", "pattern", "escape"}[i]
				return nil, b.errorf(x, "LIKE %s must be a string, not %s", what, plan.TypeString(a.Type()))
			}
		}
		if x.ILike {
			args[0] = b.newCall(plan.FnLower, plan.TypString, args[0])
			args[1] = plan.FoldNow(b.newCall(plan.FnLower, plan.TypString, args[1]))
		}
		e := plan.Expr(b.newCall(plan.FnLike, plan.TypBool, args...))
		if x.Not {
			e = b.newCall(plan.FnNot, plan.TypBool, e)
		}
		return e, nil
	case *sql.Case:
		return b.caseExpr(x, s, ctx)
	case *sql.Cast:
		if a, ok := x.X.(*sql.ArrayExpr); ok && len(a.Elems) == 0 && x.Type.Array {
			// ARRAY[]::T[]: the empty array of T.
			x = &sql.Cast{Pos: x.Pos, X: &sql.Literal{Pos: a.Pos, Kind: sql.LitString, Text: "{}"}, Type: x.Type}
		}
		arg, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		t, err := b.typeOf(x.Type)
		if err != nil {
			return nil, err
		}
		if plan.IsArray(t) || plan.IsArray(arg.Type()) {
			return b.arrayCast(x, arg, t)
		}
		if k := x.Type.Name; k == "regclass" || k == "regtype" || k == "regnamespace" {
			return b.regCast(x, arg, k)
		}
		if !plan.CanCast(arg.Type(), t) {
			return nil, b.errorf(x, "cannot cast type %s to %s", plan.TypeString(arg.Type()), plan.TypeString(t))
		}
		if c, ok := arg.(*plan.Const); ok {
			v, err := b.castConst(c, t)
			if err != nil {
				return nil, b.errorf(x, "%v", err)
			}
			return v, nil
		}
		if arrow.TypeEqual(arg.Type(), t) {
			return arg, nil
		}
		return &plan.CastExpr{Zone: b.zone, X: arg, Typ: t}, nil
	case *sql.Extract:
		arg, err := b.expr(x.X, s, ctx)
		if err != nil {
			return nil, err
		}
		return b.extract(x, x.Field, arg)
	case *sql.ArrayExpr:
		return b.arrayExpr(x, s, ctx)
	case *sql.Subscript:
		return b.subscript(x, s, ctx)
	case *sql.StructLit:
		return nil, b.errorf(x, "struct values ({...}) are not supported (read_csv's columns option takes one)")
	case *sql.Param:
		if b.params != nil && x.N >= 1 {
			return b.params.ref(x.N), nil
		}
		return nil, b.errorf(x, "parameter $%d has no value: parameters are bound by a client's extended query protocol", x.N)
	case *sql.FuncCall:
		if x.IgnoreNulls && x.Over == nil {
			return nil, b.errorf(x, "IGNORE NULLS applies to the window functions lag, lead, first_value, last_value and nth_value")
		}
		return b.funcCall(x, s, ctx)
	}
	return nil, b.errorf(e, "unsupported expression %T", e)
}

// timeFunc types the timestamp functions (nil: not one of them):
//
//	now(), current_timestamp, transaction_timestamp(), statement_timestamp()
//	                            the statement's time, TIMESTAMPTZ
//	localtimestamp              the statement's time, TIMESTAMP (UTC)
//	date_trunc(unit, ts)        ts rounded down to its unit (dates: rewriteFunc)
//	to_timestamp(seconds)       TIMESTAMPTZ from Unix seconds
//	make_timestamp(y, mo, d, h, mi, s)
//	current_time, localtime     the statement's time of day, TIME (UTC)
//	make_time(h, mi, s)         TIME
//	date_trunc(unit, time)      TIME, units up to the hour
//	epoch(ts), epoch_ms(ts)     seconds (double) / milliseconds (bigint) since 1970
func (b *binder) timeFunc(name string, args []plan.Expr) (plan.Expr, error) {
	n := len(args)
	arity := func(want int) error {
		if n != want {
			return fmt.Errorf("function %s takes %d arguments, got %d", name, want, n)
		}
		return nil
	}
	now := arrow.Timestamp(b.now.UnixMicro())
	switch name {
	case "now", "current_timestamp", "transaction_timestamp", "statement_timestamp", "localtimestamp":
		if err := arity(0); err != nil {
			return nil, err
		}
		if name == "localtimestamp" {
			return &plan.Const{Typ: plan.TypTimestamp, Val: b.localNow()}, nil
		}
		return &plan.Const{Typ: plan.TypTimestampTZ, Val: now}, nil
	case "current_time", "localtime":
		// NB: PostgreSQL's current_time is a time with time zone;
		// nicflow's is the TIME of the statement's time in UTC, as
		// localtime.
		if err := arity(0); err != nil {
			return nil, err
		}
		_, tod := expr.SplitTimestamp(int64(b.localNow()))
		return &plan.Const{Typ: plan.TypTime, Val: arrow.Time64(tod)}, nil
	case "timezone":
		// timezone(zone, ts), ts AT TIME ZONE zone: TIMESTAMP -> TIMESTAMPTZ
		// (ts read as a wall clock in zone), TIMESTAMPTZ -> TIMESTAMP (the
		// wall clock in zone); an untyped literal is a TIMESTAMPTZ, as in
		// PostgreSQL.
		if err := arity(2); err != nil {
			return nil, err
		}
		args[0] = plan.ResolveUntyped(args[0], plan.TypString)
		args[1] = plan.ResolveUntyped(args[1], plan.TypTimestampTZ)
		if c, ok := args[1].(*plan.Const); ok && plan.IsString(c.Typ) {
			v, err := b.castConst(c, plan.TypTimestampTZ)
			if err != nil {
				return nil, err
			}
			args[1] = v
		}
		zt, xt := args[0].Type(), args[1].Type()
		if !plan.IsString(zt) && !plan.IsNullType(zt) {
			return nil, fmt.Errorf("function timezone(%s, %s) does not exist (the zone is text)", plan.TypeString(zt), plan.TypeString(xt))
		}
		if k, ok := args[0].(*plan.Const); ok && !k.IsNull() {
			if _, err := expr.LoadZone(k.Val.(string)); err != nil {
				return nil, err
			}
		}
		var t arrow.DataType
		switch {
		case plan.IsTimestamp(xt) && expr.HasZone(xt):
			t = plan.TypTimestamp
		case plan.IsTimestamp(xt):
			t = plan.TypTimestampTZ
		case plan.IsDate(xt), plan.IsNullType(xt):
			// a date: its midnight in the session zone, a TIMESTAMPTZ
			t = plan.TypTimestamp
		default:
			return nil, fmt.Errorf("function timezone(%s, %s) does not exist (AT TIME ZONE takes a TIMESTAMP or TIMESTAMPTZ)", plan.TypeString(zt), plan.TypeString(xt))
		}
		return b.newCall(expr.FnTimezone, t, args...), nil
	case "make_time":
		if err := arity(3); err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = plan.ResolveUntyped(args[i], plan.TypInt64)
			if t := args[i].Type(); !plan.IsNumeric(t) && !plan.IsNullType(t) {
				return nil, fmt.Errorf("function make_time: argument %d must be a number, not %s", i+1, plan.TypeString(t))
			}
		}
		return b.newCall(expr.FnMakeTime, plan.TypTime, args...), nil
	case "date_trunc":
		if err := arity(2); err != nil {
			return nil, err
		}
		args[1] = plan.ResolveUntyped(args[1], plan.TypTimestamp)
		t := args[1].Type()
		if plan.IsDate(t) {
			return nil, nil
		}
		if plan.IsTime(t) {
			u, ok := args[0].(*plan.Const)
			if !ok || !plan.IsString(u.Typ) || u.IsNull() {
				return nil, fmt.Errorf("the unit of date_trunc must be a string constant")
			}
			unit := expr.TruncUnitName(u.Val.(string))
			if _, ok := expr.TruncTime(unit, 0); !ok {
				return nil, fmt.Errorf("date_trunc: unit %q is not known for time (want %s)", u.Val, strings.Join(expr.TimeTruncUnits, ", "))
			}
			return plan.FoldNow(b.newCall(expr.FnDateTrunc, t, &plan.Const{Typ: plan.TypString, Val: unit}, args[1])), nil
		}
		if !plan.IsTimestamp(t) && !plan.IsNullType(t) {
			return nil, fmt.Errorf("function date_trunc(%s) does not exist", plan.TypeString(t))
		}
		u, ok := args[0].(*plan.Const)
		if !ok || !plan.IsString(u.Typ) || u.IsNull() {
			return nil, fmt.Errorf("the unit of date_trunc must be a string constant")
		}
		unit := expr.TruncUnitName(u.Val.(string))
		if _, ok := expr.TruncTimestamp(unit, 0); !ok {
			return nil, fmt.Errorf("date_trunc: unit %q is not known (want %s)", u.Val, strings.Join(expr.TruncUnits, ", "))
		}
		if plan.IsNullType(t) {
			return plan.NullConst(plan.TypTimestamp), nil
		}
		return b.newCall(expr.FnDateTrunc, t, &plan.Const{Typ: plan.TypString, Val: unit}, args[1]), nil
	case "strftime", "to_char", "strptime", "to_date":
		if err := arity(2); err != nil {
			return nil, err
		}
		dialect := "c"
		if name == "to_char" || name == "to_date" {
			dialect = "pg"
		}
		return b.timeFormatCall(name, dialect, args)
	case "age":
		if n == 1 {
			// age(ts): from today's midnight.
			days, _ := expr.SplitTimestamp(int64(b.localNow()))
			args = append([]plan.Expr{&plan.Const{Typ: plan.TypTimestamp, Val: arrow.Timestamp(days * expr.UsPerDay)}}, args...)
			n = 2
		}
		if err := arity(2); err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = plan.ResolveUntyped(args[i], plan.TypTimestamp)
			if t := args[i].Type(); !plan.IsTemporal(t) && !plan.IsNullType(t) {
				return nil, fmt.Errorf("function age(%s) does not exist", plan.TypeString(t))
			}
		}
		return b.newCall(expr.FnAge, plan.TypInterval, args...), nil
	case "to_timestamp":
		if n == 2 {
			return b.timeFormatCall(name, "pg", args)
		}
		if err := arity(1); err != nil {
			return nil, err
		}
		args[0] = plan.ResolveUntyped(args[0], plan.TypFloat64)
		if t := args[0].Type(); !plan.IsNumeric(t) && !plan.IsNullType(t) {
			return nil, fmt.Errorf("function to_timestamp(%s) does not exist (want seconds since 1970)", plan.TypeString(t))
		}
		return b.newCall(expr.FnToTimestamp, plan.TypTimestampTZ, args[0]), nil
	case "make_timestamp":
		if err := arity(6); err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = plan.ResolveUntyped(args[i], plan.TypInt64)
			if t := args[i].Type(); !plan.IsNumeric(t) && !plan.IsNullType(t) {
				return nil, fmt.Errorf("function make_timestamp: argument %d must be a number, not %s", i+1, plan.TypeString(t))
			}
		}
		return b.newCall(expr.FnMakeTimestamp, plan.TypTimestamp, args...), nil
	case "epoch", "epoch_ms":
		if err := arity(1); err != nil {
			return nil, err
		}
		args[0] = plan.ResolveUntyped(args[0], plan.TypTimestamp)
		t := args[0].Type()
		if !plan.IsTemporal(t) && !plan.IsNullType(t) {
			return nil, fmt.Errorf("function %s(%s) does not exist", name, plan.TypeString(t))
		}
		if plan.IsDate(t) || plan.IsNullType(t) {
			args[0] = plan.FoldNow(&plan.CastExpr{Zone: b.zone, X: args[0], Typ: plan.TypTimestamp})
			t = plan.TypTimestamp
		}
		if name == "epoch" {
			return b.newCall(plan.FnExtract, plan.TypFloat64, &plan.Const{Typ: plan.TypString, Val: "epoch"}, args[0]), nil
		}
		return b.newCall(plan.FnExtract, plan.TypInt64, &plan.Const{Typ: plan.TypString, Val: "epoch_ms"}, args[0]), nil
	}
	return nil, nil
}

// timeFormatCall types strftime(ts, pattern) and to_char(ts, pattern)
// (text), strptime(text, pattern) (timestamp) and to_timestamp(text,
// pattern) (timestamptz): the pattern a constant, checked now.
func (b *binder) timeFormatCall(name, dialect string, args []plan.Expr) (plan.Expr, error) {
	pat, ok := args[1].(*plan.Const)
	if !ok || pat.IsNull() {
		return nil, fmt.Errorf("the format of %s must be a string constant", name)
	}
	ps, ok := pat.Val.(string)
	if !ok {
		return nil, fmt.Errorf("the format of %s must be a string", name)
	}
	if t := args[0].Type(); name == "to_char" && plan.IsNumeric(t) {
		return b.numberToChar(args[0], ps)
	}
	compiled, err := expr.TimeFormat(dialect, ps)
	if err != nil {
		return nil, err
	}
	fmtArg := &plan.Const{Typ: plan.TypString, Val: compiled}
	switch name {
	case "strftime", "to_char":
		args[0] = plan.ResolveUntyped(args[0], plan.TypTimestamp)
		if t := args[0].Type(); !plan.IsTemporal(t) && !plan.IsNullType(t) {
			return nil, fmt.Errorf("function %s(%s) does not exist (dates and timestamps are formatted)", name, plan.TypeString(t))
		}
		return b.newCall(expr.FnStrftime, plan.TypString, args[0], fmtArg), nil
	}
	args[0] = plan.ResolveUntyped(args[0], plan.TypString)
	if t := args[0].Type(); !plan.IsString(t) && !plan.IsNullType(t) {
		return nil, fmt.Errorf("function %s(%s, text) does not exist", name, plan.TypeString(t))
	}
	if name == "to_timestamp" {
		return b.newCall(expr.FnStrptimeTZ, plan.TypTimestampTZ, args[0], fmtArg), nil
	}
	if name == "to_date" {
		// PostgreSQL's to_date(text, pattern): the date of
		// to_timestamp's reading.
		return &plan.CastExpr{Zone: b.zone, X: b.newCall(expr.FnStrptime, plan.TypTimestamp, args[0], fmtArg), Typ: plan.TypDate}, nil
	}
	return b.newCall(expr.FnStrptime, plan.TypTimestamp, args[0], fmtArg), nil
}

// extract types EXTRACT(field FROM arg) (and date_part): a date's, a
// timestamp's, a time's or an interval's field; an untyped string is a timestamp when it has a time
// of day, else a date.
func (b *binder) extract(at sql.Node, field string, arg plan.Expr) (plan.Expr, error) {
	field = expr.ExtractFieldName(field)
	if c, ok := arg.(*plan.Const); ok && c.Param != nil {
		arg = plan.ResolveUntyped(arg, plan.TypTimestamp)
	} else if ok && c.Untyped {
		if v := plan.ResolveUntyped(arg, plan.TypDate); v != arg && !strings.ContainsAny(strings.TrimSpace(c.Val.(string)), " T:") {
			arg = v
		} else {
			arg = plan.ResolveUntyped(arg, plan.TypTimestamp)
		}
	}
	t := arg.Type()
	if !plan.IsTemporal(t) && !plan.IsTime(t) && !plan.IsInterval(t) && !plan.IsNullType(t) {
		return nil, b.errorf(at, "EXTRACT needs a date, a timestamp, a time or an interval, not %s", plan.TypeString(t))
	}
	if plan.IsNullType(t) {
		t = plan.TypTimestamp
	}
	if !expr.ValidExtract(field, t) {
		return nil, b.errorf(at, "EXTRACT field %q is not supported for %s (want %s)", field, plan.TypeString(t), strings.Join(expr.ExtractFieldsOf(t), ", "))
	}
	return plan.FoldNow(b.newCall(plan.FnExtract, expr.ExtractResultType(field, t), &plan.Const{Typ: plan.TypString, Val: field}, arg)), nil
}

// rewriteFunc writes some functions in terms of others, over the call's
// own argument expressions (nil: not one of them); args are the bound
// arguments, for their types.
//
//	mod(a, b)            a % b
//	sign(x)              CASE WHEN x > 0 THEN 1 WHEN x < 0 THEN -1 WHEN x = 0 THEN 0 END
//	left(s, n)           substring(s, 1, n), n >= 0; negative n: all but the last -n
//	right(s, n)          substring(s, length(s) - n + 1), n >= 0; negative: all but the first -n
//	starts_with(s, p)    substring(s, 1, length(p)) = p
//	ends_with(s, p)      right(s, length(p)) = p
//	floor/ceil/trunc(d)  of a decimal, exactly: round(d) and one step when it went the wrong way
//	current_date         the statement's date (UTC)
//	date_part(f, d)      EXTRACT(f FROM d)
//	date_trunc(f, d)     of a date: d less the days into its week, month, quarter or year
//	make_date(y, m, d)   CAST(y || '-' || m || '-' || d AS DATE)
func (b *binder) rewriteFunc(x *sql.FuncCall, args []plan.Expr) (sql.Expr, error) {
	a := x.Args
	pos := x.Pos
	lit := func(v string) sql.Expr { return &sql.Literal{Pos: pos, Kind: sql.LitNumber, Text: v} }
	bin := func(op string, l, r sql.Expr) sql.Expr { return &sql.BinaryExpr{Pos: pos, Op: op, L: l, R: r} }
	call := func(name string, args ...sql.Expr) sql.Expr {
		return &sql.FuncCall{Pos: pos, Name: sql.Ident{Pos: pos, Name: name}, Args: args}
	}
	when := func(c, r sql.Expr) *sql.When { return &sql.When{Pos: pos, Cond: c, Result: r} }
	// atLeast1 is max(e, 1): substring starts at 1 and takes no negative
	// length.
	atLeast1 := func(e sql.Expr) sql.Expr {
		return &sql.Case{Pos: pos, Whens: []*sql.When{when(bin("<", e, lit("1")), lit("1"))}, Else: e}
	}
	two := func() error {
		if len(a) != 2 {
			return fmt.Errorf("function %s takes 2 arguments, got %d", x.Name.Name, len(a))
		}
		return nil
	}
	switch x.Name.Name {
	case "mod":
		if err := two(); err != nil {
			return nil, err
		}
		return bin("%", a[0], a[1]), nil
	case "div":
		// div(a, b), PostgreSQL's: the quotient truncated toward zero.
		// Integers divide so already; decimals exactly: (a - a % b) / b
		// is a whole number, trunc gives it scale 0.
		if err := two(); err != nil {
			return nil, err
		}
		for _, e := range args {
			t := plan.ResolveUntyped(e, plan.TypInt64).Type()
			if !plan.IsInteger(t) && !plan.IsDecimal(t) && !plan.IsNullType(t) {
				return nil, fmt.Errorf("function div(%s, %s) does not exist (want integers or numerics)", plan.TypeString(args[0].Type()), plan.TypeString(args[1].Type()))
			}
		}
		if !plan.IsDecimal(args[0].Type()) && !plan.IsDecimal(args[1].Type()) {
			return bin("/", a[0], a[1]), nil
		}
		return call("trunc", bin("/", bin("-", a[0], bin("%", a[0], a[1])), a[1])), nil
	case "scale":
		// scale(numeric): its fraction digits. A nicflow decimal's scale
		// is its type's (PostgreSQL's numeric keeps one per value).
		if len(a) != 1 {
			return nil, fmt.Errorf("function scale takes 1 argument, got %d", len(a))
		}
		t := plan.ResolveUntyped(args[0], plan.TypInt64).Type()
		s := int32(0)
		switch {
		case plan.IsDecimal(t):
			_, s, _ = plan.DecimalPS(t)
		case plan.IsInteger(t), plan.IsNullType(t):
		default:
			return nil, fmt.Errorf("function scale(%s) does not exist (want a numeric)", plan.TypeString(t))
		}
		isNull := &sql.IsExpr{Pos: pos, X: a[0], What: sql.IsNull}
		return &sql.Case{Pos: pos, Whens: []*sql.When{when(isNull, &sql.Literal{Pos: pos, Kind: sql.LitNull})}, Else: lit(strconv.Itoa(int(s)))}, nil
	case "sign":
		if len(a) != 1 {
			return nil, fmt.Errorf("function sign takes 1 argument, got %d", len(a))
		}
		return &sql.Case{Pos: pos, Whens: []*sql.When{
			when(bin(">", a[0], lit("0")), lit("1")),
			when(bin("<", a[0], lit("0")), lit("-1")),
			when(bin("=", a[0], lit("0")), lit("0")),
		}}, nil
	case "left", "right":
		if err := two(); err != nil {
			return nil, err
		}
		s, n := a[0], a[1]
		neg := bin("<", n, lit("0"))
		if x.Name.Name == "left" {
			// substring's length may not be negative: n < 0 keeps
			// length(s) + n characters.
			return &sql.Case{Pos: pos, Whens: []*sql.When{
				when(neg, call("substring", s, lit("1"), atLeast1(bin("+", call("length", s), n)))),
			}, Else: call("substring", s, lit("1"), n)}, nil
		}
		return &sql.Case{Pos: pos, Whens: []*sql.When{
			when(neg, call("substring", s, bin("+", lit("1"), &sql.UnaryExpr{Pos: pos, Op: "-", X: n}))),
		}, Else: call("substring", s, atLeast1(bin("+", bin("-", call("length", s), n), lit("1"))))}, nil
	case "num_nulls", "num_nonnulls":
		// The count of (non-)NULL arguments: a sum of CASEs.
		if len(a) == 0 {
			return nil, fmt.Errorf("function %s requires at least one argument", x.Name.Name)
		}
		var sum sql.Expr
		for _, e := range a {
			is := sql.Expr(&sql.IsExpr{Pos: pos, X: e, What: sql.IsNull, Not: x.Name.Name == "num_nonnulls"})
			c := &sql.Case{Pos: pos, Whens: []*sql.When{when(is, lit("1"))}, Else: lit("0")}
			if sum == nil {
				sum = c
			} else {
				sum = bin("+", sum, c)
			}
		}
		return sum, nil
	case "width_bucket":
		// width_bucket(x, lo, hi, n): 0 below lo, n + 1 from hi on, else
		// the bucket of n equal ones that x falls in (lo > hi: descending).
		if len(a) != 4 {
			return nil, fmt.Errorf("function width_bucket takes 4 arguments (operand, low, high, count), got %d", len(a))
		}
		xv, lo, hi, n := a[0], a[1], a[2], a[3]
		asInt := func(e sql.Expr) sql.Expr {
			return &sql.Cast{Pos: pos, X: e, Type: &sql.TypeName{Pos: pos, Name: "integer"}}
		}
		bucket := func(num, den sql.Expr) sql.Expr {
			return asInt(bin("+", call("floor", bin("/", bin("*", num, n), den)), lit("1")))
		}
		return &sql.Case{Pos: pos, Whens: []*sql.When{
			when(bin("<", lo, hi), &sql.Case{Pos: pos, Whens: []*sql.When{
				when(bin("<", xv, lo), lit("0")),
				when(bin(">=", xv, hi), bin("+", asInt(n), lit("1"))),
			}, Else: bucket(bin("-", xv, lo), bin("-", hi, lo))}),
			when(bin(">", lo, hi), &sql.Case{Pos: pos, Whens: []*sql.When{
				when(bin(">", xv, lo), lit("0")),
				when(bin("<=", xv, hi), bin("+", asInt(n), lit("1"))),
			}, Else: bucket(bin("-", lo, xv), bin("-", lo, hi))}),
		}}, nil
	case "format":
		return b.formatCall(x, args)
	case "starts_with", "ends_with":
		if err := two(); err != nil {
			return nil, err
		}
		part := call("substring", a[0], lit("1"), call("length", a[1]))
		if x.Name.Name == "ends_with" {
			part = call("right", a[0], call("length", a[1]))
		}
		return bin("=", part, a[1]), nil
	case "current_date":
		if len(a) != 0 {
			return nil, fmt.Errorf("current_date takes no arguments")
		}
		// The statement's date in the session time zone, fixed when the
		// statement is bound.
		return &sql.TypedLiteral{Pos: pos, Type: &sql.TypeName{Pos: pos, Name: "date"}, Value: b.local.Format("2006-01-02")}, nil
	case "concat_ws":
		// concat_ws(sep, a, b, ...): the non-NULL values joined by sep:
		// substring(coalesce(sep || a, '') || coalesce(sep || b, '') ...,
		// length(sep) + 1).
		if len(a) < 2 {
			return nil, fmt.Errorf("function concat_ws takes a separator and at least one value")
		}
		empty := &sql.Literal{Pos: pos, Kind: sql.LitString, Text: ""}
		var joined sql.Expr
		for _, v := range a[1:] {
			text := &sql.Cast{Pos: pos, X: v, Type: &sql.TypeName{Pos: pos, Name: "text"}}
			part := call("coalesce", bin("||", a[0], text), empty)
			if joined == nil {
				joined = part
			} else {
				joined = bin("||", joined, part)
			}
		}
		return call("substring", joined, bin("+", call("length", a[0]), lit("1"))), nil
	case "date_part", "date_trunc":
		if err := two(); err != nil {
			return nil, err
		}
		f, ok := a[0].(*sql.Literal)
		if !ok || f.Kind != sql.LitString {
			return nil, fmt.Errorf("the field of %s must be a string constant", x.Name.Name)
		}
		field := strings.ToLower(f.Text)
		if x.Name.Name == "date_part" {
			return &sql.Extract{Pos: pos, Field: field, X: a[1]}, nil
		}
		if t := args[1].Type(); !plan.IsDate(t) {
			return nil, nil // timestamps: timeFunc
		}
		d := a[1]
		back := func(f string, minus int) sql.Expr { // d less (f of d) - minus days
			ex := &sql.Extract{Pos: pos, Field: f, X: d}
			return bin("-", d, bin("-", ex, lit(strconv.Itoa(minus))))
		}
		switch field {
		case "day":
			return d, nil
		case "week":
			return back("isodow", 1), nil
		case "month":
			return back("day", 1), nil
		case "year":
			return back("doy", 1), nil
		case "quarter":
			// The first day of the month (month - 1) / 3 * 3 + 1.
			year := &sql.Extract{Pos: pos, Field: "year", X: d}
			month := bin("+", bin("*", bin("/", bin("-", &sql.Extract{Pos: pos, Field: "month", X: d}, lit("1")), lit("3")), lit("3")), lit("1"))
			return call("make_date", year, month, lit("1")), nil
		}
		return nil, fmt.Errorf("date_trunc: unit %q is not supported for dates (want day, week, month, quarter or year)", field)
	case "make_date":
		if len(a) != 3 {
			return nil, fmt.Errorf("function make_date takes 3 arguments, got %d", len(a))
		}
		text := bin("||", bin("||", bin("||", bin("||", a[0], &sql.Literal{Pos: pos, Kind: sql.LitString, Text: "-"}), a[1]), &sql.Literal{Pos: pos, Kind: sql.LitString, Text: "-"}), a[2])
		return &sql.Cast{Pos: pos, X: text, Type: &sql.TypeName{Pos: pos, Name: "date"}}, nil
	case "year", "quarter", "month", "day", "hour", "minute", "second", "dayofweek", "dayofyear", "week", "isodow", "millisecond", "microsecond":
		// DuckDB's and MySQL's part functions: year(d) is EXTRACT(year
		// FROM d).
		if len(a) != 1 {
			return nil, fmt.Errorf("function %s takes 1 argument, got %d", x.Name.Name, len(a))
		}
		field := map[string]string{"dayofweek": "dow", "dayofyear": "doy"}[x.Name.Name]
		if field == "" {
			field = x.Name.Name
		}
		return &sql.Extract{Pos: pos, Field: field, X: a[0]}, nil
	case "dayname", "monthname":
		if len(a) != 1 {
			return nil, fmt.Errorf("function %s takes 1 argument, got %d", x.Name.Name, len(a))
		}
		f := map[string]string{"dayname": "%A", "monthname": "%B"}[x.Name.Name]
		return call("strftime", a[0], &sql.Literal{Pos: pos, Kind: sql.LitString, Text: f}), nil
	case "last_day":
		// The month's last day: its first day, a month on, a day back.
		if len(a) != 1 {
			return nil, fmt.Errorf("function last_day takes 1 argument, got %d", len(a))
		}
		d := &sql.Cast{Pos: pos, X: a[0], Type: &sql.TypeName{Pos: pos, Name: "date"}}
		first := call("date_trunc", &sql.Literal{Pos: pos, Kind: sql.LitString, Text: "month"}, d)
		return bin("-", bin("+", first, &sql.IntervalLit{Pos: pos, Value: "1", Unit: "month"}), lit("1")), nil
	case "btrim", "lcase", "ucase", "instr", "prefix", "suffix":
		// Other names: btrim is trim (PostgreSQL), lcase/ucase lower/upper
		// and instr strpos (MySQL, DuckDB), prefix/suffix starts_with and
		// ends_with (DuckDB).
		to := map[string]string{"btrim": "trim", "lcase": "lower", "ucase": "upper", "instr": "strpos", "prefix": "starts_with", "suffix": "ends_with"}[x.Name.Name]
		return call(to, a...), nil
	case "contains":
		// DuckDB's contains(s, sub): sub occurs in s.
		if err := two(); err != nil {
			return nil, err
		}
		return bin(">", call("strpos", a[0], a[1]), lit("0")), nil
	case "ifnull", "nvl":
		if err := two(); err != nil {
			return nil, err
		}
		return call("coalesce", a[0], a[1]), nil
	case "char_length", "character_length":
		if len(a) != 1 {
			return nil, fmt.Errorf("function %s takes 1 argument, got %d", x.Name.Name, len(a))
		}
		return call("length", a[0]), nil
	case "date_diff", "datediff":
		// DuckDB's date_diff(part, start, end): the part boundaries
		// between the two (date_trunc of each, then the distance in
		// whole parts).
		if len(a) != 3 {
			return nil, fmt.Errorf("function %s takes a part, a start and an end", x.Name.Name)
		}
		f, ok := a[0].(*sql.Literal)
		if !ok || f.Kind != sql.LitString {
			return nil, fmt.Errorf("the part of %s must be a string constant", x.Name.Name)
		}
		part := expr.TruncUnitName(strings.ToLower(f.Text))
		ts := func(e sql.Expr) sql.Expr {
			return &sql.Cast{Pos: pos, X: e, Type: &sql.TypeName{Pos: pos, Name: "timestamp"}}
		}
		ex := func(field string, e sql.Expr) sql.Expr { return &sql.Extract{Pos: pos, Field: field, X: e} }
		start, end := ts(a[1]), ts(a[2])
		months := func(e sql.Expr) sql.Expr { return bin("+", bin("*", ex("year", e), lit("12")), ex("month", e)) }
		switch part {
		case "year", "quarter", "month", "decade", "century", "millennium":
			div := map[string]string{"year": "12", "quarter": "3", "month": "1", "decade": "120", "century": "1200", "millennium": "12000"}[part]
			tr := func(e sql.Expr) sql.Expr {
				return call("date_trunc", &sql.Literal{Pos: pos, Kind: sql.LitString, Text: part}, e)
			}
			return bin("/", bin("-", months(tr(end)), months(tr(start))), lit(div)), nil
		case "week", "day", "hour", "minute", "second", "millisecond", "microsecond":
			// NB: weeks are whole days / 7 (truncated), as DuckDB counts
			// them, not Monday boundaries.
			per := map[string]string{"week": "604800000000", "day": "86400000000", "hour": "3600000000", "minute": "60000000", "second": "1000000", "millisecond": "1000", "microsecond": "1"}[part]
			unit := part
			if part == "week" {
				unit = "day"
			}
			tr := func(e sql.Expr) sql.Expr {
				return ex("epoch_us", call("date_trunc", &sql.Literal{Pos: pos, Kind: sql.LitString, Text: unit}, e))
			}
			return bin("/", bin("-", tr(end), tr(start)), lit(per)), nil
		}
		return nil, fmt.Errorf("%s: part %q is not known (want year, quarter, month, week, day, hour, minute, second, millisecond or microsecond)", x.Name.Name, f.Text)
	case "date_bin":
		// date_bin(stride, source, origin): the start of source's bin of
		// stride from origin, PostgreSQL's, in microseconds since 1970:
		// source - ((us(source) - us(origin)) mod stride).
		if len(a) != 3 {
			return nil, fmt.Errorf("function date_bin takes 3 arguments (stride, source, origin), got %d", len(a))
		}
		k, ok := plan.FoldNow(plan.ResolveUntyped(args[0], plan.TypInterval)).(*plan.Const)
		if !ok || !plan.IsInterval(k.Typ) || k.IsNull() {
			return nil, fmt.Errorf("date_bin: the stride must be a constant interval")
		}
		iv := k.Val.(arrow.MonthDayNanoInterval)
		if iv.Months != 0 {
			return nil, fmt.Errorf("timestamps cannot be binned into intervals containing months or years")
		}
		stride := int64(iv.Days)*expr.UsPerDay + iv.Nanoseconds/1000
		if stride <= 0 {
			return nil, fmt.Errorf("stride must be greater than zero")
		}
		for i := 1; i < 3; i++ {
			if t := plan.ResolveUntyped(args[i], plan.TypTimestamp).Type(); !plan.IsTimestamp(t) && !plan.IsNullType(t) {
				return nil, fmt.Errorf("function date_bin(interval, %s) does not exist (want timestamps)", plan.TypeString(t))
			}
		}
		us := func(e sql.Expr) sql.Expr { return &sql.Extract{Pos: pos, Field: "epoch_us", X: e} }
		st := lit(strconv.FormatInt(stride, 10))
		d := bin("-", us(a[1]), us(a[2]))
		r := bin("%", bin("+", bin("%", d, st), st), st)
		micro := &sql.TypedLiteral{Pos: pos, Type: &sql.TypeName{Pos: pos, Name: "interval"}, Value: "1 microsecond"}
		return bin("-", a[1], bin("*", micro, r)), nil
	case "trunc":
		if len(args) == 2 {
			return b.truncDigits(x, args)
		}
		fallthrough
	case "floor", "ceil", "ceiling":
		if len(args) != 1 || !plan.IsDecimal(args[0].Type()) {
			return nil, nil
		}
		r := call("round", a[0])
		var wrong, step sql.Expr
		switch x.Name.Name {
		case "floor":
			wrong, step = bin(">", r, a[0]), bin("-", r, lit("1"))
		case "trunc":
			// Toward zero: floor for positives, ceil for negatives.
			pos0 := bin(">=", a[0], lit("0"))
			return &sql.Case{Pos: pos, Whens: []*sql.When{when(pos0, call("floor", a[0]))}, Else: call("ceil", a[0])}, nil
		default:
			wrong, step = bin("<", r, a[0]), bin("+", r, lit("1"))
		}
		return &sql.Case{Pos: pos, Whens: []*sql.When{when(wrong, step)}, Else: r}, nil
	}
	return nil, nil
}

// truncDigits rewrites trunc(x, n), n an integer constant: x cut toward
// zero to n fraction digits (tens, hundreds... for n < 0), PostgreSQL's
// trunc(numeric, int). Exact for decimals and integers: round(x - sign(x)
// * half a unit of the n-th digit, n), which never rounds away from zero;
// doubles: trunc(x * 10^n) / 10^n.
func (b *binder) truncDigits(x *sql.FuncCall, args []plan.Expr) (sql.Expr, error) {
	pos := x.Pos
	c, ok := args[1].(*plan.Const)
	if !ok || !plan.IsInteger(c.Typ) || c.IsNull() {
		return nil, fmt.Errorf("trunc: the number of digits must be an integer constant")
	}
	n := plan.ConstInt(c)
	if n > plan.MaxDecimalPrecision || n < -plan.MaxDecimalPrecision {
		return nil, fmt.Errorf("trunc: %d digits is out of range -38..38", n)
	}
	t := plan.ResolveUntyped(args[0], plan.TypFloat64).Type()
	a := x.Args[0]
	num := func(v string) sql.Expr { return &sql.Literal{Pos: pos, Kind: sql.LitNumber, Text: v} }
	call := func(name string, as ...sql.Expr) sql.Expr {
		return &sql.FuncCall{Pos: pos, Name: sql.Ident{Pos: pos, Name: name}, Args: as}
	}
	bin := func(op string, l, r sql.Expr) sql.Expr { return &sql.BinaryExpr{Pos: pos, Op: op, L: l, R: r} }
	switch {
	case plan.IsFloat(t):
		p := num("1e" + strconv.FormatInt(n, 10))
		return bin("/", call("trunc", bin("*", a, p)), p), nil
	case plan.IsInteger(t) || plan.IsDecimal(t):
		scale := int64(0)
		if plan.IsDecimal(t) {
			_, s, _ := plan.DecimalPS(t)
			scale = int64(s)
		}
		if n >= scale {
			return a, nil // no digit to cut
		}
		// half a unit of digit n: 5 * 10^(-n-1).
		var half string
		if n >= 0 {
			half = "0." + strings.Repeat("0", int(n)) + "5"
		} else {
			half = "5" + strings.Repeat("0", int(-n-1))
		}
		return call("round", bin("-", a, bin("*", call("sign", a), num(half))), x.Args[1]), nil
	}
	return nil, fmt.Errorf("function trunc(%s, integer) does not exist", plan.TypeString(t))
}

// subquery binds a subquery in scope s; want is the number of columns it
// must return (-1: any).
func (b *binder) subquery(q *sql.Query, s *scope, want int, what string) (plan.Plan, error) {
	plan, _, err := b.query(q, s)
	if err != nil {
		return nil, err
	}
	if want > 0 && len(plan.Columns()) != want {
		return nil, b.errorf(q, "subquery for %s must return exactly one column, not %d", what, len(plan.Columns()))
	}
	return plan, nil
}

// newSubquery makes the subquery expression of plan lp, bound from src.
func (b *binder) newSubquery(kind plan.SubqueryKind, x plan.Expr, lp plan.Plan, t arrow.DataType, src sql.Node) *plan.SubqueryExpr {
	b.nextSub++
	free := plan.FreeCols(lp)
	outer := make([]plan.ColumnID, 0, len(free))
	for id := range free {
		outer = append(outer, id)
	}
	plan.SortIDs(outer)
	return &plan.SubqueryExpr{Kind: kind, X: x, Plan: lp, Outer: outer, Typ: t, ID: b.nextSub, Src: sql.Deparse(src)}
}

func (b *binder) literal(x *sql.Literal) (plan.Expr, error) {
	switch x.Kind {
	case sql.LitNull:
		return plan.NullConst(plan.TypNull), nil
	case sql.LitBool:
		return plan.BoolConst(x.Text == "true"), nil
	case sql.LitString:
		return &plan.Const{Typ: plan.TypString, Val: x.Text, Untyped: true}, nil
	case sql.LitBlob:
		v, err := hex.DecodeString(x.Text)
		if err != nil {
			return nil, b.errorf(x, "invalid blob literal x'%s'", x.Text)
		}
		return &plan.Const{Typ: plan.TypBinary, Val: plan.Bytea(v)}, nil
	}
	c, err := plan.ParseNumber(x.Text)
	if err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	return c, nil
}

// boolCheck requires a boolean (or NULL) expression.
func (b *binder) boolCheck(e plan.Expr, at sql.Node, clause string) (plan.Expr, error) {
	e = plan.ResolveUntyped(e, plan.TypBool)
	if c, ok := e.(*plan.Const); ok && plan.IsString(c.Typ) {
		v, err := b.castConst(c, plan.TypBool)
		if err != nil {
			return nil, b.errorf(at, "argument of %s must be boolean: %v", clause, err)
		}
		return v, nil
	}
	if plan.IsNullType(e.Type()) {
		return plan.NullConst(plan.TypBool), nil
	}
	if !plan.IsBool(e.Type()) {
		return nil, b.errorf(at, "argument of %s must be boolean, not %s", clause, plan.TypeString(e.Type()))
	}
	return e, nil
}

// comparable binds two operands and converts them to their common type.
func (b *binder) comparable(le, re sql.Expr, s *scope, ctx *exprCtx, at sql.Node, op string) (plan.Expr, plan.Expr, error) {
	l, err := b.expr(le, s, ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := b.expr(re, s, ctx)
	if err != nil {
		return nil, nil, err
	}
	// NB: a number beside a decimal keeps its fraction digits (d = '1.005'
	// is false for a decimal(12,2) d), as in arithmetic.
	if plan.IsDecimal(r.Type()) {
		l = plan.ResolveUntyped(l, r.Type())
	}
	if plan.IsDecimal(l.Type()) {
		r = plan.ResolveUntyped(r, l.Type())
	}
	t, ok := plan.CommonTypeOf(plan.TypNull, l, r)
	if !ok {
		return nil, nil, b.errorf(at, "operator does not exist: %s %s %s", plan.TypeString(l.Type()), op, plan.TypeString(r.Type()))
	}
	if l, err = b.coerce(l, t); err != nil {
		return nil, nil, b.errorf(le, "%v", err)
	}
	if r, err = b.coerce(r, t); err != nil {
		return nil, nil, b.errorf(re, "%v", err)
	}
	return l, r, nil
}

var cmpFns = map[string]string{"=": plan.FnEq, "<>": plan.FnNe, "<": plan.FnLt, "<=": plan.FnLe, ">": plan.FnGt, ">=": plan.FnGe}
var arithFns = map[string]string{"+": plan.FnAdd, "-": plan.FnSub, "*": plan.FnMul, "/": plan.FnDiv, "%": plan.FnMod}

func (b *binder) binary(x *sql.BinaryExpr, s *scope, ctx *exprCtx) (plan.Expr, error) {
	if _, ok := cmpFns[x.Op]; ok && (isRow(x.L) || isRow(x.R)) {
		l, r, err := b.rowSubqueries(x.L, x.R, s)
		if err != nil {
			return nil, err
		}
		e, err := rowCompare(x.Op, l, r)
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return b.expr(e, s, ctx)
	}
	if fn, ok := cmpFns[x.Op]; ok {
		l, r, err := b.comparable(x.L, x.R, s, ctx, x, x.Op)
		if err != nil {
			return nil, err
		}
		return plan.FoldNow(b.newCall(fn, plan.TypBool, l, r)), nil
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
			return plan.AndOf([]plan.Expr{l, r}), nil
		}
		return plan.OrOf([]plan.Expr{l, r}), nil
	case "&", "|":
		l, r = plan.ResolveUntyped(l, plan.TypInt64), plan.ResolveUntyped(r, plan.TypInt64)
		t, ok := plan.CommonType(l.Type(), r.Type())
		if !ok || !plan.IsInteger(t) {
			return nil, b.errorf(x, "operator does not exist: %s %s %s", plan.TypeString(l.Type()), x.Op, plan.TypeString(r.Type()))
		}
		var err error
		if l, err = b.coerce(l, t); err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		if r, err = b.coerce(r, t); err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		fn := expr.FnBitAnd
		if x.Op == "|" {
			fn = expr.FnBitOr
		}
		return b.newCall(fn, t, l, r), nil
	case "@>", "<@", "&&":
		return b.arrayContains(x, l, r)
	case "||":
		if plan.IsArray(l.Type()) || plan.IsArray(r.Type()) {
			return b.arrayConcat(x, l, r)
		}
		if c, ok, err := b.byteaConcat(x, l, r); ok || err != nil {
			return c, err
		}
		l, r = plan.ResolveUntyped(l, plan.TypString), plan.ResolveUntyped(r, plan.TypString)
		if !plan.IsString(l.Type()) && !plan.IsString(r.Type()) && !plan.IsNullType(l.Type()) && !plan.IsNullType(r.Type()) {
			return nil, b.errorf(x, "operator does not exist: %s || %s", plan.TypeString(l.Type()), plan.TypeString(r.Type()))
		}
		toStr := func(e plan.Expr) plan.Expr {
			if plan.IsString(e.Type()) {
				return e
			}
			if c, ok := e.(*plan.Const); ok {
				if v, err := b.castConst(c, plan.TypString); err == nil {
					return v
				}
			}
			return &plan.CastExpr{Zone: b.zone, X: e, Typ: plan.TypString}
		}
		return plan.FoldNow(b.newCall(plan.FnConcat, plan.TypString, toStr(l), toStr(r))), nil
	case "->", "->>", "#>", "#>>":
		return b.jsonOp(x, l, r)
	case "^":
		// PostgreSQL's exponentiation: power(a, b), double precision.
		e, err := b.scalarFunc("power", []plan.Expr{l, r})
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return plan.FoldNow(e), nil
	case "~", "~*", "!~", "!~*":
		// POSIX-style matching (PostgreSQL's operators), with RE2 syntax:
		// regexp_like, case-insensitive for *, negated for !.
		l = plan.ResolveUntyped(l, plan.TypString)
		k, ok := plan.FoldNow(plan.ResolveUntyped(r, plan.TypString)).(*plan.Const)
		if !ok || (!k.IsNull() && !plan.IsString(k.Typ)) {
			return nil, b.errorf(x.R, "the pattern of %s must be a string constant", x.Op)
		}
		if !plan.IsString(l.Type()) && !plan.IsNullType(l.Type()) {
			return nil, b.errorf(x, "operator does not exist: %s %s text", plan.TypeString(l.Type()), x.Op)
		}
		if !k.IsNull() && strings.Contains(x.Op, "*") {
			k = &plan.Const{Typ: plan.TypString, Val: "(?i)" + k.Val.(string)}
		}
		var m plan.Expr = b.newCall("regexp_like", plan.TypBool, l, k)
		if strings.HasPrefix(x.Op, "!") {
			m = b.newCall(plan.FnNot, plan.TypBool, m)
		}
		return m, nil
	}
	fn := arithFns[x.Op]
	// Untyped string literals take the other side's type ('1' + 1 is 2).
	l, r = plan.ResolveUntyped(l, r.Type()), plan.ResolveUntyped(r, l.Type())
	lt, rt := l.Type(), r.Type()
	// A date plus an interval with a time of day (or one not known until
	// run time) is a timestamp: its midnight plus the interval.
	if (plan.IsDate(lt) && plan.IsInterval(rt) || plan.IsInterval(lt) && plan.IsDate(rt)) && !wholeDays(l, r) {
		if plan.IsDate(lt) {
			l, lt = plan.FoldNow(&plan.CastExpr{Zone: b.zone, X: l, Typ: plan.TypTimestamp}), plan.TypTimestamp
		} else {
			r, rt = plan.FoldNow(&plan.CastExpr{Zone: b.zone, X: r, Typ: plan.TypTimestamp}), plan.TypTimestamp
		}
	}
	// Times (with intervals, times and dates).
	if plan.IsTime(lt) || plan.IsTime(rt) {
		t, ok := expr.TimeArithType(fn, lt, rt)
		if !ok {
			return nil, b.errorf(x, "operator does not exist: %s %s %s", plan.TypeString(lt), x.Op, plan.TypeString(rt))
		}
		return plan.FoldNow(b.newCall(fn, t, l, r)), nil
	}
	// Timestamps, dates and intervals.
	if plan.IsTimestamp(lt) || plan.IsTimestamp(rt) {
		switch {
		case plan.IsTimestamp(lt) && plan.IsInterval(rt) && (fn == plan.FnAdd || fn == plan.FnSub):
			return plan.FoldNow(b.newCall(fn, lt, l, r)), nil
		case plan.IsInterval(lt) && plan.IsTimestamp(rt) && fn == plan.FnAdd:
			return plan.FoldNow(b.newCall(fn, rt, l, r)), nil
		case plan.IsTemporal(lt) && plan.IsTemporal(rt) && fn == plan.FnSub:
			return plan.FoldNow(b.newCall(fn, plan.TypInterval, l, r)), nil
		}
		return nil, b.errorf(x, "operator does not exist: %s %s %s", plan.TypeString(lt), x.Op, plan.TypeString(rt))
	}
	switch {
	case plan.IsDate(lt) && (plan.IsInteger(rt) || plan.IsInterval(rt)) && (fn == plan.FnAdd || fn == plan.FnSub),
		plan.IsInteger(lt) && plan.IsDate(rt) && fn == plan.FnAdd,
		plan.IsInterval(lt) && plan.IsDate(rt) && fn == plan.FnAdd:
		return plan.FoldNow(b.newCall(fn, plan.TypDate, l, r)), nil
	case plan.IsDate(lt) && plan.IsDate(rt) && fn == plan.FnSub:
		return plan.FoldNow(b.newCall(fn, plan.TypInt32, l, r)), nil
	case plan.IsInterval(lt) && plan.IsInterval(rt) && (fn == plan.FnAdd || fn == plan.FnSub):
		return plan.FoldNow(b.newCall(fn, plan.TypInterval, l, r)), nil
	case plan.IsInterval(lt) && plan.IsNumeric(rt) && (fn == plan.FnMul || fn == plan.FnDiv),
		plan.IsNumeric(lt) && plan.IsInterval(rt) && fn == plan.FnMul:
		return b.newCall(fn, plan.TypInterval, l, r), nil
	}
	t, ok := plan.ArithType(fn, lt, rt)
	if !ok {
		return nil, b.errorf(x, "operator does not exist: %s %s %s", plan.TypeString(lt), x.Op, plan.TypeString(rt))
	}
	// Operands: integer literals next to decimals become the smallest
	// decimal that holds them, so "1 - l_discount" stays decimal(15,2)-ish.
	l, r = shrinkIntLiteral(l, rt), shrinkIntLiteral(r, lt)
	if t2, ok := plan.ArithType(fn, l.Type(), r.Type()); ok {
		t = t2
	}
	if plan.IsFloat(t) {
		l, _ = b.coerce(l, plan.TypFloat64)
		r, _ = b.coerce(r, plan.TypFloat64)
	}
	return plan.FoldNow(b.newCall(fn, t, l, r)), nil
}

// byteaConcat binds bytea || bytea (an untyped literal or a NULL beside a
// bytea is one): ok is false when neither operand is a bytea, or the other
// is typed otherwise (then || concatenates text, as PostgreSQL's
// anynonarray || text).
func (b *binder) byteaConcat(x *sql.BinaryExpr, l, r plan.Expr) (plan.Expr, bool, error) {
	lb, rb := plan.IsBinary(l.Type()), plan.IsBinary(r.Type())
	if !lb && !rb {
		return nil, false, nil
	}
	ops := []plan.Expr{l, r}
	for i, e := range ops {
		if plan.IsBinary(e.Type()) || plan.IsNullType(e.Type()) {
			continue
		}
		c, ok := e.(*plan.Const)
		if !ok || !c.Untyped {
			return nil, false, nil
		}
		v, err := plan.CastConst(&plan.Const{Typ: plan.TypString, Val: c.Val}, plan.TypBinary)
		if err != nil {
			return nil, false, b.errorf([]sql.Expr{x.L, x.R}[i], "%v", err)
		}
		ops[i] = v
	}
	return plan.FoldNow(plan.NewCall(plan.FnConcat, plan.TypBinary, ops[0], ops[1])), true, nil
}

// wholeDays reports whether the interval operand of a or b is a constant
// without a time of day.
func wholeDays(a, b plan.Expr) bool {
	iv, ok := intervalOf(a, b)
	return ok && iv.Nanoseconds%expr.NanosPerDay == 0
}

func intervalOf(a, b plan.Expr) (arrow.MonthDayNanoInterval, bool) {
	for _, e := range []plan.Expr{a, b} {
		if c, ok := e.(*plan.Const); ok {
			if v, ok := c.Val.(arrow.MonthDayNanoInterval); ok {
				return v, true
			}
		}
	}
	return arrow.MonthDayNanoInterval{}, false
}

// shrinkIntLiteral turns an integer constant used with a decimal into the
// smallest decimal(p, 0) holding it.
func shrinkIntLiteral(e plan.Expr, other arrow.DataType) plan.Expr {
	c, ok := e.(*plan.Const)
	if !ok || c.IsNull() || !plan.IsInteger(c.Typ) || !plan.IsDecimal(other) {
		return e
	}
	v := plan.ConstInt(c)
	digits := int32(len(fmt.Sprint(absInt64(v))))
	d, err := plan.CastConst(c, plan.DecimalType(digits, 0))
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

func (b *binder) caseExpr(x *sql.Case, s *scope, ctx *exprCtx) (plan.Expr, error) {
	var operand plan.Expr
	var err error
	if x.Operand != nil {
		if operand, err = b.expr(x.Operand, s, ctx); err != nil {
			return nil, err
		}
	}
	c := &plan.CaseExpr{}
	var results []plan.Expr
	for _, w := range x.Whens {
		cond, err := b.expr(w.Cond, s, ctx)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			t, ok := plan.CommonTypeOf(plan.TypNull, operand, cond)
			if !ok {
				return nil, b.errorf(w, "CASE operand of type %s cannot be compared with %s", plan.TypeString(operand.Type()), plan.TypeString(cond.Type()))
			}
			o, _ := b.coerce(operand, t)
			if cond, err = b.coerce(cond, t); err != nil {
				return nil, b.errorf(w.Cond, "%v", err)
			}
			cond = b.newCall(plan.FnEq, plan.TypBool, o, cond)
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
	t, ok := plan.CommonTypeOf(plan.TypNull, results...)
	if !ok {
		return nil, b.errorf(x, "CASE types cannot be matched: %s", typeList(results))
	}
	if plan.IsNullType(t) {
		t = plan.TypString
	}
	for i := range results {
		if results[i], err = b.coerce(results[i], t); err != nil {
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

func typeList(es []plan.Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = plan.TypeString(e.Type())
	}
	return strings.Join(s, ", ")
}

// funcCall binds aggregates, window functions and scalar functions.
func (b *binder) funcCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (plan.Expr, error) {
	if e, ok, err := b.jsonCall(x, s); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return b.expr(e, s, ctx)
	}
	name := x.Name.Name
	if len(x.WithinGroup) > 0 && (x.Over != nil || !isQuantileName(name) && name != "mode") {
		return nil, b.errorf(x.WithinGroup[0], "WITHIN GROUP is only valid for percentile_cont, percentile_disc and mode")
	}
	if len(x.OrderBy) > 0 && (x.Over != nil || !isAggregateName(name)) {
		return nil, b.errorf(x.OrderBy[0], "ORDER BY inside a call is only valid for aggregate functions without OVER")
	}
	if x.Over != nil {
		return b.windowCall(x, s, ctx)
	}
	if isAggregateName(name) {
		return b.aggregateCall(x, s, ctx)
	}
	if name == "grouping" {
		return b.groupingCall(x, s, ctx)
	}
	if x.Star || x.Distinct {
		return nil, b.errorf(x, "%s(%s...) is only valid for aggregate functions", name, map[bool]string{true: "*", false: "DISTINCT "}[x.Star])
	}
	if x.Filter != nil {
		return nil, b.errorf(x, "FILTER is only valid for aggregate functions")
	}
	switch name {
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value":
		return nil, b.errorf(x, "window function %s requires an OVER clause", name)
	}
	if isArraySRF(name) && !x.Name.Quoted {
		return nil, b.errorf(x, "%s returns a set of rows: call it as a select-list item (alone or cast) or in FROM", name)
	}
	if fc, ok := b.cat.(plan.SQLFunctionCatalog); ok {
		if body, ok := fc.SQLFunction(name, len(x.Args)); ok {
			return b.sqlFunction(x, body, s, ctx)
		}
	}
	args := make([]plan.Expr, len(x.Args))
	for i, a := range x.Args {
		e, err := b.expr(a, s, ctx)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	if e, err := b.timeFunc(name, args); e != nil || err != nil {
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return plan.FoldNow(e), nil
	}
	if r, err := b.rewriteFunc(x, args); r != nil || err != nil {
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return b.expr(r, s, ctx)
	}
	if e, err := b.arrayFunc(name, args); e != nil || err != nil {
		if err != nil {
			return nil, b.errorf(x, "%v", err)
		}
		return e, nil
	}
	e, err := b.scalarFunc(name, args)
	if err != nil {
		return nil, b.errorf(x, "%v", err)
	}
	return plan.FoldNow(e), nil
}

// sqlFunction binds a call of a function the catalog defines in SQL
// (plan.SQLFunctionCatalog): its body with $1 ... $n replaced by the
// call's arguments (each printed back as SQL, parenthesized), bound where
// the call is. An error inside says it is in the function's body.
func (b *binder) sqlFunction(x *sql.FuncCall, body string, s *scope, ctx *exprCtx) (plan.Expr, error) {
	// The arguments are bound here, in the caller's scope, and the body
	// refers to them by names no query uses: an argument "oid" stays
	// the caller's column inside the body's subqueries (over tables that
	// have an oid of their own).
	if b.fnArgs == nil {
		b.fnArgs = map[string]plan.Expr{}
	}
	text := body
	for i := len(x.Args); i >= 1; i-- {
		a, err := b.expr(x.Args[i-1], s, ctx)
		if err != nil {
			return nil, err
		}
		b.nextFnArg++
		name := fmt.Sprintf("nicflow_fn_arg_%d", b.nextFnArg)
		b.fnArgs[name] = a
		// NB: from the last, so that $1 does not replace the start of $10.
		text = strings.ReplaceAll(text, "$"+strconv.Itoa(i), name)
	}
	e, err := sql.ParseExpr(text)
	if err != nil {
		return nil, b.errorf(x, "function %s: its definition does not parse: %v", x.Name.Name, err)
	}
	src, srcName := b.src, b.srcName
	b.src, b.srcName = text, "function "+x.Name.Name+", defined as "+text
	defer func() { b.src, b.srcName = src, srcName }()
	return b.expr(e, s, ctx)
}

func isQuantileName(n string) bool {
	return n == "median" || n == "quantile_cont" || n == "quantile" || n == "percentile_cont" || n == "percentile_disc"
}

// quantileCall reads the fraction of a quantile aggregate and returns the
// call with its one value argument: median(x) (0.5), quantile_cont(x, q)
// and quantile(x, q) (DuckDB), percentile_cont(q) WITHIN GROUP (ORDER BY
// x [DESC]) (PostgreSQL; DESC takes 1 - q).
func (b *binder) quantileCall(x *sql.FuncCall) (*sql.FuncCall, float64, error) {
	name := x.Name.Name
	c := *x
	var qe sql.Expr
	switch name {
	case "median":
		if len(x.Args) != 1 || len(x.WithinGroup) > 0 {
			return nil, 0, b.errorf(x, "median takes one argument")
		}
		return &c, 0.5, nil
	case "quantile_cont", "quantile":
		if len(x.Args) != 2 || len(x.WithinGroup) > 0 {
			return nil, 0, b.errorf(x, "%s takes two arguments (value, fraction)", name)
		}
		c.Args, qe = x.Args[:1], x.Args[1]
	case "percentile_cont", "percentile_disc":
		if len(x.Args) != 1 || len(x.WithinGroup) != 1 {
			return nil, 0, b.errorf(x, "%s takes a fraction and WITHIN GROUP (ORDER BY one value)", name)
		}
		c.Args, c.WithinGroup, qe = []sql.Expr{x.WithinGroup[0].Expr}, nil, x.Args[0]
	default:
		return nil, 0, b.errorf(x, "WITHIN GROUP is only valid for percentile_cont and percentile_disc")
	}
	e, err := b.expr(qe, &scope{}, &exprCtx{clause: "the fraction of " + name})
	if err != nil {
		return nil, 0, err
	}
	k, ok, err := plan.FoldToConst(plan.ResolveUntyped(e, plan.TypFloat64))
	if err != nil {
		return nil, 0, b.errorf(qe, "%v", err)
	}
	var q float64
	if ok && !k.IsNull() {
		if f, err := b.castConst(k, plan.TypFloat64); err == nil {
			q, ok = f.Val.(float64)
		}
	}
	if !ok || k.IsNull() || q < 0 || q > 1 || math.IsNaN(q) {
		return nil, 0, b.errorf(qe, "the fraction of %s must be a constant between 0 and 1", name)
	}
	if name == "percentile_cont" && x.WithinGroup[0].Desc {
		q = 1 - q
	}
	return &c, q, nil
}

// aggOrderBy binds an aggregate's ORDER BY into the SELECT's aggregate
// context. Only string_agg's result depends on it (the others' ORDER BY
// is checked and dropped); the string_aggs of one SELECT must give the
// same ORDER BY, without DISTINCT.
func (b *binder) aggOrderBy(x *sql.FuncCall, s *scope, ctx *exprCtx) error {
	keys := make([]plan.SortKey, len(x.OrderBy))
	var text []string
	for i, o := range x.OrderBy {
		e, err := b.expr(o.Expr, s, &exprCtx{clause: "ORDER BY", inAgg: true})
		if err != nil {
			return err
		}
		if x.Distinct && (len(x.Args) == 0 || sql.Deparse(o.Expr) != sql.Deparse(x.Args[0])) {
			// PostgreSQL's rule: DISTINCT's rows are the argument's values,
			// which are all an order can sort them by.
			return b.errorf(o.Expr, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
		}
		keys[i] = sortKey(e, o)
		text = append(text, fmt.Sprintf("%s|%v|%v", plan.ExprKey(e), keys[i].Desc, keys[i].NullsFirst))
	}
	if x.Name.Name != "string_agg" && x.Name.Name != "array_agg" {
		return nil // the order does not change the others' results
	}
	key := strings.Join(text, ";")
	a := ctx.agg
	switch {
	case a.orderBy == nil:
		a.orderBy, a.orderByKey = keys, key
	case a.orderByKey != key:
		return b.errorf(x.OrderBy[0], "string_agg and array_agg calls with different ORDER BY in one query are not supported")
	}
	return nil
}

// aggregateCall binds count/sum/avg/min/max into the SELECT's aggregate
// context and returns a reference to the aggregate's output column.
func (b *binder) aggregateCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (plan.Expr, error) {
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
	var filter plan.Expr
	if x.Filter != nil {
		f, err := b.expr(x.Filter, s, &exprCtx{clause: "FILTER", inAgg: true})
		if err != nil {
			return nil, err
		}
		if filter, err = b.boolCheck(f, x.Filter, "FILTER"); err != nil {
			return nil, err
		}
	}
	withFilter := func(arg plan.Expr) plan.Expr {
		if filter == nil {
			return arg
		}
		return &plan.CaseExpr{Whens: []plan.Expr{filter}, Thens: []plan.Expr{arg}, Typ: arg.Type()}
	}
	if len(x.OrderBy) > 0 {
		if err := b.aggOrderBy(x, s, ctx); err != nil {
			return nil, err
		}
	}
	quantile := 0.0
	orig := x
	if name == "mode" {
		// mode() WITHIN GROUP (ORDER BY x [DESC]) (PostgreSQL) or mode(x)
		// (DuckDB): one value argument either way.
		if len(x.WithinGroup) > 1 || len(x.WithinGroup) == 1 && len(x.Args) != 0 || len(x.WithinGroup) == 0 && len(x.Args) != 1 {
			return nil, b.errorf(x, "mode takes WITHIN GROUP (ORDER BY one value), or one argument")
		}
		if len(x.WithinGroup) == 1 {
			c := *x
			c.Args, c.WithinGroup = []sql.Expr{x.WithinGroup[0].Expr}, nil
			x = &c
		}
	} else if isQuantileName(name) || len(x.WithinGroup) > 0 {
		var err error
		if x, quantile, err = b.quantileCall(x); err != nil {
			return nil, err
		}
	}
	ac := &plan.AggCall{Fn: name, Distinct: x.Distinct, Quantile: quantile}
	if name == "percentile_disc" || name == "mode" {
		// quantileCall turned DESC into 1 - q for percentile_cont only;
		// mode's order breaks its ties.
		ac.Desc = len(orig.WithinGroup) == 1 && orig.WithinGroup[0].Desc
	}
	switch {
	case x.Star:
		if name != "count" {
			return nil, b.errorf(x, "%s(*) is not valid; only count(*)", name)
		}
		ac.Fn, ac.Typ = plan.AggCountStar, plan.TypInt64
		if filter != nil {
			ac.Fn, ac.Arg = plan.AggCount, withFilter(&plan.Const{Typ: plan.TypInt32, Val: int32(1)})
		}
	case name == "string_agg" && len(x.Args) != 2:
		return nil, b.errorf(x, "string_agg takes two arguments (value, separator), got %d", len(x.Args))
	case name != "string_agg" && len(x.Args) != 1:
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
		arg = plan.ResolveUntyped(arg, plan.TypString)
		t := arg.Type()
		switch name {
		case "count":
			ac.Typ = plan.TypInt64
		case "sum", "avg":
			if !plan.IsNumeric(t) && !plan.IsNullType(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, plan.TypeString(t))
			}
			ac.Typ = plan.AggResultType(name, t)
		case "var_samp", "var_pop", "variance", "stddev_samp", "stddev_pop", "stddev":
			if !plan.IsNumeric(t) && !plan.IsNullType(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, plan.TypeString(t))
			}
			if plan.IsNullType(t) {
				arg = plan.NullConst(plan.TypFloat64)
			}
			ac.Fn, ac.Typ = varianceNames[name], plan.TypFloat64
		case "min", "max":
			if plan.IsNullType(t) {
				t = plan.TypInt32
			}
			ac.Typ = t
		case "percentile_disc", "mode":
			if plan.IsNullType(t) {
				arg, t = plan.NullConst(plan.TypInt32), plan.TypInt32
			}
			if !(plan.IsInteger(t) || plan.IsFloat(t) || plan.IsTemporal(t) || t.ID() == arrow.DECIMAL64 || t.ID() == arrow.STRING) {
				return nil, b.errorf(x, "function %s(%s) is not supported yet (numbers up to decimal(18), text, dates and timestamps are)", name, plan.TypeString(t))
			}
			ac.Fn, ac.Typ = plan.AggPercentileDisc, t
			if name == "mode" {
				ac.Fn = plan.AggMode
			}
		case "median", "quantile_cont", "quantile", "percentile_cont":
			if !plan.IsNumeric(t) && !plan.IsNullType(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, plan.TypeString(t))
			}
			if plan.IsNullType(t) {
				arg = plan.NullConst(plan.TypFloat64)
			}
			ac.Fn, ac.Typ = plan.AggQuantileCont, plan.TypFloat64
		case "array_agg":
			// NB: array_agg keeps NULLs, so FILTER cannot be a CASE (NULL
			// for the rows it drops): the aggregate skips those rows.
			ac.Filter, filter = filter, nil
			if plan.IsNullType(t) {
				arg, t = plan.NullConst(plan.TypString), plan.TypString
			}
			if plan.IsArray(t) {
				return nil, b.errorf(x, "array_agg of arrays is not supported (nicflow's arrays have one dimension)")
			}
			ac.Fn, ac.Typ = plan.AggArrayAgg, plan.ArrayOf(t)
		case "string_agg":
			if !plan.IsString(t) && !plan.IsNullType(t) {
				return nil, b.errorf(x, "function string_agg(%s, text) does not exist", plan.TypeString(t))
			}
			if plan.IsNullType(t) {
				arg = plan.NullConst(plan.TypString)
			}
			sep, err := b.expr(x.Args[1], s, actx)
			if err != nil {
				return nil, err
			}
			k, ok := plan.FoldNow(plan.ResolveUntyped(sep, plan.TypString)).(*plan.Const)
			if !ok || (!k.IsNull() && !plan.IsString(k.Typ)) {
				return nil, b.errorf(x.Args[1], "the separator of string_agg must be a string constant")
			}
			if !k.IsNull() {
				ac.Sep = k.Val.(string)
			}
			ac.Typ = plan.TypString
		case "approx_count_distinct":
			if plan.IsNullType(t) {
				arg = plan.NullConst(plan.TypInt32)
			}
			ac.Typ = plan.TypInt64
		case "bool_and", "every", "bool_or":
			// FALSE < TRUE: bool_and is min, bool_or max.
			if plan.IsNullType(t) {
				arg = plan.NullConst(plan.TypBool)
			} else if !plan.IsBool(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, plan.TypeString(t))
			}
			ac.Fn, ac.Typ = plan.AggMin, plan.TypBool
			if name == "bool_or" {
				ac.Fn = plan.AggMax
			}
		}
		ac.Arg = withFilter(arg)
	}
	key := ac.Fn + "|" + fmt.Sprint(ac.Distinct) + "|" + ac.Sep + "|" + fmt.Sprint(ac.Quantile) + "|" + fmt.Sprint(ac.Desc) + "|"
	if ac.Arg != nil {
		key += plan.ExprKey(ac.Arg)
	}
	if ac.Filter != nil {
		key += "|filter " + plan.ExprKey(ac.Filter)
	}
	a := ctx.agg
	if i, ok := a.aggKeys[key]; ok {
		return plan.NewColRef(a.aggCols[i]), nil
	}
	text := ac.String()
	col := b.newCol(text, "", ac.Typ, ac.Fn != plan.AggCount && ac.Fn != plan.AggCountStar && ac.Fn != "approx_count_distinct")
	a.aggKeys[key] = len(a.aggs)
	a.aggs = append(a.aggs, ac)
	a.aggCols = append(a.aggCols, col)
	return plan.NewColRef(col), nil
}

// namedWindow resolves a window that refers to one of the WINDOW clause:
// the named window's PARTITION BY, its ORDER BY unless w gives one, its
// frame unless w gives one (PostgreSQL's rules: w may not give a PARTITION
// BY, nor an ORDER BY when the named window has one, and the named window
// may not have a frame).
func (b *binder) namedWindow(w *sql.WindowSpec, named map[string]*sql.NamedWindow, depth int) (*sql.WindowSpec, error) {
	nw := named[w.Ref]
	if nw == nil {
		return nil, b.errorf(w, "window %q does not exist", w.Ref)
	}
	if depth > len(named) {
		return nil, b.errorf(w, "window %q refers to itself", w.Ref)
	}
	base := nw.Spec
	if base.Ref != "" {
		var err error
		if base, err = b.namedWindow(base, named, depth+1); err != nil {
			return nil, err
		}
	}
	if w.PartitionBy == nil && w.OrderBy == nil && w.Frame == nil {
		return base, nil // OVER name: the window as it is
	}
	if len(w.PartitionBy) > 0 {
		return nil, b.errorf(w, "cannot override PARTITION BY clause of window %q", w.Ref)
	}
	if len(w.OrderBy) > 0 && len(base.OrderBy) > 0 {
		return nil, b.errorf(w, "cannot override ORDER BY clause of window %q", w.Ref)
	}
	if base.Frame != nil {
		return nil, b.errorf(w, "cannot copy window %q because it has a frame clause", w.Ref)
	}
	out := *base
	out.Pos = w.Pos
	if len(w.OrderBy) > 0 {
		out.OrderBy = w.OrderBy
	}
	out.Frame = w.Frame
	return &out, nil
}

// windowFilter rewrites an aggregate window function's FILTER (WHERE c)
// into its argument: f(CASE WHEN c THEN x END), and count(*) into
// count(CASE WHEN c THEN 1 END). The aggregates it applies to skip NULLs,
// so the rows c rejects count as absent, as PostgreSQL's FILTER does.
func (b *binder) windowFilter(x *sql.FuncCall) (*sql.FuncCall, error) {
	switch x.Name.Name {
	case "count", "sum", "avg", "min", "max":
	default:
		return nil, b.errorf(x, "FILTER is not implemented for the window function %s (only count, sum, avg, min and max)", x.Name.Name)
	}
	fx := *x
	fx.Filter = nil
	arg := sql.Expr(&sql.Literal{Pos: x.Pos, Kind: sql.LitNumber, Text: "1"})
	if x.Star {
		fx.Star = false
	} else if len(x.Args) == 1 {
		arg = x.Args[0]
	} else {
		return nil, b.errorf(x, "%s takes exactly one argument", x.Name.Name)
	}
	fx.Args = []sql.Expr{&sql.Case{Pos: x.Pos, Whens: []*sql.When{{Pos: x.Pos, Cond: x.Filter, Result: arg}}}}
	return &fx, nil
}

// windowCall binds a window function into the SELECT's window context.
func (b *binder) windowCall(x *sql.FuncCall, s *scope, ctx *exprCtx) (plan.Expr, error) {
	name := x.Name.Name
	if ctx.win == nil || ctx.inAgg {
		return nil, b.errorf(x, "window functions are not allowed in %s", ctx.clause)
	}
	if x.Distinct {
		return nil, b.errorf(x, "DISTINCT is not implemented for window functions")
	}
	if x.Filter != nil {
		fx, err := b.windowFilter(x)
		if err != nil {
			return nil, err
		}
		x = fx
	}
	if x.Over.Ref != "" {
		over, err := b.namedWindow(x.Over, ctx.win.named, 0)
		if err != nil {
			return nil, err
		}
		fx := *x
		fx.Over = over
		x = &fx
	}
	// Arguments, partitions and orders are evaluated above the aggregate
	// (if any): bind them in the same context (aggregates allowed), then
	// map group keys.
	inner := &exprCtx{clause: "window function", agg: ctx.agg}
	bindAbove := func(e sql.Expr) (plan.Expr, error) {
		v, err := b.expr(e, s, inner)
		if err != nil {
			return nil, err
		}
		if ctx.agg != nil {
			return b.aboveAgg(v, ctx.agg, e)
		}
		return v, nil
	}
	wc := &plan.WindowCall{Fn: name, IgnoreNulls: x.IgnoreNulls}
	switch name {
	case "lag", "lead", "first_value", "last_value", "nth_value":
	default:
		if x.IgnoreNulls {
			return nil, b.errorf(x, "IGNORE NULLS applies to the window functions lag, lead, first_value, last_value and nth_value, not %s", name)
		}
	}
	switch name {
	case "row_number", "rank", "dense_rank":
		if len(x.Args) != 0 || x.Star {
			return nil, b.errorf(x, "%s takes no arguments", name)
		}
		wc.Typ = plan.TypInt64
	case "count", "sum", "avg", "min", "max":
		if x.Star {
			if name != "count" {
				return nil, b.errorf(x, "%s(*) is not valid", name)
			}
			wc.Fn, wc.Typ = plan.AggCountStar, plan.TypInt64
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
			wc.Typ = plan.TypInt64
		case "sum", "avg":
			if !plan.IsNumeric(t) && !plan.IsNullType(t) {
				return nil, b.errorf(x, "function %s(%s) does not exist", name, plan.TypeString(t))
			}
			wc.Typ = plan.AggResultType(name, t)
		default:
			wc.Typ = t
		}
		wc.Args = []plan.Expr{arg}
	case "percent_rank", "cume_dist":
		if len(x.Args) != 0 || x.Star {
			return nil, b.errorf(x, "%s takes no arguments", name)
		}
		wc.Typ = plan.TypFloat64
	case "ntile":
		if len(x.Args) != 1 {
			return nil, b.errorf(x, "ntile takes one argument, the number of buckets")
		}
		n, err := b.windowConstant(x.Args[0], s, "the buckets of ntile")
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, b.errorf(x.Args[0], "argument of ntile must be greater than zero")
		}
		wc.N, wc.Typ = n, plan.TypInt64
	case "lag", "lead", "first_value", "last_value", "nth_value":
		lo, hi := 1, 1
		switch name {
		case "lag", "lead":
			lo, hi = 1, 3
		case "nth_value":
			lo, hi = 2, 2
		}
		if len(x.Args) < lo || len(x.Args) > hi || x.Star {
			return nil, b.errorf(x, "function %s takes %d to %d arguments", name, lo, hi)
		}
		if len(x.Args) == 3 {
			return b.lagWithDefault(x, s, ctx)
		}
		arg, err := bindAbove(x.Args[0])
		if err != nil {
			return nil, err
		}
		wc.Args, wc.Typ, wc.N = []plan.Expr{arg}, arg.Type(), 1
		if plan.IsNullType(wc.Typ) {
			wc.Args[0], wc.Typ = &plan.CastExpr{Zone: b.zone, X: arg, Typ: plan.TypInt32}, plan.TypInt32
		}
		if len(x.Args) == 2 {
			what := "the offset of " + name
			if name == "nth_value" {
				what = "the row of nth_value"
			}
			if wc.N, err = b.windowConstant(x.Args[1], s, what); err != nil {
				return nil, err
			}
			if name == "nth_value" && wc.N <= 0 {
				return nil, b.errorf(x.Args[1], "argument of nth_value must be greater than zero")
			}
		}
	default:
		return nil, b.errorf(x, "window function %s does not exist (want row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value, last_value, nth_value, count, sum, avg, min or max)", name)
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
		wf := &plan.WindowFrame{Mode: strings.ToLower(f.Mode.String()), Exclude: f.Exclude}
		var rangeKey arrow.DataType
		if wf.Mode == "range" && (f.Start.Offset != nil || f.End != nil && f.End.Offset != nil) {
			if len(wc.OrderBy) != 1 {
				return nil, b.errorf(f, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
			}
			rangeKey = wc.OrderBy[0].Expr.Type()
			if !plan.IsNumeric(rangeKey) && !plan.IsTemporal(rangeKey) {
				return nil, b.errorf(f, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s", plan.TypeString(rangeKey))
			}
		}
		var err error
		if wf.Start, wf.StartOffset, err = b.frameBound(f.Start, s, rangeKey); err != nil {
			return nil, err
		}
		wf.End, wf.EndOffset = plan.BoundCurrentRow, nil
		if f.End != nil {
			if wf.End, wf.EndOffset, err = b.frameBound(f.End, s, rangeKey); err != nil {
				return nil, err
			}
		}
		if wf.Start == plan.BoundUnboundedFollowing || wf.End == plan.BoundUnboundedPreceding || wf.Start > wf.End {
			return nil, b.errorf(f, "window frame starts after it ends")
		}
		if wf.Mode == "groups" && len(wc.OrderBy) == 0 {
			return nil, b.errorf(f, "GROUPS mode requires an ORDER BY clause")
		}
		wc.Frame = wf
	}
	key := wc.Fn + "|" + strconv.FormatInt(wc.N, 10) + "|" + strconv.FormatBool(wc.IgnoreNulls)
	for _, a := range wc.Args {
		key += "|" + plan.ExprKey(a)
	}
	key += "|" + fmt.Sprint(len(wc.PartitionBy), len(wc.OrderBy))
	for _, p := range wc.PartitionBy {
		key += "|" + plan.ExprKey(p)
	}
	for _, o := range wc.OrderBy {
		key += "|" + o.String() + plan.ExprKey(o.Expr)
	}
	if wc.Frame != nil {
		key += fmt.Sprintf("|%+v", *wc.Frame)
	}
	if i, ok := ctx.win.keys[key]; ok {
		return plan.NewColRef(ctx.win.cols[i]), nil
	}
	col := b.newCol(name, "", wc.Typ, true)
	ctx.win.keys[key] = len(ctx.win.calls)
	ctx.win.calls = append(ctx.win.calls, wc)
	ctx.win.cols = append(ctx.win.cols, col)
	return plan.NewColRef(col), nil
}

// windowConstant reads a window function's constant integer argument
// (ntile's buckets, lag's offset, nth_value's row).
func (b *binder) windowConstant(e sql.Expr, s *scope, what string) (int64, error) {
	v, err := b.expr(e, s, &exprCtx{clause: what})
	if err != nil {
		return 0, err
	}
	c, ok, err := plan.FoldToConst(v)
	if err != nil || !ok || !plan.IsInteger(c.Typ) || c.IsNull() {
		return 0, b.errorf(e, "%s must be a constant integer", what)
	}
	return plan.ConstInt(c), nil
}

// lagWithDefault binds lag(x, k, d) and lead(x, k, d): d where the row k
// before (after) the current one lies outside the partition:
//
//	lag:  CASE WHEN row_number() OVER w > k THEN lag(x, k) OVER w ELSE d END
//	lead: CASE WHEN count(*) OVER (PARTITION BY ...) - row_number() OVER w >= k
//	      THEN lead(x, k) OVER w ELSE d END
//
// (a negative k reads the other way, so the tests swap).
func (b *binder) lagWithDefault(x *sql.FuncCall, s *scope, ctx *exprCtx) (plan.Expr, error) {
	k, err := b.windowConstant(x.Args[1], s, "the offset of "+x.Name.Name)
	if err != nil {
		return nil, err
	}
	pos := x.Pos
	call := func(name string, over *sql.WindowSpec, args ...sql.Expr) *sql.FuncCall {
		return &sql.FuncCall{Pos: pos, Name: sql.Ident{Pos: pos, Name: name}, Args: args, Over: over}
	}
	lit := func(v int64) sql.Expr {
		return &sql.Literal{Pos: pos, Kind: sql.LitNumber, Text: strconv.FormatInt(v, 10)}
	}
	bin := func(op string, l, r sql.Expr) sql.Expr { return &sql.BinaryExpr{Pos: pos, Op: op, L: l, R: r} }
	lag := x.Name.Name == "lag"
	if k < 0 {
		lag, k = !lag, -k
	}
	rn := call("row_number", x.Over)
	var cond sql.Expr
	if lag {
		cond = bin(">", rn, lit(k))
	} else {
		all := call("count", &sql.WindowSpec{Pos: pos, PartitionBy: x.Over.PartitionBy})
		all.Star = true
		cond = bin(">=", bin("-", all, rn), lit(k))
	}
	value := call(x.Name.Name, x.Over, x.Args[0], x.Args[1])
	return b.expr(&sql.Case{Pos: pos, Whens: []*sql.When{{Pos: pos, Cond: cond, Result: value}}, Else: x.Args[2]}, s, ctx)
}

func (b *binder) frameBound(fb *sql.FrameBound, s *scope, rangeKey arrow.DataType) (plan.FrameBoundKind, plan.Expr, error) {
	switch fb.Kind {
	case sql.UnboundedPreceding:
		return plan.BoundUnboundedPreceding, nil, nil
	case sql.UnboundedFollowing:
		return plan.BoundUnboundedFollowing, nil, nil
	case sql.CurrentRow:
		return plan.BoundCurrentRow, nil, nil
	}
	e, err := b.expr(fb.Offset, s, &exprCtx{clause: "window frame"})
	if err != nil {
		return 0, nil, err
	}
	c, ok, err := plan.FoldToConst(e)
	kind := plan.BoundPreceding
	if fb.Kind == sql.Following {
		kind = plan.BoundFollowing
	}
	if rangeKey == nil {
		if err != nil || !ok || !plan.IsInteger(c.Typ) || c.IsNull() || plan.ConstInt(c) < 0 {
			return 0, nil, b.errorf(fb, "window frame offset must be a constant non-negative integer")
		}
		return kind, c, nil
	}
	// RANGE: a distance in the ORDER BY key's terms: a number for a number
	// key (or days for a date), an interval of days and time for a date or
	// a timestamp.
	if err != nil || !ok || c.IsNull() {
		return 0, nil, b.errorf(fb, "RANGE offset must be a constant")
	}
	switch {
	case plan.IsNumeric(c.Typ) && (plan.IsNumeric(rangeKey) || plan.IsDate(rangeKey) && plan.IsInteger(c.Typ)):
		if plan.ConstFloat(c) < 0 {
			return 0, nil, b.errorf(fb, "RANGE offset must not be negative")
		}
	case plan.IsInterval(c.Typ) && plan.IsTemporal(rangeKey):
		iv := c.Val.(arrow.MonthDayNanoInterval)
		if iv.Months < 0 || iv.Days < 0 || iv.Nanoseconds < 0 {
			return 0, nil, b.errorf(fb, "RANGE offset must not be negative")
		}
		if plan.IsDate(rangeKey) && iv.Nanoseconds%expr.NanosPerDay != 0 {
			return 0, nil, b.errorf(fb, "RANGE offset of a date key must be whole days")
		}
	default:
		return 0, nil, b.errorf(fb, "RANGE offset of type %s does not fit an ORDER BY key of type %s", plan.TypeString(c.Typ), plan.TypeString(rangeKey))
	}
	return kind, c, nil
}

// scalarFunc types a call of a scalar function.
func (b *binder) scalarFunc(name string, args []plan.Expr) (plan.Expr, error) {
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
		args[i] = plan.ResolveUntyped(args[i], plan.TypString)
		if t := args[i].Type(); !plan.IsString(t) && !plan.IsNullType(t) {
			return fmt.Errorf("function %s: argument %d must be a string, not %s", name, i+1, plan.TypeString(t))
		}
		return nil
	}
	integer := func(i int) error {
		args[i] = plan.ResolveUntyped(args[i], plan.TypInt64)
		if t := args[i].Type(); !plan.IsInteger(t) && !plan.IsNullType(t) {
			return fmt.Errorf("function %s: argument %d must be an integer, not %s", name, i+1, plan.TypeString(t))
		}
		return nil
	}
	num := func(i int) error {
		args[i] = plan.ResolveUntyped(args[i], plan.TypFloat64)
		if t := args[i].Type(); !plan.IsNumeric(t) && !plan.IsNullType(t) {
			return fmt.Errorf("function %s(%s) does not exist", name, plan.TypeString(t))
		}
		return nil
	}
	switch name {
	case "sqrt", "cbrt", "exp", "ln", "log10", "log", "ceil", "ceiling", "floor", "trunc", "power", "pow":
		fn := map[string]string{"log": "log10", "ceiling": "ceil", "pow": "power"}[name]
		if fn == "" {
			fn = name
		}
		want := 1
		if name == "log" && n == 2 {
			fn = expr.FnLogBase // log(b, x)
		}
		if fn == "power" || fn == expr.FnLogBase {
			want = 2
		}
		if err := arity(want, want); err != nil {
			return nil, err
		}
		for i := range args {
			if err := num(i); err != nil {
				return nil, err
			}
		}
		return b.newCall(fn, plan.TypFloat64, args...), nil
	case "replace", "repeat", "reverse", "lpad", "rpad", "initcap", "md5", "split_part", "translate", "chr", "ascii", "to_hex", "octet_length", "strlen", "quote_ident", "quote_literal":
		if name == "strlen" {
			name = "octet_length" // DuckDB's: bytes
		}
		sig := map[string]string{"replace": "sss", "repeat": "si", "reverse": "s", "lpad": "sis", "rpad": "sis", "initcap": "s", "md5": "s", "split_part": "ssi", "quote_ident": "s", "quote_literal": "s",
			"translate": "sss", "chr": "i", "ascii": "s", "to_hex": "i", "octet_length": "s"}[name]
		lo := len(sig)
		if name == "lpad" || name == "rpad" {
			lo = 2
		}
		if err := arity(lo, len(sig)); err != nil {
			return nil, err
		}
		for i := range args {
			check := str
			if sig[i] == 'i' {
				check = integer
			}
			if (name == "md5" || name == "octet_length") && plan.IsBinary(args[i].Type()) {
				continue // md5(bytea), octet_length(bytea): of the bytes
			}
			if err := check(i); err != nil {
				return nil, err
			}
		}
		if name == "ascii" || name == "octet_length" {
			return b.newCall(name, plan.TypInt32, args...), nil
		}
		return b.newCall(name, plan.TypString, args...), nil
	case "version":
		if err := arity(0, 0); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypString, Val: buildinfo.SQLVersion()}, nil
	case "pg_get_userbyid":
		// pg_catalog's owner name: nicflow has one user.
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypString, Val: "nicflow"}, nil
	case "current_database", "current_catalog":
		if err := arity(0, 0); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypString, Val: "nicflow"}, nil
	case "current_schema":
		// The first schema of the search path: tables are created in public.
		if err := arity(0, 0); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypString, Val: "public"}, nil
	case "has_table_privilege", "has_schema_privilege", "has_database_privilege", "has_column_privilege", "has_any_column_privilege":
		// nicflow has no privileges: a user who connected may do
		// anything, which is what these answer.
		if err := arity(2, 4); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypBool, Val: true}, nil
	case "current_setting":
		if err := arity(1, 2); err != nil {
			return nil, err
		}
		c, ok := args[0].(*plan.Const)
		var name string
		isStr := false
		if ok {
			name, isStr = c.Val.(string)
		}
		if !ok || !isStr {
			return nil, fmt.Errorf("current_setting: the setting's name must be a constant string")
		}
		v, known := b.settingValue(strings.ToLower(name))
		if !known {
			if len(args) == 2 {
				if m, ok := args[1].(*plan.Const); ok && m.Val == true {
					return &plan.Const{Typ: plan.TypString, Val: nil}, nil
				}
			}
			return nil, fmt.Errorf("unrecognized configuration parameter %q", name)
		}
		return &plan.Const{Typ: plan.TypString, Val: v}, nil
	case "pg_get_expr":
		// The text of a stored expression (pg_attrdef.adbin holds it as
		// text already).
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		return args[0], nil
	case "pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible":
		// Every relation, type and function is in the search path
		// (public and pg_catalog).
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypBool, Val: true}, nil
	case "regexp_replace", "regexp_extract", "regexp_like", "regexp_matches":
		ar := map[string][2]int{"regexp_replace": {3, 4}, "regexp_extract": {2, 3}}[name]
		if ar == [2]int{} {
			ar = [2]int{2, 2}
		}
		if err := arity(ar[0], ar[1]); err != nil {
			return nil, err
		}
		for i := range args {
			check := str
			if name == "regexp_extract" && i == 2 {
				check = integer
			}
			if err := check(i); err != nil {
				return nil, err
			}
		}
		for i := 1; i < n; i++ {
			if _, ok := args[i].(*plan.Const); !ok {
				return nil, fmt.Errorf("%s: argument %d must be a constant", name, i+1)
			}
		}
		if name == "regexp_like" || name == "regexp_matches" {
			// regexp_matches: DuckDB's boolean one (PostgreSQL's
			// returns the matches as rows of arrays, which nicflow lacks).
			return b.newCall("regexp_like", plan.TypBool, args...), nil
		}
		if name == "regexp_extract" && n == 3 {
			args[2] = plan.FoldNow(&plan.CastExpr{Zone: b.zone, X: args[2], Typ: plan.TypInt32})
		}
		return b.newCall(name, plan.TypString, args...), nil
	case "pi":
		if err := arity(0, 0); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypFloat64, Val: math.Pi}, nil
	case "random":
		if err := arity(0, 0); err != nil {
			return nil, err
		}
		return b.newCall(expr.FnRandom, plan.TypFloat64), nil
	case "similar_to_escape":
		// A SIMILAR TO pattern as a regular expression (PostgreSQL's
		// function, which SIMILAR TO calls).
		if err := arity(1, 2); err != nil {
			return nil, err
		}
		var ks [2]string
		ks[1] = "\\"
		for i := range args {
			k, ok := plan.FoldNow(plan.ResolveUntyped(args[i], plan.TypString)).(*plan.Const)
			if !ok || (!k.IsNull() && !plan.IsString(k.Typ)) {
				return nil, fmt.Errorf("similar_to_escape: the pattern and the escape must be constant strings")
			}
			if k.IsNull() {
				return &plan.Const{Typ: plan.TypString, Val: nil}, nil
			}
			ks[i] = k.Val.(string)
		}
		re, err := similarToRegex(ks[0], ks[1])
		if err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypString, Val: re}, nil
	case "pg_typeof":
		// The argument's type's name, as format_type prints it.
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return &plan.Const{Typ: plan.TypString, Val: pgTypeName(args[0])}, nil
	case "coalesce":
		if n == 0 {
			return nil, fmt.Errorf("coalesce needs at least one argument")
		}
		t, ok := plan.CommonTypeOf(plan.TypNull, args...)
		if !ok {
			return nil, fmt.Errorf("COALESCE types cannot be matched: %s", typeList(args))
		}
		for i := range args {
			args[i], _ = b.coerce(args[i], t)
		}
		return b.newCall(plan.FnCoalesce, t, args...), nil
	case "greatest", "least":
		if n == 0 {
			return nil, fmt.Errorf("%s needs at least one argument", name)
		}
		t, ok := plan.CommonTypeOf(plan.TypNull, args...)
		if !ok {
			return nil, fmt.Errorf("%s types cannot be matched: %s", strings.ToUpper(name), typeList(args))
		}
		for i := range args {
			var err error
			if args[i], err = b.coerce(args[i], t); err != nil {
				return nil, err
			}
		}
		return b.newCall(name, t, args...), nil
	case "nullif":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		t, ok := plan.CommonTypeOf(plan.TypNull, args...)
		if !ok {
			return nil, fmt.Errorf("NULLIF types cannot be matched: %s", typeList(args))
		}
		for i := range args {
			args[i], _ = b.coerce(args[i], t)
		}
		return b.newCall("nullif", t, args...), nil
	case "abs":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if !plan.IsNumeric(args[0].Type()) {
			return nil, fmt.Errorf("function abs(%s) does not exist", plan.TypeString(args[0].Type()))
		}
		return b.newCall("abs", args[0].Type(), args...), nil
	case "round":
		if err := arity(1, 2); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if !plan.IsNumeric(t) {
			return nil, fmt.Errorf("function round(%s) does not exist", plan.TypeString(t))
		}
		digits := int64(0)
		if n == 2 {
			c, ok := args[1].(*plan.Const)
			if !ok || !plan.IsInteger(c.Typ) || c.IsNull() {
				return nil, fmt.Errorf("round: the number of digits must be an integer constant")
			}
			digits = plan.ConstInt(c)
			args[1] = &plan.Const{Typ: plan.TypInt32, Val: int32(digits)}
		}
		if plan.IsDecimal(t) {
			p, s, _ := plan.DecimalPS(t)
			ns := min(max(int32(digits), 0), s)
			t = plan.DecimalType(min(p-s+ns+1, plan.MaxDecimalPrecision), ns)
		}
		return b.newCall("round", t, args...), nil
	case "gcd", "lcm":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		for i := range args {
			if err := integer(i); err != nil {
				return nil, err
			}
		}
		// Both of one type: BIGINT if either is, else INTEGER.
		var t arrow.DataType = plan.TypInt32
		for _, a := range args {
			if a.Type().ID() == arrow.INT64 {
				t = plan.TypInt64
			}
		}
		for i := range args {
			if !arrow.TypeEqual(args[i].Type(), t) {
				args[i] = plan.FoldNow(&plan.CastExpr{Zone: b.zone, X: args[i], Typ: t})
			}
		}
		return b.newCall(name, t, args...), nil
	case "upper", "lower":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		return b.newCall(name, plan.TypString, args...), nil
	case "length", "char_length", "character_length":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		if name == "length" && plan.IsBinary(args[0].Type()) {
			return plan.NewCall("length", plan.TypInt32, args...), nil // bytes
		}
		if err := str(0); err != nil {
			return nil, err
		}
		return b.newCall("length", plan.TypInt32, args...), nil
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
		return b.newCall(fn, plan.TypString, args...), nil
	case "substring", "substr":
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		var t arrow.DataType = plan.TypString
		if plan.IsBinary(args[0].Type()) {
			t = plan.TypBinary // of bytes
		} else if err := str(0); err != nil {
			return nil, err
		}
		for i := 1; i < n; i++ {
			if err := integer(i); err != nil {
				return nil, err
			}
		}
		return b.newCall("substring", t, args...), nil
	case "encode", "decode", "get_byte":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		// encode(bytea, format) text; decode(text, format) bytea;
		// get_byte(bytea, n) integer.
		var want, res arrow.DataType = plan.TypBinary, plan.TypString
		switch name {
		case "decode":
			want, res = plan.TypString, plan.TypBinary
		case "get_byte":
			res = plan.TypInt32
		}
		args[0] = plan.ResolveUntyped(args[0], want)
		if t := args[0].Type(); !arrow.TypeEqual(t, want) && !plan.IsNullType(t) {
			return nil, fmt.Errorf("function %s(%s, %s) does not exist", name, plan.TypeString(t), plan.TypeString(args[1].Type()))
		}
		if name == "get_byte" {
			if err := integer(1); err != nil {
				return nil, err
			}
			return plan.NewCall(name, res, args...), nil
		}
		if err := str(1); err != nil {
			return nil, err
		}
		k, ok := args[1].(*plan.Const)
		if !ok {
			return nil, fmt.Errorf("%s: the format must be a constant ('hex', 'base64' or 'escape')", name)
		}
		if f, _ := k.Val.(string); !k.IsNull() && f != "hex" && f != "base64" && f != "escape" {
			return nil, fmt.Errorf("unrecognized encoding: %q (want 'hex', 'base64' or 'escape')", f)
		}
		return plan.NewCall(name, res, args...), nil
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
		return b.newCall("strpos", plan.TypInt32, args...), nil
	case "array_to_string":
		// nicflow has no array types yet: the only array value a query
		// meets is a NULL one (pg_database.datacl), whose text is NULL.
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		if args[0].Type().ID() != arrow.NULL {
			return nil, fmt.Errorf("array_to_string needs an array, not %s (nicflow has no array types yet)", plan.TypeString(args[0].Type()))
		}
		return &plan.Const{Typ: plan.TypString, Val: nil}, nil
	case "json_extract_path", "json_extract_path_text", "jsonb_extract_path", "jsonb_extract_path_text":
		if n < 2 {
			return nil, fmt.Errorf("%s takes a JSON value and at least one key", name)
		}
		for i := range args {
			args[i] = plan.ResolveUntyped(args[i], plan.TypString)
			if t := args[i].Type(); !plan.IsString(t) && !plan.IsNullType(t) {
				return nil, fmt.Errorf("function %s: argument %d must be text, not %s", name, i+1, plan.TypeString(t))
			}
		}
		fn := expr.FnJSONPath
		if strings.HasSuffix(name, "_text") {
			fn = expr.FnJSONPathText
		}
		return b.newCall(fn, plan.TypString, args...), nil
	case "to_json", "to_jsonb":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return b.toJSON(args[0]), nil
	case "json_typeof", "jsonb_typeof", "json_array_length", "jsonb_array_length":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		j := plan.ResolveUntyped(args[0], plan.TypString)
		if t := j.Type(); !plan.IsString(t) && !plan.IsNullType(t) {
			return nil, fmt.Errorf("function %s(%s) does not exist: its argument must be json", name, plan.TypeString(t))
		}
		if strings.HasSuffix(name, "_typeof") {
			return b.newCall(expr.FnJSONTypeof, plan.TypString, j), nil
		}
		items := b.newCall(expr.FnJSONElems, plan.ArrayOf(plan.TypString), j, &plan.Const{Typ: plan.TypString, Val: name})
		return b.newCall(expr.FnCardinality, plan.TypInt32, items), nil
	case "json_build_object", "jsonb_build_object":
		// JSON as text (nicflow has no json type), spaced as PostgreSQL's
		// json_build_object prints it: {"a" : 1, "b" : null}.
		if n%2 != 0 {
			return nil, fmt.Errorf("argument list must have even number of elements")
		}
		str := func(v string) plan.Expr { return &plan.Const{Typ: plan.TypString, Val: v} }
		cat := func(l, r plan.Expr) plan.Expr { return b.newCall(plan.FnConcat, plan.TypString, l, r) }
		out := str("{")
		for i := 0; i < n; i += 2 {
			if c, ok := args[i].(*plan.Const); ok && c.Val == nil {
				return nil, fmt.Errorf("null value not allowed for object key")
			}
			if i > 0 {
				out = cat(out, str(", "))
			}
			k := plan.ResolveUntyped(args[i], plan.TypString)
			if !plan.IsString(k.Type()) {
				k = &plan.CastExpr{Zone: b.zone, X: k, Typ: plan.TypString}
			}
			v := b.newCall(plan.FnCoalesce, plan.TypString, b.toJSON(args[i+1]), str("null"))
			out = cat(cat(cat(out, b.newCall(expr.FnToJSON, plan.TypString, k)), str(" : ")), v)
		}
		return cat(out, str("}")), nil
	case "concat":
		if n == 0 {
			return nil, fmt.Errorf("concat needs at least one argument")
		}
		// concat() skips NULLs, unlike ||.
		var out plan.Expr
		for _, a := range args {
			a = plan.ResolveUntyped(a, plan.TypString)
			if !plan.IsString(a.Type()) {
				a = &plan.CastExpr{Zone: b.zone, X: a, Typ: plan.TypString}
			}
			a = b.newCall(plan.FnCoalesce, plan.TypString, a, &plan.Const{Typ: plan.TypString, Val: ""})
			if out == nil {
				out = a
			} else {
				out = b.newCall(plan.FnConcat, plan.TypString, out, a)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("function %s does not exist", name)
}

// numberToChar is to_char(number, pattern): the number rounded (half
// away from zero, exactly for decimals) to the pattern's fraction digits,
// its text laid out by the pattern (expr.FnToCharNumber).
func (b *binder) numberToChar(x plan.Expr, pattern string) (plan.Expr, error) {
	scale, err := expr.NumberPatternScale(pattern)
	if err != nil {
		return nil, err
	}
	t := x.Type()
	switch {
	case plan.IsDecimal(t):
		x = plan.FoldNow(b.newCall("round", plan.DecimalType(plan.MaxDecimalPrecision, scale), x, &plan.Const{Typ: plan.TypInt32, Val: scale}))
		if _, s, _ := plan.DecimalPS(t); s < scale {
			x = &plan.CastExpr{Zone: b.zone, X: x, Typ: plan.DecimalType(plan.MaxDecimalPrecision, scale)}
		}
	case plan.IsFloat(t):
		x = &plan.CastExpr{Zone: b.zone, X: x, Typ: plan.DecimalType(plan.MaxDecimalPrecision, scale)}
	}
	text := plan.FoldNow(&plan.CastExpr{Zone: b.zone, X: x, Typ: plan.TypString})
	return plan.FoldNow(b.newCall(expr.FnToCharNumber, plan.TypString, text, &plan.Const{Typ: plan.TypString, Val: pattern})), nil
}

// jsonOp binds PostgreSQL's JSON operators over JSON text: j -> k (the
// member k, or element k of an array, as JSON), j ->> k (as text), j #>
// '{a,0,b}' and j #>> '{...}' (a path).
func (b *binder) jsonOp(x *sql.BinaryExpr, l, r plan.Expr) (plan.Expr, error) {
	l = plan.ResolveUntyped(l, plan.TypString)
	if t := l.Type(); !plan.IsString(t) && !plan.IsNullType(t) {
		return nil, b.errorf(x, "operator does not exist: %s %s %s (JSON is text in nicflow)", plan.TypeString(t), x.Op, plan.TypeString(r.Type()))
	}
	if x.Op == "->" || x.Op == "->>" {
		r = plan.ResolveUntyped(r, plan.TypString)
		if t := r.Type(); !plan.IsString(t) && !plan.IsInteger(t) && !plan.IsNullType(t) {
			return nil, b.errorf(x.R, "the key of %s must be text or an integer, not %s", x.Op, plan.TypeString(t))
		}
		fn := expr.FnJSONGet
		if x.Op == "->>" {
			fn = expr.FnJSONGetText
		}
		return plan.FoldNow(b.newCall(fn, plan.TypString, l, r)), nil
	}
	k, ok := plan.FoldNow(plan.ResolveUntyped(r, plan.TypString)).(*plan.Const)
	if !ok || !plan.IsString(k.Typ) || k.IsNull() {
		return nil, b.errorf(x.R, "the path of %s must be a constant text array such as '{a,0,b}'", x.Op)
	}
	path, ok := expr.JSONPath(k.Val.(string))
	if !ok {
		return nil, b.errorf(x.R, "malformed array literal: %q", k.Val)
	}
	fn := expr.FnJSONPath
	if x.Op == "#>>" {
		fn = expr.FnJSONPathText
	}
	if len(path) == 0 {
		// The empty path: the value itself.
		return l, nil
	}
	args := []plan.Expr{l}
	for _, p := range path {
		args = append(args, &plan.Const{Typ: plan.TypString, Val: p})
	}
	return plan.FoldNow(b.newCall(fn, plan.TypString, args...)), nil
}

// similarToRegex converts a SIMILAR TO pattern to an anchored regular
// expression as PostgreSQL's similar_to_escape: % is .*, _ is ., the
// escape character (one character, or none for ”) takes the next one
// literally, brackets pass through, and the characters special to a
// regex but not to SIMILAR TO (. ^ $ \) are escaped.
func similarToRegex(pat, esc string) (string, error) {
	var e rune = -1
	if esc != "" {
		rs := []rune(esc)
		if len(rs) != 1 {
			return "", fmt.Errorf("invalid escape string: it must be empty or one character")
		}
		e = rs[0]
	}
	var b strings.Builder
	b.WriteString("^(?:")
	inBracket, escaped := false, false
	for _, c := range pat {
		switch {
		case escaped:
			b.WriteString(regexp.QuoteMeta(string(c)))
			escaped = false
		case c == e:
			escaped = true
		case inBracket:
			if c == ']' {
				inBracket = false
			}
			b.WriteRune(c)
		case c == '[':
			inBracket = true
			b.WriteRune(c)
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteString(".")
		case c == '.' || c == '^' || c == '$' || c == '\\':
			b.WriteString("\\" + string(c))
		default:
			b.WriteRune(c)
		}
	}
	if escaped {
		return "", fmt.Errorf("invalid escape sequence: the pattern ends with the escape character")
	}
	b.WriteString(")$")
	return b.String(), nil
}

// pgTypeName is PostgreSQL's name of e's type (pg_typeof).
func pgTypeName(e plan.Expr) string {
	if c, ok := e.(*plan.Const); ok && c.Untyped {
		return "unknown"
	}
	t := e.Type()
	switch {
	case plan.IsNullType(t):
		return "unknown"
	case plan.IsDecimal(t):
		return "numeric"
	case plan.IsTimestamp(t) && expr.HasZone(t):
		return "timestamp with time zone"
	case plan.IsTimestamp(t):
		return "timestamp without time zone"
	case plan.IsTime(t):
		return "time without time zone"
	}
	switch t.ID() {
	case arrow.INT16:
		return "smallint"
	case arrow.INT32:
		return "integer"
	case arrow.INT64:
		return "bigint"
	case arrow.FLOAT32:
		return "real"
	case arrow.FLOAT64:
		return "double precision"
	case arrow.STRING:
		return "text"
	case arrow.BOOL:
		return "boolean"
	case arrow.DATE32:
		return "date"
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return "interval"
	case arrow.BINARY:
		return "bytea"
	}
	return plan.TypeString(t)
}

// formatCall rewrites format(fmt, args...), PostgreSQL's: %s (the text,
// NULL as ”), %I (quote_ident), %L (quote_literal, NULL as NULL), %%,
// and %n$ positions; fmt a constant.
func (b *binder) formatCall(x *sql.FuncCall, args []plan.Expr) (sql.Expr, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("function format requires at least one argument")
	}
	k, ok := args[0].(*plan.Const)
	var f string
	isStr := false
	if ok {
		f, isStr = k.Val.(string)
	}
	if !ok || !isStr {
		return nil, fmt.Errorf("format: the format must be a constant string")
	}
	pos := x.Pos
	str := func(v string) sql.Expr { return &sql.Literal{Pos: pos, Kind: sql.LitString, Text: v} }
	call := func(name string, as ...sql.Expr) sql.Expr {
		return &sql.FuncCall{Pos: pos, Name: sql.Ident{Pos: pos, Name: name}, Args: as}
	}
	text := func(e sql.Expr) sql.Expr {
		return &sql.Cast{Pos: pos, X: e, Type: &sql.TypeName{Pos: pos, Name: "text"}}
	}
	var parts []sql.Expr
	lit := ""
	next := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			lit += f[i : i+1]
			continue
		}
		i++
		if i >= len(f) {
			return nil, fmt.Errorf("unterminated format() type specifier")
		}
		if f[i] == '%' {
			lit += "%"
			continue
		}
		arg := next
		if j := strings.IndexByte(f[i:], '$'); j > 0 {
			if n, err := strconv.Atoi(f[i : i+j]); err == nil {
				arg, i = n, i+j+1
			}
		}
		if i >= len(f) {
			return nil, fmt.Errorf("unterminated format() type specifier")
		}
		if arg < 1 || arg >= len(x.Args) {
			return nil, fmt.Errorf("too few arguments for format()")
		}
		next = arg + 1
		a := x.Args[arg]
		var p sql.Expr
		switch f[i] {
		case 's':
			p = call("coalesce", text(a), str(""))
		case 'I':
			if c, ok := args[arg].(*plan.Const); ok && c.Val == nil {
				return nil, fmt.Errorf("null values cannot be formatted as an SQL identifier")
			}
			p = call("quote_ident", text(a))
		case 'L':
			p = call("coalesce", call("quote_literal", text(a)), str("NULL"))
		default:
			return nil, fmt.Errorf("unrecognized format() type specifier %q", f[i:i+1])
		}
		if lit != "" {
			parts = append(parts, str(lit))
			lit = ""
		}
		parts = append(parts, p)
	}
	if lit != "" || len(parts) == 0 {
		parts = append(parts, str(lit))
	}
	e := parts[0]
	for _, p := range parts[1:] {
		e = &sql.BinaryExpr{Pos: pos, Op: "||", L: e, R: p}
	}
	return e, nil
}

// toJSON is to_json(a) as text: numbers and booleans as they print,
// strings and other values (dates, times) as JSON strings of their text,
// NULL as NULL.
func (b *binder) toJSON(a plan.Expr) plan.Expr {
	a = plan.ResolveUntyped(a, plan.TypString)
	t := a.Type()
	if plan.IsArray(t) && !expr.IsInt2Vector(t) {
		return b.newCall(expr.FnJSONOfArray, plan.TypString, a)
	}
	if plan.IsString(t) {
		return b.newCall(expr.FnToJSON, plan.TypString, a)
	}
	text := plan.Expr(&plan.CastExpr{Zone: b.zone, X: a, Typ: plan.TypString})
	if plan.IsNumeric(t) || t.ID() == arrow.BOOL || t.ID() == arrow.NULL {
		return text
	}
	if t.ID() == arrow.TIMESTAMP {
		// PostgreSQL's JSON timestamps: 2024-01-02T03:04:05.
		text = b.newCall("replace", plan.TypString, text, &plan.Const{Typ: plan.TypString, Val: " "}, &plan.Const{Typ: plan.TypString, Val: "T"})
	}
	return b.newCall(expr.FnToJSON, plan.TypString, text)
}

// localNow is the statement's time as a wall clock in the session time
// zone (localtimestamp).
func (b *binder) localNow() arrow.Timestamp {
	_, off := b.local.Zone()
	return arrow.Timestamp(b.now.UnixMicro() + int64(off)*expr.UsPerSecond)
}

// regCast is CAST(x AS regclass | regtype | regnamespace): an integer is
// already an OID; a string constant names the object, looked up in the
// catalog (plan.OIDCatalog), as PostgreSQL's input function does.
func (b *binder) regCast(x *sql.Cast, arg plan.Expr, kind string) (plan.Expr, error) {
	if plan.IsInteger(arg.Type()) {
		return b.coerce(arg, arrow.PrimitiveTypes.Int32)
	}
	c, ok := arg.(*plan.Const)
	if ok && c.Val == nil {
		return &plan.Const{Typ: arrow.PrimitiveTypes.Int32, Val: nil}, nil // NULL::regclass
	}
	var name string
	isStr := false
	if ok {
		name, isStr = c.Val.(string)
	}
	if !ok || !isStr {
		return nil, b.errorf(x, "cannot cast %s to %s: only a constant name or an integer OID", plan.TypeString(arg.Type()), kind)
	}
	if n, err := strconv.ParseUint(strings.TrimSpace(name), 10, 31); err == nil {
		// '16385'::regclass: an OID written as text (psql's \d sends it).
		return &plan.Const{Typ: arrow.PrimitiveTypes.Int32, Val: int32(n)}, nil
	}
	oc, ok := b.cat.(plan.OIDCatalog)
	if !ok {
		return nil, b.errorf(x, "%s is not supported here", kind)
	}
	oid, found := oc.OIDOf(kind, strings.ToLower(strings.TrimSpace(name)))
	if !found {
		what := map[string]string{"regclass": "relation", "regtype": "type", "regnamespace": "schema"}[kind]
		return nil, b.errorf(x, "%s %q does not exist", what, name)
	}
	return &plan.Const{Typ: arrow.PrimitiveTypes.Int32, Val: int32(oid)}, nil
}

// Row comparisons, rewritten element by element before binding (SQL's
// rules, as PostgreSQL applies them to row constructors):
//
//	(a, b) =  (c, d)   a = c AND b = d
//	(a, b) <> (c, d)   a <> c OR b <> d
//	(a, b) <  (c, d)   a < c OR (a = c AND b < d)   (<=, >, >= alike)
//	IS [NOT] DISTINCT FROM: each pair's, ORed (ANDed)
//
// so that the first unequal pair decides and a NULL in the pair that
// would decide makes the result NULL.

func isRow(e sql.Expr) bool { _, ok := e.(*sql.RowExpr); return ok }

// rowPair checks that l and r are rows of the same length.
func rowPair(l, r sql.Expr) (*sql.RowExpr, *sql.RowExpr, error) {
	lr, lok := l.(*sql.RowExpr)
	rr, rok := r.(*sql.RowExpr)
	switch {
	case !lok || !rok:
		return nil, nil, fmt.Errorf("a row can be compared only with another row constructor or a subquery")
	case len(lr.Elems) != len(rr.Elems):
		return nil, nil, fmt.Errorf("unequal number of entries in row expressions: %d and %d", len(lr.Elems), len(rr.Elems))
	case len(lr.Elems) == 0:
		return nil, nil, fmt.Errorf("cannot compare rows of zero length")
	}
	return lr, rr, nil
}

func rowCompare(op string, l, r sql.Expr) (sql.Expr, error) {
	lr, rr, err := rowPair(l, r)
	if err != nil {
		return nil, err
	}
	at := lr.Pos
	bin := func(op string, a, b sql.Expr) sql.Expr { return &sql.BinaryExpr{Pos: at, Op: op, L: a, R: b} }
	n := len(lr.Elems)
	switch op {
	case "=", "<>":
		join := "AND"
		if op == "<>" {
			join = "OR"
		}
		pairs := make([]sql.Expr, n)
		for i := range pairs {
			pairs[i] = bin(op, lr.Elems[i], rr.Elems[i])
		}
		return foldBinary(at, join, pairs), nil
	}
	strict := op[:1] // < or >
	e := bin(op, lr.Elems[n-1], rr.Elems[n-1])
	for i := n - 2; i >= 0; i-- {
		e = bin("OR", bin(strict, lr.Elems[i], rr.Elems[i]), bin("AND", bin("=", lr.Elems[i], rr.Elems[i]), e))
	}
	return e, nil
}

func rowDistinct(x *sql.IsDistinct) (sql.Expr, error) {
	lr, rr, err := rowPair(x.L, x.R)
	if err != nil {
		return nil, err
	}
	join := "OR"
	if x.Not {
		join = "AND"
	}
	pairs := make([]sql.Expr, len(lr.Elems))
	for i := range pairs {
		pairs[i] = &sql.IsDistinct{Pos: x.Pos, L: lr.Elems[i], R: rr.Elems[i], Not: x.Not}
	}
	return foldBinary(x.Pos, join, pairs), nil
}

// foldBinary joins es (at least one) left to right with op: AND or OR.
func foldBinary(at sql.Pos, op string, es []sql.Expr) sql.Expr {
	e := es[0]
	for _, x := range es[1:] {
		e = &sql.BinaryExpr{Pos: at, Op: op, L: e, R: x}
	}
	return e
}
