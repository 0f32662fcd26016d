package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	nfexec "github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// LocalOptions configure a local cluster: one coordinator, Workers workers
// and Storage storage nodes as separate processes on one machine, each
// started by re-executing a nicflow binary with its role subcommand.
type LocalOptions struct {
	// Dir is the database directory; the cluster keeps its state under
	// Dir/cluster (keys, logs, ready files). Required.
	Dir string
	// KeyDir is the cluster's key directory. Default Dir/cluster/keys,
	// created with a fresh key and CA when missing.
	KeyDir string
	// Workers and Storage are the numbers of worker and storage nodes.
	// When Dir holds a database (Dir/catalog), the coordinator serves SQL
	// over its catalog (`--dir Dir`) and storage node i serves its own
	// database Dir/cluster/storage-i, into which the coordinator places
	// Dir's tables.
	Workers, Storage int
	// Replication is the coordinator's --replication (default 1).
	Replication int
	// Exe is the nicflow binary to run. Default: this executable.
	Exe string
	// Args, when set, builds the command line of a node (after Exe) from its
	// role and the common flags; tests use it to run a test binary. Default:
	// [role] + common.
	Args func(role Role, common []string) []string
	// Env is added to every child's environment.
	Env []string
	// Extra holds additional flags per role (e.g. --cores for workers).
	Extra map[Role][]string
	// Host is the address every node binds and advertises. Default 127.0.0.1.
	Host string
	// Place, when set, puts each node on a host of its own (an emulated
	// host, bench/emu): given the node's role and ID ("coordinator",
	// "worker-1", "storage-2"), it returns the address the node binds and
	// advertises (instead of Host) and a command prefix that starts a
	// program on that host (the node's command line follows it).
	Place func(role Role, id string) (addr string, wrap []string)
	// AddrFile receives the coordinator's client address. Default
	// Dir/cluster/coordinator.addr.
	AddrFile string
	// StartTimeout bounds the start of every node and the membership
	// convergence. Default 60s.
	StartTimeout time.Duration
	// Out receives progress lines ("started worker-1 (pid 1234)"). Default
	// io.Discard.
	Out io.Writer
	// Restart starts a worker or storage node again (same ID and flags,
	// new ports) when it exits on its own, instead of ending the cluster:
	// the others keep running, and Wait returns only when the coordinator
	// exits or a node fails MaxRestarts times in a row, each within a
	// minute of its start. Default false: Wait returns at the first exit.
	Restart bool
	// MaxRestarts bounds Restart's quick successive restarts of one node.
	// Default 5.
	MaxRestarts int
}

// LocalCluster is a running local cluster.
type LocalCluster struct {
	// CoordinatorAddr is the coordinator's client (Flight) address.
	CoordinatorAddr string
	// KeyDir is the cluster's key directory (clients need it).
	KeyDir string
	// AddrFile holds CoordinatorAddr.
	AddrFile string
	// Nodes are the nodes' advertised information, coordinator first.
	Nodes []NodeInfo

	o       LocalOptions
	spawner *spawner
	mu      sync.Mutex
	procs   []*localProc
	exited  chan *localProc
	stopped bool
}

type localProc struct {
	role    Role
	id      string
	extra   []string // the role-specific flags it was started with
	cmd     *exec.Cmd
	logPath string
	ready   string
	done    chan struct{}
	err     error
	started time.Time
	quick   int // restarts in a row that ended within a minute
}

