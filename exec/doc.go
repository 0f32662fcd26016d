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
// planner uses between nodes. See docs/architecture.md.
//
// Invariants:
//   - Types are Arrow types. decimal(p<=18, s) is arrow.Decimal64 (scaled
//     int64), wider decimals are arrow.Decimal128; money is never a float.
//   - Type dispatch happens when an operator or expression is built; hot loops
//     run over typed slices with separate paths for nulls/no-nulls and
//     selection/no-selection.
//   - Hash tables compare keys on every hash hit.
//
// Dependencies: exec imports storage (scans) and shuffle (network exchanges),
// never engine or cluster.
package exec
