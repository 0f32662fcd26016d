package engine

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"

	"github.com/nicflow/nicflow/internal/nferr"
)

// CopyIn is the data of COPY ... FROM STDIN as a client sends it: the
// PostgreSQL protocol's copy-in stream (psql's \copy), the standard input
// of `nicflow sql`. The statement calls Begin once, with the number of
// columns it reads, before the first Read; Read returns io.EOF at the end
// of the data and an error when the client aborts the copy.
type CopyIn interface {
	Begin(columns int) error
	io.Reader
}

// CopyOut receives COPY ... TO STDOUT's rows as text lines (PostgreSQL's
// text or csv format): the protocol's copy-out stream, the CLI's standard
// output. Begin is called once, with the number of columns, before the
// first Write (also when there are no rows).
type CopyOut interface {
	Begin(columns int) error
	io.Writer
}

type copyInKey struct{}
type copyOutKey struct{}

// WithCopyIn returns ctx carrying in, the source of the statements' COPY
// FROM STDIN. A statement without one refuses COPY FROM STDIN.
func WithCopyIn(ctx context.Context, in CopyIn) context.Context {
	return context.WithValue(ctx, copyInKey{}, in)
}

// WithCopyOut returns ctx carrying out, the destination of the
// statements' COPY TO STDOUT.
func WithCopyOut(ctx context.Context, out CopyOut) context.Context {
	return context.WithValue(ctx, copyOutKey{}, out)
}

func copyInOf(ctx context.Context) CopyIn {
	in, _ := ctx.Value(copyInKey{}).(CopyIn)
	return in
}

func copyOutOf(ctx context.Context) CopyOut {
	out, _ := ctx.Value(copyOutKey{}).(CopyOut)
	return out
}

// spoolCopyIn copies the client's COPY FROM STDIN data (ctx's CopyIn) of
// a table of columns columns into a temporary file and returns its path;
// the caller removes it. The data ends at the stream's end or at a line
// "\." (PostgreSQL's end-of-data marker), which is not copied.
func (s *Session) spoolCopyIn(ctx context.Context, columns int) (string, error) {
	in := copyInOf(ctx)
	if in == nil {
		return "", nferr.Queryf("COPY FROM STDIN needs a client that sends the rows (psql's \\copy, a driver's copy-in, nicflow sql with the data on standard input); read a file instead")
	}
	if err := in.Begin(columns); err != nil {
		return "", err
	}
	dir := spillRootFor(s.opts.SpillDir, s.db.Dir())
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "nicflow-copy-*.in")
	if err != nil {
		return "", nferr.IOf("COPY FROM STDIN: spooling the data: %w", err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	r := bufio.NewReaderSize(in, 256<<10)
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(f.Name())
		if nferr.KindOf(err) == nferr.KindInternal {
			err = nferr.IOf("COPY FROM STDIN: %w", err)
		}
		return "", err
	}
	atStart := true // the next chunk begins a line
	for {
		if err := ctx.Err(); err != nil {
			return fail(nferr.With(nferr.KindCanceled, err))
		}
		// NB: a chunk is a line, or part of a line longer than the
		// reader's buffer.
		chunk, err := r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return fail(err)
		}
		if atStart && err != bufio.ErrBufferFull && bytes.Equal(bytes.TrimRight(chunk, "\r\n"), []byte(`\.`)) {
			// The rest (normally nothing) is the client's to drain.
			if _, err := io.Copy(io.Discard, r); err != nil {
				return fail(err)
			}
			break
		}
		if _, werr := w.Write(chunk); werr != nil {
			return fail(werr)
		}
		if err == io.EOF {
			break
		}
		atStart = err == nil
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", nferr.IOf("COPY FROM STDIN: spooling the data: %w", err)
	}
	return f.Name(), nil
}
