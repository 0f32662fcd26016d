// Package phys lowers an optimized logical plan onto exec operators and
// runs it in one process.
//
//	PlanPhysical (plan.go)  optimized plan.Plan -> *PhysPlan (plain data,
//	                        JSON-serializable: exec specs per node)
//	Build (build.go)        *PhysPlan -> exec operators (Executable)
//	ExplainPhysical         *PhysPlan [+ EXPLAIN ANALYZE OpStats] -> text
//
// plan.go holds the planner's core: the dispatch on the logical node kind,
// layouts, column pruning and exchanges. Each logical operator is lowered
// in its own file: scan.go (table scans and their storage predicates),
// lower_project.go (filter, project, unnest, values, shared scans),
// aggregate.go, join.go (hash, nested-loop and single joins), sort.go
// (sort, top-N, limit, distinct), setop.go (UNION/INTERSECT/EXCEPT) and
// window.go; apply.go and recursive.go lower correlated and recursive
// subqueries. arraykeys.go lets arrays be grouping, DISTINCT, set
// operation and join keys by their text (exec hashes no list column);
// aggregate.go's coarserKeys repartitions the distinct half of
// count(DISTINCT v) GROUP BY g on g alone when g has many groups.
//
// A PhysNode has Streams parallel output streams (phys.go lists the rule
// per operator kind); exchanges (gather, hash repartition, broadcast,
// ordered merge) change the count, and the distributed planner cuts plans
// at them. expr.go lowers expressions to exec.Expr specs by column
// position; cse.go computes shared subexpressions once; ops.go holds the
// operators only the engine builds (morsel scans, shared materializations,
// single-row checks) and the EXPLAIN ANALYZE counters (OpStats).
//
// rules.go names the optional choices of lowering (physical rules: SET
// disabled_rules turns them off, EXPLAIN VERBOSE reports their uses).
// segment.go decides which aggregates are segmented (grouped on a key
// stored in order: no repartition, groups emitted a row group at a time).
// keyfilter.go decides which hash join publishes its build keys to which
// scan below its probe side (join key filters, wired by Build for local
// scans; EXPLAIN shows them as "join filters=[...]").
//
// Invariants:
//   - A physical plan's root has one stream; every node with several
//     streams is consumed by goroutines (exchange producers or a shared
//     join build), and only single-stream paths keep a sort's order.
//   - A physical plan carries no logical types to patch: expression types
//     come from plan, which uses exec's typing functions.
//
// Dependencies: phys imports plan, opt (row estimates for build sides and
// parallelism), exec and storage; never bind or dist.
package phys
