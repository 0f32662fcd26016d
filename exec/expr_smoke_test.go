package exec

import (
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestExprSmoke(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "p", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "d", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, [][]any{
		{1, "10.50", "0.05", "PROMO X", "1994-01-31"},
		{nil, "3.00", "0.10", "abc", "1995-03-01"},
		{5, "7.25", nil, nil, nil},
	})
	defer rec.Release()
	b := &Batch{Cols: rec.Columns(), N: 3}
	cases := []struct {
		e    expr.Expr
		want []any
	}{
		{expr.Mul(expr.Col(1, "p"), expr.Col(2, "d")), []any{D("0.5250"), D("0.3000"), nil}},
		{expr.Add(expr.Col(0, "a"), expr.LitInt32(2)), []any{int64(3), nil, int64(7)}},
		{expr.Like(expr.Col(3, "s"), "PROMO%"), []any{true, false, nil}},
		{expr.Add(expr.Col(4, "dt"), expr.LitInterval(1, 0, 0)), []any{arrow.Date32(mustDate("1994-02-28")), arrow.Date32(mustDate("1995-04-01")), nil}},
		{expr.Lt(expr.Col(1, "p"), expr.LitInt32(8)), []any{false, true, true}},
	}
	for _, c := range cases {
		checkExprValues(t, mem, schema, b, c.e, c.want)
	}
}

func mustDate(s string) int32 {
	d, err := expr.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

// checkExprValues compiles e against schema, evaluates it over b and
// compares each row with want (nil: NULL).
func checkExprValues(t *testing.T, mem memory.Allocator, schema *arrow.Schema, b *Batch, e expr.Expr, want []any) {
	t.Helper()
	ce, err := expr.CompileExpr(e, schema)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	arr, err := ce.Eval(mem, b)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	defer arr.Release()
	for i, w := range want {
		if got := ArrayValue(arr, i); !ValuesEqual(got, w) {
			t.Errorf("%s row %d: got %v, want %v", e, i, got, w)
		}
	}
}
