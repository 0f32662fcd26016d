package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"

	"github.com/nicflow/nicflow/cluster/pgwire"
)

// verifyPassword checks name's password against the users file at path
// (pgwire's SCRAM verifiers: Verifier.CheckPassword, in constant time).
// An unknown user costs the same as a wrong password: the password is
// derived against a made-up verifier of the same cost.
func verifyPassword(path, name, password string) (bool, error) {
	v, known, err := pgwire.LookupUser(path, name)
	if err != nil {
		return false, err
	}
	if !known {
		salt := make([]byte, 16)
		rand.Read(salt)
		v = pgwire.Verifier{Salt: salt, Iters: 4096, StoredKey: make([]byte, 32)}
	}
	ok := v.CheckPassword(name, password)
	return ok && known, nil
}

// session is a browser logged in (or, trusted, a local browser).
type session struct {
	user    string
	csrf    string
	expires time.Time
}

// sessions are the console's logged-in browsers, by cookie token.
type sessions struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(ttl time.Duration, max int) *sessions {
	return &sessions{ttl: ttl, max: max, m: map[string]*session{}}
}

func token() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// create starts a session for user and returns its cookie token.
func (s *sessions) create(user string) (string, *session) {
	now := time.Now()
	tok := token()
	ss := &session{user: user, csrf: token(), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, x := range s.m {
		if now.After(x.expires) {
			delete(s.m, t)
		}
	}
	if len(s.m) >= s.max {
		// NB: a flood of logins must not grow memory: drop the session
		// nearest its end.
		var oldest string
		for t, x := range s.m {
			if oldest == "" || x.expires.Before(s.m[oldest].expires) {
				oldest = t
			}
		}
		delete(s.m, oldest)
	}
	s.m[tok] = ss
	return tok, ss
}

func (s *sessions) get(tok string) *session {
	if tok == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[tok]
	if ss == nil {
		return nil
	}
	if time.Now().After(ss.expires) {
		delete(s.m, tok)
		return nil
	}
	return ss
}

func (s *sessions) remove(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, tok)
}

func sameToken(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
