package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nicflow/nicflow/engine/phys"
)

// Observer is told of every statement a Session runs when it is set in
// Options.Observer: a server's list of running and recent queries (the
// web console's registry, cluster/console) watches its sessions this way,
// whatever protocol the statements came from. The calls come from the
// goroutine running the statement and must not block.
//
// With an observer, queries are built with EXPLAIN ANALYZE's per-operator
// counters (a clock read per batch and operator), so that
// Statement.Plan shows them while the query runs.
type Observer interface {
	// StatementStarted is called before the statement is planned.
	StatementStarted(st *Statement)
	// StatementEnded is called once, when the statement has ended: at
	// once for a statement without rows (DDL, DML, SET) or that failed to
	// start, at Result.Close for one with rows. err is its error (nil
	// when it succeeded or was closed before its end without error).
	StatementEnded(st *Statement, err error)
}

// QueryLister is an Observer that lists the statements running on its
// server (all sessions'): SHOW QUERIES answers with it.
type QueryLister interface {
	RunningQueries() []QueryInfo
}

// QueryInfo is a running statement as SHOW QUERIES shows it.
type QueryInfo struct {
	ID, State, Source, User, SQL string
	Started                      time.Time
	Rows                         int64
}

// Statement is a statement being run, as an Observer sees it. Its methods
// are safe for concurrent use.
type Statement struct {
	// SQL is the statement's text.
	SQL string
	// Started is when it started.
	Started time.Time

	cancel context.CancelFunc
	rows   atomic.Int64
	ended  atomic.Bool
	queued atomic.Bool // waiting in the admission queue (Options.Admission)

	mu   sync.Mutex
	plan func() string
}

// Rows is the number of rows the statement returned so far, or wrote
// (INSERT, COPY, CREATE TABLE AS) once it has ended.
func (st *Statement) Rows() int64 { return st.rows.Load() }

// Plan is the physical plan of the statement's query with the
// per-operator counters so far (the text EXPLAIN ANALYZE prints under
// "Physical plan"), or "" for a statement without a query plan (DDL, SET,
// SHOW) and before the plan is built. After the end it holds the final
// counters.
func (st *Statement) Plan() string {
	st.mu.Lock()
	f := st.plan
	st.mu.Unlock()
	if f == nil {
		return ""
	}
	return f()
}

// HasPlan says whether Plan has a query plan to show (cheaper than Plan).
func (st *Statement) HasPlan() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.plan != nil
}

// Queued says whether the statement waits in the admission queue for
// memory (Options.Admission) rather than runs.
func (st *Statement) Queued() bool { return st.queued.Load() }

// Cancel cancels the statement (its query fails with a KindCanceled
// error); it does nothing once the statement has ended.
func (st *Statement) Cancel() { st.cancel() }

func (st *Statement) setPlan(pp *phys.PhysPlan, stats map[int]*phys.OpStats) {
	st.mu.Lock()
	st.plan = func() string { return phys.ExplainPhysical(pp, stats) }
	st.mu.Unlock()
}

// observe starts observing a statement: the returned context is canceled
// by Statement.Cancel.
func (s *Session) observe(ctx context.Context, sqlText string, start time.Time) (context.Context, *Statement) {
	ctx, cancel := context.WithCancel(ctx)
	st := &Statement{SQL: sqlText, Started: start, cancel: cancel}
	s.opts.Observer.StatementStarted(st)
	return ctx, st
}

// endStatement reports the end of an observed statement (once).
func (s *Session) endStatement(obs Observer, st *Statement, err error) {
	if st.ended.Swap(true) {
		return
	}
	st.cancel()
	// The final counters as text: the plan and its operators' state are
	// not kept alive by an observer that holds the statement.
	st.mu.Lock()
	if st.plan != nil {
		text := st.plan()
		st.plan = func() string { return text }
	}
	st.mu.Unlock()
	obs.StatementEnded(st, err)
}
