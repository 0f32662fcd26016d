package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// nodeMetrics are the Prometheus series every node exports. Each node has
// its own registry (several nodes can live in one test process); other
// layers on the node (storage, shuffle) register theirs on Node.Metrics().
//
// The result label of tasks_finished_total (coordinator and workers),
// stage_seconds and task_seconds:
//
//   - ok: the task, or every task of the stage, ended without error, or was
//     stopped because its query already had its whole result: a task whose
//     final report was still on its way when the root stage delivered the
//     last batch, or one whose consumer needed no more of it (a LIMIT
//     satisfied downstream: a genuine early stop, but neither a cancel nor a
//     failure; its work was not wanted). The coordinator stops such tasks as
//     complete (stopTasks with done, cancelRequest.Complete), and worker and
//     coordinator both count them ok, whichever of the task's end and the
//     stop comes first.
//   - canceled: cut short by a cancel of the query (the client, an
//     operator, a statement timeout) or by a failure elsewhere in it (a
//     stage is canceled when one of its tasks is and none failed).
//   - error: the task failed (for a stage: one of its tasks did).
//
// Queries (queries_finished_total, query_seconds) are labeled by the error
// the client received.
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

	// Latencies (seconds): queries and stages on the coordinator, tasks
	// on workers, by result (ok, error, canceled).
	querySeconds *prometheus.HistogramVec
	stageSeconds *prometheus.HistogramVec
	taskSeconds  *prometheus.HistogramVec
}

// LatencyBuckets are the upper bounds (seconds) of every latency histogram
// nicflow exports: 1 ms to 10 minutes, about three buckets a decade, so a
// point query, a TPC-H query at SF 1 and a long ETL statement each land
// in buckets of their own.
var LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 60, 120, 300, 600}

// newLatency returns a histogram vector with LatencyBuckets.
func newLatency(o prometheus.Opts, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: o.Namespace, Name: o.Name, Help: o.Help, ConstLabels: o.ConstLabels, Buckets: LatencyBuckets}, labels)
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
		tasksFinished:   prometheus.NewCounterVec(prometheus.CounterOpts(f("tasks_finished_total", "Tasks finished, by result (ok includes tasks stopped after their query had its whole result).")), []string{"result"}),
		tasksRunning:    prometheus.NewGauge(prometheus.GaugeOpts(f("tasks_running", "Tasks running now."))),
		queriesStarted:  prometheus.NewCounter(prometheus.CounterOpts(f("queries_started_total", "Queries accepted by the coordinator."))),
		queriesFinished: prometheus.NewCounterVec(prometheus.CounterOpts(f("queries_finished_total", "Queries finished, by result.")), []string{"result"}),
		queriesRunning:  prometheus.NewGauge(prometheus.GaugeOpts(f("queries_running", "Queries running now."))),
		queryRetries:    prometheus.NewCounter(prometheus.CounterOpts(f("query_retries_total", "Query attempts run again after a node failure."))),
		hangsDetected:   prometheus.NewCounter(prometheus.CounterOpts(f("hangs_detected_total", "Workers found hanging: silent during a task and not answering a direct gossip ping."))),
		bytesSent:       prometheus.NewCounter(prometheus.CounterOpts(f("control_bytes_sent_total", "Bytes of task output and query results sent."))),
		bytesReceived:   prometheus.NewCounter(prometheus.CounterOpts(f("control_bytes_received_total", "Bytes of task output received."))),
		taskRows:        prometheus.NewCounter(prometheus.CounterOpts(f("task_rows_total", "Rows produced by finished tasks."))),
		querySeconds:    newLatency(f("query_seconds", "Query latency on the coordinator, from its arrival to its end (retries included), by result."), "result"),
		stageSeconds:    newLatency(f("stage_seconds", "Stage latency on the coordinator, from the start of a stage's first task to the end of its last, by result."), "result"),
		taskSeconds:     newLatency(f("task_seconds", "Task run time on a worker, from its arrival to its end, by result."), "result"),
	}
	reg.MustRegister(m.members, m.memberEvents, m.tasksStarted, m.tasksFinished, m.tasksRunning,
		m.queriesStarted, m.queriesFinished, m.queriesRunning, m.queryRetries, m.hangsDetected, m.bytesSent, m.bytesReceived, m.taskRows)
	switch self.Role {
	case RoleCoordinator:
		reg.MustRegister(m.querySeconds, m.stageSeconds)
	case RoleWorker:
		reg.MustRegister(m.taskSeconds)
	}
	return m
}

