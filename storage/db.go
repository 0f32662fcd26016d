package storage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Options configure a DB.
type Options struct {
	// Write controls files written by loads and appenders.
	Write WriteOptions
	// VerifyChecksums makes the first scan of each file in this process
	// read the whole file and compare its xxh3 checksum with the catalog's
	// (about 10 GB/s when cached; it doubles the I/O of a cold scan that
	// reads few columns). Default false: sizes and footers are always
	// checked, whole-file checksums by `nicflow catalog verify` (DB.Verify).
	VerifyChecksums bool
}

// Validate fills defaults and checks the options.
func (o *Options) Validate() error { return o.Write.Validate() }

// DB is a nicflow database directory: the catalog (DIR/catalog, Pebble)
// and the table files under DIR. It is safe for concurrent use by the
// goroutines of one process; one process at a time may open a directory.
type DB struct {
	dir  string
	opts Options
	cat  *catalog

	// Recovered lists files Open removed: leftovers of loads that died
	// before committing, or of deletions interrupted by a crash.
	Recovered []string

	fs        *fileSet
	files     fileTables  // file tables (files.go)
	sums      sumsUpgrade // chunk checksums to record (upgrade.go)
	reads     readSet     // statements of this process reading (reads.go)
	closeOnce sync.Once
}

type footerEntry struct {
	once sync.Once
	md   *metadata.FileMetaData
	err  error
}

// Open opens (creating if needed) the database in dir. Other processes may
// have it open too: readers run side by side, and each change takes the
// catalog's lock only while it commits (catalog.go).
func Open(dir string, opts Options) (*DB, error) { return openDB(dir, opts, false) }

// openDB is Open; rebuilding (recover.go) creates a catalog beside data
// files, which Open refuses (checkExisting).
func openDB(dir string, opts Options, rebuilding bool) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, nferr.Queryf("no database directory given (--dir)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nferr.IOf("database directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, nferr.IOf("creating database directory %s: %w", dir, err)
	}
	cat, err := openCatalog(abs, rebuilding)
	if err != nil {
		return nil, err
	}
	db := &DB{dir: abs, opts: opts, cat: cat, fs: newFileSet(abs)}
	db.fs.verify = opts.VerifyChecksums
	db.fs.verified = db.sumsVerified
	db.sums.stop = make(chan struct{})
	// Leftovers of writers that died (intents) and of deletions a crash
	// cut short (garbage) are cleaned up only by a process alone with the
	// database: another one's intent belongs to a live writer, and the
	// files of a replaced version may still be read by another reader.
	if cat.alone() {
		removed, err := cat.recover()
		cat.sess.share()
		if err != nil {
			cat.mu.Lock()
			cat.leave()
			cat.mu.Unlock()
			cat.close()
			return nil, err
		}
		db.Recovered = removed
	}
	cat.mu.Lock()
	cat.leave()
	cat.mu.Unlock()
	return db, nil
}

// OpenExisting opens dir only if it already holds a catalog (readers such
// as `nicflow sql` and `nicflow catalog` must not create one by accident).
func OpenExisting(dir string, opts Options) (*DB, error) {
	if err := IsDatabase(dir); err != nil {
		return nil, err
	}
	return Open(dir, opts)
}

// IsDatabase checks that dir holds a database: a catalog directory, or
// else the error that says it lost its catalog (its seal or data files
// are there: checkExisting) or that it is none (KindQuery).
func IsDatabase(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nferr.IOf("database directory %s: %w", dir, err)
	}
	cdir := filepath.Join(abs, "catalog")
	if _, err := os.Stat(cdir); err == nil {
		return nil
	}
	if err := checkExisting(abs, cdir, false); err != nil {
		return err
	}
	return nferr.Queryf("%s is not a nicflow database (no catalog); create one with `nicflow tpch gen --dir %s` or `nicflow load --dir %s`", dir, dir, dir)
}

