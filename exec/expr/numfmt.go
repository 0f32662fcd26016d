package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// to_char(number, pattern), PostgreSQL's number patterns: 9 (a digit,
// blank when the number has none there), 0 (a digit, 0 when the number
// has none), . or D (the decimal point), , or G (the group separator,
// blank where the digits have not started), FM (fill mode: no padding,
// no sign place, no trailing zeros of 9s), text in double quotes and
// other characters that are no pattern letters as themselves. A number
// too wide for the pattern prints as #s. The binder rounds the number to
// the pattern's fraction digits and passes its text (NumberPatternScale).

// FnToCharNumber names the call: to_char_number(text of the number,
// pattern) [2].
const FnToCharNumber = "to_char_number"

type numElem struct {
	kind byte // '9', '0', '.', ',', or 'l' (literal)
	lit  string
	frac bool // a digit after the decimal point
}

type numPattern struct {
	elems []numElem
	fm    bool
	ints  int // digit positions before the point
	fracs int // after it
}

// compileNumberPattern reads a number pattern; letters it does not know
// (S, MI, PL, PR, L, EEEE, RN, V, TH...) are refused rather than printed.
func compileNumberPattern(p string) (*numPattern, error) {
	np := &numPattern{}
	point := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case (c == 'F' || c == 'f') && i+1 < len(p) && (p[i+1] == 'M' || p[i+1] == 'm'):
			np.fm = true
			i++
		case c == '9' || c == '0':
			np.elems = append(np.elems, numElem{kind: c, frac: point})
			if point {
				np.fracs++
			} else {
				np.ints++
			}
		case c == '.' || c == 'D' || c == 'd':
			if point {
				return nil, nferr.Queryf("to_char: multiple decimal points in pattern %q", p)
			}
			point = true
			np.elems = append(np.elems, numElem{kind: '.'})
		case c == ',' || c == 'G' || c == 'g':
			np.elems = append(np.elems, numElem{kind: ','})
		case c == '"':
			j := strings.IndexByte(p[i+1:], '"')
			if j < 0 {
				return nil, nferr.Queryf("to_char: unterminated quoted text in pattern %q", p)
			}
			np.elems = append(np.elems, numElem{kind: 'l', lit: p[i+1 : i+1+j]})
			i += j + 1
		case (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'):
			return nil, nferr.Queryf("to_char: number pattern %q: %q is not supported (nicflow knows 9, 0, ., D, ',', G, FM and quoted text)", p, string(c))
		default:
			np.elems = append(np.elems, numElem{kind: 'l', lit: string(c)})
		}
	}
	if np.ints+np.fracs == 0 {
		return nil, nferr.Queryf("to_char: number pattern %q has no digit (9 or 0)", p)
	}
	return np, nil
}

// NumberPatternScale is the fraction digits of number pattern p, which
// the binder rounds the number to before formatting it.
func NumberPatternScale(p string) (int32, error) {
	np, err := compileNumberPattern(p)
	if err != nil {
		return 0, err
	}
	return int32(np.fracs), nil
}

// format writes number text s (as a decimal prints: -1234.50) by the
// pattern.
func (np *numPattern) format(dst []byte, s string) []byte {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(s, ".")
	ip = strings.TrimLeft(ip, "0")
	if strings.Trim(ip+fp, "0") == "" {
		neg = false // -0.00 prints as 0
	}
	over := len(ip) > np.ints
	firstZero := np.ints
	for k, n := 0, 0; k < len(np.elems); k++ {
		if e := np.elems[k]; (e.kind == '9' || e.kind == '0') && !e.frac {
			if e.kind == '0' && firstZero == np.ints {
				firstZero = n
			}
			n++
		}
	}
	// Each element's text, and whether it is blank padding.
	type piece struct {
		text  string
		blank bool
		digit bool // an integer-part digit (the sign goes before the first)
	}
	var out []piece
	started := false
	pos, fi := 0, 0
	for _, e := range np.elems {
		switch {
		case e.kind == 'l':
			out = append(out, piece{text: e.lit})
		case e.kind == '.':
			out = append(out, piece{text: "."})
		case e.kind == ',':
			out = append(out, piece{text: ",", blank: !started && !over})
		case over:
			out = append(out, piece{text: "#", digit: !e.frac})
			started = true
		case e.frac:
			d := "0"
			if fi < len(fp) {
				d = fp[fi : fi+1]
			}
			fi++
			out = append(out, piece{text: d})
		default:
			k := np.ints - pos // digits from here to the point, this one included
			pos++
			switch {
			case k <= len(ip):
				out = append(out, piece{text: ip[len(ip)-k : len(ip)-k+1], digit: true})
				started = true
			case pos-1 >= firstZero:
				out = append(out, piece{text: "0", digit: true})
				started = true
			default:
				out = append(out, piece{text: " ", blank: true})
			}
		}
	}
	if np.fm {
		// No trailing zeros where the pattern has 9s.
		for i := len(out) - 1; i >= 0; i-- {
			e := np.elems[i]
			if e.kind != '9' || !e.frac || out[i].text != "0" {
				break
			}
			out[i].text = ""
		}
	}
	sign := " "
	if neg {
		sign = "-"
	}
	if np.fm && !neg {
		sign = ""
	}
	signed := false
	for _, p := range out {
		if !signed && !p.blank && (p.digit || p.text == "." || p.text == "#") {
			dst = append(dst, sign...)
			signed = true
		}
		if p.blank {
			if !np.fm {
				dst = append(dst, ' ')
			}
			continue
		}
		dst = append(dst, p.text...)
	}
	if !signed {
		dst = append(dst, sign...)
	}
	return dst
}

func (c *compiler) compileToCharNumber(args []node, desc string) (node, error) {
	pc, ok := args[1].(*constNode)
	if !ok || pc.null || args[1].dt().ID() != arrow.STRING {
		return nil, nferr.Queryf("the pattern of %s must be a constant string", desc)
	}
	np, err := compileNumberPattern(pc.s)
	if err != nil {
		return nil, err
	}
	if args[0].dt().ID() == arrow.NULL {
		return newNullConst(arrow.BinaryTypes.String), nil
	}
	if args[0].dt().ID() != arrow.STRING {
		return nil, nferr.Queryf("%s formats the text of a number, not %s", desc, TypeName(args[0].dt()))
	}
	return &funcNode{desc: desc, t: arrow.BinaryTypes.String, args: args[:1], run: func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		w := newStrWriter(out, n)
		each(sel, n, func(i int32) {
			w.at(i)
			out.str = np.format(out.str, string(in[0].strAt(i)))
		})
		w.finish(n)
		return nil
	}}, nil
}
