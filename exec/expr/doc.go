// Package expr is nicflow's vectorized expressions: the Expr tree, its
// compiler (compile.go) and kernels (arith.go, cmp.go, logic.go, func.go,
// strings.go, like.go, datetime.go, cast.go, decimal.go), the typing rules
// the binder shares (types.go), and Batch, the unit of data they evaluate
// over (operators pass it as exec.Batch).
//
// The planner builds an Expr, a plain serializable tree (JSON
// on the wire), and every operator instance compiles it against its input
// schema with CompileExpr. Compiling types the tree, inserts the implicit
// numeric conversions (int32 -> int64 -> decimal -> double; decimal results
// per docs/decisions.md D8), casts a string literal compared with a date,
// number or boolean, folds constant subtrees, pushes NOT into comparisons,
// AND/OR, IN and LIKE, fuses integer range conjuncts, compiles LIKE
// patterns, and picks one kernel per node. Anything else (string <-> number
// or date, date <-> timestamp-like text) needs an explicit Cast from the
// binder. A CompiledExpr evaluates a batch at a time:
//   - Eval returns an array of length Batch.N aligned with the physical rows;
//     only the live rows (Sel) are computed, the others are unspecified and
//     never raise errors. EvalCompact returns the live rows densely.
//   - EvalFilter returns the live rows where a boolean expression is TRUE, as
//     a narrowed selection; AND narrows conjunct by conjunct, OR and CASE run
//     later operands only on undecided rows, so CASE WHEN x <> 0 THEN 1/x END
//     never divides by zero.
//   - Division by zero, overflow and invalid casts are KindQuery errors naming
//     the expression ("division by zero in (a / b)").
//
// INVARIANT: a selection is nil for "all rows" and non-nil (possibly empty)
// otherwise; expression code never returns a nil selection for "no row".
//
// Dependencies: expr imports arrow and internal/nferr only; exec's
// operators import it, never the reverse.
package expr
