package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/internal/nferr"
)

// NestedLoopJoinSpec configures a nested-loop join: the join for
// conditions without equalities (a.x < b.y, a.s LIKE b.p, cross joins).
type NestedLoopJoinSpec struct {
	// Type is inner, left, semi, anti or mark (LEFT semi/anti/mark, as for
	// the hash join; the mark is never NULL: EXISTS semantics).
	Type JoinType
	// Condition is a boolean expression over the left columns then the
	// right columns; nil joins every pair (a cross join).
	Condition *expr.Expr
	// MarkName names the mark column (default "mark").
	MarkName string
}

// NestedLoopJoin materializes its right input (charged to the "nested loop
// join" account) and, for every left batch, evaluates the condition over
// all (left row, right row) pairs in chunks of env.BatchSize pairs. Output
// columns follow the hash join: left then right (inner, left), left
// (semi, anti), left then the mark (mark). Rows come out left-major,
// except that a left join emits the unmatched rows of each left batch
// after that batch's matches.
type NestedLoopJoin struct {
	left, right Operator
	spec        NestedLoopJoinSpec
	shape       *joinShape
	filter      rowFilter

	env    *Env
	acct   *Account
	store  *rowStore
	built  bool
	lb     *Batch // current left batch (borrowed)
	lm     []bool // left live row matched
	pj, pr int    // pair cursor: left live row, right row
	tail   bool
	prow   []int32
	brow   []int32
	pj32   []int32
	sel    []int32
	opState
	done    bool
	charged int64
}

// NewNestedLoopJoin validates spec against the inputs' schemas.
func NewNestedLoopJoin(left, right Operator, spec NestedLoopJoinSpec) (*NestedLoopJoin, error) {
	switch spec.Type {
	case JoinInner, JoinLeft, JoinSemi, JoinAnti, JoinMark:
	default:
		return nil, nferr.Queryf("nested loop join: join type %q is not supported (inner, left, semi, anti, mark)", spec.Type)
	}
	// The shape machinery of the hash join gives schemas and takers; the
	// key lists are empty (no equi-keys).
	shape, err := newNLJShape(left.Schema(), right.Schema(), spec)
	if err != nil {
		return nil, err
	}
	return &NestedLoopJoin{left: left, right: right, spec: spec, shape: shape}, nil
}

func newNLJShape(left, right *arrow.Schema, spec NestedLoopJoinSpec) (*joinShape, error) {
	op := "nested loop join"
	s := &joinShape{typ: spec.Type, op: op, residual: spec.Condition, buildSchema: right, probeSchema: left}
	for i := 0; i < right.NumFields(); i++ {
		c, err := classifyCol(right, i, op, "right")
		if err != nil {
			return nil, err
		}
		s.buildInfos = append(s.buildInfos, c)
	}
	for i := 0; i < left.NumFields(); i++ {
		c, err := classifyCol(left, i, op, "left")
		if err != nil {
			return nil, err
		}
		s.probeTake = append(s.probeTake, makeTaker(c))
	}
	s.setSchemas(left, right, spec.MarkName, false) // the mark is never NULL
	s.storeBuild = true
	if err := checkCondition(spec.Condition, s.joined, op, "condition"); err != nil {
		return nil, err
	}
	return s, nil
}

// Schema implements Operator.
func (n *NestedLoopJoin) Schema() *arrow.Schema { return n.shape.schema }

// Open implements Operator.
func (n *NestedLoopJoin) Open(env *Env) error {
	n.env = env
	n.acct = env.Budget.NewAccount("nested loop join")
	n.store = newRowStore(n.shape.buildInfos)
	f, err := n.shape.compileResidual()
	if err != nil {
		return err
	}
	n.filter = f
	if err := n.right.Open(env); err != nil {
		return err
	}
	return n.left.Open(env)
}

// Next implements Operator.
func (n *NestedLoopJoin) Next() (*Batch, error) {
	if done, err := n.begin(); done || n.done {
		return nil, err
	}
	if !n.built {
		if err := drainInto(n.env, n.right, n.store, n.acct); err != nil {
			return n.fail(err)
		}
		n.built = true
	}
	for {
		if err := n.env.Ctx.Err(); err != nil {
			return n.fail(nferr.With(nferr.KindCanceled, err))
		}
		if n.lb == nil {
			b, err := n.left.Next()
			if err != nil {
				return n.fail(err)
			}
			if b == nil {
				n.done = true
				return nil, nil
			}
			n.lb = b
			n.lm = resize(n.lm, b.Len())
			clear(n.lm)
			n.pj, n.pr, n.tail = 0, 0, false
		}
		if !n.tail {
			out, err := n.nextPairs()
			if err != nil {
				return n.fail(err)
			}
			if out != nil {
				return out, nil
			}
			continue
		}
		out := n.leftTail()
		n.lb = nil
		if out != nil {
			return out, nil
		}
	}
}

