package engine

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// A reference evaluator for logical plans, row at a time, used to check
// that optimization preserves results: every query of TestOptimizerKeepsResults
// runs unoptimized (subqueries evaluated naively, per row) and optimized
// (decorrelated, pushed down, reordered, pruned), and the results must be
// equal. Expressions are evaluated with the constant folder's evaluator,
// so SQL's three-valued logic and NULL handling are the binder's own.

type row []*plan.Const

type evaluator struct {
	t testing.TB
	// skip, when set, makes unsupported plans and run-time errors abandon
	// the evaluation (panic(errSkipEval)) instead of failing: the fuzz
	// target skips such inputs. budget bounds the rows produced.
	skip   bool
	budget int
	data   map[string][]row // table name -> rows in schema order
	// shared caches the rows of SharedDefs.
	shared map[*plan.SharedDef]*result
}

type result struct {
	cols []plan.Column
	rows []row
}

// env binds column IDs to values: the current row and enclosing rows.
type env map[plan.ColumnID]*plan.Const

func (e env) with(cols []plan.Column, r row) env {
	out := make(env, len(e)+len(cols))
	for k, v := range e {
		out[k] = v
	}
	for i, c := range cols {
		out[c.ID] = r[i]
	}
	return out
}

type skipEval struct{}

// errSkipEval is panicked with to abandon an evaluation in skip mode.
var errSkipEval = skipEval{}

func (ev *evaluator) fail(format string, args ...any) {
	ev.t.Helper()
	if ev.skip {
		panic(errSkipEval)
	}
	ev.t.Fatalf(format, args...)
}

func (ev *evaluator) expr(e plan.Expr, en env) *plan.Const {
	switch x := e.(type) {
	case *plan.Const:
		return x
	case *plan.ColRef:
		v, ok := en[x.ID]
		if !ok {
			ev.fail("column %s#%d unbound", x.Name, x.ID)
		}
		return v
	case *plan.CastExpr:
		c, err := plan.CastConst(ev.expr(x.X, en), x.Typ)
		if err != nil {
			ev.fail("cast: %v", err)
		}
		return c
	case *plan.CaseExpr:
		for i, w := range x.Whens {
			if c := ev.expr(w, en); c.Val == true {
				return ev.coerce(ev.expr(x.Thens[i], en), x.Typ)
			}
		}
		if x.Else == nil {
			return plan.NullConst(x.Typ)
		}
		return ev.coerce(ev.expr(x.Else, en), x.Typ)
	case *plan.Call:
		if x.Fn == plan.FnAnd || x.Fn == plan.FnOr {
			// Evaluate all arms: three-valued AND/OR over constants.
			args := make([]plan.Expr, len(x.Args))
			for i, a := range x.Args {
				args[i] = ev.expr(a, en)
			}
			c, err := plan.EvalCall(&plan.Call{Fn: x.Fn, Args: args, Typ: x.Typ})
			if err != nil || c == nil {
				ev.fail("eval %s: %v", x, err)
			}
			return c
		}
		args := make([]plan.Expr, len(x.Args))
		for i, a := range x.Args {
			args[i] = ev.expr(a, en)
		}
		switch x.Fn {
		case "substring":
			s := args[0].(*plan.Const)
			if s.IsNull() || args[1].(*plan.Const).IsNull() {
				return plan.NullConst(plan.TypString)
			}
			r := []rune(s.Val.(string))
			from := int(plan.ConstInt(args[1].(*plan.Const))) - 1
			to := len(r)
			if len(args) == 3 {
				to = from + int(plan.ConstInt(args[2].(*plan.Const)))
			}
			from, to = max(from, 0), min(to, len(r))
			if to < from {
				to = from
			}
			return &plan.Const{Typ: plan.TypString, Val: string(r[from:to])}
		}
		c, err := plan.EvalCall(&plan.Call{Fn: x.Fn, Args: args, Typ: x.Typ})
		if err != nil {
			ev.fail("eval %s: %v", x, err)
		}
		if c == nil {
			ev.fail("cannot evaluate %s", x)
		}
		return ev.coerce(c, x.Typ)
	case *plan.SubqueryExpr:
		res := ev.plan(x.Plan, en)
		switch x.Kind {
		case plan.SubExists:
			return plan.BoolConst(len(res.rows) > 0)
		case plan.SubScalar:
			if len(res.rows) > 1 {
				ev.fail("scalar subquery returned %d rows", len(res.rows))
			}
			if len(res.rows) == 0 {
				return plan.NullConst(x.Typ)
			}
			return res.rows[0][0]
		default: // IN
			list := []plan.Expr{ev.expr(x.X, en)}
			for _, r := range res.rows {
				list = append(list, r[0])
			}
			if len(list) == 1 {
				return plan.BoolConst(false)
			}
			c, _ := plan.EvalCall(&plan.Call{Fn: plan.FnIn, Args: list, Typ: plan.TypBool})
			return c
		}
	}
	ev.fail("cannot evaluate %T", e)
	return nil
}

