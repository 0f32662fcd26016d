// Package tpch holds everything TPC-H: a generator whose .tbl output is
// byte-identical to the official dbgen (TPC-H 2.17.3), Parquet output, the 22
// query texts with their substitution parameters, and the reference answers
// with a comparator that applies the precision rules of clause 2.1.3.5.
//
// # Generator
//
// The generator is written from the TPC-H specification (clause 4.2) and
// dbgen's observable behaviour; tests compare its output with the md5 of
// every table dbgen writes at SF 0.01, 0.1 and 1 (testdata/dbgen-md5.txt).
//
//	dists.dss (embedded) ──► distributions (cumulative weights, O(1) picks)
//	stream 5 ──► text pool: 300 MiB of grammar sentences, built once per process
//	per-column Park-Miller streams ──► rows of a driver table
//	                                   (part→partsupp, orders→lineitem)
//	rows ──► batch (typed column slices) ──► .tbl text | Parquet | Arrow
//
// INVARIANT: each column has its own random stream and every row of a table
// advances each of its streams by exactly that stream's boundary (rng.go),
// so the generator can start at any row: Generate splits each table into
// chunks of driver rows and generates them on all cores; .tbl chunks are
// written in order, Parquet chunks become files DIR/<t>/<t>-NNNN.parquet.
//
// Scale: row counts are base*int(1000*SF)/1000 (dbgen's rule for SF < 1,
// equal to base*SF for integral SF); SF up to MaxSF.
//
// # Output
//
// Generate writes everything under temporary names in the target directory
// and renames it into place at the end, then records SF, format, row counts
// and files in DIR/tpch-gen.json (used by IfMissing). Parquet files use the
// low-level column writers: keys INT64, p_size/ps_availqty/l_linenumber/
// o_shippriority INT32, money and quantities DECIMAL(15,2) on INT64, dates
// DATE, strings UTF8; min/max statistics, dictionary encoding on low
// cardinality columns, snappy pages (see docs/decisions.md, D-tpch).
// WriteTbl and Records are single-threaded streaming forms for tests and
// benchmarks (Records yields Arrow record batches with decimal64 money).
//
// # Queries and answers
//
// internal/tpchq/queries/qNN.sql are the validation texts; Query substitutes clause 2.4
// parameters (DefaultParams, AnswerParams, RandomParams). answers/ holds the
// official SF 1 answers and DuckDB's SF 0.01/0.1 answers; CheckAnswer
// compares an engine's Result (canonical text, see Result) with them,
// allowing permutations of rows tied on their ORDER BY keys.
//
// Dependencies: tpch imports Arrow/Parquet and internal/nferr; it never
// imports exec, engine or cluster (registration of written tables is the
// caller's job: cmd/nicflow registers them in the catalog).
package tpch
