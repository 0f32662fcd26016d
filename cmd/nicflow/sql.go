package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/gctune"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

type sqlFlags struct {
	dir         string
	cluster     string
	keys        string
	format      string
	memoryLimit string
	spill       spillFlags
	parallel    int
	batchSize   int
	file        string
	command     []string
	create      bool
	cpuprofile  string
	timer       bool
}

var sqlF sqlFlags

var sqlCmd = &cobra.Command{
	Use:   `sql [--dir DIR | --cluster ADDR --keys KEYDIR] [-f FILE | "SQL"]`,
	Short: "Run SQL on a database directory (a script, or an interactive prompt)",
	Long: `Run SQL statements on the database in DIR, embedded in this process: queries
run in parallel on this machine's cores within a memory budget. Without
--dir (and --cluster) the database is a transient one in a temporary
directory, deleted at exit: for queries over files ('x.parquet',
read_csv(...)) and quick computations. With
--cluster ADDR (and --keys KEYDIR, the cluster's key directory) the
statements run on a nicflow cluster instead: the coordinator at ADDR plans
each query into stages over its catalog, its workers run them, and the rows
stream back here; output, errors and exit codes are the same as embedded,
and a terminal shows each stage's progress on stderr (docs/cluster.md).
On a cluster, queries and EXPLAIN [ANALYZE] run on the workers; statements
that change the database (CREATE, DROP, INSERT, UPDATE, DELETE, COPY) run
on the coordinator, on its catalog; SET other than query_retries is
refused.

Where the SQL comes from:
  "SQL"        the argument: one or more statements separated by ';' (put
               -- before SQL that starts with a dash, such as a comment)
  -c "SQL"     the same, whatever it starts with (--timer prints each
               statement's time on stderr)
  -f FILE      a script file
  stdin        when it is not a terminal (a pipe or a file)
  prompt       otherwise: an interactive "nicflow> " prompt; a statement may
               span lines and runs at ';'; \q (or Ctrl-D) quits; errors are
               printed and the prompt continues; Ctrl-C drops the line being
               typed, or cancels the running query (not the shell). Lines
               are edited (arrows, Home/End, Ctrl-A/E/K/U/W) and Up/Down walk
               the history, kept in ~/.nicflow_history (NICFLOW_HISTORY=""
               keeps none). \d lists the tables, \d NAME describes one, \i
               FILE runs a script, \o FILE sends results to a file, \timing
               toggles each statement's time, \? lists these

Every row-returning statement prints its rows (--format):
  table     aligned columns with a header and a row count; NULL shown as NULL
  csv       RFC 4180 with a header line; NULL is the empty field
  tsv       tab-separated with a header line; \t \n \\ escaped; NULL is \N
  markdown  a Markdown table; NULL shown as NULL
  json      JSON Lines: one object per row; NULL is null
Values print in one canonical form: decimals with their scale (12.30), dates
as YYYY-MM-DD, timestamps as YYYY-MM-DD HH:MM:SS[.ffffff], doubles as
PostgreSQL prints them. Statements without rows
print their status (CREATE TABLE, INSERT 0 5, ...) on stdout in table format,
on stderr in csv and json so that stdout holds only data.

Statements (docs/sql.md): SELECT (joins, subqueries of any shape, WITH
[RECURSIVE], window functions, set operations, GROUPING SETS), VALUES,
CREATE/DROP TABLE (PRIMARY KEY, UNIQUE, NOT NULL, DEFAULT, CHECK), CREATE
TABLE AS, INSERT INTO ... SELECT/VALUES [ON CONFLICT DO NOTHING],
UPDATE [... FROM], DELETE [... USING] (each with RETURNING), COPY t FROM
'file' [WITH (FORMAT csv|tbl|parquet, HEADER, DELIMITER 'c', NULL
'text')], CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 'dir',
CREATE/DROP VIEW and INDEX (stored in the database), EXPLAIN [ANALYZE]
[VERBOSE], SHOW TABLES, DESCRIBE t; information_schema and pg_catalog
describe the database.

Settings (SET name = value; SHOW name): memory_limit (what does not fit
spills to spill_dir), parallelism, batch_size, spill_dir (a directory, or
off), spill_limit (bytes on disk per query), query_retries (on a cluster),
disabled_rules (optimizer rules to skip, e.g. 'pushdown,topn': for a
planner bug; EXPLAIN VERBOSE lists the rules and what each did), adaptive
(on a cluster: on, the default, runs the build sides whose size decides
the plan first and plans the rest from their real sizes; off keeps the
plan from estimates), adaptive_skew_rows (the rows a re-planned join's
task must receive before a skewed one is split; default 100000, -1:
never), adaptive_coalesce_rows (a re-planned repartitioned stage whose
inputs proved small runs as fewer tasks of at most this many rows each;
default 100000, -1: never), timezone
(SET TIME ZONE 'America/New_York': TIMESTAMPTZ values read and print in
it; default UTC; RESET timezone or SET TIME ZONE LOCAL goes back).

A script stops at the first error, which is printed on stderr; the exit
status tells a bad query (2) from bad data (3), exhausted memory (4) and
cancellation (130). DIR must hold a database (nicflow tpch gen, nicflow
load) unless --create is given.`,
	Example: `  nicflow sql --dir data "select count(*) from lineitem"
  nicflow sql --dir data --format csv -f report.sql > report.csv
  echo "select n_name from nation order by 1" | nicflow sql --dir data --format json
  nicflow sql --dir data "explain analyze select l_returnflag, count(*) from lineitem group by 1"
  nicflow sql --dir scratch --create "create table t (a integer, b varchar); insert into t values (1, 'x'); select * from t"
  nicflow sql --dir data          # interactive prompt
  nicflow sql --cluster 10.0.0.1:7400 --keys /etc/nicflow/keys -f report.sql
  nicflow sql --cluster $(cat sf1/cluster/coordinator.addr) --keys sf1/cluster/keys "explain analyze select count(*) from lineitem"`,
	Args: cobra.ArbitraryArgs,
	RunE: func(cmd *cobra.Command, args []string) error {
		return runSQL(cmd.Context(), sqlF, args, os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr())
	},
}

