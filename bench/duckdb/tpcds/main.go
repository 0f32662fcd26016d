// Command tpcds compares nicflow with DuckDB on TPC-DS, on the same
// Parquet files.
//
//	cd bench/duckdb
//	CGO_ENABLED=1 go run ./tpcds gen --sf 1 --dir ../../data/tpcds1 --nicflow ../../bin/nicflow
//	CGO_ENABLED=1 go run ./tpcds run --dir ../../data/tpcds1 --nicflow ../../bin/nicflow --runs 3 --verify
//
// gen makes the data with dsdgen (the official TPC-DS generator, which
// DuckDB's tpcds extension embeds; see ext.go for how the extension is
// loaded without a download) and loads it into a nicflow database; run
// times the 99 queries in both engines, cold (a fresh process per query
// and run, as a CLI user sees it) or warm (--warm: both engines in this
// process), prints the fastest run of each, their ratio and, with
// --verify, whether nicflow's rows equal DuckDB's. A query nicflow cannot
// answer is listed with its error and left out of the totals.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet("tpcds "+cmd, flag.ExitOnError)
	dir := fs.String("dir", "", "nicflow database directory (required)")
	nicflow := fs.String("nicflow", "nicflow", "the nicflow binary")
	threads := fs.Int("threads", runtime.NumCPU(), "threads for both engines")
	cacheDir, _ := os.UserCacheDir()
	cache := fs.String("ext-cache", filepath.Join(cacheDir, "nicflow-bench"), "where the linked tpcds extension is kept")
	sf := fs.Float64("sf", 1, "gen: scale factor")
	runs := fs.Int("runs", 3, "run: runs per query and engine; the fastest is reported")
	queries := fs.String("queries", "1-99", "run: queries, e.g. 1-99 or 3,7,42")
	warm := fs.Bool("warm", false, "run: both engines in this process (default: a fresh process per run)")
	verify := fs.Bool("verify", false, "run: compare nicflow's rows with DuckDB's")
	file := fs.String("f", "", "internal (duckdb-child): the query file")
	fs.Parse(os.Args[2:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "tpcds: --dir is required")
		os.Exit(2)
	}
	var err error
	switch cmd {
	case "gen":
		err = gen(*dir, *nicflow, *cache, *sf, *threads)
	case "run":
		err = run(*dir, *nicflow, *queries, runOptions{runs: *runs, threads: *threads, warm: *warm, verify: *verify})
	case "duckdb-child":
		err = duckdbChild(*dir, *file, *threads)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpcds:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tpcds gen --sf SF --dir DIR --nicflow BIN | tpcds run --dir DIR --nicflow BIN [--runs N] [--warm] [--verify] [--queries LIST]")
	os.Exit(2)
}
