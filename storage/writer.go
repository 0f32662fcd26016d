package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// AppendOptions configure an Appender.
type AppendOptions struct {
	// Create makes the appender create the table (CREATE TABLE AS SELECT)
	// with Schema; the creation commits together with the data.
	Create bool
	Schema *arrow.Schema
	// CreateOptions qualify Create (IF NOT EXISTS is an error here: a CTAS
	// into an existing table must say OR REPLACE).
	CreateOptions CreateOptions
	// Replace drops the table's existing rows in the same commit
	// (INSERT OVERWRITE, TRUNCATE + load, UPDATE and DELETE).
	Replace bool
	// ReplaceFiles, when not nil, narrows Replace to the table's files at
	// these paths (File.Path; empty: none): the appended rows replace
	// theirs, the other files stay (UPDATE and DELETE rewrite only the
	// files their WHERE may touch). Refused for a table with a unique
	// index, whose key records Replace rebuilds from the appended rows
	// alone.
	ReplaceFiles []string
	// SkipConflicts drops, instead of failing on, the appended rows whose
	// key a unique index of the table already holds or an earlier
	// appended row took (INSERT ... ON CONFLICT DO NOTHING).
	SkipConflicts bool
	// Generation, when not 0, is the table generation the rows were
	// computed from (UPDATE and DELETE read the table they replace):
	// Commit fails, changing nothing, if another change committed since.
	Generation uint64
	// sameRows: the appended rows are those of the replaced files
	// (compaction, compact.go): unique-key records stay as they are.
	sameRows bool
}

// Appender writes Arrow records into new Parquet files of a table and makes
// them visible atomically in Commit (INSERT INTO ... SELECT, CTAS, COPY).
// Until Commit nothing is visible; Abort, an error or a crash leave the
// table as it was (temp files are removed, by Abort or at the next Open).
//
// Protocol: an intent record naming the file prefixes is committed before
// any file is created; files are written as DIR/<table>/.tmp-<id>-<n>,
// fsynced, renamed to <table>-<id>-<n>.parquet, the directory fsynced, and
// then one synced batch adds the files and deletes the intent.
type Appender struct {
	db     *DB
	schema string
	name   string
	sch    *arrow.Schema
	cols   []Column
	opts   AppendOptions
	wopts  WriteOptions
	id     uint64
	dir    string // relative
	tmpPfx string
	finPfx string

	cur     *parquetWriter
	curRows int64
	nfile   int
	done    []*File // written, still under temp names (Path = temp rel path)
	final   []string
	rows    int64
	closed  bool
	// uks track the keys of the table's unique indexes; fks the values
	// its foreign keys reference.
	uks []*uniqueKeys
	fks []*fkRefs
	// kept marks the rows of the last Append that SkipConflicts kept.
	kept []bool
	// old holds the key and reference values of the files a narrowed
	// rewrite replaces (nil: none, or not narrowed).
	old *replacedValues
	// holding: the appender holds a catalog section (tables with unique
	// keys; NewAppender).
	holding bool
	// created is the table a creating appender commits (columns and
	// constraints validated up front).
	created *Table
	// meta is what every file's footer records for `catalog recover`
	// (recover.go): the table's definition and what this write replaces.
	meta [][2]string
}

