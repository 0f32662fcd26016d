// Package engine takes SQL text to results: the parser, the binder, the
// logical plan and its optimizer rules, physical planning onto exec
// operators, distributed planning into stages at exchanges, and EXPLAIN.
//
// Dependencies: engine imports exec, storage and shuffle; it never imports
// cluster or cmd.
package engine
