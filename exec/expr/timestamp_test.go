package expr

import (
	"testing"

	"github.com/nicflow/nicflow/internal/civil"
)

// FuzzTimeFormat: a pattern compiles or is refused, text parses or is
// refused, never a panic; a timestamp formatted with a pattern that holds
// every field reads back as itself.
func FuzzTimeFormat(f *testing.F) {
	for _, p := range []string{"%Y-%m-%d %H:%M:%S.%f", "pg:YYYY-MM-DD HH24:MI:SS.US", "%d/%m/%Y %I:%M:%S %p", "pg:FMMonth DD, YYYY HH12:MI AM", "%", "pg:\"", "%Q"} {
		f.Add(p, "2020-03-05 14:07:09.123456", int64(1583417229123456))
	}
	f.Fuzz(func(t *testing.T, pattern, text string, us int64) {
		var parts []tpart
		var err error
		if p, ok := cutPrefix(pattern, "pg:"); ok {
			parts, err = compileToChar(p)
		} else {
			parts, err = compileStrftime(pattern)
		}
		if err != nil {
			return
		}
		parseFormatted(parts, []byte(text))
		if us < civil.MinTimestamp || us > civil.MaxTimestamp {
			return
		}
		out := appendFormatted(nil, parts, us, false)
		// The full patterns read back exactly.
		for _, full := range []string{"%Y-%m-%d %H:%M:%S.%f", "pg:YYYY-MM-DD HH24:MI:SS.US"} {
			if pattern != full {
				continue
			}
			back, ok := parseFormatted(parts, out)
			if !ok || back != us {
				t.Fatalf("%d formatted by %q as %q read back as %d (%v)", us, pattern, out, back, ok)
			}
		}
	})
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}
