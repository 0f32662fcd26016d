package exec

import (
	"fmt"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/internal/nferr"
)

func refNLJ(l, r [][]any, spec NestedLoopJoinSpec) [][]any {
	var out [][]any
	for _, a := range l {
		matched := false
		for _, b := range r {
			ok := true
			if spec.Condition != nil {
				v, known := refResidual(a, b)
				ok = known && v
			}
			if !ok {
				continue
			}
			matched = true
			if spec.Type == JoinInner || spec.Type == JoinLeft {
				out = append(out, append(append([]any(nil), a...), b...))
			}
		}
		switch spec.Type {
		case JoinLeft:
			if !matched {
				out = append(out, append(append([]any(nil), a...), make([]any, joinRightSchema.NumFields())...))
			}
		case JoinSemi:
			if matched {
				out = append(out, a)
			}
		case JoinAnti:
			if !matched {
				out = append(out, a)
			}
		case JoinMark:
			out = append(out, append(append([]any(nil), a...), matched))
		}
	}
	return out
}

func TestNestedLoopJoinHarness(t *testing.T) {
	l, r := joinInputs(31, 40, 25, 20)
	for _, typ := range []JoinType{JoinInner, JoinLeft, JoinSemi, JoinAnti, JoinMark} {
		for _, cond := range []bool{true, false} {
			for _, empty := range []bool{false, true} {
				spec := NestedLoopJoinSpec{Type: typ}
				if cond {
					e := testResidual
					spec.Condition = &e
				}
				rr := r
				if empty {
					rr = nil
				}
				name := fmt.Sprintf("nlj/%s/cond=%v/emptyright=%v", typ, cond, empty)
				t.Run(name, func(t *testing.T) {
					RunOpTest(t, OpTest{
						Name:       name,
						Inputs:     []HarnessInput{{Schema: joinLeftSchema, Rows: l}, {Schema: joinRightSchema, Rows: rr}},
						Ordered:    typ != JoinLeft,
						BatchSizes: []int{1, 7, 1024},
						Build: func(in []Operator) (Operator, error) {
							return NewNestedLoopJoin(in[0], in[1], spec)
						},
						Ref: func(in [][][]any) ([][]any, error) { return refNLJ(in[0], in[1], spec), nil },
					})
				})
			}
		}
	}
}

func TestNestedLoopJoinErrors(t *testing.T) {
	ls, _ := NewBatchSource(joinLeftSchema)
	rs, _ := NewBatchSource(joinRightSchema)
	notBool := expr.Add(expr.Col(2, "lv"), expr.Col(6, "rv"))
	for _, spec := range []NestedLoopJoinSpec{{Type: JoinFull}, {Type: JoinInner, Condition: &notBool}} {
		if _, err := NewNestedLoopJoin(ls, rs, spec); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%+v: got %v, want a query error", spec, err)
		}
	}
}
