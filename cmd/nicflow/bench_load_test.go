package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/emutest"
	"github.com/nicflow/nicflow/internal/nferr"
)

// loadTestOptions run bench load on dir through a `nicflow serve` child
// (this test binary re-executed, see TestMain).
func loadTestOptions(t *testing.T, dir string) loadOptions {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return loadOptions{Dir: dir, Exe: exe, Env: []string{testNodeEnv + "=1"}, Memory: "1GiB", Seed: 7}
}

// TestBenchLoad runs `nicflow bench load`'s core at SF 0.01 (4 clients,
// 3 s, a fifth of the queries canceled) against a served child and checks
// that its figures hold together: every answer right, no error, every
// cancel sent mid-flight confirmed by SQLSTATE 57014 (or answered first)
// with the connection usable after it, throughput above 0, latencies of
// the trivial query and of connections measured, the server's peak RSS
// and admission figures read; and that the report says so.
func TestBenchLoad(t *testing.T) {
	dir := copyTPCH(t, tpchDir(t, 0.01))
	o := loadTestOptions(t, dir)
	o.Clients, o.Duration, o.CancelFrac, o.TrivialEvery = []int{4}, 3*time.Second, 0.2, 200*time.Millisecond
	o.defaults()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := measureLoad(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.levels) != 2 || r.levels[0].name != "serial" || r.levels[1].clients != 4 {
		t.Fatalf("levels %+v", r.levels)
	}
	for _, l := range r.levels {
		t.Logf("%s: done %d cut %d cancels %d/%d/%d/%d trivial %d connects %d peak %d budget %d admitted %g",
			l.name, l.done, l.cut, l.cancelReq, l.cancelSent, l.cancelOK, l.cancelLate, len(l.trivial), len(l.connect), l.peakRSS, l.budget, l.admitted)
		if l.wrong != 0 || l.failures() != 0 {
			t.Errorf("%s: %d wrong (%v), %d failures: %v %v", l.name, l.wrong, l.wrongMsgs, l.failures(), l.errMsgs, l.connMsgs)
		}
		if l.done == 0 || len(l.lat) != l.done || l.elapsed < o.Duration {
			t.Errorf("%s: %d done, %d latencies, in %v", l.name, l.done, len(l.lat), l.elapsed)
		}
		// The probe ran select 1 and opened fresh connections; every
		// client connected.
		if len(l.trivial) < 5 || len(l.connect) < l.clients+5 {
			t.Errorf("%s: %d trivial queries, %d connections", l.name, len(l.trivial), len(l.connect))
		}
		if l.peakRSS <= 0 || l.budget != 1<<30 || !l.hasAdmission || l.admitted < float64(l.done) {
			t.Errorf("%s: peak RSS %d, budget %d, admission %v (%g admitted)", l.name, l.peakRSS, l.budget, l.hasAdmission, l.admitted)
		}
	}
	if s := r.levels[0]; s.cancelReq != 0 {
		t.Errorf("the serial baseline canceled %d queries", s.cancelReq)
	}
	l := r.levels[1]
	if l.cancelReq == 0 || l.cancelOK == 0 || l.cancelOK+l.sentLate != l.cancelSent || l.cancelSent > l.cancelReq || l.brokenAfter != 0 {
		t.Errorf("cancels: %d requested, %d sent, %d confirmed, %d answered first, %d broken connections",
			l.cancelReq, l.cancelSent, l.cancelOK, l.sentLate, l.brokenAfter)
	}
	var out bytes.Buffer
	if err := printLoad(&out, o, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"goal ok     every answer right", "goal ok     no error, refused connection or broken connection", "\n4 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBenchLoadCluster runs bench load against a local cluster's
// coordinator (2 workers, SF 0.01, 3 clients, 2 s): every answer right,
// no error, the coordinator's RSS and admission figures read, cancels
// confirmed, and the user it logged in as gone from users.json after.
func TestBenchLoadCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a cluster of processes")
	}
	emutest.Skip(t, "the cluster's node processes")
	dir := copyTPCH(t, tpchDir(t, 0.01))
	o := loadTestOptions(t, dir)
	o.Cluster, o.Memory = 2, "256MiB"
	o.Clients, o.Duration, o.CancelFrac, o.TrivialEvery = []int{3}, 2*time.Second, 0.2, 200*time.Millisecond
	o.defaults()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := measureLoad(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.what, "coordinator") || len(r.levels) != 2 {
		t.Fatalf("%s: %d levels", r.what, len(r.levels))
	}
	for _, l := range r.levels {
		if l.wrong != 0 || l.failures() != 0 || l.done == 0 {
			t.Errorf("%s: %d done, %d wrong (%v), %d failures: %v %v", l.name, l.done, l.wrong, l.wrongMsgs, l.failures(), l.errMsgs, l.connMsgs)
		}
		if l.peakRSS <= 0 || l.budget != 256<<20 || !l.hasAdmission || l.admitted == 0 || len(l.trivial) == 0 {
			t.Errorf("%s: peak RSS %d, budget %d, admission %v (%g admitted), %d trivial", l.name, l.peakRSS, l.budget, l.hasAdmission, l.admitted, len(l.trivial))
		}
	}
	if l := r.levels[1]; l.cancelOK+l.sentLate != l.cancelSent || l.brokenAfter != 0 {
		t.Errorf("cancels: %d sent, %d confirmed, %d answered first, %d broken", l.cancelSent, l.cancelOK, l.sentLate, l.brokenAfter)
	}
	users, err := pgwire.ListUsers(pgwire.UsersFile(dir))
	if err != nil || len(users) != 0 {
		t.Errorf("users left: %v %v", users, err)
	}
}

