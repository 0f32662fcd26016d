package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// storeState is the content of every file of DIR/catalog but the lock,
// with the seal: what a failed open or a reader must leave as it was.
func storeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	ents, err := os.ReadDir(filepath.Join(dir, "catalog"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "catalog", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %d %016x", e.Name(), len(b), xxh3.Hash(b)))
	}
	if b, err := os.ReadFile(filepath.Join(dir, sealFile)); err == nil {
		lines = append(lines, "seal "+strings.TrimSpace(string(b)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// smallDB makes a database with two tables and closes it; it returns the
// rows of each table.
func smallDB(t *testing.T, dir string) map[string][]row {
	t.Helper()
	db, err := Open(dir, Options{Write: WriteOptions{RowGroupRows: 300, FileRows: 700}})
	if err != nil {
		t.Fatal(err)
	}
	sch := testSchema()
	mustCreate(t, db, "t", sch)
	appendRows(t, db, "t", sch, randomRows(randSource(1), 0, 1500, 0.1))
	mustCreate(t, db, "s.u", sch)
	appendRows(t, db, "s.u", sch, randomRows(randSource(2), 0, 200, 0.1))
	want := tableRows(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

func tableRows(t *testing.T, db *DB) map[string][]row {
	t.Helper()
	out := map[string][]row{}
	for _, tb := range db.Tables() {
		rows, _ := scanAll(t, db, ScanSpec{Table: tb.QualifiedName()}.AllColumns(tb), ScanOptions{})
		sortRows(rows)
		out[tb.QualifiedName()] = rows
	}
	return out
}

func sameTables(t *testing.T, what string, got, want map[string][]row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: tables %v, want %v", what, keysOf(got), keysOf(want))
	}
	for name, rows := range want {
		if !equalRows(got[name], rows) {
			t.Errorf("%s: table %s: %d rows, want %d (or other values)", what, name, len(got[name]), len(rows))
		}
	}
}

func keysOf(m map[string][]row) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestReadersWriteNothing: opening a database and reading it (tables,
// scans, a refresh after another process's commit) writes nothing in its
// catalog (issue: every open wrote a new manifest and log).
func TestReadersWriteNothing(t *testing.T) {
	dir := t.TempDir()
	smallDB(t, dir)
	before := storeState(t, dir)
	for i := 0; i < 3; i++ {
		db, err := OpenExisting(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tableRows(t, db)
		db.Views()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if after := storeState(t, dir); after != before {
		t.Fatalf("reading changed the catalog:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// TestFailedOpenModifiesNothing: a catalog that is damaged or incomplete
// fails to open with KindData saying how to recover, and the failed open
// changes none of its files: a recoverable catalog stays recoverable.
// (Before, a missing manifest marker made Pebble create a new store and
// delete the table holding the catalog.)
func TestFailedOpenModifiesNothing(t *testing.T) {
	src := t.TempDir()
	smallDB(t, src)
	for _, c := range []struct {
		name   string
		damage func(cdir string) error
		want   string
	}{
		{"no manifest marker", func(cdir string) error { return removeGlob(cdir, "marker.manifest.*") }, "manifest marker"},
		{"no manifest", func(cdir string) error { return removeGlob(cdir, "MANIFEST-*") }, "damaged"},
		{"no tables", func(cdir string) error { return removeGlob(cdir, "*.sst") }, "damaged"},
		{"no marker, no manifest", func(cdir string) error {
			if err := removeGlob(cdir, "marker.manifest.*"); err != nil {
				return err
			}
			return removeGlob(cdir, "MANIFEST-*")
		}, "no manifest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			if err := c.damage(filepath.Join(dir, "catalog")); err != nil {
				t.Fatal(err)
			}
			before := storeState(t, dir)
			for i := 0; i < 2; i++ {
				db, err := Open(dir, Options{})
				if err == nil {
					db.Close()
					t.Fatal("a damaged catalog opened")
				}
				if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "catalog recover") {
					t.Fatalf("open: %v (kind %v)", err, nferr.KindOf(err))
				}
				if strings.Contains(err.Error(), "<") {
					t.Errorf("Pebble's internal text in the error: %v", err)
				}
			}
			if after := storeState(t, dir); after != before {
				t.Fatalf("a failed open changed the catalog:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

func removeGlob(dir, pattern string) error {
	ms, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		return fmt.Errorf("nothing matches %s in %s", pattern, dir)
	}
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			return err
		}
	}
	return nil
}

// TestRecoverMarker: a store that lost its manifest marker gets it back
// from the newest manifest whose catalog is whole, and holds every table
// as before; the data files are not touched.
func TestRecoverMarker(t *testing.T) {
	dir := t.TempDir()
	want := smallDB(t, dir)
	// More opens: several manifests, the newest holding the catalog.
	for i := 0; i < 2; i++ {
		db, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, db, fmt.Sprintf("e%d", i), testSchema())
		db.Close()
	}
	db, _ := Open(dir, Options{})
	want = tableRows(t, db)
	db.Close()
	if err := removeGlob(filepath.Join(dir, "catalog"), "marker.manifest.*"); err != nil {
		t.Fatal(err)
	}
	rep, err := Recover(context.Background(), dir, RecoverOptions{DryRun: true})
	if err != nil || rep.Action != "marker" {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if hasManifestMarker(filepath.Join(dir, "catalog")) {
		t.Fatal("a dry run restored the marker")
	}
	rep, err = Recover(context.Background(), dir, RecoverOptions{})
	if err != nil || rep.Action != "marker" || rep.Manifest == "" {
		t.Fatalf("recover: %+v, %v", rep, err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameTables(t, "after restoring the marker", tableRows(t, db), want)
	db.Close()
	if rep, err := Recover(context.Background(), dir, RecoverOptions{}); err != nil || rep.Action != "healthy" {
		t.Fatalf("recover of a healthy catalog: %+v, %v", rep, err)
	}
}

// TestLostCatalogIsAnError: data files without a catalog (and without a
// seal) are an error naming the recovery, not an empty database; Recover
// rebuilds the catalog from them.
func TestLostCatalogIsAnError(t *testing.T) {
	dir := t.TempDir()
	want := smallDB(t, dir)
	os.RemoveAll(filepath.Join(dir, "catalog"))
	os.Remove(filepath.Join(dir, sealFile))
	for _, open := range []func() (*DB, error){
		func() (*DB, error) { return Open(dir, Options{}) },
		func() (*DB, error) { return OpenExisting(dir, Options{}) },
	} {
		db, err := open()
		if err == nil {
			db.Close()
			t.Fatal("a database without its catalog opened")
		}
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "has data files") || !strings.Contains(err.Error(), "catalog recover") {
			t.Fatalf("open: %v", err)
		}
	}
	os.Mkdir(filepath.Join(dir, "catalog"), 0o755)
	if db, err := Open(dir, Options{}); err == nil {
		db.Close()
		t.Fatal("a database with an empty catalog directory opened")
	}
	rep, err := Recover(context.Background(), dir, RecoverOptions{})
	if err != nil || rep.Action != "rebuilt" || len(rep.Tables) != 2 {
		t.Fatalf("recover: %+v, %v", rep, err)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sameTables(t, "rebuilt", tableRows(t, db), want)
	if res, err := db.Verify(context.Background()); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range res {
			if r.Err != nil {
				t.Error(r.Err)
			}
		}
	}
}

// TestRecoverRebuild: a catalog rebuilt from the data files gives back
// each table's definition (defaults, checks, primary and unique keys with
// their recorded keys, foreign keys with their references), leaves out
// files that later writes replaced but that were not yet deleted (an
// UPDATE of some files, a compaction, CREATE OR REPLACE, a table dropped
// and created again), and moves the damaged catalog aside.
func TestRecoverRebuild(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{Write: WriteOptions{RowGroupRows: 2, FileRows: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	parent := &Constraints{
		Indexes:  []Index{{Name: "p_pkey", Columns: []string{"id"}, Primary: true, Constraint: true}},
		Checks:   []Check{{Name: "p_id_check", SQL: "id > 0"}},
		Defaults: []string{"", "7"},
	}
	if err := db.CreateTable("p", sch, CreateOptions{Constraints: parent}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "p", sch, []row{{int64(1), int64(10)}, {int64(2), int64(20)}, {int64(3), int64(30)}, {int64(4), nil}})
	child := &Constraints{ForeignKeys: []ForeignKey{{Name: "c_v_fkey", Columns: []string{"v"}, RefTable: "p"}}}
	if err := db.CreateTable("c", sch, CreateOptions{Constraints: child}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "c", sch, []row{{int64(100), int64(1)}, {int64(101), int64(2)}, {int64(102), nil}})
	// A table rewritten in part: the replaced file is kept on disk, as
	// when another process had the database open (its garbage waits).
	mustCreate(t, db, "r", sch)
	appendRows(t, db, "r", sch, []row{{int64(1), nil}, {int64(2), nil}, {int64(3), nil}, {int64(4), nil}})
	tb := mustTable(t, db, "r")
	stale := tb.Files[0].Path
	keep := filepath.Join(t.TempDir(), "stale")
	copyOrFail(t, filepath.Join(dir, stale), keep)
	if err := commitRows(db, "r", AppendOptions{Replace: true, Generation: tb.Generation, ReplaceFiles: []string{stale}}, sch, []row{{int64(11), int64(1)}}); err != nil {
		t.Fatal(err)
	}
	copyOrFail(t, keep, filepath.Join(dir, stale))
	// A table replaced whole, its old file kept.
	mustCreate(t, db, "w", sch)
	appendRows(t, db, "w", sch, []row{{int64(1), nil}})
	oldW := mustTable(t, db, "w").Files[0].Path
	copyOrFail(t, filepath.Join(dir, oldW), keep+"w")
	if err := commitRows(db, "w", AppendOptions{Create: true, Schema: sch, CreateOptions: CreateOptions{OrReplace: true}}, sch, []row{{int64(2), nil}}); err != nil {
		t.Fatal(err)
	}
	copyOrFail(t, keep+"w", filepath.Join(dir, oldW))
	// A table dropped and made again, the dropped one's file kept.
	mustCreate(t, db, "d", sch)
	appendRows(t, db, "d", sch, []row{{int64(1), nil}})
	oldD := mustTable(t, db, "d").Files[0].Path
	copyOrFail(t, filepath.Join(dir, oldD), keep+"d")
	if err := db.DropTable("d", false); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, "d", sch)
	appendRows(t, db, "d", sch, []row{{int64(2), nil}})
	copyOrFail(t, keep+"d", filepath.Join(dir, oldD))
	want := tableRows(t, db)
	db.Close()

	// The catalog's tables are lost (damage Pebble cannot open past).
	if err := removeGlob(filepath.Join(dir, "catalog"), "*.sst"); err != nil {
		t.Fatal(err)
	}
	if err := removeGlob(filepath.Join(dir, "catalog"), "*.log"); err != nil {
		t.Fatal(err)
	}
	if db, err := Open(dir, Options{}); err == nil {
		db.Close()
		t.Fatal("damaged catalog opened")
	}
	rep, err := Recover(ctx, dir, RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Action != "rebuilt" || rep.Aside == "" {
		t.Fatalf("recover: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(rep.Aside, "MANIFEST-000001")); err != nil {
		if ms, _ := filepath.Glob(filepath.Join(rep.Aside, "MANIFEST-*")); len(ms) == 0 {
			t.Errorf("the damaged catalog is not in %s", rep.Aside)
		}
	}
	skipped := map[string]int{}
	for _, rt := range rep.Tables {
		skipped[rt.Name] = rt.Skipped
		if !rt.Defined {
			t.Errorf("%s: no definition from the footers", rt.Name)
		}
	}
	if skipped["main.r"] != 1 || skipped["main.w"] != 1 || skipped["main.d"] != 1 {
		t.Errorf("files left out: %v, want one each of r, w and d", skipped)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sameTables(t, "rebuilt", tableRows(t, db), want)
	p := mustTable(t, db, "p")
	if len(p.Checks) != 1 || p.Checks[0].SQL != "id > 0" || len(p.Defaults) != 2 || p.Defaults[1] != "7" || len(p.Indexes) != 1 || !p.Indexes[0].Primary {
		t.Errorf("p's definition: checks %v, defaults %v, indexes %v", p.Checks, p.Defaults, p.Indexes)
	}
	// The primary key's values are recorded again: a duplicate fails.
	if err := commitRows(db, "p", AppendOptions{}, sch, []row{{int64(2), nil}}); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Errorf("a duplicate key after the rebuild: %v", err)
	}
	// The foreign key checks new rows, and guards its referenced keys.
	if err := commitRows(db, "c", AppendOptions{}, sch, []row{{int64(103), int64(99)}}); err == nil || !strings.Contains(err.Error(), "foreign key") {
		t.Errorf("a dangling reference after the rebuild: %v", err)
	}
	if err := commitRows(db, "c", AppendOptions{}, sch, []row{{int64(104), int64(3)}}); err != nil {
		t.Errorf("a good reference after the rebuild: %v", err)
	}
	if err := db.DropTable("p", false); err == nil {
		t.Error("the referenced table was dropped after the rebuild")
	}
}

func copyOrFail(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
