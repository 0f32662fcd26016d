package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"sync"
	"time"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/engine"
)

// Member is one cluster member as the console lists it.
type Member struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Addr is the member's client or control address.
	Addr string `json:"addr"`
	// Cores, Memory (bytes) and NICBandwidth (bits/s; 0: not advertised)
	// are what the member offers.
	Cores        int   `json:"cores"`
	Memory       int64 `json:"memory"`
	NICBandwidth int64 `json:"nic_bandwidth"`
	// Load: cores and memory placed by the scheduler (workers), and the
	// running tasks (workers) or queries (a coordinator, nicflow serve).
	UsedCores  int       `json:"used_cores"`
	UsedMemory int64     `json:"used_memory"`
	Running    int       `json:"running"`
	Started    time.Time `json:"started"`
	Leaving    bool      `json:"leaving,omitempty"`
}

// QueryView is a running or recent query as the console shows it.
type QueryView struct {
	ID     string `json:"id"`
	SQL    string `json:"sql"`
	Source string `json:"source"`         // "console", "pgwire", "flight", ...
	User   string `json:"user,omitempty"` // who ran it, when known
	State  string `json:"state"`          // StateRunning, StateDone, ...
	Error  string `json:"error,omitempty"`
	// Started and the time since (or until the end).
	Started   time.Time `json:"started"`
	ElapsedMs int64     `json:"elapsed_ms"`
	// Rows of the result so far; BytesShuffled moved between workers (a
	// cluster's exchanges; 0 embedded).
	Rows          int64       `json:"rows"`
	BytesShuffled int64       `json:"bytes_shuffled"`
	Stages        []StageView `json:"stages"`
	// HasPlan: Plan has the query's plan with per-operator counters.
	HasPlan    bool `json:"has_plan"`
	Cancelable bool `json:"cancelable"`
}

