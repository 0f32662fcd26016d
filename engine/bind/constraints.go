package bind

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Constraints: CREATE TABLE's PRIMARY KEY, UNIQUE, CHECK, FOREIGN KEY and
// DEFAULT, and CREATE INDEX. Storage enforces unique keys, foreign keys
// and NOT NULL when rows are committed (it resolves a foreign key's
// referenced unique index); CHECK constraints are bound here onto the rows an INSERT
// writes (InsertStmt.Checks) and evaluated by the session; a DEFAULT is
// bound into the INSERT's projection for a column the INSERT does not
// name. Constraint names follow PostgreSQL: <table>_pkey,
// <table>_<columns>_key, <table>_<column>_check or <table>_check,
// <table>_<columns>_fkey, and <table>_<columns>_idx for an unnamed index.

// constraints binds the constraints and defaults of CREATE TABLE s into ct
// (whose Schema the columns made).
func (b *binder) constraints(ct *CreateTableStmt, s *sql.CreateTable) error {
	table := ct.Name
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		table = table[i+1:]
	}
	fields := ct.Schema.Fields()
	names := map[string]bool{}
	name := func(given sql.Ident, base string) (string, error) {
		n := given.Name
		if n == "" {
			n = base
			for k := 1; names[n]; k++ {
				n = fmt.Sprintf("%s%d", base, k)
			}
		} else if names[n] {
			return "", b.errorf(given, "constraint %q for relation %q already exists", n, table)
		}
		names[n] = true
		return n, nil
	}
	// Defaults: constant expressions of the column's type.
	for i, d := range s.Columns {
		if d.Default == nil {
			continue
		}
		if _, err := b.defaultExpr(d.Default, fields[i]); err != nil {
			return err
		}
		if ct.Defaults == nil {
			ct.Defaults = make([]string, len(fields))
		}
		ct.Defaults[i] = sql.Deparse(d.Default)
	}
	primary := false
	for _, c := range s.Constraints {
		switch c.Kind {
		case sql.ConPrimaryKey, sql.ConUnique:
			ix := plan.IndexDef{Unique: true, Primary: c.Kind == sql.ConPrimaryKey, Constraint: true}
			seen := map[string]bool{}
			for _, col := range c.Columns {
				j := ct.Schema.FieldIndices(col.Name)
				if len(j) == 0 {
					return b.errorf(col, "column %q named in key does not exist", col.Name)
				}
				if seen[col.Name] {
					return b.errorf(col, "column %q appears twice in %s constraint", col.Name, constraintWord(c.Kind))
				}
				seen[col.Name] = true
				ix.Columns = append(ix.Columns, col.Name)
			}
			base := table + "_" + strings.Join(ix.Columns, "_") + "_key"
			if ix.Primary {
				if primary {
					return b.errorf(c, "multiple primary keys for table %q are not allowed", table)
				}
				primary = true
				base = table + "_pkey"
			}
			var err error
			if ix.Name, err = name(c.Name, base); err != nil {
				return err
			}
			ct.Indexes = append(ct.Indexes, ix)
		case sql.ConCheck:
			cols := b.tableCols(table, fields)
			e, err := b.checkExpr(c.Check, table, cols)
			if err != nil {
				return err
			}
			base := table + "_check"
			used := plan.ColSet{}
			plan.ExprCols(e, used)
			if len(used) == 1 {
				for _, col := range cols {
					if used.Has(col.ID) {
						base = table + "_" + col.Name + "_check"
					}
				}
			}
			n, err := name(c.Name, base)
			if err != nil {
				return err
			}
			ct.Checks = append(ct.Checks, plan.CheckDef{Name: n, SQL: sql.Deparse(c.Check)})
		case sql.ConForeignKey:
			fk, err := b.foreignKey(ct, table, c)
			if err != nil {
				return err
			}
			if fk.Name, err = name(c.Name, table+"_"+strings.Join(fk.Columns, "_")+"_fkey"); err != nil {
				return err
			}
			ct.ForeignKeys = append(ct.ForeignKeys, fk)
		}
	}
	if len(ct.Indexes) > 0 {
		// Primary key columns are NOT NULL.
		nf := append([]arrow.Field(nil), fields...)
		for _, ix := range ct.Indexes {
			if !ix.Primary {
				continue
			}
			for _, col := range ix.Columns {
				nf[ct.Schema.FieldIndices(col)[0]].Nullable = false
			}
		}
		ct.Schema = arrow.NewSchema(nf, nil)
	}
	return nil
}

