package storage

import (
	"os"

	"path/filepath"
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
// absolute.
func FileTableName(pattern string) (string, error) {
	if strings.TrimSpace(pattern) == "" {
		return "", nferr.Queryf("an empty file name")
	}
	abs, err := filepath.Abs(pattern)
	if err != nil {
		return "", nferr.Queryf("file %s: %v", pattern, err)
	}
	return FileTableSchema + "." + abs, nil
}

// fileTables caches file table descriptions by pattern.
type fileTables struct {
	mu sync.Mutex
	m  map[string]*fileTableEntry
}

type fileTableEntry struct {
	t      *Table
	stamps []string // per file: path, size and mtime
}

// matchFiles returns the Parquet files pattern names, sorted: a directory
// is its *.parquet files.
func matchFiles(pattern string) ([]string, error) {
	if st, err := os.Stat(pattern); err == nil && st.IsDir() {
		pattern = filepath.Join(pattern, "*.parquet")
	}
	return matchAny(pattern)
}

// matchAny returns the files pattern (a file or a glob) names, sorted.
func matchAny(pattern string) ([]string, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, nferr.Queryf("file pattern %s: %v", pattern, err)
	}
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			out = append(out, p)
		}
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

// stampOf identifies a file's version: path, size and modification time.
func stampOf(p string) (string, int64, int64, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", 0, 0, fileErr(p, err)
	}
	mt := st.ModTime().UnixNano()
	return p + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" + strconv.FormatInt(mt, 10), st.Size(), mt, nil
}

// fileTable describes the Parquet files of pattern (absolute) as a table:
// the first file's schema, which every other file must have (columns
// matched by name, types equal).
func (db *DB) fileTable(pattern string) (*Table, error) {
	paths, err := matchFiles(pattern)
	if err != nil {
		return nil, err
	}
	stamps := make([]string, len(paths))
	for i, p := range paths {
		if stamps[i], _, _, err = stampOf(p); err != nil {
			return nil, err
		}
	}
	db.files.mu.Lock()
	e := db.files.m[pattern]
	db.files.mu.Unlock()
	if e != nil && slices.Equal(e.stamps, stamps) {
		return e.t, nil
	}
	t := &Table{Schema: FileTableSchema, Name: pattern, External: true, Location: pattern}
	for i, p := range paths {
		md, size, err := readFooter(p)
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
		}
		f, err := fileFromFooter(p, md, t.Columns)
		if err != nil {
			return nil, err
		}
		_, _, mt, err := stampOf(p)
		if err != nil {
			return nil, err
		}
		f.ID = uint64(i + 1)
		f.Path, f.Size = p, size
		f.Checksum = "file:" + strconv.FormatInt(size, 10) + ":" + strconv.FormatInt(mt, 10)
		t.Files = append(t.Files, f)
	}
	db.files.mu.Lock()
	if db.files.m == nil {
		db.files.m = map[string]*fileTableEntry{}
	}
	db.files.m[pattern] = &fileTableEntry{t: t, stamps: stamps}
	db.files.mu.Unlock()
	return t, nil
}

// ParquetFile writes rows to a standalone Parquet file (COPY ... TO):
// under a temporary name beside the target, renamed into place by Close,
// so a reader never sees half a file and a failed COPY leaves no file.
type ParquetFile struct {
	path string
	tmp  string
	w    *parquetWriter
	rows int64
}

// CreateParquetFile starts the Parquet file path for rows of schema sch
// (the engine's types; nicflow's own layout: decimals as INT64 or
// FIXED_LEN_BYTE_ARRAY, timestamps as TIMESTAMP(MICROS), opts' codec and
// row group size). An existing file at path is replaced by Close.
func CreateParquetFile(path string, sch *arrow.Schema, opts WriteOptions) (*ParquetFile, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if _, err := SchemaColumns(sch); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nferr.Queryf("file %s: %v", path, err)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return nil, nferr.Queryf("directory %s does not exist", filepath.Dir(path))
	}
	tmp := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".tmp-"+strconv.Itoa(os.Getpid()))
	os.Remove(tmp)
	w, err := newParquetWriter(tmp, sch, opts)
	if err != nil {
		return nil, err
	}
	return &ParquetFile{path: abs, tmp: tmp, w: w}, nil
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
		os.Remove(f.tmp)
		return 0, err
	}
	if err := os.Rename(f.tmp, f.path); err != nil {
		os.Remove(f.tmp)
		return 0, nferr.OS(err, "writing %s", f.path)
	}
	return f.rows, nil
}

// Abort drops the partial file.
func (f *ParquetFile) Abort() {
	f.w.f.Close()
	os.Remove(f.tmp)
}
