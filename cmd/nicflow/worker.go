package main

import (
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/shuffle"
)

var workerFlags nodeFlags

// workerDecodeFlags place the worker's Parquet page decompression
// (shuffle.OffloadParquetDecompression).
var workerDecodeFlags struct {
	device  string
	engines int
	cpus    string
}

// startNICDevice starts an emulated NIC engine of engines threads pinned
// to the CPU list cpus (named by the flag cpusFlag in errors; "" pins
// nothing): the agent's --device nic and the worker's --decode-device nic.
func startNICDevice(engines int, cpus, cpusFlag string) (*shuffle.NICDevice, error) {
	o := shuffle.NICOptions{Engines: engines}
	if cpus != "" {
		var err error
		if o.CPUs, err = parseCPUList(cpus); err != nil {
			return nil, usagef("%s: %v", cpusFlag, err)
		}
	}
	dev, err := shuffle.NewNICDevice(o)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return dev, nil
}

// startDecodeDevice routes the process's Parquet page decompression to
// the device the flags name; the returned stop closes it ("cpu": nothing
// to start).
func startDecodeDevice() (stop func(), err error) {
	f := workerDecodeFlags
	switch f.device {
	case "cpu", "":
		if f.engines != 1 || f.cpus != "" {
			return nil, usagef("--decode-engines and --decode-cpus go with --decode-device nic")
		}
		return func() {}, nil
	case "nic":
	default:
		return nil, usagef("--decode-device %q: want cpu or nic", f.device)
	}
	dev, err := startNICDevice(f.engines, f.cpus, "--decode-cpus")
	if err != nil {
		return nil, err
	}
	restore, err := shuffle.OffloadParquetDecompression(dev)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return func() { restore(); dev.Close() }, nil
}

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
cores, a container's limits); the scheduler places tasks by them.

Storage nodes send Parquet pages as stored, and the worker decompresses
them. --decode-device nic hands that to a decompression engine driven
through request queues (an emulated SmartNIC engine: --decode-engines
threads, pinned with --decode-cpus), as a DPU's own engine would take it;
a page the engine refuses (queue full) or fails decodes on the worker's
cores. /metrics counts the pages each way (nicflow_page_decode_pages_total).`,
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
		stopDecode, err := startDecodeDevice()
		if err != nil {
			return err
		}
		defer stopDecode()
		n, err := startWorkerNode(cmd.Context(), o)
		if err != nil {
			return err
		}
		return serveNode(cmd.Context(), n, workerFlags.readyFile)
	},
}

func init() {
	addNodeFlags(workerCmd, &workerFlags, cluster.RoleWorker)
	f := workerCmd.Flags()
	f.StringVar(&workerDecodeFlags.device, "decode-device", "cpu", "where Parquet pages are decompressed: cpu, or nic (an emulated NIC decompression engine behind request queues, falling back to the CPU)")
	f.IntVar(&workerDecodeFlags.engines, "decode-engines", 1, "engine threads of --decode-device nic")
	f.StringVar(&workerDecodeFlags.cpus, "decode-cpus", "", "CPUs the --decode-device nic engine threads are pinned to, e.g. 6-7")
	rootCmd.AddCommand(workerCmd)
}
