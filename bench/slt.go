package bench

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
)

// SLTOptions configures RunSLT, the conformance runner for test files in
// the sqllogictest format (SQLite's corpus: select1.test, random/,
// index/, evidence/; DuckDB's and CockroachDB's files read the same way
// for the records they share).
type SLTOptions struct {
	// Files are .test/.slt files or directories searched for them.
	Files []string
	// Dialect is the name nicflow answers to in skipif/onlyif records
	// (default "postgresql": nicflow reads SQL as PostgreSQL does).
	Dialect string
	// Timeout bounds one statement (default 30s); a statement past it
	// counts as failed.
	Timeout time.Duration
	// Parallelism of each session (default 2).
	Parallelism int
	// ShowFailures prints up to this many failures per file (SQL, what
	// was expected, what nicflow gave).
	ShowFailures int
	// Dir holds the per-file databases (default: a temporary directory,
	// removed afterwards).
	Dir string
}

// Validate checks o and fills in defaults.
func (o *SLTOptions) Validate() error {
	if len(o.Files) == 0 {
		return errors.New("no test files given")
	}
	if o.Dialect == "" {
		o.Dialect = "postgresql"
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 2
	}
	if o.ShowFailures < 0 {
		return errors.New("ShowFailures must not be negative")
	}
	return nil
}

// SLTFileResult counts one file's records.
type SLTFileResult struct {
	File string
	// Queries and Statements that ran; Passed of each.
	Queries, QueriesPassed       int
	Statements, StatementsPassed int
	// Skipped: records for another dialect, or directives this runner
	// does not implement (DuckDB's loop, require, ...).
	Skipped int
	// Failures by the first line of nicflow's error ("wrong result" when
	// it answered differently), for the summary.
	Failures map[string]int
	Elapsed  time.Duration
}

// sltRecord is one record of a file.
type sltRecord struct {
	line  int
	kind  string // statement, query, hash-threshold, halt, skip
	ok    bool   // statement ok (else statement error)
	types string
	sort  string // nosort, rowsort, valuesort
	sql   string
	// expected holds the lines after ----.
	expected []string
	hasDash  bool
	skip     bool // a skipif/onlyif condition excludes this record
	arg      int  // hash-threshold's value
}

// parseSLT reads the records of a sqllogictest file. Conditions are
// resolved for dialect.
func parseSLT(r io.Reader, dialect string) ([]*sltRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var recs []*sltRecord
	var cur *sltRecord
	skip := false
	lineNo := 0
	inResult := false
	flush := func() {
		if cur != nil {
			recs = append(recs, cur)
		}
		cur, skip, inResult = nil, false, false
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		if cur == nil {
			t := strings.TrimSpace(line)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			f := strings.Fields(t)
			switch f[0] {
			case "skipif":
				if len(f) > 1 && strings.EqualFold(f[1], dialect) {
					skip = true
				}
				continue
			case "onlyif":
				if len(f) > 1 && !strings.EqualFold(f[1], dialect) {
					skip = true
				}
				continue
			case "hash-threshold":
				n := 0
				if len(f) > 1 {
					n, _ = strconv.Atoi(f[1])
				}
				recs = append(recs, &sltRecord{line: lineNo, kind: "hash-threshold", arg: n})
				continue
			case "halt":
				if !skip {
					recs = append(recs, &sltRecord{line: lineNo, kind: "halt"})
				}
				skip = false
				continue
			case "statement":
				cur = &sltRecord{line: lineNo, kind: "statement", skip: skip, ok: len(f) > 1 && f[1] == "ok"}
			case "query":
				cur = &sltRecord{line: lineNo, kind: "query", skip: skip, sort: "nosort"}
				if len(f) > 1 {
					cur.types = f[1]
				}
				if len(f) > 2 {
					cur.sort = f[2]
				}
			default:
				// A directive this runner does not implement: the record
				// (up to the blank line) is skipped.
				cur = &sltRecord{line: lineNo, kind: "skip", skip: true}
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if inResult {
			cur.expected = append(cur.expected, line)
			continue
		}
		if line == "----" {
			inResult, cur.hasDash = true, true
			continue
		}
		if cur.sql != "" {
			cur.sql += "\n"
		}
		cur.sql += line
	}
	flush()
	return recs, sc.Err()
}

// sltValue formats one value as SQLite's runner does, by the record's
// column type letter: I an integer (what sqlite3_column_int64 makes of
// the value: a number truncated toward zero, the leading digits of a
// text, else 0), R a number with three decimals (the same way), T the
// text with "(empty)" for an empty string and @ for unprintable bytes.
func sltValue(text string, null bool, typ byte) string {
	if null {
		return "NULL"
	}
	switch typ {
	case 'I':
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		switch text {
		case "true":
			return "1"
		case "false":
			return "0"
		}
		return strconv.FormatInt(int64(sltNumber(text)), 10)
	case 'R':
		return strconv.FormatFloat(sltNumber(text), 'f', 3, 64)
	}
	if text == "" {
		return "(empty)"
	}
	b := []byte(text)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '@'
		}
	}
	return string(b)
}

