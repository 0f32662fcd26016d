// Command duckdb-bench runs the 22 TPC-H queries on the same Parquet data in
// nicflow (embedded, in this process) and in DuckDB (through cgo), and
// prints per-query times and their ratio.
//
// It is a separate Go module because DuckDB needs cgo: the main nicflow
// module stays pure Go and never imports this one.
//
//	cd bench/duckdb && CGO_ENABLED=1 go run . --dir ../../data/sf1 --runs 3
//
// DuckDB reads the tables through views over read_parquet (the files nicflow
// wrote, DIR/<table>/*.parquet), or from its own in-memory tables with
// --duckdb-memory. Both engines use --threads threads.
package main

import (
	"context"
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

	"github.com/nicflow/nicflow/bench/duckdb/internal/benchq"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/tpch"
)

func main() {
	dir := flag.String("dir", "", "nicflow database directory written by `nicflow tpch gen` (required)")
	runs := flag.Int("runs", 3, "runs per query; the minimum is reported")
	threads := flag.Int("threads", runtime.NumCPU(), "threads for both engines")
	queries := flag.String("queries", "1-22", "queries to run: 1-22, or a list like 1,3,6")
	memTables := flag.Bool("duckdb-memory", false, "load the tables into DuckDB's memory first (instead of views over Parquet)")
	format := flag.String("format", "table", "output: table or csv")
	memLimit := flag.String("memory-limit", "", "memory limit of both engines, e.g. 1GiB (nicflow's per-query budget, spilling beyond it; DuckDB's memory_limit); default: each engine's own")
	verify := flag.Bool("verify", false, "compare nicflow's answers with DuckDB's (ORDER BY order, ties in any order, numbers within 1e-6 relative or 0.01)")
	flag.Parse()
	o := options{runs: *runs, threads: *threads, memTables: *memTables, format: *format, verify: *verify}
	if *memLimit != "" {
		n, err := exec.ParseBytes(*memLimit)
		if err != nil {
			fmt.Fprintln(os.Stderr, "duckdb-bench: --memory-limit:", err)
			os.Exit(2)
		}
		o.memLimit = n
	}
	if err := run(*dir, *queries, o); err != nil {
		fmt.Fprintln(os.Stderr, "duckdb-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	runs, threads     int
	memTables, verify bool
	format            string
	memLimit          int64 // bytes; 0: each engine's default
}

type timing struct {
	q            int
	nicflow      time.Duration
	duckdb       time.Duration
	nRows, dRows int
	answer       string // with --verify: "ok" or the first difference
}

func run(dir string, qlist string, o options) error {
	runs, threads, memTables, format := o.runs, o.threads, o.memTables, o.format
	qs, err := benchq.Args(dir, qlist, runs, threads)
	if err != nil {
		return err
	}
	sf, err := tpch.GeneratedSF(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()

	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: views and settings stay visible
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		return err
	}
	if o.memLimit > 0 {
		tmp := filepath.Join(dir, "tmp", "duckdb")
		for _, set := range []string{fmt.Sprintf("SET memory_limit = '%dKiB'", o.memLimit>>10), fmt.Sprintf("SET temp_directory = '%s'", strings.ReplaceAll(tmp, "'", "''"))} {
			if _, err := db.Exec(set); err != nil {
				return fmt.Errorf("duckdb: %s: %w", set, err)
			}
		}
	}
	var version string
	if err := db.QueryRow("select version()").Scan(&version); err != nil {
		return err
	}
	for _, t := range tpch.AllTables() {
		glob := filepath.Join(dir, t.String(), "*.parquet")
		kind := "VIEW"
		if memTables {
			kind = "TABLE"
		}
		stmt := fmt.Sprintf("CREATE %s %s AS SELECT * FROM read_parquet('%s')", kind, t.String(), strings.ReplaceAll(glob, "'", "''"))
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("duckdb: %s: %w", stmt, err)
		}
	}

	sess, err := engine.Open(dir, engine.Options{Parallelism: threads, MemoryLimit: o.memLimit})
	if err != nil {
		return err
	}
	defer sess.Close()

	var out []timing
	for _, q := range qs {
		text, err := tpch.Query(q, tpch.DefaultParams(q, sf))
		if err != nil {
			return err
		}
		tm := timing{q: q}
		var nRes, dRes tpch.Result
		for r := 0; r < runs; r++ {
			d, res, err := runNicflow(ctx, sess, text, o.verify && r == 0)
			if err != nil {
				return fmt.Errorf("nicflow Q%d: %w", q, err)
			}
			if r == 0 || d < tm.nicflow {
				tm.nicflow = d
			}
			tm.nRows = len(res.Rows)
			if r == 0 {
				nRes = res
			}
			d, res, err = runDuckDB(db, text, o.verify && r == 0)
			if err != nil {
				return fmt.Errorf("duckdb Q%d: %w", q, err)
			}
			if r == 0 || d < tm.duckdb {
				tm.duckdb = d
			}
			tm.dRows = len(res.Rows)
			if r == 0 {
				dRes = res
			}
		}
		if o.verify {
			// NB: the engines name expression columns differently; the
			// values are what is compared.
			dRes.Columns = nRes.Columns
			tm.answer = "ok"
			if err := tpch.CompareAnswers(q, sf, dRes, nRes); err != nil {
				tm.answer = "DIFFERS: " + err.Error()
			}
		}
		out = append(out, tm)
	}
	print(out, format, sf, threads, runs, version, memTables, o.memLimit)
	return nil
}

// runNicflow runs a script (Q15 is create view; select; drop view) and
// returns the rows of its query (canonical text when keep, else empty
// rows that only count).
func runNicflow(ctx context.Context, s *engine.Session, text string, keep bool) (time.Duration, tpch.Result, error) {
	start := time.Now()
	cols, rows, err := engine.ScriptText(ctx, s, text, keep)
	return time.Since(start), tpch.Result{Columns: cols, Rows: rows}, err
}

// runDuckDB runs the statements of a script (Q15 is create view; select;
// drop view) and counts the rows of the select.
func runDuckDB(db *sql.DB, text string, keep bool) (time.Duration, tpch.Result, error) {
	// DuckDB does not take the ANSI interval precision of Q1
	// ("interval '90' day (3)"); the value is the same without it.
	text = intervalPrecision.ReplaceAllString(text, "$1")
	var out tpch.Result
	start := time.Now()
	for _, stmt := range strings.Split(text, ";") {
		if strings.TrimSpace(benchq.StripComments(stmt)) == "" {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(benchq.StripComments(stmt))), "select") {
			if _, err := db.Exec(stmt); err != nil {
				return 0, out, err
			}
			continue
		}
		cols, rows, err := benchq.QueryRows(db, stmt, keep)
		if err != nil {
			return 0, out, err
		}
		out = tpch.Result{Columns: cols, Rows: rows}
	}
	return time.Since(start), out, nil
}

