package bind

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
)

// Set-returning functions over arrays (plan.UnnestNode): unnest(a) and
// generate_subscripts(a, 1) as select-list items, and unnest(a [, b ...])
// [WITH ORDINALITY] in FROM, as PostgreSQL runs them. In a select list
// they run in lockstep: each row of FROM (after WHERE) once per position
// of its longest array, a shorter array's values NULL past its end (no
// row for a row whose arrays are all empty or NULL).

// isArraySRF reports unnest, generate_subscripts and
// information_schema._pg_expandarray (records (x, n): an element and its
// position from 1, as PostgreSQL's; a record is its two fields as columns
// "name.x" and "name.n", read as (name).x).
func isArraySRF(name string) bool {
	_, isJSON := jsonSRFs[name]
	return name == "unnest" || name == "generate_subscripts" || name == "_pg_expandarray" || isJSON
}

// jsonSRF is one of PostgreSQL's JSON set-returning functions as arrays
// to unnest in lockstep (exec/expr's JSON lists): fns the arrays' functions,
// cols their columns' names ("": named after the function, or a lone
// column after its alias).
type jsonSRF struct{ fns, cols []string }

var jsonSRFs = map[string]jsonSRF{}

func init() {
	for _, p := range []string{"json", "jsonb"} {
		jsonSRFs[p+"_array_elements"] = jsonSRF{[]string{expr.FnJSONElems}, []string{"value"}}
		jsonSRFs[p+"_array_elements_text"] = jsonSRF{[]string{expr.FnJSONElemsText}, []string{"value"}}
		jsonSRFs[p+"_each"] = jsonSRF{[]string{expr.FnJSONKeys, expr.FnJSONValues}, []string{"key", "value"}}
		jsonSRFs[p+"_each_text"] = jsonSRF{[]string{expr.FnJSONKeys, expr.FnJSONValuesText}, []string{"key", "value"}}
		jsonSRFs[p+"_object_keys"] = jsonSRF{[]string{expr.FnJSONKeys}, []string{""}}
	}
}

// jsonArrays binds the argument of the JSON set-returning function f
// (called name) and returns its arrays.
func (b *binder) jsonArrays(f jsonSRF, name string, args []sql.Expr, at sql.Node, s *scope, clause string) ([]plan.Expr, error) {
	if len(args) != 1 {
		return nil, b.errorf(at, "%s takes one json value", name)
	}
	j, err := b.expr(args[0], s, &exprCtx{clause: clause})
	if err != nil {
		return nil, err
	}
	j = plan.ResolveUntyped(j, plan.TypString)
	if t := j.Type(); !plan.IsString(t) && !plan.IsNullType(t) {
		return nil, b.errorf(args[0], "function %s(%s) does not exist: its argument must be json", name, plan.TypeString(t))
	}
	arrays := make([]plan.Expr, len(f.fns))
	for i, fn := range f.fns {
		arrays[i] = b.newCall(fn, plan.ArrayOf(plan.TypString), j, &plan.Const{Typ: plan.TypString, Val: name})
	}
	return arrays, nil
}

// jsonFrom binds a JSON set-returning function in FROM.
func (b *binder) jsonFrom(t *sql.TableFunc, f jsonSRF, s *scope, left []*scopeItem) (plan.Plan, []*scopeItem, error) {
	arrays, err := b.jsonArrays(f, t.Name.Name, t.Args, t, lateralScope(s, left), "FROM")
	if err != nil {
		return nil, nil, err
	}
	return b.unnestItem(t, arrays, f.cols)
}

// srfCall is an item's set-returning call: the item alone or cast
// (unnest(a)::text), or a field of _pg_expandarray's record.
func srfCall(e sql.Expr) *sql.FuncCall {
	if c, ok := e.(*sql.Cast); ok {
		e = c.X
	}
	if fs, ok := e.(*sql.FieldSelect); ok {
		if f, ok := fs.X.(*sql.FuncCall); ok && f.Name.Name == "_pg_expandarray" {
			e = f
		}
	}
	if f, ok := e.(*sql.FuncCall); ok && isArraySRF(f.Name.Name) && !f.Name.Quoted && f.Over == nil && !f.Star && !f.Distinct && f.Filter == nil {
		return f
	}
	return nil
}

