package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Recovering a catalog (`nicflow catalog recover`).
//
// The catalog (Pebble, DIR/catalog) is the only list of a database's
// tables and live files. When it is lost or damaged, Recover gets it back
// in the least destructive way that works, and never deletes anything:
//
//  1. A catalog that opens and agrees with its seal is healthy: nothing
//     is done.
//  2. A store whose manifest marker (marker.manifest.*) is gone, the one
//     file Pebble needs to find its manifest: each MANIFEST-* is tried,
//     newest first, on a copy of the store; the first whose catalog loads
//     and holds every commit the seal counts gets its marker back.
//  3. Anything else (no catalog, a damaged one): the catalog is rebuilt
//     from the data files and their footers. The old catalog directory
//     and seal are moved aside (DIR/catalog.damaged-<time>), not deleted.
//
// Rebuilding reads what every file nicflow writes records in its footer
// (footerTableKey: the table's definition when it was written;
// footerWriteKey: the write's id and the files it replaced), so that a
// table gets back its columns, defaults, checks, indexes, keys and foreign
// keys, and files that a later write replaced (but that were not yet
// deleted) stay out. Files without these records (written before them, or
// by `tpch gen`) give their columns only. Views, external tables and the
// storage nodes of a cluster live in the catalog alone: a rebuild cannot
// know them and says so.

// Footer keys of the files nicflow writes.
const (
	footerTableKey = "nicflow.table"
	footerWriteKey = "nicflow.write"
)

// footerWrite is footerWriteKey's value.
type footerWrite struct {
	// ID is the writer's (the appender's intent id; ids grow with time).
	ID uint64 `json:"id"`
	// ReplacesAll: the write replaced every earlier file of the table
	// (CREATE TABLE AS, INSERT OVERWRITE, a whole-table rewrite).
	ReplacesAll bool `json:"replaces_all,omitempty"`
	// Replaces names the files (base names) the write replaced (UPDATE
	// and DELETE of some files, compaction).
	Replaces []string `json:"replaces,omitempty"`
}

// footerMeta is what the files of an appender record in their footers.
func footerMeta(def *Table, id uint64, opts AppendOptions) [][2]string {
	w := footerWrite{ID: id, ReplacesAll: opts.Create || opts.Replace && opts.ReplaceFiles == nil}
	if opts.Replace {
		for _, p := range opts.ReplaceFiles {
			w.Replaces = append(w.Replaces, filepath.Base(p))
		}
	}
	wb, _ := json.Marshal(&w)
	out := [][2]string{{footerWriteKey, string(wb)}}
	if def != nil {
		// NB: not its creation time: the same rows make the same file.
		hdr := *def
		hdr.Files, hdr.Created = nil, time.Time{}
		if tb, err := json.Marshal(&hdr); err == nil {
			out = append(out, [2]string{footerTableKey, string(tb)})
		}
	}
	return out
}

// RecoverOptions configure Recover.
type RecoverOptions struct {
	// DryRun reports what Recover would do and changes nothing.
	DryRun bool
	// Progress, when set, receives a line per step.
	Progress io.Writer
}

// RecoverReport says what Recover found and did.
type RecoverReport struct {
	// Action: "healthy" (nothing to do), "marker" (the manifest marker
	// was restored) or "rebuilt" (the catalog was rebuilt from the data
	// files; with DryRun, would be).
	Action string
	// Manifest is the manifest whose marker was restored ("marker").
	Manifest string
	// Damage is why the catalog could not be used as it was.
	Damage string
	// Aside is where the old catalog and seal were moved ("rebuilt").
	Aside string
	// Tables are the tables of the recovered catalog.
	Tables []RecoveredTable
	// Warnings list what a rebuild could not recover, or recovered only
	// in part.
	Warnings []string
}

// RecoveredTable is one table of a recovered catalog.
type RecoveredTable struct {
	Name  string
	Files int
	Rows  int64
	// Skipped counts files in the table's directory that a later write
	// replaced (and that were not yet deleted): left out, not deleted.
	Skipped int
	// Defined: the table's definition came from a footer (else its
	// columns came from the file schema only).
	Defined bool
}

