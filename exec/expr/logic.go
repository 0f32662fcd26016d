package expr

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Boolean logic is three-valued (SQL:2016 8.2): NULL AND FALSE is FALSE,
// NULL AND TRUE is NULL, NULL OR TRUE is TRUE, NOT NULL is NULL.
//
// As filters, AND narrows the selection conjunct by conjunct and OR
// evaluates each disjunct only on the rows not yet accepted, so later
// operands never see rows an earlier one decided (as values, AND evaluates
// later operands only where the result is not yet FALSE). NOT is pushed
// into comparisons, AND/OR (De Morgan), IS [NOT] NULL, LIKE and IN at
// compile time, so a filter never evaluates a NOT over a boolean vector
// unless its operand is an arbitrary boolean expression.

func (c *compiler) requireBool(n node, desc string) (boolNode, error) {
	switch n.dt().ID() {
	case arrow.BOOL:
		return asBool(n), nil
	case arrow.NULL:
		return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}, nil
	}
	return nil, nferr.Queryf("argument of %s must be BOOLEAN, not %s", desc, TypeName(n.dt()))
}

// compileNot pushes NOT down where three-valued logic allows.
func (c *compiler) compileNot(e *Expr) (node, error) {
	a := &e.Args[0]
	if a.Kind == KindCall {
		switch a.Fn {
		case FnNot:
			if len(a.Args) == 1 {
				inner := a.Args[0]
				n, err := c.compile(&inner)
				if err != nil {
					return nil, err
				}
				return c.requireBool(n, e.String())
			}
		case FnEq, FnNe, FnLt, FnLe, FnGt, FnGe:
			if len(a.Args) == 2 {
				neg := Call(cmpFnOf[cmpOpOf[a.Fn].negate()], a.Args...)
				return c.compile(&neg)
			}
		case FnAnd, FnOr:
			args := make([]Expr, len(a.Args))
			for i := range a.Args {
				args[i] = Not(a.Args[i])
			}
			fn := FnOr
			if a.Fn == FnOr {
				fn = FnAnd
			}
			n := Call(fn, args...)
			return c.compile(&n)
		case FnIsNull, FnIsNotNull:
			fn := FnIsNotNull
			if a.Fn == FnIsNotNull {
				fn = FnIsNull
			}
			n := Call(fn, a.Args...)
			return c.compile(&n)
		case FnIsDistinctFrom, FnIsNotDistinctFrom:
			fn := FnIsNotDistinctFrom
			if a.Fn == FnIsNotDistinctFrom {
				fn = FnIsDistinctFrom
			}
			n := Call(fn, a.Args...)
			return c.compile(&n)
		case FnIn:
			if len(a.Args) >= 2 {
				return c.compileIn(a, true)
			}
		case FnLike:
			if len(a.Args) >= 2 && len(a.Args) <= 3 {
				args, err := c.compileArgs(a)
				if err != nil {
					return nil, err
				}
				n, err := c.compileLike(args, true, e.String())
				if err != nil {
					return nil, err
				}
				return fold(n, args...), nil
			}
		}
	}
	x, err := c.compile(a)
	if err != nil {
		return nil, err
	}
	bx, err := c.requireBool(x, e.String())
	if err != nil {
		return nil, err
	}
	return fold(&notNode{x: bx}, x), nil
}

func (c *compiler) compileLogic(e *Expr) (node, error) {
	args := make([]boolNode, 0, len(e.Args))
	var all []node
	for i := range e.Args {
		n, err := c.compile(&e.Args[i])
		if err != nil {
			return nil, err
		}
		bn, err := c.requireBool(n, e.String())
		if err != nil {
			return nil, err
		}
		// Flatten nested ANDs (ORs) into one node.
		if e.Fn == FnAnd {
			if inner, ok := bn.(*andNode); ok {
				args = append(args, inner.args...)
				all = append(all, bn)
				continue
			}
		} else if inner, ok := bn.(*orNode); ok {
			args = append(args, inner.args...)
			all = append(all, bn)
			continue
		}
		args = append(args, bn)
		all = append(all, bn)
	}
	if len(args) == 1 {
		return args[0], nil
	}
	var n node
	if e.Fn == FnAnd {
		if args = fuseRanges(args); len(args) == 1 {
			return fold(args[0], all...), nil
		}
		n = &andNode{args: args}
	} else {
		n = &orNode{args: args}
	}
	return fold(n, all...), nil
}

// andNode is the n-ary AND.
type andNode struct {
	args []boolNode
	v    vec
	rest []int32
	nl   []bool
}

