package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

// loadOptions configure `nicflow bench load`: PostgreSQL clients running
// the TPC-H queries at once against one server for a fixed time.
type loadOptions struct {
	// Dir is a TPC-H database from `nicflow tpch gen` at a scale factor
	// with reference answers (0.01, 0.1, 1). Required; the server started
	// serves it, and with Addr it only gives the scale factor.
	Dir string
	// Clients are the concurrency levels, each run in turn for Duration.
	// Default 16, 64, 256.
	Clients []int
	// Duration is how long each level (and the serial baseline) runs.
	// Default 60s.
	Duration time.Duration
	// CancelFrac is the fraction of queries canceled mid-flight (0 to 1;
	// default 0.05).
	CancelFrac float64
	// TrivialEvery is the period of the probe's trivial query (select 1)
	// and fresh connection. Default 1s.
	TrivialEvery time.Duration
	// Queries are the TPC-H queries the clients pick from. Default 1-22.
	Queries []int
	// Addr is a running server (host:port) to load instead of starting
	// one; User logs in there (the password, when one is needed, comes
	// from PGPASSWORD, as libpq's).
	Addr, User string
	// Cluster, when above 0, starts a local cluster of that many workers
	// (and one storage node) and loads its coordinator; 0 starts
	// `nicflow serve`.
	Cluster int
	// Memory is the started server's --memory ("" its default, "off" no
	// admission control) and MaxQueued its --max-queued (0: its default).
	Memory    string
	MaxQueued int
	// MaxRunning is the started cluster coordinator's --max-running (0:
	// its default).
	MaxRunning int
	// Seed makes the clients' choices (queries, cancels, moments)
	// reproducible.
	Seed uint64
	// Exe is the nicflow binary the server runs (default this
	// executable); Env is added to its environment.
	Exe string
	Env []string
	// Progress receives a line per phase.
	Progress io.Writer
}

