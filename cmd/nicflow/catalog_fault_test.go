package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// catalogFiles lists DIR/catalog's files with their sizes and contents'
// lengths (not the lock): what a failed command must leave as it was.
func catalogFiles(t *testing.T, dir string) string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, "catalog"))
	var out []string
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "catalog", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+":"+string(rune(len(b)%1000))+string(b))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestCatalogFaults runs the reproductions of the fault campaign (issue
// 28) as a user does: a deleted manifest marker, a deleted catalog and
// seal. Every command fails with status 3 and names the recovery, none
// changes the catalog, and `catalog recover` brings the database back.
func TestCatalogFaults(t *testing.T) {
	exe := mustExe(t)
	src := tpchDir(t, 0.01)
	run := func(args ...string) (int, string) { return runExe(t, exe, args...) }
	commands := func(dir string) [][]string {
		return [][]string{
			{"sql", "--dir", dir, "select 1"},
			{"sql", "--dir", dir, "select count(*) from lineitem"},
			{"catalog", "ls", "--dir", dir},
			{"catalog", "verify", "--dir", dir},
		}
	}

	// 1. The manifest marker is deleted.
	x := copyTPCH(t, src)
	if ms, _ := filepath.Glob(filepath.Join(x, "catalog", "marker.manifest.*")); len(ms) != 1 || os.Remove(ms[0]) != nil {
		t.Fatalf("manifest marker: %v", ms)
	}
	before := catalogFiles(t, x)
	for _, args := range commands(x) {
		if code, out := run(args...); code != 3 || !strings.Contains(out, "catalog recover") || strings.Contains(out, "panic") {
			t.Errorf("nicflow %s: exit %d, want 3 naming the recovery\n%s", strings.Join(args, " "), code, out)
		}
	}
	if catalogFiles(t, x) != before {
		t.Fatal("failed commands changed the catalog")
	}
	if code, out := run("catalog", "recover", "--dir", x); code != 0 || !strings.Contains(out, "manifest marker") {
		t.Fatalf("catalog recover: exit %d\n%s", code, out)
	}
	if code, out := run("sql", "--dir", x, "select count(*) from lineitem"); code != 0 || !strings.Contains(out, "60175") {
		t.Fatalf("after recover: exit %d\n%s", code, out)
	}

	// 2. The catalog and its seal are deleted: not an empty database.
	y := copyTPCH(t, src)
	ents, _ := os.ReadDir(filepath.Join(y, "catalog"))
	for _, e := range ents {
		os.Remove(filepath.Join(y, "catalog", e.Name()))
	}
	os.Remove(filepath.Join(y, "catalog.seal"))
	for _, args := range commands(y) {
		if code, out := run(args...); code != 3 || !strings.Contains(out, "has data files") || !strings.Contains(out, "catalog recover") {
			t.Errorf("nicflow %s: exit %d, want 3 naming the recovery\n%s", strings.Join(args, " "), code, out)
		}
	}
	if code, out := run("catalog", "recover", "--dir", y); code != 0 || !strings.Contains(out, "rebuilt") || !strings.Contains(out, "main.lineitem") {
		t.Fatalf("catalog recover: exit %d\n%s", code, out)
	}
	if code, out := run("tpch", "run", "--dir", y, "--verify"); code != 0 {
		t.Fatalf("tpch run --verify after the rebuild: exit %d\n%s", code, out)
	}
}

// TestFullDiskExitStatus: on a small tmpfs, a CREATE TABLE AS that fills
// the disk fails within seconds with status 4 (it spun forever), the
// database stays readable and consistent, and at 0 bytes free reads work,
// writes fail with 4 and nothing panics.
func TestFullDiskExitStatus(t *testing.T) {
	exe := mustExe(t)
	if os.Geteuid() != 0 {
		t.Skip("full-disk test skipped: mounting a small tmpfs needs root")
	}
	root := t.TempDir()
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=20m"); err != nil {
		t.Skipf("full-disk test skipped: cannot mount a tmpfs (%v)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) })
	dir := filepath.Join(root, "db")
	if err := os.CopyFS(dir, os.DirFS(tpchDir(t, 0.01))); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) { return runExe(t, exe, args...) }
	start := time.Now()
	code, out := run("sql", "--dir", dir, "create table big2 as select l.*, n.*, r.*, random() as x from lineitem l, nation n, region r")
	if code != 4 || !strings.Contains(out, "no space left") {
		t.Fatalf("CTAS on a full disk: exit %d, want 4\n%s", code, out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the full disk took %v to fail the statement", d)
	}
	if code, out := run("sql", "--dir", dir, "select count(*) from lineitem"); code != 0 || !strings.Contains(out, "60175") {
		t.Fatalf("after the failed CTAS: exit %d\n%s", code, out)
	}
	// 0 bytes free.
	f, err := os.Create(filepath.Join(root, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"sql", "--dir", dir, "select count(*) from lineitem"}, 0},
		{[]string{"catalog", "ls", "--dir", dir}, 0},
		{[]string{"catalog", "verify", "--dir", dir}, 0},
		{[]string{"sql", "--dir", dir, "create table t2 as select * from nation"}, 4},
		{[]string{"sql", "--dir", dir, "insert into nation select * from nation"}, 4},
		{[]string{"sql", "--dir", dir, "drop table region"}, 0},
	} {
		code, out := run(c.args...)
		if code != c.want || strings.Contains(out, "panic") {
			t.Errorf("nicflow %s at 0 bytes free: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.want, out)
		}
	}
}
