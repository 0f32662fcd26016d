package storage

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// corruptFile damages the file at path the way disks and unlucky copies
// do: flipped bits, a zeroed range, or a truncation. It returns what it
// did.
func corruptFile(rng *rand.Rand, path string) string {
	b, _ := os.ReadFile(path)
	switch k := rng.Intn(6); {
	case k < 3:
		n := 1 + rng.Intn(4)
		for i := 0; i < n; i++ {
			b[rng.Intn(len(b))] ^= 1 << rng.Intn(8)
		}
		os.WriteFile(path, b, 0o644)
		return fmt.Sprintf("flip %d", n)
	case k < 5:
		at := rng.Intn(len(b))
		n := min(1+rng.Intn(4096), len(b)-at)
		clear(b[at : at+n])
		os.WriteFile(path, b, 0o644)
		return "zero"
	default:
		os.WriteFile(path, b[:rng.Intn(len(b))], 0o644)
		return "truncate"
	}
}

// TestCorruptionCampaignParquet damages the table's Parquet files many
// times over and scans after each damage: every scan must give the right
// rows or a KindData error naming the file, never wrong rows, another kind
// of error or a panic.
func TestCorruptionCampaignParquet(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{Write: WriteOptions{RowGroupRows: 700, FileRows: 1500}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sch := testSchema()
	mustCreate(t, db, "t", sch)
	appendRows(t, db, "t", sch, randomRows(randSource(5), 0, 6000, 0.1))
	tb := mustTable(t, db, "t")
	all := ScanSpec{Table: "t"}.AllColumns(tb)
	want, _ := scanAll(t, db, all, ScanOptions{})
	sortRows(want)
	trials := 300
	if testing.Short() {
		trials = 60
	}
	rng := rand.New(rand.NewSource(11))
	outcomes := map[string]int{}
	for i := 0; i < trials; i++ {
		f := tb.Files[rng.Intn(len(tb.Files))]
		p := db.Path(f)
		orig, _ := os.ReadFile(p)
		what := corruptFile(rng, p)
		db.fs.footers.Range(func(k, _ any) bool { db.fs.footers.Delete(k); return true })
		got, err := scanRows(db, all)
		switch {
		case err != nil && !nferr.Is(err, nferr.KindData):
			t.Errorf("trial %d (%s of %s): error of kind %v: %v", i, what, p, nferr.KindOf(err), err)
		case err != nil && !strings.Contains(err.Error(), p):
			t.Errorf("trial %d (%s of %s): the error does not name the file: %v", i, what, p, err)
		case err != nil:
			outcomes[what+": data error"]++
		default:
			sortRows(got)
			if !equalRows(got, want) {
				t.Errorf("trial %d (%s of %s): WRONG ANSWER: %d rows, want %d", i, what, p, len(got), len(want))
				outcomes[what+": WRONG"]++
			} else {
				outcomes[what+": right (damage outside the read bytes)"]++
			}
		}
		os.WriteFile(p, orig, 0o644)
	}
	t.Logf("%d trials: %v", trials, outcomes)
}

// scanRows scans to the end and returns the rows or the first error.
func scanRows(db *DB, spec ScanSpec) (rows []row, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	sc, err := db.NewScanner(spec, ScanOptions{})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for {
		rec, err := sc.Next(context.Background())
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return rowsOf(&testing.T{}, recs), nil
		}
		recs = append(recs, rec)
	}
}

// TestCorruptionCampaignCatalog damages the catalog's files (Pebble's
// tables, log and manifest, the seal) of a database closed cleanly, and of
// one copied while open (as a crash leaves it: the latest commits only in
// Pebble's log), then opens it: Open must fail with a data error naming
// the catalog and how to recover, or succeed with the tables intact; never
// a panic, a lost table or a table with other rows.
func TestCorruptionCampaignCatalog(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "crashed"}[crashed], func(t *testing.T) { catalogCampaign(t, crashed) })
	}
}

