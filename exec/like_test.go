package exec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

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

// TestLikeBatchSearch: the whole-batch search for a pattern's required
// literal (expr.candidateRows) gives each row the answer Match gives it,
// with hits straddling two rows, empty rows, selections, NULLs, LIKE and
// NOT LIKE.
func TestLikeBatchSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	words := []string{"special", "spec", "ial", "requests", "req", "uests", "x", "", "specialrequests", "é"}
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, pattern := range []string{"%special%requests%", "%special%", "%cial_req%", "sp%ial%sts", "%uestsspec%"} {
		m, err := expr.CompileLikePattern([]byte(pattern), -1)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 40; round++ {
			n := 1 + rng.IntN(60)
			rows := make([][]any, n)
			for i := range rows {
				if rng.IntN(9) == 0 {
					rows[i] = []any{nil}
					continue
				}
				var sb strings.Builder
				for w := rng.IntN(4); w > 0; w-- {
					sb.WriteString(words[rng.IntN(len(words))])
				}
				rows[i] = []any{sb.String()}
			}
			rec := MakeRecord(t, mem, schema, rows)
			var sel []int32
			if round%2 == 1 {
				for i := 0; i < n; i++ {
					if rng.IntN(3) > 0 {
						sel = append(sel, int32(i))
					}
				}
			}
			for _, neg := range []bool{false, true} {
				e := expr.Like(expr.Col(0, "s"), pattern)
				if neg {
					e = expr.Not(e)
				}
				ce, err := expr.CompileExpr(e, schema)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ce.EvalFilter(&Batch{Cols: rec.Columns(), N: n, Sel: sel})
				if err != nil {
					t.Fatal(err)
				}
				var want []int32
				for j := 0; j < lenLive(sel, n); j++ {
					i := rowAt(sel, j)
					if rows[i][0] == nil {
						continue
					}
					if m.Match([]byte(rows[i][0].(string))) != neg {
						want = append(want, int32(i))
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%q neg=%v over %q (sel %v): got %v, want %v", pattern, neg, rows, sel, got, want)
				}
			}
			rec.Release()
		}
	}
}
