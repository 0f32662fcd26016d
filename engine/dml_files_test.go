package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/storage"
)

// UPDATE and DELETE rewrite only the files their WHERE may touch: the
// other files of the table stay (same paths), and the answers are those
// of a whole-table rewrite.
func TestDMLRewritesOnlyAffectedFiles(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	s := newTestDB(t, Options{Parallelism: 2, Alloc: alloc, Storage: storage.Options{Write: storage.WriteOptions{RowGroupRows: 100, FileRows: 1000}}})
	exec1(t, s, "CREATE TABLE n (n BIGINT, tag VARCHAR)")
	exec1(t, s, "INSERT INTO n SELECT n, 'x' FROM (VALUES (1)) v(n)")
	for have := 1; have < 8000; have *= 2 {
		exec1(t, s, "INSERT INTO n SELECT n + "+strconv.Itoa(have)+", tag FROM n")
	}
	// Eight 1000-row files, in n order (each INSERT's rows in one run).
	exec1(t, s, "CREATE TABLE m AS SELECT n, tag FROM n ORDER BY n")
	files := func() map[string]bool {
		st, err := s.db.Table("m")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, f := range st.Files {
			out[f.Path] = true
		}
		return out
	}
	before := files()
	if len(before) < 8 {
		t.Fatalf("%d files, want at least 8", len(before))
	}
	kept := func(old map[string]bool) int {
		n := 0
		for p := range files() {
			if old[p] {
				n++
			}
		}
		return n
	}

	if got := exec1(t, s, "DELETE FROM m WHERE n BETWEEN 10 AND 20"); len(got) != 0 {
		t.Fatalf("DELETE returned rows %v", got)
	}
	if k := kept(before); k != len(before)-1 {
		t.Errorf("DELETE of rows of one file: %d of %d files kept, want %d", k, len(before), len(before)-1)
	}
	before = files()
	exec1(t, s, "UPDATE m SET tag = 'y' WHERE n > 7990 OR n = 5")
	// n = 5 is in the file the DELETE rewrote; n > 7990 in the last two.
	if k := kept(before); k != len(before)-3 {
		t.Errorf("UPDATE of rows of three files: %d of %d files kept, want %d", k, len(before), len(before)-3)
	}
	before = files()
	exec1(t, s, "UPDATE m SET tag = 'z' WHERE n > 1000000")
	if k := kept(before); k != len(before) {
		t.Errorf("UPDATE of no row: %d of %d files kept", k, len(before))
	}
	// A WHERE storage cannot test rewrites the whole table.
	before = files()
	exec1(t, s, "DELETE FROM m WHERE n % 1000 = 999")
	if k := kept(before); k != 0 {
		t.Errorf("DELETE with a WHERE storage cannot test: %d files kept, want 0", k)
	}
	got := exec1(t, s, "SELECT count(*), sum(n), count(*) FILTER (WHERE tag = 'y') FROM m")
	// 8192 rows, less 11 (10..20) and 8 (999, 1999, ..., 7999); tags y:
	// 7991..8192 less 7999, and 5.
	want := []string{strconv.Itoa(8192 - 11 - 8), strconv.Itoa(8192*8193/2 - 165 - (999 + 1999 + 2999 + 3999 + 4999 + 5999 + 6999 + 7999)), strconv.Itoa(202 - 1 + 1)}
	for i := range want {
		if got[0][i] != want[i] {
			t.Fatalf("after the changes: got %v, want %v", got[0], want)
		}
	}
	alloc.AssertSize(t, 0)
}

