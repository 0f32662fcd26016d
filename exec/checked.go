package exec

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Checked wraps op with a checker of the Operator contract, for test
// builds (engine's builder wraps every operator it makes when running
// under go test, as CockroachDB's colflow does): Open once and before
// Next; every batch with live rows, its columns matching the schema and of
// length N, Sel ascending within [0, N); after end of stream or an error,
// the same again; no Next after Close; no two calls at once. A violation
// is an internal error naming the operator (name).
func Checked(op Operator, name string) Operator { return &checkedOp{op: op, name: name} }

type checkedOp struct {
	op   Operator
	name string
	busy atomic.Bool

	opened, closed bool
	ended          bool
	endErr         error
}

func (c *checkedOp) violation(format string, args ...any) error {
	return nferr.Internalf("operator contract broken by %s: "+format, append([]any{c.name}, args...)...)
}

func (c *checkedOp) enter() error {
	if !c.busy.CompareAndSwap(false, true) {
		return c.violation("called from two goroutines at once")
	}
	return nil
}

func (c *checkedOp) Schema() *arrow.Schema { return c.op.Schema() }

func (c *checkedOp) Open(env *Env) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.busy.Store(false)
	if c.opened {
		return c.violation("Open called twice")
	}
	c.opened = true
	return c.op.Open(env)
}

func (c *checkedOp) Next() (*Batch, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.busy.Store(false)
	switch {
	case !c.opened:
		return nil, c.violation("Next before Open")
	case c.closed:
		return nil, c.violation("Next after Close")
	}
	b, err := c.op.Next()
	if c.ended {
		if b != nil || (err == nil) != (c.endErr == nil) {
			return nil, c.violation("Next after the end of the stream returned (%v, %v), not the end again", b != nil, err)
		}
		return nil, err
	}
	if err != nil || b == nil {
		if b != nil {
			return nil, c.violation("Next returned a batch and an error")
		}
		c.ended, c.endErr = true, err
		return nil, err
	}
	if verr := c.checkBatch(b); verr != nil {
		return nil, verr
	}
	return b, nil
}

func (c *checkedOp) checkBatch(b *Batch) error {
	if b.Len() == 0 {
		return c.violation("returned a batch without live rows")
	}
	s := c.op.Schema()
	if len(b.Cols) != s.NumFields() {
		return c.violation("returned %d columns, its schema has %d", len(b.Cols), s.NumFields())
	}
	for i, a := range b.Cols {
		if a.Len() != b.N {
			return c.violation("column %d has %d rows, the batch %d", i, a.Len(), b.N)
		}
		if !arrow.TypeEqual(a.DataType(), s.Field(i).Type) {
			return c.violation("column %d is %s, its schema says %s", i, a.DataType(), s.Field(i).Type)
		}
	}
	prev := int32(-1)
	for _, r := range b.Sel {
		if r <= prev || int(r) >= b.N {
			return c.violation("selection %v is not ascending within [0, %d)", b.Sel, b.N)
		}
		prev = r
	}
	return nil
}

func (c *checkedOp) Close() error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.busy.Store(false)
	c.closed = true
	return c.op.Close()
}