// StartLocal starts a local cluster and waits until every node has joined.
// On failure it stops what it started and returns an error naming the node
// (with the end of its log).
func StartLocal(ctx context.Context, o LocalOptions) (*LocalCluster, error) {
	if o.Dir == "" {
		return nil, nferr.Queryf("local cluster: --dir is required")
	}
	if o.Workers < 0 || o.Storage < 0 || o.Workers > 256 || o.Storage > 256 {
		return nil, nferr.Queryf("local cluster: --workers and --storage must be between 0 and 256")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = 5
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, nferr.Internalf("local cluster: cannot find this executable: %v", err)
		}
		o.Exe = exe
	}
	if o.Args == nil {
		o.Args = func(r Role, common []string) []string { return append([]string{r.String()}, common...) }
	}
	state := filepath.Join(o.Dir, "cluster")
	if o.KeyDir == "" {
		o.KeyDir = filepath.Join(state, "keys")
	}
	if o.AddrFile == "" {
		o.AddrFile = filepath.Join(state, "coordinator.addr")
	}
	runDir := filepath.Join(state, "run")
	logDir := filepath.Join(state, "logs")
	for _, d := range []string{runDir, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nferr.IOf("local cluster: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(o.KeyDir, ClusterKeyFile)); errors.Is(err, fs.ErrNotExist) {
		if err := InitKeys(o.KeyDir, false); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "created cluster keys in %s\n", o.KeyDir)
	}
	// Stale ready files from an earlier run must not be mistaken for ours.
	old, _ := filepath.Glob(filepath.Join(runDir, "*.json"))
	for _, f := range old {
		os.Remove(f)
	}
	lc := &LocalCluster{KeyDir: o.KeyDir, AddrFile: o.AddrFile, o: o, spawner: newSpawner(), exited: make(chan *localProc, 1+o.Workers+o.Storage)}
	ok := false
	defer func() {
		if !ok {
			lc.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()

	var coordArgs []string
	if _, err := os.Stat(filepath.Join(o.Dir, "catalog")); err == nil {
		coordArgs = []string{"--dir", o.Dir, "--replication", strconv.Itoa(max(1, o.Replication))}
	}
	coord, err := lc.start(RoleCoordinator, "coordinator", coordArgs)
	if err != nil {
		return nil, err
	}
	ci, err := lc.waitReady(ctx, coord)
	if err != nil {
		return nil, err
	}
	lc.CoordinatorAddr = ci.ControlAddr
	lc.Nodes = append(lc.Nodes, ci)
	var started []*localProc
	workerArgs := []string{"--join", ci.GossipAddr}
	workerArgs = append(workerArgs, smallWorkerArgs(o)...)
	for i := 1; i <= o.Workers; i++ {
		p, err := lc.start(RoleWorker, "worker-"+strconv.Itoa(i), workerArgs)
		if err != nil {
			return nil, err
		}
		started = append(started, p)
	}
	for i := 1; i <= o.Storage; i++ {
		id := "storage-" + strconv.Itoa(i)
		p, err := lc.start(RoleStorage, id, []string{"--join", ci.GossipAddr, "--dir", filepath.Join(state, id)})
		if err != nil {
			return nil, err
		}
		started = append(started, p)
	}
	for _, p := range started {
		info, err := lc.waitReady(ctx, p)
		if err != nil {
			return nil, err
		}
		lc.Nodes = append(lc.Nodes, info)
	}
	// Everyone is up; wait until the coordinator sees them all.
	cl, err := Dial(ci.ControlAddr, ClientOptions{KeyDir: o.KeyDir, Name: "nicflow-cluster-local"})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	want := 1 + o.Workers + o.Storage
	if _, err := cl.WaitForMembers(ctx, func(ms []NodeInfo) bool { return countServing(ms) >= want }); err != nil {
		return nil, lc.withExits(nferr.Wrap(nferr.KindUnavailable, err, "local cluster: waiting for %d members", want))
	}
	if err := writeFilesAtomically(filepath.Dir(o.AddrFile), []fileSpec{{filepath.Base(o.AddrFile), []byte(ci.ControlAddr + "\n"), 0o644}}); err != nil {
		return nil, err
	}
	ok = true
	return lc, nil
}

func (lc *LocalCluster) start(role Role, id string, extra []string) (*localProc, error) {
	return lc.spawn(&localProc{role: role, id: id, extra: extra}, os.O_TRUNC)
}

// spawn starts p's process (a new one, or again after it exited).
func (lc *LocalCluster) spawn(p *localProc, logMode int) (*localProc, error) {
	o := lc.o
	role, id, extra := p.role, p.id, p.extra
	host := o.Host
	var wrap []string
	if o.Place != nil {
		host, wrap = o.Place(role, id)
	}
	p.logPath = filepath.Join(o.Dir, "cluster", "logs", id+".log")
	p.ready = filepath.Join(o.Dir, "cluster", "run", id+".json")
	os.Remove(p.ready)
	common := []string{
		"--node-id", id, "--keys", o.KeyDir, "--advertise", host,
		"--gossip", host + ":0", "--admin", host + ":0", "--ready-file", p.ready,
		// NB: the control port on coordinators and workers; the Flight port
		// on storage nodes (their --listen belongs to cmd/nicflow/storage.go).
		"--listen", host + ":0",
	}
	common = append(common, extra...)
	common = append(common, o.Extra[role]...)
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|logMode, 0o644)
	if err != nil {
		return nil, nferr.IOf("local cluster: log file: %v", err)
	}
	argv := slices.Concat(wrap, []string{o.Exe}, o.Args(role, common))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), o.Env...)
	// NB: under the lock from the stopped check to the registration, so
	// that Stop either signals this process or sees it never started.
	lc.mu.Lock()
	if lc.stopped {
		lc.mu.Unlock()
		logf.Close()
		return nil, nferr.Unavailablef("local cluster: stopped before %s started", id)
	}
	pgid := 0
	if len(lc.procs) > 0 {
		pgid = lc.procs[0].cmd.Process.Pid
	}
	cmd.SysProcAttr = childAttr(pgid)
	if err := lc.spawner.start(cmd); err != nil {
		lc.mu.Unlock()
		logf.Close()
		return nil, nferr.IOf("local cluster: starting %s: %v", id, err)
	}
	logf.Close()
	p.cmd, p.err, p.started = cmd, nil, time.Now()
	p.done = make(chan struct{})
	known := false
	for _, q := range lc.procs {
		known = known || q == p
	}
	if !known {
		lc.procs = append(lc.procs, p)
	}
	done := p.done
	lc.mu.Unlock()
	fmt.Fprintf(o.Out, "started %s %s (pid %d), log %s\n", role, id, cmd.Process.Pid, p.logPath)
	go func() {
		err := cmd.Wait()
		lc.mu.Lock()
		p.err = err
		lc.mu.Unlock()
		close(done)
		if !lc.restart(p) {
			lc.exited <- p
		}
	}()
	return p, nil
}