// Tables with unique keys and foreign keys are narrowed too: the keys and
// references of the replaced files leave the catalog's records, those of
// the rows written enter them, and every constraint still holds, across
// files the statement does not touch.
func TestDMLNarrowsKeyedTables(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	s := newTestDB(t, Options{Parallelism: 2, Alloc: alloc, Storage: storage.Options{Write: storage.WriteOptions{RowGroupRows: 100, FileRows: 100}}})
	exec1(t, s, "CREATE TABLE p (id BIGINT PRIMARY KEY, code VARCHAR UNIQUE)")
	exec1(t, s, "CREATE TABLE c (cid BIGINT PRIMARY KEY, pid BIGINT REFERENCES p)")
	// Ten 100-row files of p in id order; c references ids 5 and 950.
	for f := 0; f < 10; f++ {
		exec1(t, s, "INSERT INTO p SELECT n, 'c' || n FROM generate_series("+strconv.Itoa(f*100)+", "+strconv.Itoa(f*100+99)+") g(n)")
	}
	exec1(t, s, "INSERT INTO c VALUES (1, 5), (2, 950), (3, 950)")
	files := func(table string) map[string]bool {
		st, err := s.db.Table(table)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, f := range st.Files {
			out[f.Path] = true
		}
		return out
	}
	kept := func(table string, old map[string]bool) int {
		n := 0
		for p := range files(table) {
			if old[p] {
				n++
			}
		}
		return n
	}
	fails := func(sql, want string) {
		t.Helper()
		_, err := s.Query(context.Background(), sql)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want an error containing %q", sql, err, want)
		}
	}

	before := files("p")
	// One file rewritten: its keys move (id 150 -> 1150 is free).
	exec1(t, s, "UPDATE p SET id = id + 1000, code = 'moved' || id WHERE id = 150")
	if k := kept("p", before); k != len(before)-1 {
		t.Errorf("UPDATE of one row: %d of %d files kept", k, len(before))
	}
	// A key of another file, and of the same file, is still taken.
	fails("UPDATE p SET id = 700 WHERE id = 151", `duplicate key value violates unique constraint "p_pkey" of table p: key (id)=(700) already exists`)
	fails("UPDATE p SET code = 'c420' WHERE id = 152", `duplicate key value violates unique constraint "p_code_key" of table p: key (code)=(c420) already exists`)
	// The freed key 150 may be taken again; the moved one's code is taken.
	exec1(t, s, "INSERT INTO p VALUES (150, 'c150')")
	fails("INSERT INTO p VALUES (2000, 'moved150')", `key (code)=(moved150) already exists`)
	// A key still referenced cannot leave; an unreferenced one of the same
	// file can.
	fails("DELETE FROM p WHERE id = 950", `update or delete on table "p" violates foreign key constraint "c_pid_fkey" on table "c": key (id)=(950) is still referenced from table "c"`)
	fails("UPDATE p SET id = -5 WHERE id = 5", `key (id)=(5) is still referenced from table "c"`)
	before = files("p")
	exec1(t, s, "DELETE FROM p WHERE id = 951")
	// 951 may be in two files: 900..999 and the rewritten 100..1150.
	if k := kept("p", before); k != len(before)-2 {
		t.Errorf("DELETE of one row: %d of %d files kept", k, len(before))
	}
	// References move with a narrowed rewrite of c: after moving c's rows
	// off 950, 950 may go.
	exec1(t, s, "INSERT INTO c SELECT n + 100, 7 FROM generate_series(0, 299) g(n)")
	before = files("c")
	exec1(t, s, "UPDATE c SET pid = 6 WHERE cid IN (2, 3)")
	if k := kept("c", before); k == 0 {
		t.Errorf("UPDATE of c rewrote all %d files", len(before))
	}
	fails("UPDATE c SET pid = 951 WHERE cid = 1", `key (pid)=(951) is not present in table "p"`)
	exec1(t, s, "DELETE FROM p WHERE id = 950")
	fails("DELETE FROM p WHERE id = 6", `key (id)=(6) is still referenced`)
	exec1(t, s, "DELETE FROM c WHERE cid = 2")
	fails("DELETE FROM p WHERE id = 6", `key (id)=(6) is still referenced`)
	exec1(t, s, "DELETE FROM c WHERE cid = 3")
	exec1(t, s, "DELETE FROM p WHERE id = 6")
	got := exec1(t, s, "SELECT count(*), sum(id), count(DISTINCT code) FROM p")
	// 1000 ids, 150 moved to 1150 and back in, 951, 950 and 6 gone.
	want := []string{"998", strconv.Itoa(999*1000/2 + 1150 - 951 - 950 - 6), "998"}
	for i := range want {
		if got[0][i] != want[i] {
			t.Fatalf("p after the changes: got %v, want %v", got[0], want)
		}
	}
	alloc.AssertSize(t, 0)
}