func (o *loadOptions) defaults() {
	if len(o.Clients) == 0 {
		o.Clients = []int{16, 64, 256}
	}
	if o.Duration == 0 {
		o.Duration = 60 * time.Second
	}
	if o.TrivialEvery == 0 {
		o.TrivialEvery = time.Second
	}
	if len(o.Queries) == 0 {
		for q := 1; q <= tpch.NumQueries; q++ {
			o.Queries = append(o.Queries, q)
		}
	}
	if o.User == "" {
		o.User = "nicflow"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

func (o *loadOptions) validate() error {
	switch {
	case o.Dir == "":
		return usagef("--dir is required (it gives the scale factor and the answers to check)")
	case o.Duration < 100*time.Millisecond:
		return usagef("--duration %v: want at least 100ms", o.Duration)
	case o.CancelFrac < 0 || o.CancelFrac > 1:
		return usagef("--cancel-frac %g: want a fraction from 0 to 1", o.CancelFrac)
	case o.TrivialEvery < 10*time.Millisecond:
		return usagef("--trivial-every %v: want at least 10ms", o.TrivialEvery)
	case o.Addr != "" && o.Cluster > 0:
		return usagef("--addr and --cluster exclude each other: load a running server or start a cluster")
	case o.Addr != "" && (o.Memory != "" || o.MaxQueued != 0):
		return usagef("--memory and --max-queued configure the server bench load starts, not one at --addr")
	case o.Cluster < 0 || o.Cluster > 64:
		return usagef("--cluster %d: want 1 to 64 workers (0: load a nicflow serve)", o.Cluster)
	case o.MaxQueued < 0:
		return usagef("--max-queued must be at least 1, got %d", o.MaxQueued)
	case o.MaxRunning != 0 && o.Cluster == 0:
		return usagef("--max-running bounds a cluster's coordinator: give --cluster N")
	case o.MaxRunning < -1:
		return usagef("--max-running must be -1 (no bound) or positive, got %d", o.MaxRunning)
	}
	for _, n := range o.Clients {
		if n < 1 || n > 10000 {
			return usagef("--clients %d: want 1 to 10000 clients per level", n)
		}
	}
	if o.Memory != "" && o.Memory != "off" {
		if n, err := exec.ParseBytes(o.Memory); err != nil || n <= 0 {
			return usagef("--memory %q: want a size such as 8GiB, or off", o.Memory)
		}
	}
	if o.Addr != "" {
		if _, _, err := splitHostPort(o.Addr); err != nil {
			return usagef("--addr %q: want host:port", o.Addr)
		}
	}
	return nil
}

func splitHostPort(addr string) (string, string, error) {
	h, p, ok := strings.Cut(addr, ":")
	if !ok || h == "" || p == "" {
		return "", "", fmt.Errorf("not host:port")
	}
	if _, err := strconv.Atoi(p); err != nil {
		return "", "", err
	}
	return h, p, nil
}

var benchLoadFlags struct {
	dir, clients, queries, addr, user, memory string
	duration, trivialEvery                    time.Duration
	cancelFrac                                float64
	cluster, maxQueued, maxRunning            int
	seed                                      uint64
}

var benchLoadCmd = &cobra.Command{
	Use:   "load --dir DIR",
	Short: "Load a server with concurrent PostgreSQL clients running TPC-H (some canceled): answers, errors, throughput, latency, memory",
	Long: `Start "nicflow serve" on DIR (or, with --cluster N, a local cluster of N
workers and one storage node whose coordinator serves PostgreSQL clients;
or load a running server at --addr) and run, for --duration each:

  serial   one client running the TPC-H queries one after another, in a
           random order (no cancels): the serial rate
  N        for each N of --clients, N clients (pgx connections opened at
           once) doing the same; each query is canceled mid-flight with
           probability --cancel-frac (the client's context ends at a random
           moment within the query's serial time, and pgx sends a
           PostgreSQL CancelRequest), which must end it with SQLSTATE 57014
           and leave the connection usable (select 1 right after)

Every answer is checked against the reference answers (SF 0.01, 0.1 and
1), as "tpch run --verify" does. Each client's Q15 uses a view of its own
name, as TPC-H's throughput test does. A probe connection runs select 1
every --trivial-every and opens a fresh connection as often (their
latencies under load). At the end of a level the queries still running are
canceled (counted as cut, not done).

Per level it prints the queries done, wrong answers, errors by SQLSTATE,
cancels (requested, sent while the query ran, confirmed by 57014, queries
that finished first), connect failures, throughput in queries/s and its
ratio to the serial rate, p50/p99 of the query latency and of the trivial
query, the p99 of connection setup, the server's peak RSS (VmHWM of its
process, reset at each level) against its --memory, and its admission
control's figures (queries admitted, rejected, the time they waited, the
most queued at once). Then it says whether the goals hold: no wrong answer,
error or refused connection, throughput at least the serial rate, trivial
p99 under 100 ms, peak RSS within --memory.

The command exits non-zero (3) on a wrong answer, and with the first
error's status when queries failed, connections were refused or broken.
Missed throughput, latency or memory goals are reported, not an error.`,
	Example: `  nicflow tpch gen --sf 1 --dir sf1
  nicflow bench load --dir sf1 --clients 16,64 --duration 30s --memory 4GiB
  nicflow bench load --dir sf1 --cluster 4 --clients 16 --duration 30s
  PGPASSWORD=secret nicflow bench load --dir sf1 --addr 10.0.0.1:5433 --user alice`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := benchLoadFlags
		o := loadOptions{Dir: f.dir, Duration: f.duration, CancelFrac: f.cancelFrac, TrivialEvery: f.trivialEvery,
			Addr: f.addr, User: f.user, Cluster: f.cluster, Memory: f.memory, MaxQueued: f.maxQueued, MaxRunning: f.maxRunning, Seed: f.seed,
			Env: childEnv(), Progress: cmd.ErrOrStderr()}
		for _, s := range splitList(f.clients) {
			n, err := strconv.Atoi(s)
			if err != nil {
				return usagef("--clients %q: want numbers of clients, e.g. 16,64,256", f.clients)
			}
			o.Clients = append(o.Clients, n)
		}
		if len(o.Clients) == 0 {
			return usagef("--clients %q names no level", f.clients)
		}
		var err error
		if o.Queries, err = parseQueryList(f.queries); err != nil {
			return err
		}
		if err := o.validate(); err != nil {
			return err
		}
		return runLoad(cmd.Context(), o, cmd.OutOrStdout())
	},
}

func init() {
	f := benchLoadCmd.Flags()
	f.StringVar(&benchLoadFlags.dir, "dir", "", "TPC-H data of \"nicflow tpch gen\" at SF 0.01, 0.1 or 1 (required)")
	f.StringVar(&benchLoadFlags.clients, "clients", "16,64,256", "concurrent clients of each level, comma-separated")
	f.DurationVar(&benchLoadFlags.duration, "duration", 60*time.Second, "how long each level (and the serial baseline) runs")
	f.Float64Var(&benchLoadFlags.cancelFrac, "cancel-frac", 0.05, "fraction of queries canceled mid-flight (0 to 1)")
	f.DurationVar(&benchLoadFlags.trivialEvery, "trivial-every", time.Second, "period of the probe's select 1 and fresh connection")
	f.StringVar(&benchLoadFlags.queries, "queries", "1-22", "queries the clients pick from, e.g. 1,3,5-7")
	f.StringVar(&benchLoadFlags.addr, "addr", "", "load a running PostgreSQL server at host:port instead of starting one (password from PGPASSWORD)")
	f.StringVar(&benchLoadFlags.user, "user", "nicflow", "user to log in as at --addr")
	f.IntVar(&benchLoadFlags.cluster, "cluster", 0, "start a local cluster of this many workers and load its coordinator (0: start nicflow serve)")
	f.StringVar(&benchLoadFlags.memory, "memory", "", "--memory of the server started: memory its concurrent queries share, e.g. 4GiB, or off (default: the server's)")
	f.IntVar(&benchLoadFlags.maxQueued, "max-queued", 0, "--max-queued of the server started (default: the server's)")
	f.IntVar(&benchLoadFlags.maxRunning, "max-running", 0, "--max-running of the cluster's coordinator (with --cluster; default: four per worker core; -1: no bound)")
	f.Uint64Var(&benchLoadFlags.seed, "seed", 1, "seed of the clients' queries, cancels and moments")
	benchCmd.AddCommand(benchLoadCmd)
}

// loadLevel is the outcome of one level (the serial baseline is level 0's
// "serial").
type loadLevel struct {
	name    string
	clients int
	elapsed time.Duration

	mu        sync.Mutex
	done      int // right answers within the level's time
	wrong     int
	wrongMsgs []string
	cut       int // still running at the end of the level, canceled
	errs      map[string]int
	errMsgs   map[string]string
	// Cancels: requested (the client chose to), sent (the moment came
	// while the query ran), confirmed (it ended with 57014), finished
	// first (it ended before the moment, or with its answer anyway).
	cancelReq, cancelSent, cancelOK, cancelLate int
	// brokenAfter counts connections that were unusable after a
	// confirmed cancel or a cut.
	brokenAfter int
	connFail    int
	connMsgs    []string
	lat         []time.Duration // queries answered right
	latQ        []int           // their queries
	sentLate    int             // cancels sent whose query answered anyway
	trivial     []time.Duration
	trivialFail int
	connect     []time.Duration

	peakRSS, budget int64 // bytes, 0 unknown
	rssNote         string
	admitted        float64
	rejected        float64
	waited          float64
	maxQueued       float64
	hasAdmission    bool
}

func (l *loadLevel) addErr(class, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs, l.errMsgs = map[string]int{}, map[string]string{}
	}
	l.errs[class]++
	if _, ok := l.errMsgs[class]; !ok {
		l.errMsgs[class] = msg
	}
}

