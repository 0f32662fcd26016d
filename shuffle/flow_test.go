package shuffle

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestExactlyOnceProperty runs random configurations (sizes around every
// threshold: aggregation buffer, large message, agent buffer; thread and
// buffer counts; tiny windows) and checks exactly-once delivery.
func TestExactlyOnceProperty(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	// NICFLOW_SHUFFLE_SEEDS runs more random configurations (stress runs).
	if n, err := strconv.Atoi(os.Getenv("NICFLOW_SHUFFLE_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 99))
		mode := allModes[rng.IntN(len(allModes))]
		agg := 512 << rng.IntN(4)
		opts := Options{
			AggSize:      agg,
			LocalAggSize: 512 << rng.IntN(4),
			Buffers:      1 + rng.IntN(4),
			AgentBuffers: 1 + rng.IntN(3),
			Threads:      1 + rng.IntN(3),
			FlushTimeout: time.Duration(50+rng.IntN(2000)) * time.Microsecond,
			IdleTimeout:  time.Duration(20+rng.IntN(500)) * time.Microsecond,
		}
		opts.LargeMessage = opts.LocalAggSize/4 + rng.IntN(2*opts.LocalAggSize)
		opts.Credits = max(agg, opts.LocalAggSize) * (1 + rng.IntN(4))
		nodes := 1 + rng.IntN(3)
		perNode := 1 + rng.IntN(3)
		maxSize := 1 + rng.IntN(3*max(agg, opts.LocalAggSize))
		msgs := 200 + rng.IntN(800)
		t.Run(fmt.Sprintf("seed%d-%s-%dx%d", seed, mode.name, nodes, perNode), func(t *testing.T) {
			t.Logf("options %+v, messages %d of up to %d bytes", opts, msgs, maxSize)
			c := newCluster(t, nodes, mode, opts)
			runAllToAll(t, c, perNode, msgs, maxSize, uint64(seed))
		})
	}
}

// TestBackPressure: many senders, one slow receiver, windows of two
// frames. Everything arrives, frames were parked on the blocklist, and no
// link ever held more than its window (hold would have failed the link).
func TestBackPressure(t *testing.T) {
	c := newCluster(t, 3, tcpCorun, Options{AggSize: 1024, Buffers: 2, AgentBuffers: 1, Credits: 2048, Threads: 2})
	spec := &Spec{ID: nextChanID(), Senders: []int{0, 1, 1, 2, 2}, Receivers: []int{0}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	xs := make([]*Exchange, 3)
	for i := range xs {
		xs[i], _ = OpenExchange(c.clients[i], spec)
		defer xs[i].Close()
	}
	const perSender = 3000
	var wg sync.WaitGroup
	for s, n := range spec.Senders {
		snd, err := xs[n].Sender(s)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for q := 0; q < perSender; q++ {
				if err := snd.Send(ctx, 0, payloadFor(s, q, 40)); err != nil {
					t.Error(err)
					return
				}
			}
			snd.Close()
		}(s)
	}
	rcv, _ := xs[0].Receiver(0)
	seen := map[[2]int]bool{}
	for i := 0; ; i++ {
		if i%500 == 0 {
			time.Sleep(2 * time.Millisecond) // a slow consumer
		}
		p, err := rcv.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			break
		}
		s, q, err := checkPayload(p)
		if err != nil || seen[[2]int{s, q}] {
			t.Fatalf("message (%d,%d): err %v, duplicate %v", s, q, err, seen[[2]int{s, q}])
		}
		seen[[2]int{s, q}] = true
	}
	wg.Wait()
	if len(seen) != len(spec.Senders)*perSender {
		t.Fatalf("got %d messages, want %d", len(seen), len(spec.Senders)*perSender)
	}
	parks := int64(0)
	for _, a := range c.agents {
		parks += a.Stats().Parks
	}
	if parks == 0 {
		t.Error("no frame was ever parked: back-pressure did not reach the routing threads")
	}
}

// fakeEndpoint is a receiver endpoint fed by hand.
func fakeEndpoint(senders, receivers int) *Endpoint {
	c := &Client{down: make(chan struct{}), recv: map[recvKey]*Endpoint{}, eps: map[*Endpoint]struct{}{}}
	c.opts.SetDefaults()
	spec := &Spec{ID: 5, Senders: make([]int, senders), Receivers: make([]int, receivers)}
	return newEndpoint(c, spec, -1, 0)
}

func msgFrame(body []byte, count int) *frame {
	f := newFrame()
	f.typ, f.count, f.body = frameData, uint32(count), body
	return f
}

func dataMsg(payload string) []byte {
	var h [msgHeaderSize]byte
	putMsgHeader(h[:], len(payload), 0, kindData)
	return append(h[:], payload...)
}

// TestTermination checks the end-of-stream protocol on one receiver:
// counts arriving before data, data before counts, zero-message senders,
// and protocol violations.
func TestTermination(t *testing.T) {
	drain := func(e *Endpoint) ([]string, error) {
		var got []string
		for {
			p, ok, err := e.TryRecv()
			if err != nil {
				return got, err
			}
			if !ok {
				return got, nil
			}
			got = append(got, string(p))
		}
	}
	// Sender 0 announces 2 messages before they arrive; sender 1 sent none.
	e := fakeEndpoint(2, 1)
	e.deliver(msgFrame(appendEOS(nil, 0, 0, 2), 1))
	if got, err := drain(e); err != nil || len(got) != 0 {
		t.Fatalf("early: %v %v", got, err)
	}
	e.deliver(msgFrame(append(dataMsg("a"), appendEOS(nil, 0, 1, 0)...), 2))
	if got, err := drain(e); err != nil || len(got) != 1 || e.Done() {
		t.Fatalf("one of two: %v %v done=%v", got, err, e.Done())
	}
	e.deliver(msgFrame(dataMsg("b"), 1))
	got, err := drain(e)
	if len(got) != 1 || got[0] != "b" || err != io.EOF || !e.Done() {
		t.Fatalf("last: %v %v", got, err)
	}
	// Every sender sent nothing: done at the last end of stream.
	e = fakeEndpoint(3, 1)
	for s := 0; s < 3; s++ {
		e.deliver(msgFrame(appendEOS(nil, 0, s, 0), 1))
	}
	if _, err := drain(e); err != io.EOF {
		t.Fatalf("empty streams: %v", err)
	}
	// More messages than announced.
	e = fakeEndpoint(1, 1)
	e.deliver(msgFrame(append(dataMsg("x"), append(dataMsg("y"), appendEOS(nil, 0, 0, 1)...)...), 3))
	if _, err := drain(e); !nferr.Is(err, nferr.KindData) {
		t.Fatalf("excess messages: %v", err)
	}
	// Two ends of stream from one sender, and one from a sender that does
	// not exist.
	for _, s := range []int{0, 7} {
		e = fakeEndpoint(2, 1)
		e.deliver(msgFrame(append(appendEOS(nil, 0, 0, 5), appendEOS(nil, 0, s, 5)...), 2))
		if _, err := drain(e); !nferr.Is(err, nferr.KindData) {
			t.Fatalf("bad end of stream from %d: %v", s, err)
		}
	}
	// An error message ends the stream with the sender's kind.
	e = fakeEndpoint(2, 1)
	e.deliver(msgFrame(appendError(dataMsg("ok"), 0, errorPayload(1, nferr.Resourcef("out of memory in hash join"))), 2))
	got, err = drain(e)
	if len(got) != 1 || !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "sender 1") {
		t.Fatalf("error: %v %v", got, err)
	}
	if _, _, err2 := e.TryRecv(); err2 != err {
		t.Fatal("the error is not sticky")
	}
}

