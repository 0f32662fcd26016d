package storage

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Object stores: where the files a statement names live (file tables,
// read_parquet, read_csv, COPY FROM and TO, external tables). A path is
// either a local file (opened as named, or through a file access root,
// files_root.go) or an object URL, s3://bucket/key (objstore_s3.go, an
// S3-compatible server through minio-go). Every open, stat, glob and
// create of such a file goes through storeFor, so that the Parquet reader
// and writer see an ObjectReader and an *os.File as they always did and
// do not know where the bytes come from.
//
// INVARIANT: an object URL is never made absolute or joined as a local
// path (filepath.Abs would turn s3://b/k into <cwd>/s3:/b/k): IsObjectURL
// is tested before any path arithmetic, and object paths are joined with
// "/".

// ObjectStore is the seam between nicflow's file code and a store of
// files: ranged reads of a file of a known size, stat, a listing by glob,
// and a create that publishes the whole file at once.
type ObjectStore interface {
	// Open opens name to read: random reads (ReadAt, safe for concurrent
	// use), sequential reads and seeks, Stat for its size.
	Open(name string) (ObjectReader, error)
	// Stat describes name; a missing file is an error that
	// os.IsNotExist recognizes.
	Stat(name string) (fs.FileInfo, error)
	// Glob returns the files (not directories) pattern (a name or a glob
	// with * ? [...], which never match "/") names, sorted; none is not an
	// error.
	Glob(pattern string) ([]string, error)
	// Create starts writing name; the file appears, whole, only at
	// NewFile.Commit.
	Create(name string) (*NewFile, error)
}

// ObjectReader is an open file of a store. *os.File is one.
type ObjectReader interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	Stat() (fs.FileInfo, error)
}

// IsObjectURL reports whether p names an object in an object store
// (s3://bucket/key) rather than a local file.
func IsObjectURL(p string) bool {
	return len(p) >= 5 && strings.EqualFold(p[:5], "s3://")
}

// storeFor returns the store of path: S3 for an object URL, else the
// local file system through root (nil: as named).
func storeFor(root *FileRoot, path string) (ObjectStore, error) {
	if IsObjectURL(path) {
		if root != nil {
			return nil, root.denied(path)
		}
		return s3Default()
	}
	return localStore{root: root}, nil
}

// joinPath joins a directory and a file name of the same store.
func joinPath(dir, name string) string {
	if IsObjectURL(dir) {
		return strings.TrimSuffix(dir, "/") + "/" + name
	}
	return filepath.Join(dir, name)
}

// absPath makes a local path absolute; an object URL is returned as is.
func absPath(p string) (string, error) {
	if IsObjectURL(p) {
		return p, nil
	}
	return filepath.Abs(p)
}

// AbsPath is absPath for the engine (COPY TO targets).
func AbsPath(p string) (string, error) { return absPath(p) }

// localStore is the local file system, through a file access root when
// root is set.
type localStore struct{ root *FileRoot }

func (l localStore) Open(name string) (ObjectReader, error) {
	if l.root == nil {
		return os.Open(name)
	}
	return l.root.Open(name)
}

func (l localStore) Stat(name string) (fs.FileInfo, error) {
	if l.root == nil {
		return os.Stat(name)
	}
	return l.root.Stat(name)
}

func (l localStore) Glob(pattern string) ([]string, error) {
	if l.root != nil {
		return l.root.glob(pattern)
	}
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l localStore) Create(name string) (*NewFile, error) { return createLocalFile(l.root, name) }

// objectEntries lists the objects directly under the object URL dir, as
// directory entries (an external table's location).
func objectEntries(root *FileRoot, dir string) ([]os.DirEntry, error) {
	st, err := storeFor(root, dir)
	if err != nil {
		return nil, err
	}
	paths, err := st.Glob(joinPath(dir, "*"))
	if err != nil {
		return nil, err
	}
	ents := make([]os.DirEntry, len(paths))
	for i, p := range paths {
		ents[i] = fs.FileInfoToDirEntry(&objInfo{name: p})
	}
	return ents, nil
}
