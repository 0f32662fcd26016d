// Package opt rewrites logical plans: the rules, the driver that runs
// them, and the cost model (cardinality estimates) the cost-based rules and
// the physical planner read.
//
// Rules are values (Rule: name, shapes, Required, WholeQuery, function),
// each in its own file with a golden test under engine/testdata/rules, run
// in the order of Rules by the driver in opt.go: inline_shared
// (inline.go), decorrelate, fold, outer_join (outerjoin.go), pushdown,
// join_order (joinorder.go, with build sides), prune, distinct_agg
// (distinct.go), topn, the cost-based semi_lift and reduce_grouped
// (semi.go), and eager_agg (eager.go). Around the shared subplans the
// driver adds two steps: before they are optimized, a def whose every
// reader filters gets the OR of those filters (filterShared, pushdown.go);
// at the end, each def keeps only the columns its readers use
// (pruneShared, prune.go). A session disables any rule but decorrelate with SET
// disabled_rules (every .slt file and the TPC-H answers are tested with
// each disabled in turn); OptimizeRules with trace reports what each did
// (plan.RuleRun), shown by EXPLAIN VERBOSE. docs/contributing.md walks
// through adding one.
//
// card.go estimates rows, distinct counts and selectivities from table
// statistics (Estimator); explain.go prints a logical plan with those
// estimates (ExplainPlan).
//
// Invariants:
//   - Optimize removes every SubqueryExpr and keeps the root's output
//     columns (IDs and order).
//   - Optimization preserves results: a reference row-at-a-time evaluator
//     (engine/evaltest_test.go) runs unoptimized and optimized plans on
//     random tables with NULLs, over fixed queries and as a fuzz target.
//   - A shared subplan's plan is optimized once, separately.
//
// Dependencies: opt imports plan only; never bind, phys or dist.
package opt
