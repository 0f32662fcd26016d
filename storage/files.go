package storage

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Files as tables: a query names Parquet files directly (FROM 'x.parquet',
// read_parquet('dir/*.parquet')) and they scan as a table that the catalog
// does not hold. Such a table is named "$files.<pattern>" (FileTableSchema
// and the absolute pattern), so that a scan spec naming it works wherever
// the files are visible: in this process, on a worker reading the same
// directory, or on a storage node (Table describes the files again there).
//
// INVARIANT: a file table is never stored in the catalog: it is described
// from the files' footers (schema, row groups, statistics) when it is
// looked up, and the description is cached while every file keeps its
// size and modification time and the pattern matches the same files. Its
// File.Checksum is "file:<size>:<mtime>", so the footer cache re-reads a
// file that changed. No whole-file checksum is taken (that would read
// every byte before the query does); a file that changes during a query
// fails its size check.

// FileTableSchema is the pseudo-schema of file tables.
const FileTableSchema = "$files"

// FileTableName is the table name of the Parquet files pattern names: a
// file, a directory (its *.parquet files) or a glob (* ? [...]), made
// absolute; under root (a file access root, files_root.go; nil: none) the
// name carries the root ("\x00root=<dir>" after the pattern), so that
// whoever describes the table again from its name (a worker, a storage
// node) confines it alike.
func FileTableName(pattern string, root *FileRoot) (string, error) {
	if strings.TrimSpace(pattern) == "" {
		return "", nferr.Queryf("an empty file name")
	}
	abs, err := absPath(pattern)
	if err != nil {
		return "", nferr.Queryf("file %s: %v", pattern, err)
	}
	if IsObjectURL(abs) && root != nil {
		return "", root.denied(pattern)
	}
	name := FileTableSchema + "." + abs
	if root != nil {
		name += "\x00root=" + root.Dir()
	}
	return name, nil
}

// fileTableOf describes the file table of a FileTableName or CSVTableName
// without its "$files." prefix.
func (db *DB) fileTableOf(name string) (*Table, error) {
	parts := strings.Split(name, "\x00")
	pattern, opts := parts[0], parts[1:]
	var root *FileRoot
	if len(opts) > 0 && strings.HasPrefix(opts[0], "root=") {
		var err error
		if root, err = db.FileRoot(strings.TrimPrefix(opts[0], "root=")); err != nil {
			return nil, err
		}
		opts = opts[1:]
	}
	if len(opts) > 0 && opts[0] == "csv" {
		o, err := parseCSVOptions(opts[1:])
		if err != nil {
			return nil, err
		}
		return db.csvTable(pattern, root, o)
	}
	if len(opts) > 0 {
		return nil, nferr.Queryf("malformed file table name")
	}
	return db.fileTable(pattern, root)
}

// fileTables caches file table descriptions by name, and holds the file
// access roots (files_root.go).
type fileTables struct {
	mu    sync.Mutex
	m     map[string]*fileTableEntry
	roots map[string]*FileRoot
}

type fileTableEntry struct {
	t      *Table
	stamps []string // per file: path, size and mtime
}

// matchFiles returns the Parquet files pattern names, sorted: a directory
// is its *.parquet files. Under root (nil: none) every match is checked
// through the root (files_root.go).
func matchFiles(root *FileRoot, pattern string) ([]string, error) {
	if st, err := statFile(root, pattern); err == nil && st.IsDir() {
		pattern = joinPath(pattern, "*.parquet")
	} else if nferr.Is(err, nferr.KindAuth) {
		return nil, err
	}
	return matchAny(root, pattern)
}

// matchAny returns the files pattern (a file or a glob) names, sorted.
func matchAny(root *FileRoot, pattern string) ([]string, error) {
	st, err := storeFor(root, pattern)
	if err != nil {
		return nil, err
	}
	out, err := st.Glob(pattern)
	if err != nil {
		if _, ok := nferr.As(err); ok {
			return nil, err // a root's refusal, an object store's failure
		}
		return nil, nferr.Queryf("file pattern %s: %v", pattern, err)
	}
	if len(out) == 0 {
		if !strings.ContainsAny(pattern, "*?[") {
			return nil, nferr.Queryf("file %s does not exist", pattern)
		}
		return nil, nferr.Queryf("no file matches %s", pattern)
	}
	sort.Strings(out)
	return out, nil
}

// stampOf identifies a file's version: path, size and modification time
// (through root when it is set).
func stampOf(root *FileRoot, p string) (string, int64, int64, error) {
	st, err := statFile(root, p)
	if err != nil {
		return "", 0, 0, fileErr(p, err)
	}
	mt := st.ModTime().UnixNano()
	return p + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" + strconv.FormatInt(mt, 10) + "\x00" + objectETag(st), st.Size(), mt, nil
}

// fileTable describes the Parquet files of pattern (absolute) as a table:
// the first file's schema, which every other file must have (columns
// matched by name, types equal). Under root (nil: none) the files are
// matched, described and later scanned through the root.
func (db *DB) fileTable(pattern string, root *FileRoot) (*Table, error) {
	paths, err := matchFiles(root, pattern)
	if err != nil {
		return nil, err
	}
	stamps := make([]string, len(paths))
	etags := make([]string, len(paths))
	for i, p := range paths {
		if stamps[i], _, _, err = stampOf(root, p); err != nil {
			return nil, err
		}
		etags[i] = stamps[i][strings.LastIndexByte(stamps[i], 0)+1:]
	}
	key := pattern
	if root != nil {
		key += "\x00root=" + root.Dir()
	}
	db.files.mu.Lock()
	e := db.files.m[key]
	db.files.mu.Unlock()
	if e != nil && slices.Equal(e.stamps, stamps) {
		return e.t, nil
	}
	// NB: under a root the name carries it (FileTableName), so that a
	// scan spec naming the table (QualifiedName) confines it wherever it
	// is described again.
	t := &Table{Schema: FileTableSchema, Name: key, External: true, Location: pattern, root: root}
	for i, p := range paths {
		md, size, err := readFooterIn(root, p)
		if err != nil {
			return nil, err
		}
		if t.Columns == nil {
			sch, err := schemaOfFooter(p, md)
			if err != nil {
				return nil, err
			}
			if t.Columns, err = SchemaColumns(sch); err != nil {
				return nil, nferr.Wrap(nferr.KindData, err, "%s", p)
			}
			t.Unreadable = unreadableOfFooter(p, md)
		}
		f, err := fileFromFooter(p, md, t.Columns)
		if err != nil {
			return nil, err
		}
		_, _, mt, err := stampOf(root, p)
		if err != nil {
			return nil, err
		}
		f.ID = uint64(i + 1)
		f.Path, f.Size = p, size
		f.Checksum = "file:" + strconv.FormatInt(size, 10) + ":" + strconv.FormatInt(mt, 10)
		if etag := etags[i]; etag != "" {
			// An object's version: its scans read only this one
			// (fileSet.open).
			f.Checksum += ":" + etag
		}
		t.Files = append(t.Files, f)
	}
	db.files.mu.Lock()
	if db.files.m == nil {
		db.files.m = map[string]*fileTableEntry{}
	}
	db.files.m[key] = &fileTableEntry{t: t, stamps: stamps}
	db.files.mu.Unlock()
	return t, nil
}

// ParquetFile writes rows to a standalone Parquet file (COPY ... TO):
// under a temporary name beside the target, renamed into place by Close,
// so a reader never sees half a file and a failed COPY leaves no file
// (NewFile).
type ParquetFile struct {
	nf   *NewFile
	w    *parquetWriter
	rows int64
}

// CreateParquetFile starts the Parquet file path for rows of schema sch
// (the engine's types; nicflow's own layout: decimals as INT64 or
// FIXED_LEN_BYTE_ARRAY, timestamps as TIMESTAMP(MICROS), opts' codec and
// row group size), through root when it is set (CreateFile). An existing
// file at path is replaced by Close.
func CreateParquetFile(root *FileRoot, path string, sch *arrow.Schema, opts WriteOptions) (*ParquetFile, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if _, err := SchemaColumns(sch); err != nil {
		return nil, err
	}
	nf, err := CreateFile(root, path)
	if err != nil {
		return nil, err
	}
	w, err := newParquetWriterOn(nf.File, nf.tmp, sch, opts)
	if err != nil {
		nf.Abort()
		return nil, err
	}
	return &ParquetFile{nf: nf, w: w}, nil
}

// Write appends rec's rows.
func (f *ParquetFile) Write(rec arrow.RecordBatch) error {
	if err := f.w.write(rec); err != nil {
		return err
	}
	f.rows += rec.NumRows()
	return nil
}

// Close finishes the file, moves it into place and returns its rows; on
// an error nothing is left behind.
func (f *ParquetFile) Close() (int64, error) {
	if _, _, _, err := f.w.finish(); err != nil {
		f.nf.Abort()
		return 0, err
	}
	if err := f.nf.Commit(); err != nil {
		return 0, err
	}
	return f.rows, nil
}

// Abort drops the partial file.
func (f *ParquetFile) Abort() { f.nf.Abort() }
