package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Unnest expands arrays, as PostgreSQL's set-returning functions over
// arrays in a select list (unnest, generate_subscripts) and unnest in
// FROM: for each live input row it evaluates the array expressions and
// emits the row once per position k = 1..n, n the length of the row's
// longest array (no row when all are empty or NULL). Its output is the
// input's columns (the row repeated), then for each array its k-th
// element and that element's subscript (both NULL past the array's end;
// subscripts start at 1, at 0 for an int2vector), then k (BIGINT).
//
// Output batches hold about BatchSize rows: an input batch is expanded in
// parts, a part ending once it reaches BatchSize rows (a single row's
// arrays may make a larger one).
type Unnest struct {
	child  Operator
	exprs  []*expr.CompiledExpr
	lowers []int64
	schema *arrow.Schema
	env    *Env

	in     *Batch        // the input batch being expanded
	arrays []*array.List // its arrays' values
	next   int           // the next live row of in to expand
	owned  []arrow.Array // the arrays of in and of the last output
	out    Batch
	err    error
	done   bool
	closed bool
}

// NewUnnest compiles arrays (each of an array type) against child's
// schema; names name the output columns after the input's: an element and
// a subscript for each array, then the ordinality. On success the Unnest
// owns child; on error the caller still does.
func NewUnnest(child Operator, arrays []expr.Expr, names []string) (*Unnest, error) {
	if len(names) != 2*len(arrays)+1 {
		return nil, nferr.Internalf("unnest: %d names for %d arrays", len(names), len(arrays))
	}
	if len(arrays) == 0 {
		return nil, nferr.Internalf("unnest of no array")
	}
	in := child.Schema()
	u := &Unnest{child: child}
	fields := append([]arrow.Field(nil), in.Fields()...)
	for i, e := range arrays {
		ce, err := expr.CompileExpr(e, in)
		if err != nil {
			return nil, err
		}
		lt, ok := ce.Type().(*arrow.ListType)
		if !ok {
			return nil, nferr.Queryf("unnest needs an array, not %s (%s)", expr.TypeName(ce.Type()), e)
		}
		lower := int64(1)
		if expr.IsInt2Vector(lt) {
			lower = 0
		}
		u.exprs = append(u.exprs, ce)
		u.lowers = append(u.lowers, lower)
		fields = append(fields, arrow.Field{Name: names[2*i], Type: lt.Elem(), Nullable: true},
			arrow.Field{Name: names[2*i+1], Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: names[len(names)-1], Type: arrow.PrimitiveTypes.Int64})
	u.schema = arrow.NewSchema(fields, nil)
	return u, nil
}

// Schema implements Operator.
func (u *Unnest) Schema() *arrow.Schema { return u.schema }

// Open implements Operator.
func (u *Unnest) Open(env *Env) error {
	u.env = env
	return u.child.Open(env)
}

func (u *Unnest) release() {
	for _, a := range u.owned {
		a.Release()
	}
	u.owned = u.owned[:0]
}

// Next implements Operator.
func (u *Unnest) Next() (*Batch, error) {
	if u.err != nil || u.done {
		return nil, u.err
	}
	out, err := u.next1()
	if err != nil {
		u.err = err
		return nil, err
	}
	return out, nil
}

func (u *Unnest) next1() (*Batch, error) {
	// The output arrays of the last batch go; the input's stay while it
	// is being expanded.
	keep := 0
	if u.in != nil {
		keep = len(u.arrays)
	}
	for _, a := range u.owned[keep:] {
		a.Release()
	}
	u.owned = u.owned[:keep]
	for {
		if err := u.env.Ctx.Err(); err != nil {
			return nil, nferr.With(nferr.KindCanceled, err)
		}
		if u.in == nil {
			b, err := u.child.Next()
			if err != nil {
				return nil, err
			}
			if b == nil {
				u.done = true
				return nil, nil
			}
			u.release()
			u.arrays = u.arrays[:0]
			for _, ce := range u.exprs {
				a, err := ce.Eval(u.env.Alloc, b)
				if err != nil {
					u.release()
					return nil, err
				}
				u.owned = append(u.owned, a)
				l, ok := a.(*array.List)
				if !ok {
					u.release()
					return nil, nferr.Internalf("unnest: %s evaluated to %s, not an array", ce, a.DataType())
				}
				u.arrays = append(u.arrays, l)
			}
			u.in, u.next = b, 0
		}
		out := u.expand()
		if u.next >= u.in.Len() {
			u.in = nil
		}
		if out != nil {
			return out, nil
		}
	}
}

// expand makes the output of the next part of the input batch (nil when
// its rows expand to no row).
func (u *Unnest) expand() *Batch {
	b := u.in
	limit := max(u.env.BatchSize, 1)
	var rows, ks []int32 // per output row: the input row, its position k (from 0)
	elems := make([][]int32, len(u.arrays))
	for ; u.next < b.Len() && len(rows) < limit; u.next++ {
		r := int32(u.next)
		if b.Sel != nil {
			r = b.Sel[u.next]
		}
		n := int64(0)
		for _, l := range u.arrays {
			if l.IsValid(int(r)) {
				s, e := l.ValueOffsets(int(r))
				n = max(n, e-s)
			}
		}
		for k := int64(0); k < n; k++ {
			rows = append(rows, r)
			ks = append(ks, int32(k))
			for i, l := range u.arrays {
				at := int32(-1)
				if l.IsValid(int(r)) {
					if s, e := l.ValueOffsets(int(r)); k < e-s {
						at = int32(s + k)
					}
				}
				elems[i] = append(elems[i], at)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	alloc := u.env.Alloc
	cols := make([]arrow.Array, 0, u.schema.NumFields())
	for _, c := range b.Cols {
		a := takeRows(alloc, c, rows)
		u.owned = append(u.owned, a)
		cols = append(cols, a)
	}
	for i, l := range u.arrays {
		e := takeOrNull(alloc, l.ListValues(), elems[i])
		sb := array.NewInt64Builder(alloc)
		sb.Reserve(len(rows))
		for j, at := range elems[i] {
			if at < 0 {
				sb.AppendNull()
			} else {
				sb.UnsafeAppend(int64(ks[j]) + u.lowers[i])
			}
		}
		s := sb.NewArray()
		sb.Release()
		u.owned = append(u.owned, e, s)
		cols = append(cols, e, s)
	}
	ob := array.NewInt64Builder(alloc)
	ob.Reserve(len(rows))
	for _, k := range ks {
		ob.UnsafeAppend(int64(k) + 1)
	}
	ord := ob.NewArray()
	ob.Release()
	u.owned = append(u.owned, ord)
	cols = append(cols, ord)
	u.out = Batch{Cols: cols, N: len(rows)}
	return &u.out
}

// takeRows gathers rows idx (any order, repeats allowed) of a.
func takeRows(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	if ci, ok := classify(a.DataType()); ok {
		return makeTaker(ci)(alloc, a, idx)
	}
	return takeGeneric(alloc, a, idx)
}

// takeOrNull gathers values idx of a, a NULL where idx is negative.
func takeOrNull(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	valid := make([]int32, len(idx))
	nulls := 0
	for i, j := range idx {
		if j < 0 {
			nulls++
			j = 0
		}
		valid[i] = j
	}
	if nulls == len(idx) || a.Len() == 0 {
		return array.MakeArrayOfNull(alloc, a.DataType(), len(idx))
	}
	t := takeRows(alloc, a, valid)
	if nulls == 0 {
		return t
	}
	// The gathered values, with a validity bitmap clearing the NULLs.
	d := t.Data()
	off := d.Offset()
	bm := memory.NewResizableBuffer(alloc)
	bm.Resize(int(bitutil.BytesForBits(int64(off + len(idx)))))
	bits := bm.Bytes()
	n := 0
	for i, j := range idx {
		ok := j >= 0 && t.IsValid(i)
		bitutil.SetBitTo(bits, off+i, ok)
		if !ok {
			n++
		}
	}
	bufs := append([]*memory.Buffer{bm}, d.Buffers()[1:]...)
	nd := array.NewData(d.DataType(), d.Len(), bufs, d.Children(), n, d.Offset())
	out := array.MakeFromData(nd)
	nd.Release()
	bm.Release()
	t.Release()
	return out
}

// Close implements Operator.
func (u *Unnest) Close() error {
	if u.closed {
		return nil
	}
	u.closed = true
	u.release()
	u.in, u.arrays, u.out = nil, nil, Batch{}
	return u.child.Close()
}

// TakeRows gathers rows idx (any order, repeats allowed) of a into a new
// array the caller releases.
func TakeRows(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	return takeRows(alloc, a, idx)
}

// TakeOrNull is TakeRows with a NULL where idx is negative.
func TakeOrNull(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	return takeOrNull(alloc, a, idx)
}
