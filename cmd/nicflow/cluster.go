package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

var clusterCmd = &cobra.Command{
	Use:   "cluster",
	Short: "Create cluster keys, run a local cluster, inspect and check a cluster",
	Long: `A nicflow cluster is one coordinator, workers (lite compute: SmartNICs, DPUs,
small ARM boards, containers) and storage nodes, all running this binary:

  nicflow coordinator   accepts queries, schedules tasks
  nicflow worker        runs tasks
  nicflow storage       serves table data over Arrow Flight

Every node needs the cluster key directory (nicflow cluster init): gossip is
encrypted with its key, and every data or control connection is mutual TLS
with certificates of its CA. A process without the keys can neither join,
nor submit tasks, nor read data.

  cluster init     create a key directory (cluster key + CA)
  cluster cert     issue a node or client directory without the CA key
  cluster local    run a whole cluster as local processes, for development
  cluster status   list the members and running queries
  cluster check    run generator tasks on every worker and verify the data

See docs/cluster.md for a three-machine setup.`,
}

var clusterInitFlags struct {
	dir              string
	force, ifMissing bool
}

var clusterInitCmd = &cobra.Command{
	Use:   "init --dir KEYDIR",
	Short: "Create a cluster key directory: gossip key and certificate authority",
	Long: `Create KEYDIR with:
  cluster.key   32 random bytes (AES-256-GCM key for gossip encryption)
  ca.crt        the cluster's CA certificate (ECDSA P-256, 10 years)
  ca.key        the CA's private key

Copy KEYDIR to every node (mode 0700): nodes issue themselves a certificate at
start with the CA key. To keep the CA key off worker machines, issue node
directories instead with "nicflow cluster cert". Refuses to overwrite an
existing key unless --force (which makes every running node unable to talk to
nodes started with the new key); with --if-missing an existing key directory
is kept and the command succeeds (for init containers and scripts run at
every start).`,
	Example: `  nicflow cluster init --dir /etc/nicflow/keys
  scp -r /etc/nicflow/keys node2:/etc/nicflow/

  # idempotent (docker-compose.yml's keys service)
  nicflow cluster init --dir /keys/ca --if-missing`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := clusterInitFlags
		if f.dir == "" {
			return usagef("--dir is required")
		}
		if f.force && f.ifMissing {
			return usagef("--force and --if-missing contradict each other")
		}
		if f.ifMissing {
			if _, err := cluster.LoadKeys(f.dir, "nicflow-cluster-init", cluster.RoleClient); err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s already holds a cluster key and CA; kept\n", f.dir)
				return nil
			}
		}
		if err := cluster.InitKeys(f.dir, f.force); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote cluster key and CA to %s\n", clusterInitFlags.dir)
		return nil
	},
}

var clusterCertFlags struct {
	dir, out, name, role string
	validity             time.Duration
	ifMissing            bool
}

var clusterCertCmd = &cobra.Command{
	Use:   "cert --dir KEYDIR --out NODEDIR --name NAME --role ROLE",
	Short: "Issue a node (or client) key directory signed by the cluster CA",
	Long: `Write NODEDIR holding the cluster key, the CA certificate and a certificate for
NAME with ROLE (coordinator, worker, storage or client), signed with the CA
key in KEYDIR. NODEDIR holds no CA key: a stolen node directory cannot mint
new identities, and the certificate expires after --validity. Start the node
with --keys NODEDIR and --node-id NAME. With --if-missing, a NODEDIR that
already holds a valid certificate of this cluster's CA for ROLE is kept.`,
	Example: `  nicflow cluster cert --dir keys --out keys-w1 --name w1 --role worker
  nicflow cluster cert --dir keys --out ~/.nicflow/client --name alice --role client
  nicflow cluster cert --dir /keys/ca --out /keys/worker --name worker --role worker --if-missing`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := clusterCertFlags
		if f.dir == "" || f.out == "" || f.name == "" {
			return usagef("--dir, --out and --name are required")
		}
		role, err := cluster.ParseRole(f.role)
		if err != nil {
			return usagef("--role: %v", err)
		}
		if f.ifMissing {
			if _, err := os.Stat(filepath.Join(f.out, cluster.NodeCertFile)); err == nil {
				if err := checkNodeDir(f.dir, f.out, role); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s already holds a %s certificate of this cluster; kept\n", f.out, role)
				return nil
			}
		}
		if err := cluster.IssueNodeDir(f.dir, f.out, f.name, role, f.validity); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s certificate for %s to %s\n", role, f.name, f.out)
		return nil
	},
}

