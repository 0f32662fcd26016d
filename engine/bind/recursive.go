package bind

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
)

// WITH RECURSIVE. A recursive CTE is "anchor UNION [ALL] term" where only
// the term reads the CTE's name; it binds to a plan.RecursiveNode whose
// Term reads the rows of the previous run through plan.WorkScans.
//
// Column types: PostgreSQL requires the term's types to equal the
// anchor's. Here the columns take the common type of both (so that
// "SELECT 1 UNION ALL SELECT n + 0.5 FROM t" works, n a decimal(38,1)): the term is bound
// with the anchor's types and nullability, and again with the common ones
// while they widen, a few rounds at most (a type that widens every round, as a
// decimal multiplied in each run does, is an error that says to cast the
// anchor).

// maxTypeRounds bounds how often a recursive term is bound again with
// wider column types.
const maxTypeRounds = 4

// readsName reports whether q reads a relation called name (an unqualified
// table name).
func readsName(q *sql.Query, name string) bool {
	found := false
	sql.Walk(q, func(n sql.Node) bool {
		if t, ok := n.(*sql.TableName); ok && len(t.Name.Parts) == 1 && t.Name.Parts[0].Name == name {
			found = true
		}
		return !found
	})
	return found
}

// recursiveCTE binds recursive CTE c in scope s (where c's name is not
// registered yet).
func (b *binder) recursiveCTE(c *sql.CTE, s *scope) (plan.Plan, []string, error) {
	name := c.Name.Name
	set, ok := c.Query.Body.(*sql.SetOp)
	if !ok || set.Op != sql.Union || len(c.Query.With) > 0 {
		return nil, nil, b.errorf(c, "recursive query %q does not have the form non-recursive-term UNION [ALL] recursive-term", name)
	}
	if len(c.Query.OrderBy) > 0 || c.Query.Limit != nil || c.Query.Offset != nil {
		return nil, nil, b.errorf(c, "ORDER BY, LIMIT and OFFSET in a recursive query are not supported")
	}
	if readsName(&sql.Query{Body: set.Left}, name) {
		return nil, nil, b.errorf(set.Left, "recursive reference to query %q must not appear within its non-recursive term", name)
	}
	// Each term is a query level of its own, as in any set operation.
	anchor, names, err := b.body(set.Left, &scope{parent: s.parent, ctes: s.ctes})
	if err != nil {
		return nil, nil, err
	}
	if len(c.Columns) > len(names) {
		return nil, nil, b.errorf(c.Columns[len(names)], "WITH query %q has %d columns but %d column names were given", name, len(names), len(c.Columns))
	}
	names = append([]string(nil), names...)
	for i, n := range c.Columns {
		names[i] = n.Name
	}
	ac := anchor.Columns()
	cols := make([]plan.Column, len(ac))
	for i, a := range ac {
		cols[i] = plan.Column{Name: names[i], Type: a.Type, Nullable: a.Nullable}
		if plan.IsNullType(a.Type) {
			cols[i].Type = plan.TypString
		}
	}
	b.nextDef++
	work := &plan.WorkTable{ID: b.nextDef, Name: name}
	var term plan.Plan
	for round := 0; ; round++ {
		ctes := map[string]*cteBinding{}
		for k, v := range s.ctes {
			ctes[k] = v
		}
		ctes[name] = &cteBinding{names: names, work: work, workCols: cols}
		t, _, err := b.body(set.Right, &scope{parent: s.parent, ctes: ctes})
		if err != nil {
			return nil, nil, err
		}
		if free := plan.FreeCols(t); len(free) > 0 {
			return nil, nil, b.errorf(c, "WITH query %q refers to columns of an enclosing query, which is not supported", name)
		}
		tc := t.Columns()
		if len(tc) != len(cols) {
			return nil, nil, b.errorf(set, "each UNION query must have the same number of columns: %d and %d", len(cols), len(tc))
		}
		widened := false
		for i := range cols {
			ct, ok := plan.CommonType(cols[i].Type, tc[i].Type)
			if !ok {
				return nil, nil, b.errorf(set.Right, "recursive query %q column %d has type %s in non-recursive term but type %s in the recursive term", name, i+1, plan.TypeString(cols[i].Type), plan.TypeString(tc[i].Type))
			}
			if _, sc, ok := plan.DecimalPS(ct); ok && !arrow.TypeEqual(ct, cols[i].Type) {
				// A decimal that widens widens again in the next run
				// (n + 1 adds a digit): take the widest precision now.
				ct = plan.DecimalType(plan.MaxDecimalPrecision, sc)
			}
			if !arrow.TypeEqual(ct, cols[i].Type) || (tc[i].Nullable && !cols[i].Nullable) {
				cols[i].Type, cols[i].Nullable, widened = ct, true, true
			}
		}
		if !widened {
			term = t
			break
		}
		if round == maxTypeRounds {
			return nil, nil, b.errorf(set.Right, "recursive query %q: the column types widen with every run of the recursive term; cast the non-recursive term's columns to the type wanted", name)
		}
	}
	anchor = b.coerceTo(anchor, cols)
	term = b.coerceTo(term, cols)
	out := &plan.RecursiveNode{Work: work, Anchor: anchor, Term: term, Distinct: !set.All, Cols: make([]plan.Column, len(cols))}
	for i, c := range cols {
		out.Cols[i] = b.newCol(names[i], "", c.Type, c.Nullable)
	}
	return out, names, nil
}
