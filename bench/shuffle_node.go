package bench

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
)

// The shuffle benchmark runs each node as its own process (the nicflow
// binary re-executed as the hidden `nicflow bench shuffle-node`, and in
// offload mode also `nicflow agent --control`). The parent drives them with
// JSON lines on stdin and reads JSON lines from stdout:
//
//	parent -> node   {"cmd":"init", ...nodeConfig}
//	node -> parent   {"event":"ready","addr":"127.0.0.1:41234"}  (corun: its agent)
//	parent -> node   {"cmd":"peers","peers":[...]}                (corun)
//	node -> parent   {"event":"armed"}     data generated, endpoints open
//	parent -> node   {"cmd":"go"}
//	node -> parent   {"event":"done","result":{...}}
//	parent closes stdin: the node exits.
//
// An offloaded agent answers {"cmd":"peers"} and {"cmd":"stats"} (its CPU
// time and counters) the same way; see ServeAgentControl.

type controlMsg struct {
	Cmd   string      `json:"cmd,omitempty"`
	Event string      `json:"event,omitempty"`
	Addr  string      `json:"addr,omitempty"`
	Local string      `json:"local,omitempty"`
	Peers []string    `json:"peers,omitempty"`
	Node  *nodeConfig `json:"node,omitempty"`
	// Result of a node's run; Stats and CPU of an agent.
	Result *nodeResult         `json:"result,omitempty"`
	Stats  *shuffle.AgentStats `json:"stats,omitempty"`
	CPUS   float64             `json:"cpu_s,omitempty"`
	Error  string              `json:"error,omitempty"`
	Kind   int                 `json:"kind,omitempty"`
}

// nodeConfig is what a node process needs to know.
type nodeConfig struct {
	Node         int       `json:"node"`
	Nodes        int       `json:"nodes"`
	RanksPerNode int       `json:"ranks_per_node"`
	App          string    `json:"app"`
	Params       appParams `json:"params"`
	Seed         uint64    `json:"seed"`
	Agent        string    `json:"agent"` // corun or offload
	// AgentAddr is the offloaded agent's local address (shm: or unix:).
	AgentAddr string `json:"agent_addr,omitempty"`
	// Listen is where a corun node's agent listens for peers.
	Listen  string          `json:"listen,omitempty"`
	Options shuffleSettings `json:"options"`
	// CPUs pins the process when set.
	CPUs []int `json:"cpus,omitempty"`
}

// shuffleSettings are the shuffle.Options the benchmark varies, in JSON.
type shuffleSettings struct {
	AggSize      int    `json:"agg_size"`
	LocalAggSize int    `json:"local_agg_size,omitempty"`
	Buffers      int    `json:"buffers"`
	Threads      int    `json:"threads"`
	Codec        string `json:"codec"`
	FlushUS      int    `json:"flush_us,omitempty"`
	IdleUS       int    `json:"idle_us,omitempty"`
	// Key, when set, is a base64 cluster key: agent connections use TLS
	// keyed by it instead of running insecure.
	Key string `json:"key,omitempty"`
}

func (s shuffleSettings) options() (shuffle.Options, error) {
	c, err := shuffle.ParseCodec(s.Codec)
	if err != nil {
		return shuffle.Options{}, err
	}
	o := shuffle.Options{AggSize: s.AggSize, LocalAggSize: s.LocalAggSize, Buffers: s.Buffers, Threads: s.Threads, Codec: c, Insecure: true}
	if s.Key != "" {
		key, err := base64.StdEncoding.DecodeString(s.Key)
		if err != nil {
			return o, nferr.Internalf("benchmark cluster key: %v", err)
		}
		o.ClusterKey, o.Insecure = key, false
	}
	o.FlushTimeout = time.Duration(s.FlushUS) * time.Microsecond
	o.IdleTimeout = time.Duration(s.IdleUS) * time.Microsecond
	o.SetDefaults()
	return o, o.Validate()
}

