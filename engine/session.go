package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
	"golang.org/x/sys/unix"
)

// Options configure an embedded session.
type Options struct {
	// Parallelism is the number of pipelines a query runs on (default: the
	// CPUs Go may use).
	Parallelism int
	// MemoryLimit is each query's memory budget in bytes (default
	// exec.DefaultMemoryLimit(): 60% of the machine's or cgroup's memory,
	// or NICFLOW_MEMORY_LIMIT). Operators that would exceed it fail with
	// a KindResource error naming themselves.
	MemoryLimit int64
	// BatchSize is the target rows per batch (default exec.DefaultBatchSize).
	BatchSize int
	// SpillDir is where queries write what does not fit in MemoryLimit
	// (hash aggregates, sorts; see exec.Spill). Default: the tmp/
	// directory of the database directory, or the OS temporary directory
	// when the database cannot be written. "off" turns spilling off:
	// queries then fail with a memory limit error instead.
	SpillDir string
	// SpillLimit caps the bytes one query keeps on disk at once (0: no
	// cap); a query needing more fails with a resource error.
	SpillLimit int64
	// DisabledRules names optimizer rules not to apply (engine.Rules; for
	// tests, and for users hit by a planner bug). Required rules cannot be
	// disabled.
	DisabledRules []string
	// FileAccess limits the files statements may read and write (file
	// tables, read_parquet/read_csv, COPY FROM and TO, CREATE EXTERNAL
	// TABLE): "" allows any path the process can reach (embedded use, as
	// the user who runs it); FileAccessNone allows none; any other value
	// is a directory under which every path must resolve (storage.FileRoot:
	// each file a glob matches and each file of a directory, links and
	// ".." resolved, opened through the root). A server exposing the
	// database to others sets it. Under any policy (not "") SET spill_dir
	// is refused: SpillDir is then the operator's.
	FileAccess string
	// Storage configures the database directory (file writing options,
	// checksum verification).
	Storage storage.Options
	// Observer, when set, is told of every statement the session runs
	// (observe.go): a server's registry of running and recent queries.
	Observer Observer
	// Alloc allocates Arrow buffers (default: a pool that reuses freed
	// batch buffers, run_alloc.go; tests pass a checked allocator to catch
	// leaks).
	Alloc memory.Allocator
	// Admission, when set, is the node's admission control shared by a
	// server's sessions (admission.go): each query reserves MemoryLimit
	// from it before it runs, waiting in its queue while that does not
	// fit, and runs under what it was granted. nil: every query gets
	// MemoryLimit of its own.
	Admission *Admission
}

// maxBatchSize bounds batches: storage rejects larger scan batches (a
// million rows of a few columns is already tens of MiB per batch).
const maxBatchSize = 1 << 20

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.Parallelism == 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.Parallelism < 1 || o.Parallelism > phys.MaxParallelism {
		return nferr.Queryf("parallelism %d out of range 1..%d", o.Parallelism, phys.MaxParallelism)
	}
	if o.MemoryLimit == 0 {
		o.MemoryLimit = exec.DefaultMemoryLimit()
	}
	if o.MemoryLimit < 0 {
		return nferr.Queryf("memory limit %d must not be negative", o.MemoryLimit)
	}
	if o.BatchSize == 0 {
		o.BatchSize = exec.DefaultBatchSize
	}
	if o.SpillLimit < 0 {
		return nferr.Queryf("spill limit %d must not be negative", o.SpillLimit)
	}
	if err := checkDisabledRules(o.DisabledRules); err != nil {
		return err
	}
	if o.BatchSize < 1 || o.BatchSize > maxBatchSize {
		return nferr.Queryf("batch size %d out of range 1..%d", o.BatchSize, maxBatchSize)
	}
	if o.Alloc == nil {
		o.Alloc = newPoolAllocator()
	}
	return o.Storage.Validate()
}

// Session is an embedded nicflow: a database directory opened in this
// process (tables and views in its catalog), the session's settings, and
// query execution on this node. Statements run one at a time; a Session is safe for use by one
// goroutine at a time (Close may be called from any).
type Session struct {
	db   *storage.DB
	cat  *StorageCatalog
	opts Options
	// shared: db is a SharedDB's, which Close leaves open.
	shared bool
	mu     sync.Mutex
	// queryRetries is SET query_retries (-1: not set).
	queryRetries int
	// adaptiveOff is SET adaptive = off (a cluster's plans are not
	// re-planned at run time).
	adaptiveOff bool
	// skewRows is SET adaptive_skew_rows (0: the default; -1: no splits).
	skewRows int64
	// coalesceRows is SET adaptive_coalesce_rows (0: the default; -1: no
	// coalescing).
	coalesceRows int64
	// zone is SET TIME ZONE's zone (expr.LoadZone's names; "": UTC, the
	// default): statements bind in it and TIMESTAMPTZ values print in it
	// (TimeZone, ValueFormatter).
	zone      string
	zoneShown string // the zone as SET gave it (SHOW timezone)
	// tx is the transaction block (BEGIN ... COMMIT) the session is in.
	tx TxBlock
	// client holds the PostgreSQL client settings SET has given
	// (clientSettings): accepted and shown, without effect on queries.
	client map[string]string
	// stmtTimeout is statement_timeout (0: none): a query that has not
	// ended within it, its wait for admission included, is canceled.
	stmtTimeout time.Duration
	// spillRoot is the spill directory in use ("": spilling off), resolved
	// from the SpillDir setting spillFor at the first query after it
	// changed; leftovers of killed processes are removed then.
	spillRoot     string
	spillFor      string
	spillResolved bool
	spilled       atomic.Int64 // bytes the session's finished queries spilled
	// live is the observed statement being run (Options.Observer; set
	// under mu): the queries it builds count per-operator rows for it.
	live *Statement
	// lister answers SHOW QUERIES when set (SetQueryLister): a cluster
	// coordinator's running queries.
	lister QueryLister
}

// SetQueryLister makes SHOW QUERIES list l's statements (a cluster
// coordinator's running queries) rather than the Observer's.
func (s *Session) SetQueryLister(l QueryLister) {
	s.mu.Lock()
	s.lister = l
	s.mu.Unlock()
}

type budgetKey struct{}

