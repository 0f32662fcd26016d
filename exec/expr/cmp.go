package expr

import (
	"bytes"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/internal/nferr"
)

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var cmpOpOf = map[string]cmpOp{FnEq: opEq, FnNe: opNe, FnLt: opLt, FnLe: opLe, FnGt: opGt, FnGe: opGe}

var cmpFnOf = [...]string{opEq: FnEq, opNe: FnNe, opLt: FnLt, opLe: FnLe, opGt: FnGt, opGe: FnGe}

// flip is the operator with swapped operands (a < b == b > a).
func (op cmpOp) flip() cmpOp {
	return [...]cmpOp{opEq: opEq, opNe: opNe, opLt: opGt, opLe: opGe, opGt: opLt, opGe: opLe}[op]
}

// negate is the complement (NOT (a < b) == a >= b in three-valued logic:
// both are NULL exactly when an operand is NULL).
func (op cmpOp) negate() cmpOp {
	return [...]cmpOp{opEq: opNe, opNe: opEq, opLt: opGe, opLe: opGt, opGt: opLe, opGe: opLt}[op]
}

// want is the truth table over the three-way comparison result -1, 0, 1.
func (op cmpOp) want() [3]bool {
	return [...][3]bool{
		opEq: {false, true, false}, opNe: {true, false, true},
		opLt: {true, false, false}, opLe: {true, true, false},
		opGt: {false, false, true}, opGe: {false, true, true},
	}[op]
}

// compileCmp types a comparison: operands are converted to their common
// type (numbers widen; a string literal compared with a date, number or
// boolean is cast to that type, as PostgreSQL does with unknown literals).
func (c *compiler) compileCmp(op cmpOp, a, b node, desc string) (node, error) {
	ta, tb := a.dt(), b.dt()
	if ta.ID() == arrow.NULL || tb.ID() == arrow.NULL {
		return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}, nil
	}
	var err error
	if a, b, err = c.unifyLiterals(a, b, desc); err != nil {
		return nil, err
	}
	ta, tb = a.dt(), b.dt()
	t, ok := CommonType(ta, tb)
	if !ok {
		return nil, nferr.Queryf("operator does not exist: %s %s %s in %s", TypeName(ta), infix[cmpFnOf[op]], TypeName(tb), desc)
	}
	if a, err = c.cast(a, t, desc); err != nil {
		return nil, err
	}
	if b, err = c.cast(b, t, desc); err != nil {
		return nil, err
	}
	if IsArray(t) {
		e := Call(FnArrayCmp, LitString(cmpFnOf[op]), Col(0, ""), Col(1, "")) // NB: for the arity; the nodes are a, b
		n, err := c.compileArray(&e, []node{&constNode{t: arrow.BinaryTypes.String, k: pStr, s: cmpFnOf[op]}, a, b}, desc)
		if err != nil {
			return nil, err
		}
		return fold(n, a, b), nil
	}
	if t.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		// Intervals compare as PostgreSQL's do: by their span with a
		// month of 30 days ('1 month' = '30 days'), as 128-bit
		// nanoseconds.
		a, b, t = intervalKey(a, desc), intervalKey(b, desc), ivKeyType
	}
	if _, ok := a.(*constNode); ok {
		if _, ok := b.(*constNode); !ok {
			a, b, op = b, a, op.flip()
		}
	}
	k, _ := kindOf(t)
	x := &cmpNode{op: op, a: a, b: b, k: k}
	x.bc, _ = b.(*constNode)
	if x.bc != nil {
		x.bs = []byte(x.bc.s)
		if k == pF64 {
			x.bc = &constNode{t: arrow.PrimitiveTypes.Int64, k: pI64, i64: floatKey(x.bc.f64), null: x.bc.null}
		}
	}
	return x, nil
}

// FnIntervalSpan is interval_span(iv): IntervalSpan as decimal(38,0),
// the key intervals sort by [1].
const FnIntervalSpan = "interval_span"

// ivKeyType is the type of intervalKey's values.
var ivKeyType = &arrow.Decimal128Type{Precision: 38, Scale: 0}

