package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Filter passes on the rows of its child for which a boolean predicate is
// TRUE. It never copies: the output batch is the input batch with a
// narrower Sel. Batches with no passing row are dropped.
type Filter struct {
	child  Operator
	pred   *expr.CompiledExpr
	out    Batch
	err    error
	done   bool
	closed bool
}

// NewFilter compiles pred against child's schema. pred must be BOOLEAN (or
// an untyped NULL, which passes nothing). On success the Filter owns child
// (its Close closes it); on error the caller still does.
func NewFilter(child Operator, pred expr.Expr) (*Filter, error) {
	ce, err := expr.CompileExpr(pred, child.Schema())
	if err != nil {
		return nil, err
	}
	if id := ce.Type().ID(); id != arrow.BOOL && id != arrow.NULL {
		return nil, nferr.Queryf("WHERE condition %s is of type %s, not BOOLEAN", pred, expr.TypeName(ce.Type()))
	}
	return &Filter{child: child, pred: ce}, nil
}

// Schema implements Operator: the child's schema.
func (f *Filter) Schema() *arrow.Schema { return f.child.Schema() }

// Open implements Operator.
func (f *Filter) Open(env *Env) error { return f.child.Open(env) }

// Next implements Operator.
func (f *Filter) Next() (*Batch, error) {
	if f.err != nil || f.done {
		return nil, f.err
	}
	for {
		b, err := f.child.Next()
		if err != nil {
			f.err = err
			return nil, err
		}
		if b == nil {
			f.done = true
			return nil, nil
		}
		sel, err := f.pred.EvalFilter(b)
		if err != nil {
			f.err = err
			return nil, err
		}
		if len(sel) == 0 {
			continue
		}
		f.out = Batch{Cols: b.Cols, N: b.N, Sel: sel}
		if b.Sel == nil && len(sel) == b.N {
			f.out.Sel = nil // every row passed: stay dense
		}
		return &f.out, nil
	}
}

// Close implements Operator.
func (f *Filter) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.out = Batch{}
	return f.child.Close()
}
