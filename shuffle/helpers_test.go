package shuffle

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cluster is a test cluster of agents in one process.
type cluster struct {
	agents  []*Agent
	clients []*Client
	mem     *MemNetwork
}

var testChanID atomic.Uint64

func nextChanID() uint64 { return testChanID.Add(1) }

type clusterMode struct {
	name      string
	transport string // "mem" or "tcp"
	local     string // "corun", "unix", "shm", "mem"
}

var allModes = []clusterMode{
	{"mem-corun", "mem", "corun"},
	{"tcp-corun", "tcp", "corun"},
	{"tcp-unix", "tcp", "unix"},
	{"tcp-shm", "tcp", "shm"},
}

// newCluster starts n agents and one client per node.
func newCluster(t testing.TB, n int, mode clusterMode, opts Options) *cluster {
	t.Helper()
	c := &cluster{mem: NewMemNetwork()}
	peers := make([]string, n)
	for i := range peers {
		if mode.transport == "mem" {
			peers[i] = fmt.Sprintf("mem:agent%d", i)
		} else if mode.transport != "tcp" {
			peers[i] = mode.transport + ":127.0.0.1:0" // a registered transport
		} else {
			peers[i] = "127.0.0.1:0"
		}
	}
	if opts.TLS == nil && opts.ClusterKey == nil {
		opts.Insecure = true
	}
	dir := t.TempDir()
	// Listen first (port 0), then tell everyone the real addresses.
	for i := 0; i < n; i++ {
		cfg := AgentConfig{Node: i, Peers: peers, Mem: c.mem, Options: opts, Log: testLog(t)}
		switch mode.local {
		case "unix", "shm":
			cfg.Local = "unix:" + filepath.Join(dir, fmt.Sprintf("a%d.sock", i))
		case "mem":
			cfg.Local = fmt.Sprintf("mem:local%d-%p", i, c)
		}
		a, err := NewAgent(cfg)
		if err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		c.agents = append(c.agents, a)
	}
	for i, a := range c.agents {
		for j, b := range c.agents {
			if i != j {
				a.SetPeer(j, b.Addr())
			}
		}
	}
	for i, a := range c.agents {
		var cl *Client
		var err error
		switch mode.local {
		case "corun":
			cl, err = a.Client()
		case "unix":
			cl, err = Dial(context.Background(), a.LocalAddr(), opts)
		case "shm":
			cl, err = Dial(context.Background(), "shm:"+a.LocalAddr()[len("unix:"):], opts)
		case "mem":
			cl, err = Dial(context.Background(), a.LocalAddr(), opts)
		}
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		c.clients = append(c.clients, cl)
	}
	t.Cleanup(c.close)
	return c
}

func (c *cluster) close() {
	for _, cl := range c.clients {
		cl.Close()
	}
	for _, a := range c.agents {
		a.Close()
	}
}

// testLog discards agent logs unless the test runs with -v.
func testLog(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// payloadFor builds a deterministic payload identifying (sender, seq).
func payloadFor(sender, seq, size int) []byte {
	if size < 8 {
		size = 8
	}
	p := make([]byte, size)
	binary.LittleEndian.PutUint32(p[0:4], uint32(sender))
	binary.LittleEndian.PutUint32(p[4:8], uint32(seq))
	for i := 8; i < size; i++ {
		p[i] = byte(sender*31 + seq*7 + i)
	}
	return p
}

// openPair opens spec (one sender on node 0, one receiver on node 1) on
// both nodes and returns its sender and its receiver; the exchanges close
// when the test ends.
func openPair(t testing.TB, c *cluster, spec *Spec) (*Sender, *Receiver) {
	t.Helper()
	x0, err := OpenExchange(c.clients[0], spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x0.Close() })
	x1, err := OpenExchange(c.clients[1], spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x1.Close() })
	s, err := x0.Sender(0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := x1.Receiver(0)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// sendPayloads sends payloads 0..n-1 of size bytes from sender (payloadFor)
// to receivers in turn, message q to receiver q%receivers, and closes s; it
// stops at the first failed Send, leaving s open.
func sendPayloads(ctx context.Context, s *Sender, sender, n, size, receivers int) {
	for q := 0; q < n; q++ {
		if err := s.Send(ctx, q%receivers, payloadFor(sender, q, size)); err != nil {
			return
		}
	}
	s.Close()
}

// countMessages reads r to the end of its stream and returns the number
// of messages; an error fails the test.
func countMessages(t testing.TB, ctx context.Context, r *Receiver) int {
	t.Helper()
	n := 0
	for {
		p, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", n, err)
		}
		if p == nil {
			return n
		}
		n++
	}
}

