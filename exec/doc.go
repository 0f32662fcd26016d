// Package exec holds nicflow's vectorized operators and expressions: the code
// every query runs through, on one node or as a fragment of a distributed
// plan.
//
// Data flows as Batches (Arrow arrays plus an optional selection vector)
// pulled through Operators; the rules every operator follows (batch lifetime,
// end of stream, errors, cancellation, memory accounting, Close) are written
// once, in the comment of the Operator interface.
//
// Parallelism inside a node is exchange-based: the planner instantiates a
// pipeline once per core and joins pipelines with local exchange operators
// (gather, hash repartition, ordered merge), the same shapes the distributed
// planner uses between nodes. See docs/architecture.md and docs/decisions.md
// (D12, D13).
//
// Stateful operators (hash*.go, agg*.go, join.go, nljoin.go, sort.go,
// topn.go, distinct.go, window.go, exchange*.go, parallel.go, compact.go,
// netexchange.go: NetSend and NetReceiver, the ends of a network exchange
// between the stages of a distributed plan, over package shuffle)
// take column indexes (the planner projects expressions first) and plain
// spec structs (HashAggSpec, HashJoinSpec, NestedLoopJoinSpec, SortSpec,
// TopNSpec, DistinctSpec, WindowSpec, ExchangeSpec) that ship to workers as
// data:
//   - Rows an operator keeps are copied into typed Go columns (colVec,
//     rowStore in compact.go) and charged to an Account named after the
//     operator; output batches are gathered from them into Arrow arrays
//     allocated with env.Alloc. Arrays (Arrow lists) are payload only
//     (compact_list.go: listVec), never keys.
//   - Keys go through one hash table design (hashtable.go): keys packed
//     into one or two 64-bit words when they fit (ints, dates, decimals,
//     short strings), byte strings otherwise; open addressing, keys compared
//     on every hash hit; dense group ids in first-appearance order. A
//     join's packed-key table keeps a one-hash Bloom filter of its keys
//     (counted in the join's budget), so most probes for absent keys end
//     at one bit test before the table is read.
//   - A hash join may also publish its build keys to scans below its
//     probe side (join_keyfilter.go, SetKeyFilters): only joins whose
//     unmatched probe rows affect nothing (HashJoinSpec.ProbeDropsUnmatched),
//     only once the build is complete in memory (a spilled build disables
//     them); the join still tests every row it receives.
//   - Large fresh slices that are read before they are written (hash
//     slots, aggregate state, doubling build buffers) are prefaulted
//     (prefault.go), so that no zero-page copy-on-write faults hit the hot
//     loops.
//   - HashPartitioner (hash.go) is the only hash partitioning function:
//     local repartitions and the network shuffle call it, so rows of one
//     key meet wherever they are routed. RangePartitioner (rangepart.go)
//     routes a range exchange by the bounds of a range-split scan
//     (engine/phys RangePart: part i from its lowest value up to the next
//     part's), so a row meets the scan task reading its key.
//   - Aggregates split into Partial and Final phases (SplitAgg) whose states
//     are ordinary Arrow columns; sums of decimals are exact 128-bit.
//   - Join output columns are always the left input's then the right
//     input's, whichever side builds the hash table.
//   - Sorts are stable; ORDER BY defaults follow PostgreSQL (NULLS LAST for
//     ASC, FIRST for DESC, NaN above all numbers).
//
// How a planner assembles a parallel plan on one node (P = Env.Parallelism):
//   - scan-filter-project: P pipelines, each over a share of the row groups.
//   - aggregate: NewParallelHashAgg(pipelines, spec, AggSplitPartial) for
//     few groups (P partials, a gather, one final), AggSplitRepartition for
//     many (a hash repartition by group key into P aggregates, a gather).
//   - join: NewParallelHashJoin(probePipelines, buildPipelines, spec) shares
//     one hash table among P probers (no repartition of the probe side);
//     for two large inputs, NewHashRepartition both on the join keys into P
//     partitions and run P independent HashJoins.
//   - order by: P Sorts (or TopNs) then NewOrderedMerge (then a TopN for
//     LIMIT); window: NewHashRepartition on the PARTITION BY keys into P
//     Windows, then a gather (or a merge when ORDER BY follows).
//   - the root: NewGather over the last stage's pipelines.
//
// Spilling (spill.go, agg_spill.go, join_spill.go, sort_spill.go;
// docs/decisions.md D19): with Env.Spill set, HashAgg, HashJoin, Distinct,
// Sort and Window charge spillable accounts that fail at 3/4 of the
// budget. On that failure HashAgg, HashJoin and Distinct write partitions
// of their input to checksummed Arrow IPC files and process the
// partitions one level down (recursively, other hash bits per level);
// Sort and Window (extSort) write sorted runs and merge them with a
// bounded fan-in, and Window then evaluates whole partitions a chunk at a
// time. A build shared by several probers whose join emits build rows
// at the end hands every prober's partitions to the last prober, which
// joins them all (join_spill.go). Partial aggregates flush early instead.
// TopN is bounded by its
// limit; a global aggregate holds one group; NOT IN joins, one window
// partition larger than the budget and exchange queues do not spill.
//
// Memory budgets (memory.go): a query's Budget, under a node's when it runs
// on a worker; the default, DefaultMemoryLimit, is 60% of what the process
// may use (memory_system.go: the smallest cgroup v1 or v2 limit along the
// process's own cgroup path, else the physical memory; read through an
// fs.FS so that tests use fake trees).
//
// Unnest (unnest.go) expands arrays, one output row per position of a
// row's longest array (set-returning functions over arrays); array_agg
// (agg_array.go) is the aggregate back. An aggregate's Filter column
// (AggSpec.Filter: FILTER (WHERE ...) of array_agg, which keeps NULLs and
// so cannot take the filter as a CASE argument) drops the rows where it is
// not TRUE before the aggregate, and DISTINCT, see them; the partial phase
// applies it, the final one has none.
//
// The stateful operators (joins, aggregate, sort, top-N, window, ordered
// merge) share the contract's lifecycle through opState (lifecycle.go):
// the sticky error, Close once, and the output arrays released before the
// next batch and at Close; closeChildren closes every child and keeps the
// first error.
//
// The Operator contract (operator.go) is checked, not only written: under
// go test, engine's builder wraps every operator it makes in Checked
// (checked.go: Open once, batches with live rows matching the schema,
// ascending selections, the end repeated, no Next after Close, no two
// calls at once), and so does the operator harness (harness_test.go).
// Expression typing rules live in exec/expr/types.go, the one authority
// the binder shares.
//
// Invariants:
//   - Types are Arrow types. decimal(p<=18, s) is arrow.Decimal64 (scaled
//     int64), wider decimals are arrow.Decimal128; money is never a float.
//   - Type dispatch happens when an operator or expression is built; hot loops
//     run over typed slices with separate paths for nulls/no-nulls and
//     selection/no-selection.
//   - Hash tables compare keys on every hash hit.
//
// Expressions are their own package, exec/expr (the Expr tree, its
// compiler and kernels, casts, decimals, LIKE, strings, dates, and the
// typing rules); operators compile the expressions they are given with
// expr.CompileExpr. Batch is defined there (the kernels evaluate over it)
// and is exec.Batch here.
//
// Dependencies: exec imports exec/expr, storage (scans) and shuffle
// (network exchanges), never engine or cluster; exec/expr imports neither
// exec nor anything above it.
package exec