// nodeResult is one node's report.
type nodeResult struct {
	appResult
	Agent *shuffle.AgentStats `json:"agent,omitempty"`
}

type lineIO struct {
	in  *bufio.Scanner
	out io.Writer
	mu  sync.Mutex
}

func newLineIO(in io.Reader, out io.Writer) *lineIO {
	s := bufio.NewScanner(in)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	return &lineIO{in: s, out: out}
}

func (l *lineIO) send(m controlMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return nferr.Internalf("control message: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.out.Write(append(b, '\n'))
	return err
}

// recv reads the next message; io.EOF when the parent closed stdin.
func (l *lineIO) recv() (controlMsg, error) {
	var m controlMsg
	if !l.in.Scan() {
		if err := l.in.Err(); err != nil {
			return m, err
		}
		return m, io.EOF
	}
	if err := json.Unmarshal(l.in.Bytes(), &m); err != nil {
		return m, nferr.Dataf("control message %q: %v", l.in.Text(), err)
	}
	return m, nil
}

func (l *lineIO) expect(cmd string) (controlMsg, error) {
	m, err := l.recv()
	if err != nil {
		return m, err
	}
	if m.Cmd != cmd {
		return m, nferr.Internalf("control: got %q, want %q", m.Cmd, cmd)
	}
	return m, nil
}

// RunShuffleNode is the body of `nicflow bench shuffle-node`: one node of
// the shuffle benchmark, driven by its parent over stdin/stdout.
func RunShuffleNode(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	lio := newLineIO(stdin, stdout)
	defer func() {
		if err != nil {
			k, msg := nferr.Encode(err)
			lio.send(controlMsg{Event: "error", Error: msg, Kind: int(k)})
		}
	}()
	m, err := lio.expect("init")
	if err != nil {
		return err
	}
	cfg := m.Node
	if cfg == nil {
		return nferr.Internalf("control: init without a node config")
	}
	if len(cfg.CPUs) > 0 {
		if err := shuffle.PinProcess(cfg.CPUs); err == nil {
			runtime.GOMAXPROCS(len(cfg.CPUs))
		}
	}
	opts, err := cfg.Options.options()
	if err != nil {
		return err
	}
	var agent *shuffle.Agent
	var client *shuffle.Client
	switch cfg.Agent {
	case "corun":
		peers := make([]string, cfg.Nodes)
		peers[cfg.Node] = cfg.Listen
		agent, err = shuffle.NewAgent(shuffle.AgentConfig{Node: cfg.Node, Peers: peers, Options: opts, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return err
		}
		defer agent.Close()
		if err := lio.send(controlMsg{Event: "ready", Addr: agent.Addr()}); err != nil {
			return err
		}
		pm, err := lio.expect("peers")
		if err != nil {
			return err
		}
		for i, p := range pm.Peers {
			if i != cfg.Node {
				agent.SetPeer(i, p)
			}
		}
		if client, err = agent.Client(); err != nil {
			return err
		}
	case "offload":
		if err := lio.send(controlMsg{Event: "ready"}); err != nil {
			return err
		}
		if client, err = shuffle.Dial(ctx, cfg.AgentAddr, opts); err != nil {
			return err
		}
	default:
		return nferr.Queryf("unknown agent mode %q", cfg.Agent)
	}
	defer client.Close()

	// SIGUSR1 dumps the node's shuffle state to stderr (see NICFLOW_SHUFFLE_STDERR).
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for range usr1 {
			fmt.Fprint(os.Stderr, client.DebugState())
			if agent != nil {
				fmt.Fprint(os.Stderr, agent.DebugState())
			}
		}
	}()
	ranks := cfg.Nodes * cfg.RanksPerNode
	spec := shuffle.UniformSpec(1, cfg.Nodes, cfg.RanksPerNode)
	apps := make([]rankApp, cfg.RanksPerNode)
	eps := make([]*shuffle.Endpoint, cfg.RanksPerNode)
	for i := range apps {
		rank := cfg.Node*cfg.RanksPerNode + i
		if apps[i], err = newRankApp(cfg.App, cfg.Params); err != nil {
			return err
		}
		if err := apps[i].prepare(rank, ranks, cfg.Seed); err != nil {
			return err
		}
		if eps[i], err = client.Open(spec, rank, rank); err != nil {
			return err
		}
	}
	runtime.GC()
	if err := lio.send(controlMsg{Event: "armed"}); err != nil {
		return err
	}
	if _, err := lio.expect("go"); err != nil {
		return err
	}
	// NICFLOW_SHUFFLE_PROFILE=PREFIX writes a CPU profile of each node's
	// run to PREFIX.node<i> (for tuning the shuffle layer).
	if prefix := os.Getenv("NICFLOW_SHUFFLE_PROFILE"); prefix != "" {
		if fh, err := os.Create(fmt.Sprintf("%s.node%d", prefix, cfg.Node)); err == nil {
			if pprof.StartCPUProfile(fh) == nil {
				defer func() { pprof.StopCPUProfile(); fh.Close() }()
			}
		}
	}
	cpu0 := shuffle.ProcessCPU()
	start := time.Now()
	results := make([]appResult, len(apps))
	errs := make([]error, len(apps))
	var wg sync.WaitGroup
	for i := range apps {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rank := cfg.Node*cfg.RanksPerNode + i
			comm := &rankComm{ep: eps[i], open: func(round int) (*shuffle.Endpoint, error) {
				// Channel ids: round r of the run is channel r+1.
				return client.Open(shuffle.UniformSpec(uint64(round+1), cfg.Nodes, cfg.RanksPerNode), rank, rank)
			}}
			results[i], errs[i] = apps[i].run(ctx, comm)
			if errs[i] != nil {
				eps[i].FailSend(errs[i])
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := shuffle.ProcessCPU() - cpu0
	for i, e := range errs {
		if e != nil {
			return nferr.Wrap(nferr.KindInternal, e, "node %d rank %d", cfg.Node, cfg.Node*cfg.RanksPerNode+i)
		}
	}
	var res nodeResult
	for _, r := range results {
		res.Msgs += r.Msgs
		res.Bytes += r.Bytes
		res.RecvMsgs += r.RecvMsgs
		res.CheckA += r.CheckA
		res.CheckB += r.CheckB
	}
	res.ElapsedS = elapsed.Seconds()
	res.WorkerCPU = cpu.Seconds()
	if agent != nil {
		st := agent.Stats()
		res.Agent = &st
	}
	for _, ep := range eps {
		ep.Close()
	}
	if err := lio.send(controlMsg{Event: "done", Result: &res}); err != nil {
		return err
	}
	// Wait for the parent to close stdin: other nodes may still need this
	// node's agent to route their last messages.
	for {
		if _, err := lio.recv(); err != nil {
			return nil
		}
	}
}

// ServeAgentControl drives an agent started by the benchmark (`nicflow
// agent --control`): it reports the agent's address, applies peer lists
// and answers statistics requests until stdin closes.
func ServeAgentControl(ctx context.Context, a *shuffle.Agent, stdin io.Reader, stdout io.Writer) error {
	lio := newLineIO(stdin, stdout)
	if err := lio.send(controlMsg{Event: "ready", Addr: a.Addr(), Local: a.LocalAddr()}); err != nil {
		return err
	}
	for {
		m, err := lio.recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch m.Cmd {
		case "peers":
			for i, p := range m.Peers {
				if i != a.Node() && p != "" {
					if err := a.SetPeer(i, p); err != nil {
						return err
					}
				}
			}
			err = lio.send(controlMsg{Event: "ok"})
		case "stats":
			st := a.Stats()
			err = lio.send(controlMsg{Event: "stats", Stats: &st, CPUS: shuffle.ProcessCPU().Seconds()})
		default:
			err = lio.send(controlMsg{Event: "error", Error: fmt.Sprintf("unknown command %q", m.Cmd)})
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