func (l *loadLevel) failures() int {
	n := l.connFail + l.brokenAfter + l.trivialFail
	for _, c := range l.errs {
		n += c
	}
	return n
}

// errClass is the SQLSTATE of a server's error, or what else failed.
func errClass(err error, conn *pgx.Conn) (string, string) {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		return pe.Code, pe.Message
	case conn != nil && conn.IsClosed():
		return "connection lost", err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "client timeout", err.Error()
	default:
		return "client error", err.Error()
	}
}

// loadTarget is the server under load.
type loadTarget struct {
	addr, user, password string
	// pid is the server process (0: not ours); budget its --memory
	// (0: unknown); metrics its /metrics host:port ("" none).
	pid     int
	budget  int64
	metrics string
	what    string
	stop    func()
}

// connConfig makes pgx connections that cancel with a PostgreSQL
// CancelRequest when their context ends (pgx's default would close the
// socket), and give the server 30 s to answer it before giving up.
func (t *loadTarget) connConfig() (*pgx.ConnConfig, error) {
	host, port, _ := splitHostPort(t.addr)
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s dbname=nicflow sslmode=disable connect_timeout=30", host, port))
	if err != nil {
		return nil, nferr.Queryf("--addr %s: %v", t.addr, err)
	}
	cfg.User = t.user
	if t.password != "" {
		cfg.Password = t.password
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 30 * time.Second}
	}
	return cfg, nil
}

