package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

var storageFlags struct {
	dir, listen            string
	parallel, maxMsgKiB    int
	tlsCert, tlsKey, tlsCA string
}

// storageNodeFlags are the cluster flags of `nicflow storage` (--keys
// makes it a cluster member).
var storageNodeFlags nodeFlags

var storageCmd = &cobra.Command{
	Use:   "storage --dir DIR (--keys KEYDIR --join ADDR | --listen ADDR)",
	Short: "Serve a database's tables to the cluster over Arrow Flight (a storage node)",
	Long: `storage runs a storage node: it serves scans of the tables in --dir over Arrow
Flight. A scan request carries the table, the columns, the files and row groups
to read and a filter; the node skips row groups with its statistics, filters
and projects locally, and streams only the surviving rows, so less data crosses
the network. Nodes also receive files for placement ("nicflow storage place").

With --keys the node joins a cluster (gossip through --join, role storage):
Flight then requires mutual TLS with the cluster's certificates, its address
(--listen, default 0.0.0.0:7500) is advertised to the members, and the
coordinator copies table files to it when it places tables. Give every
storage node a stable --node-id: the coordinator's catalog records which
node holds which file by that ID. Without --keys it serves alone (plaintext,
or the --tls-* files).

The node holds the catalog lock of --dir while it runs: give each storage
node its own directory, never the coordinator's.`,
	Example: `  # a cluster member (the coordinator places files here)
  nicflow storage --keys /etc/nicflow/keys --join 10.0.0.1:7946 --advertise 10.0.0.4 \
      --node-id store-1 --dir /data/store-1
  # standalone
  nicflow storage --dir /data/n1 --listen 0.0.0.0:7500 --node-id n1
  nicflow storage --dir /data/n1 --listen :7500 --tls-cert n1.pem --tls-key n1.key --tls-ca ca.pem`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := storageFlags
		so := storage.ServerOptions{ScanParallelism: f.parallel, MaxMessageBytes: f.maxMsgKiB << 10}
		if cmd.Flags().Changed("keys") {
			if f.tlsCert != "" || f.tlsKey != "" || f.tlsCA != "" {
				return usagef("--tls-* files are for a standalone node; a cluster member uses the cluster's keys (--keys)")
			}
			o, err := storageNodeFlags.options(cmd, cluster.RoleStorage)
			if err != nil {
				return err
			}
			listen := f.listen
			if listen == "" {
				listen = "0.0.0.0:7500"
			}
			sn, err := startStorageNode(cmd.Context(), o, f.dir, listen, so)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "nicflow storage %s: %d tables from %s, Flight %s, gossip %s\n", o.NodeID, len(sn.db.Tables()), sn.db.Dir(), sn.node.Self().FlightAddr, sn.node.Self().GossipAddr)
			return serveStorage(cmd.Context(), sn, storageNodeFlags.readyFile)
		}
		if f.dir == "" || f.listen == "" {
			return usagef("--dir and --listen are required (or --keys to join a cluster)")
		}
		tcfg, err := serverTLS(f.tlsCert, f.tlsKey, f.tlsCA)
		if err != nil {
			return err
		}
		db, err := storage.Open(f.dir, storage.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		reportRecovered(db)
		so.NodeID, so.TLS = storageNodeFlags.nodeID, tcfg
		// /metrics only where --admin asks for it: a standalone node has
		// no cluster admin port.
		var metricsAt string
		if a := storageNodeFlags.admin; a != "" && a != "off" {
			sm := cluster.NewStorageMetrics(storageNodeFlags.nodeID)
			so.ScanObserver, so.ReadObserver = sm.ObserveScan, sm.ObserveRead
			hs, addr, err := sm.ServeStandalone(a)
			if err != nil {
				return err
			}
			defer hs.Close()
			metricsAt = ", metrics http://" + addr + "/metrics"
		}
		srv, err := storage.NewServer(db, f.listen, so)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "storage node %s serving %d tables from %s on %s%s\n", storageNodeFlags.nodeID, len(db.Tables()), db.Dir(), srv.Addr(), metricsAt)
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve() }()
		select {
		case err := <-errc:
			return nferr.With(nferr.KindIO, err)
		case <-cmd.Context().Done():
			srv.Stop(5 * time.Second)
			return nil
		}
	},
}

