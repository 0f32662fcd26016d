package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// WITH RECURSIVE's fixpoint. A RecursiveUnion returns the rows of its
// anchor, then runs its term again and again: each run's WorkTableScans
// read the rows the previous run added (the anchor's, for the first run),
// and the run's own rows are passed on and kept for the next run. It ends
// when a run adds no row. With Distinct (UNION rather than UNION ALL) a
// row equal to one returned before is neither passed on nor kept (NULLs
// equal), which also ends cycles in graph walks.
//
// The term is an operator tree built afresh for every run (operators open
// once), by the factory the planner passes. Rows are streamed as they are
// found, so a LIMIT above stops a recursion that would never end.
//
// Memory: the rows of two runs at most (the work table being read and the
// rows being added), compacted, and with Distinct the key table of every
// row returned, all charged to the "recursive union" account. A recursion
// that never ends and keeps no rows (UNION ALL over a constant) runs until
// the query is canceled, as in PostgreSQL.

// WorkTable is the rows a RecursiveUnion's previous run added, which the
// WorkTableScans of its term read. The RecursiveUnion owns the batches.
type WorkTable struct {
	schema  *arrow.Schema
	batches []Batch
}

// NewWorkTable returns an empty work table of rows of schema.
func NewWorkTable(schema *arrow.Schema) *WorkTable { return &WorkTable{schema: schema} }

// WorkTableScan returns the batches of a work table as they are when it
// is opened; they are borrowed from the table, never released here.
type WorkTableScan struct {
	w      *WorkTable
	i      int
	out    Batch
	closed bool
}

// NewWorkTableScan reads w.
func NewWorkTableScan(w *WorkTable) *WorkTableScan { return &WorkTableScan{w: w} }

// Schema implements Operator.
func (s *WorkTableScan) Schema() *arrow.Schema { return s.w.schema }

// Open implements Operator.
func (s *WorkTableScan) Open(*Env) error { return nil }

// Next implements Operator.
func (s *WorkTableScan) Next() (*Batch, error) {
	if s.closed || s.i >= len(s.w.batches) {
		return nil, nil
	}
	s.out = s.w.batches[s.i]
	s.i++
	return &s.out, nil
}

// Close implements Operator.
func (s *WorkTableScan) Close() error {
	s.closed = true
	s.out = Batch{}
	return nil
}

// RecursiveUnion is the operator described at the top of this file.
type RecursiveUnion struct {
	opState
	anchor   Operator
	newTerm  func() (Operator, error)
	work     *WorkTable
	distinct bool
	infos    []colInfo

	env   *Env
	acct  *Account
	table *keyTable
	gids  []uint32
	sel   []int32
	// cur is the operator running: the anchor, then each run's term.
	cur   Operator
	ended bool
	// next holds the rows the current run added; workBytes and nextBytes
	// are what the work table and next are charged.
	next                 []Batch
	workBytes, nextBytes int64
	runs                 int
}

// NewRecursiveUnion returns the fixpoint of anchor and term over work;
// newTerm builds the term's operator tree (reading work) for each run.
// Work's schema is the union's, and the anchor's and every term's column
// types must be its. Every column must be of a type the hash operators
// know when distinct is set.
func NewRecursiveUnion(anchor Operator, work *WorkTable, newTerm func() (Operator, error), distinct bool) (*RecursiveUnion, error) {
	s := work.schema
	if !sameTypes(anchor.Schema(), s) {
		return nil, nferr.Internalf("recursive union: the anchor's schema %s is not the union's %s", anchor.Schema(), s)
	}
	r := &RecursiveUnion{anchor: anchor, newTerm: newTerm, work: work, distinct: distinct}
	if distinct {
		for i := 0; i < s.NumFields(); i++ {
			ci, err := classifyCol(s, i, "recursive union", "column")
			if err != nil {
				return nil, err
			}
			r.infos = append(r.infos, ci)
		}
	}
	return r, nil
}

// Schema implements Operator: the work table's.
func (r *RecursiveUnion) Schema() *arrow.Schema { return r.work.schema }

