package main

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/cluster/console"
	"github.com/nicflow/nicflow/cluster/flightsqlsrv"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/buildinfo"
	"github.com/nicflow/nicflow/internal/nferr"
)

var coordFlags nodeFlags

var coordSQLFlags struct {
	dir         string
	replication int
	memoryLimit string
	pgListen    string
	fsqlListen  string
	tlsCert     string
	tlsKey      string
	requireTLS  bool
	clientCA    string
	certReq     bool
	fileRoot    string
	pgLimits    pgLimits
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
/metrics and /status are served on the admin port (default 127.0.0.1:7480),
and the web console at its root (http://127.0.0.1:7480/): members, running
and recent queries with their stages, and a SQL box, which only a loopback
admin address offers (docs/console.md).

With --pg-listen ADDR (and --dir) the coordinator also serves the cluster
over the PostgreSQL wire protocol, as "nicflow serve" serves one database:
psql, pgx and JDBC clients connect there, log in with SCRAM-SHA-256 as
users of "nicflow user add --dir DIR" (a cluster has no anonymous access),
and their queries run on the workers like any other client's. With
--flightsql-listen ADDR Arrow Flight SQL clients (ADBC, JDBC, Go's
database/sql) do the same, logging in as the same users. --tls-cert and
--tls-key give both TLS; --require-tls refuses plain PostgreSQL
connections (Flight SQL with a certificate speaks TLS only).
--tls-client-ca CA.pem lets clients log in with a certificate CA.pem
signed whose CommonName is their user name, without a password;
--tls-client-cert-required refuses clients without one. PostgreSQL
connections are limited as "nicflow serve" limits them:
--pg-max-connections (default 100; past it SQLSTATE 53300, "sorry, too
many clients already"), --pg-auth-timeout (1m) and --pg-idle-timeout (1h).

The coordinator's --memory (default 60% of the machine) is shared by the
queries it runs, as "nicflow serve" shares its own: a query reserves the
result it may hold back for retries (at most --retry-buffer; a statement
the coordinator runs itself, --query-memory) before it starts, and
otherwise waits in a queue of at most --max-queued queries until it fits
or a sixteenth of --memory is free. SET statement_timeout bounds the wait
(SQLSTATE 57014); one query more than the queue holds fails at once
(55006, retry later). A waiting query shows as queued in SHOW QUERIES and
the console; /metrics has the nicflow_admission_* figures.

Every node needs the cluster's key directory (--keys): create it once with
"nicflow cluster init --dir KEYDIR" and copy it to every machine (see
docs/cluster.md for per-node certificates instead).`,
	Example: `  # first machine (10.0.0.1)
  nicflow cluster init --dir /etc/nicflow/keys
  nicflow coordinator --keys /etc/nicflow/keys --advertise 10.0.0.1 --dir /data/tpch

  # PostgreSQL clients too (users live in DIR/users.json)
  nicflow user add --dir /data/tpch alice
  nicflow coordinator --keys /etc/nicflow/keys --dir /data/tpch --pg-listen 0.0.0.0:5433 \
    --tls-cert pg.crt --tls-key pg.key
  psql "host=10.0.0.1 port=5433 user=alice sslmode=require" -c "select count(*) from lineitem"

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
		f := coordSQLFlags
		fileAccess := f.fileRoot
		var pg *pgwire.Options
		var fo *flightsqlsrv.Options
		on := func(l string) bool { return l != "" && l != "off" }
		if on(f.pgListen) || on(f.fsqlListen) {
			if f.dir == "" {
				return usagef("--pg-listen and --flightsql-listen need --dir: clients run SQL against the coordinator's catalog")
			}
			// NB: a cluster has no anonymous access: clients log in as
			// users of DIR/users.json, and read or write the
			// coordinator's files only under --file-root.
			po, err := pgOptions(f.pgListen, f.dir, true, f.tlsCert, f.tlsKey, f.requireTLS)
			if err != nil {
				return err
			}
			if err := clientCertOptions(&po, f.clientCA, f.certReq); err != nil {
				return err
			}
			if err := f.pgLimits.apply(&po); err != nil {
				return err
			}
			if on(f.pgListen) {
				pg = &po
			}
			if on(f.fsqlListen) {
				fo = &flightsqlsrv.Options{Listen: f.fsqlListen, UsersFile: po.UsersFile, TLS: po.TLS, Version: buildinfo.Version()}
			}
			if fileAccess == "" {
				fileAccess = engine.FileAccessNone
			}
		}
		c, err := startCoordinatorNode(cmd.Context(), o, f.dir, so, fileAccess)
		if err != nil {
			return err
		}
		defer c.Close()
		if pg != nil {
			pg.Open = func() (engine.Conn, error) { return cluster.NewSQLConn(c.node.Coordinator(), c.runner), nil }
			srv, err := pgwire.Listen(*pg)
			if err != nil {
				return err
			}
			defer srv.Close()
			go srv.Serve() //nolint:errcheck // ends at Close
			fmt.Fprintf(os.Stderr, "nicflow: serving the cluster to PostgreSQL clients on %s (psql -h %s -p %s -U USER)\n", srv.Addr(), hostOf(srv.Addr()), portOf(srv.Addr()))
		}
		if fo != nil {
			fo.Open = func() (engine.Conn, error) { return cluster.NewSQLConn(c.node.Coordinator(), c.runner), nil }
			fs, err := flightsqlsrv.Listen(*fo)
			if err != nil {
				return err
			}
			defer fs.Close()
			go fs.Serve() //nolint:errcheck // ends at Close
			fmt.Fprintf(os.Stderr, "nicflow: serving the cluster to Flight SQL clients on %s\n", fs.Addr())
		}
		web, err := mountConsole(c.node)
		if err != nil {
			return err
		}
		if web != nil {
			defer web.Close()
		}
		return serveNode(cmd.Context(), c.node, coordFlags.readyFile)
	},
}

func init() {
	addNodeFlags(coordinatorCmd, &coordFlags, cluster.RoleCoordinator)
	f := coordinatorCmd.Flags()
	f.StringVar(&coordSQLFlags.dir, "dir", "", "database directory whose catalog the coordinator plans SQL against (without it, SQL is refused)")
	f.IntVar(&coordSQLFlags.replication, "replication", 1, "storage nodes each file is copied to when the coordinator places a table")
	f.StringVar(&coordSQLFlags.memoryLimit, "memory-limit", "", "memory budget of each task on the workers, e.g. 2GiB (default: the worker's)")
	f.StringVar(&coordSQLFlags.pgListen, "pg-listen", "", "serve the cluster to PostgreSQL clients (psql, pgx, JDBC) on this address, e.g. 0.0.0.0:5433; they log in as users of `nicflow user add --dir DIR` (default: off)")
	f.StringVar(&coordSQLFlags.fsqlListen, "flightsql-listen", "", "serve the cluster to Arrow Flight SQL clients (ADBC, JDBC, database/sql) on this address, e.g. 127.0.0.1:31337; users of `nicflow user add --dir DIR`; beyond loopback only with --tls-cert (default: off)")
	f.StringVar(&coordSQLFlags.tlsCert, "tls-cert", "", "PEM certificate (chain) for PostgreSQL and Flight SQL clients' TLS (with --tls-key)")
	f.StringVar(&coordSQLFlags.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&coordSQLFlags.requireTLS, "require-tls", false, "refuse PostgreSQL connections that do not use TLS")
	f.StringVar(&coordSQLFlags.clientCA, "tls-client-ca", "", "PEM CA certificate(s): PostgreSQL and Flight SQL clients may log in with a certificate they signed, whose CommonName is the user name (no password)")
	f.BoolVar(&coordSQLFlags.certReq, "tls-client-cert-required", false, "with --tls-client-ca: refuse PostgreSQL and Flight SQL clients without a verified certificate")
	f.StringVar(&coordSQLFlags.fileRoot, "file-root", "", "directory under which SQL may read and write the coordinator's files (file tables, COPY); 'none' for no file access. Default: any path, none with --pg-listen")
	coordSQLFlags.pgLimits.register(f)
	rootCmd.AddCommand(coordinatorCmd)
}

// mountConsole serves the web console on the coordinator's admin port:
// with a SQL box when the port is on a loopback address, read-only
// beyond (the coordinator has no console users yet).
func mountConsole(n *cluster.Node) (*console.Console, error) {
	addr := n.Self().AdminAddr
	if addr == "" {
		return nil, nil
	}
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	c, err := console.New(console.Options{Backend: console.NewCluster(n), Loopback: ip != nil && ip.IsLoopback(), Logger: n.Logger()})
	if err != nil {
		return nil, err
	}
	if err := n.HandleAdmin("/", c.Handler()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