func init() {
	f := sqlCmd.Flags()
	f.StringVar(&sqlF.dir, "dir", "", "database directory (embedded)")
	f.StringVar(&sqlF.cluster, "cluster", "", "coordinator client address host:port: run on a cluster instead of --dir")
	f.StringVar(&sqlF.keys, "keys", "", "cluster key directory (with --cluster)")
	f.StringVar(&sqlF.format, "format", formatTable, "output format: table, csv, tsv, markdown or json")
	f.StringVar(&sqlF.memoryLimit, "memory-limit", "", "memory budget per query, e.g. 2GiB (default: 60% of memory, or NICFLOW_MEMORY_LIMIT)")
	f.IntVar(&sqlF.parallel, "parallel", 0, "pipelines per query (default: number of CPUs)")
	f.IntVar(&sqlF.batchSize, "batch-size", 0, fmt.Sprintf("rows per batch (default %d)", exec.DefaultBatchSize))
	addSpillFlags(f, &sqlF.spill)
	f.StringVarP(&sqlF.file, "file", "f", "", "read the SQL script from FILE")
	f.StringArrayVarP(&sqlF.command, "command", "c", nil, "run this SQL (one or more statements; it may start with a comment or a dash); repeatable: the commands run in order, as one script")
	f.BoolVar(&sqlF.create, "create", false, "create the database in DIR if it holds none")
	f.StringVar(&sqlF.cpuprofile, "cpuprofile", "", "write a CPU profile (pprof) to this file")
	f.BoolVar(&sqlF.timer, "timer", false, "print each statement's time on stderr (\\timing at the prompt)")
	f.MarkHidden("cpuprofile")
	rootCmd.AddCommand(sqlCmd)
}

// spillFlags are the spilling flags of the embedded commands.
type spillFlags struct {
	dir, limit string
}

func addSpillFlags(f *pflag.FlagSet, sf *spillFlags) {
	f.StringVar(&sf.dir, "spill-dir", "", "where queries write what does not fit in --memory-limit (default: DIR/tmp, or the OS temporary directory for a read-only database; off: fail instead)")
	f.StringVar(&sf.limit, "spill-limit", "", "most bytes one query may keep on disk when spilling, e.g. 20GiB (default: no cap)")
}

