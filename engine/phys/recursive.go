package phys

import (
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Recursive CTEs (plan.RecursiveNode). The recursive term runs once per
// step of the recursion, each run over the few rows the previous one
// added, while the rest of the term (the edges of a graph walk, say) is
// the same in every run. The planner makes each largest part of the term
// that does not read the work table a shared subplan, computed once and
// read by every run; what is left of the term is one stream over
// work_scan, shared_scan and values leaves: cheap to build again for every
// run, and whole in one task of a distributed plan.

// recursive plans a recursive node (see the file comment).
func (pl *physPlanner) recursive(n *plan.RecursiveNode) (*pnode, error) {
	cols := make([]PhysColumn, len(n.Cols))
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		t, err := expr.TypeOf(c.Type)
		if err != nil {
			return nil, err
		}
		cols[i] = PhysColumn{Name: c.QualifiedName(), Type: t, Nullable: c.Nullable}
		layout[i] = c.ID
	}
	if pl.work == nil {
		pl.work = map[*plan.WorkTable][]PhysColumn{}
	}
	pl.work[n.Work] = cols
	side := func(p plan.Plan) (*pnode, error) {
		in, err := pl.plan(p, plan.ColSetOf(p.Columns()))
		if err != nil {
			return nil, err
		}
		if in, err = pl.exact(in, p.Columns()); err != nil {
			return nil, err
		}
		if in.n.Streams > 1 {
			in = pl.gather(in)
		}
		return in, nil
	}
	anchor, err := side(n.Anchor)
	if err != nil {
		return nil, err
	}
	term, err := side(pl.hoistInvariant(n.Term, n.Work))
	if err != nil {
		return nil, err
	}
	var bad *PhysNode
	term.n.Walk(func(t *PhysNode) {
		if t.Streams != 1 || t.Kind == PhysScan || t.Kind == PhysExchange {
			bad = t
		}
	})
	if bad != nil {
		return nil, nferr.Internalf("physical planner: the recursive term of %s has a %s node of %d streams", n.Work.Name, bad.Kind, bad.Streams)
	}
	rec := &PhysNode{Kind: PhysRecursive, Streams: 1, Columns: cols, Recursive: &RecursiveOp{Work: n.Work.ID, Term: term.n, Distinct: n.Distinct}}
	return pl.node(rec, layout, pl.est.Rows(n), anchor)
}

// workScan plans a read of a recursive node's work table.
func (pl *physPlanner) workScan(n *plan.WorkScan) (*pnode, error) {
	wc, ok := pl.work[n.Work]
	if !ok || len(wc) != len(n.Cols) {
		return nil, nferr.Internalf("physical planner: work table %s read outside its recursive node", n.Work.Name)
	}
	cols := append([]PhysColumn(nil), wc...)
	layout := make([]plan.ColumnID, len(n.Cols))
	for i, c := range n.Cols {
		cols[i].Name = c.QualifiedName()
		layout[i] = c.ID
	}
	return pl.node(&PhysNode{Kind: PhysWorkScan, Streams: 1, Columns: cols, Work: &WorkOp{Work: n.Work.ID}}, layout, pl.est.Rows(n))
}

// hoistInvariant replaces each largest subtree of term that reads neither
// work nor anything else that changes between runs by a shared scan of
// it (constant relations stay: they are cheaper to compute again).
func (pl *physPlanner) hoistInvariant(term plan.Plan, work *plan.WorkTable) plan.Plan {
	if !readsWork(term, work) {
		if _, ok := term.(*plan.ValuesNode); ok {
			return term
		}
		if _, ok := term.(*plan.SharedScan); ok {
			return term
		}
		pl.hoisted++
		def := &plan.SharedDef{ID: -pl.hoisted, Name: work.Name + " (invariant part)", Plan: term}
		// NB: the scan keeps the subtree's column IDs: the subtree is no
		// longer in the plan, so they stay unique.
		return &plan.SharedScan{Def: def, Cols: term.Columns()}
	}
	in := term.Inputs()
	if len(in) == 0 {
		return term
	}
	nin := make([]plan.Plan, len(in))
	for i, c := range in {
		nin[i] = pl.hoistInvariant(c, work)
	}
	return term.WithInputs(nin)
}

// readsWork reports whether p reads work (in a WorkScan, or in a
// subquery of its expressions).
func readsWork(p plan.Plan, work *plan.WorkTable) bool {
	found := false
	plan.WalkPlanDeep(p, func(n plan.Plan) {
		if w, ok := n.(*plan.WorkScan); ok && w.Work == work {
			found = true
		}
	})
	return found
}