// foreignKey binds a FOREIGN KEY of CREATE TABLE ct: its columns exist,
// the referenced table exists (or is ct itself) with the referenced
// columns, and the actions are ones nicflow enforces. Storage checks that
// the referenced columns are a unique key and the types agree.
func (b *binder) foreignKey(ct *CreateTableStmt, table string, c *sql.TableConstraint) (plan.ForeignKeyDef, error) {
	fk := plan.ForeignKeyDef{MatchFull: c.MatchFull, OnDelete: c.OnDelete, OnUpdate: c.OnUpdate}
	for _, a := range []struct{ on, action string }{{"DELETE", c.OnDelete}, {"UPDATE", c.OnUpdate}} {
		if a.action != "" && a.action != "NO ACTION" && a.action != "RESTRICT" {
			return fk, b.errorf(c, "ON %s %s is not supported: nicflow enforces foreign keys as NO ACTION / RESTRICT (the statement fails while rows reference the key)", a.on, a.action)
		}
	}
	seen := map[string]bool{}
	for _, col := range c.Columns {
		j := ct.Schema.FieldIndices(col.Name)
		if len(j) == 0 {
			return fk, b.errorf(col, "column %q referenced in foreign key constraint does not exist", col.Name)
		}
		if seen[col.Name] {
			return fk, b.errorf(col, "column %q appears twice in foreign key constraint", col.Name)
		}
		seen[col.Name] = true
		fk.Columns = append(fk.Columns, col.Name)
	}
	ref, err := b.objName(c.RefTable)
	if err != nil {
		return fk, err
	}
	var refSchema *arrow.Schema
	if strings.EqualFold(ref, ct.Name) {
		refSchema = ct.Schema
	} else {
		t, err := b.cat.LookupTable(ref)
		if err != nil {
			return fk, err
		}
		if t == nil {
			return fk, b.errorf(c.RefTable, "relation %q does not exist", ref)
		}
		refSchema, ref = t.Schema, t.Name
	}
	fk.RefTable = ref
	for _, col := range c.RefColumns {
		j := refSchema.FieldIndices(col.Name)
		if len(j) == 0 {
			return fk, b.errorf(col, "column %q referenced in foreign key constraint does not exist", col.Name)
		}
		fk.RefColumns = append(fk.RefColumns, col.Name)
	}
	if len(fk.RefColumns) > 0 && len(fk.RefColumns) != len(fk.Columns) {
		return fk, b.errorf(c, "number of referencing and referenced columns for foreign key disagree")
	}
	return fk, nil
}

func constraintWord(k sql.ConstraintKind) string {
	if k == sql.ConPrimaryKey {
		return "PRIMARY KEY"
	}
	return "UNIQUE"
}

// tableCols are fresh columns for a table's fields, for binding its
// constraints.
func (b *binder) tableCols(table string, fields []arrow.Field) []plan.Column {
	cols := make([]plan.Column, len(fields))
	for i, f := range fields {
		cols[i] = b.newCol(f.Name, table, f.Type, f.Nullable)
	}
	return cols
}

// checkExpr binds a CHECK expression over a table's columns: boolean, no
// subquery, no aggregate.
func (b *binder) checkExpr(e sql.Expr, table string, cols []plan.Column) (plan.Expr, error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	sc := &scope{items: []*scopeItem{{name: table, cols: cols}}}
	x, err := b.expr(e, sc, &exprCtx{clause: "CHECK"})
	if err != nil {
		return nil, err
	}
	if plan.HasSubquery(x) {
		return nil, b.errorf(e, "cannot use subquery in check constraint")
	}
	if !plan.IsBool(x.Type()) && !plan.IsNullType(x.Type()) {
		return nil, b.errorf(e, "argument of CHECK must be type boolean, not type %s", plan.TypeString(x.Type()))
	}
	return x, nil
}