// selectListUnnest binds the select list's unnest and generate_subscripts
// calls over lp (FROM and WHERE) as one UnnestNode, and returns sel with
// each call replaced by a reference to its column (in a hidden scope item
// of s).
func (b *binder) selectListUnnest(sel *sql.Select, q *sql.Query, s *scope, lp plan.Plan) (*sql.Select, plan.Plan, error) {
	var calls []int
	for i, it := range sel.Items {
		if srfCall(it.Expr) != nil {
			calls = append(calls, i)
		}
	}
	if len(calls) == 0 {
		return sel, lp, nil
	}
	first := srfCall(sel.Items[calls[0]].Expr)
	var orderBy []*sql.OrderItem
	if q != nil {
		orderBy = q.OrderBy
	}
	if len(sel.GroupBy) > 0 || sel.Having != nil || b.hasAggregate(sel.Items, orderBy) {
		return nil, nil, b.errorf(first, "%s in the select list of an aggregate query is not supported (call it in FROM)", first.Name.Name)
	}
	alias := fmt.Sprintf("unnest_%d", first.Pos.Offset)
	node := &plan.UnnestNode{Input: lp, Ord: b.newCol("ordinality", alias, plan.TypInt64, false)}
	it := &scopeItem{name: alias}
	c := *sel
	c.Items = append([]*sql.SelectItem(nil), sel.Items...)
	records := map[int][]*sql.SelectItem{} // a record item's two columns
	for k, i := range calls {
		f := srfCall(sel.Items[i].Expr)
		a, err := b.srfArray(f, s)
		if err != nil {
			return nil, nil, err
		}
		elem := b.newCol(fmt.Sprintf("e%d", k), alias, plan.ArrayElemType(a.Type()), true)
		sub := b.newCol(fmt.Sprintf("s%d", k), alias, plan.TypInt64, true)
		node.Arrays = append(node.Arrays, a)
		node.Elems = append(node.Elems, elem)
		node.Subs = append(node.Subs, sub)
		it.cols = append(it.cols, elem, sub)
		it.hidden = append(it.hidden, true, true)
		colRef := func(col string) *sql.ColumnRef {
			return &sql.ColumnRef{Pos: f.Pos, Parts: []sql.Ident{{Pos: f.Pos, Name: alias}, {Pos: f.Pos, Name: col}}}
		}
		if f.Name.Name == "_pg_expandarray" {
			if fs, ok := sel.Items[i].Expr.(*sql.FieldSelect); ok {
				// (f(a)).x is the element, (f(a)).n its position.
				var ref *sql.ColumnRef
				switch fs.Field.Name {
				case "x":
					ref = colRef(elem.Name)
				case "n":
					ref = colRef(node.Ord.Name)
				default:
					return nil, nil, b.errorf(fs, "record of _pg_expandarray has no field %q (x and n)", fs.Field.Name)
				}
				item := *sel.Items[i]
				item.Expr = ref
				if item.Alias == nil {
					item.Alias = &sql.Ident{Pos: f.Pos, Name: fs.Field.Name}
				}
				c.Items[i] = &item
				continue
			}
			if _, ok := sel.Items[i].Expr.(*sql.FuncCall); !ok {
				return nil, nil, b.errorf(sel.Items[i].Expr, "_pg_expandarray's record cannot be cast")
			}
			name := "_pg_expandarray"
			if a := sel.Items[i].Alias; a != nil {
				name = a.Name
			}
			records[i] = []*sql.SelectItem{
				{Pos: f.Pos, Expr: colRef(elem.Name), Alias: &sql.Ident{Pos: f.Pos, Name: name + ".x"}},
				{Pos: f.Pos, Expr: colRef(node.Ord.Name), Alias: &sql.Ident{Pos: f.Pos, Name: name + ".n"}},
			}
			continue
		}
		// The call becomes its column: the element, or its subscript.
		col := elem.Name
		if f.Name.Name == "generate_subscripts" {
			col = sub.Name
		}
		ref := colRef(col)
		item := *sel.Items[i]
		item.Expr = ref
		if cast, ok := sel.Items[i].Expr.(*sql.Cast); ok {
			cc := *cast
			cc.X = ref
			item.Expr = &cc
		}
		if item.Alias == nil {
			// PostgreSQL names the column after the function.
			item.Alias = &sql.Ident{Pos: f.Pos, Name: f.Name.Name}
		}
		c.Items[i] = &item
	}
	it.cols = append(it.cols, node.Ord)
	it.hidden = append(it.hidden, true)
	if len(records) > 0 {
		var items []*sql.SelectItem
		for i, item := range c.Items {
			if r, ok := records[i]; ok {
				items = append(items, r...)
			} else {
				items = append(items, item)
			}
		}
		c.Items = items
	}
	if err := b.addItems(s, []*scopeItem{it}, first); err != nil {
		return nil, nil, err
	}
	return &c, node, nil
}

