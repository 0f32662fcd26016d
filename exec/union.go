package exec

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// UnionAll returns the rows of its inputs one input after the other
// (UNION ALL). Inputs must have the same column types; the output takes the
// first input's column names. Batches pass through unchanged.
type UnionAll struct {
	inputs []Operator
	cur    int
	err    error
	closed bool
}

// NewUnionAll returns the union of inputs (at least one). On success it
// owns them.
func NewUnionAll(inputs ...Operator) (*UnionAll, error) {
	if len(inputs) == 0 {
		return nil, nferr.Internalf("union all: no inputs")
	}
	want := inputs[0].Schema()
	for i, in := range inputs[1:] {
		if err := checkSchemaTypes(want, in.Schema()); err != nil {
			return nil, nferr.Queryf("UNION ALL input %d does not match input 0: %v", i+1, err)
		}
	}
	return &UnionAll{inputs: inputs}, nil
}

// Schema implements Operator.
func (u *UnionAll) Schema() *arrow.Schema { return u.inputs[0].Schema() }

// Open implements Operator: it opens every input.
func (u *UnionAll) Open(env *Env) error {
	for _, in := range u.inputs {
		if err := in.Open(env); err != nil {
			return err
		}
	}
	return nil
}

// Next implements Operator.
func (u *UnionAll) Next() (*Batch, error) {
	for u.err == nil && u.cur < len(u.inputs) {
		b, err := u.inputs[u.cur].Next()
		if err != nil {
			u.err = err
			break
		}
		if b != nil {
			return b, nil
		}
		u.cur++
	}
	return nil, u.err
}

// Close implements Operator: it closes every input.
func (u *UnionAll) Close() error {
	if u.closed {
		return nil
	}
	u.closed = true
	var errs []error
	for _, in := range u.inputs {
		if err := in.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nferr.With(nferr.KindInternal, errors.Join(errs...))
	}
	return nil
}
