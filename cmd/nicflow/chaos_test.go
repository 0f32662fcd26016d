package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestChaos is the short version of `nicflow bench chaos`: TPC-H queries
// at SF 0.01 on 3 workers and 2 storage nodes (every file on both), each
// run once without faults and once under each fault (a worker killed, a
// worker hung, a storage node killed) at a random moment: every answer
// must be right; killed nodes come back and rejoin between queries.
func TestChaos(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("-short, or not Linux: starts and kills processes")
	}
	t.Setenv(testNodeEnv, "1") // the nodes are this test binary
	data := copyTPCH(t, tpchSmallGroups(t, 0.01))
	var out, progress bytes.Buffer
	o := chaosOptions{Dir: data, Workers: 3, Storage: 2, Replication: 2, Faults: chaosFaults,
		Queries: []int{1, 3, 9, 18}, Seed: 3, Progress: &progress}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	err := runChaos(context.Background(), o, &out)
	t.Logf("\n%s%s", progress.String(), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "WRONG") {
		t.Fatal("a wrong answer under faults")
	}
	// Invalid shapes are refused before anything starts.
	for _, bad := range []chaosOptions{
		{Dir: data, Workers: 1, Storage: 1, Replication: 1},
		{Dir: data, Workers: 2, Storage: 1, Replication: 1, Faults: []string{"kill-storage"}},
		{Dir: data, Workers: 2, Storage: 2, Replication: 2, Faults: []string{"unplug"}},
	} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
