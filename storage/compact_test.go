package storage

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestCompactTail: one-row appends into a keyed table are merged in tiers
// of compactFanIn files, keep their order and their keys, and the merged
// files leave the disk; files at half the size target or more are never
// merged.
func TestCompactTail(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	cons := &Constraints{Indexes: []Index{{Name: "k_pkey", Columns: []string{"id"}, Primary: true, Constraint: true}}}
	if err := db.CreateTable("k", sch, CreateOptions{Constraints: cons}); err != nil {
		t.Fatal(err)
	}
	const n = 125
	for i := range n {
		if err := appendKeys(db, "k", []int64{int64(i)}, []*string{str("x")}); err != nil {
			t.Fatal(err)
		}
	}
	tb := mustTable(t, db, "k")
	// 125 = 100 (one tier-2 file) + 2 * 10 (tier 1) + 5 * 1 (tier 0).
	var got []int64
	for _, f := range tb.Files {
		got = append(got, f.Rows)
	}
	want := []int64{100, 10, 10, 1, 1, 1, 1, 1}
	if len(got) != len(want) {
		t.Fatalf("file rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("file rows %v, want %v", got, want)
		}
	}
	rows, _ := scanAll(t, db, ScanSpec{Table: "k", Columns: []string{"id"}}, ScanOptions{})
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	for i, r := range rows {
		if r[0] != int64(i) {
			t.Fatalf("row %d is %v: order lost", i, r[0])
		}
	}
	// The keys survive the merges.
	if err := appendKeys(db, "k", []int64{42}, []*string{nil}); err == nil {
		t.Error("duplicate key 42 accepted after compaction")
	}
	// Only the live files remain on disk.
	ents, err := os.ReadDir(filepath.Join(db.Dir(), filepath.Dir(tb.Files[0].Path)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(tb.Files) {
		t.Errorf("%d files on disk, %d in the table", len(ents), len(tb.Files))
	}

	// A table of files at half the size target or more is left alone.
	db2 := openTestDB(t, WriteOptions{RowGroupRows: 2, FileRows: 4})
	mustCreate(t, db2, "w", sch)
	for i := range 2 * compactFanIn {
		if err := commitRecord(db2, "w", AppendOptions{}, keyRecord([]int64{int64(i), int64(i)}, []*string{nil, nil})); err != nil {
			t.Fatal(err)
		}
	}
	if f := len(mustTable(t, db2, "w").Files); f != 2*compactFanIn {
		t.Errorf("%d files of 2 rows (FileRows 4), want %d unmerged", f, 2*compactFanIn)
	}
}

// TestCompactRace: a merge whose table changed after it read the run
// commits nothing.
func TestCompactRace(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	mustCreate(t, db, "r", sch)
	for i := range compactFanIn - 1 {
		if err := appendKeys(db, "r", []int64{int64(i)}, []*string{nil}); err != nil {
			t.Fatal(err)
		}
	}
	old := mustTable(t, db, "r")
	if err := appendKeys(db, "r", []int64{100}, []*string{nil}); err != nil {
		t.Fatal(err)
	}
	// The append merged; a merge of the stale run must fail.
	cur := mustTable(t, db, "r")
	if len(cur.Files) != 1 {
		t.Fatalf("%d files after %d appends, want 1", len(cur.Files), compactFanIn)
	}
	if err := db.mergeFiles("r", old, old.Files); err == nil {
		t.Fatal("a merge of a stale run committed")
	}
	rows, _ := scanAll(t, db, ScanSpec{Table: "r", Columns: []string{"id"}}, ScanOptions{})
	if len(rows) != compactFanIn {
		t.Fatalf("%d rows after the failed merge, want %d", len(rows), compactFanIn)
	}
}

// TestStickySection: a handle keeps its catalog section between changes,
// and lets go as soon as another waits for it: with waits bounded well
// below the idle timeout (stickyIdle), alternating changes from two
// handles all succeed, and each sees the other's.
func TestStickySection(t *testing.T) {
	defer func(w time.Duration) { LockWait = w }(LockWait)
	LockWait = stickyIdle / 3
	dir := t.TempDir()
	db1, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db1.Close()
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	mustCreate(t, db1, "s", sch) // db1 now holds its section (sticky)
	db2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open while the other handle is sticky: %v", err)
	}
	defer db2.Close()
	for i := range 6 {
		db := []*DB{db1, db2}[i%2]
		if err := appendKeys(db, "s", []int64{int64(i)}, []*string{nil}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	for _, db := range []*DB{db1, db2} {
		if rows, _ := scanAll(t, db, ScanSpec{Table: "s", Columns: []string{"id"}}, ScanOptions{}); len(rows) != 6 {
			t.Fatalf("%d rows, want 6", len(rows))
		}
	}
}
