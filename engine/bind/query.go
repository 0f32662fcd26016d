package bind

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/sql"
)

// scope is the name environment of one query level: the relations of its
// FROM clause, the CTEs its WITH clause defined, and the enclosing query's
// scope (for correlated references).
type scope struct {
	parent *scope
	items  []*scopeItem
	ctes   map[string]*cteBinding
	// unseen are the FROM items before a derived table without LATERAL,
	// which it cannot see (named in the error of a reference to one).
	unseen []*scopeItem
}

// scopeItem is one relation visible by name: a table, view, CTE, derived
// table or one side of a join.
type scopeItem struct {
	name string
	cols []plan.Column
	// hidden marks columns an unqualified name does not see (the right
	// copy of a JOIN ... USING column).
	hidden []bool
	// unreadable are a table's columns it cannot read
	// (plan.TableDef.Unreadable): naming one, or *, fails with its error.
	unreadable []plan.UnreadableColumn
}

// unreadableRef is the error of a reference to a column of the relations
// in scope that cannot be read (nil if it names none).
func unreadableRef(s *scope, parts []sql.Ident) error {
	colName := parts[len(parts)-1].Name
	for sc := s; sc != nil; sc = sc.parent {
		for _, it := range sc.items {
			if len(parts) == 2 && it.name != parts[0].Name {
				continue
			}
			for _, u := range it.unreadable {
				if strings.EqualFold(u.Name, colName) {
					return u.Err
				}
			}
		}
	}
	return nil
}

// cteBinding is a WITH entry: bound once, shared by its references. In
// its own recursive term, a recursive CTE is bound to its work table
// instead (work and workCols: the columns' types and nullability).
type cteBinding struct {
	def      *plan.SharedDef
	names    []string
	work     *plan.WorkTable
	workCols []plan.Column
}

func (s *scope) lookupCTE(name string) *cteBinding {
	for ; s != nil; s = s.parent {
		if c, ok := s.ctes[name]; ok {
			return c
		}
	}
	return nil
}

// resolve finds a column reference. It returns the column and whether it
// belongs to an enclosing query.
func (b *binder) resolve(s *scope, ref *sql.ColumnRef) (plan.Column, error) {
	parts := ref.Parts
	if len(parts) == 3 {
		parts = parts[1:] // schema.table.column: one schema
	}
	colName := parts[len(parts)-1].Name
	for sc := s; sc != nil; sc = sc.parent {
		var found []plan.Column
		tableSeen := false
		for _, it := range sc.items {
			if len(parts) == 2 && it.name != parts[0].Name {
				continue
			}
			tableSeen = true
			for i, c := range it.cols {
				if c.Name == colName && (len(parts) == 2 || it.hidden == nil || !it.hidden[i]) {
					found = append(found, c)
				}
			}
		}
		if len(found) > 1 {
			same := true
			for _, f := range found[1:] {
				same = same && f.ID == found[0].ID
			}
			if !same {
				return plan.Column{}, b.errorf(ref, "column reference %q is ambiguous", refText(ref))
			}
		}
		if len(found) > 0 {
			return found[0], nil
		}
		if len(parts) == 2 && tableSeen {
			if err := unreadableRef(sc, parts); err != nil {
				return plan.Column{}, err
			}
			return plan.Column{}, b.errorf(ref, "column %s does not exist", refText(ref))
		}
	}
	if err := unreadableRef(s, parts); err != nil {
		return plan.Column{}, err
	}
	if it := unseenItem(s, parts); it != nil {
		if len(parts) == 2 {
			return plan.Column{}, b.errorf(ref, "invalid reference to FROM-clause entry for table %q: a subquery in FROM sees the items before it only when it is LATERAL", parts[0].Name)
		}
		return plan.Column{}, b.errorf(ref, "column %q of table %q cannot be referenced here: a subquery in FROM sees the items before it only when it is LATERAL", colName, it.name)
	}
	if len(parts) == 2 {
		if err := unreadableRef(s, parts[:1]); err != nil {
			return plan.Column{}, err // s.a of a STRUCT column s
		}
		return plan.Column{}, b.errorf(ref, "missing FROM-clause entry for table %q", parts[0].Name)
	}
	return plan.Column{}, b.errorf(ref, "column %q does not exist", colName)
}

// unseenItem is the FROM item, hidden from a derived table without
// LATERAL, that a reference resolving nowhere names (nil if none).
func unseenItem(s *scope, parts []sql.Ident) *scopeItem {
	colName := parts[len(parts)-1].Name
	for sc := s; sc != nil; sc = sc.parent {
		for _, it := range sc.unseen {
			if len(parts) == 2 {
				if it.name == parts[0].Name {
					return it
				}
				continue
			}
			for _, c := range it.cols {
				if c.Name == colName {
					return it
				}
			}
		}
	}
	return nil
}

func refText(ref *sql.ColumnRef) string {
	s := make([]string, len(ref.Parts))
	for i, p := range ref.Parts {
		s[i] = p.Name
	}
	return strings.Join(s, ".")
}

