package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

// tryRows runs q and returns its rows as text, or its error.
func tryRows(s *Session, q string) ([][]string, error) {
	r, err := s.Query(context.Background(), q)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out [][]string
	for {
		rec, err := r.Next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return out, nil
		}
		rows, err := RowsText(rec, "NULL")
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
}

// linkTree is a file access root with symbolic links leading outside it
// (to a file, to a directory, to nothing) and inside it, and the outside
// directory, whose files hold "secret" values.
type linkTree struct {
	root, outside string
}

func newLinkTree(t *testing.T) linkTree {
	t.Helper()
	lt := linkTree{root: t.TempDir(), outside: t.TempDir()}
	writeFile := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(lt.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(filepath.Join(lt.outside, "passwd"), "root:x:0:0:secret:/root:/bin/sh\n")
	writeFile(filepath.Join(lt.outside, "hostname"), "secret\n")
	writeFile(filepath.Join(lt.outside, "s.csv"), "a\nsecret\n")
	writeFile(filepath.Join(lt.root, "ok.csv"), "a\ninside\n")
	writeFile(filepath.Join(lt.root, "sub", "in.csv"), "a\ninside\n")
	for _, d := range []string{"ext", "pq"} {
		if err := os.Mkdir(filepath.Join(lt.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s0 := newTestDB(t, Options{Parallelism: 2})
	exec1(t, s0, "copy (select 'secret' as a) to '"+filepath.Join(lt.outside, "secret.parquet")+"'")
	exec1(t, s0, "copy (select 'inside' as a) to '"+filepath.Join(lt.root, "ext", "a.parquet")+"'")
	exec1(t, s0, "copy (select 'inside' as a) to '"+filepath.Join(lt.root, "pq", "a.parquet")+"'")
	link(filepath.Join(lt.outside, "passwd"), "passwd_link")
	link(lt.outside, "etc_link")
	link(filepath.Join(lt.outside, "secret.parquet"), "pq_link")
	link(filepath.Join(lt.outside, "secret.parquet"), filepath.Join("ext", "b.parquet"))
	link(filepath.Join(lt.outside, "missing"), "gone_link")
	link(filepath.Join(lt.outside, "nodir"), "gonedir_link")
	link(filepath.Join("..", filepath.Base(lt.outside), "passwd"), "rel_link")
	link(filepath.Join(lt.root, "ok.csv"), "abs_in")   // absolute, inside
	link(filepath.Join("sub", "in.csv"), "rel_in.csv") // relative, inside
	return lt
}

// A glob, a directory or a link inside the root never reaches a file
// outside it: every file a glob matches and every file of a directory is
// checked, links resolved, before it is opened (issue 28, item 7).
func TestFileAccessLinks(t *testing.T) {
	lt := newLinkTree(t)
	R := lt.root
	s := newTestDB(t, Options{Parallelism: 2, FileAccess: R})
	for _, q := range []string{
		"select * from read_csv('" + R + "/passwd_lin[k]', header=false, delim=':')",
		"select * from read_csv('" + R + "/passwd_lin?', header=false, delim=':')",
		"select * from read_csv('" + R + "/passwd_*', header=false, delim=':')",
		"select * from read_csv('" + R + "/passwd_link', header=false, delim=':')",
		"select * from read_csv('" + R + "/rel_lin?', header=false, delim=':')",
		"select * from read_csv('" + R + "/sub/../passwd_lin?', header=false, delim=':')",
		"select * from read_csv('" + R + "/etc_link/hostname', header=false)",
		"select * from read_csv('" + R + "/etc_link/host*', header=false)",
		"select * from read_csv('" + R + "/etc_link/*.csv')",
		"select * from read_parquet('" + R + "/pq_lin?')",
		"select * from read_parquet('" + R + "/pq_link')",
		"select * from '" + R + "/pq_link'",
		"select * from read_parquet('" + R + "/ext')",
		"select * from read_parquet('" + R + "/ext/*.parquet')",
		"select * from read_parquet('" + R + "/e?t/b.parquet')",
		"select * from read_parquet('" + R + "/etc_link')",
		"create external table e stored as parquet location '" + R + "/ext'",
		"create external table e stored as parquet location '" + R + "/etc_link'",
		"copy t from '" + R + "/passwd_link' (format csv, delimiter ':')",
		"copy t from '" + R + "/etc_link/s.csv' (format csv, header)",
		"copy (select 1 as a) to '" + R + "/etc_link/x.csv'",
		"copy (select 1 as a) to '" + R + "/etc_link/x.parquet'",
		"copy (select 1 as a) to '" + R + "/gonedir_link/x.csv'",
	} {
		if strings.HasPrefix(q, "copy t ") {
			exec1(t, s, "create table if not exists t (a varchar, b varchar, c varchar, d varchar, e varchar, f varchar, g varchar)")
		}
		_, err := tryRows(s, q)
		if !nferr.Is(err, nferr.KindAuth) || !strings.HasPrefix(err.Error(), "permission denied: "+R+"/") || !strings.HasSuffix(err.Error(), "is outside the directory this server gives access to ("+R+")") {
			t.Errorf("%s: %v", q, err)
		}
	}
	// A glob whose directories lead outside matches nothing there.
	for _, q := range []string{
		"select * from read_csv('" + R + "/*/hostname', header=false)",
		"select * from read_csv('" + R + "/*/s.csv')",
		"select * from read_csv('" + R + "/*/*', header=false)",
	} {
		rows, err := tryRows(s, q)
		if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(fmt.Sprint(rows), "secret") {
			t.Errorf("%s: %v %v", q, rows, err)
		}
	}
	if _, err := os.Stat(filepath.Join(lt.outside, "x.csv")); err == nil {
		t.Error("COPY TO wrote outside the root")
	}
	// Links that stay inside work, absolute or relative.
	for _, q := range []string{
		"select * from read_csv('" + R + "/abs_in')",
		"select * from read_csv('" + R + "/rel_in.csv')",
		"select * from read_csv('" + R + "/o?.csv')",
		"select * from read_csv('" + R + "/s*/in.csv')",
		"select * from read_parquet('" + R + "/pq')",
		"select * from read_parquet('" + R + "/p[q]/*.parquet')",
	} {
		if rows, err := tryRows(s, q); err != nil || fmt.Sprint(rows) != "[[inside]]" {
			t.Errorf("%s: %v %v", q, rows, err)
		}
	}
	exec1(t, s, "copy (select 'inside' as a) to '"+R+"/sub/out.csv'")
	if rows := exec1(t, s, "select * from read_csv('"+R+"/sub/out.csv')"); fmt.Sprint(rows) != "[[inside]]" {
		t.Errorf("COPY TO inside the root: %v", rows)
	}
	// A quoted file table name is no way around the check.
	if _, err := tryRows(s, `select * from "$files.`+lt.outside+`/secret.parquet"`); err == nil {
		t.Error(`"$files.<path>" read a file`)
	}
}

// The answer to a path leading outside does not tell whether its target
// exists: links to an existing and to a missing file, or directory, get
// the same refusal.
func TestFileAccessLinksTellNothing(t *testing.T) {
	lt := newLinkTree(t)
	R := lt.root
	s := newTestDB(t, Options{Parallelism: 2, FileAccess: R})
	for _, pair := range [][2]string{
		{"passwd_link", "gone_link"},
		{"etc_link/hostname", "gonedir_link/hostname"},
		{"etc_link/*.csv", "gonedir_link/*.csv"},
		{"etc_link/x.csv", "gonedir_link/x.csv"},
	} {
		var msgs [2]string
		for i, p := range pair {
			_, err := tryRows(s, "select * from read_csv('"+R+"/"+p+"', header=false)")
			if err == nil {
				t.Fatalf("%s: read", p)
			}
			link, _, _ := strings.Cut(p, "/")
			msgs[i] = strings.ReplaceAll(strings.ReplaceAll(err.Error(), p, "P"), link, "L")
		}
		if msgs[0] != msgs[1] {
			t.Errorf("%q and %q answer differently:\n%s\n%s", pair[0], pair[1], msgs[0], msgs[1])
		}
	}
	// Globs that match such links.
	var msgs []string
	for _, p := range []string{"passwd_lin?", "gone_lin?"} {
		_, err := tryRows(s, "select * from read_csv('"+R+"/"+p+"', header=false)")
		if err == nil {
			t.Fatalf("%s: read", p)
		}
		msgs = append(msgs, strings.NewReplacer("passwd_link", "L", "gone_link", "L").Replace(err.Error()))
	}
	if msgs[0] != msgs[1] {
		t.Errorf("globs answer differently:\n%s\n%s", msgs[0], msgs[1])
	}
}

// Property: for random trees of files, directories and links inside and
// outside a root, and random paths and globs over them, no statement
// reads a file outside the root, and none writes there.
func TestFileAccessRandomTrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 7))
	for round := 0; round < 6; round++ {
		root, outside := t.TempDir(), t.TempDir()
		var dirs = map[bool][]string{true: {root}, false: {outside}}
		var targets []string
		n := 0
		for i := 0; i < 12; i++ {
			in := rng.IntN(2) == 0
			parent := dirs[in][rng.IntN(len(dirs[in]))]
			name := string(rune('a'+rng.IntN(4))) + strconv.Itoa(n)
			n++
			p := filepath.Join(parent, name)
			switch rng.IntN(3) {
			case 0:
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				dirs[in] = append(dirs[in], p)
			default:
				what := "out"
				if in {
					what = "in"
				}
				os.WriteFile(p+".csv", []byte("a\n"+what+"\n"), 0o644)
				targets = append(targets, p+".csv")
			}
			targets = append(targets, p)
		}
		targets = append(targets, filepath.Join(outside, "missing"), outside, root)
		var links []string
		for i := 0; i < 10; i++ {
			parent := dirs[true][rng.IntN(len(dirs[true]))]
			name := filepath.Join(parent, string(rune('a'+rng.IntN(4)))+"l"+strconv.Itoa(i))
			target := targets[rng.IntN(len(targets))]
			if rng.IntN(2) == 0 {
				if rel, err := filepath.Rel(parent, target); err == nil {
					target = rel
				}
			}
			if rng.IntN(3) == 0 {
				name += ".csv"
			}
			if os.Symlink(target, name) == nil {
				links = append(links, name)
			}
		}
		before := treeOf(t, outside)
		s := newTestDB(t, Options{Parallelism: 2, FileAccess: root})
		paths := append([]string{}, links...)
		for _, d := range dirs[true] {
			paths = append(paths, filepath.Join(d, "*"), filepath.Join(d, "*", "*"), filepath.Join(d, "?l*"),
				filepath.Join(d, "[ab]*"), filepath.Join(d, "*.csv"), filepath.Join(d, "*", "*.csv"))
		}
		for _, l := range links {
			paths = append(paths, filepath.Join(l, "*"), filepath.Join(l, "*.csv"), filepath.Join(l, "..", "*"))
		}
		for _, p := range paths {
			for _, q := range []string{
				"select * from read_csv('" + p + "', header=true)",
				"select * from read_parquet('" + p + "')",
			} {
				rows, err := tryRows(s, q)
				if err == nil && strings.Contains(fmt.Sprint(rows), "out") {
					t.Fatalf("round %d: %s read outside the root: %v", round, q, rows)
				}
				if err != nil && strings.Contains(err.Error(), outside) {
					t.Fatalf("round %d: %s names a path outside: %v", round, q, err)
				}
			}
			tryRows(s, "copy (select 'x' as a) to '"+filepath.Join(p, "w.csv")+"'")
			tryRows(s, "copy (select 'x' as a) to '"+p+"'")
		}
		if after := treeOf(t, outside); after != before {
			t.Fatalf("round %d: the outside directory changed:\n%s\n%s", round, before, after)
		}
	}
}

// treeOf lists dir's tree with file contents.
func treeOf(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		b.WriteString(p)
		if d != nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}

// Under a file access policy a client cannot choose where the server
// spills: SET spill_dir is refused, with the same answer for any path
// (issue 28, item 8); embedded use keeps it.
func TestFileAccessSpillDir(t *testing.T) {
	outside := t.TempDir()
	for _, access := range []string{FileAccessNone, t.TempDir()} {
		s := newTestDB(t, Options{Parallelism: 2, FileAccess: access})
		var msgs []string
		for _, p := range []string{outside, filepath.Join(outside, "missing"), "off"} {
			_, err := tryRows(s, "set spill_dir = '"+p+"'")
			if !nferr.Is(err, nferr.KindAuth) || !strings.HasPrefix(err.Error(), "permission denied: spill_dir") {
				t.Errorf("%s: set spill_dir = %s: %v", access, p, err)
				continue
			}
			msgs = append(msgs, err.Error())
		}
		if len(msgs) == 3 && (msgs[0] != msgs[1] || msgs[1] != msgs[2]) {
			t.Errorf("answers differ: %q", msgs)
		}
		if rows := exec1(t, s, "show spill_dir"); len(rows) != 1 || rows[0][0] == outside {
			t.Errorf("%s: spill_dir %v", access, rows)
		}
	}
	s := newTestDB(t, Options{Parallelism: 2})
	exec1(t, s, "set spill_dir = '"+outside+"'")
	if rows := exec1(t, s, "show spill_dir"); len(rows) != 1 || rows[0][0] != outside {
		t.Errorf("embedded SET spill_dir: %v", rows)
	}
}
