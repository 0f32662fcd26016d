package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

var storageFlags struct {
	dir, listen, nodeID    string
	parallel, maxMsgKiB    int
	tlsCert, tlsKey, tlsCA string
}

var storageCmd = &cobra.Command{
	Use:   "storage --dir DIR --listen ADDR [--node-id ID]",
	Short: "Serve a database's tables to the cluster over Arrow Flight (a storage node)",
	Long: `storage runs a storage node: it serves scans of the tables in --dir over Arrow
Flight. A scan request carries the table, the columns, the files and row groups
to read and a filter; the node skips row groups with its statistics, filters
and projects locally, and streams only the surviving rows, so less data crosses
the network. Nodes also receive files for placement ("nicflow storage place").

The node holds the database's catalog lock while it runs: stop it before
loading into the same directory from another process.`,
	Example: `  nicflow storage --dir /data/n1 --listen 0.0.0.0:7500 --node-id n1
  nicflow storage --dir /data/n1 --listen :7500 --tls-cert n1.pem --tls-key n1.key --tls-ca ca.pem`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := storageFlags
		if f.dir == "" || f.listen == "" {
			return usagef("--dir and --listen are required")
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
		srv, err := storage.NewServer(db, f.listen, storage.ServerOptions{
			NodeID: f.nodeID, TLS: tcfg, ScanParallelism: f.parallel, MaxMessageBytes: f.maxMsgKiB << 10,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "storage node %s serving %d tables from %s on %s\n", f.nodeID, len(db.Tables()), db.Dir(), srv.Addr())
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
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, nferr.IOf("reading %s: %w", ca, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nferr.Authf("%s holds no PEM certificate", ca)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

var placeFlags struct {
	dir, table, nodes string
	replication       int
}

var storagePlaceCmd = &cobra.Command{
	Use:   "place --dir DIR --table T --nodes ID=ADDR,... [--replication R]",
	Short: "Copy a table's files to storage nodes and record the placement",
	Long: `place sends each Parquet file of a table to storage nodes, round-robin, each
file to R consecutive nodes (--replication, default 1), and records in the
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
		t, _ := db.Table(f.table)
		fmt.Fprintf(cmd.OutOrStdout(), "placed %d files of %s on %d nodes (replication %d)\n", len(t.Files), t.QualifiedName(), len(nodes), max(f.replication, 1))
		return nil
	},
}

func init() {
	f := storageCmd.Flags()
	f.StringVar(&storageFlags.dir, "dir", "", "database directory to serve (required)")
	f.StringVar(&storageFlags.listen, "listen", "", "address to listen on, host:port (required)")
	f.StringVar(&storageFlags.nodeID, "node-id", "", "this node's id (default: the host name)")
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
	storageCmd.AddCommand(storagePlaceCmd)
	rootCmd.AddCommand(storageCmd)
}