// Recover brings back the catalog of the database in dir (see the comment
// above). It needs the database to itself: no other process may have it
// open.
func Recover(ctx context.Context, dir string, opts RecoverOptions) (*RecoverReport, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nferr.IOf("database directory %s: %w", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, nferr.Queryf("%s is not a directory", dir)
	}
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}
	sess, err := openSessionLock(abs)
	if err != nil {
		return nil, err
	}
	if !sess.tryExclusive() {
		sess.unlock()
		return nil, nferr.Busyf("database %s is open in another process; stop it before recovering the catalog", abs)
	}
	lk, err := lockDir(abs, filepath.Join(abs, "catalog.lock"))
	if err != nil {
		sess.unlock()
		return nil, err
	}
	// unlock ends Recover's hold of the database, before it opens it as
	// any process does. NB: another process that opens the database in
	// between sees what Recover left (a restored marker; during a
	// rebuild, data files without a catalog: an error until it is done).
	locked := true
	unlock := func() {
		if locked {
			lk.unlock()
			sess.unlock()
			locked = false
		}
	}
	defer unlock()

	cdir := filepath.Join(abs, "catalog")
	rep := &RecoverReport{}
	if storeExists(cdir) {
		probe := probeStore(abs, cdir)
		if probe == nil {
			rep.Action = "healthy"
			return rep, rep.listTables(abs, unlock)
		}
		rep.Damage = probe.Error()
		progress("catalog %s: %s", cdir, pebbleDetail(probe))
		if !hasManifestMarker(cdir) {
			m, err := findManifest(abs, cdir, progress)
			if err != nil {
				return nil, err
			}
			if m != "" {
				rep.Action, rep.Manifest = "marker", m
				if opts.DryRun {
					return rep, nil
				}
				if err := installMarker(cdir, m); err != nil {
					return nil, err
				}
				progress("restored the manifest marker: %s", m)
				return rep, rep.listTables(abs, unlock)
			}
			progress("no manifest holds the catalog: rebuilding it from the data files")
		}
	}
	return rep, rebuild(ctx, abs, cdir, rep, opts, progress, unlock)
}

// listTables fills rep.Tables from the catalog as it now opens.
func (rep *RecoverReport) listTables(dir string, unlock func()) error {
	unlock()
	db, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	for _, t := range db.Tables() {
		rep.Tables = append(rep.Tables, RecoveredTable{Name: t.QualifiedName(), Files: len(t.Files), Rows: t.Rows()})
	}
	return nil
}

// pebbleDetail is an error's message without damaged()'s advice.
func pebbleDetail(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "; restore "); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// probeStore opens the store in cdir read-only and loads it, checking it
// against dir's seal; nil when it is whole.
func probeStore(dir, cdir string) error {
	c := &catalog{dir: dir, space: newCatalogSpace(dir), tables: map[string]*Table{}, views: map[string]*View{}, nodes: map[string]Node{}}
	pdb, err := openPebble(dir, cdir, sectionRead, c.space)
	if err != nil {
		return err
	}
	defer pdb.Close()
	c.pdb = pdb
	if v, ok, err := c.get(keyVersion); err != nil {
		return err
	} else if ok {
		if ver, err := strconv.Atoi(string(v)); err != nil || ver > FormatVersion {
			return damaged(dir, "its format version %q is not one this nicflow reads", v)
		}
	}
	if err := c.load(); err != nil {
		return err
	}
	sealed, ok, err := readSeal(dir)
	if err != nil {
		return err
	}
	if ok && c.commits < sealed {
		return damaged(dir, "it holds %d committed changes, but %d were made", c.commits, sealed)
	}
	return nil
}

func hasManifestMarker(cdir string) bool {
	ents, _ := os.ReadDir(cdir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "marker.manifest.") {
			return true
		}
	}
	return false
}

// markerName is the file that points Pebble at manifest m.
func markerName(m string) string { return "marker.manifest.000001." + m }