// WithBudget returns ctx carrying b: the queries a session opens under it
// run under b instead of a budget of their own (and without
// Options.Admission): a cluster coordinator admits a statement it runs
// itself before it plans it, and hands the session its grant this way.
func WithBudget(ctx context.Context, b *exec.Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetFrom(ctx context.Context) *exec.Budget {
	b, _ := ctx.Value(budgetKey{}).(*exec.Budget)
	return b
}

// Spilled is the number of bytes the session's finished queries have
// written to spill files.
func (s *Session) Spilled() int64 { return s.spilled.Load() }

// spillRootFor resolves Options.SpillDir for database directory dir.
func spillRootFor(opt, dir string) string {
	switch opt {
	case "off":
		return ""
	case "":
		tmp := filepath.Join(dir, "tmp")
		if err := os.MkdirAll(tmp, 0o700); err == nil && unix.Access(tmp, unix.W_OK) == nil {
			return tmp
		}
		return os.TempDir()
	}
	return opt
}

// newSpill returns the spill space of a new query (nil: spilling off).
func (s *Session) newSpill() *exec.Spill {
	if !s.spillResolved || s.spillFor != s.opts.SpillDir {
		// NB: resolved (a mkdir and an access check) when the setting
		// changes, not for every query.
		root := spillRootFor(s.opts.SpillDir, s.db.Dir())
		if root != "" && root != s.spillRoot {
			exec.CleanSpillLeftovers(root) //nolint:errcheck // best effort: a leftover only takes space
		}
		s.spillRoot, s.spillFor, s.spillResolved = root, s.opts.SpillDir, true
	}
	if s.spillRoot == "" {
		return nil
	}
	// NB: numbered in the process, not the session: the spill directory
	// is named by the process and this name, and sessions run side by side.
	return exec.NewSpill(s.spillRoot, fmt.Sprintf("q%d", spillQueries.Add(1)), s.opts.SpillLimit)
}

// spillQueries numbers the spill spaces of the process's queries.
var spillQueries atomic.Int64

// Open opens the database in dir (creating an empty one when dir holds
// none) for a session.
func Open(dir string, opts Options) (*Session, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	db, err := storage.Open(dir, opts.Storage)
	if err != nil {
		return nil, err
	}
	cat := NewStorageCatalog(db)
	cat.fileAccess = opts.FileAccess
	return &Session{db: db, cat: cat, opts: opts, queryRetries: -1}, nil
}

// Close closes the database (a SharedDB's session leaves it open).
// Results still open must be closed first.
func (s *Session) Close() error {
	if s.shared {
		return nil
	}
	return s.db.Close()
}

// DB is the session's database.
func (s *Session) DB() *storage.DB { return s.db }

// Options are the session's current settings (SET changes them).
func (s *Session) Options() Options { return s.opts }

// catalog is what statements bind against: the database's tables and
// views.
func (s *Session) catalog() plan.Catalog { return s.cat }

// Execute parses a script (statements separated by semicolons) and
// returns it ready to run statement by statement with Script.Next. A
// syntax error anywhere in the script is reported here, before anything
// runs. ctx cancels every statement of the script.
func (s *Session) Execute(ctx context.Context, script string) (*Script, error) {
	stmts, err := sql.Parse(script)
	if err != nil {
		return nil, err
	}
	return &Script{s: s, ctx: ctx, src: script, stmts: stmts}, nil
}

// Query runs a script and returns the result of its last statement (the
// others are run to completion first): the convenient call for one query.
func (s *Session) Query(ctx context.Context, script string) (*Result, error) {
	return QueryConn(ctx, LocalConn(s), script)
}

// Script is a parsed script being run.
type Script struct {
	s     *Session
	ctx   context.Context
	src   string
	stmts []sql.RawStmt
	i     int
	cur   *Result
}

// Len is the number of statements.
func (sc *Script) Len() int { return len(sc.stmts) }

// Next runs the next statement and returns its result, or (nil, nil)
// after the last one. The previous result is closed first (a rows result
// not read to the end is canceled). DDL and DML run to completion inside
// Next; a query is started (planned, built, opened) and its rows are read
// with Result.Next.
func (sc *Script) Next() (*Result, error) {
	if sc.cur != nil {
		sc.cur.Close()
		sc.cur = nil
	}
	if sc.i >= len(sc.stmts) {
		return nil, nil
	}
	raw := sc.stmts[sc.i]
	sc.i++
	if err := sc.ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	r, err := sc.s.run(sc.ctx, sc.src, raw)
	if err != nil {
		return nil, err
	}
	sc.cur = r
	return r, nil
}

// Close closes the current result. Idempotent.
func (sc *Script) Close() error {
	if sc.cur != nil {
		err := sc.cur.Close()
		sc.cur = nil
		return err
	}
	return nil
}

// Result is the outcome of one statement: a stream of rows (Schema set)
// or a status (DDL, DML, SET).
type Result struct {
	// SQL is the statement's text.
	SQL string
	// Schema describes the rows; nil for a status.
	Schema *arrow.Schema
	// Zone is the session time zone when the statement ran (nil: UTC):
	// the zone its TIMESTAMPTZ values print in (NewValueFormatterIn).
	Zone *time.Location
	// Status is the command tag of a statement without rows ("CREATE
	// TABLE", "INSERT 0 5", "COPY 1000"); empty for rows.
	Status string
	// RowsAffected counts the rows an INSERT, COPY or CREATE TABLE AS
	// wrote.
	RowsAffected int64

	// rows
	root    exec.Operator
	env     *exec.Env
	spilled *atomic.Int64 // the session's spill total, added to at Close
	cancel  context.CancelFunc
	static  []arrow.RecordBatch
	rec     arrow.RecordBatch
	out     *exec.Batch
	rows    int64
	done    bool
	closed  bool
	err     error
	started time.Time
	onClose func()
	stream  Stream     // NewStreamResult's source
	tx      *TxBlock   // the session's block, failed by an error of these rows
	live    *Statement // the observed statement whose rows these are
	grant   *Grant     // the query's share of the node's memory (Options.Admission)
}

// Next returns the next batch of rows, or nil at the end. The batch is
// valid until the next call of Next or Close (Retain it to keep it); so
// are strings read with array.String.Value, which share its buffer (copy
// them to keep them: buffers are reused).
// Errors are nferr-kinded; a canceled context gives KindCanceled.
func (r *Result) Next() (arrow.RecordBatch, error) {
	r.releaseRec()
	if r.err != nil {
		return nil, r.err
	}
	if r.done || r.closed {
		return nil, nil
	}
	if r.stream != nil {
		rec, err := r.stream.Next()
		if err != nil {
			r.err = err
			return nil, err
		}
		if rec == nil {
			r.done = true
			return nil, nil
		}
		r.rows += rec.NumRows()
		return rec, nil
	}
	if r.root == nil {
		if len(r.static) == 0 {
			r.done = true
			return nil, nil
		}
		r.rec = r.static[0] // ownership moves to r.rec
		r.static = r.static[1:]
		r.rows += r.rec.NumRows()
		if r.live != nil {
			r.live.rows.Store(r.rows)
		}
		return r.rec, nil
	}
	b, err := r.root.Next()
	if err != nil {
		if r.tx != nil {
			r.tx.Fail()
		}
		r.err = err
		if ctxErr := r.env.Ctx.Err(); ctxErr != nil && !nferr.Is(err, nferr.KindCanceled) {
			r.err = nferr.With(nferr.KindCanceled, ctxErr)
		}
		return nil, r.err
	}
	if b == nil {
		r.done = true
		return nil, nil
	}
	c := exec.Compact(r.env.Alloc, b)
	r.rec = array.NewRecordBatch(r.Schema, c.Cols, int64(c.N))
	for _, a := range c.Cols {
		a.Release()
	}
	r.rows += int64(c.N)
	if r.live != nil {
		r.live.rows.Store(r.rows)
	}
	return r.rec, nil
}

func (r *Result) releaseRec() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

// Rows is the number of rows returned so far.
func (r *Result) Rows() int64 { return r.rows }

// Elapsed is the time since the statement started.
func (r *Result) Elapsed() time.Duration { return time.Since(r.started) }

// Close stops the statement (canceling a query not read to the end) and
// releases everything. Idempotent.
func (r *Result) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.releaseRec()
	var err error
	if r.root != nil {
		r.cancel()
		err = r.root.Close()
		r.root = nil
	}
	if r.grant != nil {
		// NB: after the operators closed, which frees what they held.
		r.grant.Release()
		r.grant = nil
	}
	if r.env != nil && r.env.Spill != nil {
		if r.spilled != nil {
			r.spilled.Add(r.env.Spill.Written())
		}
		if serr := r.env.Spill.Close(); err == nil {
			err = serr
		}
	}
	if r.stream != nil {
		if serr := r.stream.Close(); err == nil {
			err = serr
		}
	}
	for _, rec := range r.static {
		rec.Release()
	}
	r.static = nil
	if r.onClose != nil {
		r.onClose()
	}
	return err
}

