package engine

import (
	"slices"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/nicflow/nicflow/engine/sql"
)

// Prepare binds stmt and optimizes every query plan it carries (a query,
// INSERT ... query, CREATE TABLE ... AS, and the statement of an EXPLAIN):
// the one call a session makes per parsed statement. disabled names rules
// not to apply (SET disabled_rules; checked by CheckDisabledRules).
func Prepare(cat plan.Catalog, src string, stmt sql.Statement, disabled ...string) (bind.Statement, error) {
	return PrepareIn(cat, src, stmt, "", disabled...)
}

// PrepareIn is Prepare in the session time zone zone ("": UTC; see
// bind.BindIn): the zone is stamped on the plan's expressions, so the
// plan, and any fragment of it shipped to a worker, computes in it.
func PrepareIn(cat plan.Catalog, src string, stmt sql.Statement, zone string, disabled ...string) (bind.Statement, error) {
	st, err := bind.BindIn(cat, src, stmt, zone)
	if err != nil {
		return nil, err
	}
	rules := opt.AllRules
	if len(disabled) > 0 {
		rules = nil
		for _, r := range opt.AllRules {
			if !slices.Contains(disabled, r) {
				rules = append(rules, r)
			}
		}
	}
	if err := optimizeStatement(st, rules, false); err != nil {
		return nil, err
	}
	return st, nil
}

// optimizeHit optimizes the query of the rows an UPDATE or DELETE changes
// (nil: none).
func optimizeHit(hit *bind.QueryStmt, rules []string) error {
	if hit == nil {
		return nil
	}
	return optimizeStatement(hit, rules, false)
}

func optimizeStatement(st bind.Statement, rules []string, trace bool) error {
	var q *bind.QueryStmt
	switch x := st.(type) {
	case *bind.QueryStmt:
		q = x
	case *bind.InsertStmt:
		q = x.Query
	case *bind.CopyToStmt:
		q = x.Query
	case *bind.CreateTableStmt:
		q = x.Query
	case *bind.DeleteStmt:
		if err := optimizeHit(x.Hit, rules); err != nil {
			return err
		}
		q = x.Keep
	case *bind.UpdateStmt:
		if err := optimizeHit(x.Hit, rules); err != nil {
			return err
		}
		q = x.Query
	case *bind.ExplainStmt:
		// EXPLAIN VERBOSE shows what each rule did.
		return optimizeStatement(x.Stmt, rules, x.Verbose)
	}
	if q == nil {
		return nil
	}
	p, runs, err := opt.OptimizeRules(q.Plan, rules, trace)
	if err != nil {
		return err
	}
	q.Plan, q.Rules = p, runs
	return nil
}
