package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
)

// testDB creates a database with table t (n rows: x, k = x % 7).
func testDB(t *testing.T, n int) (string, engine.Options) {
	t.Helper()
	dir := t.TempDir()
	opts := engine.Options{Parallelism: 2}
	s, err := engine.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Query(context.Background(), "create table t as select x, x % 7 as k from generate_series(1, "+itoa(n)+") as g(x)")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return dir, opts
}

func itoa(n int) string { return strconv.Itoa(n) }

// startConsole serves a Local console of dir on a free loopback port.
func startConsole(t *testing.T, dir string, opts engine.Options, usersFile string) (*Server, *Registry) {
	t.Helper()
	reg := NewRegistry(0)
	srv, err := Listen(Options{Backend: NewLocal(dir, opts, reg), Listen: "127.0.0.1:0", UsersFile: usersFile, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return srv, reg
}

// browser is an HTTP client with a cookie jar, as a browser would be.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: strings.TrimSuffix(base, "/"), c: &http.Client{
		Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

var csrfMeta = regexp.MustCompile(`name="nicflow-csrf" content="([0-9a-f]*)"`)

func (b *browser) do(method, path string, body io.Reader, hdr map[string]string) (int, http.Header, string) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		}
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(out)
}

// page loads "/" and keeps its CSRF token.
func (b *browser) page() (int, string) {
	code, _, body := b.do("GET", "/", nil, nil)
	if m := csrfMeta.FindStringSubmatch(body); m != nil {
		b.csrf = m[1]
	}
	return code, body
}

func (b *browser) getJSON(path string, v any) int {
	b.t.Helper()
	code, _, body := b.do("GET", path, nil, nil)
	if v != nil && code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			b.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return code
}

func (b *browser) post(path, jsonBody string, hdr map[string]string) (int, string) {
	b.t.Helper()
	h := map[string]string{"Content-Type": "application/json", "X-CSRF-Token": b.csrf}
	for k, v := range hdr {
		h[k] = v
	}
	code, _, body := b.do("POST", path, strings.NewReader(jsonBody), h)
	return code, body
}

