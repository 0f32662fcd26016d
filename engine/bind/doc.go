// Package bind resolves a parsed statement against a catalog: names,
// types, scopes, aggregates and windows, subqueries as SubqueryExpr, and
// the statement kinds (query, DDL, INSERT, UPDATE, DELETE, COPY, EXPLAIN,
// SET, ANALYZE; constraints.go and dml.go).
//
//	sql.Parse (engine/sql)  script -> []sql.RawStmt (ASTs with positions)
//	Bind (bind.go)          AST + plan.Catalog -> Statement
//
// query.go binds FROM, joins, set operations and CTEs; select.go the
// SELECT list, GROUP BY, HAVING, ORDER BY and windows; expr.go scalar
// expressions and function calls (the `switch name` where a function's
// arity and types are checked).
//
// Invariants:
//   - Bind never panics on any input; a recovered panic becomes a
//     KindInternal error, which FuzzBind treats as a failure. User mistakes
//     are KindQuery errors with line, column and a caret.
//   - A bound query's plan still holds SubqueryExprs and joins marked
//     Lateral (a LATERAL derived table or a function in FROM reading the
//     items before it); the optimizer's decorrelate rule removes both.
//
// Dependencies: bind imports plan, engine/sql and exec/expr (the typing
// authority and the functions' fields); it knows nothing of the optimizer
// or of physical planning.
package bind
