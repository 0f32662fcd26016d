package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nicflow/nicflow/internal/nferr"
)

// nodeMetrics are the Prometheus series every node exports. Each node has
// its own registry (several nodes can live in one test process); other
// layers on the node (storage, shuffle) register theirs on Node.Metrics().
type nodeMetrics struct {
	reg *prometheus.Registry

	members      *prometheus.GaugeVec   // by role
	memberEvents *prometheus.CounterVec // by event type

	tasksStarted  prometheus.Counter
	tasksFinished *prometheus.CounterVec // by result: ok, error, canceled
	tasksRunning  prometheus.Gauge

	queriesStarted  prometheus.Counter
	queriesFinished *prometheus.CounterVec // by result
	queriesRunning  prometheus.Gauge
	queryRetries    prometheus.Counter
	hangsDetected   prometheus.Counter

	bytesSent     prometheus.Counter // task output and results sent over the control plane
	bytesReceived prometheus.Counter
	taskRows      prometheus.Counter
}

func newNodeMetrics(self NodeInfo) *nodeMetrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	labels := prometheus.Labels{"node": self.ID, "role": self.Role.String()}
	f := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "nicflow", Name: name, Help: help, ConstLabels: labels}
	}
	m := &nodeMetrics{
		reg:             reg,
		members:         prometheus.NewGaugeVec(prometheus.GaugeOpts(f("members", "Alive cluster members known to this node, by role.")), []string{"member_role"}),
		memberEvents:    prometheus.NewCounterVec(prometheus.CounterOpts(f("member_events_total", "Membership events seen by this node.")), []string{"event"}),
		tasksStarted:    prometheus.NewCounter(prometheus.CounterOpts(f("tasks_started_total", "Tasks started (worker: executed; coordinator: submitted)."))),
		tasksFinished:   prometheus.NewCounterVec(prometheus.CounterOpts(f("tasks_finished_total", "Tasks finished, by result.")), []string{"result"}),
		tasksRunning:    prometheus.NewGauge(prometheus.GaugeOpts(f("tasks_running", "Tasks running now."))),
		queriesStarted:  prometheus.NewCounter(prometheus.CounterOpts(f("queries_started_total", "Queries accepted by the coordinator."))),
		queriesFinished: prometheus.NewCounterVec(prometheus.CounterOpts(f("queries_finished_total", "Queries finished, by result.")), []string{"result"}),
		queriesRunning:  prometheus.NewGauge(prometheus.GaugeOpts(f("queries_running", "Queries running now."))),
		queryRetries:    prometheus.NewCounter(prometheus.CounterOpts(f("query_retries_total", "Query attempts run again after a node failure."))),
		hangsDetected:   prometheus.NewCounter(prometheus.CounterOpts(f("hangs_detected_total", "Workers found hanging: silent during a task and not answering a direct gossip ping."))),
		bytesSent:       prometheus.NewCounter(prometheus.CounterOpts(f("control_bytes_sent_total", "Bytes of task output and query results sent."))),
		bytesReceived:   prometheus.NewCounter(prometheus.CounterOpts(f("control_bytes_received_total", "Bytes of task output received."))),
		taskRows:        prometheus.NewCounter(prometheus.CounterOpts(f("task_rows_total", "Rows produced by finished tasks."))),
	}
	reg.MustRegister(m.members, m.memberEvents, m.tasksStarted, m.tasksFinished, m.tasksRunning,
		m.queriesStarted, m.queriesFinished, m.queriesRunning, m.queryRetries, m.hangsDetected, m.bytesSent, m.bytesReceived, m.taskRows)
	return m
}

func resultLabel(err error) string {
	switch {
	case err == nil:
		return "ok"
	case nferr.Is(err, nferr.KindCanceled):
		return "canceled"
	}
	return "error"
}

// NodeStatus is what /status returns.
type NodeStatus struct {
	Self    NodeInfo     `json:"self"`
	Uptime  string       `json:"uptime"`
	Members []NodeInfo   `json:"members"`
	Tasks   []TaskStats  `json:"tasks,omitempty"`   // workers: running tasks
	Queries []Progress   `json:"queries,omitempty"` // coordinator: running queries
	Load    []WorkerLoad `json:"load,omitempty"`    // coordinator: scheduler view
}

// startAdmin serves /metrics, /status and /debug/pprof on addr.
func (n *Node) startAdmin(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nferr.Unavailablef("admin port %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	n.adminMux = mux
	mux.Handle("/metrics", promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{Registry: n.metrics.reg}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(n.Status()) //nolint:errcheck // a client that hung up is not our error
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	n.adminSrv = &http.Server{
		Handler: mux,
		// NB: bounded header reads: a peer sending garbage or nothing is
		// dropped after 5 s without holding a goroutine forever.
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	go func() {
		if err := n.adminSrv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Warn("admin server stopped", "err", err)
		}
	}()
	return lis, nil
}

// HandleAdmin serves h on the admin port for pattern (http.ServeMux
// patterns; /metrics, /status and /debug/pprof/ stay the node's): the web
// console (cluster/console) mounts itself here on a coordinator. It fails
// when the admin port is off.
func (n *Node) HandleAdmin(pattern string, h http.Handler) (err error) {
	if n.adminMux == nil {
		return nferr.Queryf("node %s has no admin port (--admin off)", n.ID())
	}
	defer func() {
		// NB: ServeMux panics on a conflicting or malformed pattern.
		if r := recover(); r != nil {
			err = nferr.Internalf("admin handler %q: %v", pattern, r)
		}
	}()
	n.adminMux.Handle(pattern, h)
	return nil
}

func (n *Node) stopAdmin() {
	if n.adminSrv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := n.adminSrv.Shutdown(ctx); err != nil {
		n.adminSrv.Close()
	}
}
