package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nicflow/nicflow/engine/dist"
	"github.com/nicflow/nicflow/engine/opt"
	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/storage"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// SQL test files (testdata/sqltest/*.slt), a sqllogictest-like format:
//
//	# comment
//	statement ok
//	CREATE TABLE t (a INTEGER, b VARCHAR)
//
//	statement error <first line of the error message, exactly>
//	SELECT nope FROM t
//
//	query <types> [rowsort]
//	SELECT a, b FROM t ORDER BY a
//	----
//	1|x
//	2|NULL
//
// A record ends at a blank line. SQL may span lines. <types> has one
// letter per result column: I integer or bigint, R double, D decimal, T
// varchar, B boolean, A date, S timestamp, M time, V interval. Values are engine's canonical text (decimals
// with their scale, dates YYYY-MM-DD), separated by '|'; NULL prints as
// NULL and the empty string as (empty). rowsort sorts the rows (as text)
// before comparing; otherwise the order must match. Statements run in one
// session per file, in a fresh database directory; COPY paths are relative
// to the engine directory (testdata/sqltest/data/...); __TEST_DIR__ is a
// fresh directory for files the test writes (COPY ... TO).
//
// Every file runs under several setups (parallelism 1 and 3, batch size 7,
// a small memory budget, each optimizer rule disabled in turn, a local
// cluster of three simulated workers) and must give the same answers under
// all. With -rewrite, the expected results and error messages are written
// from the first setup's run (check the diff!).
//
// A query record whose statement is an EXPLAIN holds the expected plan
// (one row per line, as DataFusion's and CockroachDB's test files do). A
// plan depends on the setup (parallelism, disabled rules), so it is
// compared under the first setup only; the others run it and check that
// it succeeds.

type sqlSetup struct {
	name string
	opts Options
	// dist, when Workers > 0, runs every query through the distributed
	// planner as a coordinator plans it (earlier CREATE/DROP VIEW records
	// replayed in the request's script) and on that many simulated workers
	// in process (dist.RunDistributedLocal: one shuffle agent per worker on
	// an in-memory network); other statements run in the session, as a
	// cluster's users run DDL and DML embedded.
	dist dist.DistOptions
	// checksPlans: compare EXPLAIN records' plans (the first setup).
	checksPlans bool
}

var sqlSetups = []sqlSetup{
	{name: "p1", opts: Options{Parallelism: 1}, checksPlans: true},
	{name: "p3", opts: Options{Parallelism: 3}},
	{name: "p4-batch7", opts: Options{Parallelism: 4, BatchSize: 7}},
	{name: "p2-mem64MiB", opts: Options{Parallelism: 2, MemoryLimit: 64 << 20}},
	// The session's default allocator reuses buffers: a use after release
	// shows up as wrong results here (no leak check: it is not checked).
	{name: "p3-pool-batch100", opts: Options{Parallelism: 3, BatchSize: 100, Alloc: newPoolAllocator()}},
	// Three workers, tables written in row groups of two rows (so that
	// scans are wide) and never replicated, so that joins broadcast or
	// repartition and aggregates split into partial and final phases
	// across the network.
	{name: "cluster-3w", opts: Options{Parallelism: 2, Storage: storage.Options{Write: storage.WriteOptions{RowGroupRows: 2, FileRows: 4}}}, dist: dist.DistOptions{Workers: 3, Parallelism: 2, ReplicateRows: 0.5}},
}

// ruleSetups run every file once more with each optimizer rule that may
// be disabled turned off in turn: no rule may be needed for a right answer.
func ruleSetups() []sqlSetup {
	var out []sqlSetup
	for _, r := range opt.Rules {
		if !r.Required {
			out = append(out, sqlSetup{name: "no-" + r.Name, opts: Options{Parallelism: 2, DisabledRules: []string{r.Name}}})
		}
	}
	// The physical rules at once (each alone runs in TestTPCHRulesDisabled).
	return append(out, sqlSetup{name: "no-physical-rules", opts: Options{Parallelism: 2, DisabledRules: phys.RuleNames()}})
}

type sqlRecord struct {
	line    int
	kind    string // statement, query
	errMsg  *string
	types   string
	rowsort bool
	sql     string
	want    []string
	header  string // the record's header line (for rewriting)
}

