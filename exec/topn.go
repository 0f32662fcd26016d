package exec

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TopNSpec configures ORDER BY ... LIMIT Limit OFFSET Offset.
type TopNSpec struct {
	Keys   []SortKey
	Limit  int64
	Offset int64
}

// TopN keeps the Limit+Offset first rows of its input in sort order in a
// bounded heap and emits rows [Offset, Offset+Limit) of them, sorted. Ties
// keep input order (like the stable Sort), so TopN equals Sort followed by
// Limit.
//
// Rows are copied into a store as they arrive; rows that leave the heap
// become garbage, and the store is compacted when it holds more than twice
// the heap, so memory stays O(Limit+Offset) rows plus one batch.
type TopN struct {
	in     Operator
	spec   TopNSpec
	k      int // Limit + Offset
	keys   []sortKeyInfo
	infos  []colInfo
	schema *arrow.Schema
	rc     *rowComparer

	env     *Env
	acct    *Account
	charged int64
	store   *rowStore
	seq     []uint64 // arrival number of each store row
	next    uint64
	h       topHeap
	result  []int32
	pos     int
	done    bool
	opState
}

// topHeap is a max-heap of store rows: the worst kept row on top.
type topHeap struct {
	rows []int32
	t    *TopN
}

func (h *topHeap) Len() int { return len(h.rows) }

// less orders "worse first": the row that sorts later is smaller.
func (h *topHeap) Less(i, j int) bool { return h.t.before(h.rows[j], h.rows[i]) }
func (h *topHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *topHeap) Push(x any)         { h.rows = append(h.rows, x.(int32)) }
func (h *topHeap) Pop() any {
	x := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return x
}

// before reports whether store row a sorts before store row b.
func (t *TopN) before(a, b int32) bool {
	if c := t.rc.compare(t.store, t.store, int(a), int(b)); c != 0 {
		return c < 0
	}
	return t.seq[a] < t.seq[b]
}

// NewTopN validates spec against the input schema.
func NewTopN(in Operator, spec TopNSpec) (*TopN, error) {
	keys, err := checkSortKeys(in.Schema(), spec.Keys, "top-n")
	if err != nil {
		return nil, err
	}
	if spec.Limit < 0 || spec.Offset < 0 {
		return nil, nferr.Queryf("top-n: LIMIT %d OFFSET %d: both must be >= 0", spec.Limit, spec.Offset)
	}
	k := spec.Limit + spec.Offset
	if k < spec.Limit || k > math.MaxInt32 {
		return nil, nferr.Queryf("top-n: LIMIT %d OFFSET %d keeps too many rows (use a sort)", spec.Limit, spec.Offset)
	}
	t := &TopN{in: in, spec: spec, k: int(k), keys: keys, schema: in.Schema(), rc: newRowComparer(keys)}
	for i := 0; i < t.schema.NumFields(); i++ {
		c, err := classifyCol(t.schema, i, "top-n", "input")
		if err != nil {
			return nil, err
		}
		t.infos = append(t.infos, c)
	}
	t.h.t = t
	return t, nil
}

// Schema implements Operator: the input's.
func (t *TopN) Schema() *arrow.Schema { return t.schema }

// Open implements Operator.
func (t *TopN) Open(env *Env) error {
	t.env = env
	t.acct = env.Budget.NewAccount("top-n")
	t.store = newRowStore(t.infos)
	return t.in.Open(env)
}

func (t *TopN) charge() error {
	return t.acct.chargeTo(&t.charged, t.store.bytes()+sliceBytes(t.seq)+sliceBytes(t.h.rows))
}

func (t *TopN) consume() error {
	if t.k == 0 {
		return nil
	}
	for {
		if err := t.env.Ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		b, err := t.in.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		first := t.store.n
		t.store.appendBatch(b)
		for r := first; r < t.store.n; r++ {
			t.seq = append(t.seq, t.next)
			t.next++
			row := int32(r)
			if len(t.h.rows) < t.k {
				heap.Push(&t.h, row)
			} else if t.before(row, t.h.rows[0]) {
				t.h.rows[0] = row
				heap.Fix(&t.h, 0)
			}
		}
		if t.store.n > 2*t.k+1024 {
			t.compact()
		}
		if err := t.charge(); err != nil {
			return err
		}
	}
}

// compact rebuilds the store with only the rows in the heap.
func (t *TopN) compact() {
	rows := t.h.rows
	cols := t.store.gather(memory.DefaultAllocator, rows, nil)
	ns := newRowStore(t.infos)
	ns.appendCols(cols, nil, len(rows))
	releaseArrays(cols)
	seq := make([]uint64, len(rows), max(2*len(rows), 16))
	for i, r := range rows {
		seq[i] = t.seq[r]
		rows[i] = int32(i)
	}
	t.store, t.seq = ns, seq
	// The heap order is unchanged: row i keeps its key and sequence.
}

// Next implements Operator.
func (t *TopN) Next() (*Batch, error) {
	if done, err := t.begin(); done {
		return nil, err
	}
	if !t.done {
		if err := t.consume(); err != nil {
			return t.fail(err)
		}
		t.done = true
		res := append([]int32(nil), t.h.rows...)
		slices.SortFunc(res, func(a, b int32) int {
			if c := t.rc.compare(t.store, t.store, int(a), int(b)); c != 0 {
				return c
			}
			return cmp.Compare(t.seq[a], t.seq[b])
		})
		if int64(len(res)) > t.spec.Offset {
			t.result = res[t.spec.Offset:]
		}
	}
	if t.pos >= len(t.result) {
		return nil, nil
	}
	if err := t.env.Ctx.Err(); err != nil {
		return t.fail(nferr.With(nferr.KindCanceled, err))
	}
	end := min(t.pos+max(t.env.BatchSize, 1), len(t.result))
	idx := t.result[t.pos:end]
	t.pos = end
	return t.produce(t.store.gather(t.env.Alloc, idx, nil), len(idx)), nil
}

// Close implements Operator.
func (t *TopN) Close() error {
	if !t.closing() {
		return nil
	}
	t.store, t.seq, t.h.rows, t.result = nil, nil, nil, nil
	if t.acct != nil {
		t.acct.Close()
	}
	return t.in.Close()
}
