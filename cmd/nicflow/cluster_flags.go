package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// nodeFlags are the flags every cluster role shares (coordinator, worker,
// storage). Role commands call addNodeFlags in init and nodeFlags.options in
// RunE; cmd/nicflow/storage.go uses the same two for `nicflow storage`.
type nodeFlags struct {
	nodeID       string
	keys         string
	gossip       string
	advertise    string
	join         []string
	listen       string
	admin        string
	data         string
	flight       string
	cores        int
	memory       string
	nicBandwidth string
	gossipMode   string
	readyFile    string
	noLocalReads bool
	scanCodec    string
	scanMode     string
	shuffleCodec string
	spillDir     string
	queryRetries int
	maxQueued    int    // coordinator: admission queue bound
	maxRunning   int    // coordinator: queries running on the workers at once
	queryMemory  string // coordinator: a local statement's reservation

	// Timing and limits that rarely need changing (cluster.Options).
	joinTimeout      time.Duration
	heartbeat        time.Duration
	hangAfter        time.Duration
	heartbeatTimeout time.Duration
	suspectFor       time.Duration
	maxMessageSize   string
	retryBuffer      string
}

func addNodeFlags(cmd *cobra.Command, f *nodeFlags, role cluster.Role) {
	fs := cmd.Flags()
	fs.StringVar(&f.nodeID, "node-id", "", "unique node name (default <role>-<hostname>-<gossip port>)")
	fs.StringVar(&f.keys, "keys", "", "cluster key directory from `nicflow cluster init` or `nicflow cluster cert` (required)")
	fs.StringVar(&f.gossip, "gossip", "", "gossip listen address host:port (default 0.0.0.0:7946 coordinator, :7947 worker, :7948 storage)")
	fs.StringVar(&f.advertise, "advertise", "", "address other nodes use to reach this one (default: a non-loopback IPv4 address)")
	fs.StringSliceVar(&f.join, "join", nil, "gossip address(es) of nodes already in the cluster, e.g. 10.0.0.1:7946")
	if role != cluster.RoleStorage {
		def := "0.0.0.0:7401 (task control port)"
		if role == cluster.RoleCoordinator {
			def = "0.0.0.0:7400 (client port)"
		}
		fs.StringVar(&f.listen, "listen", "", "control/gRPC listen address, default "+def)
	}
	adminHelp := `admin HTTP address for /metrics and /status (default 127.0.0.1:748x; "off" disables)`
	if role == cluster.RoleStorage {
		adminHelp = `admin HTTP address for /metrics and /status (default 127.0.0.1:7482 in a cluster, none standalone; "off" disables)`
	}
	fs.StringVar(&f.admin, "admin", "", adminHelp)
	fs.StringVar(&f.data, "data-addr", "", "advertised shuffle agent address host:port")
	if role == cluster.RoleStorage {
		fs.StringVar(&f.flight, "flight-addr", "", "advertised Flight storage address host:port")
	}
	fs.IntVar(&f.cores, "cores", 0, "cores offered to tasks (default GOMAXPROCS)")
	if role == cluster.RoleCoordinator {
		fs.StringVar(&f.memory, "memory", "", "memory shared by the queries the coordinator runs, e.g. 8GiB: a query waits in a queue until its share fits (or a sixteenth of it is free), or until statement_timeout (default 60% of the machine or cgroup)")
		fs.IntVar(&f.maxQueued, "max-queued", 256, "queries that may wait for the coordinator's --memory at once (and, apart, for --max-running); one more fails at once (retry later)")
		fs.IntVar(&f.maxRunning, "max-running", 0, "queries that run on the workers at once; more wait in a queue (0: four per alive worker core, at least 16; -1: no bound)")
		fs.StringVar(&f.queryMemory, "query-memory", "", "memory a statement the coordinator runs itself (INSERT, UPDATE, DELETE, COPY, CREATE TABLE AS) reserves from --memory; a query run on the workers reserves at most --retry-buffer (default: a quarter of --memory)")
	} else {
		fs.StringVar(&f.memory, "memory", "", "memory offered to tasks, e.g. 8GiB (default 60% of the machine or cgroup)")
	}
	fs.StringVar(&f.nicBandwidth, "nic-bandwidth", "", "network bandwidth to advertise, e.g. 25Gbit (default: link speed, else 10Gbit)")
	fs.StringVar(&f.gossipMode, "gossip-profile", "", "gossip timing: lan (default, failures seen in ~1-3 s) or wan")
	fs.StringVar(&f.readyFile, "ready-file", "", "write this node's advertised addresses (JSON) here once it has joined")
	if role == cluster.RoleCoordinator {
		fs.IntVar(&f.queryRetries, "query-retries", 2, "times a query runs again, without the failed nodes, after a node died, hung or became unreachable (0: never)")
	}
	fs.DurationVar(&f.joinTimeout, "join-timeout", 30*time.Second, "how long the node retries joining the cluster through --join")
	fs.StringVar(&f.maxMessageSize, "max-message-size", "64MiB", "largest control-plane message (gRPC frame) in either direction, 1MiB to 1GiB")
	if role != cluster.RoleStorage {
		fs.DurationVar(&f.heartbeat, "heartbeat-interval", 100*time.Millisecond, "how often a worker reports each running task to the coordinator")
	}
	if role == cluster.RoleCoordinator {
		fs.DurationVar(&f.hangAfter, "hang-after", 0, "silence of a task's worker after which the coordinator pings it directly and, without an answer, fails its tasks as hung (default 200ms, or 2 heartbeat intervals)")
		fs.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", 5*time.Second, "silence of a task's worker after which the task fails")
		fs.DurationVar(&f.suspectFor, "suspect-for", 30*time.Second, "how long a worker whose task failed by its fault gets no new tasks (unless it restarts)")
		fs.StringVar(&f.retryBuffer, "retry-buffer", "64MiB", "result bytes held back while a query may still be retried; a larger result streams and is no longer retried")
	}
	switch role {
	case cluster.RoleWorker:
		fs.BoolVar(&f.noLocalReads, "no-local-reads", false, "always receive scans over Flight, even when a storage node's files are visible on this machine")
		fs.StringVar(&f.scanCodec, "scan-codec", "", "compression storage nodes apply to this worker's scans served as rows: none (default), lz4 or zstd; pays on slow networks")
		fs.StringVar(&f.scanMode, "scan-mode", "auto", "how storage nodes serve this worker's scans: bytes (Parquet as stored, decoded here), rows (filtered at the node, sent as Arrow), auto (bytes unless the filter is estimated to keep at most 10% of the rows)")
		fs.StringVar(&f.shuffleCodec, "shuffle-codec", "", "compression of this worker's shuffle frames to other workers: none (default), s2 or zstd")
		fs.StringVar(&f.spillDir, "spill-dir", "", "where tasks write what does not fit in their memory budget (default: the OS temporary directory; off: fail instead)")
	case cluster.RoleStorage:
		fs.BoolVar(&f.noLocalReads, "no-local-reads", false, "do not let co-located workers read this node's files directly (every scan runs here)")
	}
}

