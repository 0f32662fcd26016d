package flightsqlsrv

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
)

// The bytes the server decodes itself (handles in tickets and commands,
// bearer tokens, the authorization header, filter patterns) are fuzzed:
// nothing panics, and only what the server issued is accepted.

func FuzzParseHandle(f *testing.F) {
	h := newHandle(kindStatement)
	f.Add(h[:])
	f.Add([]byte{})
	f.Add([]byte("not a handle"))
	f.Add(append([]byte{1, 'p'}, make([]byte, 16)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, k := range []byte{kindStatement, kindPrepared} {
			got, err := parseHandle(b, k)
			if err != nil {
				continue
			}
			if len(b) != handleLen || b[0] != handleVersion || b[1] != k || string(got[:]) != string(b) {
				t.Fatalf("accepted %x as a handle of kind %c", b, k)
			}
		}
	})
}

func FuzzTokenKey(f *testing.F) {
	f.Add(newToken())
	f.Add("")
	f.Add("nf1_" + strings.Repeat("A", 43))
	f.Add("nf1_" + strings.Repeat("+", 43))
	f.Fuzz(func(t *testing.T, s string) {
		if _, ok := tokenKey(s); ok {
			if len(s) != tokenLen || !strings.HasPrefix(s, tokenPrefix) || strings.ContainsAny(s[4:], "+/=") {
				t.Fatalf("accepted %q as a token", s)
			}
		}
	})
}

func FuzzAuthorization(f *testing.F) {
	f.Add("Basic " + base64.StdEncoding.EncodeToString([]byte("alice:correct horse")))
	f.Add("basic " + base64.RawStdEncoding.EncodeToString([]byte("a:")))
	f.Add("Bearer " + newToken())
	f.Add("Bearer")
	f.Add("Digest x")
	f.Fuzz(func(t *testing.T, v string) {
		scheme, cred, ok := parseAuthorization(v)
		if !ok {
			return
		}
		if scheme != "basic" && scheme != "bearer" || cred == "" || len(v) > maxAuthHeader {
			t.Fatalf("parsed %q as %q %q", v, scheme, cred)
		}
		if user, pw, ok := parseBasic(cred); ok {
			if user == "" || strings.ContainsAny(user, ":\x00") {
				t.Fatalf("basic %q: user %q", cred, user)
			}
			_ = pw
		}
	})
}

// likeRegexp is the reference semantics of a filter pattern.
func likeRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)^")
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '\\' && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"%", "", true}, {"%", "lineitem", true}, {"line%", "lineitem", true}, {"%item", "lineitem", true},
		{"l_n%m", "lineitem", true}, {"l_n%x", "lineitem", false}, {"", "", true}, {"", "a", false},
		{`a\_b`, "a_b", true}, {`a\_b`, "axb", false}, {`100\%`, "100%", true}, {"%a%b%", "xaybz", true},
		{"_", "é", true}, {"%%%", "abc", true}, {`\`, `\`, true},
	} {
		if got := likeMatch(c.p, c.s); got != c.ok {
			t.Errorf("likeMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func FuzzLikeMatch(f *testing.F) {
	f.Add("l_n%m", "lineitem")
	f.Add(`a\%%b`, "a%xb")
	f.Add("%_%", "")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 64 {
			return
		}
		// NB: invalid UTF-8 becomes U+FFFD in both.
		p, s = strings.ToValidUTF8(p, "\uFFFD"), strings.ToValidUTF8(s, "\uFFFD")
		if got, want := likeMatch(p, s), likeRegexp(p).MatchString(s); got != want {
			t.Fatalf("likeMatch(%q, %q) = %v, want %v", p, s, got, want)
		}
	})
}
