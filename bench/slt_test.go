package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A small file in SQLite's format: conditions, sort modes, hashing, type
// letters, a statement that must fail, and halt.
const sltSample = `hash-threshold 4

statement ok
CREATE TABLE t1(a INTEGER, b TEXT, c FLOAT)

statement ok
INSERT INTO t1 VALUES(1,'x',1.5),(2,'',NULL),(3,'z',-2.25)

query I nosort
SELECT a FROM t1 ORDER BY a DESC
----
3
2
1

query IT rowsort
SELECT a, b FROM t1
----
1
x
2
(empty)
3
z

query R valuesort
SELECT c FROM t1
----
-2.250
1.500
NULL

# b is text, read as an integer: what sqlite3_column_int64 makes of it
query I rowsort
SELECT + b FROM t1 WHERE a = 1
----
0

query II nosort
SELECT a, a * 10 FROM t1 ORDER BY a
----
6 values hashing to eec09b499a9f85c0bf4b07134d807d7a

skipif postgresql
query I nosort
SELECT 'only sqlite'
----
1

onlyif mysql
statement ok
CREATE TABLE mysql_only(a INT) ENGINE=InnoDB

statement error
SELECT * FROM no_such_table

query I nosort
SELECT 1 + 1
----
3

onlyif sqlite
halt

query I nosort
SELECT count(*) FROM t1
----
3

halt

query I nosort
SELECT 'never reached'
----
0
`

func TestRunSLT(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.test")
	if err := os.WriteFile(path, []byte(sltSample), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := RunSLT(context.Background(), SLTOptions{Files: []string{path}, ShowFailures: 5}, &out)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// 1 + 1 is not 3: the only failure.
	if r.Queries != 7 || r.QueriesPassed != 6 || r.Statements != 3 || r.StatementsPassed != 3 || r.Skipped != 2 {
		t.Errorf("got %+v\n%s", r, out.String())
	}
	if r.Failures["wrong result"] != 1 || !strings.Contains(out.String(), `value 0: expected "3", got "2"`) {
		t.Errorf("failure not reported: %v\n%s", r.Failures, out.String())
	}
}

func TestSLTValue(t *testing.T) {
	for _, c := range []struct {
		text string
		null bool
		typ  byte
		want string
	}{
		{"12", false, 'I', "12"},
		{"-0", false, 'I', "0"},
		{"-7.9", false, 'I', "-7"},
		{"12.50", false, 'I', "12"},
		{"abc", false, 'I', "0"},
		{"42abc", false, 'I', "42"},
		{"true", false, 'I', "1"},
		{"", true, 'I', "NULL"},
		{"1.0005", false, 'R', "1.000"},
		{"3", false, 'R', "3.000"},
		{"", false, 'T', "(empty)"},
		{"a\tb", false, 'T', "a@b"},
	} {
		if got := sltValue(c.text, c.null, c.typ); got != c.want {
			t.Errorf("sltValue(%q, %v, %c) = %q, want %q", c.text, c.null, c.typ, got, c.want)
		}
	}
}
