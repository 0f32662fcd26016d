package expr

import (
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/nferr"
)

// How expressions run
//
// CompileExpr turns an Expr into a tree of nodes, choosing one
// type-specialized kernel per node. A node evaluates a whole batch at a time
// over a selection: the rows sel of the batch (nil: all rows 0..n-1).
//
// INVARIANT (alignment): every vector a node produces is aligned with the
// batch's physical rows (length n); only the positions in the selection it
// was evaluated over are meaningful. Kernels read and write only those
// positions, so rows outside the selection (filtered out, or not taken by a
// CASE branch) are never computed and cannot raise errors.
//
// INVARIANT (lifetime): a node's result vector and selection scratch are
// reused by its next evaluation. Each node occurs once in the tree, so a
// parent can hold its children's results for the duration of its own
// evaluation.
//
// Boolean nodes also evaluate as filters (filter): they return the rows of
// the selection where the value is TRUE, which is how WHERE clauses, AND,
// OR and CASE conditions run without materializing booleans.

// pkind is the physical representation of a vector.
type pkind uint8

const (
	pNull pkind = iota // no values: every row is NULL
	pBool              // []bool
	pI32               // []int32: int32, date32
	pI64               // []int64: int64, decimal64, timestamp[us], time64[us]
	pF64               // []float64
	pD128              // []decimal128.Num: decimal128
	pStr               // off/str: utf8, binary
	pIv                // []arrow.MonthDayNanoInterval
	pList              // arr: an arrow list array of the batch's rows (array.go)
)

// kindOf returns the physical representation of dt; ok is false for types
// expressions do not support.
func kindOf(dt arrow.DataType) (pkind, bool) {
	switch dt.ID() {
	case arrow.NULL:
		return pNull, true
	case arrow.BOOL:
		return pBool, true
	case arrow.INT32, arrow.DATE32:
		return pI32, true
	case arrow.INT64, arrow.DECIMAL64:
		return pI64, true
	case arrow.TIMESTAMP:
		if dt.(*arrow.TimestampType).Unit != arrow.Microsecond {
			return 0, false
		}
		return pI64, true
	case arrow.TIME64:
		if dt.(*arrow.Time64Type).Unit != arrow.Microsecond {
			return 0, false
		}
		return pI64, true
	case arrow.FLOAT64:
		return pF64, true
	case arrow.DECIMAL128:
		return pD128, true
	case arrow.STRING, arrow.BINARY:
		return pStr, true
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return pIv, true
	case arrow.LIST:
		if k, ok := kindOf(dt.(*arrow.ListType).Elem()); ok && k != pList && k != pNull {
			return pList, true
		}
	}
	return 0, false
}

// vec is a node's result. Exactly the field of its pkind is used.
type vec struct {
	// nulls, when non-nil, marks NULL rows (true = NULL); nil means no
	// selected row is NULL.
	nulls []bool
	b     []bool
	i32   []int32
	i64   []int64
	f64   []float64
	d     []decimal128.Num
	iv    []arrow.MonthDayNanoInterval
	// off and str hold strings: row i is str[off[i]:off[i+1]].
	// INVARIANT: off is non-decreasing over all n+1 entries (also outside
	// the selection), so a vector can become an Arrow array as is.
	off []int32
	str []byte
	// arr is a pList vector: a list array of the n rows, its validity
	// the same as nulls.
	arr arrow.Array
}

func (v *vec) isNull(i int32) bool { return v.nulls != nil && v.nulls[i] }

func (v *vec) strAt(i int32) []byte { return v.str[v.off[i]:v.off[i+1]] }

// grow returns s with length n, reusing its storage when large enough.
// INVARIANT: the result is never nil, even for n == 0: a nil selection
// means "all rows", an empty one "no row".
func Grow[T any](s []T, n int) []T {
	if s != nil && cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/8)
}

// evalBatch is the batch nodes evaluate over.
type evalBatch struct {
	cols []arrow.Array
	n    int
}

// node is one compiled expression node.
type node interface {
	// dt is the Arrow type of the node's values.
	dt() arrow.DataType
	// eval computes the rows sel (nil: all) of b; see the invariants above.
	eval(b *evalBatch, sel []int32) (*vec, error)
}

// boolNode is a boolean node that can also run as a filter.
type boolNode interface {
	node
	// filter returns the rows of sel (nil: all rows) where the node is TRUE,
	// ascending, in storage owned by the node (or sel itself when non-nil).
	// The result is never nil.
	filter(b *evalBatch, sel []int32) ([]int32, error)
}

// selAll returns sel, or the identity selection [0, n) in *scratch when sel
// is nil.
func SelAll(scratch *[]int32, sel []int32, n int) []int32 {
	if sel != nil {
		return sel
	}
	s := Grow(*scratch, n)
	for i := range s {
		s[i] = int32(i)
	}
	*scratch = s
	return s
}