// findManifest tries each manifest of cdir, newest first, on a copy of
// the store, and returns the first whose catalog is whole ("" for none).
func findManifest(dir, cdir string, progress func(string, ...any)) (string, error) {
	ents, err := os.ReadDir(cdir)
	if err != nil {
		return "", nferr.OS(err, "reading %s", cdir)
	}
	type manifest struct {
		name string
		num  uint64
	}
	var ms []manifest
	for _, e := range ents {
		if num, ok := strings.CutPrefix(e.Name(), "MANIFEST-"); ok {
			if n, err := strconv.ParseUint(num, 10, 64); err == nil {
				ms = append(ms, manifest{e.Name(), n})
			}
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].num > ms[j].num })
	for _, m := range ms {
		probeDir, err := os.MkdirTemp(dir, ".catalog-probe-")
		if err != nil {
			return "", nferr.OS(err, "making a copy of %s to try its manifests", cdir)
		}
		err = copyStore(cdir, probeDir)
		if err == nil {
			err = os.WriteFile(filepath.Join(probeDir, markerName(m.name)), nil, 0o644)
		}
		if err != nil {
			os.RemoveAll(probeDir)
			return "", nferr.OS(err, "making a copy of %s to try its manifests", cdir)
		}
		perr := probeStore(dir, probeDir)
		os.RemoveAll(probeDir)
		if perr == nil {
			return m.name, nil
		}
		progress("%s does not hold the catalog: %s", m.name, pebbleDetail(perr))
	}
	return "", nil
}

// copyStore copies the files of a store (not its lock, not its manifest
// markers) into to.
func copyStore(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" || strings.HasPrefix(e.Name(), "marker.manifest.") {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// installMarker restores the manifest marker of cdir, durably.
func installMarker(cdir, m string) error {
	path := filepath.Join(cdir, markerName(m))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nferr.OS(err, "restoring %s", path)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nferr.OS(err, "restoring %s", path)
	}
	if err := f.Close(); err != nil {
		return nferr.OS(err, "restoring %s", path)
	}
	return syncDir(cdir)
}

// dataFile is one Parquet file of a table directory, as its name and
// footer describe it.
type dataFile struct {
	rel   string // relative to the database directory
	write footerWrite
	def   *Table // nil: the footer records no definition
}

// tableFiles are the nicflow data files of one table directory.
type tableFiles struct {
	schema, name string
	files        []dataFile
}

// dataDirs lists the table directories of dir that hold files nicflow
// named (<table>-*.parquet): the data of a database. limit > 0 stops after
// that many directories.
func dataDirs(dir string, limit int) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || strings.HasPrefix(n, ".") || n == "catalog" || n == "cache" || n == "tmp" || strings.HasPrefix(n, "catalog.") {
			continue
		}
		if len(nicflowFiles(filepath.Join(dir, n), n)) > 0 {
			out = append(out, n)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	}
	return out
}