// drain reads the result to the end.
func (r *Result) drain() error {
	for {
		rec, err := r.Next()
		if err != nil || rec == nil {
			return err
		}
	}
}

// ---------------------------------------------------------------- statements

func (s *Session) run(ctx context.Context, src string, raw sql.RawStmt) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tag, handled, err := s.tx.Before(raw.Stmt); err != nil || handled {
		if err != nil {
			return nil, err
		}
		return status(tag, 0), nil
	}
	// NB: the files of the tables the statement binds stay until its rows
	// are closed, though another session sharing the database replaces or
	// drops them meanwhile (storage.DB.BeginRead).
	end := s.db.BeginRead()
	r, err := s.runObserved(ctx, src, raw)
	switch {
	case err != nil:
		end()
		s.tx.Fail()
	case r.root != nil:
		r.tx = &s.tx
		prev := r.onClose
		r.onClose = func() {
			if prev != nil {
				prev()
			}
			end()
		}
	default:
		end() // a status, or rows already in memory
	}
	return r, err
}

// runObserved runs a statement, reported to the session's observer.
func (s *Session) runObserved(ctx context.Context, src string, raw sql.RawStmt) (*Result, error) {
	start := time.Now()
	obs := s.opts.Observer
	if obs == nil {
		return s.runLocked(ctx, src, raw, start)
	}
	ctx, st := s.observe(ctx, raw.Text, start)
	s.live = st
	r, err := s.runLocked(ctx, src, raw, start)
	s.live = nil
	switch {
	case err != nil:
		s.endStatement(obs, st, err)
	case r.root == nil:
		// A status, or rows built in memory (SHOW, EXPLAIN): done now.
		n := r.RowsAffected
		for _, rec := range r.static {
			n += rec.NumRows()
		}
		st.rows.Store(n)
		s.endStatement(obs, st, nil)
	default:
		r.live = st
		prev := r.onClose
		r.onClose = func() {
			if prev != nil {
				prev()
			}
			s.endStatement(obs, st, r.err)
		}
	}
	return r, err
}

func (s *Session) runLocked(ctx context.Context, src string, raw sql.RawStmt, start time.Time) (*Result, error) {
	if err := checkPlanSize(raw.Stmt, s.opts.MemoryLimit); err != nil {
		return nil, err
	}
	st, err := PrepareIn(s.catalog(), src, raw.Stmt, s.zone, s.opts.DisabledRules...)
	if err != nil {
		return nil, err
	}
	r, err := s.runStmt(ctx, st)
	if err != nil {
		return nil, err
	}
	r.SQL = raw.Text
	r.started = start
	r.Zone = s.TimeZone()
	return r, nil
}

func status(tag string, n int64) *Result { return &Result{Status: tag, RowsAffected: n} }

func (s *Session) runStmt(ctx context.Context, st bind.Statement) (*Result, error) {
	switch x := st.(type) {
	case *bind.QueryStmt:
		return s.startQuery(ctx, x, false)
	case *bind.ExplainStmt:
		return s.explain(ctx, x)
	case *bind.CreateTableStmt:
		return s.createTable(ctx, x)
	case *bind.CreateIndexStmt:
		ix := storage.Index{Name: x.Name, Columns: x.Columns, Unique: x.Unique}
		if err := s.db.CreateIndex(ctx, x.Table, ix, x.IfNotExists); err != nil {
			return nil, err
		}
		return status("CREATE INDEX", 0), nil
	case *bind.CreateExternalTableStmt:
		return s.createExternal(ctx, x)
	case *bind.CreateViewStmt:
		if err := s.db.CreateViewFields(x.Name, x.Columns, viewFields(x.Schema), x.SQL, x.OrReplace); err != nil {
			return nil, err
		}
		return status("CREATE VIEW", 0), nil
	case *bind.DropStmt:
		return s.drop(x)
	case *bind.InsertStmt:
		return s.insert(ctx, x)
	case *bind.DeleteStmt:
		return s.deleteRows(ctx, x)
	case *bind.UpdateStmt:
		return s.updateRows(ctx, x)
	case *bind.CopyStmt:
		return s.copy(ctx, x)
	case *bind.CopyToStmt:
		return s.copyTo(ctx, x)
	case *bind.ShowTablesStmt:
		return s.showTables()
	case *bind.ShowStmt:
		return s.show(x.Name)
	case *bind.DescribeStmt:
		return s.describe(x)
	case *bind.SetStmt:
		if err := s.set(x.Name, x.Value); err != nil {
			return nil, err
		}
		return status("SET", 0), nil
	case *bind.AnalyzeStmt:
		return s.analyze(x)
	}
	return nil, nferr.Queryf("statement %T is not supported", st)
}

// analyze runs ANALYZE. nicflow's statistics need no sampling pass: the
// optimizer's row counts, null counts, min/max and distinct estimates are
// those each Parquet file's footer and dictionary pages gave when the file
// was written or registered (storage.File.RowGroups), and the catalog
// builds a table's from them for every new generation of the table
// (StorageCatalog, tableDefOf), so they are exact after every write.
// ANALYZE loads each named table's (every table's when none is named)
// from its current snapshot, as the next query will: a table dropped
// since the statement was bound is the error PostgreSQL gives.
func (s *Session) analyze(x *bind.AnalyzeStmt) (*Result, error) {
	names := make([]string, 0, len(x.Tables))
	for _, t := range x.Tables {
		names = append(names, t.Name)
	}
	if len(x.Tables) == 0 {
		for _, t := range s.db.Tables() {
			names = append(names, t.QualifiedName())
		}
	}
	for _, n := range names {
		def, err := s.cat.LookupTable(n)
		if err != nil {
			return nil, err
		}
		if def == nil {
			if len(x.Tables) == 0 {
				continue // dropped since it was listed
			}
			return nil, nferr.Queryf("relation %q does not exist", n)
		}
	}
	return status("ANALYZE", 0), nil
}

// plan turns an optimized query into a physical plan.
func (s *Session) plan(q *bind.QueryStmt) (*phys.PhysPlan, error) {
	return phys.PlanPhysical(q.Plan, q.Names, phys.PlanOptions{Parallelism: s.opts.Parallelism, Local: true, Disabled: physDisabled(s.opts.DisabledRules)})
}

func (s *Session) newEnv(ctx context.Context) (*exec.Env, context.CancelFunc) {
	qctx, cancel := context.WithCancel(ctx)
	return &exec.Env{
		Ctx:         qctx,
		Alloc:       s.opts.Alloc,
		Budget:      exec.NewBudget(s.opts.MemoryLimit),
		BatchSize:   s.opts.BatchSize,
		Parallelism: s.opts.Parallelism,
		Spill:       s.newSpill(),
	}, cancel
}

