package bind

import (
	"fmt"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/sql"
)

// aggCtx collects the GROUP BY keys and aggregates of one SELECT.
type aggCtx struct {
	groups    []plan.Expr
	groupCols []plan.Column
	groupKeys map[string]int
	aggs      []*plan.AggCall
	aggCols   []plan.Column
	aggKeys   map[string]int
	// input are the columns below the aggregate: a reference to one of
	// them above the aggregate must be a group key.
	input plan.ColSet
	// groupingFns are the grouping() calls (grouping.go).
	groupingFns []groupingFn
	// orderBy is the ORDER BY of the aggregates that take one (all the
	// same): the aggregate reads its input sorted so, in one stream.
	orderBy    []plan.SortKey
	orderByKey string
}

// winCtx collects the window functions of one SELECT.
type winCtx struct {
	calls []*plan.WindowCall
	cols  []plan.Column
	keys  map[string]int
	// named are the SELECT's WINDOW clause entries.
	named map[string]*sql.NamedWindow
}

// exprCtx says where an expression is bound and what it may contain.
type exprCtx struct {
	clause string // "WHERE", "SELECT", ... for messages
	agg    *aggCtx
	win    *winCtx
	// inAgg is set while binding an aggregate's argument.
	inAgg bool
}

// selectQuery binds a SELECT with, when q is non-nil, q's ORDER BY, LIMIT
// and OFFSET.
func (b *binder) selectQuery(sel *sql.Select, q *sql.Query, s *scope) (plan.Plan, []string, error) {
	sel, err := b.selectListSeries(sel, q)
	if err != nil {
		return nil, nil, err
	}
	lp, err := b.from(sel.From, s)
	if err != nil {
		return nil, nil, err
	}
	if sel.Where != nil {
		b.markFilterIns(sel.Where)
		cond, err := b.expr(sel.Where, s, &exprCtx{clause: "WHERE"})
		if err != nil {
			return nil, nil, err
		}
		if cond, err = b.boolCheck(cond, sel.Where, "WHERE"); err != nil {
			return nil, nil, err
		}
		lp = &plan.FilterNode{Input: lp, Cond: cond}
	}
	if sel, lp, err = b.selectListUnnest(sel, q, s, lp); err != nil {
		return nil, nil, err
	}

	// Aggregation: GROUP BY, HAVING or an aggregate call anywhere in the
	// select list or ORDER BY.
	var orderBy []*sql.OrderItem
	if q != nil {
		orderBy = q.OrderBy
	}
	grouped := len(sel.GroupBy) > 0 || sel.Having != nil || b.hasAggregate(sel.Items, orderBy)
	var groupingSets [][]int
	ctx := &exprCtx{clause: "SELECT", win: &winCtx{keys: map[string]int{}, named: map[string]*sql.NamedWindow{}}}
	for _, w := range sel.Windows {
		if _, dup := ctx.win.named[w.Name.Name]; dup {
			return nil, nil, b.errorf(w, "window %q is already defined", w.Name.Name)
		}
		ctx.win.named[w.Name.Name] = w
	}
	if grouped {
		ac := &aggCtx{groupKeys: map[string]int{}, aggKeys: map[string]int{}, input: plan.ColSetOf(lp.Columns())}
		// Columns of enclosing queries are constants here, never "ungrouped".
		if groupingSets, err = b.groupBy(sel, s, ac, lp.Columns()); err != nil {
			return nil, nil, err
		}
		ctx.agg = ac
	}

	// The select list.
	var exprs []plan.Expr
	var names []string
	for _, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok {
			cols, err := b.expandStar(st, s)
			if err != nil {
				return nil, nil, err
			}
			for _, c := range cols {
				e := plan.Expr(plan.NewColRef(c))
				if grouped {
					if e, err = b.aboveAgg(e, ctx.agg, it); err != nil {
						return nil, nil, err
					}
				}
				exprs = append(exprs, e)
				names = append(names, c.Name)
			}
			continue
		}
		e, err := b.expr(it.Expr, s, ctx)
		if c, ok := it.Expr.(*sql.Cast); ok && err == nil && c.Type.Name == "regclass" && !c.Type.Array && !grouped && refsColumn([]sql.Expr{c.X}) {
			// x::regclass as an output column prints as the relation's
			// name, as PostgreSQL's regclass output (the OID when no
			// relation has it); nicflow's regclass is otherwise an
			// integer.
			e, err = b.sqlFunction(&sql.FuncCall{Pos: c.Pos, Name: sql.Ident{Pos: c.Pos, Name: "regclass output"}, Args: []sql.Expr{c.X}},
				"coalesce((SELECT quote_ident(c.relname) FROM pg_catalog.pg_class c WHERE c.oid = CAST($1 AS INTEGER)), CAST($1 AS TEXT))", s, ctx)
		}
		if err != nil {
			return nil, nil, err
		}
		if grouped {
			if e, err = b.aboveAgg(e, ctx.agg, it.Expr); err != nil {
				return nil, nil, err
			}
		}
		exprs = append(exprs, e)
		names = append(names, itemName(it, e))
	}

	var having plan.Expr
	if sel.Having != nil {
		b.markFilterIns(sel.Having)
		hctx := &exprCtx{clause: "HAVING", agg: ctx.agg}
		h, err := b.expr(sel.Having, s, hctx)
		if err != nil {
			return nil, nil, err
		}
		if h, err = b.aboveAgg(h, ctx.agg, sel.Having); err != nil {
			return nil, nil, err
		}
		if h, err = b.boolCheck(h, sel.Having, "HAVING"); err != nil {
			return nil, nil, err
		}
		having = h
	}

	// ORDER BY: output names and positions first, then expressions over the
	// input (added as hidden columns).
	type orderRef struct {
		item *sql.OrderItem
		idx  int       // output column, or -1
		expr plan.Expr // when idx < 0
	}
	var orders []orderRef
	for _, o := range orderBy {
		idx, err := b.outputColumn(o.Expr, names, exprs)
		if err != nil {
			return nil, nil, err
		}
		if idx >= 0 {
			// NB: PostgreSQL prefers an output name to an input column of
			// the same name in ORDER BY.
			orders = append(orders, orderRef{item: o, idx: idx})
			continue
		}
		e, err := b.expr(o.Expr, s, ctx)
		if err != nil {
			return nil, nil, err
		}
		if grouped {
			if e, err = b.aboveAgg(e, ctx.agg, o.Expr); err != nil {
				return nil, nil, err
			}
		}
		orders = append(orders, orderRef{item: o, idx: -1, expr: e})
	}

	// DISTINCT ON (exprs): output names and positions, or expressions
	// over the input, as ORDER BY's.
	type onRef struct {
		idx  int
		expr plan.Expr
		at   sql.Expr
	}
	var ons []onRef
	for _, oe := range sel.DistinctOn {
		idx, err := b.outputColumn(oe, names, exprs)
		if err != nil {
			return nil, nil, err
		}
		if idx >= 0 {
			ons = append(ons, onRef{idx: idx, at: oe})
			continue
		}
		e, err := b.expr(oe, s, ctx)
		if err != nil {
			return nil, nil, err
		}
		if grouped {
			if e, err = b.aboveAgg(e, ctx.agg, oe); err != nil {
				return nil, nil, err
			}
		}
		ons = append(ons, onRef{idx: -1, expr: e, at: oe})
	}

	// Assemble: Aggregate, HAVING filter, Window, Project, Distinct, Sort,
	// Limit.
	if grouped {
		lp = b.aggregatePlan(lp, ctx.agg, groupingSets)
		if having != nil {
			lp = &plan.FilterNode{Input: lp, Cond: having}
		}
	}
	if len(ctx.win.calls) > 0 {
		lp = &plan.WindowNode{Input: lp, Funcs: ctx.win.calls, FuncCols: ctx.win.cols}
	}
	visible := len(exprs)
	projExprs := append([]plan.Expr(nil), exprs...)
	var keys []plan.SortKey
	for _, o := range orders {
		// An interval sorts by its span: a hidden column computed from it
		// (allowed under DISTINCT when the interval is selected).
		derived := false
		if o.idx >= 0 && plan.IsInterval(projExprs[o.idx].Type()) {
			o.idx, o.expr, derived = -1, projExprs[o.idx], true
		}
		if o.idx < 0 && plan.IsInterval(o.expr.Type()) {
			for _, pe := range projExprs[:visible] {
				derived = derived || plan.ExprEqual(pe, o.expr)
			}
			o.expr = b.newCall(expr.FnIntervalSpan, plan.DecimalType(38, 0), o.expr)
		}
		if o.idx >= 0 {
			keys = append(keys, sortKey(nil, o.item))
			keys[len(keys)-1].Expr = &outputRef{idx: o.idx}
			continue
		}
		found := -1
		for i, pe := range projExprs {
			if plan.ExprEqual(pe, o.expr) {
				found = i
				break
			}
		}
		if found < 0 {
			if sel.Distinct && !derived {
				return nil, nil, b.errorf(o.item, "for SELECT DISTINCT, ORDER BY expressions must appear in the select list")
			}
			found = len(projExprs)
			projExprs = append(projExprs, o.expr)
		}
		keys = append(keys, sortKey(nil, o.item))
		keys[len(keys)-1].Expr = &outputRef{idx: found}
	}
	// The DISTINCT ON expressions as projected columns (hidden when not
	// selected).
	onIdx := make([]int, len(ons))
	for i, o := range ons {
		if o.idx >= 0 {
			onIdx[i] = o.idx
			continue
		}
		onIdx[i] = -1
		for j, pe := range projExprs {
			if plan.ExprEqual(pe, o.expr) {
				onIdx[i] = j
				break
			}
		}
		if onIdx[i] < 0 {
			onIdx[i] = len(projExprs)
			projExprs = append(projExprs, o.expr)
		}
	}
	if len(ons) > 0 && len(keys) > 0 {
		// PostgreSQL's rule: the leading ORDER BY keys are the DISTINCT
		// ON expressions (in any order), so that "first" is defined by
		// the rest.
		on := map[int]bool{}
		for _, i := range onIdx {
			on[i] = true
		}
		for i := 0; i < min(len(onIdx), len(keys)); i++ {
			if !on[keys[i].Expr.(*outputRef).idx] {
				return nil, nil, b.errorf(ons[0].at, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
			}
		}
	}
	if len(keys) > 0 || sel.Distinct || len(ons) > 0 {
		// An untyped NULL in the select list is text, as PostgreSQL
		// resolves it, so that the sort or DISTINCT above carries it
		// (pgjdbc's getTables sorts a SELECT NULL AS TABLE_CAT).
		for i, e := range projExprs {
			if k, ok := e.(*plan.Const); ok && plan.IsNullType(k.Typ) {
				projExprs[i] = &plan.Const{Typ: plan.TypString}
			}
		}
	}
	inCols := lp.Columns()
	projCols := make([]plan.Column, len(projExprs))
	for i, e := range projExprs {
		name := ""
		if i < visible {
			name = names[i]
		}
		if c, ok := e.(*plan.ColRef); ok && plan.ColSetOf(inCols).Has(c.ID) {
			col := plan.FindCol(inCols, c.ID)
			if name != "" && name != col.Name {
				col.Name, col.Table = name, ""
			}
			projCols[i] = col
			continue
		}
		projCols[i] = b.newCol(name, "", e.Type(), true)
		if k, ok := e.(*plan.Const); ok && !k.IsNull() {
			projCols[i].Nullable = false
		}
	}
	lp = &plan.ProjectNode{Input: lp, Exprs: projExprs, Cols: projCols}
	if sel.Distinct {
		lp = &plan.DistinctNode{Input: lp}
	}
	for i := range keys {
		keys[i].Expr = plan.NewColRef(projCols[keys[i].Expr.(*outputRef).idx])
	}
	if len(ons) > 0 {
		// DISTINCT ON: row_number() OVER (PARTITION BY the expressions
		// ORDER BY the ORDER BY keys) = 1, the first row of each group.
		rn := &plan.WindowCall{Fn: "row_number", OrderBy: append([]plan.SortKey(nil), keys...), Typ: plan.TypInt64}
		for _, i := range onIdx {
			rn.PartitionBy = append(rn.PartitionBy, plan.NewColRef(projCols[i]))
		}
		rnCol := b.newCol("row_number", "", plan.TypInt64, false)
		lp = &plan.WindowNode{Input: lp, Funcs: []*plan.WindowCall{rn}, FuncCols: []plan.Column{rnCol}}
		lp = &plan.FilterNode{Input: lp, Cond: b.newCall(plan.FnEq, plan.TypBool, plan.NewColRef(rnCol), &plan.Const{Typ: plan.TypInt64, Val: int64(1)})}
	}
	if len(keys) > 0 {
		lp = &plan.SortNode{Input: lp, Keys: keys}
	}
	if q != nil {
		if lp, err = b.limit(lp, q, s); err != nil {
			return nil, nil, err
		}
	}
	if len(projExprs) > visible || len(ons) > 0 {
		// Drop the hidden ORDER BY and DISTINCT ON columns (and
		// DISTINCT ON's row number).
		out := make([]plan.Expr, visible)
		for i := range out {
			out[i] = plan.NewColRef(projCols[i])
		}
		lp = &plan.ProjectNode{Input: lp, Exprs: out, Cols: projCols[:visible]}
	}
	return lp, names, nil
}