// sltNumber reads text as a number, or its longest numeric prefix (as C's
// strtod does), or 0.
func sltNumber(text string) float64 {
	t := strings.TrimSpace(text)
	for end := len(t); end > 0; end-- {
		if f, err := strconv.ParseFloat(t[:end], 64); err == nil {
			return f
		}
	}
	return 0
}

// RunSLT runs every file and prints one line per file and a total.
func RunSLT(ctx context.Context, o SLTOptions, w io.Writer) ([]SLTFileResult, error) {
	if err := o.Validate(); err != nil {
		return nil, nferr.Queryf("%v", err)
	}
	files, err := sltFiles(o.Files)
	if err != nil {
		return nil, err
	}
	root := o.Dir
	if root == "" {
		if root, err = os.MkdirTemp("", "nicflow-slt-"); err != nil {
			return nil, nferr.IOf("%v", err)
		}
		defer os.RemoveAll(root)
	}
	var out []SLTFileResult
	var total SLTFileResult
	failures := map[string]int{}
	for i, f := range files {
		res, err := runSLTFile(ctx, o, f, filepath.Join(root, fmt.Sprintf("db%d", i)), w)
		if err != nil {
			return out, err
		}
		out = append(out, res)
		fmt.Fprintf(w, "%-60s queries %5d/%-5d statements %5d/%-5d skipped %5d  %.1fs\n", f,
			res.QueriesPassed, res.Queries, res.StatementsPassed, res.Statements, res.Skipped, res.Elapsed.Seconds())
		total.Queries += res.Queries
		total.QueriesPassed += res.QueriesPassed
		total.Statements += res.Statements
		total.StatementsPassed += res.StatementsPassed
		total.Skipped += res.Skipped
		total.Elapsed += res.Elapsed
		for k, v := range res.Failures {
			failures[k] += v
		}
	}
	pct := func(a, b int) float64 {
		if b == 0 {
			return 100
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Fprintf(w, "total: queries %d/%d (%.2f%%), statements %d/%d (%.2f%%), skipped %d, %.1fs\n",
		total.QueriesPassed, total.Queries, pct(total.QueriesPassed, total.Queries),
		total.StatementsPassed, total.Statements, pct(total.StatementsPassed, total.Statements),
		total.Skipped, total.Elapsed.Seconds())
	if len(failures) > 0 {
		type kv struct {
			k string
			v int
		}
		var kvs []kv
		for k, v := range failures {
			kvs = append(kvs, kv{k, v})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v || kvs[i].v == kvs[j].v && kvs[i].k < kvs[j].k })
		fmt.Fprintln(w, "failures by cause:")
		for i, e := range kvs {
			if i == 30 {
				fmt.Fprintf(w, "  ... %d more causes\n", len(kvs)-30)
				break
			}
			fmt.Fprintf(w, "  %6d  %s\n", e.v, e.k)
		}
	}
	return out, nil
}

func sltFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, nferr.IOf("%v", err)
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".test") || strings.HasSuffix(p, ".slt")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, nferr.IOf("%v", err)
		}
	}
	sort.Strings(files)
	return files, nil
}

