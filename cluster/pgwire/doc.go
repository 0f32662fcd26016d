// Package pgwire serves nicflow SQL over the PostgreSQL wire protocol
// (version 3), so that psql, pgx, JDBC and other PostgreSQL clients can
// connect to `nicflow serve`. It owns the protocol: startup (an SSL
// request switches to TLS when the server has a certificate, else it and
// GSS encryption requests are declined and clients fall back to plain TCP;
// cancel requests cancel the statement running on the connection they
// name), the simple query protocol (a script per message: every
// statement's rows or command tag, the first error ending it) and the
// extended one (Parse, Bind, Describe, Execute, Close, Sync, Flush, with
// parameters $1...: Describe reports the type each one's context gives it
// where Parse named none, engine.Conn.DescribeStatement; their values, in
// text or binary format, are substituted as quoted literals before the
// statement is bound, sql.BindParams), portals suspended at Execute's row
// limit and resumed by the next Execute, results in text or binary
// format with the type OIDs of every nicflow type, and errors as
// ErrorResponse with a SQLSTATE derived from the error's kind and the
// position of a syntax error.
//
// Invariants:
//   - each connection has its own engine.Conn (Options.Open), made once it
//     has logged in, so settings (SET TIME ZONE, ...) stay with the
//     connection and several connections run concurrently; Open is cheap
//     (`nicflow serve` makes sessions of one engine.SharedDB), so a login
//     costs its socket and well under a millisecond of the server's CPU;
//   - the accept loop only counts and hands off: a connection's startup,
//     and its refusal past the limits, run on its own goroutine, and no
//     lock a statement takes is held across a connection's startup;
//     running out of file descriptors makes Accept wait and retry, not
//     end the server;
//   - limits (limits_test.go): at most Options.MaxConnections sessions (a
//     connection past its startup message); the next startup message is
//     answered FATAL 53300 "sorry, too many clients already", before
//     authentication, as PostgreSQL does past max_connections.
//     Connections before their startup message are bounded apart: past as
//     many again, one is read with SSL declined (libpq shows an error only
//     once SSL is answered) for two seconds and refused at its startup
//     message, past twice as many it is refused as soon as accepted;
//     cancel requests are no sessions. The startup (SSL, TLS handshake,
//     startup message, SCRAM) must end within Options.AuthTimeout
//     (PostgreSQL's authentication_timeout), else the connection is
//     closed; a session idle for Options.IdleTimeout (after ReadyForQuery,
//     outside a transaction block: PostgreSQL's idle_session_timeout) is
//     sent FATAL 57P05 and closed, while one in a block, between Parse and
//     Sync or running a statement (reading COPY data included) is never
//     idle;
//   - a message is answered in order; after an error in the extended
//     protocol, messages are discarded until Sync, as PostgreSQL does;
//   - a portal suspended at a row limit keeps its running result, holding
//     only the batch it stopped in; its Close, Sync (which ends the
//     implicit transaction, and with it every portal, as in PostgreSQL
//     outside a transaction block), a new Bind to its name or the
//     connection's end closes the result and cancels its query;
//   - without a users file the server listens on loopback addresses only
//     and trusts local connections (as PostgreSQL's "trust" for
//     127.0.0.1); with one (Options.UsersFile, users.go) every connection
//     authenticates with SCRAM-SHA-256 before anything else, and an
//     unknown user fails exactly as a wrong password does; with client
//     CAs in Options.TLS, a verified client certificate whose CommonName
//     is the user authenticates it instead, with no password, and one for
//     another user is refused (PostgreSQL's "cert" method).
//
// COPY ... FROM STDIN and TO STDOUT (psql's \copy, a driver's copy) run
// over the protocol's copy-in and copy-out streams in text or csv format
// (copy.go); stray copy messages after a failed copy-in are dropped, as
// PostgreSQL drops them.
//
// Transaction blocks (BEGIN ... COMMIT) are the session's (engine.TxBlock:
// reads only, each write commits on its own and is refused in a block):
// ReadyForQuery carries the block's status, and Sync closes the portals
// only outside a block, so a suspended portal outlives it inside one.
//
// Options.LogStatements logs every statement a client sends (`nicflow
// serve --log-statements`), to learn what a tool's catalog queries are.
//
// Array result columns (Arrow lists) are described with their PostgreSQL
// array type OIDs (_int4 1007, _text 1009, ...; int2vector 22) and sent
// in text form or, when the client asks for binary, in array_send's
// format (types.go: arrayBinary), so drivers decode them as arrays.
//
// Not yet: binary COPY, writes in a transaction block, channel binding.
package pgwire
