package opt

import (
	"fmt"
	"strings"

	"github.com/nicflow/nicflow/engine/plan"
)

// ExplainOptions control ExplainPlan.
type ExplainOptions struct {
	// Verbose prints column IDs and types of every node's output.
	Verbose bool
	// NoRows omits the row estimates.
	NoRows bool
}

// ExplainPlan prints a logical plan as an indented tree, one node per
// line, each with its estimated row count (from catalog statistics). The
// plans of subqueries not yet decorrelated follow their node; shared
// subplans (a view used twice) are printed once, after the main plan.
func ExplainPlan(p plan.Plan, opts ExplainOptions) string {
	e := &explainer{opts: opts, est: NewEstimator(), shared: map[*plan.SharedDef]bool{}}
	e.node(p, 0)
	for i := 0; i < len(e.defs); i++ {
		d := e.defs[i]
		fmt.Fprintf(&e.b, "Shared %d (%s):\n", d.ID, d.Name)
		e.node(d.Plan, 1)
	}
	return e.b.String()
}

type explainer struct {
	b      strings.Builder
	opts   ExplainOptions
	est    *Estimator
	shared map[*plan.SharedDef]bool
	defs   []*plan.SharedDef
}

// x prints an expression, with column IDs in verbose mode.
func (e *explainer) x(x plan.Expr) string {
	if e.opts.Verbose {
		return plan.ExprVerbose(x)
	}
	return x.String()
}

func (e *explainer) exprList(es []plan.Expr) string {
	s := make([]string, len(es))
	for i, x := range es {
		s[i] = e.x(x)
	}
	return strings.Join(s, ", ")
}

func (e *explainer) keyList(ks []plan.SortKey) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = k.String()
		if e.opts.Verbose {
			s[i] = plan.ExprVerbose(k.Expr) + strings.TrimPrefix(s[i], k.Expr.String())
		}
	}
	return strings.Join(s, ", ")
}

func (e *explainer) colList(cols []plan.Column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = c.QualifiedName()
		if e.opts.Verbose {
			s[i] = fmt.Sprintf("#%d %s %s", c.ID, s[i], plan.TypeString(c.Type))
			if c.Nullable {
				s[i] += " null"
			}
		}
	}
	return strings.Join(s, ", ")
}