// Close records the chunk checksums this process measured of an older
// catalog's files (upgrade.go), then releases the catalog and its lock.
// Idempotent.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		db.closeReads()
		close(db.sums.stop)
		_, _ = db.recordSums(true) // best effort: the next process measures again
		db.files.closeRoots()
		err = db.cat.close()
	})
	return err
}

// Dir is the database directory (absolute).
func (db *DB) Dir() string { return db.dir }

// Tables lists the tables, sorted by qualified name.
func (db *DB) Tables() []*Table { return db.cat.list() }

// Schemas lists the schema names that hold tables (always including
// DefaultSchema), sorted.
func (db *DB) Schemas() []string {
	seen := map[string]bool{DefaultSchema: true}
	out := []string{DefaultSchema}
	for _, t := range db.Tables() {
		if k := strings.ToLower(t.Schema); !seen[k] {
			seen[k] = true
			out = append(out, t.Schema)
		}
	}
	sort.Strings(out)
	return out
}

// Table returns a table by name ("t" or "schema.t", case-insensitive).
//
// A name in FileTableSchema is a file table (files.go): the Parquet files
// its pattern names, described from their footers.
func (db *DB) Table(name string) (*Table, error) {
	if pattern, ok := strings.CutPrefix(name, FileTableSchema+"."); ok {
		return db.fileTableOf(pattern)
	}
	return db.cat.lookup(name)
}

// Schema returns a table's Arrow schema.
func (db *DB) Schema(name string) (*arrow.Schema, error) {
	t, err := db.Table(name)
	if err != nil {
		return nil, err
	}
	return ArrowSchema(t.Columns)
}

// Path returns the absolute path of a table file.
func (db *DB) Path(f *File) string { return db.cat.abs(f.Path) }

