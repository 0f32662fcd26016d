package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/xdg-go/scram"

	"github.com/nicflow/nicflow/internal/nferr"
)

// userRecord is a user of the users file (cluster/pgwire/users.go, written
// by `nicflow user add`): a SCRAM-SHA-256 verifier, never the password.
// NB: the console reads the file itself rather than reaching into pgwire;
// TestLoginWithUsersFromUserAdd writes it with pgwire.AddUser, so a change
// of the format fails there.
type userRecord struct {
	Name      string `json:"name"`
	Salt      []byte `json:"salt"`
	Iters     int    `json:"iterations"`
	StoredKey []byte `json:"stored_key"`
}

// maxIterations bounds the PBKDF2 cost a users file may ask of a login.
const maxIterations = 1 << 20

// verifyPassword checks name's password against the users file at path:
// it recomputes the salted password with the user's salt and iteration
// count, derives the client key and compares its hash with the stored
// key (RFC 5802), in constant time. An unknown user costs the same as a
// wrong password.
func verifyPassword(path, name, password string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, nferr.IOf("reading %s: %w", path, err)
	}
	var users []userRecord
	if len(b) > 0 {
		if err := json.Unmarshal(b, &users); err != nil {
			return false, nferr.Dataf("%s is damaged: %v", path, err)
		}
	}
	var u *userRecord
	for i := range users {
		if users[i].Name == name {
			u = &users[i]
			break
		}
	}
	known := u != nil
	if !known {
		salt := make([]byte, 16)
		rand.Read(salt)
		u = &userRecord{Name: name, Salt: salt, Iters: 4096, StoredKey: make([]byte, 32)}
	}
	if u.Iters < 1 || u.Iters > maxIterations {
		return false, nferr.Dataf("%s: user %s has %d iterations", path, u.Name, u.Iters)
	}
	client, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		// SASLprep refuses the password (prohibited characters).
		return false, nil
	}
	creds, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(u.Salt), Iters: u.Iters})
	if err != nil {
		return false, nferr.Internalf("deriving the key of user %s: %v", name, err)
	}
	ok := subtle.ConstantTimeCompare(creds.StoredKey, u.StoredKey) == 1
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
