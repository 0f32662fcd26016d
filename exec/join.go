package exec

// Hash join.
//
// The operator builds a hash table from its build input (BuildRight, the
// default, or BuildLeft; the planner chooses, usually the smaller side) and
// streams the other input through it. Whatever the build side:
//
//   - Output columns are the left input's columns then the right input's
//     (inner, left, right, full); the left input's only (semi, anti); the
//     left input's then a boolean mark column (mark). Semi, anti and mark
//     are LEFT semi/anti/mark joins: the planner puts the preserved side on
//     the left.
//   - Rows whose key has a NULL never match (SQL equality), but are kept
//     by outer joins and by anti joins.
//   - Null-aware anti join (NOT IN) and null-aware mark join: when the
//     right side has a NULL key, or the left row's key is NULL (and the
//     right side is not empty), the comparison is UNKNOWN: the anti join
//     drops the row, the mark join marks it NULL. With a residual
//     condition, only right rows passing it count. Null-aware joins take
//     one key column and build on the right.
//   - A residual condition (any boolean expression over the left columns
//     then the right columns) filters candidate pairs after the key
//     match; a pair counts as a match only when it is TRUE.
//
// Build-side memory (the rows, the key table, the group lists) is charged
// to an account named "hash join build".
//
// The built side is a joinTable: rows in a rowStore, keys in a keyTable,
// and, per distinct key, the list of its rows (counting-sorted after the
// build, so a probe walks one contiguous slice). A joinTable can be shared
// by several probing HashJoins (parallel.go): then matched-row flags are
// set atomically and the last prober to finish emits the build-side tail.

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// JoinType is the kind of join.
type JoinType string

// The join types.
const (
	JoinInner JoinType = "inner"
	JoinLeft  JoinType = "left"  // left outer
	JoinRight JoinType = "right" // right outer
	JoinFull  JoinType = "full"  // full outer
	JoinSemi  JoinType = "semi"  // left rows with a match
	JoinAnti  JoinType = "anti"  // left rows without a match
	JoinMark  JoinType = "mark"  // every left row plus a boolean: has a match
)

// JoinSide names an input of a join.
type JoinSide string

// The sides.
const (
	SideRight JoinSide = "right"
	SideLeft  JoinSide = "left"
)

// HashJoinSpec configures a hash join: plain data, shipped to workers.
type HashJoinSpec struct {
	Type JoinType
	// LeftKeys and RightKeys are the equi-join key columns, pairwise; their
	// types must be identical (the planner casts).
	LeftKeys, RightKeys []int
	// Build is the input the hash table is built from ("" = right).
	Build JoinSide
	// NullAware gives anti and mark joins NOT IN semantics (see the file
	// comment). Requires one key and Build right.
	NullAware bool
	// Residual, when set, is a boolean condition over the left columns then
	// the right columns that every matching pair must satisfy.
	Residual *expr.Expr
	// MarkName names the mark column (default "mark").
	MarkName string
	// BuildRows is the planner's estimate of the build side's rows (0:
	// none). The hash table is sized for up to maxReservedKeys of them
	// when the first build rows arrive, instead of doubling its way up
	// from a few hundred slots; a wrong estimate costs at most that
	// reservation, or the growth it would have saved.
	BuildRows int64 `json:"build_rows,omitempty"`
}

// maxReservedKeys bounds what an estimate reserves in a build's hash table
// (2 MiB of slots of one integer key): the estimate is the whole plan's, a
// task of a distributed plan may get a share of it, and an estimate can be
// far off.
const maxReservedKeys = 1 << 16

func (s HashJoinSpec) buildLeft() bool { return s.Build == SideLeft }

// rowFilter is what a join needs from a compiled condition: the live rows
// of a batch for which it is TRUE (*CompiledExpr implements it).
type rowFilter interface {
	EvalFilter(b *Batch) ([]int32, error)
}

// joinShape is the part of a join decided at construction, shared by every
// instance probing the same build.
type joinShape struct {
	typ         JoinType
	buildLeft   bool
	nullAware   bool
	op          string
	schema      *arrow.Schema // output
	joined      *arrow.Schema // left ++ right (residual input)
	buildSchema *arrow.Schema
	probeSchema *arrow.Schema
	buildKeys   []int
	probeKeys   []int
	keyInfos    []colInfo
	storeBuild  bool // keep build columns (output or residual needs them)
	buildInfos  []colInfo
	probeTake   []takeFn
	residual    *expr.Expr
	// reserveKeys is how many keys the build's hash table is sized for
	// when it gets its first keys (HashJoinSpec.BuildRows, bounded).
	reserveKeys int
}

func (s *joinShape) probePreserve() bool {
	return s.typ == JoinFull || (s.typ == JoinLeft && !s.buildLeft) || (s.typ == JoinRight && s.buildLeft)
}

func (s *joinShape) buildPreserve() bool {
	return s.typ == JoinFull || (s.typ == JoinLeft && s.buildLeft) || (s.typ == JoinRight && !s.buildLeft)
}

// emitsPairs: matching pairs are output rows.
func (s *joinShape) emitsPairs() bool {
	switch s.typ {
	case JoinInner, JoinLeft, JoinRight, JoinFull:
		return true
	}
	return false
}

