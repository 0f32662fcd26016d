// Package pgwire serves nicflow SQL over the PostgreSQL wire protocol
// (version 3), so that psql, pgx, JDBC and other PostgreSQL clients can
// connect to `nicflow serve`. It owns the protocol: startup (an SSL
// request switches to TLS when the server has a certificate, else it and
// GSS encryption requests are declined and clients fall back to plain TCP;
// cancel requests cancel the statement running on the connection they
// name), the simple query protocol (a script per message: every
// statement's rows or command tag, the first error ending it) and the
// extended one (Parse, Bind, Describe, Execute, Close, Sync, Flush, with
// parameters $1...: their values are substituted as quoted literals before
// the statement is bound, sql.BindParams), results in text or binary
// format with the type OIDs of every nicflow type, and errors as
// ErrorResponse with a SQLSTATE derived from the error's kind and the
// position of a syntax error.
//
// Invariants:
//   - each connection has its own engine.Session (Options.Open), so
//     settings (SET TIME ZONE, ...) stay with the connection, and several
//     connections read concurrently (the storage catalog arbitrates
//     writers, as between processes);
//   - a message is answered in order; after an error in the extended
//     protocol, messages are discarded until Sync, as PostgreSQL does;
//   - without a users file the server listens on loopback addresses only
//     and trusts local connections (as PostgreSQL's "trust" for
//     127.0.0.1); with one (Options.UsersFile, users.go) every connection
//     authenticates with SCRAM-SHA-256 before anything else, and an
//     unknown user fails exactly as a wrong password does.
//
// COPY ... FROM STDIN and TO STDOUT (psql's \copy, a driver's copy) run
// over the protocol's copy-in and copy-out streams in text or csv format
// (copy.go); stray copy messages after a failed copy-in are dropped, as
// PostgreSQL drops them.
//
// Not yet: client certificates, the catalog queries psql's \d TABLE
// sends, binary COPY, portal suspension (Execute's row limit), inference of untyped parameters' types (they are
// described as unspecified, 0, and typed by their context when bound).
package pgwire
