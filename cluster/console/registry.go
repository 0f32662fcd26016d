package console

import (
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Registry keeps the running and the recent statements of a process's
// engine sessions: nicflow serve's list of queries. A server reports its
// sessions' statements by opening each session with
//
//	opts.Observer = reg.Observer("pgwire", user)
//
// in its session factory (engine.Options.Observer): the engine then tells
// the registry of every statement, with its live rows and plan, whatever
// protocol it came from. Its methods are safe for concurrent use.
type Registry struct {
	keep int

	mu      sync.Mutex
	seq     uint64
	running map[string]*entry
	byStmt  map[*engine.Statement]*entry
	recent  []*entry // oldest first, at most keep
}

// entry is one statement in the registry.
type entry struct {
	id, source, user string
	st               *engine.Statement
	ended            time.Time
	state, err       string
}

// DefaultRecent is how many finished statements a registry keeps.
const DefaultRecent = 100

// NewRegistry returns a registry keeping the last keep finished
// statements (DefaultRecent when keep <= 0).
func NewRegistry(keep int) *Registry {
	if keep <= 0 {
		keep = DefaultRecent
	}
	return &Registry{keep: keep, running: map[string]*entry{}, byStmt: map[*engine.Statement]*entry{}}
}

// Observer returns the engine.Observer that records the statements of
// sessions opened with it: source names the protocol ("pgwire",
// "flightsql", "console"), user the logged-in user ("" when unknown).
func (r *Registry) Observer(source, user string) engine.Observer {
	return &observer{r: r, source: source, user: user}
}

type observer struct {
	r            *Registry
	source, user string
	// started, when set, learns the registry ID of each statement (the
	// console's runs follow their statements).
	started func(id string)
}

func (o *observer) StatementStarted(st *engine.Statement) {
	id := o.r.start(st, o.source, o.user)
	if o.started != nil {
		o.started(id)
	}
}

func (o *observer) StatementEnded(st *engine.Statement, err error) { o.r.end(st, err) }

// RunningQueries implements engine.QueryLister: SHOW QUERIES lists the
// registry's running statements, a waiting one as StateQueued.
func (o *observer) RunningQueries() []engine.QueryInfo {
	running, _ := o.r.Queries()
	out := make([]engine.QueryInfo, len(running))
	for i, q := range running {
		out[i] = engine.QueryInfo{ID: q.ID, State: q.State, Source: q.Source, User: q.User, SQL: q.SQL, Started: q.Started, Rows: q.Rows}
	}
	return out
}

func (r *Registry) start(st *engine.Statement, source, user string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e := &entry{id: strconv.FormatUint(r.seq, 10), source: source, user: user, st: st, state: StateRunning}
	r.running[e.id] = e
	r.byStmt[st] = e
	return e.id
}

func (r *Registry) end(st *engine.Statement, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.byStmt[st]
	if e == nil {
		return
	}
	delete(r.byStmt, st)
	delete(r.running, e.id)
	e.ended = time.Now()
	e.state = stateOf(err)
	if err != nil {
		e.err = err.Error()
	}
	r.recent = append(r.recent, e)
	if len(r.recent) > r.keep {
		r.recent = append(r.recent[:0:0], r.recent[len(r.recent)-r.keep:]...)
	}
}

// Query states.
const (
	StateRunning  = "running"
	StateQueued   = "queued" // running, but waiting for memory (engine.Admission)
	StateDone     = "done"
	StateFailed   = "failed"
	StateCanceled = "canceled"
)

func stateOf(err error) string {
	switch {
	case err == nil:
		return StateDone
	case nferr.Is(err, nferr.KindCanceled):
		return StateCanceled
	}
	return StateFailed
}

// Queries returns the running statements (oldest first) and the recent
// ones (newest first).
func (r *Registry) Queries() (running, recent []QueryView) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.running {
		running = append(running, e.viewLocked())
	}
	sortByStart(running)
	for i := len(r.recent) - 1; i >= 0; i-- {
		recent = append(recent, r.recent[i].viewLocked())
	}
	return running, recent
}

func (r *Registry) find(id string) *entry {
	if e := r.running[id]; e != nil {
		return e
	}
	for _, e := range r.recent {
		if e.id == id {
			return e
		}
	}
	return nil
}

// Query returns one statement, running or recent.
func (r *Registry) Query(id string) (QueryView, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.find(id)
	if e == nil {
		return QueryView{}, false
	}
	return e.viewLocked(), true
}

// Plan returns a statement's physical plan with its per-operator counters
// (live while it runs); "" when it has none (DDL, SET, a bind error).
func (r *Registry) Plan(id string) (string, bool) {
	r.mu.Lock()
	e := r.find(id)
	r.mu.Unlock()
	if e == nil {
		return "", false
	}
	return e.st.Plan(), true
}

// Cancel cancels a running statement; it reports whether it was running.
func (r *Registry) Cancel(id string) bool {
	r.mu.Lock()
	e := r.running[id]
	r.mu.Unlock()
	if e == nil {
		return false
	}
	e.st.Cancel()
	return true
}

func (e *entry) viewLocked() QueryView {
	end := e.ended
	if e.state == StateRunning {
		end = time.Now()
	}
	v := QueryView{
		ID: e.id, SQL: clip(e.st.SQL), Source: e.source, User: e.user, State: e.state, Error: e.err,
		Started: e.st.Started, ElapsedMs: end.Sub(e.st.Started).Milliseconds(), Rows: e.st.Rows(),
		HasPlan: e.st.HasPlan(), Cancelable: e.state == StateRunning,
	}
	// NB: an embedded statement is one stage: its pipelines run on this
	// machine's cores; the plan shows the per-operator counters.
	s := StageView{Stage: 0, Name: "local", Tasks: 1, Rows: v.Rows}
	switch e.state {
	case StateRunning:
		if e.st.Queued() {
			v.State = StateQueued
			break
		}
		s.Running = 1
	case StateDone:
		s.Done = 1
	default:
		s.Failed = 1
	}
	v.Stages = []StageView{s}
	return v
}

// maxSQL bounds the statement text a view carries.
const maxSQL = 4 << 10

func clip(s string) string {
	if len(s) <= maxSQL {
		return s
	}
	i := maxSQL
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