func FormatRows(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.1fG", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.0fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

func (e *explainer) node(p plan.Plan, depth int) {
	ind := strings.Repeat("  ", depth)
	var line string
	var subs []*plan.SubqueryExpr
	collect := func(es ...plan.Expr) {
		for _, x := range es {
			plan.WalkExpr(x, func(y plan.Expr) bool {
				if s, ok := y.(*plan.SubqueryExpr); ok {
					subs = append(subs, s)
				}
				return true
			})
		}
	}
	switch n := p.(type) {
	case *plan.ScanNode:
		// NB: a file table's name ends in its options after a NUL
		// (storage.FileTableName): shown without them.
		name, _, _ := strings.Cut(n.Table.Name, "\x00")
		line = fmt.Sprintf("Scan %s", name)
		if n.Alias != n.Table.Name {
			line += " AS " + n.Alias
		}
		line += " [" + e.colList(n.Cols) + "]"
		if len(n.Filters) > 0 {
			line += " filter=[" + e.exprList(n.Filters) + "]"
			collect(n.Filters...)
		}
	case *plan.FilterNode:
		line = "Filter " + e.x(n.Cond)
		collect(n.Cond)
	case *plan.ProjectNode:
		items := make([]string, len(n.Exprs))
		for i, x := range n.Exprs {
			c := n.Cols[i]
			if r, ok := x.(*plan.ColRef); ok && r.ID == c.ID {
				items[i] = e.colList([]plan.Column{c})
			} else {
				items[i] = e.colList([]plan.Column{c}) + " := " + e.x(x)
			}
		}
		line = "Project [" + strings.Join(items, ", ") + "]"
		collect(n.Exprs...)
	case *plan.AggregateNode:
		line = "Aggregate"
		if len(n.Groups) > 0 {
			items := make([]string, len(n.Groups))
			for i, g := range n.Groups {
				items[i] = e.x(g)
				if e.opts.Verbose {
					items[i] = e.colList([]plan.Column{n.GroupCols[i]}) + " := " + items[i]
				}
			}
			line += " group=[" + strings.Join(items, ", ") + "]"
		}
		if len(n.Aggs) > 0 {
			items := make([]string, len(n.Aggs))
			for i, a := range n.Aggs {
				items[i] = a.String()
				if e.opts.Verbose {
					items[i] = e.colList([]plan.Column{n.AggCols[i]}) + " := " + aggVerbose(a)
				}
			}
			line += " aggs=[" + strings.Join(items, ", ") + "]"
		}
	case *plan.JoinNode:
		line = "Join " + n.Kind.String()
		if n.NullAware {
			line += " null-aware"
		}
		if len(n.Equi) > 0 {
			items := make([]string, len(n.Equi))
			for i, q := range n.Equi {
				items[i] = e.x(q.Left) + " = " + e.x(q.Right)
			}
			line += " on [" + strings.Join(items, ", ") + "]"
		}
		if n.Cond != nil {
			line += " cond=[" + e.x(n.Cond) + "]"
			collect(n.Cond)
		}
		if n.Mark != nil {
			line += " mark=" + e.colList([]plan.Column{*n.Mark})
		}
		if len(n.Equi) > 0 && (n.Kind == plan.JoinInner || n.Kind == plan.JoinLeft || n.Kind == plan.JoinRight || n.Kind == plan.JoinFull) {
			line += " build=" + map[plan.BuildSide]string{plan.BuildRight: "right", plan.BuildLeft: "left"}[n.Build]
		}
	case *plan.SortNode:
		line = "Sort [" + e.keyList(n.Keys) + "]"
	case *plan.LimitNode:
		line = "Limit"
		if n.Limit >= 0 {
			line += fmt.Sprintf(" %d", n.Limit)
		}
		if n.Offset > 0 {
			line += fmt.Sprintf(" offset %d", n.Offset)
		}
	case *plan.TopNNode:
		line = fmt.Sprintf("TopN %d", n.Limit)
		if n.Offset > 0 {
			line += fmt.Sprintf(" offset %d", n.Offset)
		}
		line += " [" + e.keyList(n.Keys) + "]"
	case *plan.SetOpNode:
		line = "SetOp " + n.Kind.String()
		if n.All {
			line += " all"
		}
		line += " [" + e.colList(n.Cols) + "]"
	case *plan.DistinctNode:
		line = "Distinct"
	case *plan.WindowNode:
		items := make([]string, len(n.Funcs))
		for i, w := range n.Funcs {
			args := e.exprList(w.Args)
			switch w.Fn {
			case "lag", "lead", "nth_value":
				args += fmt.Sprintf(", %d", w.N)
			case "ntile":
				args = fmt.Sprint(w.N)
			}
			s := w.Fn + "(" + args + ") OVER ("
			var parts []string
			if len(w.PartitionBy) > 0 {
				parts = append(parts, "PARTITION BY "+e.exprList(w.PartitionBy))
			}
			if len(w.OrderBy) > 0 {
				parts = append(parts, "ORDER BY "+e.keyList(w.OrderBy))
			}
			if w.Frame != nil {
				parts = append(parts, fmt.Sprintf("%s %s..%s", strings.ToUpper(w.Frame.Mode), boundString(w.Frame.Start, w.Frame.StartOffset), boundString(w.Frame.End, w.Frame.EndOffset)))
			}
			items[i] = e.colList([]plan.Column{n.FuncCols[i]}) + " := " + s + strings.Join(parts, " ") + ")"
		}
		line = "Window [" + strings.Join(items, ", ") + "]"
	case *plan.SeriesNode:
		line = fmt.Sprintf("Series %d to %d step %d [%s]", n.Start, n.Stop, n.Step, e.colList([]plan.Column{n.Col}))
	case *plan.ValuesNode:
		line = fmt.Sprintf("Values %d rows", len(n.Rows))
		if len(n.Cols) > 0 {
			line += " [" + e.colList(n.Cols) + "]"
		}
	case *plan.RecursiveNode:
		line = "Recursive union"
		if !n.Distinct {
			line += " all"
		}
		line += fmt.Sprintf(" %d (%s) [%s]", n.Work.ID, n.Work.Name, e.colList(n.Cols))
	case *plan.UnnestNode:
		items := make([]string, len(n.Arrays))
		for i, a := range n.Arrays {
			items[i] = e.colList([]plan.Column{n.Elems[i], n.Subs[i]}) + " := " + e.exprList([]plan.Expr{a})
		}
		line = "Unnest [" + strings.Join(items, ", ") + "] ordinality [" + e.colList([]plan.Column{n.Ord}) + "]"
	case *plan.ApplyNode:
		switch {
		case n.Table && n.Left:
			line = fmt.Sprintf("Apply lateral %d per row, left (a row without any keeps NULLs) outer [%s]", n.SubID, e.colList(n.Outer))
		case n.Table:
			line = fmt.Sprintf("Apply lateral %d per row outer [%s]", n.SubID, e.colList(n.Outer))
		default:
			line = fmt.Sprintf("Apply subquery %d per row [%s := value] outer [%s]", n.SubID, e.colList([]plan.Column{n.Col}), e.colList(n.Outer))
		}
	case *plan.WorkScan:
		line = fmt.Sprintf("WorkScan %d (%s) [%s]", n.Work.ID, n.Work.Name, e.colList(n.Cols))
	case *plan.SharedScan:
		line = fmt.Sprintf("SharedScan %d (%s) [%s]", n.Def.ID, n.Def.Name, e.colList(n.Cols))
		if !e.shared[n.Def] {
			e.shared[n.Def] = true
			e.defs = append(e.defs, n.Def)
		}
	default:
		line = fmt.Sprintf("%T", p)
	}
	if !e.opts.NoRows {
		line += "  (rows " + FormatRows(e.est.Rows(p)) + ")"
	}
	e.b.WriteString(ind + line + "\n")
	for _, s := range subs {
		kind := map[plan.SubqueryKind]string{plan.SubScalar: "scalar", plan.SubExists: "exists", plan.SubIn: "in"}[s.Kind]
		fmt.Fprintf(&e.b, "%s  Subquery %d (%s", ind, s.ID, kind)
		if len(s.Outer) > 0 {
			fmt.Fprintf(&e.b, ", correlated")
		}
		e.b.WriteString("):\n")
		e.node(s.Plan, depth+2)
	}
	if a, ok := p.(*plan.ApplyNode); ok {
		fmt.Fprintf(&e.b, "%s  Subquery %d (run per row):\n", ind, a.SubID)
		e.node(a.Sub, depth+2)
	}
	for _, c := range p.Inputs() {
		e.node(c, depth+1)
	}
}

func boundString(k plan.FrameBoundKind, off plan.Expr) string {
	switch k {
	case plan.BoundUnboundedPreceding:
		return "unbounded preceding"
	case plan.BoundUnboundedFollowing:
		return "unbounded following"
	case plan.BoundCurrentRow:
		return "current row"
	case plan.BoundPreceding:
		return off.String() + " preceding"
	}
	return off.String() + " following"
}

func aggVerbose(a *plan.AggCall) string {
	if a.Fn == plan.AggCountStar {
		return "count(*)"
	}
	d := ""
	if a.Distinct {
		d = "DISTINCT "
	}
	f := ""
	if a.Filter != nil {
		f = " FILTER (WHERE " + plan.ExprVerbose(a.Filter) + ")"
	}
	return a.Fn + "(" + d + plan.ExprVerbose(a.Arg) + ")" + f
}