// tracksBuild: build rows remember whether they matched.
func (s *joinShape) tracksBuild() bool {
	return s.buildPreserve() || (s.buildLeft && (s.typ == JoinSemi || s.typ == JoinAnti || s.typ == JoinMark))
}

// newJoinShape validates spec against the two input schemas.
func newJoinShape(left, right *arrow.Schema, spec HashJoinSpec, op string) (*joinShape, error) {
	s := &joinShape{typ: spec.Type, buildLeft: spec.buildLeft(), nullAware: spec.NullAware, op: op, residual: spec.Residual,
		reserveKeys: int(min(max(spec.BuildRows, 0), maxReservedKeys))}
	switch spec.Type {
	case JoinInner, JoinLeft, JoinRight, JoinFull, JoinSemi, JoinAnti, JoinMark:
	default:
		return nil, nferr.Queryf("%s: unknown join type %q", op, spec.Type)
	}
	if spec.Build != "" && spec.Build != SideLeft && spec.Build != SideRight {
		return nil, nferr.Queryf("%s: unknown build side %q", op, spec.Build)
	}
	if len(spec.LeftKeys) != len(spec.RightKeys) || len(spec.LeftKeys) == 0 {
		return nil, nferr.Queryf("%s: %d left keys and %d right keys (want the same number, at least one)", op, len(spec.LeftKeys), len(spec.RightKeys))
	}
	if spec.NullAware {
		if spec.Type != JoinAnti && spec.Type != JoinMark {
			return nil, nferr.Queryf("%s: null-aware applies to anti and mark joins, not %s", op, spec.Type)
		}
		if len(spec.LeftKeys) != 1 || s.buildLeft {
			return nil, nferr.Queryf("%s: a null-aware join takes one key column and builds on the right", op)
		}
	}
	for i := range spec.LeftKeys {
		lc, err := classifyCol(left, spec.LeftKeys[i], op, "left key")
		if err != nil {
			return nil, err
		}
		rc, err := classifyCol(right, spec.RightKeys[i], op, "right key")
		if err != nil {
			return nil, err
		}
		if !arrow.TypeEqual(lc.dt, rc.dt) {
			return nil, nferr.Queryf("%s: key %d types differ: left %s is %s, right %s is %s (cast one side)", op, i,
				left.Field(spec.LeftKeys[i]).Name, lc.dt, right.Field(spec.RightKeys[i]).Name, rc.dt)
		}
		s.keyInfos = append(s.keyInfos, lc)
	}
	s.buildSchema, s.probeSchema = right, left
	s.buildKeys, s.probeKeys = spec.RightKeys, spec.LeftKeys
	if s.buildLeft {
		s.buildSchema, s.probeSchema = left, right
		s.buildKeys, s.probeKeys = spec.LeftKeys, spec.RightKeys
	}
	for i := 0; i < s.buildSchema.NumFields(); i++ {
		c, err := classifyCol(s.buildSchema, i, op, "build")
		if err != nil {
			return nil, err
		}
		s.buildInfos = append(s.buildInfos, c)
	}
	for i := 0; i < s.probeSchema.NumFields(); i++ {
		c, err := classifyCol(s.probeSchema, i, op, "probe")
		if err != nil {
			return nil, err
		}
		s.probeTake = append(s.probeTake, makeTaker(c))
	}
	s.setSchemas(left, right, spec.MarkName, true)
	s.storeBuild = s.emitsPairs() || s.buildLeft || spec.Residual != nil
	if err := checkCondition(spec.Residual, s.joined, op, "residual condition"); err != nil {
		return nil, err
	}
	return s, nil
}

// setSchemas sets the joined schema (the left columns then the right ones,
// what a condition sees) and the output schema of a join of type s.typ:
// the left columns for semi and anti, plus the mark (named markName,
// default "mark", nullable as markNullable says) for mark joins, and both
// sides otherwise, outer joins making the other side's columns nullable.
func (s *joinShape) setSchemas(left, right *arrow.Schema, markName string, markNullable bool) {
	lf, rf := left.Fields(), right.Fields()
	s.joined = arrow.NewSchema(append(append([]arrow.Field(nil), lf...), rf...), nil)
	switch s.typ {
	case JoinSemi, JoinAnti:
		s.schema = arrow.NewSchema(lf, nil)
	case JoinMark:
		if markName == "" {
			markName = "mark"
		}
		mark := arrow.Field{Name: markName, Type: arrow.FixedWidthTypes.Boolean, Nullable: markNullable}
		s.schema = arrow.NewSchema(append(append([]arrow.Field(nil), lf...), mark), nil)
	default:
		nullable := func(fs []arrow.Field, null bool) []arrow.Field {
			out := make([]arrow.Field, len(fs))
			for i, f := range fs {
				out[i] = f
				out[i].Nullable = f.Nullable || null
			}
			return out
		}
		lnull := s.typ == JoinRight || s.typ == JoinFull
		rnull := s.typ == JoinLeft || s.typ == JoinFull
		s.schema = arrow.NewSchema(append(nullable(lf, lnull), nullable(rf, rnull)...), nil)
	}
}

