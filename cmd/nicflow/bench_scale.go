package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

var benchScaleFlags struct {
	dir     string
	workers string
	runs    int
	queries string
	trivial int
	settle  time.Duration
	format  string
	plot    string
	worker  localWorkerFlags
}

var benchScaleCmd = &cobra.Command{
	Use:   "scale --dir DIR",
	Short: "Run TPC-H on local clusters of growing size: fixed costs per query, memory and CPU per node",
	Long: `Start a local cluster (a coordinator, N workers, one storage node) for each N
of --workers in turn, on the TPC-H data in DIR, and measure what grows with
the number of nodes:

  idle_cores       CPU the whole cluster burns doing nothing (gossip, timers),
                   over 5 s after it settled
  gossip_kib_s     gossip the whole cluster sends over those 5 s (KiB/s, every
                   node's nicflow_gossip_sent_bytes_total, UDP and TCP)
  trivial_ms       median latency of "select count(*) from nation" (one task),
                   p90 beside it, from a client in this process
  rowgroup_ms      median latency of a scan of one row group of lineitem
  total_ms         the queries (--queries) one after another, the best of --runs
                   each; every answer checked (reference answers at SF 0.01,
                   0.1 and 1)
  tasks, stages    per query, on average
  coord_cpu_s      coordinator CPU seconds for the queries
  worker_rss_mib   peak RSS of the workers: median and largest
  coord_rss_mib    peak RSS of the coordinator
  worker_sockets   open sockets per worker at the end: median and largest
                   (links between shuffle agents, control and Flight
                   connections: O(N) wanted, not O(N x queries))
  msg_bytes,       the shuffle agents' mean message and frame size (Buddy's
  frame_bytes      aggregation: frames much larger than messages)

With more workers than this machine has CPUs, each worker gets one core
(GOMAXPROCS 1) and an equal share of memory (cluster local does that),
so a 64-worker cluster fits on a small machine; more workers cannot be
faster there, but the growth of the fixed costs is what a real cluster of
that size pays too.`,
	Example: `  nicflow tpch gen --sf 0.1 --dir sf01
  nicflow bench scale --dir sf01 --workers 1,4,16,32,64`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return runBenchScale(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	},
}

func init() {
	f := benchScaleCmd.Flags()
	f.StringVar(&benchScaleFlags.dir, "dir", "", "TPC-H data from `nicflow tpch gen` (required)")
	f.StringVar(&benchScaleFlags.workers, "workers", "1,4,16", "cluster sizes (workers), comma-separated")
	f.IntVar(&benchScaleFlags.runs, "runs", 1, "runs of each query in a row (the best counts)")
	f.StringVar(&benchScaleFlags.queries, "queries", "1-22", "TPC-H queries to run, e.g. 1,3,5-7")
	f.IntVar(&benchScaleFlags.trivial, "trivial-runs", 20, "runs of each trivial query (the median counts)")
	f.DurationVar(&benchScaleFlags.settle, "settle", 5*time.Second, "wait after the cluster is up before measuring (joins and gossip calm down)")
	f.StringVar(&benchScaleFlags.format, "format", formatTable, "output format: table or csv")
	f.StringVar(&benchScaleFlags.plot, "plot", "", "also write SVG charts of the figures against the number of workers into this directory")
	benchScaleFlags.worker.addFlags(f)
	benchCmd.AddCommand(benchScaleCmd)
}

// scaleRow is one cluster size's figures.
type scaleRow struct {
	workers   int
	idleCores float64
	// gossipBps is the gossip bytes all nodes sent per second at idle.
	gossipBps               float64
	trivial, trivial90      time.Duration
	rowGroup                time.Duration
	total                   time.Duration
	wrong                   int
	tasks, stages           float64
	coordCPU                float64
	workerRSS, workerRSSMax int64
	coordRSS                int64
	sockets, socketsMax     int
	msgBytes, frameBytes    float64
}

func runBenchScale(ctx context.Context, stdout, stderr io.Writer) error {
	fl := benchScaleFlags
	if fl.dir == "" {
		return usagef("--dir is required")
	}
	if err := checkFormat(fl.format, formatTable, formatCSV); err != nil {
		return err
	}
	sizes, err := intList("workers", fl.workers, false)
	if err != nil {
		return err
	}
	qs, err := parseQueryList(fl.queries)
	if err != nil {
		return err
	}
	if fl.runs < 1 || fl.trivial < 1 {
		return usagef("--runs and --trivial-runs must be at least 1")
	}
	sf, err := tpch.GeneratedSF(fl.dir)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return nferr.Internalf("bench scale: %v", err)
	}
	var rows []scaleRow
	for _, n := range sizes {
		if n < 1 {
			return usagef("--workers: %d", n)
		}
		r, err := benchScaleOne(ctx, exe, fl.dir, n, sf, qs, stderr)
		if err != nil {
			return nferr.Wrap(nferr.KindOf(err), err, "%d workers", n)
		}
		rows = append(rows, r)
	}
	printBenchScale(stdout, fl.format, sf, rows)
	if fl.plot != "" {
		files, err := bench.PlotScale(scalePoints(rows), fl.plot)
		for _, f := range files {
			fmt.Fprintf(stderr, "wrote %s\n", f)
		}
		if err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.wrong > 0 {
			return nferr.Dataf("%d wrong answers on %d workers", r.wrong, r.workers)
		}
	}
	return nil
}

