package storage

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/emutest"
)

// Crash tests re-execute the test binary as a child process that opens a
// database, starts a change and is killed (SIGKILL) at a chosen point or
// at a random time. The parent reopens the database and checks that the
// catalog holds exactly the old or the new state, that every file it
// references is intact, and that no orphan file is left.

const (
	envCrashDir   = "NICFLOW_CRASH_DIR"
	envCrashOp    = "NICFLOW_CRASH_OP"
	envCrashPoint = "NICFLOW_CRASH_POINT" // "name:n": die at the n-th hit
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCrashDir); dir != "" {
		os.Exit(crashChild(dir, os.Getenv(envCrashOp), os.Getenv(envCrashPoint)))
	}
	os.Exit(m.Run())
}

func crashSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	}, nil)
}

func crashRows(start, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{int64(start + i), int64(start+i) * 3}
	}
	return rows
}

var crashWrite = WriteOptions{RowGroupRows: 200, FileRows: 400}

// crashChild runs one operation and dies at the crash point.
func crashChild(dir, op, point string) int {
	if point != "" {
		name, nstr, _ := strings.Cut(point, ":")
		want, _ := strconv.Atoi(nstr)
		hits := 0
		crashHook = func(p string) {
			if p == name {
				hits++
				if hits >= max(want, 1) {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					time.Sleep(time.Hour)
				}
			}
		}
	}
	db, err := Open(dir, Options{Write: crashWrite})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 2
	}
	sch := crashSchema()
	switch op {
	case "load", "loop":
		for round := 0; ; round++ {
			if err := commitRows(db, "t", AppendOptions{}, sch, crashRows(1000+round*1000, 1000)); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			fmt.Printf("committed %d\n", round+1)
			if op == "load" {
				break
			}
		}
	case "replace":
		if err := commitRows(db, "t", AppendOptions{Replace: true}, sch, crashRows(5000, 300)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	case "rewriteloop":
		// UPDATE and DELETE: read the table, replace it with its rows
		// shifted by 1000 (rounds restart from what is committed).
		for round := 0; ; round++ {
			tb, err := db.Table("t")
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			rows, _ := scanAllRows(db)
			shifted := make([]row, len(rows))
			for i, r := range rows {
				shifted[i] = row{r[0].(int64) + 1000, r[1].(int64) + 3000}
			}
			if err := commitRows(db, "t", AppendOptions{Replace: true, Generation: tb.Generation}, sch, shifted); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			fmt.Printf("committed %d\n", round+1)
		}
	case "rewritefile":
		// UPDATE and DELETE narrowed to the files their WHERE touches:
		// replace one file (in turn) by a new file of its rows.
		for round := 0; ; round++ {
			tb, err := db.Table("t")
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			f := tb.Files[round%len(tb.Files)]
			rows, err := scanIDV(db, ScanSpec{Table: "t", Columns: []string{"id", "v"}, Files: []FileRange{{Path: f.Path}}})
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			if err := commitRows(db, "t", AppendOptions{Replace: true, Generation: tb.Generation, ReplaceFiles: []string{f.Path}}, sch, rows); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			fmt.Printf("committed %d\n", round+1)
		}
	case "scan":
		// Reading an older catalog's files records their sums (upgrade.go).
		if _, err := scanAllRows(db); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	case "drop":
		if err := db.DropTable("t", false); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	case "create":
		if err := db.CreateTable("u", sch, CreateOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	}
	db.Close()
	return 0
}

// crashSetup makes a database with table t of 1000 rows (ids 0..999).
func crashSetup(t *testing.T) string {
	dir := t.TempDir()
	db, err := Open(dir, Options{Write: crashWrite})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, "t", crashSchema())
	appendRows(t, db, "t", crashSchema(), crashRows(0, 1000))
	db.Close()
	return dir
}

func runChild(t *testing.T, dir, op, point string, killAfter time.Duration) (stdout string, exitErr error) {
	t.Helper()
	emutest.Skip(t, "the child process it crashes")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashOp+"="+op, envCrashPoint+"="+point)
	var out strings.Builder
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
		close(done)
	}()
	if killAfter > 0 {
		time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
	}
	<-done
	err = cmd.Wait()
	if errb.Len() > 0 {
		t.Logf("child stderr: %s", errb.String())
	}
	return out.String(), err
}