func (x *andNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *andNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	s := sel
	for _, a := range x.args {
		var err error
		if s, err = a.filter(b, s); err != nil {
			return nil, err
		}
		if len(s) == 0 {
			break
		}
	}
	return s, nil
}

// eval: each operand is evaluated only on the rows still not FALSE.
func (x *andNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	return evalAndOr(b, sel, x.args, false, &x.v, &x.nl, &x.rest)
}

// orNode is the n-ary OR.
type orNode struct {
	args      []boolNode
	v         vec
	rest, acc []int32
	tmp, remA []int32
	remB      []int32
	nl        []bool
}

func (x *orNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *orNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	rem := sel
	var acc []int32
	bufs := [2]*[]int32{&x.remA, &x.remB}
	for k, a := range x.args {
		if rem != nil && len(rem) == 0 {
			break
		}
		pass, err := a.filter(b, rem)
		if err != nil {
			return nil, err
		}
		if len(pass) == 0 {
			continue
		}
		if k < len(x.args)-1 {
			buf := bufs[k%2]
			*buf = diffSel(*buf, rem, pass, b.n)
			rem = *buf
		}
		if acc == nil {
			x.acc = append(x.acc[:0], pass...)
		} else {
			x.tmp = mergeSel(x.tmp, x.acc, pass)
			x.acc, x.tmp = x.tmp, x.acc
		}
		acc = x.acc
	}
	if acc == nil {
		x.acc = x.acc[:0]
		if x.acc == nil {
			x.acc = make([]int32, 0, 16)
		}
	}
	return x.acc, nil
}

func (x *orNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	return evalAndOr(b, sel, x.args, true, &x.v, &x.nl, &x.rest)
}

// evalAndOr evaluates AND (isOr false) or OR as a boolean vector. The
// decided value of AND is FALSE, of OR TRUE; an operand is evaluated only on
// the rows not yet decided.
func evalAndOr(b *evalBatch, sel []int32, args []boolNode, isOr bool, out *vec, nl *[]bool, rest *[]int32) (*vec, error) {
	n := b.n
	out.b = Grow(out.b, n)
	nulls := Grow(*nl, n)
	*nl = nulls
	decided := isOr // the value that decides the result
	// Start from the neutral value (TRUE for AND, FALSE for OR), not NULL.
	each(sel, n, func(i int32) { out.b[i] = !decided; nulls[i] = false })
	anyNull := false
	rows := sel
	for _, a := range args {
		if rows != nil && len(rows) == 0 {
			break
		}
		v, err := a.eval(b, rows)
		if err != nil {
			return nil, err
		}
		r := Grow(*rest, 0)
		each(rows, n, func(i int32) {
			switch {
			case v.isNull(i):
				nulls[i] = true
				anyNull = true
				r = append(r, i)
			case v.b[i] == decided:
				out.b[i] = decided
				nulls[i] = false
			default:
				r = append(r, i)
			}
		})
		*rest = r
		rows = r
	}
	if anyNull {
		out.nulls = nulls
	} else {
		out.nulls = nil
	}
	return out, nil
}

// diffSel returns a \ b (b is a subset of a, both ascending; a nil means
// [0, n)) in dst.
func diffSel(dst, a, b []int32, n int) []int32 {
	// INVARIANT: the result is never nil (nil would mean "all rows").
	if dst == nil {
		dst = make([]int32, 0, 16)
	}
	dst = dst[:0]
	j := 0
	if a == nil {
		for i := int32(0); i < int32(n); i++ {
			if j < len(b) && b[j] == i {
				j++
				continue
			}
			dst = append(dst, i)
		}
		return dst
	}
	for _, i := range a {
		if j < len(b) && b[j] == i {
			j++
			continue
		}
		dst = append(dst, i)
	}
	return dst
}

