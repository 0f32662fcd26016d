package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestRunGate: at most the bound run; the others wait in arrival order and
// start as places free; a canceled waiter leaves the queue with a canceled
// error; a full queue is a busy error; the default bound is four per
// worker core (at least 16); -1 bounds nothing.
func TestRunGate(t *testing.T) {
	workers := []NodeInfo{{Cores: 1}, {Cores: 2}}
	if b := newRunGate(0, 8).bound(workers); b != 16 {
		t.Fatalf("default bound of 3 cores: %d, want 16", b)
	}
	if b := newRunGate(0, 8).bound([]NodeInfo{{Cores: 4}, {Cores: 4}}); b != 32 {
		t.Fatalf("default bound of 8 cores: %d, want 32", b)
	}
	g := newRunGate(2, 2)
	ctx := context.Background()
	noop := func(bool) {}
	r1, err := g.acquire(ctx, workers, noop)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.acquire(ctx, workers, noop)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 2)
	queued := make(chan bool, 4)
	for i := 3; i <= 4; i++ {
		go func() {
			r, err := g.acquire(ctx, workers, func(q bool) { queued <- q })
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			r()
		}()
		if !<-queued {
			t.Fatal("a waiter was not marked queued")
		}
	}
	if _, err := g.acquire(ctx, workers, noop); !nferr.Is(err, nferr.KindBusy) {
		t.Fatalf("third waiter with max_queued 2: %v, want a busy error", err)
	}
	if run, wait := g.counts(); run != 2 || wait != 2 {
		t.Fatalf("running %d, waiting %d; want 2, 2", run, wait)
	}
	r1()
	r1() // twice: once
	if got := <-order; got != 3 {
		t.Fatalf("query %d started first, want 3 (arrival order)", got)
	}
	if got := <-order; got != 4 {
		t.Fatalf("query %d started second, want 4", got)
	}
	// A canceled waiter leaves the queue.
	r5, _ := g.acquire(ctx, workers, noop)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := g.acquire(cctx, workers, noop); !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("waiting past the deadline: %v, want a canceled error", err)
	}
	r2()
	r5()
	deadline := time.Now().Add(time.Second)
	for run, wait := g.counts(); run != 0 || wait != 0; run, wait = g.counts() {
		if time.Now().After(deadline) {
			t.Fatalf("running %d, waiting %d at the end", run, wait)
		}
		time.Sleep(time.Millisecond)
	}
	// No bound.
	g = newRunGate(-1, 1)
	for i := 0; i < 10; i++ {
		if _, err := g.acquire(ctx, workers, noop); err != nil {
			t.Fatal(err)
		}
	}
}