func (ev *evaluator) coerce(c *plan.Const, t arrow.DataType) *plan.Const {
	if c.IsNull() || arrow.TypeEqual(c.Typ, t) {
		return &plan.Const{Typ: t, Val: c.Val}
	}
	v, err := plan.CastConst(c, t)
	if err != nil {
		ev.fail("coerce %s to %s: %v", c, plan.TypeString(t), err)
	}
	return v
}

func isTrue(c *plan.Const) bool { return c.Val == true }

func rowKey(r row) string {
	s := make([]string, len(r))
	for i, c := range r {
		s[i] = plan.FormatConst(c)
	}
	return strings.Join(s, "|")
}

func (ev *evaluator) plan(p plan.Plan, en env) *result {
	cols := p.Columns()
	out := &result{cols: cols}
	defer func() {
		ev.budget -= len(out.rows)
		if ev.skip && ev.budget < 0 {
			panic(errSkipEval)
		}
	}()
	switch n := p.(type) {
	case *plan.ScanNode:
		for _, r := range ev.data[n.Table.Name] {
			sr := make(row, len(n.Fields))
			for i, f := range n.Fields {
				sr[i] = r[f]
			}
			e2 := en.with(n.Cols, sr)
			keep := true
			for _, f := range n.Filters {
				keep = keep && isTrue(ev.expr(f, e2))
			}
			if keep {
				out.rows = append(out.rows, sr)
			}
		}
	case *plan.FilterNode:
		in := ev.plan(n.Input, en)
		for _, r := range in.rows {
			if isTrue(ev.expr(n.Cond, en.with(in.cols, r))) {
				out.rows = append(out.rows, r)
			}
		}
	case *plan.ProjectNode:
		in := ev.plan(n.Input, en)
		for _, r := range in.rows {
			e2 := en.with(in.cols, r)
			nr := make(row, len(n.Exprs))
			for i, x := range n.Exprs {
				nr[i] = ev.expr(x, e2)
			}
			out.rows = append(out.rows, nr)
		}
	case *plan.AggregateNode:
		in := ev.plan(n.Input, en)
		type group struct {
			keys row
			rows []env
		}
		var order []string
		groups := map[string]*group{}
		for _, r := range in.rows {
			e2 := en.with(in.cols, r)
			keys := make(row, len(n.Groups))
			for i, g := range n.Groups {
				keys[i] = ev.expr(g, e2)
			}
			k := rowKey(keys)
			if groups[k] == nil {
				groups[k] = &group{keys: keys}
				order = append(order, k)
			}
			groups[k].rows = append(groups[k].rows, e2)
		}
		if len(n.Groups) == 0 && len(groups) == 0 {
			groups[""] = &group{}
			order = append(order, "")
		}
		for _, k := range order {
			g := groups[k]
			nr := append(row(nil), g.keys...)
			for _, a := range n.Aggs {
				nr = append(nr, ev.aggregate(a, g.rows))
			}
			out.rows = append(out.rows, nr)
		}
	case *plan.JoinNode:
		l, r := ev.plan(n.Left, en), ev.plan(n.Right, en)
		ev.join(n, l, r, en, out)
	case *plan.SortNode:
		in := ev.plan(n.Input, en)
		out.rows = ev.sorted(in, n.Keys, en)
	case *plan.TopNNode:
		in := ev.plan(n.Input, en)
		out.rows = limitRows(ev.sorted(in, n.Keys, en), n.Limit, n.Offset)
	case *plan.LimitNode:
		in := ev.plan(n.Input, en)
		out.rows = limitRows(in.rows, n.Limit, n.Offset)
	case *plan.DistinctNode:
		in := ev.plan(n.Input, en)
		seen := map[string]bool{}
		for _, r := range in.rows {
			if k := rowKey(r); !seen[k] {
				seen[k] = true
				out.rows = append(out.rows, r)
			}
		}
	case *plan.SetOpNode:
		l, r := ev.plan(n.Left, en), ev.plan(n.Right, en)
		out.rows = setOp(n, l.rows, r.rows)
	case *plan.ValuesNode:
		for _, vr := range n.Rows {
			nr := make(row, len(vr))
			for i, x := range vr {
				nr[i] = ev.expr(x, en)
			}
			out.rows = append(out.rows, nr)
		}
	case *plan.WindowNode:
		in := ev.plan(n.Input, en)
		out.rows = make([]row, len(in.rows))
		for i, r := range in.rows {
			out.rows[i] = append(row(nil), r...)
		}
		for _, f := range n.Funcs {
			if f.Fn != "row_number" {
				ev.fail("cannot evaluate window function %s", f.Fn)
			}
			parts := map[string][]int{}
			var order []string
			for i, r := range in.rows {
				e2 := en.with(in.cols, r)
				var key row
				for _, pe := range f.PartitionBy {
					key = append(key, ev.expr(pe, e2))
				}
				k := rowKey(key)
				if _, ok := parts[k]; !ok {
					order = append(order, k)
				}
				parts[k] = append(parts[k], i)
			}
			rn := make([]int64, len(in.rows))
			for _, k := range order {
				idx := parts[k]
				sub := &result{cols: in.cols}
				for _, i := range idx {
					sub.rows = append(sub.rows, in.rows[i])
				}
				pos := ev.sortedIndex(sub, f.OrderBy, en)
				for n, j := range pos {
					rn[idx[j]] = int64(n + 1)
				}
			}
			for i := range out.rows {
				out.rows[i] = append(out.rows[i], &plan.Const{Typ: plan.TypInt64, Val: rn[i]})
			}
		}
	case *plan.ApplyNode:
		in := ev.plan(n.Input, en)
		for _, r := range in.rows {
			res := ev.plan(n.Sub, en.with(in.cols, r))
			if len(res.rows) > 1 {
				ev.fail("apply: subquery returned %d rows", len(res.rows))
			}
			v := plan.NullConst(n.Col.Type)
			if len(res.rows) == 1 {
				v = res.rows[0][0]
			}
			out.rows = append(out.rows, append(append(row(nil), r...), v))
		}
	case *plan.SharedScan:
		res, ok := ev.shared[n.Def]
		if !ok {
			res = ev.plan(n.Def.Plan, env{})
			ev.shared[n.Def] = res
		}
		out.rows = res.rows
	default:
		ev.fail("cannot evaluate %T", p)
	}
	return out
}

