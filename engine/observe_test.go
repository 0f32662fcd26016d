package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// recordingObserver keeps what an Observer is told.
type recordingObserver struct {
	mu      sync.Mutex
	started []*Statement
	ended   map[*Statement]error
	order   []string
}

func (o *recordingObserver) StatementStarted(st *Statement) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, st)
	o.order = append(o.order, "start "+st.SQL)
}

func (o *recordingObserver) StatementEnded(st *Statement, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, dup := o.ended[st]; dup {
		panic("statement ended twice: " + st.SQL)
	}
	o.ended[st] = err
	o.order = append(o.order, "end "+st.SQL)
}

func (o *recordingObserver) endedWith(st *Statement) (error, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	err, ok := o.ended[st]
	return err, ok
}

func TestObserverSeesEveryStatement(t *testing.T) {
	obs := &recordingObserver{ended: map[*Statement]error{}}
	s, err := Open(t.TempDir(), Options{Parallelism: 2, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	r, err := s.Query(ctx, "create table t as select x, x % 7 as k from generate_series(1, 50000) as g(x)")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if len(obs.started) != 1 {
		t.Fatalf("started %d statements, want 1", len(obs.started))
	}
	ctas := obs.started[0]
	if err, ok := obs.endedWith(ctas); !ok || err != nil {
		t.Fatalf("CREATE TABLE AS: ended %v with %v", ok, err)
	}
	if ctas.Rows() != 50000 {
		t.Errorf("CREATE TABLE AS wrote %d rows, the observer saw %d", 50000, ctas.Rows())
	}
	if !strings.Contains(ctas.Plan(), "actual 50000") {
		t.Errorf("CREATE TABLE AS plan lacks the counted rows:\n%s", ctas.Plan())
	}

	// A query: running until its result is closed, its rows and plan live.
	r, err = s.Query(ctx, "select k, count(*) from t group by k order by k")
	if err != nil {
		t.Fatal(err)
	}
	q := obs.started[len(obs.started)-1]
	if _, ok := obs.endedWith(q); ok {
		t.Fatal("query reported ended before its rows were read")
	}
	if !strings.HasPrefix(q.SQL, "select k") || q.Started.IsZero() {
		t.Errorf("statement %q started %v", q.SQL, q.Started)
	}
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
	}
	if q.Rows() != 7 {
		t.Errorf("query rows %d, want 7", q.Rows())
	}
	if p := q.Plan(); !strings.Contains(p, "HashAggregate") || !strings.Contains(p, "actual 7 in") {
		t.Errorf("live plan:\n%s", p)
	}
	r.Close()
	r.Close()
	if err, ok := obs.endedWith(q); !ok || err != nil {
		t.Fatalf("query ended %v with %v", ok, err)
	}
	if !strings.Contains(q.Plan(), "actual 50000") {
		t.Errorf("final plan lacks the scan's rows:\n%s", q.Plan())
	}

	// A statement that fails to bind ends at once with its error.
	if _, err := s.Query(ctx, "select nope from t"); err == nil {
		t.Fatal("want a bind error")
	}
	bad := obs.started[len(obs.started)-1]
	if err, ok := obs.endedWith(bad); !ok || !nferr.Is(err, nferr.KindQuery) {
		t.Fatalf("failed statement ended %v with %v", ok, err)
	}
	if bad.Plan() != "" {
		t.Errorf("a statement that never planned has a plan: %q", bad.Plan())
	}

	// Cancel through the statement: the query fails as canceled.
	r, err = s.Query(ctx, "select a.x, b.x from t a, t b")
	if err != nil {
		t.Fatal(err)
	}
	c := obs.started[len(obs.started)-1]
	c.Cancel()
	for {
		rec, err := r.Next()
		if err != nil {
			if !nferr.Is(err, nferr.KindCanceled) {
				t.Fatalf("canceled query failed with %v", err)
			}
			break
		}
		if rec == nil {
			t.Fatal("canceled query ended without an error")
		}
	}
	r.Close()
	if err, ok := obs.endedWith(c); !ok || !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("canceled query ended %v with %v", ok, err)
	}
	c.Cancel() // after the end: nothing happens

	// A script: each statement is its own.
	n := len(obs.started)
	sc, err := s.Execute(ctx, "set batch_size = 1000; show tables")
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			break
		}
	}
	sc.Close()
	if got := len(obs.started) - n; got != 2 {
		t.Fatalf("script of 2 statements: %d started", got)
	}
	for _, st := range obs.started[n:] {
		if _, ok := obs.endedWith(st); !ok {
			t.Errorf("%q never ended", st.SQL)
		}
	}
}
