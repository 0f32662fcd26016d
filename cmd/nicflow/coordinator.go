package main

import (
	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
)

var coordFlags nodeFlags

// coordinatorRunners are the request kinds the coordinator serves. The SQL
// engine's distributed runner registers "sql" here (issue 6, second half).
var coordinatorRunners = cluster.RunnerMux{
	cluster.CheckKind: cluster.CheckRunner{},
	"sql": cluster.QueryRunnerFunc(func(q *cluster.Query, _ cluster.ResultWriter) error {
		return nferr.Unavailablef("query %s: this coordinator has no distributed SQL planner yet; run SQL embedded with `nicflow sql --dir DIR`, or check the cluster with `nicflow cluster check`", q.ID)
	}),
}

var coordinatorCmd = &cobra.Command{
	Use:   "coordinator --keys KEYDIR",
	Short: "Run the coordinator: accepts queries, schedules tasks on workers",
	Long: `Run a coordinator node. Clients (nicflow sql --cluster, nicflow tpch run
--cluster, Arrow Flight clients) connect to its client port (--listen,
default 7400) with mutual TLS; workers and storage nodes join it through
gossip (--gossip, default 7946) with the cluster key.

The coordinator plans each query, places its tasks on workers according to
their advertised cores and memory, and fails a query within seconds, naming
the node, when a node it uses dies. /metrics and /status are served on the
admin port (default 127.0.0.1:7480).

Every node needs the cluster's key directory (--keys): create it once with
"nicflow cluster init --dir KEYDIR" and copy it to every machine (see
docs/cluster.md for per-node certificates instead).`,
	Example: `  # first machine (10.0.0.1)
  nicflow cluster init --dir /etc/nicflow/keys
  nicflow coordinator --keys /etc/nicflow/keys --advertise 10.0.0.1

  # options from a JSON file, one flag overriding it
  nicflow coordinator --config coordinator.json --log-level debug`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		o, err := coordFlags.options(cmd, cluster.RoleCoordinator)
		if err != nil {
			return err
		}
		n, err := cluster.StartCoordinator(cmd.Context(), o, coordinatorRunners)
		if err != nil {
			return err
		}
		return serveNode(cmd.Context(), n, coordFlags.readyFile)
	},
}

func init() {
	addNodeFlags(coordinatorCmd, &coordFlags, cluster.RoleCoordinator)
	rootCmd.AddCommand(coordinatorCmd)
}
