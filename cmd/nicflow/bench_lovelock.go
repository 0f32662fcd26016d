package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

var benchLovelockCmd = &cobra.Command{
	Use:   "lovelock",
	Short: "Lovelock: the cost/energy model, and TPC-H on a server against emulated smart-NIC clusters",
	Long: `Lovelock (Park et al., "Towards Smart NIC-hosted Clusters") replaces every
server of an analytics cluster with phi headless smart NICs: the cluster runs
mu times as long (mu < 1: faster) and costs (c_s + c_p) / (phi + c_p) times
less, draws (p_s + p_p) / (mu (phi + p_p)) times less energy, because each
NIC is cheap and frugal and the cluster's network bandwidth grows with phi.

  model   the paper's equations: its scenarios, or your own values
  run     measure mu: TPC-H on one server and on Lovelock clusters, each
          host emulated (own network namespace, shaped NIC, CPU quota)
  clean   remove what a killed run left behind

docs/lovelock.md has the argument, the figures measured here and their
reading.`,
}

var lovelockModelFlags struct {
	phi, mu, cs, ps, cp, pp, cf, cpuShare, cpuRatio string
	format                                          string
}

var benchLovelockModelCmd = &cobra.Command{
	Use:   "model [--phi LIST] [--mu LIST | --cpu-share LIST [--cpu-ratio LIST]] [--cs ..]",
	Short: "Print the Lovelock cost and energy ratios: the paper's scenarios, or the cross product of your values",
	Long: `Without flags, print the scenarios the paper computes (sections 4 and 5), the
ratios computed here and what the paper prints for each.

With flags, print the cross product of the given values (each flag takes a
comma-separated list; unset ones take the defaults below):

  --phi         smart NICs per replaced server             (1,2,3,4)
  --mu          slowdown: Lovelock time / server time      (1)
  --cpu-share   instead of --mu: the share c of a server's time spent on
                CPU (the rest is network: remote shuffle and storage I/O);
                mu is then projected as (k c + (1 - c)) / phi (Figure 4)
  --cpu-ratio   k, a server's CPU over a smart NIC's       (4.7, the paper's median)
  --cs, --ps    a server's cost and power, relative to a NIC   (7, 11)
  --cp, --pp    PCIe devices' cost and power, relative to a NIC (0, 0)
  --cf          the fabric's cost per server                (0.7: 10% of c_s)

Columns: cost = (cs + cp) / (phi + cp), energy = (ps + pp) / (mu (phi + pp)),
cost_ratio_fabric = (cs + cf + cp) / (phi (1 + cf) + cp): how many times a
server cluster costs (or draws) more than a Lovelock cluster.`,
	Example: `  nicflow bench lovelock model
  nicflow bench lovelock model --phi 2,3,4 --mu 0.8,1,1.2
  nicflow bench lovelock model --phi 1,2,3,4,5 --cpu-share 0.2,0.39,0.6 --format csv
  nicflow bench lovelock model --phi 1,2 --cp 21 --pp 33.2 --ps 11.2 --mu 1,0.9`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := lovelockModelFlags
		if err := checkFormat(f.format, formatTable, formatCSV, formatJSON); err != nil {
			return err
		}
		var ss []bench.ModelScenario
		if cmd.Flags().NFlag() == 0 || (cmd.Flags().NFlag() == 1 && cmd.Flags().Changed("format")) {
			ss = bench.PaperScenarios()
		} else {
			var g bench.ModelGrid
			for _, l := range []struct {
				name string
				src  string
				dst  *[]float64
			}{{"phi", f.phi, &g.Phi}, {"mu", f.mu, &g.Mu}, {"cs", f.cs, &g.CS}, {"ps", f.ps, &g.PS}, {"cp", f.cp, &g.CP},
				{"pp", f.pp, &g.PP}, {"cf", f.cf, &g.CF}, {"cpu-share", f.cpuShare, &g.CPUShare}, {"cpu-ratio", f.cpuRatio, &g.CPURatio}} {
				v, err := floatList(l.name, l.src)
				if err != nil {
					return err
				}
				*l.dst = v
			}
			var err error
			if ss, err = g.Scenarios(); err != nil {
				return usagef("%v", err)
			}
		}
		rs := make([]bench.ModelResult, len(ss))
		for i, s := range ss {
			rs[i] = s.Evaluate()
		}
		return bench.WriteModel(cmd.OutOrStdout(), f.format, rs)
	},
}

