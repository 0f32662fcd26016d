package storage

import (
	"os"
	"testing"
)

// TestReadsKeepGarbage: the files a DROP makes unreachable stay while a
// read of this process that began before it is held (a statement of
// another session sharing the DB may still scan them), and go once every
// such read has ended; a read begun after the DROP does not keep them.
// Without reads, a DROP deletes its files at once, as before.
func TestReadsKeepGarbage(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	sch := testSchema()
	files := func(name string) []string {
		t.Helper()
		var out []string
		for _, f := range mustTable(t, db, name).Files {
			out = append(out, db.Path(f))
		}
		return out
	}
	exist := func(paths []string) int {
		n := 0
		for _, p := range paths {
			if _, err := os.Stat(p); err == nil {
				n++
			}
		}
		return n
	}
	for _, name := range []string{"a", "b"} {
		mustCreate(t, db, name, sch)
		appendRows(t, db, name, sch, randomRows(randSource(1), 0, 3000, 0.1))
	}
	fa, fb := files("a"), files("b")
	if len(fa) == 0 || exist(fa) != len(fa) {
		t.Fatalf("table a has %d files, %d on disk", len(fa), exist(fa))
	}

	first := db.BeginRead()
	if err := db.DropTable("a", false); err != nil {
		t.Fatal(err)
	}
	later := db.BeginRead() // begins after the DROP: it cannot see a's files
	db.reads.wg.Wait()
	if n := exist(fa); n != len(fa) {
		t.Fatalf("%d of a's %d files were deleted while a read begun before the DROP was held", len(fa)-n, len(fa))
	}
	first()
	first() // idempotent
	db.reads.wg.Wait()
	if n := exist(fa); n != 0 {
		t.Errorf("%d of a's files remain after the reads that could see them ended", n)
	}
	later()

	// No read held: deleted by the DROP itself.
	if err := db.DropTable("b", false); err != nil {
		t.Fatal(err)
	}
	if n := exist(fb); n != 0 {
		t.Errorf("%d of b's files remain after DROP with no read held", n)
	}
	db.reads.mu.Lock()
	pending, active := len(db.reads.pending), len(db.reads.active)
	db.reads.mu.Unlock()
	if pending != 0 || active != 0 {
		t.Errorf("reads left %d pending garbage records and %d active reads", pending, active)
	}
}