// nonNullSel returns the rows of sel (nil: all of [0, n)) that are NULL in
// neither a nor b (either may be nil), in *scratch.
func nonNullSel(scratch *[]int32, sel []int32, n int, a, b []bool) []int32 {
	size := n
	if sel != nil {
		size = len(sel)
	}
	out := Grow(*scratch, size)
	k := 0
	switch {
	case a != nil && b != nil:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(!a[i] && !b[i])
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(!a[i] && !b[i])
			}
		}
	default:
		if a == nil {
			a = b
		}
		if a == nil {
			a = make([]bool, n) // unreachable in practice: callers pass a mask
		}
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(!a[i])
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(!a[i])
			}
		}
	}
	*scratch = out
	return out[:k]
}

// orNulls returns the NULL mask a OR b over sel in *scratch, or nil when
// both are nil.
func orNulls(scratch *[]bool, sel []int32, n int, a, b []bool) []bool {
	if a == nil && b == nil {
		return nil
	}
	out := Grow(*scratch, n)
	*scratch = out
	switch {
	case a == nil:
		copyAt(out, b, sel, n)
	case b == nil:
		copyAt(out, a, sel, n)
	default:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[i] = a[i] || b[i]
			}
		} else {
			for _, i := range sel {
				out[i] = a[i] || b[i]
			}
		}
	}
	return out
}

// copyAt copies src to dst at the rows sel (nil: all n).
func copyAt[T any](dst, src []T, sel []int32, n int) {
	if sel == nil {
		copy(dst[:n], src[:n])
		return
	}
	for _, i := range sel {
		dst[i] = src[i]
	}
}

// b2i converts a bool to 0/1; the compiler turns it into a SETcc, which
// keeps selection loops branch-free.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ------------------------------------------------------------ column refs

type colNode struct {
	idx   int
	t     arrow.DataType
	k     pkind
	v     vec
	nulls []bool
	bools []bool
	zeros []byte // stands in for a missing value buffer
}

func (c *colNode) dt() arrow.DataType { return c.t }

func (c *colNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	a := b.cols[c.idx]
	d := a.Data()
	off, n := d.Offset(), d.Len()
	bufs := d.Buffers()
	v := &c.v
	v.nulls = nil
	if c.k == pNull {
		c.nulls = Grow(c.nulls, n)
		for i := range c.nulls {
			c.nulls[i] = true
		}
		v.nulls = c.nulls
		return v, nil
	}
	if n == 0 {
		*v = vec{off: []int32{0}}
		if c.k == pList {
			v.arr = a
		}
		return v, nil
	}
	if c.k == pList {
		v.arr = a
		if a.NullN() > 0 {
			c.nulls = Grow(c.nulls, n)
			for i := range c.nulls {
				c.nulls[i] = a.IsNull(i)
			}
			v.nulls = c.nulls
		}
		return v, nil
	}
	vals := c.valueBytes(bufs, off+n)
	switch c.k {
	case pBool:
		c.bools = Grow(c.bools, n)
		unpackBits(c.bools, vals, off, sel, n)
		v.b = c.bools
	case pI32:
		v.i32 = arrow.Int32Traits.CastFromBytes(vals)[off : off+n]
	case pI64:
		v.i64 = arrow.Int64Traits.CastFromBytes(vals)[off : off+n]
	case pF64:
		v.f64 = arrow.Float64Traits.CastFromBytes(vals)[off : off+n]
	case pD128:
		v.d = arrow.Decimal128Traits.CastFromBytes(vals)[off : off+n]
	case pIv:
		v.iv = arrow.MonthDayNanoIntervalTraits.CastFromBytes(vals)[off : off+n]
	case pStr:
		v.off = arrow.Int32Traits.CastFromBytes(vals)[off : off+n+1]
		v.str = nil
		if len(bufs) > 2 && bufs[2] != nil {
			v.str = bufs[2].Bytes()
		}
	}
	if a.NullN() > 0 {
		// The validity bit is 1 for a valid row; nulls holds the opposite.
		c.nulls = Grow(c.nulls, n)
		unpackBits(c.nulls, bufs[0].Bytes(), off, sel, n)
		if sel == nil {
			for i := range c.nulls {
				c.nulls[i] = !c.nulls[i]
			}
		} else {
			for _, i := range sel {
				c.nulls[i] = !c.nulls[i]
			}
		}
		v.nulls = c.nulls
	}
	return v, nil
}

// valueBytes returns the value buffer of a column of rows values, or
// zeros when the array has none (an all-NULL array may be built without
// one).
func (c *colNode) valueBytes(bufs []*memory.Buffer, rows int) []byte {
	var need int
	switch c.k {
	case pBool:
		need = int(bitutil.BytesForBits(int64(rows)))
	case pI32:
		need = rows * 4
	case pI64, pF64:
		need = rows * 8
	case pD128, pIv:
		need = rows * 16
	case pStr:
		need = (rows + 1) * 4
	}
	if len(bufs) > 1 && bufs[1] != nil && bufs[1].Len() >= need {
		return bufs[1].Bytes()
	}
	if cap(c.zeros) < need {
		c.zeros = make([]byte, need)
	}
	return c.zeros[:need]
}

// unpackBits sets dst[i] to bit off+i of bm for the rows sel (nil: all n).
func unpackBits(dst []bool, bm []byte, off int, sel []int32, n int) {
	if sel == nil {
		for i := 0; i < n; i++ {
			dst[i] = bitutil.BitIsSet(bm, off+i)
		}
		return
	}
	for _, i := range sel {
		dst[i] = bitutil.BitIsSet(bm, off+int(i))
	}
}

