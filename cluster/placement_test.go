package cluster

import (
	"fmt"
	"testing"

	"github.com/nicflow/nicflow/engine/dist"
	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/storage"
)

// TestPlaceByData: a wide stage's tasks go to the workers on the hosts
// holding their row groups; with no preference (one host for all, or no
// row group on a worker's host) they keep the rotation.
func TestPlaceByData(t *testing.T) {
	// Four files of 2 row groups on storage nodes s0..s3 (hosts h0..h3);
	// the scan reads 8 row-group tasks in contiguous blocks of 2 over 4
	// tasks (phys.TaskShare), laid out so that task t's row groups are
	// all on s((t+1)%4).
	var tasks []storage.FileRange
	files := map[string][]string{}
	for i := 0; i < 8; i++ {
		path := fmt.Sprintf("f%d", (i/2+1)%4)
		tasks = append(tasks, storage.FileRange{Path: path, RowGroups: []int{i % 2}})
		files[path] = []string{fmt.Sprintf("s%d", (i/2+1)%4)}
	}
	st := &dist.Stage{ID: 1, Tasks: 4, Root: &phys.PhysNode{Kind: phys.PhysScan, Scan: &phys.ScanOp{Spec: storage.ScanSpec{Table: "t"}, Tasks: tasks}}}
	tables := map[string]*storage.PlacedTable{"t": {Files: files}}
	storageHost := map[string]string{"s0": "h0", "s1": "h1", "s2": "h2", "s3": "h3"}
	w := taskRowGroupHosts(st, tables, storageHost)
	for task, m := range w {
		if want := fmt.Sprintf("h%d", (task+1)%4); m[want] != 2 || len(m) != 1 {
			t.Fatalf("task %d reads %v, want 2 row groups on %s", task, m, want)
		}
	}
	rotation := func(off int) func(int) int { return func(t int) int { return (t + off) % 4 } }
	// Workers on hosts h3, h2, h1, h0: task t's host h(t+1) is worker 2-t mod 4.
	got := placeByData(w, []string{"h3", "h2", "h1", "h0"}, rotation(1))
	for task, wk := range got {
		if want := ((2-task)%4 + 4) % 4; wk != want {
			t.Errorf("task %d on worker %d, want %d (all placements %v)", task, wk, want, got)
		}
	}
	// One host for every worker and storage node: the rotation stands.
	same := []map[string]int{{"h": 2}, {"h": 2}, {"h": 2}, {"h": 2}}
	got = placeByData(same, []string{"h", "h", "h", "h"}, rotation(3))
	for task, wk := range got {
		if wk != (task+3)%4 {
			t.Errorf("one host: task %d on worker %d, want the rotation's %d", task, wk, (task+3)%4)
		}
	}
	// No worker next to the data: no preference at all.
	if got := placeByData(w, []string{"x", "y", "z", "u"}, rotation(0)); got != nil {
		t.Errorf("no co-located worker: placed %v", got)
	}
	// Two workers on h1: one task prefers it, the others fall back to the
	// rotation without sharing a worker.
	got = placeByData(w, []string{"h1", "h1", "a", "b"}, rotation(0))
	seen := map[int]bool{}
	for _, wk := range got {
		if seen[wk] {
			t.Fatalf("two tasks on worker %d: %v", wk, got)
		}
		seen[wk] = true
	}
	if got[0] != 0 && got[0] != 1 {
		t.Errorf("task 0 (row groups on h1) on worker %d: %v", got[0], got)
	}
}

// TestAffinityStart: rendezvous hashing spreads keys over the workers,
// keeps a key's worker while it stays, and moves only the leaving
// worker's keys; busy workers are those whose tasks fill their cores.
func TestAffinityStart(t *testing.T) {
	var ws []NodeInfo
	for i := 1; i <= 64; i++ {
		ws = append(ws, NodeInfo{ID: fmt.Sprintf("worker-%d", i)})
	}
	count := make([]int, len(ws))
	owner := map[string]string{}
	for k := 0; k < 6400; k++ {
		key := fmt.Sprintf("table%d", k)
		i := affinityStart(key, ws)
		if j := affinityStart(key, ws); j != i {
			t.Fatalf("%s: %d then %d", key, i, j)
		}
		count[i]++
		owner[key] = ws[i].ID
	}
	for i, n := range count {
		if n < 50 || n > 160 {
			t.Errorf("worker %s starts %d of 6400 keys, want about 100", ws[i].ID, n)
		}
	}
	// worker-7 leaves: only its keys move.
	rest := append(append([]NodeInfo{}, ws[:6]...), ws[7:]...)
	for key, was := range owner {
		now := rest[affinityStart(key, rest)].ID
		if was != "worker-7" && now != was {
			t.Fatalf("%s moved from %s to %s when worker-7 left", key, was, now)
		}
	}
	busy := busyWorkers([]WorkerLoad{
		{Node: NodeInfo{ID: "a", Cores: 2}, RunningTasks: 1},
		{Node: NodeInfo{ID: "b", Cores: 2}, RunningTasks: 2},
		{Node: NodeInfo{ID: "c"}, RunningTasks: 1},
	})
	if busy["a"] || !busy["b"] || !busy["c"] {
		t.Errorf("busy: %v", busy)
	}
	st := &dist.Stage{ID: 1, Tasks: 1, Root: &phys.PhysNode{Kind: phys.PhysUnion, Inputs: []*phys.PhysNode{
		{Kind: phys.PhysScan, Scan: &phys.ScanOp{Spec: storage.ScanSpec{Table: "orders"}}},
		{Kind: phys.PhysScan, Scan: &phys.ScanOp{Spec: storage.ScanSpec{Table: "customer"}}},
		{Kind: phys.PhysScan, Scan: &phys.ScanOp{Spec: storage.ScanSpec{Table: "orders"}}},
	}}}
	if got := stageTables(st); got != "customer\x00orders" {
		t.Errorf("stageTables: %q", got)
	}
}
