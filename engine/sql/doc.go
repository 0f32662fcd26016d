// Package sql is nicflow's SQL front end: a hand-written lexer and
// recursive-descent parser for a PostgreSQL-compatible dialect, the AST it
// produces, and a deparser that prints an AST back as SQL.
//
// Entry points: Parse (a script of statements separated by semicolons, each
// returned as a RawStmt with its source span), ParseOne, ParseExpr, Deparse
// and DeparseFull (every compound subexpression parenthesized), Walk, and
// Errorf/Snippet for later passes (the binder) that report problems at a
// node's position.
//
// Dialect: SELECT with WITH [RECURSIVE], DISTINCT, explicit joins (INNER,
// LEFT, RIGHT, FULL, CROSS; ON, USING or NATURAL), derived tables with column aliases, GROUP BY,
// HAVING, window functions (OVER with PARTITION BY, ORDER BY and a ROWS,
// RANGE or GROUPS frame), UNION/INTERSECT/EXCEPT [ALL], VALUES, ORDER BY with
// NULLS FIRST/LAST, LIMIT/OFFSET/FETCH FIRST; expressions with PostgreSQL's
// operator precedence, CASE, CAST and ::, [NOT] IN lists and subqueries,
// [NOT] EXISTS, scalar subqueries, [NOT] LIKE/ILIKE, [NOT] BETWEEN, IS [NOT]
// NULL/TRUE/FALSE/DISTINCT FROM, typed literals (DATE '...'), ANSI and
// PostgreSQL intervals (INTERVAL '90' DAY (3), INTERVAL '3 months'),
// EXTRACT, SUBSTRING ... FROM ... FOR, POSITION ... IN, TRIM; statements
// CREATE [OR REPLACE] VIEW, DROP VIEW/TABLE [IF EXISTS], CREATE TABLE (with
// column types or AS query), CREATE EXTERNAL TABLE ... STORED AS ...
// LOCATION, INSERT INTO, UPDATE [... FROM], DELETE [... USING] (each with
// RETURNING), COPY ... FROM ... WITH (options), EXPLAIN [ANALYZE]
// [VERBOSE], SHOW TABLES, SHOW name, DESCRIBE, SET, ANALYZE [VERBOSE]
// [table [(columns)], ...]. What it rejects on
// purpose gets its own message ("ON CONFLICT DO UPDATE is not supported
// (DO NOTHING is)").
//
// The parser reads tokens through a window (tokenWindow: lexed as it
// reaches them, the ones behind dropped), so parsing holds the AST, not a
// token per 3 bytes of the script; the script is lexed once beforehand so
// that its first lexical error comes first.
//
// Invariants:
//   - The parser never panics and never loops forever on any input (a fuzz
//     target checks it); a recovered panic would surface as a KindInternal
//     error, which the fuzz target treats as a failure.
//   - Every error is a KindQuery *nferr.Error whose message gives the line and
//     column, the offending line and a caret under the position.
//   - Nesting (parentheses, subqueries, unary operators, operator chains) is
//     bounded by maxDepth, so later recursive passes cannot exhaust the stack.
//   - Every AST node carries the position of its first token.
//   - Deparse(Parse(x)) parses back to a tree that deparses to the same text
//     (tested on every statement of testdata and by the fuzz target).
//   - Names: unquoted identifiers are folded to lower case, quoted ones kept
//     as written; keywords are recognized only when unquoted.
//
// Dependencies: internal/nferr only.
package sql
