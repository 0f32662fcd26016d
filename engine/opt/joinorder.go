package opt

import (
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
)

var ruleJoinOrder = &Rule{
	Name:   RuleJoinOrder,
	Shapes: "chains of inner joins are reordered by estimated cost, and the build side of each join is chosen",
	apply: func(o *optimizer, p plan.Plan) (plan.Plan, error) {
		o.est = NewEstimator()
		return o.reorderJoins(p), nil
	},
}

// Rule: join ordering and build sides.
//
// Each maximal tree of inner joins is flattened into its relations and
// predicates and rebuilt in the order that minimizes the sum of the
// estimated intermediate result sizes (C_out), by dynamic programming over
// connected subsets for up to maxDPRelations relations, greedily beyond.
// Cross products are considered only when the predicates leave no other
// way. Every predicate is placed at the lowest join that has its columns:
// equalities across the two sides become hash keys, the rest residuals.
// In an inner join the larger input is the left (probe) side and the
// smaller the right (build) side; outer joins keep their sides and build
// on the smaller one.

// maxDPRelations bounds the exhaustive search: 3^10 subset pairs (59k
// estimates) plan in milliseconds; TPC-H's largest join has 8 relations.
const maxDPRelations = 10

// maxGreedyRelations bounds the greedy search, which estimates O(n^3)
// joins: beyond 32 relations (5k estimates) the joins follow the order
// the query wrote, except that each step takes the first relation a
// predicate connects to those joined so far (a cross product only when
// none is), with each predicate at the lowest join that has its columns:
// a generated 500-table FROM list plans in bounded time, and a 64-table
// chain written out of order joins along its predicates.
const maxGreedyRelations = 32

func (o *optimizer) reorderJoins(p plan.Plan) plan.Plan {
	if j, ok := p.(*plan.JoinNode); ok {
		if j.Kind == plan.JoinInner {
			var leaves []plan.Plan
			var preds []plan.Expr
			flattenInner(j, &leaves, &preds)
			for i := range leaves {
				leaves[i] = o.reorderJoins(leaves[i])
			}
			return o.orderJoins(leaves, preds)
		}
		c := *j
		c.Left, c.Right = o.reorderJoins(j.Left), o.reorderJoins(j.Right)
		o.chooseBuild(&c)
		return &c
	}
	in := p.Inputs()
	if len(in) == 0 {
		return p
	}
	nin := make([]plan.Plan, len(in))
	for i, c := range in {
		nin[i] = o.reorderJoins(c)
	}
	return p.WithInputs(nin)
}

func flattenInner(p plan.Plan, leaves *[]plan.Plan, preds *[]plan.Expr) {
	j, ok := p.(*plan.JoinNode)
	if !ok || j.Kind != plan.JoinInner {
		*leaves = append(*leaves, p)
		return
	}
	flattenInner(j.Left, leaves, preds)
	flattenInner(j.Right, leaves, preds)
	for _, q := range j.Equi {
		*preds = append(*preds, plan.NewCall(plan.FnEq, plan.TypBool, q.Left, q.Right))
	}
	*preds = append(*preds, plan.Conjuncts(j.Cond)...)
}

// chooseBuild picks the smaller input as a hash join's build side.
func (o *optimizer) chooseBuild(j *plan.JoinNode) {
	switch j.Kind {
	case plan.JoinInner, plan.JoinLeft, plan.JoinRight, plan.JoinFull:
		if o.est.Rows(j.Left) < o.est.Rows(j.Right) {
			j.Build = plan.BuildLeft
		} else {
			j.Build = plan.BuildRight
		}
	default:
		j.Build = plan.BuildRight
	}
}

type dpEntry struct {
	plan plan.Plan
	rows float64
	cost float64
}

