package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

var benchShuffleFlags struct {
	apps, aggSizes, buffers, threads, agents, codecs string
	nodes, ranksPerNode                              int
	format, out, plot, from                          string
	local, pin                                       string
	updates, tableSize, rows, degree                 int
	batches, batchRows, repeat                       int
	seed                                             uint64
	netns, secure, emulateDPU                        bool
	rate                                             string
	hostCPUs, dpuCPUs                                float64
}

var benchShuffleCmd = &cobra.Command{
	Use:   "shuffle",
	Short: "Measure the shuffle layer on Buddy's workloads (msgs/s vs aggregation, buffers, threads, corun vs offload)",
	Long: `Run Buddy's communication benchmarks on nicflow's shuffle layer, each node a
separate process on 127.0.0.1 (the nicflow binary re-executed), and print one
row per configuration. Every list flag takes comma-separated values and the
benchmark runs their cross product.

Workloads (--app):
  histogram    random 8-byte increments to a distributed table
  transpose    sparse matrix transpose: CSR rows walked, nonzeros sent to the
               owner of their column, transposed rows rebuilt on arrival
  repartition  hash repartition of lineitem-shaped Arrow batches by orderkey,
               one Arrow IPC payload per destination, decoded on arrival
  sssp         single-source shortest paths, synchronous Bellman-Ford on a
               random graph (--rows vertices per rank, --degree edges each),
               one channel per round, checked against Dijkstra

Agent placement (--agent):
  corun    the routing agent runs inside each worker process
  offload  a separate "nicflow agent" process per node; workers reach it over a
           shared-memory ring (--local shm) or the unix socket (--local unix).
           With --pin auto the agents are pinned to the last CPU and the
           workers to the others (a DPU's cores are not the host's).

Every run checks its answer (table sums, checksums of the transposed matrix,
row counts and key sums, shortest-path sums) and fails loudly on a lost or duplicated message.
Columns: app, nodes, ranks_per_node, agg_size, buffers, threads, agent, codec,
msgs, bytes, elapsed_s, msgs_per_s, mb_per_s, worker_cpu_s, agent_cpu_s
(CPU time of the processes during the run, from getrusage; a corun worker's
includes its agent), remote_frames, avg_frame_bytes, wire_mb, parks.

--plot DIR writes SVG charts (rate vs each varied dimension, corun vs
offload). --from FILE reprints and replots a CSV from an earlier run.
--netns (root) puts each node on an emulated host: a network namespace whose
NIC is shaped with tbf to --rate both ways, instead of loopback.

--emulate-dpu (root) gives each node a host and a DPU, as cgroup CPU quotas:
the node's worker gets --host-cpus cores; an offloaded agent runs on the
DPU's --dpu-cpus cores, on top of the host's, as a real DPU's cores are; a
corun agent shares the host's quota with its worker. Pinning is off. This
is how offload can be faster than corun on one machine (docs/shuffle.md).

Agent connections
run without authentication unless --secure (TLS 1.3 keyed by a generated
cluster key).`,
	Example: `  # the figure in docs/shuffle.md: histogram over 4 nodes, 1 KiB to 64 KiB
  nicflow bench shuffle --app histogram --nodes 4 --ranks-per-node 4 \
      --agg-size 1KiB,4KiB,16KiB,64KiB --agent corun,offload --format csv \
      --out shuffle.csv --plot docs/shuffle

  # pipelining and routing threads
  nicflow bench shuffle --app transpose --buffers 1,2,4,8 --threads 1,2

  # compressed repartition over a 1 Gbit/s emulated link
  sudo nicflow bench shuffle --app repartition --codec none,s2,zstd --netns --rate 1gbit

  # corun against offload with the agent on an emulated DPU
  sudo nicflow bench shuffle --app histogram,transpose,sssp --agent corun,offload --emulate-dpu

  # replot an earlier run
  nicflow bench shuffle --from shuffle.csv --plot /tmp/plots`,
	Args: cobra.NoArgs,
	RunE: runBenchShuffle,
}

func intList(flag, s string, bytesOK bool) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		var v int64
		var err error
		if bytesOK {
			v, err = exec.ParseBytes(p)
		} else {
			var n int
			n, err = strconv.Atoi(p)
			v = int64(n)
		}
		if err != nil || v < 1 {
			return nil, usagef("--%s: %q is not a positive %s", flag, p, map[bool]string{true: "size", false: "integer"}[bytesOK])
		}
		out = append(out, int(v))
	}
	if len(out) == 0 {
		return nil, usagef("--%s needs at least one value", flag)
	}
	return out, nil
}

