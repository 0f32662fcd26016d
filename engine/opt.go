package engine

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Rule names, in the order Optimize applies them.
const (
	RuleInlineShared = "inline_shared" // a view or CTE used once is inlined
	RuleDecorrelate  = "decorrelate"   // subqueries become joins
	RuleFold         = "fold"          // constant folding, boolean simplification
	RuleOuterJoin    = "outer_join"    // null-rejected outer joins become inner
	RulePushdown     = "pushdown"      // filters move down, into joins and scans
	RuleJoinOrder    = "join_order"    // inner joins reordered, build sides chosen
	RulePrune        = "prune"         // unused columns and aggregates dropped
	RuleDistinctAgg  = "distinct_agg"  // aggregates of DISTINCT x become two grouping aggregates
	RuleTopN         = "topn"          // Limit over Sort becomes TopN
)

// AllRules lists every rule in application order.
var AllRules = []string{RuleInlineShared, RuleDecorrelate, RuleFold, RuleOuterJoin, RulePushdown, RuleJoinOrder, RulePrune, RuleDistinctAgg, RuleTopN}

// optimizer holds what rules share: the next free column ID.
type optimizer struct {
	nextID ColumnID
	est    *estimator
}

func (o *optimizer) newCol(name string, t arrow.DataType, nullable bool) Column {
	o.nextID++
	return Column{ID: o.nextID, Name: name, Type: t, Nullable: nullable}
}

// Optimize rewrites a query plan with all rules. The result has no
// subqueries left; its output columns are those of p, in order.
func Optimize(p Plan) (Plan, error) { return OptimizeWith(p, AllRules) }

// OptimizeWith applies the named rules, in AllRules order (tests use it to
// look at one rule at a time). Unknown names are an internal error.
func OptimizeWith(p Plan, rules []string) (out Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, nferr.Internalf("optimizer bug (please report): %v", r)
		}
	}()
	on := map[string]bool{}
	for _, r := range rules {
		known := false
		for _, k := range AllRules {
			known = known || k == r
		}
		if !known {
			return nil, nferr.Internalf("unknown optimizer rule %q", r)
		}
		on[r] = true
	}
	o := &optimizer{nextID: maxColumnID(p)}
	want := p.Columns()
	if on[RuleInlineShared] {
		p = inlineShared(p)
	}
	if on[RuleDecorrelate] {
		if p, err = o.decorrelate(p); err != nil {
			return nil, err
		}
	}
	p, err = o.optimizeBody(p, on, true)
	if err != nil {
		return nil, err
	}
	// Shared subplans (used twice or more) are optimized once each.
	seen := map[*SharedDef]bool{}
	var defErr error
	var visit func(Plan)
	visit = func(q Plan) {
		walkPlan(q, func(n Plan) bool {
			if s, ok := n.(*SharedScan); ok && !seen[s.Def] {
				seen[s.Def] = true
				dp := s.Def.Plan
				// INVARIANT: SharedScans read the def's columns by position.
				defCols := dp.Columns()
				if on[RuleDecorrelate] {
					if dp, err = o.decorrelate(dp); err != nil && defErr == nil {
						defErr = err
						return false
					}
				}
				if dp, err = o.optimizeBody(dp, on, true); err != nil && defErr == nil {
					defErr = err
					return false
				}
				s.Def.Plan = restoreColumns(dp, defCols)
				visit(s.Def.Plan)
			}
			return true
		})
	}
	visit(p)
	if defErr != nil {
		return nil, defErr
	}
	return restoreColumns(p, want), nil
}

// optimizeBody applies the rules after decorrelation.
func (o *optimizer) optimizeBody(p Plan, on map[string]bool, root bool) (Plan, error) {
	if on[RuleFold] {
		p = foldConstants(p)
	}
	if on[RuleOuterJoin] {
		p = simplifyOuterJoins(p, colSet{})
	}
	if on[RulePushdown] {
		p = o.pushdown(p)
	}
	if on[RuleJoinOrder] {
		o.est = newEstimator()
		p = o.reorderJoins(p)
	}
	if on[RulePrune] {
		p = prune(p, colSetOf(p.Columns()))
	}
	if on[RuleDistinctAgg] {
		p = o.distinctAggs(p)
	}
	if on[RuleTopN] {
		p = topN(p)
	}
	return p, nil
}

