package exec

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestUnionAllOperator(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	s1 := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	s2 := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "t", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, sizes := range [][3]int{{0, 0, 0}, {5, 0, 7}, {1000, 1, 2000}} {
		in := []HarnessInput{
			{Schema: s1, Rows: RandomRows(r, s1, sizes[0], GenOpts{NullProb: 0.1})},
			{Schema: s2, Rows: RandomRows(r, s2, sizes[1], GenOpts{NullProb: 0.1})},
			{Schema: s1, Rows: RandomRows(r, s1, sizes[2], GenOpts{NullProb: 0.1})},
		}
		RunOpTest(t, OpTest{
			Name:   "union",
			Inputs: in,
			Build: func(in []Operator) (Operator, error) {
				return NewUnionAll(in...)
			},
			Ordered: true,
			Ref: func(in [][][]any) ([][]any, error) {
				var out [][]any
				for _, rows := range in {
					out = append(out, rows...)
				}
				return out, nil
			},
		})
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	x, _ := NewBatchSource(s1)
	y, _ := NewBatchSource(bad)
	if _, err := NewUnionAll(x, y); err == nil {
		t.Error("mismatched union accepted")
	}
}
