package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

// chaosOptions configure `nicflow bench chaos`.
type chaosOptions struct {
	// Dir is a TPC-H database from `nicflow tpch gen`. Required.
	Dir string
	// Workers, Storage and Replication shape the local cluster.
	Workers, Storage, Replication int
	// Faults to inject, in order: kill-worker (SIGKILL), stop-worker
	// (SIGSTOP, SIGCONT once the query is done), kill-storage (SIGKILL).
	Faults []string
	// Queries to run under each fault.
	Queries []int
	// Seed makes the victims and moments reproducible.
	Seed uint64
	// LocalReads lets workers read the storage nodes' files directly;
	// default off, so that a storage node's death is felt.
	LocalReads bool
	// Progress receives a line per query.
	Progress io.Writer
}

var chaosFaults = []string{"kill-worker", "kill-2-workers", "stop-worker", "kill-storage"}

func (o *chaosOptions) validate() error {
	switch {
	case o.Dir == "":
		return usagef("--dir is required")
	case o.Workers < 2 || o.Workers > 64:
		return usagef("--workers: 2 to 64 (a query must have a worker left to retry on)")
	case o.Storage < 1 || o.Storage > 16:
		return usagef("--storage: 1 to 16")
	case o.Replication < 1 || o.Replication > o.Storage:
		return usagef("--replication: 1 to --storage")
	}
	for _, f := range o.Faults {
		if !contains(chaosFaults, f) {
			return usagef("--faults: %q is not one of %s", f, strings.Join(chaosFaults, ", "))
		}
		if f == "kill-storage" && o.Replication < 2 {
			return usagef("--faults kill-storage needs --replication 2 or more (a file's only copy would be gone)")
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// chaosRun is one query under one fault.
type chaosRun struct {
	fault   string
	q       int
	took    time.Duration
	victim  string
	after   time.Duration // when the fault struck, from the query's start
	retried int
	verdict string
}

var chaosFlags struct {
	dir, faults, queries string
	workers, storage     int
	replication          int
	seed                 uint64
	localReads           bool
}

var benchChaosCmd = &cobra.Command{
	Use:   "chaos --dir DIR",
	Short: "Run TPC-H on a local cluster while killing or hanging its nodes: every answer must be right",
	Long: `Start a local cluster (--workers, --storage, --replication; workers and
storage nodes restart when they die, as "cluster local" does), run every
query once without faults, then again under each fault of --faults, one
fault per query at a random moment while it runs (after a warm-up pass
that is not counted):

  kill-worker    SIGKILL a random worker (it restarts and rejoins)
  kill-2-workers SIGKILL two random workers at once (both restart)
  stop-worker    SIGSTOP a random worker (a hang: connections stay open),
                 SIGCONT once the query is done
  kill-storage   SIGKILL a random storage node (files have replicas)

Before each query the cluster is whole again. Every answer is checked
(SF 0.01, 0.1, 1); a wrong answer or a failed query makes the command exit
non-zero. It prints per query the time without faults and under each
fault, how many times the coordinator retried it, and per fault the total
against the fault-free total (the goal: at most 2x).`,
	Example: `  nicflow tpch gen --sf 1 --dir sf1
  nicflow bench chaos --dir sf1 --workers 4 --storage 2 --replication 2
  nicflow bench chaos --dir sf1 --faults kill-worker --queries 1-5 --seed 7`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := chaosFlags
		o := chaosOptions{Dir: f.dir, Workers: f.workers, Storage: f.storage, Replication: f.replication,
			Faults: splitList(f.faults), Seed: f.seed, LocalReads: f.localReads, Progress: cmd.ErrOrStderr()}
		var err error
		if o.Queries, err = parseQueryList(f.queries); err != nil {
			return err
		}
		if err := o.validate(); err != nil {
			return err
		}
		return runChaos(cmd.Context(), o, cmd.OutOrStdout())
	},
}

func init() {
	f := benchChaosCmd.Flags()
	f.StringVar(&chaosFlags.dir, "dir", "", "TPC-H data from `nicflow tpch gen` (required)")
	f.IntVar(&chaosFlags.workers, "workers", 4, "workers")
	f.IntVar(&chaosFlags.storage, "storage", 2, "storage nodes")
	f.IntVar(&chaosFlags.replication, "replication", 2, "copies of every file")
	f.StringVar(&chaosFlags.faults, "faults", strings.Join(chaosFaults, ","), "faults to inject: "+strings.Join(chaosFaults, ", "))
	f.StringVar(&chaosFlags.queries, "queries", "1-22", "queries to run, e.g. 1,3,5-7")
	f.Uint64Var(&chaosFlags.seed, "seed", 1, "seed of the victims and moments")
	f.BoolVar(&chaosFlags.localReads, "local-reads", false, "let workers read the storage nodes' files directly (then a storage death is not felt)")
	benchCmd.AddCommand(benchChaosCmd)
}

func runChaos(ctx context.Context, o chaosOptions, stdout io.Writer) error {
	sf, err := tpch.GeneratedSF(o.Dir)
	if err != nil {
		return err
	}
	if !tpch.HasAnswers(sf) {
		return usagef("--dir holds SF %g: chaos needs the reference answers (SF 0.01, 0.1 or 1)", sf)
	}
	exe, err := os.Executable()
	if err != nil {
		return nferr.Internalf("bench chaos: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	lc, err := cluster.StartLocal(sctx, cluster.LocalOptions{
		Dir: o.Dir, Workers: o.Workers, Storage: o.Storage, Replication: o.Replication, Exe: exe,
		Out: io.Discard, Restart: true, MaxRestarts: 1000,
		Extra: map[cluster.Role][]string{cluster.RoleWorker: localWorkerFlags{noLocalReads: !o.LocalReads}.args()},
	})
	if err != nil {
		return err
	}
	defer lc.Stop()
	if err := placeTables(sctx, lc, o.Replication, o.Progress); err != nil {
		return err
	}
	cs, err := dialClusterSQL(lc.CoordinatorAddr, lc.KeyDir, io.Discard)
	if err != nil {
		return err
	}
	defer cs.Close()
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	// A warm-up pass, not counted: the fault-free times must not carry
	// first-use costs (connections, caches, footers) the later passes do
	// not pay.
	for _, q := range o.Queries {
		params, _ := tpch.AnswerParams(q, sf)
		text, err := tpch.Query(q, params)
		if err != nil {
			return err
		}
		if _, _, err := cs.runQueryText(ctx, text, false); err != nil {
			return nferr.Wrap(nferr.KindOf(err), err, "warm-up Q%d", q)
		}
	}
	var runs []chaosRun
	base := map[int]time.Duration{}
	for _, fault := range append([]string{"none"}, o.Faults...) {
		for _, q := range o.Queries {
			if err := waitWhole(ctx, cs.c, o.Workers, o.Storage, nil); err != nil {
				return err
			}
			before, err := cs.c.Members(ctx)
			if err != nil {
				return err
			}
			r, err := chaosQuery(ctx, o, lc, cs, rng, fault, q, sf, base[q])
			if err != nil {
				return err
			}
			// A killed node must be back as a new process (not its old
			// incarnation still listed) before the next query.
			if r.victim != "" && strings.HasPrefix(fault, "kill") {
				for _, v := range strings.Split(r.victim, "+") {
					if err := waitWhole(ctx, cs.c, o.Workers, o.Storage, restartedFrom(before, v)); err != nil {
						return err
					}
				}
			}
			if fault == "none" {
				base[q] = r.took
			}
			fmt.Fprintf(o.Progress, "%-12s Q%-2d %8s  retried %d  %s%s\n", fault, q, r.took.Round(time.Millisecond), r.retried, r.verdict, victimNote(r))
			runs = append(runs, r)
		}
	}
	return printChaos(stdout, o, sf, runs)
}

func victimNote(r chaosRun) string {
	if r.victim == "" {
		return ""
	}
	return fmt.Sprintf("  (%s %s at +%s)", r.fault, r.victim, r.after.Round(time.Millisecond))
}

// chaosQuery runs query q, striking with fault at a random moment within
// the fault-free run's time.
func chaosQuery(ctx context.Context, o chaosOptions, lc *cluster.LocalCluster, cs *clusterSQL, rng *rand.Rand,
	fault string, q int, sf float64, base time.Duration) (chaosRun, error) {
	r := chaosRun{fault: fault, q: q}
	params, _ := tpch.AnswerParams(q, sf)
	text, err := tpch.Query(q, params)
	if err != nil {
		return r, err
	}
	var victim string
	switch fault {
	case "kill-worker", "stop-worker":
		victim = fmt.Sprintf("worker-%d", 1+rng.IntN(o.Workers))
	case "kill-2-workers":
		a := 1 + rng.IntN(o.Workers)
		b := 1 + (a-1+1+rng.IntN(max(o.Workers-1, 1)))%o.Workers
		victim = fmt.Sprintf("worker-%d+worker-%d", a, b)
	case "kill-storage":
		victim = fmt.Sprintf("storage-%d", 1+rng.IntN(o.Storage))
	}
	at := time.Duration(0)
	if base > 0 {
		at = time.Duration(rng.Int64N(int64(base)*8/10 + 1))
	}
	strike := make(chan struct{})
	struck := make(chan time.Duration, 1)
	if victim != "" {
		r.victim = victim
		go func() {
			select {
			case <-time.After(at):
			case <-strike:
				struck <- -1
				return
			}
			sig := syscall.SIGKILL
			if fault == "stop-worker" {
				sig = syscall.SIGSTOP
			}
			var pids []int
			for _, v := range strings.Split(victim, "+") {
				pid := lc.Pids()[v]
				pids = append(pids, pid)
				syscall.Kill(pid, sig) //nolint:errcheck // a node already gone is fine
			}
			struck <- at
			if fault == "stop-worker" {
				<-strike
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGCONT) //nolint:errcheck
				}
			}
		}()
	}
	start := time.Now()
	got, _, err := cs.runQueryText(ctx, text, true)
	r.took = time.Since(start)
	close(strike)
	if victim != "" {
		r.after = <-struck
		if r.after < 0 {
			r.victim = "" // the query was done before the fault
		}
	}
	r.retried = cs.retried
	switch {
	case err != nil:
		return r, nferr.Wrap(nferr.KindOf(err), err, "Q%d under %s", q, fault)
	default:
		if err := tpch.CheckAnswer(q, sf, got); err != nil {
			r.verdict = "WRONG: " + err.Error()
		} else {
			r.verdict = "ok"
		}
	}
	return r, nil
}

