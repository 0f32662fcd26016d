package main

import (
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
)

var workerFlags nodeFlags

// workerExecutors are the task kinds every worker runs; startWorkerNode
// adds the engine's fragment executor (cluster.FragmentTaskKind) with the
// worker's own shuffle agent.
var workerExecutors = cluster.ExecutorMux{
	cluster.CheckTaskKind: cluster.CheckExecutor{},
}

var workerCmd = &cobra.Command{
	Use:   "worker --keys KEYDIR --join COORDINATOR:7946",
	Short: "Run a worker: executes query tasks (a Lovelock lite-compute node)",
	Long: `Run a worker node. It joins the cluster through gossip (--join, any member's
gossip address), advertises its cores, memory and NIC bandwidth, and runs the
task fragments the coordinator sends to its control port (--listen, default
7401) over mutual TLS. Tasks stop when their query ends, is canceled, or the
coordinator dies.

Query stages exchange data through the worker's shuffle agent (mutual TLS),
which listens on --data-addr's port (advertised as given) or on an
ephemeral port of the advertise address; scans read from the storage nodes
holding the files.

Set --cores and --memory to what the node may give to queries (a DPU's ARM
cores, a container's limits); the scheduler places tasks by them.`,
	Example: `  # on a SmartNIC with 16 ARM cores and 48 GiB, 200 Gbit/s port
  nicflow worker --keys /etc/nicflow/keys --join 10.0.0.1:7946 \
      --advertise 10.0.0.2 --cores 16 --memory 40GiB --nic-bandwidth 200Gbit

  # two workers on one machine need distinct ports
  nicflow worker --keys k --join 127.0.0.1:7946 --gossip :7950 --listen :7410 --admin 127.0.0.1:7490`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		o, err := workerFlags.options(cmd, cluster.RoleWorker)
		if err != nil {
			return err
		}
		// NB: a worker offering fewer cores than the machine has (a
		// container's share, one of many local workers) runs its Go
		// scheduler on that many, unless GOMAXPROCS says otherwise.
		if o.Cores > 0 && o.Cores < runtime.GOMAXPROCS(0) && os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(o.Cores)
		}
		n, err := startWorkerNode(cmd.Context(), o)
		if err != nil {
			return err
		}
		return serveNode(cmd.Context(), n, workerFlags.readyFile)
	},
}

func init() {
	addNodeFlags(workerCmd, &workerFlags, cluster.RoleWorker)
	rootCmd.AddCommand(workerCmd)
}
