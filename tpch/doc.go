// Package tpch holds everything TPC-H: a generator whose .tbl output is
// byte-identical to the official dbgen (TPC-H 2.17.3), Parquet output, the 22
// query texts with their substitution parameters, and the reference answers
// with a comparator that applies the precision rules of clause 2.1.3.5.
//
// Dependencies: tpch imports Arrow/Parquet and storage (to register the
// tables it writes); it never imports exec, engine or cluster.
package tpch
