package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

var benchClusterFlags struct {
	dir     string
	configs string
	runs    int
	rounds  int
	queries string
	format  string
	settle  time.Duration
	worker  localWorkerFlags
}

var benchClusterCmd = &cobra.Command{
	Use:   "cluster --dir DIR",
	Short: "Run TPC-H embedded and on local clusters: times, ratios, bytes shuffled, answers checked",
	Long: `Run the TPC-H queries on the data in DIR (from "nicflow tpch gen") embedded
and on each local cluster of --configs (WORKERSxSTORAGE: a coordinator, that
many worker and storage processes on this machine, as "nicflow cluster
local" starts them), and print one table: per query the best time of the
runs embedded and on each cluster, the bytes the cluster shuffled, and per
cluster the total divided by the embedded total.

The whole sequence (every query embedded, then on each cluster in turn)
runs --rounds times, and each query's best time over all rounds counts: a
machine that slows down for a while (a busy neighbour on a VM) then slows
both sides alike instead of whichever ran at that moment.

Every answer is checked against the reference answers (SF 0.01, 0.1 and 1):
the command exits non-zero if any cluster or embedded answer is wrong, so at
SF 1 it is also the test that clusters of every shape give the official
answers. At other scale factors every cluster's answers are compared with
the embedded ones (ORDER BY order, ties in any order, numbers within 1e-6
relative or 0.01).

Each cluster waits --settle after it is up before its first query: the
processes' start, gossip and the shuffle links between workers dialed on
join take a core or two for the first seconds, which the first queries
would otherwise pay (their answers are checked either way).

--worker-memory gives each worker that much memory for its tasks (their
operators spill beyond it), as small workers on DPUs or in containers have.

Workers read the storage nodes' files directly (they share this machine:
short-circuit local reads) unless --no-local-reads, which sends every scan
over Flight as on separate machines.`,
	Example: `  nicflow tpch gen --sf 1 --dir sf1
  nicflow bench cluster --dir sf1 --configs 4x1 --runs 3

  # adaptive execution against the plans chosen from estimates alone
  nicflow bench cluster --dir sf1 --configs 4x1,4x1:static

  # every shape the tests use at SF 0.1, scans over Flight
  nicflow bench cluster --dir sf1 --configs 1x1,2x1,4x1,1x2,2x2,4x2 --no-local-reads`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return runBenchCluster(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	},
}

func init() {
	f := benchClusterCmd.Flags()
	f.StringVar(&benchClusterFlags.dir, "dir", "", "TPC-H data from `nicflow tpch gen` (required)")
	f.StringVar(&benchClusterFlags.configs, "configs", "4x1", "clusters to run, WORKERSxSTORAGE[:static], comma-separated (:static: adaptive execution off)")
	f.IntVar(&benchClusterFlags.runs, "runs", 3, "runs of each query in a row (the best counts)")
	f.IntVar(&benchClusterFlags.rounds, "rounds", 2, "times the whole sequence (embedded, then each cluster) runs")
	f.StringVar(&benchClusterFlags.queries, "queries", "1-22", "queries to run, e.g. 1,3,5-7")
	f.StringVar(&benchClusterFlags.format, "format", formatTable, "output format: table or csv")
	f.DurationVar(&benchClusterFlags.settle, "settle", 3*time.Second, "wait after a cluster is up before its first query (a fresh cluster's processes, gossip and shuffle links take a core or two for the first seconds: 0.9 cores for 2 s with 16 workers here)")
	benchClusterFlags.worker.addFlags(f)
	benchCmd.AddCommand(benchClusterCmd)
}

type clusterShape struct {
	workers, storage int
	// static: every query runs with SET adaptive = off (the plan chosen
	// from estimates, never re-planned at run time).
	static bool
}

func (s clusterShape) String() string {
	if s.static {
		return fmt.Sprintf("%dx%d:static", s.workers, s.storage)
	}
	return fmt.Sprintf("%dx%d", s.workers, s.storage)
}

