package sql

import (
	"sort"
	"strings"
)

// Statement parameters ($1, $2, ...) of the PostgreSQL extended query
// protocol. nicflow binds values by substitution before it parses a
// statement for binding: each $n token (found by the lexer, so never one
// inside a string, a quoted identifier or a comment) is replaced by the
// value as a quoted literal, CAST to the parameter's type when the client
// named one, or NULL. The value never becomes SQL text of its own: it is
// always inside a string literal (QuoteString doubles its quotes).

// ParamValue is one parameter's value: its text (PostgreSQL's text format)
// and the SQL type to cast it to ("" leaves it an untyped string literal,
// whose type the context decides, as for '5' in a = '5').
type ParamValue struct {
	Null bool
	Text string
	Type string
}

// ParamCount is the highest parameter number src uses (0: none).
func ParamCount(src string) (int, error) {
	toks, err := lex(src)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range toks {
		if t.kind == tokParam {
			k := atoiParam(t.text)
			n = max(n, k)
		}
	}
	return n, nil
}

// BindParams returns src with every $n replaced by vals[n-1]; a
// parameter without a value is an error.
func BindParams(src string, vals []ParamValue) (string, error) {
	toks, err := lex(src)
	if err != nil {
		return "", err
	}
	type span struct{ start, end, n int }
	var spans []span
	for _, t := range toks {
		if t.kind == tokParam {
			spans = append(spans, span{t.pos.Offset, t.end, atoiParam(t.text)})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.n > len(vals) {
			return "", syntaxErrorAt(src, toks[0].pos, "parameter $%d has no value (%d given)", sp.n, len(vals))
		}
		b.WriteString(src[last:sp.start])
		v := vals[sp.n-1]
		lit := "NULL"
		if !v.Null {
			lit = QuoteString(v.Text)
		}
		if v.Type != "" {
			lit = "CAST(" + lit + " AS " + v.Type + ")"
		} else if !v.Null {
			lit = "(" + lit + ")"
		}
		b.WriteString(lit)
		last = sp.end
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

func atoiParam(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