// benchScaleOne runs one cluster size on a copy of dir (the coordinator
// owns its directory while it runs).
func benchScaleOne(ctx context.Context, exe, dir string, n int, sf float64, qs []int, stderr io.Writer) (scaleRow, error) {
	r := scaleRow{workers: n}
	work, err := os.MkdirTemp("", "nicflow-bench-scale-")
	if err != nil {
		return r, nferr.IOf("bench scale: %v", err)
	}
	defer os.RemoveAll(work)
	db := filepath.Join(work, "db")
	if err := os.CopyFS(db, os.DirFS(dir)); err != nil {
		return r, nferr.IOf("bench scale: copying %s: %v", dir, err)
	}
	os.Remove(filepath.Join(db, "catalog.lock"))
	fmt.Fprintf(stderr, "%d workers: starting\n", n)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	lc, err := cluster.StartLocal(sctx, cluster.LocalOptions{
		Dir: db, Workers: n, Storage: 1, Exe: exe, Out: io.Discard, StartTimeout: 5 * time.Minute,
		Extra: map[cluster.Role][]string{cluster.RoleWorker: benchScaleFlags.worker.args()},
	})
	if err != nil {
		return r, err
	}
	defer lc.Stop()
	if err := placeTables(sctx, lc, 1, io.Discard); err != nil {
		return r, err
	}
	fmt.Fprintf(stderr, "%d workers: up in %s\n", n, time.Since(start).Round(time.Millisecond))
	time.Sleep(benchScaleFlags.settle)
	pids := lc.Pids()
	var all []int
	for _, p := range pids {
		all = append(all, p)
	}
	g0 := gossipSent(lc)
	c0 := cpuTicks(all)
	time.Sleep(5 * time.Second)
	r.idleCores = float64(cpuTicks(all)-c0) / clockTicks / 5
	r.gossipBps = (gossipSent(lc) - g0) / 5

	cs, err := dialClusterSQL(lc.CoordinatorAddr, lc.KeyDir, io.Discard)
	if err != nil {
		return r, err
	}
	defer cs.Close()
	latency := func(q string) ([]time.Duration, error) {
		var ds []time.Duration
		for i := 0; i < benchScaleFlags.trivial; i++ {
			t0 := time.Now()
			if _, _, err := cs.runQueryText(ctx, q, false); err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds, nil
	}
	ds, err := latency("select count(*) from nation")
	if err != nil {
		return r, err
	}
	r.trivial, r.trivial90 = ds[len(ds)/2], ds[len(ds)*9/10]
	if ds, err = latency("select count(*) from lineitem where l_orderkey < 100"); err != nil {
		return r, err
	}
	r.rowGroup = ds[len(ds)/2]

	coord := pids["coordinator"]
	cc0 := cpuTicks([]int{coord})
	tasks0, stages0 := cs.tasks, cs.stages
	stmts := int64(0)
	for _, q := range qs {
		res := runTPCHQuery(ctx, cs.runQueryText, q, sf, benchScaleFlags.runs, true)
		if res.err != nil {
			return r, nferr.Wrap(nferr.KindOf(res.err), res.err, "Q%d", q)
		}
		r.total += minDur(res.times)
		if tpch.HasAnswers(sf) && res.verdict != "ok" {
			fmt.Fprintf(stderr, "%d workers: Q%d: %s\n", n, q, res.verdict)
			r.wrong++
		}
		stmts += int64(benchScaleFlags.runs)
	}
	r.coordCPU = float64(cpuTicks([]int{coord})-cc0) / clockTicks
	if stmts > 0 {
		r.tasks = float64(cs.tasks-tasks0) / float64(stmts)
		r.stages = float64(cs.stages-stages0) / float64(stmts)
	}
	var rss []int64
	var socks []int
	var msgs, frames, frameBytes float64
	for _, node := range lc.Nodes {
		pid := pids[node.ID]
		switch node.Role {
		case cluster.RoleCoordinator:
			r.coordRSS = procPeakRSS(pid)
		case cluster.RoleWorker:
			rss = append(rss, procPeakRSS(pid))
			socks = append(socks, openSockets(pid))
			if m, err := scrapeMetrics(node.AdminAddr); err == nil {
				msgs += promSum(m, "nicflow_shuffle_agent_messages")
				frames += promSum(m, "nicflow_shuffle_agent_remote_frames")
				frameBytes += promSum(m, "nicflow_shuffle_agent_remote_bytes")
			}
		}
	}
	slices.Sort(rss)
	sort.Ints(socks)
	if len(rss) > 0 {
		r.workerRSS, r.workerRSSMax = rss[len(rss)/2], rss[len(rss)-1]
		r.sockets, r.socketsMax = socks[len(socks)/2], socks[len(socks)-1]
	}
	if msgs > 0 {
		r.msgBytes = frameBytes / msgs
	}
	if frames > 0 {
		r.frameBytes = frameBytes / frames
	}
	fmt.Fprintf(stderr, "%d workers: done (%d queries in %s)\n", n, len(qs), r.total.Round(time.Millisecond))
	return r, nil
}

func printBenchScale(w io.Writer, format string, sf float64, rows []scaleRow) {
	header := []string{"workers", "idle_cores", "gossip_kib_s", "trivial_ms", "trivial_p90_ms", "rowgroup_ms", "total_ms", "tasks", "stages",
		"coord_cpu_s", "worker_rss_mib", "worker_rss_max_mib", "coord_rss_mib", "worker_sockets", "worker_sockets_max", "msg_bytes", "frame_bytes", "wrong"}
	mib := func(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{strconv.Itoa(r.workers), fmt.Sprintf("%.2f", r.idleCores), fmt.Sprintf("%.1f", r.gossipBps/1024), ms(r.trivial), ms(r.trivial90), ms(r.rowGroup), ms(r.total),
			fmt.Sprintf("%.1f", r.tasks), fmt.Sprintf("%.1f", r.stages), fmt.Sprintf("%.2f", r.coordCPU),
			mib(r.workerRSS), mib(r.workerRSSMax), mib(r.coordRSS), strconv.Itoa(r.sockets), strconv.Itoa(r.socketsMax),
			fmt.Sprintf("%.0f", r.msgBytes), fmt.Sprintf("%.0f", r.frameBytes), strconv.Itoa(r.wrong)})
	}
	title := fmt.Sprintf("TPC-H SF %g on local clusters of N workers and 1 storage node (this machine: %s of memory to share)", sf, exec.FormatBytes(exec.SystemMemory().Available()))
	writeFigures(w, format, title, header, out, func(int) bool { return false })
}

