package main

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// The three cluster roles as functions, shared by the role subcommands and
// the tests that run whole clusters in one process.

// coordinatorNode is a running coordinator and what it holds open.
type coordinatorNode struct {
	node   *cluster.Node
	sess   *engine.Session
	runner *cluster.SQLRunner // with a catalog (dir), else nil
}

func (c *coordinatorNode) Close() {
	c.node.Close()
	if c.sess != nil {
		c.sess.Close()
	}
}

// startCoordinatorNode starts a coordinator; with dir it serves SQL over
// the catalog of dir (which it holds open: no other process may open dir
// meanwhile).
func startCoordinatorNode(ctx context.Context, o cluster.Options, dir string, so cluster.SQLOptions, fileAccess string) (*coordinatorNode, error) {
	runners := cluster.RunnerMux{}
	for k, r := range coordinatorRunners {
		runners[k] = r
	}
	c := &coordinatorNode{}
	if dir != "" {
		sess, err := openSession(dir, false, engine.Options{FileAccess: fileAccess})
		if err != nil {
			return nil, err
		}
		c.sess = sess
		r := cluster.NewSQLRunner(sess, so)
		c.runner = r
		runners[cluster.SQLKind] = r
		runners[cluster.PlaceKind] = r
	}
	n, err := cluster.StartCoordinator(ctx, o, runners)
	if err != nil {
		if c.sess != nil {
			c.sess.Close()
		}
		return nil, err
	}
	c.node = n
	return c, nil
}

// startWorkerNode starts a worker with the fragment executor and its
// shuffle agent (listening on o.DataAddr's port when set).
func startWorkerNode(ctx context.Context, o cluster.Options) (*cluster.Node, error) {
	// NB: a worker allocates Arrow buffers as fast as an embedded query
	// (same collector settings: sql.go's gcPercent), bounded by the memory
	// it offers.
	tuneGC(o.Memory)
	if o.SpillDir != "off" {
		dir := o.SpillDir
		if dir == "" {
			dir = os.TempDir()
		}
		// Spill files of a worker killed while spilling.
		exec.CleanSpillLeftovers(dir) //nolint:errcheck // best effort
	}
	sw := cluster.NewSQLWorker()
	execs := cluster.ExecutorMux{}
	for k, e := range workerExecutors {
		execs[k] = e
	}
	execs[cluster.FragmentTaskKind] = sw
	n, err := cluster.StartWorker(ctx, o, execs)
	if err != nil {
		return nil, err
	}
	listen := ""
	if o.DataAddr != "" {
		_, port, err := net.SplitHostPort(o.DataAddr)
		if err != nil {
			n.Close()
			return nil, usagef("--data-addr %q: %v", o.DataAddr, err)
		}
		listen = net.JoinHostPort("0.0.0.0", port)
	}
	if err := sw.Start(n, listen); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// storageNode is a running storage node: its database, Flight service and
// cluster membership.
type storageNode struct {
	node *cluster.Node
	db   *storage.DB
	srv  *storage.Server
	errc chan error
}

func (s *storageNode) Close() {
	s.node.Close()
	s.srv.Stop(5 * time.Second)
	s.db.Close()
}

// startStorageNode opens (or creates) the database in dir, serves it over
// Flight on listen with the cluster's mutual TLS, joins the cluster as a
// storage node and advertises the Flight address.
func startStorageNode(ctx context.Context, o cluster.Options, dir, listen string, so storage.ServerOptions) (*storageNode, error) {
	if dir == "" {
		return nil, usagef("--dir is required")
	}
	if o.NodeID == "" {
		return nil, usagef("--node-id is required for a storage node in a cluster (the catalog records placement by node ID)")
	}
	tuneGC(o.Memory) // decoding scans allocates like a query does
	keys, err := cluster.LoadKeys(o.KeyDir, o.NodeID, cluster.RoleStorage)
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return nil, err
	}
	reportRecovered(db)
	so.NodeID, so.TLS = o.NodeID, keys.ServerTLS()
	so.DisableLocalReads = so.DisableLocalReads || o.NoLocalReads
	// The node's own series (scans served), on its /metrics once it
	// has joined.
	sm := cluster.NewStorageMetrics(o.NodeID)
	so.ScanObserver, so.ReadObserver = sm.ObserveScan, sm.ObserveRead
	if listen == "" {
		listen = net.JoinHostPort(o.AdvertiseHost, "0")
	}
	srv, err := storage.NewServer(db, listen, so)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &storageNode{db: db, srv: srv, errc: make(chan error, 1)}
	go func() { s.errc <- srv.Serve() }()
	n, err := cluster.JoinAsStorage(ctx, o)
	if err != nil {
		srv.Stop(time.Second)
		db.Close()
		return nil, err
	}
	s.node = n
	if err := sm.Register(n); err != nil {
		s.Close()
		return nil, err
	}
	addr := n.Advertised(addrOf(srv.Addr()))
	if o.FlightAddr != "" {
		addr = o.FlightAddr
	}
	if err := n.SetServiceAddrs("", addr); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

type strAddr string

func (a strAddr) Network() string { return "tcp" }
func (a strAddr) String() string  { return string(a) }

func addrOf(s string) net.Addr { return strAddr(s) }

// serveStorage runs a storage node until ctx ends or the Flight service
// stops.
func serveStorage(ctx context.Context, s *storageNode, readyFile string) error {
	defer s.Close()
	if readyFile != "" {
		if err := cluster.WriteReadyFile(readyFile, s.node.Self()); err != nil {
			return err
		}
	}
	select {
	case err := <-s.errc:
		return nferr.With(nferr.KindIO, err)
	case <-ctx.Done():
	case <-s.node.Done():
	}
	return nil
}