// query binds a full query (WITH, body, ORDER BY, LIMIT) in the scope
// outer (nil at top level) and returns its plan and column names.
func (b *binder) query(q *sql.Query, outer *scope) (plan.Plan, []string, error) {
	if flat := flattenRowOrder(q.OrderBy); flat != nil {
		c := *q
		c.OrderBy = flat
		q = &c
	}
	s := &scope{parent: outer}
	if len(q.With) > 0 {
		s.ctes = map[string]*cteBinding{}
		for _, c := range q.With {
			if _, dup := s.ctes[c.Name.Name]; dup {
				return nil, nil, b.errorf(c, "WITH query name %q specified more than once", c.Name.Name)
			}
			// A CTE sees the CTEs before it and the enclosing queries.
			var lp plan.Plan
			var names []string
			var err error
			if q.Recursive && readsName(c.Query, c.Name.Name) {
				lp, names, err = b.recursiveCTE(c, s)
			} else {
				lp, names, err = b.query(c.Query, s)
			}
			if err != nil {
				return nil, nil, err
			}
			if free := plan.FreeCols(lp); len(free) > 0 {
				return nil, nil, b.errorf(c, "WITH query %q refers to columns of an enclosing query, which is not supported", c.Name.Name)
			}
			if len(c.Columns) > len(names) {
				return nil, nil, b.errorf(c.Columns[len(names)], "WITH query %q has %d columns but %d column names were given", c.Name.Name, len(names), len(c.Columns))
			}
			names = append([]string(nil), names...)
			for i, n := range c.Columns {
				names[i] = n.Name
			}
			b.nextDef++
			s.ctes[c.Name.Name] = &cteBinding{def: &plan.SharedDef{ID: b.nextDef, Name: c.Name.Name, Plan: lp}, names: names}
		}
	}
	// A plain SELECT binds its own ORDER BY (which may use input columns);
	// set operations and VALUES order by output columns only.
	if sel, ok := q.Body.(*sql.Select); ok {
		return b.selectQuery(sel, q, s)
	}
	lp, names, err := b.body(q.Body, s)
	if err != nil {
		return nil, nil, err
	}
	if len(q.OrderBy) > 0 {
		cols := lp.Columns()
		var keys []plan.SortKey
		for _, o := range q.OrderBy {
			idx, err := b.outputColumn(o.Expr, names, nil)
			if err != nil {
				return nil, nil, err
			}
			if idx < 0 {
				return nil, nil, b.errorf(o, "ORDER BY of a UNION, INTERSECT, EXCEPT or VALUES result must name an output column or give its position")
			}
			keys = append(keys, sortKey(plan.NewColRef(cols[idx]), o))
		}
		lp = &plan.SortNode{Input: lp, Keys: keys}
	}
	lp, err = b.limit(lp, q, s)
	return lp, names, err
}

func sortKey(e plan.Expr, o *sql.OrderItem) plan.SortKey {
	if e != nil && plan.IsInterval(e.Type()) {
		// Intervals sort by their span (months as 30 days), as they
		// compare.
		e = plan.NewCall(expr.FnIntervalSpan, plan.DecimalType(38, 0), e)
	}
	k := plan.SortKey{Expr: e, Desc: o.Desc, NullsFirst: o.Desc}
	if o.NullsFirst != nil {
		k.NullsFirst = *o.NullsFirst
	}
	return k
}

// outputColumn returns the index of the output column an ORDER BY (or
// GROUP BY) item names: a position (1-based) or an output name; -1 when it
// is neither. exprs, when given, lets an output name that is ambiguous
// between two identical expressions pass.
func (b *binder) outputColumn(e sql.Expr, names []string, exprs []plan.Expr) (int, error) {
	switch x := e.(type) {
	case *sql.Literal:
		if x.Kind != sql.LitNumber {
			return -1, nil
		}
		n, err := strconv.Atoi(x.Text)
		if err != nil {
			return -1, b.errorf(x, "non-integer constant in ORDER BY or GROUP BY")
		}
		if n < 1 || n > len(names) {
			return -1, b.errorf(x, "position %d is not in select list (1..%d)", n, len(names))
		}
		return n - 1, nil
	case *sql.ColumnRef:
		if len(x.Parts) != 1 {
			return -1, nil
		}
		found := -1
		for i, n := range names {
			if n != x.Parts[0].Name {
				continue
			}
			if found >= 0 && (exprs == nil || !plan.ExprEqual(exprs[i], exprs[found])) {
				return -1, b.errorf(x, "ORDER BY %q is ambiguous", n)
			}
			if found < 0 {
				found = i
			}
		}
		return found, nil
	}
	return -1, nil
}

// limit adds LIMIT/OFFSET; both must be constant non-negative integers.
func (b *binder) limit(lp plan.Plan, q *sql.Query, s *scope) (plan.Plan, error) {
	if q.Limit == nil && q.Offset == nil {
		return lp, nil
	}
	get := func(e sql.Expr, what string) (int64, error) {
		if e == nil {
			return -1, nil
		}
		be, err := b.expr(e, s, &exprCtx{clause: what})
		if err != nil {
			return 0, err
		}
		// NB: an untyped literal ('5', a parameter's value) is a BIGINT here.
		c, ok, err := plan.FoldToConst(plan.ResolveUntyped(be, plan.TypInt64))
		if err != nil {
			return 0, b.errorf(e, "%s: %v", what, err)
		}
		if !ok || !plan.IsInteger(c.Typ) {
			return 0, b.errorf(e, "%s must be a constant integer", what)
		}
		if c.IsNull() {
			return -1, nil
		}
		v := plan.ConstInt(c)
		if v < 0 {
			return 0, b.errorf(e, "%s must not be negative", what)
		}
		return v, nil
	}
	lim, err := get(q.Limit, "LIMIT")
	if err != nil {
		return nil, err
	}
	off, err := get(q.Offset, "OFFSET")
	if err != nil {
		return nil, err
	}
	if off < 0 {
		off = 0
	}
	return &plan.LimitNode{Input: lp, Limit: lim, Offset: off}, nil
}

// body binds a query body that is not a plain SELECT with its own ORDER BY.
func (b *binder) body(body sql.QueryBody, s *scope) (plan.Plan, []string, error) {
	switch x := body.(type) {
	case *sql.Select:
		return b.selectQuery(x, nil, s)
	case *sql.Query:
		return b.query(x, &scope{parent: s.parent, ctes: s.ctes})
	case *sql.Values:
		return b.values(x, s)
	case *sql.SetOp:
		return b.setOp(x, s)
	}
	return nil, nil, b.errorf(body, "unsupported query form %T", body)
}

func (b *binder) values(v *sql.Values, s *scope) (plan.Plan, []string, error) {
	n := len(v.Rows[0])
	rows := make([][]plan.Expr, len(v.Rows))
	types := make([]arrow.DataType, n)
	for i := range types {
		types[i] = plan.TypNull
	}
	for r, row := range v.Rows {
		rows[r] = make([]plan.Expr, n)
		for c, e := range row {
			be, err := b.expr(e, s, &exprCtx{clause: "VALUES"})
			if err != nil {
				return nil, nil, err
			}
			if p := b.params; p != nil && p.insertValues == v && c < len(p.insertTypes) {
				// A parameter in an INSERT's VALUES takes its column's type.
				if k, ok := be.(*plan.Const); ok && k.Param != nil {
					be = plan.ResolveUntyped(be, p.insertTypes[c])
				}
			}
			rows[r][c] = be
			t, ok := plan.CommonTypeOf(types[c], be)
			if !ok {
				return nil, nil, b.errorf(e, "VALUES types %s and %s cannot be matched", plan.TypeString(types[c]), plan.TypeString(be.Type()))
			}
			types[c] = t
		}
	}
	cols := make([]plan.Column, n)
	names := make([]string, n)
	for c := range cols {
		t := types[c]
		nullable := false
		for r := range rows {
			ce, err := b.coerce(rows[r][c], t)
			if err != nil {
				return nil, nil, b.errorf(v.Rows[r][c], "%v", err)
			}
			rows[r][c] = ce
			if k, ok := ce.(*plan.Const); !ok || k.IsNull() {
				nullable = true
			}
		}
		names[c] = "column" + strconv.Itoa(c+1)
		cols[c] = b.newCol(names[c], "", t, nullable)
	}
	return &plan.ValuesNode{Rows: rows, Cols: cols}, names, nil
}