func runSLTFile(ctx context.Context, o SLTOptions, path, dir string, w io.Writer) (SLTFileResult, error) {
	res := SLTFileResult{File: path, Failures: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return res, nferr.IOf("%v", err)
	}
	recs, err := parseSLT(f, o.Dialect)
	f.Close()
	if err != nil {
		return res, nferr.IOf("reading %s: %v", path, err)
	}
	s, err := engine.Open(dir, engine.Options{Parallelism: o.Parallelism})
	if err != nil {
		return res, err
	}
	defer func() {
		s.Close()
		os.RemoveAll(dir)
	}()
	start := time.Now()
	shown := 0
	fail := func(r *sltRecord, cause, detail string) {
		res.Failures[cause]++
		if shown < o.ShowFailures {
			shown++
			fmt.Fprintf(w, "--- %s:%d: %s\n%s\n%s\n", path, r.line, cause, r.sql, detail)
		}
	}
	for _, r := range recs {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		switch r.kind {
		case "hash-threshold":
			// The expected results say which form they take.
			continue
		case "halt":
			res.Elapsed = time.Since(start)
			return res, nil
		}
		if r.skip {
			res.Skipped++
			continue
		}
		switch r.kind {
		case "statement":
			res.Statements++
			err := sltExec(ctx, s, r.sql, o.Timeout)
			switch {
			case r.ok && err != nil:
				fail(r, sltCause(err), "")
			case !r.ok && err == nil:
				fail(r, "statement succeeded, expected an error", "")
			default:
				res.StatementsPassed++
			}
		case "query":
			res.Queries++
			got, err := sltQuery(ctx, s, r, o.Timeout)
			if err != nil {
				fail(r, sltCause(err), "")
				continue
			}
			if msg := sltCompare(r, got); msg != "" {
				fail(r, "wrong result", msg)
				continue
			}
			res.QueriesPassed++
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// sltCause is the summary key of an error: its first line, with quoted
// names and numbers blanked so that one cause counts once.
func sltCause(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				b.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote = c
			b.WriteString(string(c) + "…")
		case c >= '0' && c <= '9':
			if b.Len() == 0 || b.String()[b.Len()-1] != '#' {
				b.WriteByte('#')
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func sltExec(ctx context.Context, s *engine.Session, sql string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer res.Close()
	for {
		rec, err := res.Next()
		if err != nil || rec == nil {
			return err
		}
	}
}

// sltQuery runs a query record and returns its values in row order, each
// formatted by the record's type letters.
func sltQuery(ctx context.Context, s *engine.Session, r *sltRecord, timeout time.Duration) ([][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.Query(ctx, r.sql)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var rows [][]string
	for {
		rec, err := res.Next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		text, err := engine.RowsText(rec, "NULL")
		if err != nil {
			return nil, err
		}
		for ri, row := range text {
			vals := make([]string, len(row))
			for c := range row {
				typ := byte('T')
				if c < len(r.types) {
					typ = r.types[c]
				}
				vals[c] = sltValue(row[c], rec.Column(c).IsNull(ri), typ)
			}
			rows = append(rows, vals)
		}
	}
	if len(rows) > 0 && len(rows[0]) != len(r.types) {
		return nil, fmt.Errorf("wrong result: %d columns, expected %d", len(rows[0]), len(r.types))
	}
	return rows, nil
}

// sltCompare checks rows against the record's expected lines: after the
// sort mode, either "N values hashing to H" (the md5 of every value and a
// newline, as SQLite's runner hashes) or the values, one per line or one
// row per line (DuckDB's files, tab-separated).
func sltCompare(r *sltRecord, rows [][]string) string {
	switch r.sort {
	case "rowsort":
		sort.Slice(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			for k := range a {
				if a[k] != b[k] {
					return a[k] < b[k]
				}
			}
			return false
		})
	}
	var vals []string
	for _, row := range rows {
		vals = append(vals, row...)
	}
	if r.sort == "valuesort" {
		sort.Strings(vals)
	}
	if len(r.expected) == 1 {
		var n int
		var hash string
		if k, _ := fmt.Sscanf(r.expected[0], "%d values hashing to %s", &n, &hash); k == 2 {
			h := md5.New()
			for _, v := range vals {
				io.WriteString(h, v)
				io.WriteString(h, "\n")
			}
			got := hex.EncodeToString(h.Sum(nil))
			if n != len(vals) || got != hash {
				return fmt.Sprintf("expected %d values hashing to %s, got %d values hashing to %s", n, hash, len(vals), got)
			}
			return ""
		}
	}
	var want []string
	for _, l := range r.expected {
		if strings.Contains(l, "\t") && len(r.types) > 1 {
			want = append(want, strings.Split(l, "\t")...)
		} else {
			want = append(want, strings.TrimSpace(l))
		}
	}
	if r.sort == "valuesort" {
		sort.Strings(want)
	}
	if len(want) != len(vals) {
		return fmt.Sprintf("expected %d values, got %d:\n%s", len(want), len(vals), sltShow(vals))
	}
	for i := range want {
		if want[i] != vals[i] {
			return fmt.Sprintf("value %d: expected %q, got %q; got:\n%s", i, want[i], vals[i], sltShow(vals))
		}
	}
	return ""
}

func sltShow(vals []string) string {
	if len(vals) > 40 {
		return strings.Join(vals[:40], " ") + " ..."
	}
	return strings.Join(vals, " ")
}