// restartedFrom returns a check that node id runs as a newer process than
// in before.
func restartedFrom(before []cluster.NodeInfo, id string) func(cluster.NodeInfo) bool {
	var old time.Time
	for _, m := range before {
		if m.ID == id {
			old = m.Started
		}
	}
	return func(m cluster.NodeInfo) bool { return m.ID != id || !m.Started.Equal(old) }
}

// waitWhole waits until every node is a member again (restarted nodes
// rejoined, hung ones resumed), the storage nodes serve Flight, and every
// member passes ok (when given).
func waitWhole(ctx context.Context, c *cluster.Client, workers, storage int, ok func(cluster.NodeInfo) bool) error {
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err := c.WaitForMembers(wctx, func(ms []cluster.NodeInfo) bool {
		w, s := 0, 0
		for _, m := range ms {
			if ok != nil && !ok(m) {
				return false
			}
			switch {
			case m.Leaving:
			case m.Role == cluster.RoleWorker && m.DataAddr != "":
				w++
			case m.Role == cluster.RoleStorage && m.FlightAddr != "":
				s++
			}
		}
		return w == workers && s == storage
	})
	if err != nil {
		return nferr.Wrap(nferr.KindUnavailable, err, "waiting for the cluster to be whole again")
	}
	return nil
}