var clusterLocalFlags struct {
	dir         string
	workers     int
	storage     int
	addrFile    string
	keys        string
	replication int
	onFailure   string
	pgListen    string
	coordMemory string
	maxQueued   int
	maxRunning  int
	worker      localWorkerFlags
}

var clusterLocalCmd = &cobra.Command{
	Use:   "local --dir DIR [--workers N] [--storage M]",
	Short: "Run a coordinator, N workers and M storage nodes as local processes",
	Long: `Start a whole cluster on this machine (127.0.0.1): the coordinator, N workers
and M storage nodes, each a separate process running this binary with its
role subcommand and automatically chosen ports. Returns to the prompt only when
stopped: Ctrl-C or SIGTERM stops every node; the nodes also die with this
process if it is killed (Linux parent-death signal).

A worker or storage node that dies is started again under the same ID
(--on-failure restart, the default; it rejoins and queries use it again;
queries running when it died are retried by the coordinator); with
--on-failure stop, or when the coordinator dies, every node stops.

Keys are created in DIR/cluster/keys on first use; node logs go to
DIR/cluster/logs/<node>.log; the coordinator's client address is printed and
written to --addr-file (default DIR/cluster/coordinator.addr), where
"nicflow cluster status --dir DIR" and other clients find it.`,
	Example: `  nicflow cluster local --dir data --workers 3 --storage 1
  # in another terminal
  nicflow cluster status --dir data
  nicflow cluster check --dir data --rows 10000000

  nicflow tpch gen --sf 1 --dir sf1
  nicflow cluster local --dir sf1 --workers 4 --storage 2 --replication 2
  nicflow tpch run --cluster $(cat sf1/cluster/coordinator.addr) --keys sf1/cluster/keys --verify

  # psql and other PostgreSQL clients, through the coordinator
  NICFLOW_PASSWORD=secret-pass nicflow user add --dir sf1 alice
  nicflow cluster local --dir sf1 --workers 2 --storage 1 --pg-listen 127.0.0.1:5433
  PGPASSWORD=secret-pass psql -h 127.0.0.1 -p 5433 -U alice -c "select count(*) from lineitem"`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := clusterLocalFlags
		if f.dir == "" {
			return usagef("--dir is required")
		}
		if f.replication < 1 || (f.storage > 0 && f.replication > f.storage) {
			return usagef("--replication must be between 1 and --storage")
		}
		if f.onFailure != "restart" && f.onFailure != "stop" {
			return usagef("--on-failure %q: want restart or stop", f.onFailure)
		}
		o := cluster.LocalOptions{
			Dir: f.dir, Workers: f.workers, Storage: f.storage, AddrFile: f.addrFile, KeyDir: f.keys,
			Replication: f.replication, Out: cmd.ErrOrStderr(), Restart: f.onFailure == "restart",
			// The nodes read the same config file ([coordinator], [worker],
			// [storage]) and log as this command does.
			Env: childEnv(),
		}
		o.Extra = map[cluster.Role][]string{cluster.RoleWorker: f.worker.args()}
		if f.coordMemory != "" {
			if n, err := exec.ParseBytes(f.coordMemory); err != nil || n <= 0 {
				return usagef("--coordinator-memory %q: want a size such as 1GiB", f.coordMemory)
			}
			o.Extra[cluster.RoleCoordinator] = append(o.Extra[cluster.RoleCoordinator], "--memory", f.coordMemory)
		}
		if f.maxQueued != 0 {
			if f.maxQueued < 1 {
				return usagef("--max-queued must be at least 1, got %d", f.maxQueued)
			}
			o.Extra[cluster.RoleCoordinator] = append(o.Extra[cluster.RoleCoordinator], "--max-queued", strconv.Itoa(f.maxQueued))
		}
		if f.maxRunning != 0 {
			if f.maxRunning < -1 {
				return usagef("--max-running must be -1 (no bound) or positive, got %d", f.maxRunning)
			}
			o.Extra[cluster.RoleCoordinator] = append(o.Extra[cluster.RoleCoordinator], "--max-running", strconv.Itoa(f.maxRunning))
		}
		if f.pgListen != "" {
			// NB: checked here, before any process starts: the
			// coordinator refuses PostgreSQL clients without users.
			if _, err := pgOptions(f.pgListen, f.dir, true, "", "", false); err != nil {
				return err
			}
			o.Extra[cluster.RoleCoordinator] = append(o.Extra[cluster.RoleCoordinator], "--pg-listen", f.pgListen)
		}
		lc, err := cluster.StartLocal(cmd.Context(), o)
		if err != nil {
			return err
		}
		defer lc.Stop()
		fmt.Fprintf(cmd.ErrOrStderr(), "cluster up: %d nodes; keys %s; address in %s\n", len(lc.Nodes), lc.KeyDir, lc.AddrFile)
		if _, err := os.Stat(filepath.Join(f.dir, "catalog")); err == nil && f.storage > 0 {
			if err := placeTables(cmd.Context(), lc, f.replication, cmd.ErrOrStderr()); err != nil {
				return err
			}
		}
		fmt.Fprintln(cmd.OutOrStdout(), lc.CoordinatorAddr)
		err = lc.Wait(cmd.Context())
		fmt.Fprintln(cmd.ErrOrStderr(), "stopping the cluster")
		return err
	},
}

