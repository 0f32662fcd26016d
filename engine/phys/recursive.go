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
		in, err := pl.planExact(p)
		if err != nil {
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
	term, err := side(pl.hoistInvariant(n.Term, n.Work.Name))
	if err != nil {
		return nil, err
	}
	if err := checkRerun(term.n, "the recursive term of "+n.Work.Name); err != nil {
		return nil, err
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

// hoistInvariant replaces each largest subtree of term that is the same
// in every run (it reads no work table and no parameter) by a shared scan
// of it, named after the work table or subquery name; constant relations
// and shared scans stay.
func (pl *physPlanner) hoistInvariant(term plan.Plan, name string) plan.Plan {
	if !pl.variant(term) {
		switch term.(type) {
		case *plan.ValuesNode, *plan.SharedScan:
			return term
		}
		pl.hoisted++
		def := &plan.SharedDef{ID: -pl.hoisted, Name: name + " (invariant part)", Plan: term}
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
		nin[i] = pl.hoistInvariant(c, name)
	}
	return term.WithInputs(nin)
}

// variant reports whether p may give other rows in another run of a
// recursive term or subquery: it reads a work table or a parameter.
func (pl *physPlanner) variant(p plan.Plan) bool {
	found := false
	plan.WalkPlanDeep(p, func(n plan.Plan) {
		if _, ok := n.(*plan.WorkScan); ok {
			found = true
		}
	})
	if found {
		return true
	}
	for id := range plan.FreeCols(p) {
		if _, ok := pl.params[id]; ok {
			return true
		}
	}
	return false
}

// checkRerun verifies a tree built again for every run (a recursive term,
// an apply's subquery): one stream at the root and no scan (its leaves
// read shared subplans, work tables and constants; a set operation inside
// may still run its arms in parallel, through local exchanges).
func checkRerun(root *PhysNode, what string) error {
	if root.Streams != 1 {
		return nferr.Internalf("physical planner: %s has %d streams", what, root.Streams)
	}
	var bad *PhysNode
	root.Walk(func(t *PhysNode) {
		if t.Kind == PhysScan || t.Kind == PhysRemote {
			bad = t
		}
	})
	if bad != nil {
		return nferr.Internalf("physical planner: %s has a %s node", what, bad.Kind)
	}
	return nil
}