// apply sets the spill options of o.
func (sf *spillFlags) apply(o *engine.Options) error {
	o.SpillDir = sf.dir
	if sf.limit != "" {
		n, err := exec.ParseBytes(sf.limit)
		if err != nil || n <= 0 {
			return usagef("--spill-limit %q: want a size such as 20GiB", sf.limit)
		}
		o.SpillLimit = n
	}
	if sf.dir != "" && sf.dir != "off" {
		if st, err := os.Stat(sf.dir); err != nil || !st.IsDir() {
			return usagef("--spill-dir %q is not a directory", sf.dir)
		}
	}
	return nil
}

// sessionOptions turns the shared flags into session options.
func sessionOptions(memoryLimit string, parallel, batchSize int) (engine.Options, error) {
	var o engine.Options
	if memoryLimit != "" {
		n, err := exec.ParseBytes(memoryLimit)
		if err != nil || n <= 0 {
			return o, usagef("--memory-limit %q: want a size such as 512MiB or 2GiB", memoryLimit)
		}
		o.MemoryLimit = n
	}
	if parallel < 0 {
		return o, usagef("--parallel must be positive")
	}
	if batchSize < 0 {
		return o, usagef("--batch-size must be positive")
	}
	o.Parallelism, o.BatchSize = parallel, batchSize
	if err := o.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

// gcPercent is the GOGC the query commands run with unless the
// environment sets one. A query allocates Arrow buffers at a high rate and
// keeps little: with Go's default (100) the collector ran so often that it
// took a fifth of the CPU of the TPC-H run at SF 1 (11.9 s CPU -> 9.3 s at
// 400; peak RSS 470 MB -> 1.1 GB). docs/decisions.md has the figures.
const gcPercent = 400

// gcMinPercent and gcHeadroom: as the live heap grows, GOGC falls so that
// the heap grows by about gcHeadroom between collections, down to
// gcMinPercent (internal/gctune; docs/decisions.md D34).
const (
	gcMinPercent = 20
	gcHeadroom   = 128 << 20
)

// tuneGC sets the collector for query commands: GOGC 400 while the heap
// is small, lower as it grows (gcHeadroom), and a soft
// limit so that the heap is collected harder as it nears what the budget
// implies (unless GOGC or GOMEMLIMIT are set): the budget plus a quarter
// plus 64 MiB, but no more than 90% of the memory available to the
// process (1.5x the default budget, which is 60% of it) unless the budget
// itself is more. NB: not the budget itself: the budget counts operator
// state, while the heap also holds batches in flight, readers and the
// runtime; with a 32 MiB budget and a soft limit at 32 MiB the collector
// ran without pause on half the CPU (a spilling count(DISTINCT) over SF 1
// lineitem: 7.7 s, against 2.1 s at 128 MiB). At twice the budget, TPC-H
// SF 10 under 1 GiB peaked at 2.0 GiB RSS; at 1.25x + 64 MiB, 1.35 GiB in
// the same time (docs/decisions.md D19).
func tuneGC(budget int64) {
	if os.Getenv("GOGC") == "" {
		gctune.Start(gctune.Options{Max: gcPercent, Min: gcMinPercent, Headroom: gcHeadroom})
	}
	if os.Getenv("GOMEMLIMIT") == "" && budget > 0 {
		debug.SetMemoryLimit(min(budget+budget/4+64<<20, max(budget, exec.DefaultMemoryLimit()/2*3)))
	}
}

// openSession opens DIR; without create it must already hold a database.
func openSession(dir string, create bool, opts engine.Options) (*engine.Session, error) {
	if err := checkDatabase(dir, create, opts); err != nil {
		return nil, err
	}
	return engine.Open(dir, opts)
}

// checkDatabase checks, before DIR is opened, that it holds a database
// (unless create), and tunes the GC to the memory budget.
func checkDatabase(dir string, create bool, opts engine.Options) error {
	if dir == "" {
		return usagef("--dir is required")
	}
	if !create {
		if err := storage.IsDatabase(dir); err != nil {
			if nferr.Is(err, nferr.KindQuery) {
				return nferr.Wrap(nferr.KindQuery, err, "open (or pass --create)")
			}
			return err
		}
	}
	tuneGC(opts.MemoryLimit)
	return nil
}

// startCPUProfile starts a CPU profile when path is set; the returned
// function stops it.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nferr.IOf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, nferr.IOf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func runSQL(ctx context.Context, fl sqlFlags, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	if err := checkFormat(fl.format, formatTable, formatCSV, formatJSON, formatTSV, formatMarkdown); err != nil {
		return err
	}
	sources := 0
	for _, given := range []bool{fl.file != "", len(fl.command) > 0, len(args) > 0} {
		if given {
			sources++
		}
	}
	if sources > 1 {
		return usagef("give the SQL one way: as an argument, with -c or with -f")
	}
	if fl.cluster != "" {
		if err := checkClusterSQLFlags(fl); err != nil {
			return err
		}
	} else if fl.keys != "" {
		return usagef("--keys goes with --cluster ADDR")
	}
	opts, err := sessionOptions(fl.memoryLimit, fl.parallel, fl.batchSize)
	if err == nil {
		err = fl.spill.apply(&opts)
	}
	if err != nil {
		return err
	}
	var script string
	interactive := false
	switch {
	case fl.file != "":
		b, err := os.ReadFile(fl.file)
		if err != nil {
			return nferr.IOf("reading %s: %w", fl.file, err)
		}
		script = string(b)
	case len(fl.command) > 0:
		// One script: a newline ends a trailing comment, and the
		// semicolon a statement that has none.
		script = strings.Join(fl.command, "\n;\n")
	case len(args) > 0:
		script = strings.Join(args, " ")
	case stdin != nil && !term.IsTerminal(int(stdin.Fd())):
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nferr.IOf("reading stdin: %w", err)
		}
		script = string(b)
	default:
		interactive = true
	}
	stop, err := startCPUProfile(fl.cpuprofile)
	if err != nil {
		return err
	}
	defer stop()
	if fl.cluster != "" {
		cs, err := dialClusterSQL(fl.cluster, fl.keys, stderr)
		if err != nil {
			return err
		}
		defer cs.Close()
		if interactive {
			return runPrompt("the cluster at "+fl.cluster, func(ctx context.Context, text string, out io.Writer) error {
				return cs.runScript(ctx, text, fl.format, out, stderr)
			}, stdin, stdout, stderr)
		}
		return cs.runScript(ctx, script, fl.format, stdout, stderr)
	}
	dir, create := fl.dir, fl.create
	if dir == "" {
		// A transient database, as DuckDB's in-memory one.
		tmp, err := os.MkdirTemp("", "nicflow-transient-")
		if err != nil {
			return nferr.IOf("creating a transient database: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir, create = tmp, true
	}
	sess, err := openSession(dir, create, opts)
	if err != nil {
		return err
	}
	defer sess.Close()
	if interactive {
		promptTiming = fl.timer
		where := sess.DB().Dir()
		if fl.dir == "" {
			where = "a transient database (deleted at exit; --dir DIR keeps tables)"
		}
		return runPrompt(where, func(ctx context.Context, text string, out io.Writer) error {
			return runScript(ctx, sess, text, fl.format, out, stderr)
		}, stdin, stdout, stderr)
	}
	// COPY ... TO STDOUT writes to standard output; COPY ... FROM STDIN
	// reads standard input when the script came from elsewhere.
	ctx = engine.WithCopyOut(ctx, stdioCopy{Writer: stdout})
	if stdin != nil && (fl.file != "" || len(fl.command) > 0 || len(args) > 0) {
		ctx = engine.WithCopyIn(ctx, stdioCopy{Reader: stdin})
	}
	if fl.timer {
		return runScriptTimed(ctx, sess, script, fl.format, stdout, stderr, true)
	}
	return runScript(ctx, sess, script, fl.format, stdout, stderr)
}

// stdioCopy serves COPY FROM STDIN and TO STDOUT from the process's
// standard input and output.
type stdioCopy struct {
	io.Reader
	io.Writer
}

func (stdioCopy) Begin(int) error { return nil }

// sessionPrompt is the interactive shell on an embedded session.
func sessionPrompt(sess *engine.Session, format string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runPrompt(sess.DB().Dir(), func(ctx context.Context, text string, out io.Writer) error {
		return runScript(ctx, sess, text, format, out, stderr)
	}, stdin, stdout, stderr)
}

// runScript runs every statement of script, printing results; it stops
// at the first error.
func runScript(ctx context.Context, sess *engine.Session, script, format string, stdout, stderr io.Writer) error {
	return runScriptTimed(ctx, sess, script, format, stdout, stderr, false)
}

// runScriptTimed is runScript that, with timer, prints each statement's
// time (until its last row is written) on stderr.
func runScriptTimed(ctx context.Context, sess *engine.Session, script, format string, stdout, stderr io.Writer, timer bool) error {
	started := time.Now()
	sc, err := sess.Execute(ctx, script)
	if err != nil {
		return err
	}
	defer sc.Close()
	out := scriptPrinter{format: format, stdout: stdout, stderr: stderr}
	for {
		r, err := sc.Next()
		if err != nil {
			return err
		}
		if r == nil {
			return nil
		}
		if r.Schema == nil {
			out.status(r.Status)
		} else {
			out.startResult()
			if _, err := writeResult(stdout, format, r); err != nil {
				return err
			}
		}
		if timer {
			fmt.Fprintf(stderr, "Time: %.3f ms\n", float64(time.Since(started).Microseconds())/1000)
		}
		started = time.Now()
	}
}

// scriptPrinter lays out what the statements of a script return, alike for
// an embedded session (runScript) and a cluster (clusterSQL.runScript).
type scriptPrinter struct {
	format         string
	stdout, stderr io.Writer
	results        int // result sets started
}

// status prints a statement's status line ("CREATE TABLE"): on stdout in
// table format, else on stderr so that stdout holds only data.
func (o *scriptPrinter) status(s string) {
	w := o.stdout
	if o.format != formatTable {
		w = o.stderr
	}
	fmt.Fprintln(w, s)
}

// startResult comes before each result set is written to stdout: a blank
// line separates it from the one before (except in json).
func (o *scriptPrinter) startResult() {
	if o.results > 0 && o.format != formatJSON {
		fmt.Fprintln(o.stdout)
	}
	o.results++
}

// runPrompt is the interactive shell: statements end at ';', errors are
// printed and the prompt goes on, Ctrl-C cancels the running statement.
func runPrompt(where string, run func(ctx context.Context, text string, out io.Writer) error, stdin io.Reader, stdout, stderr io.Writer) error {
	// NB: main's context is canceled by the first SIGINT; the shell
	// catches SIGINT itself and cancels only the statement running.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	defer signal.Stop(terms)

	fmt.Fprintf(stdout, "nicflow SQL on %s: end statements with ';', \\q to quit, \\? for help.\n", where)
	lr := newLineReader(stdin, stdout)
	defer lr.Close()
	// The reader runs in its own goroutine, one line per request, so that
	// a SIGTERM ends the prompt while it waits for input.
	type lineResult struct {
		line string
		err  error
	}
	requests := make(chan string)
	results := make(chan lineResult)
	go func() {
		for p := range requests {
			l, err := lr.ReadLine(p)
			results <- lineResult{l, err}
		}
	}()
	defer close(requests)
	var buf strings.Builder
	st := &promptState{out: stdout, timing: promptTiming}
	defer st.closeOut()
	prompt := func() string {
		if buf.Len() == 0 {
			return "nicflow> "
		}
		return "     ... "
	}
	requests <- prompt()
	for {
		select {
		case <-terms:
			return nferr.With(nferr.KindCanceled, context.Canceled)
		case <-sigs:
			// Ctrl-C at a plain prompt drops the statement being typed (on
			// a terminal it arrives as errInterrupt instead).
			buf.Reset()
			fmt.Fprint(stdout, "\n"+prompt())
			continue
		case res := <-results:
			line, err := res.line, res.err
			if err == errInterrupt {
				buf.Reset()
				requests <- prompt()
				continue
			}
			if err == io.EOF {
				fmt.Fprintln(stdout)
				return nil
			}
			if err != nil {
				return nferr.IOf("reading input: %w", err)
			}
			if buf.Len() == 0 && strings.TrimSpace(line) == `\q` {
				return nil
			}
			meta := false
			if cmd := strings.TrimSpace(line); buf.Len() == 0 && strings.HasPrefix(cmd, `\`) {
				lr.Statement(cmd)
				meta = true
				sqlText, msg := metaCommand(cmd, st)
				if msg != "" {
					fmt.Fprintln(stdout, msg)
				}
				if sqlText == "" {
					requests <- prompt()
					continue
				}
				line = sqlText
			}
			buf.WriteString(line)
			buf.WriteByte('\n')
			if !statementComplete(buf.String()) {
				requests <- prompt()
				continue
			}
			text := buf.String()
			buf.Reset()
			if !meta {
				lr.Statement(text)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			started := time.Now()
			out := st.out
			go func() { done <- run(ctx, text, out) }()
			var err2 error
		wait:
			for {
				select {
				case err2 = <-done:
					break wait
				case <-sigs:
					cancel()
				case <-terms:
					cancel()
					<-done
					return nferr.With(nferr.KindCanceled, context.Canceled)
				}
			}
			cancel()
			if err2 != nil {
				if nferr.Is(err2, nferr.KindCanceled) {
					fmt.Fprintln(stderr, "canceled")
				} else {
					fmt.Fprintf(stderr, "error: %v\n", err2)
				}
			}
			if st.timing {
				fmt.Fprintf(stdout, "Time: %.3f ms\n", float64(time.Since(started).Microseconds())/1000)
			}
			requests <- prompt()
		}
	}
}

// promptTiming starts the prompt with \timing on (--timer).
var promptTiming bool

// promptState is what the prompt's backslash commands change.
type promptState struct {
	timing bool
	out    io.Writer // where results go: stdout, or the file of \o
	file   *os.File  // the file of \o, if any
	stdout io.Writer
}

func (st *promptState) closeOut() {
	if st.file != nil {
		st.file.Close()
		st.file = nil
	}
}

// metaCommand runs a prompt's backslash command: the SQL it stands for
// ("" for none) and what to print.
func metaCommand(cmd string, st *promptState) (sqlText, msg string) {
	if st.stdout == nil {
		st.stdout = st.out
	}
	f := strings.Fields(cmd)
	switch f[0] {
	case `\d`, `\dt`:
		if len(f) == 1 {
			return "SHOW TABLES;", ""
		}
		return "DESCRIBE " + f[1] + ";", ""
	case `\timing`:
		st.timing = !st.timing
		if st.timing {
			return "", "Timing is on."
		}
		return "", "Timing is off."
	case `\i`:
		if len(f) != 2 {
			return "", `\i needs a file name`
		}
		b, err := os.ReadFile(f[1])
		if err != nil {
			return "", fmt.Sprintf("\\i: %v", err)
		}
		text := strings.TrimSpace(string(b))
		if text == "" {
			return "", ""
		}
		if !statementComplete(text + "\n") {
			text += ";"
		}
		return text, ""
	case `\o`:
		st.closeOut()
		st.out = st.stdout
		if len(f) == 1 {
			return "", "Results go to the terminal."
		}
		fh, err := os.Create(f[1])
		if err != nil {
			return "", fmt.Sprintf("\\o: %v", err)
		}
		st.file, st.out = fh, fh
		return "", "Results go to " + f[1] + "."
	case `\?`:
		return "", `\d           list the tables (\dt too)
\d NAME      describe a table or view
\i FILE      run the SQL in FILE
\o [FILE]    send results to FILE (without FILE: back to the terminal)
\timing      print each statement's time (toggle)
\q           quit (Ctrl-D too; Ctrl-C drops the line being typed)
Lines are edited with the arrows, Home/End, Ctrl-A/E/K/U/W; Up and Down
walk the history, kept in ~/.nicflow_history (NICFLOW_HISTORY).`
	}
	return "", fmt.Sprintf("unknown command %s (\\? lists the commands)", f[0])
}

// statementComplete reports whether text ends with a ';' outside quotes
// and comments (so the prompt knows to run it).
func statementComplete(text string) bool {
	inStr, inIdent, lineComment, blockComment := false, false, false, 0
	last := byte(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case lineComment:
			if c == '\n' {
				lineComment = false
			}
			continue
		case blockComment > 0:
			if c == '*' && i+1 < len(text) && text[i+1] == '/' {
				blockComment--
				i++
			}
			continue
		case inStr:
			if c == '\'' {
				inStr = false
			}
			continue
		case inIdent:
			if c == '"' {
				inIdent = false
			}
			continue
		}
		switch {
		case c == '\'':
			inStr = true
		case c == '"':
			inIdent = true
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			lineComment = true
			continue
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			blockComment++
			i++
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			last = c
		}
	}
	return last == ';' && !inStr && !inIdent && blockComment == 0
}