func limitRows(rows []row, limit, offset int64) []row {
	if offset >= int64(len(rows)) {
		return nil
	}
	rows = rows[offset:]
	if limit >= 0 && limit < int64(len(rows)) {
		rows = rows[:limit]
	}
	return rows
}

func (ev *evaluator) sorted(in *result, keys []plan.SortKey, en env) []row {
	idx := ev.sortedIndex(in, keys, en)
	out := make([]row, len(idx))
	for i, j := range idx {
		out[i] = in.rows[j]
	}
	return out
}

// sortedIndex is the order of in's rows by keys (stable).
func (ev *evaluator) sortedIndex(in *result, keys []plan.SortKey, en env) []int {
	rows := in.rows
	vals := make(map[int][]*plan.Const, len(rows))
	idx := make([]int, len(rows))
	for i, r := range rows {
		idx[i] = i
		e2 := en.with(in.cols, r)
		for _, k := range keys {
			vals[i] = append(vals[i], ev.expr(k.Expr, e2))
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		for j, k := range keys {
			x, y := vals[idx[a]][j], vals[idx[b]][j]
			if x.IsNull() || y.IsNull() {
				if x.IsNull() == y.IsNull() {
					continue
				}
				return x.IsNull() == k.NullsFirst
			}
			c, _ := plan.CompareConst(x, y)
			if c != 0 {
				return (c < 0) != k.Desc
			}
		}
		return false
	})
	return idx
}

