package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// OrderedMerge merges N inputs, each sorted by the same keys, into one
// sorted output: the exchange that ends a parallel sort (N Sorts, or N
// TopNs followed by a TopN) and the merge phase of an external sort.
//
// Each input is driven by its own goroutine (a one-input Gather), so the
// sorts run in parallel. The merge is a k-way heap merge that copies runs:
// after choosing the input with the smallest row, it takes every following
// row of that input that still sorts before the other inputs' heads. Ties
// go to the input with the lower index, so the output order is
// deterministic: a merge of stable sorts of the inputs in order equals a
// stable sort of their concatenation.
type OrderedMerge struct {
	srcs   []Operator
	direct bool // inputs read in place, memory on a forced account (newRunMerge)
	keys   []sortKeyInfo
	infos  []colInfo
	schema *arrow.Schema
	rc     *rowComparer

	env    *Env
	acct   *Account
	stores []*rowStore // current batch of each input
	pos    []int
	heap   []int     // inputs with rows, min-heap by head row
	merged *rowStore // the rows of the next output batch
	idx    []int32
	primed bool
	opState
}

// NewOrderedMerge returns the merge of inputs sorted by keys.
func NewOrderedMerge(inputs []Operator, keys []SortKey) (*OrderedMerge, error) {
	return newOrderedMerge(inputs, keys, false)
}

// newRunMerge returns the merge of the sorted runs of an external sort:
// the inputs (spill files) are read in place, without a goroutine each,
// and the merge's memory (a batch per input) is charged beyond the budget
// if it must be: the sort has given back what it held, and a merge that
// failed here could not spill its way out.
func newRunMerge(inputs []Operator, keys []SortKey) (*OrderedMerge, error) {
	return newOrderedMerge(inputs, keys, true)
}

func newOrderedMerge(inputs []Operator, keys []SortKey, direct bool) (*OrderedMerge, error) {
	if len(inputs) == 0 {
		return nil, nferr.Internalf("ordered merge: no inputs")
	}
	schema := inputs[0].Schema()
	ks, err := checkSortKeys(schema, keys, "ordered merge")
	if err != nil {
		return nil, err
	}
	m := &OrderedMerge{keys: ks, schema: schema, rc: newRowComparer(ks), direct: direct}
	for i := 0; i < schema.NumFields(); i++ {
		c, err := classifyCol(schema, i, "ordered merge", "input")
		if err != nil {
			return nil, err
		}
		m.infos = append(m.infos, c)
	}
	for i, in := range inputs {
		if i > 0 {
			if err := checkSchemaTypes(schema, in.Schema()); err != nil {
				return nil, nferr.Wrap(nferr.KindInternal, err, "ordered merge: input %d", i)
			}
		}
		if direct {
			m.srcs = append(m.srcs, in)
			continue
		}
		g, err := NewGather([]Operator{in})
		if err != nil {
			return nil, err
		}
		m.srcs = append(m.srcs, g)
	}
	return m, nil
}

// Schema implements Operator.
func (m *OrderedMerge) Schema() *arrow.Schema { return m.schema }

// Open implements Operator.
func (m *OrderedMerge) Open(env *Env) error {
	m.env = env
	if m.direct {
		m.acct = env.Budget.NewForcedAccount("sort merge")
	} else {
		m.acct = env.Budget.NewAccount("ordered merge")
	}
	m.merged = newRowStore(m.infos)
	m.stores = make([]*rowStore, len(m.srcs))
	m.pos = make([]int, len(m.srcs))
	for i, s := range m.srcs {
		m.stores[i] = newRowStore(m.infos)
		if err := s.Open(env); err != nil {
			return err
		}
	}
	return nil
}

// fill loads the next batch of input i; false at its end.
func (m *OrderedMerge) fill(i int) (bool, error) {
	st := m.stores[i]
	st.reset()
	m.pos[i] = 0
	b, err := m.srcs[i].Next()
	if err != nil || b == nil {
		return false, err
	}
	st.appendBatch(b)
	return true, nil
}

// less orders input heads: smaller row first, then lower input.
func (m *OrderedMerge) less(i, j int) bool {
	c := m.rc.compare(m.stores[i], m.stores[j], m.pos[i], m.pos[j])
	return c < 0 || (c == 0 && i < j)
}

func (m *OrderedMerge) siftDown(k int) {
	h := m.heap
	for {
		l := 2*k + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && m.less(h[r], h[l]) {
			c = r
		}
		if !m.less(h[c], h[k]) {
			return
		}
		h[k], h[c] = h[c], h[k]
		k = c
	}
}

func (m *OrderedMerge) charge() error {
	var n int64
	for _, s := range m.stores {
		n += s.bytes()
	}
	n += m.merged.bytes()
	if d := n - m.acct.Used(); d > 0 {
		return m.acct.Grow(d)
	} else if d < 0 {
		m.acct.Shrink(-d)
	}
	return nil
}

// Next implements Operator.
func (m *OrderedMerge) Next() (*Batch, error) {
	if done, err := m.begin(); done {
		return nil, err
	}
	if err := m.env.Ctx.Err(); err != nil {
		return m.fail(nferr.With(nferr.KindCanceled, err))
	}
	if !m.primed {
		m.primed = true
		for i := range m.srcs {
			ok, err := m.fill(i)
			if err != nil {
				return m.fail(err)
			}
			if ok {
				m.heap = append(m.heap, i)
			}
		}
		for k := len(m.heap)/2 - 1; k >= 0; k-- {
			m.siftDown(k)
		}
	}
	limit := max(m.env.BatchSize, 1)
	m.merged.reset()
	for len(m.heap) > 0 && m.merged.n < limit {
		i := m.heap[0]
		st := m.stores[i]
		// The competitor is the best head among the other inputs.
		comp := -1
		if len(m.heap) > 1 {
			comp = m.heap[1]
			if len(m.heap) > 2 && m.less(m.heap[2], comp) {
				comp = m.heap[2]
			}
		}
		start := m.pos[i]
		end := start + 1
		for end < st.n && end-start < limit-m.merged.n {
			if comp >= 0 {
				c := m.rc.compare(st, m.stores[comp], end, m.pos[comp])
				if c > 0 || (c == 0 && comp < i) {
					break
				}
			}
			end++
		}
		for c, v := range m.merged.vecs {
			v.AppendVec(st.vecs[c], start, end)
		}
		m.merged.n += end - start
		m.pos[i] = end
		if end == st.n {
			ok, err := m.fill(i)
			if err != nil {
				return m.fail(err)
			}
			if !ok {
				last := len(m.heap) - 1
				m.heap[0] = m.heap[last]
				m.heap = m.heap[:last]
			}
		}
		if len(m.heap) > 0 {
			m.siftDown(0)
		}
	}
	if err := m.charge(); err != nil {
		return m.fail(err)
	}
	if m.merged.n == 0 {
		return nil, nil
	}
	m.idx = m.idx[:0]
	for r := 0; r < m.merged.n; r++ {
		m.idx = append(m.idx, int32(r))
	}
	return m.produce(m.merged.gather(m.env.Alloc, m.idx, nil), m.merged.n), nil
}

// Close implements Operator.
func (m *OrderedMerge) Close() error {
	if !m.closing() {
		return nil
	}
	first := closeChildren(m.srcs...)
	m.stores, m.merged = nil, nil
	if m.acct != nil {
		m.acct.Close()
	}
	return first
}
