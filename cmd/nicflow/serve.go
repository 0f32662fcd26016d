package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nicflow/nicflow/cluster/console"
	"github.com/nicflow/nicflow/cluster/flightsqlsrv"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/buildinfo"
	"github.com/nicflow/nicflow/internal/nferr"
)

var serveFlags struct {
	dir         string
	create      bool
	pgListen    string
	fsqlListen  string
	memoryLimit string
	memory      string
	maxQueued   int
	parallel    int
	auth        bool
	tlsCert     string
	tlsKey      string
	requireTLS  bool
	clientCA    string
	certReq     bool
	fileRoot    string
	httpListen  string
	spill       spillFlags
	pgLimits    pgLimits
}

var serveCmd = &cobra.Command{
	Use:   "serve --dir DIR",
	Short: "Serve a database to PostgreSQL and Arrow Flight SQL clients (psql, pgx, JDBC, ADBC, ...)",
	Long: `Serve the database in DIR over the PostgreSQL wire protocol and Arrow
Flight SQL, from one process: psql, pgx, JDBC and other PostgreSQL clients
connect to --pg-listen (default 127.0.0.1:5433); ADBC (Python's
adbc_driver_flightsql, Go), the Flight SQL JDBC driver and arrow-go's
database/sql driver connect to --flightsql-listen (default
127.0.0.1:31337; "off" disables it) and get results as Arrow batches. Both
run SQL as with "nicflow sql". The database is opened once; each
connection has its own session (its SET settings), made when it has logged
in, and connections run concurrently; a statement that writes waits for
another's commit.

At most --pg-max-connections PostgreSQL connections (default 100, as
PostgreSQL's max_connections) are served at once; past it a client is told
"sorry, too many clients already" (SQLSTATE 53300) and disconnected. A
connection that has not logged in within --pg-auth-timeout (default 1m) is
closed, and so is one idle for --pg-idle-timeout (default 1h; 0: never)
outside a transaction block, told SQLSTATE 57P05 first.

Concurrent queries share --memory (default 60% of memory): each reserves
its --memory-limit (default a quarter of --memory) before it runs and
spills beyond it; one that does not fit waits in a queue of at most
--max-queued until it does, or until a sixteenth of --memory is free (it
then starts with what is free), or until SET statement_timeout or a cancel
ends it. A query that reads no data and holds no state (select 1, a
connection pool's health check) is not queued. SHOW QUERIES and the
console show waiting queries as "queued";
the console's /metrics has the queue's figures (nicflow_admission_*).

Without --auth the server listens on loopback addresses only and trusts
local connections, as PostgreSQL's "trust" for 127.0.0.1. With --auth every
connection logs in as a user of "nicflow user add" with SCRAM-SHA-256 (the
password never crosses the network), and the server may listen on any
address. Flight SQL clients log in as the same users with basic
authentication (user and password, checked against the stored SCRAM
verifier) and get a bearer token; since the password itself crosses the
network, Flight SQL listens beyond loopback only with TLS. With
--tls-cert and --tls-key, PostgreSQL clients that ask for SSL
(sslmode=require and above) get TLS, --require-tls refuses the others, and
Flight SQL speaks TLS only (clients connect to grpc+tls://HOST:PORT).
With --auth and --tls-client-ca CA.pem, a client may instead present a
certificate CA.pem signed: one whose CommonName is the user it logs in as
needs no password (PostgreSQL's "cert" method; mutual TLS for Flight
SQL), one for another user is refused, and clients without a certificate
still log in with their password unless --tls-client-cert-required.
psql's describe commands (\dt, \d TABLE, \d+ TABLE, \du, ...) work,
SQLAlchemy and pandas connect, reflect tables (columns, keys, indexes),
read_sql and to_sql (append, replace), and pgjdbc's DatabaseMetaData
lists tables, columns, keys and indexes (docs/clients.md).
--log-statements logs what clients send. Ctrl-C (SIGINT) or SIGTERM stops the server.

A web console listens on --http-listen (default 127.0.0.1:8080; "off"
turns it off): open it in a browser to see this server, its running and
recent queries (PostgreSQL clients' too) with their progress, a query's
EXPLAIN ANALYZE plan as a tree, and a SQL box that runs a query and shows
its result. Without --auth local browsers use it freely; with --auth it
asks for a user of "nicflow user add", and beyond loopback it needs
--tls-cert/--tls-key (HTTPS) too (docs/console.md).

Files: with --auth, statements may read or write files (file tables,
read_csv, read_parquet, COPY FROM/TO, CREATE EXTERNAL TABLE) only under
--file-root DIR, and none without it. Every path is resolved inside DIR
as it is opened: ".." and symbolic links alike, each file a glob (* ? [])
matches and each file of a directory location; a path that leads outside
fails with "permission denied" (the same answer whether what lies outside
exists or not). Where queries spill is the operator's choice
(--spill-dir): under --auth or --file-root, clients' SET spill_dir is
refused.`,
	Example: `  nicflow tpch gen --sf 0.01 --dir data/sf0.01
  nicflow serve --dir data/sf0.01 &
  psql -h 127.0.0.1 -p 5433 -c "select count(*) from lineitem"
  # then open http://127.0.0.1:8080/ for the console
  # users log in with client certificates (CN = user name) or passwords
  nicflow serve --dir data/sf0.01 --auth --tls-cert server.pem --tls-key server.key --tls-client-ca ca.pem
  psql "host=127.0.0.1 port=5433 user=alice sslmode=verify-full sslrootcert=ca.pem sslcert=alice.pem sslkey=alice.key"
  python3 -c 'import adbc_driver_flightsql.dbapi as f; c = f.connect("grpc://127.0.0.1:31337").cursor(); c.execute("select count(*) from orders"); print(c.fetchall())'`,
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
	f.StringVar(&serveFlags.fsqlListen, "flightsql-listen", flightsqlsrv.DefaultListen, "Arrow Flight SQL address; \"off\" (or empty) disables it")
	f.StringVar(&serveFlags.memoryLimit, "memory-limit", "", "memory budget per query, e.g. 2GiB, reserved from --memory before it runs (default: a quarter of --memory)")
	f.StringVar(&serveFlags.memory, "memory", "", "memory shared by concurrent queries, e.g. 8GiB: a query waits in a queue until its --memory-limit fits (or a sixteenth of it is free); \"off\": no admission control, each query has --memory-limit of its own (default: 60% of memory, or NICFLOW_MEMORY_LIMIT)")
	f.IntVar(&serveFlags.maxQueued, "max-queued", 256, "queries that may wait for memory at once; one more fails at once (retry later)")
	f.IntVar(&serveFlags.parallel, "parallel", 0, "pipelines per query (default: number of CPUs)")
	f.BoolVar(&serveFlags.auth, "auth", false, "require a password from every connection (SCRAM-SHA-256 for PostgreSQL, basic auth then a bearer token for Flight SQL): users of \"nicflow user add\"")
	f.StringVar(&serveFlags.tlsCert, "tls-cert", "", "PEM certificate (chain) for TLS connections (with --tls-key)")
	f.StringVar(&serveFlags.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&serveFlags.requireTLS, "require-tls", false, "refuse connections that do not use TLS")
	f.StringVar(&serveFlags.clientCA, "tls-client-ca", "", "PEM CA certificate(s): clients may log in with a certificate they signed, whose CommonName is the user name (no password); needs --auth and --tls-cert")
	f.BoolVar(&serveFlags.certReq, "tls-client-cert-required", false, "with --tls-client-ca: refuse clients without a verified certificate (implies --require-tls)")
	f.StringVar(&serveFlags.fileRoot, "file-root", "", "directory under which statements may read and write files (file tables, read_csv/read_parquet, COPY, CREATE EXTERNAL TABLE): every file a glob matches, links and .. resolved, must lie inside; 'none' for no file access. Default: any path without --auth, none with it")
	f.StringVar(&serveFlags.httpListen, "http-listen", console.DefaultListen, `web console address ("off": no console); beyond loopback it needs --auth and --tls-cert`)
	addSpillFlags(f, &serveFlags.spill)
	serveFlags.pgLimits.register(f)
	rootCmd.AddCommand(serveCmd)
}