// restart starts p again when the cluster restarts nodes, it is a worker
// or storage node that exited on its own, and it has not failed too often
// in a row; it reports whether it did.
func (lc *LocalCluster) restart(p *localProc) bool {
	lc.mu.Lock()
	stopped := lc.stopped
	lc.mu.Unlock()
	if !lc.o.Restart || stopped || p.role == RoleCoordinator {
		return false
	}
	if time.Since(p.started) < time.Minute {
		p.quick++
	} else {
		p.quick = 0
	}
	if p.quick > lc.o.MaxRestarts {
		fmt.Fprintf(lc.o.Out, "%s %s exited %d times within a minute of its start: not restarting it%s\n", p.role, p.id, p.quick, logTail(p.logPath))
		return false
	}
	fmt.Fprintf(lc.o.Out, "%s %s exited (%v); restarting it\n", p.role, p.id, p.err)
	time.Sleep(min(time.Duration(p.quick)*200*time.Millisecond, 2*time.Second))
	if _, err := lc.spawn(p, os.O_APPEND); err != nil {
		fmt.Fprintf(lc.o.Out, "restarting %s %s: %v\n", p.role, p.id, err)
		return false
	}
	return true
}

func (lc *LocalCluster) waitReady(ctx context.Context, p *localProc) (NodeInfo, error) {
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(p.ready); err == nil {
			var info NodeInfo
			if err := json.Unmarshal(b, &info); err != nil {
				return info, nferr.Dataf("local cluster: ready file %s: %v", p.ready, err)
			}
			return info, nil
		}
		select {
		case <-p.done:
			return NodeInfo{}, nferr.Unavailablef("local cluster: %s %s exited during start (%v)%s", p.role, p.id, p.err, logTail(p.logPath))
		case <-ctx.Done():
			return NodeInfo{}, nferr.Unavailablef("local cluster: %s %s did not become ready within %v%s", p.role, p.id, lc.o.StartTimeout, logTail(p.logPath))
		case <-t.C:
		}
	}
}

func (lc *LocalCluster) withExits(err error) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, p := range lc.procs {
		select {
		case <-p.done:
			return nferr.Wrap(nferr.KindUnavailable, err, "%s %s exited (%v)%s", p.role, p.id, p.err, logTail(p.logPath))
		default:
		}
	}
	return err
}

