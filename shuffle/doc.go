// Package shuffle moves data between the tasks of a query, Buddy-style:
// fire-and-forget messages with an 8-byte header are aggregated into
// network-sized buffers and routed by one agent per node, which runs inside
// the worker (corun) or as a separate process (offload, `nicflow agent`),
// standing in for a routing service on a SmartNIC/DPU. See docs/shuffle.md
// for the design, the measurements and what RDMA would need.
//
//	 worker process (runtime library)           routing agent (one per node)
//	┌───────────────────────────────┐          ┌──────────────────────────────────┐
//	│ task ─ Endpoint: Buffers x    │  frames  │ links ─► receive queue ─► routing │
//	│        LocalAggSize buffers ──┼─────────►│ threads: per-thread send buffers  │──► agents of
//	│ task ─ Endpoint ◄─ inbox ◄────┼──────────┤ by next hop (node, or local task) │◄── other nodes
//	└───────────────────────────────┘ mem/unix/└──────────────────────────────────┘ TCP (TLS)
//	                                  shm ring
//
// Who owns what:
//
//   - message.go: the 8-byte message header (size, destination, kind).
//   - frame.go: frames (40-byte header, checksum), their buffers and the
//     stream reader/writer that verifies every frame from outside.
//   - link.go: one connection; per-(link, channel) credit flow control.
//   - transport.go, shm_linux.go, auth.go: in-process, TCP (optionally
//     TLS), unix-socket and shared-memory carriers; authentication. Other
//     carriers plug in by URL scheme (Transport, RegisterTransport: TCP is
//     one), from other modules (an RDMA transport needs cgo: its own).
//   - agent.go, agent_chan.go, router.go: the routing agent.
//   - client.go, endpoint.go: the runtime library.
//   - exchange.go, arrowipc.go: the API the engine's exchanges use.
//   - codec.go, device.go: frame codecs on offload devices.
//   - pagecodec.go: Parquet page decompression on an offload device
//     (OffloadParquetDecompression wraps arrow-go's codec registry).
//
// Invariants:
//
//   - INVARIANT: every message is delivered exactly once or its receiver
//     gets an error. Links never drop a frame silently: a lost link fails
//     the channels whose data crossed it (KindUnavailable), a bad frame
//     fails its link (KindData naming the peer), a bad message its channel.
//   - INVARIANT (termination): each sender ends its stream with an
//     end-of-stream message to every receiver carrying the count of data
//     messages it sent that receiver. A receiver is done when it holds an
//     end of stream from every sender and has received exactly the sum of
//     their counts. Messages may arrive in any order, the counts before
//     the data included; more data than announced is a KindData error.
//   - INVARIANT (bounded memory): a frame received on a link holds its
//     size against that (link, channel)'s window (Options.Credits) until it
//     is released; the sender never exceeds the window (except by a single
//     frame when nothing is in flight). Routing threads hold at most
//     AgentBuffers buffers per destination and park input frames on a
//     blocklist instead of allocating; endpoints hold at most Buffers.
//   - INVARIANT: the routing loop takes no lock and no atomic per message:
//     locks and atomics appear once per frame.
//   - Ownership: a frame has one owner at a time; release() returns its
//     window to the link it came from and the frame to its owner (a routing
//     thread's or an endpoint's completion queue, or the buffer pool).
//
// Dependencies: shuffle imports only Arrow, the compression libraries,
// xxh3 and x/sys; it knows nothing of operators, plans or storage.
package shuffle