// TestBenchLoadWrongAnswer: a database whose data differs from TPC-H's
// (a region deleted) makes bench load count wrong answers, report them
// and fail with bad data; a server that is not there is a connect failure.
func TestBenchLoadWrongAnswer(t *testing.T) {
	dir := copyTPCH(t, tpchDir(t, 0.01))
	sess, err := engine.Open(dir, engine.Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := engine.ScriptText(context.Background(), sess, "delete from region where r_name = 'ASIA'", false); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	o := loadTestOptions(t, dir)
	o.Clients, o.Duration, o.CancelFrac, o.Queries = []int{2}, 500*time.Millisecond, 0, []int{5}
	var out bytes.Buffer
	err = runLoad(context.Background(), o, &out)
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(out.String(), "WRONG Q5") || !strings.Contains(out.String(), "goal MISSED every answer right") {
		t.Errorf("got %v:\n%s", err, out.String())
	}

	o = loadOptions{Dir: dir, Addr: freeAddr(t), Clients: []int{1}, Duration: 200 * time.Millisecond, TrivialEvery: 100 * time.Millisecond}
	out.Reset()
	err = runLoad(context.Background(), o, &out)
	if err == nil || !strings.Contains(out.String(), "connect failed") {
		t.Errorf("no server: got %v:\n%s", err, out.String())
	}
}

// TestBenchLoadOptions: bad options say which flag is wrong.
func TestBenchLoadOptions(t *testing.T) {
	for _, c := range []struct {
		o    loadOptions
		want string
	}{
		{loadOptions{}, "--dir"},
		{loadOptions{Dir: "d", CancelFrac: 1.5}, "--cancel-frac"},
		{loadOptions{Dir: "d", Clients: []int{0}}, "--clients"},
		{loadOptions{Dir: "d", Addr: "h:1", Cluster: 4}, "--addr and --cluster"},
		{loadOptions{Dir: "d", Addr: "h:1", Memory: "1GiB"}, "--memory"},
		{loadOptions{Dir: "d", Addr: "nohost"}, "--addr"},
		{loadOptions{Dir: "d", Memory: "lots"}, "--memory"},
		{loadOptions{Dir: "d", Duration: time.Millisecond}, "--duration"},
	} {
		c.o.defaults()
		err := c.o.validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c.o, err, c.want)
		}
	}
}
