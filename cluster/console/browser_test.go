package console

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium or Chrome binary: $NICFLOW_CHROMIUM, then
// the usual names on PATH.
func chromium() string {
	if p := os.Getenv("NICFLOW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowserConsole drives the console in headless Chromium: the member
// list, a query from the SQL box with its progress line and result table,
// its entry in the recent list, its plan tree (expandable), and an
// EXPLAIN ANALYZE from the button; the page must log no error (a CSP
// violation would).
func TestBrowserConsole(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found: install it (Debian: apt-get install chromium) or set NICFLOW_CHROMIUM to run the browser test")
	}
	dir, opts := testDB(t, 100000)
	srv, _ := startConsole(t, dir, opts, "")

	aopts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		// NB: Chromium makes its own org.chromium.* directories under
		// TMPDIR and leaves them behind; keep them in the test's.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// NB: without these Chromium waits on the network for
		// component updates and field trials on a closed network.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), aopts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	// NB: the first call starts the browser for the context's whole life,
	// so it gets no timeout of its own: a watchdog stops a hung browser.
	watchdog := time.AfterFunc(60*time.Second, cancelB)
	defer watchdog.Stop()
	start := time.Now()
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	var mu sync.Mutex
	var pageErrors []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				pageErrors = append(pageErrors, e.Entry.Text+" "+e.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			pageErrors = append(pageErrors, e.ExceptionDetails.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	defer cancelT()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(tctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	isOpen := func() bool {
		t.Helper()
		open, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.querySelector("#plan-tree details").open`))
		if err != nil {
			t.Fatal(err)
		}
		return open
	}

	do("loading the console",
		chromedp.Navigate(srv.URL()),
		chromedp.WaitVisible(`#members-body tr[data-id]`),
	)
	if members := text(`#members-body`); !strings.Contains(members, "serve") {
		t.Errorf("member list: %q", members)
	}
	do("running a query from the SQL box",
		chromedp.SetValue(`#sql-text`, "select k, count(*) as n from t group by k order by k"),
		chromedp.Click(`#run`),
		chromedp.WaitVisible(`#result-table`),
	)
	if status := text(`#run-status`); !strings.HasPrefix(status, "done") || !strings.Contains(status, "7 rows") {
		t.Errorf("progress line: %q", status)
	}
	count, table := text(`#result-count`), text(`#result-table`)
	if count != "7 rows" || !strings.Contains(table, "14286") || !strings.Contains(table, "n") {
		t.Errorf("result: %q\n%s", count, table)
	}
	do("the query in the recent list", chromedp.WaitVisible(`#recent-body tr[data-id] .plan-btn`))
	if recent := text(`#recent-body`); !strings.Contains(recent, "console (local)") || !strings.Contains(recent, "done") || !strings.Contains(recent, "group by k") {
		t.Errorf("recent list: %q", recent)
	}

	// The plan tree: operators with their counted rows; a click folds one.
	do("opening the plan", chromedp.Click(`#recent-body tr[data-id] .plan-btn`), chromedp.WaitVisible(`#plan-tree details`))
	if tree := text(`#plan-tree`); !strings.Contains(tree, "HashAggregate") || !strings.Contains(tree, "actual 7 in") || !strings.Contains(tree, "actual 100000 in") {
		t.Errorf("plan tree: %q", tree)
	}
	openBefore := isOpen()
	do("folding a plan node", chromedp.Click(`#plan-tree details > summary`))
	if openAfter := isOpen(); !openBefore || openAfter {
		t.Errorf("plan node open %v, after a click %v", openBefore, openAfter)
	}

	// EXPLAIN ANALYZE from its button: the plan's sections as a tree.
	do("EXPLAIN ANALYZE",
		chromedp.SetValue(`#sql-text`, "select count(*) from t where k = 3;"),
		chromedp.Click(`#explain`),
		chromedp.WaitVisible(`#plan-tree details.section`),
	)
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`document.querySelector("#plan-tree").textContent.includes("Total:")`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("EXPLAIN ANALYZE total: %v", err)
	}
	if sections := text(`#plan-tree`); !strings.Contains(sections, "Logical plan") || !strings.Contains(sections, "executed") {
		t.Errorf("explain analyze tree: %q", sections)
	}

	// A long query: live in the running list, canceled by its button.
	do("a long query running",
		chromedp.SetValue(`#sql-text`, "select count(*) from t a, t b where a.x < b.x"),
		chromedp.Click(`#run`),
		chromedp.WaitVisible(`#running-body tr.state-running`),
	)
	if running := text(`#running-body`); !strings.Contains(running, "a.x < b.x") || !strings.Contains(running, "local: 0/1 tasks") {
		t.Errorf("running list: %q", running)
	}
	do("canceling it", chromedp.Click(`#cancel`), chromedp.WaitVisible(`#run-error`))
	if e := text(`#run-error`); !strings.Contains(e, "cancel") {
		t.Errorf("canceled query: %q", e)
	}

	// A failing statement shows its error.
	do("a failing statement",
		chromedp.SetValue(`#sql-text`, "select nope from t"),
		chromedp.Click(`#run`),
		chromedp.WaitVisible(`#run-error`),
	)
	if e := text(`#run-error`); !strings.Contains(e, "nope") {
		t.Errorf("error shown: %q", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pageErrors) > 0 {
		t.Errorf("the page logged errors: %q", pageErrors)
	}
	t.Logf("browser test: %v", time.Since(start).Round(time.Millisecond))
}