// selectListSeries reads generate_series(...) as a select-list item, as
// PostgreSQL runs a set-returning function there: each row of FROM once
// per value, that is FROM cross joined with the series (which
// generate_series in FROM binds: a function there sees the FROM items
// before it, so arguments over columns are a LATERAL join). One per
// SELECT, and not under aggregation (PostgreSQL's runs after it).
func (b *binder) selectListSeries(sel *sql.Select, q *sql.Query) (*sql.Select, error) {
	// The call, alone or cast (generate_series(...)::date).
	series := func(e sql.Expr) *sql.FuncCall {
		if c, ok := e.(*sql.Cast); ok {
			e = c.X
		}
		if f, ok := e.(*sql.FuncCall); ok && f.Name.Name == "generate_series" && !f.Name.Quoted && f.Over == nil && !f.Star && !f.Distinct && f.Filter == nil {
			return f
		}
		return nil
	}
	at := -1
	for i, it := range sel.Items {
		if f := series(it.Expr); f != nil {
			if at >= 0 {
				return nil, b.errorf(f, "only one generate_series in a select list is supported")
			}
			at = i
		}
	}
	if at < 0 {
		return sel, nil
	}
	f := series(sel.Items[at].Expr)
	var orderBy []*sql.OrderItem
	if q != nil {
		orderBy = q.OrderBy
	}
	if len(sel.GroupBy) > 0 || sel.Having != nil || b.hasAggregate(sel.Items, orderBy) {
		return nil, b.errorf(f, "generate_series in the select list of an aggregate query is not supported (call it in FROM)")
	}
	alias := fmt.Sprintf("generate_series_%d", f.Pos.Offset)
	name := sql.Ident{Pos: f.Pos, Name: "generate_series"}
	c := *sel
	c.Items = append([]*sql.SelectItem(nil), sel.Items...)
	it := *sel.Items[at]
	ref := &sql.ColumnRef{Pos: f.Pos, Parts: []sql.Ident{{Pos: f.Pos, Name: alias}, name}}
	it.Expr = ref
	if cast, ok := sel.Items[at].Expr.(*sql.Cast); ok {
		cc := *cast
		cc.X = ref
		it.Expr = &cc
	}
	c.Items[at] = &it
	tf := &sql.TableFunc{Pos: f.Pos, Name: f.Name, Args: f.Args, Alias: &sql.TableAlias{Pos: f.Pos, Name: sql.Ident{Pos: f.Pos, Name: alias}, Columns: []sql.Ident{name}}}
	c.From = append(append([]sql.TableExpr(nil), sel.From...), tf)
	return &c, nil
}