func (b *binder) setOp(x *sql.SetOp, s *scope) (plan.Plan, []string, error) {
	// Each arm is a query level of its own: its FROM names must not clash
	// with the other arm's (SELECT * FROM t UNION SELECT * FROM t).
	left, lnames, err := b.body(x.Left, &scope{parent: s.parent, ctes: s.ctes})
	if err != nil {
		return nil, nil, err
	}
	right, _, err := b.body(x.Right, &scope{parent: s.parent, ctes: s.ctes})
	if err != nil {
		return nil, nil, err
	}
	lc, rc := left.Columns(), right.Columns()
	if len(lc) != len(rc) {
		return nil, nil, b.errorf(x, "each %s query must have the same number of columns: %d and %d", x.Op, len(lc), len(rc))
	}
	cols := make([]plan.Column, len(lc))
	for i := range lc {
		t, ok := plan.CommonType(lc[i].Type, rc[i].Type)
		if !ok {
			return nil, nil, b.errorf(x, "%s types %s and %s cannot be matched (column %d)", x.Op, plan.TypeString(lc[i].Type), plan.TypeString(rc[i].Type), i+1)
		}
		cols[i] = b.newCol(lnames[i], "", t, lc[i].Nullable || rc[i].Nullable)
	}
	left, right = b.coerceTo(left, cols), b.coerceTo(right, cols)
	kind := map[sql.SetOpKind]plan.SetOpKind{sql.Union: plan.SetUnion, sql.Intersect: plan.SetIntersect, sql.Except: plan.SetExcept}[x.Op]
	return &plan.SetOpNode{Kind: kind, All: x.All, Left: left, Right: right, Cols: cols}, lnames, nil
}

// coerceTo casts p's columns to the types of cols (by position), through
// a projection when any differs: each side of a set operation or of a
// recursive CTE.
func (b *binder) coerceTo(p plan.Plan, cols []plan.Column) plan.Plan {
	in := p.Columns()
	exprs := make([]plan.Expr, len(in))
	cast := false
	for i, c := range in {
		exprs[i], _ = b.coerce(plan.NewColRef(c), cols[i].Type)
		cast = cast || !arrow.TypeEqual(c.Type, cols[i].Type)
	}
	if !cast {
		return p
	}
	return b.castProject(p, exprs)
}

// castProject projects exprs (casts of p's columns) with fresh IDs.
func (b *binder) castProject(p plan.Plan, exprs []plan.Expr) plan.Plan {
	in := p.Columns()
	cols := make([]plan.Column, len(exprs))
	for i, e := range exprs {
		if c, ok := e.(*plan.ColRef); ok {
			cols[i] = in[i]
			cols[i].ID = c.ID
			continue
		}
		cols[i] = b.newCol(in[i].Name, in[i].Table, e.Type(), in[i].Nullable)
	}
	return &plan.ProjectNode{Input: p, Exprs: exprs, Cols: cols}
}

// ---------------------------------------------------------------- FROM

// from binds the FROM list into one plan (comma-separated items are cross
// joined; the optimizer orders joins) and fills s.items.
func (b *binder) from(items []sql.TableExpr, s *scope) (plan.Plan, error) {
	var lp plan.Plan
	for _, te := range items {
		p, its, err := b.tableExpr(te, s, s.items)
		if err != nil {
			return nil, err
		}
		if err := b.addItems(s, its, te); err != nil {
			return nil, err
		}
		if lp == nil {
			lp = p
		} else {
			lp = &plan.JoinNode{Kind: plan.JoinInner, Left: lp, Right: p, Lateral: lateralRefs(lp, p)}
		}
	}
	if lp == nil {
		// SELECT without FROM: one row, no columns.
		lp = &plan.ValuesNode{Rows: [][]plan.Expr{{}}}
	}
	return lp, nil
}

func (b *binder) addItems(s *scope, its []*scopeItem, at sql.Node) error {
	for _, it := range its {
		if it.name != "" {
			for _, old := range s.items {
				if old.name == it.name {
					return b.errorf(at, "table name %q specified more than once", it.name)
				}
			}
		}
		s.items = append(s.items, it)
	}
	return nil
}

