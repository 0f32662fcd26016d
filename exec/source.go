package exec

import (
	"fmt"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/nicflow/nicflow/internal/nferr"
)

// BatchSource is an in-memory source operator: it returns given record
// batches, in order, as Batches. The planner uses it for small constant
// inputs; tests use it (through the operator harness) to feed operators.
//
// The source never copies: each returned Batch's columns are the record's
// arrays. Records of zero rows, and records whose selection is empty, are
// skipped (a returned batch always has a live row).
type BatchSource struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	sels   [][]int32

	env    *Env
	pos    int
	out    Batch
	done   bool
	closed bool
}

// NewBatchSource returns a source that emits recs in order. Every record's
// schema must have the same field types as schema (names may differ). The
// source Retains the records; the caller keeps its own references and
// releases them as usual. Close releases the source's references.
func NewBatchSource(schema *arrow.Schema, recs ...arrow.RecordBatch) (*BatchSource, error) {
	return NewBatchSourceWithSel(schema, recs, nil)
}

// NewBatchSourceWithSel is NewBatchSource where batch i carries selection
// vector sels[i] (nil: all rows live). sels may be nil or must have one
// entry per record; each selection must be strictly ascending and within
// [0, rows). The source does not copy or modify the selections.
func NewBatchSourceWithSel(schema *arrow.Schema, recs []arrow.RecordBatch, sels [][]int32) (*BatchSource, error) {
	if schema == nil {
		return nil, nferr.Internalf("batch source: nil schema")
	}
	if sels != nil && len(sels) != len(recs) {
		return nil, nferr.Internalf("batch source: %d selections for %d records", len(sels), len(recs))
	}
	for i, r := range recs {
		if r == nil {
			return nil, nferr.Internalf("batch source: record %d is nil", i)
		}
		if err := checkSchemaTypes(schema, r.Schema()); err != nil {
			return nil, nferr.Wrap(nferr.KindInternal, err, "batch source: record %d", i)
		}
		if sels != nil {
			if err := checkSel(sels[i], int(r.NumRows())); err != nil {
				return nil, nferr.Wrap(nferr.KindInternal, err, "batch source: record %d", i)
			}
		}
	}
	s := &BatchSource{schema: schema, recs: append([]arrow.RecordBatch(nil), recs...), sels: sels}
	for _, r := range s.recs {
		r.Retain()
	}
	return s, nil
}

// checkSchemaTypes reports whether got has the same number of fields as want
// with identical types.
func checkSchemaTypes(want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return nferr.Internalf("has %d columns, want %d", got.NumFields(), want.NumFields())
	}
	for i := 0; i < want.NumFields(); i++ {
		if !arrow.TypeEqual(want.Field(i).Type, got.Field(i).Type) {
			return nferr.Internalf("column %d (%s) has type %s, want %s", i, want.Field(i).Name, got.Field(i).Type, want.Field(i).Type)
		}
	}
	return nil
}

func checkSel(sel []int32, n int) error {
	prev := int32(-1)
	for _, p := range sel {
		if p <= prev || int(p) >= n {
			return fmt.Errorf("selection vector not strictly ascending within [0, %d): %d after %d", n, p, prev)
		}
		prev = p
	}
	return nil
}

// Schema implements Operator.
func (s *BatchSource) Schema() *arrow.Schema { return s.schema }

// Open implements Operator.
func (s *BatchSource) Open(env *Env) error {
	if s.closed {
		return nferr.Internalf("batch source: Open after Close")
	}
	s.env = env
	return nil
}

// Next implements Operator.
func (s *BatchSource) Next() (*Batch, error) {
	if s.done || s.closed {
		return nil, nil
	}
	if s.env == nil {
		return nil, nferr.Internalf("batch source: Next before Open")
	}
	if err := s.env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	for s.pos < len(s.recs) {
		r := s.recs[s.pos]
		var sel []int32
		if s.sels != nil {
			sel = s.sels[s.pos]
		}
		s.pos++
		n := int(r.NumRows())
		if n == 0 || (sel != nil && len(sel) == 0) {
			continue
		}
		s.out = Batch{Cols: r.Columns(), N: n, Sel: sel}
		return &s.out, nil
	}
	s.done = true
	return nil, nil
}

