package storage

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

var upgradeWrite = WriteOptions{RowGroupRows: 500, FileRows: 1000}

// oldCatalog makes a database whose table t (2500 rows of testSchema in
// three files) is recorded as catalogs before chunk checksums recorded
// their files: whole-file checksum only. It returns the directory, the
// rows, and the table as it was registered (with its sums).
func oldCatalog(t *testing.T) (string, []row, *Table) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, Options{Write: upgradeWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustCreate(t, db, "t", testSchema())
	rows := randomRows(randSource(5), 0, 2500, 0.1)
	appendRows(t, db, "t", testSchema(), rows)
	reg := mustTable(t, db, "t")
	if len(reg.Files) != 3 || reg.Files[0].FooterSum == 0 || len(reg.Files[0].RowGroups[0].Sums) != len(reg.Columns) {
		t.Fatalf("registered table: %d files, sums not recorded", len(reg.Files))
	}
	stripSums(t, db, "t")
	return dir, rows, reg
}

// stripSums rewrites table name's file records without footer and chunk
// checksums, as catalogs written before them hold them.
func stripSums(t *testing.T, db *DB, name string) {
	t.Helper()
	if err := db.cat.lockWrite(); err != nil {
		t.Fatal(err)
	}
	defer db.cat.unlockWrite()
	cur := db.cat.tables[tableKeyName(DefaultSchema, name)]
	nt := *cur
	nt.Files = nil
	for _, f := range cur.Files {
		nf := *f
		nf.FooterSum = 0
		nf.RowGroups = slices.Clone(f.RowGroups)
		for r := range nf.RowGroups {
			nf.RowGroups[r].Sums = nil
		}
		nt.Files = append(nt.Files, &nf)
	}
	tx := db.cat.begin()
	tx.putTable(&nt)
	if err := tx.commit(); err != nil {
		t.Fatal(err)
	}
}

// sumsOf reports which files of t have recorded chunk checksums.
func sumsOf(tb *Table) []bool {
	var out []bool
	for _, f := range tb.Files {
		out = append(out, !needsWholeFileCheck(f))
	}
	return out
}

// damageChunk flips a byte in the middle of the chunk of column col in
// row group 0 of f.
func damageChunk(t *testing.T, db *DB, tb *Table, f *File, col string) {
	t.Helper()
	p := db.Path(f)
	md, _, err := readFooter(p)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := md.RowGroup(0).ColumnChunk(f.ColumnIndex[tb.ColumnIndex(col)])
	if err != nil {
		t.Fatal(err)
	}
	start, length := chunkRange(cc)
	b, _ := os.ReadFile(p)
	b[start+length/2] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func openDir(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir, Options{Write: upgradeWrite})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSumsUpgrade: a process that verifies the files of an older catalog
// records their footer and chunk checksums, the very ones registration
// records; later processes scan them without reading them whole.
func TestSumsUpgrade(t *testing.T) {
	dir, rows, reg := oldCatalog(t)
	db := openDir(t, dir)
	tb := mustTable(t, db, "t")
	if slices.Contains(sumsOf(tb), true) {
		t.Fatalf("old catalog has sums: %v", sumsOf(tb))
	}
	got, _ := scanAll(t, db, ScanSpec{Table: "t"}.AllColumns(tb), ScanOptions{})
	sortRows(got)
	if !equalRows(got, rows) {
		t.Fatalf("scan of the old catalog: %d rows, want %d", len(got), len(rows))
	}
	db.Close()

	db = openDir(t, dir)
	defer db.Close()
	up := mustTable(t, db, "t")
	if up.Generation != reg.Generation || len(up.Files) != len(reg.Files) {
		t.Fatalf("upgraded table: generation %d, %d files; registered %d, %d files", up.Generation, len(up.Files), reg.Generation, len(reg.Files))
	}
	for i, f := range up.Files {
		if !reflect.DeepEqual(f, reg.Files[i]) {
			t.Fatalf("file %d after the upgrade:\n%+v\nas registered:\n%+v", i, f, reg.Files[i])
		}
	}
	// No whole-file check any more: damage in a chunk of column s does
	// not stop a scan of id (an older catalog's process would refuse the
	// file, TestSumsUpgradeDamagedFile), and is found when s is read.
	damageChunk(t, db, up, up.Files[1], "s")
	ids, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{})
	if len(ids) != len(rows) {
		t.Fatalf("scan of id: %d rows, want %d", len(ids), len(rows))
	}
	_, err := scanRows(db, ScanSpec{Table: "t", Columns: []string{"id", "s"}})
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), db.Path(up.Files[1])+" row group 0 column s is corrupt") {
		t.Fatalf("scan of s: %v", err)
	}
}

