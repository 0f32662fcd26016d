package dist

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Held outputs (adaptive execution, adaptive.go).
//
// A held stage (StageOut.Kind exec.ExchangeHeld) sends its output nowhere:
// each stream of each task keeps its batches in the HeldStore of the node
// that ran it, and the task's output row count is what the coordinator
// re-plans with. A later wave's stage reading a held node (RemoteOp.Held)
// runs task t on the node holding part t and takes stream s's batches
// back (once: taking removes them). Nothing crosses the network until the
// re-planned wave sends the rows where its plan wants them, so a build
// side computed first costs no extra hop.
//
// Invariants: a part becomes visible only once its stream ended without
// error (a failed task leaves nothing); a store holds at most its limit in
// bytes and refuses more with a resource error (the coordinator then runs
// the query's static plan instead: adaptivity never makes a query fail);
// parts nobody took (a query that failed between waves) are dropped after
// HeldTTL.

// HeldTTL is how long a held part waits to be read before it is dropped.
var HeldTTL = 10 * time.Minute

// HeldStore keeps held parts on one node (one per process: DefaultHeld).
type HeldStore struct {
	mu    sync.Mutex
	parts map[heldKey]*heldStream
	limit int64
	used  atomic.Int64
}

type heldKey struct {
	key          string
	task, stream int
}

type heldStream struct {
	recs  []arrow.RecordBatch
	bytes int64
	at    time.Time
}

// NewHeldStore returns a store holding at most limit bytes (<= 0: 1 GiB).
func NewHeldStore(limit int64) *HeldStore {
	if limit <= 0 {
		limit = 1 << 30
	}
	return &HeldStore{parts: map[heldKey]*heldStream{}, limit: limit}
}

// DefaultHeld is the process's store (workers and in-process runs).
var DefaultHeld = NewHeldStore(0)

// SetLimit changes the store's byte limit (a worker: a share of --memory).
func (h *HeldStore) SetLimit(limit int64) {
	if limit > 0 {
		h.mu.Lock()
		h.limit = limit
		h.mu.Unlock()
	}
}

// Used is the bytes the store holds now.
func (h *HeldStore) Used() int64 { return h.used.Load() }

// Parts is the number of parts waiting to be read.
func (h *HeldStore) Parts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.parts)
}

func (h *HeldStore) reserve(n int64) error {
	h.mu.Lock()
	limit := h.limit
	h.mu.Unlock()
	if h.used.Add(n) > limit {
		h.used.Add(-n)
		return nferr.Resourcef("adaptive execution: held output exceeds the node's limit of %s", exec.FormatBytes(limit))
	}
	return nil
}

func (h *HeldStore) put(k heldKey, s *heldStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweepLocked()
	if old := h.parts[k]; old != nil {
		old.release(h)
	}
	s.at = time.Now()
	h.parts[k] = s
	// NB: a part nobody takes (its query failed between waves) goes once
	// its time is up, even if no other query holds anything after it.
	time.AfterFunc(HeldTTL+time.Second, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.sweepLocked()
	})
}

// sweepLocked drops the parts older than HeldTTL.
func (h *HeldStore) sweepLocked() {
	now := time.Now()
	for k, old := range h.parts {
		if now.Sub(old.at) > HeldTTL {
			delete(h.parts, k)
			old.release(h)
		}
	}
}

func (h *HeldStore) take(k heldKey) *heldStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.parts[k]
	delete(h.parts, k)
	return s
}

// Drop removes every part whose name starts with prefix (a query that
// ended without reading them).
func (h *HeldStore) Drop(prefix string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, s := range h.parts {
		if strings.HasPrefix(k.key, prefix) {
			delete(h.parts, k)
			s.release(h)
		}
	}
}

func (s *heldStream) release(h *HeldStore) {
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
	h.used.Add(-s.bytes)
	s.bytes = 0
}

// holdFragment runs a held stage's task: every stream's batches go to the
// node's store under the fragment's key.
func holdFragment(env *exec.Env, f *Fragment, store *HeldStore, ops []exec.Operator, ctr *FragmentCounters) error {
	sch := phys.ColumnsSchema(f.Root.Columns)
	streams := make([]*heldStream, len(ops))
	errs := make([]error, len(ops))
	hists := make([][]int64, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		streams[i] = &heldStream{}
		var hist *keyHist
		// NB: a key column the partitioner cannot hash gets no histogram
		// (no skew split); the rows are held as ever.
		if len(f.Out.HistKeys) > 0 {
			if p, err := exec.NewHashPartitioner(sch, f.Out.HistKeys, 1); err == nil {
				hists[i] = make([]int64, phys.HistBuckets)
				hist = &keyHist{p: p, counts: hists[i]}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer op.Close()
			errs[i] = holdStream(env, op, sch, store, streams[i], ctr, hist)
		}()
	}
	wg.Wait()
	if len(f.Out.HistKeys) > 0 && hists[0] != nil {
		sum := make([]int64, phys.HistBuckets)
		for _, h := range hists {
			for j, c := range h {
				sum[j] += c
			}
		}
		ctr.Hist = sum
	}
	for _, err := range errs {
		if err != nil {
			for _, s := range streams {
				s.release(store)
			}
			return err
		}
	}
	for i, s := range streams {
		store.put(heldKey{f.Out.Held, f.Task, i}, s)
	}
	return nil
}

// keyHist counts rows by the high bits of their key hash (HeldPart.Hist).
type keyHist struct {
	p      *exec.HashPartitioner
	counts []int64
}

func (k *keyHist) add(b *exec.Batch) {
	for _, h := range k.p.Hash(b) {
		k.counts[h>>(64-phys.HistBits)]++
	}
}

func holdStream(env *exec.Env, op exec.Operator, sch *arrow.Schema, store *HeldStore, s *heldStream, ctr *FragmentCounters, hist *keyHist) error {
	if err := op.Open(env); err != nil {
		return err
	}
	for {
		b, err := op.Next()
		if err != nil || b == nil {
			return err
		}
		d := exec.Compact(env.Alloc, b)
		if hist != nil {
			hist.add(d)
		}
		rec := array.NewRecordBatch(sch, d.Cols, int64(d.N))
		var n int64
		for _, c := range d.Cols {
			n += exec.ArraySize(c)
			c.Release()
		}
		if err := store.reserve(n); err != nil {
			rec.Release()
			return err
		}
		s.recs = append(s.recs, rec)
		s.bytes += n
		ctr.Out.Rows.Add(int64(d.N))
		ctr.Out.Batches.Add(1)
	}
}

// heldReaders takes the parts a held node's task reads from the store.
func heldReaders(store *HeldStore, n *phys.PhysNode, task int, schema *arrow.Schema) ([]exec.Operator, error) {
	ops := make([]exec.Operator, 0, n.Streams)
	for s := 0; s < n.Streams; s++ {
		hs := store.take(heldKey{n.Remote.Held, task, s})
		if hs == nil {
			phys.CloseAll(ops)
			return nil, nferr.Unavailablef("adaptive execution: held output %s part %d stream %d is not on this node (did the node restart?)", n.Remote.Held, task, s)
		}
		src, err := exec.NewBatchSource(schema, hs.recs...)
		hs.release(store)
		if err != nil {
			phys.CloseAll(ops)
			return nil, err
		}
		ops = append(ops, src)
	}
	return ops, nil
}
