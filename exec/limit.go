package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Limit skips the first Offset live rows of its child and then passes on at
// most Limit rows (LIMIT/OFFSET). It narrows Sel and never copies. Once
// the limit is reached it stops pulling from its child.
type Limit struct {
	child  Operator
	limit  int64 // < 0: no limit
	offset int64

	skipped int64
	emitted int64
	sel     []int32
	out     Batch
	err     error
	done    bool
	closed  bool
}

// NewLimit returns child with LIMIT limit (negative: none) OFFSET offset.
// On success the Limit owns child.
func NewLimit(child Operator, limit, offset int64) (*Limit, error) {
	if offset < 0 {
		return nil, nferr.Queryf("OFFSET must not be negative (got %d)", offset)
	}
	return &Limit{child: child, limit: limit, offset: offset}, nil
}

// Schema implements Operator.
func (l *Limit) Schema() *arrow.Schema { return l.child.Schema() }

// Open implements Operator.
func (l *Limit) Open(env *Env) error { return l.child.Open(env) }

// Next implements Operator.
func (l *Limit) Next() (*Batch, error) {
	if l.err != nil || l.done {
		return nil, l.err
	}
	for {
		if l.limit >= 0 && l.emitted >= l.limit {
			l.done = true
			return nil, nil
		}
		b, err := l.child.Next()
		if err != nil {
			l.err = err
			return nil, err
		}
		if b == nil {
			l.done = true
			return nil, nil
		}
		live := int64(b.Len())
		skip := min(l.offset-l.skipped, live)
		l.skipped += skip
		take := live - skip
		if l.limit >= 0 {
			take = min(take, l.limit-l.emitted)
		}
		if take <= 0 {
			continue
		}
		l.emitted += take
		l.out = Batch{Cols: b.Cols, N: b.N, Sel: b.Sel}
		if skip == 0 && take == live {
			return &l.out, nil
		}
		if b.Sel != nil {
			// A subslice of the child's Sel: borrowed like the batch.
			l.out.Sel = b.Sel[skip : skip+take]
		} else {
			l.sel = expr.Grow(l.sel, int(take))
			for i := range l.sel {
				l.sel[i] = int32(skip) + int32(i)
			}
			l.out.Sel = l.sel
		}
		return &l.out, nil
	}
}

// Close implements Operator.
func (l *Limit) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.out = Batch{}
	return l.child.Close()
}