// startQuery plans, builds and opens a query; its rows are read with
// Result.Next.
func (s *Session) startQuery(ctx context.Context, q *bind.QueryStmt, analyze bool) (*Result, error) {
	pp, err := s.plan(q)
	if err != nil {
		return nil, err
	}
	r, _, err := s.open(ctx, pp, analyze)
	return r, err
}

func (s *Session) open(ctx context.Context, pp *phys.PhysPlan, analyze bool) (*Result, *phys.Executable, error) {
	if s.stmtTimeout > 0 {
		// NB: the query's context (newEnv's) is canceled at Result.Close,
		// which ends this timer too.
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, s.stmtTimeout)
		r, exe, err := s.openIn(ctx, pp, analyze)
		if err != nil {
			stop()
			return nil, nil, err
		}
		inner := r.cancel
		r.cancel = func() { inner(); stop() }
		return r, exe, nil
	}
	return s.openIn(ctx, pp, analyze)
}

func (s *Session) openIn(ctx context.Context, pp *phys.PhysPlan, analyze bool) (*Result, *phys.Executable, error) {
	var grant *Grant
	given := budgetFrom(ctx)
	if a := s.opts.Admission; a != nil && given == nil && !a.exempt(pp) {
		live := s.live
		g, err := a.Acquire(ctx, s.opts.MemoryLimit, func(q bool) {
			if live != nil {
				live.queued.Store(q)
			}
		})
		if err != nil {
			return nil, nil, err
		}
		grant = g
	}
	env, cancel := s.newEnv(ctx)
	switch {
	case grant != nil:
		env.Budget = grant.Budget()
	case given != nil:
		env.Budget = given
	}
	exe, err := phys.Build(pp, phys.BuildOptions{Source: s.db, Analyze: analyze || s.live != nil, Budget: env.Budget})
	if err != nil {
		cancel()
		if env.Spill != nil {
			env.Spill.Close()
		}
		if grant != nil {
			grant.Release()
		}
		return nil, nil, err
	}
	if s.live != nil {
		s.live.setPlan(pp, exe.Stats)
	}
	r := &Result{root: exe.Root, env: env, cancel: cancel, Schema: resultSchema(pp, exe.Root.Schema()), started: time.Now(), spilled: &s.spilled, grant: grant}
	if err := exe.Root.Open(env); err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, exe, nil
}

// resultSchema names the root's columns with the query's names.
func resultSchema(pp *phys.PhysPlan, got *arrow.Schema) *arrow.Schema {
	fs := make([]arrow.Field, got.NumFields())
	for i, f := range got.Fields() {
		fs[i] = f
		if i < len(pp.Names) {
			fs[i].Name = pp.Names[i]
		}
	}
	return arrow.NewSchema(fs, nil)
}

// staticResult is a result of rows built in memory (SHOW, DESCRIBE,
// EXPLAIN): columns of strings and int64s, one value per row.
func staticResult(alloc memory.Allocator, names []string, types []arrow.DataType, rows [][]any) *Result {
	fs := make([]arrow.Field, len(names))
	for i, n := range names {
		fs[i] = arrow.Field{Name: n, Type: types[i], Nullable: true}
	}
	sch := arrow.NewSchema(fs, nil)
	b := array.NewRecordBuilder(alloc, sch)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			switch fb := b.Field(c).(type) {
			case *array.StringBuilder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(string))
				}
			case *array.Int64Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(int64))
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	r := &Result{Schema: sch}
	if rec.NumRows() > 0 {
		r.static = []arrow.RecordBatch{rec}
	} else {
		rec.Release()
	}
	return r
}

var (
	typStr = arrow.BinaryTypes.String
	typI64 = arrow.PrimitiveTypes.Int64
)

func (s *Session) explain(ctx context.Context, x *bind.ExplainStmt) (*Result, error) {
	var q *bind.QueryStmt
	switch inner := x.Stmt.(type) {
	case *bind.QueryStmt:
		q = inner
	case *bind.InsertStmt:
		q = inner.Query
	case *bind.CreateTableStmt:
		q = inner.Query
	}
	if q == nil {
		return nil, nferr.Queryf("EXPLAIN applies to queries, INSERT and CREATE TABLE AS")
	}
	if x.Analyze {
		if _, ok := x.Stmt.(*bind.QueryStmt); !ok {
			return nil, nferr.Queryf("EXPLAIN ANALYZE applies to queries (it would write the rows of INSERT and CREATE TABLE AS)")
		}
	}
	pp, err := s.plan(q)
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	text.WriteString("Logical plan:\n")
	text.WriteString(opt.ExplainPlan(q.Plan, opt.ExplainOptions{Verbose: x.Verbose}))
	if x.Verbose {
		text.WriteString(explainRules(q.Rules, s.opts.DisabledRules))
		text.WriteString(phys.ExplainRules(pp.Rules))
	}
	if !x.Analyze {
		text.WriteString("Physical plan (parallelism " + strconv.Itoa(s.opts.Parallelism) + "):\n")
		text.WriteString(phys.ExplainLocalPhysical(pp, nil))
	} else {
		r, exe, err := s.open(ctx, pp, true)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		err = r.drain()
		elapsed := time.Since(start)
		rows := r.rows
		peak := r.env.Budget.Peak()
		r.Close()
		if err != nil {
			return nil, err
		}
		text.WriteString("Physical plan (parallelism " + strconv.Itoa(s.opts.Parallelism) + "), executed:\n")
		text.WriteString(phys.ExplainLocalPhysical(pp, exe.Stats))
		text.WriteString("Total: " + strconv.FormatInt(rows, 10) + " rows in " + phys.FormatDuration(elapsed) + ", peak memory " + exec.FormatBytes(peak) + "\n")
	}
	var rows [][]any
	for _, line := range strings.Split(strings.TrimRight(text.String(), "\n"), "\n") {
		rows = append(rows, []any{line})
	}
	return staticResult(s.opts.Alloc, []string{"plan"}, []arrow.DataType{typStr}, rows), nil
}

// ---------------------------------------------------------------- DDL and DML

func (s *Session) createTable(ctx context.Context, x *bind.CreateTableStmt) (*Result, error) {
	if x.Query == nil {
		opts := storage.CreateOptions{IfNotExists: x.IfNotExists}
		if len(x.Indexes)+len(x.Checks)+len(x.ForeignKeys) > 0 || x.Defaults != nil {
			c := &storage.Constraints{Defaults: x.Defaults}
			for _, fk := range x.ForeignKeys {
				c.ForeignKeys = append(c.ForeignKeys, storage.ForeignKey{Name: fk.Name, Columns: fk.Columns, RefTable: fk.RefTable,
					RefColumns: fk.RefColumns, MatchFull: fk.MatchFull, OnDelete: fk.OnDelete, OnUpdate: fk.OnUpdate})
			}
			for _, ix := range x.Indexes {
				c.Indexes = append(c.Indexes, storage.Index{Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique, Primary: ix.Primary, Constraint: ix.Constraint})
			}
			for _, ch := range x.Checks {
				c.Checks = append(c.Checks, storage.Check{Name: ch.Name, SQL: ch.SQL})
			}
			opts.Constraints = c
		}
		if err := s.db.CreateTable(x.Name, x.Schema, opts); err != nil {
			return nil, err
		}
		return status("CREATE TABLE", 0), nil
	}
	if x.IfNotExists {
		if t, _ := s.cat.LookupTable(x.Name); t != nil {
			return status("CREATE TABLE", 0), nil
		}
	}
	app, err := s.db.NewAppender(x.Name, storage.AppendOptions{Create: true, Schema: x.Schema})
	if err != nil {
		return nil, err
	}
	n, _, err := s.appendQuery(ctx, app, x.Query, nil, false, nil)
	if err != nil {
		return nil, err
	}
	return status("CREATE TABLE "+strconv.FormatInt(n, 10), n), nil
}

