package exec

import (
	"math/rand/v2"
	"testing"

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
