package flightsqlsrv

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// handler serves the Flight SQL commands (flightsql.NewFlightServer routes
// the Flight calls to it). Methods it does not define (transactions,
// Substrait plans, keys, bulk ingestion) answer Unimplemented.
type handler struct {
	flightsql.BaseServer
	s *Server
}

// catalogName is the one catalog (the database being served).
const catalogName = "nicflow"

func newHandler(s *Server) *handler {
	h := &handler{s: s}
	h.Alloc = s.opts.Alloc
	for id, v := range map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:         "nicflow",
		flightsql.SqlInfoFlightSqlServerVersion:      s.opts.Version,
		flightsql.SqlInfoFlightSqlServerArrowVersion: "18",
		flightsql.SqlInfoFlightSqlServerReadOnly:     false,
		flightsql.SqlInfoFlightSqlServerSql:          true,
		flightsql.SqlInfoFlightSqlServerSubstrait:    false,
		flightsql.SqlInfoFlightSqlServerTransaction:  int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoFlightSqlServerCancel:       true,
		flightsql.SqlInfoTransactionsSupported:       false,
		flightsql.SqlInfoDDLCatalog:                  false,
		flightsql.SqlInfoDDLSchema:                   false,
		flightsql.SqlInfoDDLTable:                    true,
		flightsql.SqlInfoIdentifierQuoteChar:         `"`,
		flightsql.SqlInfoIdentifierCase:              int32(flightsql.SqlCaseSensitivityLowerCase),
		flightsql.SqlInfoQuotedIdentifierCase:        int32(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoSupportsColumnAliasing:      true,
		flightsql.SqlInfoNullPlusNullIsNull:          true,
		flightsql.SqlInfoSchemaTerm:                  "schema",
		flightsql.SqlInfoCatalogTerm:                 "database",
	} {
		if err := h.RegisterSqlInfo(id, v); err != nil {
			panic(err) // a wrong type above: a bug caught by every test
		}
	}
	return h
}

// ---------------------------------------------------------------- statements

// A statement is a query awaiting DoGet: GetFlightInfo plans it (so a bad
// query fails there, with its message) and hands out a ticket naming it;
// DoGet runs it on the session of the connection that fetches, streaming
// each batch as the engine produces it. A statement without rows (DDL,
// DML, SET) runs at GetFlightInfo and its ticket yields no rows.
type statement struct {
	owner   string
	sql     string
	empty   bool
	schema  *arrow.Schema
	expires time.Time

	// guarded by Server.mu
	runs     int
	cancels  map[*context.CancelFunc]struct{}
	canceled bool
}

// cancelRun cancels the statement's runs and any later DoGet of it.
// Server.mu is held.
func (st *statement) cancelRun() {
	st.canceled = true
	for c := range st.cancels {
		(*c)()
	}
}

func (s *Server) addStatement(st *statement) (handle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.stmts) >= maxStatements {
		return handle{}, nferr.Resourcef("too many statements awaiting DoGet (%d): fetch or cancel them", len(s.stmts))
	}
	h := newHandle(kindStatement)
	s.stmts[h] = st
	return h, nil
}

func (s *Server) statementOf(ctx context.Context, b []byte) (*statement, error) {
	h, err := parseHandle(b, kindStatement)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.stmts[h]
	s.mu.Unlock()
	if st == nil || st.owner != userOf(ctx) || time.Now().After(st.expires) {
		return nil, nferr.Queryf("unknown or expired ticket: run the statement again (a ticket is valid for %v)", s.opts.StatementTTL)
	}
	return st, nil
}

// oneStatement checks that a query's text holds one statement.
func oneStatement(text string) error {
	stmts, err := engine.SplitScript(text)
	if err != nil {
		return err
	}
	switch len(stmts) {
	case 0:
		return nferr.Queryf("no statement to run")
	case 1:
		return nil
	}
	return nferr.Queryf("a Flight SQL query runs one statement, and this text holds %d: send them one at a time (an update, ExecuteUpdate, may be a script)", len(stmts))
}