func printChaos(w io.Writer, o chaosOptions, sf float64, runs []chaosRun) error {
	faults := append([]string{"none"}, o.Faults...)
	byQ := map[int]map[string]chaosRun{}
	total := map[string]time.Duration{}
	retried := map[string]int{}
	bad := 0
	for _, r := range runs {
		if byQ[r.q] == nil {
			byQ[r.q] = map[string]chaosRun{}
		}
		byQ[r.q][r.fault] = r
		total[r.fault] += r.took
		retried[r.fault] += r.retried
		if r.verdict != "ok" {
			bad++
		}
	}
	header := []string{"query"}
	for _, f := range faults {
		header = append(header, f+"_ms")
		if f != "none" {
			header = append(header, f+"_retries")
		}
	}
	qs := make([]int, 0, len(byQ))
	for q := range byQ {
		qs = append(qs, q)
	}
	sort.Ints(qs)
	var rows [][]string
	for _, q := range qs {
		row := []string{fmt.Sprintf("Q%d", q)}
		for _, f := range faults {
			r := byQ[q][f]
			cell := ms(r.took)
			if r.verdict != "ok" {
				cell += " WRONG"
			}
			row = append(row, cell)
			if f != "none" {
				row = append(row, fmt.Sprint(r.retried))
			}
		}
		rows = append(rows, row)
	}
	tot := []string{"total"}
	ratio := []string{"ratio"}
	for _, f := range faults {
		tot = append(tot, ms(total[f]))
		ratio = append(ratio, fmt.Sprintf("%.2f", float64(total[f])/float64(max(total["none"], 1))))
		if f != "none" {
			tot = append(tot, fmt.Sprint(retried[f]))
			ratio = append(ratio, "")
		}
	}
	rows = append(rows, tot, ratio)
	title := fmt.Sprintf("TPC-H SF %g on %d workers, %d storage nodes (replication %d), one fault per query; ratio = total / fault-free total",
		sf, o.Workers, o.Storage, o.Replication)
	writeFigures(w, formatTable, title, header, rows, func(col int) bool { return col == 0 })
	if bad > 0 {
		return nferr.Dataf("%d wrong answers", bad)
	}
	return nil
}