// TestLateReceiver: senders on another node finish before the receiving
// node opens the exchange; the agent holds the frames until it does.
func TestLateReceiver(t *testing.T) {
	c := newCluster(t, 2, tcpCorun, Options{AggSize: 1024})
	spec := &Spec{ID: nextChanID(), Senders: []int{1}, Receivers: []int{0}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x1, _ := OpenExchange(c.clients[1], spec)
	defer x1.Close()
	s, _ := x1.Sender(0)
	for q := 0; q < 100; q++ {
		if err := s.Send(ctx, 0, payloadFor(0, q, 50)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	time.Sleep(50 * time.Millisecond)
	x0, _ := OpenExchange(c.clients[0], spec)
	defer x0.Close()
	r, _ := x0.Receiver(0)
	n := countMessages(t, ctx, r)
	if n != 100 {
		t.Fatalf("got %d of 100 messages", n)
	}
}

// TestLostPeer: when a node's agent dies mid-stream, receivers waiting for
// its data fail with KindUnavailable instead of hanging.
func TestLostPeer(t *testing.T) {
	c := newCluster(t, 2, tcpCorun, Options{AggSize: 1024})
	spec := &Spec{ID: nextChanID(), Senders: []int{1}, Receivers: []int{0}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x0, _ := OpenExchange(c.clients[0], spec)
	x1, _ := OpenExchange(c.clients[1], spec)
	defer x0.Close()
	s, _ := x1.Sender(0)
	r, _ := x0.Receiver(0)
	s.Send(ctx, 0, []byte("first"))
	s.Flush()
	if p, err := r.Next(ctx); err != nil || string(p) != "first" {
		t.Fatalf("first message: %q %v", p, err)
	}
	c.agents[1].Close()
	_, err := r.Next(ctx)
	if !nferr.Is(err, nferr.KindUnavailable) {
		t.Fatalf("got %v, want KindUnavailable", err)
	}
}

// TestLostWorker: an offload worker that disconnects mid-stream makes its
// senders' receivers fail with KindUnavailable.
func TestLostWorker(t *testing.T) {
	c := newCluster(t, 2, clusterMode{"tcp-unix", "tcp", "unix"}, Options{AggSize: 1024})
	spec := &Spec{ID: nextChanID(), Senders: []int{1}, Receivers: []int{0}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x0, _ := OpenExchange(c.clients[0], spec)
	x1, _ := OpenExchange(c.clients[1], spec)
	defer x0.Close()
	s, _ := x1.Sender(0)
	r, _ := x0.Receiver(0)
	s.Send(ctx, 0, []byte("first"))
	s.Flush()
	if _, err := r.Next(ctx); err != nil {
		t.Fatal(err)
	}
	c.clients[1].Close()
	_, err := r.Next(ctx)
	if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "lost its worker") {
		t.Fatalf("got %v, want KindUnavailable naming the lost worker", err)
	}
}

// TestLargeMessagesByReference: in process, a large payload reaches the
// receiver without being copied.
func TestLargeMessagesByReference(t *testing.T) {
	c := newCluster(t, 2, allModes[0], Options{AggSize: 1024})
	spec := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	ctx := context.Background()
	s, r := openPair(t, c, spec)
	big := payloadFor(0, 1, 100000)
	if err := s.Send(ctx, 0, big); err != nil {
		t.Fatal(err)
	}
	s.Close()
	p, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != len(big) || &p[0] != &big[0] {
		t.Fatal("the large payload was copied")
	}
}

func TestOptionsValidate(t *testing.T) {
	good := DefaultOptions()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Options){
		"AggSize":      func(o *Options) { o.AggSize = 10 },
		"MaxFrame":     func(o *Options) { o.MaxFrame = o.AggSize - 1 },
		"Buffers":      func(o *Options) { o.Buffers = -1 },
		"Threads":      func(o *Options) { o.Threads = 1000 },
		"Credits":      func(o *Options) { o.Credits = 100 },
		"ClusterKey":   func(o *Options) { o.ClusterKey = []byte("short") },
		"FlushTimeout": func(o *Options) { o.FlushTimeout = -1 },
		"Codec":        func(o *Options) { o.Codec = 9 },
	} {
		o := DefaultOptions()
		mut(&o)
		err := o.Validate()
		if !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// TestPendingTimeout: frames for a channel no local task opens are dropped
// after PendingTimeout, and a receiver opening it afterwards gets an error
// instead of waiting forever.
func TestPendingTimeout(t *testing.T) {
	c := newCluster(t, 2, allModes[0], Options{PendingTimeout: 100 * time.Millisecond})
	spec := &Spec{ID: nextChanID(), Senders: []int{1}, Receivers: []int{0}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x1, _ := OpenExchange(c.clients[1], spec)
	defer x1.Close()
	s, _ := x1.Sender(0)
	s.Send(ctx, 0, []byte("lost"))
	s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.agents[0].Stats().Dropped == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	x0, _ := OpenExchange(c.clients[0], spec)
	defer x0.Close()
	r, _ := x0.Receiver(0)
	_, err := r.Next(ctx)
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "PendingTimeout") {
		t.Fatalf("got %v, want a KindResource error naming PendingTimeout", err)
	}
}

// TestChannelIsolation: an exchange whose receiver stops reading fills its
// own windows and buffers only; another exchange on the same agents and
// links runs to completion meanwhile.
func TestChannelIsolation(t *testing.T) {
	for _, mode := range []clusterMode{allModes[0], allModes[2]} {
		t.Run(mode.name, func(t *testing.T) {
			c := newCluster(t, 2, mode, Options{AggSize: 1024, Credits: 4096, AgentBuffers: 1, Buffers: 2})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stalled := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
			healthy := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
			ss, _ := openPair(t, c, stalled) // the receiver is never read
			sendCtx, stopSend := context.WithCancel(ctx)
			sendDone := make(chan error, 1)
			go func() {
				var err error
				for q := 0; err == nil; q++ {
					err = ss.Send(sendCtx, 0, payloadFor(0, q, 100))
				}
				sendDone <- err
			}()
			// Let the stalled channel fill everything it may.
			time.Sleep(100 * time.Millisecond)

			hs, hr := openPair(t, c, healthy)
			go sendPayloads(ctx, hs, 1, 2000, 100, 1)
			if n := countMessages(t, ctx, hr); n != 2000 {
				t.Fatalf("healthy channel got %d of 2000", n)
			}
			stopSend()
			if err := <-sendDone; !nferr.Is(err, nferr.KindCanceled) {
				t.Fatalf("stalled sender ended with %v, want it blocked until canceled", err)
			}
		})
	}
}

// TestLateReceiverUnderBackPressure: a receiver that opens while its
// channel's window is exhausted by frames waiting for it must still get
// its open through (opens are control frames, never queued behind data).
func TestLateReceiverUnderBackPressure(t *testing.T) {
	for _, mode := range []clusterMode{allModes[0], allModes[2]} {
		t.Run(mode.name, func(t *testing.T) {
			c := newCluster(t, 1, mode, Options{AggSize: 1024, Credits: 4096, AgentBuffers: 1, Buffers: 2})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			spec := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{0, 0}}
			x, _ := OpenExchange(c.clients[0], spec)
			defer x.Close()
			s, _ := x.Sender(0)
			r0, _ := x.Receiver(0)
			const n = 2000
			go sendPayloads(ctx, s, 0, n, 60, 2)
			count := func(r *Receiver, got chan<- int) {
				k := 0
				for {
					p, err := r.Next(ctx)
					if err != nil || p == nil {
						break
					}
					k++
				}
				got <- k
			}
			got0 := make(chan int, 1)
			go count(r0, got0)
			time.Sleep(100 * time.Millisecond) // the window fills with frames for receiver 1
			r1, err := x.Receiver(1)
			if err != nil {
				t.Fatal(err)
			}
			got1 := make(chan int, 1)
			go count(r1, got1)
			if a, b := <-got0, <-got1; a != n/2 || b != n/2 {
				t.Fatalf("receivers got %d and %d messages, want %d each", a, b, n/2)
			}
		})
	}
}

// TestChannelPerRound: ranks run rounds, one channel each (as SSSP does),
// with tiny windows and ranks drifting apart by random delays, so that a
// rank's next-round traffic reaches nodes where some ranks are still in the
// previous round.
func TestChannelPerRound(t *testing.T) {
	for _, mode := range []clusterMode{allModes[0], allModes[3]} {
		t.Run(mode.name, func(t *testing.T) {
			const nodes, perNode, rounds, msgs = 3, 2, 6, 300
			c := newCluster(t, nodes, mode, Options{AggSize: 512, Credits: 2048, AgentBuffers: 1, Buffers: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			base := testChanID.Add(rounds)
			ranks := nodes * perNode
			errs := make(chan error, ranks)
			for r := 0; r < ranks; r++ {
				go func(r int) {
					rng := rand.New(rand.NewPCG(uint64(r), 7))
					for round := 0; round < rounds; round++ {
						if rng.IntN(2) == 0 {
							time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
						}
						ep, err := c.clients[r/perNode].Open(UniformSpec(base-uint64(round), nodes, perNode), r, r)
						if err != nil {
							errs <- err
							return
						}
						got := 0
						recv := func() error {
							for {
								_, ok, err := ep.TryRecv()
								if err != nil || !ok {
									return err
								}
								got++
							}
						}
						for q := 0; q < msgs; q++ {
							for {
								ok, err := ep.TrySend(rng.IntN(ranks), payloadFor(r, q, 40))
								if err != nil {
									errs <- err
									return
								}
								if ok {
									break
								}
								if err := recv(); err != nil {
									errs <- err
									return
								}
								in, bufs := ep.Wait()
								select {
								case <-in:
								case <-bufs:
								case <-time.After(time.Millisecond):
								case <-ctx.Done():
									errs <- fmt.Errorf("rank %d round %d: stuck sending: %w", r, round, ctx.Err())
									return
								}
							}
						}
						ep.CloseSend()
						for {
							_, err := ep.Recv(ctx)
							if err == io.EOF {
								break
							}
							if err != nil {
								errs <- fmt.Errorf("rank %d round %d: %w", r, round, err)
								return
							}
							got++
						}
						ep.Close()
					}
					errs <- nil
				}(r)
			}
			for i := 0; i < ranks; i++ {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestRefusedOpen: the agent refuses an endpoint whose spec contradicts the
// channel's (a planner bug); both its sender and its receiver side learn.
func TestRefusedOpen(t *testing.T) {
	c := newCluster(t, 1, allModes[0], Options{AggSize: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := nextChanID()
	good := &Spec{ID: id, Senders: []int{0}, Receivers: []int{0}}
	bad := &Spec{ID: id, Senders: []int{0, 0}, Receivers: []int{0}}
	x, _ := OpenExchange(c.clients[0], good)
	defer x.Close()
	ep, err := c.clients[0].Open(bad, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var sendErr error
	for i := 0; i < 10000 && sendErr == nil; i++ {
		sendErr = ep.Send(ctx, 0, make([]byte, 100))
	}
	if !nferr.Is(sendErr, nferr.KindInternal) || !strings.Contains(sendErr.Error(), "two different specs") {
		t.Fatalf("sender: got %v, want the agent's refusal", sendErr)
	}
	if _, err := ep.Recv(ctx); !nferr.Is(err, nferr.KindInternal) {
		t.Fatalf("receiver: got %v, want the agent's refusal", err)
	}
}

// TestRestartedPeer: a node whose agent restarts at a new address gets new
// channels' frames at once. Frames for its old incarnation, queued on a
// link still dialing the dead address, do not hold the new channel behind
// that dial (SetPeer drops the stale link).
func TestRestartedPeer(t *testing.T) {
	c := newCluster(t, 2, tcpCorun, Options{AggSize: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.agents[1].Close()
	// A sender to the dead node: its link keeps dialing the old address.
	old := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	xo, _ := OpenExchange(c.clients[0], old)
	defer xo.Close()
	so, _ := xo.Sender(0)
	so.Send(ctx, 0, []byte("for the dead"))
	so.Flush()
	time.Sleep(100 * time.Millisecond)

	// The node comes back at another address.
	a1, err := NewAgent(AgentConfig{Node: 1, Peers: []string{c.agents[0].Addr(), "127.0.0.1:0"}, Options: Options{AggSize: 1024, Insecure: true}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close()
	cl1, err := a1.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.agents[0].SetPeer(1, a1.Addr()); err != nil {
		t.Fatal(err)
	}
	spec := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	x0, _ := OpenExchange(c.clients[0], spec)
	x1, _ := OpenExchange(cl1, spec)
	defer x0.Close()
	defer x1.Close()
	s, _ := x0.Sender(0)
	r, _ := x1.Receiver(0)
	start := time.Now()
	s.Send(ctx, 0, []byte("hello again"))
	s.Close()
	if p, err := r.Next(ctx); err != nil || string(p) != "hello again" {
		t.Fatalf("after the restart: %q %v", p, err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("the new incarnation got its frame after %v: it waited behind the dead one's dial", el)
	}
}

// TestRetriedAttemptNoDuplicates: a query attempt that failed leaves a
// sender still running on a worker (hung, then resumed); the retry opens
// the same exchange under a new channel id (engine.ChannelID takes a fresh
// query number per attempt). The retry's receiver gets exactly the retry's
// messages: the old sender's late frames land on the finished old channel
// and are dropped, never counted twice.
func TestRetriedAttemptNoDuplicates(t *testing.T) {
	c := newCluster(t, 2, allModes[0], Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	old := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	retry := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}

	// Attempt 1: the receiver gets a few messages, then the attempt is
	// canceled and its receiver's exchange closed.
	ox0, _ := OpenExchange(c.clients[0], old)
	ox1, _ := OpenExchange(c.clients[1], old)
	os, _ := ox0.Sender(0)
	or, _ := ox1.Receiver(0)
	for q := 0; q < 3; q++ {
		if err := os.Send(ctx, 0, payloadFor(0, q, 64)); err != nil {
			t.Fatal(err)
		}
	}
	for q := 0; q < 3; q++ {
		if p, err := or.Next(ctx); err != nil || p == nil {
			t.Fatalf("attempt 1, message %d: %v", q, err)
		}
	}
	ox1.Close()

	// Attempt 2 runs while the old sender wakes up and sends the rest.
	rs, rr := openPair(t, c, retry)
	const n = 50
	go func() {
		for q := 3; q < n; q++ {
			if os.Send(ctx, 0, payloadFor(0, q, 64)) != nil {
				break
			}
		}
		os.Close()
		ox0.Close()
	}()
	go sendPayloads(ctx, rs, 1, n, 64, 1)
	seen := map[string]bool{}
	for {
		p, err := rr.Next(ctx)
		if err != nil {
			t.Fatalf("attempt 2 after %d messages: %v", len(seen), err)
		}
		if p == nil {
			break
		}
		if binary.LittleEndian.Uint32(p[:4]) != 1 {
			t.Fatalf("attempt 2 received a message of attempt 1")
		}
		if seen[string(p)] {
			t.Fatalf("attempt 2 received a message twice")
		}
		seen[string(p)] = true
	}
	if len(seen) != n {
		t.Fatalf("attempt 2 received %d messages, want %d", len(seen), n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.agents[1].Stats().Dropped == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.agents[1].Stats().Dropped == 0 {
		t.Errorf("the old sender's late frames were not dropped")
	}
}