// srfArray binds the array argument of unnest(a) or generate_subscripts(a,
// dim) in a select list (dim must be 1: nicflow's arrays have one
// dimension).
func (b *binder) srfArray(f *sql.FuncCall, s *scope) (plan.Expr, error) {
	name := f.Name.Name
	if js, ok := jsonSRFs[name]; ok {
		if len(js.fns) != 1 {
			return nil, b.errorf(f, "%s in the select list returns records, which nicflow does not output (call it in FROM: SELECT * FROM %s(...))", name, name)
		}
		arrays, err := b.jsonArrays(js, name, f.Args, f, s, "SELECT")
		if err != nil {
			return nil, err
		}
		return arrays[0], nil
	}
	switch {
	case name == "_pg_expandarray" && len(f.Args) != 1:
		return nil, b.errorf(f, "_pg_expandarray takes one array")
	case name == "unnest" && len(f.Args) != 1:
		return nil, b.errorf(f, "unnest in the select list takes one array (several need unnest(a, b, ...) in FROM)")
	case name == "generate_subscripts" && len(f.Args) == 3:
		return nil, b.errorf(f.Args[2], "generate_subscripts(a, dim, reverse) is not supported")
	case name == "generate_subscripts" && len(f.Args) != 2:
		return nil, b.errorf(f, "generate_subscripts takes an array and a dimension")
	}
	if name == "generate_subscripts" {
		d, err := b.expr(f.Args[1], s, &exprCtx{clause: "SELECT"})
		if err != nil {
			return nil, err
		}
		k, ok, err := plan.FoldToConst(plan.ResolveUntyped(d, plan.TypInt64))
		if err != nil || !ok || !plan.IsInteger(k.Typ) || plan.ConstInt(k) != 1 {
			return nil, b.errorf(f.Args[1], "generate_subscripts: the dimension must be the constant 1 (nicflow's arrays have one dimension)")
		}
	}
	return b.arrayArg(f.Args[0], name, s, "SELECT")
}

// arrayArg binds an argument that must be an array ('{...}' is text[]).
func (b *binder) arrayArg(x sql.Expr, fn string, s *scope, clause string) (plan.Expr, error) {
	a, err := b.expr(x, s, &exprCtx{clause: clause})
	if err != nil {
		return nil, err
	}
	if c, ok := a.(*plan.Const); ok && c.Untyped {
		a = plan.ResolveUntyped(a, plan.ArrayOf(plan.TypString))
	}
	if !plan.IsArray(a.Type()) {
		return nil, b.errorf(x, "function %s(%s) does not exist: its argument must be an array", fn, plan.TypeString(a.Type()))
	}
	return a, nil
}

// unnestFrom binds unnest(a [, b ...]) [WITH ORDINALITY] in FROM: one
// column per array (its elements, NULL past its end), then the ordinality
// when asked. The arrays may read columns of enclosing queries (a
// correlated subquery runs per row) and of the FROM items before it (left:
// a LATERAL join, as PostgreSQL binds functions in FROM).
func (b *binder) unnestFrom(t *sql.TableFunc, s *scope, left []*scopeItem) (plan.Plan, []*scopeItem, error) {
	if len(t.Args) == 0 {
		return nil, nil, b.errorf(t, "unnest takes at least one array")
	}
	outer := lateralScope(s, left)
	arrays := make([]plan.Expr, len(t.Args))
	for i, x := range t.Args {
		a, err := b.arrayArg(x, "unnest", outer, "FROM")
		if err != nil {
			return nil, nil, err
		}
		arrays[i] = a
	}
	return b.unnestItem(t, arrays, make([]string, len(arrays)))
}

