package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Foreign keys. A FOREIGN KEY of table c (the referencing table) says that
// the values of its columns, in every row where they are not NULL (MATCH
// SIMPLE; MATCH FULL: all NULL or none), are a key of a unique index of
// table p (the referenced table). Both sides are enforced when a change
// commits, under the catalog lock, from records kept in the same atomic
// batch as the rows:
//   - p's unique indexes already record every key value (keys.go);
//   - c records, per foreign key, every referencing key value with its
//     number of rows (pfxRef), so that a change of p can tell whether a
//     key it removes is still referenced without reading c.
//
// An append into c checks each new referencing value against p's key
// records (or, when c references itself, against the keys written in the
// same commit). A rewrite of p (UPDATE, DELETE, an upsert: p has a unique
// index, so its rewrites are whole) checks that every value c references
// is among p's new keys. DROP TABLE p, CREATE OR REPLACE of p and DROP
// INDEX of the referenced index are refused while c references it. Only
// NO ACTION and RESTRICT are supported (they are the same here: every
// statement commits alone, so a check at the end of the statement is the
// check at the end of the transaction).

// ForeignKey is a FOREIGN KEY constraint of a table.
type ForeignKey struct {
	Name string `json:"name"`
	// Columns are the referencing columns, in the order of RefIndex's
	// columns (RefColumns[i] is what Columns[i] references).
	Columns []string `json:"columns"`
	// RefTable is the referenced table's qualified name (schema.name);
	// RefIndex the unique index of it whose key Columns must hold.
	RefTable   string   `json:"ref_table"`
	RefIndex   string   `json:"ref_index"`
	RefColumns []string `json:"ref_columns"`
	// MatchFull: the columns are all NULL or none is.
	MatchFull bool `json:"match_full,omitempty"`
	// OnDelete and OnUpdate are "NO ACTION" or "RESTRICT".
	OnDelete string `json:"on_delete,omitempty"`
	OnUpdate string `json:"on_update,omitempty"`
}

// pfxRef prefixes the referencing values of foreign keys:
// "ref/<schema.table>/<foreign key>/<encoded key>" -> row count (uvarint).
const pfxRef = "ref/"

func refPrefix(qn, fk string) []byte {
	return []byte(pfxRef + qn + "/" + strings.ToLower(fk) + "/")
}

func tableRefPrefix(qn string) []byte { return []byte(pfxRef + qn + "/") }

// refKeyName is the catalog key name of a foreign key's referenced table.
func (fk *ForeignKey) refKeyName() string {
	s, n, err := splitName(fk.RefTable)
	if err != nil {
		return strings.ToLower(fk.RefTable)
	}
	return tableKeyName(s, n)
}

