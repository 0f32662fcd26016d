package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	for i := 0; i < k; i++ {
		if n, ok, err := clusterSetting(stmts[i].Stmt); err != nil {
			return nil, err
		} else if ok {
			dq.Retries = n
		}
	}
	if _, ok, err := clusterSetting(stmts[k].Stmt); err != nil {
		return nil, err
	} else if ok {
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
	case *bind.ShowTablesStmt, *bind.DescribeStmt, *bind.ShowStmt:
		r, err := s.runStmt(ctx, st)
		if err != nil {
			return nil, err
		}
		dq.Local = r
		return dq, nil
	default:
		return nil, nferr.Queryf("%s is not supported on a cluster: run it embedded (`nicflow sql --dir DIR`)", statementName(st))
	}
	pp, err := phys.PlanPhysical(q.Plan, q.Names, phys.PlanOptions{Parallelism: opts.Parallelism})
	if err != nil {
		return nil, err
	}
	if dq.Plan, err = dist.PlanDistributed(pp, opts); err != nil {
		return nil, err
	}
	return dq, nil
}

// clusterSetting recognizes SET query_retries (task_retries), the setting a
// cluster request replays, and returns its value.
func clusterSetting(st sql.Statement) (int, bool, error) {
	x, ok := st.(*sql.Set)
	if !ok {
		return 0, false, nil
	}
	name := strings.ToLower(x.Name.Name)
	if name != SettingQueryRetries && name != SettingTaskRetries {
		return 0, false, nil
	}
	n, err := parseRetries(name, bind.SetValue(x))
	return n, err == nil, err
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