// floatList parses a comma-separated list of numbers ("" is none).
func floatList(flag, s string) ([]float64, error) {
	var out []float64
	for _, p := range splitList(s) {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, usagef("--%s: %q is not a number", flag, p)
		}
		out = append(out, v)
	}
	return out, nil
}

var lovelockRunFlags struct {
	dir, sf, phi, queries, format, plot, from, out string
	scanCodec, shuffleCodec, scanMode              string
	runs, storage                                  int
	nicMbit, cpuRatio, serverCores, storageMbit    float64
	storageCPUs                                    float64
	cs, ps, cp, pp, cf                             float64
}

var benchLovelockRunCmd = &cobra.Command{
	Use:   "run [--dir DIR] [--sf SF] [--phi 1,2,3] [--nic-mbit 200]",
	Short: "Measure mu: TPC-H on an emulated server and on emulated smart-NIC (Lovelock) clusters",
	Long: `Run the TPC-H queries on a "server" cluster and on "Lovelock" clusters, on
this machine, with every host emulated (root only):

  host      its own network namespace and address; its NIC a veth into a
            bridge, shaped with tbf in both directions to --nic-mbit; its
            CPU a cgroup quota (cgroup v1 or v2)
  server    one worker host with --server-cores cores (default: all)
  phi=N     N worker hosts, each with server-cores / --cpu-ratio cores and
            its own --nic-mbit NIC (the same port speed as the server's)
  storage   --storage hosts serving the tables over Arrow Flight, NICs
            unshaped unless --storage-mbit (a disaggregated storage service
            is not the bottleneck), each with --storage-cpus cores (the same
            in every configuration; default a quarter of the machine);
            workers never read the files directly, so storage reads and
            shuffles both cross the emulated NICs
  coord     the coordinator, on a host with a --nic-mbit NIC

--scan-codec compresses storage reads (lz4, zstd) and --shuffle-codec the
shuffles between workers (s2, zstd): fewer bytes on the NICs for more CPU.

Every answer is checked (against the reference answers at SF 0.01, 0.1 and
1, else against the server's); a wrong answer makes the command exit 3.

Per configuration and query it prints: the time, mu (time / the server's),
the paper's projected mu from the server's measured CPU share
((k c + 1 - c) / phi), the bytes on the network (all, storage's, workers'),
the workers' and storage's CPU seconds, the CPU share (workers' CPU time
over their quota for the query's time) and how busy the busiest worker NIC
was; a total row per configuration; then per Lovelock configuration the
cost and energy ratios that follow from the measured total mu (--cs, --ps,
--cp, --pp, --cf as in "bench lovelock model").

--plot DIR writes SVG charts: mu against phi (total, projection, network-
and CPU-bound queries) and the time breakdown per configuration. --from
FILE reprints and replots the CSV of an earlier run without running.

Everything the run makes (namespaces, links, the bridge, qdiscs, cgroups,
processes) is removed on success, on error and on Ctrl-C; a run after a
killed one removes the leftovers first ("bench lovelock clean" does only
that). Without root it says so and exits 2.`,
	Example: `  sudo nicflow bench lovelock run --sf 0.1 --phi 1,2,3 --nic-mbit 200
  sudo nicflow bench lovelock run --dir data/sf1 --phi 1,2,3,4 --format csv --out lovelock.csv --plot docs/lovelock
  nicflow bench lovelock run --from lovelock.csv --plot /tmp/plots`,
	Args: cobra.NoArgs,
	RunE: runBenchLovelock,
}

var benchLovelockCleanCmd = &cobra.Command{
	Use:   "clean",
	Short: "Remove the namespaces, links, cgroups and processes a killed lovelock run left",
	Args:  cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		if err := bench.CleanLovelock(); err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), "nothing of an earlier lovelock run is left")
		return nil
	},
}