// TestSumsUpgradeDamagedFile: a file of an older catalog that fails its
// whole-file check gets no sums, by a scan or by Verify, and stays an
// error naming it; the others are upgraded.
func TestSumsUpgradeDamagedFile(t *testing.T) {
	dir, rows, _ := oldCatalog(t)
	db := openDir(t, dir)
	tb := mustTable(t, db, "t")
	bad := db.Path(tb.Files[1])
	damageChunk(t, db, tb, tb.Files[1], "s")
	res, err := db.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if (r.Err != nil) != (i == 1) || r.Recorded != (i != 1) {
			t.Fatalf("verify %s: err %v, recorded %v", r.Path, r.Err, r.Recorded)
		}
	}
	if !nferr.Is(res[1].Err, nferr.KindData) || !strings.Contains(res[1].Err.Error(), bad+" is corrupt: checksum") {
		t.Fatalf("verify of the damaged file: %v", res[1].Err)
	}
	if s := sumsOf(mustTable(t, db, "t")); !reflect.DeepEqual(s, []bool{true, false, true}) {
		t.Fatalf("after verify: sums %v", s)
	}
	db.Close()
	// A scan of id alone: the whole-file check still finds the damage,
	// and records nothing either.
	for range 2 {
		db = openDir(t, dir)
		tb = mustTable(t, db, "t")
		if s := sumsOf(tb); !reflect.DeepEqual(s, []bool{true, false, true}) {
			t.Fatalf("reopened: sums %v", s)
		}
		_, err = scanRows(db, ScanSpec{Table: "t", Columns: []string{"id"}})
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "data file "+bad+" is corrupt: checksum") {
			t.Fatalf("scan of a damaged file: %v", err)
		}
		ok, err := scanRows(db, ScanSpec{Table: "t", Columns: []string{"id"}, Files: []FileRange{{Path: tb.Files[0].Path}, {Path: tb.Files[2].Path}}})
		if err != nil || len(ok) != len(rows)-int(tb.Files[1].Rows) {
			t.Fatalf("scan of the intact files: %d rows, %v", len(ok), err)
		}
		db.Close()
	}
}