// loadReport is what bench load measured: the serial baseline first,
// then each level of o.Clients.
type loadReport struct {
	sf     float64
	what   string // the server under load
	levels []*loadLevel
}

func runLoad(ctx context.Context, o loadOptions, stdout io.Writer) error {
	o.defaults()
	r, err := measureLoad(ctx, o)
	if err != nil {
		return err
	}
	return printLoad(stdout, o, r)
}

// measureLoad starts the server (unless o.Addr), runs the serial baseline
// and every level, and stops the server.
func measureLoad(ctx context.Context, o loadOptions) (*loadReport, error) {
	o.defaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	sf, err := tpch.GeneratedSF(o.Dir)
	if err != nil {
		return nil, err
	}
	if !tpch.HasAnswers(sf) {
		return nil, usagef("--dir holds SF %g: bench load checks every answer and needs the reference answers (SF 0.01, 0.1 or 1)", sf)
	}
	maxClients := 1
	for _, n := range o.Clients {
		maxClients = max(maxClients, n)
	}
	t, err := startLoadTarget(ctx, o, maxClients)
	if err != nil {
		return nil, err
	}
	defer t.stop()
	cfg, err := t.connConfig()
	if err != nil {
		return nil, err
	}
	runID := make([]byte, 4)
	rand.Read(runID)
	w := &loadWork{o: o, sf: sf, cfg: cfg, t: t, view: "revenue_load_" + hex.EncodeToString(runID), serial: map[int]time.Duration{}}
	for _, q := range o.Queries {
		params, _ := tpch.AnswerParams(q, sf)
		text, err := tpch.Query(q, params)
		if err != nil {
			return nil, err
		}
		w.texts = append(w.texts, text)
	}
	r := &loadReport{sf: sf, what: t.what}
	fmt.Fprintf(o.Progress, "bench load: %s; serial baseline for %v\n", t.what, o.Duration)
	r.levels = []*loadLevel{w.level(ctx, "serial", 1, false)}
	w.setSerial(r.levels[0])
	fmt.Fprintf(o.Progress, "bench load: serial: %d queries in %v\n", r.levels[0].done, r.levels[0].elapsed.Round(time.Millisecond))
	for _, n := range o.Clients {
		if err := ctx.Err(); err != nil {
			return nil, nferr.With(nferr.KindCanceled, err)
		}
		fmt.Fprintf(o.Progress, "bench load: %d clients for %v\n", n, o.Duration)
		l := w.level(ctx, strconv.Itoa(n), n, o.CancelFrac > 0)
		fmt.Fprintf(o.Progress, "bench load: %d clients: %d queries, %d failures\n", n, l.done, l.failures())
		r.levels = append(r.levels, l)
	}
	return r, nil
}