// statementInfo plans text (one statement) and returns the FlightInfo of
// its result; a statement without rows runs now.
func (h *handler) statementInfo(ctx context.Context, text string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if err := oneStatement(text); err != nil {
		return nil, err
	}
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	names, types, rows, err := sess.Describe(text)
	if err != nil {
		return nil, err
	}
	st := &statement{owner: userOf(ctx), expires: time.Now().Add(h.s.opts.StatementTTL)}
	records := int64(-1)
	if rows {
		st.sql, st.schema = text, wireSchema(names, types)
	} else {
		if _, err := h.s.runUpdate(ctx, sess, text); err != nil {
			return nil, err
		}
		st.empty, st.schema, records = true, arrow.NewSchema(nil, nil), 0
	}
	hd, err := h.s.addStatement(st)
	if err != nil {
		return nil, err
	}
	ticket, err := flightsql.CreateStatementQueryTicket(hd[:])
	if err != nil {
		return nil, nferr.Internalf("ticket: %v", err)
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(st.schema, h.s.opts.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		TotalRecords:     records,
		TotalBytes:       -1,
		Ordered:          true,
	}, nil
}

// runUpdate runs a script for its effect and returns the rows its
// statements wrote (INSERT, UPDATE, DELETE, COPY, CREATE TABLE AS).
func (s *Server) runUpdate(ctx context.Context, sess engine.Conn, text string) (int64, error) {
	s.running.Add(1)
	defer s.running.Add(-1)
	sc, err := sess.Execute(ctx, text)
	if err != nil {
		return 0, err
	}
	defer sc.Close()
	var n int64
	for {
		r, err := sc.Next()
		if err != nil {
			return 0, err
		}
		if r == nil {
			return n, nil
		}
		if r.Schema == nil {
			n += r.RowsAffected
			continue
		}
		for {
			rec, err := r.Next()
			if err != nil {
				return 0, err
			}
			if rec == nil {
				break
			}
		}
	}
}

func emptyStream() <-chan flight.StreamChunk {
	ch := make(chan flight.StreamChunk)
	close(ch)
	return ch
}

// stream runs st on the session of the fetching connection and streams
// its batches. The run stops when the client goes away (the call's
// context) or cancels the FlightInfo.
func (s *Server) stream(ctx context.Context, st *statement) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if st.empty {
		return st.schema, emptyStream(), nil
	}
	sess, release, err := s.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	qctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if st.canceled {
		s.mu.Unlock()
		cancel()
		release()
		return nil, nil, nferr.With(nferr.KindCanceled, errors.New("the statement was canceled"))
	}
	st.runs++
	if st.cancels == nil {
		st.cancels = map[*context.CancelFunc]struct{}{}
	}
	st.cancels[&cancel] = struct{}{}
	s.mu.Unlock()
	s.running.Add(1)
	done := func() {
		s.mu.Lock()
		st.runs--
		delete(st.cancels, &cancel)
		s.mu.Unlock()
		cancel()
		s.running.Add(-1)
		release()
	}
	r, err := engine.QueryConn(qctx, sess, st.sql)
	if err != nil {
		done()
		return nil, nil, err
	}
	if r.Schema == nil {
		r.Close()
		done()
		return arrow.NewSchema(nil, nil), emptyStream(), nil
	}
	sch := schemaOf(r.Schema)
	ch := make(chan flight.StreamChunk)
	s.streams.Add(1)
	go func() {
		defer s.streams.Done()
		defer close(ch)
		defer done()
		defer r.Close()
		fail := func(err error) {
			select {
			case ch <- flight.StreamChunk{Err: toStatus(err)}:
			case <-ctx.Done():
			}
		}
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("Flight SQL stream panicked", "sql", st.sql, "panic", p)
				fail(nferr.Internalf("internal error streaming the result: %v", p))
			}
		}()
		for {
			rec, err := r.Next()
			if err == nil && rec == nil && qctx.Err() != nil {
				err = nferr.With(nferr.KindCanceled, qctx.Err())
			}
			if err != nil {
				fail(err)
				return
			}
			if rec == nil {
				return
			}
			out := wireRecord(s.opts.Alloc, sch, rec)
			select {
			case ch <- flight.StreamChunk{Data: out}:
			case <-ctx.Done():
				out.Release()
				return
			}
		}
	}()
	return sch, ch, nil
}

func (h *handler) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, nferr.Queryf("transactions are not supported")
	}
	return h.statementInfo(ctx, cmd.GetQuery(), desc)
}

func (h *handler) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if err := oneStatement(cmd.GetQuery()); err != nil {
		return nil, err
	}
	sch, _, err := h.describe(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sch, h.s.opts.Alloc)}, nil
}

