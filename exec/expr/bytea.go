package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Functions of binary strings (BYTEA), as PostgreSQL's. length,
// octet_length, md5, substring and || take bytea too (strings.go,
// strings_more.go); these are bytea's own.
const (
	FnEncode  = "encode"   // encode(b, format) -> text, format a constant 'hex', 'base64' or 'escape' [2]
	FnDecode  = "decode"   // decode(s, format) -> bytea, format as encode's [2]
	FnGetByte = "get_byte" // get_byte(b, n): byte n (0-based) as an integer [2]
)

// byteaFormats are the formats of encode and decode.
var byteaFormats = map[string]bool{"hex": true, "base64": true, "escape": true}

func (c *compiler) compileBytea(e *Expr, args []node, desc string) (node, error) {
	if err := arity(e, 2, 2); err != nil {
		return nil, err
	}
	bin, str := arrow.BinaryTypes.Binary, arrow.BinaryTypes.String
	need := func(i int, t arrow.DataType) error {
		switch args[i].dt().ID() {
		case t.ID():
			return nil
		case arrow.NULL:
			args[i] = newNullConst(t)
			return nil
		}
		return nferr.Queryf("function %s(%s, %s) does not exist in %s", e.Fn, TypeName(args[0].dt()), TypeName(args[1].dt()), desc)
	}
	f := &funcNode{desc: desc, args: args}
	switch e.Fn {
	case FnGetByte:
		if err := need(0, bin); err != nil {
			return nil, err
		}
		if !IsInteger(args[1].dt()) && args[1].dt().ID() != arrow.NULL {
			return nil, nferr.Queryf("function %s(%s, %s) does not exist in %s", e.Fn, TypeName(args[0].dt()), TypeName(args[1].dt()), desc)
		}
		var err error
		if args[1], err = c.cast(args[1], arrow.PrimitiveTypes.Int64, desc); err != nil {
			return nil, err
		}
		f.t, f.run = arrow.PrimitiveTypes.Int32, getByteKernel
		return f, nil
	case FnEncode:
		if err := need(0, bin); err != nil {
			return nil, err
		}
		f.t, f.run = str, encodeKernel
	default: // FnDecode
		if err := need(0, str); err != nil {
			return nil, err
		}
		f.t, f.run = bin, decodeKernel
	}
	if err := need(1, str); err != nil {
		return nil, err
	}
	k, ok := args[1].(*constNode)
	if !ok {
		return nil, nferr.Queryf("the format of %s must be a constant in %s", e.Fn, desc)
	}
	if k.null {
		return newNullConst(f.t), nil
	}
	if !byteaFormats[k.s] {
		return nil, nferr.Queryf("unrecognized encoding: %q in %s", k.s, desc)
	}
	f.field = k.s
	return f, nil
}

func encodeKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	a := in[0]
	switch f.field {
	case "hex":
		each(sel, n, func(i int32) {
			w.at(i)
			out.str = bytea.AppendHexDigits(out.str, a.strAt(i))
		})
	case "base64":
		each(sel, n, func(i int32) {
			w.at(i)
			out.str = bytea.AppendBase64(out.str, a.strAt(i))
		})
	default:
		each(sel, n, func(i int32) {
			w.at(i)
			out.str = bytea.AppendEscape(out.str, a.strAt(i))
		})
	}
	w.finish(n)
	return nil
}

func decodeKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	a := in[0]
	parse := bytea.ParseEscape
	switch f.field {
	case "hex":
		parse = bytea.ParseHex
	case "base64":
		parse = bytea.ParseBase64
	}
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		w.at(i)
		var msg string
		if out.str, msg = parse(out.str, a.strAt(i)); msg != "" {
			err = nferr.Dataf("%s in %s", msg, f.desc)
		}
	})
	w.finish(n)
	return err
}

func getByteKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	a, k := in[0], in[1]
	var err error
	each(sel, n, func(i int32) {
		b := a.strAt(i)
		x := k.i64[i]
		if x < 0 || x >= int64(len(b)) {
			if err == nil {
				err = nferr.Dataf("index %d out of valid range, 0..%d in %s", x, len(b)-1, f.desc)
			}
			return
		}
		out.i32[i] = int32(b[x])
	})
	return err
}