var statusFlags clientFlags

var clusterStatusCmd = &cobra.Command{
	Use:   "status (--cluster ADDR --keys KEYDIR | --dir DIR)",
	Short: "List the cluster's members and running queries",
	Example: `  nicflow cluster status --dir data
  nicflow cluster status --cluster 10.0.0.1:7400 --keys /etc/nicflow/keys`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		c, addr, err := statusFlags.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
		defer cancel()
		ms, err := c.Members(ctx)
		if err != nil {
			return err
		}
		qs, err := c.Queries(ctx)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "coordinator %s: %d members\n", addr, len(ms))
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ROLE\tID\tCORES\tMEMORY\tNIC\tGOSSIP\tCONTROL\tDATA\tFLIGHT\tUP")
		for _, m := range ms {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Role, m.ID, m.Cores, exec.FormatBytes(m.Memory),
				cluster.FormatBandwidth(m.NICBandwidth), m.GossipAddr, dash(m.ControlAddr), dash(m.DataAddr), dash(m.FlightAddr),
				time.Since(m.Started).Round(time.Second))
		}
		tw.Flush()
		if len(qs) > 0 {
			fmt.Fprintf(out, "\n%d running queries\n", len(qs))
			for _, p := range qs {
				fmt.Fprintf(out, "  %s (%s) %s, %s\n", p.QueryID, p.Kind, p.Elapsed, progressLine(p))
			}
		}
		return nil
	},
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var checkFlags struct {
	client  clientFlags
	tasks   int
	rows    int64
	batch   int
	pace    time.Duration
	discard bool
}