// options builds validated cluster options from the flags (set on the
// command line, by NICFLOW_* variables or in the config file: config.go).
func (f *nodeFlags) options(cmd *cobra.Command, role cluster.Role) (cluster.Options, error) {
	o := cluster.Options{Role: role}
	fs := cmd.Flags()
	changed := fs.Changed
	setIfChanged(fs, "node-id", &o.NodeID, f.nodeID)
	setIfChanged(fs, "keys", &o.KeyDir, f.keys)
	setIfChanged(fs, "gossip", &o.GossipAddr, f.gossip)
	setIfChanged(fs, "advertise", &o.AdvertiseHost, f.advertise)
	setIfChanged(fs, "listen", &o.ControlAddr, f.listen)
	setIfChanged(fs, "admin", &o.AdminAddr, f.admin)
	setIfChanged(fs, "data-addr", &o.DataAddr, f.data)
	setIfChanged(fs, "flight-addr", &o.FlightAddr, f.flight)
	setIfChanged(fs, "gossip-profile", &o.Gossip, f.gossipMode)
	setIfChanged(fs, "scan-codec", &o.ScanCodec, f.scanCodec)
	setIfChanged(fs, "scan-mode", &o.ScanMode, f.scanMode)
	setIfChanged(fs, "shuffle-codec", &o.ShuffleCodec, f.shuffleCodec)
	setIfChanged(fs, "spill-dir", &o.SpillDir, f.spillDir)
	setIfChanged(fs, "join", &o.Join, f.join)
	setIfChanged(fs, "no-local-reads", &o.NoLocalReads, f.noLocalReads)
	setIfChanged(fs, "cores", &o.Cores, f.cores)
	for _, d := range []struct {
		name string
		dst  *cluster.Duration
		v    time.Duration
	}{{"join-timeout", &o.JoinTimeout, f.joinTimeout}, {"heartbeat-interval", &o.HeartbeatInterval, f.heartbeat},
		{"hang-after", &o.HangAfter, f.hangAfter}, {"heartbeat-timeout", &o.HeartbeatTimeout, f.heartbeatTimeout},
		{"suspect-for", &o.SuspectFor, f.suspectFor}} {
		if changed(d.name) {
			if d.v < 0 {
				return o, usagef("--%s: want a duration such as 2s (0: the default)", d.name)
			}
			*d.dst = cluster.Duration(d.v) // 0: SetDefaults fills it
		}
	}
	if changed("max-message-size") {
		n, err := exec.ParseBytes(f.maxMessageSize)
		if err != nil || n > 1<<30 {
			return o, usagef("--max-message-size %q: want a size from 1MiB to 1GiB", f.maxMessageSize)
		}
		o.MaxMessageSize = int(n)
	}
	if changed("retry-buffer") {
		n, err := exec.ParseBytes(f.retryBuffer)
		if err != nil {
			return o, usagef("--retry-buffer: %v", err)
		}
		o.RetryBuffer = n
	}
	if changed("query-retries") {
		if f.queryRetries < 0 || f.queryRetries > 100 {
			return o, usagef("--query-retries: want 0 to 100")
		}
		o.QueryRetries = f.queryRetries
		if f.queryRetries == 0 {
			o.QueryRetries = -1
		}
	}
	if changed("memory") {
		n, err := exec.ParseBytes(f.memory)
		if err != nil {
			return o, usagef("--memory: %v", err)
		}
		o.Memory = n
	}
	if changed("max-running") {
		if f.maxRunning < -1 {
			return o, usagef("--max-running must be -1 (no bound), 0 (the workers' cores) or positive, got %d", f.maxRunning)
		}
		o.MaxRunning = f.maxRunning
	}
	if changed("max-queued") {
		if f.maxQueued < 1 {
			return o, usagef("--max-queued must be at least 1, got %d", f.maxQueued)
		}
		o.MaxQueued = f.maxQueued
	}
	if changed("query-memory") {
		n, err := exec.ParseBytes(f.queryMemory)
		if err != nil || n <= 0 {
			return o, usagef("--query-memory %q: want a size such as 256MiB", f.queryMemory)
		}
		o.QueryMemory = n
	}
	if changed("nic-bandwidth") {
		n, err := cluster.ParseBandwidth(f.nicBandwidth)
		if err != nil {
			return o, usagef("--nic-bandwidth: %v", err)
		}
		o.NICBandwidth = n
	}
	if o.KeyDir == "" {
		return o, usagef("--keys is required: the cluster key directory (create one with `nicflow cluster init --dir KEYDIR`)")
	}
	o.SetDefaults() // the logger: slog's default, set up by config.go
	if o.QueryMemory > o.Memory && role == cluster.RoleCoordinator {
		return o, usagef("--query-memory %s is more than --memory %s: no statement could be given it", exec.FormatBytes(o.QueryMemory), exec.FormatBytes(o.Memory))
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// setIfChanged sets *dst to v when the flag name was given on the command
// line: flags override the config file only where the user set them.
func setIfChanged[T any](fs *pflag.FlagSet, name string, dst *T, v T) {
	if fs.Changed(name) {
		*dst = v
	}
}

// serveNode writes the ready file and runs until ctx ends (Ctrl-C, SIGTERM)
// or the node stops; it then leaves the cluster gracefully.
func serveNode(ctx context.Context, n *cluster.Node, readyFile string) error {
	defer n.Close()
	self := n.Self()
	fmt.Fprintf(os.Stderr, "nicflow %s %s: gossip %s", self.Role, self.ID, self.GossipAddr)
	if self.ControlAddr != "" {
		fmt.Fprintf(os.Stderr, ", control %s", self.ControlAddr)
	}
	if self.AdminAddr != "" {
		fmt.Fprintf(os.Stderr, ", admin http://%s/status", self.AdminAddr)
	}
	fmt.Fprintf(os.Stderr, "\n  offering %d cores and %s of memory (this machine: %s)\n", self.Cores, exec.FormatBytes(self.Memory), exec.SystemMemory())
	if readyFile != "" {
		if err := cluster.WriteReadyFile(readyFile, self); err != nil {
			return err
		}
		defer os.Remove(readyFile)
	}
	select {
	case <-ctx.Done():
	case <-n.Done():
	}
	return nil
}

// clientFlags locate a coordinator: --cluster ADDR with --keys KEYDIR, or
// --dir DIR of a `nicflow cluster local` cluster (DIR/cluster/coordinator.addr
// and DIR/cluster/keys).
type clientFlags struct {
	addr string
	keys string
	dir  string
}

func addClientFlags(cmd *cobra.Command, f *clientFlags) {
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "cluster", "", "coordinator client address host:port")
	fs.StringVar(&f.keys, "keys", "", "cluster key directory (default: DIR/cluster/keys with --dir)")
	fs.StringVar(&f.dir, "dir", "", "directory of a `nicflow cluster local` cluster (finds the address and keys)")
}

// dial connects to the coordinator the flags name.
func (f *clientFlags) dial() (*cluster.Client, string, error) {
	addr, keys := f.addr, f.keys
	if f.dir != "" {
		if addr == "" {
			b, err := os.ReadFile(filepath.Join(f.dir, "cluster", "coordinator.addr"))
			if err != nil {
				return nil, "", nferr.Unavailablef("no local cluster running in %s (%v): start one with `nicflow cluster local --dir %s`", f.dir, err, f.dir)
			}
			addr = strings.TrimSpace(string(b))
		}
		if keys == "" {
			keys = filepath.Join(f.dir, "cluster", "keys")
		}
	}
	if addr == "" {
		return nil, "", usagef("give --cluster ADDR (with --keys KEYDIR) or --dir DIR of a local cluster")
	}
	if keys == "" {
		return nil, "", usagef("--keys is required with --cluster: the cluster key directory")
	}
	c, err := cluster.Dial(addr, cluster.ClientOptions{KeyDir: keys})
	return c, addr, err
}
