package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestCatalogOnFullDisk: with no free space (as the file system reports
// it), a change of the catalog fails at once with KindResource, before
// Pebble writes anything (Pebble retries a failed flush forever and ends
// the process on a failed manifest write); reads go on; DROP TABLE may
// use the catalog's reserve, and fails the same way once it is gone.
func TestCatalogOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	smallDB(t, dir)
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustCreate(t, db, "x", testSchema())
	// The read-write section just ended refilled the reserve.
	if st, err := os.Stat(filepath.Join(dir, reserveFile)); err != nil || st.Size() < reserveMin {
		t.Fatalf("reserve after a change: %v %v", st, err)
	}
	db.cat.mu.Lock()
	if db.cat.sticky {
		db.cat.release()
	}
	db.cat.space.freeFn = func() (int64, error) { return 0, nil }
	db.cat.mu.Unlock()
	start := time.Now()
	err = db.CreateTable("y", testSchema(), CreateOptions{})
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("create on a full disk: %v", err)
	}
	if _, err := db.NewAppender("t", AppendOptions{}); !nferr.Is(err, nferr.KindResource) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing took %v", d)
	}
	if n := len(tableRows(t, db)["main.t"]); n != 1500 {
		t.Errorf("read %d rows on a full disk, want 1500", n)
	}
	if err := db.DropTable("x", false); err != nil {
		t.Fatalf("drop with the reserve: %v", err)
	}
	db.cat.mu.Lock()
	if db.cat.sticky {
		db.cat.release()
	}
	os.Remove(db.cat.space.path())
	db.cat.space.reserve = 0
	db.cat.mu.Unlock()
	if err := db.DropTable("s.u", false); !nferr.Is(err, nferr.KindResource) {
		t.Fatalf("drop without a reserve on a full disk: %v", err)
	}
}

// enospcFile fails its first write half-way with ENOSPC.
type enospcFile struct {
	vfs.File
	failed bool
	wrote  []byte
}

func (f *enospcFile) Write(p []byte) (int, error) {
	if !f.failed {
		f.failed = true
		n := len(p) / 2
		f.wrote = append(f.wrote, p[:n]...)
		return n, &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	}
	f.wrote = append(f.wrote, p...)
	return len(p), nil
}

// TestReserveTakesOverAFullDisk: a write of the store that finds the disk
// full gives back part of the reserve and goes on, so that Pebble never
// sees the error; with no reserve left, the error is Pebble's.
func TestReserveTakesOverAFullDisk(t *testing.T) {
	dir := t.TempDir()
	s := newCatalogSpace(dir)
	s.freeFn = func() (int64, error) { return 1 << 40, nil }
	s.refill()
	if s.reserve != reserveMin {
		t.Fatalf("reserve %d, want %d", s.reserve, reserveMin)
	}
	inner := &enospcFile{}
	f := storeFile{File: inner, space: s}
	p := make([]byte, 1000)
	for i := range p {
		p[i] = byte(i)
	}
	if n, err := f.Write(p); n != len(p) || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	if string(inner.wrote) != string(p) {
		t.Fatal("the bytes written differ")
	}
	if st, _ := os.Stat(s.path()); s.reserve != reserveMin-releaseStep || st.Size() != s.reserve {
		t.Fatalf("reserve %d (file %d), want %d", s.reserve, st.Size(), reserveMin-releaseStep)
	}
	s.reserve = 0
	os.Remove(s.path())
	f = storeFile{File: &enospcFile{}, space: s}
	if _, err := f.Write(p); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write with no reserve: %v", err)
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, for tests of
// a real full disk; it skips the test where mounting is not allowed.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("full-disk test skipped: mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("full-disk test skipped: cannot mount a tmpfs (%v)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file in dir until the file system is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !isNoSpace(err) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last blocks, a few bytes at a time.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}

// TestFullDisk runs a database on a small tmpfs: a load that fills the
// disk fails within seconds with KindResource (it spun forever: Pebble
// retried a flush, and its abort waited on the catalog), leaves no file
// behind and the database as it was; at 0 bytes free, reads work, writes
// fail with KindResource and nothing panics (it did: Pebble's manifest
// write failed); dropping a table frees the disk.
func TestFullDisk(t *testing.T) {
	root := mountTmpfs(t, "24m")
	dir := filepath.Join(root, "db")
	want := smallDB(t, dir)
	db, err := Open(dir, Options{Write: WriteOptions{RowGroupRows: 4096, FileRows: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	sch := testSchema()
	done := make(chan error, 1)
	go func() {
		a, err := db.NewAppender("big", AppendOptions{Create: true, Schema: sch})
		if err != nil {
			done <- err
			return
		}
		rows := randomRows(randSource(3), 0, 20000, 0)
		rec := recordOf(memory.NewGoAllocator(), sch, rows)
		defer rec.Release()
		for {
			if err := a.Append(rec); err != nil {
				a.Abort()
				done <- err
				return
			}
		}
	}()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a load on a full disk did not end in 60 s")
	}
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("load on a full disk: %v (kind %v)", err, nferr.KindOf(err))
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "big", "*")); len(ms) > 0 {
		t.Errorf("files left behind: %v", ms)
	}
	sameTables(t, "after the failed load", tableRows(t, db), want)
	db.Close()

	fillDisk(t, root)
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("open at 0 bytes free: %v", err)
	}
	sameTables(t, "at 0 bytes free", tableRows(t, db), want)
	if err := db.CreateTable("y", sch, CreateOptions{}); !nferr.Is(err, nferr.KindResource) {
		t.Fatalf("create at 0 bytes free: %v", err)
	}
	if err := db.DropTable("s.u", false); err != nil {
		t.Fatalf("drop at 0 bytes free (the reserve): %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close at 0 bytes free: %v", err)
	}
	os.Remove(filepath.Join(root, "filler"))
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	delete(want, "s.u")
	sameTables(t, "after the disk was freed", tableRows(t, db), want)
	if len(db.Recovered) > 0 {
		t.Errorf("leftovers recovered: %v", db.Recovered)
	}
	mustCreate(t, db, "y", sch)
}