var clusterCheckCmd = &cobra.Command{
	Use:   "check (--cluster ADDR --keys KEYDIR | --dir DIR)",
	Short: "Run generator tasks on every worker, verify the data, print throughput",
	Long: `Check the whole cluster path without SQL: the coordinator places --tasks
generator tasks on the workers (default one per worker core) by their free
cores, each task generates --rows rows of a known pseudo-random sequence and
streams them back over the control plane (mutual TLS), and the coordinator
verifies every value. Prints, per task, the node, rows, bytes and time, then
the aggregate throughput. Progress is shown on a terminal; Ctrl-C cancels the
check and every task on the cluster.`,
	Example: `  nicflow cluster check --dir data
  nicflow cluster check --cluster 10.0.0.1:7400 --keys /etc/nicflow/keys --rows 50000000
  nicflow cluster check --dir data --tasks 4 --rows 100000 --pace 100ms   # slow, to watch progress`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := checkFlags
		c, _, err := f.client.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		p := cluster.CheckParams{Tasks: f.tasks, Rows: f.rows, Batch: f.batch, Pace: f.pace, Discard: f.discard}
		if p.Rows < 0 || p.Tasks < 0 || p.Batch < 0 {
			return usagef("--tasks, --rows and --batch must not be negative")
		}
		var onProgress func(cluster.Progress)
		errOut := cmd.ErrOrStderr()
		tty := false
		if fd, ok := errOut.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
			tty = true
			onProgress = func(pr cluster.Progress) { fmt.Fprintf(errOut, "\r\033[K%s", progressLine(pr)) }
		}
		start := time.Now()
		res, err := c.Query(cmd.Context(), "", cluster.QueryOptions{Kind: cluster.CheckKind, Params: p.Params(), OnProgress: onProgress})
		if err != nil {
			return err
		}
		defer res.Close()
		var rowsTotal, bytesTotal int64
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', tabwriter.AlignRight)
		header := false
		for {
			rec, err := res.Next()
			if err != nil {
				if tty {
					fmt.Fprintln(errOut)
				}
				return err
			}
			if rec == nil {
				break
			}
			if !header {
				if tty {
					fmt.Fprint(errOut, "\r\033[K")
				}
				fmt.Fprintln(tw, "task\tnode\trows\tbytes\tms\t")
				header = true
			}
			task := rec.Column(0).(*array.Int32)
			node := rec.Column(1).(*array.String)
			rows := rec.Column(2).(*array.Int64)
			bytes := rec.Column(3).(*array.Int64)
			ms := rec.Column(4).(*array.Int64)
			for i := 0; i < int(rec.NumRows()); i++ {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t\n", task.Value(i), node.Value(i), rows.Value(i), exec.FormatBytes(bytes.Value(i)), ms.Value(i))
				rowsTotal += rows.Value(i)
				bytesTotal += bytes.Value(i)
			}
		}
		tw.Flush()
		el := time.Since(start)
		fmt.Fprintf(cmd.OutOrStdout(), "verified %d rows, %s in %v: %.1f Mrows/s, %s/s\n", rowsTotal, exec.FormatBytes(bytesTotal),
			el.Round(time.Millisecond), float64(rowsTotal)/el.Seconds()/1e6, exec.FormatBytes(int64(float64(bytesTotal)/el.Seconds())))
		return nil
	},
}

// checkNodeDir verifies that the node directory out holds a certificate
// for role signed by the CA of the key directory dir (and the same cluster
// key): a directory left from another cluster must not be kept silently.
func checkNodeDir(dir, out string, role cluster.Role) error {
	if _, err := cluster.LoadKeys(out, "", role); err != nil {
		return err
	}
	want, err := os.ReadFile(filepath.Join(dir, cluster.CACertFile))
	if err != nil {
		return nferr.Authf("reading the cluster CA: %v", err)
	}
	have, err := os.ReadFile(filepath.Join(out, cluster.CACertFile))
	if err != nil {
		return nferr.Authf("reading %s: %v", filepath.Join(out, cluster.CACertFile), err)
	}
	wantKey, err1 := os.ReadFile(filepath.Join(dir, cluster.ClusterKeyFile))
	haveKey, err2 := os.ReadFile(filepath.Join(out, cluster.ClusterKeyFile))
	if !bytes.Equal(want, have) || err1 != nil || err2 != nil || !bytes.Equal(wantKey, haveKey) {
		return nferr.Authf("%s holds a certificate of another cluster (its %s or %s differs from %s's); remove it to issue a new one", out, cluster.CACertFile, cluster.ClusterKeyFile, dir)
	}
	return nil
}

