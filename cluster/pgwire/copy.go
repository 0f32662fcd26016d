package pgwire

import (
	"io"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// COPY over the protocol: a statement's COPY ... FROM STDIN reads the
// client's CopyData messages (engine.CopyIn), and COPY ... TO STDOUT sends
// its lines as CopyData (engine.CopyOut), both in text form (PostgreSQL's
// text or csv format; binary COPY is refused by the engine).

// copyIn is the connection's copy-in stream for the running statement.
type copyIn struct {
	c       *conn
	begun   bool
	done    bool
	pending []byte
}

// Begin switches the connection to copy-in: CopyInResponse, then the
// client sends CopyData until CopyDone or CopyFail.
func (in *copyIn) Begin(columns int) error {
	in.begun, in.done, in.pending = true, false, nil
	in.c.be.Send(&pgproto3.CopyInResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, columns)})
	if err := in.c.be.Flush(); err != nil {
		return nferr.IOf("COPY FROM STDIN: %w", err)
	}
	return nil
}

func (in *copyIn) Read(p []byte) (int, error) {
	for len(in.pending) == 0 {
		if in.done {
			return 0, io.EOF
		}
		msg, err := in.c.receive()
		if err != nil {
			in.done = true
			return 0, nferr.IOf("COPY FROM STDIN: the connection failed: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			// NB: m.Data is valid until the next receive, which waits
			// until it is consumed.
			in.pending = m.Data
		case *pgproto3.CopyDone:
			in.done = true
			return 0, io.EOF
		case *pgproto3.CopyFail:
			in.done = true
			return 0, nferr.Queryf("COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// PostgreSQL ignores them during copy-in.
		default:
			in.done = true
			return 0, nferr.Queryf("protocol message %T during COPY FROM STDIN (want CopyData, CopyDone or CopyFail)", msg)
		}
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

// finish discards the rest of a copy-in the statement did not read to its
// end (it failed): PostgreSQL drops the client's data until CopyDone or
// CopyFail.
func (in *copyIn) finish() error {
	for in.begun && !in.done {
		msg, err := in.c.receive()
		if err != nil {
			return err
		}
		switch msg.(type) {
		case *pgproto3.CopyDone, *pgproto3.CopyFail:
			in.done = true
		}
	}
	in.begun = false
	return nil
}

// copyOut is the connection's copy-out stream for the running statement.
type copyOut struct {
	c     *conn
	begun bool
}

// Begin switches the connection to copy-out (CopyOutResponse).
func (out *copyOut) Begin(columns int) error {
	out.begun = true
	out.c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, columns)})
	return nil
}

func (out *copyOut) Write(p []byte) (int, error) {
	// NB: Send keeps the slice until Flush; the sink reuses its buffer.
	out.c.be.Send(&pgproto3.CopyData{Data: append([]byte(nil), p...)})
	if err := out.c.be.Flush(); err != nil {
		return 0, nferr.IOf("COPY TO STDOUT: %w", err)
	}
	return len(p), nil
}

// end closes a copy-out that ran to its end (CopyDone, before the
// statement's CommandComplete).
func (out *copyOut) end() {
	if out.begun {
		out.c.be.Send(&pgproto3.CopyDone{})
		out.begun = false
	}
}
