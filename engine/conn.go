package engine

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Conn is one client's SQL session as the protocol servers (PostgreSQL
// wire, Flight SQL, the web console) use it. LocalConn serves a database
// opened in this process; a coordinator serves its cluster with
// cluster.NewSQLConn. A Conn is used by one goroutine at a time (Close
// may be called from any).
type Conn interface {
	// Execute parses script (a syntax error anywhere is reported here,
	// before anything runs) and returns its statements ready to run one
	// at a time.
	Execute(ctx context.Context, script string) (Cursor, error)
	// Describe returns the columns the one statement of src would
	// return, or ok false for a statement without rows, without running
	// it (Session.Describe).
	Describe(src string) (names []string, types []arrow.DataType, ok bool, err error)
	// DescribeStatement describes a statement with parameters $1, $2,
	// ...: their types (given[i] where not nil, else inferred from their
	// context) and its columns (Session.DescribeStatement).
	DescribeStatement(src string, given []arrow.DataType) (*Description, error)
	// TxStatus is the session's transaction status: 'I' idle, 'T' in a
	// transaction block, 'E' in a failed one (TxBlock).
	TxStatus() byte
	// Close ends the session.
	Close() error
}

// Cursor runs a script's statements in order (Script's contract): Next
// closes the previous result, runs the next statement and returns its
// result, or (nil, nil) after the last.
type Cursor interface {
	Len() int
	Next() (*Result, error)
	Close() error
}

// LocalConn serves s as a Conn.
func LocalConn(s *Session) Conn { return localConn{s} }

type localConn struct{ s *Session }

func (c localConn) Execute(ctx context.Context, script string) (Cursor, error) {
	return c.s.Execute(ctx, script)
}

func (c localConn) Describe(src string) ([]string, []arrow.DataType, bool, error) {
	return c.s.Describe(src)
}

func (c localConn) DescribeStatement(src string, given []arrow.DataType) (*Description, error) {
	return c.s.DescribeStatement(src, given)
}

func (c localConn) TxStatus() byte { return c.s.TxStatus() }

func (c localConn) Close() error { return c.s.Close() }

// QueryConn runs a script on c and returns the result of its last
// statement, the others run to completion first (Session.Query).
func QueryConn(ctx context.Context, c Conn, script string) (*Result, error) {
	cur, err := c.Execute(ctx, script)
	if err != nil {
		return nil, err
	}
	if cur.Len() == 0 {
		return nil, nferr.Queryf("no statement to run")
	}
	for i := 0; ; i++ {
		r, err := cur.Next()
		if err != nil {
			cur.Close()
			return nil, err
		}
		if i == cur.Len()-1 {
			// NB: the caller closes the last result; the cursor holds
			// nothing else.
			return r, nil
		}
		if err := r.drain(); err != nil {
			cur.Close()
			return nil, err
		}
	}
}

// Stream is the source of a streamed result (NewStreamResult).
type Stream interface {
	// Next returns the next batch, or nil at the end. The batch stays
	// the stream's: valid until the next call of Next or Close, which
	// release it.
	Next() (arrow.RecordBatch, error)
	// Close stops the stream (early, when the result is not read to the
	// end) and releases it.
	Close() error
}

// NewStreamResult is a result whose rows come from src (a query run
// elsewhere: a coordinator's workers). schema nil with status set: a
// statement without rows.
func NewStreamResult(sqlText string, schema *arrow.Schema, zone *time.Location, status string, affected int64, src Stream) *Result {
	return &Result{SQL: sqlText, Schema: schema, Zone: zone, Status: status, RowsAffected: affected, stream: src, started: time.Now()}
}

// OpenConn opens the database in dir (Open) as a Conn.
func OpenConn(dir string, opts Options) (Conn, error) {
	s, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return LocalConn(s), nil
}
