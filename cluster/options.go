package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
	"github.com/nicflow/nicflow/storage"
)

// Role is what a node does in the cluster.
type Role uint8

const (
	// RoleCoordinator accepts client queries, plans them and schedules tasks.
	RoleCoordinator Role = iota + 1
	// RoleWorker runs task fragments (a Lovelock "lite compute" node).
	RoleWorker
	// RoleStorage serves table data over Flight (a Lovelock "storage" node).
	RoleStorage
	// RoleClient is not a member: it is the role written into certificates
	// of processes that only talk to the coordinator (nicflow sql --cluster).
	RoleClient
)

var roleNames = [...]string{RoleCoordinator: "coordinator", RoleWorker: "worker", RoleStorage: "storage", RoleClient: "client"}

func (r Role) String() string {
	if int(r) < len(roleNames) && roleNames[r] != "" {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// ParseRole reads "coordinator", "worker", "storage" or "client".
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if n != "" && strings.EqualFold(s, n) {
			return Role(r), nil
		}
	}
	return 0, nferr.Queryf("unknown role %q: want coordinator, worker or storage", s)
}

// MarshalText and UnmarshalText let a Role appear by name in config files.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a role name.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Duration is a time.Duration that reads and writes "1.5s" in config files.
type Duration time.Duration

// MarshalText prints the duration as Go does ("1.5s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses "500ms", "2s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return nferr.Queryf("invalid duration %q: %v", b, err)
	}
	*d = Duration(v)
	return nil
}

// Default ports. Each role on one machine needs its own: the defaults differ
// per role so that one coordinator, one worker and one storage node can share
// a host without flags. 7946 is memberlist's conventional gossip port.
const (
	DefaultCoordinatorGossipPort = 7946
	DefaultWorkerGossipPort      = 7947
	DefaultStorageGossipPort     = 7948
	DefaultClientPort            = 7400 // coordinator control/Flight port (clients connect here)
	DefaultWorkerControlPort     = 7401
	DefaultAdminPortBase         = 7480 // admin port: base + 0 coordinator, +1 worker, +2 storage
)