func init() {
	m := benchLovelockModelCmd.Flags()
	mf := &lovelockModelFlags
	m.StringVar(&mf.phi, "phi", "", "smart NICs per server (list; default 1,2,3,4)")
	m.StringVar(&mf.mu, "mu", "", "slowdown, Lovelock time / server time (list; default 1)")
	m.StringVar(&mf.cs, "cs", "", "server cost relative to a NIC (list; default 7)")
	m.StringVar(&mf.ps, "ps", "", "server power relative to a NIC (list; default 11)")
	m.StringVar(&mf.cp, "cp", "", "PCIe devices' cost relative to a NIC (list; default 0)")
	m.StringVar(&mf.pp, "pp", "", "PCIe devices' power relative to a NIC (list; default 0)")
	m.StringVar(&mf.cf, "cf", "", "fabric cost per server relative to a NIC (list; default 0.7)")
	m.StringVar(&mf.cpuShare, "cpu-share", "", "CPU share of the server's time, projects mu (list)")
	m.StringVar(&mf.cpuRatio, "cpu-ratio", "", "a server's CPU over a NIC's, with --cpu-share (list; default 4.7)")
	m.StringVar(&mf.format, "format", formatTable, "output format: table, csv or json")

	d := bench.DefaultLovelockRunOptions()
	r := benchLovelockRunCmd.Flags()
	rf := &lovelockRunFlags
	r.StringVar(&rf.dir, "dir", "", "TPC-H database from `nicflow tpch gen` (default data/sf<SF>; generated when missing)")
	r.StringVar(&rf.sf, "sf", "", "scale factor to generate when --dir holds no data (default 0.1)")
	r.StringVar(&rf.phi, "phi", "1,2,3", "Lovelock clusters to run: smart NICs per server (list)")
	r.StringVar(&rf.queries, "queries", "1-22", "queries to run, e.g. 1,3,5-7")
	r.IntVar(&rf.runs, "runs", d.Runs, "runs of each query in a row (the fastest counts)")
	r.Float64Var(&rf.nicMbit, "nic-mbit", d.NICMbit, "every NIC's rate in Mbit/s, both directions (server's and each smart NIC's)")
	r.Float64Var(&rf.cpuRatio, "cpu-ratio", d.CPURatio, "smart NICs per server's CPU: a NIC host gets server-cores / this")
	r.Float64Var(&rf.serverCores, "server-cores", 0, "the server's CPU quota in cores (default: all cores of this machine)")
	r.IntVar(&rf.storage, "storage", d.Storage, "storage hosts")
	r.StringVar(&rf.scanCodec, "scan-codec", d.ScanCodec, "compression of storage reads served as rows: none, lz4 or zstd (workers' --scan-codec)")
	r.StringVar(&rf.scanMode, "scan-mode", "auto", "how storage hosts serve scans: auto, bytes (Parquet as stored, decoded by the workers) or rows (workers' --scan-mode)")
	r.StringVar(&rf.shuffleCodec, "shuffle-codec", d.ShuffleCodec, "compression of shuffles between workers: none, s2 or zstd (workers' --shuffle-codec)")
	r.Float64Var(&rf.storageCPUs, "storage-cpus", 0, "each storage host's CPU quota, the same in every configuration (default: a quarter of this machine's cores over the storage hosts)")
	r.Float64Var(&rf.storageMbit, "storage-mbit", 0, "storage hosts' NIC rate in Mbit/s (default 0: unshaped)")
	r.Float64Var(&rf.cs, "cs", d.CS, "server cost relative to a NIC, for the cost ratio")
	r.Float64Var(&rf.ps, "ps", d.PS, "server power relative to a NIC, for the energy ratio")
	r.Float64Var(&rf.cp, "cp", d.CP, "PCIe devices' cost relative to a NIC")
	r.Float64Var(&rf.pp, "pp", d.PP, "PCIe devices' power relative to a NIC")
	r.Float64Var(&rf.cf, "cf", d.CF, "fabric cost per server relative to a NIC")
	r.StringVar(&rf.format, "format", formatTable, "output format: table, csv or json")
	r.StringVar(&rf.out, "out", "", "write the output to this file instead of stdout")
	r.StringVar(&rf.plot, "plot", "", "write SVG charts into this directory")
	r.StringVar(&rf.from, "from", "", "print and plot this CSV of an earlier run instead of running")

	benchLovelockCmd.AddCommand(benchLovelockModelCmd, benchLovelockRunCmd, benchLovelockCleanCmd)
	benchCmd.AddCommand(benchLovelockCmd)
}