// checkCondition compiles a join's condition (if any) over the joined
// schema once, to report a bad one when the join is built; each instance
// compiles its own copy later (a CompiledExpr is not concurrency-safe).
// what names the condition in errors.
func checkCondition(cond *expr.Expr, joined *arrow.Schema, op, what string) error {
	if cond == nil {
		return nil
	}
	ce, err := expr.CompileExpr(*cond, joined)
	if err != nil {
		return nferr.Wrap(nferr.KindQuery, err, "%s: %s", op, what)
	}
	if ce.Type().ID() != arrow.BOOL {
		return nferr.Queryf("%s: %s %s is %s, not BOOLEAN", op, what, cond, ce.Type())
	}
	return nil
}

func (s *joinShape) compileResidual() (rowFilter, error) {
	if s.residual == nil {
		return nil, nil
	}
	return expr.CompileExpr(*s.residual, s.joined)
}

// joinTable is the built side of a hash join.
type joinTable struct {
	shape      *joinShape
	store      *rowStore // build columns (none when not needed)
	keys       *keyTable
	nrows      int
	start      []uint32 // rows of group g: rows[start[g]:start[g+1]]
	rows       []uint32
	nullRows   []uint32 // build rows with a NULL key
	hasNullKey bool
	matched    []uint32 // bitmap of build rows that matched (atomic)
	acct       *Account
	accBytes   int64

	// Partitioned mode (parallel builds): one key table per row-hash
	// partition, filled concurrently; rows hold (local group << pbits |
	// partition) until finish turns them into global group ids.
	parts    []*joinPart
	pbits    uint
	partBase []uint32 // global id of each partition's group 0
	mu       sync.Mutex

	// probersLeft counts probers still running; the one that brings it to
	// zero emits the build-side tail.
	probersLeft atomic.Int32
}

// joinPart is one partition's key table in a partitioned build.
type joinPart struct {
	mu   sync.Mutex
	keys *keyTable
	acct *Account
}

// maxJoinParts bounds the partitions of a parallel build (6 bits of a
// row's group word).
const maxJoinParts = 64

// partition switches t to partitioned mode with n (a power of two)
// partitions, each charging its own account from budget and reserving
// its share of the keys the whole table would have reserved.
func (t *joinTable) partition(n int, env *Env) {
	t.pbits = uint(bits.TrailingZeros(uint(n)))
	reserve := t.keys.reserveKeys
	t.keys.reserveKeys = 0
	for i := 0; i < n; i++ {
		a := env.NewSpillableAccount("hash join build")
		kt := newKeyTable(t.shape.keyInfos, a)
		if reserve > 0 {
			kt.reserveKeys = reserve/n + 1
		}
		t.parts = append(t.parts, &joinPart{keys: kt, acct: a})
	}
}

// groups is the number of distinct build keys.
func (t *joinTable) groups() int {
	if t.parts == nil {
		return t.keys.groups()
	}
	n := 0
	for _, p := range t.parts {
		n += p.keys.groups()
	}
	return n
}

// newJoinTable returns an empty build table whose key table reserves room
// for reserve keys before its first insert (0: none).
func newJoinTable(shape *joinShape, acct *Account, reserve int) *joinTable {
	t := &joinTable{shape: shape, acct: acct, keys: newKeyTable(shape.keyInfos, acct)}
	t.keys.reserveKeys = reserve
	if shape.storeBuild {
		t.store = newRowStore(shape.buildInfos)
	} else {
		t.store = newRowStore(nil)
	}
	return t
}

func (t *joinTable) bytes() int64 {
	return t.store.bytes() + sliceBytes(t.start) + sliceBytes(t.rows) + sliceBytes(t.nullRows) + sliceBytes(t.matched)
}

func (t *joinTable) charge() error { return t.acct.chargeTo(&t.accBytes, t.bytes()) }

// buildScratch is per-goroutine scratch of the build.
type buildScratch struct {
	gids    []uint32
	keyCols []arrow.Array
	nn      []int32
	part    *HashPartitioner // partitioned builds
	live    []int32
	enc     []uint32
	kc      *keyCollector // key filters' values (nil: none)
}

// addBatch adds the live rows of a build batch. Rows get consecutive ids;
// t.rows temporarily holds each row's group id (noGroup for NULL keys).
func (t *joinTable) addBatch(b *Batch, sc *buildScratch) error {
	base := uint32(t.nrows)
	sc.keyCols = sc.keyCols[:0]
	for _, k := range t.shape.buildKeys {
		sc.keyCols = append(sc.keyCols, b.Cols[k])
	}
	m := b.Len()
	if t.shape.storeBuild {
		t.store.appendBatch(b)
	}
	t.nrows += m
	// Rows with a NULL key never match: keep them out of the key table.
	nnSel, nullPos := nonNullKeys(sc.keyCols, b.Sel, b.N, &sc.nn)
	first := len(t.rows)
	t.rows = growTo(t.rows, first+m)
	if len(nullPos) > 0 {
		t.hasNullKey = true
		for _, j := range nullPos {
			t.rows[first+int(j)] = noGroup
			t.nullRows = append(t.nullRows, base+uint32(j))
		}
	}
	if nnSel != nil && len(nnSel) == 0 {
		return t.charge()
	}
	sc.kc.add(sc.keyCols, nnSel, b.N)
	cnt := lenLive(nnSel, b.N)
	sc.gids = resize(sc.gids, cnt)
	if err := t.keys.findOrInsert(sc.keyCols, nnSel, b.N, sc.gids); err != nil {
		return err
	}
	if len(nullPos) == 0 {
		copy(t.rows[first:], sc.gids)
	} else {
		// Spread the groups over the non-NULL rows (nullPos ascending).
		k, q := 0, 0
		for j := 0; j < m; j++ {
			if q < len(nullPos) && int(nullPos[q]) == j {
				q++
				continue
			}
			t.rows[first+j] = sc.gids[k]
			k++
		}
	}
	return t.charge()
}