// Options configure one node of any role. Zero values take the defaults
// documented on each field (SetDefaults fills them); Validate reports the
// first problem naming the field. cmd/nicflow sets them from flags, which
// the NICFLOW_* environment and the config file can also set
// (docs/configuration.md).
type Options struct {
	// Role of the node. Required.
	Role Role `json:"role"`
	// NodeID names the node in membership, errors and metrics. Unique in the
	// cluster. Default: "<role>-<hostname>-<gossip port>".
	NodeID string `json:"node_id"`
	// KeyDir holds the cluster key and CA written by `nicflow cluster init`
	// (or a node directory written by `nicflow cluster cert`). Required: a
	// node without the key cannot join.
	KeyDir string `json:"key_dir"`

	// GossipAddr is where memberlist listens (TCP and UDP). Default
	// "0.0.0.0:<role default port>"; port 0 picks a free port.
	GossipAddr string `json:"gossip_addr"`
	// AdvertiseHost is the address other nodes use to reach this one, for
	// every port. Default: the gossip bind host when it is not a wildcard,
	// else the first non-loopback IPv4 address, else 127.0.0.1.
	AdvertiseHost string `json:"advertise_host"`
	// Join lists gossip addresses (host:port) of nodes already in the
	// cluster. Empty for the first node (usually the coordinator).
	Join []string `json:"join"`
	// JoinTimeout bounds how long StartNode retries joining. Default 30s.
	JoinTimeout Duration `json:"join_timeout"`

	// ControlAddr is where the node's gRPC server listens: the client port
	// (Arrow Flight) on the coordinator, the task control port on workers.
	// Default "0.0.0.0:7400" (coordinator) or "0.0.0.0:7401" (worker); port 0
	// picks a free port. Storage nodes have no control port: leave it empty.
	ControlAddr string `json:"control_addr"`
	// DataAddr is the advertised address of the node's shuffle agent (owned
	// by package shuffle); empty when the node has none.
	DataAddr string `json:"data_addr"`
	// FlightAddr is the advertised address of the node's Flight storage
	// service (owned by package storage); empty when the node has none.
	FlightAddr string `json:"flight_addr"`
	// AdminAddr serves /metrics, /status and /debug/pprof over plain HTTP.
	// Default "127.0.0.1:<7480 + role>": bound to loopback so that only the
	// local machine sees it. "off" disables it.
	AdminAddr string `json:"admin_addr"`

	// Cores this node offers to tasks. Default: GOMAXPROCS.
	Cores int `json:"cores"`
	// Memory in bytes this node offers to tasks (a worker), or that the
	// queries it runs share (the coordinator: admission control, see
	// MaxQueued and QueryMemory; docs/decisions.md D54). Default:
	// exec.DefaultMemoryLimit() (60% of the cgroup or physical memory).
	Memory int64 `json:"memory"`
	// MaxQueued (coordinator) bounds the queries waiting for Memory, and
	// apart from them those waiting for MaxRunning; one more fails at once
	// with a busy error. Default 256.
	MaxQueued int `json:"max_queued"`
	// MaxRunning (coordinator) bounds the queries running on the workers
	// at once; more wait in a queue (state "queued") until one ends. The
	// workers' memory bounds their tasks (they spill), not their CPU: past
	// a few queries per core every query slows and gossip probes go
	// unanswered. 0: four per alive worker core (at least 16); -1: no
	// bound.
	MaxRunning int `json:"max_running"`
	// QueryMemory (coordinator) is what a statement the coordinator runs
	// itself (INSERT, UPDATE, DELETE, COPY, CREATE TABLE AS on its copy of
	// the database) reserves from Memory before it starts, and runs under
	// (it spills beyond). A query run in stages on the workers reserves
	// the least of QueryMemory and RetryBuffer: what the coordinator holds
	// of it is its result, held back while it may be retried. A query
	// that does not fit waits in a queue until it does, or until a
	// sixteenth of Memory (at least 4 MiB) is free. Default: a quarter of
	// Memory; at most Memory.
	QueryMemory int64 `json:"query_memory"`
	// NICBandwidth in bits per second. Default: the link speed of the
	// interface carrying AdvertiseHost (/sys/class/net/*/speed), or 10 Gbit/s
	// when it cannot be read (loopback, virtual interfaces).
	NICBandwidth int64 `json:"nic_bandwidth"`

	// Gossip selects memberlist timing: "lan" (default: probe every 500ms,
	// failure suspected within ~1-3s) or "wan" (memberlist's WAN profile).
	Gossip string `json:"gossip"`
	// HeartbeatInterval is how often a worker reports each running task's
	// statistics to the coordinator. Default 100ms.
	HeartbeatInterval Duration `json:"heartbeat_interval"`
	// HangAfter: when a task's worker has been silent this long (no data,
	// no heartbeat) while the coordinator waited for it, the coordinator
	// pings the worker's gossip agent directly; no answer to two pings over
	// 400ms while two other workers answer within 100ms (else to three over
	// two seconds; each within the gossip probe timeout, 250ms on LAN), and
	// no word from the task meanwhile, means the worker hangs (stopped,
	// frozen, cut off): its tasks fail as unavailable and the query
	// retries without it. A busy or CPU-starved worker answers one of them
	// and is left alone, so a short HangAfter costs pings, not false
	// hangs. Default 200ms (2 heartbeats); at least twice HeartbeatInterval.
	HangAfter Duration `json:"hang_after"`
	// HeartbeatTimeout fails a task whose worker has been silent this long
	// while the coordinator waited for it. Default 5s (10 heartbeats).
	HeartbeatTimeout Duration `json:"heartbeat_timeout"`
	// MaxMessageSize bounds every control-plane message (gRPC frame) in both
	// directions. Default 64 MiB, enough for an 8192-row batch of wide rows.
	MaxMessageSize int `json:"max_message_size"`

	// NoLocalReads turns off short-circuit local reads (storage package,
	// localread.go): a worker then receives every scan over Flight even
	// when it sees the storage node's files (same machine and filesystem),
	// and a storage node refuses to offer them. Default false: workers read
	// co-located files themselves.
	NoLocalReads bool `json:"no_local_reads"`
	// ScanCodec is the compression a worker asks storage nodes to apply to
	// the batches of its Flight scans: "none", "lz4" or "zstd" (Arrow IPC
	// body compression). It trades storage and worker CPU for network
	// bytes: on a slow network (a NIC shared with shuffles, storage across
	// a data-center fabric) it shortens scans several-fold; on loopback it
	// only costs CPU. Default "none".
	ScanCodec string `json:"scan_codec"`
	// ScanMode is how storage nodes serve a worker's scans it does not read
	// locally (storage.ClientOptions.ScanMode): "bytes", the Parquet bytes
	// as stored, decoded by the worker (what a smart NIC's network and
	// cores are for); "rows", the node's own scan, filtered Arrow batches
	// (ScanCodec compresses them); "auto" (default), bytes unless the
	// planner estimates that the scan's filter keeps at most 10% of the
	// rows.
	ScanMode string `json:"scan_mode"`
	// ShuffleCodec compresses the frames a worker's shuffle agent sends to
	// other workers: "none", "s2" or "zstd" (shuffle.Options.Codec;
	// adaptive: data that does not compress is sent as it is). Default
	// "none".
	ShuffleCodec string `json:"shuffle_codec"`
	// SpillDir is where a worker's tasks write what does not fit in their
	// memory budget (hash aggregates and joins spill; engine.FragmentEnv).
	// Default: the OS temporary directory; "off": tasks fail with a memory
	// limit error instead. Leftovers of a killed worker are removed when
	// the worker starts.
	SpillDir string `json:"spill_dir"`

	// QueryRetries is how many more times a coordinator runs a query
	// whose attempt failed because a node died, hung or its connection
	// broke (KindUnavailable; the query's own errors are never retried),
	// each time without the nodes that failed. Default 2; negative: none.
	// A request may lower or raise it (SET query_retries).
	QueryRetries int `json:"query_retries"`
	// RetryBuffer is how many bytes of a query's result the coordinator
	// holds back while the query may still be retried: a result that
	// outgrows it is streamed to the client, and the query is then no
	// longer retried (rows already sent cannot be taken back). Default
	// 64 MiB.
	RetryBuffer int64 `json:"retry_buffer"`
	// SuspectFor is how long a worker whose task failed by its fault
	// (died, hung, broken connection) gets no new tasks, unless it
	// restarts first. Default 30s.
	SuspectFor Duration `json:"suspect_for"`

	// Logger receives the node's logs. Default: slog.Default().
	Logger *slog.Logger `json:"-"`
}