// registerGossip exports the node's gossip traffic (gossip_count.go):
// nicflow_gossip_{sent,received}_bytes_total{proto="udp"|"tcp"}.
func (m *nodeMetrics) registerGossip(self NodeInfo, g *gossipCounters) {
	for _, s := range []struct {
		dir, proto string
		v          *atomic.Int64
	}{{"sent", "udp", &g.udpOut}, {"received", "udp", &g.udpIn}, {"sent", "tcp", &g.tcpOut}, {"received", "tcp", &g.tcpIn}} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "nicflow", Name: "gossip_" + s.dir + "_bytes_total",
			Help:        "Bytes of gossip (memberlist: probes, state, push-pull exchanges; encrypted) this node " + s.dir + ", by protocol.",
			ConstLabels: prometheus.Labels{"node": self.ID, "role": self.Role.String(), "proto": s.proto}},
			func() float64 { return float64(s.v.Load()) }))
	}
}

// GossipStats are the node's gossip bytes since it started.
func (n *Node) GossipStats() GossipStats {
	if n.members == nil {
		return GossipStats{}
	}
	return n.members.gossip.stats()
}

// StorageMetrics are a storage node's own series: the scans it serves
// over Flight. Create them before the Flight server (its
// storage.ServerOptions.ScanObserver is ObserveScan) and Register them on
// the node once it has joined. Scans a co-located worker runs itself on
// the node's files (local reads) do not pass through the node.
type StorageMetrics struct {
	seconds   *prometheus.HistogramVec
	rows      prometheus.Counter
	bytesRead prometheus.Counter
	served    prometheus.Counter
	reads     *prometheus.CounterVec
}

// NewStorageMetrics returns the series of storage node nodeID.
func NewStorageMetrics(nodeID string) *StorageMetrics {
	labels := prometheus.Labels{"node": nodeID, "role": RoleStorage.String()}
	f := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "nicflow", Name: name, Help: help, ConstLabels: labels}
	}
	return &StorageMetrics{
		seconds:   newLatency(f("storage_scan_seconds", "Scan latency on a storage node, from the scan's start to its last record sent over Flight, by result."), "result"),
		rows:      prometheus.NewCounter(prometheus.CounterOpts(f("storage_scan_rows_total", "Rows storage node scans sent (after filtering here)."))),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts(f("storage_scan_read_bytes_total", "Parquet bytes storage node scans read from disk."))),
		served:    prometheus.NewCounter(prometheus.CounterOpts(f("storage_served_bytes_total", "Parquet bytes storage nodes served as stored to clients that decode them."))),
		reads:     prometheus.NewCounterVec(prometheus.CounterOpts(f("storage_reads_total", "Reads of stored bytes storage nodes served, by result.")), []string{"result"}),
	}
}

// ObserveRead records one read of stored bytes served
// (storage.ServerOptions.ReadObserver).
func (m *StorageMetrics) ObserveRead(bytes int64, err error) {
	m.served.Add(float64(bytes))
	m.reads.WithLabelValues(resultLabel(err)).Inc()
}

// ObserveScan records one scan served (storage.ServerOptions.ScanObserver).
func (m *StorageMetrics) ObserveScan(d time.Duration, st storage.ScanStats, err error) {
	m.seconds.WithLabelValues(resultLabel(err)).Observe(d.Seconds())
	m.rows.Add(float64(st.RowsReturned))
	m.bytesRead.Add(float64(st.BytesRead))
}

// ServeStandalone serves the series on addr's /metrics, with the Go and
// process collectors, for a storage node that is not a cluster member
// (no Node, so no admin port of its own). Close the server to stop it.
func (m *StorageMetrics) ServeStandalone(addr string) (*http.Server, string, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), m.seconds, m.rows, m.bytesRead, m.served, m.reads)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nferr.Unavailablef("admin port %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10}
	go srv.Serve(lis) //nolint:errcheck // ends with ErrServerClosed when closed
	return srv, lis.Addr().String(), nil
}

// Register adds the series to the node's /metrics.
func (m *StorageMetrics) Register(n *Node) error {
	for _, c := range []prometheus.Collector{m.seconds, m.rows, m.bytesRead, m.served, m.reads} {
		if err := n.Metrics().Register(c); err != nil {
			return nferr.Internalf("storage metrics: %v", err)
		}
	}
	return nil
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
