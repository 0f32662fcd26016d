package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"
)

// TestTPCHPlans binds and optimizes the 22 TPC-H queries, validates every
// plan and pins their EXPLAIN text (with SF1 estimates) in a golden file.
func TestTPCHPlans(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 22; i++ {
		q := bindQuery(t, tpchQuery(t, i))
		if err := plan.ValidatePlan(q.Plan); err != nil {
			t.Fatalf("Q%d bound plan: %v", i, err)
		}
		p, err := opt.Optimize(q.Plan)
		if err != nil {
			t.Fatalf("Q%d: %v", i, err)
		}
		if err := plan.ValidatePlan(p); err != nil {
			t.Fatalf("Q%d optimized plan: %v\n%s", i, err, opt.ExplainPlan(p, opt.ExplainOptions{Verbose: true}))
		}
		// The result columns are unchanged by optimization.
		before, after := q.Plan.Columns(), p.Columns()
		if len(before) != len(after) {
			t.Fatalf("Q%d: %d result columns became %d", i, len(before), len(after))
		}
		for k := range before {
			if before[k].ID != after[k].ID {
				t.Fatalf("Q%d: result column %d changed", i, k)
			}
		}
		checkOptimizedShape(t, i, p)
		fmt.Fprintf(&b, "-- Q%d %s\n%s\n", i, resultSignature(q), opt.ExplainPlan(p, opt.ExplainOptions{}))
	}
	checkGolden(t, "tpch_plans.golden", b.String())
}

