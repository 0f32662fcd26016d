package engine

import (
	"math"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestRangeSelectivity checks that bounds on one column combine into one
// range (a one-month window of a seven-year column keeps 1/84 of it, not
// the product of the two half-tables), that bounds on different columns
// stay independent, and that an empty range keeps one value's share.
func TestRangeSelectivity(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	a := &plan.ColRef{ID: 1, Name: "a", Typ: i64}
	b := &plan.ColRef{ID: 2, Name: "b", Typ: i64}
	in := &opt.RelStats{Rows: 1000, Cols: map[plan.ColumnID]*opt.ColStat{
		1: {Ndv: 84, Min: 0, Max: 84, HasRange: true},
		2: {Ndv: 100, Min: 0, Max: 100, HasRange: true},
	}}
	k := func(v int64) *plan.Const { return &plan.Const{Typ: i64, Val: v} }
	cmp := func(fn string, x, y plan.Expr) plan.Expr {
		return &plan.Call{Fn: fn, Args: []plan.Expr{x, y}, Typ: arrow.FixedWidthTypes.Boolean}
	}
	and := func(xs ...plan.Expr) plan.Expr {
		return &plan.Call{Fn: plan.FnAnd, Args: xs, Typ: arrow.FixedWidthTypes.Boolean}
	}
	e := opt.NewEstimator()
	for _, c := range []struct {
		name string
		cond plan.Expr
		want float64
	}{
		{"one bound", cmp(plan.FnGe, a, k(42)), 0.5},
		{"window", and(cmp(plan.FnGe, a, k(42)), cmp(plan.FnLt, a, k(43))), 1.0 / 84},
		{"window written const first", and(cmp(plan.FnLe, k(42), a), cmp(plan.FnGt, k(43), a)), 1.0 / 84},
		{"two columns", and(cmp(plan.FnGe, a, k(42)), cmp(plan.FnLt, b, k(50))), 0.25},
		{"window and another column", and(cmp(plan.FnGe, a, k(0)), cmp(plan.FnLt, a, k(21)), cmp(plan.FnGe, b, k(90))), 0.25 * 0.1},
		{"empty range", and(cmp(plan.FnGt, a, k(50)), cmp(plan.FnLt, a, k(40))), 1.0 / 84},
	} {
		if got := e.Sel(c.cond, in); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: selectivity %g, want %g", c.name, got, c.want)
		}
	}
}