func setOp(n *plan.SetOpNode, l, r []row) []row {
	count := func(rows []row) (map[string]int, []string, map[string]row) {
		m, ex := map[string]int{}, map[string]row{}
		var order []string
		for _, x := range rows {
			k := rowKey(x)
			if m[k] == 0 {
				order = append(order, k)
				ex[k] = x
			}
			m[k]++
		}
		return m, order, ex
	}
	lc, lorder, lex := count(l)
	rc, rorder, rex := count(r)
	var out []row
	emit := func(k string, x row, times int) {
		if !n.All && times > 0 {
			times = 1
		}
		for i := 0; i < times; i++ {
			out = append(out, x)
		}
	}
	switch n.Kind {
	case plan.SetUnion:
		if n.All {
			return append(append([]row(nil), l...), r...)
		}
		for _, k := range lorder {
			emit(k, lex[k], 1)
		}
		for _, k := range rorder {
			if lc[k] == 0 {
				emit(k, rex[k], 1)
			}
		}
	case plan.SetIntersect:
		for _, k := range lorder {
			emit(k, lex[k], min(lc[k], rc[k]))
		}
	case plan.SetExcept:
		for _, k := range lorder {
			if n.All {
				emit(k, lex[k], max(lc[k]-rc[k], 0))
			} else if rc[k] == 0 {
				emit(k, lex[k], 1)
			}
		}
	}
	return out
}

func (ev *evaluator) aggregate(a *plan.AggCall, rows []env) *plan.Const {
	if a.Fn == plan.AggCountStar {
		return &plan.Const{Typ: plan.TypInt64, Val: int64(len(rows))}
	}
	var vals []*plan.Const
	seen := map[string]bool{}
	for _, e := range rows {
		if a.Filter != nil {
			if f := ev.expr(a.Filter, e); f.IsNull() || f.Val != true {
				continue
			}
		}
		v := ev.expr(a.Arg, e)
		if v.IsNull() {
			continue
		}
		if a.Distinct {
			if k := plan.FormatConst(v); seen[k] {
				continue
			} else {
				seen[k] = true
			}
		}
		vals = append(vals, v)
	}
	switch a.Fn {
	case plan.AggCount:
		return &plan.Const{Typ: plan.TypInt64, Val: int64(len(vals))}
	case plan.AggMin, plan.AggMax:
		if len(vals) == 0 {
			return plan.NullConst(a.Typ)
		}
		best := vals[0]
		for _, v := range vals[1:] {
			c, _ := plan.CompareConst(v, best)
			if (a.Fn == plan.AggMin && c < 0) || (a.Fn == plan.AggMax && c > 0) {
				best = v
			}
		}
		return ev.coerce(best, a.Typ)
	}
	if len(vals) == 0 {
		return plan.NullConst(a.Typ)
	}
	sumType := a.Typ
	if a.Fn == plan.AggAvg {
		sumType = plan.AggResultType(plan.AggSum, vals[0].Typ)
	}
	sum := ev.coerce(vals[0], sumType)
	for _, v := range vals[1:] {
		s, err := plan.EvalArith(plan.FnAdd, sum, ev.coerce(v, sumType), sumType)
		if err != nil {
			ev.fail("sum: %v", err)
		}
		sum = s
	}
	if a.Fn == plan.AggSum {
		return sum
	}
	cnt := &plan.Const{Typ: plan.TypInt64, Val: int64(len(vals))}
	if plan.IsFloat(a.Typ) {
		return &plan.Const{Typ: plan.TypFloat64, Val: plan.ConstFloat(sum) / float64(len(vals))}
	}
	c, err := plan.EvalArith(plan.FnDiv, ev.coerce(sum, a.Typ), ev.coerce(cnt, a.Typ), a.Typ)
	if err != nil {
		ev.fail("avg: %v", err)
	}
	return c
}