func parseShapes(s string) ([]clusterShape, error) {
	var out []clusterShape
	for _, part := range splitList(s) {
		part, static := strings.CutSuffix(part, ":static")
		w, st, ok := strings.Cut(part, "x")
		nw, err1 := strconv.Atoi(w)
		ns, err2 := strconv.Atoi(st)
		if !ok || err1 != nil || err2 != nil || nw < 1 || ns < 1 || nw > 64 || ns > 16 {
			return nil, usagef("--configs: %q is not WORKERSxSTORAGE[:static] (e.g. 4x1; 1-64 workers, 1-16 storage nodes)", part)
		}
		out = append(out, clusterShape{nw, ns, static})
	}
	if len(out) == 0 {
		return nil, usagef("--configs names no cluster")
	}
	return out, nil
}

func runBenchCluster(ctx context.Context, stdout, stderr io.Writer) error {
	fl := benchClusterFlags
	if fl.dir == "" {
		return usagef("--dir is required")
	}
	if err := checkFormat(fl.format, formatTable, formatCSV); err != nil {
		return err
	}
	if fl.runs < 1 || fl.rounds < 1 {
		return usagef("--runs and --rounds must be at least 1")
	}
	shapes, err := parseShapes(fl.configs)
	if err != nil {
		return err
	}
	qs, err := parseQueryList(fl.queries)
	if err != nil {
		return err
	}
	sf, err := tpch.GeneratedSF(fl.dir)
	if err != nil {
		return err
	}
	if !tpch.HasAnswers(sf) {
		fmt.Fprintf(stderr, "note: no reference answers at SF %g (only SF 0.01, 0.1 and 1): each cluster's answers are compared with the embedded ones\n", sf)
	}
	verify := true
	exe, err := os.Executable()
	if err != nil {
		return nferr.Internalf("bench cluster: %v", err)
	}

	results := make([][]queryRun, 1+len(shapes))
	pass := func(c int, what string, r textRunner) error {
		for _, q := range qs {
			if err := ctx.Err(); err != nil {
				return nferr.With(nferr.KindCanceled, err)
			}
			res := runTPCHQuery(ctx, r, q, sf, fl.runs, verify)
			if res.err != nil {
				return nferr.Wrap(nferr.KindOf(res.err), res.err, "%s Q%d", what, q)
			}
			results[c] = mergeRun(results[c], res)
		}
		return nil
	}
	for round := 1; round <= fl.rounds; round++ {
		// Embedded first: the cluster's coordinator takes the catalog after.
		opts, err := sessionOptions("", 0, 0)
		if err != nil {
			return err
		}
		sess, err := openSession(fl.dir, false, opts)
		if err != nil {
			return err
		}
		err = pass(0, "embedded", sessionRunner(sess))
		sess.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "round %d: embedded done\n", round)
		for i, sh := range shapes {
			err := benchOneCluster(ctx, exe, fl.dir, sh, fl.worker.args(), fl.settle, stderr, func(cl textRunner) error {
				if sh.static {
					run := cl
					cl = func(ctx context.Context, text string, keep bool) (tpch.Result, int64, error) {
						return run(ctx, "SET adaptive = off;\n"+text, keep)
					}
				}
				return pass(i+1, "cluster "+sh.String(), cl)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "round %d: cluster %s done\n", round, sh)
		}
	}
	if !tpch.HasAnswers(sf) {
		compareWithEmbedded(sf, results)
	}
	printBenchCluster(stdout, fl.format, sf, shapes, results, fl.worker.noLocalReads)
	bad := 0
	for i, rs := range results {
		for _, r := range rs {
			if verify && r.verdict != "ok" {
				what := "embedded"
				if i > 0 {
					what = "cluster " + shapes[i-1].String()
				}
				fmt.Fprintf(stderr, "%s Q%d: %s\n", what, r.q, r.verdict)
				bad++
			}
		}
	}
	if bad > 0 {
		return nferr.Dataf("%d answers are wrong", bad)
	}
	return nil
}

// compareWithEmbedded sets the verdict of every run in results[1:] (the
// clusters) by comparing its answer with the embedded run's, results[0];
// the embedded runs are "ok" (they are the reference).
func compareWithEmbedded(sf float64, results [][]queryRun) {
	for i := range results[0] {
		want := &results[0][i]
		want.verdict = "ok"
		for c := 1; c < len(results); c++ {
			got := &results[c][i]
			got.verdict = "ok"
			if err := tpch.CompareAnswers(got.q, sf, want.answer, got.answer); err != nil {
				got.verdict = "differs from embedded: " + err.Error()
			}
		}
	}
}