// nextPairs evaluates the next chunk of pairs; nil when the left batch's
// pairs are exhausted (then the tail runs).
func (n *NestedLoopJoin) nextPairs() (*Batch, error) {
	R, m := n.store.n, n.lb.Len()
	limit := max(n.env.BatchSize, 1)
	n.prow, n.brow, n.pj32 = n.prow[:0], n.brow[:0], n.pj32[:0]
	for n.pj < m && len(n.prow) < limit {
		if R == 0 {
			n.pj = m
			break
		}
		i := int32(rowAt(n.lb.Sel, n.pj))
		for ; n.pr < R && len(n.prow) < limit; n.pr++ {
			n.prow = append(n.prow, i)
			n.brow = append(n.brow, int32(n.pr))
			n.pj32 = append(n.pj32, int32(n.pj))
		}
		if n.pr == R {
			n.pr = 0
			n.pj++
		}
	}
	if len(n.prow) == 0 {
		n.tail = true
		return nil, nil
	}
	cand := n.pairs(n.prow, n.brow)
	var pass []int32
	if n.filter == nil {
		n.sel = n.sel[:0]
		for p := range n.prow {
			n.sel = append(n.sel, int32(p))
		}
		pass = n.sel
	} else {
		var err error
		pass, err = n.filter.EvalFilter(cand)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindQuery, err, "nested loop join: condition")
		}
	}
	for _, p := range pass {
		n.lm[n.pj32[p]] = true
	}
	if (n.spec.Type != JoinInner && n.spec.Type != JoinLeft) || len(pass) == 0 {
		n.releaseOut()
		return nil, nil
	}
	if len(pass) < len(n.prow) || n.filter != nil {
		n.out.Sel = pass
	}
	return &n.out, nil
}

// pairs gathers left ++ right columns for pairs (left physical row, right
// row); -1 gives NULLs.
func (n *NestedLoopJoin) pairs(prow, brow []int32) *Batch {
	alloc := n.env.Alloc
	cols := make([]arrow.Array, 0, n.shape.joined.NumFields())
	for c, take := range n.shape.probeTake {
		cols = append(cols, take(alloc, n.lb.Cols[c], prow))
	}
	cols = n.store.gather(alloc, brow, cols)
	n.owned = append(n.owned, cols...)
	n.out = Batch{Cols: cols, N: len(prow)}
	return &n.out
}

// leftTail emits what the left batch yields once its pairs are done.
func (n *NestedLoopJoin) leftTail() *Batch {
	b := n.lb
	m := len(n.lm)
	switch n.spec.Type {
	case JoinLeft:
		n.prow, n.brow = n.prow[:0], n.brow[:0]
		for j := 0; j < m; j++ {
			if !n.lm[j] {
				n.prow = append(n.prow, int32(rowAt(b.Sel, j)))
				n.brow = append(n.brow, -1)
			}
		}
		if len(n.prow) == 0 {
			return nil
		}
		return n.pairs(n.prow, n.brow)
	case JoinSemi, JoinAnti:
		want := n.spec.Type == JoinSemi
		n.sel = n.sel[:0]
		for j := 0; j < m; j++ {
			if n.lm[j] == want {
				n.sel = append(n.sel, int32(rowAt(b.Sel, j)))
			}
		}
		if len(n.sel) == 0 {
			return nil
		}
		n.out = Batch{Cols: b.Cols, N: b.N, Sel: n.sel}
		return &n.out
	case JoinMark:
		alloc := n.env.Alloc
		vb := newBuffer(alloc, (b.N+7)/8)
		bits := vb.Bytes()
		clear(bits)
		for j := 0; j < m; j++ {
			if n.lm[j] {
				setBit(bits, rowAt(b.Sel, j))
			}
		}
		mark := makeArray(arrow.FixedWidthTypes.Boolean, b.N, 0, nil, vb)
		n.owned = append(n.owned, mark)
		n.out = Batch{Cols: append(append(make([]arrow.Array, 0, len(b.Cols)+1), b.Cols...), mark), N: b.N, Sel: b.Sel}
		return &n.out
	}
	return nil
}

// Close implements Operator.
func (n *NestedLoopJoin) Close() error {
	if !n.closing() {
		return nil
	}
	n.store, n.lb = nil, nil
	if n.acct != nil {
		n.acct.Close()
	}
	return closeChildren(n.right, n.left)
}