// filterBool is a boolean column evaluated as a filter without unpacking.
func (c *colNode) filterBool(b *evalBatch, sel []int32, out []int32) []int32 {
	a := b.cols[c.idx]
	d := a.Data()
	off := d.Offset()
	vals := c.valueBytes(d.Buffers(), off+d.Len())
	var valid []byte
	if a.NullN() > 0 {
		valid = d.Buffers()[0].Bytes()
	}
	k := 0
	if sel == nil {
		for i := 0; i < d.Len(); i++ {
			out[k] = int32(i)
			k += b2i(bitutil.BitIsSet(vals, off+i) && (valid == nil || bitutil.BitIsSet(valid, off+i)))
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(bitutil.BitIsSet(vals, off+int(i)) && (valid == nil || bitutil.BitIsSet(valid, off+int(i))))
		}
	}
	return out[:k]
}

// boolColNode is a boolean column: a colNode that filters directly on the
// Arrow bitmaps.
type boolColNode struct {
	colNode
	out []int32
}

func (c *boolColNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	n := b.n
	if sel != nil {
		n = len(sel)
	}
	c.out = Grow(c.out, n)
	return c.filterBool(b, sel, c.out), nil
}

// -------------------------------------------------------------- constants

// constNode is a constant: a literal or a folded constant subtree.
type constNode struct {
	t    arrow.DataType
	k    pkind
	null bool
	i64  int64 // pI32 (as int64), pI64
	f64  float64
	b    bool
	d    decimal128.Num
	s    string
	iv   arrow.MonthDayNanoInterval
	list arrow.Array // pList: a one-row list array

	v      vec
	filled int // rows of v broadcast so far
	out    []int32
}

func (c *constNode) dt() arrow.DataType { return c.t }

// eval broadcasts the constant over [0, n) once and reuses it.
func (c *constNode) eval(b *evalBatch, _ []int32) (*vec, error) {
	n := b.n
	if c.filled >= n {
		return &c.v, nil
	}
	// NB: exactly n, not more: a wide SELECT list holds one broadcast per
	// constant (300,000 columns of x + 1 held 1024 rows each: 2 GB), and
	// refilling costs O(n) only when a batch is larger than any before.
	m := n
	v := &c.v
	if c.null {
		v.nulls = Grow(v.nulls, m)
		for i := range v.nulls {
			v.nulls[i] = true
		}
	}
	switch c.k {
	case pBool:
		v.b = fill(Grow(v.b, m), c.b)
	case pI32:
		v.i32 = fill(Grow(v.i32, m), int32(c.i64))
	case pI64:
		v.i64 = fill(Grow(v.i64, m), c.i64)
	case pF64:
		v.f64 = fill(Grow(v.f64, m), c.f64)
	case pD128:
		v.d = fill(Grow(v.d, m), c.d)
	case pIv:
		v.iv = fill(Grow(v.iv, m), c.iv)
	case pStr:
		// NB: Arrow offsets must be non-decreasing, so rows cannot share
		// one copy of the bytes: the broadcast holds the string m times.
		ls := len(c.s)
		v.str = Grow(v.str, ls*m)
		v.off = Grow(v.off, m+1)
		for i := 0; i < m; i++ {
			copy(v.str[i*ls:], c.s)
			v.off[i] = int32(i * ls)
		}
		v.off[m] = int32(m * ls)
	case pList:
		v.arr = broadcastList(c.t, c.list, c.null, m)
	}
	c.filled = m
	return v, nil
}

func fill[T any](s []T, x T) []T {
	for i := range s {
		s[i] = x
	}
	return s
}

// filter: a constant TRUE keeps every row, FALSE or NULL none.
func (c *constNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	if c.null || !c.b {
		c.out = Grow(c.out, 0)
		return c.out, nil
	}
	return SelAll(&c.out, sel, b.n), nil
}

// constFromVec makes a constant of row i of v.
func constFromVec(t arrow.DataType, k pkind, v *vec, i int32) *constNode {
	c := &constNode{t: t, k: k}
	if k == pNull || v.isNull(i) {
		c.null = true
		return c
	}
	switch k {
	case pBool:
		c.b = v.b[i]
	case pI32:
		c.i64 = int64(v.i32[i])
	case pI64:
		c.i64 = v.i64[i]
	case pF64:
		c.f64 = v.f64[i]
	case pD128:
		c.d = v.d[i]
	case pIv:
		c.iv = v.iv[i]
	case pStr:
		c.s = string(v.strAt(i))
	case pList:
		c.list = array.NewSlice(v.arr, int64(i), int64(i)+1)
	}
	return c
}

// newNullConst is a NULL of type t.
func newNullConst(t arrow.DataType) *constNode {
	k, _ := kindOf(t)
	return &constNode{t: t, k: k, null: true}
}

