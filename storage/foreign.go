package storage

import (
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
	own := map[string]*uniqueKeys{}
	for _, u := range uks {
		own[strings.ToLower(u.ix.Name)] = u
	}
	// This table's references.
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
	// Other tables' references to this one, when its keys are rewritten.
	if fresh {
		for _, t := range c.sortedTables() {
			key := tableKeyName(t.Schema, t.Name)
			if key == qn {
				continue
			}
			for _, fk := range t.ForeignKeys {
				if fk.refKeyName() != qn {
					continue
				}
				u := own[strings.ToLower(fk.RefIndex)]
				err := c.scan(string(refPrefix(key, fk.Name)), func(k, _ []byte) error {
					v := k[len(refPrefix(key, fk.Name)):]
					if u != nil {
						if _, ok := u.seen[string(v)]; ok {
							return nil
						}
					}
					return nferr.Dataf("update or delete on table %q violates foreign key constraint %q on table %q: key (%s)=(%s) is still referenced from table %q",
						table, fk.Name, t.Name, strings.Join(fk.RefColumns, ", "), decodeKeyText(v), t.Name)
				})
				if err != nil {
					return err
				}
			}
		}
	}
	// Record this table's referencing values.
	if fresh {
		pfx := tableRefPrefix(qn)
		tx.b.DeleteRange(pfx, prefixEnd(pfx), nil)
	}
	for _, r := range refs {
		pfx := string(refPrefix(qn, r.fk.Name))
		for k, n := range r.counts {
			if !fresh {
				v, ok, err := c.get(pfx + k)
				if err != nil {
					return err
				}
				if ok {
					old, w := binary.Uvarint(v)
					if w > 0 {
						n += int64(old)
					}
				}
			}
			tx.b.Set([]byte(pfx+k), binary.AppendUvarint(nil, uint64(n)), nil)
		}
	}
	return nil
}
