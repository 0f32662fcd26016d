package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// ZoneMetadataKey is the result schema metadata key naming the time zone
// a statement ran in (SET TIME ZONE earlier in its script), in which its
// TIMESTAMPTZ values print; absent for UTC.
const ZoneMetadataKey = "nicflow.time_zone"

// NewSQLConn returns a client session on coordinator c whose SQL runner
// is r: the engine.Conn the protocol servers (PostgreSQL wire, Flight
// SQL) serve a cluster through, as they serve an embedded database
// through engine.LocalConn. Every statement is a query request run as a
// remote client's is (Coordinator.Run: progress, retries, cancellation);
// the session's state is the SET statements it ran, replayed before each
// statement (the coordinator keeps no per-client state).
func NewSQLConn(c *Coordinator, r *SQLRunner) engine.Conn {
	return &sqlConn{c: c, r: r}
}

type sqlConn struct {
	c    *Coordinator
	r    *SQLRunner
	mu   sync.Mutex
	sets []string // the session's SET statements, in order
	tx   engine.TxBlock
}

func (s *sqlConn) Execute(ctx context.Context, script string) (engine.Cursor, error) {
	stmts, err := sql.Parse(script)
	if err != nil {
		return nil, err
	}
	return &sqlCursor{conn: s, ctx: ctx, stmts: stmts}, nil
}

func (s *sqlConn) Describe(src string) ([]string, []arrow.DataType, bool, error) {
	return s.r.sess.Describe(src)
}

func (s *sqlConn) DescribeStatement(src string, given []arrow.DataType) (*engine.Description, error) {
	return s.r.sess.DescribeStatement(src, given)
}

func (s *sqlConn) TxStatus() byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tx.Status()
}

func (s *sqlConn) Close() error { return nil }

// sqlCursor runs a script's statements one request each.
type sqlCursor struct {
	conn  *sqlConn
	ctx   context.Context
	stmts []sql.RawStmt
	i     int
	cur   *engine.Result
}

func (sc *sqlCursor) Len() int { return len(sc.stmts) }

func (sc *sqlCursor) Close() error {
	if sc.cur == nil {
		return nil
	}
	err := sc.cur.Close()
	sc.cur = nil
	return err
}

func (sc *sqlCursor) Next() (*engine.Result, error) {
	sc.Close()
	if sc.i >= len(sc.stmts) {
		return nil, nil
	}
	raw := sc.stmts[sc.i]
	text := raw.Text
	sc.i++
	s := sc.conn
	s.mu.Lock()
	tag, handled, err := s.tx.Before(raw.Stmt)
	sets := append([]string(nil), s.sets...)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if handled {
		return engine.NewStreamResult(text, nil, nil, tag, 0, &resultStream{done: true}), nil
	}
	script := strings.Join(append(sets, text), ";\n")
	req := QueryRequest{Kind: SQLKind, Text: script, Params: map[string]string{ParamStatement: strconv.Itoa(len(sets))}}
	r, err := startStream(sc.ctx, s.c, req, text)
	if err != nil {
		s.mu.Lock()
		s.tx.Fail()
		s.mu.Unlock()
		return nil, err
	}
	if r.Status == "SET" {
		s.mu.Lock()
		s.sets = append(s.sets, text)
		s.mu.Unlock()
	}
	sc.cur = r
	return r, nil
}

// startStream runs req on c in the background and returns its result
// once the result's schema is known (a statement without rows: once it
// finished).
func startStream(ctx context.Context, c *Coordinator, req QueryRequest, text string) (*engine.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &streamWriter{events: make(chan streamEvent), stop: make(chan struct{})}
	go func() {
		err := c.Run(ctx, req, w)
		select {
		case w.events <- streamEvent{end: true, err: err}:
		case <-w.stop:
		}
	}()
	st := &resultStream{w: w, cancel: cancel}
	ev := st.recv()
	if ev.end {
		st.Close()
		if ev.err != nil {
			return nil, ev.err
		}
		return engine.NewStreamResult(text, nil, nil, "OK", 0, &resultStream{done: true}), nil
	}
	if ev.schema == nil {
		st.Close()
		return nil, nferr.Internalf("query %s: a batch came before the result's schema", req.ID)
	}
	zone := ev.schema.Metadata()
	loc, _ := expr.LoadZone(metaValue(zone, ZoneMetadataKey))
	if ev.schema.NumFields() == 0 {
		// A statement without rows: its end tells whether it committed.
		status := metaValue(zone, StatusMetadataKey)
		end := st.recv()
		st.Close()
		if !end.end {
			return nil, nferr.Internalf("query %s: rows after a status", req.ID)
		}
		if end.err != nil {
			return nil, end.err
		}
		return engine.NewStreamResult(text, nil, loc, status, affectedOf(status), &resultStream{done: true}), nil
	}
	return engine.NewStreamResult(text, ev.schema, loc, "", 0, st), nil
}

func metaValue(md arrow.Metadata, key string) string {
	v, _ := md.GetValue(key)
	return v
}

// affectedOf reads the row count at the end of a command tag ("INSERT 0
// 5", "COPY 10").
func affectedOf(status string) int64 {
	f := strings.Fields(status)
	if len(f) < 2 {
		return 0
	}
	n, err := strconv.ParseInt(f[len(f)-1], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

var errStoppedReading = nferr.With(nferr.KindCanceled, errors.New("the client stopped reading the result"))

// streamEvent is one thing the running query hands to its reader: the
// schema, a batch (retained for the reader), or the end.
type streamEvent struct {
	schema *arrow.Schema
	rec    arrow.RecordBatch
	end    bool
	err    error
}

// streamWriter is the ResultWriter of a query read by a resultStream:
// each call waits until the reader takes the event or stops reading.
type streamWriter struct {
	events chan streamEvent
	stop   chan struct{} // closed when the reader stops
}

func (w *streamWriter) send(ev streamEvent) error {
	select {
	case w.events <- ev:
		return nil
	case <-w.stop:
		if ev.rec != nil {
			ev.rec.Release()
		}
		return errStoppedReading
	}
}

func (w *streamWriter) SetSchema(s *arrow.Schema) error { return w.send(streamEvent{schema: s}) }

func (w *streamWriter) Write(rec arrow.RecordBatch) error {
	rec.Retain()
	return w.send(streamEvent{rec: rec})
}

// resultStream reads a streamWriter's events as an engine.Stream.
type resultStream struct {
	w      *streamWriter
	cancel context.CancelFunc
	rec    arrow.RecordBatch
	done   bool
	err    error
	once   sync.Once
}

func (st *resultStream) recv() streamEvent {
	ev, ok := <-st.w.events
	if !ok {
		return streamEvent{end: true}
	}
	return ev
}

func (st *resultStream) release() {
	if st.rec != nil {
		st.rec.Release()
		st.rec = nil
	}
}

func (st *resultStream) Next() (arrow.RecordBatch, error) {
	st.release()
	if st.done {
		return nil, st.err
	}
	for {
		ev := st.recv()
		switch {
		case ev.end:
			st.done, st.err = true, ev.err
			return nil, ev.err
		case ev.rec != nil:
			st.rec = ev.rec
			return ev.rec, nil
		}
		// A second schema (a retried attempt declares it again): skip.
	}
}

// Close cancels the query when it is still running and lets its writer go.
func (st *resultStream) Close() error {
	st.release()
	st.once.Do(func() {
		if st.w != nil {
			close(st.w.stop)
		}
		if st.cancel != nil {
			st.cancel()
		}
	})
	return nil
}
