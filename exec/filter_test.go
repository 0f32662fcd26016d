package exec

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

func TestFilterOperator(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, n := range []int{0, 1, 5000} {
		rows := RandomRows(r, schema, n, GenOpts{NullProb: 0.2, Range: 50})
		for _, tc := range []struct {
			name string
			pred expr.Expr
			keep func(row []any) bool
		}{
			{"all", expr.LitBool(true), func([]any) bool { return true }},
			{"none", expr.LitBool(false), func([]any) bool { return false }},
			{"null", expr.LitNull(expr.NullType), func([]any) bool { return false }},
			{"k>10", expr.Gt(expr.Col(0, "k"), expr.LitInt32(10)), func(row []any) bool { return row[0] != nil && row[0].(int64) > 10 }},
			{"k<>k", expr.Ne(expr.Col(0, "k"), expr.Col(0, "k")), func([]any) bool { return false }},
			{"k is null or s like", expr.Or(expr.IsNull(expr.Col(0, "k")), expr.Like(expr.Col(1, "s"), "%a%")), func(row []any) bool {
				return row[0] == nil || row[1] != nil && strings.Contains(row[1].(string), "a")
			}},
		} {
			RunOpTest(t, OpTest{
				Name:    "filter/" + tc.name,
				Inputs:  []HarnessInput{{Schema: schema, Rows: rows}},
				Build:   func(in []Operator) (Operator, error) { return NewFilter(in[0], tc.pred) },
				Ordered: true,
				Ref: func(in [][][]any) ([][]any, error) {
					var out [][]any
					for _, row := range in[0] {
						if tc.keep(row) {
							out = append(out, row)
						}
					}
					return out, nil
				},
			})
		}
	}
}

func TestFilterErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	src, _ := NewBatchSource(schema)
	if _, err := NewFilter(src, expr.Col(0, "a")); err == nil || !strings.Contains(err.Error(), "WHERE condition a is of type INTEGER, not BOOLEAN") {
		t.Errorf("non-boolean predicate: %v", err)
	}
	src.Close()
	// A runtime error surfaces from Next, names the expression, and sticks.
	rows := [][]any{{1, 1}, {1, 0}}
	RunOpTest(t, OpTest{
		Name:   "filter/divzero",
		Inputs: []HarnessInput{{Schema: schema, Rows: rows}},
		Build: func(in []Operator) (Operator, error) {
			return NewFilter(in[0], expr.Gt(expr.Div(expr.Col(0, "a"), expr.Col(1, "b")), expr.LitInt32(0)))
		},
		Ref: func(in [][][]any) ([][]any, error) {
			for _, r := range in[0] {
				if r[1] == int32(0) && r[0] != nil {
					return nil, nferr.Dataf("division by zero in (a / b)")
				}
			}
			var out [][]any
			for _, r := range in[0] {
				if r[0] != nil && r[1] != nil && r[0].(int32)/r[1].(int32) > 0 {
					out = append(out, r)
				}
			}
			return out, nil
		},
	})
}

// TestFilterNoCopy: the output batch shares the input's arrays.
func TestFilterNoCopy(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := MakeRecord(t, mem, schema, [][]any{{1}, {2}, {3}, {4}})
	src, _ := NewBatchSource(schema, rec)
	rec.Release()
	f, err := NewFilter(src, expr.Gt(expr.Col(0, "a"), expr.LitInt32(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Open(NewTestEnv(mem)); err != nil {
		t.Fatal(err)
	}
	b, err := f.Next()
	if err != nil || b == nil {
		t.Fatalf("Next: %v %v", b, err)
	}
	if b.Cols[0] != src.recs[0].Column(0) || b.N != 4 || len(b.Sel) != 2 || b.Sel[0] != 2 {
		t.Fatalf("filter copied or mis-selected: N=%d Sel=%v", b.N, b.Sel)
	}
}