// describe plans text and returns its result's schema (empty without
// rows).
func (h *handler) describe(ctx context.Context, text string) (*arrow.Schema, bool, error) {
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	names, types, rows, err := sess.Describe(text)
	if err != nil {
		return nil, false, err
	}
	return wireSchema(names, types), rows, nil
}

func (h *handler) DoGetStatement(ctx context.Context, ticket flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	st, err := h.s.statementOf(ctx, ticket.GetStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	return h.s.stream(ctx, st)
}

func (h *handler) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return 0, nferr.Queryf("transactions are not supported")
	}
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	return h.s.runUpdate(ctx, sess, cmd.GetQuery())
}

// CancelFlightInfo cancels the statements of a FlightInfo's tickets:
// a running DoGet stops with a Canceled error, a later one fails.
func (h *handler) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	info := req.GetInfo()
	if info == nil || len(info.GetEndpoint()) == 0 {
		return flight.CancelFlightInfoResult{}, nferr.Queryf("CancelFlightInfo needs the FlightInfo to cancel")
	}
	res := flight.CancelStatusNotCancellable
	for _, ep := range info.GetEndpoint() {
		if ep.GetTicket() == nil {
			continue
		}
		tk, err := flightsql.GetStatementQueryTicket(ep.GetTicket())
		if err != nil {
			continue // a metadata command: it runs to completion at once
		}
		st, err := h.s.statementOf(ctx, tk.GetStatementHandle())
		if err != nil {
			return flight.CancelFlightInfoResult{}, err
		}
		h.s.mu.Lock()
		if !st.empty {
			st.cancelRun()
			res = flight.CancelStatusCancelled
		}
		h.s.mu.Unlock()
	}
	return flight.CancelFlightInfoResult{Status: res}, nil
}

// ---------------------------------------------------------------- prepared statements

// A prepared statement is its SQL text with parameters $1, $2, ...; a
// client binds their values (DoPut of a batch: column i is $i+1) and
// executes it. Values are substituted as literals cast to their Arrow
// type's SQL type (sql.BindParams: quoted, never SQL text of their own);
// strings stay untyped literals that their context types. The statement
// is planned at creation (its errors and its result schema come then) and
// again, with the values, at each execution.
type prepared struct {
	owner   string
	sql     string
	nparams int
	rows    bool
	schema  *arrow.Schema

	// guarded by Server.mu
	params [][]sql.ParamValue
	used   time.Time
}

func (s *Server) preparedOf(ctx context.Context, b []byte) (*prepared, error) {
	h, err := parseHandle(b, kindPrepared)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.prepared[h]
	if p == nil || p.owner != userOf(ctx) {
		return nil, nferr.Queryf("unknown prepared statement: it was closed, or unused for %v", s.opts.PreparedTTL)
	}
	p.used = time.Now()
	return p, nil
}

func (h *handler) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	if len(req.GetTransactionId()) > 0 {
		return res, nferr.Queryf("transactions are not supported")
	}
	text := req.GetQuery()
	if err := oneStatement(text); err != nil {
		return res, err
	}
	n, err := sql.ParamCount(text)
	if err != nil {
		return res, err
	}
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return res, err
	}
	// NB: the parameters' types come from their context (id = $1 is id's
	// type), the result's columns from planning with NULLs for them.
	d, err := sess.DescribeStatement(text, nil)
	release()
	if err != nil {
		return res, err
	}
	sch, rows := wireSchema(d.Names, d.Types), d.Rows
	p := &prepared{owner: userOf(ctx), sql: text, nparams: n, rows: rows, schema: sch, used: time.Now()}
	h.s.mu.Lock()
	if len(h.s.prepared) >= maxPrepared {
		h.s.mu.Unlock()
		return res, nferr.Resourcef("too many prepared statements open (%d): close some", maxPrepared)
	}
	hd := newHandle(kindPrepared)
	h.s.prepared[hd] = p
	h.s.mu.Unlock()
	update := !rows
	res.Handle, res.IsUpdate = hd[:], &update
	if rows {
		res.DatasetSchema = sch
	}
	if n > 0 {
		res.ParameterSchema = paramSchema(d.Params)
	}
	return res, nil
}

