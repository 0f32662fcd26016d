package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Project computes one expression per output column, at the live rows
// only. Column references pass the input array through without copying and
// computed columns keep the input's physical layout, so the output batch
// has the input's N and Sel.
//
// NB: when fewer than 1/8 of the input rows are live (after a selective
// filter) and some column is computed, Project compacts instead: every
// output column holds just the live rows and the batch has no Sel.
// Materializing N-row arrays for a few live rows would cost more than
// gathering them (docs/decisions.md, D3).
type Project struct {
	child    Operator
	exprs    []*expr.CompiledExpr
	schema   *arrow.Schema
	env      *Env
	computed bool // some expression is not a bare column reference

	owned  []arrow.Array // computed arrays of the last batch
	out    Batch
	err    error
	done   bool
	closed bool
}

// NewProject compiles exprs against child's schema; names[i] names output
// column i (empty: the expression's text). On success the Project owns
// child; on error the caller still does.
func NewProject(child Operator, exprs []expr.Expr, names []string) (*Project, error) {
	if len(names) != 0 && len(names) != len(exprs) {
		return nil, nferr.Internalf("project: %d names for %d expressions", len(names), len(exprs))
	}
	in := child.Schema()
	p := &Project{child: child}
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		ce, err := expr.CompileExpr(e, in)
		if err != nil {
			return nil, err
		}
		p.exprs = append(p.exprs, ce)
		if _, ok := ce.ColumnIndex(); !ok {
			p.computed = true
		}
		name := e.String()
		if len(names) > 0 && names[i] != "" {
			name = names[i]
		}
		nullable := true
		if idx, ok := ce.ColumnIndex(); ok {
			nullable = in.Field(idx).Nullable
		}
		fields[i] = arrow.Field{Name: name, Type: ce.Type(), Nullable: nullable}
	}
	p.schema = arrow.NewSchema(fields, nil)
	return p, nil
}

// Schema implements Operator.
func (p *Project) Schema() *arrow.Schema { return p.schema }

// Open implements Operator.
func (p *Project) Open(env *Env) error {
	p.env = env
	return p.child.Open(env)
}

func (p *Project) releaseOwned() {
	for _, a := range p.owned {
		a.Release()
	}
	p.owned = p.owned[:0]
}

// Next implements Operator.
func (p *Project) Next() (*Batch, error) {
	if p.err != nil || p.done {
		return nil, p.err
	}
	p.releaseOwned()
	b, err := p.child.Next()
	if err != nil {
		p.err = err
		return nil, err
	}
	if b == nil {
		p.done = true
		return nil, nil
	}
	cols := p.out.Cols[:0]
	// sparseDivisor: compact when live*8 < N (see the type comment).
	const sparseDivisor = 8
	compact := p.computed && b.Sel != nil && len(b.Sel)*sparseDivisor < b.N
	for _, ce := range p.exprs {
		if idx, ok := ce.ColumnIndex(); ok && !compact {
			cols = append(cols, b.Cols[idx])
			continue
		}
		var a arrow.Array
		if compact {
			a, err = ce.EvalCompact(p.env.Alloc, b)
		} else {
			a, err = ce.Eval(p.env.Alloc, b)
		}
		if err != nil {
			p.releaseOwned()
			p.err = err
			return nil, err
		}
		p.owned = append(p.owned, a)
		cols = append(cols, a)
	}
	if compact {
		p.out = Batch{Cols: cols, N: len(b.Sel)}
	} else {
		p.out = Batch{Cols: cols, N: b.N, Sel: b.Sel}
	}
	return &p.out, nil
}

// Close implements Operator.
func (p *Project) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.releaseOwned()
	p.out = Batch{}
	return p.child.Close()
}
