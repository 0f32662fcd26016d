package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

func testWorker(id string, cores int, mem int64) NodeInfo {
	return NodeInfo{ID: id, Role: RoleWorker, Cores: cores, Memory: mem, Started: time.UnixMilli(1)}
}

func nodesOf(ps []Placement) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Node.ID
	}
	return out
}

func TestSchedulerBalancesByFreeCores(t *testing.T) {
	s := newScheduler()
	s.update(testWorker("big", 8, 8<<30))
	s.update(testWorker("small", 2, 8<<30))
	s.update(NodeInfo{ID: "st", Role: RoleStorage, Cores: 64, Memory: 1 << 40}) // not a worker
	ps, err := s.place(context.Background(), make([]TaskRequest, 10))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, id := range nodesOf(ps) {
		count[id]++
	}
	// Free cores equalize: big takes 8 before small's 2 are used; both end
	// at -0 / -0 then alternate.
	if count["big"] != 8 || count["small"] != 2 {
		t.Errorf("placement %v, want big 8, small 2", count)
	}
	// Oversubscription when the gang is larger than the cluster.
	ps2, err := s.place(context.Background(), make([]TaskRequest, 2))
	if err != nil || len(ps2) != 2 {
		t.Fatalf("oversubscribed placement: %v %v", ps2, err)
	}
	for _, p := range append(ps, ps2...) {
		s.release(p.id)
		s.release(p.id) // twice is harmless
	}
	for _, l := range s.loads() {
		if l.UsedCores != 0 || l.RunningTasks != 0 || l.UsedMemory != 0 {
			t.Errorf("after release: %+v", l)
		}
	}
}

func TestSchedulerMemoryIsHard(t *testing.T) {
	s := newScheduler()
	s.update(testWorker("a", 4, 4<<30))
	s.update(testWorker("b", 4, 2<<30))
	_, err := s.place(context.Background(), []TaskRequest{{Memory: 5 << 30, Stage: 3}})
	if !nferr.Is(err, nferr.KindResource) || err.Error() != "task of stage 3 needs 5.0 GiB of memory; the largest worker offers 4.0 GiB" {
		t.Errorf("impossible request: %v", err)
	}
	ps, err := s.place(context.Background(), []TaskRequest{{Memory: 3 << 30}, {Memory: 2 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodesOf(ps); got[0] != "a" || got[1] != "b" {
		t.Errorf("memory-driven placement %v, want [a b]", got)
	}
	// A gang that does not fit now waits for a release.
	done := make(chan []Placement)
	go func() {
		p, err := s.place(context.Background(), []TaskRequest{{Memory: 3 << 30}})
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	select {
	case <-done:
		t.Fatal("placed without memory")
	case <-time.After(100 * time.Millisecond):
	}
	s.release(ps[0].id)
	select {
	case p := <-done:
		if p[0].Node.ID != "a" {
			t.Errorf("placed on %s", p[0].Node.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting placement not woken by the release")
	}
	// Waiting is cancellable.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.place(ctx, []TaskRequest{{Memory: 4 << 30}}); !nferr.Is(err, nferr.KindCanceled) {
		t.Errorf("canceled wait: %v", err)
	}
}

func TestSchedulerPinsPrefersAndForgets(t *testing.T) {
	s := newScheduler()
	if _, err := s.place(context.Background(), []TaskRequest{{}}); !nferr.Is(err, nferr.KindUnavailable) {
		t.Errorf("no workers: %v", err)
	}
	s.update(testWorker("a", 4, 1<<30))
	s.update(testWorker("b", 4, 1<<30))
	ps, err := s.place(context.Background(), []TaskRequest{{Node: "b"}, {Prefer: []string{"b"}}, {}})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodesOf(ps); got[0] != "b" || got[1] != "b" || got[2] != "a" {
		t.Errorf("placement %v, want [b b a]", got)
	}
	if _, err := s.place(context.Background(), []TaskRequest{{Node: "zz"}}); !nferr.Is(err, nferr.KindUnavailable) {
		t.Errorf("pinned to a missing worker: %v", err)
	}
	s.remove("b")
	if len(s.loads()) != 1 {
		t.Errorf("b still known")
	}
	for _, p := range ps {
		s.release(p.id) // releasing placements of a removed worker is harmless
	}
	// A worker that announces it is leaving gets no more tasks.
	l := testWorker("a", 4, 1<<30)
	l.Leaving = true
	s.update(l)
	if _, err := s.place(context.Background(), []TaskRequest{{}}); !nferr.Is(err, nferr.KindUnavailable) {
		t.Errorf("placed on a leaving worker: %v", err)
	}
}