// loadWork is what every level shares.
type loadWork struct {
	o     loadOptions
	sf    float64
	cfg   *pgx.ConnConfig
	t     *loadTarget
	texts []string // of o.Queries, in order
	view  string   // prefix of the clients' Q15 views
	// serial is each query's mean time in the serial baseline (the
	// window of its cancel moment), serialAll the mean of all.
	serial    map[int]time.Duration
	serialAll time.Duration
	levelNo   atomic.Uint64
}

func (w *loadWork) setSerial(l *loadLevel) {
	sum, n := map[int]time.Duration{}, map[int]int{}
	for i, q := range l.latQ {
		sum[q] += l.lat[i]
		n[q]++
	}
	var all time.Duration
	for q, s := range sum {
		w.serial[q] = s / time.Duration(n[q])
		all += s
	}
	if len(l.lat) > 0 {
		w.serialAll = all / time.Duration(len(l.lat))
	} else {
		w.serialAll = time.Second
	}
}

// connect opens a client connection, recording its setup time or failure.
func (w *loadWork) connect(ctx context.Context, l *loadLevel) (*pgx.Conn, error) {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(cctx, w.cfg)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.connFail++
		if len(l.connMsgs) < 3 {
			l.connMsgs = append(l.connMsgs, err.Error())
		}
		return nil, err
	}
	l.connect = append(l.connect, time.Since(start))
	return c, nil
}

// level runs n clients (and the probe) for the duration.
func (w *loadWork) level(ctx context.Context, name string, n int, cancels bool) *loadLevel {
	l := &loadLevel{name: name, clients: n, budget: w.t.budget}
	seed := w.levelNo.Add(1)
	resetPeakRSS(w.t.pid)
	before := w.t.scrape()
	// NB: every client connects at once (a connection storm); the level's
	// time starts when they are all in.
	conns := make([]*pgx.Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; try < 3 && ctx.Err() == nil; try++ {
				if c, err := w.connect(ctx, l); err == nil {
					conns[i] = c
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	start := time.Now()
	deadline := start.Add(w.o.Duration)
	runCtx, stopRun := context.WithDeadline(ctx, deadline)
	defer stopRun()
	probeDone := make(chan struct{})
	probeCtx, stopProbe := context.WithCancel(ctx)
	go func() {
		defer close(probeDone)
		w.probe(probeCtx, l)
	}()
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(w.o.Seed, seed<<32|uint64(i)))
			conns[i] = w.client(ctx, runCtx, l, c, i, rng, deadline, cancels)
		}()
	}
	wg.Wait()
	l.elapsed = time.Since(start)
	if l.elapsed < w.o.Duration {
		l.elapsed = w.o.Duration
	}
	stopProbe()
	<-probeDone
	for _, c := range conns {
		if c != nil {
			c.Close(context.Background())
		}
	}
	l.peakRSS, l.rssNote = readPeakRSS(w.t.pid)
	after := w.t.scrape()
	if before != nil && after != nil {
		l.hasAdmission = true
		l.admitted = after["nicflow_admission_admitted_total"] - before["nicflow_admission_admitted_total"]
		l.rejected = after["nicflow_admission_rejected_total"] - before["nicflow_admission_rejected_total"]
		l.waited = after["nicflow_admission_wait_seconds_total"] - before["nicflow_admission_wait_seconds_total"]
		if m := after["nicflow_admission_memory_bytes"]; m > 0 {
			l.budget = int64(m)
		}
	}
	return l
}

// recordDone counts a right answer of query q that took d.
func (l *loadLevel) recordDone(q int, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done++
	l.lat = append(l.lat, d)
	l.latQ = append(l.latQ, q)
}

