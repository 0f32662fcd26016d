package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

func newAdmission(t *testing.T, opts AdmissionOptions) *Admission {
	t.Helper()
	a, err := NewAdmission(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAdmissionQueues: a query whose reservation does not fit waits, in
// order, until a running one releases its grant; the head of the queue
// starts with what is free once MinGrant is; the figures follow.
func TestAdmissionQueues(t *testing.T) {
	a := newAdmission(t, AdmissionOptions{Memory: 100 << 20, MinGrant: 30 << 20})
	ctx := context.Background()
	g1, err := a.Acquire(ctx, 80<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Grant, 1)
	queued := make(chan bool, 2)
	go func() {
		// 20 MiB free, less than MinGrant: it waits.
		g, err := a.Acquire(ctx, 50<<20, func(q bool) { queued <- q })
		if err != nil {
			t.Error(err)
		}
		got <- g
	}()
	if !<-queued {
		t.Fatal("the second query did not queue")
	}
	if st := a.Stats(); st.Queued != 1 || st.Running != 1 || st.Granted != 80<<20 {
		t.Fatalf("stats while queued: %+v", st)
	}
	select {
	case <-got:
		t.Fatal("admitted before the memory was free")
	case <-time.After(50 * time.Millisecond):
	}
	g1.Release()
	g2 := <-got
	if <-queued {
		t.Fatal("still queued once admitted")
	}
	if g2.Bytes() != 50<<20 {
		t.Fatalf("granted %d, want %d", g2.Bytes(), 50<<20)
	}
	// 50 MiB free: a query asking 70 MiB starts with the 50 (>= MinGrant).
	g3, err := a.Acquire(ctx, 70<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g3.Bytes() != 50<<20 {
		t.Fatalf("min grant: granted %d, want %d", g3.Bytes(), 50<<20)
	}
	g2.Release()
	g2.Release() // idempotent
	g4, err := a.Acquire(ctx, 1<<20, nil)
	if err != nil || g4.Bytes() != 1<<20 {
		t.Fatalf("small query: %v, %v", g4, err)
	}
	g3.Release()
	g4.Release()
	st := a.Stats()
	if st.Granted != 0 || st.Running != 0 || st.Queued != 0 || st.Admitted != 4 || st.Rejected != 0 || st.Waited <= 0 {
		t.Fatalf("final stats: %+v", st)
	}
}

// TestAdmissionTimeoutAndFullQueue: a query whose context ends while it
// waits fails with a canceled error naming the queue and the timeout, and
// leaves the queue; one more than MaxQueued fails at once as busy.
func TestAdmissionTimeoutAndFullQueue(t *testing.T) {
	a := newAdmission(t, AdmissionOptions{Memory: 64 << 20, MinGrant: 32 << 20, MaxQueued: 1})
	g, err := a.Acquire(context.Background(), 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.Acquire(ctx, 8<<20, nil)
		done <- err
	}()
	for a.Stats().Queued == 0 {
		time.Sleep(time.Millisecond)
	}
	_, err = a.Acquire(context.Background(), 8<<20, nil)
	if !nferr.Is(err, nferr.KindBusy) || !strings.Contains(err.Error(), "admission queue full") {
		t.Fatalf("queue full: got %v", err)
	}
	err = <-done
	if !nferr.Is(err, nferr.KindCanceled) || !strings.Contains(err.Error(), "statement timeout") || !strings.Contains(err.Error(), "admission queue") {
		t.Fatalf("timeout: got %v", err)
	}
	if st := a.Stats(); st.Queued != 0 || st.Rejected != 2 || st.Running != 1 {
		t.Fatalf("stats: %+v", st)
	}
	g.Release()
	if _, err := NewAdmission(AdmissionOptions{}); err == nil {
		t.Fatal("no memory accepted")
	}
}

// TestSessionAdmission: sessions sharing an Admission queue a query while
// another holds the node's memory (its result open), the observed
// statement says it is queued, and it runs once the first result closes;
// a query that reads no data (select 1) runs at once all the while.
func TestSessionAdmission(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	a := newAdmission(t, AdmissionOptions{Memory: 64 << 20, MinGrant: 64 << 20})
	db, err := OpenShared(t.TempDir(), Options{Parallelism: 1, MemoryLimit: 64 << 20, Admission: a, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	obs := &recordingObserver{ended: map[*Statement]error{}}
	s1, s2 := db.Session(nil), db.Session(obs)
	defer s1.Close()
	defer s2.Close()
	r1, err := s1.Query(context.Background(), "select * from generate_series(1, 10)")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s2.Query(ctx, "select * from generate_series(1, 1)"); !nferr.Is(err, nferr.KindCanceled) || !strings.Contains(err.Error(), "admission queue") {
		t.Fatalf("got %v", err)
	}
	// A query that reads no data and holds no state (a pool's health
	// check) is not admitted: it answers at once, the memory taken.
	for _, q := range []string{"select 1", "select 1 + 1 as two where true limit 1", "select (select 3)", "values (1), (2) union all select 3"} {
		qctx, qcancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := s2.Query(qctx, q)
		if err != nil {
			qcancel()
			t.Fatalf("%s: %v", q, err)
		}
		_, rows, err := resultRows(res, &sqlRecord{})
		qcancel()
		if err != nil || len(rows) == 0 {
			t.Fatalf("%s: rows %v, %v", q, rows, err)
		}
	}
	// One that reads a table, or sorts, is admitted as any other.
	for _, q := range []string{"select * from generate_series(1, 3) order by 1 desc", "select x from (values (2), (1)) as v(x) order by x"} {
		qctx, qcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := s2.Query(qctx, q)
		qcancel()
		if !nferr.Is(err, nferr.KindCanceled) || !strings.Contains(err.Error(), "admission queue") {
			t.Fatalf("%s: got %v, want it queued", q, err)
		}
	}
	done := make(chan []string, 1)
	go func() { done <- queryRows(t, s2, "select * from generate_series(2, 2)") }()
	for !obs.anyQueued() {
		time.Sleep(time.Millisecond)
	}
	r1.Close()
	if rows := <-done; len(rows) != 1 || rows[0] != "2" {
		t.Fatalf("rows %v", rows)
	}
	if st := a.Stats(); st.Granted != 0 || st.Admitted != 2 || st.Rejected != 3 || st.Exempted != 4 {
		t.Fatalf("stats %+v", st)
	}
}

// anyQueued says whether a started statement waits for admission.
func (o *recordingObserver) anyQueued() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, st := range o.started {
		if st.Queued() {
			return true
		}
	}
	return false
}

// TestStatementTimeout: SET statement_timeout takes PostgreSQL's forms;
// a query waiting for admission past it fails saying so, and SHOW
// answers what was set.
func TestStatementTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"0": 0, "250": 250 * time.Millisecond, "'2s'": 2 * time.Second, "1min": time.Minute, "1.5 s": 1500 * time.Millisecond} {
		if d, err := parseStatementTimeout(v); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", v, d, err, want)
		}
	}
	for _, v := range []string{"-1", "soon", "5 parsecs", ""} {
		if _, err := parseStatementTimeout(v); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%q: got %v, want a query error", v, err)
		}
	}
	a := newAdmission(t, AdmissionOptions{Memory: 64 << 20, MinGrant: 64 << 20})
	db, err := OpenShared(t.TempDir(), Options{Parallelism: 1, MemoryLimit: 64 << 20, Admission: a})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s1, s2 := db.Session(nil), db.Session(nil)
	defer s1.Close()
	defer s2.Close()
	r1, err := s1.Query(context.Background(), "select * from generate_series(1, 10)")
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	if rows := queryRows(t, s2, "set statement_timeout = '30ms'; show statement_timeout"); len(rows) != 1 || rows[0] != "30ms" {
		t.Fatalf("show: %v", rows)
	}
	if _, err := s2.Query(context.Background(), "select * from generate_series(1, 1)"); !nferr.Is(err, nferr.KindCanceled) || !strings.Contains(err.Error(), "statement timeout: the query waited") {
		t.Fatalf("got %v", err)
	}
	// Admitted, a query running past it is canceled too.
	r1.Close()
	start := time.Now()
	res, err := s2.Query(context.Background(), "select count(*) from generate_series(1, 100000000000)")
	if err == nil {
		_, _, err = resultRows(res, &sqlRecord{})
	}
	if !nferr.Is(err, nferr.KindCanceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("running past the timeout: %v after %v", err, time.Since(start))
	}
	if st := a.Stats(); st.Granted != 0 {
		t.Fatalf("grants left: %+v", st)
	}
}