// mergeSel returns the sorted union of disjoint ascending a and b in dst.
func mergeSel(dst, a, b []int32) []int32 {
	dst = dst[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i] < b[j] {
			dst = append(dst, a[i])
			i++
		} else {
			dst = append(dst, b[j])
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// notNode is NOT over an arbitrary boolean expression.
type notNode struct {
	x   boolNode
	v   vec
	out []int32
}

func (x *notNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *notNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	v, err := x.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	x.v.b = Grow(x.v.b, b.n)
	if sel == nil {
		for i := 0; i < b.n; i++ {
			x.v.b[i] = !v.b[i]
		}
	} else {
		for _, i := range sel {
			x.v.b[i] = !v.b[i]
		}
	}
	x.v.nulls = v.nulls
	return &x.v, nil
}

func (x *notNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	v, err := x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	return selectTrue(&x.out, v, sel, b.n), nil
}

// isNullNode is x IS NULL (neg: IS NOT NULL); never NULL itself.
type isNullNode struct {
	x   node
	neg bool
	v   vec
	out []int32
}

func (x *isNullNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *isNullNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	v, err := x.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	x.v.b = Grow(x.v.b, b.n)
	x.v.nulls = nil
	if v.nulls == nil {
		each(sel, b.n, func(i int32) { x.v.b[i] = x.neg })
		return &x.v, nil
	}
	if sel == nil {
		for i := 0; i < b.n; i++ {
			x.v.b[i] = v.nulls[i] != x.neg
		}
	} else {
		for _, i := range sel {
			x.v.b[i] = v.nulls[i] != x.neg
		}
	}
	return &x.v, nil
}

func (x *isNullNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	v, err := x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	return selectTrue(&x.out, v, sel, b.n), nil
}

// distinctNode is a IS [NOT] DISTINCT FROM b: NULL-safe (in)equality.
type distinctNode struct {
	eq  *cmpNode // a = b over the same operands
	neg bool     // IS NOT DISTINCT FROM
	v   vec
	out []int32
}

func (c *compiler) compileDistinct(a, b node, neg bool, desc string) (node, error) {
	ta, tb := a.dt(), b.dt()
	if ta.ID() == arrow.NULL && tb.ID() == arrow.NULL {
		return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, b: neg}, nil
	}
	if ta.ID() == arrow.NULL {
		a = newNullConst(tb)
	}
	if tb.ID() == arrow.NULL {
		b = newNullConst(ta)
	}
	eq, err := c.compileCmp(opEq, a, b, desc)
	if err != nil {
		return nil, err
	}
	cn, ok := eq.(*cmpNode)
	if !ok {
		return nil, nferr.Internalf("IS DISTINCT FROM over %T", eq)
	}
	return &distinctNode{eq: cn, neg: neg}, nil
}

func (x *distinctNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (x *distinctNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	pass, err := x.eq.filter(b, sel)
	if err != nil {
		return nil, err
	}
	out := &x.v
	out.b = Grow(out.b, b.n)
	out.nulls = nil
	va := x.eq.va
	each(sel, b.n, func(i int32) {
		an, bn := va.isNull(i), x.eq.bNull(i)
		// distinct unless both NULL; equal non-NULL rows are fixed below.
		out.b[i] = !(an && bn) != x.neg
	})
	for _, i := range pass {
		out.b[i] = x.neg
	}
	return out, nil
}

func (x *distinctNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	v, err := x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	return selectTrue(&x.out, v, sel, b.n), nil
}

// ------------------------------------------------------ CASE, COALESCE

// part is one source of a merged result: rows (ascending) take their value
// from v.
type part struct {
	rows []int32
	v    *vec
}

// gather builds out from disjoint parts over sel; rows of sel in no part
// are NULL.
func gather(out *vec, k pkind, parts []part, sel []int32, n int, which *[]int16, nl *[]bool) {
	nulls := Grow(*nl, n)
	*nl = nulls
	if sel == nil {
		fill(nulls[:n], true)
	} else {
		for _, i := range sel {
			nulls[i] = true
		}
	}
	anyNull := false
	switch k {
	case pNull:
		out.nulls = nulls
		return
	case pStr:
		w := Grow(*which, n)
		*which = w
		each(sel, n, func(i int32) { w[i] = -1 })
		for p, pt := range parts {
			for _, i := range pt.rows {
				w[i] = int16(p)
			}
		}
		sw := newStrWriter(out, n)
		each(sel, n, func(i int32) {
			sw.at(i)
			p := w[i]
			if p < 0 || parts[p].v.isNull(i) {
				anyNull = true
				return
			}
			nulls[i] = false
			out.str = append(out.str, parts[p].v.strAt(i)...)
		})
		sw.finish(n)
	default:
		switch k {
		case pBool:
			out.b = Grow(out.b, n)
		case pI32:
			out.i32 = Grow(out.i32, n)
		case pI64:
			out.i64 = Grow(out.i64, n)
		case pF64:
			out.f64 = Grow(out.f64, n)
		case pD128:
			out.d = Grow(out.d, n)
		case pIv:
			out.iv = Grow(out.iv, n)
		}
		for _, pt := range parts {
			src := pt.v
			switch k {
			case pBool:
				copyAt(out.b, src.b, pt.rows, n)
			case pI32:
				copyAt(out.i32, src.i32, pt.rows, n)
			case pI64:
				copyAt(out.i64, src.i64, pt.rows, n)
			case pF64:
				copyAt(out.f64, src.f64, pt.rows, n)
			case pD128:
				copyAt(out.d, src.d, pt.rows, n)
			case pIv:
				copyAt(out.iv, src.iv, pt.rows, n)
			}
			if src.nulls == nil {
				for _, i := range pt.rows {
					nulls[i] = false
				}
			} else {
				for _, i := range pt.rows {
					nulls[i] = src.nulls[i]
				}
			}
		}
		each(sel, n, func(i int32) { anyNull = anyNull || nulls[i] })
	}
	if anyNull {
		out.nulls = nulls
	} else {
		out.nulls = nil
	}
}

// resultType is the common type of CASE/COALESCE branches.
func resultType(ns []node, desc string) (arrow.DataType, error) {
	t := arrow.DataType(arrow.Null)
	for _, n := range ns {
		ct, ok := CommonType(t, n.dt())
		if !ok {
			return nil, nferr.Queryf("%s: types %s and %s cannot be matched", desc, TypeName(t), TypeName(n.dt()))
		}
		t = ct
	}
	return t, nil
}

// caseNode is the searched CASE; each THEN is evaluated only on the rows
// that reach it.
type caseNode struct {
	t     arrow.DataType
	k     pkind
	whens []boolNode
	thens []node
	els   node // nil: ELSE NULL

	v          vec
	remA, remB []int32
	parts      []part
	which      []int16
	nl         []bool
}

func (c *compiler) compileCase(e *Expr) (node, error) {
	desc := e.String()
	if len(e.Args) < 2 {
		return nil, nferr.Queryf("malformed CASE %s", desc)
	}
	x := &caseNode{}
	var results []node
	var all []node
	i := 0
	for ; i+1 < len(e.Args); i += 2 {
		w, err := c.compile(&e.Args[i])
		if err != nil {
			return nil, err
		}
		bw, err := c.requireBool(w, desc)
		if err != nil {
			return nil, err
		}
		t, err := c.compile(&e.Args[i+1])
		if err != nil {
			return nil, err
		}
		x.whens = append(x.whens, bw)
		results = append(results, t)
		all = append(all, w, t)
	}
	if i < len(e.Args) {
		el, err := c.compile(&e.Args[i])
		if err != nil {
			return nil, err
		}
		results = append(results, el)
		all = append(all, el)
		x.els = el
	}
	t, err := resultType(results, desc)
	if err != nil {
		return nil, err
	}
	x.t = t
	x.k, _ = kindOf(t)
	for j := range results {
		r, err := c.cast(results[j], t, desc)
		if err != nil {
			return nil, err
		}
		results[j] = r
	}
	x.thens = results[:len(x.whens)]
	if x.els != nil {
		x.els = results[len(x.whens)]
	}
	return fold(x, all...), nil
}

func (x *caseNode) dt() arrow.DataType { return x.t }

func (x *caseNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	rem := sel
	parts := x.parts[:0]
	bufs := [2]*[]int32{&x.remA, &x.remB}
	for k, w := range x.whens {
		if rem != nil && len(rem) == 0 {
			break
		}
		pass, err := w.filter(b, rem)
		if err != nil {
			return nil, err
		}
		if len(pass) > 0 {
			v, err := x.thens[k].eval(b, pass)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part{rows: pass, v: v})
		}
		buf := bufs[k%2]
		*buf = diffSel(*buf, rem, pass, b.n)
		rem = *buf
	}
	if x.els != nil && len(rem) > 0 {
		v, err := x.els.eval(b, rem)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{rows: rem, v: v})
	}
	x.parts = parts
	if x.k == pList {
		return gatherLists(x.t, parts, sel, b.n)
	}
	gather(&x.v, x.k, parts, sel, b.n, &x.which, &x.nl)
	return &x.v, nil
}