// addBatchParallel is addBatch for partitioned tables; build goroutines call
// it concurrently.
func (t *joinTable) addBatchParallel(b *Batch, sc *buildScratch) error {
	sc.keyCols = sc.keyCols[:0]
	for _, k := range t.shape.buildKeys {
		sc.keyCols = append(sc.keyCols, b.Cols[k])
	}
	m := b.Len()
	nnSel, nullPos := nonNullKeys(sc.keyCols, b.Sel, b.N, &sc.nn)
	// Reserve row ids [base, base+m) and store the rows.
	t.mu.Lock()
	base := t.nrows
	if t.shape.storeBuild {
		t.store.appendBatch(b)
	}
	t.nrows += m
	t.rows = growTo(t.rows, base+m)
	for _, j := range nullPos {
		t.rows[base+int(j)] = noGroup
		t.nullRows = append(t.nullRows, uint32(base)+uint32(j))
	}
	t.hasNullKey = t.hasNullKey || len(nullPos) > 0
	err := t.charge()
	t.mu.Unlock()
	if err != nil || (nnSel != nil && len(nnSel) == 0) {
		return err
	}
	sc.kc.add(sc.keyCols, nnSel, b.N)
	// Live index of each physical row.
	sc.live = resize(sc.live, b.N)
	for j := 0; j < m; j++ {
		sc.live[rowAt(b.Sel, j)] = int32(j)
	}
	sc.enc = resize(sc.enc, m)
	for j := range sc.enc {
		sc.enc[j] = noGroup
	}
	for q, sel := range sc.part.Split(&Batch{Cols: b.Cols, N: b.N, Sel: nnSel}) {
		if len(sel) == 0 {
			continue
		}
		p := t.parts[q]
		sc.gids = resize(sc.gids, len(sel))
		p.mu.Lock()
		err := p.keys.findOrInsert(sc.keyCols, sel, b.N, sc.gids)
		p.mu.Unlock()
		if err != nil {
			return err
		}
		for k, phys := range sel {
			g := sc.gids[k]
			if g >= 1<<(32-t.pbits)-1 {
				return nferr.Resourcef("hash join build: more than %d keys in one partition", 1<<(32-t.pbits)-1)
			}
			sc.enc[sc.live[phys]] = g<<t.pbits | uint32(q)
		}
	}
	t.mu.Lock()
	for j, x := range sc.enc {
		if x != noGroup {
			t.rows[base+j] = x
		}
	}
	t.mu.Unlock()
	return nil
}

// nonNullKeys returns the selection of live rows whose key columns are all
// non-NULL (nil when that is every row, with sel nil) and the live-row
// indexes of the others.
func nonNullKeys(cols []arrow.Array, sel []int32, n int, buf *[]int32) (nn []int32, nulls []int32) {
	hasNull := false
	for _, c := range cols {
		if c.NullN() > 0 {
			hasNull = true
		}
	}
	if !hasNull {
		return sel, nil
	}
	m := lenLive(sel, n)
	out := (*buf)[:0]
	for j := 0; j < m; j++ {
		i := rowAt(sel, j)
		null := false
		for _, c := range cols {
			if c.IsNull(i) {
				null = true
				break
			}
		}
		if null {
			nulls = append(nulls, int32(j))
		} else {
			out = append(out, int32(i))
		}
	}
	*buf = out
	if out == nil {
		out = []int32{}
	}
	return out, nulls
}

// finish turns the per-row group ids into per-group row lists (a counting
// sort: rows of a group stay in build order).
func (t *joinTable) finish() error {
	if t.parts != nil {
		// Local (partition, group) words become global group ids.
		t.partBase = make([]uint32, len(t.parts))
		base := uint32(0)
		for i, p := range t.parts {
			t.partBase[i] = base
			base += uint32(p.keys.groups())
		}
		mask := uint32(len(t.parts) - 1)
		for i, x := range t.rows {
			if x != noGroup {
				t.rows[i] = t.partBase[x&mask] + x>>t.pbits
			}
		}
	}
	g := t.groups()
	gidOf := t.rows
	if err := t.acct.Grow(int64(g+1)*4 + int64(len(gidOf))*4); err != nil {
		return err
	}
	t.accBytes += int64(g+1)*4 + int64(len(gidOf))*4
	start := make([]uint32, g+1)
	for _, x := range gidOf {
		if x != noGroup {
			start[x+1]++
		}
	}
	for i := 1; i <= g; i++ {
		start[i] += start[i-1]
	}
	rows := make([]uint32, start[g])
	pos := make([]uint32, g)
	copy(pos, start[:g])
	for r, x := range gidOf {
		if x != noGroup {
			rows[pos[x]] = uint32(r)
			pos[x]++
		}
	}
	t.start, t.rows = start, rows
	if t.shape.tracksBuild() {
		t.matched = make([]uint32, (t.nrows+31)/32)
	}
	t.accBytes -= int64(g+1)*4 + int64(len(gidOf))*4
	if t.parts != nil {
		for _, p := range t.parts {
			p.keys.buildFilter()
		}
	} else if t.keys != nil {
		t.keys.buildFilter()
	}
	return t.charge()
}