// orderJoins joins leaves under preds in the cheapest order found.
func (o *optimizer) orderJoins(leaves []plan.Plan, preds []plan.Expr) plan.Plan {
	n := len(leaves)
	lcols := make([]plan.ColSet, n)
	for i, l := range leaves {
		lcols[i] = plan.ColSetOf(l.Columns())
	}
	// Classify predicates by how many leaves they touch.
	var constPreds, multi []plan.Expr
	var touched [][]int
	single := make([][]plan.Expr, n)
	for _, p := range preds {
		cs := plan.ColsOf(p)
		var ts []int
		for i := range leaves {
			if cs.Intersects(lcols[i]) {
				ts = append(ts, i)
			}
		}
		switch len(ts) {
		case 0:
			constPreds = append(constPreds, p)
		case 1:
			single[ts[0]] = append(single[ts[0]], p)
		default:
			multi = append(multi, p)
			touched = append(touched, ts)
		}
	}
	for i := range leaves {
		if len(single[i]) > 0 {
			// Pushdown normally placed these already; keep them correct.
			leaves[i] = o.push(leaves[i], single[i])
		}
	}
	var plan plan.Plan
	if n > maxGreedyRelations {
		plan = o.asWritten(leaves, multi, touched)
	} else {
		// INVARIANT: n <= maxGreedyRelations < 64, so masks fit a uint64.
		masks := make([]uint64, len(multi))
		for k, ts := range touched {
			for _, i := range ts {
				masks[k] |= 1 << i
			}
		}
		var class []int
		multi, masks, class = deriveEqualities(multi, masks, lcols)
		if n <= maxDPRelations {
			plan = o.dp(leaves, multi, masks, class, false)
			if plan == nil {
				plan = o.dp(leaves, multi, masks, class, true)
			}
		} else {
			plan = o.greedy(leaves, multi, masks, class)
		}
	}
	return filterOver(plan, constPreds)
}

// joinPreds returns the predicates to apply when joining s1 and s2: those
// within s1|s2 that touch both, but only one equality of each column
// equivalence class (class[k] >= 0; see deriveEqualities): the others
// follow from it and from the equalities already applied inside s1 and s2.
func joinPreds(preds []plan.Expr, masks []uint64, class []int, s1, s2 uint64) []plan.Expr {
	var out []plan.Expr
	var seen uint64 // classes already joined on (the first 64)
	for k, m := range masks {
		if m&^(s1|s2) == 0 && m&s1 != 0 && m&s2 != 0 {
			if c := class[k]; c >= 0 && c < 64 {
				if seen&(1<<c) != 0 {
					continue
				}
				seen |= 1 << c
			}
			out = append(out, preds[k])
		}
	}
	return out
}