// serveOptions are the session options of serve's flags.
func serveOptions() (engine.Options, error) {
	opts, err := sessionOptions(serveFlags.memoryLimit, serveFlags.parallel, 0)
	if err != nil {
		return opts, err
	}
	if err := admissionOptions(&opts, serveFlags.memory, serveFlags.memoryLimit != "", serveFlags.maxQueued); err != nil {
		return opts, err
	}
	if err := serveFlags.spill.apply(&opts); err != nil {
		return opts, err
	}
	// NB: clients that log in over the network must not read or write the
	// server's files unless the operator says where they may, nor choose
	// where it spills (engine.Options.FileAccess).
	opts.FileAccess = serveFlags.fileRoot
	if opts.FileAccess == "" && serveFlags.auth {
		opts.FileAccess = engine.FileAccessNone
	}
	if a := opts.FileAccess; a != "" && a != engine.FileAccessNone {
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			return opts, usagef("--file-root %q is not a directory", a)
		}
	}
	return opts, nil
}

// admissionOptions sets opts.Admission from --memory (a size, "" for the
// default node memory, "off" for none) and --max-queued; without an
// explicit --memory-limit, a query reserves a quarter of the node.
func admissionOptions(opts *engine.Options, memory string, limitSet bool, maxQueued int) error {
	if memory == "off" {
		return nil
	}
	n := exec.DefaultMemoryLimit()
	if memory != "" {
		var err error
		if n, err = exec.ParseBytes(memory); err != nil || n <= 0 {
			return usagef("--memory %q: want a size such as 8GiB, or off", memory)
		}
	}
	if maxQueued < 1 {
		return usagef("--max-queued must be at least 1, got %d", maxQueued)
	}
	if !limitSet {
		opts.MemoryLimit = max(n/4, 1)
	}
	if opts.MemoryLimit > n {
		return usagef("--memory-limit %s is more than --memory %s: no query could be given it", exec.FormatBytes(opts.MemoryLimit), exec.FormatBytes(n))
	}
	a, err := engine.NewAdmission(engine.AdmissionOptions{Memory: n, MaxQueued: maxQueued})
	if err != nil {
		return usagef("%v", err)
	}
	opts.Admission = a
	return nil
}