// restoreColumns wraps p in a projection when rules changed its output
// columns or their order (a reordered join at the root).
func restoreColumns(p Plan, want []Column) Plan {
	got := p.Columns()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].ID == want[i].ID
	}
	if same {
		return p
	}
	exprs := make([]Expr, len(want))
	for i, c := range want {
		exprs[i] = colRef(c)
	}
	return &ProjectNode{Input: p, Exprs: exprs, Cols: want}
}

// maxColumnID is the largest column ID used in p, its subqueries and its
// shared subplans.
func maxColumnID(p Plan) ColumnID {
	var m ColumnID
	seen := map[*SharedDef]bool{}
	var visit func(Plan)
	visit = func(q Plan) {
		walkPlan(q, func(n Plan) bool {
			for _, c := range n.Columns() {
				m = max(m, c.ID)
			}
			if s, ok := n.(*SharedScan); ok && !seen[s.Def] {
				seen[s.Def] = true
				visit(s.Def.Plan)
			}
			for _, e := range nodeExprs(n) {
				walkExpr(e, func(x Expr) bool {
					if s, ok := x.(*SubqueryExpr); ok {
						visit(s.Plan)
					}
					return true
				})
			}
			return true
		})
	}
	visit(p)
	return m
}

// ---------------------------------------------------------------- inline_shared

// inlineShared replaces the scans of a SharedDef read only once by its plan
// (renamed to the scan's column IDs).
func inlineShared(p Plan) Plan {
	uses := map[*SharedDef]int{}
	var count func(Plan)
	count = func(q Plan) {
		walkPlan(q, func(n Plan) bool {
			if s, ok := n.(*SharedScan); ok {
				uses[s.Def]++
				if uses[s.Def] == 1 {
					count(s.Def.Plan)
				}
			}
			for _, e := range nodeExprs(n) {
				walkExpr(e, func(x Expr) bool {
					if s, ok := x.(*SubqueryExpr); ok {
						count(s.Plan)
					}
					return true
				})
			}
			return true
		})
	}
	count(p)
	var inline func(Plan) Plan
	inline = func(q Plan) Plan {
		return mapPlan(q, func(n Plan) Plan {
			if s, ok := n.(*SharedScan); ok {
				if uses[s.Def] == 1 {
					in := inline(s.Def.Plan)
					cols := in.Columns()
					exprs := make([]Expr, len(cols))
					for i, c := range cols {
						exprs[i] = colRef(c)
					}
					return &ProjectNode{Input: in, Exprs: exprs, Cols: s.Cols}
				}
				s.Def.Plan = inline(s.Def.Plan)
				return n
			}
			return mapNodeExprs(n, func(e Expr) Expr {
				return mapExpr(e, func(x Expr) Expr {
					if s, ok := x.(*SubqueryExpr); ok {
						c := *s
						c.Plan = inline(s.Plan)
						return &c
					}
					return x
				})
			})
		})
	}
	return inline(p)
}

// ---------------------------------------------------------------- outer_join

// strictCols returns the columns for which e is NULL (or not TRUE) when
// the column is NULL: e rejects rows where those columns are NULL.
func strictCols(e Expr) colSet {
	out := colSet{}
	switch x := e.(type) {
	case *ColRef:
		out.add(x.ID)
	case *CastExpr:
		return strictCols(x.X)
	case *Call:
		switch x.Fn {
		case fnCoalesce, fnIsNull, fnDistinct, fnNotDist, fnOr, "nullif":
			return out
		case fnNotNull:
			return strictCols(x.Args[0])
		case fnAnd:
			for _, a := range x.Args {
				out.addAll(strictCols(a))
			}
			return out
		}
		for _, a := range x.Args {
			out.addAll(strictCols(a))
		}
	}
	return out
}

