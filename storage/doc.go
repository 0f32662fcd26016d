// Package storage owns the data at rest: Parquet files, the Pebble catalog of
// tables, files, row groups and statistics, loading (COPY, external tables),
// scans with projection, row-group pruning and pushed-down filters, and the
// storage service that serves such scans over Arrow Flight.
//
// Dependencies: storage imports only Arrow, Parquet, Pebble and Flight; exec
// builds on it, never the reverse.
package storage