func serverTLS(cert, key, ca string) (*tls.Config, error) {
	if cert == "" && key == "" && ca == "" {
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, nferr.Authf("loading TLS key pair %s, %s: %v", cert, key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}
	if ca != "" {
		pool, err := loadCertPool(ca)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// loadCertPool reads the PEM certificates of a --tls-ca file (the CA that
// TLS peers' certificates must chain to).
func loadCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, nferr.IOf("reading %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nferr.Authf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

var placeFlags struct {
	dir, table, nodes string
	replication       int
}

var storagePlaceCmd = &cobra.Command{
	Use:   "place --dir DIR --table T --nodes ID=ADDR,... [--replication R]",
	Short: "Copy a table's files to storage nodes and record the placement",
	Long: `place sends each Parquet file of a table to storage nodes in contiguous blocks
of the table's file order (the order rows were written: the first 1/N of the
files to the first node, and so on), each file also to the R-1 nodes after
its own (--replication, default 1), and records in the
catalog of --dir which node holds which file. Scans through the cluster then
read every file from one of its nodes, failing over to another replica.
Files already on a node are not sent again.`,
	Example: `  nicflow storage place --dir data --table lineitem --nodes n1=10.0.0.5:7500,n2=10.0.0.6:7500 --replication 2`,
	Args:    cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := placeFlags
		if f.dir == "" || f.table == "" || f.nodes == "" {
			return usagef("--dir, --table and --nodes are required")
		}
		var nodes []storage.Node
		for _, s := range strings.Split(f.nodes, ",") {
			id, addr, ok := strings.Cut(strings.TrimSpace(s), "=")
			if !ok || id == "" || addr == "" {
				return usagef("--nodes: %q is not ID=ADDR", s)
			}
			nodes = append(nodes, storage.Node{ID: id, Addr: addr})
		}
		db, err := storage.OpenExisting(f.dir, storage.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.Place(cmd.Context(), f.table, nodes, f.replication, storage.ClientOptions{}); err != nil {
			return err
		}
		// The nodes may have lost files the catalog says they hold: check
		// and send them again.
		if _, err := db.Repair(cmd.Context(), nodes, f.replication, storage.ClientOptions{}); err != nil {
			return err
		}
		t, _ := db.Table(f.table)
		fmt.Fprintf(cmd.OutOrStdout(), "placed %d files of %s on %d nodes (replication %d)\n", len(t.Files), t.QualifiedName(), len(nodes), max(f.replication, 1))
		return nil
	},
}

func init() {
	f := storageCmd.Flags()
	f.StringVar(&storageFlags.dir, "dir", "", "database directory to serve (required)")
	f.StringVar(&storageFlags.listen, "listen", "", "Flight address to listen on, host:port (required standalone; default 0.0.0.0:7500 with --keys)")
	f.IntVar(&storageFlags.parallel, "scan-parallel", 1, "goroutines decoding each scan")
	f.IntVar(&storageFlags.maxMsgKiB, "max-message-kib", 2048, "target size of one streamed record message in KiB")
	f.StringVar(&storageFlags.tlsCert, "tls-cert", "", "PEM certificate (enables TLS)")
	f.StringVar(&storageFlags.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&storageFlags.tlsCA, "tls-ca", "", "PEM CA bundle: require client certificates signed by it (mutual TLS)")
	pf := storagePlaceCmd.Flags()
	pf.StringVar(&placeFlags.dir, "dir", "", "database directory whose catalog records the placement (required)")
	pf.StringVar(&placeFlags.table, "table", "", "table to place (required)")
	pf.StringVar(&placeFlags.nodes, "nodes", "", "storage nodes as ID=ADDR,ID=ADDR (required)")
	pf.IntVar(&placeFlags.replication, "replication", 1, "replicas of each file")
	addNodeFlags(storageCmd, &storageNodeFlags, cluster.RoleStorage)
	storageCmd.AddCommand(storagePlaceCmd)
	rootCmd.AddCommand(storageCmd)
}