// intervalKey is x's span in nanoseconds (months of 30 days).
func intervalKey(x node, desc string) node {
	n := &funcNode{args: []node{x}, t: ivKeyType, desc: desc, run: intervalKeyKernel}
	return fold(n, x)
}

func intervalKeyKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.d = Grow(out.d, n)
	a := in[0]
	each(sel, n, func(i int32) { out.d[i] = IntervalSpan(a.iv[i]) })
	return nil
}

// IntervalSpan is an interval's span in nanoseconds with months of 30
// days, the order PostgreSQL compares intervals by (as a decimal128).
func IntervalSpan(iv arrow.MonthDayNanoInterval) decimal128.Num {
	days := int64(iv.Months)*30 + int64(iv.Days)
	return decimal128.FromI64(days).Mul(decimal128.FromI64(NanosPerDay)).Add(decimal128.FromI64(iv.Nanoseconds))
}

// unifyLiterals casts a string constant compared with a non-string operand
// to that operand's type.
func (c *compiler) unifyLiterals(a, b node, desc string) (node, node, error) {
	var err error
	if ca, ok := a.(*constNode); ok && ca.k == pStr && b.dt().ID() != arrow.STRING {
		if a, err = c.castConst(ca, b.dt(), desc); err != nil {
			return nil, nil, err
		}
	}
	if cb, ok := b.(*constNode); ok && cb.k == pStr && a.dt().ID() != arrow.STRING {
		if b, err = c.castConst(cb, a.dt(), desc); err != nil {
			return nil, nil, err
		}
	}
	return a, b, nil
}

// castConst casts a constant now, reporting a failed conversion as the
// error of the query.
func (c *compiler) castConst(x *constNode, to arrow.DataType, desc string) (node, error) {
	n, err := newCast(x, to, desc, c.loc)
	if err != nil {
		return nil, err
	}
	v, err := n.eval(&evalBatch{n: 1}, nil)
	if err != nil {
		return nil, err
	}
	k, _ := kindOf(to)
	return constFromVec(to, k, v, 0), nil
}

// floatKey maps a double to an int64 whose order is PostgreSQL's order of
// doubles: -0 equals 0, NaN equals NaN and is greater than everything.
func floatKey(f float64) int64 {
	if f != f {
		return math.MaxInt64
	}
	if f == 0 {
		f = 0 // -0 -> +0
	}
	b := int64(math.Float64bits(f))
	return b ^ ((b >> 63) & math.MaxInt64)
}

// cmpNode is a comparison. A constant operand is always b (bc).
type cmpNode struct {
	op   cmpOp
	a, b node
	bc   *constNode
	bs   []byte // bc's string
	k    pkind

	va, vb *vec
	out    []int32
	s1     []int32
	fa, fb []int64 // float keys
	v      vec
	nulls  []bool
}

func (x *cmpNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *cmpNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	va, err := x.a.eval(b, sel)
	if err != nil {
		return nil, err
	}
	x.va, x.vb = va, nil
	var bNulls []bool
	if x.bc == nil {
		vb, err := x.b.eval(b, sel)
		if err != nil {
			return nil, err
		}
		x.vb = vb
		bNulls = vb.nulls
	} else if x.bc.null {
		x.out = Grow(x.out, 0)
		return x.out, nil
	}
	n := b.n
	s := sel
	if va.nulls != nil || bNulls != nil {
		s = nonNullSel(&x.s1, sel, n, va.nulls, bNulls)
	}
	size := n
	if s != nil {
		size = len(s)
	}
	out := Grow(x.out, size)
	x.out = out
	switch x.k {
	case pI32:
		if x.bc != nil {
			return selConst(x.op, out, va.i32, int32(x.bc.i64), s, n), nil
		}
		return selVV(x.op, out, va.i32, x.vb.i32, s, n), nil
	case pI64:
		if x.bc != nil {
			return selConst(x.op, out, va.i64, x.bc.i64, s, n), nil
		}
		return selVV(x.op, out, va.i64, x.vb.i64, s, n), nil
	case pF64:
		x.fa = floatKeys(x.fa, va.f64, s, n)
		if x.bc != nil {
			return selConst(x.op, out, x.fa, x.bc.i64, s, n), nil
		}
		x.fb = floatKeys(x.fb, x.vb.f64, s, n)
		return selVV(x.op, out, x.fa, x.fb, s, n), nil
	case pD128:
		if x.bc != nil {
			return selD128Const(x.op.want(), out, va.d, x.bc.d, s, n), nil
		}
		return selD128(x.op.want(), out, va.d, x.vb.d, s, n), nil
	case pStr:
		if x.bc != nil {
			return selStrConst(x.op, out, va, x.bs, s, n), nil
		}
		return selStr(x.op.want(), out, va, x.vb, s, n), nil
	case pBool:
		w := x.op.want()
		k := 0
		each(s, n, func(i int32) {
			var bv bool
			if x.bc != nil {
				bv = x.bc.b
			} else {
				bv = x.vb.b[i]
			}
			out[k] = i
			k += b2i(w[b2i(va.b[i])-b2i(bv)+1])
		})
		return out[:k], nil
	}
	return nil, nferr.Internalf("comparison of kind %d", x.k)
}