func (s *Session) insert(ctx context.Context, x *bind.InsertStmt) (*Result, error) {
	name := x.Table.Name
	if st, ok := x.Table.Handle.(*storage.Table); ok {
		name = st.QualifiedName()
	}
	app, err := s.db.NewAppender(name, storage.AppendOptions{SkipConflicts: x.SkipConflicts})
	if err != nil {
		return nil, err
	}
	ret, err := newReturning(x.Returning, app.Schema(), s.opts.Alloc)
	if err != nil {
		app.Abort()
		return nil, err
	}
	n, _, err := s.appendQuery(ctx, app, x.Query, x.Checks, false, ret)
	return dmlResult("INSERT 0 ", n, ret, err)
}

// replaceAppender starts the rewrite of table t by UPDATE or DELETE: q,
// the query of the rows written, narrowed to the files the rows of hit may
// be in when it can be (dml_files.go); those rows replace the files' in one
// commit, which fails if the table changed since t was read. It returns
// the part of the table rewritten and the query to write.
func (s *Session) replaceAppender(t *plan.TableDef, hit, q *bind.QueryStmt) (*storage.Appender, dmlFiles, *bind.QueryStmt, error) {
	st, ok := t.Handle.(*storage.Table)
	if !ok {
		return nil, dmlFiles{}, nil, nferr.Internalf("table %s has no storage handle", t.Name)
	}
	part := narrowDML(t, st, hit)
	rq, ok := part.restrict(t, q)
	if !ok {
		part, rq = narrowDML(t, st, nil), q
	}
	app, err := s.db.NewAppender(st.QualifiedName(), storage.AppendOptions{Replace: true, Generation: st.Generation, ReplaceFiles: part.paths})
	if err != nil {
		return nil, dmlFiles{}, nil, err
	}
	return app, part, rq, nil
}

// deleteRows runs DELETE: the rows that stay are written as new files that
// replace the table's in one atomic commit (copy on write).
func (s *Session) deleteRows(ctx context.Context, x *bind.DeleteStmt) (*Result, error) {
	var hit *bind.QueryStmt
	if !x.All {
		hit = x.Hit
	}
	app, part, keep, err := s.replaceAppender(x.Table, hit, x.Keep)
	if err != nil {
		return nil, err
	}
	ret, err := newReturning(x.Returning, app.Schema(), s.opts.Alloc)
	if err == nil && ret != nil {
		// The rows deleted, read before the rewrite (the commit fails
		// if the table changed since).
		err = ret.addQuery(ctx, s, x.Hit)
	}
	if err != nil {
		app.Abort()
		ret.release()
		return nil, err
	}
	var kept int64
	if x.All {
		kept, err = app.Commit()
	} else {
		kept, _, err = s.appendQuery(ctx, app, keep, nil, false, nil)
	}
	return dmlResult("DELETE ", part.rows-kept, ret, err)
}

// updateRows runs UPDATE: every row, changed or not, is written again and
// the new files replace the table's in one atomic commit (copy on write);
// the count is the rows the WHERE selected.
func (s *Session) updateRows(ctx context.Context, x *bind.UpdateStmt) (*Result, error) {
	app, _, q, err := s.replaceAppender(x.Table, x.Hit, x.Query)
	if err != nil {
		return nil, err
	}
	ret, err := newReturning(x.Returning, app.Schema(), s.opts.Alloc)
	if err != nil {
		app.Abort()
		return nil, err
	}
	_, updated, err := s.appendQuery(ctx, app, q, x.Checks, true, ret)
	if x.Upsert {
		return dmlResult("INSERT 0 ", updated, ret, err)
	}
	return dmlResult("UPDATE ", updated, ret, err)
}

// rowCheck is a CHECK constraint compiled over the rows a statement writes.
type rowCheck struct {
	name string
	ce   *expr.CompiledExpr
}

// compileChecks lowers and compiles CHECK constraints, once per statement,
// onto the rows written: records of schema sch whose columns are cols (in
// table order; a trailing column of cols beyond sch is not referenced).
func compileChecks(cols []plan.Column, checks []bind.BoundCheck, sch *arrow.Schema) ([]rowCheck, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	layout := make([]plan.ColumnID, len(cols))
	for i, c := range cols {
		layout[i] = c.ID
	}
	out := make([]rowCheck, len(checks))
	for i, c := range checks {
		e, err := phys.LowerExpr(c.Expr, layout)
		if err != nil {
			return nil, err
		}
		ce, err := expr.CompileExpr(e, sch)
		if err != nil {
			return nil, err
		}
		out[i] = rowCheck{name: c.Name, ce: ce}
	}
	return out, nil
}

// checkRows fails on the first row of rec that makes a check FALSE (NULL
// passes, as in SQL).
func checkRows(alloc memory.Allocator, table string, checks []rowCheck, rec arrow.RecordBatch) error {
	b := &exec.Batch{Cols: rec.Columns(), N: int(rec.NumRows())}
	for _, c := range checks {
		res, err := c.ce.Eval(alloc, b)
		if err != nil {
			return err
		}
		bad := -1
		if v, ok := res.(*array.Boolean); ok {
			for i := 0; i < v.Len() && bad < 0; i++ {
				if v.IsValid(i) && !v.Value(i) {
					bad = i
				}
			}
		}
		res.Release()
		if bad >= 0 {
			row := "?"
			one := rec.NewSlice(int64(bad), int64(bad+1))
			if text, err := RowsText(one, "NULL"); err == nil && len(text) == 1 {
				row = strings.Join(text[0], ", ")
			}
			one.Release()
			return nferr.Dataf("new row for relation %q violates check constraint %q: failing row contains (%s)", table, c.name, row)
		}
	}
	return nil
}

// dmlResult is the result of a DML statement that wrote n rows (tag and
// n its status), with ret's rows for RETURNING; on err, ret's rows are
// dropped.
func dmlResult(tag string, n int64, ret *returningRows, err error) (*Result, error) {
	if err != nil {
		ret.release()
		return nil, err
	}
	tag += strconv.FormatInt(n, 10)
	if ret != nil {
		return ret.result(tag, n), nil
	}
	return status(tag, n), nil
}

