// Package cluster runs nicflow as several processes: membership through
// gossip, the coordinator, worker and storage roles, task scheduling and
// cancellation, cluster keys and mutual TLS, and per-node metrics.
//
// # Pieces
//
//	options.go      Options (one struct for every role), defaults, Validate
//	meta.go         NodeInfo and its compact versioned encoding in memberlist metadata
//	keys.go         cluster key + CA (InitKeys, IssueNodeDir, LoadKeys), TLS configs for every port
//	membership.go   memberlist wrapper: alive members, ordered events, LAN failure-detection timing
//	node.go         StartNode / StartCoordinator / StartWorker / JoinAsStorage, shutdown
//	wire.go         control-plane frames and codec; nferr kinds <-> gRPC status
//	worker.go       nicflow.Control service: RunTask stream, Cancel; TaskContext for executors
//	coordinator.go  Flight client service (DoGet, progress/cancel/members actions), query lifecycle
//	query.go        Query (what a QueryRunner uses: Place, Start, Watch, Fail) and Task handles
//	scheduler.go    gang placement by advertised cores (soft) and memory (hard)
//	placement.go    which worker runs which task: by the host of a task's row groups,
//	                small scan stages by a rendezvous hash of their tables (soft affinity)
//	client.go       Go client of the coordinator
//	check.go        the built-in "nicflow.check" request: reference QueryRunner and Executor
//	sql.go          distributed SQL: SQLRunner (coordinator: plan into stages, place tables,
//	                start fragments, stream the result) and SQLWorker (worker: shuffle agent,
//	                fragment executor, scan and shuffle metrics)
//	retry.go        retryWriter: a query's result held back while the query may be retried
//	admission.go    the coordinator's admission control: Options.Memory shared by its queries
//	                through engine.Admission (Query.Admit: FIFO queue, minimum grant,
//	                statement_timeout, MaxQueued), the nicflow_admission_* collectors
//	local.go        LocalCluster: a whole cluster as child processes (process group, Pdeathsig,
//	                restart of dead workers and storage nodes)
//	admin.go        /metrics (latency histograms: LatencyBuckets), /status, /debug/pprof;
//	                StorageMetrics, a storage node's scan series; HandleAdmin mounts more
//	                (the web console)
//
// # Invariants
//
//   - INVARIANT: no task outlives its query. A worker cancels a task when its
//     stream ends, when a Cancel for its query arrives, when its coordinator
//     or a node in Spec.Needs leaves membership, or when the worker stops;
//     when a QueryRunner returns, the coordinator cancels every task of the
//     query and waits (bounded) for the workers to confirm. After a query
//     that succeeded, its tasks still running are stopped as complete
//     (Cancel with Complete, before the query's context is canceled): they
//     report, and count in the metrics, as ok (admin.go, nodeMetrics).
//   - INVARIANT: the first failure wins. A task error, a node death or a
//     client cancel is recorded once on the Query's attempt and is what the
//     client receives, with its nferr kind, even though the runner usually
//     only sees the resulting cancellation.
//   - INVARIANT: a node failure is retried, a query's own error never. An
//     attempt that fails with KindUnavailable is stopped and the query runs
//     again (same ID, new context, tasks and channels) without the workers
//     that failed (suspects, and workers whose control link dropped), up to
//     its retry limit, as long as none of its
//     result reached the client. A query depends on every node that ran one
//     of its tasks until it ends (shuffle output may still be in flight).
//   - INVARIANT: placements are repaired. When storage membership changes
//     the SQL runner asks the alive storage nodes what they hold and sends
//     what is missing (storage.DB.Repair).
//   - INVARIANT: nothing unauthenticated gets in. Gossip is encrypted and
//     authenticated with the cluster key (memberlist drops other packets);
//     every gRPC port requires TLS 1.3 client certificates of the cluster CA;
//     worker control calls require a coordinator certificate.
//   - INVARIANT: bad bytes close one connection. Frames are bounded (gRPC
//     max message size) and checksummed (xxh3); metadata, frames and tickets
//     are parsed without panics (fuzzed), and IPC decoding of task output
//     recovers panics into KindData errors.
//   - INVARIANT: a query's coordinator memory is admitted once. Query.Admit
//     reserves it before the query starts; a retried attempt reuses the
//     grant; what the coordinator holds for the query (the retry buffer,
//     what it runs itself) is charged to it; the grant is returned when the
//     query finishes, whatever its end.
//   - At most Options.MaxRunning queries that read data run on the
//     workers at once (admission.go, runGate); the others wait in arrival
//     order, and a query's place is returned when its attempt ends.
//   - Reservations: cores and memory placed by the scheduler are released
//     when the task ends, when the query ends (unused placements), or when
//     the worker leaves.
//
// Dependencies: cluster imports engine, exec, shuffle and storage; only cmd
// imports cluster. Storage and shuffle take *tls.Config values from
// Keys.ServerTLS / Keys.ClientTLS rather than importing cluster.
//
// See docs/cluster.md for operation (three-machine setup, keys, failures,
// client protocol, how the engine plugs in).
package cluster
