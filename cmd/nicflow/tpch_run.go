package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

type tpchRunFlags struct {
	dir         string
	cluster     string
	keys        string
	sf          float64
	queries     string
	runs        int
	verify      bool
	format      string
	memoryLimit string
	spill       spillFlags
	parallel    int
	batchSize   int
	cpuprofile  string
}

var runFlags tpchRunFlags

var tpchRunCmd = &cobra.Command{
	Use:   "run (--dir DIR | --cluster ADDR --keys KEYDIR [--sf SF])",
	Short: "Run the 22 TPC-H queries, time them and check their answers",
	Long: `Run TPC-H queries on the data "nicflow tpch gen" wrote to DIR, embedded in
this process, and print one line per query: its rows, the minimum and median
wall time over --runs runs, the CPU time (user+sys) of the fastest run, and
with --verify whether the answer is right. A total line sums the times.

Parameters are the validation parameters of TPC-H clause 2.4 (with --verify,
those the stored answers were computed with). The scale factor comes from
DIR/tpch-gen.json. --verify compares every answer with tpch.CheckAnswer:
the official TPC-H answers at SF 1 (precision rules of clause 2.1.3.5), and
reference answers at SF 0.01 and 0.1; other scale factors have no answers to
check against (said so, and exit 0). Any wrong answer or failed query makes
the command exit non-zero (3 for a wrong answer).

With --cluster ADDR (and --keys KEYDIR) the queries run on a nicflow cluster
whose coordinator holds the TPC-H database (nicflow coordinator --dir, or
nicflow cluster local --dir): same output, with a shuffled column (the bytes
the query's network exchanges moved) instead of cpu_ms (this process's CPU
means nothing there). The scale factor comes from --sf, else from
--dir's tpch-gen.json (a local cluster's DIR). A terminal shows each
stage's progress.`,
	Example: `  nicflow tpch gen --sf 1 --dir data/sf1
  nicflow tpch run --dir data/sf1 --verify
  nicflow tpch run --dir data/sf1 --queries 1,6,14 --runs 5
  nicflow tpch run --dir data/sf1 --queries 1-5 --format csv > times.csv
  nicflow tpch run --dir data/sf0.1 --verify --parallel 1 --memory-limit 1GiB
  nicflow tpch run --cluster $(cat data/sf1/cluster/coordinator.addr) --keys data/sf1/cluster/keys --dir data/sf1 --verify
  nicflow tpch run --cluster 10.0.0.1:7400 --keys /etc/nicflow/keys --sf 1`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return runTpchRun(cmd.Context(), runFlags, cmd.OutOrStdout(), cmd.ErrOrStderr())
	},
}

func init() {
	f := tpchRunCmd.Flags()
	f.StringVar(&runFlags.dir, "dir", "", "directory holding TPC-H data written by nicflow tpch gen (with --cluster: only read for the scale factor)")
	f.StringVar(&runFlags.cluster, "cluster", "", "coordinator client address host:port: run the queries on a cluster")
	f.StringVar(&runFlags.keys, "keys", "", "cluster key directory (with --cluster)")
	f.Float64Var(&runFlags.sf, "sf", 0, "scale factor of the cluster's data (with --cluster; default: from --dir)")
	f.StringVar(&runFlags.queries, "queries", "1-22", "queries to run: a list and/or ranges, e.g. 1-22, 1,3,5, 2-4,9")
	f.IntVar(&runFlags.runs, "runs", 1, "runs per query (min and median are reported)")
	f.BoolVar(&runFlags.verify, "verify", false, "check every answer against the reference answers")
	f.StringVar(&runFlags.format, "format", formatTable, "output format: table or csv")
	f.StringVar(&runFlags.memoryLimit, "memory-limit", "", "memory budget per query, e.g. 2GiB (default: 60% of memory)")
	addSpillFlags(f, &runFlags.spill)
	f.IntVar(&runFlags.parallel, "parallel", 0, "pipelines per query (default: number of CPUs)")
	f.IntVar(&runFlags.batchSize, "batch-size", 0, "rows per batch (default 8192)")
	f.StringVar(&runFlags.cpuprofile, "cpuprofile", "", "write a CPU profile (pprof) of all runs to this file")
	f.MarkHidden("cpuprofile")
	tpchCmd.AddCommand(tpchRunCmd)
}