// client runs queries on c until the deadline and returns the connection
// it ends with (nil when it lost it and could not open another).
func (w *loadWork) client(ctx, runCtx context.Context, l *loadLevel, c *pgx.Conn, id int, rng *mrand.Rand,
	deadline time.Time, cancels bool) *pgx.Conn {
	view := fmt.Sprintf("%s_%s_%d", w.view, l.name, id)
	for runCtx.Err() == nil && time.Now().Before(deadline) {
		k := rng.IntN(len(w.o.Queries))
		q, text := w.o.Queries[k], w.texts[k]
		if q == 15 {
			text = strings.ReplaceAll(text, "revenue0", view)
		}
		qctx, cancel := context.WithCancel(runCtx)
		var sent atomic.Bool
		var timer *time.Timer
		wantCancel := cancels && rng.Float64() < w.o.CancelFrac
		if wantCancel {
			window := w.serial[q]
			if window <= 0 {
				window = w.serialAll
			}
			at := time.Millisecond + time.Duration(rng.Int64N(int64(window)+1))
			timer = time.AfterFunc(at, func() {
				sent.Store(true)
				cancel()
			})
		}
		start := time.Now()
		got, _, err := pgRunner(c)(qctx, text, true)
		took := time.Since(start)
		if timer != nil {
			timer.Stop()
		}
		wasSent := sent.Load()
		cancel()
		cut := runCtx.Err() != nil || time.Now().After(deadline)
		if err == nil {
			if cerr := tpch.CheckAnswer(q, w.sf, got); cerr != nil {
				l.mu.Lock()
				l.wrong++
				if len(l.wrongMsgs) < 5 {
					note := ""
					switch {
					case wasSent:
						note = " (a cancel was sent while it ran)"
					case cut:
						note = " (the level ended while it ran)"
					}
					l.wrongMsgs = append(l.wrongMsgs, fmt.Sprintf("Q%d: %v%s", q, cerr, note))
				}
				l.mu.Unlock()
			} else if !cut {
				l.recordDone(q, took)
			}
		}
		if wantCancel {
			l.mu.Lock()
			l.cancelReq++
			if wasSent {
				l.cancelSent++
			}
			l.mu.Unlock()
		}
		var pe *pgconn.PgError
		canceled := err != nil && errors.As(err, &pe) && pe.Code == "57014"
		ctxErr := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		switch {
		case err == nil:
			if wantCancel {
				l.mu.Lock()
				l.cancelLate++
				if wasSent {
					l.sentLate++
				}
				l.mu.Unlock()
			}
		case canceled && wasSent:
			l.mu.Lock()
			l.cancelOK++
			l.mu.Unlock()
		case wasSent && ctxErr && !c.IsClosed():
			// NB: the moment came before pgx sent the query: nothing to
			// cancel on the server, so not sent mid-flight.
			l.mu.Lock()
			l.cancelSent--
			l.cancelLate++
			l.mu.Unlock()
		case cut && (canceled || ctxErr) && !c.IsClosed():
			l.mu.Lock()
			l.cut++
			l.mu.Unlock()
		default:
			class, msg := errClass(err, c)
			if wasSent {
				class += " (after a cancel)"
			}
			l.addErr(class, fmt.Sprintf("Q%d: %s", q, msg))
		}
		if err != nil {
			// The connection must serve the next statement: after a
			// cancel, a cut or an error alike; a Q15 stopped half-way
			// may have left its view behind.
			if c = w.afterError(ctx, l, c, q == 15, view); c == nil {
				return nil
			}
		}
	}
	return c
}

// afterError checks that c still answers (select 1), drops a view a
// stopped Q15 left, and opens a new connection if c broke.
func (w *loadWork) afterError(ctx context.Context, l *loadLevel, c *pgx.Conn, q15 bool, view string) *pgx.Conn {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var one int
	err := c.QueryRow(cctx, "select 1").Scan(&one)
	if err == nil && one != 1 {
		err = fmt.Errorf("select 1 answered %d", one)
	}
	if err != nil {
		l.mu.Lock()
		l.brokenAfter++
		l.mu.Unlock()
		class, msg := errClass(err, c)
		l.addErr("unusable after an error: "+class, msg)
		c.Close(context.Background())
		if c, err = w.connect(ctx, l); err != nil {
			return nil
		}
	}
	if q15 {
		if _, err := c.Exec(cctx, "drop view if exists "+view); err != nil {
			class, msg := errClass(err, c)
			l.addErr("drop view: "+class, msg)
		}
	}
	return c
}