// tableExpr binds one FROM entry. The scope s is the query's (being
// built): derived tables see the enclosing queries and the WITH queries
// in scope, not the FROM items beside them, unless they are LATERAL;
// a LATERAL derived table and a function in FROM also see left, the
// items before the entry (PostgreSQL's rule: and in a JOIN, its left
// side). A reference to them makes the entry's plan read columns of the
// plan it is joined to: the binder marks that join Lateral, and the
// optimizer's decorrelation turns it into a join or an apply.
func (b *binder) tableExpr(te sql.TableExpr, s *scope, left []*scopeItem) (plan.Plan, []*scopeItem, error) {
	switch t := te.(type) {
	case *sql.TableName:
		return b.tableName(t, s)
	case *sql.DerivedTable:
		outer := &scope{parent: s.parent, ctes: s.ctes, unseen: left}
		if t.Lateral {
			outer = lateralScope(s, left)
		}
		plan, names, err := b.query(t.Query, outer)
		if err != nil {
			return nil, nil, err
		}
		name := ""
		var aliasCols []sql.Ident
		if t.Alias != nil {
			name, aliasCols = t.Alias.Name.Name, t.Alias.Columns
		}
		it, err := b.aliasItem(plan.Columns(), names, name, aliasCols, t, "derived table "+name)
		if err != nil {
			return nil, nil, err
		}
		return plan, []*scopeItem{it}, nil
	case *sql.Join:
		return b.join(t, s, left)
	case *sql.TableFunc:
		if t.Name.Name == "pg_partition_ancestors" && len(t.Args) == 1 {
			// nicflow has no partitions: a relation's ancestors are
			// itself (PostgreSQL's answer for a table that is no
			// partition), a column relid.
			u := *t
			u.Name.Name = "unnest"
			u.Args = []sql.Expr{&sql.ArrayExpr{Pos: t.Pos, Elems: []sql.Expr{&sql.Cast{Pos: t.Pos, X: t.Args[0], Type: &sql.TypeName{Pos: t.Pos, Name: "regclass"}}}}}
			if u.Alias == nil {
				u.Alias = &sql.TableAlias{Pos: t.Pos, Name: sql.Ident{Pos: t.Pos, Name: "pg_partition_ancestors"}, Columns: []sql.Ident{{Pos: t.Pos, Name: "relid"}}}
			}
			return b.unnestFrom(&u, s, left)
		}
		if t.Name.Name == "unnest" {
			return b.unnestFrom(t, s, left)
		}
		if f, ok := jsonSRFs[t.Name.Name]; ok {
			return b.jsonFrom(t, f, s, left)
		}
		if t.Ordinality {
			return nil, nil, b.errorf(t, "WITH ORDINALITY is supported for unnest and the JSON functions only")
		}
		return b.tableFunc(t, s, left)
	}
	return nil, nil, b.errorf(te, "unsupported FROM entry %T", te)
}

// tableFunc binds a function in FROM: generate_series(start, stop [,
// step]) (PostgreSQL: stop included) and range([start,] stop [, step])
// (DuckDB: stop excluded), over BIGINT constants; a NULL argument gives
// no row. The column is named after the function, or after the alias when
// the alias has no column list (as PostgreSQL names it).
func (b *binder) tableFunc(t *sql.TableFunc, s *scope, left []*scopeItem) (plan.Plan, []*scopeItem, error) {
	name := t.Name.Name
	lo, hi := 2, 3
	switch name {
	case "generate_series":
	case "range":
		lo = 1
	case sql.FileTableFunc, "read_parquet", "parquet_scan", "read_csv", "read_csv_auto":
		return b.fileTable(t)
	default:
		return nil, nil, b.errorf(t, "table function %s does not exist (generate_series, range, unnest, json_array_elements, json_each, json_object_keys, read_parquet and read_csv do)", name)
	}
	if len(t.Args) < lo || len(t.Args) > hi {
		return nil, nil, b.errorf(t, "%s takes %d to %d arguments, got %d", name, lo, hi, len(t.Args))
	}
	if name == "generate_series" && refsColumn(t.Args) {
		// Arguments over columns of an enclosing query or of the items
		// before it: the series of each of their rows.
		return b.seriesOver(t, s, left)
	}
	if name == "generate_series" {
		if p, items, ok, err := b.timeSeries(t); ok || err != nil {
			return p, items, err
		}
	}
	var vals []int64
	null := false
	for _, a := range t.Args {
		e, err := b.expr(a, &scope{}, &exprCtx{clause: "FROM"})
		if err != nil {
			return nil, nil, err
		}
		k, ok, err := plan.FoldToConst(plan.ResolveUntyped(e, plan.TypInt64))
		if err != nil {
			return nil, nil, b.errorf(a, "%v", err)
		}
		if !ok || (!plan.IsInteger(k.Typ) && !k.IsNull()) {
			return nil, nil, b.errorf(a, "the arguments of %s must be integer constants", name)
		}
		if k.IsNull() {
			null = true
			vals = append(vals, 0)
			continue
		}
		vals = append(vals, plan.ConstInt(k))
	}
	if name == "range" && len(vals) == 1 {
		vals = []int64{0, vals[0]}
	}
	start, stop, step := vals[0], vals[1], int64(1)
	if len(vals) == 3 {
		step = vals[2]
	}
	if step == 0 {
		return nil, nil, b.errorf(t, "step size cannot equal zero")
	}
	if name == "range" {
		// Exclusive: the last value is one step short of stop.
		switch {
		case step > 0 && stop == math.MinInt64, step < 0 && stop == math.MaxInt64:
			null = true
		case step > 0:
			stop--
		default:
			stop++
		}
	}
	if null {
		start, stop, step = 1, 0, 1
	}
	col, alias := name, name
	var aliasCols []sql.Ident
	if t.Alias != nil {
		alias, aliasCols = t.Alias.Name.Name, t.Alias.Columns
		if len(aliasCols) == 0 {
			col = alias
		}
	}
	node := &plan.SeriesNode{Start: start, Stop: stop, Step: step, Col: b.newCol(col, alias, plan.TypInt64, false)}
	it, err := b.aliasItem(node.Columns(), []string{col}, alias, aliasCols, t, "function "+name)
	if err != nil {
		return nil, nil, err
	}
	node.Col.Name = it.cols[0].Name
	return node, []*scopeItem{it}, nil
}