// defaultExpr binds a DEFAULT expression for field f: no column, no
// subquery, assignable to the column's type.
func (b *binder) defaultExpr(e sql.Expr, f arrow.Field) (plan.Expr, error) {
	x, err := b.expr(e, &scope{}, &exprCtx{clause: "DEFAULT"})
	if err != nil {
		return nil, err
	}
	if plan.HasSubquery(x) {
		return nil, b.errorf(e, "cannot use subquery in DEFAULT expression")
	}
	x, err = b.assignCast(x, f.Type)
	if err != nil {
		return nil, b.errorf(e, "column %q is of type %s but default expression is of type %s", f.Name, plan.TypeString(f.Type), plan.TypeString(x.Type()))
	}
	return x, nil
}

// storedExpr parses the SQL text of a stored DEFAULT or CHECK.
func (b *binder) storedExpr(what, text string) (sql.Expr, error) {
	e, err := sql.ParseExpr(text)
	if err != nil {
		return nil, fmt.Errorf("stored %s %q: %w", what, text, err)
	}
	return e, nil
}

// createIndex binds CREATE [UNIQUE] INDEX.
func (b *binder) createIndex(s *sql.CreateIndex) (Statement, error) {
	t, name, err := b.existingTable(s.Table)
	if err != nil {
		return nil, err
	}
	st := &CreateIndexStmt{Name: s.Name.Name, Table: name, Unique: s.Unique, IfNotExists: s.IfNotExists}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		i := t.ColumnIndex(c.Name)
		if i < 0 {
			return nil, b.errorf(c, "column %q does not exist", c.Name)
		}
		col := t.Schema.Field(i).Name
		if seen[col] {
			return nil, b.errorf(c, "column %q appears twice in index", c.Name)
		}
		seen[col] = true
		st.Columns = append(st.Columns, col)
	}
	if st.Name == "" {
		st.Name = t.Name + "_" + strings.Join(st.Columns, "_") + "_idx"
		if i := strings.LastIndexByte(st.Name, '.'); i >= 0 {
			st.Name = st.Name[i+1:]
		}
		for k := 1; indexNamed(t, st.Name); k++ {
			st.Name = fmt.Sprintf("%s_%s_idx%d", t.Name, strings.Join(st.Columns, "_"), k)
		}
	}
	return st, nil
}

func indexNamed(t *plan.TableDef, name string) bool {
	for _, ix := range t.Indexes {
		if strings.EqualFold(ix.Name, name) {
			return true
		}
	}
	return false
}

// insertDefault is the value an INSERT gives column i of t when it does
// not name it: its DEFAULT, or NULL.
func (b *binder) insertDefault(t *plan.TableDef, i int) (plan.Expr, error) {
	f := t.Schema.Field(i)
	if i >= len(t.Defaults) || t.Defaults[i] == "" {
		return plan.NullConst(f.Type), nil
	}
	e, err := b.storedExpr("default of column "+f.Name, t.Defaults[i])
	if err != nil {
		return nil, err
	}
	return b.defaultExpr(e, f)
}

// insertChecks binds t's CHECK constraints over the columns an INSERT
// writes.
func (b *binder) insertChecks(t *plan.TableDef, table string, cols []plan.Column) ([]BoundCheck, error) {
	var out []BoundCheck
	for _, c := range t.Checks {
		e, err := b.storedExpr("check "+c.Name, c.SQL)
		if err != nil {
			return nil, err
		}
		x, err := b.checkExpr(e, table, cols)
		if err != nil {
			return nil, err
		}
		out = append(out, BoundCheck{Name: c.Name, Expr: x})
	}
	return out, nil
}

// onConflict checks INSERT's ON CONFLICT target against t's unique
// indexes: the columns (in any order) or the constraint name must be one;
// no target means any.
func (b *binder) onConflict(oc *sql.OnConflict, t *plan.TableDef) (bool, error) {
	if oc == nil {
		return false, nil
	}
	_, err := b.conflictIndex(oc, t)
	return true, err
}