// listingObserver is a recordingObserver that lists its statements.
type listingObserver struct{ recordingObserver }

func (o *listingObserver) RunningQueries() []QueryInfo {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []QueryInfo
	for _, st := range o.started {
		if _, ended := o.ended[st]; ended {
			continue
		}
		state := "running"
		if st.Queued() {
			state = "queued"
		}
		out = append(out, QueryInfo{State: state, SQL: st.SQL, Started: st.Started})
	}
	return out
}

// TestShowQueries: SHOW QUERIES lists a server's statements, a query
// waiting for memory as queued; an unserved session says why it cannot.
func TestShowQueries(t *testing.T) {
	a := newAdmission(t, AdmissionOptions{Memory: 64 << 20, MinGrant: 64 << 20})
	db, err := OpenShared(t.TempDir(), Options{Parallelism: 1, MemoryLimit: 64 << 20, Admission: a})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	obs := &listingObserver{recordingObserver{ended: map[*Statement]error{}}}
	s1, s2, s3 := db.Session(obs), db.Session(obs), db.Session(obs)
	defer s1.Close()
	defer s2.Close()
	defer s3.Close()
	if _, err := db.Session(nil).Query(context.Background(), "show queries"); !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "not served") {
		t.Fatalf("unserved: %v", err)
	}
	r1, err := s1.Query(context.Background(), "select * from generate_series(1, 10)")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- queryRows(t, s2, "select * from generate_series(2, 2)") }()
	for !obs.anyQueued() {
		time.Sleep(time.Millisecond)
	}
	rows := queryRows(t, s3, "show queries")
	var states []string
	for _, r := range rows {
		f := strings.Split(r, "|")
		states = append(states, f[1]+" "+f[len(f)-1])
	}
	want := "running select * from generate_series(1, 10),queued select * from generate_series(2, 2),running show queries"
	if got := strings.Join(states, ","); got != want {
		t.Fatalf("show queries: %s, want %s", got, want)
	}
	r1.Close()
	<-done
}

