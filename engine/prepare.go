package engine

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

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
	return st, optimizeWith(st, disabled)
}

// prepareDescribe is PrepareIn for describing a statement with
// parameters (bind.BindDescribe): it also returns the parameters' types.
func prepareDescribe(cat plan.Catalog, src string, stmt sql.Statement, zone string, given []arrow.DataType, disabled ...string) (bind.Statement, []arrow.DataType, error) {
	st, params, err := bind.BindDescribe(cat, src, stmt, zone, given)
	if err != nil {
		return nil, nil, err
	}
	return st, params, optimizeWith(st, disabled)
}

// optimizeWith optimizes st with every rule but the disabled ones.
func optimizeWith(st bind.Statement, disabled []string) error {
	rules := opt.AllRules
	if len(disabled) > 0 {
		rules = nil
		for _, r := range opt.AllRules {
			if !slices.Contains(disabled, r) {
				rules = append(rules, r)
			}
		}
	}
	return optimizeStatement(st, rules, false)
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
