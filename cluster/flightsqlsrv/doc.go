// Package flightsqlsrv serves nicflow SQL over Arrow Flight SQL, so that
// ADBC (Python's adbc_driver_flightsql, Go), the Flight SQL JDBC driver and
// arrow-go's client and database/sql driver connect to `nicflow serve` and
// get results as Arrow batches. It implements arrow-go's flightsql.Server
// (flightsql.NewFlightServer does the Flight routing and protobuf
// decoding) on engine sessions, as cluster/pgwire does for the PostgreSQL
// protocol. It owns:
//
//   - statements (CommandStatementQuery): GetFlightInfo plans the statement
//     (a bad query fails there, with the engine's message) and hands out a
//     ticket naming it; DoGet runs it and streams each batch as the engine
//     produces it. A statement without rows runs at GetFlightInfo;
//   - updates (CommandStatementUpdate, a script allowed) with the rows
//     they wrote;
//   - prepared statements with parameters $1, $2, ...: a parameter schema
//     with the types their context gives them (engine.Conn.
//     DescribeStatement; integers as int64), values bound with DoPut as an
//     Arrow batch (column i is $i+1, one execution per row for updates)
//     and substituted as quoted literals cast to their Arrow type's SQL
//     type (sql.BindParams, as pgwire does);
//   - metadata: GetCatalogs (one, "nicflow"), GetDbSchemas, GetTables
//     (with each table's Arrow schema on request), GetTableTypes and
//     GetSqlInfo, from information_schema through the session;
//   - cancellation: CancelFlightInfo cancels the statement of a FlightInfo,
//     and a client that goes away (its call's context) stops its statement;
//   - errors as gRPC statuses that keep the nferr kind (InvalidArgument for
//     a bad query, DataLoss for bad data, Canceled, Unauthenticated, ...)
//     and the engine's message;
//   - authentication: basic authentication (user and password, checked
//     against the SCRAM-SHA-256 verifiers of pgwire's users file) gives a
//     bearer token (auth.go); TLS, and with the TLS configuration's
//     ClientCAs mutual TLS, where a verified client certificate
//     authenticates the user its CommonName names.
//
// Invariants:
//   - each client connection (and user) has its own engine.Conn
//     (Options.Open), closed when the connection ends, so settings (SET
//     TIME ZONE, ...) stay with the connection; Open is the only thing a
//     coordinator serving Flight SQL provides differently;
//   - server state a client refers to later (tickets, prepared statements,
//     tokens) is named by random handles that are validated before use
//     (handles.go, fuzzed), belongs to the user who made it, and expires
//     (Options.StatementTTL, PreparedTTL, TokenTTL), within fixed limits;
//   - without a users file the server listens on loopback addresses only
//     (local clients are trusted, as pgwire's); with one, every call
//     authenticates, and beyond loopback the server requires TLS, since
//     basic authentication sends the password itself;
//   - a panic in a call becomes an Internal error for that call, never the
//     end of the process.
//
// Wire types are the engine's Arrow types except Decimal64, sent as
// Decimal128 (types.go). Not done: transactions (each statement commits
// alone), Substrait plans, primary and foreign keys, bulk ingestion
// (CommandStatementIngest), XDBC type info.
package flightsqlsrv