// join evaluates all join kinds by nested loops.
func (ev *evaluator) join(n *plan.JoinNode, l, r *result, en env, out *result) {
	nullRow := func(cols []plan.Column) row {
		x := make(row, len(cols))
		for i, c := range cols {
			x[i] = plan.NullConst(c.Type)
		}
		return x
	}
	// match returns TRUE, FALSE or NULL (unknown) for a pair.
	match := func(lr, rr row) *plan.Const {
		e2 := en.with(l.cols, lr).with(r.cols, rr)
		var parts []plan.Expr
		for _, q := range n.Equi {
			parts = append(parts, ev.expr(plan.NewCall(plan.FnEq, plan.TypBool, q.Left, q.Right), e2))
		}
		if n.Cond != nil {
			parts = append(parts, ev.expr(n.Cond, e2))
		}
		if len(parts) == 0 {
			return plan.BoolConst(true)
		}
		c, _ := plan.EvalCall(&plan.Call{Fn: plan.FnAnd, Args: append(parts, plan.BoolConst(true)), Typ: plan.TypBool})
		return c
	}
	rightMatched := make([]bool, len(r.rows))
	for _, lr := range l.rows {
		matched, unknown := false, false
		var matches []row
		for j, rr := range r.rows {
			m := match(lr, rr)
			switch {
			case isTrue(m):
				matched = true
				rightMatched[j] = true
				matches = append(matches, rr)
			case m.IsNull():
				unknown = true
			}
		}
		switch n.Kind {
		case plan.JoinInner, plan.JoinLeft, plan.JoinRight, plan.JoinFull, plan.JoinSingle:
			if n.Kind == plan.JoinSingle && len(matches) > 1 {
				ev.fail("single join: %d matches", len(matches))
			}
			for _, rr := range matches {
				out.rows = append(out.rows, append(append(row(nil), lr...), rr...))
			}
			if !matched && (n.Kind == plan.JoinLeft || n.Kind == plan.JoinFull || n.Kind == plan.JoinSingle) {
				out.rows = append(out.rows, append(append(row(nil), lr...), nullRow(r.cols)...))
			}
		case plan.JoinSemi:
			if matched {
				out.rows = append(out.rows, lr)
			}
		case plan.JoinAnti:
			if !matched && !(n.NullAware && unknown) {
				out.rows = append(out.rows, lr)
			}
		case plan.JoinMark:
			mark := plan.BoolConst(matched)
			if !matched && n.NullAware && unknown {
				mark = plan.NullConst(plan.TypBool)
			}
			out.rows = append(out.rows, append(append(row(nil), lr...), mark))
		}
	}
	if n.Kind == plan.JoinRight || n.Kind == plan.JoinFull {
		for j, rr := range r.rows {
			if !rightMatched[j] {
				out.rows = append(out.rows, append(nullRow(l.cols), rr...))
			}
		}
	}
}

