package cluster

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
)

// TestLinkLost: a worker whose control connection dropped (its server
// gone, as when its process is killed) is seen as lost at once, while
// gossip still lists it alive, and Query.Workers leaves it out and makes
// it a suspect; a healthy worker's link, and one idle since it was made
// (reconnects), are not lost.
func TestLinkLost(t *testing.T) {
	tc := startCluster(t, 2)
	c := tc.coord.Coordinator()
	// lost is Query.Workers' test: a link not up that does not reconnect.
	lost := func(n NodeInfo) bool {
		cc := c.linkDown(n)
		return cc != nil && linkLost(cc)
	}
	ws := map[string]NodeInfo{}
	for _, m := range tc.coord.Members() {
		if m.Role == RoleWorker {
			ws[m.ID] = m
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, w := range ws {
		cc, err := c.conn(w)
		if err != nil {
			t.Fatal(err)
		}
		cc.Connect()
		for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
			if !cc.WaitForStateChange(ctx, st) {
				t.Fatalf("link to %s never ready: %v", w.ID, st)
			}
		}
		if lost(w) {
			t.Fatalf("a ready link to %s counts as lost", w.ID)
		}
	}
	// An idle link (gRPC's idle timeout) reconnects: not lost.
	cc, _ := c.conn(ws["w2"])
	cc.Close()
	c.mu.Lock()
	delete(c.conns, "w2")
	c.mu.Unlock()
	cc, _ = c.conn(ws["w2"]) // fresh, idle, never connected
	if st := cc.GetState(); st != connectivity.Idle {
		t.Fatalf("fresh link state %v", st)
	}
	if lost(ws["w2"]) {
		t.Error("an idle link to a live worker counts as lost")
	}
	// w1's server goes away without leaving gossip.
	tc.workers[0].grpcSrv.Stop()
	gone := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !gone; time.Sleep(20 * time.Millisecond) {
		gone = lost(ws["w1"])
	}
	if !gone {
		t.Fatal("the link to a worker whose server stopped is not seen as lost")
	}
	got := (&Query{c: c}).Workers()
	if len(got) != 1 || got[0].ID != "w2" || !c.isSuspect(ws["w1"]) {
		t.Errorf("workers %v (w1 suspect %v), want only w2", got, c.isSuspect(ws["w1"]))
	}
}