// unnestItem is the FROM item of t that unnests arrays in lockstep, its
// columns named cols (an empty name: the function's, or the alias's for
// a lone column, as PostgreSQL names a function's unnamed result).
func (b *binder) unnestItem(t *sql.TableFunc, arrays []plan.Expr, colNames []string) (plan.Plan, []*scopeItem, error) {
	alias := t.Name.Name
	var aliasCols []sql.Ident
	if t.Alias != nil {
		alias, aliasCols = t.Alias.Name.Name, t.Alias.Columns
	}
	node := &plan.UnnestNode{Input: &plan.ValuesNode{Rows: [][]plan.Expr{{}}}, Ord: b.newCol("ordinality", alias, plan.TypInt64, false)}
	var cols []plan.Column
	var names []string
	for i, a := range arrays {
		name := colNames[i]
		if name == "" {
			name = t.Name.Name
			if len(arrays) == 1 && t.Alias != nil && len(aliasCols) == 0 {
				name = alias // PostgreSQL names a lone column after the alias
			}
		}
		elem := b.newCol(name, alias, plan.ArrayElemType(a.Type()), true)
		node.Arrays = append(node.Arrays, a)
		node.Elems = append(node.Elems, elem)
		node.Subs = append(node.Subs, b.newCol(fmt.Sprintf("s%d", i), alias, plan.TypInt64, true))
		cols, names = append(cols, elem), append(names, name)
	}
	if t.Ordinality {
		cols, names = append(cols, node.Ord), append(names, "ordinality")
	}
	it, err := b.aliasItem(cols, names, alias, aliasCols, t, "function "+t.Name.Name)
	if err != nil {
		return nil, nil, err
	}
	// Only the elements (and the ordinality) are the item's columns; the
	// node's other outputs are never named.
	for i := range node.Elems {
		node.Elems[i].Name = it.cols[i].Name
	}
	if t.Ordinality {
		node.Ord.Name = it.cols[len(it.cols)-1].Name
	}
	return node, []*scopeItem{it}, nil
}

// arraySubqueryExpr binds ARRAY(query): coalesce(the aggregate, '{}').
func (b *binder) arraySubqueryExpr(x *sql.ArraySubquery, s *scope, ctx *exprCtx) (plan.Expr, error) {
	e, err := b.expr(arraySubquery(x), s, ctx)
	if err != nil {
		return nil, err
	}
	empty := &plan.CastExpr{Zone: b.zone, X: &plan.Const{Typ: plan.TypString, Val: "{}"}, Typ: e.Type()}
	return b.newCall(plan.FnCoalesce, e.Type(), e, empty), nil
}

