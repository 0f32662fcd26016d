package exec

import (
	"math/rand/v2"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestProjectOperator(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "p", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "d", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: false},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, n := range []int{0, 3, 3000} {
		rows := RandomRows(r, schema, n, GenOpts{NullProb: 0.1, Range: 10000})
		RunOpTest(t, OpTest{
			Name:   "project",
			Inputs: []HarnessInput{{Schema: schema, Rows: rows}},
			Build: func(in []Operator) (Operator, error) {
				return NewProject(in[0], []expr.Expr{
					expr.Col(2, "s"),
					expr.Mul(expr.Col(0, "p"), expr.Sub(expr.LitInt32(1), expr.Col(1, "d"))),
					expr.LitString("const"),
					expr.Col(0, "p"),
				}, []string{"s", "disc_price", "c", ""})
			},
			Ordered: true,
			Ref: func(in [][][]any) ([][]any, error) {
				var out [][]any
				for _, row := range in[0] {
					var v any
					if row[0] != nil {
						v = row[0].(Dec).Mul(DecU(1, 0).Sub(row[1].(Dec)))
					}
					out = append(out, []any{row[2], v, "const", row[0]})
				}
				return out, nil
			},
		})
	}
}

func TestProjectSchemaAndPassThrough(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: false},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, [][]any{{1, 2}, {3, nil}})
	src, _ := NewBatchSource(schema, rec)
	rec.Release()
	p, err := NewProject(src, []expr.Expr{expr.Col(1, "b"), expr.Add(expr.Col(0, "a"), expr.LitInt32(1)), expr.Col(0, "a")}, []string{"bb", "", "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := "schema:\n  fields: 3\n    - bb: type=int32, nullable\n    - (a + 1): type=int32, nullable\n    - a: type=int32"
	if got := p.Schema().String(); got != want {
		t.Errorf("schema:\n%s\nwant:\n%s", got, want)
	}
	if err := p.Open(NewTestEnv(mem)); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if b.Cols[0] != src.recs[0].Column(1) || b.Cols[2] != src.recs[0].Column(0) {
		t.Error("column references were copied")
	}
}
