package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/nicflow/nicflow/internal/bytea"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Index is an index of a table: a PRIMARY KEY or UNIQUE constraint
// declared in CREATE TABLE, or one made by CREATE [UNIQUE] INDEX.
//
// A unique index is enforced: the catalog holds one entry per committed key
// value (pfxKey), written in the same atomic batch as the rows, so an
// INSERT checks its keys without reading the table and a crash leaves keys
// and rows in step. Keys with a NULL column are not recorded (SQL: NULLs
// are distinct). A non-unique index is recorded only: every column's
// row-group min/max statistics already prune equality and range scans.
type Index struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Unique  bool     `json:"unique,omitempty"`
	Primary bool     `json:"primary,omitempty"`
	// Constraint: declared in CREATE TABLE; it lives as long as the table
	// (DROP INDEX refuses it).
	Constraint bool `json:"constraint,omitempty"`
}

// Check is a CHECK constraint: a boolean SQL expression over the table's
// columns that no row may make FALSE. Storage records it; the engine
// evaluates it on every row it writes.
type Check struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// Constraints are what CREATE TABLE declares besides the columns.
type Constraints struct {
	Indexes []Index `json:"indexes,omitempty"`
	Checks  []Check `json:"checks,omitempty"`
	// Defaults holds, per column (same order), the SQL text of its DEFAULT
	// expression ("" for none); nil when no column has one.
	Defaults []string `json:"defaults,omitempty"`
	// ForeignKeys are FOREIGN KEY constraints (foreign.go); CreateTable
	// resolves what they reference.
	ForeignKeys []ForeignKey `json:"foreign_keys,omitempty"`
}

// pfxKey prefixes the recorded values of unique indexes:
// "key/<schema.table>/<index>/<encoded key>".
const pfxKey = "key/"

func keyPrefix(qn, index string) []byte {
	return []byte(pfxKey + qn + "/" + strings.ToLower(index) + "/")
}

func tableKeyPrefix(qn string) []byte { return []byte(pfxKey + qn + "/") }

// validateConstraints checks indexes and defaults against the columns and
// fills what is implied: primary key columns are NOT NULL.
func validateConstraints(table string, cols []Column, c *Constraints) error {
	names := map[string]bool{}
	primary := 0
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		if ix.Name == "" {
			return nferr.Queryf("table %s: an index without a name", table)
		}
		if names[strings.ToLower(ix.Name)] {
			return nferr.Queryf("table %s: two indexes named %s", table, ix.Name)
		}
		names[strings.ToLower(ix.Name)] = true
		if ix.Primary {
			primary++
			ix.Unique = true
		}
		if len(ix.Columns) == 0 {
			return nferr.Queryf("index %s of table %s has no columns", ix.Name, table)
		}
		seen := map[string]bool{}
		for k, name := range ix.Columns {
			j := columnIndex(cols, name)
			if j < 0 {
				return nferr.Queryf("column %q named in index %s does not exist in table %s", name, ix.Name, table)
			}
			if seen[cols[j].Name] {
				return nferr.Queryf("column %q appears twice in index %s of table %s", name, ix.Name, table)
			}
			seen[cols[j].Name] = true
			ix.Columns[k] = cols[j].Name
			if ix.Primary {
				cols[j].Nullable = false
			}
		}
	}
	if primary > 1 {
		return nferr.Queryf("multiple primary keys for table %s are not allowed", table)
	}
	if c.Defaults != nil && len(c.Defaults) != len(cols) {
		return nferr.Internalf("table %s: %d defaults for %d columns", table, len(c.Defaults), len(cols))
	}
	return nil
}