// evalCatalog is a small catalog with NULLs and duplicates for the
// differential test.
func evalCatalog(rng *rand.Rand) (*plan.MemCatalog, map[string][]row) {
	cat := plan.NewMemCatalog()
	data := map[string][]row{}
	mk := func(name string, nrows int, fields []arrow.Field, gen func(col int) *plan.Const) {
		cat.AddTable(&plan.TableDef{Name: name, Schema: arrow.NewSchema(fields, nil), Stats: &plan.TableStats{Rows: int64(nrows)}})
		for i := 0; i < nrows; i++ {
			r := make(row, len(fields))
			for c := range fields {
				r[c] = gen(c)
			}
			data[name] = append(data[name], r)
		}
	}
	intOrNull := func(n int) *plan.Const {
		if rng.Intn(8) == 0 {
			return plan.NullConst(plan.TypInt64)
		}
		return &plan.Const{Typ: plan.TypInt64, Val: int64(rng.Intn(n))}
	}
	money := &arrow.Decimal64Type{Precision: 15, Scale: 2}
	mk("a", 12, []arrow.Field{{Name: "ak", Type: plan.TypInt64, Nullable: true}, {Name: "av", Type: money, Nullable: true}, {Name: "as_", Type: plan.TypString, Nullable: true}}, func(c int) *plan.Const {
		switch c {
		case 0:
			return intOrNull(6)
		case 1:
			if rng.Intn(8) == 0 {
				return plan.NullConst(money)
			}
			return &plan.Const{Typ: money, Val: int64(rng.Intn(2000) - 500)}
		}
		if rng.Intn(8) == 0 {
			return plan.NullConst(plan.TypString)
		}
		return &plan.Const{Typ: plan.TypString, Val: []string{"x", "y", "zz", "xy"}[rng.Intn(4)]}
	})
	mk("b", 10, []arrow.Field{{Name: "bk", Type: plan.TypInt64, Nullable: true}, {Name: "bv", Type: plan.TypInt64, Nullable: true}}, func(c int) *plan.Const {
		return intOrNull(6)
	})
	mk("c", 6, []arrow.Field{{Name: "ck", Type: plan.TypInt64, Nullable: true}, {Name: "cv", Type: plan.TypInt64, Nullable: true}}, func(c int) *plan.Const {
		return intOrNull(4)
	})
	return cat, data
}

// TestOptimizerKeepsResults is a differential test: unoptimized and
// optimized plans of queries full of subqueries, outer joins and NULLs
// return the same rows on random small tables (several seeds).
func TestOptimizerKeepsResults(t *testing.T) {
	queries := differentialQueries
	total, empty := 0, 0
	for seed := int64(1); seed <= 4; seed++ {
		cat, data := evalCatalog(rand.New(rand.NewSource(seed)))
		for _, qs := range queries {
			stmts, err := newTestSessionWith(cat).bindScript(qs)
			if err != nil {
				t.Fatalf("%s: %v", qs, err)
			}
			q := stmts[0].(*bind.QueryStmt)
			optimized, err := opt.Optimize(q.Plan)
			if err != nil {
				t.Fatalf("%s: %v", qs, err)
			}
			ev := &evaluator{t: t, data: data, shared: map[*plan.SharedDef]*result{}}
			want := ev.plan(q.Plan, env{})
			ev.shared = map[*plan.SharedDef]*result{}
			got := ev.plan(optimized, env{})
			total += len(want.rows)
			if len(want.rows) == 0 {
				empty++
			}
			ordered := strings.Contains(qs, "order by")
			if a, b := resultText(want, ordered), resultText(got, ordered); a != b {
				t.Fatalf("seed %d: %s\nunoptimized:\n%s\noptimized:\n%s\nplan:\n%s", seed, qs, a, b, opt.ExplainPlan(optimized, opt.ExplainOptions{Verbose: true, NoRows: true}))
			}
		}
	}
	// The data must make the queries say something.
	if total < 500 || empty > len(queries) {
		t.Fatalf("weak test data: %d rows in all, %d empty results", total, empty)
	}
}