// timeSeries binds generate_series(start, stop, step) over dates or
// timestamps (ok false for other arguments): start, start + step, ...
// while not past stop, stop included, as PostgreSQL's. Dates are read as
// TIMESTAMPTZ, as PostgreSQL resolves them; a TIMESTAMP pair gives
// TIMESTAMP. The k-th value is start + step * k (an integer series k
// filtered at stop), which is PostgreSQL's step-by-step sum except after a
// month's end (January 31 + 1 month is February 29, and PostgreSQL's next
// one March 29), so a step with months from a day after the 28th is
// refused.
func (b *binder) timeSeries(t *sql.TableFunc) (plan.Plan, []*scopeItem, bool, error) {
	if len(t.Args) < 2 {
		return nil, nil, false, nil
	}
	args := make([]plan.Expr, len(t.Args))
	tz := false
	for i, a := range t.Args {
		e, err := b.expr(a, &scope{}, &exprCtx{clause: "FROM"})
		if err != nil {
			return nil, nil, false, err
		}
		args[i] = e
		if i < 2 {
			switch et := e.Type(); {
			case plan.IsDate(et):
				tz = true
			case plan.IsTimestamp(et):
				tz = tz || expr.HasZone(et)
			default:
				return nil, nil, false, nil
			}
		}
	}
	if len(args) != 3 {
		return nil, nil, true, b.errorf(t, "generate_series over dates and timestamps takes a step: generate_series(start, stop, interval '1 day')")
	}
	typ := plan.TypTimestamp
	if tz {
		typ = plan.TypTimestampTZ
	}
	var consts [3]*plan.Const
	for i, e := range args {
		want := typ
		if i == 2 {
			want = plan.TypInterval
		}
		e = plan.ResolveUntyped(e, want)
		if !arrow.TypeEqual(e.Type(), want) {
			if i == 2 && !plan.IsInterval(e.Type()) {
				return nil, nil, true, b.errorf(t.Args[i], "the step of generate_series over timestamps must be an interval, not %s", plan.TypeString(e.Type()))
			}
			e = &plan.CastExpr{Zone: b.zone, X: e, Typ: want}
		}
		k, ok, err := plan.FoldToConst(e)
		if err != nil {
			return nil, nil, true, b.errorf(t.Args[i], "%v", err)
		}
		if !ok {
			return nil, nil, true, b.errorf(t.Args[i], "the arguments of generate_series must be constants")
		}
		consts[i] = k
	}
	col, alias := "generate_series", "generate_series"
	var aliasCols []sql.Ident
	if t.Alias != nil {
		alias, aliasCols = t.Alias.Name.Name, t.Alias.Columns
		if len(aliasCols) == 0 {
			col = alias
		}
	}
	// The number of steps: at most the span over the shortest a step can
	// be (a month of 28 days, a day of 23 hours across a DST change).
	var n int64
	descending := false
	if !consts[0].IsNull() && !consts[1].IsNull() && !consts[2].IsNull() {
		iv := consts[2].Val.(arrow.MonthDayNanoInterval)
		const day = int64(86_400_000_000)
		us := iv.Nanoseconds / 1000
		pos := iv.Months >= 0 && iv.Days >= 0 && us >= 0
		neg := iv.Months <= 0 && iv.Days <= 0 && us <= 0
		if pos == neg { // zero, or of mixed signs
			if pos {
				return nil, nil, true, b.errorf(t.Args[2], "step size cannot equal zero")
			}
			return nil, nil, true, b.errorf(t.Args[2], "generate_series: a step whose parts have different signs is not supported")
		}
		abs := func(x int64) int64 { return max(x, -x) }
		shortest := abs(int64(iv.Months))*28*day + abs(int64(iv.Days))*(day-3_600_000_000) + abs(us)
		start, stop := int64(consts[0].Val.(arrow.Timestamp)), int64(consts[1].Val.(arrow.Timestamp))
		if iv.Months != 0 {
			at := time.UnixMicro(start).UTC()
			if tz {
				at = time.UnixMicro(start).In(b.local.Location())
			}
			if at.Day() > 28 {
				return nil, nil, true, b.errorf(t.Args[0], "generate_series by months from day %d of a month is not supported (PostgreSQL clamps each step at the month's end)", at.Day())
			}
		}
		span := stop - start
		if neg {
			span, descending = -span, true
		}
		if span >= 0 {
			n = span/shortest + 2
		}
		if n > 100_000_000 {
			return nil, nil, true, b.errorf(t, "generate_series: more than 100,000,000 values")
		}
	}
	k := b.newCol("k", "", plan.TypInt64, false)
	series := &plan.SeriesNode{Start: 0, Stop: n - 1, Step: 1, Col: k}
	step := b.newCall(plan.FnMul, plan.TypInterval, consts[2], plan.NewColRef(k))
	value := b.newCall(plan.FnAdd, typ, consts[0], step)
	vcol := b.newCol(col, alias, typ, false)
	it, err := b.aliasItem([]plan.Column{vcol}, []string{col}, alias, aliasCols, t, "function generate_series")
	if err != nil {
		return nil, nil, true, err
	}
	vcol.Name = it.cols[0].Name
	it.cols[0] = vcol
	var p plan.Plan = &plan.ProjectNode{Input: series, Exprs: []plan.Expr{value}, Cols: []plan.Column{vcol}}
	cmp := plan.FnLe
	if descending {
		cmp = plan.FnGe
	}
	p = &plan.FilterNode{Input: p, Cond: b.newCall(cmp, plan.TypBool, plan.NewColRef(vcol), consts[1])}
	return p, []*scopeItem{it}, true, nil
}

// fileTable binds FROM 'path' and read_parquet('pattern'): the Parquet
// files a path, directory or glob names, scanned as a table. The table is
// called after the file without its extension (FROM 'data/t.parquet' is
// t), unless aliased.
func (b *binder) fileTable(t *sql.TableFunc) (plan.Plan, []*scopeItem, error) {
	name := t.Name.Name
	if len(t.Args) == 0 {
		return nil, nil, b.errorf(t, "%s takes a file name or pattern", name)
	}
	e, err := b.expr(t.Args[0], &scope{}, &exprCtx{clause: "FROM"})
	if err != nil {
		return nil, nil, err
	}
	k, ok, err := plan.FoldToConst(e)
	if err != nil || !ok || !plan.IsString(k.Typ) || k.IsNull() {
		return nil, nil, b.errorf(t.Args[0], "the file of %s must be a string constant", name)
	}
	pattern := k.Val.(string)
	lower := strings.ToLower(pattern)
	for _, z := range []string{".gz", ".zst", ".zstd"} {
		lower = strings.TrimSuffix(lower, z) // compressed CSV: read through
	}
	if fc, ok := b.cat.(plan.FileAccessChecker); ok {
		// NB: before the file is looked at (os.Stat below): a refused path
		// gets the same answer whether it exists or not.
		if err := fc.CheckFile(pattern); err != nil {
			return nil, nil, err
		}
	}
	var fo plan.FileOptions
	switch {
	case name == "read_csv" || name == "read_csv_auto":
		fo.Format = "csv"
	case name != sql.FileTableFunc:
	case strings.HasSuffix(lower, ".csv") || strings.HasSuffix(lower, ".tsv") || strings.HasSuffix(lower, ".txt"):
		fo.Format = "csv"
	case !strings.HasSuffix(lower, ".parquet"):
		if st, err := os.Stat(pattern); err != nil || !st.IsDir() {
			return nil, nil, b.errorf(t, "cannot tell the format of %q: name a .parquet or .csv file, or use read_parquet or read_csv", pattern)
		}
	}
	if fo.Format != "csv" && lower != strings.ToLower(pattern) {
		return nil, nil, b.errorf(t.Args[0], "compressed files are read as CSV only (%s); Parquet compresses its pages itself", pattern)
	}
	if err := b.fileOptions(t, &fo); err != nil {
		return nil, nil, err
	}
	fc, ok := b.cat.(plan.FileCatalog)
	if !ok {
		return nil, nil, b.errorf(t, "this catalog cannot read files")
	}
	tab, err := fc.LookupFiles(pattern, fo)
	if err != nil {
		if nferr.Is(err, nferr.KindQuery) {
			return nil, nil, b.errorf(t.Args[0], "%v", err)
		}
		return nil, nil, err
	}
	alias := strings.TrimSuffix(filepath.Base(pattern), filepath.Ext(pattern))
	var aliasCols []sql.Ident
	if t.Alias != nil {
		alias, aliasCols = t.Alias.Name.Name, t.Alias.Columns
	}
	return b.scanTable(tab, alias, aliasCols, t, "file "+pattern)
}