// resultSignature prints the result's names and types: "(a bigint, b ...)".
func resultSignature(q *bind.QueryStmt) string {
	cols := q.Plan.Columns()
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = q.Names[i] + " " + plan.TypeString(c.Type)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// checkOptimizedShape asserts what every optimized TPC-H plan must look
// like: no subqueries, no cross products, filters inside scans, hash joins
// building on the smaller estimated side, only needed columns scanned.
func checkOptimizedShape(t *testing.T, q int, p plan.Plan) {
	t.Helper()
	est := opt.NewEstimator()
	plan.WalkPlanDeep(p, func(n plan.Plan) {
		for _, e := range plan.NodeExprs(n) {
			if plan.HasSubquery(e) {
				t.Errorf("Q%d: subquery left after optimization in %T", q, n)
			}
		}
		switch x := n.(type) {
		case *plan.JoinNode:
			if len(x.Equi) == 0 && x.Kind != plan.JoinSingle && !opt.AtMostOneRow(x.Left) && !opt.AtMostOneRow(x.Right) {
				t.Errorf("Q%d: join without equi keys (cross product): %s", q, opt.ExplainPlan(x, opt.ExplainOptions{NoRows: true}))
			}
			if x.Kind == plan.JoinInner {
				l, r := est.Rows(x.Left), est.Rows(x.Right)
				if (x.Build == plan.BuildRight && r > l) || (x.Build == plan.BuildLeft && l > r) {
					t.Errorf("Q%d: join builds on the larger side (left %.0f, right %.0f)", q, l, r)
				}
			}
		case *plan.FilterNode:
			// Filters remain only above joins or aggregates (residuals on
			// subquery results, HAVING).
			switch x.Input.(type) {
			case *plan.ScanNode:
				t.Errorf("Q%d: filter left above a scan: %s", q, x.Cond)
			}
		case *plan.ScanNode:
			if x.Table.Name == "lineitem" && len(x.Cols) > 8 {
				t.Errorf("Q%d: lineitem scan reads %d columns", q, len(x.Cols))
			}
		}
	})
}

func TestTPCHSpecifics(t *testing.T) {
	optimized := func(n int) plan.Plan {
		p, err := opt.Optimize(bindQuery(t, tpchQuery(t, n)).Plan)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Q1: the date arithmetic folds to a literal in the scan's filter.
	q1 := optimized(1)
	found := false
	plan.WalkPlanDeep(q1, func(n plan.Plan) {
		if s, ok := n.(*plan.ScanNode); ok {
			for _, f := range s.Filters {
				found = found || f.String() == "lineitem.l_shipdate <= date '1998-09-02'"
			}
			if len(s.PruningPredicates()) != 1 {
				t.Errorf("Q1: pruning predicates %v", s.PruningPredicates())
			}
		}
	})
	if !found {
		t.Errorf("Q1: folded shipdate filter not found:\n%s", opt.ExplainPlan(q1, opt.ExplainOptions{}))
	}
	// Q15: the view is computed once and read twice.
	defs := map[*plan.SharedDef]int{}
	plan.WalkPlanDeep(optimized(15), func(n plan.Plan) {
		if s, ok := n.(*plan.SharedScan); ok {
			defs[s.Def]++
		}
	})
	if len(defs) != 1 {
		t.Fatalf("Q15: %d shared plans, want 1", len(defs))
	}
	for d, uses := range defs {
		if uses != 2 || d.Name != "revenue0" {
			t.Fatalf("Q15: shared %s used %d times, want revenue0 twice", d.Name, uses)
		}
	}
	// Q16: NOT IN is a null-aware anti join; Q21: EXISTS / NOT EXISTS are
	// semi and anti joins; Q17, Q20: correlated aggregates become joins.
	kinds := func(p plan.Plan) map[string]int {
		m := map[string]int{}
		plan.WalkPlanDeep(p, func(n plan.Plan) {
			if j, ok := n.(*plan.JoinNode); ok {
				k := j.Kind.String()
				if j.NullAware {
					k += "-null-aware"
				}
				m[k]++
			}
		})
		return m
	}
	if k := kinds(optimized(16)); k["anti-null-aware"] != 1 {
		t.Errorf("Q16 joins: %v", k)
	}
	if k := kinds(optimized(21)); k["semi"] != 1 || k["anti"] != 1 {
		t.Errorf("Q21 joins: %v", k)
	}
	if k := kinds(optimized(22)); k["anti"] != 1 || k["inner"] != 1 || k["single"] != 0 {
		t.Errorf("Q22 joins: %v", k)
	}
	for _, n := range []int{2, 17, 20} {
		agg := false
		plan.WalkPlanDeep(optimized(n), func(p plan.Plan) {
			if j, ok := p.(*plan.JoinNode); ok && j.Kind == plan.JoinInner {
				for _, side := range []plan.Plan{j.Left, j.Right} {
					if a, ok := side.(*plan.AggregateNode); ok && len(a.Groups) > 0 {
						agg = true
					}
				}
			}
		})
		if !agg {
			t.Errorf("Q%d: the correlated aggregate did not become a grouped aggregate joined inner", n)
		}
	}
	// Q3, Q10, Q18, Q21, Q2: ORDER BY ... LIMIT is a TopN.
	for _, n := range []int{2, 3, 10, 18, 21} {
		top := false
		plan.WalkPlanDeep(optimized(n), func(p plan.Plan) {
			_, ok := p.(*plan.TopNNode)
			top = top || ok
		})
		if !top {
			t.Errorf("Q%d: no TopN", n)
		}
	}
}

func BenchmarkPlanTPCH(b *testing.B) {
	srcs := make([]string, 22)
	for i := range srcs {
		srcs[i] = tpchQuery(b, i+1)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, src := range srcs {
			q := bindQuery(b, src)
			if _, err := opt.Optimize(q.Plan); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestExplainVerbose pins EXPLAIN VERBOSE (column IDs and types) for two
// queries where names alone are ambiguous (Q2 reads partsupp twice) or
// plans are shared (Q15).
func TestExplainVerbose(t *testing.T) {
	var b strings.Builder
	for _, n := range []int{2, 15} {
		p, err := opt.Optimize(bindQuery(t, tpchQuery(t, n)).Plan)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "-- Q%d\n%s\n", n, opt.ExplainPlan(p, opt.ExplainOptions{Verbose: true, NoRows: true}))
	}
	checkGolden(t, "explain_verbose.golden", b.String())
}
