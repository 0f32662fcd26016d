package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/nicflow/nicflow/engine/sql"
)

// rulePrereqs are the rules applied before a rule's golden "before" plan:
// each rule is shown on the plans it is meant to see.
var rulePrereqs = map[string][]string{
	opt.RuleInlineShared:  nil,
	opt.RuleDecorrelate:   {opt.RuleInlineShared},
	opt.RuleFold:          nil,
	opt.RuleOuterJoin:     {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold},
	opt.RulePushdown:      {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin},
	opt.RuleJoinOrder:     {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin, opt.RulePushdown},
	opt.RulePrune:         {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin, opt.RulePushdown, opt.RuleJoinOrder},
	opt.RuleDistinctAgg:   {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin, opt.RulePushdown, opt.RuleJoinOrder, opt.RulePrune},
	opt.RuleTopN:          nil,
	opt.RuleSemiLift:      {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin, opt.RulePushdown, opt.RuleJoinOrder, opt.RulePrune},
	opt.RuleReduceGrouped: {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin, opt.RulePushdown, opt.RuleJoinOrder, opt.RulePrune},
	opt.RuleEagerAgg:      {opt.RuleInlineShared, opt.RuleDecorrelate, opt.RuleFold, opt.RuleOuterJoin, opt.RulePushdown, opt.RuleJoinOrder, opt.RulePrune},
}

// TestRulesGolden shows each rule on its own: for every query of
// testdata/rules/<rule>.sql the plan before and after the rule.
func TestRulesGolden(t *testing.T) {
	for _, rule := range opt.AllRules {
		t.Run(rule, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "rules", rule+".sql"))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, c := range strings.Split(string(src), "\n----\n") {
				c = strings.TrimSpace(c)
				// "tpch N" stands for TPC-H query N (internal/tpchq).
				if n, ok := strings.CutPrefix(c, "tpch "); ok {
					k, err := strconv.Atoi(strings.TrimSpace(n))
					if err != nil {
						t.Fatalf("%s: %v", c, err)
					}
					c = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(tpchQuery(t, k)), ";"))
				}
				q := bindQuery(t, c)
				pre := rulePrereqs[rule]
				before, err := opt.OptimizeWith(q.Plan, pre)
				if err != nil {
					t.Fatalf("%s: %v", c, err)
				}
				after, err := opt.OptimizeWith(q.Plan, append(append([]string(nil), pre...), rule))
				if err != nil {
					t.Fatalf("%s: %v", c, err)
				}
				for _, p := range []plan.Plan{before, after} {
					if err := plan.ValidatePlan(p); err != nil {
						t.Fatalf("%s: %v\n%s", c, err, opt.ExplainPlan(p, opt.ExplainOptions{Verbose: true}))
					}
				}
				opts := opt.ExplainOptions{NoRows: rule != opt.RuleJoinOrder}
				fmt.Fprintf(&b, "%s\n-- before\n%s-- after\n%s\n", c, opt.ExplainPlan(before, opts), opt.ExplainPlan(after, opts))
			}
			checkGolden(t, filepath.Join("rules", rule+".golden"), b.String())
		})
	}
}

func TestOptimizeWithUnknownRule(t *testing.T) {
	q := bindQuery(t, "select 1")
	if _, err := opt.OptimizeWith(q.Plan, []string{"nope"}); err == nil {
		t.Fatal("unknown rule accepted")
	}
}

// TestDecorrelateFallback checks that correlation shapes no rule turns
// into a join are evaluated row by row (an Apply node) in a valid plan;
// subquery_apply.slt checks their answers.
func TestDecorrelateFallback(t *testing.T) {
	for _, c := range []string{
		"select n_name from nation where n_nationkey = (select r_regionkey from region where r_regionkey < n_regionkey order by r_name limit 1)",
		"select n_name from nation where n_nationkey in (select r_regionkey from region where r_regionkey = n_regionkey union select 1)",
		"select n_name from nation where exists (select 1 from region where r_regionkey < n_regionkey group by r_name)",
	} {
		q := bindQuery(t, c)
		p, err := opt.Optimize(q.Plan)
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if err := plan.ValidatePlan(p); err != nil {
			t.Errorf("%s: %v", c, err)
		}
		applies := 0
		plan.WalkPlanDeep(p, func(n plan.Plan) {
			if _, ok := n.(*plan.ApplyNode); ok {
				applies++
			}
		})
		if applies != 1 {
			t.Errorf("%s: %d apply nodes, want 1:\n%s", c, applies, opt.ExplainPlan(p, opt.ExplainOptions{}))
		}
	}
}