// clockTicks is the kernel's USER_HZ (/proc/<pid>/stat's unit).
const clockTicks = 100

// cpuTicks sums the user and system CPU ticks of the processes.
func cpuTicks(pids []int) int64 {
	var n int64
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// NB: the command name (field 2) may hold spaces: count from ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				k, _ := strconv.ParseInt(f[12], 10, 64)
				n += u + k
			}
		}
	}
	return n
}

// procPeakRSS is a process's peak resident set (VmHWM) in bytes.
func procPeakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// openSockets counts a process's open sockets.
func openSockets(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// gossipSent sums the gossip bytes every node of lc sent (UDP and TCP,
// nicflow_gossip_sent_bytes_total); a node whose /metrics does not answer
// counts nothing.
func gossipSent(lc *cluster.LocalCluster) float64 {
	var sum float64
	for _, node := range lc.Nodes {
		if m, err := scrapeMetrics(node.AdminAddr); err == nil {
			sum += promSum(m, "nicflow_gossip_sent_bytes_total")
		}
	}
	return sum
}

// scrapeMetrics reads a node's /metrics.
func scrapeMetrics(admin string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// promSum adds the values of every sample of name (Prometheus text) whose
// labels contain every one of want (`result="ok"`).
func promSum(text, name string, want ...string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	var sum float64
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(m[1], w)
		}
		if v, err := strconv.ParseFloat(m[2], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// scalePoints are rows as bench.PlotScale draws them.
func scalePoints(rows []scaleRow) []bench.ScalePoint {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	out := make([]bench.ScalePoint, 0, len(rows))
	for _, r := range rows {
		out = append(out, bench.ScalePoint{Workers: r.workers, TotalMs: ms(r.total), TrivialMs: ms(r.trivial), TrivialP90Ms: ms(r.trivial90),
			RowGroupMs: ms(r.rowGroup), IdleCores: r.idleCores, GossipKiBs: r.gossipBps / 1024,
			WorkerRSSMiB: mib(r.workerRSS), WorkerRSSMaxMiB: mib(r.workerRSSMax), CoordRSSMiB: mib(r.coordRSS),
			Sockets: float64(r.sockets), SocketsMax: float64(r.socketsMax)})
	}
	return out
}
