package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine/bind"
	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
)

// returningRows evaluates a DML statement's RETURNING list over the rows
// it writes (or deletes), batch by batch, and keeps the results until the
// statement commits; they are then its result's rows.
type returningRows struct {
	alloc  memory.Allocator
	exprs  []*expr.CompiledExpr
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

// newReturning compiles r over rows of schema sch (the table's columns);
// nil for no RETURNING.
func newReturning(r *bind.Returning, sch *arrow.Schema, alloc memory.Allocator) (*returningRows, error) {
	if r == nil {
		return nil, nil
	}
	out := &returningRows{alloc: alloc}
	layout := make([]plan.ColumnID, len(r.Cols))
	for i, c := range r.Cols {
		layout[i] = c.ID
	}
	var fs []arrow.Field
	for i, e := range r.Exprs {
		x, err := phys.LowerExpr(e, layout)
		if err != nil {
			return nil, err
		}
		ce, err := expr.CompileExpr(x, sch)
		if err != nil {
			return nil, err
		}
		out.exprs = append(out.exprs, ce)
		fs = append(fs, arrow.Field{Name: r.Names[i], Type: ce.Type(), Nullable: true})
	}
	out.schema = arrow.NewSchema(fs, nil)
	return out, nil
}

// add evaluates the list over the rows of rec that flag marks TRUE (every
// row when flag is nil).
func (r *returningRows) add(rec arrow.RecordBatch, flag *array.Boolean) error {
	b := &exec.Batch{Cols: rec.Columns(), N: int(rec.NumRows())}
	if flag != nil {
		var sel []int32
		for i := 0; i < flag.Len(); i++ {
			if flag.IsValid(i) && flag.Value(i) {
				sel = append(sel, int32(i))
			}
		}
		if len(sel) == 0 {
			return nil
		}
		b = exec.Compact(r.alloc, &exec.Batch{Cols: b.Cols, N: b.N, Sel: sel})
		defer func() {
			for _, c := range b.Cols {
				c.Release()
			}
		}()
	}
	cols := make([]arrow.Array, len(r.exprs))
	for i, ce := range r.exprs {
		a, err := ce.Eval(r.alloc, b)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return err
		}
		cols[i] = a
	}
	r.recs = append(r.recs, array.NewRecordBatch(r.schema, cols, int64(b.Len())))
	for _, c := range cols {
		c.Release()
	}
	return nil
}

// addQuery evaluates the list over every row q returns.
func (r *returningRows) addQuery(ctx context.Context, s *Session, q *bind.QueryStmt) error {
	res, err := s.startQuery(ctx, q, false)
	if err != nil {
		return err
	}
	defer res.Close()
	for {
		rec, err := res.Next()
		if err != nil || rec == nil {
			return err
		}
		if err := r.add(rec, nil); err != nil {
			return err
		}
	}
}

// result is the statement's result: its rows, and tag with count n as
// the status.
func (r *returningRows) result(tag string, n int64) *Result {
	res := &Result{Schema: r.schema, Status: tag, RowsAffected: n, static: r.recs}
	r.recs = nil
	return res
}

// release frees the rows of a statement that failed.
func (r *returningRows) release() {
	if r == nil {
		return
	}
	for _, rec := range r.recs {
		rec.Release()
	}
	r.recs = nil
}