// scanTable reads every column of tab under alias (the alias's column
// list renaming them).
func (b *binder) scanTable(tab *plan.TableDef, alias string, aliasCols []sql.Ident, at sql.Node, what string) (plan.Plan, []*scopeItem, error) {
	fields := tab.Schema.Fields()
	scan := &plan.ScanNode{Table: tab, Alias: alias, Cols: make([]plan.Column, len(fields)), Fields: make([]int, len(fields))}
	names := make([]string, len(fields))
	for i, f := range fields {
		scan.Cols[i] = b.newCol(f.Name, alias, f.Type, f.Nullable)
		scan.Fields[i] = i
		names[i] = f.Name
	}
	it, err := b.aliasItem(scan.Cols, names, alias, aliasCols, at, what)
	if err != nil {
		return nil, nil, err
	}
	for i := range scan.Cols {
		scan.Cols[i].Name = it.cols[i].Name
	}
	it.unreadable = tab.Unreadable
	return scan, []*scopeItem{it}, nil
}

// fileOptions reads a file function's named options (name = constant):
// read_csv's header, delim (sep, delimiter) and nullstr (null).
func (b *binder) fileOptions(t *sql.TableFunc, fo *plan.FileOptions) error {
	for _, a := range t.Args[1:] {
		be, ok := a.(*sql.BinaryExpr)
		var ref *sql.ColumnRef
		if ok && be.Op == "=" {
			ref, ok = be.L.(*sql.ColumnRef)
		}
		if !ok || len(ref.Parts) != 1 {
			return b.errorf(a, "options of %s are name = value", t.Name.Name)
		}
		if st, isStruct := be.R.(*sql.StructLit); isStruct && strings.EqualFold(ref.Parts[0].Name, "columns") && fo.Format == "csv" {
			if err := b.csvColumns(st, fo); err != nil {
				return err
			}
			continue
		}
		v, err := b.expr(be.R, &scope{}, &exprCtx{clause: "FROM"})
		if err != nil {
			return err
		}
		c, ok, err := plan.FoldToConst(v)
		if err != nil || !ok || c.IsNull() {
			return b.errorf(be.R, "the value of option %s must be a constant", ref.Parts[0].Name)
		}
		opt := strings.ToLower(ref.Parts[0].Name)
		if fo.Format != "csv" {
			return b.errorf(a, "%s takes no option %s", t.Name.Name, opt)
		}
		switch opt {
		case "header":
			h, ok := c.Val.(bool)
			if !ok {
				return b.errorf(be.R, "option header takes true or false")
			}
			fo.Header = &h
		case "delim", "sep", "delimiter":
			s, ok := c.Val.(string)
			if s == `\t` {
				s = "\t"
			}
			if !ok || len(s) != 1 || s[0] == '"' || s[0] == '\n' || s[0] == '\r' {
				return b.errorf(be.R, "option %s takes one ASCII character other than a quote or a line break", opt)
			}
			fo.Delimiter = s[0]
		case "nullstr", "null":
			s, ok := c.Val.(string)
			if !ok {
				return b.errorf(be.R, "option %s takes a string", opt)
			}
			fo.Null = s
		case "quote":
			s, ok := c.Val.(string)
			if !ok || len(s) != 1 || s[0] == '\n' || s[0] == '\r' || s[0] == fo.Delimiter {
				return b.errorf(be.R, "option quote takes one ASCII character other than a line break or the delimiter")
			}
			fo.Quote = s[0]
		default:
			return b.errorf(a, "unknown option %s of %s (want header, delim, nullstr, quote or columns)", opt, t.Name.Name)
		}
	}
	return nil
}

// csvColumns reads read_csv's columns = {'name': 'TYPE', ...}: the
// columns in order, typed as CAST would type them.
func (b *binder) csvColumns(st *sql.StructLit, fo *plan.FileOptions) error {
	if len(st.Names) == 0 {
		return b.errorf(st, "option columns names no column")
	}
	seen := map[string]bool{}
	for i, n := range st.Names {
		lit, ok := st.Values[i].(*sql.Literal)
		if !ok || lit.Kind != sql.LitString {
			return b.errorf(st.Values[i], "the type of column %s must be a string such as 'INTEGER'", n)
		}
		e, err := sql.ParseExpr("CAST(NULL AS " + lit.Text + ")")
		cast, isCast := e.(*sql.Cast)
		if err != nil || !isCast {
			return b.errorf(st.Values[i], "column %s: %q is not a type name", n, lit.Text)
		}
		typ, err := b.typeOf(cast.Type)
		if err != nil {
			// NB: the position is in the synthetic CAST; the value's is
			// the one that helps.
			msg := err.Error()
			if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
				msg = rest
			}
			return b.errorf(st.Values[i], "column %s: %s", n, msg)
		}
		if seen[strings.ToLower(n)] {
			return b.errorf(st, "column %s appears twice in option columns", n)
		}
		seen[strings.ToLower(n)] = true
		fo.Columns = append(fo.Columns, plan.FileColumn{Name: n, Type: typ})
	}
	return nil
}

