package expr

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/internal/sqlkw"
)

// More string functions, strict like the others (a NULL argument gives
// NULL): replace, repeat, reverse, lpad, rpad, initcap, md5 and
// split_part, counting characters as UTF-8 sequences.

// The functions of this file.
const (
	FnReplace   = "replace"    // replace(s, from, to) [3]
	FnRepeat    = "repeat"     // repeat(s, n) [2]
	FnReverse   = "reverse"    // reverse(s) [1]
	FnLPad      = "lpad"       // lpad(s, n [, fill]) [2-3]
	FnRPad      = "rpad"       // rpad(s, n [, fill]) [2-3]
	FnInitCap   = "initcap"    // initcap(s) [1]
	FnMD5       = "md5"        // md5(s): hex digest [1]
	FnSplitPart = "split_part" // split_part(s, sep, n) [3]

	FnTranslate   = "translate"     // translate(s, from, to): each character of from replaced by to's at its place (dropped past to's end) [3]
	FnChr         = "chr"           // chr(n): the character of code point n [1]
	FnASCII       = "ascii"         // ascii(s): the code point of s's first character (0 for '') [1] -> integer
	FnToHex       = "to_hex"        // to_hex(n): n in hexadecimal (two's complement for negatives) [1]
	FnOctetLength = "octet_length"  // octet_length(s): bytes [1] -> integer
	FnQuoteIdent  = "quote_ident"   // quote_ident(s): s as an SQL identifier, quoted when it must be [1]
	FnQuoteLit    = "quote_literal" // quote_literal(s): s as an SQL string literal [1]
	FnToJSON      = "to_json"       // to_json(s): s as a JSON string, quoted and escaped as PostgreSQL's to_json(text) [1]
	FnRecordElem  = "record_elem"   // record_elem(s): s as a field of a record's text, quoted as PostgreSQL's record_out quotes it [1]
)

// maxStringResult bounds what repeat and the pads build for one row (1
// GiB, PostgreSQL's limit for a value).
const maxStringResult = 1 << 30

func (c *compiler) compileMoreString(e *Expr, args []node, desc string) (node, error) {
	str := arrow.BinaryTypes.String
	i64 := arrow.PrimitiveTypes.Int64
	// kinds: 's' a string argument, 'i' an integer one.
	sig := map[string]string{FnReplace: "sss", FnRepeat: "si", FnReverse: "s", FnLPad: "sis", FnRPad: "sis", FnInitCap: "s", FnMD5: "s", FnSplitPart: "ssi",
		FnTranslate: "sss", FnChr: "i", FnASCII: "s", FnToHex: "i", FnOctetLength: "s", FnQuoteIdent: "s", FnQuoteLit: "s", FnToJSON: "s", FnRecordElem: "s"}[e.Fn]
	lo := len(sig)
	if e.Fn == FnLPad || e.Fn == FnRPad {
		lo = 2
	}
	if err := arity(e, lo, len(sig)); err != nil {
		return nil, err
	}
	width32 := e.Fn == FnToHex && len(args) == 1 && args[0].dt().ID() == arrow.INT32
	for i, a := range args {
		var err error
		switch {
		case a.dt().ID() == arrow.NULL:
			args[i] = newNullConst(map[byte]arrow.DataType{'s': str, 'i': i64}[sig[i]])
		case sig[i] == 's' && a.dt().ID() == arrow.STRING:
		case sig[i] == 's' && a.dt().ID() == arrow.BINARY && (e.Fn == FnMD5 || e.Fn == FnOctetLength):
			// md5(bytea) and octet_length(bytea): the same kernels.
		case sig[i] == 'i' && IsInteger(a.dt()):
			args[i], err = c.cast(a, i64, desc)
		default:
			want := map[byte]string{'s': "VARCHAR", 'i': "an integer"}[sig[i]]
			return nil, nferr.Queryf("function %s needs %s as argument %d, not %s, in %s", e.Fn, want, i+1, TypeName(a.dt()), desc)
		}
		if err != nil {
			return nil, err
		}
	}
	f := &funcNode{desc: desc, t: str, args: args}
	if e.Fn == FnASCII || e.Fn == FnOctetLength {
		f.t = arrow.PrimitiveTypes.Int32
	}
	if width32 {
		f.digits = 32 // to_hex of an integer: its 32 bits, as PostgreSQL
	}
	f.run = map[string]func(*funcNode, *vec, []*vec, []int32, int) error{
		FnReplace: replaceKernel, FnRepeat: repeatKernel, FnReverse: reverseKernel,
		FnLPad: padKernel(true), FnRPad: padKernel(false), FnInitCap: initcapKernel,
		FnMD5: md5Kernel, FnSplitPart: splitPartKernel,
		FnTranslate: translateKernel, FnChr: chrKernel, FnASCII: asciiKernel, FnToHex: toHexKernel, FnOctetLength: octetLengthKernel,
		FnQuoteIdent: quoteIdentKernel, FnQuoteLit: quoteLiteralKernel, FnToJSON: toJSONKernel, FnRecordElem: recordElemKernel,
	}[e.Fn]
	return f, nil
}

func quoteIdentKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		out.str = append(out.str, sqlkw.QuoteIdent(string(in[0].strAt(i)))...)
	})
	w.finish(n)
	return nil
}

// quoteLiteralKernel quotes as PostgreSQL's quote_literal: quotes doubled,
// and a string with a backslash written E'...' with it doubled.
func quoteLiteralKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		s := in[0].strAt(i)
		if bytes.IndexByte(s, '\\') >= 0 {
			out.str = append(out.str, 'E')
		}
		out.str = append(out.str, '\'')
		for _, c := range s {
			if c == '\'' || c == '\\' {
				out.str = append(out.str, c)
			}
			out.str = append(out.str, c)
		}
		out.str = append(out.str, '\'')
	})
	w.finish(n)
	return nil
}

// toJSONKernel writes a string as a JSON string as PostgreSQL does: in
// double quotes, with " and \ escaped, \b \f \n \r \t for those controls
// and \u00XX for the other characters below U+0020.
func toJSONKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		out.str = AppendJSONString(out.str, in[0].strAt(i))
	})
	w.finish(n)
	return nil
}

func replaceKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		s, from, to := in[0].strAt(i), in[1].strAt(i), in[2].strAt(i)
		if len(from) == 0 {
			out.str = append(out.str, s...)
			return
		}
		for {
			k := bytes.Index(s, from)
			if k < 0 {
				out.str = append(out.str, s...)
				return
			}
			out.str = append(append(out.str, s[:k]...), to...)
			s = s[k+len(from):]
		}
	})
	w.finish(n)
	return nil
}

func repeatKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	var err error
	each(sel, n, func(i int32) {
		w.at(i)
		s, k := in[0].strAt(i), in[1].i64[i]
		if k <= 0 || err != nil {
			return
		}
		if int64(len(s))*k > maxStringResult {
			err = errAt("requested length too large", f.desc)
			return
		}
		for ; k > 0; k-- {
			out.str = append(out.str, s...)
		}
	})
	w.finish(n)
	return err
}

func reverseKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		s := in[0].strAt(i)
		for len(s) > 0 {
			_, size := utf8.DecodeLastRune(s)
			out.str = append(out.str, s[len(s)-size:]...)
			s = s[:len(s)-size]
		}
	})
	w.finish(n)
	return nil
}

// padKernel is lpad (left) or rpad: s cut or filled to n characters with
// fill (default a space; an empty fill leaves s as it is when shorter).
func padKernel(left bool) func(*funcNode, *vec, []*vec, []int32, int) error {
	return func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		w := newStrWriter(out, n)
		var err error
		each(sel, n, func(i int32) {
			w.at(i)
			if err != nil {
				return
			}
			s, want := in[0].strAt(i), in[1].i64[i]
			fill := []byte(" ")
			if len(in) > 2 {
				fill = in[2].strAt(i)
			}
			if want <= 0 {
				return
			}
			if want > maxStringResult {
				err = errAt("requested length too large", f.desc)
				return
			}
			have := int64(utf8.RuneCount(s))
			if have >= want || len(fill) == 0 {
				out.str = append(out.str, s[:skipChars(s, want)]...)
				return
			}
			var pad []byte
			for need, fr := want-have, fill; need > 0; need-- {
				if len(fr) == 0 {
					fr = fill
				}
				_, size := utf8.DecodeRune(fr)
				pad = append(pad, fr[:size]...)
				fr = fr[size:]
			}
			if left {
				out.str = append(append(out.str, pad...), s...)
			} else {
				out.str = append(append(out.str, s...), pad...)
			}
		})
		w.finish(n)
		return err
	}
}

