package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/nicflow/nicflow/internal/nferr"
)

// FormatVersion is the catalog layout this code writes. Open migrates older
// layouts forward in one atomic batch.
//
//	v0: "t/<name>" -> a table with its files inline (no version key).
//	v1: "meta/version", "schema/<s>", "table/<s.t>", "file/<s.t>/<id>",
//	    "intent/<id>", "garbage/<id>", "node/<id>", "meta/seq",
//	    "key/<s.t>/<index>/<key>" (the values of unique indexes) and
//	    "view/<s.v>" (views) were added without a version change: older
//	    code ignores them.
const FormatVersion = 1

// DefaultSchema is the schema of unqualified table names.
const DefaultSchema = "main"

// Table is one table as the catalog records it. Tables handed out by DB are
// immutable snapshots: a change publishes a new *Table.
type Table struct {
	Schema  string   `json:"schema"`
	Name    string   `json:"name"`
	Columns []Column `json:"columns"`
	// Unreadable are the columns of a file or external table's files
	// that nicflow does not read (parquet_columns.go): not in Columns; a
	// query that names one fails with its Err.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	// External tables (CREATE EXTERNAL TABLE ... LOCATION) reference files
	// nicflow did not write and never deletes.
	External bool   `json:"external,omitempty"`
	Location string `json:"location,omitempty"`
	// Received: a storage node holds the table because a catalog placed
	// its files here (ReceiveFile); that catalog's Prune may drop the
	// table or its files. Tables loaded on the node itself never are.
	Received bool `json:"received,omitempty"`
	// Indexes are the table's PRIMARY KEY and UNIQUE constraints and the
	// indexes CREATE INDEX made (keys.go); Checks its CHECK constraints;
	// Defaults, per column, the SQL text of its DEFAULT ("" for none; nil
	// when no column has one).
	Indexes  []Index  `json:"indexes,omitempty"`
	Checks   []Check  `json:"checks,omitempty"`
	Defaults []string `json:"defaults,omitempty"`
	// ForeignKeys are the table's FOREIGN KEY constraints (foreign.go).
	ForeignKeys []ForeignKey `json:"foreign_keys,omitempty"`
	// Generation increases with every committed change of the table.
	Generation uint64 `json:"generation"`
	// Since is the catalog id current when the table was created (CREATE
	// TABLE, CREATE TABLE AS): it tells a table from an earlier one of
	// the same name in the files' footers (recover.go). 0: made before
	// it was recorded, or registered (tpch gen, external tables).
	Since   uint64    `json:"since,omitempty"`
	Created time.Time `json:"created"`
	Files   []*File   `json:"files,omitempty"`
	// root is the file access root a file table's files open through
	// (files_root.go); nil for every other table. Never stored.
	root *FileRoot
}

// File is one Parquet file of a table.
type File struct {
	ID uint64 `json:"id"`
	// Path is relative to the database directory, or absolute for
	// external tables.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Checksum of the whole file ("xxh3:<16 hex digits>").
	Checksum string `json:"checksum"`
	// FooterSum is the xxh3-64 of the footer (the Thrift metadata, its
	// length and the closing magic), checked before the footer is parsed.
	// 0: not recorded (an older catalog).
	FooterSum uint64 `json:"footer_sum,omitempty"`
	Rows      int64  `json:"rows"`
	// ColumnIndex maps each table column to its Parquet leaf index.
	ColumnIndex []int      `json:"colidx"`
	RowGroups   []RowGroup `json:"rowgroups"`
	// Nodes lists the storage nodes holding a replica, primary first.
	// Empty: the file is local to this database directory only.
	Nodes []string `json:"nodes,omitempty"`
}

// RowGroup is one row group of a file with per-column statistics (in table
// column order).
type RowGroup struct {
	Rows    int64         `json:"rows"`
	Bytes   int64         `json:"bytes"`
	Columns []ColumnStats `json:"cols"`
	// Sums are the xxh3-64 checksums of each table column's chunk (its
	// pages' bytes, in table column order), checked every time a scan
	// reads the chunk. Nil: not recorded (an older catalog; the whole
	// file is then verified on its first use in a process, and its sums
	// recorded, upgrade.go).
	Sums []uint64 `json:"sums,omitempty"`
}

// QualifiedName is "schema.name".
func (t *Table) QualifiedName() string { return t.Schema + "." + t.Name }

// Rows is the table's row count.
func (t *Table) Rows() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Rows
	}
	return n
}

// Bytes is the total size of the table's files.
func (t *Table) Bytes() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Size
	}
	return n
}

// mayHold reports whether row group r may hold a row passing filter (nil:
// any row), by its statistics; an empty group holds none.
func (r *RowGroup) mayHold(filter *cnode) bool {
	if r.Rows == 0 {
		return false
	}
	return filter == nil || filter.mayMatch(r.stats, r.Rows)
}

// stats returns the statistics of table column tc in r (nil: none kept).
func (r *RowGroup) stats(tc int) *ColumnStats {
	if tc < 0 || tc >= len(r.Columns) {
		return nil
	}
	return &r.Columns[tc]
}

