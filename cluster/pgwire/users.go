package pgwire

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/xdg-go/scram"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Users of the PostgreSQL protocol, stored as SCRAM-SHA-256 verifiers
// (salt, iteration count, stored key and server key: never the password)
// in a JSON file, written whole under a temporary name and renamed, mode
// 0600. `nicflow user add|remove|list` edits it; `nicflow serve --auth`
// reads it at each connection, so a change takes effect without a
// restart.

// UsersFile is the users file of a database directory.
func UsersFile(dir string) string { return filepath.Join(dir, "users.json") }

// scramIterations is the PBKDF2 iteration count of new verifiers
// (PostgreSQL's default).
const scramIterations = 4096

// userRecord is one user's SCRAM verifier.
type userRecord struct {
	Name      string `json:"name"`
	Salt      []byte `json:"salt"`
	Iters     int    `json:"iterations"`
	StoredKey []byte `json:"stored_key"`
	ServerKey []byte `json:"server_key"`
}

func readUsers(path string) (map[string]userRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]userRecord{}, nil
	}
	if err != nil {
		return nil, nferr.IOf("reading %s: %w", path, err)
	}
	var list []userRecord
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, nferr.Dataf("%s is damaged: %v", path, err)
	}
	m := make(map[string]userRecord, len(list))
	for _, u := range list {
		m[u.Name] = u
	}
	return m, nil
}

func writeUsers(path string, m map[string]userRecord) error {
	list := make([]userRecord, 0, len(m))
	for _, u := range m {
		list = append(list, u)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nferr.Internalf("users: %v", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nferr.IOf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nferr.IOf("writing %s: %w", path, err)
	}
	return nil
}

// AddUser creates or replaces user name with password in the users file.
func AddUser(path, name, password string) error {
	if name == "" || strings.ContainsAny(name, "\x00") {
		return nferr.Queryf("a user needs a name")
	}
	if len(password) < 8 {
		return nferr.Queryf("the password of user %s must have at least 8 characters", name)
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nferr.Internalf("random salt: %v", err)
	}
	client, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		return nferr.Queryf("user %s: %v", name, err)
	}
	creds := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: scramIterations})
	m, err := readUsers(path)
	if err != nil {
		return err
	}
	m[name] = userRecord{Name: name, Salt: salt, Iters: scramIterations, StoredKey: creds.StoredKey, ServerKey: creds.ServerKey}
	return writeUsers(path, m)
}

// RemoveUser removes user name; removing a user that does not exist is
// an error.
func RemoveUser(path, name string) error {
	m, err := readUsers(path)
	if err != nil {
		return err
	}
	if _, ok := m[name]; !ok {
		return nferr.Queryf("user %s does not exist", name)
	}
	delete(m, name)
	return writeUsers(path, m)
}

// ListUsers returns the users' names, sorted.
func ListUsers(path string) ([]string, error) {
	m, err := readUsers(path)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// scramServer is the SCRAM-SHA-256 server of a connection's user (the
// startup message's user: libpq sends no name inside SCRAM).
func scramServer(path, user string) (*scram.Server, error) {
	return scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) {
		m, err := readUsers(path)
		if err != nil {
			return scram.StoredCredentials{}, err
		}
		u, ok := m[user]
		if !ok {
			// NB: an unknown user runs the exchange with a random verifier,
			// so a client cannot tell it from a wrong password.
			salt := make([]byte, 16)
			rand.Read(salt)
			return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: scramIterations}, StoredKey: salt, ServerKey: salt}, nil
		}
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(u.Salt), Iters: u.Iters}, StoredKey: u.StoredKey, ServerKey: u.ServerKey}, nil
	})
}

// Verifier is a user's stored SCRAM-SHA-256 verifier, for protocols that
// receive the password itself (Flight SQL's basic authentication) and
// check it against the same users file.
type Verifier struct {
	Salt      []byte
	Iters     int
	StoredKey []byte
}

// LookupUser returns the verifier of user name (ok false: no such user).
// The file is read at each call, so a change takes effect at once.
func LookupUser(path, name string) (v Verifier, ok bool, err error) {
	m, err := readUsers(path)
	if err != nil {
		return Verifier{}, false, err
	}
	u, ok := m[name]
	if !ok {
		return Verifier{}, false, nil
	}
	return Verifier{Salt: u.Salt, Iters: u.Iters, StoredKey: u.StoredKey}, true, nil
}

// CheckPassword reports whether password is user name's: it derives the
// StoredKey from the password (SASLprep, PBKDF2 with the stored salt and
// iteration count) as AddUser did and compares it in constant time.
func (v Verifier) CheckPassword(name, password string) bool {
	if v.Iters <= 0 || v.Iters > 1<<20 || len(v.StoredKey) == 0 {
		return false
	}
	client, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		return false
	}
	creds := client.GetStoredCredentials(scram.KeyFactors{Salt: string(v.Salt), Iters: v.Iters})
	return subtle.ConstantTimeCompare(creds.StoredKey, v.StoredKey) == 1
}
