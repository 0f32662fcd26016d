// Command cold runs the 22 TPC-H queries cold: each run of each query is a
// fresh process, as a CLI user running one query sees it. nicflow runs as
// `nicflow sql --dir DIR -f qNN.sql`; DuckDB runs in a fresh process of
// this program (its -duckdb-child mode: views over read_parquet of the
// same files, then the query). It prints, per query, the minimum wall time
// of --runs runs of each engine, their ratio, and the peak RSS, user+system
// CPU and minor page faults of the fastest run (from the child's rusage).
//
//	cd bench/duckdb && CGO_ENABLED=1 go run ./cold --dir ../../data/sf1 --nicflow ../../bin/nicflow --runs 3
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/nicflow/nicflow/bench/duckdb/internal/benchq"
	"github.com/nicflow/nicflow/tpch"
)

func main() {
	dir := flag.String("dir", "", "nicflow database directory written by `nicflow tpch gen` (required)")
	nicflow := flag.String("nicflow", "nicflow", "the nicflow binary to run")
	runs := flag.Int("runs", 3, "fresh processes per query and engine; the fastest is reported")
	threads := flag.Int("threads", runtime.NumCPU(), "threads for both engines")
	queries := flag.String("queries", "1-22", "queries to run: 1-22, or a list like 1,3,6")
	engines := flag.String("engines", "nicflow,duckdb", "engines to run: nicflow, duckdb or both")
	format := flag.String("format", "table", "output: table or csv")
	child := flag.Bool("duckdb-child", false, "internal: run the script of -f in DuckDB in this process and exit")
	file := flag.String("f", "", "with -duckdb-child: the SQL script")
	flag.Parse()
	if *child {
		if err := duckdbChild(*dir, *file, *threads); err != nil {
			fmt.Fprintln(os.Stderr, "cold: duckdb:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*dir, *nicflow, *queries, *engines, *format, *runs, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "cold:", err)
		os.Exit(1)
	}
}

func run(dir, nicflow, qlist, engines, format string, runs, threads int) error {
	qs, err := benchq.Args(dir, qlist, runs, threads)
	if err != nil {
		return err
	}
	doN, doD := strings.Contains(engines, "nicflow"), strings.Contains(engines, "duckdb")
	if !doN && !doD {
		return fmt.Errorf("--engines: nicflow, duckdb or both")
	}
	sf, err := tpch.GeneratedSF(dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "nicflow-cold-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if format == "csv" {
		fmt.Println("query,nicflow_ms,duckdb_ms,ratio,nicflow_rss_mib,duckdb_rss_mib,nicflow_cpu_ms,duckdb_cpu_ms,nicflow_sys_ms,nicflow_minflt")
	} else {
		fmt.Printf("TPC-H SF %g cold (a fresh process per run), %d threads, min of %d runs\n", sf, threads, runs)
		fmt.Printf("%-6s %10s %10s %6s %9s %9s %9s %9s %9s %9s\n", "query", "nicflow_ms", "duckdb_ms", "ratio", "nf_rssMiB", "dk_rssMiB", "nf_cpu_ms", "dk_cpu_ms", "nf_sys_ms", "nf_minflt")
	}
	var totN, totD time.Duration
	var peakN, peakD int64
	worst := 0.0
	for _, q := range qs {
		text, err := tpch.Query(q, tpch.DefaultParams(q, sf))
		if err != nil {
			return err
		}
		nf := filepath.Join(tmp, fmt.Sprintf("q%02d.sql", q))
		df := filepath.Join(tmp, fmt.Sprintf("q%02d.duckdb.sql", q))
		if err := os.WriteFile(nf, []byte(text), 0o644); err != nil {
			return err
		}
		// DuckDB does not take the ANSI interval precision of Q1.
		if err := os.WriteFile(df, []byte(intervalPrecision.ReplaceAllString(text, "$1")), 0o644); err != nil {
			return err
		}
		var mn, md benchq.Measure
		for r := 0; r < runs; r++ {
			if doN {
				m, err := benchq.TimeProc(nil, nicflow, "sql", "--dir", dir, "--parallel", strconv.Itoa(threads), "--format", "csv", "-f", nf)
				if err != nil {
					return fmt.Errorf("nicflow Q%d: %w", q, err)
				}
				mn = benchq.Best(mn, m)
			}
			if doD {
				m, err := benchq.TimeProc(nil, self, "-duckdb-child", "-dir", dir, "-threads", strconv.Itoa(threads), "-f", df)
				if err != nil {
					return fmt.Errorf("duckdb Q%d: %w", q, err)
				}
				md = benchq.Best(md, m)
			}
		}
		totN += mn.Wall
		totD += md.Wall
		peakN, peakD = max(peakN, mn.RSSKiB), max(peakD, md.RSSKiB)
		ratio := 0.0
		if mn.Ran && md.Ran {
			ratio = float64(mn.Wall) / float64(md.Wall)
			worst = max(worst, ratio)
		}
		if format == "csv" {
			fmt.Printf("Q%d,%s,%s,%.2f,%d,%d,%s,%s,%s,%d\n", q, benchq.Ms(mn.Wall), benchq.Ms(md.Wall), ratio, mn.RSSKiB>>10, md.RSSKiB>>10, benchq.Ms(mn.CPU), benchq.Ms(md.CPU), benchq.Ms(mn.Sys), mn.MinFlt)
		} else {
			fmt.Printf("Q%-5d %10s %10s %6.2f %9d %9d %9s %9s %9s %9d\n", q, benchq.Ms(mn.Wall), benchq.Ms(md.Wall), ratio, mn.RSSKiB>>10, md.RSSKiB>>10, benchq.Ms(mn.CPU), benchq.Ms(md.CPU), benchq.Ms(mn.Sys), mn.MinFlt)
		}
	}
	ratio := 0.0
	if totD > 0 {
		ratio = float64(totN) / float64(totD)
	}
	if format == "csv" {
		fmt.Printf("total,%s,%s,%.2f,%d,%d,,,,\n", benchq.Ms(totN), benchq.Ms(totD), ratio, peakN>>10, peakD>>10)
	} else {
		fmt.Printf("%-6s %10s %10s %6.2f %9d %9d  (worst query %.2fx; RSS: the peak over queries)\n", "total", benchq.Ms(totN), benchq.Ms(totD), ratio, peakN>>10, peakD>>10, worst)
	}
	return nil
}

// duckdbChild runs a script in DuckDB over views on the Parquet files and
// reads every row of its selects.
func duckdbChild(dir, file string, threads int) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		return err
	}
	for _, t := range tpch.AllTables() {
		glob := filepath.Join(dir, t.String(), "*.parquet")
		stmt := fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet('%s')", t.String(), strings.ReplaceAll(glob, "'", "''"))
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for _, stmt := range strings.Split(string(text), ";") {
		s := strings.TrimSpace(benchq.StripComments(stmt))
		if s == "" {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(s), "select") {
			if _, err := db.Exec(stmt); err != nil {
				return err
			}
			continue
		}
		rows, err := db.Query(stmt)
		if err != nil {
			return err
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			n++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		fmt.Println(n, "rows")
	}
	return nil
}

var intervalPrecision = regexp.MustCompile(`(?i)(interval\s+'[^']*'\s+(?:day|month|year))\s*\(\s*\d+\s*\)`)
