package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster/console"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
)

var serveFlags struct {
	dir         string
	create      bool
	pgListen    string
	memoryLimit string
	parallel    int
	auth        bool
	tlsCert     string
	tlsKey      string
	requireTLS  bool
	fileRoot    string
	httpListen  string
}

var serveCmd = &cobra.Command{
	Use:   "serve --dir DIR",
	Short: "Serve a database to PostgreSQL clients (psql, pgx, JDBC, ...)",
	Long: `Serve the database in DIR over the PostgreSQL wire protocol: psql, pgx,
JDBC and other PostgreSQL clients connect to --pg-listen (default
127.0.0.1:5433) and run SQL as with "nicflow sql". Each connection has its
own session (its SET settings), and connections run concurrently; a
statement that writes waits for another's commit, as between processes.

Without --auth the server listens on loopback addresses only and trusts
local connections, as PostgreSQL's "trust" for 127.0.0.1. With --auth every
connection logs in as a user of "nicflow user add" with SCRAM-SHA-256 (the
password never crosses the network), and the server may listen on any
address. With --tls-cert and --tls-key, clients that ask for SSL
(sslmode=require and above) get TLS; --require-tls refuses the others.
The catalog queries psql's \d TABLE sends are not supported yet; \dt and
\d work (docs/clients.md). Ctrl-C (SIGINT) or SIGTERM stops the
server.

A web console listens on --http-listen (default 127.0.0.1:8080; "off"
turns it off): open it in a browser to see this server, its running and
recent queries (PostgreSQL clients' too) with their progress, a query's
EXPLAIN ANALYZE plan as a tree, and a SQL box that runs a query and shows
its result. Without --auth local browsers use it freely; with --auth it
asks for a user of "nicflow user add", and beyond loopback it needs
--tls-cert/--tls-key (HTTPS) too (docs/console.md).`,
	Example: `  nicflow tpch gen --sf 0.01 --dir data/sf0.01
  nicflow serve --dir data/sf0.01 &
  psql -h 127.0.0.1 -p 5433 -c "select count(*) from lineitem"
  # then open http://127.0.0.1:8080/ for the console`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return runServe(cmd, os.Stderr)
	},
}

func init() {
	f := serveCmd.Flags()
	f.StringVar(&serveFlags.dir, "dir", "", "database directory to serve (required)")
	f.BoolVar(&serveFlags.create, "create", false, "create the database in DIR if it holds none")
	f.StringVar(&serveFlags.pgListen, "pg-listen", pgwire.DefaultListen, "PostgreSQL protocol address (loopback only)")
	f.StringVar(&serveFlags.memoryLimit, "memory-limit", "", "memory budget per query, e.g. 2GiB (default: 60% of memory, or NICFLOW_MEMORY_LIMIT)")
	f.IntVar(&serveFlags.parallel, "parallel", 0, "pipelines per query (default: number of CPUs)")
	f.BoolVar(&serveFlags.auth, "auth", false, "require a password (SCRAM-SHA-256) from every connection: users of `nicflow user add`")
	f.StringVar(&serveFlags.tlsCert, "tls-cert", "", "PEM certificate (chain) for TLS connections (with --tls-key)")
	f.StringVar(&serveFlags.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&serveFlags.requireTLS, "require-tls", false, "refuse connections that do not use TLS")
	f.StringVar(&serveFlags.fileRoot, "file-root", "", "directory under which statements may read and write files (file tables, COPY); 'none' for no file access. Default: any path without --auth, none with it")
	f.StringVar(&serveFlags.httpListen, "http-listen", console.DefaultListen, `web console address ("off": no console); beyond loopback it needs --auth and --tls-cert`)
	rootCmd.AddCommand(serveCmd)
}

func runServe(cmd *cobra.Command, stderr io.Writer) error {
	if serveFlags.dir == "" {
		return usagef("--dir is required")
	}
	opts, err := sessionOptions(serveFlags.memoryLimit, serveFlags.parallel, 0)
	if err != nil {
		return err
	}
	// NB: clients that log in over the network must not read or write the
	// server's files unless the operator says where they may.
	opts.FileAccess = serveFlags.fileRoot
	if opts.FileAccess == "" && serveFlags.auth {
		opts.FileAccess = engine.FileAccessNone
	}
	// The first session checks (or creates) the database before clients come.
	first, err := openSession(serveFlags.dir, serveFlags.create, opts)
	if err != nil {
		return err
	}
	first.Close()
	po, err := pgOptions(serveFlags.pgListen, serveFlags.dir, serveFlags.auth, serveFlags.tlsCert, serveFlags.tlsKey, serveFlags.requireTLS)
	if err != nil {
		return err
	}
	// Every PostgreSQL session reports its statements to the console's
	// registry (engine.Options.Observer).
	reg := console.NewRegistry(0)
	po.Open = func() (engine.Conn, error) {
		o := opts
		o.Observer = reg.Observer("pgwire", "")
		return engine.OpenConn(serveFlags.dir, o)
	}
	srv, err := pgwire.Listen(po)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(serveFlags.dir)
	var web *console.Server
	if serveFlags.httpListen != "off" {
		web, err = console.Listen(console.Options{
			Backend: console.NewLocal(serveFlags.dir, opts, reg), Listen: serveFlags.httpListen,
			UsersFile: po.UsersFile, TLS: po.TLS,
		})
		if err != nil {
			srv.Close()
			return err
		}
	}
	fmt.Fprintf(stderr, "nicflow: serving %s to PostgreSQL clients on %s (psql -h %s -p %s)\n", abs, srv.Addr(), hostOf(srv.Addr()), portOf(srv.Addr()))
	done := make(chan error, 2)
	go func() { done <- srv.Serve() }()
	if web != nil {
		fmt.Fprintf(stderr, "nicflow: web console on %s\n", web.URL())
		go func() { done <- web.Serve() }()
		defer web.Close()
	}
	select {
	case <-cmd.Context().Done():
		srv.Close()
		<-done
		return nil
	case err := <-done:
		srv.Close()
		if err != nil {
			return nferr.Wrap(nferr.KindIO, err, "serving")
		}
		return nil
	}
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

func portOf(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

// pgOptions are the PostgreSQL server's options from the flags `nicflow
// serve` and `nicflow coordinator` share (Open is the caller's): with
// auth, the users of dir's users file log in with SCRAM-SHA-256.
func pgOptions(listen, dir string, auth bool, certFile, keyFile string, requireTLS bool) (pgwire.Options, error) {
	po := pgwire.Options{Listen: listen, RequireTLS: requireTLS}
	if (certFile == "") != (keyFile == "") {
		return po, usagef("--tls-cert and --tls-key go together")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return po, nferr.Queryf("--tls-cert/--tls-key: %v", err)
		}
		po.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else if requireTLS {
		return po, usagef("--require-tls needs --tls-cert and --tls-key")
	}
	if auth {
		po.UsersFile = pgwire.UsersFile(dir)
		names, err := pgwire.ListUsers(po.UsersFile)
		if err != nil {
			return po, err
		}
		if len(names) == 0 {
			return po, usagef("%s has no users yet; add one with `nicflow user add --dir %s NAME`", po.UsersFile, dir)
		}
	}
	return po, nil
}