func checkPayload(p []byte) (sender, seq int, err error) {
	if len(p) < 8 {
		return 0, 0, fmt.Errorf("payload of %d bytes", len(p))
	}
	sender = int(binary.LittleEndian.Uint32(p[0:4]))
	seq = int(binary.LittleEndian.Uint32(p[4:8]))
	for i := 8; i < len(p); i++ {
		if p[i] != byte(sender*31+seq*7+i) {
			return sender, seq, fmt.Errorf("payload of sender %d seq %d corrupt at byte %d", sender, seq, i)
		}
	}
	return sender, seq, nil
}

// rankResult is what one rank received.
type rankResult struct {
	seen map[[2]int]int
	err  error
}

// runAllToAll runs Buddy-style ranks (each both sender and receiver) that
// send msgs messages of random sizes in [0, maxSize) to random receivers,
// using TrySend and draining TryRecv when blocked, then checks that every
// message arrived exactly once at its destination.
func runAllToAll(t testing.TB, c *cluster, perNode, msgs, maxSize int, seed uint64) {
	t.Helper()
	nodes := len(c.clients)
	spec := UniformSpec(nextChanID(), nodes, perNode)
	ranks := nodes * perNode
	// expected[dst][(sender,seq)] = 1
	sentTo := make([][][2]int, ranks)
	results := make([]rankResult, ranks)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for r := 0; r < ranks; r++ {
		ep, err := c.clients[r/perNode].Open(spec, r, r)
		if err != nil {
			t.Fatalf("open rank %d: %v", r, err)
		}
		wg.Add(1)
		go func(r int, ep *Endpoint) {
			defer wg.Done()
			defer ep.Close()
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			seen := map[[2]int]int{}
			drain := func() error {
				for {
					p, ok, err := ep.TryRecv()
					if err != nil {
						return err
					}
					if !ok {
						return nil
					}
					s, q, err := checkPayload(p)
					if err != nil {
						return err
					}
					seen[[2]int{s, q}]++
				}
			}
			var mine [][2]int
			fail := func(err error) {
				results[r] = rankResult{err: err}
			}
			for q := 0; q < msgs; q++ {
				dst := rng.IntN(ranks)
				size := 8 + rng.IntN(maxSize)
				p := payloadFor(r, q, size)
				for {
					ok, err := ep.TrySend(dst, p)
					if err != nil {
						fail(err)
						return
					}
					if ok {
						break
					}
					if err := drain(); err != nil {
						fail(err)
						return
					}
					// Blocked: wait for a buffer to come back or for input.
					inbox, bufs := ep.Wait()
					select {
					case <-inbox:
					case <-bufs:
					case <-time.After(10 * time.Millisecond):
					}
				}
				mu.Lock()
				sentTo[dst] = append(sentTo[dst], [2]int{r, q})
				mu.Unlock()
				mine = append(mine, [2]int{r, q})
			}
			if err := ep.CloseSend(); err != nil {
				fail(err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for {
				p, err := ep.Recv(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					fail(fmt.Errorf("rank %d: %w", r, err))
					return
				}
				s, q, err := checkPayload(p)
				if err != nil {
					fail(err)
					return
				}
				seen[[2]int{s, q}]++
			}
			results[r] = rankResult{seen: seen}
		}(r, ep)
	}
	wg.Wait()
	for r := 0; r < ranks; r++ {
		if results[r].err != nil {
			t.Fatalf("rank %d: %v", r, results[r].err)
		}
		want := sentTo[r]
		if len(results[r].seen) != len(want) {
			t.Errorf("rank %d received %d distinct messages, %d were sent to it", r, len(results[r].seen), len(want))
		}
		for _, k := range want {
			if n := results[r].seen[k]; n != 1 {
				t.Errorf("rank %d: message (sender %d, seq %d) received %d times", r, k[0], k[1], n)
			}
		}
	}
}
