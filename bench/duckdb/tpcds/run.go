package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/bench/duckdb/internal/benchq"
	"github.com/nicflow/nicflow/engine"
)

type runOptions struct {
	runs, threads int
	warm, verify  bool
}

type result struct {
	q          int
	n, d       benchq.Measure
	nErr, dErr string
	answer     string
}

func run(dir, nicflow, qlist string, o runOptions) error {
	qs, err := benchq.ParseQueryList(qlist, 99)
	if err != nil {
		return err
	}
	if o.runs < 1 || o.threads < 1 {
		return fmt.Errorf("--runs and --threads must be at least 1")
	}
	sfText, err := os.ReadFile(filepath.Join(dir, "tpcds", "sf"))
	if err != nil {
		return fmt.Errorf("%s holds no TPC-DS data (run tpcds gen): %w", dir, err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var w *warmEngines
	if o.warm {
		if w, err = openWarm(dir, o.threads); err != nil {
			return err
		}
		defer w.close()
	}
	mode := "cold (a fresh process per run)"
	if o.warm {
		mode = "warm (both engines in one process)"
	}
	fmt.Printf("TPC-DS SF %s %s, %d threads, min of %d runs\n", strings.TrimSpace(string(sfText)), mode, o.threads, o.runs)
	fmt.Printf("%-5s %10s %10s %6s %9s %9s  %s\n", "query", "nicflow_ms", "duckdb_ms", "ratio", "nf_rssMiB", "dk_rssMiB", "answer")
	var res []result
	for _, q := range qs {
		qf := queryFile(dir, q)
		text, err := os.ReadFile(qf)
		if err != nil {
			return err
		}
		r := result{q: q}
		// Each run runs nicflow, then DuckDB; the first failure stops both.
		engines := []*engineRuns{
			{run: func(keep bool) (benchq.Measure, [][]string, error) {
				if o.warm {
					return w.nicflow(string(text), keep)
				}
				return coldProc(keep, nicflow, "sql", "--dir", dir, "--parallel", strconv.Itoa(o.threads), "--format", "csv", "-f", qf)
			}},
			{run: func(keep bool) (benchq.Measure, [][]string, error) {
				if o.warm {
					return w.duckdb(string(text), keep)
				}
				return coldProc(keep, self, "duckdb-child", "--dir", dir, "--threads", strconv.Itoa(o.threads), "-f", qf)
			}},
		}
	runs:
		for i := 0; i < o.runs; i++ {
			for _, e := range engines {
				if !e.once(o.verify && i == 0) {
					break runs
				}
			}
		}
		r.n, r.nErr, r.d, r.dErr = engines[0].best, engines[0].err, engines[1].best, engines[1].err
		nRows, dRows := engines[0].rows, engines[1].rows
		switch {
		case r.nErr != "":
			r.answer = "nicflow error: " + r.nErr
		case r.dErr != "":
			r.answer = "duckdb error: " + r.dErr
		case o.verify:
			r.answer = compareRows(nRows, dRows)
		}
		res = append(res, r)
		ratio := 0.0
		if r.n.Ran && r.d.Ran {
			ratio = float64(r.n.Wall) / float64(r.d.Wall)
		}
		fmt.Printf("q%-4d %10s %10s %6.2f %9d %9d  %s\n", q, benchq.Ms(r.n.Wall), benchq.Ms(r.d.Wall), ratio, r.n.RSSKiB>>10, r.d.RSSKiB>>10, r.answer)
	}
	var totN, totD time.Duration
	var peakN, peakD int64
	both, worstQ, differ := 0, 0, 0
	worst := 0.0
	for _, r := range res {
		if !r.n.Ran || !r.d.Ran {
			continue
		}
		both++
		totN += r.n.Wall
		totD += r.d.Wall
		peakN, peakD = max(peakN, r.n.RSSKiB), max(peakD, r.d.RSSKiB)
		if ratio := float64(r.n.Wall) / float64(r.d.Wall); ratio > worst {
			worst, worstQ = ratio, r.q
		}
		if o.verify && r.answer != "ok" {
			differ++
		}
	}
	fmt.Printf("total %10s %10s %6.2f %9d %9d  over the %d of %d queries both engines answered; worst q%d %.2fx",
		benchq.Ms(totN), benchq.Ms(totD), float64(totN)/float64(max(totD, time.Microsecond)), peakN>>10, peakD>>10, both, len(res), worstQ, worst)
	if o.verify {
		fmt.Printf("; %d answers differ", differ)
	}
	fmt.Println()
	return nil
}

// engineRuns is one engine's runs of one query: the fastest, the rows of
// the run that kept them, and the first error.
type engineRuns struct {
	run  func(keep bool) (benchq.Measure, [][]string, error)
	best benchq.Measure
	rows [][]string
	err  string
}

// once runs the query once more (keeping its rows when keep) and reports
// whether it succeeded.
func (e *engineRuns) once(keep bool) bool {
	m, rows, err := e.run(keep)
	if err != nil {
		e.err = firstLine(err.Error())
		return false
	}
	e.best = benchq.Best(e.best, m)
	if keep {
		e.rows = rows
	}
	return true
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// coldProc runs a child that prints CSV (a header line, then rows) and
// returns the rows when keep.
func coldProc(keep bool, name string, args ...string) (benchq.Measure, [][]string, error) {
	var out bytes.Buffer
	var m benchq.Measure
	var err error
	if keep {
		m, err = benchq.TimeProc(&out, name, args...)
	} else {
		m, err = benchq.TimeProc(nil, name, args...)
	}
	if err != nil || !keep {
		return m, nil, err
	}
	r := csv.NewReader(&out)
	r.FieldsPerRecord = -1 // the header line is checked by nobody
	recs, err := r.ReadAll()
	if err != nil {
		return m, nil, fmt.Errorf("reading the output of %s: %w", filepath.Base(name), err)
	}
	if len(recs) > 0 {
		recs = recs[1:]
	}
	return m, recs, nil
}

// compareRows says "ok" when the rows agree: in order, or else as
// multisets (queries order by columns with ties, and a LIMIT cuts a tie
// anywhere: that shows as a difference in the last rows only); numbers
// within 1e-6 relative or 0.01 absolute.
func compareRows(n, d [][]string) string {
	if len(n) != len(d) {
		return fmt.Sprintf("DIFFERS: %d rows, duckdb %d", len(n), len(d))
	}
	first := -1
	for i := range n {
		if !rowEqual(n[i], d[i]) {
			first = i
			break
		}
	}
	if first < 0 {
		return "ok"
	}
	sn, sd := slices.Clone(n), slices.Clone(d)
	cmp := func(a, b []string) int { return slices.Compare(a, b) }
	slices.SortFunc(sn, cmp)
	slices.SortFunc(sd, cmp)
	same := true
	for i := range sn {
		if !rowEqual(sn[i], sd[i]) {
			same = false
			break
		}
	}
	if same {
		return "ok"
	}
	return fmt.Sprintf("DIFFERS at row %d: %v, duckdb %v", first+1, n[first], d[first])
}

func rowEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		x, err1 := strconv.ParseFloat(a[i], 64)
		y, err2 := strconv.ParseFloat(b[i], 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if diff := math.Abs(x - y); diff > 0.01 && diff > 1e-6*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
	}
	return true
}

// views makes DuckDB read every table of the nicflow database in dir
// from nicflow's own Parquet files.
func views(db *sql.DB, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*.parquet"))
		if len(files) == 0 {
			continue
		}
		glob := filepath.Join(dir, e.Name(), "*.parquet")
		stmt := fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet('%s')", e.Name(), strings.ReplaceAll(glob, "'", "''"))
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// duckdbRows runs the statements of a script and returns the rows of its
// last query in text (when keep; else empty rows that only count).
func duckdbRows(db *sql.DB, text string, keep bool) ([][]string, error) {
	var out [][]string
	for _, stmt := range strings.Split(text, ";") {
		s := strings.TrimSpace(benchq.StripComments(stmt))
		if s == "" {
			continue
		}
		var err error
		if _, out, err = benchq.QueryRows(db, s, keep); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// duckdbChild runs a query file in a fresh DuckDB and prints its rows as
// CSV.
func duckdbChild(dir, file string, threads int) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	db, err := openDuckDB("", threads)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := views(db, dir); err != nil {
		return err
	}
	rows, err := duckdbRows(db, string(text), true)
	if err != nil {
		return err
	}
	w := csv.NewWriter(os.Stdout)
	w.Write([]string{"header"})
	w.WriteAll(rows)
	return w.Error()
}

// warmEngines runs both engines in this process.
type warmEngines struct {
	db   *sql.DB
	sess *engine.Session
}

func openWarm(dir string, threads int) (*warmEngines, error) {
	db, err := openDuckDB("", threads)
	if err != nil {
		return nil, err
	}
	if err := views(db, dir); err != nil {
		db.Close()
		return nil, err
	}
	sess, err := engine.Open(dir, engine.Options{Parallelism: threads})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &warmEngines{db: db, sess: sess}, nil
}

func (w *warmEngines) close() {
	w.sess.Close()
	w.db.Close()
}

func (w *warmEngines) nicflow(text string, keep bool) (benchq.Measure, [][]string, error) {
	start := time.Now()
	_, rows, err := engine.ScriptText(context.Background(), w.sess, text, keep)
	return benchq.Measure{Wall: time.Since(start), Ran: err == nil}, rows, err
}

func (w *warmEngines) duckdb(text string, keep bool) (benchq.Measure, [][]string, error) {
	start := time.Now()
	rows, err := duckdbRows(w.db, text, keep)
	return benchq.Measure{Wall: time.Since(start), Ran: err == nil}, rows, err
}
