// Package shuffle moves data between the tasks of a query, Buddy-style:
// fire-and-forget messages with an 8-byte header are aggregated into
// network-sized buffers and routed by one agent per node, which can run
// inside the worker (corun) or as a separate process (offload). Transports
// (in-process, TCP, shared memory) and frame codecs (none, s2/lz4, zstd, on a
// pluggable offload device) sit behind narrow interfaces.
//
// Dependencies: shuffle imports only Arrow and the compression libraries; it
// knows nothing of operators, plans or storage.
package shuffle
