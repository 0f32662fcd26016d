package pgwire

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log destination written by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogStatements: with Options.LogStatements every statement a client
// sends is logged, and a failing one's error after it; without, none.
func TestLogStatements(t *testing.T) {
	for _, on := range []bool{true, false} {
		var buf lockedBuffer
		srv, _ := startLimited(t, Options{LogStatements: on, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		c := dialRaw(t, srv.Addr())
		if e, err := c.login(); e != nil || err != nil {
			t.Fatalf("login: %v %v", e, err)
		}
		if e, err := c.query("select count(*) from t"); e != nil || err != nil {
			t.Fatalf("query: %v %v", e, err)
		}
		if e, _ := c.query("select nosuch from t"); e == nil {
			t.Fatal("no error for a bad column")
		}
		c.nc.Close()
		log := buf.String()
		got := strings.Contains(log, `sql="select count(*) from t"`) && strings.Contains(log, `sql="select nosuch from t"`) &&
			strings.Contains(log, `msg="pgwire: statement failed"`) && strings.Contains(log, `column \"nosuch\" does not exist`)
		if got != on {
			t.Errorf("LogStatements %v: log\n%s", on, log)
		}
		if !on && strings.Contains(log, "pgwire: statement") {
			t.Errorf("statements logged without LogStatements:\n%s", log)
		}
	}
}