func (h *handler) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	hd, err := parseHandle(req.GetPreparedStatementHandle(), kindPrepared)
	if err != nil {
		return err
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	// NB: closing one already gone (expired, or the server restarted) is
	// not an error: the client's cleanup succeeds.
	if p := h.s.prepared[hd]; p != nil && p.owner == userOf(ctx) {
		delete(h.s.prepared, hd)
	}
	return nil
}

// readParams reads the parameter rows of a DoPut.
func readParams(rdr flight.MessageReader, nparams int) ([][]sql.ParamValue, error) {
	var rows [][]sql.ParamValue
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if int(rec.NumCols()) > nparams {
			return nil, nferr.Queryf("the statement takes %d parameters, and %d were bound", nparams, rec.NumCols())
		}
		if len(rows)+int(rec.NumRows()) > maxParamRows {
			return nil, nferr.Queryf("too many rows of parameters (more than %d in one call)", maxParamRows)
		}
		r, err := paramRows(rec)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, nferr.Dataf("reading the parameters: %v", err)
	}
	return rows, nil
}

func (h *handler) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, err := h.s.preparedOf(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	rows, err := readParams(rdr, p.nparams)
	if err != nil {
		return nil, err
	}
	h.s.mu.Lock()
	p.params = rows
	h.s.mu.Unlock()
	return cmd.GetPreparedStatementHandle(), nil
}

// bound is p's text with each row of values substituted.
func (p *prepared) bound(rows [][]sql.ParamValue) ([]string, error) {
	if p.nparams == 0 {
		return []string{p.sql}, nil
	}
	if len(rows) == 0 {
		return nil, nferr.Queryf("the statement takes %d parameters: bind their values first", p.nparams)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		t, err := sql.BindParams(p.sql, r)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (h *handler) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, err := h.s.preparedOf(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	h.s.mu.Lock()
	params := p.params
	h.s.mu.Unlock()
	texts, err := p.bound(params)
	if err != nil {
		return nil, err
	}
	if len(texts) > 1 {
		if p.rows {
			return nil, nferr.Queryf("a query runs with one row of parameters, and %d were bound", len(texts))
		}
		// NB: a statement without rows runs once per row of values.
		for _, t := range texts[:len(texts)-1] {
			if _, err := h.runOne(ctx, t); err != nil {
				return nil, err
			}
		}
	}
	return h.statementInfo(ctx, texts[len(texts)-1], desc)
}

func (h *handler) runOne(ctx context.Context, text string) (int64, error) {
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	return h.s.runUpdate(ctx, sess, text)
}

func (h *handler) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := h.s.preparedOf(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.schema, h.s.opts.Alloc)}, nil
}

// DoGetPreparedStatement serves clients that fetch a prepared statement's
// command itself rather than the ticket of its FlightInfo.
func (h *handler) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	p, err := h.s.preparedOf(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	h.s.mu.Lock()
	params := p.params
	h.s.mu.Unlock()
	texts, err := p.bound(params)
	if err != nil {
		return nil, nil, err
	}
	if len(texts) != 1 || !p.rows {
		return nil, nil, nferr.Queryf("fetch the ticket of the statement's FlightInfo (GetFlightInfo) to run it")
	}
	return h.s.stream(ctx, &statement{owner: userOf(ctx), sql: texts[0], expires: time.Now().Add(h.s.opts.StatementTTL)})
}

func (h *handler) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, err := h.s.preparedOf(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	rows, err := readParams(rdr, p.nparams)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		h.s.mu.Lock()
		rows = p.params
		h.s.mu.Unlock()
	}
	texts, err := p.bound(rows)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range texts {
		k, err := h.runOne(ctx, t)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// ---------------------------------------------------------------- metadata

// metaInfo is the FlightInfo of a metadata command: its ticket is the
// command itself, answered at DoGet.
func (h *handler) metaInfo(desc *flight.FlightDescriptor, sch *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sch, h.s.opts.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// one streams a single batch built by fill.
func (h *handler) one(sch *arrow.Schema, fill func(b *array.RecordBuilder) error) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(h.s.opts.Alloc, sch)
	defer b.Release()
	if err := fill(b); err != nil {
		return nil, nil, err
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return sch, ch, nil
}

func (h *handler) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return h.metaInfo(desc, schema_ref.Catalogs), nil
}

func (h *handler) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return h.one(schema_ref.Catalogs, func(b *array.RecordBuilder) error {
		b.Field(0).(*array.StringBuilder).Append(catalogName)
		return nil
	})
}

