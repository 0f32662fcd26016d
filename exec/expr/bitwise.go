package expr

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Bitwise operators over integers (PostgreSQL's & and |; pgjdbc's
// getIndexInfo reads indoption[i] & 1): the result has the type of the
// arguments, which the binder makes the same; NULL for a NULL argument.
const (
	FnBitAnd = "bit_and" // a & b [2]
	FnBitOr  = "bit_or"  // a | b [2]
)

func (c *compiler) compileBitwise(e *Expr, args []node, desc string) (node, error) {
	if err := arity(e, 2, 2); err != nil {
		return nil, err
	}
	t := args[0].dt()
	if !IsInteger(t) || !arrow.TypeEqual(t, args[1].dt()) {
		return nil, nferr.Queryf("%s needs two integers of one type, not %s and %s, in %s", e.Fn, TypeName(t), TypeName(args[1].dt()), desc)
	}
	wide := t.ID() == arrow.INT64
	and := e.Fn == FnBitAnd
	r := &rowNode{args: args, desc: desc, strict: true, loc: c.loc, t: t}
	r.fn = func(r *rowNode, i int32) error {
		if wide {
			a, b := r.ins[0].i64[i], r.ins[1].i64[i]
			if and {
				r.out.addI64(a & b)
			} else {
				r.out.addI64(a | b)
			}
			return nil
		}
		a, b := r.ins[0].i32[i], r.ins[1].i32[i]
		if and {
			r.out.addI32(a & b)
		} else {
			r.out.addI32(a | b)
		}
		return nil
	}
	return r, nil
}