// NewAppender starts writing into table name.
func (db *DB) NewAppender(name string, opts AppendOptions) (*Appender, error) {
	s, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	a := &Appender{db: db, schema: s, name: n, opts: opts, wopts: db.opts.Write}
	if opts.Create {
		if opts.Schema == nil {
			return nil, nferr.Queryf("create table %s: no schema", name)
		}
		cols, err := SchemaColumns(opts.Schema)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindQuery, err, "create table %s", name)
		}
		if t, _ := db.cat.lookup(name); t != nil && !opts.CreateOptions.OrReplace {
			return nil, nferr.Queryf("table %s already exists", name)
		}
		if db.View(name) != nil {
			return nil, nferr.Queryf("relation %q already exists (a view)", name)
		}
		if a.created, err = newTable(s, n, cols, opts.CreateOptions.Constraints); err != nil {
			return nil, err
		}
		a.cols = a.created.Columns
		a.uks = newUniqueKeys(a.cols, a.created.Indexes)
	} else {
		t, err := db.cat.lookup(name)
		if err != nil {
			return nil, err
		}
		if t.External {
			return nil, nferr.Queryf("table %s is external (files in %s): nicflow does not write into it", name, t.Location)
		}
		a.cols = t.Columns
		if !opts.sameRows {
			a.uks = newUniqueKeys(a.cols, t.Indexes)
			a.fks = newFKRefs(a.cols, t.ForeignKeys)
		}
		if opts.ReplaceFiles != nil && !opts.Replace {
			return nil, nferr.Internalf("append to %s: ReplaceFiles needs Replace", name)
		}
		if opts.ReplaceFiles != nil && len(a.uks)+len(a.fks) > 0 {
			// A narrowed rewrite of a table with keys or references: the
			// replaced files' values leave the catalog's records, the
			// appended rows' enter them (commitNarrowKeys).
			if a.old, err = db.replacedKeys(t, opts, a.uks, a.fks); err != nil {
				return nil, err
			}
		}
	}
	if a.sch, err = ArrowSchema(a.cols); err != nil {
		return nil, err
	}
	def := a.created
	if def == nil {
		def, _ = db.cat.lookup(name)
	}
	a.dir = tableDir(s, n)
	// Commit the intent before creating any file.
	if err := db.cat.lockWrite(); err != nil {
		return nil, err
	}
	// NB: the directory is made in the section that commits the intent
	// naming it: a collection of garbage (a DROP's, of this process or
	// another) removes an empty table directory only when no intent
	// names it (catalog.removeUnusedDir), so it cannot remove this one
	// before the load's first file is in it.
	if err := os.MkdirAll(filepath.Join(db.dir, a.dir), 0o755); err != nil {
		db.cat.unlockWrite()
		return nil, nferr.IOf("creating %s: %w", filepath.Join(db.dir, a.dir), err)
	}
	tx := db.cat.begin()
	a.id = tx.nextID()
	a.tmpPfx = fmt.Sprintf(".tmp-%016x-", a.id)
	a.finPfx = fmt.Sprintf("%s-%016x-", n, a.id)
	if a.created != nil {
		a.created.Since = a.id
	}
	a.meta = footerMeta(def, a.id, opts)
	tx.putJSON([]byte(fmt.Sprintf("%s%016x", pfxIntent, a.id)), &intent{
		ID: a.id, Dir: a.dir, Prefixes: []string{a.tmpPfx, a.finPfx}, PID: os.Getpid(), Started: time.Now().UTC(),
	})
	err = tx.commit()
	if err == nil && len(a.uks) > 0 {
		// A table with unique keys: every appended key is checked against
		// the committed ones as it comes (ON CONFLICT DO NOTHING skips it),
		// so the load keeps the catalog section until it commits or
		// aborts.
		err = db.cat.enter()
		a.holding = err == nil
	}
	db.cat.unlockWrite()
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Name is the table's name as the appender was given it.
func (a *Appender) Name() string { return a.name }

// Schema is the schema records must have.
func (a *Appender) Schema() *arrow.Schema { return a.sch }

// Rows is the number of rows appended so far.
func (a *Appender) Rows() int64 { return a.rows }

// Append writes a record. Column types must equal the table's (names are
// not checked: INSERT maps by position).
func (a *Appender) Append(rec arrow.RecordBatch) error {
	if a.closed {
		return nferr.Internalf("append to %s after commit or abort", a.name)
	}
	if int(rec.NumCols()) != len(a.cols) {
		return nferr.Queryf("insert into %s: %d columns given, the table has %d", a.name, rec.NumCols(), len(a.cols))
	}
	for i := 0; i < int(rec.NumCols()); i++ {
		want := a.sch.Field(i)
		got := rec.Column(i)
		if !arrow.TypeEqual(got.DataType(), want.Type) {
			return nferr.Queryf("insert into %s: column %s has type %s, the table wants %s", a.name, want.Name, got.DataType(), want.Type)
		}
		if !want.Nullable && got.NullN() > 0 {
			return nferr.Dataf("null value in column %q of table %s violates its NOT NULL constraint", want.Name, a.name)
		}
	}
	if a.opts.SkipConflicts && len(a.uks) > 0 {
		return a.appendNew(rec)
	}
	for _, u := range a.uks {
		if err := u.add(a.name, rec); err != nil {
			return err
		}
	}
	return a.write(rec)
}

// SkipsConflicts: the appender drops rows whose key conflicts
// (AppendOptions.SkipConflicts on a table with a unique key).
func (a *Appender) SkipsConflicts() bool { return a.opts.SkipConflicts && len(a.uks) > 0 }

// Kept reports, after an Append with SkipConflicts into a table with a
// unique key, which of its rows were written (the others conflicted); nil
// when every row was.
func (a *Appender) Kept() []bool { return a.kept }

