package exec

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Spilling hash join (grace hash join).
//
// When the build side does not fit in the budget and Env.Spill is set,
// the build stops filling its table: the rows it holds (its row store, or
// for joins that keep only keys, one row per distinct key) and every
// later build row are written to partition files by the row hash of their
// keys (remixed per level, spillPart). Each prober then writes its probe
// input to its own partition files by the same hash, and joins partition
// p of its probe side with partition p of the build side by a new
// HashJoin of the same spec one level down, which spills again if the
// partition still does not fit. Equal keys meet in the same partition; a
// NULL key, which matches nothing, lands in one partition like any value.
//
// Every join type spills this way except NOT IN (null-aware) joins, whose
// answer depends on the whole build side; those keep failing with the
// memory limit error.
//
// A build shared by several probers whose join emits build rows at the end
// (outer joins keeping the build side, semi/anti/mark built on the left)
// cannot let each prober join its own partitions: a build row's matches
// would be split among the probers, and each would emit it as unmatched.
// Such a build collects instead: each prober writes its probe partitions
// and hands them in (graceBuild.handIn); the prober that hands in last
// joins partition p of the build with every prober's partition p, and the
// others end without rows. Nobody waits for anybody (a prober may be
// driven only after a sibling ended), exactly like the in-memory shared
// build, whose last prober emits the unmatched build rows.

// graceBuild is a build side written to partition files.
type graceBuild struct {
	runs  []*spillRun // per partition; nil when empty
	users atomic.Int32

	// collect: the probers' partitions are joined by the last prober.
	collect bool
	pending atomic.Int32 // probers yet to hand in their partitions
	mu      sync.Mutex
	probes  [][]*spillRun // per partition, the runs handed in
}

// handIn adds a prober's probe partitions to a collecting build and says
// whether they were the last: that prober joins them all.
func (g *graceBuild) handIn(runs []*spillRun) bool {
	g.mu.Lock()
	if g.probes == nil {
		g.probes = make([][]*spillRun, len(g.runs))
	}
	for p, r := range runs {
		if r != nil {
			g.probes[p] = append(g.probes[p], r)
		}
	}
	g.mu.Unlock()
	return g.pending.Add(-1) == 0
}

// release drops one user's hold on the files; the last removes them.
func (g *graceBuild) release() {
	if g == nil || g.users.Add(-1) > 0 {
		return
	}
	for _, r := range g.runs {
		if r != nil {
			r.remove()
		}
	}
	// What a collecting prober did not read (it failed or was closed
	// early); remove is idempotent for the runs it did read.
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range g.probes {
		for _, r := range rs {
			r.remove()
		}
	}
	g.probes = nil
}

// joinCanSpill says whether a build that failed with err spills.
func joinCanSpill(env *Env, shape *joinShape, level int, err error) bool {
	if !nferr.Is(err, nferr.KindResource) || env.Spill == nil || shape.nullAware {
		return false
	}
	_, bits := spillFanout(env.Budget.root().Limit())
	return (level+1)*bits <= spillLevelBits
}