// checkState reopens dir and checks the invariants; it returns the ids in
// table t (nil when t does not exist) and the files recovery removed.
func checkState(t *testing.T, dir string) (ids []int64, exists bool, recovered []string) {
	t.Helper()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer db.Close()
	// Every referenced file is intact.
	res, err := db.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]bool{}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("after crash: %v", r.Err)
		}
		ref[r.Path] = true
	}
	// No orphans: every file under a table directory is referenced.
	for _, sub := range []string{"t", "u"} {
		ents, _ := os.ReadDir(filepath.Join(db.Dir(), sub))
		for _, e := range ents {
			p := filepath.Join(db.Dir(), sub, e.Name())
			if !ref[p] {
				t.Fatalf("after crash: orphan file %s", p)
			}
		}
	}
	// No intent or garbage records survive recovery.
	if err := db.cat.lockWrite(); err != nil {
		t.Fatal(err)
	}
	for _, pfx := range []string{pfxIntent, pfxGarbage} {
		db.cat.scan(pfx, func(k, v []byte) error {
			t.Fatalf("after recovery: catalog still holds %s", k)
			return nil
		})
	}
	db.cat.unlockWrite()
	tb, err := db.Table("t")
	if err != nil {
		return nil, false, db.Recovered
	}
	rows, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"id", "v"}}, ScanOptions{})
	if int64(len(rows)) != tb.Rows() {
		t.Fatalf("catalog says %d rows, scan returned %d", tb.Rows(), len(rows))
	}
	for _, r := range rows {
		id := r[0].(int64)
		if r[1].(int64) != id*3 {
			t.Fatalf("row %d has v=%d, want %d", id, r[1], id*3)
		}
		ids = append(ids, id)
	}
	sortInt64(ids)
	return ids, true, db.Recovered
}