// conflictIndex is the unique index an ON CONFLICT clause names (by its
// columns or constraint name), nil when it names none and the table has
// no unique index (nothing can conflict); DO UPDATE needs one.
func (b *binder) conflictIndex(oc *sql.OnConflict, t *plan.TableDef) (*plan.IndexDef, error) {
	for i, ix := range t.Indexes {
		if !ix.Unique {
			continue
		}
		switch {
		case oc.Constraint.Name != "":
			if strings.EqualFold(ix.Name, oc.Constraint.Name) {
				return &t.Indexes[i], nil
			}
		case len(oc.Columns) > 0:
			if len(oc.Columns) != len(ix.Columns) {
				continue
			}
			match := true
			for _, c := range oc.Columns {
				found := false
				for _, k := range ix.Columns {
					found = found || strings.EqualFold(k, c.Name)
				}
				match = match && found
			}
			if match {
				return &t.Indexes[i], nil
			}
		default:
			if len(oc.Set) > 0 {
				return nil, b.errorf(oc, "ON CONFLICT DO UPDATE requires inference specification or constraint name")
			}
			return &t.Indexes[i], nil
		}
	}
	if oc.Constraint.Name != "" {
		return nil, b.errorf(oc, "constraint %q for table %q does not exist", oc.Constraint.Name, t.Name)
	}
	if len(oc.Columns) > 0 {
		return nil, b.errorf(oc, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
	}
	if len(oc.Set) > 0 {
		return nil, b.errorf(oc, "ON CONFLICT DO UPDATE requires inference specification or constraint name")
	}
	return nil, nil // no target and no unique key: nothing can conflict
}

// orReplace is the ON CONFLICT clause INSERT OR REPLACE stands for: on
// the table's unique key, every other column set from the new row (nil,
// a plain INSERT, when the table has no unique key; DO NOTHING when the
// key is every column). SQLite replaces rows conflicting on any of
// several unique keys; nicflow refuses such a table.
func (b *binder) orReplace(s *sql.Insert, t *plan.TableDef) (*sql.OnConflict, error) {
	var ix *plan.IndexDef
	for i := range t.Indexes {
		if !t.Indexes[i].Unique {
			continue
		}
		if ix != nil {
			return nil, b.errorf(s, "INSERT OR REPLACE into table %s, which has several unique keys, is not supported", t.Name)
		}
		ix = &t.Indexes[i]
	}
	if ix == nil {
		return nil, nil
	}
	oc := &sql.OnConflict{Pos: s.Pos}
	key := map[string]bool{}
	for _, c := range ix.Columns {
		key[strings.ToLower(c)] = true
		oc.Columns = append(oc.Columns, sql.Ident{Pos: s.Pos, Name: c})
	}
	for _, f := range t.Schema.Fields() {
		if key[strings.ToLower(f.Name)] {
			continue
		}
		oc.Set = append(oc.Set, &sql.Assignment{Pos: s.Pos, Column: sql.Ident{Pos: s.Pos, Name: f.Name},
			Value: &sql.ColumnRef{Pos: s.Pos, Parts: []sql.Ident{{Pos: s.Pos, Name: "excluded"}, {Pos: s.Pos, Name: f.Name}}}})
	}
	return oc, nil
}

// upsert binds INSERT ... ON CONFLICT (key) DO UPDATE SET ... [WHERE
// cond] as a rewrite of the whole table (the table has a unique key, whose
// rewrites are whole): the rows without a conflicting new row as they
// are, the rows with one updated (SET sees the table's row unqualified or
// by the table's name, the new row as excluded; a row failing the WHERE
// stays as it is), and the new rows without a conflicting row inserted:
//
//	SELECT t.*, false FROM t WHERE NOT EXISTS (excluded with t's key)
//	UNION ALL SELECT <t's columns, the SET ones updated>, cond FROM t JOIN excluded ON key
//	UNION ALL SELECT excluded.*, true FROM excluded WHERE NOT EXISTS (t with its key)
//
// The status counts the rows inserted or updated (INSERT 0 n). Two new
// rows for one key fail as a duplicate key (PostgreSQL: "cannot affect
// row a second time").
func (b *binder) upsert(s *sql.Insert, t *plan.TableDef, rows *QueryStmt) (Statement, error) {
	oc := s.OnConflict
	ix, err := b.conflictIndex(oc, t)
	if err != nil {
		return nil, err
	}
	ret, err := b.returning(s.Returning, t, t.Name)
	if err != nil {
		return nil, err
	}
	fields := t.Schema.Fields()
	tq := sql.QuoteIdent(t.Name)
	if i := strings.IndexByte(t.Name, '.'); i >= 0 {
		tq = sql.QuoteIdent(t.Name[:i]) + "." + sql.QuoteIdent(t.Name[i+1:])
	}
	const tab = "nicflow_target"
	on := func(a, c string) string {
		var parts []string
		for _, k := range ix.Columns {
			parts = append(parts, a+"."+sql.QuoteIdent(k)+" = "+c+"."+sql.QuoteIdent(k))
		}
		return strings.Join(parts, " AND ")
	}
	// SET values and the WHERE see the table's columns unqualified or by
	// the table's name, the new row as excluded.
	qualify := func(e sql.Expr) string {
		sql.Walk(e, func(n sql.Node) bool {
			switch r := n.(type) {
			case *sql.ColumnRef:
				switch {
				case len(r.Parts) == 1:
					r.Parts = append([]sql.Ident{{Pos: r.Pos, Name: tab}}, r.Parts...)
				case len(r.Parts) == 2 && (strings.EqualFold(r.Parts[0].Name, t.Name) || strings.EqualFold(r.Parts[0].Name, s.Table.Parts[len(s.Table.Parts)-1].Name)):
					r.Parts[0].Name = tab
				}
			case *sql.Subquery, *sql.Exists, *sql.InSubquery:
				return false // its own scope
			}
			return true
		})
		return "(" + sql.Deparse(e) + ")"
	}
	set := map[int]string{}
	for _, a := range oc.Set {
		i := t.ColumnIndex(a.Column.Name)
		if i < 0 {
			return nil, b.errorf(a.Column, "column %q of relation %q does not exist", a.Column.Name, t.Name)
		}
		if _, dup := set[i]; dup {
			return nil, b.errorf(a.Column, "multiple assignments to same column %q", a.Column.Name)
		}
		set[i] = qualify(a.Value)
	}
	cond := "true"
	if oc.Where != nil {
		cond = "coalesce(" + qualify(oc.Where) + ", false)"
	}
	var keep, upd, ins []string
	for i, f := range fields {
		c := sql.QuoteIdent(f.Name)
		keep = append(keep, tab+"."+c)
		ins = append(ins, "excluded."+c)
		v, ok := set[i]
		if !ok {
			upd = append(upd, tab+"."+c)
			continue
		}
		v = "CAST(" + v + " AS " + plan.TypeString(f.Type) + ")"
		if oc.Where != nil {
			v = "CASE WHEN " + cond + " THEN " + v + " ELSE " + tab + "." + c + " END"
		}
		upd = append(upd, v)
	}
	text := "SELECT " + strings.Join(keep, ", ") + ", false FROM " + tq + " AS " + tab +
		" WHERE NOT EXISTS (SELECT 1 FROM excluded WHERE " + on("excluded", tab) + ")" +
		" UNION ALL SELECT " + strings.Join(upd, ", ") + ", " + cond + " FROM " + tq + " AS " + tab + " JOIN excluded ON " + on("excluded", tab) +
		" UNION ALL SELECT " + strings.Join(ins, ", ") + ", true FROM excluded WHERE NOT EXISTS (SELECT 1 FROM " + tq + " AS " + tab + " WHERE " + on(tab, "excluded") + ")"
	stmts, err := sql.Parse(text)
	if err != nil || len(stmts) != 1 {
		return nil, b.errorf(oc, "ON CONFLICT DO UPDATE: %v", err)
	}
	q, ok := stmts[0].Stmt.(*sql.Query)
	if !ok {
		return nil, nferr.Internalf("ON CONFLICT DO UPDATE rewrite is not a query")
	}
	// Bound in the rewrite's own text (errors name it), with the new rows
	// as the relation excluded.
	b.nextDef++
	ex := &cteBinding{def: &plan.SharedDef{ID: b.nextDef, Name: "excluded", Plan: rows.Plan}, names: rows.Names}
	src, srcName := b.src, b.srcName
	b.src, b.srcName = text, "the rewrite of ON CONFLICT DO UPDATE: "+text
	p, _, err := b.query(q, &scope{ctes: map[string]*cteBinding{"excluded": ex}})
	b.src, b.srcName = src, srcName
	if err != nil {
		return nil, err
	}
	cols := p.Columns()
	checks, err := b.insertChecks(t, t.Name, cols[:len(fields)])
	if err != nil {
		return nil, err
	}
	names := append(fieldNames(t), "updated")
	return &UpdateStmt{Table: t, Query: &QueryStmt{Plan: p, Names: names}, Checks: checks, Upsert: true, Returning: ret}, nil
}
