package engine

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nicflow/nicflow/engine/dist"

	"github.com/nicflow/nicflow/engine/phys"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// DistQuery is one statement prepared for a cluster by a coordinator's
// session: a query (or EXPLAIN of one) planned into stages, or a statement
// the coordinator answers from its catalog.
type DistQuery struct {
	// SQL is the statement's text.
	SQL string
	// Plan is the distributed plan of a query or of EXPLAIN's query; nil
	// when Local is set.
	Plan *dist.DistPlan
	// Explain and Analyze: the statement is EXPLAIN [ANALYZE]; the
	// result is ExplainText's lines (see ExplainResult).
	Explain, Analyze bool
	// Local is the result of a statement the coordinator ran itself
	// (SHOW TABLES, DESCRIBE, SHOW, SET), or nil.
	Local *Result
	// Retries is the script's SET query_retries before this statement
	// (-1: not set; the coordinator's default applies).
	Retries int
	// Zone is the time zone the script set (a name LoadZone reads; "":
	// UTC): TIMESTAMPTZ values of the result print in it.
	Zone string

	// Changed: the statement ran on the coordinator and may have changed
	// the catalog (tables rewritten or dropped): storage nodes may hold
	// files it no longer places on them.
	Changed bool

	logical string
}

// SplitScript splits a script into its statements' texts; a syntax error
// anywhere is reported here (with line, column and caret).
func SplitScript(script string) ([]string, error) {
	stmts, err := sql.Parse(script)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = s.Text
	}
	return out, nil
}

// ClusterScript is what runs one statement of a script on a cluster: the
// script sent with the request and the statement's index in it.
type ClusterScript struct {
	Text  string
	Index int
}

// ClusterScripts splits a script into one ClusterScript per statement.
// Statement k's script holds the SET statements before it (the coordinator
// replays them for this statement only: its session is shared by every
// client) and then statement k, placed at its line and column of the
// original script, so that an error's position and caret point into the
// user's script. Sending the whole script with each statement instead
// costs a parse of the whole script per statement, quadratic in its
// length. (The SETs are a subsequence of the text before the statement,
// so it can always be placed; were it not, the statement would get the
// original script up to its end.)
func ClusterScripts(script string) ([]ClusterScript, error) {
	stmts, err := sql.Parse(script)
	if err != nil {
		return nil, err
	}
	out := make([]ClusterScript, len(stmts))
	var prefix strings.Builder
	line, col, sets := 1, 1, 0
	for k, st := range stmts {
		var b strings.Builder
		switch {
		case line < st.Start.Line:
			b.WriteString(prefix.String())
			b.WriteString(strings.Repeat("\n", st.Start.Line-line))
			b.WriteString(strings.Repeat(" ", st.Start.Col-1))
		case line == st.Start.Line && col <= st.Start.Col:
			b.WriteString(prefix.String())
			b.WriteString(strings.Repeat(" ", st.Start.Col-col))
		default:
			out[k] = ClusterScript{Text: script[:st.End], Index: k}
			continue
		}
		b.WriteString(st.Text)
		out[k] = ClusterScript{Text: b.String(), Index: sets}
		if _, ok := st.Stmt.(*sql.Set); ok {
			prefix.WriteString(st.Text)
			prefix.WriteByte(';')
			sets++
			if i := strings.LastIndexByte(st.Text, '\n'); i >= 0 {
				line += strings.Count(st.Text, "\n")
				col = 1 + utf8.RuneCountInString(st.Text[i+1:]) + 1
			} else {
				col += utf8.RuneCountInString(st.Text) + 1
			}
		}
	}
	return out, nil
}

