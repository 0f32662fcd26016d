package expr

import (
	"bytes"
	"cmp"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/internal/nferr"
)

// greatest(a, b, ...) and least(a, b, ...): the largest (smallest) of the
// non-NULL arguments, NULL only when all are (PostgreSQL's rule, unlike
// the SQL standard's). The arguments take their common type; strings
// compare by bytes, floats put NaN above every number (as ORDER BY and
// PostgreSQL do). The comparison is chosen once per node by the type.

// The functions of this file.
const (
	FnGreatest = "greatest" // greatest(a, ...) [1+]
	FnLeast    = "least"    // least(a, ...) [1+]
)

type extremeNode struct {
	t        arrow.DataType
	k        pkind
	args     []node
	greatest bool
	pick     func(x *extremeNode, sel []int32, n int)

	v     vec
	ins   []*vec
	nulls []bool
}

func (c *compiler) compileExtreme(e *Expr, args []node, desc string) (node, error) {
	if err := arity(e, 1, -1); err != nil {
		return nil, err
	}
	t, err := resultType(args, desc)
	if err != nil {
		return nil, err
	}
	x := &extremeNode{t: t, greatest: e.Fn == FnGreatest}
	x.k, _ = kindOf(t)
	if x.args, err = c.castAll(args, t, desc); err != nil {
		return nil, err
	}
	switch x.k {
	case pNull:
		return newNullConst(t), nil
	case pBool:
		x.pick = func(x *extremeNode, sel []int32, n int) {
			x.v.b = pickBest(x, sel, n, x.v.b, func(v *vec) []bool { return v.b }, func(a, b bool) int { return cmp.Compare(b2i(a), b2i(b)) })
		}
	case pI32:
		x.pick = func(x *extremeNode, sel []int32, n int) {
			x.v.i32 = pickBest(x, sel, n, x.v.i32, func(v *vec) []int32 { return v.i32 }, cmp.Compare[int32])
		}
	case pI64:
		x.pick = func(x *extremeNode, sel []int32, n int) {
			x.v.i64 = pickBest(x, sel, n, x.v.i64, func(v *vec) []int64 { return v.i64 }, cmp.Compare[int64])
		}
	case pF64:
		x.pick = func(x *extremeNode, sel []int32, n int) {
			x.v.f64 = pickBest(x, sel, n, x.v.f64, func(v *vec) []float64 { return v.f64 }, FloatOrder[float64])
		}
	case pD128:
		x.pick = func(x *extremeNode, sel []int32, n int) {
			x.v.d = pickBest(x, sel, n, x.v.d, func(v *vec) []decimal128.Num { return v.d }, decimal128.Num.Cmp)
		}
	case pStr:
		x.pick = pickBestString
	default:
		return nil, nferr.Queryf("function %s(%s) is not supported in %s", e.Fn, TypeName(t), desc)
	}
	return x, nil
}

// FloatOrder compares floats with NaN above everything and -0 == +0.
func FloatOrder[T float32 | float64](a, b T) int {
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (x *extremeNode) dt() arrow.DataType { return x.t }

func (x *extremeNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	x.ins = x.ins[:0]
	for _, a := range x.args {
		v, err := a.eval(b, sel)
		if err != nil {
			return nil, err
		}
		x.ins = append(x.ins, v)
	}
	x.nulls = Grow(x.nulls, b.n)
	x.pick(x, sel, b.n)
	x.v.nulls = nil
	each(sel, b.n, func(i int32) {
		if x.nulls[i] {
			x.v.nulls = x.nulls
		}
	})
	return &x.v, nil
}

// better reports whether c (a comparison of a candidate with the best so
// far) makes the candidate the new best.
func (x *extremeNode) better(c int) bool {
	if x.greatest {
		return c > 0
	}
	return c < 0
}

// pickBest writes into out (grown to n) the best non-NULL argument of each
// row, and marks the rows where every argument is NULL in x.nulls.
func pickBest[T any](x *extremeNode, sel []int32, n int, out []T, get func(*vec) []T, compare func(a, b T) int) []T {
	out = Grow(out, n)
	vals := make([][]T, len(x.ins))
	for k, v := range x.ins {
		vals[k] = get(v)
	}
	each(sel, n, func(i int32) {
		found := false
		for k, v := range x.ins {
			if v.isNull(i) {
				continue
			}
			if !found || x.better(compare(vals[k][i], out[i])) {
				out[i], found = vals[k][i], true
			}
		}
		x.nulls[i] = !found
	})
	return out
}

func pickBestString(x *extremeNode, sel []int32, n int) {
	w := newStrWriter(&x.v, n)
	each(sel, n, func(i int32) {
		w.at(i)
		var best []byte
		found := false
		for _, v := range x.ins {
			if v.isNull(i) {
				continue
			}
			if s := v.strAt(i); !found || x.better(bytes.Compare(s, best)) {
				best, found = s, true
			}
		}
		x.nulls[i] = !found
		x.v.str = append(x.v.str, best...)
	})
	w.finish(n)
}
