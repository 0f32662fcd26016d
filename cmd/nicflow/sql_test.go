package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine"
)

// TestPrompt drives the interactive shell with a script of lines: a
// statement split over lines, an error that does not end the session, a
// comment with a ';' and \q.
func TestPrompt(t *testing.T) {
	sess, err := engine.Open(t.TempDir(), engine.Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	in := strings.NewReader("create table t (a integer);\ninsert into t\n  values (1), (2);\nselect nope from t;\n-- a comment; still typing\nselect sum(a)\nfrom t;\n\\q\nselect 'never';\n")
	var out, errb bytes.Buffer
	if err := sessionPrompt(sess, formatTable, in, &out, &errb); err != nil {
		t.Fatal(err)
	}
	o := out.String()
	for _, want := range []string{"nicflow> ", "     ... ", "CREATE TABLE", "INSERT 0 2", " sum\n-----\n   3\n(1 row)"} {
		if !strings.Contains(o, want) {
			t.Errorf("prompt output lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "never") {
		t.Errorf("ran past \\q:\n%s", o)
	}
	if !strings.Contains(errb.String(), `error: line 1, column 8: column "nope" does not exist`) {
		t.Errorf("error output: %q", errb.String())
	}
	// End of input without \q ends the shell too.
	out.Reset()
	if err := sessionPrompt(sess, formatCSV, strings.NewReader("select 1 as x;"), &out, &errb); err != nil || !strings.Contains(out.String(), "x\n1\n") {
		t.Errorf("EOF: %v %q", err, out.String())
	}
}

// The prompt's backslash commands: \d, \d NAME, \timing, \? and an
// unknown one.
func TestPromptCommands(t *testing.T) {
	sess, err := engine.Open(t.TempDir(), engine.Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	dir := t.TempDir()
	script := filepath.Join(dir, "s.sql")
	os.WriteFile(script, []byte("insert into tt values (41);\nselect a + 1 as fortytwo from tt"), 0o644)
	res := filepath.Join(dir, "out.txt")
	in := strings.NewReader("create table tt (a integer);\n\\d\n\\d tt\n\\timing\nselect 1;\n\\timing\n\\?\n\\nope\n\\i " + script + "\n\\o " + res + "\nselect 'to the file' as f;\n\\o\nselect 'back' as b;\n")
	var out, errb bytes.Buffer
	if err := sessionPrompt(sess, formatTable, in, &out, &errb); err != nil {
		t.Fatal(err)
	}
	o := out.String()
	if !strings.Contains(o, "       42") || strings.Contains(o, "to the file") || !strings.Contains(o, " back") {
		t.Errorf("\\i or \\o:\n%s", o)
	}
	if b, err := os.ReadFile(res); err != nil || !strings.Contains(string(b), " to the file") {
		t.Errorf("\\o file: %q, %v", b, err)
	}
	for _, want := range []string{" tt", "Timing is on.", "Time: ", "Timing is off.", `\timing      print`, `unknown command \nope`} {
		if !strings.Contains(o, want) {
			t.Errorf("prompt output lacks %q:\n%s", want, o)
		}
	}
	if strings.Count(o, "Time: ") != 1 {
		t.Errorf("timing printed %d times, want once:\n%s", strings.Count(o, "Time: "), o)
	}
	if !strings.Contains(o, "integer") {
		t.Errorf("\\d tt did not describe the table:\n%s", o)
	}
}

// -c takes SQL that starts with a comment; it is one of three ways.
func TestSQLCommandFlag(t *testing.T) {
	db := t.TempDir() + "/db"
	var out, errb bytes.Buffer
	if err := runSQL(context.Background(), sqlFlags{dir: db, format: formatCSV, command: []string{"-- a comment\nselect 7 as x"}, create: true}, nil, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "x\n7\n" {
		t.Errorf("out %q", out.String())
	}
	if err := runSQL(context.Background(), sqlFlags{dir: db, format: formatCSV, command: []string{"select 1"}}, []string{"select 2"}, nil, &out, &errb); err == nil {
		t.Error("both -c and an argument: no error")
	}
}

// Without --dir the database is transient: statements run, and nothing
// is left behind.
func TestSQLTransientDatabase(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out, errb bytes.Buffer
	err := runSQL(context.Background(), sqlFlags{format: formatCSV, command: []string{"create table t (a int)", "insert into t values (4), (5)", "select sum(a) as s from t"}}, nil, nil, &out, &errb)
	if err != nil || out.String() != "s\n9\n" {
		t.Fatalf("transient database: %q, %v", out.String(), err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the transient database left %d entries in TMPDIR", len(left))
	}
}

func TestSQLFromFileAndStdin(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	// --create makes the database; the script comes from a file.
	script := dir + "/s.sql"
	if err := writeFile(script, "create table t (a varchar); insert into t values ('x'), (NULL); select a from t order by a;"); err != nil {
		t.Fatal(err)
	}
	db := dir + "/db"
	if err := runSQL(context.Background(), sqlFlags{dir: db, format: formatJSON, file: script, create: true}, nil, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{\"a\":\"x\"}\n{\"a\":null}\n" || errb.String() != "CREATE TABLE\nINSERT 0 2\n" {
		t.Errorf("out %q err %q", out.String(), errb.String())
	}
	if err := runSQL(context.Background(), sqlFlags{dir: db, format: formatTable, file: script}, []string{"select 1"}, nil, &out, &errb); err == nil {
		t.Error("both -f and an argument: no error")
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// --timer prints each statement's time on stderr, results stay on stdout.
func TestSQLTimer(t *testing.T) {
	db := t.TempDir() + "/db"
	var out, errb bytes.Buffer
	if err := runSQL(context.Background(), sqlFlags{dir: db, format: formatCSV, command: []string{"select 1 as x", "select 2 as y"}, create: true, timer: true}, nil, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "x\n1\n\ny\n2\n" || strings.Count(errb.String(), "Time: ") != 2 {
		t.Errorf("out %q, err %q", out.String(), errb.String())
	}
}