func columnIndex(cols []Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	for i, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// uniqueKeys tracks the key values of one unique index while rows are
// appended: the encoded keys seen in this append (duplicates among the new
// rows fail at once) and, for the error, how to print one.
type uniqueKeys struct {
	ix   *Index
	cols []int // positions of the key columns
	seen map[string]struct{}
	keys [][]byte // in append order
}

// add records the keys of rec's rows; an error names the first duplicate
// among the appended rows.
func (u *uniqueKeys) add(table string, rec arrow.RecordBatch) error {
	var buf []byte
	for r := 0; r < int(rec.NumRows()); r++ {
		var null bool
		buf, null = encodeKey(buf[:0], rec, u.cols, r)
		if null {
			continue
		}
		if _, dup := u.seen[string(buf)]; dup {
			return u.violation(table, rec, r)
		}
		k := string(buf)
		u.seen[k] = struct{}{}
		u.keys = append(u.keys, []byte(k))
	}
	return nil
}

func (u *uniqueKeys) violation(table string, rec arrow.RecordBatch, r int) error {
	return nferr.Dataf("duplicate key value violates unique constraint %q of table %s: key (%s)=(%s) already exists",
		u.ix.Name, table, strings.Join(u.ix.Columns, ", "), keyText(rec, u.cols, r))
}

// violationKey is the error for an encoded key found in the catalog.
func (u *uniqueKeys) violationKey(table string, key []byte) error {
	return nferr.Dataf("duplicate key value violates unique constraint %q of table %s: key (%s)=(%s) already exists",
		u.ix.Name, table, strings.Join(u.ix.Columns, ", "), decodeKeyText(key))
}

// encodeKey appends the order-free, type-tagged encoding of row r's key
// columns; null reports a NULL among them.
func encodeKey(buf []byte, rec arrow.RecordBatch, cols []int, r int) ([]byte, bool) {
	for _, c := range cols {
		a := rec.Column(c)
		if a.IsNull(r) {
			return buf, true
		}
		switch x := a.(type) {
		case *array.Int32:
			buf = append(buf, 'i')
			buf = binary.BigEndian.AppendUint64(buf, uint64(int64(x.Value(r))))
		case *array.Int64:
			buf = append(buf, 'i')
			buf = binary.BigEndian.AppendUint64(buf, uint64(x.Value(r)))
		case *array.Date32:
			buf = append(buf, 'd')
			buf = binary.BigEndian.AppendUint64(buf, uint64(int64(x.Value(r))))
		case *array.Float64:
			v := x.Value(r)
			if v == 0 {
				v = 0 // -0 equals 0
			}
			if math.IsNaN(v) {
				v = math.NaN() // one NaN
			}
			buf = append(buf, 'f')
			buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(v))
		case *array.Boolean:
			b := byte('0')
			if x.Value(r) {
				b = '1'
			}
			buf = append(buf, 'b', b)
		case *array.String:
			s := x.Value(r)
			buf = append(buf, 's')
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		case *array.Binary:
			s := x.Value(r)
			buf = append(buf, 'x')
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		case *array.Decimal64:
			scale := x.DataType().(*arrow.Decimal64Type).Scale
			buf = append(buf, 'n')
			buf = binary.BigEndian.AppendUint64(buf, uint64(int64(x.Value(r))))
			buf = binary.BigEndian.AppendUint32(buf, uint32(scale))
		case *array.Decimal128:
			scale := x.DataType().(*arrow.Decimal128Type).Scale
			v := x.Value(r)
			buf = append(buf, 'N')
			buf = binary.BigEndian.AppendUint64(buf, uint64(v.HighBits()))
			buf = binary.BigEndian.AppendUint64(buf, v.LowBits())
			buf = binary.BigEndian.AppendUint32(buf, uint32(scale))
		default:
			buf = append(buf, '?')
			buf = append(buf, a.ValueStr(r)...)
		}
		buf = append(buf, 0)
	}
	return buf, false
}

// keyText prints row r's key columns for an error message: the text of
// their encoding, so that a duplicate within a statement and one found in
// the catalog read the same.
func keyText(rec arrow.RecordBatch, cols []int, r int) string {
	k, _ := encodeKey(nil, rec, cols, r)
	return decodeKeyText(k)
}

