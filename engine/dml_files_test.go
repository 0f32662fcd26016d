package engine

import (
	"strconv"
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
