package cluster

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/exec"
)

// retryWriter holds a query's result back from the client while the query
// may still be retried: an attempt that fails after producing rows is then
// run again without the client seeing two partial results. Up to limit
// bytes are held, charged to the query's grant of the coordinator's memory
// once it has one (budget; admission.go); a larger result, or one the
// grant cannot cover, is streamed (sent is set) and the query is no longer
// retried. flush sends what is held when the query succeeds.
type retryWriter struct {
	out    ResultWriter
	limit  int64
	budget func() *exec.Budget // the query's grant, nil before it is admitted

	schema *arrow.Schema
	held   []arrow.RecordBatch
	bytes  int64
	sent   bool          // something reached the client: no more retries
	acct   *exec.Account // on budget(): what held charges
}

func (w *retryWriter) SetSchema(s *arrow.Schema) error {
	if w.sent {
		return w.out.SetSchema(s)
	}
	w.schema = s
	return nil
}

func (w *retryWriter) Write(rec arrow.RecordBatch) error {
	if w.sent {
		return w.out.Write(rec)
	}
	if w.schema == nil {
		w.schema = rec.Schema()
	}
	n := recordBytes(rec)
	if w.acct == nil && w.budget != nil {
		if b := w.budget(); b != nil {
			w.acct = b.NewAccount("result held back for retries")
		}
	}
	if w.acct != nil && w.acct.Grow(n) != nil {
		// The grant is used up: the rows go to the client now, and the
		// query is no longer retried.
		if err := w.flush(); err != nil {
			return err
		}
		return w.out.Write(rec)
	}
	rec.Retain()
	w.held = append(w.held, rec)
	w.bytes += n
	if w.bytes > w.limit {
		return w.flush()
	}
	return nil
}

// flush sends the held schema and batches; from then on batches pass
// straight through.
func (w *retryWriter) flush() error {
	if w.sent {
		return nil
	}
	w.sent = true
	if w.schema != nil {
		if err := w.out.SetSchema(w.schema); err != nil {
			return err
		}
	}
	held := w.held
	w.held = nil
	for i, rec := range held {
		err := w.out.Write(rec)
		w.uncharge(recordBytes(rec))
		rec.Release()
		if err != nil {
			for _, r := range held[i+1:] {
				w.uncharge(recordBytes(r))
				r.Release()
			}
			return err
		}
	}
	return nil
}

func (w *retryWriter) uncharge(n int64) {
	if w.acct != nil {
		w.acct.Shrink(n)
	}
}

// reset drops what a failed attempt produced.
func (w *retryWriter) reset() {
	for _, r := range w.held {
		r.Release()
	}
	if w.acct != nil {
		w.acct.Close()
	}
	w.held, w.schema, w.bytes = nil, nil, 0
}

// release frees whatever is still held (a failed query).
func (w *retryWriter) release() { w.reset() }
