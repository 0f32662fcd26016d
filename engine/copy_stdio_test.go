package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// stringCopy is a CopyIn and CopyOut over strings, recording Begin.
type stringCopy struct {
	io.Reader
	strings.Builder
	columns int
}

func (c *stringCopy) Begin(n int) error { c.columns = n; return nil }

// errReader fails after its data: a client that aborts the copy.
type errReader struct{ r io.Reader }

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, nferr.Queryf("COPY from stdin failed: aborted by the client")
	}
	return n, err
}

// COPY FROM STDIN reads the context's CopyIn to its end or to a "\."
// line (not inside a long line, where "\." reads as "."), loads it in one
// commit, and a client's abort adds nothing; COPY TO STDOUT writes
// PostgreSQL's text format.
func TestCopyStdio(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2})
	ctx := context.Background()
	exec := func(ctx context.Context, q string) (*Result, error) {
		r, err := s.Query(ctx, q)
		if err == nil {
			err = r.drain()
		}
		return r, err
	}
	if _, err := exec(ctx, "create table t (id int, s text)"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 600<<10) // beyond the spool's 256 KiB buffer
	in := &stringCopy{Reader: strings.NewReader("1\t" + long + "\\.\n2\ta\\tb\n\\.\n3\tafter the end marker\n")}
	r, err := exec(WithCopyIn(ctx, in), "copy t from stdin")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "COPY 2" || in.columns != 2 {
		t.Errorf("status %q, columns %d", r.Status, in.columns)
	}
	_, err = exec(WithCopyIn(ctx, &stringCopy{Reader: errReader{strings.NewReader("4\tx\n")}}), "copy t from stdin")
	if err == nil || !strings.Contains(err.Error(), "aborted by the client") {
		t.Errorf("an aborted copy: %v", err)
	}
	if _, err = exec(ctx, "copy t from stdin"); err == nil || !strings.Contains(err.Error(), "needs a client that sends the rows") {
		t.Errorf("no client stream: %v", err)
	}
	out := &stringCopy{}
	if r, err = exec(WithCopyOut(ctx, out), "copy (select id, length(s), case when id = 2 then s end from t order by id) to stdout"); err != nil {
		t.Fatal(err)
	}
	if want := "1\t614401\t\\N\n2\t3\ta\\tb\n"; out.String() != want || out.columns != 3 || r.Status != "COPY 2" {
		t.Errorf("copy to stdout: %q (columns %d, %q), want %q", out.String(), out.columns, r.Status, want)
	}
	var nf *nferr.Error
	_, err = exec(ctx, "copy t to stdout")
	if !errors.As(err, &nf) || nf.Kind != nferr.KindQuery {
		t.Errorf("copy to stdout without a client: %v", err)
	}
}
