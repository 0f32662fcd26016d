package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/engine"
)

// admissionMetrics is the /metrics handler of serve's admission control:
// queue length, running queries, granted memory, admitted and rejected
// queries, and the time admitted queries waited (the series a cluster's
// coordinator exports too: cluster.AdmissionCollectors).
func admissionMetrics(a *engine.Admission) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cluster.AdmissionCollectors(a, nil)...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
