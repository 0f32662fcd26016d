package exec

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestGcdLcmLogExpr runs gcd, lcm and log(b, x) over columns with NULLs
// (NULL in, NULL out) and checks their errors.
func TestGcdLcmLogExpr(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, [][]any{
		{12, 18, 1000.0},
		{nil, 4, nil},
		{-4, 0, 0.001},
	})
	defer rec.Release()
	b := &Batch{Cols: rec.Columns(), N: 3}
	a, bb, x := expr.Col(0, "a"), expr.Col(1, "b"), expr.Col(2, "x")
	cases := []struct {
		e    expr.Expr
		want []any
	}{
		{expr.Call(expr.FnGcd, a, bb), []any{int32(6), nil, int32(4)}},
		{expr.Call(expr.FnLcm, a, bb), []any{int32(36), nil, int32(0)}},
		{expr.Call(expr.FnLogBase, expr.LitFloat64(10), x), []any{3.0, nil, -3.0}},
	}
	for _, c := range cases {
		checkExprValues(t, mem, schema, b, c.e, c.want)
	}
	for _, c := range []struct {
		e    expr.Expr
		want string
	}{
		{expr.Call(expr.FnGcd, expr.LitInt32(-2147483648), expr.LitInt32(0)), "integer out of range"},
		{expr.Call(expr.FnLcm, expr.LitInt64(1<<62), expr.LitInt64(3)), "bigint out of range"},
		{expr.Call(expr.FnLogBase, expr.LitFloat64(1), x), "division by zero"},
		{expr.Call(expr.FnLogBase, expr.LitFloat64(2), expr.Neg(x)), "cannot take logarithm of a negative number"},
	} {
		ce, err := expr.CompileExpr(c.e, schema)
		if err == nil {
			var arr arrow.Array
			if arr, err = ce.Eval(mem, b); err == nil {
				arr.Release()
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want %q", c.e, err, c.want)
		}
	}
	if _, err := expr.CompileExpr(expr.Call(expr.FnGcd, a, expr.LitInt64(2)), schema); err == nil {
		t.Error("gcd(integer, bigint) compiled (the binder makes both one type)")
	}
}