// simplifyOuterJoins turns outer joins into inner (or full into left or
// right) when a filter above rejects the NULLs the outer join would add.
// rejected holds the columns that filters above reject NULLs of.
func simplifyOuterJoins(p Plan, rejected colSet) Plan {
	switch n := p.(type) {
	case *FilterNode:
		r := colSet{}
		r.addAll(rejected)
		for _, c := range conjuncts(n.Cond) {
			r.addAll(strictCols(c))
		}
		return &FilterNode{Input: simplifyOuterJoins(n.Input, r), Cond: n.Cond}
	case *ProjectNode:
		r := colSet{}
		for i, e := range n.Exprs {
			if rejected.has(n.Cols[i].ID) {
				r.addAll(strictCols(e))
			}
		}
		return &ProjectNode{Input: simplifyOuterJoins(n.Input, r), Exprs: n.Exprs, Cols: n.Cols}
	case *JoinNode:
		j := *n
		lc, rc := colSetOf(n.Left.Columns()), colSetOf(n.Right.Columns())
		lRej, rRej := rejected.intersects(lc), rejected.intersects(rc)
		switch n.Kind {
		case JoinLeft:
			if rRej {
				j.Kind = JoinInner
			}
		case JoinRight:
			if lRej {
				j.Kind = JoinInner
			}
		case JoinSingle:
			// A single join whose right side cannot have two rows is a left
			// join; with its NULLs rejected, an inner join (TPC-H Q11, Q15,
			// Q22: a comparison with an uncorrelated aggregate).
			if rRej && atMostOneRow(n.Right) {
				j.Kind = JoinInner
			}
		case JoinFull:
			switch {
			case lRej && rRej:
				j.Kind = JoinInner
			case lRej:
				j.Kind = JoinLeft
			case rRej:
				j.Kind = JoinRight
			}
		}
		// Below an inner join, its condition rejects NULLs too.
		r := colSet{}
		r.addAll(rejected)
		if j.Kind == JoinInner {
			for _, c := range conjuncts(j.Cond) {
				r.addAll(strictCols(c))
			}
			for _, q := range j.Equi {
				r.addAll(strictCols(q.Left))
				r.addAll(strictCols(q.Right))
			}
		}
		left, right := colSet{}, colSet{}
		switch j.Kind {
		case JoinInner, JoinSemi, JoinAnti, JoinMark, JoinSingle, JoinLeft:
			left = r
		}
		if j.Kind == JoinInner || j.Kind == JoinRight {
			right = r
		}
		j.Left = simplifyOuterJoins(n.Left, left)
		j.Right = simplifyOuterJoins(n.Right, right)
		return &j
	case *SortNode, *DistinctNode:
		return p.withInputs([]Plan{simplifyOuterJoins(p.Inputs()[0], rejected)})
	}
	in := p.Inputs()
	if len(in) == 0 {
		return p
	}
	nin := make([]Plan, len(in))
	for i, c := range in {
		nin[i] = simplifyOuterJoins(c, colSet{})
	}
	return p.withInputs(nin)
}

// atMostOneRow reports plans that never return two rows: an aggregate
// without GROUP BY, LIMIT 0 or 1, one VALUES row, under filters and
// projections.
func atMostOneRow(p Plan) bool {
	for {
		switch n := p.(type) {
		case *ProjectNode:
			p = n.Input
		case *FilterNode:
			p = n.Input
		case *AggregateNode:
			return len(n.Groups) == 0
		case *LimitNode:
			return n.Limit >= 0 && n.Limit <= 1
		case *TopNNode:
			return n.Limit <= 1
		case *ValuesNode:
			return len(n.Rows) <= 1
		default:
			return false
		}
	}
}

// ---------------------------------------------------------------- topn

// topN turns Limit over Sort (possibly through projections) into TopN.
func topN(p Plan) Plan {
	return mapPlan(p, func(n Plan) Plan {
		l, ok := n.(*LimitNode)
		if !ok || l.Limit < 0 {
			return n
		}
		switch in := l.Input.(type) {
		case *SortNode:
			return &TopNNode{Input: in.Input, Keys: in.Keys, Limit: l.Limit, Offset: l.Offset}
		case *ProjectNode:
			if s, ok := in.Input.(*SortNode); ok {
				return &ProjectNode{Input: &TopNNode{Input: s.Input, Keys: s.Keys, Limit: l.Limit, Offset: l.Offset}, Exprs: in.Exprs, Cols: in.Cols}
			}
		}
		return n
	})
}

// ---------------------------------------------------------------- prune