func parseSQLTest(t *testing.T, path string) []*sqlRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	var recs []*sqlRecord
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		r := &sqlRecord{line: i + 1, header: l}
		f := strings.Fields(l)
		switch f[0] {
		case "statement":
			r.kind = "statement"
			switch {
			case len(f) == 2 && f[1] == "ok":
			case len(f) >= 2 && f[1] == "error":
				msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(l, "statement")), "error"))
				r.errMsg = &msg
			default:
				t.Fatalf("%s:%d: want 'statement ok' or 'statement error <message>'", path, i+1)
			}
		case "query":
			r.kind = "query"
			if len(f) < 2 {
				t.Fatalf("%s:%d: query needs result types", path, i+1)
			}
			r.types = f[1]
			for _, o := range f[2:] {
				if o != "rowsort" {
					t.Fatalf("%s:%d: unknown query option %q", path, i+1, o)
				}
				r.rowsort = true
			}
		default:
			t.Fatalf("%s:%d: unknown record %q", path, i+1, l)
		}
		var sqlLines []string
		i++
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && strings.TrimSpace(lines[i]) != "----"; i++ {
			sqlLines = append(sqlLines, lines[i])
		}
		r.sql = strings.Join(sqlLines, "\n")
		if i < len(lines) && strings.TrimSpace(lines[i]) == "----" {
			if r.kind != "query" {
				t.Fatalf("%s:%d: ---- after a statement", path, i+1)
			}
			r.want = []string{}
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				r.want = append(r.want, strings.TrimRight(lines[i], " \t"))
			}
		}
		recs = append(recs, r)
	}
	return recs
}

func typeLetter(t arrow.DataType) byte {
	switch t.ID() {
	case arrow.INT32, arrow.INT64:
		return 'I'
	case arrow.FLOAT64:
		return 'R'
	case arrow.DECIMAL64, arrow.DECIMAL128:
		return 'D'
	case arrow.STRING:
		return 'T'
	case arrow.BOOL:
		return 'B'
	case arrow.DATE32:
		return 'A'
	case arrow.TIMESTAMP:
		return 'S'
	case arrow.TIME64:
		return 'M'
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return 'V'
	case arrow.BINARY:
		return 'X' // bytea
	}
	return '?'
}

// runSQLRecord runs one record; it returns the result's types and rows
// (canonical text), or the error.
// isPlainQuery reports whether text is one query (SELECT, VALUES, WITH or
// a set operation): what a cluster plans and runs distributed.
func isPlainQuery(text string) bool {
	stmts, err := sql.Parse(text)
	if err != nil || len(stmts) != 1 {
		return false
	}
	_, ok := stmts[0].Stmt.(*sql.Query)
	return ok
}

// isExplain reports whether text is one EXPLAIN statement.
func isExplain(text string) bool {
	stmts, err := sql.Parse(text)
	if err != nil || len(stmts) != 1 {
		return false
	}
	_, ok := stmts[0].Stmt.(*sql.Explain)
	return ok
}

// coordinatorStatements reports whether text is statements a cluster's
// coordinator runs itself (DDL, DML, COPY; not EXPLAIN, SET or SHOW,
// which the cluster setups run embedded).
func coordinatorStatements(text string) bool {
	stmts, err := sql.Parse(text)
	if err != nil || len(stmts) == 0 {
		return false
	}
	for _, st := range stmts {
		switch st.Stmt.(type) {
		case *sql.CreateView, *sql.Drop, *sql.CreateTable, *sql.CreateIndex, *sql.Delete, *sql.Update, *sql.Insert, *sql.Copy:
		default:
			return false
		}
	}
	return true
}

// runSQLRecordCoordinator runs a record of coordinator statements as a
// cluster does: each statement is a request (the whole script and its
// index) that PrepareDistributed runs on the session's database.
func runSQLRecordCoordinator(ctx context.Context, s *Session, r *sqlRecord, o dist.DistOptions) (string, []string, error) {
	stmts, err := sql.Parse(r.sql)
	if err != nil {
		return "", nil, err
	}
	var types string
	var rows []string
	for k := range stmts {
		dq, err := s.PrepareDistributed(ctx, r.sql, k, o)
		if err != nil {
			return "", nil, err
		}
		if dq.Local == nil || !dq.Changed {
			return "", nil, fmt.Errorf("statement %d did not run on the coordinator", k+1)
		}
		if types, rows, err = resultRows(dq.Local, r); err != nil {
			return "", nil, err
		}
	}
	return types, rows, nil
}

