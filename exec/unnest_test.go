package exec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/exec/expr"
)

// unnestRows are rows (a INT, b INT, s TEXT) with b in -1..4 or NULL:
// int_series(1, b) has 0 to 4 elements, or is NULL.
func unnestRows(n int) [][]any {
	r := rand.New(rand.NewPCG(7, 7))
	rows := make([][]any, n)
	for i := range rows {
		var b, s any = int32(r.IntN(6) - 1), fmt.Sprintf("s%d", r.IntN(100))
		if r.IntN(8) == 0 {
			b = nil
		}
		if r.IntN(8) == 0 {
			s = nil
		}
		rows[i] = []any{int32(i), b, s}
	}
	return rows
}

var unnestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.PrimitiveTypes.Int32},
	{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func seriesTo(b expr.Expr) expr.Expr {
	return expr.Call(expr.FnIntSeries, expr.LitInt64(1), expr.Cast(b, expr.Int64Type))
}

// TestUnnestOperator expands int_series(1, b) and ARRAY[s] in lockstep:
// each row once per position of its longer array, the shorter one's
// element and subscript NULL past its end, the ordinality from 1.
func TestUnnestOperator(t *testing.T) {
	for _, n := range []int{0, 5, 3000} {
		RunOpTest(t, OpTest{
			Name:   fmt.Sprintf("unnest/%d", n),
			Inputs: []HarnessInput{{Schema: unnestSchema, Rows: unnestRows(n)}},
			Build: func(in []Operator) (Operator, error) {
				return NewUnnest(in[0], []expr.Expr{seriesTo(expr.Col(1, "b")), expr.Call(expr.FnArray, expr.Col(2, "s"))},
					[]string{"e0", "s0", "e1", "s1", "ord"})
			},
			Ordered: true,
			Ref: func(in [][][]any) ([][]any, error) {
				var out [][]any
				for _, row := range in[0] {
					n1 := int64(0)
					if row[1] != nil {
						n1 = max(0, int64(row[1].(int32)))
					}
					for k := int64(1); k <= max(n1, 1); k++ {
						o := append([]any(nil), row...)
						if k <= n1 {
							o = append(o, k, k)
						} else {
							o = append(o, nil, nil)
						}
						if k == 1 {
							o = append(o, row[2], int64(1))
						} else {
							o = append(o, nil, nil)
						}
						out = append(out, append(o, k))
					}
				}
				return out, nil
			},
		})
	}
}

// TestUnnestEmptyArrays: rows whose arrays are all empty or NULL make no
// row.
func TestUnnestEmptyArrays(t *testing.T) {
	RunOpTest(t, OpTest{
		Name:   "unnest/empty",
		Inputs: []HarnessInput{{Schema: unnestSchema, Rows: unnestRows(500)}},
		Build: func(in []Operator) (Operator, error) {
			return NewUnnest(in[0], []expr.Expr{seriesTo(expr.Col(1, "b"))}, []string{"e0", "s0", "ord"})
		},
		Ordered: true,
		Ref: func(in [][][]any) ([][]any, error) {
			var out [][]any
			for _, row := range in[0] {
				if row[1] == nil {
					continue
				}
				for k := int64(1); k <= int64(row[1].(int32)); k++ {
					out = append(out, append(append([]any(nil), row...), k, k, k))
				}
			}
			return out, nil
		},
	})
}

// TestSortArrayPayload sorts rows carrying an array column (a listVec in
// the sort's row store) and checks each row's array after the sort.
func TestSortArrayPayload(t *testing.T) {
	RunOpTest(t, OpTest{
		Name:   "sort/array payload",
		Inputs: []HarnessInput{{Schema: unnestSchema, Rows: unnestRows(2000)}},
		Build: func(in []Operator) (Operator, error) {
			p, err := NewProject(in[0], []expr.Expr{expr.Col(0, "a"), seriesTo(expr.Col(1, "b"))}, []string{"a", "arr"})
			if err != nil {
				return nil, err
			}
			s, err := NewSort(p, SortSpec{Keys: []SortKey{{Col: 0, Desc: true}}})
			if err != nil {
				p.Close()
				return nil, err
			}
			out, err := NewProject(s, []expr.Expr{expr.Col(0, "a"), expr.Call(expr.FnArrayToString, expr.Col(1, "arr"), expr.LitString(","))}, []string{"a", "text"})
			if err != nil {
				s.Close()
			}
			return out, err
		},
		Ordered: true,
		Ref: func(in [][][]any) ([][]any, error) {
			out := make([][]any, len(in[0]))
			for i, row := range in[0] {
				var text any
				if row[1] != nil {
					var parts []string
					for k := int32(1); k <= row[1].(int32); k++ {
						parts = append(parts, fmt.Sprint(k))
					}
					text = strings.Join(parts, ",")
				}
				out[len(out)-1-i] = []any{row[0], text}
			}
			return out, nil
		},
	})
}
