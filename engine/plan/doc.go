// Package plan is the logical IR every planner phase shares: plan nodes,
// typed expressions, the typing rules, constant evaluation, and the
// catalog interface the binder and the optimizer read.
//
// The logical plan (plan.go) is a tree of Plan nodes (Scan, Filter,
// Project, Aggregate, Join of kinds inner/left/right/full/semi/anti/mark/
// single, Sort, Limit, TopN, SetOp, Distinct, Window, Values, SharedScan,
// RecursiveNode and its WorkScans).
// Every node lists its output columns; expressions (expr.go) are typed
// trees that refer to input columns by ColumnID, never by position, so
// rules can reorder and prune freely and a physical planner maps an ID to a
// position once per node. Function names are exec's Fn* names.
//
// Typing (types.go) defers to the typing authority of exec/expr
// (expr.ArithType, expr.CommonType, expr.DecimalResult): the binder types
// an expression with the same function exec uses to run it, so lowering
// never patches types.
// Constants (const.go, eval.go) are parsed, cast and evaluated here, for
// the binder (literals, casts) and the optimizer's folding alike.
//
// Catalog (catalog.go) is the binder's view of the database: tables with
// Arrow schemas and statistics, and views as SQL text. MemCatalog backs
// tests (TPCHCatalog: the TPC-H schema with SF1 statistics) and a session's
// views (OverlayCatalog); the engine adapts the storage catalog to it.
// RuleRun (rule_run.go) is what one optimizer rule did, carried by a bound
// query to EXPLAIN VERBOSE.
//
// Invariants:
//   - ColumnIDs are unique within a statement; a Project output that is a
//     bare column reference keeps the input's ID; so does a plain group key.
//   - Exprs and Plans are immutable once built: rules build new trees.
//   - ValidatePlan checks references and types.
//   - A SharedDef (a view or CTE read twice, TPC-H Q15) is computed once.
//   - A null-aware anti or mark join's Equi[0] is its IN comparison.
//
// Dependencies: plan imports exec/expr (types and function names); every other
// planner phase imports plan, and plan imports none of them.
package plan