// probe runs select 1 on its own connection and opens a fresh connection
// every TrivialEvery, and samples the admission queue, until ctx ends.
func (w *loadWork) probe(ctx context.Context, l *loadLevel) {
	var c *pgx.Conn
	defer func() {
		if c != nil {
			c.Close(context.Background())
		}
	}()
	tick := time.NewTicker(w.o.TrivialEvery)
	defer tick.Stop()
	for {
		if c == nil {
			c, _ = w.connect(ctx, l)
		}
		if c != nil {
			qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			start := time.Now()
			var one int
			err := c.QueryRow(qctx, "select 1").Scan(&one)
			took := time.Since(start)
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil || one != 1:
				l.mu.Lock()
				l.trivialFail++
				l.mu.Unlock()
				if err != nil {
					class, msg := errClass(err, c)
					l.addErr("trivial query: "+class, msg)
				}
				c.Close(context.Background())
				c = nil
			default:
				l.mu.Lock()
				l.trivial = append(l.trivial, took)
				l.mu.Unlock()
			}
		}
		if f, err := w.connect(ctx, l); err == nil {
			f.Close(context.Background())
		}
		if m := w.t.scrape(); m != nil {
			l.mu.Lock()
			l.maxQueued = max(l.maxQueued, m["nicflow_admission_queued"])
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scrape reads the server's admission figures (nil without /metrics).
func (t *loadTarget) scrape() map[string]float64 {
	if t.metrics == "" {
		return nil
	}
	text, err := scrapeMetrics(t.metrics)
	if err != nil || !strings.Contains(text, "nicflow_admission_") {
		return nil
	}
	m := map[string]float64{}
	for _, name := range []string{"nicflow_admission_admitted_total", "nicflow_admission_rejected_total",
		"nicflow_admission_wait_seconds_total", "nicflow_admission_queued", "nicflow_admission_memory_bytes"} {
		m[name] = promSum(text, name)
	}
	return m
}

// resetPeakRSS resets the peak RSS (VmHWM) of process pid, so that each
// level reports its own (Linux: clear_refs 5); it fails quietly where it
// is not allowed (readPeakRSS then says so).
func resetPeakRSS(pid int) {
	if pid > 0 {
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) //nolint:errcheck // see readPeakRSS
	}
}

// readPeakRSS is process pid's peak RSS (VmHWM) in bytes, with a note
// when it is not the level's own.
func readPeakRSS(pid int) (int64, string) {
	if pid <= 0 {
		return 0, "not this machine's process"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err.Error()
	}
	var hwm, rss int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmHWM":
			hwm = kb << 10
		case "VmRSS":
			rss = kb << 10
		}
	}
	return max(hwm, rss), ""
}