// runSQL runs sql from the SQL box and waits for its end.
func (b *browser) runSQL(sql string) RunView {
	b.t.Helper()
	q, _ := json.Marshal(map[string]string{"sql": sql})
	code, body := b.post("/api/run", string(q), nil)
	if code != http.StatusAccepted {
		b.t.Fatalf("run %q: %d %s", sql, code, body)
	}
	var started struct{ ID string }
	json.Unmarshal([]byte(body), &started)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var rv RunView
		if code := b.getJSON("/api/runs/"+started.ID, &rv); code != http.StatusOK {
			b.t.Fatalf("run %s: HTTP %d", started.ID, code)
		}
		if rv.State != StateRunning {
			return rv
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("run %q still running after 20 s", sql)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTrustedLocalConsole(t *testing.T) {
	dir, opts := testDB(t, 20000)
	srv, reg := startConsole(t, dir, opts, "")
	b := newBrowser(t, srv.URL())

	code, body := b.page()
	if code != http.StatusOK || b.csrf == "" || !strings.Contains(body, `data-can-run="true"`) {
		t.Fatalf("page: %d, csrf %q\n%s", code, b.csrf, body)
	}
	var ms struct{ Members []Member }
	if b.getJSON("/api/members", &ms) != http.StatusOK || len(ms.Members) != 1 || ms.Members[0].Role != "serve" || ms.Members[0].Cores != 2 {
		t.Fatalf("members: %+v", ms)
	}

	rv := b.runSQL("select k, count(*) as n from t group by k order by k")
	if rv.State != StateDone || rv.Result == nil {
		t.Fatalf("run: %+v", rv)
	}
	res := rv.Result
	if strings.Join(res.Columns, ",") != "k,n" || res.TotalRows != 7 || len(res.Rows) != 7 || *res.Rows[0][0] != "0" || *res.Rows[0][1] != "2857" {
		t.Fatalf("result: %+v", res)
	}
	if rv.Query == nil || rv.Query.Source != "console" || rv.Query.User != "local" || rv.Query.Rows != 7 || !rv.Query.HasPlan {
		t.Fatalf("run's query: %+v", rv.Query)
	}
	var qs struct{ Running, Recent []QueryView }
	b.getJSON("/api/queries", &qs)
	if len(qs.Recent) == 0 || qs.Recent[0].ID != rv.Queries[0] || qs.Recent[0].State != StateDone {
		t.Fatalf("recent: %+v", qs.Recent)
	}
	var pv PlanView
	if code := b.getJSON("/api/queries/"+rv.Queries[0]+"/plan", &pv); code != http.StatusOK {
		t.Fatalf("plan: HTTP %d", code)
	}
	if len(pv.Tree) != 1 || !strings.HasPrefix(pv.Tree[0].Text, "Sort") || !hasFigure(pv.Tree[0], "actual 7 in") {
		t.Fatalf("plan tree: %s", pv.Text)
	}

	// NULLs, statuses, errors, big results.
	rv = b.runSQL("select null::int as a, 'x<y>' as b")
	if r := rv.Result; r == nil || r.Rows[0][0] != nil || *r.Rows[0][1] != "x<y>" {
		t.Fatalf("null row: %+v", rv)
	}
	rv = b.runSQL("create table u (a int)")
	if rv.Result == nil || rv.Result.Status != "CREATE TABLE" {
		t.Fatalf("status: %+v", rv)
	}
	rv = b.runSQL("select nope from t")
	if rv.State != StateFailed || !strings.Contains(rv.Error, "nope") {
		t.Fatalf("bad column: %+v", rv)
	}
	rv = b.runSQL("select x from t")
	if r := rv.Result; r == nil || r.TotalRows != 20000 || len(r.Rows) != 1000 || !r.Truncated {
		t.Fatalf("big result: total %d, kept %d", r.TotalRows, len(r.Rows))
	}
	// EXPLAIN ANALYZE from the SQL box: its text is the query's plan.
	rv = b.runSQL("explain analyze select count(*) from t where k = 3")
	if !rv.HasPlan {
		t.Fatalf("explain analyze run has no plan: %+v", rv)
	}
	b.getJSON("/api/queries/"+rv.Queries[0]+"/plan", &pv)
	if len(pv.Tree) < 3 || pv.Tree[0].Kind != "section" || pv.Tree[len(pv.Tree)-1].Kind != "note" {
		t.Fatalf("explain analyze tree from:\n%s", pv.Text)
	}

	// Cancel a long query from the console.
	q, _ := json.Marshal(map[string]string{"sql": "select count(*) from t a, t b, t c"})
	code, body = b.post("/api/run", string(q), nil)
	if code != http.StatusAccepted {
		t.Fatalf("run: %d %s", code, body)
	}
	var started struct{ ID string }
	json.Unmarshal([]byte(body), &started)
	waitFor(t, "the long query to run", func() bool {
		running, _ := reg.Queries()
		return len(running) == 1
	})
	if code, body := b.post("/api/runs/"+started.ID+"/cancel", "{}", nil); code != http.StatusOK || !strings.Contains(body, "true") {
		t.Fatalf("cancel: %d %s", code, body)
	}
	waitFor(t, "the canceled query to end", func() bool {
		var rv RunView
		b.getJSON("/api/runs/"+started.ID, &rv)
		return rv.State == StateCanceled
	})

	// CSRF: no token, a wrong one, another origin, a form post.
	for name, hdr := range map[string]map[string]string{
		"no token":     {"X-CSRF-Token": ""},
		"wrong token":  {"X-CSRF-Token": strings.Repeat("0", 64)},
		"other origin": {"Origin": "http://evil.example"},
		"cross site":   {"Sec-Fetch-Site": "cross-site"},
	} {
		if code, body := b.post("/api/run", `{"sql":"drop table t"}`, hdr); code != http.StatusForbidden {
			t.Errorf("%s: POST /api/run %d %s", name, code, body)
		}
	}
	if code, _, _ := b.do("POST", "/api/run", strings.NewReader("sql=drop+table+t"), map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": b.csrf}); code != http.StatusUnsupportedMediaType {
		t.Errorf("form post to /api/run: %d", code)
	}
	// DNS rebinding: a foreign host name is not answered.
	if code, _, _ := b.do("GET", "/api/queries", nil, map[string]string{"Host": "evil.example:80"}); code != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d", code)
	}
	// A browser without the page's session cannot post.
	other := newBrowser(t, srv.URL())
	other.csrf = b.csrf
	if code, body := other.post("/api/run", `{"sql":"select 1"}`, nil); code != http.StatusForbidden {
		t.Errorf("post without session: %d %s", code, body)
	}
	// Nobody else's runs.
	if code := other.getJSON("/api/runs/"+started.ID, nil); code != http.StatusNotFound {
		t.Errorf("another browser read a run: %d", code)
	}
	var tables struct{ Running, Recent []QueryView }
	b.getJSON("/api/queries", &tables)
	for _, q := range tables.Recent {
		if strings.Contains(q.SQL, "drop table") {
			t.Errorf("a refused statement ran: %+v", q)
		}
	}
	if code := b.getJSON("/api/queries/999999", nil); code != http.StatusNotFound {
		t.Errorf("unknown query: %d", code)
	}
}

func hasFigure(n *PlanNode, prefix string) bool {
	for _, f := range n.Figures {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLoginWithUsersFromUserAdd: with a users file every page asks for a
// login; a wrong password, an unknown user and a forged form are refused.
func TestLoginWithUsersFromUserAdd(t *testing.T) {
	dir, opts := testDB(t, 100)
	users := filepath.Join(t.TempDir(), "users.json")
	if err := pgwire.AddUser(users, "ada", "correct horse"); err != nil {
		t.Fatal(err)
	}
	srv, _ := startConsole(t, dir, opts, users)
	b := newBrowser(t, srv.URL())

	code, hdr, _ := b.do("GET", "/", nil, nil)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/login" {
		t.Fatalf("page without login: %d to %q", code, hdr.Get("Location"))
	}
	for _, p := range []string{"/api/members", "/api/queries", "/api/queries/1/plan"} {
		if code := b.getJSON(p, nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without login: %d", p, code)
		}
	}
	if code, body := b.post("/api/run", `{"sql":"select 1"}`, nil); code != http.StatusUnauthorized {
		t.Errorf("run without login: %d %s", code, body)
	}

	login := func(user, password string, withToken bool) (int, string) {
		_, _, form := b.do("GET", "/login", nil, nil)
		tok := regexp.MustCompile(`name="login_token" value="([0-9a-f]+)"`).FindStringSubmatch(form)
		if tok == nil {
			t.Fatalf("login form without token:\n%s", form)
		}
		v := url.Values{"user": {user}, "password": {password}}
		if withToken {
			v.Set("login_token", tok[1])
		}
		code, hdr, body := b.do("POST", "/login", strings.NewReader(v.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		return code, hdr.Get("Location") + body
	}
	if code, body := login("ada", "wrong horse", true); code != http.StatusUnauthorized || !strings.Contains(body, "Wrong user name or password") {
		t.Fatalf("wrong password: %d %s", code, body)
	}
	if code, _ := login("bob", "correct horse", true); code != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d", code)
	}
	if code, _ := login("ada", "correct horse", false); code != http.StatusForbidden {
		t.Fatalf("login without the form's token: %d", code)
	}
	if code, _, _ := b.do("POST", "/login", strings.NewReader("user=ada&password=correct+horse"), map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Fatalf("cross-origin login: %d", code)
	}
	if code, loc := login("ada", "correct horse", true); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "/login") {
		t.Fatalf("login: %d %s", code, loc)
	}
	u, _ := url.Parse(srv.URL())
	for _, ck := range b.c.Jar.Cookies(u) {
		if ck.Name == sessionCookie && ck.Value == "" {
			t.Fatal("empty session cookie")
		}
	}
	code, body := b.page()
	if code != http.StatusOK || !strings.Contains(body, ">ada<") || !strings.Contains(body, `action="/logout"`) {
		t.Fatalf("page after login: %d\n%s", code, body)
	}
	rv := b.runSQL("select count(*) from t")
	if rv.State != StateDone || *rv.Result.Rows[0][0] != "100" || rv.Query.User != "ada" {
		t.Fatalf("run after login: %+v", rv)
	}
	if code, body := b.post("/api/run", `{"sql":"select 1"}`, map[string]string{"X-CSRF-Token": "nope"}); code != http.StatusForbidden {
		t.Fatalf("run with a wrong CSRF token: %d %s", code, body)
	}

	// Log out: without the token refused, with it the session ends.
	if code, _, _ := b.do("POST", "/logout", strings.NewReader(""), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusForbidden {
		t.Fatalf("logout without CSRF token: %d", code)
	}
	if code, _, _ := b.do("POST", "/logout", strings.NewReader("csrf="+b.csrf), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	if code := b.getJSON("/api/queries", nil); code != http.StatusUnauthorized {
		t.Fatalf("API after logout: %d", code)
	}
}

func TestListenRules(t *testing.T) {
	dir, opts := testDB(t, 10)
	be := NewLocal(dir, opts, NewRegistry(0))
	if _, err := Listen(Options{Backend: be, Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "requires authentication") {
		t.Errorf("beyond loopback without users: %v", err)
	}
	if _, err := Listen(Options{Backend: be, Listen: "0.0.0.0:0", UsersFile: "users.json"}); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("login beyond loopback without TLS: %v", err)
	}
	if _, err := Listen(Options{Backend: be, Listen: "nonsense"}); err == nil {
		t.Error("bad address accepted")
	}

	// Mounted beyond loopback without users: read-only.
	c, err := New(Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.Handler()}
	lis := listenLocal(t)
	go srv.Serve(lis)
	defer srv.Close()
	b := newBrowser(t, "http://"+lis.Addr().String())
	code, body := b.page()
	if code != http.StatusOK || !strings.Contains(body, `data-can-run="false"`) || !strings.Contains(body, "read-only") {
		t.Fatalf("read-only page: %d\n%s", code, body)
	}
	if code := b.getJSON("/api/queries", nil); code != http.StatusOK {
		t.Errorf("read-only queries: %d", code)
	}
	if code, body := b.post("/api/run", `{"sql":"select 1"}`, nil); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Errorf("read-only run: %d %s", code, body)
	}
}

func TestParsePlan(t *testing.T) {
	text := `Logical plan:
Sort [a]  (rows 3)
  Scan t [a]  (rows 26k)
Physical plan (parallelism 2), executed:
Sort [a]  (rows 3, actual 2 in 1 batches, time 12µs, peak 168 B)
  Project [a, b := f(x, y)]  (rows 3, actual 2 in 1 batches, time 62µs)
    Scan main.t [a] storage filter=[a < 3] row groups=1  (rows 26k, actual 26205 in 8 batches, time 4.8ms, row groups 1/1)
  Scan main.u [b]  (rows 1)
Total: 2 rows in 5.2ms, peak memory 89.2 KiB
`
	tree := ParsePlan(text)
	if len(tree) != 3 || tree[0].Kind != "section" || tree[0].Text != "Logical plan" || tree[1].Kind != "section" || tree[2].Kind != "note" {
		t.Fatalf("top level: %s", dump(tree))
	}
	phys := tree[1].Children
	if len(phys) != 1 || phys[0].Text != "Sort [a]" || len(phys[0].Children) != 2 {
		t.Fatalf("physical: %s", dump(tree))
	}
	proj := phys[0].Children[0]
	if proj.Text != "Project [a, b := f(x, y)]" || strings.Join(proj.Figures, "|") != "rows 3|actual 2 in 1 batches|time 62µs" {
		t.Fatalf("project: %+v", proj)
	}
	if scan := proj.Children[0]; !hasFigure(scan, "row groups 1/1") || scan.Text != "Scan main.t [a] storage filter=[a < 3] row groups=1" {
		t.Fatalf("scan: %+v", scan)
	}

	dist := `Logical plan:
Aggregate  (rows 1)
Distributed plan: 2 stages, 2 workers x 2 streams
Stage 0: 2 task(s), output hash [k] to stage 1 (exchange 0, 2 receivers)
  task 0 on w1: 10 rows out, sent 1 KiB, received 0 B, time 3ms
  HashAggregate partial  (rows 7, actual 14 in 2 batches)
    Scan t  (rows 100, actual 100 in 1 batches)
Stage 1: 1 task(s), output result
  Gather  (rows 7)
Total: 7 rows in 9ms, shuffled 1 KiB
`
	tree = ParsePlan(dist)
	if len(tree) != 3 || tree[1].Text != "Distributed plan: 2 stages, 2 workers x 2 streams" || len(tree[1].Children) != 2 {
		t.Fatalf("distributed: %s", dump(tree))
	}
	s0 := tree[1].Children[0]
	if s0.Kind != "section" || len(s0.Children) != 2 || s0.Children[1].Children[0].Text != "Scan t" {
		t.Fatalf("stage 0: %s", dump(tree))
	}
	// Anything parses; odd indentation attaches to the nearest parent.
	for _, s := range []string{"", "\n\n", "   x\ny", "a  (", "a  ()", ")", "Total:", ":"} {
		ParsePlan(s)
	}
	if got := ParsePlan("      deep\nroot"); len(got) != 2 {
		t.Errorf("odd indentation: %s", dump(got))
	}
}

func dump(v any) string { b, _ := json.MarshalIndent(v, "", " "); return string(b) }

func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}
