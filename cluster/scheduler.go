package cluster

import (
	"context"
	"sort"
	"sync"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// scheduler places tasks on workers from their advertised resources. It
// keeps, per alive worker, the cores and memory reserved by placements that
// have not been released.
//
// Placement is per gang: Place reserves all requests of a call or none, so
// the tasks of a pipelined stage (producers and consumers of one exchange)
// start together and cannot deadlock waiting for each other's slots.
//
//   - Memory is a hard limit: a request goes only where it fits; when no
//     worker has room now, Place waits for releases (or ctx); when no worker
//     could ever hold it, Place fails with KindResource.
//   - Cores are a soft limit: the worker with the most free cores wins
//     (then most free memory, then fewest tasks, then ID), and cores may be
//     oversubscribed when a gang needs more than the cluster has.
//   - A dead worker disappears from the candidates at once (membership
//     event); its reservations are dropped with it.
type scheduler struct {
	mu      sync.Mutex
	workers map[string]*WorkerLoad
	nextID  uint64
	held    map[uint64]heldPlacement
	changed chan struct{} // closed and replaced whenever capacity grows
	// exclude, when set, keeps unpinned tasks off workers it reports
	// (the coordinator's suspects); set once before use.
	exclude func(NodeInfo) bool
}

// WorkerLoad is the scheduler's view of one worker (shown in /status).
type WorkerLoad struct {
	Node         NodeInfo `json:"node"`
	UsedCores    int      `json:"used_cores"`
	UsedMemory   int64    `json:"used_memory"`
	RunningTasks int      `json:"running_tasks"`
}

type heldPlacement struct {
	worker string
	cores  int
	memory int64
}

func newScheduler() *scheduler {
	return &scheduler{workers: map[string]*WorkerLoad{}, held: map[uint64]heldPlacement{}, changed: make(chan struct{})}
}

func (s *scheduler) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// update adds or refreshes a worker.
func (s *scheduler) update(n NodeInfo) {
	if n.Role != RoleWorker {
		return
	}
	if n.Leaving {
		s.remove(n.ID)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workers[n.ID]; ok && w.Node.Started.Equal(n.Started) {
		w.Node = n
	} else {
		// A new worker, or one that restarted under the same ID: its old
		// reservations died with the old process.
		s.dropLocked(n.ID)
		s.workers[n.ID] = &WorkerLoad{Node: n}
	}
	s.signalLocked()
}

// remove forgets a worker that left or failed.
func (s *scheduler) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(id)
	delete(s.workers, id)
	s.signalLocked()
}

func (s *scheduler) dropLocked(id string) {
	for pid, h := range s.held {
		if h.worker == id {
			delete(s.held, pid)
		}
	}
}

// release returns a placement's resources. Releasing twice is harmless.
func (s *scheduler) release(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[id]
	if !ok {
		return
	}
	delete(s.held, id)
	if w, ok := s.workers[h.worker]; ok {
		w.UsedCores -= h.cores
		w.UsedMemory -= h.memory
		w.RunningTasks--
	}
	s.signalLocked()
}

func (s *scheduler) loads() []WorkerLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]WorkerLoad, 0, len(s.workers))
	for _, w := range s.workers {
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node.ID < out[j].Node.ID })
	return out
}

// place reserves a worker for every request, waiting for memory when
// needed. exclude lists workers that must not be chosen (known bad).
func (s *scheduler) place(ctx context.Context, reqs []TaskRequest) ([]Placement, error) {
	for i := range reqs {
		if reqs[i].Cores <= 0 {
			reqs[i].Cores = 1
		}
		if reqs[i].Memory < 0 {
			return nil, nferr.Internalf("task request %d: negative memory %d", i, reqs[i].Memory)
		}
	}
	for {
		s.mu.Lock()
		ps, wait, err := s.tryPlaceLocked(reqs)
		changed := s.changed
		s.mu.Unlock()
		if err != nil || !wait {
			return ps, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nferr.With(nferr.KindCanceled, context.Cause(ctx))
		}
	}
}

// tryPlaceLocked returns the placements, or wait=true when the gang does not
// fit now but could fit later, or an error when it can never fit.
func (s *scheduler) tryPlaceLocked(reqs []TaskRequest) ([]Placement, bool, error) {
	if len(s.workers) == 0 {
		return nil, false, nferr.Unavailablef("no workers in the cluster: start one with `nicflow worker --join <coordinator gossip address>`")
	}
	// Tentative loads, committed only if every request fits.
	type tl struct {
		w            *WorkerLoad
		cores, tasks int
		mem          int64
	}
	tent := make(map[string]*tl, len(s.workers))
	ids := make([]string, 0, len(s.workers))
	for id, w := range s.workers {
		tent[id] = &tl{w: w, cores: w.UsedCores, mem: w.UsedMemory, tasks: w.RunningTasks}
		if s.exclude == nil || !s.exclude(w.Node) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		// Every worker is a suspect: trust them all again rather than
		// refuse the query (see Query.Workers).
		for id := range s.workers {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	chosen := make([]string, len(reqs))
	for i, r := range reqs {
		var cands []string
		if r.Node != "" {
			if _, ok := tent[r.Node]; !ok {
				return nil, false, nferr.Unavailablef("task pinned to worker %s, which is not in the cluster", r.Node)
			}
			cands = []string{r.Node}
		} else {
			cands = ids
		}
		best, fitsEver := "", false
		var bestScore [4]int64
		for _, id := range cands {
			t := tent[id]
			if r.Memory > t.w.Node.Memory {
				continue
			}
			fitsEver = true
			if t.mem+r.Memory > t.w.Node.Memory {
				continue
			}
			pref := int64(0)
			for _, p := range r.Prefer {
				if p == id {
					pref = 1
				}
			}
			score := [4]int64{pref, int64(t.w.Node.Cores - t.cores), t.w.Node.Memory - t.mem, -int64(t.tasks)}
			if best == "" || greater(score, bestScore) {
				best, bestScore = id, score
			}
		}
		if !fitsEver {
			largest := int64(0)
			for _, id := range cands {
				largest = max(largest, tent[id].w.Node.Memory)
			}
			return nil, false, nferr.Resourcef("task of stage %d needs %s of memory; the largest worker offers %s",
				r.Stage, exec.FormatBytes(r.Memory), exec.FormatBytes(largest))
		}
		if best == "" {
			return nil, true, nil
		}
		t := tent[best]
		t.cores += r.Cores
		t.mem += r.Memory
		t.tasks++
		chosen[i] = best
	}
	out := make([]Placement, len(reqs))
	for i, r := range reqs {
		w := s.workers[chosen[i]]
		w.UsedCores += r.Cores
		w.UsedMemory += r.Memory
		w.RunningTasks++
		s.nextID++
		s.held[s.nextID] = heldPlacement{worker: chosen[i], cores: r.Cores, memory: r.Memory}
		out[i] = Placement{Node: w.Node, Request: r, id: s.nextID}
	}
	return out, false, nil
}

func greater(a, b [4]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}
