package bind

import (
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
)

// DeleteStmt is DELETE. Keep is a query over the table giving the rows
// that stay (those the WHERE does not make TRUE), in the table's column
// order and types: the session rewrites the table with them in one atomic
// commit. All (no WHERE) empties the table without reading it.
type DeleteStmt struct {
	Table *plan.TableDef
	Keep  *QueryStmt
	All   bool
	// Hit gives the rows the statement deletes, in the table's column
	// order (without WHERE: only for RETURNING): RETURNING is evaluated
	// over them, and the pushed-down filter of its scan of Table tells
	// the files they may be in.
	Hit       *QueryStmt
	Returning *Returning
}

// UpdateStmt is UPDATE. Query gives every row of the table after the
// update, in the table's column order and types, and a last boolean
// column: whether the row was updated (the statement's count). Checks are
// the table's CHECK constraints over the rows written.
type UpdateStmt struct {
	Table  *plan.TableDef
	Query  *QueryStmt
	Checks []BoundCheck
	// Hit gives the rows the WHERE selects (nil without WHERE): its
	// scan's pushed-down filter tells the files they may be in.
	Hit *QueryStmt
	// Returning is the RETURNING list over the rows updated (their new
	// values; nil: none).
	Returning *Returning
	// Upsert: INSERT ... ON CONFLICT DO UPDATE (constraints.go, upsert):
	// the status is INSERT's, counting the rows inserted or updated.
	Upsert bool
}

// Returning is a DML statement's RETURNING list: Exprs (named Names) over
// rows of the table's columns in table order (Cols, bound to positions).
type Returning struct {
	Cols  []plan.Column
	Exprs []plan.Expr
	Names []string
}

// returning binds a RETURNING list over the rows of table t, visible as
// name (nil without one).
func (b *binder) returning(items []*sql.SelectItem, t *plan.TableDef, name string) (*Returning, error) {
	if len(items) == 0 {
		return nil, nil
	}
	r := &Returning{}
	for _, f := range t.Schema.Fields() {
		r.Cols = append(r.Cols, b.newCol(f.Name, name, f.Type, f.Nullable))
	}
	sc := &scope{items: []*scopeItem{{name: name, cols: r.Cols}}}
	for _, it := range items {
		if st, ok := it.Expr.(*sql.Star); ok {
			cols, err := b.expandStar(st, sc)
			if err != nil {
				return nil, err
			}
			for _, c := range cols {
				r.Exprs = append(r.Exprs, plan.NewColRef(c))
				r.Names = append(r.Names, c.Name)
			}
			continue
		}
		e, err := b.expr(it.Expr, sc, &exprCtx{clause: "RETURNING"})
		if err != nil {
			return nil, err
		}
		if plan.HasSubquery(e) {
			return nil, b.errorf(it.Expr, "subqueries in RETURNING are not supported")
		}
		r.Exprs = append(r.Exprs, plan.ResolveUntyped(e, plan.TypString))
		r.Names = append(r.Names, itemName(it, e))
	}
	return r, nil
}

// targetName is the name UPDATE and DELETE's target is visible as.
func targetName(t *sql.TableName, tab *plan.TableDef) string {
	if t.Alias != nil {
		return t.Alias.Name.Name
	}
	return tab.Name
}

func (*DeleteStmt) boundStmt() {}
func (*UpdateStmt) boundStmt() {}

