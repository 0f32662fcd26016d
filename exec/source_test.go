package exec

import (
	"math/rand/v2"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allTypesSchema has one nullable column of every type the harness knows.
var allTypesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "m", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}, Nullable: true},
	{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
}, nil)

func TestBatchSourceHarness(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, 3000} {
		rows := RandomRows(rng, allTypesSchema, n, GenOpts{NullProb: 0.1})
		RunOpTest(t, OpTest{
			Name:    "source",
			Inputs:  []HarnessInput{{Schema: allTypesSchema, Rows: rows}},
			Build:   func(in []Operator) (Operator, error) { return in[0], nil },
			Ref:     func(in [][][]any) ([][]any, error) { return in[0], nil },
			Ordered: true,
		})
	}
}

func TestBatchSourceValidation(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, allTypesSchema, [][]any{{1, 2, 3.5, true, "x", "2024-02-29", "1.25", "-3.5", nil}})
	defer rec.Release()
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if _, err := NewBatchSource(other, rec); err == nil {
		t.Fatal("schema mismatch accepted")
	}
	if _, err := NewBatchSourceWithSel(allTypesSchema, []arrow.RecordBatch{rec}, [][]int32{{1}}); err == nil {
		t.Fatal("selection out of range accepted")
	}
	src, err := NewBatchSource(allTypesSchema, rec, rec)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := CollectRows(NewTestEnv(mem), src)
	if err != nil {
		t.Fatal(err)
	}
	want := canonicalRows(t, allTypesSchema, [][]any{
		{1, 2, 3.5, true, "x", "2024-02-29", "1.25", "-3.5", nil},
		{1, 2, 3.5, true, "x", "2024-02-29", "1.25", "-3.5", nil}})
	AssertRowsEqual(t, rows, want, true)
}

func TestValuesOperator(t *testing.T) {
	v, err := NewValues([]string{"a", "b", "c"}, [][]expr.Expr{
		{expr.LitInt32(1), dec("1.5"), expr.LitNull(expr.NullType)},
		{expr.LitInt64(2), expr.LitInt32(2), expr.LitString("x")},
		{expr.LitNull(expr.NullType), dec("0.25"), expr.LitString("y")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "schema:\n  fields: 3\n    - a: type=int64, nullable\n    - b: type=decimal64(12, 2), nullable\n    - c: type=utf8, nullable"
	if got := v.Schema().String(); got != want {
		t.Fatalf("schema:\n%s\nwant\n%s", got, want)
	}
	for _, bs := range []int{1, 2, 100} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		env := NewTestEnv(mem)
		env.BatchSize = bs
		v, _ := NewValues([]string{"a", "b", "c"}, [][]expr.Expr{
			{expr.LitInt32(1), dec("1.5"), expr.LitNull(expr.NullType)},
			{expr.LitInt64(2), expr.LitInt32(2), expr.LitString("x")},
			{expr.LitNull(expr.NullType), dec("0.25"), expr.LitString("y")},
		})
		rows, err := CollectRows(env, v)
		if err != nil {
			t.Fatal(err)
		}
		AssertRowsEqual(t, rows, [][]any{{int64(1), D("1.50"), nil}, {int64(2), D("2.00"), "x"}, {nil, D("0.25"), "y"}}, true)
		mem.AssertSize(t, 0)
	}
	// Errors in a value are query errors at Open.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	v, err = NewValues([]string{"a"}, [][]expr.Expr{{expr.LitInt32(1)}, {expr.Div(expr.LitInt32(1), expr.LitInt32(0))}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CollectRows(NewTestEnv(mem), v); err == nil || err.Error() != "division by zero in (1 / 0)" {
		t.Fatalf("got %v", err)
	}
	mem.AssertSize(t, 0)
	if _, err := NewValues([]string{"a"}, [][]expr.Expr{{expr.LitInt32(1)}, {expr.LitString("x")}}); err == nil {
		t.Fatal("mismatched VALUES types accepted")
	}
}
