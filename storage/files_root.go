package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/nicflow/nicflow/internal/nferr"
)

// A file access root confines the files statements name (file tables,
// read_csv, COPY FROM and TO, CREATE EXTERNAL TABLE) to one directory:
// engine.Options.FileAccess, `nicflow serve --file-root`.
//
// INVARIANT: every file a confined statement reads or writes is opened
// through the root's os.Root, which resolves each path component (".."
// and symbolic links included) inside the directory, with openat from the
// root's descriptor: a path that leads outside fails to open, whether it
// is a glob's match, a file of a directory location, a COPY target, or a
// link swapped in after a check. So the file a check passed is the file
// opened, with no window between them, and the paths a file table
// records are opened through the same root when they are scanned
// (Table.root).
//
// A glob is expanded inside the root (fs.Glob over the root): a directory
// it would read through a link leading outside is not read, and a match
// that leads outside refuses the statement. A refusal names the path and
// the root, and is the same whether what lies outside exists or not (the
// path is refused by where it leads, before anything outside is opened).
// A symbolic link inside the root that names a place inside it by an
// absolute path works: it is resolved, found inside, and opened through
// the root by its resolved path.
//
// An external table's files are listed and described through the root
// when it is created (RegisterExternal); its later scans read the paths
// the catalog recorded, and check the footer and every chunk against the
// checksums taken then (integrity.go), so a file swapped afterwards is a
// KindData error, never another file's rows.

// FileRoot is a file access root: a directory, opened once per DB
// (DB.FileRoot), through which confined statements open their files.
type FileRoot struct {
	dir  string // absolute, as configured
	real string // dir with its symbolic links resolved
	root *os.Root
	fs   *fileSet // scans of file tables under the root
}

// FileRoot returns the file access root dir (made absolute), opened at
// its first use and kept until Close.
func (db *DB) FileRoot(dir string) (*FileRoot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nferr.Internalf("file access root %s: %v", dir, err)
	}
	db.files.mu.Lock()
	defer db.files.mu.Unlock()
	if r := db.files.roots[abs]; r != nil {
		return r, nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, nferr.Internalf("file access root %s: %v", dir, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, nferr.Internalf("file access root %s: %v", dir, err)
	}
	r := &FileRoot{dir: abs, real: real, root: root}
	r.fs = newFileSet(real)
	r.fs.root = r
	if db.files.roots == nil {
		db.files.roots = map[string]*FileRoot{}
	}
	db.files.roots[abs] = r
	return r, nil
}

// closeRoots closes the file access roots (DB.Close).
func (ft *fileTables) closeRoots() {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, r := range ft.roots {
		r.root.Close()
	}
	ft.roots = nil
}

// Dir is the root's directory (absolute, as configured).
func (r *FileRoot) Dir() string { return r.dir }

// denied is the refusal of path.
func (r *FileRoot) denied(path string) error {
	return &nferr.Error{Kind: nferr.KindAuth, Msg: "permission denied: " + path + " is outside the directory this server gives access to (" + r.dir + ")"}
}

// within returns abs relative to dir ("." for dir itself) when it lies
// under dir as written.
func within(dir, abs string) (string, bool) {
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// rel returns path relative to the root, made absolute and cleaned (so
// ".." goes up by name), when it names a place under the root's directory
// as configured or with its links resolved; else the refusal. Nothing is
// looked at.
func (r *FileRoot) rel(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nferr.Queryf("file %s: %v", path, err)
	}
	if rel, ok := within(r.dir, abs); ok {
		return rel, nil
	}
	if rel, ok := within(r.real, abs); ok {
		return rel, nil
	}
	return "", r.denied(path)
}

// escapes reports whether err is os.Root's refusal of a path that leads
// out of the root (an unexported error: its text is matched).
func escapes(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// inRoot runs op on path's name relative to the root; op works through
// r.root, so it cannot reach outside. When the name leads out of the root
// and path's links, resolved, lead back inside (an absolute link to a file
// of the root), op runs once more on the resolved name; otherwise the
// statement is refused, whether the outside target exists or not.
func inRoot[T any](r *FileRoot, path string, op func(name string) (T, error)) (T, error) {
	var zero T
	rel, err := r.rel(path)
	if err != nil {
		return zero, err
	}
	v, err := op(rel)
	if !escapes(err) {
		return v, err
	}
	if real, e := filepath.EvalSymlinks(filepath.Join(r.real, rel)); e == nil {
		if rel2, ok := within(r.real, real); ok {
			if v, err = op(rel2); !escapes(err) {
				return v, err
			}
		}
	}
	return zero, r.denied(path)
}

// Open opens path (under the root) to read.
func (r *FileRoot) Open(path string) (*os.File, error) {
	return inRoot(r, path, r.root.Open)
}

// Stat stats path (under the root), following links inside it.
func (r *FileRoot) Stat(path string) (os.FileInfo, error) {
	return inRoot(r, path, r.root.Stat)
}

// Check refuses a path (a file, a directory or a glob) a statement may not
// name: one outside the root, or whose part before the first glob
// character leads outside through a link. It opens nothing outside; a
// path that does not exist passes (its use says so).
func (r *FileRoot) Check(path string) error {
	p := path
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		if _, err := r.rel(p); err != nil {
			return err
		}
		p = filepath.Dir(p[:i] + "x")
	}
	_, err := r.Stat(p)
	if nferr.Is(err, nferr.KindAuth) {
		return err
	}
	return nil
}

