// Package cluster runs nicflow as several processes: membership through
// gossip, the coordinator, worker and storage roles, task scheduling and
// cancellation, cluster keys and mutual TLS, and per-node metrics.
//
// Dependencies: cluster imports engine, exec, shuffle and storage; only cmd
// imports cluster.
package cluster