// prune drops columns no ancestor needs: scans read only needed columns,
// projections and aggregates drop unused outputs. required are the
// columns p's parent uses.
func prune(p Plan, required colSet) Plan {
	need := func(es ...Expr) colSet {
		s := colSet{}
		s.addAll(required)
		for _, e := range es {
			if e != nil {
				exprCols(e, s)
			}
		}
		return s
	}
	switch n := p.(type) {
	case *ScanNode:
		fc := colSet{}
		for _, f := range n.Filters {
			exprCols(f, fc)
		}
		c := *n
		c.Cols, c.Fields = nil, nil
		for i, col := range n.Cols {
			if required.has(col.ID) || fc.has(col.ID) {
				c.Cols = append(c.Cols, col)
				c.Fields = append(c.Fields, n.Fields[i])
			}
		}
		if len(c.Cols) == 0 && len(n.Cols) > 0 {
			// NB: keep one column so the scan still yields row counts
			// (count(*)); the narrowest is the cheapest to read.
			i := narrowest(n.Cols)
			c.Cols, c.Fields = []Column{n.Cols[i]}, []int{n.Fields[i]}
		}
		return &c
	case *FilterNode:
		return &FilterNode{Input: prune(n.Input, need(n.Cond)), Cond: n.Cond}
	case *ProjectNode:
		c := &ProjectNode{}
		for i, e := range n.Exprs {
			if required.has(n.Cols[i].ID) {
				c.Exprs = append(c.Exprs, e)
				c.Cols = append(c.Cols, n.Cols[i])
			}
		}
		s := colSet{}
		for _, e := range c.Exprs {
			exprCols(e, s)
		}
		c.Input = prune(n.Input, s)
		return c
	case *AggregateNode:
		c := *n
		c.Aggs, c.AggCols = nil, nil
		s := colSet{}
		for _, g := range n.Groups {
			exprCols(g, s)
		}
		for i, a := range n.Aggs {
			if required.has(n.AggCols[i].ID) {
				c.Aggs = append(c.Aggs, a)
				c.AggCols = append(c.AggCols, n.AggCols[i])
				if a.Arg != nil {
					exprCols(a.Arg, s)
				}
			}
		}
		c.Input = prune(n.Input, s)
		return &c
	case *JoinNode:
		s := need(nodeExprs(n)...)
		j := *n
		j.Left = prune(n.Left, s)
		j.Right = prune(n.Right, s)
		return &j
	case *SortNode:
		return &SortNode{Input: prune(n.Input, need(sortKeyExprs(n.Keys)...)), Keys: n.Keys}
	case *TopNNode:
		c := *n
		c.Input = prune(n.Input, need(sortKeyExprs(n.Keys)...))
		return &c
	case *LimitNode:
		c := *n
		c.Input = prune(n.Input, required)
		return &c
	case *WindowNode:
		c := *n
		c.Funcs, c.FuncCols = nil, nil
		s := colSet{}
		s.addAll(required)
		for i, w := range n.Funcs {
			if required.has(n.FuncCols[i].ID) {
				c.Funcs = append(c.Funcs, w)
				c.FuncCols = append(c.FuncCols, n.FuncCols[i])
				for _, e := range append(append(append([]Expr(nil), w.Args...), w.PartitionBy...), sortKeyExprs(w.OrderBy)...) {
					exprCols(e, s)
				}
			}
		}
		if len(c.Funcs) == 0 {
			return prune(n.Input, required)
		}
		c.Input = prune(n.Input, s)
		return &c
	case *DistinctNode:
		return &DistinctNode{Input: prune(n.Input, colSetOf(n.Input.Columns()))}
	case *SetOpNode:
		c := *n
		c.Left = prune(n.Left, colSetOf(n.Left.Columns()))
		c.Right = prune(n.Right, colSetOf(n.Right.Columns()))
		return &c
	}
	return p
}

// narrowest picks the column cheapest to read (fixed width first).
func narrowest(cols []Column) int {
	best, bestW := 0, 1<<30
	for i, c := range cols {
		w := 16
		if fw, ok := c.Type.(arrow.FixedWidthDataType); ok {
			w = fw.BitWidth()
		}
		if w < bestW {
			best, bestW = i, w
		}
	}
	return best
}

// Prepare binds stmt and optimizes every query plan it carries (a query,
// INSERT ... query, CREATE TABLE ... AS, and the statement of an EXPLAIN):
// the one call a session makes per parsed statement.
func Prepare(cat Catalog, src string, stmt sql.Statement) (Statement, error) {
	st, err := Bind(cat, src, stmt)
	if err != nil {
		return nil, err
	}
	if err := optimizeStatement(st); err != nil {
		return nil, err
	}
	return st, nil
}

func optimizeStatement(st Statement) error {
	var q *QueryStmt
	switch x := st.(type) {
	case *QueryStmt:
		q = x
	case *InsertStmt:
		q = x.Query
	case *CreateTableStmt:
		q = x.Query
	case *ExplainStmt:
		return optimizeStatement(x.Stmt)
	}
	if q == nil {
		return nil
	}
	p, err := Optimize(q.Plan)
	if err != nil {
		return err
	}
	q.Plan = p
	return nil
}