func runBenchShuffle(cmd *cobra.Command, _ []string) error {
	f := &benchShuffleFlags
	if f.format != "table" && f.format != "csv" {
		return usagef("--format %q: want table or csv", f.format)
	}
	var rows []bench.ShuffleRow
	if f.from != "" {
		var err error
		if rows, err = readFromCSV(f.from, bench.ReadShuffleCSV); err != nil {
			return err
		}
	} else {
		o := bench.ShuffleOptions{Apps: splitList(f.apps), Nodes: f.nodes, RanksPerNode: f.ranksPerNode,
			Agents: splitList(f.agents), Codecs: splitList(f.codecs), Local: f.local, Pin: f.pin,
			Updates: f.updates, TableSize: f.tableSize, Rows: f.rows, RowDegree: f.degree, Batches: f.batches,
			BatchRows: f.batchRows, Repeat: f.repeat, Seed: f.seed, Netns: f.netns, Rate: f.rate, Secure: f.secure, Progress: cmd.ErrOrStderr(),
			EmulateDPU: f.emulateDPU, HostCPUs: f.hostCPUs, DPUCPUs: f.dpuCPUs}
		var err error
		if o.AggSizes, err = intList("agg-size", f.aggSizes, true); err != nil {
			return err
		}
		if o.Buffers, err = intList("buffers", f.buffers, false); err != nil {
			return err
		}
		if o.Threads, err = intList("threads", f.threads, false); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return usagef("%v", err)
		}
		if rows, err = bench.RunShuffle(cmd.Context(), o); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	var err error
	if f.format == "csv" {
		err = bench.WriteShuffleCSV(&buf, rows)
	} else {
		err = bench.WriteShuffleTable(&buf, rows)
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := writeFileAtomic(f.out, buf.Bytes()); err != nil {
			return err
		}
	} else if _, err := cmd.OutOrStdout().Write(buf.Bytes()); err != nil {
		return err
	}
	if f.plot != "" {
		files, err := bench.PlotShuffle(rows, f.plot)
		if err != nil {
			return err
		}
		for _, p := range files {
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", p)
		}
	}
	return nil
}

// readFromCSV reads the --from CSV of an earlier benchmark run.
func readFromCSV[T any](path string, read func(io.Reader) ([]T, error)) ([]T, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nferr.IOf("--from: %v", err)
	}
	defer fh.Close()
	rows, err := read(fh)
	if err != nil {
		return nil, nferr.Wrap(nferr.KindData, err, "%s", path)
	}
	return rows, nil
}

// writeFileAtomic writes path through a temporary file and a rename, so an
// interrupted run leaves the old file or none.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return nferr.IOf("writing %s: %v", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nferr.IOf("writing %s: %v", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nferr.IOf("writing %s: %v", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nferr.IOf("installing %s: %v", path, err)
	}
	return nil
}

var benchShuffleNodeCmd = &cobra.Command{
	Use:    "shuffle-node",
	Short:  "One node of `nicflow bench shuffle` (started by it; speaks JSON on stdin/stdout)",
	Hidden: true,
	Args:   cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return bench.RunShuffleNode(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
	},
}

func init() {
	f := benchShuffleCmd.Flags()
	b := &benchShuffleFlags
	d := bench.DefaultShuffleOptions()
	f.StringVar(&b.apps, "app", strings.Join(d.Apps, ","), "workloads: histogram, transpose, repartition, sssp")
	f.IntVar(&b.nodes, "nodes", d.Nodes, "node processes")
	f.IntVar(&b.ranksPerNode, "ranks-per-node", d.RanksPerNode, "tasks (ranks) per node")
	f.StringVar(&b.aggSizes, "agg-size", "16KiB", "aggregation buffer sizes (AggSize)")
	f.StringVar(&b.buffers, "buffers", strconv.Itoa(d.Buffers[0]), "runtime buffers per rank (Buffers)")
	f.StringVar(&b.threads, "threads", strconv.Itoa(d.Threads[0]), "routing threads per agent (Threads)")
	f.StringVar(&b.agents, "agent", strings.Join(d.Agents, ","), "agent placement: corun, offload")
	f.StringVar(&b.codecs, "codec", "none", "frame codecs between agents: none, s2, zstd")
	f.StringVar(&b.format, "format", "table", "output format: table or csv")
	f.StringVar(&b.out, "out", "", "write the output to this file instead of stdout")
	f.StringVar(&b.plot, "plot", "", "write SVG charts into this directory")
	f.StringVar(&b.from, "from", "", "print and plot this CSV instead of running")
	f.StringVar(&b.local, "local", "shm", "worker-to-agent link in offload mode: shm or unix")
	f.StringVar(&b.pin, "pin", "auto", "CPU pinning in offload mode: auto or none")
	f.IntVar(&b.updates, "updates", 0, "histogram: updates per rank (default 524288)")
	f.IntVar(&b.tableSize, "table-size", 0, "histogram: table slots per rank (default 262144)")
	f.IntVar(&b.rows, "rows", 0, "transpose: matrix rows per rank; sssp: vertices per rank (default 16384)")
	f.IntVar(&b.degree, "degree", 0, "transpose: nonzeros per row; sssp: edges per vertex (default 16)")
	f.IntVar(&b.batches, "batches", 0, "repartition: batches per rank (default 8)")
	f.IntVar(&b.batchRows, "batch-rows", 0, "repartition: rows per batch (default 8192)")
	f.IntVar(&b.repeat, "repeat", 1, "runs per configuration (the fastest is reported)")
	f.Uint64Var(&b.seed, "seed", 42, "workload seed")
	f.BoolVar(&b.netns, "netns", false, "one network namespace per node with a tbf rate limit (root)")
	f.StringVar(&b.rate, "rate", "1gbit", "tbf rate per node with --netns (tc syntax: 100mbit, 1gbit)")
	f.BoolVar(&b.emulateDPU, "emulate-dpu", false, "each node a host and a DPU with CPU quotas; offloaded agents on the DPU (root)")
	f.Float64Var(&b.hostCPUs, "host-cpus", 0, "with --emulate-dpu: each node's host quota in cores (default: half the machine's cores / nodes)")
	f.Float64Var(&b.dpuCPUs, "dpu-cpus", 0, "with --emulate-dpu: each node's DPU quota in cores (default: half the machine's cores / nodes)")
	f.BoolVar(&b.secure, "secure", false, "agent connections over TLS keyed by a generated cluster key (default: insecure)")
	benchCmd.AddCommand(benchShuffleCmd, benchShuffleNodeCmd)
}