// validateForeignKeys resolves and checks t's foreign keys against the
// catalog (c.mu held): the referenced table exists (or is t), the
// referenced columns are a unique index of it (its primary key when none
// are named), the column counts agree and the types are the same (INTEGER
// and BIGINT may reference each other). It reorders each key's columns
// into its index's order and fills RefTable, RefIndex and RefColumns.
func (c *catalog) validateForeignKeys(t *Table) error {
	qn := tableKeyName(t.Schema, t.Name)
	names := map[string]bool{}
	for _, ix := range t.Indexes {
		names[strings.ToLower(ix.Name)] = true
	}
	for i := range t.ForeignKeys {
		fk := &t.ForeignKeys[i]
		if fk.Name == "" || names[strings.ToLower(fk.Name)] {
			return nferr.Queryf("table %s: foreign key %q has no name or the name of another constraint", t.Name, fk.Name)
		}
		names[strings.ToLower(fk.Name)] = true
		for _, a := range []string{fk.OnDelete, fk.OnUpdate} {
			if a != "" && a != "NO ACTION" && a != "RESTRICT" {
				return nferr.Queryf("foreign key %s: action %s is not supported (only NO ACTION and RESTRICT)", fk.Name, a)
			}
		}
		parent := t
		if rq := fk.refKeyName(); rq != qn {
			if parent = c.tables[rq]; parent == nil {
				return nferr.Queryf("relation %q does not exist", fk.RefTable)
			}
			if parent.External {
				return nferr.Queryf("foreign key %s: table %s is external; it cannot be referenced", fk.Name, fk.RefTable)
			}
		}
		fk.RefTable = parent.QualifiedName()
		var ix *Index
		if len(fk.RefColumns) == 0 {
			for k := range parent.Indexes {
				if parent.Indexes[k].Primary {
					ix = &parent.Indexes[k]
				}
			}
			if ix == nil {
				return nferr.Queryf("there is no primary key for referenced table %q", parent.Name)
			}
			fk.RefColumns = append([]string(nil), ix.Columns...)
		} else {
			for k := range parent.Indexes {
				if parent.Indexes[k].Unique && sameNameSet(parent.Indexes[k].Columns, fk.RefColumns) {
					ix = &parent.Indexes[k]
					break
				}
			}
			if ix == nil {
				for _, rc := range fk.RefColumns {
					if columnIndex(parent.Columns, rc) < 0 {
						return nferr.Queryf("column %q referenced in foreign key constraint does not exist", rc)
					}
				}
				return nferr.Queryf("there is no unique constraint matching given keys for referenced table %q", parent.Name)
			}
		}
		if len(fk.Columns) != len(fk.RefColumns) {
			return nferr.Queryf("number of referencing and referenced columns for foreign key disagree")
		}
		// Pair the columns, then put them in the index's order.
		cols := make([]string, len(ix.Columns))
		for k, rc := range fk.RefColumns {
			j := -1
			for m, ic := range ix.Columns {
				if strings.EqualFold(ic, rc) {
					j = m
				}
			}
			ci := columnIndex(t.Columns, fk.Columns[k])
			if ci < 0 {
				return nferr.Queryf("column %q referenced in foreign key constraint does not exist", fk.Columns[k])
			}
			pi := columnIndex(parent.Columns, ix.Columns[j])
			if !keyTypesMatch(t.Columns[ci].Type, parent.Columns[pi].Type) {
				return nferr.Queryf("foreign key constraint %q cannot be implemented: key columns %q and %q are of incompatible types: %s and %s",
					fk.Name, t.Columns[ci].Name, parent.Columns[pi].Name, t.Columns[ci].Type, parent.Columns[pi].Type)
			}
			cols[j] = t.Columns[ci].Name
		}
		fk.Columns, fk.RefColumns, fk.RefIndex = cols, append([]string(nil), ix.Columns...), ix.Name
	}
	return nil
}

// shortName is a qualified table name without the default schema.
func shortName(qualified string) string {
	if s, n, err := splitName(qualified); err == nil && strings.EqualFold(s, DefaultSchema) {
		return n
	}
	return qualified
}

// keyTypesMatch: values of the two column types encode to the same key
// (encodeKey) when equal.
func keyTypesMatch(a, b string) bool {
	ta, err1 := ParseType(a)
	tb, err2 := ParseType(b)
	if err1 != nil || err2 != nil {
		return false
	}
	isInt := func(t arrow.DataType) bool { return t.ID() == arrow.INT32 || t.ID() == arrow.INT64 }
	return arrow.TypeEqual(ta, tb) || isInt(ta) && isInt(tb)
}

func sameNameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || strings.EqualFold(x, y)
		}
		if !found {
			return false
		}
	}
	return true
}

// referencedBy lists the foreign keys of other tables that reference
// table qn (c.mu held), as "constraint fk on table c".
func (c *catalog) referencedBy(qn string) []string {
	var out []string
	for key, t := range c.tables {
		if key == qn {
			continue
		}
		for _, fk := range t.ForeignKeys {
			if fk.refKeyName() == qn {
				out = append(out, fmt.Sprintf("constraint %s on table %s", fk.Name, t.Name))
			}
		}
	}
	sort.Strings(out)
	return out
}

