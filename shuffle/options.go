package shuffle

import (
	"cmp"
	"crypto/tls"
	"runtime"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Options configure the shuffle layer: the runtime library inside worker
// processes (Client, Endpoint, Exchange) and the routing agent (Agent). One
// struct serves both so that a worker and its offloaded agent can be started
// from the same configuration. Zero values mean "use the default" documented
// on each field; SetDefaults fills them in and Validate reports the first
// problem, naming the field.
type Options struct {
	// AggSize is the size in bytes of the agent's aggregation buffers: the
	// frames that travel between agents over the network (Buddy's "remote
	// communication size"). Default 32 KiB: Buddy measured a plateau of
	// message throughput at 16-32 KiB.
	AggSize int
	// LocalAggSize is the size of the runtime library's aggregation buffers,
	// the frames a worker hands to its node's agent. Default: AggSize.
	LocalAggSize int
	// Buffers is the number of aggregation buffers per endpoint in the
	// runtime library (Buddy's "runtime buffer count"): one is being filled
	// while the others are in flight, so communication pipelines with
	// compute. Default 8, where Buddy's SSSP and Transpose plateau.
	Buffers int
	// AgentBuffers bounds the buffers a routing thread holds per destination
	// (the one being filled plus those queued or in flight). When a
	// destination has none left, the rest of the input frame goes on the
	// thread's blocklist. Default 4.
	AgentBuffers int
	// Threads is the number of routing threads in each agent. Each has its
	// own send buffers, so the routing loop takes no lock per message.
	// Default: 2, or 1 on a one-CPU machine.
	Threads int
	// FlushTimeout bounds how long a partly filled buffer waits for more
	// messages after its first one. Default 1ms.
	FlushTimeout time.Duration
	// IdleTimeout: when a routing thread receives nothing for this long it
	// flushes all its partly filled buffers. Default 100µs.
	IdleTimeout time.Duration
	// Codec compresses frames between agents: CodecNone (default), CodecS2 or
	// CodecZstd. Local frames (worker to agent) are never compressed.
	Codec Codec
	// CodecMinSaving makes compression adaptive: a frame that compresses by
	// less than this fraction is sent uncompressed, and the link then skips
	// compression for its next codecBackoff frames before sampling again.
	// Default 0.125; a negative value compresses every frame.
	CodecMinSaving float64
	// Device runs compression (Lynx-style request/response queues). Default:
	// the CPU device, which compresses in the calling goroutine.
	Device Device
	// MaxFrame is the largest frame body, in bytes, a link accepts or sends;
	// a peer announcing a larger one is rejected as corrupt. Default 64 MiB.
	MaxFrame int
	// MaxMessage is the largest message payload. Default MaxFrame minus the
	// message header.
	MaxMessage int
	// LargeMessage: payloads of at least this many bytes are not copied into
	// aggregation buffers; each travels as its own frame (scatter-gather on
	// sockets, by reference in process). Default LocalAggSize/2.
	LargeMessage int
	// Credits is the flow-control window in bytes that a receiver grants each
	// (link, channel) pair. It bounds the memory a channel can pin on a link
	// and isolates channels: a stalled exchange cannot use another one's
	// window. Default 2 MiB (about two bandwidth-delay products of a 100
	// Gbit/s link at 80µs, and room for a few large Arrow batches).
	Credits int
	// MaxChannels bounds the channels an agent tracks at once, including
	// channels that received frames before any local task opened them.
	// Default 4096.
	MaxChannels int
	// PendingTimeout drops frames held for a channel that no local task has
	// opened for this long (its receivers were never scheduled). Default 2m.
	PendingTimeout time.Duration
	// DialTimeout bounds connecting to a peer agent or to the local agent,
	// retries included. Default 10s.
	DialTimeout time.Duration

	// TLS, when set, secures agent-to-agent connections with mutual TLS: the
	// config must carry the node's certificate and verify peers (ClientCAs,
	// RootCAs, ClientAuth RequireAndVerifyClientCert). It is used for both
	// dialing and accepting.
	TLS *tls.Config
	// TLSClient, when set, is used instead of TLS for dialing peers (for a
	// cluster whose server and client configurations differ, as
	// cluster.Keys' ServerTLS and ClientTLS do).
	TLSClient *tls.Config
	// ClusterKey, when TLS is nil, authenticates and encrypts agent-to-agent
	// connections with TLS 1.3 keyed by this secret (see KeyTLSConfig): a
	// peer without the key can neither connect nor read data. At least 16
	// bytes.
	ClusterKey []byte
	// Insecure must be set to run agent-to-agent connections without TLS and
	// without a cluster key (tests, benchmarks on one machine).
	Insecure bool
}

// Default values, with the reason for each next to the field above.
const (
	DefaultAggSize        = 32 << 10
	DefaultBuffers        = 8
	DefaultAgentBuffers   = 4
	DefaultFlushTimeout   = time.Millisecond
	DefaultIdleTimeout    = 100 * time.Microsecond
	DefaultCodecMinSaving = 0.125
	DefaultMaxFrame       = 64 << 20
	DefaultCredits        = 2 << 20
	DefaultMaxChannels    = 4096
	DefaultPendingTimeout = 2 * time.Minute
	DefaultDialTimeout    = 10 * time.Second

	// minAggSize: a buffer must hold a message header and some payload;
	// 256 bytes is far below any useful setting (Buddy starts at 4 KiB).
	minAggSize = 256
	// maxFrameLimit keeps frame lengths within the 32-bit header fields with
	// room for the frame and message headers.
	maxFrameLimit = 1 << 30
)

// DefaultOptions returns Options with every default filled in, for tests and
// embedded use.
func DefaultOptions() Options {
	var o Options
	o.SetDefaults()
	return o
}

// SetDefaults fills zero fields with their defaults.
func (o *Options) SetDefaults() {
	o.AggSize = cmp.Or(o.AggSize, DefaultAggSize)
	o.LocalAggSize = cmp.Or(o.LocalAggSize, o.AggSize)
	o.Buffers = cmp.Or(o.Buffers, DefaultBuffers)
	o.AgentBuffers = cmp.Or(o.AgentBuffers, DefaultAgentBuffers)
	if o.Threads == 0 {
		o.Threads = 2
		if runtime.NumCPU() == 1 {
			o.Threads = 1
		}
	}
	o.FlushTimeout = cmp.Or(o.FlushTimeout, DefaultFlushTimeout)
	o.IdleTimeout = cmp.Or(o.IdleTimeout, DefaultIdleTimeout)
	o.CodecMinSaving = cmp.Or(o.CodecMinSaving, DefaultCodecMinSaving)
	if o.Device == nil {
		o.Device = CPUDevice()
	}
	o.MaxFrame = cmp.Or(o.MaxFrame, DefaultMaxFrame)
	o.MaxMessage = cmp.Or(o.MaxMessage, o.MaxFrame-msgHeaderSize)
	o.LargeMessage = cmp.Or(o.LargeMessage, o.LocalAggSize/2)
	o.Credits = cmp.Or(o.Credits, DefaultCredits)
	o.MaxChannels = cmp.Or(o.MaxChannels, DefaultMaxChannels)
	o.PendingTimeout = cmp.Or(o.PendingTimeout, DefaultPendingTimeout)
	o.DialTimeout = cmp.Or(o.DialTimeout, DefaultDialTimeout)
}

// Validate reports the first invalid field as a KindQuery error (a bad
// configuration is the user's to fix). Call SetDefaults first.
func (o *Options) Validate() error {
	switch {
	case o.AggSize < minAggSize:
		return nferr.Queryf("shuffle: AggSize %d is below the minimum of %d bytes", o.AggSize, minAggSize)
	case o.LocalAggSize < minAggSize:
		return nferr.Queryf("shuffle: LocalAggSize %d is below the minimum of %d bytes", o.LocalAggSize, minAggSize)
	case o.MaxFrame < o.AggSize || o.MaxFrame < o.LocalAggSize || o.MaxFrame > maxFrameLimit:
		return nferr.Queryf("shuffle: MaxFrame %d must be at least AggSize and LocalAggSize and at most %d", o.MaxFrame, maxFrameLimit)
	case o.MaxMessage < 1 || o.MaxMessage > o.MaxFrame-msgHeaderSize:
		return nferr.Queryf("shuffle: MaxMessage %d must be between 1 and MaxFrame-%d", o.MaxMessage, msgHeaderSize)
	case o.LargeMessage < 1:
		return nferr.Queryf("shuffle: LargeMessage %d must be positive", o.LargeMessage)
	case o.Buffers < 1 || o.Buffers > 1024:
		return nferr.Queryf("shuffle: Buffers %d must be between 1 and 1024", o.Buffers)
	case o.AgentBuffers < 1 || o.AgentBuffers > 1024:
		return nferr.Queryf("shuffle: AgentBuffers %d must be between 1 and 1024", o.AgentBuffers)
	case o.Threads < 1 || o.Threads > 256:
		return nferr.Queryf("shuffle: Threads %d must be between 1 and 256", o.Threads)
	case o.FlushTimeout <= 0:
		return nferr.Queryf("shuffle: FlushTimeout %v must be positive", o.FlushTimeout)
	case o.IdleTimeout <= 0:
		return nferr.Queryf("shuffle: IdleTimeout %v must be positive", o.IdleTimeout)
	case o.Codec >= numCodecs:
		return nferr.Queryf("shuffle: unknown Codec %d", o.Codec)
	case o.CodecMinSaving >= 1:
		return nferr.Queryf("shuffle: CodecMinSaving %v must be below 1", o.CodecMinSaving)
	case o.Credits < o.AggSize || o.Credits < o.LocalAggSize:
		return nferr.Queryf("shuffle: Credits %d must be at least AggSize and LocalAggSize", o.Credits)
	case o.MaxChannels < 1:
		return nferr.Queryf("shuffle: MaxChannels %d must be positive", o.MaxChannels)
	case o.PendingTimeout <= 0 || o.DialTimeout <= 0:
		return nferr.Queryf("shuffle: PendingTimeout and DialTimeout must be positive")
	case o.TLS == nil && o.ClusterKey != nil && len(o.ClusterKey) < minClusterKey:
		return nferr.Queryf("shuffle: ClusterKey has %d bytes, want at least %d", len(o.ClusterKey), minClusterKey)
	}
	return nil
}

// checkSecurity requires agent-to-agent connections to be authenticated, and
// rejects a configuration that is neither secured nor explicitly Insecure.
func (o *Options) checkSecurity() error {
	if o.TLS == nil && o.ClusterKey == nil && !o.Insecure {
		return nferr.Authf("shuffle: agent connections need TLS or a cluster key; set Insecure to run without authentication")
	}
	return nil
}