// decodeKeyText prints an encoded key for an error message.
func decodeKeyText(k []byte) string {
	var parts []string
	for len(k) > 0 {
		tag := k[0]
		k = k[1:]
		switch tag {
		case 'i', 'd', 'f':
			if len(k) < 8 {
				return strings.Join(parts, ", ")
			}
			u := binary.BigEndian.Uint64(k)
			k = k[8:]
			switch tag {
			case 'i':
				parts = append(parts, strconv.FormatInt(int64(u), 10))
			case 'd':
				parts = append(parts, time.Unix(int64(u)*86400, 0).UTC().Format("2006-01-02"))
			default:
				parts = append(parts, strconv.FormatFloat(math.Float64frombits(u), 'g', -1, 64))
			}
		case 'b':
			if len(k) < 1 {
				return strings.Join(parts, ", ")
			}
			parts = append(parts, map[byte]string{'0': "false", '1': "true"}[k[0]])
			k = k[1:]
		case 's':
			n, w := binary.Uvarint(k)
			if w <= 0 || uint64(len(k)-w) < n {
				return strings.Join(parts, ", ")
			}
			parts = append(parts, string(k[w:w+int(n)]))
			k = k[w+int(n):]
		case 'x':
			n, w := binary.Uvarint(k)
			if w <= 0 || uint64(len(k)-w) < n {
				return strings.Join(parts, ", ")
			}
			parts = append(parts, bytea.Format(k[w:w+int(n)]))
			k = k[w+int(n):]
		case 'n', 'N':
			w := 12
			if tag == 'N' {
				w = 20
			}
			if len(k) < w {
				return strings.Join(parts, ", ")
			}
			if tag == 'n' {
				v, s := int64(binary.BigEndian.Uint64(k)), int32(binary.BigEndian.Uint32(k[8:]))
				parts = append(parts, formatScaled(v, s))
			} else {
				v := decimal128.New(int64(binary.BigEndian.Uint64(k)), binary.BigEndian.Uint64(k[8:]))
				parts = append(parts, v.ToString(int32(binary.BigEndian.Uint32(k[16:]))))
			}
			k = k[w:]
		default:
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				i = len(k)
			}
			parts = append(parts, string(k[:i]))
			k = k[i:]
		}
		if len(k) > 0 && k[0] == 0 {
			k = k[1:]
		}
	}
	return strings.Join(parts, ", ")
}

