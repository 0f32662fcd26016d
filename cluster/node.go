package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Services are the role-specific implementations a node runs.
type Services struct {
	// Runner handles client requests on a coordinator. Required for
	// RoleCoordinator.
	Runner QueryRunner
	// Executor runs tasks on a worker. Required for RoleWorker.
	Executor Executor
}

// Node is one running nicflow process in the cluster: membership, its
// control gRPC server (coordinator or worker services), the admin HTTP
// server and its metrics.
type Node struct {
	opts    Options
	keys    *Keys
	log     *slog.Logger
	started time.Time

	selfMu sync.Mutex
	self   NodeInfo

	members  *membership
	metrics  *nodeMetrics
	grpcSrv  *grpc.Server
	ctlLis   net.Listener
	adminSrv *http.Server
	adminMux *http.ServeMux

	worker *worker
	coord  *Coordinator

	stopOnce sync.Once
	stopped  chan struct{}
}

// StartNode starts a node of any role and joins the cluster: it validates
// opts, loads the keys, opens the ports, starts gossip and contacts the
// seeds in opts.Join. It returns once the node has joined (or is the first
// node). Close (graceful) or the returned node's context end stop it.
//
// Coordinators need svc.Runner, workers svc.Executor; storage nodes need
// neither (the Flight storage service is started by package storage, which
// then advertises its address with Node.SetServiceAddrs).
func StartNode(ctx context.Context, opts Options, svc Services) (*Node, error) {
	opts.SetDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	switch opts.Role {
	case RoleCoordinator:
		if svc.Runner == nil {
			return nil, nferr.Internalf("coordinator needs a QueryRunner")
		}
	case RoleWorker:
		if svc.Executor == nil {
			return nil, nferr.Internalf("worker needs an Executor")
		}
	}
	if opts.NodeID == "" {
		opts.NodeID = defaultNodeID(opts.Role, opts.GossipAddr)
	}
	keys, err := LoadKeys(opts.KeyDir, opts.NodeID, opts.Role)
	if err != nil {
		return nil, err
	}
	n := &Node{opts: opts, keys: keys, log: opts.Logger.With("node", opts.NodeID), started: time.Now(), stopped: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			n.shutdown(false)
		}
	}()
	n.self = NodeInfo{
		ID: opts.NodeID, Role: opts.Role, Cores: opts.Cores, Memory: opts.Memory, NICBandwidth: opts.NICBandwidth,
		DataAddr: opts.DataAddr, FlightAddr: opts.FlightAddr, Started: n.started.Truncate(time.Millisecond),
	}
	if opts.ControlAddr != "" {
		n.ctlLis, err = net.Listen("tcp", opts.ControlAddr)
		if err != nil {
			return nil, nferr.Unavailablef("control port %s: %v", opts.ControlAddr, err)
		}
		n.self.ControlAddr = n.Advertised(n.ctlLis.Addr())
	}
	n.metrics = newNodeMetrics(n.self)
	if opts.AdminAddr != "off" {
		lis, err := n.startAdmin(opts.AdminAddr)
		if err != nil {
			return nil, err
		}
		n.self.AdminAddr = lis.Addr().String()
	}
	if n.ctlLis != nil {
		n.grpcSrv = grpc.NewServer(n.serverOptions()...)
		switch opts.Role {
		case RoleCoordinator:
			if n.coord, err = newCoordinator(n, svc.Runner); err != nil {
				return nil, err
			}
			n.coord.register(n.grpcSrv)
		case RoleWorker:
			n.worker = newWorker(n, svc.Executor)
			n.worker.register(n.grpcSrv)
		}
	}

	gc, err := gossipConfig(&n.opts, keys, slogWriter{n.log})
	if err != nil {
		return nil, err
	}
	n.members, err = newMembership(gc, n.self, n.log)
	if err != nil {
		return nil, err
	}
	n.members.subscribe(n.onMemberEvent)
	if err := n.members.start(gc); err != nil {
		return nil, err
	}
	n.metrics.registerGossip(n.self, &n.members.gossip)
	n.selfMu.Lock()
	n.self.GossipAddr = n.members.ml.LocalNode().Address()
	n.selfMu.Unlock()
	if n.grpcSrv != nil {
		go func() {
			if err := n.grpcSrv.Serve(n.ctlLis); err != nil {
				n.log.Debug("control server stopped", "err", err)
			}
		}()
	}
	if err := n.members.join(opts.Join, time.Duration(opts.JoinTimeout), ctx.Done()); err != nil {
		return nil, err
	}
	ok = true
	n.log.Info("node started", "role", opts.Role, "gossip", n.self.GossipAddr, "control", n.self.ControlAddr, "admin", n.self.AdminAddr)
	go func() {
		select {
		case <-ctx.Done():
			n.Close()
		case <-n.stopped:
		}
	}()
	return n, nil
}