// appendNew appends the rows of rec whose keys are new (SkipConflicts),
// in runs of consecutive kept rows.
func (a *Appender) appendNew(rec arrow.RecordBatch) error {
	a.kept = slices.Grow(a.kept[:0], int(rec.NumRows()))[:rec.NumRows()]
	clear(a.kept)
	qn := tableKeyName(a.schema, a.name)
	var buf []byte
	keys := make([][]byte, len(a.uks))
	start := -1
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		part := rec.NewSlice(int64(start), int64(end))
		err := a.write(part)
		part.Release()
		start = -1
		return err
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		conflict := false
		for i, u := range a.uks {
			var null bool
			buf, null = encodeKey(buf[:0], rec, u.cols, r)
			keys[i] = nil
			if null {
				continue
			}
			if _, dup := u.seen[string(buf)]; dup {
				conflict = true
				break
			}
			full := append(keyPrefix(qn, u.ix.Name), buf...)
			_, found, err := a.db.cat.get(string(full))
			if err != nil {
				return err
			}
			if found {
				conflict = true
				break
			}
			keys[i] = append([]byte(nil), buf...)
		}
		if conflict {
			if err := flush(r); err != nil {
				return err
			}
			continue
		}
		for i, u := range a.uks {
			if keys[i] != nil {
				u.seen[string(keys[i])] = struct{}{}
				u.keys = append(u.keys, keys[i])
			}
		}
		a.kept[r] = true
		if start < 0 {
			start = r
		}
	}
	return flush(int(rec.NumRows()))
}