func benchOneCluster(ctx context.Context, exe, dir string, sh clusterShape, workerArgs []string, settle time.Duration, stderr io.Writer,
	runAll func(textRunner) error) error {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintf(stderr, "cluster %s: starting\n", sh)
	lc, err := cluster.StartLocal(sctx, cluster.LocalOptions{
		Dir: dir, Workers: sh.workers, Storage: sh.storage, Exe: exe, Out: io.Discard,
		Extra: map[cluster.Role][]string{cluster.RoleWorker: workerArgs},
	})
	if err != nil {
		return err
	}
	defer lc.Stop()
	if err := placeTables(sctx, lc, 1, stderr); err != nil {
		return err
	}
	cs, err := dialClusterSQL(lc.CoordinatorAddr, lc.KeyDir, io.Discard)
	if err != nil {
		return err
	}
	defer cs.Close()
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return nferr.With(nferr.KindCanceled, ctx.Err())
	}
	scanCounter = cs.scanTotals
	defer func() { scanCounter = nil }()
	if err := runAll(cs.runQueryText); err != nil {
		return err
	}
	return nil
}

// mergeRun adds a query's runs to rs: a query seen before (embedded runs
// next to every cluster) keeps all its times, the fastest run's figures
// and the first wrong answer.
func mergeRun(rs []queryRun, r queryRun) []queryRun {
	for i := range rs {
		if rs[i].q != r.q {
			continue
		}
		old := &rs[i]
		if minDur(r.times) < minDur(old.times) {
			old.cpu, old.shuffled, old.rows = r.cpu, r.shuffled, r.rows
			old.scanWire, old.scanRead = r.scanWire, r.scanRead
		}
		old.times = append(old.times, r.times...)
		if old.verdict == "ok" || old.verdict == "" {
			old.verdict = r.verdict
		}
		return rs
	}
	return append(rs, r)
}

func printBenchCluster(w io.Writer, format string, sf float64, shapes []clusterShape, results [][]queryRun, noLocal bool) {
	header := []string{"query", "embedded_ms"}
	for _, sh := range shapes {
		header = append(header, sh.String()+"_ms", sh.String()+"_shuffled", sh.String()+"_scan_wire", sh.String()+"_scan_read")
	}
	best := func(r queryRun) time.Duration { return minDur(r.times) }
	var rows [][]string
	totals := make([]time.Duration, len(results))
	shuffled := make([]int64, len(results))
	wire := make([]int64, len(results))
	read := make([]int64, len(results))
	for i := range results[0] {
		row := []string{fmt.Sprintf("Q%d", results[0][i].q), ms(best(results[0][i]))}
		totals[0] += best(results[0][i])
		for c := 1; c < len(results); c++ {
			r := results[c][i]
			totals[c] += best(r)
			shuffled[c] += max(r.shuffled, 0)
			wire[c] += r.scanWire
			read[c] += r.scanRead
			row = append(row, ms(best(r)), exec.FormatBytes(max(r.shuffled, 0)), exec.FormatBytes(r.scanWire), exec.FormatBytes(r.scanRead))
		}
		rows = append(rows, row)
	}
	total := []string{"total", ms(totals[0])}
	ratio := []string{"ratio", "1.00"}
	for c := 1; c < len(results); c++ {
		total = append(total, ms(totals[c]), exec.FormatBytes(shuffled[c]), exec.FormatBytes(wire[c]), exec.FormatBytes(read[c]))
		wireRatio := ""
		if read[c] > 0 {
			wireRatio = fmt.Sprintf("%.2f", float64(wire[c])/float64(read[c]))
		}
		ratio = append(ratio, fmt.Sprintf("%.2f", float64(totals[c])/float64(max(totals[0], 1))), "", wireRatio, "")
	}
	rows = append(rows, total, ratio)
	scans := "scans read locally"
	if noLocal {
		scans = "scans over Flight"
	}
	title := fmt.Sprintf("TPC-H SF %g, best of the runs, clusters WORKERSxSTORAGE on this machine (%s); ratio = cluster total / embedded total; scan_wire = bytes scans received from storage nodes over the network (its ratio: / scan_read, the Parquet bytes of the chunks the scans read)", sf, scans)
	writeFigures(w, format, title, header, rows, func(col int) bool { return col == 0 })
}
