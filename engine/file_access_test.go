package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// A session limited to a directory reads and writes files there only:
// not outside it, not through "..", not through a symbolic link.
func TestFileAccess(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	s := newTestDB(t, Options{Parallelism: 2, FileAccess: root})
	ctx := context.Background()
	run := func(sql string) error {
		r, err := s.Query(ctx, sql)
		if err == nil {
			r.Close()
		}
		return err
	}
	in := filepath.Join(root, "sub", "..", "ok.csv")
	if err := run("copy (select 1 as a) to '" + in + "'"); err != nil {
		t.Fatalf("inside the root: %v", err)
	}
	if err := run("select * from '" + in + "'"); err != nil {
		t.Errorf("reading inside the root: %v", err)
	}
	for _, sql := range []string{
		"copy (select 1 as a) to '" + filepath.Join(outside, "x.csv") + "'",
		"copy (select 1 as a) to '" + filepath.Join(root, "..", filepath.Base(outside), "x.csv") + "'",
		"copy (select 1 as a) to '" + filepath.Join(root, "escape", "x.csv") + "'",
		"select * from read_csv('" + filepath.Join(root, "escape", "*.csv") + "')",
		"select * from read_csv('/etc/passwd')",
	} {
		if err := run(sql); !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s: %v", sql, err)
		}
	}
	none := newTestDB(t, Options{Parallelism: 2, FileAccess: FileAccessNone})
	if _, err := none.Query(ctx, "select * from '"+in+"'"); !nferr.Is(err, nferr.KindAuth) {
		t.Errorf("no file access: %v", err)
	}
}

// A refused path is refused before anything looks at it: the answer is the
// same whether the file or directory exists or not.
func TestFileAccessTellsNothing(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2, FileAccess: FileAccessNone})
	dir := t.TempDir()
	for _, q := range []string{
		"select * from '" + dir + "'",
		"select * from '" + filepath.Join(dir, "missing") + "'",
		"select * from '" + filepath.Join(dir, "missing.csv") + "'",
		"select * from read_parquet('" + dir + "')",
	} {
		_, err := s.Query(context.Background(), q)
		if err == nil || !strings.HasPrefix(err.Error(), "permission denied: this server gives no access to files") {
			t.Errorf("%s: %v", q, err)
		}
	}
}