// StageView is one stage's progress: its tasks, rows and bytes.
type StageView struct {
	Stage    int    `json:"stage"`
	Name     string `json:"name"`
	Tasks    int    `json:"tasks"`
	Running  int    `json:"running"`
	Done     int    `json:"done"`
	Failed   int    `json:"failed"`
	Rows     int64  `json:"rows"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
}

// Backend is what a console shows and runs: the process of nicflow serve
// (Local) or a coordinator (Cluster).
type Backend interface {
	// Name describes the backend in the page header.
	Name() string
	Members() []Member
	// Queries returns the running queries (oldest first) and the recent
	// ones (newest first).
	Queries() (running, recent []QueryView)
	Query(id string) (QueryView, bool)
	// Plan returns a query's plan text with per-operator counters, ""
	// when the backend has none for it; false when there is no such
	// query.
	Plan(id string) (string, bool)
	// Cancel cancels a running query; false when it is not running.
	Cancel(id string) bool
	// Run runs a script for user: started learns the ID of each statement
	// (query) as it starts, sink receives the last statement's result.
	Run(ctx context.Context, user, sql string, started func(id string), sink *Sink) error
}

func sortByStart(qs []QueryView) {
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].Started.Before(qs[j].Started) })
}

// Local is the backend of nicflow serve: statements run in this process on
// sessions of the database directory; the registry lists them (those of
// the PostgreSQL and Flight SQL clients too when their sessions report to
// it).
type Local struct {
	dir     string
	opts    engine.Options
	reg     *Registry
	name    string
	started time.Time
	host    string
}

// NewLocal returns the backend of database directory dir: console
// statements run on sessions opened with opts (and the registry's
// observer) and are listed in reg with the others.
func NewLocal(dir string, opts engine.Options, reg *Registry) *Local {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return &Local{dir: dir, opts: opts, reg: reg, name: "nicflow serve " + dir, started: time.Now(), host: host}
}

// Name implements Backend.
func (l *Local) Name() string { return l.name }

// Members implements Backend: this process, one member.
func (l *Local) Members() []Member {
	running, _ := l.reg.Queries()
	cores := l.opts.Parallelism
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	return []Member{{
		ID: l.host, Role: "serve", Addr: l.dir, Cores: cores, Memory: l.opts.MemoryLimit,
		UsedMemory: heapBytes(), Running: len(running), Started: l.started,
	}}
}

// heapBytes is the Go heap in use (live and not yet collected objects).
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// Queries implements Backend.
func (l *Local) Queries() (running, recent []QueryView) { return l.reg.Queries() }

// Query implements Backend.
func (l *Local) Query(id string) (QueryView, bool) { return l.reg.Query(id) }

// Plan implements Backend.
func (l *Local) Plan(id string) (string, bool) { return l.reg.Plan(id) }

// Cancel implements Backend.
func (l *Local) Cancel(id string) bool { return l.reg.Cancel(id) }

// Run implements Backend: a session of its own for the script (SET lasts
// for the script only).
func (l *Local) Run(ctx context.Context, user, text string, started func(string), sink *Sink) error {
	o := l.opts
	o.Observer = &observer{r: l.reg, source: "console", user: user, started: started}
	sess, err := engine.Open(l.dir, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	res, err := sess.Query(ctx, text)
	if err != nil {
		return err
	}
	defer res.Close()
	sink.zone = res.Zone
	if res.Schema == nil {
		sink.setStatus(res.Status)
		return nil
	}
	if err := sink.SetSchema(res.Schema); err != nil {
		return err
	}
	for {
		rec, err := res.Next()
		if err != nil || rec == nil {
			return err
		}
		if err := sink.Write(rec); err != nil {
			return err
		}
	}
}

// Cluster is the backend of a coordinator: its members, its running and
// recent queries; console statements run as client requests on it.
type Cluster struct {
	node  *cluster.Node
	coord *cluster.Coordinator

	mu      sync.Mutex
	console map[string]string // query ID -> user, of the console's runs
	order   []string
}

// NewCluster returns the backend of a coordinator node.
func NewCluster(n *cluster.Node) *Cluster {
	return &Cluster{node: n, coord: n.Coordinator(), console: map[string]string{}}
}

// Name implements Backend.
func (c *Cluster) Name() string { return "nicflow coordinator " + c.node.ID() }

// Members implements Backend.
func (c *Cluster) Members() []Member {
	loads := map[string]cluster.WorkerLoad{}
	if c.coord != nil {
		for _, l := range c.coord.Workers() {
			loads[l.Node.ID] = l
		}
	}
	running := 0
	if c.coord != nil {
		r, _ := c.coord.Queries()
		running = len(r)
	}
	var out []Member
	for _, n := range c.node.Members() {
		m := Member{
			ID: n.ID, Role: n.Role.String(), Addr: n.ControlAddr, Cores: n.Cores, Memory: n.Memory,
			NICBandwidth: n.NICBandwidth, Started: n.Started, Leaving: n.Leaving,
		}
		if l, ok := loads[n.ID]; ok {
			m.UsedCores, m.UsedMemory, m.Running = l.UsedCores, l.UsedMemory, l.RunningTasks
		}
		if n.ID == c.node.ID() && n.Role == cluster.RoleCoordinator {
			m.Running = running
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return roleOrder(out[i].Role) < roleOrder(out[j].Role)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func roleOrder(r string) int {
	switch r {
	case cluster.RoleCoordinator.String():
		return 0
	case cluster.RoleWorker.String():
		return 1
	}
	return 2
}

// Queries implements Backend.
func (c *Cluster) Queries() (running, recent []QueryView) {
	if c.coord == nil {
		return nil, nil
	}
	rs, rc := c.coord.Queries()
	for _, q := range rs {
		running = append(running, c.view(q))
	}
	sortByStart(running)
	for i := len(rc) - 1; i >= 0; i-- {
		recent = append(recent, c.view(rc[i]))
	}
	return running, recent
}

func (c *Cluster) view(q cluster.QueryInfo) QueryView {
	v := QueryView{
		ID: q.QueryID, SQL: clip(q.Text), Source: "flight", State: q.State, Error: q.Error,
		Started: q.Started, ElapsedMs: q.Elapsed.Milliseconds(), Cancelable: q.State == StateRunning || q.State == StateQueued,
	}
	c.mu.Lock()
	if u, ok := c.console[q.QueryID]; ok {
		v.Source, v.User = "console", u
	}
	c.mu.Unlock()
	top := -1
	for _, s := range q.Stages {
		top = max(top, s.Stage)
	}
	for _, s := range q.Stages {
		v.Stages = append(v.Stages, StageView{
			Stage: s.Stage, Name: s.Name, Tasks: s.Tasks, Running: s.Running, Done: s.Done, Failed: s.Failed,
			Rows: s.Rows, BytesIn: s.BytesIn, BytesOut: s.BytesOut,
		})
		// NB: as nicflow sql --cluster counts them: every stage's output
		// but the result stage's crossed an exchange.
		if s.Stage == top {
			v.Rows = s.Rows
		} else {
			v.BytesShuffled += s.BytesOut
		}
	}
	return v
}

// Query implements Backend.
func (c *Cluster) Query(id string) (QueryView, bool) {
	running, recent := c.Queries()
	for _, q := range append(running, recent...) {
		if q.ID == id {
			return q, true
		}
	}
	return QueryView{}, false
}

// Plan implements Backend: the coordinator keeps no plans; the console
// shows those of its EXPLAIN ANALYZE runs.
func (c *Cluster) Plan(id string) (string, bool) {
	_, ok := c.Query(id)
	return "", ok
}

// Cancel implements Backend.
func (c *Cluster) Cancel(id string) bool { return c.coord != nil && c.coord.Cancel(id) }

// maxConsoleRuns bounds the console query IDs a Cluster remembers.
const maxConsoleRuns = 256

// Run implements Backend: the script is one client request (the
// coordinator runs its last statement, after the earlier ones' settings).
func (c *Cluster) Run(ctx context.Context, user, text string, started func(string), sink *Sink) error {
	if c.coord == nil {
		return errNotCoordinator(c.node.ID())
	}
	var b [8]byte
	rand.Read(b[:])
	id := "console-" + hex.EncodeToString(b[:])
	c.mu.Lock()
	c.console[id] = user
	c.order = append(c.order, id)
	if len(c.order) > maxConsoleRuns {
		delete(c.console, c.order[0])
		c.order = c.order[1:]
	}
	c.mu.Unlock()
	started(id)
	return c.coord.Run(ctx, cluster.QueryRequest{V: 1, ID: id, Kind: cluster.SQLKind, Text: text}, sink)
}