// markMatched sets build row r's matched flag.
func (t *joinTable) markMatched(r uint32) {
	w := &t.matched[r>>5]
	bit := uint32(1) << (r & 31)
	if atomic.LoadUint32(w)&bit == 0 {
		atomic.OrUint32(w, bit)
	}
}

func (t *joinTable) isMatched(r uint32) bool {
	return atomic.LoadUint32(&t.matched[r>>5])&(1<<(r&31)) != 0
}

// release returns the table's memory.
func (t *joinTable) release() {
	if t == nil {
		return
	}
	t.keys.release()
	for _, p := range t.parts {
		p.keys.release()
		p.acct.Close()
	}
	t.parts = nil
	t.store = newRowStore(nil)
	t.start, t.rows, t.nullRows, t.matched = nil, nil, nil, nil
	t.acct.Close()
}

// Probe phases.
const (
	phFetch = iota
	phPairs
	phProbeTail
	phBuildTail
	phDone
)

// HashJoin is the hash join operator; see the file comment.
type HashJoin struct {
	shape    *joinShape
	left     Operator
	right    Operator
	probe    Operator
	buildIn  Operator // nil when the build is shared
	shared   *sharedBuild
	filter   rowFilter
	env      *Env
	bt       *joinTable
	ownTable bool

	phase  int
	pb     *Batch   // current probe batch (borrowed from the probe input)
	pgids  []uint32 // group per live row
	pm     []bool   // live row matched
	pnull  []bool   // null-aware: row's comparison is UNKNOWN
	pkNull []bool   // null-aware: row's key is NULL
	pj     int      // pair cursor: live row
	pk     int      // pair cursor: offset in the row's match list
	pkind  uint8    // pair cursor: 0 key matches, 1 NULL candidates
	tail   int      // tail cursor
	bTail  bool     // this instance emits the build tail

	pairP, pairRow, pairB []int32 // pair: live row, physical probe row, build row
	pairKind              []uint8
	idx                   []int32
	sel                   []int32
	opState
	scratch buildScratch
	opened  bool
	keyCols []arrow.Array
	ksc     keyScratch // probe keys (the table may be shared)
	part    *HashPartitioner
	live    []int32
	tmpGids []uint32

	spec  HashJoinSpec
	level int         // spill recursion depth (0: the planned operator)
	grace *graceProbe // set once the build spilled

	keyFilters []JoinKeyFilter // published by this instance's own build
}

// NewHashJoin validates spec against the inputs' schemas and builds the
// operator. It owns both inputs.
func NewHashJoin(left, right Operator, spec HashJoinSpec) (*HashJoin, error) {
	shape, err := newJoinShape(left.Schema(), right.Schema(), spec, "hash join")
	if err != nil {
		return nil, err
	}
	h := &HashJoin{shape: shape, left: left, right: right, ownTable: true, spec: spec}
	h.probe, h.buildIn = left, right
	if shape.buildLeft {
		h.probe, h.buildIn = right, left
	}
	return h, nil
}

// Schema implements Operator.
func (h *HashJoin) Schema() *arrow.Schema { return h.shape.schema }

// Open implements Operator.
func (h *HashJoin) Open(env *Env) error {
	h.env = env
	h.opened = true
	f, err := h.shape.compileResidual()
	if err != nil {
		return err
	}
	h.filter = f
	if h.buildIn != nil {
		if err := h.buildIn.Open(env); err != nil {
			return err
		}
	}
	return h.probe.Open(env)
}

// Next implements Operator.
func (h *HashJoin) Next() (*Batch, error) {
	if done, err := h.begin(); done || h.phase == phDone {
		return nil, err
	}
	if h.bt == nil && h.grace == nil {
		if err := h.acquireBuild(); err != nil {
			return h.fail(err)
		}
	}
	if h.grace != nil {
		b, err := h.nextGrace()
		if err != nil {
			return h.fail(err)
		}
		if b == nil {
			h.phase = phDone
		}
		return b, nil
	}
	for {
		if err := h.env.Ctx.Err(); err != nil {
			return h.fail(nferr.With(nferr.KindCanceled, err))
		}
		switch h.phase {
		case phFetch:
			b, err := h.probe.Next()
			if err != nil {
				return h.fail(err)
			}
			if b == nil {
				h.phase = phBuildTail
				h.tail = 0
				h.bTail = h.bt.probersLeft.Add(-1) == 0
				continue
			}
			h.startProbe(b)
		case phPairs:
			out, err := h.nextPairs()
			if err != nil {
				return h.fail(err)
			}
			if out != nil {
				return out, nil
			}
		case phProbeTail:
			if out := h.probeTail(); out != nil {
				return out, nil
			}
			h.phase = phFetch
		case phBuildTail:
			if !h.bTail {
				h.phase = phDone
				return nil, nil
			}
			if out := h.buildTail(); out != nil {
				return out, nil
			}
			h.phase = phDone
			return nil, nil
		}
	}
}

