package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nicflow/nicflow/engine"
)

// admissionMetrics is the /metrics handler of serve's admission control:
// queue length, running queries, granted memory, admitted and rejected
// queries, and the time admitted queries waited.
func admissionMetrics(a *engine.Admission) http.Handler {
	reg := prometheus.NewRegistry()
	stat := func(f func(engine.AdmissionStats) float64) func() float64 {
		return func() float64 { return f(a.Stats()) }
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_admission_queued", Help: "Queries waiting for memory."},
			stat(func(s engine.AdmissionStats) float64 { return float64(s.Queued) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_admission_running", Help: "Queries admitted and not ended."},
			stat(func(s engine.AdmissionStats) float64 { return float64(s.Running) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_admission_granted_bytes", Help: "Memory granted to running queries."},
			stat(func(s engine.AdmissionStats) float64 { return float64(s.Granted) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nicflow_admission_memory_bytes", Help: "The memory queries share (--memory)."},
			stat(func(s engine.AdmissionStats) float64 { return float64(s.Memory) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nicflow_admission_admitted_total", Help: "Queries admitted."},
			stat(func(s engine.AdmissionStats) float64 { return float64(s.Admitted) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nicflow_admission_rejected_total", Help: "Queries that never started: the queue was full, or they were canceled or timed out waiting."},
			stat(func(s engine.AdmissionStats) float64 { return float64(s.Rejected) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nicflow_admission_wait_seconds_total", Help: "Time admitted queries waited for memory."},
			stat(func(s engine.AdmissionStats) float64 { return s.Waited.Seconds() })),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