// outputRef is a placeholder for "output column idx" while a SELECT is
// assembled; it never leaves selectQuery.
type outputRef struct{ idx int }

func (*outputRef) Type() arrow.DataType { return nil }
func (*outputRef) String() string       { return "?" }
func (*outputRef) ExprNode()            {}

// itemName is the output name of a select item, as PostgreSQL names it:
// its alias, a column's name, a function's name, or ?column?.
func itemName(it *sql.SelectItem, e plan.Expr) string {
	if it.Alias != nil {
		return it.Alias.Name
	}
	switch x := it.Expr.(type) {
	case *sql.ColumnRef:
		return x.Parts[len(x.Parts)-1].Name
	case *sql.FuncCall:
		return x.Name.Name
	case *sql.Cast:
		if c, ok := x.X.(*sql.ColumnRef); ok {
			return c.Parts[len(c.Parts)-1].Name
		}
	case *sql.Extract:
		return "extract"
	case *sql.ArraySubquery, *sql.ArrayExpr:
		return "array"
	case *sql.RowExpr:
		return "row"
	case *sql.FieldSelect:
		return x.Field.Name
	case *sql.Case:
		return "case"
	case *sql.Exists:
		return "exists"
	case *sql.Subquery:
		// A scalar subquery is named after its column (PostgreSQL's
		// FigureColname): (SELECT max(x) ...) is "max".
		if first := firstItem(x.Query); first != nil {
			return itemName(first, nil)
		}
	}
	// PostgreSQL's name for an unnamed expression.
	return "?column?"
}