// parseLiteral builds the constant of a KindLiteral.
func parseLiteral(e *Expr) (*constNode, error) {
	if e.Type == nil {
		return nil, nferr.Queryf("literal without a type")
	}
	if err := e.Type.Validate(); err != nil {
		return nil, err
	}
	t := e.Type.Arrow()
	k, _ := kindOf(t)
	c := &constNode{t: t, k: k}
	if e.Null || e.Type.ID == TypeNull {
		c.null = true
		return c, nil
	}
	bad := func() (*constNode, error) {
		return nil, nferr.Queryf("invalid %s literal %q", e.Type, e.Value)
	}
	switch e.Type.ID {
	case TypeBool:
		v, err := strconv.ParseBool(e.Value)
		if err != nil {
			return bad()
		}
		c.b = v
	case TypeInt32:
		v, err := strconv.ParseInt(e.Value, 10, 32)
		if err != nil {
			return bad()
		}
		c.i64 = v
	case TypeInt64:
		v, err := strconv.ParseInt(e.Value, 10, 64)
		if err != nil {
			return bad()
		}
		c.i64 = v
	case TypeFloat64:
		v, err := strconv.ParseFloat(e.Value, 64)
		if err != nil && !isRangeErr(err) {
			return bad()
		}
		c.f64 = v
	case TypeString:
		c.s = e.Value
	case TypeBinary:
		b, msg := bytea.ParseString(e.Value)
		if msg != "" {
			return nil, nferr.Queryf("invalid BYTEA literal %q: %s", e.Value, msg)
		}
		c.s = string(b)
	case TypeDate:
		d, err := ParseDate(e.Value)
		if err != nil {
			return nil, err
		}
		c.i64 = int64(d)
	case TypeTimestamp, TypeTimestampTZ:
		us, err := ParseTimestamp(e.Value, e.Type.ID == TypeTimestampTZ)
		if err != nil {
			return nil, err
		}
		c.i64 = us
	case TypeTime:
		us, err := ParseTime(e.Value)
		if err != nil {
			return nil, err
		}
		c.i64 = us
	case TypeDecimal:
		n, ok := parseDecimalExact(e.Value, e.Type.Precision, e.Type.Scale)
		if !ok {
			return bad()
		}
		if k == pI64 {
			c.i64 = int64(n.LowBits())
		} else {
			c.d = n
		}
	case TypeInterval:
		parts := strings.Split(e.Value, ":")
		if len(parts) != 3 {
			return bad()
		}
		m, err1 := strconv.ParseInt(parts[0], 10, 32)
		d, err2 := strconv.ParseInt(parts[1], 10, 32)
		ns, err3 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return bad()
		}
		c.iv = arrow.MonthDayNanoInterval{Months: int32(m), Days: int32(d), Nanoseconds: ns}
	default:
		return bad()
	}
	return c, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseDecimalExact parses a decimal literal that must fit decimal(p, s)
// without rounding.
func parseDecimalExact(s string, p, sc int32) (decimal128.Num, bool) {
	n, ok := ParseDecimalBytes([]byte(s), sc, false)
	if !ok || !fitsPrecision(n, p) {
		return decimal128.Num{}, false
	}
	return n, true
}

// ------------------------------------------------------ boolean adapters

// evalFilterNode runs any boolean node as a filter by evaluating it.
type evalFilterNode struct {
	node
	out []int32
}

func (f *evalFilterNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	v, err := f.node.eval(b, sel)
	if err != nil {
		return nil, err
	}
	return selectTrue(&f.out, v, sel, b.n), nil
}

// selectTrue returns the rows of sel (nil: all n) where v is TRUE (not
// NULL), written to *dst, which it grows as needed: the filter of a
// boolean node that has no cheaper way to select than evaluating itself.
func selectTrue(dst *[]int32, v *vec, sel []int32, n int) []int32 {
	size := n
	if sel != nil {
		size = len(sel)
	}
	*dst = Grow(*dst, size)
	out := *dst
	k := 0
	if v.nulls == nil {
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(v.b[i])
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(v.b[i])
			}
		}
		return out[:k]
	}
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			k += b2i(v.b[i] && !v.nulls[i])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(v.b[i] && !v.nulls[i])
		}
	}
	return out[:k]
}

// asBool returns n as a boolNode.
func asBool(n node) boolNode {
	if bn, ok := n.(boolNode); ok {
		return bn
	}
	return &evalFilterNode{node: n}
}

// boolFromFilter computes a boolean vector from a filter: out[i] is true
// for the rows of sel in pass, false for the others; nulls as given.
func boolFromFilter(out *vec, sel []int32, n int, pass []int32, nulls []bool) {
	out.b = Grow(out.b, n)
	if sel == nil {
		clear(out.b[:n])
	} else {
		for _, i := range sel {
			out.b[i] = false
		}
	}
	for _, i := range pass {
		out.b[i] = true
	}
	out.nulls = nulls
}

// ---------------------------------------------------------- CompiledExpr