// TestClusterStatementAdmit: on a cluster's coordinator a query that
// reads no data (select 1, a scalar subquery of constants) is not
// admitted, while one that names a table, a view, a CTE or a table
// function anywhere is; writes run on the coordinator.
func TestClusterStatementAdmit(t *testing.T) {
	db, err := OpenShared(t.TempDir(), Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.Session(nil)
	defer s.Close()
	for q, want := range map[string]ClusterAdmit{
		"select 1":                                AdmitNone,
		"select now(), 1 + 2 as x where true":     AdmitNone,
		"select (select 3) union all values (4)":  AdmitNone,
		"set statement_timeout = '1s'":            AdmitNone,
		"select * from t":                         AdmitQuery,
		"select (select count(*) from t)":         AdmitQuery,
		"select 1 where exists (select 1 from t)": AdmitQuery,
		"with x as (select 1) select * from x":    AdmitQuery,
		"select * from generate_series(1, 3)":     AdmitQuery,
		"select * from (select 1) as d":           AdmitQuery,
		"explain analyze select 1":                AdmitQuery,
		"insert into t values (1)":                AdmitLocal,
	} {
		got, _, err := s.ClusterStatement(context.Background(), q, 0)
		if err != nil || got != want {
			t.Errorf("%s: got %v, %v; want %v", q, got, err, want)
		}
	}
}