// StartCoordinator starts a coordinator node serving clients with runner.
func StartCoordinator(ctx context.Context, opts Options, runner QueryRunner) (*Node, error) {
	opts.Role = RoleCoordinator
	return StartNode(ctx, opts, Services{Runner: runner})
}

// StartWorker starts a worker node running tasks with executor.
func StartWorker(ctx context.Context, opts Options, executor Executor) (*Node, error) {
	opts.Role = RoleWorker
	return StartNode(ctx, opts, Services{Executor: executor})
}

// JoinAsStorage makes a storage process a cluster member: gossip, metrics
// and the admin port. The storage package serves Flight itself (with
// node.Keys().ServerTLS()) and advertises it in opts.FlightAddr or later
// with SetServiceAddrs.
func JoinAsStorage(ctx context.Context, opts Options) (*Node, error) {
	opts.Role = RoleStorage
	return StartNode(ctx, opts, Services{})
}

func defaultNodeID(role Role, gossipAddr string) string {
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i > 0 {
		host = host[:i]
	}
	if host == "" {
		host = "node"
	}
	_, port, _ := net.SplitHostPort(gossipAddr)
	if port == "" || port == "0" {
		var b [3]byte
		rand.Read(b[:])
		port = hex.EncodeToString(b[:])
	}
	return role.String() + "-" + host + "-" + port
}

// Advertised maps a listener address to the address other nodes should
// dial: the advertise host when the listener is bound to a wildcard, the
// bound host otherwise. Storage and shuffle use it for their own ports.
func (n *Node) Advertised(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = n.opts.AdvertiseHost
	}
	return net.JoinHostPort(host, port)
}

// SetServiceAddrs advertises (or changes) the node's shuffle agent and
// Flight storage addresses; other members see them within a gossip round.
// Empty strings leave an address unchanged.
func (n *Node) SetServiceAddrs(dataAddr, flightAddr string) error {
	for _, a := range []struct{ f, v string }{{"data address", dataAddr}, {"flight address", flightAddr}} {
		if a.v != "" {
			if err := checkHostPort(a.f, a.v, true); err != nil {
				return err
			}
		}
	}
	n.selfMu.Lock()
	if dataAddr != "" {
		n.self.DataAddr = dataAddr
	}
	if flightAddr != "" {
		n.self.FlightAddr = flightAddr
	}
	meta, err := encodeMeta(n.self)
	n.selfMu.Unlock()
	if err != nil {
		return err
	}
	n.members.setMeta(meta)
	if err := n.members.ml.UpdateNode(5 * time.Second); err != nil {
		return nferr.Unavailablef("advertising new addresses: %v", err)
	}
	return nil
}

// Self is this node's advertised information.
func (n *Node) Self() NodeInfo {
	n.selfMu.Lock()
	defer n.selfMu.Unlock()
	return n.self
}

// ID is this node's ID.
func (n *Node) ID() string { return n.opts.NodeID }

// Keys are this node's security material (TLS configurations for storage
// and shuffle connections).
func (n *Node) Keys() *Keys { return n.keys }

// Logger is the node's logger (tagged with the node ID).
func (n *Node) Logger() *slog.Logger { return n.log }

// Metrics is the node's Prometheus registry; other layers register their
// collectors on it so they appear on /metrics.
func (n *Node) Metrics() *prometheus.Registry { return n.metrics.reg }

// Members returns the alive members (including this node), sorted by role
// then ID.
func (n *Node) Members() []NodeInfo { return n.members.list() }

// Member returns the alive member with the given ID.
func (n *Node) Member(id string) (NodeInfo, bool) { return n.members.get(id) }

// Subscribe calls fn for every later membership event, in order, on one
// goroutine shared by all subscribers (fn must not block for long). The
// returned function unsubscribes.
func (n *Node) Subscribe(fn func(MemberEvent)) func() { return n.members.subscribe(fn) }

// Coordinator returns the coordinator service (nil on other roles).
func (n *Node) Coordinator() *Coordinator { return n.coord }

// WaitMembers waits until cond holds for the alive members, polling every
// 50 ms, or ctx ends.
func (n *Node) WaitMembers(ctx context.Context, cond func([]NodeInfo) bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if cond(n.Members()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nferr.Unavailablef("waiting for cluster members (have %d): %v", len(n.Members()), context.Cause(ctx))
		case <-n.stopped:
			return nferr.Unavailablef("node %s stopped", n.opts.NodeID)
		case <-t.C:
		}
	}
}