// coalesceNode evaluates each argument only on the rows still NULL.
type coalesceNode struct {
	t    arrow.DataType
	k    pkind
	args []node

	v     vec
	rems  [][]int32
	parts []part
	which []int16
	nl    []bool
}

// castAll casts every node of args to t.
func (c *compiler) castAll(args []node, t arrow.DataType, desc string) ([]node, error) {
	out := make([]node, len(args))
	for i, a := range args {
		n, err := c.cast(a, t, desc)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *compiler) compileCoalesce(args []node, desc string) (node, error) {
	t, err := resultType(args, desc)
	if err != nil {
		return nil, err
	}
	x := &coalesceNode{t: t}
	x.k, _ = kindOf(t)
	if x.args, err = c.castAll(args, t, desc); err != nil {
		return nil, err
	}
	x.rems = make([][]int32, len(args))
	return x, nil
}

func (x *coalesceNode) dt() arrow.DataType { return x.t }

func (x *coalesceNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	rem := sel
	parts := x.parts[:0]
	for k, a := range x.args {
		v, err := a.eval(b, rem)
		if err != nil {
			return nil, err
		}
		if v.nulls == nil || k == len(x.args)-1 {
			parts = append(parts, part{rows: SelAll(&x.rems[k], rem, b.n), v: v})
			break
		}
		// Non-NULL rows are decided; the NULL ones go on.
		nn := x.rems[k][:0]
		var nul []int32
		each(rem, b.n, func(i int32) {
			if v.nulls[i] {
				nul = append(nul, i)
			} else {
				nn = append(nn, i)
			}
		})
		x.rems[k] = nn
		if len(nn) > 0 {
			parts = append(parts, part{rows: nn, v: v})
		}
		if len(nul) == 0 {
			break
		}
		rem = nul
	}
	x.parts = parts
	if x.k == pList {
		return gatherLists(x.t, parts, sel, b.n)
	}
	gather(&x.v, x.k, parts, sel, b.n, &x.which, &x.nl)
	return &x.v, nil
}

// ------------------------------------------------------------------- IN

// smallSet is the list length up to which IN scans linearly; a hash lookup
// costs about as much as 16 compares.
const smallSet = 16

// inNode is x IN (constants) (neg: NOT IN).
type inNode struct {
	x       node
	k       pkind
	neg     bool
	hasNull bool

	ints   []int64 // pI32, pI64, pF64 (as float keys); small lists
	intSet map[int64]struct{}
	decSet map[decimal128.Num]struct{}
	strSet map[string]struct{}
	strs   [][]byte // small string lists
	bools  [2]bool  // pBool: FALSE/TRUE present

	match []bool
	s1    []int32
	v     vec
	out   []int32
	fk    []int64
}

func (c *compiler) compileIn(e *Expr, neg bool) (node, error) {
	desc := e.String()
	if neg {
		desc = Not(*e).String()
	}
	args, err := c.compileArgs(e)
	if err != nil {
		return nil, err
	}
	allConst := true
	for _, a := range args[1:] {
		if _, ok := a.(*constNode); !ok {
			allConst = false
		}
	}
	if !allConst {
		// x IN (a, b) is x = a OR x = b, also in three-valued logic.
		ors := make([]Expr, len(e.Args)-1)
		for i := range ors {
			ors[i] = Eq(e.Args[0], e.Args[i+1])
		}
		r := Or(ors...)
		if neg {
			r = Not(r)
		}
		return c.compile(&r)
	}
	x := args[0]
	var items []node
	for _, a := range args[1:] {
		cn := a.(*constNode)
		if cn.null {
			continue
		}
		items = append(items, a)
	}
	hasNull := len(items) < len(args)-1
	if x.dt().ID() == arrow.NULL || len(items) == 0 && hasNull {
		return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}, nil
	}
	t := x.dt()
	for i, it := range items {
		if _, b, err := c.unifyLiterals(x, it, desc); err == nil {
			items[i] = b
		} else {
			return nil, err
		}
		ct, ok := CommonType(t, items[i].dt())
		if !ok || ct.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
			return nil, nferr.Queryf("operator does not exist: %s IN %s in %s", TypeName(x.dt()), TypeName(items[i].dt()), desc)
		}
		t = ct
	}
	if x, err = c.cast(x, t, desc); err != nil {
		return nil, err
	}
	n := &inNode{x: x, neg: neg, hasNull: hasNull}
	n.k, _ = kindOf(t)
	for _, it := range items {
		cv, err := c.cast(it, t, desc)
		if err != nil {
			return nil, err
		}
		cn, ok := cv.(*constNode)
		if !ok {
			return nil, nferr.Queryf("value %s cannot be converted to %s in %s", it.(*constNode).text(), TypeName(t), desc)
		}
		n.add(cn)
	}
	if len(n.ints) > smallSet {
		n.intSet = make(map[int64]struct{}, len(n.ints))
		for _, v := range n.ints {
			n.intSet[v] = struct{}{}
		}
	}
	if len(n.strs) > smallSet {
		n.strSet = make(map[string]struct{}, len(n.strs))
		for _, s := range n.strs {
			n.strSet[string(s)] = struct{}{}
		}
	}
	return fold(n, x), nil
}