// glob returns the files (not directories) that pattern (absolute: a
// file, or a glob of * ? [...]) names under the root, sorted: as pattern
// names them, each one checked through the root.
func (r *FileRoot) glob(pattern string) ([]string, error) {
	if !strings.ContainsAny(pattern, "*?[") {
		st, err := r.Stat(pattern)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil, nil
			}
			if nferr.Is(err, nferr.KindAuth) {
				return nil, err
			}
			return nil, nferr.IOf("file %s: %w", pattern, err)
		}
		if st.IsDir() {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	if err := r.Check(pattern); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(pattern)
	if err != nil {
		return nil, nferr.Queryf("file %s: %v", pattern, err)
	}
	rel, err := r.rel(abs)
	if err != nil {
		return nil, err
	}
	// NB: the matches are named on the directory the pattern names the
	// root by (as configured or resolved), so errors name them as written.
	base := strings.TrimSuffix(abs, rel)
	names, err := fs.Glob(r.root.FS(), filepath.ToSlash(rel))
	if err != nil {
		return nil, nferr.Queryf("file pattern %s: %v", pattern, err)
	}
	var out []string
	for _, n := range names {
		p := base + filepath.FromSlash(n)
		st, err := r.Stat(p)
		if err != nil {
			if nferr.Is(err, nferr.KindAuth) {
				return nil, err
			}
			continue // gone since it was listed, or a dangling link inside
		}
		if !st.IsDir() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// readDir lists the directory dir (under the root).
func (r *FileRoot) readDir(dir string) ([]os.DirEntry, error) {
	return inRoot(r, dir, func(name string) ([]os.DirEntry, error) {
		return fs.ReadDir(r.root.FS(), filepath.ToSlash(name))
	})
}

// openFile opens path to read: an object URL from its store
// (objstore.go), else through root when it is set, else as named.
func openFile(root *FileRoot, path string) (ObjectReader, error) {
	st, err := storeFor(root, path)
	if err != nil {
		return nil, err
	}
	return st.Open(path)
}

// statFile stats path: an object URL in its store, else through root
// when it is set, else as named.
func statFile(root *FileRoot, path string) (os.FileInfo, error) {
	st, err := storeFor(root, path)
	if err != nil {
		return nil, err
	}
	return st.Stat(path)
}

// NewFile is a file being written (COPY TO, a read_csv cache): created
// under a temporary name beside its path, moved into place by Commit, so
// that a reader never sees half a file and a failed write leaves none.
// An object (s3://, objstore_s3.go) is written to a temporary local file
// and uploaded by Commit: the object appears whole or not at all.
// Under a file access root the directory is opened through the root and
// the temporary file created and renamed inside it (openat, renameat): a
// link swapped in for the directory cannot send the file elsewhere.
type NewFile struct {
	*os.File
	path string   // absolute
	tmp  string   // absolute
	dir  *os.Root // the directory, under a root; nil otherwise
	// upload, when set, publishes the closed temporary file at path (an
	// object store's create); the temporary file is removed after it.
	upload func(tmp string) error
}

// CreateFile starts writing path: an object URL in its store, else
// through root when it is set (refused outside it), else as named. A
// local file's directory must exist.
func CreateFile(root *FileRoot, path string) (*NewFile, error) {
	st, err := storeFor(root, path)
	if err != nil {
		return nil, err
	}
	return st.Create(path)
}

// createLocalFile is CreateFile of a local file.
func createLocalFile(root *FileRoot, path string) (*NewFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nferr.Queryf("file %s: %v", path, err)
	}
	tmpName := "." + filepath.Base(abs) + ".tmp-" + strconv.Itoa(os.Getpid())
	nf := &NewFile{path: abs, tmp: filepath.Join(filepath.Dir(abs), tmpName)}
	noDir := nferr.Queryf("directory %s does not exist", filepath.Dir(path))
	if root == nil {
		if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
			return nil, noDir
		}
		os.Remove(nf.tmp)
		if nf.File, err = os.OpenFile(nf.tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
			return nil, nferr.OS(err, "creating %s", path)
		}
		return nf, nil
	}
	if err := root.Check(abs); err != nil {
		return nil, err
	}
	nf.dir, err = inRoot(root, filepath.Dir(abs), root.root.OpenRoot)
	if err != nil {
		if nferr.Is(err, nferr.KindAuth) {
			return nil, root.denied(path)
		}
		return nil, noDir
	}
	nf.dir.Remove(tmpName)
	if nf.File, err = nf.dir.OpenFile(tmpName, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
		nf.dir.Close()
		if escapes(err) {
			return nil, root.denied(path)
		}
		return nil, nferr.OS(err, "creating %s", path)
	}
	return nf, nil
}

// Path is the file's final path (absolute).
func (f *NewFile) Path() string { return f.path }

// Commit moves the written (and closed) file into place.
func (f *NewFile) Commit() error {
	var err error
	if f.upload != nil {
		err = f.upload(f.tmp)
		os.Remove(f.tmp)
		return err
	} else if f.dir != nil {
		err = f.dir.Rename(filepath.Base(f.tmp), filepath.Base(f.path))
		if err != nil {
			f.dir.Remove(filepath.Base(f.tmp))
		}
		f.dir.Close()
	} else if err = os.Rename(f.tmp, f.path); err != nil {
		os.Remove(f.tmp)
	}
	if err != nil {
		return nferr.OS(err, "writing %s", f.path)
	}
	return nil
}

// Abort closes and drops the temporary file.
func (f *NewFile) Abort() {
	f.File.Close()
	if f.dir != nil {
		f.dir.Remove(filepath.Base(f.tmp))
		f.dir.Close()
		return
	}
	os.Remove(f.tmp)
}