// FilesMayMatch lists t's files with a row group whose statistics may hold
// a row passing p (every file for a nil p): the files a DELETE or UPDATE
// whose WHERE implies p may change.
func (t *Table) FilesMayMatch(p *Predicate) ([]*File, error) {
	if p == nil {
		return t.Files, nil
	}
	filter, err := t.compileFilter(p)
	if err != nil {
		return nil, err
	}
	var out []*File
	for _, f := range t.Files {
		for rg := range f.RowGroups {
			if f.RowGroups[rg].mayHold(filter) {
				out = append(out, f)
				break
			}
		}
	}
	return out, nil
}

// compileFilter compiles p over t's columns for row-group pruning.
func (t *Table) compileFilter(p *Predicate) (*cnode, error) {
	sch, err := ArrowSchema(t.Columns)
	if err != nil {
		return nil, err
	}
	for _, c := range p.Columns() {
		if t.ColumnIndex(c) < 0 {
			return nil, nferr.Queryf("filter %s of %s: unknown column %q", p, t.QualifiedName(), c)
		}
	}
	filter, err := compilePredicate(p, sch, func(name string) (int, bool) {
		i := t.ColumnIndex(name)
		return i, i >= 0
	}, 0)
	if err != nil {
		return nil, nferr.Wrap(nferr.KindQuery, err, "filter of %s", t.QualifiedName())
	}
	return filter, nil
}

// RowGroupMayMatch returns whether row group rg of f may hold a row
// passing p, by the catalog's statistics (every row group for a nil p, or
// one that cannot be compiled: the scan decides then). A planner uses it
// to leave out the row groups a scan would skip anyway.
func (t *Table) RowGroupMayMatch(p *Predicate) func(f *File, rg int) bool {
	if p == nil {
		return func(*File, int) bool { return true }
	}
	filter, err := t.compileFilter(p)
	if err != nil {
		return func(*File, int) bool { return true }
	}
	return func(f *File, rg int) bool { return f.RowGroups[rg].mayHold(filter) }
}

// RowGroupCount is the number of row groups over all files.
func (t *Table) RowGroupCount() int {
	n := 0
	for _, f := range t.Files {
		n += len(f.RowGroups)
	}
	return n
}

// ColumnIndex returns the index of a column (case-insensitive), or -1.
func (t *Table) ColumnIndex(name string) int {
	for i, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// ColumnStats merges a column's statistics over all row groups: null count,
// min and max (nil when any row group lacks them), and the largest
// per-row-group distinct estimate (a lower bound of the table's).
func (t *Table) ColumnStats(col int) (out ColumnStats) {
	first := true
	spanSum, spans := 0.0, 0
	defer func() {
		if spans > 0 {
			out.GroupSpan = spanSum / float64(spans)
		}
	}()
	for _, f := range t.Files {
		for _, rg := range f.RowGroups {
			st := rg.Columns[col]
			if st.Min != nil && st.Max != nil && st.Min.Kind == st.Max.Kind {
				switch st.Min.Kind {
				case KindInt, KindDate, KindTimestamp, KindTime:
					spanSum += float64(st.Max.Int) - float64(st.Min.Int) + 1
					spans++
				}
			}
			if st.Nulls < 0 || out.Nulls < 0 {
				out.Nulls = -1
			} else {
				out.Nulls += st.Nulls
			}
			if st.Distinct > out.Distinct {
				out.Distinct = st.Distinct
			}
			allNull := st.Nulls >= 0 && st.Nulls == rg.Rows
			if allNull {
				continue
			}
			if st.Min == nil || st.Max == nil {
				out.Min, out.Max = nil, nil
				first = false
				continue
			}
			if first {
				lo, hi := *st.Min, *st.Max
				out.Min, out.Max = &lo, &hi
				first = false
				continue
			}
			if out.Min != nil && valueLess(*st.Min, *out.Min) {
				lo := *st.Min
				out.Min = &lo
			}
			if out.Max != nil && valueLess(*out.Max, *st.Max) {
				hi := *st.Max
				out.Max = &hi
			}
		}
	}
	return out
}

func valueLess(a, b Value) bool {
	switch a.Kind {
	case KindInt, KindDate, KindTimestamp, KindTime, KindDecimal:
		return a.Int < b.Int
	case KindFloat:
		return a.Float < b.Float
	case KindString:
		return a.Str < b.Str
	case KindBool:
		return !a.Bool && b.Bool
	case KindDecimal128:
		x, _ := dec128Of(a)
		y, _ := dec128Of(b)
		return x.Less(y)
	}
	return false
}

// splitName splits "s.t" or "t" into a schema and a table name and checks
// that both are usable as catalog keys and directory names.
func splitName(name string) (schema, table string, err error) {
	schema, table = DefaultSchema, name
	if i := strings.IndexByte(name, '.'); i >= 0 {
		schema, table = name[:i], name[i+1:]
	}
	if strings.EqualFold(schema, "information_schema") || strings.EqualFold(schema, "pg_catalog") {
		// The engine answers them from the catalog; nothing is stored there.
		return "", "", nferr.Queryf("schema %s is read-only: %s cannot be created or changed", strings.ToLower(schema), name)
	}
	for _, s := range []string{schema, table} {
		if s == "" || len(s) > 128 {
			return "", "", nferr.Queryf("invalid table name %q", name)
		}
		for _, r := range s {
			if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return "", "", nferr.Queryf("invalid table name %q: use letters, digits, '_' and '-' (schema.table)", name)
			}
		}
	}
	return schema, table, nil
}