// differentialQueries exercise decorrelation, outer joins and NULLs.
var differentialQueries = []string{
	"select ak, av from a where exists (select * from b where bk = ak)",
	"select ak from a where not exists (select * from b where bk = ak and bv > 2)",
	"select ak from a where ak in (select bk from b)",
	"select ak from a where ak not in (select bk from b)",
	"select ak from a where ak not in (select bk from b where bk is not null)",
	"select ak from a where ak in (select bk from b where bv = ak)",
	"select ak, (select count(*) from b where bk = ak) from a",
	"select ak, (select sum(bv) from b where bk = ak) from a",
	"select ak, (select max(cv) from c) from a",
	"select ak from a where av > (select avg(av) from a a2 where a2.ak = a.ak)",
	"select ak from a where ak > 1 or exists (select 1 from b where bk = ak)",
	"select ak from a where ak in (select bk from b) or as_ = 'x'",
	"select ak from a where (ak not in (select bk from b)) is null",
	"select * from a left join b on ak = bk where bv > 1",
	"select * from a left join b on ak = bk where bv is null",
	"select * from a full join b on ak = bk where ak > 2",
	"select * from a right join b on ak = bk and bv < 3",
	"select * from a full join (select bk as ak, bv from b) b2 using (ak)",
	"select ak, count(*), sum(av), avg(av), min(as_), max(av), count(distinct as_) from a group by ak having count(*) > 1",
	"select count(*), sum(av) from a where ak > 100",
	"select as_ from a union select cast(bk as varchar) from b",
	"select ak from a intersect all select bk from b",
	"select ak from a except select ck from c",
	"select distinct ak, as_ from a",
	"select * from (select ak, sum(av) as s from a group by ak) t where s > 0 and ak < 4",
	"with w as (select bk, count(*) as n from b group by bk) select x.bk, x.n, y.n from w x, w y where x.bk = y.bk",
	"select a.ak, b.bv, c.cv from a, b, c where a.ak = b.bk and b.bv = c.ck and c.cv > 0",
	"select ak from a where ak = (select max(ck) from c)",
	"select ak from a where exists (select count(*) from b where bk = ak)",
	"select ak from a where av > (select sum(bv) from b where bk = ak) or ak is null",
	"select b.bk from b where b.bv in (select ck from c where cv = b.bk) and not exists (select 1 from a where ak = b.bv)",
	"select ak, as_ from a order by av desc nulls last, ak limit 5",
	"select ak from a where (ak = 1 and av > 0) or (ak = 1 and as_ like 'x%')",
	"select * from a, b where (ak = 1 and bk = 2) or (ak = 2 and bk = 1)",
	"select ak, count(*) filter (where av > 0) from a group by ak",
	"select (select count(*) from c where ck = bk and cv = bv) from b",
	// Correlated on other comparisons below an aggregate: the domain
	// rewrite (opt/decorrelate_domain.go), NULL outer values included.
	"select ak, (select count(*) from b where bk < ak) from a",
	"select ak, (select max(bv) from b where bk > ak or ak is null) from a",
	"select ak from a where av > (select avg(bv) from b where bk <> ak)",
	"select ak, (select sum(bv) from b where bk = ak and bv < av) from a",
	"select ak, (select count(*) from b, c where bk = ck and cv < av) from a",
	"select ak, as_, (select count(distinct bv) from b where bk >= ak and bv <> av) from a",
	"select ak, (select min(bv) + 1 from b where bk < ak group by bk having bk = 1) from a",
	"select ak from a where av in (select max(bv) from b where bk < ak)",
	"select ak from a where av not in (select min(bv) from b where bk <> ak)",
	"select ak, ak in (select count(*) from b where bv > av) from a",
	// Grouping sets: one aggregate per set over the input computed once.
	"select ak, as_, sum(av), count(*), grouping(ak, as_) from a group by rollup (ak, as_)",
	"select ak, as_, count(distinct av) from a group by cube (ak, as_) having count(*) > 1",
	"select ak, sum(av) from a group by grouping sets ((ak), (), (ak, as_))",
	// Correlated subqueries with ORDER BY and LIMIT: row_number() per
	// outer value.
	"select ak, (select bv from b where bk = ak order by bv desc nulls last limit 1) from a",
	"select ak, (select bv from b where bk = ak order by bv nulls first limit 1 offset 1) from a",
	"select ak from a where exists (select 1 from b where bk = ak limit 1)",
	"select ak from a where av in (select bv from b where bk = ak order by bv limit 2)",
	// ANY / SOME / ALL, correlated or not, NULLs on both sides.
	"select ak, av > all (select bv from b) from a",
	"select ak, av < any (select bv from b where bk = ak) from a",
	"select ak, ak = all (select bk from b where bv > av) from a",
	"select ak, ak <> some (select bk from b where bk <> ak) from a",
	"select ak from a where ak >= all (select ck from c where ck is not null)",
	"select ak, ak = any (select bk from b), ak <> all (select bk from b) from a",
	// Subqueries in an outer join's ON over its null-filled side.
	"select ak, bk from a left join b on ak = bk and bv in (select cv from c)",
	"select ak, bk from a right join b on ak = bk and exists (select 1 from c where ck = ak)",
	// Subqueries in an inner join's ON.
	"select ak, bk from a join b on ak = bk and bv > (select avg(cv) from c where ck = ak)",
	"select ak, bk from a join b on bk in (select ck from c where cv > av)",
	// Shapes evaluated row by row (Apply): correlated below LIMIT on a
	// non-equality, below a window or a set operation, two levels out.
	"select ak, (select bv from b where bk >= ak order by bv nulls last, bk limit 1) from a",
	"select ak, (select count(*) from (select bv from b where bk = ak union select cv from c where ck = ak) u) from a",
	"select ak, (select max(rn) from (select row_number() over (order by bv) as rn from b where bk = ak) w) from a",
	"select ak from a where exists (select 1 from b where bk = ak and exists (select 1 from c where ck = bk and cv > av))",
	"select ak from a where not exists (select 1 from b where bk = ak and exists (select 1 from c where ck = bk and cv > av))",
	"select ak, av in (select bv from b where bk > ak order by bv limit 2), av not in (select bv from b where bk > ak order by bv limit 2) from a",
	"select ak from a where av not in (select bv from b where bk < ak order by bv nulls first limit 3)",
	// Subqueries in GROUP BY, aggregate arguments and a join's ON reading
	// the preserved side.
	"select (select count(*) from b where bk = ak) as n, count(*) from a group by 1",
	"select sum((select max(cv) from c where ck = ak)) from a",
	"select ak, bk from a left join b on ak = bk and bv > (select min(cv) from c where ck = ak)",
	"select ak, bk from a full join b on ak = bk and av >= (select avg(cv) from c where ck = ak)",
}