// text prints a constant for error messages.
func (c *constNode) text() string {
	if c.null {
		return "NULL"
	}
	cv, err := newCast(c, arrow.BinaryTypes.String, "", nil)
	if err != nil {
		return "?"
	}
	s, err := cv.eval(&evalBatch{n: 1}, nil)
	if err != nil {
		return "?"
	}
	return string(s.strAt(0))
}

func (x *inNode) add(c *constNode) {
	switch x.k {
	case pI32, pI64:
		x.ints = append(x.ints, c.i64)
	case pF64:
		x.ints = append(x.ints, floatKey(c.f64))
	case pD128:
		if x.decSet == nil {
			x.decSet = map[decimal128.Num]struct{}{}
		}
		x.decSet[c.d] = struct{}{}
	case pStr:
		x.strs = append(x.strs, []byte(c.s))
	case pBool:
		x.bools[b2i(c.b)] = true
	}
}

func (x *inNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

// matches computes x.match at the non-NULL rows s.
func (x *inNode) matches(v *vec, s []int32, n int) {
	m := Grow(x.match, n)
	x.match = m
	switch x.k {
	case pI32:
		if x.intSet != nil {
			each(s, n, func(i int32) { _, m[i] = x.intSet[int64(v.i32[i])] })
			return
		}
		list := x.ints
		if s == nil {
			for i := 0; i < n; i++ {
				m[i] = containsInt(list, int64(v.i32[i]))
			}
		} else {
			for _, i := range s {
				m[i] = containsInt(list, int64(v.i32[i]))
			}
		}
	case pI64, pF64:
		vals := v.i64
		if x.k == pF64 {
			x.fk = floatKeys(x.fk, v.f64, s, n)
			vals = x.fk
		}
		if x.intSet != nil {
			each(s, n, func(i int32) { _, m[i] = x.intSet[vals[i]] })
			return
		}
		list := x.ints
		if s == nil {
			for i := 0; i < n; i++ {
				m[i] = containsInt(list, vals[i])
			}
		} else {
			for _, i := range s {
				m[i] = containsInt(list, vals[i])
			}
		}
	case pD128:
		each(s, n, func(i int32) { _, m[i] = x.decSet[v.d[i]] })
	case pStr:
		if x.strSet != nil {
			each(s, n, func(i int32) { _, m[i] = x.strSet[string(v.strAt(i))] })
			return
		}
		each(s, n, func(i int32) {
			sv := v.strAt(i)
			found := false
			for _, c := range x.strs {
				if bytes.Equal(sv, c) {
					found = true
					break
				}
			}
			m[i] = found
		})
	case pBool:
		each(s, n, func(i int32) { m[i] = x.bools[b2i(v.b[i])] })
	}
}

func containsInt(list []int64, v int64) bool {
	for _, c := range list {
		if c == v {
			return true
		}
	}
	return false
}

func (x *inNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	v, err := x.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	s := sel
	if v.nulls != nil {
		s = nonNullSel(&x.s1, sel, b.n, v.nulls, nil)
	}
	size := b.n
	if s != nil {
		size = len(s)
	}
	out := Grow(x.out, size)
	x.out = out
	if x.neg && x.hasNull {
		// x NOT IN (..., NULL) is never TRUE.
		return out[:0], nil
	}
	x.matches(v, s, b.n)
	k := 0
	each(s, b.n, func(i int32) {
		out[k] = i
		k += b2i(x.match[i] != x.neg)
	})
	return out[:k], nil
}

func (x *inNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	v, err := x.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	s := sel
	if v.nulls != nil {
		s = nonNullSel(&x.s1, sel, b.n, v.nulls, nil)
	}
	x.matches(v, s, b.n)
	out := &x.v
	out.b = Grow(out.b, b.n)
	var nulls []bool
	if v.nulls != nil || x.hasNull {
		nulls = Grow(out.nulls, b.n)
	}
	each(sel, b.n, func(i int32) {
		if v.isNull(i) {
			nulls[i] = true
			return
		}
		m := x.match[i]
		out.b[i] = m != x.neg
		if nulls != nil {
			nulls[i] = !m && x.hasNull
		}
	})
	out.nulls = nulls
	return out, nil
}
