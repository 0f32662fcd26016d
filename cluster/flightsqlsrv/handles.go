package flightsqlsrv

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The bytes clients hand back are decoded here and nowhere else: handles
// (of statements awaiting DoGet, in their tickets, and of prepared
// statements), bearer tokens and the authorization header. Each is
// validated whole before it is used; anything else is a clear error, never
// a panic (fuzz_test.go).

// handle names server state a client refers to later: version byte 1, a
// kind byte, and 16 random bytes. The random part makes handles
// unguessable, so another client cannot read or close a result it did not
// create.
type handle [handleLen]byte

const (
	handleLen     = 18
	handleVersion = 1
	kindStatement = 's' // a statement awaiting DoGet (TicketStatementQuery)
	kindPrepared  = 'p' // a prepared statement
)

func newHandle(kind byte) handle {
	var h handle
	h[0], h[1] = handleVersion, kind
	rand.Read(h[2:])
	return h
}

// parseHandle validates b as a handle of kind.
func parseHandle(b []byte, kind byte) (handle, error) {
	var h handle
	what := map[byte]string{kindStatement: "statement handle (ticket)", kindPrepared: "prepared statement handle"}[kind]
	if len(b) != handleLen || b[0] != handleVersion || b[1] != kind {
		return h, nferr.Queryf("malformed %s: not one this server issued", what)
	}
	copy(h[:], b)
	return h, nil
}

// Bearer tokens: "nf1_" and 32 random bytes in unpadded base64url.
const (
	tokenPrefix = "nf1_"
	tokenLen    = len(tokenPrefix) + 43
)

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// tokenKey validates a bearer token and returns the key it is stored
// under: its SHA-256, so the server's table holds no usable token.
func tokenKey(tok string) ([32]byte, bool) {
	if len(tok) != tokenLen || !strings.HasPrefix(tok, tokenPrefix) {
		return [32]byte{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok[len(tokenPrefix):])
	if err != nil || len(b) != 32 {
		return [32]byte{}, false
	}
	return sha256.Sum256([]byte(tok)), true
}

// maxAuthHeader bounds the authorization header decoded (a user name and
// password, base64: far below it).
const maxAuthHeader = 4096

// parseAuthorization splits an authorization header value into its
// scheme ("basic" or "bearer", lower case) and credentials; ok false for
// anything else.
func parseAuthorization(v string) (scheme, cred string, ok bool) {
	if len(v) > maxAuthHeader {
		return "", "", false
	}
	s, c, found := strings.Cut(strings.TrimSpace(v), " ")
	c = strings.TrimLeft(c, " ")
	if !found || c == "" {
		return "", "", false
	}
	s = strings.ToLower(s)
	if s != "basic" && s != "bearer" {
		return "", "", false
	}
	return s, c, true
}

// parseBasic decodes basic credentials, base64 of "user:password" (padded
// or not, as clients differ).
func parseBasic(cred string) (user, password string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(cred); err != nil {
			return "", "", false
		}
	}
	user, password, found := strings.Cut(string(b), ":")
	if !found || user == "" || strings.ContainsRune(user, 0) {
		return "", "", false
	}
	return user, password, true
}

// likeMatch reports whether s matches a Flight SQL filter pattern: % any
// run of characters, _ any one character, \ escapes the next one (JDBC's
// search string escape). It runs in O(len(p)*len(s)) at worst.
func likeMatch(p, s string) bool {
	pr, sr := []rune(p), []rune(s)
	// Iterative matching with backtracking to the last %, as for globs.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(sr) {
		if pi < len(pr) {
			c := pr[pi]
			switch {
			case c == '%':
				star, mark = pi, si
				pi++
				continue
			case c == '\\' && pi+1 < len(pr):
				if pr[pi+1] == sr[si] {
					pi, si = pi+2, si+1
					continue
				}
			case c == '_' || c == sr[si]:
				pi, si = pi+1, si+1
				continue
			}
		}
		if star < 0 {
			return false
		}
		pi, mark = star+1, mark+1
		si = mark
	}
	for pi < len(pr) && pr[pi] == '%' {
		pi++
	}
	return pi == len(pr)
}