func runBenchLovelock(cmd *cobra.Command, _ []string) error {
	f := lovelockRunFlags
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	if err := checkFormat(f.format, formatTable, formatCSV, formatJSON); err != nil {
		return err
	}
	var rows []bench.LovelockRow
	title := ""
	if f.from != "" {
		var err error
		if rows, err = readFromCSV(f.from, bench.ReadLovelockCSV); err != nil {
			return err
		}
	} else {
		o := bench.LovelockRunOptions{Runs: f.runs, NICMbit: f.nicMbit, CPURatio: f.cpuRatio, ServerCores: f.serverCores,
			Storage: f.storage, StorageMbit: f.storageMbit, ScanCodec: f.scanCodec, ScanMode: f.scanMode, ShuffleCodec: f.shuffleCodec, StorageCPUs: f.storageCPUs, CS: f.cs, PS: f.ps, CP: f.cp, PP: f.pp, CF: f.cf, Progress: stderr}
		phis, err := intList("phi", f.phi, false)
		if err != nil {
			return err
		}
		o.Phi = phis
		if o.Queries, err = parseQueryList(f.queries); err != nil {
			return err
		}
		// Root first: nothing is generated or started for a run that
		// cannot make its hosts.
		if err := bench.CheckLovelock(); err != nil {
			return err
		}
		if o.Dir, o.SF, err = lovelockData(ctx, f.dir, f.sf, cmd.OutOrStdout(), stderr); err != nil {
			return err
		}
		o.Connect = func(ctx context.Context, lc *cluster.LocalCluster) (bench.QueryRunner, func(), error) {
			if err := placeTables(ctx, lc, 1, stderr); err != nil {
				return nil, nil, err
			}
			cs, err := dialClusterSQL(lc.CoordinatorAddr, lc.KeyDir, io.Discard)
			if err != nil {
				return nil, nil, err
			}
			run := func(ctx context.Context, text string) (tpch.Result, error) {
				r, _, err := cs.runQueryText(ctx, text, true)
				return r, err
			}
			return run, cs.Close, nil
		}
		if err := o.Validate(); err != nil {
			return usagef("%v", err)
		}
		if rows, err = bench.RunLovelock(ctx, o); err != nil {
			return err
		}
		title = fmt.Sprintf("TPC-H SF %g: a server (%g cores, one %g Mbit/s NIC) against Lovelock clusters of phi smart NICs (%.2f cores and a %g Mbit/s NIC each; cpu ratio %g), storage on %d host(s) of %.2f cores; codecs: scans %s, shuffles %s",
			o.SF, o.ServerCores, o.NICMbit, o.ServerCores/o.CPURatio, o.NICMbit, o.CPURatio, o.Storage, o.StorageCPUs, o.ScanCodec, o.ShuffleCodec)
	}
	var buf bytes.Buffer
	if err := bench.WriteLovelockRun(&buf, f.format, rows, title); err != nil {
		return err
	}
	if f.out != "" {
		if err := writeFileAtomic(f.out, buf.Bytes()); err != nil {
			return err
		}
		if f.format != formatTable {
			// The summary goes to the terminal when the figures go to a file.
			for _, line := range bench.LovelockSummary(rows) {
				fmt.Fprintln(stderr, line)
			}
		}
	} else if _, err := cmd.OutOrStdout().Write(buf.Bytes()); err != nil {
		return err
	}
	if f.plot != "" {
		files, err := bench.PlotLovelock(rows, f.plot)
		if err != nil {
			return err
		}
		for _, p := range files {
			fmt.Fprintf(stderr, "wrote %s\n", p)
		}
	}
	var wrong []string
	for _, r := range rows {
		if r.Query != "total" && r.Answer != "ok" {
			wrong = append(wrong, fmt.Sprintf("%s %s: %s", r.Config, r.Query, r.Answer))
		}
	}
	if len(wrong) > 0 {
		return nferr.Dataf("%d wrong answers:\n  %s", len(wrong), strings.Join(wrong, "\n  "))
	}
	return nil
}

// lovelockData returns the database to run on: --dir when it holds TPC-H
// data, else data generated at --sf into it (default data/sf0.1).
func lovelockData(ctx context.Context, dir, sfFlag string, stdout, stderr io.Writer) (string, float64, error) {
	sf := 0.1
	if sfFlag != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(sfFlag), 64)
		if err != nil || v <= 0 {
			return "", 0, usagef("--sf %q is not a positive number", sfFlag)
		}
		sf = v
	}
	if dir == "" {
		dir = "data/sf" + strconv.FormatFloat(sf, 'f', -1, 64)
	}
	if have, err := tpch.GeneratedSF(dir); err == nil {
		if sfFlag != "" && have != sf {
			return "", 0, usagef("--dir %s holds SF %g, not the --sf %g asked for", dir, have, sf)
		}
		return dir, have, nil
	}
	fmt.Fprintf(stderr, "generating TPC-H SF %g in %s\n", sf, dir)
	opts := tpch.GenOptions{SF: sf, Dir: dir, Format: tpch.FormatParquet, IfMissing: true}
	if err := opts.Validate(); err != nil {
		return "", 0, usagef("%v", err)
	}
	var errOut *os.File
	if fh, ok := stderr.(*os.File); ok {
		errOut = fh
	}
	if err := runTpchGen(ctx, opts, stderr, errOut); err != nil {
		return "", 0, err
	}
	return dir, sf, nil
}