func tableKeyName(schema, table string) string {
	return strings.ToLower(schema) + "." + strings.ToLower(table)
}

// Key layout (v1).
const (
	keyVersion = "meta/version"
	keySeq     = "meta/seq"
	pfxSchema  = "schema/"
	pfxTable   = "table/"
	pfxFile    = "file/"
	pfxIntent  = "intent/"
	pfxGarbage = "garbage/"
	pfxNode    = "node/"
	pfxV0Table = "t/"
)

func fileKey(qn string, id uint64) []byte {
	return []byte(fmt.Sprintf("%s%s/%016x", pfxFile, qn, id))
}

func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// intent records files a writer is creating; Open deletes them if the
// writer died before committing.
type intent struct {
	ID uint64 `json:"id"`
	// Dir is relative to the database directory.
	Dir string `json:"dir"`
	// Prefixes of temp and final file names in Dir owned by this intent.
	Prefixes []string  `json:"prefixes"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
}

// garbage lists files a committed change made unreachable; they are deleted
// after the commit, and again at Open if the process died first.
type garbage struct {
	ID    uint64   `json:"id"`
	Paths []string `json:"paths"`
	// Dirs are removed when empty.
	Dirs []string `json:"dirs,omitempty"`
}

// Node is a storage node known to this catalog (for placement).
type Node struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// catalog wraps the Pebble store and the in-memory table snapshots.
//
// Several processes may have one database open at once (docs/storage.md,
// "Several processes"). Each holds DIR/session.lock shared while it has
// the database open. The store (Pebble, which one process at a time may
// open) is open only inside a catalog section: between enter and leave,
// under DIR/catalog.lock held exclusively. Every change runs in a section
// (lockWrite), which first brings the in-memory catalog up to date if
// another process committed since; readers refresh when the seal
// (catalog_seal.go) counts more commits than they have seen.
type catalog struct {
	dir  string // database directory
	pdb  *pebble.DB
	lock *dirLock
	sess *sessionLock
	// depth counts nested enters; the store is open while it is > 0,
	// and while sticky.
	depth int
	// sticky: the outermost section ended but the store stays open and
	// catalog.lock held, so that the next section (the next statement of
	// a script of INSERTs) costs nothing. Another process waiting for
	// catalog.lock (wanted), an idle second, or close ends it.
	sticky   bool
	lastUse  time.Time
	watching bool // the goroutine that ends a sticky section runs

	mu      sync.Mutex // serializes writers and guards the fields below
	seq     uint64
	commits uint64            // committed changes (keyCommits; catalog_seal.go)
	tables  map[string]*Table // by lower-case qualified name
	views   map[string]*View  // by lower-case qualified name
	nodes   map[string]Node

	// rw: the open store is read-write (a section that may change the
	// catalog); readers open it read-only. wrote: this process opened it
	// read-write (close then flushes it).
	rw, wrote bool
	// space guards the store against a full disk (catalog_space.go).
	space *catalogSpace
}

// LockWait bounds how long a process waits for another's catalog section
// (a commit, or a load into a table with unique keys) to end before it
// fails with KindBusy. `nicflow` takes it from NICFLOW_LOCK_WAIT.
var LockWait = 2 * time.Minute

// section says what a catalog section does with the store.
type section uint8

const (
	// sectionRead only reads: the store opens read-only, and nothing in
	// DIR/catalog is written (a damaged or incomplete catalog is never
	// modified by a reader).
	sectionRead section = iota
	// sectionWrite may change the catalog: the store opens read-write,
	// after catalogSpace.check.
	sectionWrite
	// sectionFreeing is a write whose statement deletes files (DROP
	// TABLE, an aborted load, recovery): it may use the catalog's
	// reserve on a full disk.
	sectionFreeing
)

// openCatalog opens the catalog of dir and loads it; it returns inside a
// section (the caller recovers, then leaves). An existing catalog is opened
// read-only and checked (layout version, records, seal) before anything
// could write to it; a new one is created only in a directory that never
// held a database (checkExisting).
func openCatalog(dir string, rebuilding bool) (*catalog, error) {
	cdir := filepath.Join(dir, "catalog")
	sess, err := openSessionLock(dir)
	if err != nil {
		return nil, err
	}
	c := &catalog{dir: dir, sess: sess, space: newCatalogSpace(dir), tables: map[string]*Table{}, views: map[string]*View{}, nodes: map[string]Node{}}
	lk, err := lockDirWait(dir, filepath.Join(dir, "catalog.lock"), LockWait)
	if err != nil {
		sess.unlock()
		return nil, err
	}
	c.lock = lk
	fail := func(err error) (*catalog, error) {
		c.release()
		sess.unlock()
		return nil, err
	}
	if storeExists(cdir) {
		c.pdb, err = openPebble(dir, cdir, sectionRead, c.space)
	} else {
		if err := checkExisting(dir, cdir, rebuilding); err != nil {
			return fail(err)
		}
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return fail(nferr.OS(err, "creating catalog directory %s", cdir))
		}
		if err := c.space.check(false); err != nil {
			return fail(err)
		}
		c.pdb, err = openPebble(dir, cdir, sectionWrite, c.space)
		c.rw, c.wrote = true, true
	}
	if err != nil {
		return fail(err)
	}
	c.depth = 1
	if err := c.migrate(); err != nil {
		return fail(err)
	}
	if err := c.load(); err != nil {
		return fail(err)
	}
	if err := c.checkSeal(); err != nil {
		return fail(err)
	}
	return c, nil
}

// storeExists reports whether cdir holds a Pebble store, whole or not (a
// manifest, a table or a log): such a directory is opened, never created
// anew. An empty directory, or one holding only what a creation that died
// at once leaves (a lock, an options file, a format marker), holds none.
func storeExists(cdir string) bool {
	ents, err := os.ReadDir(cdir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) // unreadable: let the open say why
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker.manifest.") || strings.HasSuffix(n, ".sst") || strings.HasSuffix(n, ".log") {
			return true
		}
	}
	return false
}

// enter starts a catalog section that may change the catalog: catalog.lock
// held exclusively (waiting for another process's section to end), the
// store open read-write, the in-memory catalog as the store has it.
// Sections nest. The caller holds c.mu.
func (c *catalog) enter() error { return c.enterWith(true, sectionWrite) }

// enterFreeing is enter for a change whose statement deletes files: on a
// full disk it may use the catalog's reserve (catalog_space.go).
func (c *catalog) enterFreeing() error { return c.enterWith(true, sectionFreeing) }

// enterRead is enter for reading only: the store opens read-only.
func (c *catalog) enterRead() error { return c.enterWith(true, sectionRead) }

// tryEnter is enter for work that can wait for another time (upgrade.go):
// it fails at once, KindBusy, when another process holds catalog.lock,
// and does not ask a holder to let go (catalog.lock.want).
func (c *catalog) tryEnter() error { return c.enterWith(false, sectionWrite) }

func (c *catalog) enterWith(wait bool, s section) error {
	if c.depth > 0 {
		if s != sectionRead && !c.rw {
			if err := c.reopenRW(s); err != nil {
				return err
			}
		}
		c.depth++
		return nil
	}
	if c.sticky {
		// Still open since the last section: nobody else committed since
		// (catalog.lock was held throughout), but a commit of ours that
		// failed half-way may have left the tables behind the store.
		c.sticky, c.depth = false, 1
		var err error
		if s != sectionRead && !c.rw {
			err = c.reopenRW(s)
		}
		if err == nil {
			var v []byte
			v, _, err = c.get(keyCommits)
			if err == nil && decodeCount(v) != c.commits {
				err = c.load()
			}
		}
		if err != nil {
			c.release()
		}
		return err
	}
	var lk *dirLock
	var err error
	if wait {
		lk, err = lockDirWait(c.dir, filepath.Join(c.dir, "catalog.lock"), LockWait)
	} else {
		lk, err = lockDir(c.dir, filepath.Join(c.dir, "catalog.lock"))
	}
	if err != nil {
		return err
	}
	if s != sectionRead {
		if err := c.space.check(s == sectionFreeing); err != nil {
			lk.unlock()
			return err
		}
	}
	pdb, err := openPebble(c.dir, filepath.Join(c.dir, "catalog"), s, c.space)
	if err != nil {
		lk.unlock()
		return err
	}
	c.pdb, c.lock, c.depth, c.rw = pdb, lk, 1, s != sectionRead
	c.wrote = c.wrote || c.rw
	v, _, err := c.get(keyCommits)
	if err == nil && decodeCount(v) != c.commits {
		err = c.load()
	}
	if err != nil {
		c.release()
		return err
	}
	return nil
}

// reopenRW turns the read-only store of the current section read-write
// (catalog.lock is held throughout: nothing changed in between). The
// caller holds no batch or iterator of the store.
func (c *catalog) reopenRW(s section) error {
	if err := c.space.check(s == sectionFreeing); err != nil {
		return err
	}
	_ = c.pdb.Close()
	c.pdb = nil
	pdb, err := openPebble(c.dir, filepath.Join(c.dir, "catalog"), s, c.space)
	if err != nil {
		return err
	}
	c.pdb, c.rw, c.wrote = pdb, true, true
	return nil
}

// leave ends a catalog section. The outermost one keeps the store open
// (sticky) unless another process waits for it; then it closes the store
// and releases catalog.lock (release, which failures call directly). The
// caller holds c.mu.
func (c *catalog) leave() {
	if c.depth > 1 {
		c.depth--
		return
	}
	c.depth = 0
	if c.pdb != nil && c.lock != nil && !wanted(c.lock.f.Name()) {
		c.sticky, c.lastUse = true, time.Now()
		if !c.watching {
			c.watching = true
			go c.watch()
		}
		return
	}
	c.release()
}

// stickyIdle is how long a sticky section outlives its last use.
const stickyIdle = time.Second

// watch ends the sticky section when another process wants catalog.lock
// or the section has been idle for stickyIdle.
func (c *catalog) watch() {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		c.mu.Lock()
		if !c.sticky && c.depth == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		if c.sticky && (time.Since(c.lastUse) > stickyIdle || wanted(c.lock.f.Name())) {
			c.release()
		}
		c.mu.Unlock()
	}
}

// release closes the store and releases catalog.lock; after a read-write
// section it first refills the catalog's reserve (under catalog.lock: one
// process at a time changes it).
func (c *catalog) release() {
	c.depth, c.sticky = 0, false
	if c.pdb != nil {
		_ = c.pdb.Close()
		c.pdb = nil
	}
	if c.rw {
		c.rw = false
		c.space.refill()
	}
	c.lock.unlock()
	c.lock = nil
}

// lockWrite takes c.mu and enters a section: what every change does
// before it reads the tables it changes.
func (c *catalog) lockWrite() error { return c.lockWriteWith(sectionWrite) }

// lockWriteFreeing is lockWrite for a change whose statement deletes files
// (enterFreeing).
func (c *catalog) lockWriteFreeing() error { return c.lockWriteWith(sectionFreeing) }

func (c *catalog) lockWriteWith(s section) error {
	c.mu.Lock()
	if err := c.enterWith(true, s); err != nil {
		c.mu.Unlock()
		return err
	}
	return nil
}

func (c *catalog) unlockWrite() {
	c.leave()
	c.mu.Unlock()
}

// refreshLocked reloads the in-memory catalog when another process
// committed since it was loaded (the seal counts more commits). The
// caller holds c.mu. A failure keeps the catalog as it was: a reader then
// answers from the last state it saw.
func (c *catalog) refreshLocked() error {
	if c.depth > 0 || c.sticky {
		return nil // in a section, or holding its lock: up to date
	}
	sealed, ok, err := readSeal(c.dir)
	if err != nil || !ok || sealed == c.commits {
		return err
	}
	if err := c.enterRead(); err != nil {
		return err
	}
	c.leave()
	return nil
}

// alone reports whether no other process has the database open; while
// it holds, others cannot open it. The caller ends it with c.sess.share().
func (c *catalog) alone() bool { return c.sess.tryExclusive() }

// close releases the catalog. A process that changed it first flushes the
// store: flushed, the catalog lives in checksummed tables and its log
// holds nothing a damaged log could lose. A reader writes nothing.
func (c *catalog) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if c.wrote && c.sess != nil && c.sess.f != nil {
		if err = c.enter(); err == nil {
			err = c.pdb.Flush()
		}
		if nferr.Is(err, nferr.KindResource) || nferr.Is(err, nferr.KindBusy) {
			// NB: the log is durable; the flush only shortens what a
			// damaged log could lose. A full disk or a busy catalog skips it.
			err = nil
		}
	}
	if c.lock != nil {
		c.release()
	}
	c.sess.unlock()
	if err != nil {
		return nferr.Wrap(nferr.KindIO, err, "closing catalog %s", c.dir)
	}
	return nil
}

// openPebble opens the store: read-only for sectionRead (nothing is
// written, a store that is not there is not created), read-write
// otherwise, creating it only when cdir holds none (openCatalog decides:
// storeExists). Its files are written through reserveFS. NB: our own flock
// (catalog.lock, held by every section) keeps other processes out, so
// whatever Pebble refuses here, or panics on, is about its files: the
// catalog is damaged, unless the disk is full or refuses access.
func openPebble(dir, cdir string, s section, space *catalogSpace) (pdb *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			pdb, err = nil, damaged(dir, "opening it: %v", r)
		}
	}()
	pdb, err = pebble.Open(cdir, &pebble.Options{
		FS:               reserveFS{FS: vfs.Default, space: space},
		ReadOnly:         s == sectionRead,
		ErrorIfNotExists: storeExists(cdir),
		Logger:           quietLogger{},
		// Damage Pebble finds is reported by the read that found it (a
		// KindData error, storeErr), not by its default handler, which
		// ends the process.
		EventListener: &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}},
		// No background reads of the catalog's tables for statistics
		// nobody uses (they too would end the process on damage).
		DisableTableStats: true,
	})
	if err != nil {
		return nil, openErr(dir, cdir, err)
	}
	return pdb, nil
}

// openErr classifies a failed open of the store.
func openErr(dir, cdir string, err error) error {
	switch {
	case errors.Is(err, pebble.ErrDBDoesNotExist):
		return damaged(dir, "%s", missingManifest(cdir))
	case isNoSpace(err):
		return nferr.Resourcef("no space left on device for the catalog of %s (free space there): %s", dir, pebbleText(err))
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return nferr.IOf("catalog %s: %s", cdir, pebbleText(err))
	}
	return damaged(dir, "opening it: %s", pebbleText(err))
}

// missingManifest says what is missing when a store's manifest cannot be
// found, and how to recover it.
func missingManifest(cdir string) string {
	if m := newestManifest(cdir); m != "" {
		return fmt.Sprintf("its manifest marker (marker.manifest.*) is missing, which Pebble needs to find %s; `nicflow catalog recover --dir %s` checks whether that manifest holds the catalog and restores the marker",
			m, filepath.Dir(cdir))
	}
	return "it has no manifest (MANIFEST-*), which lists the store's tables"
}

// newestManifest is the name of the MANIFEST-* file of cdir with the
// highest number ("" for none).
func newestManifest(cdir string) string {
	ents, _ := os.ReadDir(cdir)
	best, bestNum := "", uint64(0)
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "MANIFEST-")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(num, 10, 64); err == nil && (best == "" || n > bestNum) {
			best, bestNum = e.Name(), n
		}
	}
	return best
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}

func (c *catalog) get(key string) ([]byte, bool, error) {
	v, closer, err := c.pdb.Get([]byte(key))
	if err == pebble.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storeErr(c.dir, "reading key "+key, err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, true, nil
}

// scan calls fn for every key with the prefix.
func (c *catalog) scan(prefix string, fn func(k, v []byte) error) error {
	it, err := c.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: prefixEnd([]byte(prefix))})
	if err != nil {
		return storeErr(c.dir, "reading it", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return storeErr(c.dir, "reading it", err)
	}
	return nil
}

// migrate brings the stored layout to FormatVersion.
func (c *catalog) migrate() error {
	v, ok, err := c.get(keyVersion)
	if err != nil {
		return err
	}
	ver := 0
	if ok {
		ver, err = strconv.Atoi(string(v))
		if err != nil {
			return nferr.Dataf("catalog %s: corrupt format version %q", c.dir, v)
		}
	}
	if ver > FormatVersion {
		return nferr.Dataf("catalog %s has format version %d; this nicflow understands up to %d (upgrade nicflow)", c.dir, ver, FormatVersion)
	}
	if ver == FormatVersion {
		return nil
	}
	// v0 -> v1: tables stored whole under "t/<name>".
	if !c.rw {
		// NB: a catalog sealed was written with a version record (seals
		// came after v1): one without it lost records, and is not
		// migrated (written) but refused.
		if _, sealed, err := readSeal(c.dir); err != nil || sealed {
			if err != nil {
				return err
			}
			return damaged(c.dir, "it has no format version record, which every catalog with a seal (%s) has", filepath.Join(c.dir, sealFile))
		}
		if err := c.reopenRW(sectionWrite); err != nil {
			return err
		}
	}
	b := c.pdb.NewBatch()
	defer b.Close()
	var seq uint64
	err = c.scan(pfxV0Table, func(k, v []byte) error {
		var t Table
		if err := json.Unmarshal(v, &t); err != nil {
			return nferr.Dataf("catalog %s: corrupt v0 table %s: %v", c.dir, k, err)
		}
		if t.Schema == "" {
			t.Schema = DefaultSchema
		}
		if t.Generation == 0 {
			t.Generation = 1
		}
		qn := tableKeyName(t.Schema, t.Name)
		for _, f := range t.Files {
			seq++
			if f.ID == 0 {
				f.ID = seq
			}
			if f.ID > seq {
				seq = f.ID
			}
			fb, _ := json.Marshal(f)
			b.Set(fileKey(qn, f.ID), fb, nil)
		}
		files := t.Files
		t.Files = nil
		tb, _ := json.Marshal(&t)
		t.Files = files
		b.Set([]byte(pfxTable+qn), tb, nil)
		sb, _ := json.Marshal(map[string]string{"name": t.Schema})
		b.Set([]byte(pfxSchema+strings.ToLower(t.Schema)), sb, nil)
		b.Delete(k, nil)
		return nil
	})
	if err != nil {
		return err
	}
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], seq)
	b.Set([]byte(keySeq), sb[:], nil)
	b.Set([]byte(keyVersion), []byte(strconv.Itoa(FormatVersion)), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return nferr.OS(err, "migrating catalog %s to format %d", c.dir, FormatVersion)
	}
	return nil
}

// load reads all tables, files and nodes into memory.
func (c *catalog) load() error {
	if v, ok, err := c.get(keySeq); err != nil {
		return err
	} else if ok && len(v) == 8 {
		c.seq = binary.BigEndian.Uint64(v)
	}
	if v, ok, err := c.get(keyCommits); err != nil {
		return err
	} else if ok && len(v) == 8 {
		c.commits = binary.BigEndian.Uint64(v)
	}
	tables := map[string]*Table{}
	err := c.scan(pfxTable, func(k, v []byte) error {
		var t Table
		if err := json.Unmarshal(v, &t); err != nil {
			return nferr.Dataf("catalog %s: corrupt table record %s: %v", c.dir, k, err)
		}
		tables[string(k[len(pfxTable):])] = &t
		return nil
	})
	if err != nil {
		return err
	}
	err = c.scan(pfxFile, func(k, v []byte) error {
		rest := string(k[len(pfxFile):])
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			return nferr.Dataf("catalog %s: corrupt file key %q", c.dir, k)
		}
		t := tables[rest[:i]]
		if t == nil {
			return nferr.Dataf("catalog %s: file record %q of an unknown table", c.dir, k)
		}
		var f File
		if err := json.Unmarshal(v, &f); err != nil {
			return nferr.Dataf("catalog %s: corrupt file record %s: %v", c.dir, k, err)
		}
		if len(f.ColumnIndex) != len(t.Columns) {
			return nferr.Dataf("catalog %s: file record %s has %d columns, table has %d", c.dir, k, len(f.ColumnIndex), len(t.Columns))
		}
		for _, rg := range f.RowGroups {
			if len(rg.Columns) != len(t.Columns) {
				return nferr.Dataf("catalog %s: file record %s has a row group with %d column stats, table has %d columns", c.dir, k, len(rg.Columns), len(t.Columns))
			}
		}
		t.Files = append(t.Files, &f)
		if f.ID > c.seq {
			c.seq = f.ID
		}
		return nil
	})
	if err != nil {
		return err
	}
	nodes := map[string]Node{}
	err = c.scan(pfxNode, func(k, v []byte) error {
		var n Node
		if err := json.Unmarshal(v, &n); err != nil {
			return nferr.Dataf("catalog %s: corrupt node record %s: %v", c.dir, k, err)
		}
		nodes[n.ID] = n
		return nil
	})
	if err != nil {
		return err
	}
	views, err := c.loadViews()
	if err != nil {
		return err
	}
	c.tables, c.views, c.nodes = tables, views, nodes
	return nil
}

// txn is one atomic catalog change. The batch commits with Sync; the
// in-memory snapshots are published only after the commit succeeded.
type txn struct {
	c       *catalog
	b       *pebble.Batch
	publish map[string]*Table // nil value: table dropped
	views   map[string]*View  // nil value: view dropped
	nodes   map[string]*Node
	seqUsed bool
}

// begin starts a change; the caller holds c.mu.
func (c *catalog) begin() *txn {
	return &txn{c: c, b: c.pdb.NewBatch(), publish: map[string]*Table{}, views: map[string]*View{}, nodes: map[string]*Node{}}
}

func (t *txn) nextID() uint64 {
	t.c.seq++
	t.seqUsed = true
	return t.c.seq
}

func (t *txn) putJSON(key []byte, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("catalog: marshal %T: %v", v, err)) // our own types always marshal
	}
	t.b.Set(key, b, nil)
}

// putTable writes a table and all its files, replacing what was stored.
func (t *txn) putTable(tb *Table) {
	qn := tableKeyName(tb.Schema, tb.Name)
	files := tb.Files
	hdr := *tb
	hdr.Files = nil
	t.putJSON([]byte(pfxTable+qn), &hdr)
	t.putJSON([]byte(pfxSchema+strings.ToLower(tb.Schema)), map[string]string{"name": tb.Schema})
	pfx := []byte(pfxFile + qn + "/")
	t.b.DeleteRange(pfx, prefixEnd(pfx), nil)
	for _, f := range files {
		t.putJSON(fileKey(qn, f.ID), f)
	}
	t.publish[qn] = tb
}

func (t *txn) dropTable(schema, name string) {
	qn := tableKeyName(schema, name)
	t.b.Delete([]byte(pfxTable+qn), nil)
	pfx := []byte(pfxFile + qn + "/")
	t.b.DeleteRange(pfx, prefixEnd(pfx), nil)
	t.dropKeys(qn)
	t.publish[qn] = nil
}

// dropKeys deletes the recorded unique-key values and foreign-key
// references of table qn.
func (t *txn) dropKeys(qn string) {
	pfx := tableKeyPrefix(qn)
	t.b.DeleteRange(pfx, prefixEnd(pfx), nil)
	pfx = tableRefPrefix(qn)
	t.b.DeleteRange(pfx, prefixEnd(pfx), nil)
}

func (t *txn) commit() error {
	defer t.b.Close()
	if t.seqUsed {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], t.c.seq)
		t.b.Set([]byte(keySeq), sb[:], nil)
	}
	t.b.Set([]byte(keyCommits), encodeCount(t.c.commits+1), nil)
	if err := crashPoint("before-commit"); err != nil {
		return err
	}
	if err := t.b.Commit(pebble.Sync); err != nil {
		return nferr.OS(err, "committing catalog change in %s", t.c.dir)
	}
	t.c.commits++
	if err := crashPoint("after-commit"); err != nil {
		return err
	}
	if err := writeSeal(t.c.dir, t.c.commits); err != nil {
		return err
	}
	for qn, tb := range t.publish {
		if tb == nil {
			delete(t.c.tables, qn)
		} else {
			t.c.tables[qn] = tb
		}
	}
	for qn, v := range t.views {
		if v == nil {
			delete(t.c.views, qn)
		} else {
			t.c.views[qn] = v
		}
	}
	for id, n := range t.nodes {
		if n == nil {
			delete(t.c.nodes, id)
		} else {
			t.c.nodes[id] = *n
		}
	}
	return nil
}

func (t *txn) abort() { t.b.Close() }

// lookup finds a table by name; the caller holds c.mu or accepts a
// snapshot.
func (c *catalog) lookup(name string) (*Table, error) {
	s, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	rerr := c.refreshLocked()
	t := c.tables[tableKeyName(s, n)]
	c.mu.Unlock()
	if rerr != nil && t == nil {
		return nil, rerr
	}
	if t == nil {
		return nil, nferr.Queryf("table %s does not exist", name)
	}
	return t, nil
}

// list returns all tables sorted by qualified name.
func (c *catalog) list() []*Table {
	c.mu.Lock()
	_ = c.refreshLocked()
	out := make([]*Table, 0, len(c.tables))
	for _, t := range c.tables {
		out = append(out, t)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].QualifiedName() < out[j].QualifiedName() })
	return out
}

// referenced returns the set of file paths referenced by any table.
func (c *catalog) referenced() map[string]bool {
	ref := map[string]bool{}
	for _, t := range c.tables {
		for _, f := range t.Files {
			ref[filepath.Clean(f.Path)] = true
		}
	}
	return ref
}

// recover undoes interrupted writers (intents) and finishes interrupted
// deletions (garbage). It returns the files it removed. It reads the
// records first and deletes their files before the store opens
// read-write to drop them (a freeing section: on a full disk, the files
// make the room).
func (c *catalog) recover() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var removed []string
	ref := c.referenced()
	var done [][]byte
	err := c.scan(pfxIntent, func(k, v []byte) error {
		var in intent
		if err := json.Unmarshal(v, &in); err != nil {
			return nferr.Dataf("catalog %s: corrupt intent %s: %v", c.dir, k, err)
		}
		dir := c.abs(in.Dir)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			for _, p := range in.Prefixes {
				if p != "" && strings.HasPrefix(e.Name(), p) {
					rel := filepath.Clean(filepath.Join(in.Dir, e.Name()))
					if ref[rel] {
						continue // committed after all (never happens: same batch)
					}
					if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
						removed = append(removed, filepath.Join(dir, e.Name()))
					}
				}
			}
		}
		removeIfEmpty(dir)
		done = append(done, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = c.scan(pfxGarbage, func(k, v []byte) error {
		var g garbage
		if err := json.Unmarshal(v, &g); err != nil {
			return nferr.Dataf("catalog %s: corrupt garbage record %s: %v", c.dir, k, err)
		}
		removed = append(removed, c.collect(&g, ref)...)
		for _, d := range g.Dirs {
			removeIfEmpty(c.abs(d))
		}
		done = append(done, append([]byte(nil), k...))
		return nil
	})
	if err != nil || len(done) == 0 {
		return removed, err
	}
	if !c.rw {
		if err := c.reopenRW(sectionFreeing); err != nil {
			// NB: the records stay (their files are gone): the next
			// process alone with the database drops them.
			return removed, nil
		}
	}
	b := c.pdb.NewBatch()
	defer b.Close()
	for _, k := range done {
		b.Delete(k, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, nferr.OS(err, "catalog %s: recording recovery", c.dir)
	}
	return removed, nil
}

// collect deletes a garbage record's files that no table references
// (its directories are the caller's).
func (c *catalog) collect(g *garbage, ref map[string]bool) []string {
	var removed []string
	for _, p := range g.Paths {
		if ref[filepath.Clean(p)] {
			continue
		}
		ap := c.abs(p)
		if err := os.Remove(ap); err == nil {
			removed = append(removed, ap)
		}
	}
	return removed
}

// removeUnusedDir removes the table directory rel (relative to the
// database directory) if it is empty and no writer's intent names it: a
// load, of this process or another, that committed its intent may not have
// created its first file there yet. The caller is in a section.
func (c *catalog) removeUnusedDir(rel string) {
	used := false
	_ = c.scan(pfxIntent, func(_, v []byte) error {
		var in intent
		if json.Unmarshal(v, &in) == nil && filepath.Clean(in.Dir) == filepath.Clean(rel) {
			used = true
		}
		return nil
	})
	if !used {
		removeIfEmpty(c.abs(rel))
	}
}

func (c *catalog) abs(p string) string { return absIn(c.dir, p) }

// absIn resolves a catalog path: relative to the database directory dir,
// or absolute (external tables).
func absIn(dir, p string) string {
	if filepath.IsAbs(p) || IsObjectURL(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func removeIfEmpty(dir string) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
		os.Remove(dir)
	}
}

// writeFileAtomic replaces path with data: it writes and fsyncs a
// temporary file beside it, then renames it over path, so that readers and
// a crash see the old content or the new, never part of it (the rename
// itself is durable once the caller syncs the directory).
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// syncDir fsyncs a directory so that renames and creations in it survive a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nferr.OS(err, "syncing directory %s", dir)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return nferr.OS(err, "syncing directory %s", dir)
	}
	return nil
}

// crashHook, when set (tests), is called at named points of a commit; a
// test child process blocks or exits there to simulate a crash.
var crashHook func(point string)

func crashPoint(point string) error {
	if crashHook != nil {
		crashHook(point)
	}
	return nil
}

var _ = bytes.Equal