// aliasItem names the columns of a relation for its scope item, applying
// an alias column list.
func (b *binder) aliasItem(cols []plan.Column, names []string, alias string, aliasCols []sql.Ident, at sql.Node, what string) (*scopeItem, error) {
	if len(aliasCols) > len(cols) {
		return nil, b.errorf(aliasCols[len(cols)], "%s has %d columns available but %d column aliases were given", strings.TrimSpace(what), len(cols), len(aliasCols))
	}
	it := &scopeItem{name: alias, cols: make([]plan.Column, len(cols))}
	for i, c := range cols {
		c.Name = names[i]
		if i < len(aliasCols) {
			c.Name = aliasCols[i].Name
		}
		c.Table = alias
		it.cols[i] = c
	}
	return it, nil
}

func (b *binder) tableName(t *sql.TableName, s *scope) (plan.Plan, []*scopeItem, error) {
	var alias string
	var aliasCols []sql.Ident
	if t.Alias != nil {
		alias, aliasCols = t.Alias.Name.Name, t.Alias.Columns
	}
	// CTEs first (an unqualified name), then views, then tables.
	if len(t.Name.Parts) == 1 {
		if c := s.lookupCTE(t.Name.Parts[0].Name); c != nil {
			if alias == "" {
				alias = t.Name.Parts[0].Name
			}
			var scan plan.Plan
			if c.work != nil {
				ws := &plan.WorkScan{Work: c.work, Cols: make([]plan.Column, len(c.workCols))}
				for i, wc := range c.workCols {
					ws.Cols[i] = b.newCol(c.names[i], alias, wc.Type, wc.Nullable)
				}
				scan = ws
			} else {
				scan = b.sharedScan(c.def, c.names, alias)
			}
			it, err := b.aliasItem(scan.Columns(), c.names, alias, aliasCols, t, alias)
			if err != nil {
				return nil, nil, err
			}
			return scan, []*scopeItem{it}, nil
		}
	}
	name, err := b.objName(t.Name)
	if err != nil {
		return nil, nil, err
	}
	if alias == "" {
		alias = name
	}
	tab, err := b.cat.LookupTable(name)
	if err != nil {
		return nil, nil, err
	}
	if tab != nil {
		return b.scanTable(tab, alias, aliasCols, t, "table "+name)
	}
	v, err := b.cat.LookupView(name)
	if err != nil {
		return nil, nil, err
	}
	if v == nil {
		return nil, nil, b.errorf(t.Name, "relation %q does not exist", name)
	}
	def, names, err := b.viewDef(v, t.Name)
	if err != nil {
		return nil, nil, err
	}
	scan := b.sharedScan(def, names, alias)
	it, err := b.aliasItem(scan.Cols, names, alias, aliasCols, t, "view "+name)
	if err != nil {
		return nil, nil, err
	}
	return scan, []*scopeItem{it}, nil
}

// sharedScan reads def with fresh column IDs.
func (b *binder) sharedScan(def *plan.SharedDef, names []string, alias string) *plan.SharedScan {
	in := def.Plan.Columns()
	sc := &plan.SharedScan{Def: def, Cols: make([]plan.Column, len(in))}
	for i, c := range in {
		sc.Cols[i] = b.newCol(names[i], alias, c.Type, c.Nullable)
	}
	return sc
}

// viewDef binds a view once per statement.
func (b *binder) viewDef(v *plan.ViewDef, at sql.Node) (*plan.SharedDef, []string, error) {
	if def, ok := b.views[v.Name]; ok {
		return def, viewNames(def, v), nil
	}
	q, err := b.bindViewQuery(v, at)
	if err != nil {
		return nil, nil, err
	}
	b.nextDef++
	def := &plan.SharedDef{ID: b.nextDef, Name: v.Name, Plan: q.Plan}
	b.views[v.Name] = def
	return def, q.Names, nil
}

func viewNames(def *plan.SharedDef, v *plan.ViewDef) []string {
	cols := def.Plan.Columns()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
		if i < len(v.Columns) {
			names[i] = v.Columns[i]
		}
	}
	return names
}

// bindViewQuery parses and binds a view's SQL in a fresh top-level scope.
func (b *binder) bindViewQuery(v *plan.ViewDef, at sql.Node) (*QueryStmt, error) {
	for _, n := range b.viewStack {
		if n == v.Name {
			return nil, b.errorf(at, "view %s refers to itself", v.Name)
		}
	}
	if len(b.viewStack) >= maxViewDepth {
		return nil, b.errorf(at, "views nested more than %d deep", maxViewDepth)
	}
	st, err := sql.ParseOne(v.SQL)
	if err != nil {
		return nil, b.errorf(at, "view %s has invalid SQL: %v", v.Name, err)
	}
	q, ok := st.(*sql.Query)
	if !ok {
		return nil, b.errorf(at, "view %s is not a query", v.Name)
	}
	savedSrc, savedName := b.src, b.srcName
	b.src, b.srcName = v.SQL, "view "+v.Name
	b.viewStack = append(b.viewStack, v.Name)
	lp, names, err := b.query(q, nil)
	b.viewStack = b.viewStack[:len(b.viewStack)-1]
	b.src, b.srcName = savedSrc, savedName
	if err != nil {
		return nil, err
	}
	if len(v.Columns) > len(names) {
		return nil, b.errorf(at, "view %s has %d columns but %d column names", v.Name, len(names), len(v.Columns))
	}
	names = append([]string(nil), names...)
	copy(names, v.Columns)
	// Rename the plan's output columns so that every reader sees the
	// view's names.
	cols := lp.Columns()
	exprs := make([]plan.Expr, len(cols))
	out := make([]plan.Column, len(cols))
	for i, c := range cols {
		exprs[i] = plan.NewColRef(c)
		out[i] = c
		out[i].Name, out[i].Table = names[i], v.Name
	}
	return &QueryStmt{Plan: &plan.ProjectNode{Input: lp, Exprs: exprs, Cols: out}, Names: names}, nil
}