// Wait blocks until ctx is done or a node exits on its own; it returns an
// error naming such a node.
func (lc *LocalCluster) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case p := <-lc.exited:
		lc.exited <- p // keep it visible to other waiters
		return nferr.Unavailablef("%s %s (pid %d) exited: %v%s", p.role, p.id, p.cmd.Process.Pid, p.err, logTail(p.logPath))
	}
}

// Pids returns the nodes' process IDs by node ID.
func (lc *LocalCluster) Pids() map[string]int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	m := map[string]int{}
	for _, p := range lc.procs {
		m[p.id] = p.cmd.Process.Pid
	}
	return m
}

// Kill sends SIGKILL to one node (tests simulate a crash with it).
func (lc *LocalCluster) Kill(id string) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, p := range lc.procs {
		if p.id == id {
			return p.cmd.Process.Kill()
		}
	}
	return nferr.Queryf("no node %s in this local cluster", id)
}

// Stop terminates every node: SIGTERM to the process group (so the nodes
// leave gracefully), SIGKILL to whatever is left after 10 s. Idempotent.
func (lc *LocalCluster) Stop() error {
	lc.mu.Lock()
	if lc.stopped {
		lc.mu.Unlock()
		return nil
	}
	lc.stopped = true
	procs := append([]*localProc(nil), lc.procs...)
	lc.mu.Unlock()
	defer lc.spawner.stop()
	if len(procs) == 0 {
		return nil
	}
	signalGroup(procs[0].cmd.Process.Pid, procs, syscall.SIGTERM)
	deadline := time.After(10 * time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			signalGroup(procs[0].cmd.Process.Pid, procs, syscall.SIGKILL)
			<-p.done
		}
	}
	for _, p := range procs {
		os.Remove(p.ready)
	}
	return nil
}

// logTail returns the last lines of a log file for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "\n--- last lines of " + path + " ---\n" + strings.Join(lines, "\n")
}

// spawner starts child processes from one goroutine locked to its OS
// thread. NB: Linux delivers Pdeathsig when the *thread* that forked the
// child exits, and the Go runtime may retire idle threads; a thread that
// stays locked for the cluster's lifetime makes "parent died" mean what it
// says.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	res chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		// INVARIANT: never UnlockOSThread: the thread must die with the
		// goroutine only when the cluster is stopped (and its children
		// have been signaled already).
		defer close(s.done)
		for r := range s.reqs {
			r.res <- r.cmd.Start()
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	res := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, res: res}
	return <-res
}

func (s *spawner) stop() {
	select {
	case <-s.done:
	default:
		close(s.reqs)
		<-s.done
	}
}

// WriteReadyFile atomically writes a node's advertised information to path
// (the node commands' --ready-file), so a launcher learns the chosen ports.
func WriteReadyFile(path string, n NodeInfo) error {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return nferr.Internalf("ready file: %v", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nferr.IOf("ready file: %v", err)
	}
	return writeFilesAtomically(dir, []fileSpec{{filepath.Base(path), append(b, '\n'), 0o644}})
}

// countServing counts the members that are up and, for storage nodes,
// advertise their Flight service: a storage node joins gossip first and
// advertises that address a gossip round later, so counting members alone
// races placing tables on them. (Workers that run SQL advertise their
// shuffle agent the same way; the scheduler skips a worker without one.)
func countServing(ms []NodeInfo) int {
	n := 0
	for _, m := range ms {
		switch {
		case m.Leaving:
		case m.Role == RoleStorage && m.FlightAddr == "":
		default:
			n++
		}
	}
	return n
}

// smallWorkerArgs are the flags that keep a local cluster of more workers
// than this machine has CPUs small: each worker offers one core (and runs
// its Go scheduler on one: GOMAXPROCS, from --cores) and an equal share of
// the memory a worker would take alone (exec.DefaultMemoryLimit over the
// workers, at least 64 MiB). Flags the caller gives in Extra win: they come
// later on the command line.
func smallWorkerArgs(o LocalOptions) []string {
	if o.Workers <= runtime.NumCPU() {
		return nil
	}
	share := max(nfexec.DefaultMemoryLimit()/int64(o.Workers), 64<<20)
	return []string{"--cores", "1", "--memory", strconv.FormatInt(share, 10)}
}
