package opt

import (
	"math"
	"strings"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Cardinality estimation from catalog statistics (row counts, per-column
// minimum, maximum, null count and distinct count). The estimates drive
// join ordering and build-side choice and are printed by EXPLAIN.
//
// The model is the textbook one (System R, as in PostgreSQL's and
// DuckDB's): columns are independent; col = const keeps 1/ndv; ranges
// interpolate between min and max; an equi-join keeps |L|*|R|/max(ndv_l,
// ndv_r); distinct counts shrink with the rows (ndv' = min(ndv, rows')).

// Default selectivities when statistics cannot tell (PostgreSQL's
// DEFAULT_INEQ_SEL is 1/3, DEFAULT_MATCH_SEL for LIKE is 0.005 but TPC-H's
// patterns are broader; 0.1 is DuckDB's-like guess for string matches).
const (
	defaultSel     = 1.0 / 3
	defaultEqSel   = 0.005
	defaultLikeSel = 0.1
	defaultNullSel = 0.01
)

type ColStat struct {
	Ndv      float64
	Min, Max float64 // valid when hasRange
	HasRange bool
	nullFrac float64
}

type RelStats struct {
	Rows float64
	Cols map[plan.ColumnID]*ColStat
}

type Estimator struct {
	memo map[plan.Plan]*RelStats
}

func NewEstimator() *Estimator { return &Estimator{memo: map[plan.Plan]*RelStats{}} }

func (e *Estimator) Rows(p plan.Plan) float64 { return e.stats(p).Rows }

// ndv is the distinct count of column id in p's output (rows when unknown).
func (r *RelStats) ndv(id plan.ColumnID) float64 {
	if c, ok := r.Cols[id]; ok && c.Ndv > 0 {
		return math.Min(c.Ndv, math.Max(r.Rows, 1))
	}
	return math.Max(r.Rows, 1)
}

// numeric converts a statistics or constant value to a float64 on one
// scale per type (dates as days, decimals as their value), for range
// interpolation.
func numeric(v any, t arrow.DataType) (float64, bool) {
	switch x := v.(type) {
	case int32:
		return float64(x), true
	case int64:
		if plan.IsDecimal(t) {
			_, s, _ := plan.DecimalPS(t)
			return float64(x) / math.Pow10(int(s)), true
		}
		return float64(x), true
	case float64:
		return x, true
	case arrow.Date32:
		return float64(x), true
	case decimal128.Num:
		_, s, _ := plan.DecimalPS(t)
		return x.ToFloat64(s), true
	}
	return 0, false
}

func (e *Estimator) stats(p plan.Plan) *RelStats {
	if s, ok := e.memo[p]; ok {
		return s
	}
	s := e.compute(p)
	if s.Rows < 1 {
		s.Rows = 1
	}
	e.memo[p] = s
	return s
}

func copyCols(m map[plan.ColumnID]*ColStat) map[plan.ColumnID]*ColStat {
	out := make(map[plan.ColumnID]*ColStat, len(m))
	for k, v := range m {
		c := *v
		out[k] = &c
	}
	return out
}

// withRows scales a relation to new row count: distinct counts shrink.
func withRows(in *RelStats, rows float64) *RelStats {
	out := &RelStats{Rows: rows, Cols: copyCols(in.Cols)}
	for _, c := range out.Cols {
		if c.Ndv > rows {
			c.Ndv = math.Max(rows, 1)
		}
	}
	return out
}

// listedValues lowers a column's distinct count to the constants a
// filter lets through: c = k leaves one value, c IN (k1, k2) or
// c = k1 OR c = k2 as many as listed (TPC-DS q4's d_year = 2001 OR
// d_year = 2002 left two years of 200, not 200).
func listedValues(st *RelStats, cond plan.Expr) *RelStats {
	for _, c := range plan.Conjuncts(cond) {
		id, n, ok := listedCol(c)
		if !ok {
			continue
		}
		if cs, found := st.Cols[id]; found && cs.Ndv > float64(n) {
			cs.Ndv = float64(n)
		}
	}
	return st
}

// listedCol returns the column a predicate compares with n constants
// (c = k, c IN (...), an OR of those on one column).
func listedCol(e plan.Expr) (plan.ColumnID, int, bool) {
	c, ok := e.(*plan.Call)
	if !ok {
		return 0, 0, false
	}
	switch c.Fn {
	case plan.FnEq:
		if len(c.Args) != 2 {
			return 0, 0, false
		}
		r, ok1 := c.Args[0].(*plan.ColRef)
		_, ok2 := c.Args[1].(*plan.Const)
		if !ok1 || !ok2 {
			r, ok1 = c.Args[1].(*plan.ColRef)
			_, ok2 = c.Args[0].(*plan.Const)
		}
		if ok1 && ok2 {
			return r.ID, 1, true
		}
	case plan.FnIn:
		r, ok := c.Args[0].(*plan.ColRef)
		if !ok {
			return 0, 0, false
		}
		for _, a := range c.Args[1:] {
			if _, ok := a.(*plan.Const); !ok {
				return 0, 0, false
			}
		}
		return r.ID, len(c.Args) - 1, true
	case plan.FnOr:
		var id plan.ColumnID
		total := 0
		for i, d := range plan.Disjuncts(e) {
			did, n, ok := listedCol(d)
			if !ok || i > 0 && did != id {
				return 0, 0, false
			}
			id, total = did, total+n
		}
		return id, total, true
	}
	return 0, 0, false
}

func (e *Estimator) compute(p plan.Plan) *RelStats {
	switch n := p.(type) {
	case *plan.ScanNode:
		rows := n.Table.RowCount()
		s := &RelStats{Rows: rows, Cols: map[plan.ColumnID]*ColStat{}}
		for i, c := range n.Cols {
			cs := &ColStat{Ndv: rows}
			if st := n.Table.ColStats(n.Fields[i]); st != nil {
				if st.Distinct > 0 {
					cs.Ndv = float64(st.Distinct)
				}
				if rows > 0 {
					cs.nullFrac = float64(st.Nulls) / rows
				}
				lo, ok1 := numeric(st.Min, c.Type)
				hi, ok2 := numeric(st.Max, c.Type)
				if ok1 && ok2 {
					cs.Min, cs.Max, cs.HasRange = lo, hi, true
				}
			}
			s.Cols[c.ID] = cs
		}
		if len(n.Filters) > 0 {
			return listedValues(withRows(s, rows*e.Sel(plan.AndOf(n.Filters), s)), plan.AndOf(n.Filters))
		}
		return s
	case *plan.FilterNode:
		in := e.stats(n.Input)
		return listedValues(withRows(in, in.Rows*e.Sel(n.Cond, in)), n.Cond)
	case *plan.ProjectNode:
		in := e.stats(n.Input)
		out := &RelStats{Rows: in.Rows, Cols: map[plan.ColumnID]*ColStat{}}
		for i, x := range n.Exprs {
			if r, ok := x.(*plan.ColRef); ok {
				if c, ok := in.Cols[r.ID]; ok {
					cc := *c
					out.Cols[n.Cols[i].ID] = &cc
				}
				continue
			}
			out.Cols[n.Cols[i].ID] = &ColStat{Ndv: exprNDV(x, in)}
		}
		return out
	case *plan.AggregateNode:
		in := e.stats(n.Input)
		out := &RelStats{Cols: map[plan.ColumnID]*ColStat{}}
		groups := 1.0
		for i, g := range n.Groups {
			d := exprNDV(g, in)
			groups *= d
			cs := &ColStat{Ndv: d}
			if r, ok := g.(*plan.ColRef); ok {
				if c, ok := in.Cols[r.ID]; ok {
					cc := *c
					cs = &cc
				}
			}
			out.Cols[n.GroupCols[i].ID] = cs
		}
		if len(n.Groups) > 0 {
			out.Rows = math.Min(groups, in.Rows)
		} else {
			out.Rows = 1
		}
		for _, c := range n.AggCols {
			out.Cols[c.ID] = &ColStat{Ndv: out.Rows}
		}
		return out
	case *plan.JoinNode:
		l, r := e.stats(n.Left), e.stats(n.Right)
		both := &RelStats{Rows: l.Rows * r.Rows, Cols: copyCols(l.Cols)}
		for k, v := range r.Cols {
			c := *v
			both.Cols[k] = &c
		}
		// Several keys: the distinct count of the key combination is the
		// product of the columns' counts, at most the side's row count.
		ndvL, ndvR := 1.0, 1.0
		lInR, rInL := true, true // every key's values contained in the other side's
		for _, q := range n.Equi {
			dl, dr := exprNDV(q.Left, l), exprNDV(q.Right, r)
			ndvL *= dl
			ndvR *= dr
			lInR = lInR && dl <= dr
			rInL = rInL && dr <= dl
		}
		ndvL, ndvR = math.Min(ndvL, math.Max(l.Rows, 1)), math.Min(ndvR, math.Max(r.Rows, 1))
		// NB: a semi or anti join's match fraction is the share of the
		// left's key combinations the right holds, before containment is
		// assumed below (which would make every sale have a return:
		// TPC-DS q78's sales ANTI JOIN returns on ticket and item).
		semiL, semiR := ndvL, ndvR
		// Containment of key combinations: when each key column of one side
		// has no more values than the other's, assume its combinations
		// occur on the other side too (a foreign key into partsupp's
		// (partkey, suppkey), TPC-H Q9, Q20): it has at most as many.
		if len(n.Equi) > 1 {
			if lInR {
				ndvL = math.Min(ndvL, ndvR)
			} else if rInL {
				ndvR = math.Min(ndvR, ndvL)
			}
		}
		inner := l.Rows * r.Rows
		if len(n.Equi) > 0 {
			inner /= math.Max(math.Max(ndvL, ndvR), 1)
		}
		if n.Cond != nil {
			inner *= e.Sel(n.Cond, both)
		}
		var rows float64
		switch n.Kind {
		case plan.JoinInner:
			rows = inner
		case plan.JoinLeft, plan.JoinSingle:
			rows = math.Max(inner, l.Rows)
		case plan.JoinRight:
			rows = math.Max(inner, r.Rows)
		case plan.JoinFull:
			rows = math.Max(inner, l.Rows+r.Rows)
		case plan.JoinSemi, plan.JoinAnti, plan.JoinMark:
			frac := 0.5
			if len(n.Equi) > 0 {
				frac = math.Min(1, semiR/math.Max(semiL, 1))
			}
			if n.Cond != nil && len(n.Equi) > 0 {
				frac *= 0.5 // the residual rejects some matches
			}
			switch n.Kind {
			case plan.JoinSemi:
				rows = l.Rows * frac
			case plan.JoinAnti:
				rows = l.Rows * math.Max(1-frac, 0.1)
			default:
				rows = l.Rows
			}
			return withRows(l, rows)
		}
		out := withRows(both, rows)
		if n.Kind == plan.JoinInner || n.Kind == plan.JoinSemi {
			// Matching rows share their key values: after the join a key
			// has at most the smaller side's distinct count.
			for _, q := range n.Equi {
				lr, ok1 := q.Left.(*plan.ColRef)
				rr, ok2 := q.Right.(*plan.ColRef)
				if !ok1 || !ok2 {
					continue
				}
				d := math.Min(l.ndv(lr.ID), r.ndv(rr.ID))
				for _, id := range []plan.ColumnID{lr.ID, rr.ID} {
					if c, ok := out.Cols[id]; ok && c.Ndv > d {
						c.Ndv = d
					}
				}
			}
		}
		return out
	case *plan.SortNode:
		return e.stats(n.Input)
	case *plan.LimitNode:
		in := e.stats(n.Input)
		if n.Limit >= 0 && float64(n.Limit) < in.Rows {
			return withRows(in, float64(n.Limit))
		}
		return in
	case *plan.TopNNode:
		in := e.stats(n.Input)
		if float64(n.Limit) < in.Rows {
			return withRows(in, float64(n.Limit))
		}
		return in
	case *plan.SetOpNode:
		l, r := e.stats(n.Left), e.stats(n.Right)
		rows := l.Rows + r.Rows
		switch n.Kind {
		case plan.SetIntersect:
			rows = math.Min(l.Rows, r.Rows)
		case plan.SetExcept:
			rows = l.Rows
		}
		// A column has at most the values of both inputs' columns (a
		// key of a UNION ALL of sales and returns has the store keys'
		// count, not one per row: TPC-DS q5, q77, q80), over both ranges.
		out := distinctRows(n.Cols, rows)
		lc, rc := n.Left.Columns(), n.Right.Columns()
		for i, c := range n.Cols {
			if i >= len(lc) || i >= len(rc) {
				break
			}
			a, b := l.Cols[lc[i].ID], r.Cols[rc[i].ID]
			if a == nil || b == nil || a.Ndv <= 0 || b.Ndv <= 0 {
				continue
			}
			cs := &ColStat{Ndv: math.Max(1, math.Min(rows, math.Min(a.Ndv, l.Rows)+math.Min(b.Ndv, r.Rows)))}
			if a.HasRange && b.HasRange {
				cs.HasRange, cs.Min, cs.Max = true, math.Min(a.Min, b.Min), math.Max(a.Max, b.Max)
			}
			if rows > 0 {
				cs.nullFrac = (a.nullFrac*l.Rows + b.nullFrac*r.Rows) / (l.Rows + r.Rows)
			}
			out.Cols[c.ID] = cs
		}
		return out
	case *plan.DistinctNode:
		in := e.stats(n.Input)
		d := 1.0
		for _, c := range n.Input.Columns() {
			d *= in.ndv(c.ID)
		}
		return withRows(in, math.Min(d, in.Rows))
	case *plan.WindowNode:
		in := e.stats(n.Input)
		out := &RelStats{Rows: in.Rows, Cols: copyCols(in.Cols)}
		for _, c := range n.FuncCols {
			out.Cols[c.ID] = &ColStat{Ndv: in.Rows}
		}
		return out
	case *plan.ValuesNode:
		return distinctRows(n.Cols, float64(len(n.Rows)))
	case *plan.SeriesNode:
		rows := 0.0
		if n.Step != 0 && (n.Step > 0) == (n.Stop >= n.Start) {
			rows = math.Abs(float64(n.Stop)-float64(n.Start))/math.Abs(float64(n.Step)) + 1
		}
		return distinctRows([]plan.Column{n.Col}, rows)
	case *plan.RecursiveNode:
		// A guess: ten runs of the term, each adding the anchor's rows.
		rows := math.Max(e.stats(n.Anchor).Rows, 1) * 10
		return distinctRows(n.Cols, rows)
	case *plan.UnnestNode:
		// A guess: arrays of four elements.
		in := e.stats(n.Input)
		out := &RelStats{Rows: in.Rows * 4, Cols: copyCols(in.Cols)}
		for i := range n.Elems {
			out.Cols[n.Elems[i].ID] = &ColStat{Ndv: out.Rows}
			out.Cols[n.Subs[i].ID] = &ColStat{Ndv: 4}
		}
		out.Cols[n.Ord.ID] = &ColStat{Ndv: 4}
		return out
	case *plan.ApplyNode:
		in := e.stats(n.Input)
		out := &RelStats{Rows: in.Rows, Cols: copyCols(in.Cols)}
		if n.Table {
			// A guess: the subquery's own estimate per input row, at
			// least one.
			sub := e.stats(n.Sub)
			out.Rows = in.Rows * max(1, sub.Rows)
			for id, c := range sub.Cols {
				out.Cols[id] = c
			}
			return out
		}
		out.Cols[n.Col.ID] = &ColStat{Ndv: in.Rows}
		return out
	case *plan.WorkScan:
		// A guess: the rows one run of a recursive term adds.
		return distinctRows(n.Cols, workScanRows)
	case *plan.SharedScan:
		in := e.stats(n.Def.Plan)
		out := &RelStats{Rows: in.Rows, Cols: map[plan.ColumnID]*ColStat{}}
		for i, c := range n.Def.Plan.Columns() {
			if cs, ok := in.Cols[c.ID]; ok {
				cc := *cs
				out.Cols[n.Cols[i].ID] = &cc
			}
		}
		return out
	}
	return &RelStats{Rows: plan.DefaultTableRows, Cols: map[plan.ColumnID]*ColStat{}}
}

// distinctRows is the stats of rows rows over cols, every value distinct.
func distinctRows(cols []plan.Column, rows float64) *RelStats {
	out := &RelStats{Rows: rows, Cols: map[plan.ColumnID]*ColStat{}}
	for _, c := range cols {
		out.Cols[c.ID] = &ColStat{Ndv: rows}
	}
	return out
}

// workScanRows is the estimate of a recursive CTE's work table: the rows
// one run of its term adds (unknown when planning; usually few).
const workScanRows = 1000

// exprNDV estimates the distinct count of an expression's values.
func exprNDV(x plan.Expr, in *RelStats) float64 {
	switch y := x.(type) {
	case *plan.ColRef:
		return in.ndv(y.ID)
	case *plan.Const:
		return 1
	case *plan.CastExpr:
		return exprNDV(y.X, in)
	case *plan.Call:
		switch y.Fn {
		case plan.FnExtract:
			// extract(year ...) of TPC-H's seven years: the year count is the
			// date range in years; without a range, 10.
			if c, ok := y.Args[0].(*plan.Const); ok && c.Val == "year" {
				if r, ok := y.Args[1].(*plan.ColRef); ok {
					if cs, ok := in.Cols[r.ID]; ok && cs.HasRange {
						return math.Max(1, math.Min((cs.Max-cs.Min)/365.25+1, in.ndv(r.ID)))
					}
				}
				return math.Min(10, in.Rows)
			}
		case "substring":
			// A prefix has fewer values than the string.
			return math.Min(in.Rows, math.Max(1, math.Sqrt(exprNDV(y.Args[0], in))))
		}
		d := 1.0
		for _, a := range y.Args {
			d *= exprNDV(a, in)
		}
		return math.Min(d, math.Max(in.Rows, 1))
	}
	return math.Max(in.Rows, 1)
}

// Sel estimates the fraction of rows for which cond is TRUE.
func (e *Estimator) Sel(cond plan.Expr, in *RelStats) float64 {
	s := e.selRaw(cond, in)
	return math.Max(math.Min(s, 1), 1e-9)
}

func (e *Estimator) selRaw(cond plan.Expr, in *RelStats) float64 {
	switch x := cond.(type) {
	case *plan.Const:
		if x.Val == true {
			return 1
		}
		return 0
	case *plan.ColRef:
		return 0.5
	case *plan.Call:
		switch x.Fn {
		case plan.FnAnd:
			return e.andSel(x.Args, in)
		case plan.FnOr:
			s := 1.0
			for _, a := range x.Args {
				s *= 1 - e.Sel(a, in)
			}
			return 1 - s
		case plan.FnNot:
			return 1 - e.Sel(x.Args[0], in)
		case plan.FnIsNull, plan.FnNotNull:
			f := defaultNullSel
			if r, ok := x.Args[0].(*plan.ColRef); ok {
				if c, ok := in.Cols[r.ID]; ok {
					f = c.nullFrac
				}
			}
			if x.Fn == plan.FnNotNull {
				return 1 - f
			}
			return f
		case plan.FnEq, plan.FnNe, plan.FnNotDist, plan.FnDistinct:
			s := eqSel(x.Args[0], x.Args[1], in)
			if x.Fn == plan.FnNe || x.Fn == plan.FnDistinct {
				return 1 - s
			}
			return s
		case plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
			return rangeSel(x, in)
		case plan.FnIn:
			s := 0.0
			for _, v := range x.Args[1:] {
				s += eqSel(x.Args[0], v, in)
			}
			return s
		case plan.FnLike:
			if c, ok := x.Args[1].(*plan.Const); ok {
				if p, ok := c.Val.(string); ok && !strings.ContainsAny(p, "%_") {
					return eqSel(x.Args[0], c, in)
				}
			}
			return defaultLikeSel
		}
	}
	return defaultSel
}

// andSel is the selectivity of a conjunction. Bounds on one column
// (a >= x AND a < y, as BETWEEN becomes) are one range, not independent
// predicates: each alone keeps much of the table, together a slice, and
// multiplying them overestimates a one-month window of a seven-year date
// column twentyfold (PostgreSQL's clauselist_selectivity pairs them too).
func (e *Estimator) andSel(args []plan.Expr, in *RelStats) float64 {
	type bounds struct{ lo, hi float64 }
	ranges := map[plan.ColumnID]*bounds{}
	var order []plan.ColumnID
	s := 1.0
	for _, a := range args {
		id, v, lower, ok := rangeBound(a, in)
		if !ok {
			s *= e.Sel(a, in)
			continue
		}
		b := ranges[id]
		if b == nil {
			cs := in.Cols[id]
			b = &bounds{cs.Min, cs.Max}
			ranges[id] = b
			order = append(order, id)
		}
		if lower {
			b.lo = math.Max(b.lo, v)
		} else {
			b.hi = math.Min(b.hi, v)
		}
	}
	for _, id := range order {
		cs, b := in.Cols[id], ranges[id]
		frac := math.Max(0, b.hi-b.lo) / (cs.Max - cs.Min)
		// At least one distinct value's share: a range between two
		// neighbouring values still matches the rows of one of them.
		if cs.Ndv > 0 {
			frac = math.Max(frac, 1/cs.Ndv)
		}
		s *= math.Min(frac, 1)
	}
	return s
}

// rangeBound reads col op const (either way round) as a bound on a column
// with a known range: its value on the statistics' scale and whether it is
// a lower bound.
func rangeBound(a plan.Expr, in *RelStats) (plan.ColumnID, float64, bool, bool) {
	x, ok := a.(*plan.Call)
	if !ok || (x.Fn != plan.FnLt && x.Fn != plan.FnLe && x.Fn != plan.FnGt && x.Fn != plan.FnGe) {
		return 0, 0, false, false
	}
	col, okc := x.Args[0].(*plan.ColRef)
	k, okk := x.Args[1].(*plan.Const)
	fn := x.Fn
	if !okc || !okk {
		col, okc = x.Args[1].(*plan.ColRef)
		k, okk = x.Args[0].(*plan.Const)
		fn = map[string]string{plan.FnLt: plan.FnGt, plan.FnLe: plan.FnGe, plan.FnGt: plan.FnLt, plan.FnGe: plan.FnLe}[fn]
	}
	if !okc || !okk || k.IsNull() {
		return 0, 0, false, false
	}
	cs, ok := in.Cols[col.ID]
	if !ok || !cs.HasRange || cs.Max <= cs.Min {
		return 0, 0, false, false
	}
	v, ok := numeric(k.Val, k.Typ)
	if !ok {
		return 0, 0, false, false
	}
	return col.ID, v, fn == plan.FnGt || fn == plan.FnGe, true
}

// eqSel is the selectivity of a = b.
func eqSel(a, b plan.Expr, in *RelStats) float64 {
	_, ca := a.(*plan.Const)
	_, cb := b.(*plan.Const)
	switch {
	case ca && cb:
		return defaultEqSel
	case cb:
		return 1 / exprNDV(a, in)
	case ca:
		return 1 / exprNDV(b, in)
	}
	return 1 / math.Max(exprNDV(a, in), exprNDV(b, in))
}

// rangeSel interpolates col op const between the column's min and max.
func rangeSel(x *plan.Call, in *RelStats) float64 {
	id, v, lower, ok := rangeBound(x, in)
	if !ok {
		return defaultSel
	}
	cs := in.Cols[id]
	frac := (v - cs.Min) / (cs.Max - cs.Min) // fraction below v
	frac = math.Max(0, math.Min(1, frac))
	if lower {
		frac = 1 - frac
	}
	return frac
}
