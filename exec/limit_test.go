package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestLimitOperator(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for _, n := range []int{0, 1, 10, 2500} {
		rows := RandomRows(r, schema, n, GenOpts{NullProb: 0.1})
		for _, lo := range [][2]int64{{0, 0}, {1, 0}, {5, 3}, {-1, 7}, {100, 0}, {-1, 0}, {3, 5000}, {2000, 100}} {
			limit, offset := lo[0], lo[1]
			RunOpTest(t, OpTest{
				Name:    fmt.Sprintf("limit/%d/%d/%d", n, limit, offset),
				Inputs:  []HarnessInput{{Schema: schema, Rows: rows}},
				Build:   func(in []Operator) (Operator, error) { return NewLimit(in[0], limit, offset) },
				Ordered: true,
				// NB: a limit reached early stops pulling, so cancellation
				// may legitimately show as end of stream.
				Ref: func(in [][][]any) ([][]any, error) {
					rows := in[0]
					lo := min(int(offset), len(rows))
					hi := len(rows)
					if limit >= 0 {
						hi = min(hi, lo+int(limit))
					}
					return rows[lo:hi], nil
				},
			})
		}
	}
	src, _ := NewBatchSource(schema)
	if _, err := NewLimit(src, 1, -1); err == nil {
		t.Error("negative offset accepted")
	}
	src.Close()
}