// progressLine renders a progress snapshot on one line.
func progressLine(p cluster.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", p.State, p.Elapsed.Round(100*time.Millisecond))
	if p.Attempt > 0 {
		fmt.Fprintf(&b, " (retry %d after: %s)", p.Attempt, p.Retried[len(p.Retried)-1])
	}
	for _, s := range p.Stages {
		name := s.Name
		if name == "" {
			name = fmt.Sprintf("stage %d", s.Stage)
		}
		fmt.Fprintf(&b, " | %s: %d/%d tasks", name, s.Done, s.Tasks)
		if s.Failed > 0 {
			fmt.Fprintf(&b, ", %d failed", s.Failed)
		}
		fmt.Fprintf(&b, ", %s rows, %s out", humanCount(s.Rows), exec.FormatBytes(s.BytesOut))
	}
	return b.String()
}

func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func init() {
	f := clusterInitCmd.Flags()
	f.StringVar(&clusterInitFlags.dir, "dir", "", "key directory to create (required)")
	f.BoolVar(&clusterInitFlags.force, "force", false, "replace an existing cluster key and CA")
	f.BoolVar(&clusterInitFlags.ifMissing, "if-missing", false, "keep an existing key directory and succeed")

	f = clusterCertCmd.Flags()
	f.StringVar(&clusterCertFlags.dir, "dir", "", "key directory with the CA key (from cluster init)")
	f.StringVar(&clusterCertFlags.out, "out", "", "node directory to write")
	f.StringVar(&clusterCertFlags.name, "name", "", "node or client name (use it as --node-id)")
	f.StringVar(&clusterCertFlags.role, "role", "worker", "coordinator, worker, storage or client")
	f.DurationVar(&clusterCertFlags.validity, "validity", 365*24*time.Hour, "certificate lifetime")
	f.BoolVar(&clusterCertFlags.ifMissing, "if-missing", false, "keep a node directory that already holds a valid certificate for --role")

	f = clusterLocalCmd.Flags()
	f.StringVar(&clusterLocalFlags.dir, "dir", "", "database directory; cluster state goes to DIR/cluster (required)")
	f.IntVar(&clusterLocalFlags.workers, "workers", 2, "number of worker processes")
	f.IntVar(&clusterLocalFlags.storage, "storage", 0, "number of storage processes (nicflow storage)")
	f.StringVar(&clusterLocalFlags.addrFile, "addr-file", "", "write the coordinator's client address here (default DIR/cluster/coordinator.addr)")
	f.StringVar(&clusterLocalFlags.keys, "keys", "", "cluster key directory (default DIR/cluster/keys, created when missing)")
	clusterLocalFlags.worker.addFlags(f)
	f.IntVar(&clusterLocalFlags.replication, "replication", 1, "storage nodes each table file is copied to")
	f.StringVar(&clusterLocalFlags.coordMemory, "coordinator-memory", "", "memory shared by the queries the coordinator runs, e.g. 1GiB (the coordinator's --memory; a query waits in its queue while its share does not fit; default: 60% of this machine's)")
	f.IntVar(&clusterLocalFlags.maxQueued, "max-queued", 0, "queries that may wait for the coordinator's memory at once (the coordinator's --max-queued; default 256)")
	f.IntVar(&clusterLocalFlags.maxRunning, "max-running", 0, "queries that run on the workers at once (the coordinator's --max-running; default: four per worker core, at least 16; -1: no bound)")
	f.StringVar(&clusterLocalFlags.pgListen, "pg-listen", "", "the coordinator serves PostgreSQL clients here, e.g. 127.0.0.1:5433 (users of `nicflow user add --dir DIR`)")
	f.StringVar(&clusterLocalFlags.onFailure, "on-failure", "restart", "when a worker or storage node exits: restart it (the others keep running) or stop the whole cluster")

	addClientFlags(clusterStatusCmd, &statusFlags)

	addClientFlags(clusterCheckCmd, &checkFlags.client)
	f = clusterCheckCmd.Flags()
	f.IntVar(&checkFlags.tasks, "tasks", 0, "generator tasks (default: one per worker core)")
	f.Int64Var(&checkFlags.rows, "rows", 1_000_000, "rows per task")
	f.IntVar(&checkFlags.batch, "batch", 8192, "rows per batch")
	f.DurationVar(&checkFlags.pace, "pace", 0, "pause between batches (slows the check down)")
	f.BoolVar(&checkFlags.discard, "discard", false, "generate without sending the rows back")

	clusterCmd.AddCommand(clusterInitCmd, clusterCertCmd, clusterLocalCmd, clusterStatusCmd, clusterCheckCmd)
	rootCmd.AddCommand(clusterCmd)
}

