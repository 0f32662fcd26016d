package pgarray

import (
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // fmt of elems and nulls, or "bad"
	}{
		{"{}", "[] []"},
		{" { } ", "[] []"},
		{"{1,2,NULL}", "[1 2 ] [false false true]"},
		{`{"a b","c\"d",null,"NULL"}`, `[a b c"d  NULL] [false false true false]`},
		{"{ x , y }", "[x y] [false false]"},
		{"{a,,b}", "bad"},
		{"{{1},{2}}", "bad"},
		{`{"open}`, "bad"},
		{"1,2", "bad"},
	} {
		e, n, ok := Parse(c.in)
		got := "bad"
		if ok {
			got = fmt.Sprint(e, " ", n)
			if e == nil {
				got = "[] []"
			}
		}
		if got != c.want {
			t.Errorf("Parse(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"{}", "{1,2,NULL}", `{"a b","c\"d"}`, "{a,,b}", `{"x`, "{\\,}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, n, ok := Parse(s)
		if ok && len(e) != len(n) {
			t.Fatalf("Parse(%q): %d elements, %d null marks", s, len(e), len(n))
		}
	})
}
