package opt

import (
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/internal/nferr"
)

// The fallback of decorrelation: a subquery no rule turns into a join
// (correlated below a LIMIT, a window or a set operation, through two
// levels of subqueries, ...) is evaluated row by row, as SQL defines it:
// a plan.ApplyNode runs the subquery once for each distinct binding of the
// outer columns it reads. Slow for many distinct outer values, but right,
// so that no subquery shape is refused.
//
// Apply evaluates a scalar: EXISTS and IN become one first.
//   - EXISTS (q):   (SELECT count(*) > 0 FROM (q LIMIT 1))
//   - x IN (q):     the CASE of max(k) over q's rows, k = 2 where q's
//     column equals x, 1 where that comparison is NULL, 0 otherwise:
//     TRUE for 2, NULL for 1, FALSE for 0 or no row (SQL's three-valued
//     IN, so that NOT IN negates it right)

// applyFallback reports whether err, from decorrelating a subquery, is a
// shape the fallback evaluates (a query error: an unsupported shape).
func applyFallback(err error) bool {
	return err != nil && nferr.KindOf(err) == nferr.KindQuery
}

// apply evaluates subquery s, whose plan with its own subqueries
// decorrelated is lp, over input row by row; it returns the ApplyNode and
// the expression standing for s (its value column).
func (o *optimizer) apply(input plan.Plan, s *plan.SubqueryExpr, lp plan.Plan) (plan.Plan, plan.Expr) {
	sub := lp
	switch s.Kind {
	case plan.SubExists:
		n := o.newCol("count", plan.TypInt64, false)
		agg := &plan.AggregateNode{Input: &plan.LimitNode{Input: stripProjects(lp), Limit: 1}, Aggs: []*plan.AggCall{{Fn: plan.AggCountStar, Typ: plan.TypInt64}}, AggCols: []plan.Column{n}}
		sub = o.project(agg, "exists", plan.NewCall(plan.FnGt, plan.TypBool, plan.NewColRef(n), &plan.Const{Typ: plan.TypInt64, Val: int64(0)}))
	case plan.SubIn:
		eq := plan.NewCall(plan.FnEq, plan.TypBool, s.X, plan.NewColRef(lp.Columns()[0]))
		k := &plan.CaseExpr{
			Whens: []plan.Expr{eq, plan.NewCall(plan.FnIsNull, plan.TypBool, eq)},
			Thens: []plan.Expr{int32Const(2), int32Const(1)},
			Else:  int32Const(0),
			Typ:   plan.TypInt32,
		}
		kp := o.project(lp, "k", k)
		m := o.newCol("max", plan.TypInt32, true)
		agg := &plan.AggregateNode{Input: kp, Aggs: []*plan.AggCall{{Fn: plan.AggMax, Arg: plan.NewColRef(kp.Columns()[0]), Typ: plan.TypInt32}}, AggCols: []plan.Column{m}}
		is := func(v int32) plan.Expr {
			return plan.NewCall(plan.FnEq, plan.TypBool, plan.NewColRef(m), int32Const(v))
		}
		sub = o.project(agg, "in", &plan.CaseExpr{
			Whens: []plan.Expr{is(2), is(1)},
			Thens: []plan.Expr{plan.BoolConst(true), plan.NullConst(plan.TypBool)},
			Else:  plan.BoolConst(false),
			Typ:   plan.TypBool,
		})
	}
	sc := sub.Columns()[0]
	col := o.newCol("subquery", sc.Type, true)
	return &plan.ApplyNode{Input: input, Sub: sub, Outer: freeColumns(sub), Col: col, SubID: s.ID}, plan.NewColRef(col)
}

// project computes one expression over p, as a new column.
func (o *optimizer) project(p plan.Plan, name string, e plan.Expr) plan.Plan {
	return &plan.ProjectNode{Input: p, Exprs: []plan.Expr{e}, Cols: []plan.Column{o.newCol(name, e.Type(), true)}}
}

func int32Const(v int32) plan.Expr { return &plan.Const{Typ: plan.TypInt32, Val: v} }

// freeColumns lists the columns p refers to but does not produce, in the
// order first met.
func freeColumns(p plan.Plan) []plan.Column {
	free := plan.FreeCols(p)
	var out []plan.Column
	seen := plan.ColSet{}
	plan.WalkPlan(p, func(n plan.Plan) bool {
		for _, e := range plan.NodeExprs(n) {
			plan.WalkExpr(e, func(x plan.Expr) bool {
				if r, ok := x.(*plan.ColRef); ok && free.Has(r.ID) && !seen.Has(r.ID) {
					seen.Add(r.ID)
					out = append(out, plan.Column{ID: r.ID, Name: r.Name, Type: r.Typ, Nullable: true})
				}
				return true
			})
		}
		return true
	})
	return out
}