// bNull reports whether the right operand is NULL at row i (after filter).
func (x *cmpNode) bNull(i int32) bool {
	if x.bc != nil {
		return x.bc.null
	}
	return x.vb.isNull(i)
}

func (x *cmpNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	pass, err := x.filter(b, sel)
	if err != nil {
		return nil, err
	}
	var nulls []bool
	switch {
	case x.bc != nil && x.bc.null:
		nulls = fill(Grow(x.nulls, b.n), true)
		x.nulls = nulls
	case x.vb != nil:
		nulls = orNulls(&x.nulls, sel, b.n, x.va.nulls, x.vb.nulls)
	default:
		nulls = x.va.nulls
	}
	boolFromFilter(&x.v, sel, b.n, pass, nulls)
	return &x.v, nil
}

func floatKeys(dst []int64, f []float64, sel []int32, n int) []int64 {
	dst = Grow(dst, n)
	if sel == nil {
		for i, x := range f[:n] {
			dst[i] = floatKey(x)
		}
	} else {
		for _, i := range sel {
			dst[i] = floatKey(f[i])
		}
	}
	return dst
}

// ------------------------------------------------- integer select kernels
//
// One function per operator keeps the comparison a single instruction in
// the loop; the operator switch runs once per batch.

func selConst[T integer](op cmpOp, out []int32, a []T, c T, sel []int32, n int) []int32 {
	switch op {
	case opEq:
		return selEqC(out, a, c, sel, n)
	case opNe:
		return selNeC(out, a, c, sel, n)
	case opLt:
		return SelLtC(out, a, c, sel, n)
	case opLe:
		return selLeC(out, a, c, sel, n)
	case opGt:
		return selGtC(out, a, c, sel, n)
	}
	return selGeC(out, a, c, sel, n)
}

func selVV[T integer](op cmpOp, out []int32, a, b []T, sel []int32, n int) []int32 {
	switch op {
	case opEq:
		return selEqV(out, a, b, sel, n)
	case opNe:
		return selNeV(out, a, b, sel, n)
	case opLt:
		return selLtV(out, a, b, sel, n)
	case opLe:
		return selLeV(out, a, b, sel, n)
	case opGt:
		return selLtV(out, b, a, sel, n)
	}
	return selLeV(out, b, a, sel, n)
}

func selEqC[T integer](out []int32, a []T, c T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(x == c)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] == c)
		}
	}
	return out[:k]
}

func selNeC[T integer](out []int32, a []T, c T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(x != c)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] != c)
		}
	}
	return out[:k]
}

func SelLtC[T integer](out []int32, a []T, c T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(x < c)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] < c)
		}
	}
	return out[:k]
}

func selLeC[T integer](out []int32, a []T, c T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(x <= c)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] <= c)
		}
	}
	return out[:k]
}

func selGtC[T integer](out []int32, a []T, c T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(x > c)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] > c)
		}
	}
	return out[:k]
}

func selGeC[T integer](out []int32, a []T, c T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(x >= c)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] >= c)
		}
	}
	return out[:k]
}

func selEqV[T integer](out []int32, a, b []T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		a, b = a[:n], b[:n]
		for i := range a {
			out[k] = int32(i)
			k += b2i(a[i] == b[i])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] == b[i])
		}
	}
	return out[:k]
}