// TestSumsUpgradeCatalogBusy: while the catalog cannot be written (another
// process holds its lock) a scan of an older catalog's files neither waits
// nor fails; the sums are recorded in the background once the lock is
// free, without Close.
func TestSumsUpgradeCatalogBusy(t *testing.T) {
	dir, rows, _ := oldCatalog(t)
	db := openDir(t, dir)
	defer db.Close()
	db.cat.mu.Lock()
	if db.cat.sticky {
		db.cat.release()
	}
	db.cat.mu.Unlock()
	lk, err := lockDir(dir, filepath.Join(dir, "catalog.lock"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{})
	if len(got) != len(rows) {
		t.Fatalf("scan: %d rows, want %d", len(got), len(rows))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("scan took %v while the catalog was locked", d)
	}
	time.Sleep(200 * time.Millisecond)
	if s := sumsOf(mustTable(t, db, "t")); slices.Contains(s, true) {
		t.Fatalf("sums recorded while another process held the catalog: %v", s)
	}
	lk.unlock()
	deadline := time.Now().Add(10 * time.Second)
	for slices.Contains(sumsOf(mustTable(t, db, "t")), false) {
		if time.Now().After(deadline) {
			t.Fatalf("sums not recorded 10 s after the catalog was free: %v", sumsOf(mustTable(t, db, "t")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Recorded means committed: another handle sees them.
	db2 := openDir(t, dir)
	defer db2.Close()
	if s := sumsOf(mustTable(t, db2, "t")); slices.Contains(s, false) {
		t.Fatalf("another handle: sums %v", s)
	}
}

// TestSumsUpgradeConcurrentChanges: sums measured before another change
// committed are recorded only into the file records that change kept,
// and lose nothing of it; the table's generation is left alone.
func TestSumsUpgradeConcurrentChanges(t *testing.T) {
	dir, rows, _ := oldCatalog(t)
	db := openDir(t, dir)
	defer db.Close()
	measure := func() {
		t.Helper()
		for _, f := range mustTable(t, db, "t").Files {
			md, _, err := readFooter(db.Path(f))
			if err != nil {
				t.Fatal(err)
			}
			m, err := db.measureSums(f, md)
			if err != nil {
				t.Fatal(err)
			}
			db.queueSums(f.ID, m)
		}
	}
	measure()
	more := randomRows(randSource(6), 2500, 600, 0.1)
	appendRows(t, db, "t", testSchema(), more)
	before := mustTable(t, db, "t")
	done, err := db.recordSums(true)
	if err != nil || len(done) != 3 {
		t.Fatalf("recorded %v, %v; want the 3 files measured", done, err)
	}
	after := mustTable(t, db, "t")
	if after.Generation != before.Generation || len(after.Files) != len(before.Files) || slices.Contains(sumsOf(after), false) {
		t.Fatalf("after recording: generation %d (was %d), files %d (were %d), sums %v", after.Generation, before.Generation, len(after.Files), len(before.Files), sumsOf(after))
	}
	got, _ := scanAll(t, db, ScanSpec{Table: "t"}.AllColumns(after), ScanOptions{})
	sortRows(got)
	if want := append(slices.Clone(rows), more...); !equalRows(got, want) {
		t.Fatalf("after recording: %d rows, want %d", len(got), len(want))
	}

	// Measured, then the table replaced: nothing to record.
	stripSums(t, db, "t")
	measure()
	if err := commitRows(db, "t", AppendOptions{Replace: true}, testSchema(), more); err != nil {
		t.Fatal(err)
	}
	done, err = db.recordSums(true)
	if err != nil || len(done) != 0 {
		t.Fatalf("recorded %v, %v into a replaced table", done, err)
	}
	got, _ = scanAll(t, db, ScanSpec{Table: "t"}.AllColumns(after), ScanOptions{})
	sortRows(got)
	if !equalRows(got, more) {
		t.Fatalf("replaced table: %d rows, want %d", len(got), len(more))
	}
}

// TestCrashDuringSumsUpgrade: a process killed while it records the sums
// of an older catalog leaves it as it was or upgraded, and readable.
func TestCrashDuringSumsUpgrade(t *testing.T) {
	for _, c := range []struct {
		point    string
		recorded bool
	}{{"before-commit:1", false}, {"after-commit:1", true}} {
		t.Run(c.point, func(t *testing.T) {
			dir := crashSetup(t)
			db := openDir(t, dir)
			stripSums(t, db, "t")
			db.Close()
			if _, err := runChild(t, dir, "scan", c.point, 0); err == nil {
				t.Fatal("child was supposed to die")
			}
			// Each commit records the files measured by then: none
			// before the first, some after it, each whole and right.
			db = openDir(t, dir)
			tb := mustTable(t, db, "t")
			for _, f := range tb.Files {
				if needsWholeFileCheck(f) {
					continue
				}
				md, _, err := readFooter(db.Path(f))
				if err != nil {
					t.Fatal(err)
				}
				want := *f
				want.RowGroups = slices.Clone(f.RowGroups)
				if _, _, err := recordChecksums(db.Path(f), md, &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(f, &want) {
					t.Fatalf("after a crash at %s: %s recorded as\n%+v\nwant\n%+v", c.point, f.Path, f, &want)
				}
			}
			s := sumsOf(tb)
			db.Close()
			if slices.Contains(s, true) != c.recorded {
				t.Fatalf("after a crash at %s: sums %v", c.point, s)
			}
			if ids, _, _ := checkState(t, dir); !isRange(ids, 0, 1000) {
				t.Fatalf("after a crash at %s: %d rows", c.point, len(ids))
			}
		})
	}
}
