package sql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nicflow/nicflow/internal/nferr"
)

// syntaxErrorAt is a KindQuery error "syntax error at line L, column C: msg"
// followed by the offending line and a caret under the position.
func syntaxErrorAt(src string, p Pos, format string, args ...any) error {
	return nferr.Queryf("syntax error at line %d, column %d: %s%s", p.Line, p.Col, fmt.Sprintf(format, args...), Snippet(src, p))
}

// Errorf is a KindQuery error for a problem found at p in src (by the binder,
// for example): "line L, column C: msg", then the offending line and a caret
// under the position.
func Errorf(src string, p Pos, format string, args ...any) error {
	return nferr.Queryf("line %d, column %d: %s%s", p.Line, p.Col, fmt.Sprintf(format, args...), Snippet(src, p))
}

// snippetWidth is how many characters of a long line are shown either side
// of the caret; 60 keeps the snippet within a 132-column terminal.
const snippetWidth = 60

// Snippet returns "\n<line>\n<caret>" for position p of src, or "" when p
// does not fall in src. Tabs before the caret are repeated in the caret line
// so that the caret lines up whatever the terminal's tab width.
func Snippet(src string, p Pos) string {
	if p.Line <= 0 || p.Offset < 0 || p.Offset > len(src) {
		return ""
	}
	start := strings.LastIndexByte(src[:p.Offset], '\n') + 1
	end := strings.IndexByte(src[p.Offset:], '\n')
	if end < 0 {
		end = len(src)
	} else {
		end += p.Offset
	}
	line := strings.TrimRight(src[start:end], "\r")
	before := src[start:min(p.Offset, start+len(line))]
	after := line[len(before):]
	prefix, suffix := "", ""
	if n := utf8.RuneCountInString(before); n > snippetWidth {
		// keep the last snippetWidth characters before the caret
		rs := []rune(before)
		before = string(rs[n-snippetWidth:])
		prefix = "..."
	}
	if n := utf8.RuneCountInString(after); n > snippetWidth {
		rs := []rune(after)
		after = string(rs[:snippetWidth])
		suffix = "..."
	}
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(prefix)
	b.WriteString(before)
	b.WriteString(after)
	b.WriteString(suffix)
	b.WriteString("\n")
	b.WriteString(strings.Repeat(" ", len(prefix)))
	for _, r := range before {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString("^")
	return b.String()
}
