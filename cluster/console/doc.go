// Package console is nicflow's web console: a page a person opens in a
// browser to see the cluster members (role, cores, memory, NIC bandwidth,
// load), the running and recent queries with their per-stage progress,
// rows, bytes shuffled and time (updated every second), a query's EXPLAIN
// ANALYZE plan as an expandable tree, and a SQL box that runs a script and
// shows its progress and result table. See docs/console.md.
//
// # Pieces
//
//	server.go    Options, Console (the http.Handler: pages, JSON API under
//	             /api/, static files), Listen/Server (nicflow serve
//	             --http-listen), modes and their checks, console runs
//	auth.go      login against the users file of `nicflow user add`
//	             (SCRAM-SHA-256 verifiers), sessions, CSRF tokens
//	backend.go   Backend: Local (nicflow serve: this process's sessions)
//	             and Cluster (a coordinator: members, Coordinator.Queries)
//	registry.go  Registry: running and recent statements of engine
//	             sessions, fed by engine.Options.Observer
//	sink.go      a run's result: the first rows as text
//	plan.go      ParsePlan: EXPLAIN text -> trees
//	assets/      HTML templates, console.js, console.css (embedded)
//
// # The registry hook
//
// A server reports its sessions' statements to a Registry by opening
// them with the registry's observer in its session factory:
//
//	o := opts
//	o.Observer = reg.Observer("pgwire", user)
//	return engine.Open(dir, o)
//
// Every statement of such a session appears in the running list while it
// runs (rows so far, the physical plan with live per-operator counters,
// cancel) and in the recent list after. nicflow serve does this for its
// PostgreSQL sessions; a Flight SQL server does the same with source
// "flightsql".
//
// # Invariants
//
//   - INVARIANT: nothing from a query or a user becomes markup. Pages are
//     html/template; console.js builds the DOM with textContent only; the
//     Content-Security-Policy allows the console's own script and style
//     files and nothing inline.
//   - INVARIANT: SQL runs only for whom may run it. With a users file
//     every page and API call needs a login (a session cookie: HttpOnly,
//     SameSite=Strict, Secure over TLS); without one the console is
//     trusted only when reached on loopback (Options.Loopback; requests
//     for other host names are refused, against DNS rebinding) and is
//     read-only otherwise. Every POST carries the session's CSRF token
//     (X-CSRF-Token header or csrf form field) and no foreign Origin; the
//     login form carries a token of its own cookie.
//   - INVARIANT: bounded. Scripts are at most 1 MiB, results keep their
//     first MaxResultRows rows, 64 console runs and 100 recent statements
//     are kept, sessions are capped; a password check runs one at a time.
//
// Dependencies: console imports cluster and engine (and reads the users
// file format of cluster/pgwire without importing it); only cmd imports
// console.
package console