// parseQueryList parses "1-22", "1,3,5", "2-4,9" into sorted query numbers.
func parseQueryList(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range splitList(s) {
		lo, hi := part, part
		if a, b, ok := strings.Cut(part, "-"); ok {
			lo, hi = a, b
		}
		l, err1 := strconv.Atoi(strings.TrimSpace(lo))
		h, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || l < 1 || h > tpch.NumQueries || l > h {
			return nil, usagef("--queries %q: want query numbers 1..%d, lists (1,3,5) and ranges (1-22)", s, tpch.NumQueries)
		}
		for q := l; q <= h; q++ {
			seen[q] = true
		}
	}
	if len(seen) == 0 {
		return nil, usagef("--queries %q names no query", s)
	}
	out := make([]int, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Ints(out)
	return out, nil
}

// queryRun is the outcome of one query.
type queryRun struct {
	q     int
	rows  int64
	times []time.Duration
	cpu   time.Duration // of the fastest run
	// shuffled is the bytes a cluster run's exchanges moved (-1 embedded).
	shuffled int64
	// spilled is the bytes the fastest run wrote to spill files (embedded).
	spilled int64
	// scanWire and scanRead are the fastest cluster run's scan bytes on
	// the network and the Parquet bytes its scans read (scanCounter).
	scanWire, scanRead int64
	verdict            string
	// answer is the last run's rows when verify was asked at a scale
	// factor without reference answers: the caller compares it with
	// another run's (tpch.CompareAnswers).
	answer tpch.Result
	err    error
}

func runTpchRun(ctx context.Context, fl tpchRunFlags, stdout, stderr io.Writer) error {
	if err := checkFormat(fl.format, formatTable, formatCSV); err != nil {
		return err
	}
	if fl.dir == "" && fl.cluster == "" {
		return usagef("--dir is required (or --cluster ADDR --keys KEYDIR)")
	}
	if fl.cluster == "" && (fl.keys != "" || fl.sf != 0) {
		return usagef("--keys and --sf go with --cluster")
	}
	if fl.runs < 1 {
		return usagef("--runs must be at least 1")
	}
	qs, err := parseQueryList(fl.queries)
	if err != nil {
		return err
	}
	opts, err := sessionOptions(fl.memoryLimit, fl.parallel, fl.batchSize)
	if err == nil {
		err = fl.spill.apply(&opts)
	}
	if err != nil {
		return err
	}
	sf := fl.sf
	if sf == 0 {
		if fl.dir == "" {
			return usagef("--sf is required with --cluster when --dir does not name the data's directory")
		}
		if sf, err = tpch.GeneratedSF(fl.dir); err != nil {
			return err
		}
	} else if sf < 0 {
		return usagef("--sf must be positive")
	}
	verify := fl.verify
	if verify && !tpch.HasAnswers(sf) {
		fmt.Fprintf(stderr, "note: no reference answers at SF %g (only SF 0.01, 0.1 and 1): answers can't be verified\n", sf)
		verify = false
	}
	var run textRunner
	if fl.cluster != "" {
		if fl.memoryLimit != "" || fl.parallel != 0 || fl.batchSize != 0 {
			return usagef("--memory-limit, --parallel and --batch-size apply to embedded runs")
		}
		cs, err := dialClusterSQL(fl.cluster, fl.keys, stderr)
		if err != nil {
			return err
		}
		defer cs.Close()
		run = cs.runQueryText
	} else {
		sess, err := openSession(fl.dir, false, opts)
		if err != nil {
			return err
		}
		defer sess.Close()
		run = sessionRunner(sess)
	}
	stop, err := startCPUProfile(fl.cpuprofile)
	if err != nil {
		return err
	}
	defer stop()

	var results []queryRun
	for _, q := range qs {
		if err := ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		res := runTPCHQuery(ctx, run, q, sf, fl.runs, verify)
		results = append(results, res)
		if nferr.Is(res.err, nferr.KindCanceled) {
			return res.err
		}
	}
	where := fmt.Sprintf("parallelism %d, memory limit %s, peak RSS %s", opts.Parallelism, exec.FormatBytes(opts.MemoryLimit), peakRSS())
	if fl.cluster != "" {
		where = "cluster " + fl.cluster
	}
	printRunTable(stdout, fl.format, sf, where, results, verify)
	var bad, failed int
	for _, r := range results {
		switch {
		case r.err != nil:
			failed++
			fmt.Fprintf(stderr, "Q%d: %v\n", r.q, r.err)
		case r.verdict != "" && r.verdict != "ok":
			bad++
			fmt.Fprintf(stderr, "Q%d: %s\n", r.q, r.verdict)
		}
	}
	switch {
	case failed > 0:
		return nferr.Wrap(nferr.KindInternal, firstErr(results), "%d of %d queries failed", failed, len(results))
	case bad > 0:
		return nferr.Dataf("%d of %d answers are wrong", bad, len(results))
	}
	return nil
}

func firstErr(rs []queryRun) error {
	for _, r := range rs {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// textRunner runs a TPC-H query text and returns its rows (only their
// count unless keep) and the bytes it shuffled (-1 when not on a cluster).
type textRunner func(ctx context.Context, text string, keep bool) (tpch.Result, int64, error)

// spillCounter, when set, totals the bytes an embedded session spilled;
// scanCounter the bytes a cluster's scans received from storage nodes over
// the network (wire) and the Parquet bytes of the chunks they read.
var (
	spillCounter func() int64
	scanCounter  func() (wire, read int64)
)

// sessionRunner runs query texts on an embedded session.
func sessionRunner(sess *engine.Session) textRunner {
	spillCounter = sess.Spilled
	return func(ctx context.Context, text string, keep bool) (tpch.Result, int64, error) {
		r, err := runQueryText(ctx, sess, text, keep)
		return r, -1, err
	}
}

// runTPCHQuery runs query q runs times and checks the last answer with
// the reference answers; at a scale factor without them it keeps the last
// answer in res.answer instead (verdict empty).
func runTPCHQuery(ctx context.Context, run textRunner, q int, sf float64, runs int, verify bool) queryRun {
	res := queryRun{q: q}
	params := tpch.DefaultParams(q, sf)
	reference := verify && tpch.HasAnswers(sf)
	if reference {
		params, _ = tpch.AnswerParams(q, sf)
	}
	text, err := tpch.Query(q, params)
	if err != nil {
		res.err = err
		return res
	}
	var answer tpch.Result
	best := time.Duration(math.MaxInt64)
	for i := 0; i < runs; i++ {
		cpu0 := cpuTime()
		start := time.Now()
		var spill0, wire0, read0 int64
		if spillCounter != nil {
			spill0 = spillCounter()
		}
		if scanCounter != nil {
			wire0, read0 = scanCounter()
		}
		got, shuffled, err := run(ctx, text, verify && i == runs-1)
		elapsed := time.Since(start)
		var spilled, wire, read int64
		if spillCounter != nil {
			spilled = spillCounter() - spill0
		}
		if scanCounter != nil {
			w, r := scanCounter()
			wire, read = w-wire0, r-read0
		}
		cpu := cpuTime() - cpu0
		if err != nil {
			res.err = err
			return res
		}
		res.times = append(res.times, elapsed)
		if elapsed < best {
			best, res.cpu, res.shuffled, res.spilled = elapsed, cpu, shuffled, spilled
			res.scanWire, res.scanRead = wire, read
		}
		res.rows = int64(len(got.Rows))
		answer = got
	}
	switch {
	case reference:
		if err := tpch.CheckAnswer(q, sf, answer); err != nil {
			res.verdict = err.Error()
		} else {
			res.verdict = "ok"
		}
	case verify:
		res.answer = answer
	}
	return res
}

// runQueryText runs a TPC-H query text (Q15 is a script: create view,
// select, drop view) and returns the rows of its query in canonical text
// (NULL as ""), or only their count when keep is false.
func runQueryText(ctx context.Context, sess *engine.Session, text string, keep bool) (tpch.Result, error) {
	cols, rows, err := engine.ScriptText(ctx, sess, text, keep)
	return tpch.Result{Columns: cols, Rows: rows}, err
}

// cpuTime is the process's user+sys CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(ts []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minDur(ts []time.Duration) time.Duration {
	m := ts[0]
	for _, t := range ts[1:] {
		m = min(m, t)
	}
	return m
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }

func printRunTable(w io.Writer, format string, sf float64, where string, rs []queryRun, verify bool) {
	header := []string{"query", "rows", "min_ms", "median_ms", "cpu_ms"}
	onCluster := len(rs) > 0 && rs[0].shuffled >= 0 && rs[0].err == nil
	if onCluster {
		header[4] = "shuffled"
	}
	var totShuffled, totSpilled int64
	spilled := false
	for _, r := range rs {
		spilled = spilled || r.spilled > 0
	}
	if spilled {
		header = append(header, "spilled")
	}
	if verify {
		header = append(header, "answer")
	}
	var rows [][]string
	var totMin, totMed, totCPU time.Duration
	var totRows int64
	for _, r := range rs {
		row := []string{fmt.Sprintf("Q%d", r.q)}
		if r.err != nil {
			row = append(row, "", "", "", "")
			if spilled {
				row = append(row, "")
			}
			if verify {
				row = append(row, "error")
			}
			rows = append(rows, row)
			continue
		}
		mn, md := minDur(r.times), median(r.times)
		totMin, totMed, totCPU, totRows = totMin+mn, totMed+md, totCPU+r.cpu, totRows+r.rows
		last := ms(r.cpu)
		if onCluster {
			totShuffled += max(r.shuffled, 0)
			last = exec.FormatBytes(max(r.shuffled, 0))
		}
		row = append(row, strconv.FormatInt(r.rows, 10), ms(mn), ms(md), last)
		if spilled {
			totSpilled += r.spilled
			row = append(row, exec.FormatBytes(r.spilled))
		}
		if verify {
			v := r.verdict
			if v != "ok" {
				v = "WRONG"
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	total := []string{"total", strconv.FormatInt(totRows, 10), ms(totMin), ms(totMed), ms(totCPU)}
	if onCluster {
		total[4] = exec.FormatBytes(totShuffled)
	}
	if spilled {
		total = append(total, exec.FormatBytes(totSpilled))
	}
	if verify {
		total = append(total, "")
	}
	title := fmt.Sprintf("TPC-H SF %g, %d queries, %s", sf, len(rs), where)
	writeFigures(w, format, title, header, append(rows, total), func(col int) bool { return col == 0 || col == len(header)-1 && verify })
}

// writeFigures prints a table of figures: CSV with a header line, or the
// title then aligned columns (left-aligned where left(col), right-aligned
// otherwise).
func writeFigures(w io.Writer, format, title string, header []string, rows [][]string, left func(col int) bool) {
	if format == formatCSV {
		cw := csv.NewWriter(w)
		cw.Write(header)
		cw.WriteAll(rows)
		return
	}
	fmt.Fprintln(w, title)
	bench.WriteAligned(w, header, rows, left)
}

// peakRSS is this process's peak resident set size so far ("?" where the
// system does not say).
func peakRSS() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil || ru.Maxrss <= 0 {
		return "?"
	}
	return exec.FormatBytes(int64(ru.Maxrss) << 10) // NB: Linux reports KiB
}