// CompiledExpr is an Expr compiled against an input schema, ready to run on
// batches of that schema.
//
// Results are aligned with the batch's PHYSICAL rows: Eval returns an array
// of length b.N whose values at the live rows (b.Sel, or all rows) are the
// expression's values; the values at other positions are unspecified (they
// are never computed, so they cannot fail). A consumer therefore keeps the
// batch's Sel when it uses the result, exactly as it does for input columns.
//
// A CompiledExpr holds scratch memory reused from batch to batch: it is not
// safe for concurrent use. Each operator instance (one per pipeline)
// compiles its own.
type CompiledExpr struct {
	expr   Expr
	root   node
	filt   boolNode
	eb     evalBatch
	colIdx int
}

// CompileExpr type-checks e against the input schema and compiles it. Type
// errors are KindQuery errors naming the expression. See docs/decisions.md
// (D6) for the typing rules, and the package documentation for the casts
// the binder must insert.
func CompileExpr(e Expr, input *arrow.Schema) (*CompiledExpr, error) {
	c := &compiler{schema: input}
	if z := findZone(&e); z != "" {
		loc, err := LoadZone(z)
		if err != nil {
			return nil, err
		}
		c.loc = loc
	}
	n, err := c.compile(&e)
	if err != nil {
		// A value that fails before any row is read (a literal that does
		// not cast) is in the query's text: the query's fault, where the
		// same failure on a row is the data's.
		if nferr.Is(err, nferr.KindData) {
			err = &nferr.Error{Kind: nferr.KindQuery, Msg: err.Error(), Cause: err}
		}
		return nil, err
	}
	ce := &CompiledExpr{expr: e, root: n, colIdx: -1}
	if e.Kind == KindColumn {
		ce.colIdx = e.Index
	}
	if n.dt().ID() == arrow.BOOL {
		ce.filt = asBool(n)
	} else if n.dt().ID() == arrow.NULL {
		// An untyped NULL predicate keeps no rows.
		ce.filt = &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}
	}
	return ce, nil
}

// ResultType returns the type e has over the input schema.
func ResultType(e Expr, input *arrow.Schema) (arrow.DataType, error) {
	ce, err := CompileExpr(e, input)
	if err != nil {
		return nil, err
	}
	return ce.Type(), nil
}

// Type is the Arrow type of the expression's values.
func (ce *CompiledExpr) Type() arrow.DataType { return ce.root.dt() }

// Expr returns the expression that was compiled.
func (ce *CompiledExpr) Expr() Expr { return ce.expr }

// String prints the expression.
func (ce *CompiledExpr) String() string { return ce.expr.String() }

// ColumnIndex reports whether the expression is a bare column reference,
// and which; Project passes such columns through without copying.
func (ce *CompiledExpr) ColumnIndex() (int, bool) { return ce.colIdx, ce.colIdx >= 0 }

// IsConstant reports whether the expression folded to a constant.
func (ce *CompiledExpr) IsConstant() bool {
	_, ok := ce.root.(*constNode)
	return ok
}

// Eval computes the expression for the live rows of b and returns an array
// of length b.N allocated from mem (for a bare column reference, the input
// column itself, retained). The caller releases it. Errors (division by
// zero, overflow, invalid casts) are KindQuery errors naming the
// expression.
func (ce *CompiledExpr) Eval(mem memory.Allocator, b *Batch) (arrow.Array, error) {
	if ce.colIdx >= 0 {
		a := b.Cols[ce.colIdx]
		a.Retain()
		return a, nil
	}
	ce.eb = evalBatch{cols: b.Cols, n: b.N}
	v, err := ce.root.eval(&ce.eb, b.Sel)
	ce.eb.cols = nil
	if err != nil {
		return nil, err
	}
	return materialize(mem, v, ce.root.dt(), b.N, b.Sel), nil
}

// EvalCompact is Eval with a dense result: an array of length b.Len()
// holding the values of the live rows in order (for a column reference, a
// copy of its live rows; without a selection, the same as Eval).
func (ce *CompiledExpr) EvalCompact(mem memory.Allocator, b *Batch) (arrow.Array, error) {
	if b.Sel == nil {
		return ce.Eval(mem, b)
	}
	ce.eb = evalBatch{cols: b.Cols, n: b.N}
	v, err := ce.root.eval(&ce.eb, b.Sel)
	ce.eb.cols = nil
	if err != nil {
		return nil, err
	}
	return materializeDense(mem, v, ce.root.dt(), b.Sel), nil
}

// EvalFilter returns the live rows of b for which the boolean expression is
// TRUE (not FALSE, not NULL), ascending. The slice is owned by the
// CompiledExpr and valid until its next call; it may be b.Sel itself when
// every live row passes. It is never nil.
func (ce *CompiledExpr) EvalFilter(b *Batch) ([]int32, error) {
	if ce.filt == nil {
		return nil, nferr.Queryf("%s is of type %s, not BOOLEAN", ce.expr, ce.root.dt())
	}
	ce.eb = evalBatch{cols: b.Cols, n: b.N}
	s, err := ce.filt.filter(&ce.eb, b.Sel)
	ce.eb.cols = nil
	return s, err
}