// SetDefaults fills zero fields with their documented defaults.
func (o *Options) SetDefaults() {
	var gossipPort, controlPort, adminPort int
	switch o.Role {
	case RoleCoordinator:
		gossipPort, controlPort, adminPort = DefaultCoordinatorGossipPort, DefaultClientPort, DefaultAdminPortBase
	case RoleWorker:
		gossipPort, controlPort, adminPort = DefaultWorkerGossipPort, DefaultWorkerControlPort, DefaultAdminPortBase+1
	default:
		gossipPort, adminPort = DefaultStorageGossipPort, DefaultAdminPortBase+2
	}
	if o.GossipAddr == "" {
		o.GossipAddr = "0.0.0.0:" + strconv.Itoa(gossipPort)
	}
	if o.ControlAddr == "" && controlPort != 0 {
		o.ControlAddr = "0.0.0.0:" + strconv.Itoa(controlPort)
	}
	if o.AdminAddr == "" {
		o.AdminAddr = "127.0.0.1:" + strconv.Itoa(adminPort)
	}
	if o.AdvertiseHost == "" {
		o.AdvertiseHost = defaultAdvertiseHost(o.GossipAddr)
	}
	if o.JoinTimeout == 0 {
		o.JoinTimeout = Duration(30 * time.Second)
	}
	if o.Cores == 0 {
		o.Cores = runtime.GOMAXPROCS(0)
	}
	if o.Memory == 0 {
		o.Memory = exec.DefaultMemoryLimit()
	}
	if o.NICBandwidth == 0 {
		o.NICBandwidth = guessNICBandwidth(o.AdvertiseHost)
	}
	if o.Gossip == "" {
		o.Gossip = "lan"
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = Duration(100 * time.Millisecond)
	}
	if o.QueryRetries == 0 {
		o.QueryRetries = 2
	}
	if o.RetryBuffer == 0 {
		o.RetryBuffer = 64 << 20
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = 256
	}
	if o.QueryMemory == 0 {
		o.QueryMemory = max(o.Memory/4, 1)
	}
	if o.SuspectFor == 0 {
		o.SuspectFor = Duration(30 * time.Second)
	}
	if o.HangAfter == 0 {
		o.HangAfter = max(Duration(200*time.Millisecond), 2*o.HeartbeatInterval)
	}
	if o.HeartbeatTimeout == 0 {
		o.HeartbeatTimeout = Duration(5 * time.Second)
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports the first invalid field, as a KindQuery error naming it.
// Call it after SetDefaults.
func (o *Options) Validate() error {
	switch o.Role {
	case RoleCoordinator, RoleWorker, RoleStorage:
	default:
		return nferr.Queryf("options: role must be coordinator, worker or storage, not %v", o.Role)
	}
	if o.KeyDir == "" {
		return nferr.Authf("options: key_dir is required: a node without the cluster key cannot join (create one with `nicflow cluster init --dir KEYDIR`)")
	}
	if o.NodeID != "" {
		if len(o.NodeID) > 128 {
			return nferr.Queryf("options: node_id %.20q... is longer than 128 bytes", o.NodeID)
		}
		for _, c := range o.NodeID {
			if c <= ' ' || c == 0x7f {
				return nferr.Queryf("options: node_id %q contains a space or control character", o.NodeID)
			}
		}
	}
	if err := checkHostPort("gossip_addr", o.GossipAddr, false); err != nil {
		return err
	}
	if o.Role == RoleStorage {
		if o.ControlAddr != "" {
			return nferr.Queryf("options: control_addr is not used by storage nodes (their data port is flight_addr)")
		}
	} else if err := checkHostPort("control_addr", o.ControlAddr, false); err != nil {
		return err
	}
	for _, a := range []struct{ name, v string }{{"data_addr", o.DataAddr}, {"flight_addr", o.FlightAddr}} {
		if a.v != "" {
			if err := checkHostPort(a.name, a.v, true); err != nil {
				return err
			}
		}
	}
	if o.AdminAddr != "off" {
		if err := checkHostPort("admin_addr", o.AdminAddr, false); err != nil {
			return err
		}
	}
	if o.QueryRetries > 100 {
		return nferr.Queryf("options: query_retries %d: at most 100", o.QueryRetries)
	}
	if o.RetryBuffer < 0 || o.SuspectFor < 0 {
		return nferr.Queryf("options: retry_buffer and suspect_for must not be negative")
	}
	if err := storage.CheckScanCodec(o.ScanCodec); err != nil {
		return nferr.Queryf("options: scan_codec: %v", err)
	}
	if err := storage.CheckScanMode(o.ScanMode); err != nil {
		return nferr.Queryf("options: scan_mode: %v", err)
	}
	if _, err := shuffle.ParseCodec(o.ShuffleCodec); err != nil {
		return nferr.Queryf("options: shuffle_codec: %v", err)
	}
	for i, j := range o.Join {
		if err := checkHostPort(fmt.Sprintf("join[%d]", i), j, true); err != nil {
			return err
		}
	}
	if o.AdvertiseHost == "" || strings.ContainsAny(o.AdvertiseHost, " /") {
		return nferr.Queryf("options: advertise_host %q is not a host name or IP address", o.AdvertiseHost)
	}
	if ip := net.ParseIP(o.AdvertiseHost); ip != nil && ip.IsUnspecified() {
		return nferr.Queryf("options: advertise_host %s is a wildcard address; give an address other nodes can reach", o.AdvertiseHost)
	}
	if o.Cores < 1 || o.Cores > 1<<16 {
		return nferr.Queryf("options: cores must be between 1 and 65536, not %d", o.Cores)
	}
	if o.Memory < 1<<20 {
		return nferr.Queryf("options: memory must be at least 1 MiB, not %d bytes", o.Memory)
	}
	if o.MaxQueued < 1 {
		return nferr.Queryf("options: max_queued must be at least 1, not %d", o.MaxQueued)
	}
	if o.MaxRunning < -1 {
		return nferr.Queryf("options: max_running must be -1 (no bound), 0 (the workers' cores) or positive, not %d", o.MaxRunning)
	}
	if o.QueryMemory < 1 || o.QueryMemory > o.Memory {
		return nferr.Queryf("options: query_memory %s must be positive and at most memory %s: no query could be given it",
			exec.FormatBytes(o.QueryMemory), exec.FormatBytes(o.Memory))
	}
	if o.NICBandwidth < 1 {
		return nferr.Queryf("options: nic_bandwidth must be positive, not %d", o.NICBandwidth)
	}
	if o.Gossip != "lan" && o.Gossip != "wan" {
		return nferr.Queryf("options: gossip must be lan or wan, not %q", o.Gossip)
	}
	if o.JoinTimeout <= 0 {
		return nferr.Queryf("options: join_timeout must be positive")
	}
	if o.HeartbeatInterval <= 0 || o.HeartbeatTimeout < 2*o.HeartbeatInterval {
		return nferr.Queryf("options: heartbeat_timeout (%v) must be at least twice heartbeat_interval (%v)",
			time.Duration(o.HeartbeatTimeout), time.Duration(o.HeartbeatInterval))
	}
	if o.HangAfter < 2*o.HeartbeatInterval || o.HangAfter > o.HeartbeatTimeout {
		return nferr.Queryf("options: hang_after (%v) must be between twice heartbeat_interval (%v) and heartbeat_timeout (%v)",
			time.Duration(o.HangAfter), time.Duration(o.HeartbeatInterval), time.Duration(o.HeartbeatTimeout))
	}
	// NB: 1 MiB floor so that one default-sized batch of a narrow table fits.
	if o.MaxMessageSize < 1<<20 || o.MaxMessageSize > 1<<30 {
		return nferr.Queryf("options: max_message_size must be between 1 MiB and 1 GiB, not %d", o.MaxMessageSize)
	}
	return nil
}

func checkHostPort(field, v string, needHost bool) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return nferr.Queryf("options: %s %q is not host:port: %v", field, v, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return nferr.Queryf("options: %s %q has an invalid port", field, v)
	}
	if needHost && (host == "" || p == 0) {
		return nferr.Queryf("options: %s %q needs a host and a non-zero port", field, v)
	}
	return nil
}

func defaultAdvertiseHost(bind string) string {
	host, _, err := net.SplitHostPort(bind)
	if err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			return host
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// defaultNICBandwidth is assumed when the link speed cannot be read: 10 Gbit/s
// is the slowest port found on current SmartNICs and DPUs.
const defaultNICBandwidth = 10_000_000_000

// guessNICBandwidth reads the link speed (Mbit/s) of the interface that owns
// host from sysfs.
func guessNICBandwidth(host string) int64 {
	ip := net.ParseIP(host)
	if ip == nil {
		if ips, err := net.LookupIP(host); err == nil && len(ips) > 0 {
			ip = ips[0]
		}
	}
	if ip == nil || ip.IsLoopback() {
		return defaultNICBandwidth
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return defaultNICBandwidth
	}
	for _, inf := range ifs {
		addrs, err := inf.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				b, err := os.ReadFile("/sys/class/net/" + inf.Name + "/speed")
				if err != nil {
					return defaultNICBandwidth
				}
				mbps, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				if err != nil || mbps <= 0 {
					return defaultNICBandwidth
				}
				return mbps * 1_000_000
			}
		}
	}
	return defaultNICBandwidth
}

// ParseBandwidth reads "25Gbit", "100G", "10gbps", "400Mbit" or a plain
// number of bits per second.
func ParseBandwidth(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(t, "ps"), "it"), "b")
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "t"):
		mult, t = 1e12, strings.TrimSuffix(t, "t")
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || f <= 0 {
		return 0, nferr.Queryf("invalid bandwidth %q: want bits per second with an optional k, M, G or T suffix (e.g. 25Gbit)", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatBandwidth prints bits per second ("25 Gbit/s").
func FormatBandwidth(bps int64) string {
	switch {
	case bps >= 1e12 && bps%1e10 == 0:
		return strconv.FormatFloat(float64(bps)/1e12, 'f', -1, 64) + " Tbit/s"
	case bps >= 1e9:
		return strconv.FormatFloat(float64(bps)/1e9, 'f', -1, 64) + " Gbit/s"
	case bps >= 1e6:
		return strconv.FormatFloat(float64(bps)/1e6, 'f', -1, 64) + " Mbit/s"
	}
	return strconv.FormatInt(bps, 10) + " bit/s"
}