func formatScaled(v int64, scale int32) string {
	if scale <= 0 {
		return strconv.FormatInt(v, 10)
	}
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	s := strconv.FormatUint(u, 10)
	for len(s) <= int(scale) {
		s = "0" + s
	}
	s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// newUniqueKeys prepares the key trackers of a table's unique indexes.
func newUniqueKeys(cols []Column, indexes []Index) []*uniqueKeys {
	var out []*uniqueKeys
	for i := range indexes {
		ix := &indexes[i]
		if !ix.Unique {
			continue
		}
		u := &uniqueKeys{ix: ix, seen: map[string]struct{}{}}
		for _, name := range ix.Columns {
			u.cols = append(u.cols, columnIndex(cols, name))
		}
		out = append(out, u)
	}
	return out
}

// checkAndRecord checks, under the catalog lock, that no appended key is
// already committed (unless fresh: the table's old keys are being
// replaced), and records every key in tx.
func checkAndRecord(c *catalog, tx *txn, qn, table string, uks []*uniqueKeys, fresh bool) error {
	for _, u := range uks {
		pfx := keyPrefix(qn, u.ix.Name)
		for _, k := range u.keys {
			if err := recordKey(c, tx, u, table, pfx, k, !fresh); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordKey records key k of index u (prefix pfx) in tx; with check, a
// key the catalog already holds is a duplicate-key error instead.
func recordKey(c *catalog, tx *txn, u *uniqueKeys, table string, pfx, k []byte, check bool) error {
	full := append(append([]byte(nil), pfx...), k...)
	if check {
		_, found, err := c.get(string(full))
		if err != nil {
			return err
		}
		if found {
			return u.violationKey(table, k)
		}
	}
	tx.b.Set(full, nil, nil)
	return nil
}

// CreateIndex adds an index to a table. A unique index first reads the
// table's key columns: a duplicate value fails the statement and leaves
// the table as it was; otherwise the index and the values of its key are
// committed in one batch.
func (db *DB) CreateIndex(ctx context.Context, table string, ix Index, ifNotExists bool) error {
	s, n, err := splitName(table)
	if err != nil {
		return err
	}
	qn := tableKeyName(s, n)
	t, err := db.cat.lookup(table)
	if err != nil {
		return err
	}
	if t.External {
		return nferr.Queryf("table %s is external (files in %s): nicflow does not index it", table, t.Location)
	}
	if other, _ := db.indexTable(s, ix.Name); other != nil {
		if ifNotExists {
			return nil
		}
		return nferr.Queryf("relation %q already exists", ix.Name)
	}
	cols := append([]Column(nil), t.Columns...)
	c := &Constraints{Indexes: append(append([]Index(nil), t.Indexes...), ix)}
	if err := validateConstraints(table, cols, c); err != nil {
		return err
	}
	nix := c.Indexes[len(c.Indexes)-1]
	var uk *uniqueKeys
	gen := t.Generation
	if nix.Unique {
		// The scan projects the key columns, in key order.
		uk = &uniqueKeys{ix: &nix, cols: make([]int, len(nix.Columns)), seen: map[string]struct{}{}}
		for i := range uk.cols {
			uk.cols[i] = i
		}
		err := db.scanEach(ctx, table, nix.Columns, func(rec arrow.RecordBatch) error {
			if err := uk.add(table, rec); err != nil {
				return nferr.Dataf("could not create unique index %q: %v", nix.Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	cur := db.cat.tables[qn]
	if cur == nil || cur.Generation != gen {
		return nferr.Queryf("table %s changed while index %s was being built; run CREATE INDEX again", table, ix.Name)
	}
	nt := *cur
	nt.Indexes = c.Indexes
	nt.Generation++
	tx := db.cat.begin()
	tx.putTable(&nt)
	if uk != nil {
		if err := checkAndRecord(db.cat, tx, qn, table, []*uniqueKeys{uk}, true); err != nil {
			tx.abort()
			return err
		}
	}
	return tx.commit()
}

// DropIndex removes an index made by CREATE INDEX (a constraint's index
// goes with its table) and the key values it recorded.
func (db *DB) DropIndex(name string, ifExists bool) error {
	s, n, err := splitName(name)
	if err != nil {
		return err
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	t, i := db.indexTableLocked(s, n)
	if t == nil {
		if ifExists {
			return nil
		}
		return nferr.Queryf("index %q does not exist", name)
	}
	ix := t.Indexes[i]
	for _, dep := range db.cat.sortedTables() {
		for _, fk := range dep.ForeignKeys {
			if fk.refKeyName() == tableKeyName(t.Schema, t.Name) && strings.EqualFold(fk.RefIndex, ix.Name) {
				return nferr.Queryf("cannot drop index %s because constraint %s on table %s requires it", ix.Name, fk.Name, dep.Name)
			}
		}
	}
	if ix.Constraint {
		what := "unique"
		if ix.Primary {
			what = "primary key"
		}
		return nferr.Queryf("cannot drop index %s: the %s constraint of table %s requires it", ix.Name, what, t.Name)
	}
	nt := *t
	nt.Indexes = append(append([]Index(nil), t.Indexes[:i]...), t.Indexes[i+1:]...)
	nt.Generation++
	tx := db.cat.begin()
	tx.putTable(&nt)
	pfx := keyPrefix(tableKeyName(t.Schema, t.Name), ix.Name)
	tx.b.DeleteRange(pfx, prefixEnd(pfx), nil)
	return tx.commit()
}

// indexTable finds the table of schema s holding the index called name.
func (db *DB) indexTable(s, name string) (*Table, int) {
	db.cat.mu.Lock()
	defer db.cat.mu.Unlock()
	_ = db.cat.refreshLocked()
	return db.indexTableLocked(s, name)
}

func (db *DB) indexTableLocked(s, name string) (*Table, int) {
	for _, t := range db.cat.tables {
		if !strings.EqualFold(t.Schema, s) {
			continue
		}
		for i, ix := range t.Indexes {
			if strings.EqualFold(ix.Name, name) {
				return t, i
			}
		}
	}
	return nil, -1
}

// scanEach reads columns of table and calls fn with every record (fn does
// not keep it).
func (db *DB) scanEach(ctx context.Context, table string, columns []string, fn func(arrow.RecordBatch) error) error {
	sc, err := db.NewScanner(ScanSpec{Table: table, Columns: columns}, ScanOptions{})
	if err != nil {
		return err
	}
	for {
		rec, err := sc.Next(ctx)
		if err != nil {
			sc.Close()
			return err
		}
		if rec == nil {
			break
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			sc.Close()
			return err
		}
	}
	return sc.Close()
}