// firstItem is the first select-list item of q's leftmost SELECT (nil for
// VALUES, SELECT *).
func firstItem(q *sql.Query) *sql.SelectItem {
	body := q.Body
	for {
		switch b := body.(type) {
		case *sql.SetOp:
			body = b.Left
			continue
		case *sql.Select:
			if len(b.Items) == 0 {
				return nil
			}
			return b.Items[0]
		}
		return nil
	}
}

// groupKey binds a GROUP BY item: a select-list position, an input
// column, a select-list alias (when no input column has that name), or an
// expression over the input.
func (b *binder) groupKey(g sql.Expr, sel *sql.Select, s *scope) (plan.Expr, error) {
	target := g
	if lit, ok := g.(*sql.Literal); ok && lit.Kind == sql.LitNumber {
		n := 0
		for _, ch := range lit.Text {
			if ch < '0' || ch > '9' {
				return nil, b.errorf(g, "non-integer constant in GROUP BY")
			}
			n = n*10 + int(ch-'0')
			if n > len(sel.Items) {
				break
			}
		}
		if n < 1 || n > len(sel.Items) {
			return nil, b.errorf(g, "GROUP BY position %s is not in select list", lit.Text)
		}
		target = sel.Items[n-1].Expr
		if _, ok := target.(*sql.Star); ok {
			return nil, b.errorf(g, "GROUP BY position %d refers to *", n)
		}
	} else if ref, ok := g.(*sql.ColumnRef); ok && len(ref.Parts) == 1 {
		if _, err := b.resolve(s, ref); err != nil {
			for _, it := range sel.Items {
				if it.Alias != nil && it.Alias.Name == ref.Parts[0].Name {
					target = it.Expr
					break
				}
			}
		}
	}
	e, err := b.expr(target, s, &exprCtx{clause: "GROUP BY"})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// aboveAgg rewrites e, bound over the aggregate's input, to be evaluated
// above the aggregate: group-key expressions become the group columns, and
// any other reference to an input column is an error.
func (b *binder) aboveAgg(e plan.Expr, ac *aggCtx, at sql.Node) (plan.Expr, error) {
	var bad *plan.ColRef
	var rewrite func(x plan.Expr) plan.Expr
	rewrite = func(x plan.Expr) plan.Expr {
		if i, ok := ac.groupKeys[plan.ExprKey(x)]; ok {
			return plan.NewColRef(ac.groupCols[i])
		}
		switch y := x.(type) {
		case *plan.ColRef:
			if ac.input.Has(y.ID) && bad == nil {
				bad = y
			}
			return y
		case *plan.Call:
			args := make([]plan.Expr, len(y.Args))
			for i, a := range y.Args {
				args[i] = rewrite(a)
			}
			return &plan.Call{Fn: y.Fn, Args: args, Typ: y.Typ, Zone: y.Zone}
		case *plan.CaseExpr:
			c := &plan.CaseExpr{Typ: y.Typ, Whens: make([]plan.Expr, len(y.Whens)), Thens: make([]plan.Expr, len(y.Thens))}
			for i := range y.Whens {
				c.Whens[i], c.Thens[i] = rewrite(y.Whens[i]), rewrite(y.Thens[i])
			}
			if y.Else != nil {
				c.Else = rewrite(y.Else)
			}
			return c
		case *plan.CastExpr:
			return &plan.CastExpr{X: rewrite(y.X), Typ: y.Typ, Zone: y.Zone}
		case *plan.SubqueryExpr:
			c := *y
			if y.X != nil {
				c.X = rewrite(y.X)
			}
			// A correlated subquery above the aggregate may only use group
			// keys of this query.
			for _, id := range y.Outer {
				if ac.input.Has(id) {
					isKey := false
					for _, g := range ac.groupCols {
						isKey = isKey || g.ID == id
					}
					if !isKey && bad == nil {
						bad = &plan.ColRef{ID: id, Name: findColName(y.Plan, id)}
					}
				}
			}
			return &c
		}
		return x
	}
	out := rewrite(e)
	if bad != nil {
		return nil, b.errorf(at, "column %q must appear in the GROUP BY clause or be used in an aggregate function", bad.Name)
	}
	return out, nil
}

// findColName finds the display name of a column referenced inside p.
func findColName(p plan.Plan, id plan.ColumnID) string {
	name := "?"
	plan.WalkPlan(p, func(n plan.Plan) bool {
		for _, e := range plan.NodeExprs(n) {
			plan.WalkExpr(e, func(x plan.Expr) bool {
				if c, ok := x.(*plan.ColRef); ok && c.ID == id {
					name = c.Name
				}
				return true
			})
		}
		return true
	})
	return name
}

// expandStar lists the columns of * or t.*.
func (b *binder) expandStar(st *sql.Star, s *scope) ([]plan.Column, error) {
	var out []plan.Column
	if st.Table == nil {
		if len(s.items) == 0 {
			return nil, b.errorf(st, "SELECT * with no tables specified is not valid")
		}
		for _, it := range s.items {
			if len(it.unreadable) > 0 {
				return nil, it.unreadable[0].Err
			}
			for i, c := range it.cols {
				if it.hidden == nil || !it.hidden[i] {
					out = append(out, c)
				}
			}
		}
		return out, nil
	}
	name := st.Table.Last().Name
	for _, it := range s.items {
		if it.name == name {
			if len(it.unreadable) > 0 {
				return nil, it.unreadable[0].Err
			}
			return append(out, it.cols...), nil
		}
	}
	return nil, b.errorf(st, "missing FROM-clause entry for table %q", name)
}

// hasAggregate reports whether a select list or ORDER BY calls an
// aggregate function outside of subqueries and window specifications.
func (b *binder) hasAggregate(items []*sql.SelectItem, order []*sql.OrderItem) bool {
	found := false
	visit := func(n sql.Node) {
		sql.Walk(n, func(x sql.Node) bool {
			switch f := x.(type) {
			case *sql.Query:
				return false // a subquery's aggregates are its own
			case *sql.FuncCall:
				if f.Over == nil && isAggregateName(f.Name.Name) && !f.Name.Quoted {
					found = true
				}
				if f.Over != nil {
					// window arguments may hold aggregates of this query
					for _, a := range f.Args {
						sql.Walk(a, func(y sql.Node) bool {
							if g, ok := y.(*sql.FuncCall); ok && g.Over == nil && isAggregateName(g.Name.Name) {
								found = true
							}
							_, sub := y.(*sql.Query)
							return !sub
						})
					}
					return false
				}
			}
			return !found
		})
	}
	for _, it := range items {
		visit(it)
	}
	for _, o := range order {
		visit(o)
	}
	return found
}

func isAggregateName(n string) bool {
	switch n {
	case "count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "string_agg", "array_agg",
		"median", "quantile_cont", "quantile", "percentile_cont", "percentile_disc", "mode", "approx_count_distinct", "json_agg", "jsonb_agg", "json_object_agg":
		return true
	}
	_, ok := varianceNames[n]
	return ok
}

// varianceNames maps the variance aggregates' names to exec's (variance
// and stddev are the sample forms, as in PostgreSQL).
var varianceNames = map[string]string{
	"var_samp": "var_samp", "variance": "var_samp", "var_pop": "var_pop",
	"stddev_samp": "stddev_samp", "stddev": "stddev_samp", "stddev_pop": "stddev_pop",
}