func pctl(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func msOrDash(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	return ms(pctl(ds, p))
}

func printLoad(w io.Writer, o loadOptions, r *loadReport) error {
	levels := r.levels
	serialRate := float64(levels[0].done) / levels[0].elapsed.Seconds()
	header := []string{"clients", "done", "wrong", "errors", "cut", "cancel_req", "cancel_sent", "cancel_57014", "cancel_late",
		"conn_fail", "qps", "vs_serial", "p50_ms", "p99_ms", "trivial_p50_ms", "trivial_p99_ms", "connect_p99_ms",
		"peak_rss", "memory", "admitted", "rejected", "waited_s", "max_queued"}
	var rows [][]string
	for _, l := range levels {
		errs := 0
		for _, c := range l.errs {
			errs += c
		}
		rate := float64(l.done) / l.elapsed.Seconds()
		rss, budget := "?", "?"
		if l.peakRSS > 0 {
			rss = exec.FormatBytes(l.peakRSS)
		}
		if l.budget > 0 {
			budget = exec.FormatBytes(l.budget)
		}
		adm := []string{"-", "-", "-", "-"}
		if l.hasAdmission {
			adm = []string{fmt.Sprint(l.admitted), fmt.Sprint(l.rejected), fmt.Sprintf("%.1f", l.waited), fmt.Sprint(l.maxQueued)}
		}
		rows = append(rows, append([]string{l.name, fmt.Sprint(l.done), fmt.Sprint(l.wrong), fmt.Sprint(errs), fmt.Sprint(l.cut),
			fmt.Sprint(l.cancelReq), fmt.Sprint(l.cancelSent), fmt.Sprint(l.cancelOK), fmt.Sprint(l.cancelLate),
			fmt.Sprint(l.connFail), fmt.Sprintf("%.2f", rate), fmt.Sprintf("%.2f", rate/max(serialRate, 1e-9)),
			msOrDash(l.lat, 0.5), msOrDash(l.lat, 0.99), msOrDash(l.trivial, 0.5), msOrDash(l.trivial, 0.99),
			msOrDash(l.connect, 0.99), rss, budget}, adm...))
	}
	title := fmt.Sprintf("TPC-H SF %g under load, %s, %v per level, %.0f%% of queries canceled mid-flight; vs_serial = qps / the serial client's qps; peak_rss = the server's VmHWM during the level",
		r.sf, r.what, o.Duration, o.CancelFrac*100)
	writeFigures(w, formatTable, title, header, rows, func(col int) bool { return col == 0 })

	var wrong, failed int
	var first error
	for _, l := range levels {
		wrong += l.wrong
		failed += l.failures()
		for _, m := range l.wrongMsgs {
			fmt.Fprintf(w, "%s: WRONG %s\n", l.name, m)
		}
		classes := make([]string, 0, len(l.errs))
		for c := range l.errs {
			classes = append(classes, c)
		}
		sort.Strings(classes)
		for _, c := range classes {
			fmt.Fprintf(w, "%s: %d× %s, e.g. %s\n", l.name, l.errs[c], c, l.errMsgs[c])
			if first == nil {
				first = fmt.Errorf("%s: %s", c, l.errMsgs[c])
			}
		}
		for _, m := range l.connMsgs {
			fmt.Fprintf(w, "%s: connect failed: %s\n", l.name, m)
			if first == nil {
				first = nferr.Unavailablef("connect: %s", m)
			}
		}
		if l.rssNote != "" {
			fmt.Fprintf(w, "%s: peak RSS unknown: %s\n", l.name, l.rssNote)
		}
	}
	goal := func(ok bool, what string) {
		v := "ok"
		if !ok {
			v = "MISSED"
		}
		fmt.Fprintf(w, "goal %-6s %s\n", v, what)
	}
	goal(wrong == 0, "every answer right")
	goal(failed == 0, "no error, refused connection or broken connection")
	for _, l := range levels[1:] {
		rate := float64(l.done) / l.elapsed.Seconds()
		goal(rate >= serialRate, fmt.Sprintf("%s clients: throughput %.2f q/s at least the serial %.2f q/s", l.name, rate, serialRate))
		goal(len(l.trivial) > 0 && pctl(l.trivial, 0.99) < 100*time.Millisecond, fmt.Sprintf("%s clients: trivial query p99 %s ms under 100 ms", l.name, msOrDash(l.trivial, 0.99)))
		if l.peakRSS > 0 && l.budget > 0 {
			goal(l.peakRSS <= l.budget, fmt.Sprintf("%s clients: peak RSS %s within --memory %s", l.name, exec.FormatBytes(l.peakRSS), exec.FormatBytes(l.budget)))
		}
		if l.cancelSent > 0 {
			goal(l.cancelOK+l.sentLate == l.cancelSent, fmt.Sprintf("%s clients: every cancel sent mid-flight ended its query with 57014 (%d of %d; %d answered first)", l.name, l.cancelOK, l.cancelSent, l.sentLate))
		}
	}
	switch {
	case wrong > 0:
		return nferr.Dataf("%d wrong answers under load", wrong)
	case failed > 0:
		if first == nil {
			first = nferr.Unavailablef("trivial queries failed")
		}
		return nferr.Wrap(nferr.KindOf(first), first, "%d failures under load", failed)
	}
	return nil
}