// appendQuery runs q into an appender and commits (or aborts on error);
// every row must pass the CHECK constraints bound, compiled here once. With
// flagged, q's last column is a boolean that is not written: flags counts
// its TRUE values (UPDATE's count). ret, when set, gets every row written
// (flagged: the flagged ones) for RETURNING.
func (s *Session) appendQuery(ctx context.Context, app *storage.Appender, q *bind.QueryStmt, bound []bind.BoundCheck, flagged bool, ret *returningRows) (committed, flags int64, err error) {
	skip := app.SkipsConflicts()
	checks, err := compileChecks(q.Plan.Columns(), bound, app.Schema())
	if err != nil {
		app.Abort()
		return 0, 0, err
	}
	r, err := s.startQuery(ctx, q, false)
	if err != nil {
		app.Abort()
		return 0, 0, err
	}
	defer r.Close()
	sch := app.Schema()
	want := sch.NumFields()
	if flagged {
		want++
	}
	for {
		rec, err := r.Next()
		if err == nil && rec != nil && int(rec.NumCols()) != want {
			err = nferr.Internalf("writing %s: the query has %d columns, the table %d (flag column: %v)", app.Name(), rec.NumCols(), sch.NumFields(), flagged)
		}
		if err != nil {
			app.Abort()
			return 0, 0, err
		}
		if rec == nil {
			break
		}
		var f *array.Boolean
		if flagged {
			f = rec.Column(want - 1).(*array.Boolean)
			for i := 0; i < f.Len(); i++ {
				if f.IsValid(i) && f.Value(i) {
					flags++
				}
			}
		}
		out := array.NewRecordBatch(sch, rec.Columns()[:sch.NumFields()], rec.NumRows())
		if len(checks) > 0 {
			err = checkRows(s.opts.Alloc, app.Name(), checks, out)
		}
		// NB: with ON CONFLICT DO NOTHING the appender decides which rows
		// are written; RETURNING sees only those.
		if err == nil && ret != nil && !skip {
			err = ret.add(out, f)
		}
		if err == nil {
			err = app.Append(out)
		}
		if err == nil && ret != nil && skip {
			kf := keptFlags(s.opts.Alloc, app.Kept())
			err = ret.add(out, kf)
			if kf != nil {
				kf.Release()
			}
		}
		out.Release()
		if err != nil {
			app.Abort()
			return 0, 0, err
		}
	}
	committed, err = app.Commit()
	return committed, flags, err
}

// keptFlags is Appender.Kept as a boolean array (nil: every row kept).
func keptFlags(alloc memory.Allocator, kept []bool) *array.Boolean {
	if kept == nil {
		return nil
	}
	b := array.NewBooleanBuilder(alloc)
	defer b.Release()
	b.AppendValues(kept, nil)
	return b.NewBooleanArray()
}

func (s *Session) copy(ctx context.Context, x *bind.CopyStmt) (*Result, error) {
	for i, c := range x.Columns {
		if c != i || len(x.Columns) != x.Table.Schema.NumFields() {
			return nil, nferr.Queryf("COPY with a column list is not supported: the file must hold every column of %s in table order", x.Table.Name)
		}
	}
	if x.Delimiter > 127 {
		return nil, nferr.Queryf("COPY delimiter %q must be an ASCII character", x.Delimiter)
	}
	name := x.Table.Name
	if st, ok := x.Table.Handle.(*storage.Table); ok {
		name = st.QualifiedName()
	}
	sch, err := s.db.Schema(name)
	if err != nil {
		return nil, err
	}
	checks, err := compileChecks(x.CheckCols, x.Checks, sch)
	if err != nil {
		return nil, err
	}
	opts := storage.CopyOptions{Format: x.Format, Delimiter: byte(x.Delimiter), Header: x.Header, Null: x.Null}
	if s.zone != "" {
		opts.ParseTimestampTZ = expr.TimestampTZParser(s.TimeZone())
	}
	if len(checks) > 0 {
		opts.Check = func(rec arrow.RecordBatch) error { return checkRows(s.opts.Alloc, x.Table.Name, checks, rec) }
	}
	file := x.File
	if x.Stdin {
		// NB: the client's data is spooled to a file first, so that it
		// loads as a file does (one atomic commit, line numbers in
		// errors) and the client's stream ends before any row is parsed.
		path, err := s.spoolCopyIn(ctx, x.Table.Schema.NumFields())
		if err != nil {
			return nil, err
		}
		defer os.Remove(path)
		file = path
	} else if opts.Root, err = fileAccess(s.db, s.opts.FileAccess, x.File); err != nil {
		return nil, err
	}
	n, err := s.db.Copy(ctx, name, []string{file}, opts)
	if err != nil {
		if e, ok := nferr.As(err); ok && x.Stdin {
			// The spool file is ours: name the client's data instead.
			named := *e
			named.Msg = strings.ReplaceAll(e.Msg, file, "STDIN")
			err = &named
		}
		return nil, err
	}
	return status("COPY "+strconv.FormatInt(n, 10), n), nil
}

func (s *Session) createExternal(ctx context.Context, x *bind.CreateExternalTableStmt) (*Result, error) {
	root, err := fileAccess(s.db, s.opts.FileAccess, x.Location)
	if err != nil {
		return nil, err
	}
	if s.db.View(x.Name) != nil {
		return nil, nferr.Queryf("cannot create table %s: a view of that name exists", x.Name)
	}
	if x.IfNotExists {
		if t, _ := s.cat.LookupTable(x.Name); t != nil {
			return status("CREATE EXTERNAL TABLE", 0), nil
		}
	}
	if err := s.db.RegisterExternal(ctx, x.Name, x.Location, storage.CreateOptions{IfNotExists: x.IfNotExists, Root: root}); err != nil {
		return nil, err
	}
	if x.Schema != nil {
		// The declared columns must be the files' columns.
		got, err := s.db.Schema(x.Name)
		if err == nil {
			err = sameColumns(x.Name, x.Schema, got)
		}
		if err != nil {
			s.db.DropTable(x.Name, true)
			return nil, err
		}
	}
	return status("CREATE EXTERNAL TABLE", 0), nil
}

func sameColumns(name string, want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return nferr.Queryf("external table %s: %d columns declared, the files have %d", name, want.NumFields(), got.NumFields())
	}
	for i, f := range want.Fields() {
		g := got.Field(i)
		if !strings.EqualFold(f.Name, g.Name) || !arrow.TypeEqual(f.Type, g.Type) {
			return nferr.Queryf("external table %s: column %d is declared %s %s, the files have %s %s", name, i+1, f.Name, plan.TypeString(f.Type), g.Name, plan.TypeString(g.Type))
		}
	}
	return nil
}

func (s *Session) drop(x *bind.DropStmt) (*Result, error) {
	if x.Index {
		for _, name := range x.Names {
			if err := s.db.DropIndex(name, x.IfExists); err != nil {
				return nil, err
			}
		}
		return status("DROP INDEX", 0), nil
	}
	for _, name := range x.Names {
		if x.View {
			if err := s.db.DropView(name, x.IfExists); err != nil {
				return nil, err
			}
			continue
		}
		if s.db.View(name) != nil {
			return nil, nferr.Queryf("%s is a view, not a table (use DROP VIEW)", name)
		}
		if err := s.db.DropTable(name, x.IfExists); err != nil {
			return nil, err
		}
	}
	if x.View {
		return status("DROP VIEW", 0), nil
	}
	return status("DROP TABLE", 0), nil
}