// refusedWhileReferenced is the error for dropping or replacing table
// qn while other tables reference it; nil when none does.
func (c *catalog) refusedWhileReferenced(what, name, qn string) error {
	deps := c.referencedBy(qn)
	if len(deps) == 0 {
		return nil
	}
	return nferr.Queryf("cannot %s table %s because other objects depend on it: %s depends on table %s (drop that table first)", what, name, strings.Join(deps, ", "), name)
}

// sortedTables are the catalog's tables in name order (c.mu held), so that
// the first of several violations reported is always the same.
func (c *catalog) sortedTables() []*Table {
	keys := make([]string, 0, len(c.tables))
	for k := range c.tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*Table, len(keys))
	for i, k := range keys {
		out[i] = c.tables[k]
	}
	return out
}

// fkRefs tracks the referencing values of one foreign key while rows are
// appended.
type fkRefs struct {
	fk     *ForeignKey
	cols   []int // positions of the referencing columns, in key order
	counts map[string]int64
}

func newFKRefs(cols []Column, fks []ForeignKey) []*fkRefs {
	var out []*fkRefs
	for i := range fks {
		r := &fkRefs{fk: &fks[i], counts: map[string]int64{}}
		for _, name := range fks[i].Columns {
			r.cols = append(r.cols, columnIndex(cols, name))
		}
		out = append(out, r)
	}
	return out
}

// add counts the referencing values of rec's rows.
func (r *fkRefs) add(table string, rec arrow.RecordBatch) error {
	var buf []byte
	for row := 0; row < int(rec.NumRows()); row++ {
		var null bool
		buf, null = encodeKey(buf[:0], rec, r.cols, row)
		if null {
			if r.fk.MatchFull && !allNull(rec, r.cols, row) {
				return nferr.Dataf("insert or update on table %q violates foreign key constraint %q: MATCH FULL does not allow mixing of null and nonnull key values", table, r.fk.Name)
			}
			continue
		}
		r.counts[string(buf)]++
	}
	return nil
}

func allNull(rec arrow.RecordBatch, cols []int, row int) bool {
	for _, c := range cols {
		if !rec.Column(c).IsNull(row) {
			return false
		}
	}
	return true
}

// checkForeignKeys runs, in a commit of table qn (c.mu held, tx its
// batch), both sides of the foreign key checks and records the
// referencing values:
//   - every value refs counted is a key of its referenced table (among
//     own, the keys this commit writes, when the table references itself);
//   - when fresh (the table's rows are all rewritten), every value another
//     table references is among the keys this commit writes.
func checkForeignKeys(c *catalog, tx *txn, qn, table string, refs []*fkRefs, uks []*uniqueKeys, fresh bool) error {
	if err := checkReferencesExist(c, qn, table, refs, uks, fresh); err != nil {
		return err
	}
	if fresh {
		own := ownKeys(uks)
		gone := func(ix string, k string) bool {
			u := own[strings.ToLower(ix)]
			if u == nil {
				return true
			}
			_, ok := u.seen[k]
			return !ok
		}
		if err := checkNotReferenced(c, qn, table, gone, nil); err != nil {
			return err
		}
		pfx := tableRefPrefix(qn)
		tx.b.DeleteRange(pfx, prefixEnd(pfx), nil)
	}
	return recordReferences(c, tx, qn, refs, fresh, nil)
}

func ownKeys(uks []*uniqueKeys) map[string]*uniqueKeys {
	own := map[string]*uniqueKeys{}
	for _, u := range uks {
		own[strings.ToLower(u.ix.Name)] = u
	}
	return own
}

