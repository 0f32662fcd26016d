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
	d.acct = env.Budget.NewAccount("distinct")
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
	for {
		if err := d.env.Ctx.Err(); err != nil {
			d.err = nferr.With(nferr.KindCanceled, err)
			return nil, d.err
		}
		b, err := d.in.Next()
		if err != nil {
			d.err = err
			return nil, err
		}
		if b == nil {
			return nil, nil
		}
		d.keys = d.keys[:0]
		for _, c := range d.cols {
			d.keys = append(d.keys, b.Cols[c])
		}
		next := uint32(d.table.groups())
		d.gids = resize(d.gids, b.Len())
		if err := d.table.findOrInsert(d.keys, b.Sel, b.N, d.gids); err != nil {
			d.err = err
			return nil, err
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
	if d.acct != nil {
		d.acct.Close()
	}
	return d.in.Close()
}
