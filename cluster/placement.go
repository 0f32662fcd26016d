package cluster

import (
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/nicflow/nicflow/engine/dist"
	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/storage"
	"github.com/zeebo/xxh3"
)

// Tasks placed by data (issue 29, item 4).
//
// A wide stage's task t reads a fixed share of each scan's row groups
// (a contiguous block in file order, phys.TaskShare, or part t of a range
// split), and files are placed on storage nodes in contiguous blocks in
// file order (storage.DB.Place), so with as many tasks as storage nodes a
// task's row groups are mostly on one node. Each row group lives on
// the storage nodes its file is placed on; a worker on the same host as one
// of them reads it without the network (short-circuit local reads), and
// across machines a worker on another host pulls it over the wire. So the
// coordinator gives each task the worker whose host holds most of the task's
// row groups, one task per worker, greedily by the largest share first;
// tasks with no such worker keep the default rotation (docs/cluster.md).

// nodeHost is the host part of a node's gossip address ("" when unknown).
func nodeHost(n NodeInfo) string {
	for _, a := range []string{n.GossipAddr, n.FlightAddr, n.ControlAddr} {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
			return h
		}
	}
	return ""
}

// taskRowGroupHosts counts, for each task of a wide stage, the row groups its
// scans read per host (of the first alive replica of each file).
func taskRowGroupHosts(s *dist.Stage, tables map[string]*storage.PlacedTable, storageHost map[string]string) []map[string]int {
	out := make([]map[string]int, s.Tasks)
	for t := range out {
		out[t] = map[string]int{}
	}
	hostOf := func(table, path string) string {
		pt := tables[table]
		if pt == nil {
			return ""
		}
		for _, id := range pt.Files[path] {
			if h, ok := storageHost[id]; ok {
				return h
			}
		}
		return ""
	}
	s.Root.Walk(func(n *phys.PhysNode) {
		if n.Kind != phys.PhysScan || n.Scan == nil || n.Scan.Replicated {
			return
		}
		for t := 0; t < s.Tasks; t++ {
			var mine []storage.FileRange
			if n.Scan.Range != nil {
				rs, _, err := phys.RangeTasks(n.Scan, t, s.Tasks)
				if err != nil {
					return
				}
				mine = rs
			} else {
				lo, hi := phys.TaskShare(len(n.Scan.Tasks), t, s.Tasks)
				mine = n.Scan.Tasks[lo:hi]
			}
			for _, fr := range mine {
				if h := hostOf(n.Scan.Spec.Table, fr.Path); h != "" {
					out[t][h] += max(len(fr.RowGroups), 1)
				}
			}
		}
	})
	return out
}

// placeByData assigns tasks to workers: task t gets the worker (an index
// into workerHosts) whose host holds most of its row groups, largest shares
// first, one task per worker; def(t) is the worker of a task no host
// prefers (the next free one in rotation order when def's is taken). nil:
// no task's row groups are on any worker's host.
func placeByData(weights []map[string]int, workerHosts []string, def func(t int) int) []int {
	type cand struct{ t, w, n int }
	var cs []cand
	for t, m := range weights {
		for w, h := range workerHosts {
			if n := m[h]; n > 0 && h != "" {
				cs = append(cs, cand{t, w, n})
			}
		}
	}
	if len(cs) == 0 {
		return nil
	}
	// NB: on equal shares (every worker on one host, as in a local
	// cluster) a task keeps its rotation worker, so that small queries
	// still spread over the workers.
	W := len(workerHosts)
	rot := func(c cand) int { return ((c.w-def(c.t))%W + W) % W }
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].n != cs[j].n {
			return cs[i].n > cs[j].n
		}
		return rot(cs[i]) < rot(cs[j])
	})
	out := make([]int, len(weights))
	for i := range out {
		out[i] = -1
	}
	used := make([]bool, len(workerHosts))
	for _, c := range cs {
		if out[c.t] < 0 && !used[c.w] {
			out[c.t], used[c.w] = c.w, true
		}
	}
	for t := range out {
		if out[t] >= 0 {
			continue
		}
		w := def(t)
		for i := 0; i < len(workerHosts) && used[w]; i++ {
			w = (w + 1) % len(workerHosts)
		}
		out[t], used[w] = w, true
	}
	return out
}

// Soft affinity (Trino's soft-affinity scheduling, for caches).
//
// A stage of fewer tasks than workers runs on some of them; which ones
// used to rotate with every query, so on a cluster of many workers a small
// query on a table met a worker that had never read it: the first scan of
// a table on a worker dials the storage node (TLS), asks it for the
// table's files (the local-read handshake) and reads the footers, about
// 15 ms against 0.2 ms warm on a 64-worker local cluster. Now such a
// stage starts at the worker its scanned tables hash to (rendezvous
// hashing on the worker IDs, so a worker joining or leaving moves only its
// own share), and falls back to the rotation when that worker already
// runs as many tasks as it has cores: affinity is a preference, never a
// queue.

// stageTables is the stage's scanned tables, sorted and joined ("" when it
// scans none).
func stageTables(s *dist.Stage) string {
	var names []string
	s.Walk(func(n *phys.PhysNode) {
		if n.Kind == phys.PhysScan && n.Scan != nil {
			names = append(names, n.Scan.Spec.Table)
		}
	})
	sort.Strings(names)
	names = slices.Compact(names)
	return strings.Join(names, "\x00")
}

// affinityStart is the index in workers of the worker with the highest
// rendezvous hash of (key, worker ID).
func affinityStart(key string, workers []NodeInfo) int {
	best, bestH := 0, uint64(0)
	for i, w := range workers {
		if v := xxh3.HashString(key + "\x00" + w.ID); i == 0 || v > bestH {
			best, bestH = i, v
		}
	}
	return best
}

// busyWorkers are the workers whose running tasks already fill their
// cores (the scheduler's view).
func busyWorkers(loads []WorkerLoad) map[string]bool {
	out := make(map[string]bool, len(loads))
	for _, l := range loads {
		out[l.Node.ID] = l.RunningTasks >= max(l.Node.Cores, 1)
	}
	return out
}
