// Package pgarray reads PostgreSQL's text form of one-dimensional arrays
// ({1,2,NULL}, {"a b","c\"d"}), for the engine's casts (exec/expr) and
// the storage layer's text loads (COPY FROM CSV into array columns) alike:
// storage may not import exec. Invariant: Parse never panics, and when ok
// its two results have one entry per element.
package pgarray
