package expr

import (
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Regular expressions (Go's RE2 syntax, linear time on any input; a
// pattern must be a constant and is compiled once):
//
//	regexp_replace(s, pattern, replacement [, flags])  PostgreSQL's: the
//	    first match replaced, every match with flag g; flag i ignores case;
//	    \1..\9 in the replacement are the groups, \& the whole match
//	regexp_extract(s, pattern [, group])  DuckDB's: the group (default 0,
//	    the whole match) of the first match, '' when there is none
//	regexp_like(s, pattern)  whether s has a match (DuckDB's
//	    regexp_matches, Oracle's regexp_like)

// The functions of this file.
const (
	FnRegexpReplace = "regexp_replace" // [3-4]
	FnRegexpExtract = "regexp_extract" // [2-3]
	FnRegexpLike    = "regexp_like"    // [2]
)

// constString is the value of a constant string argument (false when it
// is not one); null reports a NULL constant.
func constString(n node) (s string, null, ok bool) {
	c, isConst := n.(*constNode)
	if !isConst {
		return "", false, false
	}
	if c.null {
		return "", true, true
	}
	return c.s, false, c.k == pStr
}

func (c *compiler) compileRegexp(e *Expr, args []node, desc string) (node, error) {
	ar := map[string][2]int{FnRegexpReplace: {3, 4}, FnRegexpExtract: {2, 3}, FnRegexpLike: {2, 2}}[e.Fn]
	if err := arity(e, ar[0], ar[1]); err != nil {
		return nil, err
	}
	str := arrow.BinaryTypes.String
	if args[0].dt().ID() == arrow.NULL {
		args[0] = newNullConst(str)
	}
	if args[0].dt().ID() != arrow.STRING {
		return nil, nferr.Queryf("function %s needs VARCHAR, not %s, in %s", e.Fn, TypeName(args[0].dt()), desc)
	}
	pat, null, ok := constString(args[1])
	if !ok {
		return nil, nferr.Queryf("the pattern of %s must be a string constant in %s", e.Fn, desc)
	}
	result := arrow.DataType(str)
	if e.Fn == FnRegexpLike {
		result = arrow.FixedWidthTypes.Boolean
	}
	if null {
		return newNullConst(result), nil
	}
	flags := ""
	group := 0
	var repl string
	switch e.Fn {
	case FnRegexpReplace:
		r, rnull, ok := constString(args[2])
		if !ok {
			return nil, nferr.Queryf("the replacement of regexp_replace must be a string constant in %s", desc)
		}
		if len(args) == 4 {
			f, fnull, ok := constString(args[3])
			if !ok || fnull {
				return nil, nferr.Queryf("the flags of regexp_replace must be a string constant in %s", desc)
			}
			flags = f
		}
		if rnull {
			return newNullConst(str), nil
		}
		repl = pgReplacement(r)
	case FnRegexpExtract:
		if len(args) == 3 {
			g, ok := args[2].(*constNode)
			if !ok || !(g.k == pI32 || g.k == pI64) || g.null {
				return nil, nferr.Queryf("the group of regexp_extract must be an integer constant in %s", desc)
			}
			group = int(g.i64)
		}
	}
	for _, f := range flags {
		if f != 'g' && f != 'i' {
			return nil, nferr.Queryf("regexp_replace: flag %q is not supported (g and i are)", f)
		}
	}
	if strings.ContainsRune(flags, 'i') {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, nferr.Queryf("invalid regular expression %q: %v", pat, err)
	}
	if group < 0 || group > re.NumSubexp() {
		return nil, nferr.Queryf("regexp_extract: the pattern has no group %d", group)
	}
	global := strings.ContainsRune(flags, 'g')
	f := &funcNode{desc: desc, t: result, args: args[:1]}
	switch e.Fn {
	case FnRegexpLike:
		f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
			out.b = Grow(out.b, n)
			each(sel, n, func(i int32) { out.b[i] = re.Match(in[0].strAt(i)) })
			return nil
		}
	case FnRegexpExtract:
		f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
			w := newStrWriter(out, n)
			each(sel, n, func(i int32) {
				w.at(i)
				if m := re.FindSubmatchIndex(in[0].strAt(i)); m != nil && m[2*group] >= 0 {
					out.str = append(out.str, in[0].strAt(i)[m[2*group]:m[2*group+1]]...)
				}
			})
			w.finish(n)
			return nil
		}
	default:
		tmpl := []byte(repl)
		limit := 1
		if global {
			limit = -1
		}
		f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
			w := newStrWriter(out, n)
			each(sel, n, func(i int32) {
				w.at(i)
				s := in[0].strAt(i)
				last := 0
				for _, m := range re.FindAllSubmatchIndex(s, limit) {
					out.str = append(out.str, s[last:m[0]]...)
					out.str = re.Expand(out.str, tmpl, s, m)
					last = m[1]
				}
				out.str = append(out.str, s[last:]...)
			})
			w.finish(n)
			return nil
		}
	}
	return f, nil
}

// pgReplacement turns PostgreSQL's replacement syntax (\1..\9 for the
// groups, \& for the match, \\ for a backslash) into Go's template ($ is
// literal in PostgreSQL: $$ here).
func pgReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '$':
			b.WriteString("$$")
		case c == '\\' && i+1 < len(r) && r[i+1] >= '1' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '&':
			b.WriteString("${0}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '\\':
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