// runSQLRecordDist runs a query record as a cluster does: planned by
// PrepareDistributed and run on simulated workers that read the session's
// database.
func runSQLRecordDist(ctx context.Context, s *Session, r *sqlRecord, o dist.DistOptions, alloc memory.Allocator) (string, []string, error) {
	dq, err := s.PrepareDistributed(ctx, r.sql, 0, o)
	if err != nil {
		return "", nil, err
	}
	if dq.Plan == nil {
		return "", nil, fmt.Errorf("query planned to run locally on a cluster")
	}
	if len(dq.Plan.Stages) > 2 {
		wideQueries.Add(1)
	}
	for _, st := range dq.Plan.Stages {
		if st.Out != nil && st.Out.Kind == exec.ExchangeRange {
			rangeQueries.Add(1)
			break
		}
	}
	res, err := dist.RunDistributedLocal(ctx, dq.Plan, dist.LocalDistOptions{Source: s.DB(), Alloc: alloc})
	if err != nil {
		return "", nil, err
	}
	var types strings.Builder
	for _, c := range dq.Plan.Columns {
		types.WriteByte(typeLetter(c.Type.Arrow()))
	}
	var rows []string
	for _, rec := range res.Records {
		text, err := RowsTextIn(rec, "NULL", s.TimeZone())
		if err != nil {
			return "", nil, err
		}
		rows = append(rows, recordRows(rec, text)...)
		rec.Release()
	}
	if r.rowsort {
		sort.Strings(rows)
	}
	return types.String(), rows, nil
}

// recordRows joins a batch's canonical text rows with "|", spelling an
// empty non-NULL string "(empty)".
func recordRows(rec arrow.RecordBatch, text [][]string) []string {
	out := make([]string, 0, len(text))
	for ri, row := range text {
		for c := range row {
			if row[c] == "" && !rec.Column(c).IsNull(ri) {
				row[c] = "(empty)"
			}
		}
		out = append(out, strings.Join(row, "|"))
	}
	return out
}

func runSQLRecord(ctx context.Context, s *Session, r *sqlRecord) (string, []string, error) {
	res, err := s.Query(ctx, r.sql)
	if err != nil {
		return "", nil, err
	}
	return resultRows(res, r)
}

// resultRows reads and closes a result: its types and canonical rows.
func resultRows(res *Result, r *sqlRecord) (string, []string, error) {
	defer res.Close()
	if res.Schema == nil {
		return "", nil, nil
	}
	var types strings.Builder
	for _, f := range res.Schema.Fields() {
		types.WriteByte(typeLetter(f.Type))
	}
	var rows []string
	for {
		rec, err := res.Next()
		if err != nil {
			return "", nil, err
		}
		if rec == nil {
			break
		}
		text, err := RowsTextIn(rec, "NULL", res.Zone)
		if err != nil {
			return "", nil, err
		}
		rows = append(rows, recordRows(rec, text)...)
	}
	if r.rowsort {
		sort.Strings(rows)
	}
	return types.String(), rows, nil
}

func errFirstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

func TestSQLFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "sqltest", "*.slt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no SQL test files: %v", err)
	}
	for _, path := range files {
		recs := parseSQLTest(t, path)
		name := strings.TrimSuffix(filepath.Base(path), ".slt")
		for si, setup := range append(sqlSetups, ruleSetups()...) {
			rewriting := *rewrite && si == 0
			t.Run(name+"/"+setup.name, func(t *testing.T) {
				if setup.dist.Workers > 0 {
					clusterFiles++
				}
				runSQLFile(t, path, recs, setup, rewriting)
			})
			if rewriting {
				writeSQLTest(t, path, recs)
			}
		}
	}
	t.Logf("cluster setup: %d queries ran with exchanges between workers", wideQueries.Load())
	t.Logf("cluster setup: %d queries sent a join's build side by value range", rangeQueries.Load())
	if clusterFiles == len(files) && wideQueries.Load() == 0 {
		t.Errorf("the cluster setup planned no query with a network exchange below its root gather: it tests nothing distributed")
	}
	if clusterFiles == len(files) && rangeQueries.Load() == 0 {
		t.Errorf("the cluster setup planned no range exchange (range_build.slt): it tests nothing of D72")
	}
}

// wideQueries counts the cluster setups' queries whose plans have more
// than two stages (an exchange between workers, not only the gather).
var (
	wideQueries  atomic.Int64
	rangeQueries atomic.Int64 // of them, with a range exchange (D72)
	clusterFiles int          // files the cluster setup ran (all, unless -run filters)
)

// taskPrefix is how a cluster names where an error came from: the task
// that raised or received it, and the sender (or routing agent) of the
// exchange that brought it, which of several failing tasks is first.
var taskPrefix = regexp.MustCompile(`^((stage \d+ task \d+|sender \d+ \(node \d+\)|routing agent of node \d+): )+`)

// sqlPosition is the position an error gives in its script.
var sqlPosition = regexp.MustCompile(`^line \d+, column \d+: `)