func (s *Session) showTables() (*Result, error) {
	type entry struct {
		name, kind string
		rows       any
	}
	var es []entry
	for _, t := range s.db.Tables() {
		kind := "table"
		if t.External {
			kind = "external table"
		}
		name := t.Name
		if t.Schema != storage.DefaultSchema {
			name = t.QualifiedName()
		}
		es = append(es, entry{name, kind, t.Rows()})
	}
	for _, v := range s.viewNames() {
		es = append(es, entry{v, "view", nil})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	rows := make([][]any, len(es))
	for i, e := range es {
		rows[i] = []any{e.name, e.kind, e.rows}
	}
	return staticResult(s.opts.Alloc, []string{"name", "kind", "rows"}, []arrow.DataType{typStr, typStr, typI64}, rows), nil
}

// viewNames lists the database's views, sorted (schema-qualified outside
// the default schema).
func (s *Session) viewNames() []string {
	var out []string
	for _, v := range s.db.Views() {
		name := v.Name
		if v.Schema != storage.DefaultSchema {
			name = v.QualifiedName()
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// describe lists a table's or view's columns: name, type, whether NULL is
// allowed, key (PRI for the primary key, UNI for a one-column unique
// constraint or index) and default (SQL text), as DuckDB's DESCRIBE.
func (s *Session) describe(x *bind.DescribeStmt) (*Result, error) {
	var rows [][]any
	for i, f := range x.Schema.Fields() {
		null := "NO"
		if f.Nullable {
			null = "YES"
		}
		var key, def any
		if t := x.Table; t != nil {
			for _, ix := range t.Indexes {
				switch {
				case ix.Primary && slices.Contains(ix.Columns, f.Name):
					key = "PRI"
				case ix.Unique && len(ix.Columns) == 1 && ix.Columns[0] == f.Name && key == nil:
					key = "UNI"
				}
			}
			if i < len(t.Defaults) && t.Defaults[i] != "" {
				def = t.Defaults[i]
			}
		}
		rows = append(rows, []any{f.Name, plan.TypeString(f.Type), null, key, def})
	}
	if t := x.Table; t != nil {
		// Columns of the files the table does not read (a query naming
		// one fails): listed so that a user sees why.
		for _, u := range t.Unreadable {
			rows = append(rows, []any{u.Name, "unreadable " + u.Kind, "YES", nil, nil})
		}
	}
	return staticResult(s.opts.Alloc, []string{"column_name", "column_type", "null", "key", "default"}, []arrow.DataType{typStr, typStr, typStr, typStr, typStr}, rows), nil
}

// Settings SET and SHOW know.
const (
	SettingMemoryLimit = "memory_limit"
	SettingParallelism = "parallelism"
	SettingThreads     = "threads" // DuckDB's name for parallelism
	SettingBatchSize   = "batch_size"
	// SettingQueryRetries is how many times a cluster runs a query again
	// after a node failure (cluster.Options.QueryRetries); embedded it is
	// kept and shown but has nothing to retry. task_retries is its alias.
	SettingQueryRetries = "query_retries"
	SettingTaskRetries  = "task_retries"
	// SettingSpillDir and SettingSpillLimit are Options.SpillDir and
	// SpillLimit ("off" / 0 as there).
	SettingSpillDir   = "spill_dir"
	SettingSpillLimit = "spill_limit"
	// SettingDisabledRules is Options.DisabledRules, comma-separated ('' or
	// 'none': every rule on).
	SettingDisabledRules = "disabled_rules"
	// SettingAdaptive turns a cluster's adaptive execution (dist.Adapt:
	// build sides run first and the rest is re-planned from their real
	// sizes) on or off; embedded it is kept and shown.
	SettingAdaptive = "adaptive"
	// SettingSkewRows is the rows a task of a cluster's repartitioned join
	// must receive from an input computed ahead before Adapt splits it as
	// skewed (dist.DistOptions.SkewRows; 0 or default: 100,000; -1: never).
	SettingSkewRows = "adaptive_skew_rows"
	// SettingCoalesceRows is the rows a task of a cluster's repartitioned
	// stage whose inputs proved small takes before Adapt gives the next
	// partitions another task (dist.DistOptions.CoalesceRows; 0 or
	// default: 100,000; -1: never coalesce).
	SettingCoalesceRows = "adaptive_coalesce_rows"
	// SettingTimeZone is the session time zone: UTC only (docs/sql.md), so
	// that scripts setting it to UTC run.
	SettingTimeZone = "timezone"
)

const knownSettings = "memory_limit, parallelism, batch_size, query_retries, spill_dir, spill_limit, disabled_rules, adaptive, adaptive_skew_rows, adaptive_coalesce_rows, timezone"

// parseRuleList reads SET disabled_rules' value.
// checkDisabledRules validates rule names to disable: optimizer rules
// that may be disabled (opt.CheckDisabledRules) and physical rules
// (phys.Rules).
func checkDisabledRules(names []string) error {
	var logical []string
	for _, n := range names {
		if !phys.IsRule(n) {
			logical = append(logical, n)
		}
	}
	if err := opt.CheckDisabledRules(logical); err != nil {
		if strings.HasPrefix(err.Error(), "unknown") {
			return nferr.Queryf("%v; physical rules: %s", err, strings.Join(phys.RuleNames(), ", "))
		}
		return err
	}
	return nil
}

// physDisabled is the physical rules among the disabled rules.
func physDisabled(names []string) []string {
	var out []string
	for _, n := range names {
		if phys.IsRule(n) {
			out = append(out, n)
		}
	}
	return out
}

func parseRuleList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" && f != "none" {
			out = append(out, f)
		}
	}
	return out
}

// parseRetries validates a query_retries value.
func parseRetries(name, value string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < 0 || n > 100 {
		return 0, nferr.Queryf("%s takes an integer from 0 to 100, got %q", name, value)
	}
	return n, nil
}

func (s *Session) set(name, value string) error {
	o := s.opts
	v := strings.TrimSpace(value)
	switch strings.ToLower(name) {
	case SettingMemoryLimit:
		n, err := exec.ParseBytes(v)
		if err != nil {
			return err
		}
		if n <= 0 {
			return nferr.Queryf("memory_limit must be positive, got %q", value)
		}
		o.MemoryLimit = n
	case SettingParallelism, SettingThreads:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nferr.Queryf("%s takes a positive integer, got %q", name, value)
		}
		o.Parallelism = n
	case SettingBatchSize:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nferr.Queryf("batch_size takes a positive integer, got %q", value)
		}
		o.BatchSize = n
	case SettingQueryRetries, SettingTaskRetries:
		n, err := parseRetries(name, v)
		if err != nil {
			return err
		}
		s.queryRetries = n
		return nil
	case SettingSpillDir:
		if s.opts.FileAccess != "" {
			// NB: a session under a file access policy is a server's
			// client, which must not choose where the server writes
			// (nor learn, from the answer, which paths exist): the
			// operator sets the directory (nicflow serve --spill-dir).
			return &nferr.Error{Kind: nferr.KindAuth, Msg: "permission denied: spill_dir is the server operator's setting (nicflow serve --spill-dir); clients cannot change it"}
		}
		if v == "" {
			return nferr.Queryf("spill_dir takes a directory, or off")
		}
		if v != "off" {
			if st, err := os.Stat(v); err != nil || !st.IsDir() {
				return nferr.Queryf("spill_dir %q is not a directory", v)
			}
		}
		o.SpillDir = v
	case SettingSpillLimit:
		n, err := exec.ParseBytes(v)
		if err != nil {
			return err
		}
		o.SpillLimit = n
	case SettingDisabledRules:
		o.DisabledRules = parseRuleList(v)
	case SettingAdaptive:
		switch strings.ToLower(strings.Trim(v, "'")) {
		case "on", "true", "1", "default":
			s.adaptiveOff = false
		case "off", "false", "0":
			s.adaptiveOff = true
		default:
			return nferr.Queryf("adaptive takes on or off, got %q", value)
		}
		return nil
	case SettingSkewRows:
		if strings.EqualFold(strings.Trim(v, "'"), "default") {
			s.skewRows = 0
			return nil
		}
		n, err := strconv.ParseInt(strings.Trim(v, "'"), 10, 64)
		if err != nil || n < -1 {
			return nferr.Queryf("adaptive_skew_rows takes a row count (0 or default: 100000; -1: never split), got %q", value)
		}
		s.skewRows = n
		return nil
	case SettingCoalesceRows:
		if strings.EqualFold(strings.Trim(v, "'"), "default") {
			s.coalesceRows = 0
			return nil
		}
		n, err := strconv.ParseInt(strings.Trim(v, "'"), 10, 64)
		if err != nil || n < -1 {
			return nferr.Queryf("adaptive_coalesce_rows takes a row count (0 or default: 100000; -1: never coalesce), got %q", value)
		}
		s.coalesceRows = n
		return nil
	case SettingTimeZone, "time zone":
		// The binder made the value a zone name (bind.zoneSetting).
		loc, err := expr.LoadZone(v)
		if err != nil {
			return err
		}
		s.zone = v
		if loc == nil {
			s.zone = ""
		}
		s.zoneShown = v
		return nil
	default:
		if cs, ok := clientSettings[strings.ToLower(name)]; ok {
			if err := cs.check(name, v); err != nil {
				return err
			}
			if strings.EqualFold(name, "statement_timeout") {
				d, err := parseStatementTimeout(v)
				if err != nil {
					return err
				}
				s.stmtTimeout = d
			}
			if s.client == nil {
				s.client = map[string]string{}
			}
			s.client[strings.ToLower(name)] = v
			return nil
		}
		if _, ok := bind.ServerSettings[strings.ToLower(name)]; ok {
			return nferr.Queryf("parameter %q cannot be changed", name)
		}
		return nferr.Queryf("unknown setting %q (known: %s)", name, knownSettings)
	}
	if err := o.Validate(); err != nil {
		return err
	}
	s.opts = o
	return nil
}