// acquireBuild builds the table (or waits for the shared one); a build
// that spills leaves h.grace set instead (join_spill.go).
func (h *HashJoin) acquireBuild() error {
	if h.shared != nil {
		bt, gb, err := h.shared.get(h.env)
		if err != nil {
			return err
		}
		if gb != nil {
			return h.startGrace(gb)
		}
		h.bt = bt
		return nil
	}
	env := h.env
	// NB: a spilled partition's rebuild (level > 0) holds a share of the
	// build, under memory pressure: no reservation from the whole build's
	// estimate.
	reserve := 0
	if h.level == 0 {
		reserve = h.shape.reserveKeys
	}
	t := newJoinTable(h.shape, env.NewSpillableAccount("hash join build"), reserve)
	var sc buildScratch
	if h.level == 0 {
		sc.kc = newKeyCollector(h.keyFilters, h.shape, env)
	}
	// Whatever the outcome, the filters end published or disabled, and
	// the collected keys are freed.
	built := false
	defer func() {
		if built {
			sc.kc.publish()
		} else if sc.kc != nil {
			sc.kc.release()
			disableKeyFilters(h.keyFilters)
		}
	}()
	for {
		if err := env.Ctx.Err(); err != nil {
			h.bt = t
			return nferr.With(nferr.KindCanceled, err)
		}
		b, err := h.buildIn.Next()
		if err != nil {
			h.bt = t
			return err
		}
		if b == nil {
			break
		}
		if err := t.addBatch(b, &sc); err != nil {
			if !joinCanSpill(env, h.shape, h.level, err) {
				h.bt = t
				return err
			}
			return h.spillOwnBuild(t, b)
		}
	}
	if err := t.finish(); err != nil {
		if !joinCanSpill(env, h.shape, h.level, err) {
			h.bt = t
			return err
		}
		return h.spillOwnBuild(t, nil)
	}
	h.bt = t
	t.probersLeft.Store(1)
	built = true
	return nil
}

// spillOwnBuild spills a build out of memory: pending is the batch t
// could not take (nil at the end of the input).
func (h *HashJoin) spillOwnBuild(t *joinTable, pending *Batch) error {
	w, err := newPartWriters(h.env, "hash join build", h.shape.buildSchema, h.shape.buildKeys, h.level)
	if err != nil {
		t.release()
		return err
	}
	if pending != nil && !h.shape.storeBuild {
		err = w.write(pending)
	}
	if err == nil && pending != nil {
		err = drainTo(h.env, h.buildIn, w)
	}
	if err != nil {
		w.abort()
		t.release()
		return err
	}
	gb, err := finishBuildSpill(h.env, t, w, 1)
	if err != nil {
		return err
	}
	return h.startGrace(gb)
}

func (h *HashJoin) startProbe(b *Batch) {
	h.pb = b
	m := b.Len()
	h.pgids = resize(h.pgids, m)
	h.pm = resize(h.pm, m)
	clear(h.pm)
	h.keyCols = h.keyCols[:0]
	for _, k := range h.shape.probeKeys {
		h.keyCols = append(h.keyCols, b.Cols[k])
	}
	if h.bt.parts == nil {
		h.bt.keys.find(h.keyCols, b.Sel, b.N, h.pgids, &h.ksc)
	} else {
		h.findPartitioned(b)
	}
	if h.shape.nullAware {
		h.pnull = resize(h.pnull, m)
		h.pkNull = resize(h.pkNull, m)
		clear(h.pnull)
		clear(h.pkNull)
		if k := h.keyCols[0]; k.NullN() > 0 {
			for j := 0; j < m; j++ {
				h.pkNull[j] = k.IsNull(rowAt(b.Sel, j))
			}
		}
		if h.filter == nil && h.bt.nrows > 0 {
			for j := range h.pnull {
				h.pnull[j] = h.pkNull[j] || h.bt.hasNullKey
			}
		}
	}
	h.pj, h.pk, h.pkind = 0, 0, 0
	h.tail = 0
	needPairs := h.shape.emitsPairs() || h.shape.tracksBuild() || h.filter != nil
	if !needPairs {
		for j, g := range h.pgids {
			h.pm[j] = g != noGroup
		}
		h.phase = phProbeTail
		return
	}
	h.phase = phPairs
}

// findPartitioned looks the probe keys up in a partitioned table: rows
// split by the row hash of their keys, as the build rows were.
func (h *HashJoin) findPartitioned(b *Batch) {
	bt := h.bt
	if h.part == nil {
		h.part, _ = NewHashPartitioner(h.shape.probeSchema, h.shape.probeKeys, len(bt.parts))
	}
	m := b.Len()
	h.live = resize(h.live, b.N)
	for j := 0; j < m; j++ {
		h.live[rowAt(b.Sel, j)] = int32(j)
	}
	for q, sel := range h.part.Split(b) {
		if len(sel) == 0 {
			continue
		}
		h.tmpGids = resize(h.tmpGids, len(sel))
		bt.parts[q].keys.find(h.keyCols, sel, b.N, h.tmpGids, &h.ksc)
		for k, phys := range sel {
			g := h.tmpGids[k]
			if g != noGroup {
				g += bt.partBase[q]
			}
			h.pgids[h.live[phys]] = g
		}
	}
}