// checkReferencesExist checks that every value refs counted is a key of
// its referenced table (for a table referencing itself, also among the
// keys this commit writes; only those when fresh).
func checkReferencesExist(c *catalog, qn, table string, refs []*fkRefs, uks []*uniqueKeys, fresh bool) error {
	own := ownKeys(uks)
	for _, r := range refs {
		rq := r.fk.refKeyName()
		self := rq == qn
		pfx := keyPrefix(rq, r.fk.RefIndex)
		keys := make([]string, 0, len(r.counts))
		for k := range r.counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			found := false
			if u := own[strings.ToLower(r.fk.RefIndex)]; self && u != nil {
				_, found = u.seen[k]
			}
			if !found && !(self && fresh) {
				var err error
				if _, found, err = c.get(string(pfx) + k); err != nil {
					return err
				}
			}
			if !found && self && fresh {
				// A key this rewrite of the table removes while its rows
				// still reference it.
				if _, was, err := c.get(string(pfx) + k); err != nil {
					return err
				} else if was {
					return nferr.Dataf("update or delete on table %q violates foreign key constraint %q on table %q: key (%s)=(%s) is still referenced from table %q",
						table, r.fk.Name, table, strings.Join(r.fk.RefColumns, ", "), decodeKeyText([]byte(k)), table)
				}
			}
			if !found {
				return nferr.Dataf("insert or update on table %q violates foreign key constraint %q: key (%s)=(%s) is not present in table %q",
					table, r.fk.Name, strings.Join(r.fk.Columns, ", "), decodeKeyText([]byte(k)), shortName(r.fk.RefTable))
			}
		}
	}
	return nil
}