// initcapKernel upper-cases the first letter of each word (a run of
// letters and digits) and lower-cases the rest.
func initcapKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		s := in[0].strAt(i)
		inWord := false
		for len(s) > 0 {
			r, size := utf8.DecodeRune(s)
			s = s[size:]
			word := unicode.IsLetter(r) || unicode.IsDigit(r)
			switch {
			case !word:
			case inWord:
				r = unicode.ToLower(r)
			default:
				r = unicode.ToUpper(r)
			}
			inWord = word
			out.str = utf8.AppendRune(out.str, r)
		}
	})
	w.finish(n)
	return nil
}

func md5Kernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	var dst [32]byte
	each(sel, n, func(i int32) {
		w.at(i)
		sum := md5.Sum(in[0].strAt(i))
		hex.Encode(dst[:], sum[:])
		out.str = append(out.str, dst[:]...)
	})
	w.finish(n)
	return nil
}

// splitPartKernel is field k (1-based; negative: from the end) of s split
// at sep; empty when there is no such field.
func splitPartKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	var err error
	each(sel, n, func(i int32) {
		w.at(i)
		s, sep, k := in[0].strAt(i), in[1].strAt(i), in[2].i64[i]
		if k == 0 {
			if err == nil {
				err = errAt("field position must not be zero", f.desc)
			}
			return
		}
		var parts [][]byte
		if len(sep) == 0 {
			parts = [][]byte{s}
		} else {
			parts = bytes.Split(s, sep)
		}
		if k < 0 {
			k += int64(len(parts)) + 1
		}
		if k >= 1 && k <= int64(len(parts)) {
			out.str = append(out.str, parts[k-1]...)
		}
	})
	w.finish(n)
	return err
}

// translateKernel replaces each character of s found in from by the
// character of to at the same place, or drops it when to is shorter.
func translateKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		s, from, to := in[0].strAt(i), []rune(string(in[1].strAt(i))), []rune(string(in[2].strAt(i)))
		for len(s) > 0 {
			r, size := utf8.DecodeRune(s)
			s = s[size:]
			k := slices.Index(from, r)
			switch {
			case k < 0:
				out.str = utf8.AppendRune(out.str, r)
			case k < len(to):
				out.str = utf8.AppendRune(out.str, to[k])
			}
		}
	})
	w.finish(n)
	return nil
}

func chrKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	var err error
	each(sel, n, func(i int32) {
		w.at(i)
		c := in[0].i64[i]
		if c <= 0 || c > unicode.MaxRune || !utf8.ValidRune(rune(c)) {
			if err == nil {
				err = nferr.Dataf("requested character %d is not a valid code point in %s", c, f.desc)
			}
			return
		}
		out.str = utf8.AppendRune(out.str, rune(c))
	})
	w.finish(n)
	return err
}

func asciiKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	each(sel, n, func(i int32) {
		r := rune(0)
		if s := in[0].strAt(i); len(s) > 0 {
			r, _ = utf8.DecodeRune(s)
		}
		out.i32[i] = int32(r)
	})
	return nil
}

func toHexKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		v := uint64(in[0].i64[i])
		if f.digits == 32 {
			v = uint64(uint32(v))
		}
		out.str = strconv.AppendUint(out.str, v, 16)
	})
	w.finish(n)
	return nil
}

func octetLengthKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	each(sel, n, func(i int32) { out.i32[i] = int32(len(in[0].strAt(i))) })
	return nil
}

// recordElemKernel quotes a field's text as PostgreSQL's record_out does:
// in double quotes when empty or holding a quote, backslash, parenthesis,
// comma or white space, with quotes and backslashes doubled.
func recordElemKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	each(sel, n, func(i int32) {
		w.at(i)
		v := in[0].strAt(i)
		quote := len(v) == 0
		for _, c := range v {
			switch c {
			case '"', '\\', '(', ')', ',', ' ', '\t', '\n', '\r', '\v', '\f':
				quote = true
			}
		}
		if !quote {
			out.str = append(out.str, v...)
			return
		}
		out.str = append(out.str, '"')
		for _, c := range v {
			if c == '"' || c == '\\' {
				out.str = append(out.str, c)
			}
			out.str = append(out.str, c)
		}
		out.str = append(out.str, '"')
	})
	w.finish(n)
	return nil
}