// TestManyRelations covers the greedy (11..32 relations) and as-written
// (more) join orders: valid plans, no cross product on a connected chain,
// also when the FROM list names the chain's relations out of order (as
// SQLite's select5.test does).
func TestManyRelations(t *testing.T) {
	for _, c := range []struct {
		n        int
		scramble bool
	}{{12, false}, {12, true}, {70, false}, {70, true}} {
		n := c.n
		var from, where []string
		for i := 0; i < n; i++ {
			k := i
			if c.scramble {
				k = (i * 37) % n // a permutation: 37 is prime to 12 and 70
			}
			from = append(from, fmt.Sprintf("nation n%d", k))
			if i > 0 {
				where = append(where, fmt.Sprintf("n%d.n_nationkey = n%d.n_regionkey", i-1, i))
			}
		}
		q := bindQuery(t, "select count(*) from "+strings.Join(from, ", ")+" where "+strings.Join(where, " and "))
		p, err := opt.Optimize(q.Plan)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.ValidatePlan(p); err != nil {
			t.Fatal(err)
		}
		joins := 0
		plan.WalkPlan(p, func(x plan.Plan) bool {
			if j, ok := x.(*plan.JoinNode); ok {
				joins++
				if len(j.Equi) == 0 {
					t.Errorf("%d relations: cross product in the plan", n)
				}
			}
			return true
		})
		if joins != n-1 {
			t.Errorf("%d relations: %d joins", n, joins)
		}
	}
}

// TestMiscQueries binds and optimizes assorted everyday SQL: every plan
// must validate and keep its result columns.
func TestMiscQueries(t *testing.T) {
	for _, c := range []string{
		"select distinct n_regionkey from nation order by n_regionkey desc limit 2",
		"select count(*) from nation having count(*) > 1",
		"select n_regionkey from nation group by n_regionkey order by count(*) desc, 1",
		"select n_name, rank() over (partition by n_regionkey order by n_name) from nation order by rank() over (partition by n_regionkey order by n_name)",
		"select n_name from nation intersect select r_name from region except all select 'x'",
		"select * from (values (1, 'a'), (null, 'b')) v (a, b) where a is null or b like 'a%'",
		"select r_name, (select count(*) from nation where n_regionkey = r_regionkey) as n from region order by n desc nulls last",
		"select c_custkey from customer where c_custkey not in (select o_custkey from orders where o_totalprice > 1000) or c_acctbal < 0",
		"select * from customer c left join orders o on c.c_custkey = o.o_custkey right join nation n on c.c_nationkey = n.n_nationkey",
		"select * from customer full join orders using (c_custkey)" + "", // error: no such column in orders; skipped below
		"with a as (select 1 as x), b as (select x + 1 as y from a) select * from a, b, a a2",
		"select l_returnflag, sum(l_quantity) filter_not_supported from lineitem group by l_returnflag",
		"select cast(l_quantity as double precision) / 3, l_comment || '!' from lineitem limit 1",
		"select max(o_orderdate) - min(o_orderdate) from orders",
		"select o_orderpriority, count(*) from orders where o_orderdate between '1993-01-01' and '1993-12-31' group by 1",
		"select exists (select 1 from region) as e, 2 in (select r_regionkey from region) as i",
		"select n_name from nation where n_regionkey = any_value_not_a_function",
		"insert into region select * from region where r_regionkey > 2",
		"select s.* from supplier s where s_suppkey < 10 order by s_name limit 5 offset 2",
	} {
		stmts, err := newTestSession().bindScript(c)
		if err != nil {
			continue // errors are covered by the bind error golden file
		}
		var q *bind.QueryStmt
		switch x := stmts[0].(type) {
		case *bind.QueryStmt:
			q = x
		case *bind.InsertStmt:
			q = x.Query
		default:
			continue
		}
		if err := plan.ValidatePlan(q.Plan); err != nil {
			t.Fatalf("%s: bound: %v", c, err)
		}
		p, err := opt.Optimize(q.Plan)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if err := plan.ValidatePlan(p); err != nil {
			t.Fatalf("%s: optimized: %v\n%s", c, err, opt.ExplainPlan(p, opt.ExplainOptions{Verbose: true}))
		}
	}
}

func TestPrepare(t *testing.T) {
	src := "explain insert into region select * from region where r_regionkey in (select n_regionkey from nation)"
	st, err := sql.ParseOne(src)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := Prepare(plan.TPCHCatalog(), src, st)
	if err != nil {
		t.Fatal(err)
	}
	ins := bound.(*bind.ExplainStmt).Stmt.(*bind.InsertStmt)
	plan.WalkPlan(ins.Query.Plan, func(p plan.Plan) bool {
		for _, e := range plan.NodeExprs(p) {
			if plan.HasSubquery(e) {
				t.Fatal("Prepare left a subquery")
			}
		}
		return true
	})
	if err := plan.ValidatePlan(ins.Query.Plan); err != nil {
		t.Fatal(err)
	}
}