// checkNotReferenced checks that no other table references a key of
// table qn that the commit removes: gone(index, key) says whether it
// does. With candidates (index name -> keys), only those keys are looked
// up; without, every reference of every referencing table is read.
func checkNotReferenced(c *catalog, qn, table string, gone func(ix, k string) bool, candidates map[string][]string) error {
	for _, t := range c.sortedTables() {
		key := tableKeyName(t.Schema, t.Name)
		if key == qn {
			continue
		}
		for _, fk := range t.ForeignKeys {
			if fk.refKeyName() != qn {
				continue
			}
			violation := func(v string) error {
				return nferr.Dataf("update or delete on table %q violates foreign key constraint %q on table %q: key (%s)=(%s) is still referenced from table %q",
					table, fk.Name, t.Name, strings.Join(fk.RefColumns, ", "), decodeKeyText([]byte(v)), t.Name)
			}
			pfx := refPrefix(key, fk.Name)
			if candidates != nil {
				for _, k := range candidates[strings.ToLower(fk.RefIndex)] {
					if !gone(fk.RefIndex, k) {
						continue
					}
					_, found, err := c.get(string(pfx) + k)
					if err != nil {
						return err
					}
					if found {
						return violation(k)
					}
				}
				continue
			}
			err := c.scan(string(pfx), func(k, _ []byte) error {
				v := string(k[len(pfx):])
				if gone(fk.RefIndex, v) {
					return violation(v)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// recordReferences records, in tx, the referencing values refs counted:
// added to the committed counts unless fresh (the table's records were
// dropped), less old's counts (the values of the rows a narrowed rewrite
// replaces; nil: none). A count that reaches 0 is deleted.
func recordReferences(c *catalog, tx *txn, qn string, refs []*fkRefs, fresh bool, old []map[string]int64) error {
	for i, r := range refs {
		pfx := string(refPrefix(qn, r.fk.Name))
		delta := make(map[string]int64, len(r.counts))
		for k, n := range r.counts {
			delta[k] += n
		}
		if old != nil {
			for k, n := range old[i] {
				delta[k] -= n
			}
		}
		for k, n := range delta {
			if n == 0 {
				continue
			}
			if !fresh {
				v, ok, err := c.get(pfx + k)
				if err != nil {
					return err
				}
				if ok {
					cur, w := binary.Uvarint(v)
					if w > 0 {
						n += int64(cur)
					}
				}
			}
			if n <= 0 {
				tx.b.Delete([]byte(pfx+k), nil)
				continue
			}
			tx.b.Set([]byte(pfx+k), binary.AppendUvarint(nil, uint64(n)), nil)
		}
	}
	return nil
}

// replacedValues are the key and reference values of the files a narrowed
// rewrite (AppendOptions.ReplaceFiles) replaces: per unique index the
// keys, per foreign key the referencing values with their row counts.
type replacedValues struct {
	keys []map[string]struct{}
	refs []map[string]int64
}

// replacedKeys reads the replaced files' key and reference values. The
// rewrite must name the generation it read (Commit fails if the table
// changed since, so these are the files' values then). A table that
// references itself is rewritten whole, never narrowed.
func (db *DB) replacedKeys(t *Table, opts AppendOptions, uks []*uniqueKeys, fks []*fkRefs) (*replacedValues, error) {
	if opts.Generation == 0 {
		return nil, nferr.Internalf("append to %s: a narrowed rewrite of a table with keys must name its generation", t.Name)
	}
	qn := tableKeyName(t.Schema, t.Name)
	for _, fk := range t.ForeignKeys {
		if fk.refKeyName() == qn {
			return nil, nferr.Internalf("append to %s: a table that references itself is rewritten whole", t.Name)
		}
	}
	rv := &replacedValues{keys: make([]map[string]struct{}, len(uks)), refs: make([]map[string]int64, len(fks))}
	for i := range uks {
		rv.keys[i] = map[string]struct{}{}
	}
	for i := range fks {
		rv.refs[i] = map[string]int64{}
	}
	if len(opts.ReplaceFiles) == 0 {
		return rv, nil
	}
	spec := ScanSpec{Table: t.QualifiedName()}.AllColumns(t)
	for _, p := range opts.ReplaceFiles {
		spec.Files = append(spec.Files, FileRange{Path: p})
	}
	sc, err := db.NewScanner(spec, ScanOptions{})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var buf []byte
	for {
		rec, err := sc.Next(context.Background())
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			for i, u := range uks {
				var null bool
				if buf, null = encodeKey(buf[:0], rec, u.cols, r); !null {
					rv.keys[i][string(buf)] = struct{}{}
				}
			}
			for i, f := range fks {
				var null bool
				if buf, null = encodeKey(buf[:0], rec, f.cols, r); !null {
					rv.refs[i][string(buf)]++
				}
			}
		}
		rec.Release()
	}
	return rv, nil
}

// commitNarrowKeys is the key and reference bookkeeping of a narrowed
// rewrite (c.mu held, tx its batch): the replaced files' keys that the
// appended rows do not write again leave the unique indexes (refused while
// another table references one), the appended rows' new keys must be free
// and enter them, and the references move from the old values to the new.
func commitNarrowKeys(c *catalog, tx *txn, qn, table string, uks []*uniqueKeys, fks []*fkRefs, old *replacedValues) error {
	removed := map[string][]string{}
	for i, u := range uks {
		pfx := keyPrefix(qn, u.ix.Name)
		for k := range old.keys[i] {
			if _, again := u.seen[k]; !again {
				tx.b.Delete(append(append([]byte(nil), pfx...), k...), nil)
				removed[strings.ToLower(u.ix.Name)] = append(removed[strings.ToLower(u.ix.Name)], k)
			}
		}
		for _, k := range u.keys {
			if _, had := old.keys[i][string(k)]; had {
				continue
			}
			if err := recordKey(c, tx, u, table, pfx, k, true); err != nil {
				return err
			}
		}
	}
	for _, ks := range removed {
		sort.Strings(ks)
	}
	gone := func(string, string) bool { return true }
	if err := checkNotReferenced(c, qn, table, gone, removed); err != nil {
		return err
	}
	if err := checkReferencesExist(c, qn, table, fks, uks, false); err != nil {
		return err
	}
	return recordReferences(c, tx, qn, fks, false, old.refs)
}