// nullCandidates: with a residual, a null-aware join compares a row with
// the build rows its UNKNOWN outcome depends on.
func (h *HashJoin) nullCandidates(j int) []uint32 {
	if h.pkNull[j] {
		return nil // all build rows: handled by the caller
	}
	return h.bt.nullRows
}

// addPairs pairs live probe row j with the build rows cand[k:] (kind 0:
// key matches, 1: NULL candidates) until the batch holds limit pairs, and
// returns the k it stopped at (len(cand) when all fit).
func (h *HashJoin) addPairs(j int, cand []uint32, k, limit int, kind uint8) int {
	row := int32(rowAt(h.pb.Sel, j))
	for ; k < len(cand) && len(h.pairP) < limit; k++ {
		h.pairP = append(h.pairP, int32(j))
		h.pairRow = append(h.pairRow, row)
		h.pairB = append(h.pairB, int32(cand[k]))
		h.pairKind = append(h.pairKind, kind)
	}
	return k
}

// nextPairs generates up to BatchSize candidate pairs of the current probe
// batch and processes them; it returns an output batch, or nil when the
// batch's pairs are exhausted (and moves to the probe tail).
func (h *HashJoin) nextPairs() (*Batch, error) {
	bt := h.bt
	limit := max(h.env.BatchSize, 1)
	h.pairP, h.pairRow, h.pairB, h.pairKind = h.pairP[:0], h.pairRow[:0], h.pairB[:0], h.pairKind[:0]
	sel := h.pb.Sel
	nullCands := h.shape.nullAware && h.filter != nil && bt.nrows > 0
	for h.pj < len(h.pgids) && len(h.pairP) < limit {
		j := h.pj
		if h.pkind == 0 {
			g := h.pgids[j]
			if g != noGroup {
				rows := bt.rows[bt.start[g]:bt.start[g+1]]
				if k := h.addPairs(j, rows, h.pk, limit, 0); k < len(rows) {
					h.pk = k
					break
				}
			}
			h.pk = 0
			if nullCands {
				h.pkind = 1
				continue
			}
			h.pj++
			continue
		}
		// pkind 1: NULL candidates (null-aware with residual).
		k := h.pk
		if h.pkNull[j] {
			for ; k < bt.nrows && len(h.pairP) < limit; k++ {
				h.pairP = append(h.pairP, int32(j))
				h.pairRow = append(h.pairRow, int32(rowAt(sel, j)))
				h.pairB = append(h.pairB, int32(k))
				h.pairKind = append(h.pairKind, 1)
			}
			if k < bt.nrows {
				h.pk = k
				break
			}
		} else {
			nr := h.nullCandidates(j)
			if k = h.addPairs(j, nr, k, limit, 1); k < len(nr) {
				h.pk = k
				break
			}
		}
		h.pk, h.pkind = 0, 0
		h.pj++
	}
	if len(h.pairP) == 0 {
		h.phase = phProbeTail
		return nil, nil
	}
	if h.filter == nil {
		for i, j := range h.pairP {
			h.pm[j] = true
			if bt.matched != nil {
				bt.markMatched(uint32(h.pairB[i]))
			}
		}
		if !h.shape.emitsPairs() {
			return nil, nil
		}
		return h.emitPairs(h.pairRow, h.pairB), nil
	}
	// Residual: evaluate the candidate pairs over left ++ right columns.
	cand := h.emitPairs(h.pairRow, h.pairB)
	pass, err := h.filter.EvalFilter(cand)
	if err != nil {
		return nil, nferr.Wrap(nferr.KindQuery, err, "%s: residual condition", h.shape.op)
	}
	h.sel = h.sel[:0]
	for _, p := range pass {
		j := h.pairP[p]
		if h.pairKind[p] == 1 {
			h.pnull[j] = true
			continue
		}
		h.pm[j] = true
		if bt.matched != nil {
			bt.markMatched(uint32(h.pairB[p]))
		}
		h.sel = append(h.sel, p)
	}
	if !h.shape.emitsPairs() || len(h.sel) == 0 {
		h.releaseOut()
		return nil, nil
	}
	h.out.Sel = h.sel
	return &h.out, nil
}

// emitPairs builds the batch of left ++ right columns for pairs (physical
// probe row, build row); -1 on either side gives NULLs.
func (h *HashJoin) emitPairs(prow, brow []int32) *Batch {
	n := len(prow)
	cols := make([]arrow.Array, 0, h.shape.joined.NumFields())
	alloc := h.env.Alloc
	probeCols := func() {
		for c, take := range h.shape.probeTake {
			if h.pb == nil {
				cols = append(cols, nullArray(alloc, h.shape.probeSchema.Field(c).Type, n))
				continue
			}
			cols = append(cols, take(alloc, h.pb.Cols[c], prow))
		}
	}
	buildCols := func() {
		for _, v := range h.bt.store.vecs {
			cols = append(cols, v.Gather(alloc, brow))
		}
		if !h.shape.storeBuild {
			for c := 0; c < h.shape.buildSchema.NumFields(); c++ {
				cols = append(cols, nullArray(alloc, h.shape.buildSchema.Field(c).Type, n))
			}
		}
	}
	if h.shape.buildLeft {
		buildCols()
		probeCols()
	} else {
		probeCols()
		buildCols()
	}
	h.owned = append(h.owned, cols...)
	h.out = Batch{Cols: cols, N: n}
	return &h.out
}