// Close implements Operator. It releases the source's references to its
// records.
func (s *BatchSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
	s.out = Batch{}
	return nil
}

// Values is the VALUES list: constant rows, evaluated when the operator
// opens (so errors such as 1/0 are reported by the query, as KindQuery).
// Column i's type is the common type of the i-th values of all rows.
type Values struct {
	schema *arrow.Schema
	cells  [][]*expr.CompiledExpr // [row][col]

	src    *BatchSource
	closed bool
}

// NewValues returns VALUES rows with the given column names. Every row has
// one column-free expression per name.
func NewValues(names []string, rows [][]expr.Expr) (*Values, error) {
	if len(rows) == 0 {
		return nil, nferr.Queryf("VALUES needs at least one row")
	}
	v := &Values{cells: make([][]*expr.CompiledExpr, len(rows))}
	types := make([]arrow.DataType, len(names))
	for c := range types {
		types[c] = arrow.Null
	}
	for r, row := range rows {
		if len(row) != len(names) {
			return nil, nferr.Queryf("VALUES row %d has %d values, want %d", r+1, len(row), len(names))
		}
		for c, e := range row {
			t, err := expr.ResultType(e, emptyInput)
			if err != nil {
				return nil, err
			}
			ct, ok := expr.CommonType(types[c], t)
			if !ok {
				return nil, nferr.Queryf("VALUES column %d: types %s and %s cannot be matched", c+1, expr.TypeName(types[c]), expr.TypeName(t))
			}
			types[c] = ct
		}
	}
	fields := make([]arrow.Field, len(names))
	for c, name := range names {
		if types[c].ID() == arrow.NULL {
			types[c] = arrow.BinaryTypes.String // an all-NULL column, as PostgreSQL types it (text)
		}
		fields[c] = arrow.Field{Name: name, Type: types[c], Nullable: true}
	}
	v.schema = arrow.NewSchema(fields, nil)
	for r, row := range rows {
		v.cells[r] = make([]*expr.CompiledExpr, len(row))
		for c, e := range row {
			t, _ := expr.TypeOf(types[c])
			ce, err := expr.CompileExpr(expr.Cast(e, t), emptyInput)
			if err != nil {
				return nil, err
			}
			v.cells[r][c] = ce
		}
	}
	return v, nil
}

var emptyInput = arrow.NewSchema(nil, nil)

// Schema implements Operator.
func (v *Values) Schema() *arrow.Schema { return v.schema }

// Open implements Operator: it evaluates the rows into one record, served
// in batches of at most env.BatchSize rows.
func (v *Values) Open(env *Env) error {
	if v.closed {
		return nferr.Internalf("values: Open after Close")
	}
	one := &Batch{N: 1}
	cols := make([]arrow.Array, len(v.schema.Fields()))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for c := range cols {
		parts := make([]arrow.Array, len(v.cells))
		release := func() {
			for _, p := range parts {
				if p != nil {
					p.Release()
				}
			}
		}
		for r := range v.cells {
			a, err := v.cells[r][c].Eval(env.Alloc, one)
			if err != nil {
				release()
				return err
			}
			parts[r] = a
		}
		col, err := array.Concatenate(parts, env.Alloc)
		release()
		if err != nil {
			return nferr.Internalf("values: %v", err)
		}
		cols[c] = col
	}
	n := int64(len(v.cells))
	rec := array.NewRecordBatch(v.schema, cols, n)
	defer rec.Release()
	size := int64(max(env.BatchSize, 1))
	var recs []arrow.RecordBatch
	for start := int64(0); start < n; start += size {
		recs = append(recs, rec.NewSlice(start, min(start+size, n)))
	}
	src, err := NewBatchSource(v.schema, recs...)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return err
	}
	v.src = src
	return src.Open(env)
}

// Next implements Operator.
func (v *Values) Next() (*Batch, error) {
	if v.src == nil {
		return nil, nil
	}
	return v.src.Next()
}

// Close implements Operator.
func (v *Values) Close() error {
	if v.closed {
		return nil
	}
	v.closed = true
	if v.src != nil {
		return v.src.Close()
	}
	return nil
}
