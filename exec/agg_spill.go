package exec

import (
	"github.com/nicflow/nicflow/internal/nferr"
)

// Spilling hash aggregate (hybrid hash aggregation).
//
// When the budget cannot hold more groups and Env.Spill is set, HashAgg
// stops adding groups. From then on a row whose group is already in the
// table is aggregated in memory as before (hot keys, which appear early,
// stay in memory; the table no longer grows), and a row of a new group is
// written, as it came in, to one of aggSpillFanout partition files chosen
// by its row hash remixed for the recursion level. At the end of the input
// the in-memory groups are emitted, their memory released, and each
// partition is aggregated by a new HashAgg of the same spec (level + 1)
// reading the partition's file; a partition that still does not fit
// spills again, one level down, with other bits of the hash. Every phase
// spills this way (the input of a final aggregate is partial states, which
// are rows like any other).
//
// Bounded: the table never grows while spilling; the aggregate states of
// groups already in memory may (min/max of strings, DISTINCT sets of those
// groups), and are charged beyond the budget (ForceGrow). A global
// aggregate (no GROUP BY) holds one group and never spills.

// aggSpillFanout is the largest number of partitions per spill level.
// Each open partition holds spillWriterBytes; under a small budget the
// fan-out shrinks so that the writers take at most an eighth of it
// (spillFanout).
const aggSpillFanout = 16

// spillLevelBits bounds the recursion: spilling stops once the levels
// have split the hash 24 bits deep (16^6 partitions), enough for any
// input a hash can separate; beyond it one key's rows do not fit (skew
// that spilling cannot split).
const spillLevelBits = 24

// spillFanout returns the partitions per level (a power of two, 2 to
// aggSpillFanout) and its log2 for a budget of limit bytes (0: none).
func spillFanout(limit int64) (int, int) {
	n, bits := aggSpillFanout, 4
	for bits > 1 && limit > 0 && int64(n)*spillWriterBytes*8 > limit {
		n, bits = n/2, bits-1
	}
	return n, bits
}

type aggSpill struct {
	w     *partWriters // the partitions of rows of new groups
	runs  []*spillRun
	parts partitionRun // the partitions' aggregates
	sc    keyScratch

	inSel, outSel []int32
	inGids        []uint32
}

// canSpill says whether err (from growing the table or states) is a
// memory limit this aggregate can spill its way out of.
func (a *HashAgg) canSpill(err error) bool {
	if !nferr.Is(err, nferr.KindResource) || a.env.Spill == nil || a.table == nil || a.sp != nil || a.spec.phase() == AggPartial {
		return false
	}
	_, bits := spillFanout(a.env.Budget.root().Limit())
	return (a.level+1)*bits <= spillLevelBits
}

// startSpill switches the aggregate to spilling.
func (a *HashAgg) startSpill() error {
	w, err := newPartWriters(a.env, a.op, a.in.Schema(), a.spec.GroupCols, a.level)
	if err != nil {
		return err
	}
	a.sp = &aggSpill{w: w}
	return nil
}

// spillPart picks a row's partition from its row hash: the hash remixed
// with the level, so each level splits by other bits than its parent and
// than the exchanges that routed the rows here.
func spillPart(h uint64, level, bits int) int {
	return int(mix64(h^uint64(level+1)*0x9e3779b97f4a7c15) >> (64 - bits))
}

// consume aggregates the rows of b whose group is in memory and writes
// the others to their partitions.
func (s *aggSpill) consume(a *HashAgg, b *Batch) error {
	m := b.Len()
	a.gids = resize(a.gids, m)
	a.keyCols = a.keyCols[:0]
	for _, g := range a.spec.GroupCols {
		a.keyCols = append(a.keyCols, b.Cols[g])
	}
	a.table.find(a.keyCols, b.Sel, b.N, a.gids, &s.sc)
	s.inSel, s.outSel, s.inGids = s.inSel[:0], s.outSel[:0], s.inGids[:0]
	for j, g := range a.gids[:m] {
		if g == noGroup {
			s.outSel = append(s.outSel, int32(rowAt(b.Sel, j)))
		} else {
			s.inSel = append(s.inSel, int32(rowAt(b.Sel, j)))
			s.inGids = append(s.inGids, g)
		}
	}
	if len(s.inSel) > 0 {
		in := Batch{Cols: b.Cols, N: b.N, Sel: s.inSel}
		if err := a.update(&in, s.inGids); err != nil {
			return err
		}
		a.forceChargeFns()
	}
	if len(s.outSel) == 0 {
		return nil
	}
	return s.w.write(&Batch{Cols: b.Cols, N: b.N, Sel: s.outSel})
}

// finish closes the partition files at the end of the input.
func (s *aggSpill) finish(a *HashAgg) error {
	runs, err := s.w.finish()
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r != nil {
			s.runs = append(s.runs, r)
		}
	}
	return nil
}

// next returns the next batch of the partitions' aggregates, once the
// in-memory groups are out.
func (s *aggSpill) next(a *HashAgg) (*Batch, error) {
	// The in-memory groups are emitted: give their memory to the
	// partitions.
	a.releaseState()
	b, err := s.parts.next(a.env, func() (Operator, error) {
		if len(s.runs) == 0 {
			return nil, nil
		}
		run := s.runs[0]
		s.runs = s.runs[1:]
		sub, err := NewHashAgg(newSpillReader(run), a.spec)
		if err != nil {
			run.remove()
			return nil, err
		}
		sub.level = a.level + 1
		return sub, nil
	})
	if nferr.Is(err, nferr.KindResource) && (a.level+2)*s.w.bits > spillLevelBits {
		return nil, nferr.Resourcef("%s: a partition spilled %d times and still does not fit in memory (one group key holds most rows?): %v", a.op, a.level+1, err)
	}
	return b, err
}

// close removes what is left (on error or early Close).
func (s *aggSpill) close() {
	s.parts.close()
	s.w.abort()
	for _, r := range s.runs {
		r.remove()
	}
	s.runs = nil
}