func catalogCampaign(t *testing.T, crashed bool) {
	src := t.TempDir()
	db, err := Open(src, Options{Write: WriteOptions{RowGroupRows: 700, FileRows: 1500}})
	if err != nil {
		t.Fatal(err)
	}
	sch := testSchema()
	mustCreate(t, db, "t", sch)
	appendRows(t, db, "t", sch, randomRows(randSource(5), 0, 3000, 0.1))
	mustCreate(t, db, "u", sch)
	appendRows(t, db, "u", sch, randomRows(randSource(6), 0, 500, 0.1))
	want := map[string][]row{}
	for _, name := range []string{"t", "u"} {
		rows, _ := scanAll(t, db, ScanSpec{Table: name}.AllColumns(mustTable(t, db, name)), ScanOptions{})
		sortRows(rows)
		want[name] = rows
	}
	if crashed {
		// A snapshot of the open database: what a crash leaves.
		snap := t.TempDir()
		if err := os.CopyFS(snap, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		db.Close()
		src = snap
		os.Remove(filepath.Join(src, "catalog.lock"))
	} else {
		db.Close()
	}
	catFiles := []string{filepath.Join(src, sealFile)}
	filepath.Walk(filepath.Join(src, "catalog"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Size() > 0 && !strings.HasSuffix(p, "LOCK") {
			catFiles = append(catFiles, p)
		}
		return nil
	})
	sort.Strings(catFiles)
	trials := 120
	if testing.Short() {
		trials = 30
	}
	rng := rand.New(rand.NewSource(13))
	outcomes := map[string]int{}
	for i := 0; i < trials; i++ {
		dir := filepath.Join(t.TempDir(), "db")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		target := catFiles[rng.Intn(len(catFiles))]
		rel, _ := filepath.Rel(src, target)
		what := corruptFile(rng, filepath.Join(dir, rel)) + " " + filepath.Base(rel)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("trial %d (%s): PANIC %v", i, what, r)
				}
			}()
			before := storeState(t, dir)
			db, err := Open(dir, Options{})
			if err != nil {
				if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "catalog") {
					t.Errorf("trial %d (%s): error of kind %v: %v", i, what, nferr.KindOf(err), err)
				}
				// A failed open leaves the damaged catalog as it found it.
				if after := storeState(t, dir); after != before {
					t.Errorf("trial %d (%s): the failed open changed the catalog", i, what)
				}
				outcomes["open fails"]++
				return
			}
			defer db.Close()
			for name, rows := range want {
				tb, err := db.Table(name)
				if err != nil {
					t.Errorf("trial %d (%s): table %s LOST: %v", i, what, name, err)
					continue
				}
				got, err := scanRows(db, ScanSpec{Table: name}.AllColumns(tb))
				if err != nil {
					if !nferr.Is(err, nferr.KindData) {
						t.Errorf("trial %d (%s): scan %s: kind %v: %v", i, what, name, nferr.KindOf(err), err)
					}
					outcomes["scan fails"]++
					continue
				}
				sortRows(got)
				if !equalRows(got, rows) {
					t.Errorf("trial %d (%s): table %s: WRONG ANSWER: %d rows, want %d", i, what, name, len(got), len(rows))
					continue
				}
				outcomes["right"]++
			}
		}()
	}
	t.Logf("%d trials over %d catalog files: %v", trials, len(catFiles), outcomes)
}

// TestCatalogSeal: a database whose catalog disappeared, lost its last
// commits, or whose seal is damaged does not open as an older or empty
// database.
func TestCatalogSeal(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, "t", testSchema())
	appendRows(t, db, "t", testSchema(), randomRows(randSource(1), 0, 100, 0))
	commits := db.cat.commits
	db.Close()
	if n, ok, err := readSeal(dir); err != nil || !ok || n != commits || n < 2 {
		t.Fatalf("seal: %d %v %v, catalog commits %d", n, ok, err, commits)
	}
	mustFailOpen := func(what, want string) {
		t.Helper()
		db, err := Open(dir, Options{})
		if err == nil {
			db.Close()
			t.Fatalf("%s: opened", what)
		}
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The seal says more commits were made than the catalog holds.
	os.WriteFile(filepath.Join(dir, sealFile), []byte(sealBody(commits+1)), 0o644)
	mustFailOpen("seal ahead", "lost the last 1")
	// A damaged seal.
	os.WriteFile(filepath.Join(dir, sealFile), []byte(strings.Replace(sealBody(commits), "commits=", "commits=9", 1)), 0o644)
	mustFailOpen("damaged seal", "seal file")
	// A seal behind the catalog (a crash between the two writes) is fine
	// and catches up.
	os.WriteFile(filepath.Join(dir, sealFile), []byte(sealBody(commits-1)), 0o644)
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("seal behind: %v", err)
	}
	db.Close()
	if n, _, _ := readSeal(dir); n != commits {
		t.Fatalf("seal after open %d, want %d", n, commits)
	}
	// The catalog is gone: not a new, empty database.
	os.RemoveAll(filepath.Join(dir, "catalog"))
	mustFailOpen("catalog removed", "has lost its catalog")
	os.Mkdir(filepath.Join(dir, "catalog"), 0o755)
	mustFailOpen("catalog emptied", "has lost its catalog")
}

// TestIntegrityWithoutChunkSums: a file registered before chunk checksums
// existed (no Sums, no FooterSum) has its whole-file checksum verified on
// first use instead.
func TestIntegrityWithoutChunkSums(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	mustCreate(t, db, "t", testSchema())
	appendRows(t, db, "t", testSchema(), randomRows(randSource(2), 0, 2000, 0.1))
	tb := mustTable(t, db, "t")
	f := tb.Files[0]
	if f.FooterSum == 0 || len(f.RowGroups[0].Sums) != len(tb.Columns) {
		t.Fatalf("checksums not recorded: footer %x, sums %v", f.FooterSum, f.RowGroups[0].Sums)
	}
	f.FooterSum = 0
	for i := range f.RowGroups {
		f.RowGroups[i].Sums = nil
	}
	p := db.Path(f)
	b, _ := os.ReadFile(p)
	b[len(b)/3] ^= 0x10
	os.WriteFile(p, b, 0o644)
	_, err := scanRows(db, ScanSpec{Table: "t"}.AllColumns(tb))
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "is corrupt: checksum") {
		t.Fatalf("err = %v", err)
	}
}