// tableEntry is a table or view as information_schema.tables lists it.
type tableEntry struct{ schema, name, kind string }

// tables lists the database's tables and views through SQL on the
// session (information_schema.tables), so a coordinator's session answers
// with its own catalog.
func (h *handler) tables(ctx context.Context, sess engine.Conn) ([]tableEntry, error) {
	r, err := engine.QueryConn(ctx, sess, "select table_schema, table_name, table_type from information_schema.tables")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []tableEntry
	for {
		rec, err := r.Next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		text, err := engine.RowsText(rec, "")
		if err != nil {
			return nil, err
		}
		for _, row := range text {
			kind := row[2]
			if kind == "BASE TABLE" {
				kind = "TABLE"
			}
			out = append(out, tableEntry{row[0], row[1], kind})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].schema != out[j].schema {
			return out[i].schema < out[j].schema
		}
		return out[i].name < out[j].name
	})
	return out, nil
}

// catalogMatches: a command's catalog filter, nil or "" for any.
func catalogMatches(c *string) bool { return c == nil || *c == "" || *c == catalogName }

func patternMatches(p *string, s string) bool { return p == nil || likeMatch(*p, s) }

func (h *handler) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return h.metaInfo(desc, schema_ref.DBSchemas), nil
}

func (h *handler) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	ts, err := h.tables(ctx, sess)
	if err != nil {
		return nil, nil, err
	}
	set := map[string]bool{"public": true}
	for _, t := range ts {
		set[t.schema] = true
	}
	var names []string
	for n := range set {
		if catalogMatches(cmd.GetCatalog()) && patternMatches(cmd.GetDBSchemaFilterPattern(), n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return h.one(schema_ref.DBSchemas, func(b *array.RecordBuilder) error {
		for _, n := range names {
			b.Field(0).(*array.StringBuilder).Append(catalogName)
			b.Field(1).(*array.StringBuilder).Append(n)
		}
		return nil
	})
}

func (h *handler) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return h.metaInfo(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return h.metaInfo(desc, schema_ref.Tables), nil
}

func (h *handler) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	sess, release, err := h.s.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	ts, err := h.tables(ctx, sess)
	if err != nil {
		return nil, nil, err
	}
	types := map[string]bool{}
	for _, t := range cmd.GetTableTypes() {
		types[strings.ToUpper(t)] = true
	}
	var keep []tableEntry
	for _, t := range ts {
		if catalogMatches(cmd.GetCatalog()) && patternMatches(cmd.GetDBSchemaFilterPattern(), t.schema) &&
			patternMatches(cmd.GetTableNameFilterPattern(), t.name) && (len(types) == 0 || types[t.kind]) {
			keep = append(keep, t)
		}
	}
	sch := schema_ref.Tables
	var schemas [][]byte
	if cmd.GetIncludeSchema() {
		sch = schema_ref.TablesWithIncludedSchema
		for _, t := range keep {
			names, types, _, err := sess.Describe("select * from " + sql.QuoteIdent(t.schema) + "." + sql.QuoteIdent(t.name))
			if err != nil {
				return nil, nil, nferr.Wrap(nferr.KindInternal, err, "columns of %s.%s", t.schema, t.name)
			}
			schemas = append(schemas, flight.SerializeSchema(wireSchema(names, types), h.s.opts.Alloc))
		}
	}
	return h.one(sch, func(b *array.RecordBuilder) error {
		for i, t := range keep {
			b.Field(0).(*array.StringBuilder).Append(catalogName)
			b.Field(1).(*array.StringBuilder).Append(t.schema)
			b.Field(2).(*array.StringBuilder).Append(t.name)
			b.Field(3).(*array.StringBuilder).Append(t.kind)
			if schemas != nil {
				b.Field(4).(*array.BinaryBuilder).Append(schemas[i])
			}
		}
		return nil
	})
}

// tableTypes are the kinds GetTables reports.
var tableTypes = []string{"EXTERNAL TABLE", "TABLE", "VIEW"}

func (h *handler) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return h.metaInfo(desc, schema_ref.TableTypes), nil
}

func (h *handler) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return h.one(schema_ref.TableTypes, func(b *array.RecordBuilder) error {
		for _, t := range tableTypes {
			b.Field(0).(*array.StringBuilder).Append(t)
		}
		return nil
	})
}