// materialize copies v's first n rows into a new Arrow array of type dt.
// When sel is sparse only the selected rows are copied: the others are
// unspecified anyway, and after a selective filter copying all n rows would
// dominate the cost of the expression.
func materialize(mem memory.Allocator, v *vec, dt arrow.DataType, n int, sel []int32) arrow.Array {
	// sparse: fewer than 1/4 of the rows are live (a memmove of all rows
	// costs about as much as a scattered copy of a quarter of them).
	if sel != nil && len(sel) < n/4 {
		return toArray(mem, v, dt, n, sel, placeSel)
	}
	return toArray(mem, v, dt, n, sel, placeAll)
}

// materializeDense gathers the rows sel of v into a new array of
// len(sel) rows.
func materializeDense(mem memory.Allocator, v *vec, dt arrow.DataType, sel []int32) arrow.Array {
	return toArray(mem, v, dt, len(sel), sel, placeDense)
}

// placement is which rows of a vector an array made from it holds, and
// where: the one difference between materialize and materializeDense.
type placement uint8

const (
	placeAll   placement = iota // rows 0..n-1, each at its own position
	placeSel                    // only the rows of sel, at their own positions
	placeDense                  // the rows of sel packed: row sel[j] at position j
)

// toArray builds the n-row array of type dt that holds the rows of v that
// p places.
func toArray(mem memory.Allocator, v *vec, dt arrow.DataType, n int, sel []int32, p placement) arrow.Array {
	k, _ := kindOf(dt)
	if k == pNull {
		return array.NewNull(n)
	}
	if k == pList {
		return listToArray(mem, v, n, sel, p)
	}
	var validity *memory.Buffer
	nullCount := 0
	if v.nulls != nil {
		validity = memory.NewResizableBuffer(mem)
		nullCount = n - placeBits(zeroBits(validity, n), v.nulls, false, n, sel, p)
	}
	values := memory.NewResizableBuffer(mem)
	bufs := []*memory.Buffer{validity, values}
	switch k {
	case pBool:
		placeBits(zeroBits(values, n), v.b, true, n, sel, p)
	case pI32:
		placeValues(values, v.i32, n, sel, p)
	case pI64:
		placeValues(values, v.i64, n, sel, p)
	case pF64:
		placeValues(values, v.f64, n, sel, p)
	case pD128:
		placeValues(values, v.d, n, sel, p)
	case pIv:
		placeValues(values, v.iv, n, sel, p)
	case pStr:
		bufs = append(bufs, placeStrings(mem, values, v, n, sel, p))
	}
	d := array.NewData(dt, n, bufs, nil, nullCount, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	a := array.MakeFromData(d)
	d.Release()
	return a
}

// zeroBits sizes b for n bits, all clear, and returns its bytes.
func zeroBits(b *memory.Buffer, n int) []byte {
	b.Resize(int(bitutil.BytesForBits(int64(n))))
	bm := b.Bytes()
	clear(bm)
	return bm
}

// placeBits sets the bit of each row that p places where src is want, and
// returns how many it set.
func placeBits(bm []byte, src []bool, want bool, n int, sel []int32, p placement) int {
	set := 0
	switch p {
	case placeAll:
		for i, x := range src[:n] {
			if x == want {
				bitutil.SetBit(bm, i)
				set++
			}
		}
	case placeSel:
		for _, i := range sel {
			if src[i] == want {
				bitutil.SetBit(bm, int(i))
				set++
			}
		}
	case placeDense:
		for j, i := range sel {
			if src[i] == want {
				bitutil.SetBit(bm, j)
				set++
			}
		}
	}
	return set
}

// placeValues sizes values for n rows of T and copies in the rows of src
// that p places (a new buffer: with placeSel the others are zero).
func placeValues[T arrow.FixedWidthType](values *memory.Buffer, src []T, n int, sel []int32, p placement) {
	var z T
	values.Resize(n * int(unsafe.Sizeof(z)))
	dst := arrow.GetData[T](values.Bytes())
	switch p {
	case placeAll:
		copy(dst[:n], src[:n])
	case placeSel:
		for _, i := range sel {
			dst[i] = src[i]
		}
	case placeDense:
		for j, i := range sel {
			dst[j] = src[i]
		}
	}
}

// placeStrings writes the offsets of the strings p places to offsBuf and
// returns a new buffer of their bytes. Offsets must be non-decreasing, so
// unless dense every row's offset is copied (rebased to 0).
func placeStrings(mem memory.Allocator, offsBuf *memory.Buffer, v *vec, n int, sel []int32, p placement) *memory.Buffer {
	offsBuf.Resize((n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offsBuf.Bytes())
	data := memory.NewResizableBuffer(mem)
	if p != placeDense {
		if n == 0 {
			offs[0] = 0
			return data
		}
		base := v.off[0]
		for i := 0; i <= n; i++ {
			offs[i] = v.off[i] - base
		}
		data.Resize(int(v.off[n] - base))
		copy(data.Bytes(), v.str[base:v.off[n]])
		return data
	}
	size := 0
	for _, i := range sel {
		size += int(v.off[i+1] - v.off[i])
	}
	data.Resize(size)
	db := data.Bytes()
	pos := 0
	for j, i := range sel {
		offs[j] = int32(pos)
		pos += copy(db[pos:], v.str[v.off[i]:v.off[i+1]])
	}
	offs[n] = int32(pos)
	return data
}

// ---------------------------------------------------------------- typing

func IsNumeric(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT32, arrow.INT64, arrow.FLOAT64, arrow.DECIMAL64, arrow.DECIMAL128:
		return true
	}
	return false
}

func IsInteger(dt arrow.DataType) bool {
	return dt.ID() == arrow.INT32 || dt.ID() == arrow.INT64
}

func isDecimal(dt arrow.DataType) bool {
	return dt.ID() == arrow.DECIMAL64 || dt.ID() == arrow.DECIMAL128
}

// decType is decimal(p, s) in its storage width (decimal64 for p <= 18).
func decType(p, s int32) arrow.DataType {
	return DecimalType(p, s).Arrow()
}

func TypeName(dt arrow.DataType) string {
	if t, err := TypeOf(dt); err == nil {
		return t.String()
	}
	return dt.String()
}

// --------------------------------------------------------------- compiler

type compiler struct {
	schema *arrow.Schema
	loc    *time.Location // the session time zone: the first Expr.Zone in the tree (nil: UTC)
}

// findZone is the first zone stamped on e or its arguments ("": none).
func findZone(e *Expr) string {
	if e.Zone != "" {
		return e.Zone
	}
	for i := range e.Args {
		if z := findZone(&e.Args[i]); z != "" {
			return z
		}
	}
	return ""
}

func (c *compiler) compile(e *Expr) (node, error) {
	switch e.Kind {
	case KindColumn:
		if e.Index < 0 || e.Index >= c.schema.NumFields() {
			return nil, nferr.Queryf("column %s: index %d out of range (input has %d columns)", e, e.Index, c.schema.NumFields())
		}
		dt := c.schema.Field(e.Index).Type
		k, ok := kindOf(dt)
		if !ok {
			return nil, nferr.Queryf("column %s has unsupported type %s", e, dt)
		}
		if k == pBool {
			return &boolColNode{colNode: colNode{idx: e.Index, t: dt, k: k}}, nil
		}
		return &colNode{idx: e.Index, t: dt, k: k}, nil
	case KindLiteral:
		return parseLiteral(e)
	case KindParam:
		return nil, nferr.Internalf("parameter %s is not bound", e.paramName())
	case KindCast:
		if len(e.Args) != 1 || e.Type == nil {
			return nil, nferr.Queryf("malformed CAST %s", e)
		}
		if err := e.Type.Validate(); err != nil {
			return nil, err
		}
		x, err := c.compile(&e.Args[0])
		if err != nil {
			return nil, err
		}
		return c.cast(x, e.Type.Arrow(), e.String())
	case KindCase:
		return c.compileCase(e)
	case KindCall:
		return c.compileCall(e)
	}
	return nil, nferr.Queryf("unknown expression kind %q", string(e.Kind))
}

// cast converts x to type to (a no-op when the types are equal); desc names
// the expression in runtime errors.
func (c *compiler) cast(x node, to arrow.DataType, desc string) (node, error) {
	if arrow.TypeEqual(x.dt(), to) && IsInt2Vector(x.dt()) == IsInt2Vector(to) {
		return x, nil
	}
	n, err := newCast(x, to, desc, c.loc)
	if err != nil {
		return nil, err
	}
	return fold(n, x), nil
}

// fold evaluates n at compile time when all its inputs are constants. A
// constant that fails to evaluate (1/0) is left to fail at run time, only
// if a row reaches it.
func fold(n node, inputs ...node) node {
	for _, in := range inputs {
		if _, ok := in.(*constNode); !ok {
			return n
		}
	}
	if _, ok := n.(*constNode); ok {
		return n
	}
	k, _ := kindOf(n.dt())
	v, err := n.eval(&evalBatch{n: 1}, nil)
	if err != nil {
		return n
	}
	return constFromVec(n.dt(), k, v, 0)
}

func (c *compiler) compileArgs(e *Expr) ([]node, error) {
	args := make([]node, len(e.Args))
	for i := range e.Args {
		n, err := c.compile(&e.Args[i])
		if err != nil {
			return nil, err
		}
		args[i] = n
	}
	return args, nil
}

func arity(e *Expr, lo, hi int) error {
	if len(e.Args) < lo || (hi >= 0 && len(e.Args) > hi) {
		return nferr.Queryf("%s: wrong number of arguments (%d) for %s", e, len(e.Args), e.Fn)
	}
	return nil
}

func (c *compiler) compileCall(e *Expr) (node, error) {
	desc := e.String()
	switch e.Fn {
	case FnNot:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		return c.compileNot(e)
	case FnAnd, FnOr:
		if err := arity(e, 1, -1); err != nil {
			return nil, err
		}
		return c.compileLogic(e)
	case FnIn:
		if err := arity(e, 2, -1); err != nil {
			return nil, err
		}
		return c.compileIn(e, false)
	case FnNullIf:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		// NULLIF(a, b) is CASE WHEN a = b THEN NULL ELSE a END (SQL:2016 6.12).
		els := e.Args[0]
		ce := Case([]Expr{Eq(e.Args[0], e.Args[1])}, []Expr{LitNull(NullType)}, &els)
		return c.compileCase(&ce)
	}
	args, err := c.compileArgs(e)
	if err != nil {
		return nil, err
	}
	var n node
	switch e.Fn {
	case FnAdd, FnSub, FnMul, FnDiv, FnMod:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileArith(e.Fn, args[0], args[1], desc)
	case FnNeg:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		n, err = c.compileNeg(args[0], desc)
	case FnEq, FnNe, FnLt, FnLe, FnGt, FnGe:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileCmp(cmpOpOf[e.Fn], args[0], args[1], desc)
	case FnIsNull, FnIsNotNull:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		n = &isNullNode{x: args[0], neg: e.Fn == FnIsNotNull}
	case FnIsDistinctFrom, FnIsNotDistinctFrom:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileDistinct(args[0], args[1], e.Fn == FnIsNotDistinctFrom, desc)
	case FnLike:
		if err := arity(e, 2, 3); err != nil {
			return nil, err
		}
		n, err = c.compileLike(args, false, desc)
	case FnCoalesce:
		if err := arity(e, 1, -1); err != nil {
			return nil, err
		}
		n, err = c.compileCoalesce(args, desc)
	case FnAbs:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		n, err = c.compileAbs(args[0], desc)
	case FnRound:
		if err := arity(e, 1, 2); err != nil {
			return nil, err
		}
		n, err = c.compileRound(args, desc)
	case FnSubstring, FnUpper, FnLower, FnLength, FnTrim, FnLTrim, FnRTrim, FnConcat, FnStrPos:
		n, err = c.compileString(e, args, desc)
	case FnExtract:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileExtract(args, desc)
	case FnDateTrunc:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileDateTrunc(args, desc)
	case FnToTimestamp:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		n, err = c.compileToTimestamp(args, desc)
	case FnMakeTimestamp:
		if err := arity(e, 6, 6); err != nil {
			return nil, err
		}
		n, err = c.compileMakeTimestamp(args, desc)
	case FnTimezone:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileTimezone(args, desc)
	case FnMakeTime:
		if err := arity(e, 3, 3); err != nil {
			return nil, err
		}
		n, err = c.compileMakeTime(args, desc)
	case FnStrftime:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileStrftime(args, desc)
	case FnStrptime, FnStrptimeTZ:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileStrptime(args, desc, e.Fn == FnStrptimeTZ)
	case FnAge:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileAge(args, desc)
	case FnIntervalSpan:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		if args[0].dt().ID() != arrow.INTERVAL_MONTH_DAY_NANO {
			return nil, nferr.Queryf("function interval_span(%s) does not exist in %s", TypeName(args[0].dt()), desc)
		}
		n = intervalKey(args[0], desc)
	case FnRandom:
		if err := arity(e, 0, 0); err != nil {
			return nil, err
		}
		return c.compileRandom(desc), nil // NB: not folded
	case FnSqrt, FnCbrt, FnExp, FnLn, FnLog10, FnLogBase, FnPower, FnCeil, FnFloor, FnTrunc:
		n, err = c.compileMath(e, args, desc)
	case FnReplace, FnRepeat, FnReverse, FnLPad, FnRPad, FnInitCap, FnMD5, FnSplitPart, FnQuoteIdent, FnQuoteLit, FnToJSON, FnRecordElem,
		FnTranslate, FnChr, FnASCII, FnToHex, FnOctetLength:
		n, err = c.compileMoreString(e, args, desc)
	case FnEncode, FnDecode, FnGetByte:
		n, err = c.compileBytea(e, args, desc)
	case FnGreatest, FnLeast:
		n, err = c.compileExtreme(e, args, desc)
	case FnRegexpReplace, FnRegexpExtract, FnRegexpLike:
		n, err = c.compileRegexp(e, args, desc)
	case FnToCharNumber:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		n, err = c.compileToCharNumber(args, desc)
	case FnJSONGet, FnJSONGetText, FnJSONPath, FnJSONPathText:
		n, err = c.compileJSON(e, args, desc)
	case FnArray, FnArraySub, FnArrayLength, FnCardinality, FnArrayToString, FnStringToArray, FnArrayPosition, FnArrayAny, FnArrayAll, FnArrayCmp, FnIntSeries, FnArrayCat,
		FnJSONElems, FnJSONElemsText, FnJSONKeys, FnJSONValues, FnJSONValuesText, FnJSONOfArray, FnJSONTypeof, FnArrayContains, FnArrayOverlap:
		n, err = c.compileArray(e, args, desc)
	case FnBitAnd, FnBitOr:
		n, err = c.compileBitwise(e, args, desc)
	case FnGcd, FnLcm:
		n, err = c.compileGcdLcm(e, args, desc)
	default:
		return nil, nferr.Queryf("unknown function %q in %s", e.Fn, desc)
	}
	if err != nil {
		return nil, err
	}
	return fold(n, args...), nil
}

// errAt builds the KindQuery error of a failed kernel.
// errAt is an error evaluating an expression over the data (division by
// zero, overflow, a date out of range): KindData, like SQL's data
// exceptions (SQLSTATE class 22).
func errAt(what, desc string) error {
	return nferr.Dataf("%s in %s", what, desc)
}