// PrepareDistributed prepares statement k (0-based) of script for a
// cluster of opts.Workers workers of opts.Parallelism streams each. A query
// (or EXPLAIN of one) is bound and optimized against the session's catalog
// and planned into stages. Any other statement runs here, on the
// coordinator's database, before PrepareDistributed returns (DistQuery.Local
// holds its result): DDL, INSERT, UPDATE, DELETE, COPY, CREATE VIEW (views
// persist, as embedded), SHOW and DESCRIBE. The coordinator keeps a copy
// of every file it placed, so a statement that writes reads and rewrites
// those copies; its new files are placed on storage nodes by the first
// query that scans them, and DistQuery.Changed tells the caller to prune
// the nodes' stale files. The script's SET query_retries before statement
// k are replayed (the coordinator keeps no per-client state); other
// settings are refused on a cluster.
func (s *Session) PrepareDistributed(ctx context.Context, script string, k int, opts dist.DistOptions) (*DistQuery, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	stmts, err := sql.Parse(script)
	if err != nil {
		return nil, err
	}
	if k < 0 || k >= len(stmts) {
		return nil, nferr.Queryf("statement %d of a script of %d", k+1, len(stmts))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dq := &DistQuery{SQL: stmts[k].Text, Retries: -1}
	// The script's SET statements up to k apply to this statement only:
	// the coordinator's session is shared by every client.
	saved := s.clusterState()
	defer s.restoreClusterState(saved)
	s.queryRetries = -1
	for i := 0; i <= k; i++ {
		if _, ok := stmts[i].Stmt.(*sql.Set); !ok {
			continue
		}
		if err := s.replaySet(ctx, script, stmts[i].Stmt); err != nil {
			return nil, err
		}
	}
	dq.Retries = s.queryRetries
	dq.Zone = s.zone
	if _, ok := stmts[k].Stmt.(*sql.Set); ok {
		dq.Local = status("SET", 0)
		return dq, nil
	}
	if err := checkPlanSize(stmts[k].Stmt, s.opts.MemoryLimit); err != nil {
		return nil, err
	}
	st, err := PrepareIn(s.catalog(), script, stmts[k].Stmt, s.zone, s.opts.DisabledRules...)
	if err != nil {
		return nil, err
	}
	var q *bind.QueryStmt
	switch x := st.(type) {
	case *bind.QueryStmt:
		q = x
	case *bind.ExplainStmt:
		inner, ok := x.Stmt.(*bind.QueryStmt)
		if !ok {
			return nil, nferr.Queryf("EXPLAIN on a cluster applies to queries (%s runs on the coordinator, not in stages)", statementName(x.Stmt))
		}
		q, dq.Explain, dq.Analyze = inner, true, x.Analyze
		dq.logical = opt.ExplainPlan(q.Plan, opt.ExplainOptions{Verbose: x.Verbose})
	case *bind.CreateTableStmt, *bind.CreateIndexStmt, *bind.CreateViewStmt, *bind.DropStmt,
		*bind.InsertStmt, *bind.DeleteStmt, *bind.UpdateStmt, *bind.CopyStmt, *bind.CopyToStmt:
		r, err := s.runStmt(ctx, st)
		if err != nil {
			return nil, err
		}
		dq.Local, dq.Changed = r, true
		return dq, nil
	case *bind.ShowTablesStmt, *bind.DescribeStmt, *bind.ShowStmt, *bind.AnalyzeStmt:
		// NB: ANALYZE reads the coordinator's catalog, whose statistics
		// are the ones the cluster's plans use.
		r, err := s.runStmt(ctx, st)
		if err != nil {
			return nil, err
		}
		dq.Local = r
		return dq, nil
	default:
		return nil, nferr.Queryf("%s is not supported on a cluster: run it embedded (`nicflow sql --dir DIR`)", statementName(st))
	}
	pp, err := phys.PlanPhysical(q.Plan, q.Names, phys.PlanOptions{Parallelism: opts.Parallelism, Disabled: physDisabled(s.opts.DisabledRules)})
	if err != nil {
		return nil, err
	}
	if x, ok := st.(*bind.ExplainStmt); ok && x.Verbose {
		dq.logical += explainRules(q.Rules, s.opts.DisabledRules) + phys.ExplainRules(pp.Rules)
	}
	if s.adaptiveOff {
		opts.AdaptiveWaves = -1
	}
	switch {
	case s.skewRows < 0:
		opts.SkewFactor = -1
	case s.skewRows > 0:
		opts.SkewRows = s.skewRows
	}
	if s.coalesceRows != 0 {
		opts.CoalesceRows = s.coalesceRows
	}
	if dq.Plan, err = dist.PlanDistributed(pp, opts); err != nil {
		return nil, err
	}
	return dq, nil
}

// clusterState is what a cluster script's SET statements change on the
// coordinator's session for the time of one PrepareDistributed.
type clusterState struct {
	zone, zoneShown string
	queryRetries    int
	disabledRules   []string
	adaptiveOff     bool
	skewRows        int64
	coalesceRows    int64
	client          map[string]string
	stmtTimeout     time.Duration
}

func (s *Session) clusterState() clusterState {
	return clusterState{s.zone, s.zoneShown, s.queryRetries, s.opts.DisabledRules, s.adaptiveOff, s.skewRows, s.coalesceRows, maps.Clone(s.client), s.stmtTimeout}
}

func (s *Session) restoreClusterState(st clusterState) {
	s.zone, s.zoneShown, s.queryRetries, s.opts.DisabledRules, s.adaptiveOff, s.skewRows, s.coalesceRows, s.client, s.stmtTimeout = st.zone, st.zoneShown, st.queryRetries, st.disabledRules, st.adaptiveOff, st.skewRows, st.coalesceRows, st.client, st.stmtTimeout
}

// ClusterAdmit is how a coordinator admits a statement of a cluster
// script (Session.ClusterStatement).
type ClusterAdmit int

const (
	// AdmitNone: the statement needs no memory of the coordinator's
	// (SET, SHOW, DESCRIBE, EXPLAIN without ANALYZE, DDL without a query,
	// a query that reads no data such as select 1): it is never queued.
	AdmitNone ClusterAdmit = iota
	// AdmitQuery: a query (or EXPLAIN ANALYZE of one) run in stages on
	// the workers: the coordinator holds its result back for retries.
	AdmitQuery
	// AdmitLocal: a statement the coordinator runs itself on its copy of
	// the database (INSERT, UPDATE, DELETE, COPY, CREATE TABLE AS).
	AdmitLocal
)

// ClusterStatement says how statement k of a cluster script is admitted
// and the statement_timeout its SET statements before k give it, before
// PrepareDistributed plans (or runs) it: a coordinator reserves its memory
// first, so that a statement waiting for memory holds no lock of the
// session's. Errors are the script's (syntax, a refused SET).
func (s *Session) ClusterStatement(ctx context.Context, script string, k int) (ClusterAdmit, time.Duration, error) {
	stmts, err := sql.Parse(script)
	if err != nil {
		return AdmitNone, 0, err
	}
	if k < 0 || k >= len(stmts) {
		return AdmitNone, 0, nferr.Queryf("statement %d of a script of %d", k+1, len(stmts))
	}
	var timeout time.Duration
	for i := 0; i < k; i++ {
		if x, ok := stmts[i].Stmt.(*sql.Set); ok && strings.EqualFold(x.Name.Name, "statement_timeout") {
			// NB: replayed as PrepareDistributed replays it, on the
			// shared session's state, restored at once.
			s.mu.Lock()
			saved := s.clusterState()
			s.stmtTimeout = timeout
			err := s.replaySet(ctx, script, x)
			timeout = s.stmtTimeout
			s.restoreClusterState(saved)
			s.mu.Unlock()
			if err != nil {
				return AdmitNone, 0, err
			}
		}
	}
	return clusterAdmitOf(stmts[k].Stmt), timeout, nil
}

func clusterAdmitOf(st sql.Statement) ClusterAdmit {
	switch x := st.(type) {
	case *sql.Query:
		if readsNoData(x) {
			return AdmitNone
		}
		return AdmitQuery
	case *sql.Explain:
		if x.Analyze {
			return AdmitQuery
		}
	case *sql.Insert, *sql.Update, *sql.Delete, *sql.Copy:
		return AdmitLocal
	case *sql.CreateTable:
		if x.AsQuery != nil {
			return AdmitLocal
		}
	}
	return AdmitNone
}

// readsNoData reports whether query q names no table, view, CTE or table
// function anywhere (subqueries included): `select 1`, `select now()`,
// a connection pool's health check. Its rows come from its own literals,
// so it needs none of the coordinator's memory and must not wait behind
// big queries for it (the statement-level twin of Admission.exempt).
func readsNoData(q *sql.Query) bool {
	ok := true
	sql.Walk(q, func(n sql.Node) bool {
		switch x := n.(type) {
		case *sql.Query:
			if len(x.With) > 0 || x.Recursive {
				ok = false
			}
		case *sql.TableName, *sql.TableFunc, *sql.DerivedTable, *sql.CTE:
			ok = false
		}
		return ok
	})
	return ok
}

// replaySet applies one SET of a cluster script. The settings that
// have a meaning on a cluster are replayed: the time zone (binding and
// output), query_retries, disabled_rules (planning) and the PostgreSQL
// client settings; the ones that size embedded execution (memory_limit,
// parallelism, batch_size, spill_*) are refused, since workers size
// their tasks themselves.
func (s *Session) replaySet(ctx context.Context, script string, st sql.Statement) error {
	x := st.(*sql.Set)
	switch name := strings.ToLower(x.Name.Name); {
	case name == SettingTimeZone || name == "time zone" || name == SettingQueryRetries || name == SettingTaskRetries ||
		name == SettingDisabledRules || name == SettingAdaptive || name == SettingSkewRows || name == SettingCoalesceRows || isClientSetting(name):
	default:
		return nferr.Queryf("SET %s is not supported on a cluster (it sizes embedded execution; workers size their tasks with their own --memory-limit); supported: timezone, query_retries, statement_timeout, disabled_rules, adaptive, adaptive_skew_rows, adaptive_coalesce_rows and the client settings", x.Name.Name)
	}
	b, err := PrepareIn(s.catalog(), script, st, s.zone, s.opts.DisabledRules...)
	if err != nil {
		return err
	}
	_, err = s.runStmt(ctx, b)
	return err
}

func statementName(st bind.Statement) string {
	switch st.(type) {
	case *bind.CreateTableStmt:
		return "CREATE TABLE"
	case *bind.CreateExternalTableStmt:
		return "CREATE EXTERNAL TABLE"
	case *bind.CreateViewStmt:
		return "CREATE VIEW"
	case *bind.DropStmt:
		return "DROP"
	case *bind.InsertStmt:
		return "INSERT"
	case *bind.CopyStmt:
		return "COPY"
	case *bind.SetStmt:
		return "SET"
	case *bind.AnalyzeStmt:
		return "ANALYZE"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", st), "*engine.")
}

// ExplainText is an EXPLAIN's text: the logical plan, then the stages
// (with the figures of an EXPLAIN ANALYZE run when stats is set).
func (dq *DistQuery) ExplainText(stats *dist.DistStats, rows int64, elapsed time.Duration) string {
	var b strings.Builder
	b.WriteString("Logical plan:\n")
	b.WriteString(dq.logical)
	b.WriteString(dist.ExplainDistributed(dq.Plan, stats))
	if stats != nil {
		b.WriteString("Total: " + strconv.FormatInt(rows, 10) + " rows in " + phys.FormatDuration(elapsed) + ", shuffled " + exec.FormatBytes(stats.BytesShuffled) + "\n")
	}
	return b.String()
}

// ExplainSchema is the schema of EXPLAIN results (one "plan" column).
var ExplainSchema = arrow.NewSchema([]arrow.Field{{Name: "plan", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)

// TextResult returns text's lines as a one-column result (EXPLAIN).
func TextResult(text string) *Result {
	var rows [][]any
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		rows = append(rows, []any{line})
	}
	return staticResult(memory.DefaultAllocator, []string{"plan"}, []arrow.DataType{typStr}, rows)
}