var intervalPrecision = regexp.MustCompile(`(?i)(interval\s+'[^']*'\s+(?:day|month|year))\s*\(\s*\d+\s*\)`)

func print(ts []timing, format string, sf float64, threads, runs int, version string, memTables bool, memLimit int64) {
	src := "Parquet views"
	if memTables {
		src = "in-memory tables"
	}
	var totN, totD time.Duration
	worst := 0.0
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	if format == "csv" {
		fmt.Println("query,nicflow_ms,duckdb_ms,ratio,nicflow_rows,duckdb_rows,answer")
	} else {
		limit := "each engine's default memory limit"
		if memLimit > 0 {
			limit = "memory limit " + exec.FormatBytes(memLimit)
		}
		fmt.Printf("TPC-H SF %g, %d threads, min of %d runs, %s; DuckDB %s over %s\n", sf, threads, runs, limit, version, src)
		fmt.Printf("%-6s %12s %12s %8s %s\n", "query", "nicflow_ms", "duckdb_ms", "ratio", "rows")
	}
	for _, t := range ts {
		totN += t.nicflow
		totD += t.duckdb
		ratio := float64(t.nicflow) / float64(max(t.duckdb, time.Microsecond))
		worst = max(worst, ratio)
		rows := strconv.Itoa(t.nRows)
		if t.nRows != t.dRows {
			rows = fmt.Sprintf("%d (duckdb %d: MISMATCH)", t.nRows, t.dRows)
		}
		if format == "csv" {
			fmt.Printf("Q%d,%s,%s,%.2f,%d,%d,%q\n", t.q, ms(t.nicflow), ms(t.duckdb), ratio, t.nRows, t.dRows, t.answer)
		} else {
			fmt.Printf("Q%-5d %12s %12s %8.2f %s %s\n", t.q, ms(t.nicflow), ms(t.duckdb), ratio, rows, t.answer)
		}
	}
	ratio := float64(totN) / float64(max(totD, time.Microsecond))
	if format == "csv" {
		fmt.Printf("total,%s,%s,%.2f,,\n", ms(totN), ms(totD), ratio)
	} else {
		fmt.Printf("%-6s %12s %12s %8.2f  (worst query %.2fx)\n", "total", ms(totN), ms(totD), ratio, worst)
	}
}