// Nodes lists the storage nodes known to the catalog.
func (db *DB) Nodes() []Node {
	db.cat.mu.Lock()
	defer db.cat.mu.Unlock()
	_ = db.cat.refreshLocked()
	out := make([]Node, 0, len(db.cat.nodes))
	for _, n := range db.cat.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SetNodes records storage nodes (id -> address) for placement.
func (db *DB) SetNodes(nodes []Node) error {
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	tx := db.cat.begin()
	for _, n := range nodes {
		if n.ID == "" || n.Addr == "" {
			tx.abort()
			return nferr.Queryf("storage node needs an id and an address (got %q at %q)", n.ID, n.Addr)
		}
		n := n
		tx.putJSON([]byte(pfxNode+n.ID), &n)
		tx.nodes[n.ID] = &n
	}
	return tx.commit()
}

// CreateOptions qualify CreateTable.
type CreateOptions struct {
	IfNotExists bool // no error when the table exists (it is kept)
	OrReplace   bool // replace an existing table (its files are deleted)
	// Constraints are the table's keys, indexes, checks and defaults (nil:
	// none).
	Constraints *Constraints
	// Root, for RegisterExternal, is the file access root the location
	// is listed and its files described through (files_root.go; nil:
	// none): a file leading outside it refuses the table.
	Root *FileRoot
}

// replacedTable is what creating table name (catalog key qn) with opts
// meets: the table it replaces (nil: none), or keep for an existing one
// that IF NOT EXISTS keeps (nothing to do), or the error for an existing
// one without OR REPLACE. c.mu must be held.
func (c *catalog) replacedTable(name, qn string, opts CreateOptions) (old *Table, keep bool, err error) {
	if c.isView(qn) {
		return nil, false, nferr.Queryf("relation %q already exists (a view)", name)
	}
	old = c.tables[qn]
	if old != nil && !opts.OrReplace {
		if opts.IfNotExists {
			return nil, true, nil
		}
		return nil, false, nferr.Queryf("table %s already exists", name)
	}
	return old, false, nil
}

// newTable is a table as CREATE TABLE makes it: columns and constraints,
// validated (primary key columns become NOT NULL).
func newTable(s, n string, cols []Column, c *Constraints) (*Table, error) {
	t := &Table{Schema: s, Name: n, Columns: cols, Generation: 1, Created: time.Now().UTC()}
	if c != nil {
		cc := Constraints{Indexes: append([]Index(nil), c.Indexes...), Checks: c.Checks, Defaults: c.Defaults}
		for i := range cc.Indexes {
			cc.Indexes[i].Columns = append([]string(nil), cc.Indexes[i].Columns...)
		}
		if err := validateConstraints(n, t.Columns, &cc); err != nil {
			return nil, err
		}
		t.Indexes, t.Checks, t.Defaults = cc.Indexes, cc.Checks, cc.Defaults
		for _, fk := range c.ForeignKeys {
			fk.Columns = append([]string(nil), fk.Columns...)
			fk.RefColumns = append([]string(nil), fk.RefColumns...)
			t.ForeignKeys = append(t.ForeignKeys, fk)
		}
	}
	return t, nil
}

// CreateTable creates an empty table. Atomic: one synced catalog batch.
func (db *DB) CreateTable(name string, sch *arrow.Schema, opts CreateOptions) error {
	cols, err := SchemaColumns(sch)
	if err != nil {
		return nferr.Wrap(nferr.KindQuery, err, "create table %s", name)
	}
	s, n, err := splitName(name)
	if err != nil {
		return err
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	old, keep, err := db.cat.replacedTable(name, tableKeyName(s, n), opts)
	if keep || err != nil {
		return err
	}
	t, err := newTable(s, n, cols, opts.Constraints)
	if err != nil {
		return err
	}
	if err := db.cat.validateForeignKeys(t); err != nil {
		return err
	}
	if old != nil {
		if err := db.cat.refusedWhileReferenced("replace", name, tableKeyName(s, n)); err != nil {
			return err
		}
	}
	tx := db.cat.begin()
	t.Since = tx.nextID()
	if old != nil {
		t.Generation = old.Generation + 1
		tx.dropKeys(tableKeyName(s, n))
	}
	tx.putTable(t)
	g := db.garbageOf(tx, old, nil)
	if err := tx.commit(); err != nil {
		return err
	}
	db.finishGarbage(g)
	return nil
}

// DropTable removes a table and deletes its files (external tables keep
// theirs). Atomic: after a crash the table is either fully there or gone,
// and leftover files are deleted at the next Open.
func (db *DB) DropTable(name string, ifExists bool) error {
	s, n, err := splitName(name)
	if err != nil {
		return err
	}
	// A freeing section: on a full disk, dropping a table is how room is
	// made, so it may use the catalog's reserve.
	if err := db.cat.lockWriteFreeing(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	old := db.cat.tables[tableKeyName(s, n)]
	if old == nil {
		if ifExists {
			return nil
		}
		return nferr.Queryf("table %s does not exist", name)
	}
	if err := db.cat.refusedWhileReferenced("drop", name, tableKeyName(s, n)); err != nil {
		return err
	}
	tx := db.cat.begin()
	tx.dropTable(s, n)
	g := db.garbageOf(tx, old, nil)
	if err := tx.commit(); err != nil {
		return err
	}
	db.finishGarbage(g)
	return nil
}

// garbageOf records, in tx, the files of old that keep (the new state)
// does not reference; nil when there are none. The caller holds cat.mu.
func (db *DB) garbageOf(tx *txn, old *Table, keep *Table) *garbage {
	if old == nil || old.External {
		return nil
	}
	keepSet := map[string]bool{}
	if keep != nil {
		for _, f := range keep.Files {
			keepSet[filepath.Clean(f.Path)] = true
		}
	}
	g := &garbage{ID: tx.nextID()}
	for _, f := range old.Files {
		if !keepSet[filepath.Clean(f.Path)] && !filepath.IsAbs(f.Path) {
			g.Paths = append(g.Paths, f.Path)
		}
	}
	g.Dirs = []string{tableDir(old.Schema, old.Name)}
	tx.putJSON([]byte(fmt.Sprintf("%s%016x", pfxGarbage, g.ID)), g)
	return g
}

// finishGarbage deletes a committed garbage record's files and the record,
// in the commit's catalog section. A crash in between is finished by the
// next Open (of a process alone with the database).
func (db *DB) finishGarbage(g *garbage) {
	if g == nil {
		return
	}
	_ = crashPoint("before-gc")
	// NB: a statement of this process may still read them (reads.go).
	if db.deferGarbage(g) {
		return
	}
	db.collectGarbage(g)
}

// collectGarbage deletes g's files and its record unless another process
// has the database open. The caller holds cat.mu, in a section.
func (db *DB) collectGarbage(g *garbage) {
	// NB: the files may be read by another process that has the database
	// open: then the record stays, for the next process alone with it.
	if !db.cat.alone() {
		return
	}
	defer db.cat.sess.share()
	ref := db.cat.referenced()
	db.cat.collect(g, ref)
	for _, d := range g.Dirs {
		db.cat.removeUnusedDir(d)
	}
	_ = db.cat.pdb.Delete([]byte(fmt.Sprintf("%s%016x", pfxGarbage, g.ID)), nil)
}

// tableDir is a table's data directory relative to the database directory.
func tableDir(schema, name string) string {
	if strings.EqualFold(schema, DefaultSchema) {
		return strings.ToLower(name)
	}
	return strings.ToLower(schema) + "." + strings.ToLower(name)
}

// RegisterFiles creates or replaces tables from Parquet files already
// written under the database directory (paths relative to it), reading
// their footers for schemas and statistics and their bytes for checksums.
// All tables change in one atomic batch. This is what `tpch gen` uses.
func (db *DB) RegisterFiles(ctx context.Context, tables map[string][]string) error {
	plans := make([]tablePlan, 0, len(tables))
	for n, paths := range tables {
		plans = append(plans, tablePlan{name: n, paths: paths})
	}
	return db.registerTables(ctx, plans)
}

// tablePlan is a table RegisterFiles makes: its name, its files and,
// when a catalog is rebuilt (recover.go), its definition as a footer
// records it (columns, checks, defaults, Since; indexes and
// foreign keys are restored afterwards, with their records).
type tablePlan struct {
	name  string
	paths []string
	def   *Table
}

func (db *DB) registerTables(ctx context.Context, plans []tablePlan) error {
	type prepared struct {
		schema, name string
		t            *Table
	}
	var preps []prepared
	sort.Slice(plans, func(i, j int) bool { return plans[i].name < plans[j].name })
	for _, plan := range plans {
		name := plan.name
		s, n, err := splitName(name)
		if err != nil {
			return err
		}
		paths := append([]string(nil), plan.paths...)
		sort.Strings(paths)
		if len(paths) == 0 {
			return nferr.Queryf("register table %s: no files", name)
		}
		t := &Table{Schema: s, Name: n, Created: time.Now().UTC()}
		if d := plan.def; d != nil {
			t.Columns, t.Checks, t.Defaults, t.Received, t.Since = d.Columns, d.Checks, d.Defaults, d.Received, d.Since
		}
		for _, p := range paths {
			if err := ctx.Err(); err != nil {
				return nferr.With(nferr.KindCanceled, err)
			}
			rel := p
			if filepath.IsAbs(p) {
				r, err := filepath.Rel(db.dir, p)
				if err != nil || strings.HasPrefix(r, "..") {
					return nferr.Queryf("register table %s: %s is outside the database directory %s", name, p, db.dir)
				}
				rel = r
			}
			rel = filepath.Clean(rel)
			f, cols, err := db.describeFile(db.cat.abs(rel), t.Columns)
			if err != nil {
				return nferr.Wrap(nferr.KindData, err, "register table %s", name)
			}
			if t.Columns == nil {
				t.Columns = cols
			}
			f.Path = rel
			t.Files = append(t.Files, f)
		}
		preps = append(preps, prepared{s, n, t})
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	tx := db.cat.begin()
	var gs []*garbage
	for _, p := range preps {
		old := db.cat.tables[tableKeyName(p.schema, p.name)]
		p.t.Generation = 1
		if old != nil {
			p.t.Generation = old.Generation + 1
		}
		for _, f := range p.t.Files {
			f.ID = tx.nextID()
		}
		tx.putTable(p.t)
		if g := db.garbageOf(tx, old, p.t); g != nil {
			g.Dirs = nil
			gs = append(gs, g)
		}
	}
	if err := tx.commit(); err != nil {
		return err
	}
	for _, g := range gs {
		db.finishGarbage(g)
	}
	return nil
}

// describeFile reads a Parquet file's footer and checksum. When cols is
// nil the table's columns are derived from the file.
func (db *DB) describeFile(path string, cols []Column) (*File, []Column, error) {
	return db.describeFileIn(nil, path, cols)
}

// describeFileIn is describeFile through root when it is set.
func (db *DB) describeFileIn(root *FileRoot, path string, cols []Column) (*File, []Column, error) {
	md, size, err := readFooterIn(root, path)
	if err != nil {
		return nil, nil, err
	}
	if cols == nil {
		sch, err := schemaOfFooter(path, md)
		if err != nil {
			return nil, nil, err
		}
		if cols, err = SchemaColumns(sch); err != nil {
			return nil, nil, nferr.Wrap(nferr.KindData, err, "%s", path)
		}
	}
	f, err := fileFromFooter(path, md, cols)
	if err != nil {
		return nil, nil, err
	}
	sum, n, err := recordChecksumsIn(root, path, md, f)
	if err != nil {
		return nil, nil, err
	}
	if n != size {
		return nil, nil, nferr.Dataf("%s changed while it was being registered", path)
	}
	f.Size, f.Checksum = size, sum
	addDistinctFromDictionariesIn(root, path, md, f)
	return f, cols, nil
}

// RegisterExternal creates an external table over the Parquet files in dir
// (CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 'dir/'): footers are
// read for the schema and statistics, files are not copied, and dropping
// the table leaves them in place.
func (db *DB) RegisterExternal(ctx context.Context, name, dir string, opts CreateOptions) error {
	s, n, err := splitName(name)
	if err != nil {
		return err
	}
	adir, err := absPath(dir)
	if err != nil {
		return nferr.IOf("location %s: %w", dir, err)
	}
	var ents []os.DirEntry
	if IsObjectURL(adir) {
		ents, err = objectEntries(opts.Root, adir)
	} else if opts.Root != nil {
		ents, err = opts.Root.readDir(adir)
	} else {
		ents, err = os.ReadDir(adir)
	}
	if nferr.Is(err, nferr.KindAuth) {
		return err
	}
	if err != nil {
		return nferr.Queryf("external table %s: cannot read location %s: %v", name, dir, err)
	}
	t := &Table{Schema: s, Name: n, External: true, Location: adir, Created: time.Now().UTC()}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(strings.ToLower(e.Name()), ".parquet") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		p := joinPath(adir, e.Name())
		f, cols, err := db.describeFileIn(opts.Root, p, t.Columns)
		if nferr.Is(err, nferr.KindAuth) {
			return err
		}
		if err != nil {
			return nferr.Wrap(nferr.KindData, err, "external table %s", name)
		}
		if t.Columns == nil {
			t.Columns = cols
			if t.Unreadable, err = ParquetUnreadable(opts.Root, p); err != nil {
				return nferr.Wrap(nferr.KindData, err, "external table %s", name)
			}
		}
		f.Path = p
		t.Files = append(t.Files, f)
	}
	if len(t.Files) == 0 {
		return nferr.Queryf("external table %s: no .parquet files in %s", name, dir)
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	old, keep, err := db.cat.replacedTable(name, tableKeyName(s, n), opts)
	if keep || err != nil {
		return err
	}
	tx := db.cat.begin()
	t.Generation = 1
	if old != nil {
		t.Generation = old.Generation + 1
	}
	for _, f := range t.Files {
		f.ID = tx.nextID()
	}
	tx.putTable(t)
	g := db.garbageOf(tx, old, t)
	if err := tx.commit(); err != nil {
		return err
	}
	db.finishGarbage(g)
	return nil
}

// VerifyResult is one file's verification outcome.
type VerifyResult struct {
	Table string
	Path  string
	Err   error // nil: size, checksum and footer match the catalog
	// Recorded: the file had no chunk checksums (an older catalog); they
	// are recorded now that the file was verified (upgrade.go).
	Recorded bool
}

// Verify reads every file of the named tables (all when none are named)
// and checks size, whole-file checksum and footer against the catalog.
// Files of an older catalog that pass get their footer and chunk
// checksums recorded, so that scans need no whole-file check of them any
// more (upgrade.go); the results say which. An error (canceled, or the
// checksums could not be recorded) comes with the results so far.
func (db *DB) Verify(ctx context.Context, names ...string) ([]VerifyResult, error) {
	var tables []*Table
	if len(names) == 0 {
		tables = db.Tables()
	} else {
		for _, n := range names {
			t, err := db.Table(n)
			if err != nil {
				return nil, err
			}
			tables = append(tables, t)
		}
	}
	var out []VerifyResult
	queued := map[int]uint64{} // index in out -> file ID whose sums wait to be recorded
	for _, t := range tables {
		for _, f := range t.Files {
			if err := ctx.Err(); err != nil {
				return out, nferr.With(nferr.KindCanceled, err)
			}
			md, err := db.fs.verifyFile(f)
			if err == nil && needsWholeFileCheck(f) {
				var m *measuredSums
				if m, err = db.measureSums(f, md); err == nil {
					db.queueSums(f.ID, m)
					queued[len(out)] = f.ID
				}
			}
			out = append(out, VerifyResult{Table: t.QualifiedName(), Path: db.Path(f), Err: err})
		}
	}
	if len(queued) == 0 {
		return out, nil
	}
	recorded, err := db.recordSums(true)
	for i, id := range queued {
		out[i].Recorded = recorded[id]
	}
	return out, err
}

func (db *DB) checkSize(f *File) error { return db.fs.checkSize(f) }

// footer returns a file's parsed footer, cached for the process. The file's
// size is checked against the catalog first, and with
// Options.VerifyChecksums (or for a file of an older catalog,
// needsWholeFileCheck) its whole-file checksum on first use.
func (db *DB) footer(f *File) (*metadata.FileMetaData, error) { return db.fs.footer(f) }

// fileSet resolves a table's data files, checks them against their
// catalog entries and caches their parsed footers: what a Scanner needs
// from the files, whether the catalog is open in this process (DB), was
// sent by the storage node that owns the directory (a worker's
// short-circuit read, localread.go), or the files are a storage node's
// read over the network as stored bytes (remote, remotebytes.go).
type fileSet struct {
	dir     string // absolute ("" for remote files)
	verify  bool
	footers *sync.Map // Path + checksum -> *footerEntry
	// verified, when set, is told of each file of an older catalog
	// (needsWholeFileCheck) that passed its whole-file check, with its
	// footer (DB.sumsVerified; nil for a worker's short-circuit reads).
	verified func(f *File, md *metadata.FileMetaData) error
	// remote, when set, reads the files from a storage node.
	remote *remoteFiles
	// root, when set, is the file access root the files open through
	// (files_root.go: the file tables under it).
	root *FileRoot
}

func newFileSet(dir string) *fileSet { return &fileSet{dir: dir, footers: &sync.Map{}} }

// fileHandle is an open data file: random reads, and the seeking arrow-go's
// readers ask for.
type fileHandle interface {
	io.ReaderAt
	io.Seeker
	io.Closer
}

// Path names f: its absolute path, or its path on a storage node.
func (fs *fileSet) Path(f *File) string {
	if fs.remote != nil {
		return fs.remote.name(f)
	}
	return absIn(fs.dir, f.Path)
}

// open opens f for reading.
func (fs *fileSet) open(f *File) (fileHandle, error) {
	if fs.remote != nil {
		return fs.remote.open(f), nil
	}
	p := fs.Path(f)
	if IsObjectURL(p) {
		// A file table's object is read at the version described
		// (files.go: its ETag ends File.Checksum).
		var etag string
		if parts := strings.SplitN(f.Checksum, ":", 4); len(parts) == 4 && parts[0] == "file" {
			etag = parts[3]
		}
		s, err := s3Default()
		if err != nil {
			return nil, err
		}
		h, err := s.openVersion(p, etag)
		if err != nil {
			return nil, fileErr(p, err)
		}
		return h, nil
	}
	h, err := openFile(fs.root, p)
	if err != nil {
		return nil, fileErr(p, err)
	}
	return h, nil
}

// matchesFooter checks that the footer md of the file at p holds the rows
// and row groups the catalog recorded for f.
func matchesFooter(p string, f *File, md *metadata.FileMetaData) error {
	if md.NumRows != f.Rows || md.NumRowGroups() != len(f.RowGroups) {
		return nferr.Dataf("data file %s does not match the catalog: %d rows in %d row groups, the catalog recorded %d in %d",
			p, md.NumRows, md.NumRowGroups(), f.Rows, len(f.RowGroups))
	}
	return nil
}

// readFooter checks f's footer against the catalog's checksum of it
// (when recorded), then parses it.
func (fs *fileSet) readFooter(f *File) (*metadata.FileMetaData, error) {
	p := fs.Path(f)
	h, err := fs.open(f)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if err := checkFooter(p, h, f); err != nil {
		return nil, err
	}
	return parseFooter(p, h)
}

// verifyFile checks f's size and whole-file checksum, then parses its
// footer. Only local files: a scan of remote files that needs it reads
// through the storage node's own scan instead (remoteFiles.usable).
func (fs *fileSet) verifyFile(f *File) (*metadata.FileMetaData, error) {
	if fs.remote != nil {
		return nil, nferr.Internalf("whole-file check of %s over the network", fs.Path(f))
	}
	p := fs.Path(f)
	if err := fs.checkSize(f); err != nil {
		return nil, err
	}
	sum, _, err := fileChecksumIn(fs.root, p)
	if err != nil {
		return nil, err
	}
	if sum != f.Checksum {
		return nil, nferr.Dataf("data file %s is corrupt: checksum %s, the catalog recorded %s", p, sum, f.Checksum)
	}
	md, _, err := readFooterIn(fs.root, p)
	return md, err
}

// checkSize checks f's size against the catalog. NB: a storage node checks
// the size of its file on every read of it (remotebytes.go).
func (fs *fileSet) checkSize(f *File) error {
	if fs.remote != nil {
		return nil
	}
	p := fs.Path(f)
	st, err := statFile(fs.root, p)
	if err != nil {
		return fileErr(p, err)
	}
	if st.Size() != f.Size {
		if st.Size() < f.Size {
			return nferr.Dataf("data file %s is truncated: %d bytes, the catalog recorded %d", p, st.Size(), f.Size)
		}
		return nferr.Dataf("data file %s changed: %d bytes, the catalog recorded %d", p, st.Size(), f.Size)
	}
	return nil
}

func (fs *fileSet) footer(f *File) (*metadata.FileMetaData, error) {
	p := fs.Path(f)
	key := p + "\x00" + f.Checksum
	v, _ := fs.footers.LoadOrStore(key, &footerEntry{})
	e := v.(*footerEntry)
	e.once.Do(func() {
		if err := fs.checkSize(f); err != nil {
			e.err = err
			return
		}
		var md *metadata.FileMetaData
		var err error
		if fs.verify || needsWholeFileCheck(f) {
			md, err = fs.verifyFile(f) // the whole file, footer included
		} else {
			md, err = fs.readFooter(f)
		}
		if err != nil {
			e.err = err
			return
		}
		if err := matchesFooter(p, f, md); err != nil {
			e.err = err
			return
		}
		if fs.verified != nil && needsWholeFileCheck(f) {
			if err := fs.verified(f, md); err != nil {
				e.err = err
				return
			}
		}
		e.md = md
	})
	if e.err != nil {
		// Do not cache failures: the file may be repaired.
		fs.footers.Delete(key)
	}
	return e.md, e.err
}
