package storage

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// View is a view as the catalog records it: its query as SQL text (bound
// again at each use) and optional column names. Views share the tables'
// namespace: a name is a table or a view.
type View struct {
	Schema  string   `json:"schema"`
	Name    string   `json:"name"`
	Columns []string `json:"columns,omitempty"`
	// Fields are the view's output columns with their types as it was
	// created (Type "" for a type nicflow does not store, such as an
	// array); nil for a view recorded before they were kept.
	Fields  []Column  `json:"fields,omitempty"`
	SQL     string    `json:"sql"`
	Created time.Time `json:"created"`
}

// QualifiedName is "schema.name".
func (v *View) QualifiedName() string { return v.Schema + "." + v.Name }

// pfxView prefixes view records: "view/<schema.name>".
const pfxView = "view/"

func (c *catalog) loadViews() (map[string]*View, error) {
	views := map[string]*View{}
	err := c.scan(pfxView, func(k, v []byte) error {
		var vw View
		if err := json.Unmarshal(v, &vw); err != nil {
			return nferr.Dataf("catalog %s: corrupt view record %s: %v", c.dir, k, err)
		}
		views[string(k[len(pfxView):])] = &vw
		return nil
	})
	return views, err
}

func (t *txn) putView(v *View) {
	qn := tableKeyName(v.Schema, v.Name)
	t.putJSON([]byte(pfxView+qn), v)
	t.views[qn] = v
}

func (t *txn) dropView(qn string) {
	t.b.Delete([]byte(pfxView+qn), nil)
	t.views[qn] = nil
}

// Views lists the views, sorted by qualified name.
func (db *DB) Views() []*View {
	db.cat.mu.Lock()
	defer db.cat.mu.Unlock()
	_ = db.cat.refreshLocked()
	out := make([]*View, 0, len(db.cat.views))
	for _, v := range db.cat.views {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].QualifiedName() < out[j].QualifiedName() })
	return out
}

// View returns the view called name, or nil.
func (db *DB) View(name string) *View {
	s, n, err := splitName(name)
	if err != nil {
		return nil
	}
	db.cat.mu.Lock()
	defer db.cat.mu.Unlock()
	_ = db.cat.refreshLocked()
	return db.cat.views[tableKeyName(s, n)]
}

// CreateView stores a view; with orReplace an existing view of that name
// is replaced. A table of that name is an error.
func (db *DB) CreateView(name string, columns []string, sqlText string, orReplace bool) error {
	return db.CreateViewFields(name, columns, nil, sqlText, orReplace)
}

// CreateViewFields is CreateView recording the view's output columns.
func (db *DB) CreateViewFields(name string, columns []string, fields []Column, sqlText string, orReplace bool) error {
	s, n, err := splitName(name)
	if err != nil {
		return err
	}
	qn := tableKeyName(s, n)
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	if db.cat.tables[qn] != nil {
		return nferr.Queryf("relation %q already exists (a table)", name)
	}
	if db.cat.views[qn] != nil && !orReplace {
		return nferr.Queryf("view %s already exists", name)
	}
	tx := db.cat.begin()
	tx.putView(&View{Schema: s, Name: n, Columns: columns, Fields: fields, SQL: sqlText, Created: time.Now().UTC()})
	return tx.commit()
}

// DropView removes a view.
func (db *DB) DropView(name string, ifExists bool) error {
	s, n, err := splitName(name)
	if err != nil {
		return err
	}
	qn := tableKeyName(s, n)
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	if db.cat.views[qn] == nil {
		if ifExists {
			return nil
		}
		if db.cat.tables[qn] != nil {
			return nferr.Queryf("%s is a table, not a view (use DROP TABLE)", name)
		}
		return nferr.Queryf("view %s does not exist", name)
	}
	tx := db.cat.begin()
	tx.dropView(qn)
	return tx.commit()
}

// isView reports a view called qn; the caller holds cat.mu.
func (c *catalog) isView(qn string) bool { return c.views[qn] != nil }