// Status is the node's state as /status shows it.
func (n *Node) Status() NodeStatus {
	st := NodeStatus{Self: n.Self(), Uptime: time.Since(n.started).Round(time.Second).String(), Members: n.Members()}
	if n.worker != nil {
		st.Tasks = n.worker.running()
	}
	if n.coord != nil {
		st.Queries = n.coord.runningProgress()
		st.Load = n.coord.sched.loads()
	}
	return st
}

// Done is closed when the node has stopped.
func (n *Node) Done() <-chan struct{} { return n.stopped }

// Close leaves the cluster gracefully: running queries and tasks are
// canceled, members are told of the departure, the ports close.
func (n *Node) Close() error {
	n.shutdown(true)
	return nil
}

// crash stops the node as a killed process would look to the others: no
// goodbye, connections dropped. Tests use it to simulate failures.
func (n *Node) crash() { n.shutdown(false) }

func (n *Node) shutdown(graceful bool) {
	n.stopOnce.Do(func() {
		if !graceful {
			// As a killed process: connections drop first, nobody is told.
			if n.grpcSrv != nil {
				n.grpcSrv.Stop()
			}
			if n.members != nil && n.members.ml != nil {
				n.members.crash()
			}
		}
		if n.coord != nil {
			n.coord.close()
		}
		if n.worker != nil {
			n.worker.close(graceful)
		}
		if graceful {
			if n.members != nil && n.members.ml != nil {
				n.selfMu.Lock()
				n.self.Leaving = true
				meta, err := encodeMeta(n.self)
				n.selfMu.Unlock()
				if err == nil {
					n.members.setMeta(meta)
					n.members.ml.UpdateNode(500 * time.Millisecond) //nolint:errcheck // best effort: the leave follows
				}
				n.members.leave(time.Second)
			}
			if n.grpcSrv != nil {
				stopped := make(chan struct{})
				go func() { n.grpcSrv.GracefulStop(); close(stopped) }()
				select {
				case <-stopped:
				case <-time.After(2 * time.Second):
					n.grpcSrv.Stop()
				}
			}
		}
		if n.members != nil && n.members.ml == nil {
			n.members.stopDispatch()
		}
		if n.grpcSrv == nil && n.ctlLis != nil {
			n.ctlLis.Close()
		}
		n.stopAdmin()
		close(n.stopped)
		n.log.Info("node stopped", "graceful", graceful)
	})
}

func (n *Node) onMemberEvent(ev MemberEvent) {
	n.metrics.memberEvents.WithLabelValues(ev.Type.String()).Inc()
	counts := map[Role]int{RoleCoordinator: 0, RoleWorker: 0, RoleStorage: 0}
	for _, m := range n.members.list() {
		counts[m.Role]++
	}
	for r, c := range counts {
		n.metrics.members.WithLabelValues(r.String()).Set(float64(c))
	}
	if ev.Node.ID != n.opts.NodeID {
		switch ev.Type {
		case EventJoin:
			n.log.Info("member joined", "member", ev.Node.ID, "role", ev.Node.Role, "addr", ev.Node.GossipAddr)
		case EventLeave:
			n.log.Info("member left", "member", ev.Node.ID, "role", ev.Node.Role)
		case EventFail:
			n.log.Warn("member failed", "member", ev.Node.ID, "role", ev.Node.Role, "addr", ev.Node.GossipAddr)
		}
	}
	if n.coord != nil {
		n.coord.onMemberEvent(ev)
	}
	if n.worker != nil {
		n.worker.onMemberEvent(ev)
	}
}

// keepalive: a half-open connection (peer powered off, cable pulled) is
// detected within ~10 s even without traffic; memberlist and task
// heartbeats usually notice sooner.
var (
	kaClient = keepalive.ClientParameters{Time: 5 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}
	kaServer = keepalive.ServerParameters{Time: 5 * time.Second, Timeout: 5 * time.Second}
	kaPolicy = keepalive.EnforcementPolicy{MinTime: 2 * time.Second, PermitWithoutStream: true}
)

func (n *Node) serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(credentials.NewTLS(n.keys.ServerTLS())),
		grpc.MaxRecvMsgSize(n.opts.MaxMessageSize),
		grpc.MaxSendMsgSize(n.opts.MaxMessageSize),
		grpc.KeepaliveParams(kaServer),
		grpc.KeepaliveEnforcementPolicy(kaPolicy),
		// NB: a peer that connects and sends nothing (or garbage) is dropped
		// after 5 s of handshake.
		grpc.ConnectionTimeout(5 * time.Second),
	}
}

// dialOptions are used for every gRPC connection a nicflow process opens
// to a nicflow port (coordinator to worker, client to coordinator).
func dialOptions(keys *Keys, maxMsg int) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(keys.ClientTLS())),
		grpc.WithKeepaliveParams(kaClient),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