// nicflowFiles lists the files of table directory tdir (named d) that
// nicflow wrote: <table>-*.parquet, where d is <table> or
// <schema>.<table>.
func nicflowFiles(tdir, d string) []string {
	table := d
	if i := strings.LastIndexByte(d, '.'); i >= 0 {
		table = d[i+1:]
	}
	ents, err := os.ReadDir(tdir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(strings.ToLower(n), strings.ToLower(table)+"-") && strings.HasSuffix(n, ".parquet") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// writeIDOfName reads the writer id from a name <table>-<16 hex>-<n>.parquet
// (0 for other names: `tpch gen`'s <table>-<n>.parquet).
func writeIDOfName(table, name string) uint64 {
	rest := strings.TrimSuffix(name[len(table)+1:], ".parquet")
	hex, _, ok := strings.Cut(rest, "-")
	if !ok || len(hex) != 16 {
		return 0
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0
	}
	return id
}

// readDataFiles reads the footers of a table directory's files.
func readDataFiles(dir, d string) (*tableFiles, []string) {
	tf := &tableFiles{schema: DefaultSchema, name: d}
	if i := strings.LastIndexByte(d, '.'); i >= 0 {
		tf.schema, tf.name = d[:i], d[i+1:]
	}
	var warnings []string
	for _, n := range nicflowFiles(filepath.Join(dir, d), d) {
		rel := filepath.Join(d, n)
		md, _, err := readFooter(filepath.Join(dir, rel))
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: left out, its footer cannot be read: %v", rel, err))
			continue
		}
		df := dataFile{rel: rel}
		df.write.ID = writeIDOfName(tf.name, n)
		if kv := md.KeyValueMetadata(); kv != nil {
			df.def, df.write = footerRecords(kv, df.write)
		}
		tf.files = append(tf.files, df)
	}
	return tf, warnings
}

// footerRecords reads footerTableKey and footerWriteKey.
func footerRecords(kv metadata.KeyValueMetadata, w footerWrite) (*Table, footerWrite) {
	var def *Table
	if v := kv.FindValue(footerTableKey); v != nil {
		var t Table
		if json.Unmarshal([]byte(*v), &t) == nil && len(t.Columns) > 0 {
			def = &t
		}
	}
	if v := kv.FindValue(footerWriteKey); v != nil {
		var fw footerWrite
		if json.Unmarshal([]byte(*v), &fw) == nil && fw.ID != 0 {
			w = fw
		}
	}
	return def, w
}

// live picks the files of the table's current contents: writes in id
// order, each adding its files after removing what it replaced; files of
// an earlier table of the name (a definition whose Since differs from the
// newest one's) are left out. It returns the files, the
// definition (the newest write's, nil when no file records one) and the
// number of files left out.
func (tf *tableFiles) live() ([]string, *Table, int) {
	files := append([]dataFile(nil), tf.files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].write.ID < files[j].write.ID })
	var def *Table
	for i := len(files) - 1; i >= 0 && def == nil; i-- {
		def = files[i].def
	}
	live := map[string]bool{}
	for i := 0; i < len(files); {
		j := i
		for j < len(files) && files[j].write.ID == files[i].write.ID {
			j++
		}
		w := files[i].write
		if w.ReplacesAll && w.ID != 0 {
			clear(live)
		}
		for _, r := range w.Replaces {
			delete(live, filepath.Join(filepath.Dir(files[i].rel), r))
		}
		for _, f := range files[i:j] {
			if def != nil && f.def != nil && f.def.Since != def.Since {
				continue // an earlier table of this name
			}
			live[f.rel] = true
		}
		i = j
	}
	var out []string
	for _, f := range files {
		if live[f.rel] {
			out = append(out, f.rel)
		}
	}
	return out, def, len(files) - len(out)
}

// rebuild makes a new catalog from the data files of dir.
func rebuild(ctx context.Context, dir, cdir string, rep *RecoverReport, opts RecoverOptions, progress func(string, ...any), unlock func()) error {
	rep.Action = "rebuilt"
	var plans []tablePlan
	for _, d := range dataDirs(dir, 0) {
		if err := ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		tf, warns := readDataFiles(dir, d)
		rep.Warnings = append(rep.Warnings, warns...)
		paths, def, skipped := tf.live()
		if len(paths) == 0 {
			continue
		}
		p := tablePlan{name: tf.schema + "." + tf.name, paths: paths, def: def}
		if def != nil {
			p.name = def.Schema + "." + def.Name
		}
		plans = append(plans, p)
		rt := RecoveredTable{Name: p.name, Files: len(paths), Skipped: skipped, Defined: def != nil}
		rep.Tables = append(rep.Tables, rt)
		if skipped > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %d file(s) in %s that later writes replaced are left out (not deleted)", p.name, skipped, d))
		}
		if def == nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: its files record no definition (written by an older nicflow or by tpch gen): columns from the file schema, no constraints or defaults", p.name))
		}
	}
	rep.Warnings = append(rep.Warnings, "views, external tables and a cluster's storage nodes are recorded in the catalog only: recreate them")
	if len(plans) == 0 {
		return nferr.Dataf("%s holds no data files nicflow wrote (<table>/<table>-*.parquet): nothing to rebuild a catalog from", dir)
	}
	if opts.DryRun {
		return nil
	}
	// Move the old catalog and seal aside: never deleted.
	aside := filepath.Join(dir, "catalog.damaged-"+time.Now().UTC().Format("20060102T150405"))
	moved := false
	if ents, err := os.ReadDir(cdir); err == nil && len(ents) > 0 {
		if err := os.Rename(cdir, aside); err != nil {
			return nferr.OS(err, "moving the damaged catalog %s aside", cdir)
		}
		moved = true
	}
	if _, err := os.Stat(filepath.Join(dir, sealFile)); err == nil {
		if err := os.MkdirAll(aside, 0o755); err != nil {
			return nferr.OS(err, "moving %s aside", sealFile)
		}
		if err := os.Rename(filepath.Join(dir, sealFile), filepath.Join(aside, sealFile)); err != nil {
			return nferr.OS(err, "moving %s aside", sealFile)
		}
		moved = true
	}
	if moved {
		rep.Aside = aside
		progress("moved the old catalog aside to %s", aside)
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(cdir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nferr.OS(err, "clearing %s", cdir)
	}
	unlock()
	db, err := openDB(dir, Options{}, true)
	if err != nil {
		return err
	}
	defer db.Close()
	for i, p := range plans {
		progress("table %s: %d file(s)", p.name, len(p.paths))
		rows, warns, err := db.restoreTable(ctx, p)
		if err != nil {
			return nferr.Wrap(nferr.KindData, err, "rebuilding table %s", p.name)
		}
		rep.Tables[i].Rows = rows
		rep.Warnings = append(rep.Warnings, warns...)
	}
	// Foreign keys last: the tables they reference must be there.
	for _, p := range plans {
		if p.def == nil {
			continue
		}
		for _, fk := range p.def.ForeignKeys {
			if err := db.restoreForeignKey(ctx, p.name, fk); err != nil {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: foreign key %s not restored: %v", p.name, fk.Name, err))
			}
		}
	}
	return nil
}