// deriveEqualities adds the equalities that follow from the join
// predicates by transitivity: with a.x = b.y and b.y = c.z, also a.x =
// c.z, so that a and c may join directly (TPC-H Q5: customer joins nation
// on c_nationkey = n_nationkey, through s_nationkey, and the orders of
// one region's customers are found before lineitem is probed). It returns
// the predicates and masks with the derived ones appended, and each
// predicate's equivalence class (-1 for predicates outside one).
//
// A class is formed by equalities between two plain columns of the same
// type in two different leaves, and is used only when each of its leaves
// holds one of its columns: then, joining up any set of leaves on one
// equality of the class per join (joinPreds), every column of the class
// inside a joined set is equal to every other, and a further equality of
// the class between two sets is implied by any one of them. (A leaf with
// two columns of a class does not know them equal by itself; such
// classes are left as written.)
func deriveEqualities(preds []plan.Expr, masks []uint64, lcols []plan.ColSet) ([]plan.Expr, []uint64, []int) {
	class := make([]int, len(preds))
	for k := range class {
		class[k] = -1
	}
	type member struct {
		ref  *plan.ColRef
		leaf int
	}
	parent := map[plan.ColumnID]plan.ColumnID{}
	var find func(plan.ColumnID) plan.ColumnID
	find = func(x plan.ColumnID) plan.ColumnID {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	leafOf := func(id plan.ColumnID) int {
		for i, cs := range lcols {
			if cs.Has(id) {
				return i
			}
		}
		return -1
	}
	refs := map[plan.ColumnID]member{}
	eqs := make([][2]*plan.ColRef, len(preds))
	for k, p := range preds {
		a, b, ok := columnEquality(p)
		if !ok {
			continue
		}
		la, lb := leafOf(a.ID), leafOf(b.ID)
		if la < 0 || lb < 0 || la == lb || masks[k] != 1<<la|1<<lb {
			continue
		}
		eqs[k] = [2]*plan.ColRef{a, b}
		refs[a.ID], refs[b.ID] = member{a, la}, member{b, lb}
		parent[find(a.ID)] = find(b.ID)
	}
	if len(refs) < 3 {
		return preds, masks, class
	}
	// Classes in a stable order (first appearance among the predicates).
	ids := map[plan.ColumnID]int{}
	var members [][]member
	for _, e := range eqs {
		for _, r := range e {
			if r == nil {
				continue
			}
			root := find(r.ID)
			c, ok := ids[root]
			if !ok {
				c = len(members)
				ids[root] = c
				members = append(members, nil)
			}
			if !slices.ContainsFunc(members[c], func(m member) bool { return m.ref.ID == r.ID }) {
				members[c] = append(members[c], refs[r.ID])
			}
		}
	}
	usable := make([]bool, len(members))
	for c, ms := range members {
		usable[c] = len(ms) >= 3
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				if ms[i].leaf == ms[j].leaf || !arrow.TypeEqual(ms[i].ref.Typ, ms[j].ref.Typ) {
					usable[c] = false
				}
			}
		}
	}
	have := map[[2]plan.ColumnID]bool{}
	for k, e := range eqs {
		if e[0] == nil {
			continue
		}
		if c := ids[find(e[0].ID)]; usable[c] {
			class[k] = c
			have[[2]plan.ColumnID{e[0].ID, e[1].ID}] = true
			have[[2]plan.ColumnID{e[1].ID, e[0].ID}] = true
		}
	}
	for c, ms := range members {
		if !usable[c] {
			continue
		}
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				a, b := ms[i], ms[j]
				if have[[2]plan.ColumnID{a.ref.ID, b.ref.ID}] {
					continue
				}
				preds = append(preds, plan.NewCall(plan.FnEq, plan.TypBool, a.ref, b.ref))
				masks = append(masks, 1<<a.leaf|1<<b.leaf)
				class = append(class, c)
			}
		}
	}
	return preds, masks, class
}

// makeJoin builds an inner join of a and b on preds, the larger input as
// the probe (left) side.
func (o *optimizer) makeJoin(a, b dpEntry, preds []plan.Expr) *plan.JoinNode {
	l, r := a.plan, b.plan
	if a.rows < b.rows {
		l, r = r, l
	}
	equi, cond := SplitEqui(preds, plan.ColSetOf(l.Columns()), plan.ColSetOf(r.Columns()))
	return &plan.JoinNode{Kind: plan.JoinInner, Left: l, Right: r, Equi: equi, Cond: cond, Build: plan.BuildRight}
}

func (o *optimizer) dp(leaves []plan.Plan, preds []plan.Expr, masks []uint64, class []int, allowCross bool) plan.Plan {
	n := len(leaves)
	full := uint64(1)<<n - 1
	best := make([]dpEntry, full+1)
	for i, l := range leaves {
		best[1<<i] = dpEntry{plan: l, rows: o.est.Rows(l)}
	}
	for s := uint64(1); s <= full; s++ {
		if bits.OnesCount64(s) < 2 {
			continue
		}
		// Enumerate splits s = s1 | s2 with s1 < s2 to see each pair once.
		for s1 := (s - 1) & s; s1 > 0; s1 = (s1 - 1) & s {
			s2 := s ^ s1
			if s1 > s2 {
				continue
			}
			a, b := best[s1], best[s2]
			if a.plan == nil || b.plan == nil {
				continue
			}
			jp := joinPreds(preds, masks, class, s1, s2)
			if len(jp) == 0 && !allowCross {
				continue
			}
			j := o.makeJoin(a, b, jp)
			rows := o.est.Rows(j)
			cost := rows + a.cost + b.cost
			if best[s].plan == nil || cost < best[s].cost {
				best[s] = dpEntry{plan: j, rows: rows, cost: cost}
			}
		}
	}
	return best[full].plan
}