// dumpTable writes the rows a build table holds to w: its stored rows, or
// (for joins that keep only keys and never emit build columns) one row per
// distinct key with the other columns NULL.
func dumpTable(env *Env, t *joinTable, w *partWriters) error {
	shape := t.shape
	bs := max(env.BatchSize, 1)
	if shape.storeBuild {
		idx := make([]int32, 0, bs)
		for off := 0; off < t.store.n; off += bs {
			idx = idx[:0]
			for r := off; r < min(off+bs, t.store.n); r++ {
				idx = append(idx, int32(r))
			}
			cols := t.store.gather(env.Alloc, idx, nil)
			err := w.write(&Batch{Cols: cols, N: len(idx)})
			releaseArrays(cols)
			if err != nil {
				return err
			}
		}
		return nil
	}
	tables := []*keyTable{t.keys}
	for _, p := range t.parts {
		tables = append(tables, p.keys)
	}
	for _, kt := range tables {
		g := kt.groups()
		for off := 0; off < g; off += bs {
			end := min(off+bs, g)
			keys := kt.decodeKeys(env.Alloc, off, end)
			cols := make([]arrow.Array, shape.buildSchema.NumFields())
			for i, k := range shape.buildKeys {
				cols[k] = keys[i]
			}
			for i := range cols {
				if cols[i] == nil {
					cols[i] = array.MakeArrayOfNull(env.Alloc, shape.buildSchema.Field(i).Type, end-off)
				}
			}
			err := w.write(&Batch{Cols: cols, N: end - off})
			releaseArrays(cols)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// drainTo writes the rest of in to w.
func drainTo(env *Env, in Operator, w *partWriters) error { return forEachBatch(env, in, w.write) }

// finishBuildSpill completes a build that spilled once every input is
// drained into w: t's rows go to w too, t is released, and the files are
// the build's partitions. users is the number of probers; several probers
// of a join that tracks build rows hand their partitions to the last.
func finishBuildSpill(env *Env, t *joinTable, w *partWriters, users int32) (*graceBuild, error) {
	collect := users > 1 && t.shape.tracksBuild()
	if err := dumpTable(env, t, w); err != nil {
		w.abort()
		return nil, err
	}
	t.release()
	runs, err := w.finish()
	if err != nil {
		return nil, err
	}
	g := &graceBuild{runs: runs, collect: collect}
	g.users.Store(users)
	g.pending.Store(users)
	return g, nil
}

// keepsUnmatchedProbe: probe rows without a match are output rows.
func (s *joinShape) keepsUnmatchedProbe() bool {
	return s.probePreserve() || (!s.buildLeft && (s.typ == JoinAnti || s.typ == JoinMark))
}

// keepsUnmatchedBuild: build rows without a match are output rows.
func (s *joinShape) keepsUnmatchedBuild() bool {
	return s.buildPreserve() || (s.buildLeft && (s.typ == JoinAnti || s.typ == JoinMark))
}

// graceProbe is a prober's side of a spilled join.
type graceProbe struct {
	build *graceBuild
	runs  []*spillRun
	// all: per partition, every prober's probe runs (a collecting build's
	// last prober); idle: a collecting build's other probers, which
	// output nothing.
	all   [][]*spillRun
	idle  bool
	p     int // the next partition
	parts partitionRun
}

// startGrace writes the probe input to partition files.
func (h *HashJoin) startGrace(g *graceBuild) error {
	h.grace = &graceProbe{build: g}
	w, err := newPartWriters(h.env, "hash join probe", h.shape.probeSchema, h.shape.probeKeys, h.level)
	if err != nil {
		return err
	}
	if err := forEachBatch(h.env, h.probe, w.write); err != nil {
		w.abort()
		return err
	}
	runs, err := w.finish()
	if err != nil {
		return err
	}
	if !g.collect {
		h.grace.runs = runs
		return nil
	}
	if !g.handIn(runs) {
		h.grace.idle = true
		return nil
	}
	// INVARIANT: every prober has handed in; nobody appends any more.
	h.grace.all = g.probes
	return nil
}

// nextGrace returns the next batch of the partitions' joins.
func (h *HashJoin) nextGrace() (*Batch, error) {
	g := h.grace
	if g.idle {
		return nil, nil
	}
	return g.parts.next(h.env, func() (Operator, error) {
		for ; g.p < len(g.build.runs); g.p++ {
			br := g.build.runs[g.p]
			var prs []*spillRun
			if g.all != nil {
				prs = g.all[g.p]
			} else if pr := g.runs[g.p]; pr != nil {
				prs = []*spillRun{pr}
			}
			if br == nil && (prs == nil || !h.shape.keepsUnmatchedProbe()) || prs == nil && !h.shape.keepsUnmatchedBuild() {
				// Nothing can come out of this partition.
				for _, pr := range prs {
					pr.remove()
				}
				continue
			}
			g.p++
			var bin, pin Operator
			if br != nil {
				bin = &sharedRunReader{r: newSpillReader(br)}
			} else {
				bin = emptyOp(h.shape.buildSchema)
			}
			switch len(prs) {
			case 0:
				pin = emptyOp(h.shape.probeSchema)
			case 1:
				pin = newSpillReader(prs[0])
			default:
				ins := make([]Operator, len(prs))
				for i, pr := range prs {
					ins[i] = newSpillReader(pr)
				}
				u, err := NewUnionAll(ins...)
				if err != nil {
					bin.Close()
					return nil, err
				}
				pin = u
			}
			left, right := pin, bin
			if h.shape.buildLeft {
				left, right = bin, pin
			}
			sub, err := NewHashJoin(left, right, h.spec)
			if err != nil {
				bin.Close()
				pin.Close()
				return nil, err
			}
			sub.level = h.level + 1
			return sub, nil
		}
		return nil, nil
	})
}

// close removes what the prober still holds.
func (g *graceProbe) close() {
	g.parts.close()
	for _, r := range g.runs {
		if r != nil {
			r.remove()
		}
	}
	g.build.release()
}

// sharedRunReader reads a build partition several probers read: Close
// leaves the file (graceBuild.release removes it).
type sharedRunReader struct {
	r *spillReader
}

func (s *sharedRunReader) Schema() *arrow.Schema { return s.r.Schema() }
func (s *sharedRunReader) Open(env *Env) error   { return s.r.Open(env) }
func (s *sharedRunReader) Next() (*Batch, error) { return s.r.Next() }
func (s *sharedRunReader) Close() error          { return s.r.closeKeep() }

// emptyOp is an input with no rows.
func emptyOp(schema *arrow.Schema) Operator {
	src, _ := NewBatchSource(schema)
	return src
}
