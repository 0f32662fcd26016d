package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// External merge sort (extSort: the sorting of Sort and Window).
//
// extSort reserves, as rows are added, the rows it holds and the working
// memory of sorting them (sortRowOverhead a row). When the budget cannot
// hold more and Env.Spill is set, it sorts the rows it holds, writes them
// to a spill file as one sorted run (batches of env.BatchSize rows), gives
// their memory back and takes more. At the end of the input, if nothing
// spilled the rows are sorted in memory (a permutation of the store);
// otherwise the rows still held become the last run, so that the merge
// holds a batch per run rather than a whole run, and the runs are merged
// by OrderedMerge reading the files in place (newRunMerge). At most
// sortMergeFanIn(...) runs are merged at once: while more remain, the
// first fanIn runs are merged into one run (a pass writes every row once
// more), so the merge's memory is bounded by the fan-in, not the input.
//
// Stable: runs hold consecutive stretches of the input, each sorted
// stably; the merges keep runs in input order and give ties to the earlier
// run, so the output equals the in-memory sort's.
//
// Bounded: the input side holds at most what the budget allows (one batch
// more when a single batch exceeds it: that batch becomes a run of its
// own); the merge side holds a batch per merged run and one output batch,
// charged to a forced account.

// sortMaxFanIn is the most runs merged at once.
const sortMaxFanIn = 64

// sortRunReaderBytes is what a spill reader holds besides its batch: its
// read buffer and a compressed and a decompressed block.
const sortRunReaderBytes = 16<<10 + 2*spillBlock

// sortMergeFanIn returns how many runs to merge at once under a budget of
// limit bytes (0: none) when a run's batch holds batchBytes: a merged run
// costs its reader, its decoded batch and the merge's copy of it, and the
// merge may take a quarter of the budget.
func sortMergeFanIn(limit, batchBytes int64) int {
	if limit <= 0 {
		return sortMaxFanIn
	}
	per := 2*batchBytes + sortRunReaderBytes
	return int(min(max(limit/4/per, 2), sortMaxFanIn))
}

// extSort sorts rows that may not fit in memory.
type extSort struct {
	env    *Env
	op     string
	schema *arrow.Schema
	spec   []SortKey
	keys   []sortKeyInfo
	infos  []colInfo
	rc     *rowComparer

	acct    *Account
	store   *rowStore // the rows held (all of them when nothing spilled)
	charged int64
	idx     []int32

	runs     []*spillRun   // sorted runs spilled so far, in input order
	merge    *OrderedMerge // the output once the input has spilled
	rowBytes int64         // largest bytes per row of a spilled run
}

func newExtSort(env *Env, op string, schema *arrow.Schema, spec []SortKey, keys []sortKeyInfo, infos []colInfo, rc *rowComparer) *extSort {
	return &extSort{env: env, op: op, schema: schema, spec: spec, keys: keys, infos: infos, rc: rc,
		acct: env.NewSpillableAccount(op), store: newRowStore(infos)}
}

// add takes the live rows of b, spilling a run when the budget is full.
func (x *extSort) add(b *Batch) error {
	x.store.appendBatch(b)
	need := x.store.bytes() + int64(x.store.n)*sortRowOverhead
	if need <= x.charged {
		return nil
	}
	if err := x.acct.Grow(need - x.charged); err != nil {
		if !nferr.Is(err, nferr.KindResource) || x.env.Spill == nil {
			return err
		}
		// NB: what does not fit is already in the store (one batch over);
		// spilling it with the rest gives it all back.
		return x.spillRun()
	}
	x.charged = need
	return nil
}

// drain adds every batch of in.
func (x *extSort) drain(in Operator) error { return forEachBatch(x.env, in, x.add) }

// finish ends the input. Without a spill it returns the sorted
// permutation of x.store; otherwise it returns nil and x.merge emits the
// sorted rows.
func (x *extSort) finish() ([]uint32, error) {
	if len(x.runs) == 0 {
		return sortStore(x.env, x.store, x.keys, x.rc, nil)
	}
	if x.store.n > 0 {
		if err := x.spillRun(); err != nil {
			return nil, err
		}
	}
	return nil, x.mergeRuns()
}

// spillRun sorts the rows held, writes them as a run and releases them.
func (x *extSort) spillRun() error {
	perm, err := sortStore(x.env, x.store, x.keys, x.rc, nil)
	if err != nil {
		return err
	}
	w, err := x.env.Spill.create(x.schema, x.op)
	if err != nil {
		return err
	}
	bs := max(x.env.BatchSize, 1)
	for pos := 0; pos < len(perm); pos += bs {
		if err := x.env.Ctx.Err(); err != nil {
			w.abort()
			return nferr.With(nferr.KindCanceled, err)
		}
		x.idx = x.idx[:0]
		for _, r := range perm[pos:min(pos+bs, len(perm))] {
			x.idx = append(x.idx, int32(r))
		}
		cols := x.store.gather(x.env.Alloc, x.idx, nil)
		err := w.write(x.env.Alloc, cols, len(x.idx), nil)
		releaseArrays(cols)
		if err != nil {
			w.abort()
			return err
		}
	}
	run, err := w.finish()
	if err != nil {
		return err
	}
	x.runs = append(x.runs, run)
	x.rowBytes = max(x.rowBytes, x.store.bytes()/int64(max(x.store.n, 1)))
	// NB: a new store, not reset: reset keeps the vectors' capacity, which
	// the account no longer covers.
	x.store = newRowStore(x.infos)
	x.acct.Shrink(x.acct.Used())
	x.charged = 0
	return nil
}

// mergeRuns merges runs until at most the fan-in remain, then opens the
// final merge.
func (x *extSort) mergeRuns() error {
	batchBytes := x.rowBytes * int64(max(x.env.BatchSize, 1))
	fan := sortMergeFanIn(x.env.Budget.root().Limit(), batchBytes)
	for len(x.runs) > fan {
		run, err := x.mergeToRun(x.runs[:fan])
		if err != nil {
			return err
		}
		x.runs = append([]*spillRun{run}, x.runs[fan:]...)
	}
	m, err := x.openMerge(x.runs)
	if err != nil {
		return err
	}
	// The final merge's readers own the runs now.
	x.merge, x.runs = m, nil
	return nil
}

// openMerge opens the merge of runs; its Close removes them.
func (x *extSort) openMerge(runs []*spillRun) (*OrderedMerge, error) {
	in := make([]Operator, len(runs))
	for i, r := range runs {
		in[i] = newSpillReader(r)
	}
	m, err := newRunMerge(in, x.spec)
	if err != nil {
		return nil, err
	}
	if err := m.Open(x.env); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// mergeToRun merges runs into one new run and removes them.
func (x *extSort) mergeToRun(runs []*spillRun) (*spillRun, error) {
	m, err := x.openMerge(runs)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	w, err := x.env.Spill.create(x.schema, x.op)
	if err != nil {
		return nil, err
	}
	err = forEachBatch(x.env, m, func(b *Batch) error { return w.write(x.env.Alloc, b.Cols, b.N, b.Sel) })
	if err != nil {
		w.abort()
		return nil, err
	}
	return w.finish()
}

// close releases the rows, removes the runs not merged yet and closes the
// final merge (which removes its own). Idempotent.
func (x *extSort) close() {
	for _, r := range x.runs {
		r.remove()
	}
	x.runs = nil
	if x.merge != nil {
		x.merge.Close()
		x.merge = nil
	}
	x.store = nil
	x.acct.Close()
}