func selNeV[T integer](out []int32, a, b []T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		a, b = a[:n], b[:n]
		for i := range a {
			out[k] = int32(i)
			k += b2i(a[i] != b[i])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] != b[i])
		}
	}
	return out[:k]
}

func selLtV[T integer](out []int32, a, b []T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		a, b = a[:n], b[:n]
		for i := range a {
			out[k] = int32(i)
			k += b2i(a[i] < b[i])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] < b[i])
		}
	}
	return out[:k]
}

func selLeV[T integer](out []int32, a, b []T, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		a, b = a[:n], b[:n]
		for i := range a {
			out[k] = int32(i)
			k += b2i(a[i] <= b[i])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(a[i] <= b[i])
		}
	}
	return out[:k]
}

// ------------------------------------------- decimal128 and string kernels

func cmp128(a, b decimal128.Num) int {
	ah, bh := a.HighBits(), b.HighBits()
	if ah != bh {
		if ah < bh {
			return -1
		}
		return 1
	}
	al, bl := a.LowBits(), b.LowBits()
	if al == bl {
		return 0
	}
	if al < bl {
		return -1
	}
	return 1
}

func selD128Const(w [3]bool, out []int32, a []decimal128.Num, c decimal128.Num, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			k += b2i(w[cmp128(a[i], c)+1])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(w[cmp128(a[i], c)+1])
		}
	}
	return out[:k]
}

func selD128(w [3]bool, out []int32, a, b []decimal128.Num, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			k += b2i(w[cmp128(a[i], b[i])+1])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(w[cmp128(a[i], b[i])+1])
		}
	}
	return out[:k]
}

func selStrConst(op cmpOp, out []int32, a *vec, c []byte, sel []int32, n int) []int32 {
	k := 0
	if op == opEq || op == opNe {
		want := op == opEq
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(bytes.Equal(a.str[a.off[i]:a.off[i+1]], c) == want)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(bytes.Equal(a.str[a.off[i]:a.off[i+1]], c) == want)
			}
		}
		return out[:k]
	}
	w := op.want()
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			k += b2i(w[bytes.Compare(a.str[a.off[i]:a.off[i+1]], c)+1])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(w[bytes.Compare(a.str[a.off[i]:a.off[i+1]], c)+1])
		}
	}
	return out[:k]
}

func selStr(w [3]bool, out []int32, a, b *vec, sel []int32, n int) []int32 {
	k := 0
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			k += b2i(w[bytes.Compare(a.str[a.off[i]:a.off[i+1]], b.str[b.off[i]:b.off[i+1]])+1])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(w[bytes.Compare(a.str[a.off[i]:a.off[i+1]], b.str[b.off[i]:b.off[i+1]])+1])
		}
	}
	return out[:k]
}

// ------------------------------------------------------- fused ranges

// rangeNode is lo <= x AND x <= hi over one integer column and two
// constants: the AND of two comparisons fused into one pass with one
// unsigned compare per row (selRange). The compiler builds it from BETWEEN
// and date ranges (Q6: l_shipdate >= d AND l_shipdate < d + 1 year).
type rangeNode struct {
	x      *colNode
	lo, hi int64 // inclusive bounds; lo > hi means empty
	k      pkind
	src    [2]*cmpNode // the fused comparisons, for eval

	out []int32
	s1  []int32
	v   vec
}

func (x *rangeNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *rangeNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	va, err := x.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	n := b.n
	s := sel
	if va.nulls != nil {
		s = nonNullSel(&x.s1, sel, n, va.nulls, nil)
	}
	size := n
	if s != nil {
		size = len(s)
	}
	out := Grow(x.out, size)
	x.out = out
	if x.lo > x.hi {
		return out[:0], nil
	}
	if x.k == pI32 {
		return SelRange32(out, va.i32, int32(x.lo), int32(x.hi), s, n), nil
	}
	return SelRange64(out, va.i64, x.lo, x.hi, s, n), nil
}

func (x *rangeNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	pass, err := x.filter(b, sel)
	if err != nil {
		return nil, err
	}
	boolFromFilter(&x.v, sel, b.n, pass, x.x.v.nulls)
	return &x.v, nil
}