// arraySubquery rewrites ARRAY(query) as the scalar subquery that
// aggregates the query's one column with array_agg, in the query's ORDER
// BY: (SELECT array_agg(t.v ORDER BY t.o1, ...) FROM (query with its ORDER
// BY expressions as more columns) AS t(v, o1, ...)); no row gives an
// empty array, as PostgreSQL's (arraySubqueryExpr).
func arraySubquery(x *sql.ArraySubquery) sql.Expr {
	pos := x.Pos
	id := func(name string) sql.Ident { return sql.Ident{Pos: pos, Name: name} }
	ref := func(name string) sql.Expr {
		return &sql.ColumnRef{Pos: pos, Parts: []sql.Ident{id("__array_t"), id(name)}}
	}
	inner := *x.Query
	alias := &sql.TableAlias{Pos: pos, Name: id("__array_t"), Columns: []sql.Ident{id("__array_v")}}
	agg := &sql.FuncCall{Pos: pos, Name: id("array_agg"), Args: []sql.Expr{ref("__array_v")}}
	if sel, ok := inner.Body.(*sql.Select); ok && len(inner.OrderBy) > 0 && len(sel.Items) > 0 {
		// The ORDER BY's expressions become columns (a position or an
		// output name stands for its item's expression).
		s := *sel
		s.Items = append([]*sql.SelectItem(nil), sel.Items...)
		for k, o := range inner.OrderBy {
			e := o.Expr
			if lit, ok := e.(*sql.Literal); ok && lit.Kind == sql.LitNumber {
				if n, err := strconv.Atoi(lit.Text); err == nil && n >= 1 && n <= len(sel.Items) {
					e = sel.Items[n-1].Expr
				}
			}
			if c, ok := e.(*sql.ColumnRef); ok && len(c.Parts) == 1 {
				for _, it := range sel.Items {
					if it.Alias != nil && it.Alias.Name == c.Parts[0].Name {
						e = it.Expr
					}
				}
			}
			name := fmt.Sprintf("__array_o%d", k)
			s.Items = append(s.Items, &sql.SelectItem{Pos: pos, Expr: e})
			alias.Columns = append(alias.Columns, id(name))
			agg.OrderBy = append(agg.OrderBy, &sql.OrderItem{Pos: o.Pos, Expr: ref(name), Desc: o.Desc, NullsFirst: o.NullsFirst})
		}
		inner.Body = &s
	} else if len(inner.OrderBy) > 0 {
		// A set operation's ORDER BY names its one column.
		for _, o := range inner.OrderBy {
			agg.OrderBy = append(agg.OrderBy, &sql.OrderItem{Pos: o.Pos, Expr: ref("__array_v"), Desc: o.Desc, NullsFirst: o.NullsFirst})
		}
	}
	outer := &sql.Select{Pos: pos, Items: []*sql.SelectItem{{Pos: pos, Expr: agg}},
		From: []sql.TableExpr{&sql.DerivedTable{Pos: pos, Query: &inner, Alias: alias}}}
	return &sql.Subquery{Pos: pos, Query: &sql.Query{Pos: pos, Body: outer}}
}

// seriesOver binds generate_series(start, stop [, step]) in FROM over
// integer expressions of enclosing queries' columns (in a correlated
// subquery, as psql's \d sends) or of the FROM items before it (left: a
// LATERAL join): the unnest of the series as an array (expr.FnIntSeries),
// computed for each row those columns come from.
func (b *binder) seriesOver(t *sql.TableFunc, s *scope, left []*scopeItem) (plan.Plan, []*scopeItem, error) {
	outer := lateralScope(s, left)
	var args []plan.Expr
	for _, a := range t.Args {
		e, err := b.expr(a, outer, &exprCtx{clause: "FROM"})
		if err != nil {
			return nil, nil, err
		}
		e = plan.ResolveUntyped(e, plan.TypInt64)
		if !plan.IsInteger(e.Type()) && !plan.IsNullType(e.Type()) {
			return nil, nil, b.errorf(a, "generate_series over %s is not supported (integers are; dates and timestamps take constants)", plan.TypeString(e.Type()))
		}
		if !arrow.TypeEqual(e.Type(), plan.TypInt64) {
			e = &plan.CastExpr{Zone: b.zone, X: e, Typ: plan.TypInt64}
		}
		args = append(args, e)
	}
	series := b.newCall(expr.FnIntSeries, plan.ArrayOf(plan.TypInt64), args...)
	col, alias := "generate_series", "generate_series"
	var aliasCols []sql.Ident
	if t.Alias != nil {
		alias, aliasCols = t.Alias.Name.Name, t.Alias.Columns
		if len(aliasCols) == 0 {
			col = alias
		}
	}
	node := &plan.UnnestNode{Input: &plan.ValuesNode{Rows: [][]plan.Expr{{}}}, Arrays: []plan.Expr{series},
		Elems: []plan.Column{b.newCol(col, alias, plan.TypInt64, true)}, Subs: []plan.Column{b.newCol("s0", alias, plan.TypInt64, true)},
		Ord: b.newCol("ordinality", alias, plan.TypInt64, false)}
	it, err := b.aliasItem(node.Elems, []string{col}, alias, aliasCols, t, "function generate_series")
	if err != nil {
		return nil, nil, err
	}
	node.Elems[0].Name = it.cols[0].Name
	return node, []*scopeItem{it}, nil
}

// refsColumn reports whether an expression of es names a column.
func refsColumn(es []sql.Expr) bool {
	found := false
	for _, e := range es {
		sql.Walk(e, func(n sql.Node) bool {
			if _, ok := n.(*sql.ColumnRef); ok {
				found = true
			}
			return !found
		})
	}
	return found
}
