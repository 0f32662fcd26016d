package flightsqlsrv

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Authentication (with Options.UsersFile): a client logs in with basic
// authentication, "authorization: Basic base64(user:password)", on the
// Handshake call (arrow-go's and Arrow Java's AuthenticateBasicToken, the
// ADBC drivers) or on any call (arrow-go's database/sql driver sends it
// on each). The password is checked against the user's SCRAM-SHA-256
// verifier in the users file (the one the PostgreSQL protocol uses): the
// stored key is derived again from the password and compared. A login on
// Handshake answers with "authorization: Bearer TOKEN" (a random token,
// valid for Options.TokenTTL) that later calls present instead.

// token is an issued bearer token (its key, SHA-256 of the token, is what
// the server keeps).
type token struct {
	user    string
	stored  []byte // the user's stored key when it was issued
	expires time.Time
}

// verified caches a successful basic login for a minute (clients that
// send the password on every call would otherwise pay PBKDF2 on each),
// keyed by an HMAC of the credentials under a key of this process.
type verified struct {
	user    string
	stored  []byte
	expires time.Time
}

const verifiedTTL = time.Minute

var failedLogin = "password authentication failed for user %q"

func mdOf(m map[string]string) metadata.MD { return metadata.New(m) }

type authState struct {
	key      []byte
	verified map[[32]byte]verified
}

// userOf is the authenticated user of a call ("" without authentication).
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// authenticate checks the call's credentials and returns its context with
// the user; setHeader sends response headers (the token of a login).
func (s *Server) authenticate(ctx context.Context, method string, setHeader func(map[string]string)) (context.Context, error) {
	if s.opts.UsersFile == "" {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if cn, ok := peerCert(ctx); ok {
		// A verified client certificate (mutual TLS) authenticates the
		// user it names; credentials sent too must be the same user's.
		if err := s.checkCertUser(cn); err != nil {
			return ctx, err
		}
		if len(vals) == 0 {
			return context.WithValue(ctx, userKey{}, cn), nil
		}
		ctx, err := s.authenticateHeader(ctx, method, vals[0], setHeader)
		if err != nil {
			return ctx, err
		}
		if u := userOf(ctx); u != cn {
			return ctx, nferr.Authf("the client certificate is for user %q but the credentials are user %q's", cn, u)
		}
		return ctx, nil
	}
	if len(vals) == 0 {
		return ctx, nferr.Authf("authentication required: log in with a user and password of `nicflow user add` (basic authentication)")
	}
	return s.authenticateHeader(ctx, method, vals[0], setHeader)
}

// authenticateHeader checks an authorization header's credentials (basic
// or bearer) and returns the call's context with their user.
func (s *Server) authenticateHeader(ctx context.Context, method, header string, setHeader func(map[string]string)) (context.Context, error) {
	scheme, cred, ok := parseAuthorization(header)
	if !ok {
		return ctx, nferr.Authf("malformed authorization header: Basic or Bearer credentials expected")
	}
	if scheme == "bearer" {
		user, err := s.checkToken(cred)
		if err != nil {
			return ctx, err
		}
		return context.WithValue(ctx, userKey{}, user), nil
	}
	user, pw, ok := parseBasic(cred)
	if !ok {
		return ctx, nferr.Authf("malformed basic credentials: base64 of user:password expected")
	}
	stored, err := s.checkPassword(user, pw)
	if err != nil {
		return ctx, err
	}
	if strings.HasSuffix(method, "/Handshake") {
		tok, err := s.issueToken(user, stored)
		if err != nil {
			return ctx, err
		}
		setHeader(map[string]string{"authorization": "Bearer " + tok})
	}
	return context.WithValue(ctx, userKey{}, user), nil
}

// peerCert returns the CommonName of the call's client certificate, when
// the connection is TLS and the certificate verified against the
// server's ClientCAs.
func peerCert(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.PeerCertificates) == 0 {
		return "", false
	}
	return ti.State.PeerCertificates[0].Subject.CommonName, true
}

// checkCertUser checks that the user a client certificate names exists.
func (s *Server) checkCertUser(cn string) error {
	_, ok, err := pgwire.LookupUser(s.opts.UsersFile, cn)
	if err != nil {
		return err
	}
	if !ok {
		return nferr.Authf("certificate authentication failed for user %q: no such user (nicflow user add)", cn)
	}
	return nil
}

// checkPassword checks user's password against the users file and
// returns the user's stored key. An unknown user costs the same work and
// fails with the same error as a wrong password.
func (s *Server) checkPassword(user, pw string) ([]byte, error) {
	v, ok, err := pgwire.LookupUser(s.opts.UsersFile, user)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, s.authKey())
	mac.Write([]byte(user + "\x00" + pw))
	var ck [32]byte
	copy(ck[:], mac.Sum(nil))
	now := time.Now()
	s.mu.Lock()
	c, hit := s.auth.verified[ck]
	s.mu.Unlock()
	if hit && ok && now.Before(c.expires) && c.user == user && subtle.ConstantTimeCompare(c.stored, v.StoredKey) == 1 {
		return v.StoredKey, nil
	}
	if !ok {
		// NB: the same PBKDF2 work as a real check, on a random verifier.
		salt := make([]byte, 16)
		rand.Read(salt)
		v = pgwire.Verifier{Salt: salt, Iters: 4096, StoredKey: salt}
	}
	if !v.CheckPassword(user, pw) || !ok {
		return nil, nferr.Authf(failedLogin, user)
	}
	s.mu.Lock()
	if len(s.auth.verified) >= maxTokens {
		clear(s.auth.verified)
	}
	s.auth.verified[ck] = verified{user: user, stored: v.StoredKey, expires: now.Add(verifiedTTL)}
	s.mu.Unlock()
	return v.StoredKey, nil
}

func (s *Server) authKey() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.key == nil {
		s.auth.key = make([]byte, 32)
		rand.Read(s.auth.key)
		s.auth.verified = map[[32]byte]verified{}
	}
	return s.auth.key
}

func (s *Server) issueToken(user string, stored []byte) (string, error) {
	tok := newToken()
	key, _ := tokenKey(tok)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tokens) >= maxTokens {
		return "", nferr.Resourcef("too many bearer tokens issued (%d valid): try again later", len(s.tokens))
	}
	s.tokens[key] = &token{user: user, stored: stored, expires: time.Now().Add(s.opts.TokenTTL)}
	return tok, nil
}

// checkToken returns the user of a valid bearer token: issued here, not
// expired, and its user still in the users file with the same password.
func (s *Server) checkToken(tok string) (string, error) {
	key, ok := tokenKey(tok)
	if !ok {
		return "", nferr.Authf("invalid bearer token: log in again")
	}
	s.mu.Lock()
	t := s.tokens[key]
	s.mu.Unlock()
	if t == nil {
		return "", nferr.Authf("invalid bearer token (unknown, or issued before the server restarted): log in again")
	}
	if time.Now().After(t.expires) {
		return "", nferr.Authf("bearer token expired: log in again")
	}
	v, ok, err := pgwire.LookupUser(s.opts.UsersFile, t.user)
	if err != nil {
		return "", err
	}
	if !ok || subtle.ConstantTimeCompare(v.StoredKey, t.stored) != 1 {
		s.mu.Lock()
		delete(s.tokens, key)
		s.mu.Unlock()
		return "", nferr.Authf("bearer token revoked (user %q was removed or changed password): log in again", t.user)
	}
	return t.user, nil
}
