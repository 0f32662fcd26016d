package phys

import (
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec"
)

// sort plans ORDER BY keys, with a LIMIT when limit >= 0 (top-N).
func (pl *physPlanner) sort(input plan.Plan, keys []plan.SortKey, limit, offset int64, need plan.ColSet, est float64) (*pnode, error) {
	kneed := union(need, plan.ColSet{})
	exprs := make([]plan.Expr, len(keys))
	for i, k := range keys {
		kneed.AddAll(plan.ColsOf(k.Expr))
		exprs[i] = k.Expr
	}
	in, err := pl.plan(input, kneed)
	if err != nil {
		return nil, err
	}
	if in, err = pl.keepOnly(in, kneed); err != nil {
		return nil, err
	}
	in, pos, err := pl.ensure(in, exprs)
	if err != nil {
		return nil, err
	}
	sk := make([]exec.SortKey, len(keys))
	for i, k := range keys {
		sk[i] = exec.SortKey{Col: pos[i], Desc: k.Desc, Nulls: exec.NullsLast}
		if k.NullsFirst {
			sk[i].Nulls = exec.NullsFirst
		}
	}
	var out *pnode
	switch {
	case limit < 0:
		out, err = pl.node(&PhysNode{Kind: PhysSort, Streams: in.n.Streams, Sort: &exec.SortSpec{Keys: sk}}, in.layout, est, in)
		if err == nil && out.n.Streams > 1 {
			out, err = pl.merge(out, sk)
		}
	case in.n.Streams == 1:
		out, err = pl.node(&PhysNode{Kind: PhysTopN, Streams: 1, TopN: &exec.TopNSpec{Keys: sk, Limit: limit, Offset: offset}}, in.layout, est, in)
	default:
		local := &exec.TopNSpec{Keys: sk, Limit: limit + offset}
		out, err = pl.node(&PhysNode{Kind: PhysTopN, Streams: in.n.Streams, TopN: local}, in.layout, est*float64(in.n.Streams), in)
		if err == nil {
			out, err = pl.merge(out, sk)
		}
		if err == nil {
			out, err = pl.node(&PhysNode{Kind: PhysLimit, Streams: 1, Limit: &LimitOp{Limit: limit, Offset: offset}}, out.layout, est, out)
		}
	}
	if err != nil {
		return nil, err
	}
	return pl.dropSynth(out)
}

func (pl *physPlanner) limit(in *pnode, limit, offset int64, est float64) (*pnode, error) {
	if in.n.Streams > 1 {
		if limit >= 0 {
			local, err := pl.node(&PhysNode{Kind: PhysLimit, Streams: in.n.Streams, Limit: &LimitOp{Limit: limit + offset, Offset: 0}}, in.layout, est, in)
			if err != nil {
				return nil, err
			}
			in = local
		}
		in = pl.gather(in)
	}
	return pl.node(&PhysNode{Kind: PhysLimit, Streams: 1, Limit: &LimitOp{Limit: limit, Offset: offset}}, in.layout, est, in)
}

func (pl *physPlanner) distinct(in *pnode, est float64) (*pnode, error) {
	if in.n.Streams > 1 {
		keys := make([]int, len(in.layout))
		for i := range keys {
			keys[i] = i
		}
		var err error
		if in, err = pl.repartition(in, keys); err != nil {
			return nil, err
		}
	}
	return pl.node(&PhysNode{Kind: PhysDistinct, Streams: in.n.Streams, Distinct: &exec.DistinctSpec{}}, in.layout, est, in)
}