func runServe(cmd *cobra.Command, stderr io.Writer) error {
	if serveFlags.dir == "" {
		return usagef("--dir is required")
	}
	opts, err := serveOptions()
	if err != nil {
		return err
	}
	db, err := openServed(serveFlags.dir, serveFlags.create, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	po, err := pgOptions(serveFlags.pgListen, serveFlags.dir, serveFlags.auth, serveFlags.tlsCert, serveFlags.tlsKey, serveFlags.requireTLS)
	if err != nil {
		return err
	}
	if err := clientCertOptions(&po, serveFlags.clientCA, serveFlags.certReq); err != nil {
		return err
	}
	if err := serveFlags.pgLimits.apply(&po); err != nil {
		return err
	}
	// Every PostgreSQL session reports its statements to the console's
	// registry (engine.Options.Observer).
	reg := console.NewRegistry(0)
	po.Open = servedSessions(db, reg, "pgwire")
	var fsrv *flightsqlsrv.Server
	if l := serveFlags.fsqlListen; l != "" && l != "off" {
		fo := flightsqlsrv.Options{Listen: l, UsersFile: po.UsersFile, TLS: po.TLS, Version: buildinfo.Version()}
		fo.Open = servedSessions(db, reg, "flightsql")
		if fsrv, err = flightsqlsrv.Listen(fo); err != nil {
			return listenHint(err, "--flightsql-listen")
		}
	}
	srv, err := pgwire.Listen(po)
	if err != nil {
		if fsrv != nil {
			fsrv.Close()
		}
		return listenHint(err, "--pg-listen")
	}
	abs, _ := filepath.Abs(serveFlags.dir)
	var web *console.Server
	if serveFlags.httpListen != "off" {
		co := console.Options{
			Backend: console.NewLocal(serveFlags.dir, opts, reg), Listen: serveFlags.httpListen,
			UsersFile: po.UsersFile, TLS: serverAuthOnly(po.TLS),
		}
		if opts.Admission != nil {
			co.Metrics = admissionMetrics(opts.Admission)
		}
		web, err = console.Listen(co)
		if err != nil {
			srv.Close()
			if fsrv != nil {
				fsrv.Close()
			}
			return listenHint(err, "--http-listen")
		}
	}
	fmt.Fprintf(stderr, "nicflow: serving %s to PostgreSQL clients on %s (psql -h %s -p %s)\n", abs, srv.Addr(), hostOf(srv.Addr()), portOf(srv.Addr()))
	done := make(chan error, 2)
	go func() { done <- srv.Serve() }()
	if fsrv != nil {
		scheme := "grpc"
		if po.TLS != nil {
			scheme = "grpc+tls"
		}
		fmt.Fprintf(stderr, "nicflow: serving %s to Flight SQL clients on %s (%s://%s)\n", abs, fsrv.Addr(), scheme, fsrv.Addr())
		go func() { done <- fsrv.Serve() }()
	}
	if web != nil {
		fmt.Fprintf(stderr, "nicflow: web console on %s\n", web.URL())
		go func() { done <- web.Serve() }()
	}
	stop := func() {
		srv.Close()
		if fsrv != nil {
			fsrv.Close()
		}
		if web != nil {
			web.Close()
		}
	}
	select {
	case <-cmd.Context().Done():
		stop()
		return nil
	case err := <-done:
		stop()
		if err != nil {
			return nferr.Wrap(nferr.KindIO, err, "serving")
		}
		return nil
	}
}

// openServed opens the database `nicflow serve` serves, once for every
// client's session (engine.SharedDB: a session is made without I/O);
// without create it must already hold a database.
func openServed(dir string, create bool, opts engine.Options) (*engine.SharedDB, error) {
	if err := checkDatabase(dir, create, opts); err != nil {
		return nil, err
	}
	return engine.OpenShared(dir, opts)
}

// servedSessions makes the sessions of a protocol server's connections
// (source names them in the console's registry, reg).
func servedSessions(db *engine.SharedDB, reg *console.Registry, source string) func() (engine.Conn, error) {
	return func() (engine.Conn, error) { return db.Conn(reg.Observer(source, "")), nil }
}

// pgLimits are the PostgreSQL server's connection limits (pgwire.Options'
// MaxConnections, IdleTimeout, AuthTimeout): flags of `nicflow serve` and
// `nicflow coordinator`.
type pgLimits struct {
	maxConns    int
	idleTimeout time.Duration
	authTimeout time.Duration
	// logStatements: pgwire.Options.LogStatements (not a limit, but a
	// setting of the same server).
	logStatements bool
}

func (l *pgLimits) register(f *pflag.FlagSet) {
	f.IntVar(&l.maxConns, "pg-max-connections", pgwire.DefaultMaxConnections, `PostgreSQL connections served at once; past it a client is refused with "sorry, too many clients already" (SQLSTATE 53300), as PostgreSQL's max_connections`)
	f.DurationVar(&l.idleTimeout, "pg-idle-timeout", pgwire.DefaultIdleTimeout, "close a PostgreSQL connection idle this long outside a transaction block, telling it SQLSTATE 57P05 (PostgreSQL's idle_session_timeout); 0: never")
	f.DurationVar(&l.authTimeout, "pg-auth-timeout", pgwire.DefaultAuthTimeout, "close a PostgreSQL connection that has not logged in this long after connecting (PostgreSQL's authentication_timeout)")
	f.BoolVar(&l.logStatements, "log-statements", false, "log every statement PostgreSQL clients send, and the error of each that fails, to standard error (PostgreSQL's log_statement = all): to learn what a client such as psql or SQLAlchemy sends")
}

// apply checks the limits and sets them in po.
func (l pgLimits) apply(po *pgwire.Options) error {
	if l.maxConns < 1 {
		return usagef("--pg-max-connections %d: want at least 1", l.maxConns)
	}
	if l.idleTimeout < 0 {
		return usagef("--pg-idle-timeout %v: want a duration, or 0 for never", l.idleTimeout)
	}
	if l.authTimeout <= 0 {
		return usagef("--pg-auth-timeout %v: want a positive duration", l.authTimeout)
	}
	po.MaxConnections, po.IdleTimeout, po.AuthTimeout = l.maxConns, l.idleTimeout, l.authTimeout
	po.LogStatements = l.logStatements
	if l.idleTimeout == 0 {
		po.IdleTimeout = -1 // never (pgwire's 0 is its default)
	}
	return nil
}

// listenHint adds to an address-in-use error the flag that moves the
// listener (another nicflow serve on this machine holds the defaults).
func listenHint(err error, flag string) error {
	// NB: some listeners format the OS error into their own (no %w).
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
		how := flag + " ADDR"
		if flag != "--pg-listen" {
			how += ", or " + flag + " off"
		}
		return nferr.Wrap(nferr.KindUnavailable, err, "the address is taken (another nicflow serve?): choose another with %s", how)
	}
	return err
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

// clientCertOptions makes po's TLS request client certificates and verify
// them against the CA certificates in caFile (--tls-client-ca): a client
// whose certificate verifies logs in as the user its CommonName names,
// without a password (PostgreSQL's "cert" method; mutual TLS for Flight
// SQL). required refuses clients without one (--tls-client-cert-required).
func clientCertOptions(po *pgwire.Options, caFile string, required bool) error {
	if caFile == "" {
		if required {
			return usagef("--tls-client-cert-required needs --tls-client-ca")
		}
		return nil
	}
	if po.TLS == nil {
		return usagef("--tls-client-ca needs --tls-cert and --tls-key: client certificates travel over TLS")
	}
	if po.UsersFile == "" {
		return usagef("--tls-client-ca needs --auth: a certificate logs in as a user of `nicflow user add`")
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nferr.IOf("--tls-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nferr.Queryf("--tls-client-ca %s: no PEM certificate in it", caFile)
	}
	cfg := po.TLS.Clone()
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if required {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		po.RequireTLS = true
	}
	po.TLS = cfg
	return nil
}

// serverAuthOnly is cfg without client certificates, for the web console
// (browsers would ask their users to pick one).
func serverAuthOnly(cfg *tls.Config) *tls.Config {
	if cfg == nil || cfg.ClientCAs == nil {
		return cfg
	}
	c := cfg.Clone()
	c.ClientCAs, c.ClientAuth = nil, tls.NoClientCert
	return c
}
