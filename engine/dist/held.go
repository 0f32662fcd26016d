package dist

import (
	"os"
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
// memory, and a stream that would pass it writes the rest of its batches,
// in order, to a spill file (exec.SpillFileWriter) in the store's spill
// directory under the task's spill directory root; with spilling off
// ("off") or a spill write failing (a full disk) the task fails with a
// resource error and the coordinator runs the query's static plan instead:
// adaptivity never makes a query fail; parts nobody took (a query that
// failed between waves) are dropped, their files removed, after HeldTTL.
// A part's memory is released and its file removed once, by whoever takes
// it out of the store (a reader, Drop, the TTL sweep, a replacing put).

// HeldTTL is how long a held part waits to be read before it is dropped.
var HeldTTL = 10 * time.Minute

// HeldStore keeps held parts on one node (one per process: DefaultHeld).
type HeldStore struct {
	mu     sync.Mutex
	parts  map[heldKey]*heldStream
	limit  int64
	used   atomic.Int64
	spills map[string]*exec.Spill // by root directory
}

type heldKey struct {
	key          string
	task, stream int
}

type heldStream struct {
	recs  []arrow.RecordBatch
	bytes int64 // of recs, reserved in the store
	// w writes the batches after recs once the store is full; file is
	// the finished file (nil: the stream fit in memory).
	w    *exec.SpillFileWriter
	file *exec.SpillFile
	at   time.Time
}

// NewHeldStore returns a store holding at most limit bytes (<= 0: 1 GiB).
func NewHeldStore(limit int64) *HeldStore {
	if limit <= 0 {
		limit = 1 << 30
	}
	return &HeldStore{parts: map[heldKey]*heldStream{}, limit: limit, spills: map[string]*exec.Spill{}}
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

// Spilled is the bytes ever written to the store's spill files.
func (h *HeldStore) Spilled() int64 { return h.sumSpills((*exec.Spill).Written) }

// OnDisk is the bytes the store's spill files hold now.
func (h *HeldStore) OnDisk() int64 { return h.sumSpills((*exec.Spill).OnDisk) }

func (h *HeldStore) sumSpills(f func(*exec.Spill) int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, sp := range h.spills {
		n += f(sp)
	}
	return n
}

// spill is the store's spill space under root ("" the OS temporary
// directory; "off": none, nil).
func (h *HeldStore) spill(root string) *exec.Spill {
	if root == "off" {
		return nil
	}
	if root == "" {
		root = os.TempDir()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	sp := h.spills[root]
	if sp == nil {
		sp = exec.NewSpill(root, "held", 0)
		h.spills[root] = sp
	}
	return sp
}

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
		return nferr.Resourcef("adaptive execution: held output exceeds the node's limit of %s in memory and spilling is off", exec.FormatBytes(limit))
	}
	return nil
}

func (h *HeldStore) put(k heldKey, s *heldStream) {
	h.mu.Lock()
	gone := h.sweepLocked()
	if old := h.parts[k]; old != nil {
		gone = append(gone, old)
	}
	s.at = time.Now()
	h.parts[k] = s
	h.mu.Unlock()
	releaseAll(h, gone)
	// NB: a part nobody takes (its query failed between waves) goes once
	// its time is up, even if no other query holds anything after it.
	time.AfterFunc(HeldTTL+time.Second, func() {
		h.mu.Lock()
		gone := h.sweepLocked()
		h.mu.Unlock()
		releaseAll(h, gone)
	})
}

// sweepLocked takes out the parts older than HeldTTL; the caller releases
// them after unlocking (removing files under the lock would stall every
// task of the node that holds or takes a part).
func (h *HeldStore) sweepLocked() []*heldStream {
	now := time.Now()
	var gone []*heldStream
	for k, old := range h.parts {
		if now.Sub(old.at) > HeldTTL {
			delete(h.parts, k)
			gone = append(gone, old)
		}
	}
	return gone
}

func releaseAll(h *HeldStore, ss []*heldStream) {
	for _, s := range ss {
		s.release(h)
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
	var gone []*heldStream
	for k, s := range h.parts {
		if strings.HasPrefix(k.key, prefix) {
			delete(h.parts, k)
			gone = append(gone, s)
		}
	}
	h.mu.Unlock()
	releaseAll(h, gone)
}

// release frees the stream's memory and removes its spill file (the
// caller owns s: it is out of the store or never went in).
func (s *heldStream) release(h *HeldStore) {
	s.releaseMemory(h)
	if s.w != nil {
		s.w.Abort()
		s.w = nil
	}
	if s.file != nil {
		s.file.Remove()
		s.file = nil
	}
}

func (s *heldStream) releaseMemory(h *HeldStore) {
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
	h.used.Add(-s.bytes)
	s.bytes = 0
}

// finish completes the stream's spill file, if it has one.
func (s *heldStream) finish() error {
	if s.w == nil {
		return nil
	}
	f, err := s.w.Finish()
	s.w = nil
	s.file = f
	return err
}

// holdFragment runs a held stage's task: every stream's batches go to the
// node's store under the fragment's key.
// Batches past the store's memory limit go to a spill file per stream
// under spillDir (FragmentEnv.SpillDir).
func holdFragment(env *exec.Env, f *Fragment, store *HeldStore, spillDir string, ops []exec.Operator, ctr *FragmentCounters) error {
	sch := phys.ColumnsSchema(f.Root.Columns)
	sp := store.spill(spillDir)
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
			errs[i] = holdStream(env, op, sch, store, sp, streams[i], ctr, hist)
			if errs[i] == nil {
				errs[i] = streams[i].finish()
			}
		}()
	}
	wg.Wait()
	for _, s := range streams {
		if s.file != nil {
			ctr.HeldSpilled.Add(s.file.Bytes())
			ctr.HeldSpillFiles.Add(1)
		}
	}
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

func holdStream(env *exec.Env, op exec.Operator, sch *arrow.Schema, store *HeldStore, sp *exec.Spill, s *heldStream, ctr *FragmentCounters, hist *keyHist) error {
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
		ctr.Out.Rows.Add(int64(d.N))
		ctr.Out.Batches.Add(1)
		var n int64
		for _, c := range d.Cols {
			n += exec.ArraySize(c)
		}
		// NB: once a stream spills, the rest of it spills too, so the
		// file follows the batches in memory and the order is kept.
		if s.w == nil {
			over := store.reserve(n)
			if over == nil {
				s.recs = append(s.recs, array.NewRecordBatch(sch, d.Cols, int64(d.N)))
				s.bytes += n
				releaseCols(d)
				continue
			}
			if sp == nil {
				releaseCols(d)
				return over
			}
			if s.w, err = sp.CreateFile(sch, "held"); err != nil {
				releaseCols(d)
				return err
			}
		}
		err = s.w.Write(env.Alloc, d)
		releaseCols(d)
		if err != nil {
			return err
		}
	}
}

func releaseCols(d *exec.Batch) {
	for _, c := range d.Cols {
		c.Release()
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
		src, err := heldReader(store, hs, schema)
		if err != nil {
			phys.CloseAll(ops)
			return nil, err
		}
		ops = append(ops, src)
	}
	return ops, nil
}

// heldReader reads a taken part: its batches in memory, then its spill
// file (removed when the reader closes).
func heldReader(store *HeldStore, hs *heldStream, schema *arrow.Schema) (exec.Operator, error) {
	src, err := exec.NewBatchSource(schema, hs.recs...)
	hs.releaseMemory(store)
	if err != nil {
		hs.release(store)
		return nil, err
	}
	if hs.file == nil {
		return src, nil
	}
	u, err := exec.NewUnionAll(src, hs.file.Reader())
	if err != nil {
		src.Close()
		hs.release(store)
		return nil, err
	}
	return u, nil
}
