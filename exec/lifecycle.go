package exec

import "github.com/apache/arrow-go/v18/arrow"

// opState is the part of the Operator contract (operator.go) that the
// operators holding state share: the sticky error (once Next has failed,
// every later call returns the same error), whether Close has run, and the
// output batch with the arrays the operator made for it, which it releases
// before producing the next batch and at Close. Operators embed it.
type opState struct {
	err    error
	closed bool
	out    Batch
	owned  []arrow.Array // the arrays of out this operator made
}

// begin starts a Next: it returns the sticky error, releases the previous
// output, and reports done once Close has run.
func (o *opState) begin() (done bool, err error) {
	if o.err != nil {
		return true, o.err
	}
	o.releaseOut()
	return o.closed, nil
}

// produce makes cols (n rows, made by this operator) the output batch.
func (o *opState) produce(cols []arrow.Array, n int) *Batch {
	o.owned = cols
	o.out = Batch{Cols: cols, N: n}
	return &o.out
}

// releaseOut releases the output batch's arrays.
func (o *opState) releaseOut() {
	releaseArrays(o.owned)
	o.owned = o.owned[:0]
	o.out = Batch{}
}

// fail makes err sticky and returns it as Next's result.
func (o *opState) fail(err error) (*Batch, error) {
	o.err = err
	o.releaseOut()
	return nil, err
}

// closing starts a Close: false when Close has run already; otherwise it
// marks the operator closed and releases the output.
func (o *opState) closing() bool {
	if o.closed {
		return false
	}
	o.closed = true
	o.releaseOut()
	return true
}

// closeChildren closes every child (all of them, even after an error) and
// returns the first error.
func closeChildren(children ...Operator) error {
	var first error
	for _, c := range children {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
