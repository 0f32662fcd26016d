// Package engine takes SQL text to results: the parser, the binder, the
// logical plan and its optimizer rules, physical planning onto exec
// operators, distributed planning into stages at exchanges, and EXPLAIN.
//
// # From SQL to a logical plan
//
//	sql.Parse (engine/sql)  script -> []sql.RawStmt (ASTs with positions)
//	Bind (bind*.go)         AST + Catalog -> Statement (*QueryStmt, DDL, ...)
//	Optimize (opt*.go)      *QueryStmt.Plan -> optimized Plan
//	ExplainPlan             Plan -> indented text with row estimates
//
// Prepare does Bind and Optimize for one parsed statement (the call a
// session makes); ValidatePlan checks a plan's consistency.
//
// Catalog (catalog.go) is the binder's view of the database: tables with
// Arrow schemas and statistics, and views as SQL text. MemCatalog backs
// tests (TPCHCatalog: the TPC-H schema with SF1 statistics) and a session's
// views (OverlayCatalog); the storage catalog implements it for real data.
//
// The logical plan (logical_plan.go) is a tree of Plan nodes (Scan, Filter,
// Project, Aggregate, Join of kinds inner/left/right/full/semi/anti/mark/
// single, Sort, Limit, TopN, SetOp, Distinct, Window, Values, SharedScan).
// Every node lists its output columns; expressions (logical_expr.go) are
// typed trees that refer to input columns by ColumnID, never by position,
// so rules can reorder and prune freely and a physical planner maps an ID
// to a position once per node. Function names are exec's Fn* names.
// Typing rules (decimal precision and scale, sum/avg result types,
// implicit casts) are listed in logical_types.go and docs/decisions.md.
//
// Optimizer rules are values (Rule: name, shapes, Required, WholeQuery,
// function), each in its own file with a golden test under testdata/rules,
// run in the order of Rules by the driver in opt.go: inline_shared
// (opt_inline.go), decorrelate, fold, outer_join (opt_outerjoin.go),
// pushdown, join_order (with build sides), prune, distinct_agg, topn, and
// the cost-based semi_lift and reduce_grouped (opt_semi.go; they were the
// first step of physical planning, which no longer calls the optimizer). A
// session disables any but decorrelate with SET disabled_rules (every .slt
// file and the TPC-H answers are tested with each disabled in turn);
// EXPLAIN VERBOSE shows what each did (RuleRun). docs/contributing.md walks
// through adding one. Statistics-based estimates live in opt_card.go.
//
// # From a logical plan to results
//
//	PlanPhysical (phys_plan.go)  optimized Plan -> *PhysPlan (plain data,
//	                             JSON-serializable: exec specs per node)
//	Build (phys_build.go)        *PhysPlan -> exec operators (Executable)
//	ExplainPhysical              *PhysPlan [+ EXPLAIN ANALYZE stats] -> text
//	Open / Session (session.go)  a database directory, scripts, results
//
// A PhysNode has Streams parallel output streams (phys.go lists the rule
// per operator kind); exchanges (gather, hash repartition, broadcast,
// ordered merge) change the count, and the distributed planner cuts plans
// at them. Before lowering, phys_semi.go places semi/anti joins and
// reduces grouped subqueries by estimated cost; phys_cse.go computes
// shared subexpressions once. StorageCatalog (catalog_storage.go) adapts
// the storage catalog to Catalog. ValueFormatter (run_format.go) is the
// canonical text of values (CLI output, tpch.CheckAnswer, SQL test files
// under testdata/sqltest).
//
// # Distributed plans
//
//	PlanDistributed (dist.go)     *PhysPlan -> *DistPlan: stages cut at
//	                              exchanges (network gather, hash repartition
//	                              with partial/final aggregates, broadcast or
//	                              replicated build sides, repartitioned joins,
//	                              scans split by key range on clustered
//	                              columns for joins and aggregates in place;
//	                              one worker: the embedded plan, one task)
//	DistPlan.Fragments            one Fragment per task (JSON, shipped)
//	RunFragment (dist_exec.go)    runs a fragment: scans from a Source,
//	                              PhysRemote from shuffle receivers, output to
//	                              shuffle senders or the coordinator
//	Session.PrepareDistributed    a coordinator's statement -> DistQuery
//	RunDistributedLocal           a distributed plan in one process (tests)
//	ExplainDistributed            stages [+ EXPLAIN ANALYZE task reports]
//
// INVARIANT: a node the embedded plan ran as one stream runs in one task
// with one stream in a distributed plan (filters, projections and hash
// joins excepted: their rows do not depend on how the input is split, and
// the first node above that needs one stream gathers); a shared subplan
// sits in exactly one stage (Stage.Shared), the one-task stage holding all
// its readers, or is planned again at each reader; a hash exchange across
// the network has Workers x Parallelism receivers and uses
// exec.HashPartitioner over all of them; two sides of a co-located join
// are distributed on their join keys over the same receivers, or split by
// value range on them at the same bounds (RangePart.Same), every part of a
// range split read by exactly one task with the part's bounds in its scan
// filter.
//
// Invariants:
//   - Bind, Optimize and Parse never panic on any input; a recovered panic
//     becomes a KindInternal error, which the fuzz targets (FuzzParse,
//     FuzzBind) treat as failures. User mistakes are KindQuery errors with
//     line, column and a caret.
//   - ColumnIDs are unique within a statement; a Project output that is a
//     bare column reference keeps the input's ID; so does a plain group key.
//   - Optimize removes every SubqueryExpr and keeps the root's output
//     columns (IDs and order). ValidatePlan checks references and types.
//   - A SharedDef (a view or CTE read twice, TPC-H Q15) is computed once;
//     its plan is optimized once, separately.
//   - A null-aware anti or mark join's Equi[0] is its IN comparison.
//   - A physical plan's root has one stream; every node with several
//     streams is consumed by goroutines (exchange producers or a shared
//     join build), and only single-stream paths keep a sort's order.
//   - Result batches are borrowed until the next Result.Next or Close.
//   - Optimization preserves results: a reference row-at-a-time evaluator
//     (evaltest_test.go) runs unoptimized and optimized plans on random
//     tables with NULLs, over fixed queries and as a fuzz target.
//
// Dependencies: engine imports exec, storage and shuffle; it never imports
// cluster or cmd.
package engine