// probeTail emits what the current probe batch yields after its pairs:
// unmatched rows of outer joins, semi/anti selections, mark columns.
func (h *HashJoin) probeTail() *Batch {
	b := h.pb
	m := len(h.pgids)
	s := h.shape
	switch {
	case s.probePreserve():
		limit := max(h.env.BatchSize, 1)
		h.pairRow, h.pairB = h.pairRow[:0], h.pairB[:0]
		for ; h.tail < m && len(h.pairRow) < limit; h.tail++ {
			if !h.pm[h.tail] {
				h.pairRow = append(h.pairRow, int32(rowAt(b.Sel, h.tail)))
				h.pairB = append(h.pairB, -1)
			}
		}
		if len(h.pairRow) == 0 {
			return nil
		}
		return h.emitPairs(h.pairRow, h.pairB)
	case s.buildLeft || h.tail > 0:
		return nil
	case s.typ == JoinSemi || s.typ == JoinAnti:
		h.tail = 1
		want := s.typ == JoinSemi
		h.sel = h.sel[:0]
		for j := 0; j < m; j++ {
			keep := h.pm[j] == want
			if !want && s.nullAware && h.emptyBuildKeeps(j) {
				keep = true
			} else if !want && s.nullAware && h.pnull[j] {
				keep = false
			}
			if keep {
				h.sel = append(h.sel, int32(rowAt(b.Sel, j)))
			}
		}
		if len(h.sel) == 0 {
			return nil
		}
		h.out = Batch{Cols: b.Cols, N: b.N, Sel: h.sel}
		return &h.out
	case s.typ == JoinMark:
		h.tail = 1
		mark := h.markArray(b.N, func(j int) (bool, bool) {
			if h.pm[j] {
				return true, true
			}
			if s.nullAware && h.pnull[j] && h.bt.nrows > 0 {
				return false, false
			}
			return false, true
		})
		cols := append(append(make([]arrow.Array, 0, len(b.Cols)+1), b.Cols...), mark)
		h.owned = append(h.owned, mark)
		h.out = Batch{Cols: cols, N: b.N, Sel: b.Sel}
		return &h.out
	}
	return nil
}

// emptyBuildKeeps: x NOT IN (empty set) is TRUE even for a NULL x.
func (h *HashJoin) emptyBuildKeeps(j int) bool { return h.bt.nrows == 0 }

// markArray builds a boolean array of n physical rows; f gives (value,
// valid) for live row j.
func (h *HashJoin) markArray(n int, f func(j int) (bool, bool)) arrow.Array {
	alloc := h.env.Alloc
	vb := newBuffer(alloc, (n+7)/8)
	bits := vb.Bytes()
	clear(bits)
	w := validityWriter{alloc: alloc, n: n}
	for j := 0; j < lenLive(h.pb.Sel, h.pb.N); j++ {
		i := rowAt(h.pb.Sel, j)
		v, ok := f(j)
		if !ok {
			w.setNull(i)
		} else if v {
			setBit(bits, i)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, n, w.nulls, w.buf, vb)
}

// buildTail emits, after the last probe batch, the build rows the join
// type keeps: unmatched rows of outer joins, the semi/anti/mark rows of a
// join built on the left.
func (h *HashJoin) buildTail() *Batch {
	bt, s := h.bt, h.shape
	h.pb = nil
	if !s.tracksBuild() {
		return nil
	}
	limit := max(h.env.BatchSize, 1)
	h.idx = h.idx[:0]
	var marks []bool
	for ; h.tail < bt.nrows && len(h.idx) < limit; h.tail++ {
		r := uint32(h.tail)
		matched := bt.isMatched(r)
		switch {
		case s.typ == JoinMark:
			h.idx = append(h.idx, int32(r))
			marks = append(marks, matched)
		case s.typ == JoinSemi:
			if matched {
				h.idx = append(h.idx, int32(r))
			}
		default: // outer and anti: the unmatched rows
			if !matched {
				h.idx = append(h.idx, int32(r))
			}
		}
	}
	if len(h.idx) == 0 {
		return nil
	}
	alloc := h.env.Alloc
	switch s.typ {
	case JoinSemi, JoinAnti, JoinMark:
		cols := bt.store.gather(alloc, h.idx, nil)
		if s.typ == JoinMark {
			vb := newBuffer(alloc, (len(marks)+7)/8)
			bits := vb.Bytes()
			clear(bits)
			for i, m := range marks {
				if m {
					setBit(bits, i)
				}
			}
			cols = append(cols, makeArray(arrow.FixedWidthTypes.Boolean, len(marks), 0, nil, vb))
		}
		h.owned = append(h.owned, cols...)
		h.out = Batch{Cols: cols, N: len(h.idx)}
		return &h.out
	}
	prow := make([]int32, len(h.idx))
	for i := range prow {
		prow[i] = -1
	}
	return h.emitPairs(prow, h.idx)
}

// Close implements Operator.
func (h *HashJoin) Close() error {
	if !h.closing() {
		return nil
	}
	if h.grace != nil {
		h.grace.close()
		h.grace = nil
	}
	if h.ownTable && h.bt != nil {
		h.bt.release()
	}
	if h.shared != nil {
		h.shared.done()
	}
	h.bt, h.pb = nil, nil
	return closeChildren(h.buildIn, h.probe)
}
