package phys

import (
	"fmt"
	"strings"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// Translation of logical expressions to exec expressions and to storage
// predicates.
//
// A logical expression refers to columns by ID; its exec form refers to
// them by position in the input's layout (pnode.layout), mapped once per
// node here. The binder types every expression with the same rules exec
// applies when it compiles one (exec/expr/types.go, docs/decisions.md D8),
// so a translated expression compiles to its logical type; one that does
// not is a planner bug, reported as an internal error rather than patched
// with a cast.

// physExpr translates e over the input in and checks it compiles there. A
// column the input does not have may be a parameter of the subquery being
// planned (pl.params: an outer column of an Apply).
func (pl *physPlanner) physExpr(e plan.Expr, in *pnode) (expr.Expr, error) {
	x, err := toExecExpr(e, in.layout, pl.params)
	if err != nil {
		return expr.Expr{}, err
	}
	want := e.Type()
	ce, err := expr.CompileExpr(expr.NullParams(x), in.schema)
	if err != nil {
		return expr.Expr{}, nferr.Wrap(nferr.KindQuery, err, "planning %s", e)
	}
	if !plan.IsNullType(want) && !arrow.TypeEqual(ce.Type(), want) {
		return expr.Expr{}, nferr.Internalf("planning %s: the binder typed it %s, exec compiles it to %s", e, plan.TypeString(want), plan.TypeString(ce.Type()))
	}
	return x, nil
}

// layoutPos is the position of column id in layout, or -1.
func layoutPos(layout []plan.ColumnID, id plan.ColumnID) int {
	for i, c := range layout {
		if c == id {
			return i
		}
	}
	return -1
}

// LowerExpr translates e to an exec expression over an input whose
// columns are layout (by position).
func LowerExpr(e plan.Expr, layout []plan.ColumnID) (expr.Expr, error) {
	return toExecExpr(e, layout, nil)
}

// toExecExpr translates e over layout; a column not in layout may be one
// of params.
func toExecExpr(e plan.Expr, layout []plan.ColumnID, params map[plan.ColumnID]expr.Expr) (expr.Expr, error) {
	switch x := e.(type) {
	case *plan.ColRef:
		i := layoutPos(layout, x.ID)
		if i < 0 {
			if p, ok := params[x.ID]; ok {
				return p, nil
			}
			return expr.Expr{}, nferr.Internalf("physical planner: column %s (#%d) is not in the input", x.Name, x.ID)
		}
		return expr.Col(i, x.Name), nil
	case *plan.Const:
		return constExpr(x)
	case *plan.CastExpr:
		arg, err := toExecExpr(x.X, layout, params)
		if err != nil {
			return expr.Expr{}, err
		}
		t, err := expr.TypeOf(x.Typ)
		if err != nil {
			return expr.Expr{}, err
		}
		c := expr.Cast(arg, t)
		c.Zone = x.Zone
		return c, nil
	case *plan.CaseExpr:
		whens := make([]expr.Expr, len(x.Whens))
		thens := make([]expr.Expr, len(x.Thens))
		for i := range x.Whens {
			w, err := toExecExpr(x.Whens[i], layout, params)
			if err != nil {
				return expr.Expr{}, err
			}
			t, err := toExecExpr(x.Thens[i], layout, params)
			if err != nil {
				return expr.Expr{}, err
			}
			whens[i], thens[i] = w, t
		}
		var els *expr.Expr
		if x.Else != nil {
			e, err := toExecExpr(x.Else, layout, params)
			if err != nil {
				return expr.Expr{}, err
			}
			els = &e
		}
		return expr.Case(whens, thens, els), nil
	case *plan.Call:
		args := make([]expr.Expr, len(x.Args))
		for i, a := range x.Args {
			ea, err := toExecExpr(a, layout, params)
			if err != nil {
				return expr.Expr{}, err
			}
			args[i] = ea
		}
		c := expr.Call(x.Fn, args...)
		c.Zone = x.Zone
		return c, nil
	case *plan.SubqueryExpr:
		return expr.Expr{}, nferr.Internalf("physical planner: subquery %d was not decorrelated", x.ID)
	}
	return expr.Expr{}, nferr.Internalf("physical planner: unknown expression %T", e)
}

// constExpr is the exec literal of a constant.
func constExpr(c *plan.Const) (expr.Expr, error) {
	t, err := expr.TypeOf(c.Typ)
	if err != nil {
		return expr.Expr{}, err
	}
	if c.Val == nil {
		return expr.LitNull(t), nil
	}
	switch v := c.Val.(type) {
	case bool:
		return expr.LitBool(v), nil
	case int32:
		return expr.LitInt32(v), nil
	case int64:
		if t.ID == expr.TypeDecimal {
			return expr.LitDecimal(v, t.Precision, t.Scale), nil
		}
		return expr.LitInt64(v), nil
	case decimal128.Num:
		return expr.LitDecimal128(v, t.Precision, t.Scale), nil
	case float64:
		return expr.LitFloat64(v), nil
	case string:
		return expr.LitString(v), nil
	case plan.Bytea:
		return expr.LitBinary([]byte(v)), nil
	case arrow.Date32:
		return expr.LitDate(int32(v)), nil
	case arrow.Timestamp:
		return expr.LitTimestamp(int64(v), t.ID == expr.TypeTimestampTZ), nil
	case arrow.Time64:
		return expr.LitTime(int64(v)), nil
	case arrow.MonthDayNanoInterval:
		return expr.LitInterval(v.Months, v.Days, v.Nanoseconds), nil
	}
	return expr.Expr{}, nferr.Internalf("physical planner: constant %v of Go type %T", c.Val, c.Val)
}

// ---------------------------------------------------------------- storage predicates

// scanColumn names a scan column for predicate translation: the table
// column's name and type.
type scanColumn struct {
	name string
	typ  arrow.DataType
}

// scanPredicate translates a scan filter conjunct into the predicate
// storage evaluates at the data (AND/OR trees of column-vs-constant
// tests), or reports that it cannot. Storage applies the predicate with
// WHERE semantics (a row passes only when it is TRUE), so a translated
// conjunct needs no re-check in exec.
func scanPredicate(e plan.Expr, cols map[plan.ColumnID]scanColumn) (*storage.Predicate, bool) {
	c, ok := e.(*plan.Call)
	if !ok {
		return nil, false
	}
	switch c.Fn {
	case plan.FnAnd, plan.FnOr:
		args := make([]*storage.Predicate, len(c.Args))
		for i, a := range c.Args {
			p, ok := scanPredicate(a, cols)
			if !ok {
				return nil, false
			}
			args[i] = p
		}
		if c.Fn == plan.FnAnd {
			return storage.And(args...), true
		}
		return storage.Or(args...), true
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
		col, k, flipped, ok := colConst(c.Args[0], c.Args[1], cols)
		if !ok {
			return nil, false
		}
		v, ok := predValue(k, col.typ)
		if !ok {
			return nil, false
		}
		op := storageOps[c.Fn]
		if flipped {
			op = flippedOps[op]
		}
		return storage.Cmp(col.name, op, v), true
	case plan.FnIn:
		col, ok := scanCol(c.Args[0], cols)
		if !ok {
			return nil, false
		}
		vs := make([]storage.Value, 0, len(c.Args)-1)
		for _, a := range c.Args[1:] {
			k, ok := a.(*plan.Const)
			if !ok {
				return nil, false
			}
			if k.Val == nil {
				// NB: x IN (..., NULL) is NULL when nothing else matches,
				// which a WHERE clause treats as FALSE: the NULL drops out.
				continue
			}
			v, ok := predValue(k, col.typ)
			if !ok {
				return nil, false
			}
			vs = append(vs, v)
		}
		if len(vs) == 0 {
			return nil, false
		}
		return storage.In(col.name, vs...), true
	case plan.FnIsNull, plan.FnNotNull:
		col, ok := scanCol(c.Args[0], cols)
		if !ok {
			return nil, false
		}
		if c.Fn == plan.FnIsNull {
			return storage.IsNull(col.name), true
		}
		return storage.IsNotNull(col.name), true
	case plan.FnLike:
		if len(c.Args) != 2 {
			return nil, false
		}
		col, ok1 := scanCol(c.Args[0], cols)
		k, ok2 := c.Args[1].(*plan.Const)
		if !ok1 || !ok2 {
			return nil, false
		}
		s, isStr := k.Val.(string)
		if !isStr || col.typ.ID() != arrow.STRING {
			return nil, false
		}
		i := plan.IndexAnyWildcard(s)
		switch {
		case i < 0:
			return storage.Cmp(col.name, storage.OpEq, storage.Str(s)), true
		case i > 0 && i == len(s)-1 && s[i] == '%':
			return storage.Prefix(col.name, s[:i]), true
		}
	}
	return nil, false
}

// storageOps maps a comparison to storage's operator; flippedOps gives the
// operator with its operands swapped (5 < x is x > 5).
var (
	storageOps = map[string]storage.Op{plan.FnEq: storage.OpEq, plan.FnNe: storage.OpNe, plan.FnLt: storage.OpLt, plan.FnLe: storage.OpLe, plan.FnGt: storage.OpGt, plan.FnGe: storage.OpGe}
	flippedOps = map[storage.Op]storage.Op{storage.OpEq: storage.OpEq, storage.OpNe: storage.OpNe, storage.OpLt: storage.OpGt, storage.OpLe: storage.OpGe, storage.OpGt: storage.OpLt, storage.OpGe: storage.OpLe}
)

// scanCol matches a reference to a scan column.
func scanCol(e plan.Expr, cols map[plan.ColumnID]scanColumn) (scanColumn, bool) {
	r, ok := e.(*plan.ColRef)
	if !ok {
		return scanColumn{}, false
	}
	c, ok := cols[r.ID]
	// NB: storage filters no array column (its predicates test values).
	return c, ok && c.typ.ID() != arrow.LIST
}

// colConst matches "column op constant" in either order.
func colConst(a, b plan.Expr, cols map[plan.ColumnID]scanColumn) (scanColumn, *plan.Const, bool, bool) {
	if k, ok := b.(*plan.Const); ok {
		if c, ok := scanCol(a, cols); ok {
			return c, k, false, true
		}
	}
	if k, ok := a.(*plan.Const); ok {
		if c, ok := scanCol(b, cols); ok {
			return c, k, true, true
		}
	}
	return scanColumn{}, nil, false, false
}

// predValue converts a constant compared with a column of type col into a
// storage value of the column's family (storage.Predicate's rules).
func predValue(k *plan.Const, col arrow.DataType) (storage.Value, bool) {
	if k.Val == nil {
		return storage.Value{}, false
	}
	numCol := plan.IsNumeric(col)
	switch v := k.Val.(type) {
	case int32:
		if numCol {
			return storage.Int(int64(v)), true
		}
	case int64:
		if !numCol {
			break
		}
		if plan.IsDecimal(k.Typ) {
			_, s, _ := plan.DecimalPS(k.Typ)
			return storage.Decimal(v, s), true
		}
		return storage.Int(v), true
	case decimal128.Num:
		if !numCol {
			break
		}
		_, s, _ := plan.DecimalPS(k.Typ)
		if b := v.BigInt(); b.IsInt64() {
			return storage.Decimal(b.Int64(), s), true
		}
	case float64:
		if plan.IsFloat(col) {
			return storage.Float(v), true
		}
	case string:
		if plan.IsString(col) {
			return storage.Str(v), true
		}
	case arrow.Date32:
		if plan.IsDate(col) {
			return storage.Date(int32(v)), true
		}
	case arrow.Timestamp:
		if plan.IsTimestamp(col) {
			return storage.Timestamp(int64(v)), true
		}
	case arrow.Time64:
		if plan.IsTime(col) {
			return storage.Time(int64(v)), true
		}
	case bool:
		if plan.IsBool(col) {
			return storage.Bool(v), true
		}
	}
	return storage.Value{}, false
}

// logicalExprList prints logical expressions, comma-separated.
func logicalExprList(es []plan.Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

// execExprList prints exec expressions for EXPLAIN.
func execExprList(es []expr.Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

// ColNames prints the names of columns.
func ColNames(cols []PhysColumn, idx []int) string {
	s := make([]string, len(idx))
	for i, c := range idx {
		if c >= 0 && c < len(cols) {
			s[i] = cols[c].Name
		} else {
			s[i] = fmt.Sprintf("#%d", c)
		}
	}
	return strings.Join(s, ", ")
}