func runSQLFile(t *testing.T, path string, recs []*sqlRecord, setup sqlSetup, rewriting bool) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	opts := setup.opts
	checked := opts.Alloc == nil
	if checked {
		opts.Alloc = alloc
	}
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	failed := 0
	// __TEST_DIR__ in SQL is a directory of this run (DuckDB's test files'
	// convention), for files that COPY TO writes and queries read back.
	testDir := t.TempDir()
	for _, orig := range recs {
		if failed > 5 {
			t.Fatalf("too many failures")
		}
		r := orig
		if strings.Contains(orig.sql, "__TEST_DIR__") {
			sub := *orig
			sub.sql = strings.ReplaceAll(orig.sql, "__TEST_DIR__", testDir)
			r = &sub
		}
		var types string
		var rows []string
		var err error
		wantErr := r.errMsg
		// NB: inside BEGIN ... COMMIT the block decides first (as a
		// cluster connection's TxBlock does), so those records run on
		// the session.
		cluster := setup.dist.Workers > 0 && s.TxStatus() == 'I'
		distributed := cluster && isPlainQuery(r.sql)
		if distributed {
			types, rows, err = runSQLRecordDist(ctx, s, r, setup.dist, opts.Alloc)
			if err != nil && r.errMsg != nil {
				// The error as embedded: without the task that raised it.
				msg := taskPrefix.ReplaceAllString(errFirstLine(err), "")
				err = &nferr.Error{Kind: nferr.KindOf(err), Msg: msg, Cause: err}
			}
		} else if cluster && coordinatorStatements(r.sql) {
			types, rows, err = runSQLRecordCoordinator(ctx, s, r, setup.dist)
		} else {
			types, rows, err = runSQLRecord(ctx, s, r)
		}
		where := fmt.Sprintf("%s:%d", path, r.line)
		if err != nil && r != orig {
			// Positions after __TEST_DIR__ depend on the directory's
			// length: compare without them.
			msg := strings.ReplaceAll(errFirstLine(err), testDir, "__TEST_DIR__")
			if wantErr != nil {
				m := sqlPosition.ReplaceAllString(msg, "")
				w := sqlPosition.ReplaceAllString(*wantErr, "")
				switch {
				case !rewriting:
					msg, wantErr = m, &w
				case m == w:
					// -rewrite keeps the recorded position: the one
					// the run sees counts this run's directory.
					msg = *wantErr
				}
			}
			err = &nferr.Error{Kind: nferr.KindOf(err), Msg: msg, Cause: err}
		}
		if nferr.KindOf(err) == nferr.KindInternal && err != nil {
			t.Errorf("%s: internal error: %v\n%s", where, err, r.sql)
			failed++
			continue
		}
		if rewriting {
			if err != nil {
				msg := errFirstLine(err)
				orig.errMsg = &msg
				orig.kind = "statement"
			} else if orig.kind == "query" || types != "" {
				orig.kind, orig.errMsg, orig.types, orig.want = "query", nil, types, rows
			} else {
				orig.errMsg = nil
			}
			continue
		}
		switch {
		case wantErr != nil:
			if err == nil {
				t.Errorf("%s: succeeded, want error %q\n%s", where, *wantErr, r.sql)
				failed++
			} else if got := errFirstLine(err); got != *wantErr {
				t.Errorf("%s: error\n got: %s\nwant: %s\n%s", where, got, *wantErr, r.sql)
				failed++
			}
		case err != nil:
			t.Errorf("%s: %v\n%s", where, err, r.sql)
			failed++
		case r.kind == "query" && !setup.checksPlans && isExplain(r.sql):
			// Plans differ between setups; the first one checks them.
		case r.kind == "query":
			if types != r.types {
				t.Errorf("%s: result types %s, want %s\n%s", where, types, r.types, r.sql)
				failed++
				continue
			}
			if strings.Join(rows, "\n") != strings.Join(r.want, "\n") {
				t.Errorf("%s: wrong result\n%s\n--- got:\n%s\n--- want:\n%s", where, r.sql, strings.Join(rows, "\n"), strings.Join(r.want, "\n"))
				failed++
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if checked {
		alloc.AssertSize(t, 0)
	}
}

func writeSQLTest(t *testing.T, path string, recs []*sqlRecord) {
	// Keep the file's comments: rebuild it record by record, copying the
	// text between records as it was.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []string
	next := 0
	for _, r := range recs {
		start := r.line - 1
		for ; next < start; next++ {
			out = append(out, lines[next])
		}
		// Skip the old record.
		end := start + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		next = end
		switch {
		case r.errMsg != nil:
			out = append(out, "statement error "+*r.errMsg)
		case r.kind == "query":
			h := "query " + r.types
			if r.rowsort {
				h += " rowsort"
			}
			out = append(out, h)
		default:
			out = append(out, "statement ok")
		}
		out = append(out, r.sql)
		if r.kind == "query" && r.errMsg == nil {
			out = append(out, "----")
			out = append(out, r.want...)
		}
	}
	out = append(out, lines[next:]...)
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
