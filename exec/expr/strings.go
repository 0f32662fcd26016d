package expr

import (
	"bytes"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// String functions count characters (UTF-8 sequences; an invalid byte is
// one character), as PostgreSQL does for UTF-8 databases. All are strict:
// a NULL argument gives NULL.

// funcNode is a strict function of several arguments: the kernel runs only
// on rows where no argument is NULL.
type funcNode struct {
	args []node
	t    arrow.DataType
	desc string
	run  func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error

	// parameters some kernels use
	runes  []rune         // trim characters
	field  string         // extract field
	loc    *time.Location // the session time zone (TIMESTAMPTZ kernels; nil: UTC)
	digits int32          // round digits
	ts, fs int32          // round: target/source scale

	v     vec
	ins   []*vec
	s1    []int32
	nulls []bool
}

func (f *funcNode) dt() arrow.DataType { return f.t }

func (f *funcNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	f.ins = f.ins[:0]
	anyNull := false
	for _, a := range f.args {
		v, err := a.eval(b, sel)
		if err != nil {
			return nil, err
		}
		f.ins = append(f.ins, v)
		anyNull = anyNull || v.nulls != nil
	}
	s := sel
	f.v.nulls = nil
	if anyNull {
		nulls := Grow(f.nulls, b.n)
		f.nulls = nulls
		each(sel, b.n, func(i int32) { nulls[i] = false })
		for _, v := range f.ins {
			if v.nulls != nil {
				each(sel, b.n, func(i int32) { nulls[i] = nulls[i] || v.nulls[i] })
			}
		}
		f.v.nulls = nulls
		s = nonNullSel(&f.s1, sel, b.n, nulls, nil)
	}
	if err := f.run(f, &f.v, f.ins, s, b.n); err != nil {
		return nil, err
	}
	return &f.v, nil
}

func (c *compiler) compileString(e *Expr, args []node, desc string) (node, error) {
	str := arrow.BinaryTypes.String
	i32 := arrow.PrimitiveTypes.Int32
	i64 := arrow.PrimitiveTypes.Int64
	needStr := func(n node) (node, error) {
		switch n.dt().ID() {
		case arrow.STRING:
			return n, nil
		case arrow.NULL:
			return newNullConst(str), nil
		}
		return nil, nferr.Queryf("function %s needs VARCHAR, not %s, in %s", e.Fn, TypeName(n.dt()), desc)
	}
	needInt := func(n node) (node, error) {
		if n.dt().ID() == arrow.NULL || IsInteger(n.dt()) {
			return c.cast(n, i64, desc)
		}
		return nil, nferr.Queryf("function %s needs an integer, not %s, in %s", e.Fn, TypeName(n.dt()), desc)
	}
	f := &funcNode{desc: desc}
	var err error
	switch e.Fn {
	case FnUpper, FnLower, FnLength:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		if e.Fn == FnLength && args[0].dt().ID() == arrow.BINARY {
			// length(bytea): bytes.
			f.t, f.run, f.args = i32, octetLengthKernel, args
			return f, nil
		}
		if args[0], err = needStr(args[0]); err != nil {
			return nil, err
		}
		f.t = str
		switch e.Fn {
		case FnUpper:
			f.run = upperKernel
		case FnLower:
			f.run = lowerKernel
		default:
			f.t = i32
			f.run = lengthKernel
		}
	case FnTrim, FnLTrim, FnRTrim:
		if err := arity(e, 1, 2); err != nil {
			return nil, err
		}
		if args[0], err = needStr(args[0]); err != nil {
			return nil, err
		}
		f.runes = []rune{' '}
		if len(args) == 2 {
			cn, ok := args[1].(*constNode)
			if !ok || cn.k != pStr && !cn.null {
				return nil, nferr.Queryf("the characters to trim must be a VARCHAR constant in %s", desc)
			}
			if cn.null {
				return newNullConst(str), nil
			}
			f.runes = []rune(cn.s)
			args = args[:1]
		}
		f.t = str
		f.run = map[string]func(*funcNode, *vec, []*vec, []int32, int) error{FnTrim: trimBoth, FnLTrim: trimLeft, FnRTrim: trimRight}[e.Fn]
	case FnConcat:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		// bytea || bytea is bytea; anything else concatenates text.
		t := str
		binOrNull := func(k arrow.Type) bool { return k == arrow.BINARY || k == arrow.NULL }
		if k0, k1 := args[0].dt().ID(), args[1].dt().ID(); binOrNull(k0) && binOrNull(k1) && (k0 == arrow.BINARY || k1 == arrow.BINARY) {
			t = arrow.BinaryTypes.Binary
		}
		for i := range args {
			if args[i].dt().ID() == arrow.NULL {
				args[i] = newNullConst(t)
			}
			if args[i], err = c.cast(args[i], t, desc); err != nil {
				return nil, err
			}
		}
		f.t = t
		f.run = concatKernel
	case FnSubstring:
		if err := arity(e, 2, 3); err != nil {
			return nil, err
		}
		f.t = str
		f.run = substringKernel
		if args[0].dt().ID() == arrow.BINARY {
			// substring(bytea): bytes.
			f.t, f.run = args[0].dt(), binarySubstringKernel
		} else if args[0], err = needStr(args[0]); err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			if args[i], err = needInt(args[i]); err != nil {
				return nil, err
			}
		}
	case FnStrPos:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		for i := range args {
			if args[i], err = needStr(args[i]); err != nil {
				return nil, err
			}
		}
		f.t = i32
		f.run = strposKernel
	}
	f.args = args
	return f, nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func caseKernel(out *vec, in []*vec, sel []int32, n int, upper bool) {
	w := newStrWriter(out, n)
	a := in[0]
	each(sel, n, func(i int32) {
		w.at(i)
		s := a.strAt(i)
		if isASCII(s) {
			start := len(out.str)
			out.str = append(out.str, s...)
			t := out.str[start:]
			if upper {
				for j, c := range t {
					if c >= 'a' && c <= 'z' {
						t[j] = c - ('a' - 'A')
					}
				}
			} else {
				for j, c := range t {
					if c >= 'A' && c <= 'Z' {
						t[j] = c + ('a' - 'A')
					}
				}
			}
			return
		}
		for len(s) > 0 {
			r, sz := utf8.DecodeRune(s)
			if r == utf8.RuneError && sz == 1 {
				out.str = append(out.str, s[0]) // keep invalid bytes as they are
			} else if upper {
				out.str = utf8.AppendRune(out.str, unicode.ToUpper(r))
			} else {
				out.str = utf8.AppendRune(out.str, unicode.ToLower(r))
			}
			s = s[sz:]
		}
	})
	w.finish(n)
}

func upperKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	caseKernel(out, in, sel, n, true)
	return nil
}

func lowerKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	caseKernel(out, in, sel, n, false)
	return nil
}

func lengthKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	a := in[0]
	if sel == nil {
		for i := 0; i < n; i++ {
			out.i32[i] = int32(utf8.RuneCount(a.str[a.off[i]:a.off[i+1]]))
		}
	} else {
		for _, i := range sel {
			out.i32[i] = int32(utf8.RuneCount(a.str[a.off[i]:a.off[i+1]]))
		}
	}
	return nil
}

func concatKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	a, b := in[0], in[1]
	each(sel, n, func(i int32) {
		w.at(i)
		out.str = append(out.str, a.strAt(i)...)
		out.str = append(out.str, b.strAt(i)...)
	})
	w.finish(n)
	return nil
}

// skipChars returns the byte offset after the first k characters of s
// (len(s) when s is shorter).
func skipChars(s []byte, k int64) int {
	if k <= 0 {
		return 0
	}
	if isASCII(s) {
		return int(min(k, int64(len(s))))
	}
	p := 0
	for ; k > 0 && p < len(s); k-- {
		_, w := utf8.DecodeRune(s[p:])
		p += w
	}
	return p
}

// substringKernel is SQL substring(s FROM start FOR len): characters at
// positions [start, start+len) intersected with [1, length(s)];
// binarySubstringKernel the same over the bytes of a bytea.
func substringKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	return substringBy(skipChars, f, out, in, sel, n)
}

func binarySubstringKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	return substringBy(skipBytes, f, out, in, sel, n)
}

// skipBytes is skipChars for bytes: the offset of position k+1.
func skipBytes(s []byte, k int64) int { return int(min(max(k, 0), int64(len(s)))) }

// substringBy is substring with skip counting positions (characters or
// bytes).
func substringBy(skip func([]byte, int64) int, f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	a, st := in[0], in[1]
	var ln *vec
	if len(in) > 2 {
		ln = in[2]
	}
	var err error
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		if err != nil {
			return
		}
		s := a.strAt(i)
		start := st.i64[i]
		from := max(start, 1)
		if ln == nil {
			out.str = append(out.str, s[skip(s, from-1):]...)
			return
		}
		l := ln.i64[i]
		if l < 0 {
			err = nferr.Queryf("negative substring length not allowed in %s", f.desc)
			return
		}
		// end = start + l, computed without overflow.
		end := start + l
		if end < start {
			end = 1<<63 - 1
		}
		if end <= from {
			return
		}
		b0 := skip(s, from-1)
		b1 := b0 + skip(s[b0:], end-from)
		out.str = append(out.str, s[b0:b1]...)
	})
	w.finish(n)
	return err
}

func strposKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	a, b := in[0], in[1]
	each(sel, n, func(i int32) {
		s := a.strAt(i)
		p := bytes.Index(s, b.strAt(i))
		if p < 0 {
			out.i32[i] = 0
			return
		}
		out.i32[i] = int32(utf8.RuneCount(s[:p])) + 1
	})
	return nil
}

func inRunes(r rune, set []rune) bool {
	for _, c := range set {
		if c == r {
			return true
		}
	}
	return false
}

func trimKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int, left, right bool) error {
	a := in[0]
	w := newStrWriter(out, n)
	set := f.runes
	each(sel, n, func(i int32) {
		w.at(i)
		s := a.strAt(i)
		if left {
			for len(s) > 0 {
				r, sz := utf8.DecodeRune(s)
				if !inRunes(r, set) {
					break
				}
				s = s[sz:]
			}
		}
		if right {
			for len(s) > 0 {
				r, sz := utf8.DecodeLastRune(s)
				if !inRunes(r, set) {
					break
				}
				s = s[:len(s)-sz]
			}
		}
		out.str = append(out.str, s...)
	})
	w.finish(n)
	return nil
}

func trimBoth(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	return trimKernel(f, out, in, sel, n, true, true)
}

func trimLeft(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	return trimKernel(f, out, in, sel, n, true, false)
}

func trimRight(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	return trimKernel(f, out, in, sel, n, false, true)
}