// sameTypes reports whether two schemas have the same column types.
func sameTypes(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// Open implements Operator.
func (r *RecursiveUnion) Open(env *Env) error {
	r.env = env
	r.acct = env.Budget.NewAccount("recursive union")
	if r.distinct {
		r.table = newKeyTable(r.infos, r.acct)
	}
	r.cur = r.anchor
	return r.anchor.Open(env)
}

// Runs is the number of runs of the term so far (EXPLAIN ANALYZE, tests).
func (r *RecursiveUnion) Runs() int { return r.runs }

// Next implements Operator.
func (r *RecursiveUnion) Next() (*Batch, error) {
	if done, err := r.begin(); done || r.ended {
		return nil, err
	}
	for {
		if err := r.env.Ctx.Err(); err != nil {
			return r.fail(nferr.With(nferr.KindCanceled, err))
		}
		if r.cur == nil {
			if err := r.startRun(); err != nil {
				return r.fail(err)
			}
			if r.cur == nil {
				r.ended = true
				return nil, nil
			}
		}
		b, err := r.cur.Next()
		if err != nil {
			return r.fail(err)
		}
		if b == nil {
			cur := r.cur
			r.cur = nil
			if err := cur.Close(); err != nil {
				return r.fail(err)
			}
			continue
		}
		sel, some, err := r.newRows(b)
		if err != nil {
			return r.fail(err)
		}
		if !some {
			continue
		}
		c := Compact(r.env.Alloc, &Batch{Cols: b.Cols, N: b.N, Sel: sel})
		r.next = append(r.next, *c)
		n := batchBytes(c)
		r.nextBytes += n
		if err := r.acct.Grow(n); err != nil {
			return r.fail(err)
		}
		r.out = *c
		return &r.out, nil
	}
}

// newRows returns the selection of b's rows to pass on, and whether there
// is any: b's own under UNION ALL, else the first row of each key not
// seen before.
func (r *RecursiveUnion) newRows(b *Batch) ([]int32, bool, error) {
	if !r.distinct {
		return b.Sel, true, nil
	}
	next := uint32(r.table.groups())
	r.gids = resize(r.gids, b.Len())
	if err := r.table.findOrInsert(b.Cols, b.Sel, b.N, r.gids); err != nil {
		return nil, false, err
	}
	r.sel = r.sel[:0]
	for j, g := range r.gids {
		// New keys get consecutive ids in row order (see Distinct).
		if g == next {
			next++
			r.sel = append(r.sel, int32(rowAt(b.Sel, j)))
		}
	}
	return r.sel, len(r.sel) > 0, nil
}

// startRun makes the rows the last run added the work table and builds
// and opens the term over them; it leaves cur nil when there are none.
func (r *RecursiveUnion) startRun() error {
	r.releaseWork()
	r.work.batches, r.workBytes = r.next, r.nextBytes
	r.next, r.nextBytes = nil, 0
	if len(r.work.batches) == 0 {
		return nil
	}
	op, err := r.newTerm()
	if err != nil {
		return err
	}
	if !sameTypes(op.Schema(), r.work.schema) {
		op.Close()
		return nferr.Internalf("recursive union: the recursive term's schema %s is not the anchor's %s", op.Schema(), r.work.schema)
	}
	r.cur = op
	r.runs++
	return op.Open(r.env)
}

// releaseWork frees the work table's rows.
func (r *RecursiveUnion) releaseWork() {
	for i := range r.work.batches {
		releaseArrays(r.work.batches[i].Cols)
	}
	r.work.batches = nil
	if r.acct != nil {
		r.acct.Shrink(r.workBytes)
	}
	r.workBytes = 0
}

// Close implements Operator.
func (r *RecursiveUnion) Close() error {
	if !r.closing() {
		return nil
	}
	var err error
	if r.cur != nil && r.cur != r.anchor {
		err = r.cur.Close()
	}
	r.cur = nil
	if e := r.anchor.Close(); e != nil && err == nil {
		err = e
	}
	r.releaseWork()
	for i := range r.next {
		releaseArrays(r.next[i].Cols)
	}
	r.next, r.nextBytes = nil, 0
	if r.table != nil {
		r.table.release()
	}
	if r.acct != nil {
		r.acct.Close()
	}
	return err
}