func sortInt64(s []int64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func isRange(ids []int64, lo, hi int64) bool {
	if int64(len(ids)) != hi-lo {
		return false
	}
	for i, id := range ids {
		if id != lo+int64(i) {
			return false
		}
	}
	return true
}

func TestCrashDuringLoad(t *testing.T) {
	cases := []struct {
		point     string
		committed bool // the new rows must be visible
		orphans   bool // recovery must remove files
	}{
		{"file-written:1", false, true},
		{"file-written:2", false, true},
		{"renamed:2", false, true},
		{"before-commit:2", false, true}, // hit 1 is the intent's own commit
		{"after-commit:2", true, false},
	}
	for _, c := range cases {
		t.Run(c.point, func(t *testing.T) {
			dir := crashSetup(t)
			_, err := runChild(t, dir, "load", c.point, 0)
			if err == nil {
				t.Fatal("child was supposed to die")
			}
			ids, ok, rec := checkState(t, dir)
			if !ok {
				t.Fatal("table t vanished")
			}
			want := int64(1000)
			if c.committed {
				want = 2000
			}
			if !isRange(ids, 0, want) {
				t.Fatalf("after crash at %s: %d rows, want ids 0..%d", c.point, len(ids), want-1)
			}
			if c.orphans != (len(rec) > 0) {
				t.Fatalf("after crash at %s: recovery removed %v, want orphans=%v", c.point, rec, c.orphans)
			}
		})
	}
}

func TestCrashDuringDDL(t *testing.T) {
	cases := []struct {
		op, point string
		exists    bool  // does t exist afterwards
		rows      int64 // rows of t if it exists
	}{
		{"drop", "before-commit:1", true, 1000},
		{"drop", "after-commit:1", false, 0},
		{"drop", "before-gc:1", false, 0},
		{"replace", "before-commit:2", true, 1000},
		{"replace", "after-commit:2", true, 300},
		{"replace", "before-gc:1", true, 300},
		{"create", "before-commit:1", true, 1000},
		{"create", "after-commit:1", true, 1000},
	}
	for _, c := range cases {
		t.Run(c.op+"/"+c.point, func(t *testing.T) {
			dir := crashSetup(t)
			if _, err := runChild(t, dir, c.op, c.point, 0); err == nil {
				t.Fatal("child was supposed to die")
			}
			ids, ok, _ := checkState(t, dir)
			if ok != c.exists || int64(len(ids)) != c.rows {
				t.Fatalf("after %s crash at %s: exists=%v rows=%d, want exists=%v rows=%d", c.op, c.point, ok, len(ids), c.exists, c.rows)
			}
			if c.op == "replace" && c.rows == 300 && !isRange(ids, 5000, 5300) {
				t.Fatalf("replace: wrong rows after crash")
			}
		})
	}
}

// scanAllRows reads table t's rows (the child's view, no testing.T).
func scanAllRows(db *DB) ([]row, error) {
	return scanIDV(db, ScanSpec{Table: "t", Columns: []string{"id", "v"}})
}

// scanIDV reads the rows of a scan of t's id and v (v unscaled).
func scanIDV(db *DB, spec ScanSpec) ([]row, error) {
	sc, err := db.NewScanner(spec, ScanOptions{})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var out []row
	for {
		rec, err := sc.Next(context.Background())
		if err != nil || rec == nil {
			return out, err
		}
		ids := rec.Column(0).(*array.Int64)
		vs := rec.Column(1).(*array.Decimal64)
		for i := 0; i < ids.Len(); i++ {
			out = append(out, row{ids.Value(i), int64(vs.Value(i))})
		}
		rec.Release()
	}
}

// TestCrashDuringRewrites kills a child that rewrites the whole table in a
// loop (as UPDATE and DELETE do) at random moments: the table always holds
// one whole version, 1000 consecutive ids.
func TestCrashDuringRewrites(t *testing.T) {
	killRewrites(t, "rewriteloop", "not one whole version", func(ids []int64) bool {
		return len(ids) == 1000 && isRange(ids, ids[0], ids[0]+1000) && ids[0]%1000 == 0
	})
}

// TestCrashDuringFileRewrites kills a child that replaces one file of the
// table at a time (as a narrowed UPDATE does) at random moments: the
// table always holds each of its 1000 ids once.
func TestCrashDuringFileRewrites(t *testing.T) {
	killRewrites(t, "rewritefile", "ids lost or doubled", func(ids []int64) bool {
		return len(ids) == 1000 && isRange(ids, 0, 1000)
	})
}

// killRewrites kills a child running rewrite loop op at five random
// moments; after each kill the table's ids must pass whole (else the
// failure says broken), and some rewrite must have committed in all.
func killRewrites(t *testing.T, op, broken string, whole func(ids []int64) bool) {
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	dir := crashSetup(t)
	commits := 0
	for i := 0; i < 5; i++ {
		out, _ := runChild(t, dir, op, "", time.Duration(30+rng.Intn(250))*time.Millisecond)
		commits += strings.Count(out, "committed")
		ids, ok, _ := checkState(t, dir)
		if !ok || !whole(ids) {
			t.Fatalf("kill %d: %d rows from %v: %s", i, len(ids), ids[:min(len(ids), 3)], broken)
		}
	}
	if commits == 0 {
		t.Errorf("no %s committed before the kills: the test tested nothing", op)
	}
}

// TestCrashAtRandomTimes kills a child that loads in a loop at random
// moments: the table always holds whole loads.
func TestCrashAtRandomTimes(t *testing.T) {
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	dir := crashSetup(t)
	for i := 0; i < 6; i++ {
		before, _, _ := checkState(t, dir)
		out, _ := runChild(t, dir, "loop", "", time.Duration(30+rng.Intn(250))*time.Millisecond)
		seen := strings.Count(out, "committed")
		ids, ok, _ := checkState(t, dir)
		if !ok {
			t.Fatal("table vanished")
		}
		added := len(ids) - len(before)
		if added%1000 != 0 || added/1000 < seen || added/1000 > seen+1 {
			t.Fatalf("kill %d: %d rows added, child reported %d commits of 1000", i, added, seen)
		}
		seenIDs := map[int64]bool{}
		for _, id := range ids {
			if seenIDs[id] {
				// Each round restarts at id 1000: duplicates across kills
				// are expected, but counts must be whole loads.
				continue
			}
			seenIDs[id] = true
		}
	}
}

// TestSharedDatabase: two handles on one directory (as two processes; the
// locks are per open file) read and write side by side. Each sees what
// the other committed; appends from both land; files a replacement made
// unreachable stay while the other handle may read them, and go when a
// process is alone with the database.
func TestSharedDatabase(t *testing.T) {
	dir := t.TempDir()
	db1, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	sch := crashSchema()
	mustCreate(t, db1, "t", sch)
	appendRows(t, db1, "t", sch, crashRows(0, 100))
	if rows, _ := scanAll(t, db2, ScanSpec{Table: "t", Columns: []string{"id", "v"}}, ScanOptions{}); len(rows) != 100 {
		t.Fatalf("the other handle sees %d rows, want 100", len(rows))
	}
	// Appends from both, at once.
	var wg sync.WaitGroup
	for i, db := range []*DB{db1, db2, db1, db2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendRows(t, db, "t", sch, crashRows(1000*(i+1), 50))
		}()
	}
	wg.Wait()
	for _, db := range []*DB{db1, db2} {
		if rows, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{}); len(rows) != 300 {
			t.Fatalf("after concurrent appends: %d rows, want 300", len(rows))
		}
	}
	// db2 holds a version; db1 replaces it: its files stay while db2 is
	// open.
	old, err := db2.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	app, err := db1.NewAppender("t", AppendOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := recordOf(memory.DefaultAllocator, sch, crashRows(5000, 10))
	defer rec.Release()
	if err := app.Append(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, f := range old.Files {
		if _, err := os.Stat(db2.Path(f)); err != nil {
			t.Fatalf("a file of the version the other handle reads was deleted: %v", err)
		}
	}
	if rows, _ := scanAll(t, db2, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{}); len(rows) != 10 {
		t.Fatalf("after the replace the other handle sees %d rows, want 10", len(rows))
	}
	// Views and drops are seen too.
	if err := db2.CreateView("v", nil, "select 1", false); err != nil {
		t.Fatal(err)
	}
	if db1.View("v") == nil {
		t.Fatal("a view created by the other handle is not seen")
	}
	if err := db2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db1.Close(); err != nil {
		t.Fatal(err)
	}
	// Alone, the next open removes the unreachable files.
	db3, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db3.Close()
	for _, f := range old.Files {
		if _, err := os.Stat(db3.Path(f)); err == nil {
			t.Fatalf("unreachable file %s left after a lone open", f.Path)
		}
	}
	if rows, _ := scanAll(t, db3, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{}); len(rows) != 10 {
		t.Fatalf("reopened: %d rows, want 10", len(rows))
	}
}