// SelRange32 writes the rows of sel (nil: all n) where lo <= a[i] <= hi to
// out; SelRange64 is the same over int64.
//
// NB: they are not inlined so that callers in other packages see their
// escape analysis (out leaks only to the result) rather than a call to
// the generic selRange's shape, which would move a caller's stack-sized
// out to the heap.
//
//go:noinline
func SelRange32(out []int32, a []int32, lo, hi int32, sel []int32, n int) []int32 {
	return selRange[int32, uint32](out, a, lo, hi, sel, n)
}

//go:noinline
func SelRange64(out []int32, a []int64, lo, hi int64, sel []int32, n int) []int32 {
	return selRange[int64, uint64](out, a, lo, hi, sel, n)
}

// selRange serves SelRange32 and SelRange64 with one unsigned compare per
// row: (x - lo) <= (hi - lo) modulo 2^w, U being T's unsigned twin of width
// w.
func selRange[T int32 | int64, U uint32 | uint64](out []int32, a []T, lo, hi T, sel []int32, n int) []int32 {
	k := 0
	base, width := U(lo), U(hi)-U(lo)
	if sel == nil {
		for i, x := range a[:n] {
			out[k] = int32(i)
			k += b2i(U(x)-base <= width)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(U(a[i])-base <= width)
		}
	}
	return out[:k]
}

// bound returns the inclusive bound a comparison x op c puts on x: lower
// (op >, >=) or upper (<, <=); ok is false for other shapes. A bound that
// cannot hold (x > MaxInt) becomes an empty range.
func (x *cmpNode) bound() (col *colNode, v int64, lower, ok bool) {
	col, isCol := x.a.(*colNode)
	if !isCol || x.bc == nil || x.bc.null || (x.k != pI32 && x.k != pI64) {
		return nil, 0, false, false
	}
	maxV, minV := int64(math.MaxInt64), int64(math.MinInt64)
	if x.k == pI32 {
		maxV, minV = math.MaxInt32, math.MinInt32
	}
	c := x.bc.i64
	switch x.op {
	case opGe:
		return col, c, true, true
	case opGt:
		if c == maxV {
			return col, c, true, true // x > max: empty; lo = max with hi < max below
		}
		return col, c + 1, true, true
	case opLe:
		return col, c, false, true
	case opLt:
		if c == minV {
			return col, c, false, true
		}
		return col, c - 1, false, true
	}
	return nil, 0, false, false
}

// fuseRanges replaces pairs of lower/upper bound comparisons on the same
// integer column among the conjuncts of an AND by rangeNodes.
func fuseRanges(args []boolNode) []boolNode {
	out := make([]boolNode, 0, len(args))
	used := make([]bool, len(args))
	for i, a := range args {
		if used[i] {
			continue
		}
		ca, ok := a.(*cmpNode)
		if !ok {
			out = append(out, a)
			continue
		}
		colA, va, lowerA, okA := ca.bound()
		if !okA {
			out = append(out, a)
			continue
		}
		fused := false
		for j := i + 1; j < len(args) && !fused; j++ {
			cb, ok := args[j].(*cmpNode)
			if used[j] || !ok {
				continue
			}
			colB, vb, lowerB, okB := cb.bound()
			if !okB || colB.idx != colA.idx || lowerB == lowerA {
				continue
			}
			lo, hi := va, vb
			if !lowerA {
				lo, hi = vb, va
			}
			r := &rangeNode{x: colA, lo: lo, hi: hi, k: ca.k, src: [2]*cmpNode{ca, cb}}
			// Gt MaxInt / Lt MinInt kept their constant: force emptiness.
			if emptyBound(ca) || emptyBound(cb) {
				r.lo, r.hi = 1, 0
			}
			out = append(out, r)
			used[j] = true
			fused = true
		}
		if !fused {
			out = append(out, a)
		}
	}
	return out
}

func emptyBound(x *cmpNode) bool {
	maxV, minV := int64(math.MaxInt64), int64(math.MinInt64)
	if x.k == pI32 {
		maxV, minV = math.MaxInt32, math.MinInt32
	}
	return x.op == opGt && x.bc.i64 == maxV || x.op == opLt && x.bc.i64 == minV
}