// write writes rec's rows into the appender's files.
func (a *Appender) write(rec arrow.RecordBatch) error {
	for _, r := range a.fks {
		if err := r.add(a.name, rec); err != nil {
			return err
		}
	}
	n := rec.NumRows()
	off := int64(0)
	for off < n {
		if a.cur == nil {
			if err := a.startFile(); err != nil {
				return err
			}
		}
		take := min(n-off, a.wopts.FileRows-a.curRows)
		part := rec
		if off != 0 || take != n {
			part = rec.NewSlice(off, off+take)
		}
		err := a.cur.write(part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return err
		}
		a.curRows += take
		a.rows += take
		off += take
		if a.curRows >= a.wopts.FileRows {
			if err := a.finishFile(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *Appender) startFile() error {
	tmp := filepath.Join(a.dir, fmt.Sprintf("%s%04d", a.tmpPfx, a.nfile))
	final := filepath.Join(a.dir, fmt.Sprintf("%s%04d.parquet", a.finPfx, a.nfile))
	a.nfile++
	w, err := newParquetWriter(filepath.Join(a.db.dir, tmp), a.sch, a.wopts, a.meta...)
	if err != nil {
		return err
	}
	a.cur, a.curRows = w, 0
	a.done = append(a.done, &File{Path: tmp})
	a.final = append(a.final, final)
	return nil
}

func (a *Appender) finishFile() error {
	w := a.cur
	a.cur = nil
	size, sum, md, err := w.finish()
	if err != nil {
		return err
	}
	f, err := fileFromFooter(w.path, md, a.cols)
	if err != nil {
		return err
	}
	last := a.done[len(a.done)-1]
	rsum, rsize, err := recordChecksums(w.path, md, f)
	if err != nil {
		return err
	}
	if rsum != sum || rsize != size {
		return nferr.IOf("%s reads back differently than it was written (%d bytes, %s; wrote %d bytes, %s)", w.path, rsize, rsum, size, sum)
	}
	addDistinctFromDictionaries(w.path, md, f)
	f.Path, f.Size, f.Checksum = last.Path, size, sum
	a.done[len(a.done)-1] = f
	return crashPoint("file-written")
}

// Commit makes the appended rows visible atomically and returns the number
// of rows committed.
//
// After an append (not a create or replace) the table's trailing small
// files may be merged (compact.go).
func (a *Appender) Commit() (int64, error) {
	n, err := a.commit()
	if err == nil && !a.opts.Create && !a.opts.Replace {
		a.db.compactTail(tableKeyName(a.schema, a.name))
	}
	return n, err
}

func (a *Appender) commit() (int64, error) {
	if a.closed {
		return 0, nferr.Internalf("commit of %s after commit or abort", a.name)
	}
	if a.cur != nil {
		if err := a.finishFile(); err != nil {
			a.Abort()
			return 0, err
		}
	}
	// Rename temps to final names, then make the renames durable.
	for i, f := range a.done {
		if err := os.Rename(filepath.Join(a.db.dir, f.Path), filepath.Join(a.db.dir, a.final[i])); err != nil {
			a.Abort()
			return 0, nferr.IOf("installing %s: %w", a.final[i], err)
		}
		f.Path = a.final[i]
		if err := crashPoint("renamed"); err != nil {
			return 0, err
		}
	}
	if err := syncDir(filepath.Join(a.db.dir, a.dir)); err != nil {
		a.Abort()
		return 0, err
	}
	db := a.db
	if err := db.cat.lockWrite(); err != nil {
		a.Abort()
		return 0, err
	}
	defer db.cat.unlockWrite()
	defer a.release()
	qn := tableKeyName(a.schema, a.name)
	old := db.cat.tables[qn]
	var t *Table
	switch {
	case a.opts.Create:
		if old != nil && !a.opts.CreateOptions.OrReplace {
			a.abortLocked()
			return 0, nferr.Queryf("table %s already exists", a.name)
		}
		if old != nil {
			if err := db.cat.refusedWhileReferenced("replace", a.name, qn); err != nil {
				a.abortLocked()
				return 0, err
			}
		}
		nt := *a.created
		nt.Created = time.Now().UTC()
		t = &nt
		if old != nil {
			t.Generation = old.Generation + 1
		}
	default:
		if old == nil {
			a.abortLocked()
			return 0, nferr.Queryf("table %s was dropped while rows were being loaded into it", a.name)
		}
		if a.opts.Generation != 0 && old.Generation != a.opts.Generation {
			a.abortLocked()
			return 0, nferr.Queryf("table %s changed while the statement ran (another statement committed first); run it again", a.name)
		}
		nt := *old
		nt.Generation++
		nt.Files = nil
		if !a.opts.Replace || a.opts.ReplaceFiles != nil {
			drop := map[string]bool{}
			for _, p := range a.opts.ReplaceFiles {
				drop[filepath.Clean(p)] = true
			}
			for _, f := range old.Files {
				if !drop[filepath.Clean(f.Path)] {
					nt.Files = append(nt.Files, f)
				}
			}
			if len(old.Files)-len(nt.Files) != len(drop) {
				a.abortLocked()
				return 0, nferr.Internalf("append to %s: %d of the %d files to replace are not the table's", a.name, len(drop)-(len(old.Files)-len(nt.Files)), len(drop))
			}
		}
		t = &nt
	}
	tx := db.cat.begin()
	// NB: a partial replace (ReplaceFiles) keeps the other files' keys;
	// the replaced files' ones leave the records in commitNarrowKeys.
	fresh := a.opts.Create || (a.opts.Replace && a.opts.ReplaceFiles == nil)
	if fresh {
		tx.dropKeys(qn)
	}
	var kerr error
	switch {
	case a.old != nil:
		kerr = commitNarrowKeys(db.cat, tx, qn, a.name, a.uks, a.fks, a.old)
	default:
		kerr = checkAndRecord(db.cat, tx, qn, a.name, a.uks, fresh)
		if kerr == nil && (len(a.fks) > 0 || fresh && !a.opts.sameRows) {
			kerr = checkForeignKeys(db.cat, tx, qn, a.name, a.fks, a.uks, fresh)
		}
	}
	if kerr != nil {
		tx.abort()
		a.abortLocked()
		return 0, kerr
	}
	for _, f := range a.done {
		f.ID = tx.nextID()
		t.Files = append(t.Files, f)
	}
	tx.putTable(t)
	tx.b.Delete([]byte(fmt.Sprintf("%s%016x", pfxIntent, a.id)), nil)
	var g *garbage
	if a.opts.Create || a.opts.Replace {
		g = db.garbageOf(tx, old, t)
		if g != nil {
			g.Dirs = nil
		}
	}
	if err := tx.commit(); err != nil {
		a.abortLocked()
		return 0, err
	}
	a.closed = true
	db.finishGarbage(g)
	return a.rows, nil
}

// Abort discards everything appended. Idempotent; safe after Commit (then
// it does nothing).
func (a *Appender) Abort() {
	if a.closed {
		return
	}
	// NB: the files first, before the catalog: on a full disk they make
	// the room its change needs.
	a.removeFiles()
	if err := a.db.cat.lockWriteFreeing(); err != nil {
		// NB: the intent stays; the next process alone with the database
		// removes the files.
		a.closed = true
		a.release()
		return
	}
	defer a.db.cat.unlockWrite()
	defer a.release()
	a.abortLocked()
}

// release ends the catalog section a load into a table with unique keys
// holds (NewAppender). The caller holds c.mu or knows nobody else can
// use the catalog.
func (a *Appender) release() {
	if a.holding {
		a.holding = false
		a.db.cat.leave()
	}
}

// removeFiles deletes the files the appender wrote (none is committed, so
// no reader has them). Idempotent.
func (a *Appender) removeFiles() {
	if a.cur != nil {
		a.cur.abort()
		a.cur = nil
	}
	for i, f := range a.done {
		os.Remove(filepath.Join(a.db.dir, f.Path))
		os.Remove(filepath.Join(a.db.dir, a.final[i]))
	}
}

func (a *Appender) abortLocked() {
	if a.closed {
		return
	}
	a.closed = true
	a.removeFiles()
	_ = a.db.cat.pdb.Delete([]byte(fmt.Sprintf("%s%016x", pfxIntent, a.id)), nil)
	a.db.cat.removeUnusedDir(a.dir)
}