func (o *optimizer) greedy(leaves []plan.Plan, preds []plan.Expr, masks []uint64, class []int) plan.Plan {
	type part struct {
		e    dpEntry
		mask uint64
	}
	parts := make([]part, len(leaves))
	for i, l := range leaves {
		parts[i] = part{e: dpEntry{plan: l, rows: o.est.Rows(l)}, mask: 1 << i}
	}
	for len(parts) > 1 {
		bi, bj := -1, -1
		var bestJ *plan.JoinNode
		bestRows, bestConnected := math.Inf(1), false
		for i := range parts {
			for j := i + 1; j < len(parts); j++ {
				jp := joinPreds(preds, masks, class, parts[i].mask, parts[j].mask)
				connected := len(jp) > 0
				if bestConnected && !connected {
					continue
				}
				jn := o.makeJoin(parts[i].e, parts[j].e, jp)
				rows := o.est.Rows(jn)
				if (connected && !bestConnected) || rows < bestRows {
					bi, bj, bestJ, bestRows, bestConnected = i, j, jn, rows, connected
				}
			}
		}
		merged := part{e: dpEntry{plan: bestJ, rows: bestRows}, mask: parts[bi].mask | parts[bj].mask}
		parts[bi] = merged
		parts = append(parts[:bj], parts[bj+1:]...)
	}
	return parts[0].e.plan
}

// asWritten joins the leaves left-deep: from the first written, each step
// adds the first remaining leaf (in written order) that a predicate
// connects to those joined so far, or the first remaining one when none
// is; each predicate joins at the first step that has all its leaves.
// touched[k] lists the leaves preds[k] reads. (Bitmasks cannot name more
// than 64 relations, so it works on leaf lists: O(n * sum |touched|).)
func (o *optimizer) asWritten(leaves []plan.Plan, preds []plan.Expr, touched [][]int) plan.Plan {
	n := len(leaves)
	in := make([]bool, n)
	used := make([]bool, len(preds))
	byLeaf := make([][]int, n) // the predicates that read each leaf
	for k, ts := range touched {
		for _, i := range ts {
			byLeaf[i] = append(byLeaf[i], k)
		}
	}
	// ready reports whether pred k has all its leaves joined once c is.
	ready := func(k, c int) bool {
		for _, i := range touched[k] {
			if i != c && !in[i] {
				return false
			}
		}
		return true
	}
	in[0] = true
	acc := dpEntry{plan: leaves[0], rows: o.est.Rows(leaves[0])}
	for step := 1; step < n; step++ {
		next := -1
		for c := 0; c < n && next < 0; c++ {
			if in[c] {
				continue
			}
			for _, k := range byLeaf[c] {
				if ready(k, c) {
					next = c
					break
				}
			}
		}
		if next < 0 {
			for c := 0; c < n && next < 0; c++ {
				if !in[c] {
					next = c
				}
			}
		}
		var jp []plan.Expr
		for _, k := range byLeaf[next] {
			if !used[k] && ready(k, next) {
				used[k] = true
				jp = append(jp, preds[k])
			}
		}
		in[next] = true
		j := o.makeJoin(acc, dpEntry{plan: leaves[next], rows: o.est.Rows(leaves[next])}, jp)
		acc = dpEntry{plan: j, rows: o.est.Rows(j)}
	}
	return acc.plan
}

// columnEquality returns the two columns of an equality between two plain
// columns of one type (a = b), which makes them one value wherever it
// holds.
func columnEquality(e plan.Expr) (a, b *plan.ColRef, ok bool) {
	c, isCall := e.(*plan.Call)
	if !isCall || c.Fn != plan.FnEq || len(c.Args) != 2 {
		return nil, nil, false
	}
	a, ok1 := c.Args[0].(*plan.ColRef)
	b, ok2 := c.Args[1].(*plan.ColRef)
	if !ok1 || !ok2 || !arrow.TypeEqual(a.Typ, b.Typ) {
		return nil, nil, false
	}
	return a, b, true
}