// targetScan binds the table of UPDATE or DELETE: a scan of all its
// columns and the scope its WHERE and SET expressions see.
func (b *binder) targetScan(t *sql.TableName) (plan.Plan, *scope, *plan.TableDef, error) {
	name, err := b.objName(t.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	tab, err := b.cat.LookupTable(name)
	if err != nil {
		return nil, nil, nil, err
	}
	if tab == nil {
		if v, _ := b.cat.LookupView(name); v != nil {
			return nil, nil, nil, b.errorf(t.Name, "cannot change view %q: a view is not a table", name)
		}
		return nil, nil, nil, b.errorf(t.Name, "relation %q does not exist", name)
	}
	p, items, err := b.tableName(t, &scope{})
	if err != nil {
		return nil, nil, nil, err
	}
	if sc, ok := p.(*plan.ScanNode); ok {
		// NB: the statement's table is the one its scan reads (the same
		// TableDef), which the session finds the scan by.
		tab = sc.Table
	}
	return p, &scope{items: items}, tab, nil
}

// whereHit binds a DML WHERE: TRUE for the rows the statement changes
// (COALESCE(cond, FALSE): a NULL condition changes nothing).
func (b *binder) whereHit(e sql.Expr, sc *scope) (plan.Expr, error) {
	b.markFilterIns(e)
	cond, err := b.expr(e, sc, &exprCtx{clause: "WHERE"})
	if err != nil {
		return nil, err
	}
	cond = plan.ResolveUntyped(cond, plan.TypBool)
	if !plan.IsBool(cond.Type()) && !plan.IsNullType(cond.Type()) {
		return nil, b.errorf(e, "argument of WHERE must be type boolean, not type %s", plan.TypeString(cond.Type()))
	}
	return b.newCall(plan.FnCoalesce, plan.TypBool, cond, plan.BoolConst(false)), nil
}

func (b *binder) deleteStmt(s *sql.Delete) (Statement, error) {
	scan, sc, tab, err := b.targetScan(s.Table)
	if err != nil {
		return nil, err
	}
	ret, err := b.returning(s.Returning, tab, targetName(s.Table, tab))
	if err != nil {
		return nil, err
	}
	if s.Where == nil && len(s.Using) == 0 {
		d := &DeleteStmt{Table: tab, All: true, Returning: ret}
		if ret != nil {
			d.Hit = &QueryStmt{Plan: scan, Names: fieldNames(tab)}
		}
		return d, nil
	}
	cond := s.Where
	if len(s.Using) > 0 {
		// DELETE ... USING u WHERE c deletes the rows for which
		// EXISTS (SELECT 1 FROM u WHERE c).
		cond = &sql.Exists{Pos: s.Pos, Query: fromQuery(s.Pos, s.Using, s.Where, oneItem(s.Pos))}
	}
	hit, err := b.whereHit(cond, sc)
	if err != nil {
		return nil, err
	}
	keep := &plan.FilterNode{Input: scan, Cond: b.newCall(plan.FnNot, plan.TypBool, hit)}
	d := &DeleteStmt{Table: tab, Keep: &QueryStmt{Plan: keep, Names: fieldNames(tab)}, Returning: ret,
		Hit: hitQuery(scan, hit, tab)}
	return d, nil
}

func (b *binder) updateStmt(s *sql.Update) (Statement, error) {
	scan, sc, tab, err := b.targetScan(s.Table)
	if err != nil {
		return nil, err
	}
	hit := plan.Expr(plan.BoolConst(true))
	cond := s.Where
	var orderBy []*sql.OrderItem
	if len(s.From) > 0 {
		// UPDATE ... FROM f WHERE c updates the rows for which EXISTS
		// (SELECT 1 FROM f WHERE c), each column set to (SELECT value
		// FROM f WHERE c ORDER BY every value LIMIT 1): of several
		// matching rows, every column takes the same one (PostgreSQL
		// takes one it does not specify).
		cond = &sql.Exists{Pos: s.Pos, Query: fromQuery(s.Pos, s.From, s.Where, oneItem(s.Pos))}
		for _, a := range s.Set {
			if _, ok := a.Value.(*sql.Literal); !ok { // NB: ORDER BY 0 is a position
				orderBy = append(orderBy, &sql.OrderItem{Pos: a.Pos, Expr: a.Value})
			}
		}
	}
	conditional := cond != nil
	if conditional {
		if hit, err = b.whereHit(cond, sc); err != nil {
			return nil, err
		}
	}
	fields := tab.Schema.Fields()
	in := scan.Columns()
	exprs := make([]plan.Expr, len(fields)+1)
	for i := range fields {
		exprs[i] = plan.NewColRef(in[i])
	}
	set := map[int]bool{}
	for _, a := range s.Set {
		i := tab.ColumnIndex(a.Column.Name)
		if i < 0 {
			return nil, b.errorf(a.Column, "column %q of relation %q does not exist", a.Column.Name, tab.Name)
		}
		if set[i] {
			return nil, b.errorf(a.Column, "multiple assignments to same column %q", a.Column.Name)
		}
		set[i] = true
		value := a.Value
		if len(s.From) > 0 {
			q := fromQuery(a.Pos, s.From, s.Where, []*sql.SelectItem{{Pos: a.Pos, Expr: a.Value}})
			q.OrderBy, q.Limit = orderBy, &sql.Literal{Pos: a.Pos, Kind: sql.LitNumber, Text: "1"}
			value = &sql.Subquery{Pos: a.Pos, Query: q}
		}
		v, err := b.expr(value, sc, &exprCtx{clause: "UPDATE"})
		if err != nil {
			return nil, err
		}
		cv, err := b.assignCast(v, fields[i].Type)
		if err != nil {
			return nil, b.errorf(a.Value, "column %s is of type %s but expression is of type %s", fields[i].Name, plan.TypeString(fields[i].Type), plan.TypeString(v.Type()))
		}
		if !conditional {
			exprs[i] = cv
		} else {
			exprs[i] = &plan.CaseExpr{Whens: []plan.Expr{hit}, Thens: []plan.Expr{cv}, Else: plan.NewColRef(in[i]), Typ: fields[i].Type}
		}
	}
	exprs[len(fields)] = hit
	cols := make([]plan.Column, len(fields)+1)
	for i, f := range fields {
		cols[i] = b.newCol(f.Name, "", f.Type, true)
	}
	cols[len(fields)] = b.newCol("updated", "", plan.TypBool, false)
	checks, err := b.insertChecks(tab, tab.Name, cols[:len(fields)])
	if err != nil {
		return nil, err
	}
	names := append(fieldNames(tab), "updated")
	ret, err := b.returning(s.Returning, tab, targetName(s.Table, tab))
	if err != nil {
		return nil, err
	}
	u := &UpdateStmt{Table: tab, Query: &QueryStmt{Plan: &plan.ProjectNode{Input: scan, Exprs: exprs, Cols: cols}, Names: names}, Checks: checks, Returning: ret}
	if conditional {
		u.Hit = hitQuery(scan, hit, tab)
	}
	return u, nil
}

// hitQuery is the query of the rows of scan (table t) that hit, from
// whereHit, selects: a filter on the condition itself (a filter drops NULL
// as COALESCE(c, FALSE) does), so that it can move into the scan.
func hitQuery(scan plan.Plan, hit plan.Expr, t *plan.TableDef) *QueryStmt {
	cond := hit
	if c, ok := hit.(*plan.Call); ok && c.Fn == plan.FnCoalesce && len(c.Args) == 2 {
		cond = c.Args[0]
	}
	return &QueryStmt{Plan: &plan.FilterNode{Input: scan, Cond: cond}, Names: fieldNames(t)}
}

// fromQuery is SELECT items FROM from WHERE where, as UPDATE ... FROM and
// DELETE ... USING read their other relations.
func fromQuery(pos sql.Pos, from []sql.TableExpr, where sql.Expr, items []*sql.SelectItem) *sql.Query {
	return &sql.Query{Pos: pos, Body: &sql.Select{Pos: pos, Items: items, From: from, Where: where}}
}

// oneItem is the select list "1".
func oneItem(pos sql.Pos) []*sql.SelectItem {
	return []*sql.SelectItem{{Pos: pos, Expr: &sql.Literal{Pos: pos, Kind: sql.LitNumber, Text: "1"}}}
}

func fieldNames(t *plan.TableDef) []string {
	names := make([]string, t.Schema.NumFields())
	for i, f := range t.Schema.Fields() {
		names[i] = f.Name
	}
	return names
}
