// Package bench holds nicflow's benchmark drivers: code that runs a workload,
// measures it and prints figures (text tables and CSV). The nicflow bench
// subcommands and `make bench` use it. The DuckDB comparison, which needs cgo,
// is a separate Go module in bench/duckdb and is never imported from here.
package bench