// restoreTable registers a rebuilt table's files with its definition,
// then its indexes (a unique one records its keys, as CREATE INDEX does);
// it returns the table's rows and what could not be restored.
func (db *DB) restoreTable(ctx context.Context, p tablePlan) (int64, []string, error) {
	if err := db.registerTables(ctx, []tablePlan{p}); err != nil {
		return 0, nil, err
	}
	var warns []string
	if p.def != nil {
		for _, ix := range p.def.Indexes {
			if err := db.CreateIndex(ctx, p.name, ix, false); err != nil {
				warns = append(warns, fmt.Sprintf("%s: index %s not restored: %v", p.name, ix.Name, err))
			}
		}
	}
	t, err := db.cat.lookup(p.name)
	if err != nil {
		return 0, warns, err
	}
	return t.Rows(), warns, nil
}

// restoreForeignKey adds a foreign key to a rebuilt table: its
// referencing values are read and checked against the referenced keys,
// and recorded, as an insert does.
func (db *DB) restoreForeignKey(ctx context.Context, table string, fk ForeignKey) error {
	t, err := db.cat.lookup(table)
	if err != nil {
		return err
	}
	qn := tableKeyName(t.Schema, t.Name)
	proj := make([]Column, len(fk.Columns))
	for i, c := range fk.Columns {
		ci := columnIndex(t.Columns, c)
		if ci < 0 {
			return nferr.Dataf("column %q of the foreign key is not a column of the table", c)
		}
		proj[i] = t.Columns[ci]
	}
	refs := newFKRefs(proj, []ForeignKey{fk})
	if err := db.scanEach(ctx, table, fk.Columns, func(rec arrow.RecordBatch) error { return refs[0].add(table, rec) }); err != nil {
		return err
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	cur := db.cat.tables[qn]
	if cur == nil || cur.Generation != t.Generation {
		return nferr.Queryf("table %s changed while its foreign key was being restored", table)
	}
	nt := *cur
	nt.ForeignKeys = append(append([]ForeignKey(nil), cur.ForeignKeys...), fk)
	nt.Generation++
	if err := db.cat.validateForeignKeys(&nt); err != nil {
		return err
	}
	if err := checkReferencesExist(db.cat, qn, table, refs, nil, false); err != nil {
		return err
	}
	tx := db.cat.begin()
	if err := recordReferences(db.cat, tx, qn, refs, false, nil); err != nil {
		tx.abort()
		return err
	}
	tx.putTable(&nt)
	return tx.commit()
}
