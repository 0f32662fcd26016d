package main

import (
	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
)

var lovelockSimFlags struct {
	from, phi, format string
	servers           int
	p                 bench.SimParams
}

var benchLovelockSimCmd = &cobra.Command{
	Use:   "simulate --from RUN.csv",
	Short: "Project a measured run onto clusters one machine cannot hold (phi 1..8, up to 1,024 NICs)",
	Long: `simulate takes the profile of a ` + "`bench lovelock run`" + ` (--from its CSV: per query the
server's time, its workers' and storage hosts' CPU seconds, the bytes storage
sent, and from the phi-2 rows the bytes a repartition moves) and projects each
query's time on clusters of smart NICs: --servers servers, each replaced by
phi NICs of --server-cores / --cpu-ratio cores and a --nic-mbit port. A query's
time is its bottleneck among CPU, network and the storage hosts' CPU (the
others overlap), plus the server's residual latency and a fixed cost per task
(--task-cost, a task per node and stage). It prints mu(phi), the cost and
energy ratios of the paper's model, and which resource bounds each
configuration; where the CSV measured a configuration, the measured total
and the projection's error are printed beside it.

To check it against an emulation on one machine, give the run's parameters
(--nic-mbit, --server-cores, --storage-cpus) and --machine-cores (all the
emulated hosts shared the machine's cores). gamma, --task-cost and --net-cpu
are calibrated on the runs of docs/lovelock; measure them on the hardware a
projection is for (nicflow bench scale prints the fixed costs).`,
	Example: `  # the emulated SF 1, 200 Mbit/s run against its own projection
  nicflow bench lovelock simulate --from docs/lovelock/sf1-200mbit.csv --phi 1,2,3 --machine-cores 2

  # 64 servers replaced by phi NICs each, up to 512 NICs
  nicflow bench lovelock simulate --from docs/lovelock/sf1-200mbit.csv --servers 64 --phi 1,2,3,4,6,8`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := lovelockSimFlags
		if f.from == "" {
			return usagef("--from is required: the CSV of a `nicflow bench lovelock run`")
		}
		if err := checkFormat(f.format, formatTable, formatCSV, formatJSON); err != nil {
			return err
		}
		if f.servers < 1 || f.servers > 1024 {
			return usagef("--servers must be 1 to 1024")
		}
		if err := f.p.Validate(); err != nil {
			return err
		}
		phis, err := bench.ParseFloats("--phi", f.phi)
		if err != nil {
			return err
		}
		for _, phi := range phis {
			if phi*float64(f.servers) > 1024 {
				return usagef("--phi %g x --servers %d is more than 1,024 NICs", phi, f.servers)
			}
		}
		rows, err := readFromCSV(f.from, bench.ReadLovelockCSV)
		if err != nil {
			return err
		}
		qs, err := bench.SimProfile(rows)
		if err != nil {
			return err
		}
		rs := bench.Simulate(f.p, qs, phis, f.servers)
		if f.servers == 1 {
			bench.AttachMeasured(rs, rows)
		}
		return bench.WriteSimulation(cmd.OutOrStdout(), f.format, rs)
	},
}

func init() {
	d := bench.DefaultSimParams()
	f := &lovelockSimFlags
	fs := benchLovelockSimCmd.Flags()
	fs.StringVar(&f.from, "from", "", "CSV of a `nicflow bench lovelock run` (required): the profile")
	fs.StringVar(&f.phi, "phi", "1,2,3,4", "smart NICs per server (list)")
	fs.IntVar(&f.servers, "servers", 1, "servers the cluster replaces (data grows with them)")
	fs.Float64Var(&f.p.NICMbit, "nic-mbit", d.NICMbit, "every node's NIC rate in Mbit/s (the server's and each smart NIC's)")
	fs.Float64Var(&f.p.ServerCores, "server-cores", d.ServerCores, "the server's cores (of the profile's run)")
	fs.Float64Var(&f.p.CPURatio, "cpu-ratio", d.CPURatio, "a server's CPU over a smart NIC's (k)")
	fs.Float64Var(&f.p.StorageCPUs, "storage-cpus", d.StorageCPUs, "the storage hosts' cores")
	fs.Float64Var(&f.p.Gamma, "gamma", d.Gamma, "how CPU work shrinks on smaller nodes: work x (cores/server cores)^gamma")
	fs.Float64Var(&f.p.TaskCost, "task-cost", d.TaskCost, "fixed seconds per task (a task per node and stage)")
	fs.Float64Var(&f.p.Stages, "stages", d.Stages, "stages per query")
	fs.Float64Var(&f.p.MachineCores, "machine-cores", 0, "cap all hosts' CPU at these cores (validating against an emulation on one machine; 0: no cap)")
	fs.Float64Var(&f.p.NetCPU, "net-cpu", d.NetCPU, "with --machine-cores: CPU seconds the machine spends per GB moved between hosts")
	fs.Float64Var(&f.p.CS, "cs", d.CS, "server cost relative to a NIC")
	fs.Float64Var(&f.p.PS, "ps", d.PS, "server power relative to a NIC")
	fs.Float64Var(&f.p.CP, "cp", d.CP, "PCIe devices' cost relative to a NIC")
	fs.Float64Var(&f.p.PP, "pp", d.PP, "PCIe devices' power relative to a NIC")
	fs.Float64Var(&f.p.CF, "cf", d.CF, "fabric cost per server relative to a NIC")
	fs.StringVar(&f.format, "format", formatTable, "output format: table, csv or json")
	benchLovelockCmd.AddCommand(benchLovelockSimCmd)
}