func resultText(r *result, ordered bool) string {
	lines := make([]string, len(r.rows))
	for i, x := range r.rows {
		lines[i] = rowKey(x)
	}
	if !ordered {
		sort.Strings(lines)
	}
	return fmt.Sprintf("%d rows\n%s", len(lines), strings.Join(lines, "\n"))
}

// FuzzOptimizerKeepsResults mutates the differential test's queries: when
// a mutant binds and optimizes, its unoptimized and optimized plans must
// return the same rows on the small random tables (inputs whose evaluation
// fails at run time, such as a division by zero, are skipped: SQL does not
// fix the evaluation order).
//
//	go test -run '^$' -fuzz FuzzOptimizerKeepsResults -fuzztime 60s ./engine
func FuzzOptimizerKeepsResults(f *testing.F) {
	for _, q := range differentialQueries {
		f.Add(q)
	}
	cat, data := evalCatalog(rand.New(rand.NewSource(1)))
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := newTestSessionWith(cat).bindScript(src)
		if err != nil || len(stmts) != 1 {
			return
		}
		q, ok := stmts[0].(*bind.QueryStmt)
		if !ok {
			return
		}
		optimized, err := opt.Optimize(q.Plan)
		if err != nil {
			if nferr.KindOf(err) == nferr.KindInternal {
				t.Fatalf("%s: %v", src, err)
			}
			return
		}
		run := func(p plan.Plan) (r *result, skipped bool) {
			defer func() {
				if x := recover(); x != nil {
					if _, ok := x.(skipEval); !ok {
						panic(x)
					}
					skipped = true
				}
			}()
			// NB: 100k rows keep one evaluation in milliseconds.
			ev := &evaluator{t: t, data: data, shared: map[*plan.SharedDef]*result{}, skip: true, budget: 100_000}
			return ev.plan(p, env{}), false
		}
		want, s1 := run(q.Plan)
		got, s2 := run(optimized)
		if s1 || s2 {
			return
		}
		ordered := strings.Contains(strings.ToLower(src), "order by")
		if a, b := resultText(want, ordered), resultText(got, ordered); a != b {
			t.Fatalf("%s\nunoptimized:\n%s\noptimized:\n%s\nplan:\n%s", src, a, b, opt.ExplainPlan(optimized, opt.ExplainOptions{Verbose: true, NoRows: true}))
		}
	})
}
