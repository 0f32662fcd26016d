package console

import (
	"context"
	"crypto/tls"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

//go:embed assets
var assets embed.FS

// DefaultListen is nicflow serve's console address (--http-listen).
const DefaultListen = "127.0.0.1:8080"

// Options configure a console.
type Options struct {
	// Backend is what the console shows and runs (required).
	Backend Backend
	// UsersFile, when set, makes every page ask for a login with a user of
	// `nicflow user add` (the PostgreSQL users file, pgwire.UsersFile).
	UsersFile string
	// Loopback says the console is reached on loopback addresses only:
	// without UsersFile its local users may then run SQL (as pgwire trusts
	// 127.0.0.1). Listen sets it from the address; a console mounted on
	// another server (Handler) takes the caller's word. Without either,
	// the console is read-only: members and queries, no SQL box.
	Loopback bool
	// Listen is the address Listen serves on (default DefaultListen).
	Listen string
	// TLS, when set, makes Listen serve HTTPS (the session cookie is then
	// Secure). Listen requires it to serve logins beyond loopback: a
	// password travels in the login form.
	TLS *tls.Config
	// MaxResultRows bounds the rows of a result the SQL box shows
	// (default 1000; the query still runs to its end and counts them).
	MaxResultRows int
	// SessionTTL is how long a login lasts (default 12h).
	SessionTTL time.Duration
	// Logger receives the console's log (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, is served at GET /metrics without a login (a
	// Prometheus scrape: counts and sizes, no statement text).
	Metrics http.Handler
}

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.Backend == nil {
		return nferr.Internalf("console: no backend")
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.MaxResultRows <= 0 {
		o.MaxResultRows = 1000
	}
	if o.MaxResultRows > 100000 {
		return nferr.Queryf("console: %d result rows is more than the 100000 a page can show", o.MaxResultRows)
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// mode is who may do what.
type mode int

const (
	// modeReadOnly: no users file, not loopback-only: pages, no SQL.
	modeReadOnly mode = iota
	// modeTrust: loopback, no users file: local browsers do everything.
	modeTrust
	// modeLogin: a users file: a login for everything.
	modeLogin
)

// Console is the web console: an http.Handler.
type Console struct {
	o        Options
	mode     mode
	sessions *sessions
	mux      *http.ServeMux
	pages    *template.Template
	loginMu  sync.Mutex // one password check at a time (PBKDF2 is slow by design)

	mu     sync.Mutex
	runs   map[string]*run
	order  []string // run IDs, oldest first
	closed bool
	wg     sync.WaitGroup
}

// maxRuns bounds the console runs kept (running or finished).
const maxRuns = 64

// New returns a console serving o.Backend; mount Handler on a server.
func New(o Options) (*Console, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &Console{o: o, sessions: newSessions(o.SessionTTL, 10000), runs: map[string]*run{}}
	switch {
	case o.UsersFile != "":
		c.mode = modeLogin
	case o.Loopback:
		c.mode = modeTrust
	}
	t, err := template.New("").Funcs(templateFuncs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, nferr.Internalf("console templates: %v", err)
	}
	c.pages = t
	static, _ := fs.Sub(assets, "assets/static")
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", c.index)
	if o.Metrics != nil {
		m.Handle("GET /metrics", o.Metrics)
	}
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.logout)
	m.HandleFunc("GET /api/members", c.apiMembers)
	m.HandleFunc("GET /api/queries", c.apiQueries)
	m.HandleFunc("GET /api/queries/{id}", c.apiQuery)
	m.HandleFunc("GET /api/queries/{id}/plan", c.apiPlan)
	m.HandleFunc("POST /api/queries/{id}/cancel", c.apiCancelQuery)
	m.HandleFunc("POST /api/run", c.apiRun)
	m.HandleFunc("GET /api/runs/{id}", c.apiGetRun)
	m.HandleFunc("POST /api/runs/{id}/cancel", c.apiCancelRun)
	c.mux = m
	return c, nil
}

// Handler serves the console: "/", "/login", "/static/", "/api/".
func (c *Console) Handler() http.Handler { return http.HandlerFunc(c.serve) }

// Close cancels the console's running queries and waits for them.
func (c *Console) Close() {
	c.mu.Lock()
	c.closed = true
	for _, r := range c.runs {
		r.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// contentSecurityPolicy allows the console's own script, style and API
// and nothing else: no inline script or style, no frames, no other origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const sessionCookie = "nicflow_console"
const loginCookie = "nicflow_login"

func (c *Console) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if c.mode == modeTrust && !loopbackHost(r.Host) {
		// NB: trusted because local, so a page of another site must not
		// reach it through a name that resolves to 127.0.0.1 (DNS
		// rebinding): only loopback names and addresses are answered.
		http.Error(w, "the console answers requests for localhost or a loopback address only", http.StatusMisdirectedRequest)
		return
	}
	if r.Method == http.MethodPost && !sameOrigin(r) {
		c.deny(w, r, http.StatusForbidden, "cross-origin request refused")
		return
	}
	c.mux.ServeHTTP(w, r)
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin checks a POST's Origin (or Sec-Fetch-Site) against the host
// it was sent to.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// current returns the request's session, or nil.
func (c *Console) current(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	return c.sessions.get(ck.Value)
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// reader returns who may read the pages and API: a session, or anyone
// when no login is needed. ok is false when the request was answered.
func (c *Console) reader(w http.ResponseWriter, r *http.Request) (*session, bool) {
	s := c.current(r)
	if c.mode == modeLogin && s == nil {
		c.deny(w, r, http.StatusUnauthorized, "log in first")
		return nil, false
	}
	return s, true
}

// writer checks a state-changing request: a session allowed to run SQL
// and its CSRF token (the X-CSRF-Token header, or the form's csrf field).
func (c *Console) writer(w http.ResponseWriter, r *http.Request) (*session, bool) {
	s, ok := c.reader(w, r)
	if !ok {
		return nil, false
	}
	if c.mode == modeReadOnly {
		c.deny(w, r, http.StatusForbidden, "this console is read-only: it listens beyond loopback without users (see docs/console.md)")
		return nil, false
	}
	if s == nil {
		c.deny(w, r, http.StatusForbidden, "no console session: reload the page")
		return nil, false
	}
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		tok = r.PostFormValue("csrf")
	}
	if !sameToken(tok, s.csrf) {
		c.deny(w, r, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
		return nil, false
	}
	return s, true
}

func (c *Console) deny(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") || r.Method != http.MethodGet {
		writeJSON(w, status, map[string]string{"error": msg})
		return
	}
	if status == http.StatusUnauthorized {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	http.Error(w, msg, status)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v) //nolint:errcheck // a client that hung up is not our error
}

// ---------------------------------------------------------------- pages

type pageData struct {
	Title   string
	User    string
	CSRF    string
	CanRun  bool
	Login   bool // a login mode console: a log out button
	Members []Member
	Running []QueryView
	Recent  []QueryView
	Error   string
	Token   string // the login form's token
	Name    string // the login form's user name
}

func (c *Console) render(w http.ResponseWriter, status int, page string, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.pages.ExecuteTemplate(w, page, d); err != nil {
		c.o.Logger.Warn("console page", "page", page, "err", err)
	}
}

func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	s, ok := c.reader(w, r)
	if !ok {
		return
	}
	if s == nil && c.mode == modeTrust {
		var tok string
		tok, s = c.sessions.create("local")
		c.setCookie(w, r, sessionCookie, tok, "/", int(c.o.SessionTTL/time.Second))
	}
	d := pageData{Title: c.o.Backend.Name(), Login: c.mode == modeLogin, CanRun: c.mode != modeReadOnly && s != nil}
	if s != nil {
		d.User, d.CSRF = s.user, s.csrf
	}
	d.Members = c.o.Backend.Members()
	d.Running, d.Recent = c.queries()
	c.render(w, http.StatusOK, "index.html", d)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.mode != modeLogin || c.current(r) != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c.renderLogin(w, r, http.StatusOK, "", "")
}

func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, name, msg string) {
	tok := token()
	c.setCookie(w, r, loginCookie, tok, "/login", 600)
	c.render(w, status, "login.html", pageData{Title: c.o.Backend.Name(), Token: tok, Name: name, Error: msg})
}

// maxForm bounds a login or logout form.
const maxForm = 16 << 10

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.mode != modeLogin {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad login form", http.StatusBadRequest)
		return
	}
	// NB: a login form posted from another site (login CSRF) lacks the
	// token of the cookie this site set on its own form.
	ck, err := r.Cookie(loginCookie)
	if err != nil || !sameToken(r.PostFormValue("login_token"), ck.Value) {
		c.renderLogin(w, r, http.StatusForbidden, "", "The login form expired: try again.")
		return
	}
	name, password := r.PostFormValue("user"), r.PostFormValue("password")
	c.loginMu.Lock()
	ok, err := verifyPassword(c.o.UsersFile, name, password)
	if !ok {
		// NB: slows down guessing, one check at a time.
		time.Sleep(250 * time.Millisecond)
	}
	c.loginMu.Unlock()
	if err != nil {
		c.o.Logger.Warn("console login", "err", err)
		c.renderLogin(w, r, http.StatusInternalServerError, name, "The users file cannot be read; see the server's log.")
		return
	}
	if !ok {
		c.o.Logger.Info("console login refused", "user", name, "remote", r.RemoteAddr)
		c.renderLogin(w, r, http.StatusUnauthorized, name, "Wrong user name or password.")
		return
	}
	tok, _ := c.sessions.create(name)
	c.setCookie(w, r, loginCookie, "", "/login", -1)
	c.setCookie(w, r, sessionCookie, tok, "/", int(c.o.SessionTTL/time.Second))
	c.o.Logger.Info("console login", "user", name, "remote", r.RemoteAddr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if _, ok := c.writer(w, r); !ok {
		return
	}
	ck, _ := r.Cookie(sessionCookie)
	c.sessions.remove(ck.Value)
	c.setCookie(w, r, sessionCookie, "", "/", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// ---------------------------------------------------------------- API

func (c *Console) apiMembers(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.reader(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": c.o.Backend.Name(), "members": c.o.Backend.Members()})
}

// queries lists the backend's queries, marking those the console has an
// EXPLAIN plan of.
func (c *Console) queries() (running, recent []QueryView) {
	running, recent = c.o.Backend.Queries()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, qs := range [][]QueryView{running, recent} {
		for i := range qs {
			if c.planOfLocked(qs[i].ID) != "" {
				qs[i].HasPlan = true
			}
		}
	}
	if running == nil {
		running = []QueryView{}
	}
	if recent == nil {
		recent = []QueryView{}
	}
	return running, recent
}

func (c *Console) apiQueries(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.reader(w, r); !ok {
		return
	}
	running, recent := c.queries()
	writeJSON(w, http.StatusOK, map[string]any{"running": running, "recent": recent})
}

func (c *Console) apiQuery(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.reader(w, r); !ok {
		return
	}
	q, found := c.o.Backend.Query(r.PathValue("id"))
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such query (it may have left the recent list)"})
		return
	}
	writeJSON(w, http.StatusOK, q)
}

// PlanView is a query's plan: its text and the text as trees.
type PlanView struct {
	ID   string      `json:"id"`
	Text string      `json:"text"`
	Tree []*PlanNode `json:"tree"`
	// Live: the query is running, the counters still change.
	Live bool `json:"live"`
}

func (c *Console) apiPlan(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.reader(w, r); !ok {
		return
	}
	id := r.PathValue("id")
	c.mu.Lock()
	text := c.planOfLocked(id)
	c.mu.Unlock()
	q, found := c.o.Backend.Query(id)
	if text == "" {
		if !found {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such query (it may have left the recent list)"})
			return
		}
		text, _ = c.o.Backend.Plan(id)
	}
	if text == "" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no plan recorded for this query: run it with EXPLAIN ANALYZE"})
		return
	}
	writeJSON(w, http.StatusOK, PlanView{ID: id, Text: text, Tree: ParsePlan(text), Live: found && q.State == StateRunning})
}

func (c *Console) apiCancelQuery(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.writer(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"canceled": c.o.Backend.Cancel(r.PathValue("id"))})
}

// ---------------------------------------------------------------- runs

// run is a script run from the SQL box.
type run struct {
	id, user, sql string
	started       time.Time
	cancel        context.CancelFunc
	sink          *Sink

	mu      sync.Mutex
	queries []string // IDs of its statements, as they start
	state   string
	err     string
	ended   time.Time
	plan    string // the result's text when it is an EXPLAIN
}

// RunView is a console run as the SQL box polls it.
type RunView struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Error     string `json:"error,omitempty"`
	ElapsedMs int64  `json:"elapsed_ms"`
	// Queries are its statements' IDs; Query is the latest one's progress.
	Queries []string    `json:"queries"`
	Query   *QueryView  `json:"query,omitempty"`
	Result  *ResultView `json:"result,omitempty"`
	HasPlan bool        `json:"has_plan"`
}

// maxSQLBody bounds a script sent to the SQL box.
const maxSQLBody = 1 << 20

func (c *Console) apiRun(w http.ResponseWriter, r *http.Request) {
	s, ok := c.writer(w, r)
	if !ok {
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "send the script as JSON: {\"sql\": \"...\"}"})
		return
	}
	var body struct {
		SQL string `json:"sql"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSQLBody))
	if err := dec.Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "the script is larger than 1 MiB"})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "send the script as JSON: {\"sql\": \"...\"}"})
		return
	}
	if strings.TrimSpace(body.SQL) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "no SQL to run"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ru := &run{id: token()[:16], user: s.user, sql: body.SQL, started: time.Now(), cancel: cancel, sink: newSink(c.o.MaxResultRows), state: StateRunning}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the console is shutting down"})
		return
	}
	if !c.makeRoomLocked() {
		c.mu.Unlock()
		cancel()
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many console queries are running: wait or cancel one"})
		return
	}
	c.runs[ru.id] = ru
	c.order = append(c.order, ru.id)
	c.wg.Add(1)
	c.mu.Unlock()
	go c.execute(ctx, ru)
	writeJSON(w, http.StatusAccepted, map[string]string{"id": ru.id})
}

// makeRoomLocked drops the oldest finished run when maxRuns are kept; it
// fails when all of them are running.
func (c *Console) makeRoomLocked() bool {
	if len(c.order) < maxRuns {
		return true
	}
	for i, id := range c.order {
		ru := c.runs[id]
		ru.mu.Lock()
		done := ru.state != StateRunning
		ru.mu.Unlock()
		if done {
			delete(c.runs, id)
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			return true
		}
	}
	return false
}

func (c *Console) execute(ctx context.Context, ru *run) {
	defer c.wg.Done()
	defer ru.cancel()
	started := func(id string) {
		ru.mu.Lock()
		ru.queries = append(ru.queries, id)
		ru.mu.Unlock()
	}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = nferr.Internalf("console query panicked: %v", p)
				c.o.Logger.Error("console query panicked", "panic", p)
			}
		}()
		err = c.o.Backend.Run(ctx, ru.user, ru.sql, started, ru.sink)
	}()
	plan := ""
	if err == nil {
		plan = ru.sink.planText()
	}
	ru.mu.Lock()
	ru.state, ru.ended, ru.plan = stateOf(err), time.Now(), plan
	if err != nil {
		ru.err = err.Error()
	}
	ru.mu.Unlock()
}

// planOfLocked returns the EXPLAIN text a console run produced for query
// id ("" if none).
func (c *Console) planOfLocked(id string) string {
	for _, ru := range c.runs {
		ru.mu.Lock()
		p, qs := ru.plan, ru.queries
		ru.mu.Unlock()
		if p != "" && len(qs) > 0 && qs[len(qs)-1] == id {
			return p
		}
	}
	return ""
}

// ownRun finds a run of the request's user.
func (c *Console) ownRun(w http.ResponseWriter, r *http.Request, s *session) *run {
	c.mu.Lock()
	ru := c.runs[r.PathValue("id")]
	c.mu.Unlock()
	if ru == nil || s == nil || ru.user != s.user {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such console query of yours (it may have been dropped)"})
		return nil
	}
	return ru
}

func (c *Console) apiGetRun(w http.ResponseWriter, r *http.Request) {
	s, ok := c.reader(w, r)
	if !ok {
		return
	}
	ru := c.ownRun(w, r, s)
	if ru == nil {
		return
	}
	ru.mu.Lock()
	v := RunView{ID: ru.id, State: ru.state, Error: ru.err, Queries: append([]string{}, ru.queries...), HasPlan: ru.plan != ""}
	end := ru.ended
	if v.State == StateRunning {
		end = time.Now()
	}
	v.ElapsedMs = end.Sub(ru.started).Milliseconds()
	ru.mu.Unlock()
	if n := len(v.Queries); n > 0 {
		if q, found := c.o.Backend.Query(v.Queries[n-1]); found {
			v.Query = &q
		}
	}
	if v.State == StateDone {
		res := ru.sink.view()
		v.Result = &res
	}
	writeJSON(w, http.StatusOK, v)
}

func (c *Console) apiCancelRun(w http.ResponseWriter, r *http.Request) {
	s, ok := c.writer(w, r)
	if !ok {
		return
	}
	ru := c.ownRun(w, r, s)
	if ru == nil {
		return
	}
	ru.mu.Lock()
	running := ru.state == StateRunning
	ru.mu.Unlock()
	ru.cancel()
	writeJSON(w, http.StatusOK, map[string]bool{"canceled": running})
}

// ---------------------------------------------------------------- server

// Server is a console on its own listener (nicflow serve --http-listen).
type Server struct {
	c   *Console
	lis net.Listener
	srv *http.Server
	tls bool
}

// Listen checks o and opens its address: without a users file it must be
// a loopback address; with one beyond loopback, TLS is required (the
// login form carries the password).
func Listen(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, nferr.Queryf("console address %q: %v", o.Listen, err)
	}
	o.Loopback = loopbackHost(host)
	switch {
	case !o.Loopback && o.UsersFile == "":
		return nil, nferr.Queryf("console address %q: listening beyond loopback addresses requires authentication (--auth, with users from `nicflow user add`)", o.Listen)
	case !o.Loopback && o.TLS == nil:
		return nil, nferr.Queryf("console address %q: logins beyond loopback need TLS (--tls-cert, --tls-key), or the password would cross the network in clear", o.Listen)
	}
	c, err := New(o)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, nferr.Unavailablef("console address %s: %v", o.Listen, err)
	}
	s := &Server{c: c, lis: lis, tls: o.TLS != nil}
	s.srv = &http.Server{
		Handler:           c.Handler(),
		TLSConfig:         o.TLS,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Addr is the address the console listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// URL is the console's address as a browser opens it.
func (s *Server) URL() string {
	if s.tls {
		return "https://" + s.Addr() + "/"
	}
	return "http://" + s.Addr() + "/"
}

// Serve serves until Close; it returns nil after Close.
func (s *Server) Serve() error {
	var err error
	if s.tls {
		err = s.srv.ServeTLS(s.lis, "", "")
	} else {
		err = s.srv.Serve(s.lis)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the console: its running queries are canceled.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	s.c.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

var _ io.Closer = (*Server)(nil)
