package main

import (
	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

var coordFlags nodeFlags

var coordSQLFlags struct {
	dir         string
	replication int
	memoryLimit string
}

// coordinatorRunners are the request kinds every coordinator serves; with
// --dir, startCoordinatorNode adds the distributed SQL runner
// (cluster.SQLKind) and table placement (cluster.PlaceKind).
var coordinatorRunners = cluster.RunnerMux{
	cluster.CheckKind: cluster.CheckRunner{},
	cluster.SQLKind: cluster.QueryRunnerFunc(func(q *cluster.Query, _ cluster.ResultWriter) error {
		return nferr.Unavailablef("query %s: this coordinator was started without --dir, so it has no catalog to plan SQL against; restart it with `nicflow coordinator --dir DIR ...`", q.ID)
	}),
}

var coordinatorCmd = &cobra.Command{
	Use:   "coordinator --keys KEYDIR",
	Short: "Run the coordinator: accepts queries, schedules tasks on workers",
	Long: `Run a coordinator node. Clients (nicflow sql --cluster, nicflow tpch run
--cluster, Arrow Flight clients) connect to its client port (--listen,
default 7400) with mutual TLS; workers and storage nodes join it through
gossip (--gossip, default 7946) with the cluster key.

With --dir DIR the coordinator holds DIR's catalog (tables, statistics,
placement of the files on storage nodes) and runs SQL: it plans each query
into stages, places tables that are not yet on the storage nodes there
(copying their files, --replication copies each), places the stages' tasks
on workers according to their advertised cores and memory, streams the
result to the client, and fails a query within seconds, naming the node,
when a node it uses dies. No other process may open DIR while it runs.
/metrics and /status are served on the admin port (default 127.0.0.1:7480).

Every node needs the cluster's key directory (--keys): create it once with
"nicflow cluster init --dir KEYDIR" and copy it to every machine (see
docs/cluster.md for per-node certificates instead).`,
	Example: `  # first machine (10.0.0.1)
  nicflow cluster init --dir /etc/nicflow/keys
  nicflow coordinator --keys /etc/nicflow/keys --advertise 10.0.0.1 --dir /data/tpch

  # settings from the config file ([coordinator] section), one flag overriding it
  nicflow coordinator --config /etc/nicflow/nicflow.toml --log-level debug`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		o, err := coordFlags.options(cmd, cluster.RoleCoordinator)
		if err != nil {
			return err
		}
		so := cluster.SQLOptions{Replication: coordSQLFlags.replication}
		if coordSQLFlags.memoryLimit != "" {
			n, err := exec.ParseBytes(coordSQLFlags.memoryLimit)
			if err != nil || n <= 0 {
				return usagef("--memory-limit %q: want a size such as 2GiB", coordSQLFlags.memoryLimit)
			}
			so.MemoryLimit = n
		}
		if coordSQLFlags.replication < 1 {
			return usagef("--replication must be at least 1")
		}
		c, err := startCoordinatorNode(cmd.Context(), o, coordSQLFlags.dir, so)
		if err != nil {
			return err
		}
		defer c.Close()
		return serveNode(cmd.Context(), c.node, coordFlags.readyFile)
	},
}

func init() {
	addNodeFlags(coordinatorCmd, &coordFlags, cluster.RoleCoordinator)
	f := coordinatorCmd.Flags()
	f.StringVar(&coordSQLFlags.dir, "dir", "", "database directory whose catalog the coordinator plans SQL against (without it, SQL is refused)")
	f.IntVar(&coordSQLFlags.replication, "replication", 1, "storage nodes each file is copied to when the coordinator places a table")
	f.StringVar(&coordSQLFlags.memoryLimit, "memory-limit", "", "memory budget of each task on the workers, e.g. 2GiB (default: the worker's)")
	rootCmd.AddCommand(coordinatorCmd)
}