func (s *Session) show(name string) (*Result, error) {
	var v string
	switch strings.ToLower(name) {
	case "queries":
		l, ok := s.opts.Observer.(QueryLister)
		if s.lister != nil {
			l, ok = s.lister, true
		}
		if !ok {
			return nil, nferr.Queryf("SHOW QUERIES lists a server's queries (nicflow serve, a cluster's coordinator); this session is not served")
		}
		var rows [][]any
		for _, q := range l.RunningQueries() {
			rows = append(rows, []any{q.ID, q.State, q.Source, q.User, q.Started.UTC().Format(time.RFC3339Nano), time.Since(q.Started).Milliseconds(), q.Rows, q.SQL})
		}
		return staticResult(s.opts.Alloc, []string{"id", "state", "source", "user", "started", "elapsed_ms", "rows", "query"},
			[]arrow.DataType{typStr, typStr, typStr, typStr, typStr, typI64, typI64, typStr}, rows), nil
	case SettingMemoryLimit:
		v = exec.FormatBytes(s.opts.MemoryLimit)
	case SettingParallelism, SettingThreads:
		v = strconv.Itoa(s.opts.Parallelism)
	case SettingBatchSize:
		v = strconv.Itoa(s.opts.BatchSize)
	case SettingQueryRetries, SettingTaskRetries:
		v = "default"
		if s.queryRetries >= 0 {
			v = strconv.Itoa(s.queryRetries)
		}
	case SettingSpillDir:
		v = spillRootFor(s.opts.SpillDir, s.db.Dir())
		if v == "" {
			v = "off"
		}
	case SettingSpillLimit:
		v = "0"
		if s.opts.SpillLimit > 0 {
			v = exec.FormatBytes(s.opts.SpillLimit)
		}
	case SettingAdaptive:
		v = "on"
		if s.adaptiveOff {
			v = "off"
		}
	case SettingSkewRows:
		v = strconv.FormatInt(s.skewRows, 10)
		if s.skewRows == 0 {
			v = "100000"
		}
	case SettingCoalesceRows:
		v = strconv.FormatInt(s.coalesceRows, 10)
		if s.coalesceRows == 0 {
			v = "100000"
		}
	case SettingDisabledRules:
		v = strings.Join(s.opts.DisabledRules, ",")
		if v == "" {
			v = "none"
		}
	case SettingTimeZone, "time zone":
		v = s.zoneShown
		if v == "" {
			v = "UTC"
		}
		name = SettingTimeZone
	default:
		cs, ok := clientSettings[strings.ToLower(name)]
		if !ok {
			ro, isServer := bind.ServerSettings[strings.ToLower(name)]
			if !isServer {
				return nil, nferr.Queryf("unknown setting %q (known: %s)", name, knownSettings)
			}
			cs = clientSetting{value: ro}
		}
		v = cs.value
		if v == "" {
			v = bind.ServerSettings[strings.ToLower(name)]
		}
		if got, ok := s.client[strings.ToLower(name)]; ok {
			v = got
		}
	}
	return staticResult(s.opts.Alloc, []string{strings.ToLower(name)}, []arrow.DataType{typStr}, [][]any{{v}}), nil
}

// planBytesPerNode is what one node of a statement's syntax tree costs
// once bound, planned and compiled (logical and physical plan nodes,
// column metadata, compiled expressions and their vectors): measured at
// about 1.1 KiB with SELECT lists of 30,000 and 300,000 expressions.
const planBytesPerNode = 1 << 10

// checkPlanSize refuses, before planning, a statement whose plan alone
// would not fit in the query's memory budget (limit bytes; 0: none): the
// state of planning grows with the query text, and a 300,000-column
// SELECT list took over 1 GiB, outside any budget.
func checkPlanSize(stmt sql.Statement, limit int64) error {
	if limit <= 0 || stmt == nil {
		return nil
	}
	nodes := int64(0)
	sql.Walk(stmt, func(sql.Node) bool {
		nodes++
		return true
	})
	if need := nodes * planBytesPerNode; need > limit/2 {
		return nferr.Resourcef("memory limit exceeded in planning: the statement has %d syntax nodes, about %s of plan state, more than half the %s budget (raise --memory-limit, or split the statement)",
			nodes, exec.FormatBytes(need), exec.FormatBytes(limit))
	}
	return nil
}

// explainRules is EXPLAIN VERBOSE's account of the optimizer: each rule in
// order, whether it changed the plan, and its time.
func explainRules(runs []plan.RuleRun, disabled []string) string {
	var b strings.Builder
	b.WriteString("Optimizer rules:\n")
	for _, r := range runs {
		what := "no change"
		switch {
		case slices.Contains(disabled, r.Rule):
			what = "disabled"
		case r.Changed:
			what = "changed the plan"
		}
		fmt.Fprintf(&b, "  %-14s %s", r.Rule, what)
		if what != "disabled" {
			b.WriteString(", " + phys.FormatDuration(r.Time))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TxStatus is the session's transaction status (TxBlock.Status).
func (s *Session) TxStatus() byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tx.Status()
}

// TimeZone is the session time zone (nil: UTC), in which TIMESTAMPTZ
// values print (ValueFormatter, RowsText).
func (s *Session) TimeZone() *time.Location {
	loc, _ := expr.LoadZone(s.zone)
	return loc
}
