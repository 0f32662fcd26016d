// Package engine takes SQL text to results: it is the session facade over
// the planner's phases, each its own package with one-way dependencies.
//
//	engine/sql   Parse: script -> []sql.RawStmt (ASTs with positions)
//	engine/plan  the logical IR: plan nodes, typed expressions, typing,
//	             constant evaluation, the Catalog interface
//	engine/bind  Bind: AST + Catalog -> Statement (query plans, DDL, ...)
//	engine/opt   rules as values, the driver, the cost model; ExplainPlan
//	engine/phys  PlanPhysical, Build, ExplainPhysical: exec operators
//	engine/dist  PlanDistributed, Fragments, RunFragment: stages and tasks
//
//	sql <- plan <- bind          plan <- opt <- phys <- dist
//	engine imports them all; none imports engine (internal/archtest).
//
// The path of one embedded query reads top to bottom:
//
//	Session.Execute / Query (session.go)  parse the script; per statement:
//	  checkPlanSize                       refuse a statement too big to plan
//	  Prepare (prepare.go)                bind.Bind, then opt.OptimizeRules
//	                                      (without SET disabled_rules)
//	  Session.runStmt                     DDL and session statements run
//	                                      here; a query goes on:
//	  phys.PlanPhysical                   optimized plan -> *phys.PhysPlan
//	  phys.Build + Executable.Open        exec operators; Result streams
//	                                      the root's batches
//
// A server's connections each get a Session of one SharedDB (shared.go):
// the database opened once, the session made without I/O, its settings
// its own. Every statement holds a storage read (DB.BeginRead) until its
// rows are closed, so that another session's DROP or replace keeps the
// files it may still scan.
//
// A coordinator's statement takes Session.PrepareDistributed
// (dist_session.go): the same Prepare and PlanPhysical, then
// dist.PlanDistributed cuts stages and the cluster package ships
// Fragments. StorageCatalog (catalog_storage.go) adapts the storage
// catalog to plan.Catalog. ValueFormatter (run_format.go) is the
// canonical text of values (CLI output, tpch.CheckAnswer, SQL test files
// under testdata/sqltest). run_alloc.go sizes the GC soft limit to the
// memory budget.
//
// Tests of every phase live here, next to their data (testdata: rule
// goldens, plan goldens, .slt files, bind errors): they bind through a test
// session and check each phase's output, and the reference evaluator
// (evaltest_test.go) checks the optimizer against unoptimized plans.
//
// Invariants:
//   - Parse, Bind and Optimize never panic on any input; a recovered panic
//     becomes a KindInternal error, which the fuzz targets (FuzzParse,
//     FuzzBind) treat as failures. User mistakes are KindQuery errors with
//     line, column and a caret.
//   - Result batches are borrowed until the next Result.Next or Close.
//   - A statement leaves the database as before or as after (storage
//     commits atomically).
//
// Dependencies: engine imports its phase packages, exec, storage and
// shuffle; it never imports cluster or cmd.
package engine
