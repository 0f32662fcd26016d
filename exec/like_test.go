package exec

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nicflow/nicflow/exec/expr"
)

// FuzzLike checks the compiled LIKE matcher (all its fast paths and the
// segment matcher) against the backtracking reference, with and without an
// escape character.
func FuzzLike(f *testing.F) {
	for _, c := range []struct {
		p, s string
		esc  bool
	}{
		{"%special%requests%", "the special pending requests", false},
		{"a%", "abc", false}, {"%c", "abc", false}, {"%b%", "abc", false},
		{"a%c", "ac", false}, {"a_c", "aéc", false}, {"__", "日本", false},
		{"%", "", false}, {"", "", false}, {"_%_", "a", false},
		{"a\\%b", "a%b", true}, {"a\\_b", "a_b", true}, {"\\\\", "\\", true},
		{"%a_b%c", "xxaxbyc", false}, {"%%%", "x", false}, {"%_x_%", "ax", false},
	} {
		f.Add(c.p, c.s, c.esc)
	}
	f.Fuzz(func(t *testing.T, pattern, s string, useEsc bool) {
		esc := -1
		if useEsc {
			esc = '\\'
		}
		m, err := expr.CompileLikePattern([]byte(pattern), esc)
		if err != nil {
			if !useEsc || !strings.HasSuffix(pattern, "\\") {
				t.Fatalf("pattern %q: unexpected error %v", pattern, err)
			}
			return
		}
		got := m.Match([]byte(s))
		// The reference works on runes: compare only on valid UTF-8 and
		// sizes where backtracking stays cheap.
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) || len(pattern) > 24 || len(s) > 48 || strings.Count(pattern, "%") > 6 {
			return
		}
		r := rune(-1)
		if useEsc {
			r = '\\'
		}
		if want := refLike([]rune(s), []rune(pattern), r); got != want {
			t.Fatalf("%q LIKE %q (escape %v): got %v, want %v", s, pattern, useEsc, got, want)
		}
	})
}

// TestLikeKinds: patterns take the intended fast path.
func TestLikeKinds(t *testing.T) {
	for p, want := range map[string]expr.LikeKind{
		"abc": expr.LikeExact, "abc%": expr.LikePrefix, "%abc": expr.LikeSuffix, "%abc%": expr.LikeContains,
		"ab%cd": expr.LikePreSuf, "%": expr.LikeAny, "%%": expr.LikeAny, "a_c": expr.LikeGeneral, "%a%b%": expr.LikeGeneral,
	} {
		m, err := expr.CompileLikePattern([]byte(p), -1)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind != want {
			t.Errorf("%q: kind %d, want %d", p, m.Kind, want)
		}
	}
}