// placeTables asks the coordinator to place every table on the storage
// nodes and prints what it did.
func placeTables(ctx context.Context, lc *cluster.LocalCluster, replication int, w io.Writer) error {
	c, err := cluster.Dial(lc.CoordinatorAddr, cluster.ClientOptions{KeyDir: lc.KeyDir, Name: "nicflow-cluster-local"})
	if err != nil {
		return err
	}
	defer c.Close()
	return placeWith(ctx, c, replication, w)
}

// placeWith asks the coordinator c to place every table.
func placeWith(ctx context.Context, c *cluster.Client, replication int, w io.Writer) error {
	start := time.Now()
	res, err := c.Query(ctx, "", cluster.QueryOptions{Kind: cluster.PlaceKind, Params: map[string]string{cluster.ParamReplication: strconv.Itoa(replication)}})
	if err != nil {
		return err
	}
	defer res.Close()
	n := 0
	for {
		rec, err := res.Next()
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		n += int(rec.NumRows())
	}
	fmt.Fprintf(w, "placed %d tables on the storage nodes (replication %d) in %s\n", n, replication, time.Since(start).Round(time.Millisecond))
	return nil
}

// localWorkerFlags are the settings of the worker processes that `nicflow
// cluster local` and `nicflow bench cluster` start on this machine.
type localWorkerFlags struct {
	cores        int
	memory       string
	noLocalReads bool
	scanCodec    string
	scanMode     string
	decodeDevice string
}

// addFlags defines --worker-cores, --worker-memory, --no-local-reads,
// --scan-codec, --scan-mode and --decode-device.
func (w *localWorkerFlags) addFlags(fs *pflag.FlagSet) {
	fs.IntVar(&w.cores, "worker-cores", 0, "cores each worker advertises (default: all)")
	fs.StringVar(&w.memory, "worker-memory", "", "memory each worker gives its tasks, e.g. 1GiB (workers' --memory; their operators spill beyond it; default: 60% of this machine's)")
	fs.BoolVar(&w.noLocalReads, "no-local-reads", false, "workers receive every scan over Flight instead of reading the storage nodes' files on this machine")
	fs.StringVar(&w.scanCodec, "scan-codec", "", "compression of scans served as rows over Flight: none, lz4 or zstd (workers' --scan-codec)")
	fs.StringVar(&w.scanMode, "scan-mode", "", "how storage nodes serve scans not read locally: auto (default), bytes or rows (workers' --scan-mode)")
	fs.StringVar(&w.decodeDevice, "decode-device", "", "where workers decompress Parquet pages: cpu (default) or nic, an emulated NIC engine (workers' --decode-device)")
}

// args are the workers' extra command-line flags.
func (w localWorkerFlags) args() []string {
	var args []string
	if w.cores > 0 {
		args = append(args, "--cores", strconv.Itoa(w.cores))
	}
	if w.memory != "" {
		args = append(args, "--memory", w.memory)
	}
	if w.noLocalReads {
		args = append(args, "--no-local-reads")
	}
	if w.scanCodec != "" {
		args = append(args, "--scan-codec", w.scanCodec)
	}
	if w.scanMode != "" {
		args = append(args, "--scan-mode", w.scanMode)
	}
	if w.decodeDevice != "" {
		args = append(args, "--decode-device", w.decodeDevice)
	}
	return args
}
