package phys

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec"
	"slices"
)

func (pl *physPlanner) aggregate(n *plan.AggregateNode) (*pnode, error) {
	inNeed := plan.ColSet{}
	var exprs []plan.Expr
	for _, g := range n.Groups {
		inNeed.AddAll(plan.ColsOf(g))
		exprs = append(exprs, g)
	}
	for _, a := range n.Aggs {
		if a.Arg != nil {
			inNeed.AddAll(plan.ColsOf(a.Arg))
			arg := a.Arg
			if a.Distinct && a.Fn == plan.AggCount && plan.IsArray(arg.Type()) {
				// count(DISTINCT array): the distinct texts (arraykeys.go).
				arg = &plan.CastExpr{X: arg, Typ: plan.TypString}
			}
			exprs = append(exprs, arg)
		}
		if a.Filter != nil {
			inNeed.AddAll(plan.ColsOf(a.Filter))
			exprs = append(exprs, a.Filter)
		}
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	// Array group keys are grouped on their text (arraykeys.go).
	arrayGroups := textOfArrays(exprs[:len(n.Groups)])
	in, pos, err := pl.ensure(in, exprs)
	if err != nil {
		return nil, err
	}
	spec := exec.HashAggSpec{GroupCols: pos[:len(n.Groups)]}
	k := len(n.Groups)
	distinct := false
	for i, a := range n.Aggs {
		as := exec.AggSpec{Func: exec.AggFunc(a.Fn), Distinct: a.Distinct, Name: n.AggCols[i].Name, Sep: a.Sep, Quantile: a.Quantile, Desc: a.Desc}
		if a.Arg != nil {
			as.Arg = pos[k]
			k++
		}
		if a.Filter != nil {
			f := pos[k]
			as.Filter = &f
			k++
		}
		// NB: "distinct" is any aggregate needing a group's rows in one
		// place (DISTINCT, quantiles): no partial and final split.
		distinct = distinct || exec.NeedsAllRows(as)
		spec.Aggs = append(spec.Aggs, as)
	}
	var layout []plan.ColumnID
	for _, c := range n.GroupCols {
		layout = append(layout, c.ID)
	}
	for _, c := range n.AggCols {
		layout = append(layout, c.ID)
	}
	groups := pl.est.Rows(n)
	coarse := coarserKeys(in.n, spec.GroupCols)
	var out *pnode
	switch {
	case coarse != nil && !distinct && in.n.Streams > 1 && groups >= coarserGroups && pl.use(RuleRepartitionAgg):
		// count(DISTINCT v) GROUP BY g: the distinct (g, v) below is
		// repartitioned on g alone (coarserKeys), so this aggregate's
		// groups are whole in each stream: one phase, no partial, no
		// gather of partial states (Q16 on 4 workers gathered 70,852
		// partial counts to one task for 18,314 groups).
		ex := in.n.Inputs[0]
		x := *ex.Exchange
		x.Keys = coarse
		ex.Exchange = &x
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: in.n.Streams, Agg: &spec}, layout, groups, in)
	case pl.opts.Local && !distinct && len(spec.GroupCols) > 0 && segmentScan(in.n, spec.GroupCols) != nil && pl.use(RuleSegmentedAgg):
		// Every group's rows are in one stream and one row group: no
		// repartition, and groups are emitted a row group at a time.
		spec.Segmented = true
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: in.n.Streams, Agg: &spec}, layout, groups, in)
	case in.n.Streams == 1:
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: 1, Agg: &spec}, layout, groups, in)
	case distinct && len(spec.GroupCols) == 0:
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: 1, Agg: &spec}, layout, groups, pl.gather(in))
	case len(spec.GroupCols) > 0 && (distinct || n.Dedup || groups > pl.opts.RepartitionGroups && pl.use(RuleRepartitionAgg)):
		var rp *pnode
		if rp, err = pl.repartition(in, spec.GroupCols); err == nil {
			out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: rp.n.Streams, Agg: &spec}, layout, groups, rp)
		}
	default:
		partial, final, serr := exec.SplitAgg(spec)
		if serr != nil {
			return nil, serr
		}
		// The partial's layout: group keys, then each aggregate's states.
		var pLayout []plan.ColumnID
		pLayout = append(pLayout, layout[:len(n.GroupCols)]...)
		for range partialWidth(partial, in.schema) - len(n.GroupCols) {
			pLayout = append(pLayout, pl.newSynth())
		}
		pn, perr := pl.node(&PhysNode{Kind: PhysHashAgg, Streams: in.n.Streams, Agg: &partial}, pLayout, groups*float64(in.n.Streams), in)
		if perr != nil {
			return nil, perr
		}
		out, err = pl.node(&PhysNode{Kind: PhysHashAgg, Streams: 1, Agg: &final}, layout, groups, pl.gather(pn))
	}
	if err != nil {
		return nil, err
	}
	if arrayGroups {
		if out, err = pl.arraysFromText(out, n.Columns()); err != nil {
			return nil, err
		}
	}
	return pl.castTo(out, n.Columns())
}

// partialWidth is the number of columns of a partial aggregate's output.
func partialWidth(spec exec.HashAggSpec, in *arrow.Schema) int {
	a, err := exec.NewHashAgg(schemaStub{in}, spec)
	if err != nil {
		return len(spec.GroupCols) + len(spec.Aggs)
	}
	defer a.Close()
	return a.Schema().NumFields()
}

// coarserGroups is the fewest estimated groups for which an aggregate over
// a distinct aggregate of more columns repartitions the distinct one on
// its own groups (coarserKeys): enough that a cluster's tasks and streams
// (64 workers of 2 streams) each get some 32 groups.
const coarserGroups = 4096

// coarserKeys returns, when in is an aggregate of one phase and no
// aggregate functions (a DISTINCT of (g, v), the lower half of count(
// DISTINCT v) GROUP BY g) over a hash repartition on its group columns,
// of which groups (positions in its output) are a proper subset, the
// input columns of groups: the keys to repartition on instead (nil
// otherwise). The distinct's groups stay whole in a stream (they hold
// every such column), and so do the groups of an aggregate over it on
// groups.
func coarserKeys(in *PhysNode, groups []int) []int {
	if in.Kind != PhysHashAgg || in.Agg == nil || in.Agg.Phase != "" && in.Agg.Phase != exec.AggSingle || len(in.Agg.Aggs) > 0 || len(in.Inputs) != 1 {
		return nil
	}
	ex := in.Inputs[0]
	if ex.Kind != PhysExchange || ex.Exchange == nil || ex.Exchange.Kind != exec.ExchangeHash || !slices.Equal(ex.Exchange.Keys, in.Agg.GroupCols) {
		return nil
	}
	if len(groups) == 0 || len(groups) >= len(in.Agg.GroupCols) {
		return nil
	}
	keys := make([]int, len(groups))
	for i, g := range groups {
		if g >= len(in.Agg.GroupCols) {
			return nil
		}
		keys[i] = in.Agg.GroupCols[g]
	}
	return keys
}
