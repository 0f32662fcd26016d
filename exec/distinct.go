package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// DistinctSpec configures a hash distinct.
type DistinctSpec struct {
	// Cols are the columns whose combination must be distinct; nil means
	// every column (SELECT DISTINCT).
	Cols []int
}

// Distinct passes on the first row of each distinct key, in input order,
// streaming: each output batch is an input batch with a narrower
// selection (no copy). NULLs are equal to each other (SQL DISTINCT). The
// key table is charged to the "distinct" account.
//
// Out of core (Env.Spill set), like the hybrid hash aggregate: once the
// table cannot grow, rows whose key is in it are still passed on or
// dropped in memory, and rows of new keys are written to partition files
// (by key hash, remixed per level); at the end of the input each
// partition is made distinct by a Distinct one level down. A spilled key
// is never in the table, so no key is passed on twice; the output is then
// in input order within the in-memory keys and within each partition.
type Distinct struct {
	in     Operator
	cols   []int
	infos  []colInfo
	env    *Env
	acct   *Account
	table  *keyTable
	gids   []uint32
	sel    []int32
	keys   []arrow.Array
	out    Batch
	err    error
	closed bool

	// Spilling: the partitions of rows of new keys, the keys passed on so
	// far (ids below emitted, and the later ones marked in seen: a batch
	// that failed may have added keys before it failed), the partitions
	// left at the end of the input and the one being made distinct.
	level   int
	sp      *partWriters
	emitted int
	seen    []bool
	sc      keyScratch
	spSel   []int32
	runs    []*spillRun
	parts   partitionRun
	drained bool
}

// NewDistinct validates spec against the input schema.
func NewDistinct(in Operator, spec DistinctSpec) (*Distinct, error) {
	d := &Distinct{in: in, cols: spec.Cols}
	s := in.Schema()
	if d.cols == nil {
		for i := 0; i < s.NumFields(); i++ {
			d.cols = append(d.cols, i)
		}
	}
	if len(d.cols) == 0 {
		return nil, nferr.Queryf("distinct: no columns")
	}
	for _, c := range d.cols {
		ci, err := classifyCol(s, c, "distinct", "key")
		if err != nil {
			return nil, err
		}
		d.infos = append(d.infos, ci)
	}
	return d, nil
}

// Schema implements Operator: the input's.
func (d *Distinct) Schema() *arrow.Schema { return d.in.Schema() }

// Open implements Operator.
func (d *Distinct) Open(env *Env) error {
	d.env = env
	d.acct = env.NewSpillableAccount("distinct")
	d.table = newKeyTable(d.infos, d.acct)
	return d.in.Open(env)
}

// Next implements Operator.
func (d *Distinct) Next() (*Batch, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.closed {
		return nil, nil
	}
	b, err := d.next()
	if err != nil {
		d.err = err
	}
	return b, err
}

func (d *Distinct) next() (*Batch, error) {
	for {
		if d.drained {
			return d.nextPartition()
		}
		if err := d.env.Ctx.Err(); err != nil {
			return nil, nferr.With(nferr.KindCanceled, err)
		}
		b, err := d.in.Next()
		if err != nil {
			return nil, err
		}
		if b == nil {
			if d.sp == nil {
				return nil, nil
			}
			if err := d.finishSpill(); err != nil {
				return nil, err
			}
			continue
		}
		d.keys = d.keys[:0]
		for _, c := range d.cols {
			d.keys = append(d.keys, b.Cols[c])
		}
		if d.sp != nil {
			if out, err := d.consumeSpilling(b); out != nil || err != nil {
				return out, err
			}
			continue
		}
		next := uint32(d.table.groups())
		d.gids = resize(d.gids, b.Len())
		if err := d.table.findOrInsert(d.keys, b.Sel, b.N, d.gids); err != nil {
			if !d.canSpill(err) {
				return nil, err
			}
			// The batch's first rows of keys it added before failing are
			// not passed on yet: consumeSpilling does it.
			if d.sp, err = newPartWriters(d.env, "distinct", d.in.Schema(), d.cols, d.level); err != nil {
				return nil, err
			}
			d.emitted = int(next)
			d.seen = make([]bool, d.table.groups()-d.emitted)
			if out, err := d.consumeSpilling(b); out != nil || err != nil {
				return out, err
			}
			continue
		}
		d.sel = d.sel[:0]
		for j, g := range d.gids {
			// New groups get consecutive ids in row order: the first row
			// of each new key is the one whose id is the next new id.
			if g == next {
				next++
				d.sel = append(d.sel, int32(rowAt(b.Sel, j)))
			}
		}
		if len(d.sel) == 0 {
			continue
		}
		d.out = Batch{Cols: b.Cols, N: b.N, Sel: d.sel}
		return &d.out, nil
	}
}

// Close implements Operator.
func (d *Distinct) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	d.out = Batch{}
	if d.table != nil {
		d.table.release()
	}
	d.parts.close()
	if d.sp != nil {
		d.sp.abort()
	}
	for _, r := range d.runs {
		r.remove()
	}
	d.runs = nil
	if d.acct != nil {
		d.acct.Close()
	}
	return d.in.Close()
}

// canSpill says whether err (from growing the key table) is a memory limit
// this distinct can spill its way out of.
func (d *Distinct) canSpill(err error) bool {
	if !nferr.Is(err, nferr.KindResource) || d.env.Spill == nil {
		return false
	}
	_, bits := spillFanout(d.env.Budget.root().Limit())
	return (d.level+1)*bits <= spillLevelBits
}

// consumeSpilling passes on the rows of b that are the first of a key in
// the table, drops the other rows of those keys, and writes the rows of
// keys not in the table to their partitions. It returns nil when no row
// is passed on.
func (d *Distinct) consumeSpilling(b *Batch) (*Batch, error) {
	m := b.Len()
	d.gids = resize(d.gids, m)
	d.table.find(d.keys, b.Sel, b.N, d.gids, &d.sc)
	d.sel, d.spSel = d.sel[:0], d.spSel[:0]
	for j, g := range d.gids[:m] {
		switch {
		case g == noGroup:
			d.spSel = append(d.spSel, int32(rowAt(b.Sel, j)))
		case int(g) >= d.emitted && !d.seen[int(g)-d.emitted]:
			d.seen[int(g)-d.emitted] = true
			d.sel = append(d.sel, int32(rowAt(b.Sel, j)))
		}
	}
	if len(d.spSel) > 0 {
		if err := d.sp.write(&Batch{Cols: b.Cols, N: b.N, Sel: d.spSel}); err != nil {
			return nil, err
		}
	}
	if len(d.sel) == 0 {
		return nil, nil
	}
	d.out = Batch{Cols: b.Cols, N: b.N, Sel: d.sel}
	return &d.out, nil
}

// finishSpill closes the partitions at the end of the input and gives the
// table's memory to them.
func (d *Distinct) finishSpill() error {
	runs, err := d.sp.finish()
	d.sp = nil
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r != nil {
			d.runs = append(d.runs, r)
		}
	}
	d.table.release()
	d.table = nil
	d.acct.Close()
	d.drained = true
	return nil
}

// nextPartition returns the next batch of the partitions' distinct rows.
func (d *Distinct) nextPartition() (*Batch, error) {
	return d.parts.next(d.env, func() (Operator, error) {
		if len(d.runs) == 0 {
			return nil, nil
		}
		run := d.runs[0]
		d.runs = d.runs[1:]
		sub, err := NewDistinct(newSpillReader(run), DistinctSpec{Cols: d.cols})
		if err != nil {
			run.remove()
			return nil, err
		}
		sub.level = d.level + 1
		return sub, nil
	})
}