// join binds an explicit JOIN.
func (b *binder) join(j *sql.Join, s *scope, left []*scopeItem) (plan.Plan, []*scopeItem, error) {
	lp, litems, err := b.tableExpr(j.Left, s, left)
	if err != nil {
		return nil, nil, err
	}
	rp, ritems, err := b.tableExpr(j.Right, s, append(append([]*scopeItem(nil), left...), litems...))
	if err != nil {
		return nil, nil, err
	}
	// The ON condition sees both sides (and enclosing queries).
	js := &scope{parent: s.parent, ctes: s.ctes}
	if err := b.addItems(js, litems, j.Left); err != nil {
		return nil, nil, err
	}
	if err := b.addItems(js, ritems, j.Right); err != nil {
		return nil, nil, err
	}
	kind := map[sql.JoinKind]plan.JoinKind{sql.InnerJoin: plan.JoinInner, sql.LeftJoin: plan.JoinLeft, sql.RightJoin: plan.JoinRight, sql.FullJoin: plan.JoinFull, sql.CrossJoin: plan.JoinInner}[j.Kind]
	node := &plan.JoinNode{Kind: kind, Left: lp, Right: rp, Lateral: lateralRefs(lp, rp)}
	if node.Lateral && kind != plan.JoinInner && kind != plan.JoinLeft {
		return nil, nil, b.errorf(j.Right, "the combining JOIN type must be INNER or LEFT for a LATERAL reference")
	}
	items := append(append([]*scopeItem(nil), litems...), ritems...)
	switch {
	case j.On != nil:
		b.markFilterIns(j.On)
		cond, err := b.expr(j.On, js, &exprCtx{clause: "JOIN/ON"})
		if err != nil {
			return nil, nil, err
		}
		if cond, err = b.boolCheck(cond, j.On, "JOIN/ON"); err != nil {
			return nil, nil, err
		}
		node.Cond = cond
	case j.Natural && len(naturalColumns(litems, ritems, j.Pos)) == 0:
		// NATURAL JOIN without a common column: a cross join.
	case j.Using != nil || j.Natural:
		using := j.Using
		if j.Natural {
			using = naturalColumns(litems, ritems, j.Pos)
		}
		// USING (x): the join condition l.x = r.x, and one merged column x
		// that unqualified names and * see first (PostgreSQL's order): the
		// left copy for inner and left joins, the right copy for right
		// joins, COALESCE(l.x, r.x) for full joins (and when the two
		// copies' types differ, the common type).
		var conds, computed []plan.Expr
		var merged, computedCols []plan.Column
		for _, u := range using {
			lc, li, err := findUsing(litems, u.Name)
			if err != nil || li == nil {
				return nil, nil, b.errorf(u, "column %q specified in USING clause does not exist in left table", u.Name)
			}
			rc, ri, err := findUsing(ritems, u.Name)
			if err != nil || ri == nil {
				return nil, nil, b.errorf(u, "column %q specified in USING clause does not exist in right table", u.Name)
			}
			t, ok := plan.CommonType(lc.Type, rc.Type)
			if !ok {
				return nil, nil, b.errorf(u, "JOIN/USING types %s and %s for column %q cannot be matched", plan.TypeString(lc.Type), plan.TypeString(rc.Type), u.Name)
			}
			le, _ := b.coerce(plan.NewColRef(lc), t)
			re, _ := b.coerce(plan.NewColRef(rc), t)
			conds = append(conds, b.newCall(plan.FnEq, plan.TypBool, le, re))
			markHidden(li, lc.ID)
			markHidden(ri, rc.ID)
			var m plan.Column
			switch {
			case kind == plan.JoinFull:
				m = b.newCol(u.Name, "", t, lc.Nullable || rc.Nullable)
				computed = append(computed, b.newCall(plan.FnCoalesce, t, le, re))
				computedCols = append(computedCols, m)
			case kind == plan.JoinRight && arrow.TypeEqual(rc.Type, t):
				m = rc
			case kind != plan.JoinRight && arrow.TypeEqual(lc.Type, t):
				m = lc
			default:
				src := le
				if kind == plan.JoinRight {
					src = re
				}
				m = b.newCol(u.Name, "", t, true)
				computed = append(computed, src)
				computedCols = append(computedCols, m)
			}
			m.Name, m.Table = u.Name, ""
			merged = append(merged, m)
		}
		node.Cond = plan.AndOf(conds)
		items = append([]*scopeItem{{cols: merged}}, items...)
		if len(computed) > 0 {
			in := node.Columns()
			exprs := make([]plan.Expr, 0, len(in)+len(computed))
			for _, c := range in {
				exprs = append(exprs, plan.NewColRef(c))
			}
			exprs = append(exprs, computed...)
			return &plan.ProjectNode{Input: node, Exprs: exprs, Cols: append(append([]plan.Column(nil), in...), computedCols...)}, items, nil
		}
	}
	return node, items, nil
}

// lateralScope is the scope a LATERAL entry of s's FROM clause binds in:
// the items before it (left), then the enclosing queries.
func lateralScope(s *scope, left []*scopeItem) *scope {
	return &scope{parent: s.parent, ctes: s.ctes, items: left}
}

// lateralRefs reports whether right reads columns that left produces (a
// LATERAL reference).
func lateralRefs(left, right plan.Plan) bool {
	return plan.FreeCols(right).Intersects(plan.ColSetOf(left.Columns()))
}

// naturalColumns are the names NATURAL JOIN joins on: those that a visible
// column of each side has, in the left side's order.
func naturalColumns(litems, ritems []*scopeItem, pos sql.Pos) []sql.Ident {
	var out []sql.Ident
	seen := map[string]bool{}
	for _, it := range litems {
		for i, c := range it.cols {
			if (it.hidden != nil && it.hidden[i]) || seen[c.Name] {
				continue
			}
			seen[c.Name] = true
			if _, ri, err := findUsing(ritems, c.Name); err == nil && ri != nil {
				out = append(out, sql.Ident{Pos: pos, Name: c.Name})
			}
		}
	}
	return out
}

func findUsing(items []*scopeItem, name string) (plan.Column, *scopeItem, error) {
	var found *scopeItem
	var col plan.Column
	for _, it := range items {
		for i, c := range it.cols {
			if c.Name == name && (it.hidden == nil || !it.hidden[i]) {
				if found != nil {
					return plan.Column{}, nil, errAmbiguous
				}
				found, col = it, c
			}
		}
	}
	return col, found, nil
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errAmbiguous = constErr("ambiguous")

func markHidden(it *scopeItem, id plan.ColumnID) {
	if it.hidden == nil {
		it.hidden = make([]bool, len(it.cols))
	}
	for i, c := range it.cols {
		if c.ID == id {
			it.hidden[i] = true
		}
	}
}
