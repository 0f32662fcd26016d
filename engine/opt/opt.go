package opt

import (
	"strings"
	"time"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Rule names, in the order Optimize applies them (each rule is a *Rule in
// its own file; Rules lists them).
const (
	RuleInlineShared  = "inline_shared"  // a view or CTE used once is inlined
	RuleDecorrelate   = "decorrelate"    // subqueries become joins
	RuleFold          = "fold"           // constant folding, boolean simplification
	RuleOuterJoin     = "outer_join"     // null-rejected outer joins become inner
	RulePushdown      = "pushdown"       // filters move down, into joins and scans
	RuleJoinOrder     = "join_order"     // inner joins reordered, build sides chosen
	RulePrune         = "prune"          // unused columns and aggregates dropped
	RuleDistinctAgg   = "distinct_agg"   // aggregates of DISTINCT x become two grouping aggregates
	RuleTopN          = "topn"           // Limit over Sort becomes TopN
	RuleSemiLift      = "semi_lift"      // semi/anti joins lifted above inner joins when cheaper
	RuleReduceGrouped = "reduce_grouped" // grouped subqueries reduced by the join's other side first
	RuleEagerAgg      = "eager_agg"      // aggregates over a join computed partly below it
)

// Rule is one optimizer rewrite: a named value the driver (OptimizeWith)
// runs in the order of Rules, which a session can disable by name (SET
// disabled_rules) unless it is Required, and which EXPLAIN VERBOSE
// reports (RuleRun).
type Rule struct {
	Name string
	// Shapes says which plan shapes the rule rewrites.
	Shapes string
	// Required rules cannot be disabled: the plans after them could not
	// run without them (subqueries are only executed once decorrelated).
	Required bool
	// WholeQuery rules run once, on the whole query; the others run on the
	// query and on each shared subplan (a view or CTE used twice or more).
	WholeQuery bool
	apply      func(o *optimizer, p plan.Plan) (plan.Plan, error)
}

// Rules lists every rule in application order.
var Rules = []*Rule{ruleInlineShared, ruleDecorrelate, ruleFold, ruleOuterJoin, rulePushdown, ruleJoinOrder, rulePrune, ruleDistinctAgg, ruleTopN, ruleSemiLift, ruleReduceGrouped, ruleEagerAgg}

// AllRules lists every rule's name in application order.
var AllRules = func() []string {
	var out []string
	for _, r := range Rules {
		out = append(out, r.Name)
	}
	return out
}()

// CheckDisabledRules validates a list of rule names to disable: each must
// name a rule that is not Required.
func CheckDisabledRules(names []string) error {
	for _, n := range names {
		r := ruleNamed(n)
		switch {
		case r == nil:
			return nferr.Queryf("unknown optimizer rule %q (rules: %s)", n, strings.Join(AllRules, ", "))
		case r.Required:
			return nferr.Queryf("optimizer rule %q cannot be disabled: %s", n, r.Shapes)
		}
	}
	return nil
}

// ruleNamed returns the rule called name, or nil.
func ruleNamed(name string) *Rule {
	for _, r := range Rules {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// optimizer holds what rules share: the next free column ID, the
// estimator, and (when traced) what each rule did.
type optimizer struct {
	nextID plan.ColumnID
	// nextDef is the last shared-subplan ID used (0: not known yet; see
	// newDefID), root the query being optimized.
	nextDef int
	root    plan.Plan
	est     *Estimator
	trace   []plan.RuleRun // nil: not traced
	// nextLateral numbers the LATERAL joins left as applies (EXPLAIN).
	nextLateral int
}

func (o *optimizer) newCol(name string, t arrow.DataType, nullable bool) plan.Column {
	o.nextID++
	return plan.Column{ID: o.nextID, Name: name, Type: t, Nullable: nullable}
}

// Optimize rewrites a query plan with all rules. The result has no
// subqueries left; its output columns are those of p, in order.
func Optimize(p plan.Plan) (plan.Plan, error) { return OptimizeWith(p, AllRules) }

// OptimizeWith applies the named rules, in Rules order (tests use it to
// look at one rule at a time). Unknown names are an internal error.
func OptimizeWith(p plan.Plan, rules []string) (plan.Plan, error) {
	out, _, err := OptimizeRules(p, rules, false)
	return out, err
}

// optimize is the driver: the whole-query rules on the query, then the
// others on the query and on each shared subplan it reads. With trace it
// also returns what each rule did.
func OptimizeRules(p plan.Plan, rules []string, trace bool) (out plan.Plan, runs []plan.RuleRun, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, runs, err = nil, nil, nferr.Internalf("optimizer bug (please report): %v", r)
		}
	}()
	on := map[string]bool{}
	for _, r := range rules {
		if ruleNamed(r) == nil {
			return nil, nil, nferr.Internalf("unknown optimizer rule %q", r)
		}
		on[r] = true
	}
	o := &optimizer{nextID: maxColumnID(p), root: p}
	if trace {
		o.trace = make([]plan.RuleRun, len(Rules))
		for i, r := range Rules {
			o.trace[i].Rule = r.Name
		}
	}
	want := p.Columns()
	for i, r := range Rules {
		if r.WholeQuery && on[r.Name] {
			if p, err = o.run(i, p); err != nil {
				return nil, nil, err
			}
		}
	}
	if p, err = o.optimizeBody(p, on); err != nil {
		return nil, nil, err
	}
	if on[RulePushdown] {
		filterShared(p)
	}
	// Shared subplans (used twice or more) are optimized once each.
	seen := map[*plan.SharedDef]bool{}
	var defErr error
	var visit func(plan.Plan)
	visit = func(q plan.Plan) {
		plan.WalkPlan(q, func(n plan.Plan) bool {
			if s, ok := n.(*plan.SharedScan); ok && !seen[s.Def] {
				seen[s.Def] = true
				// INVARIANT: SharedScans read the def's columns by position.
				defCols := s.Def.Plan.Columns()
				dp, err := o.optimizeBody(s.Def.Plan, on)
				if err != nil {
					if defErr == nil {
						defErr = err
					}
					return false
				}
				s.Def.Plan = restoreColumns(dp, defCols)
				visit(s.Def.Plan)
			}
			return true
		})
	}
	visit(p)
	if defErr != nil {
		return nil, nil, defErr
	}
	if on[RulePrune] {
		p = pruneShared(p)
	}
	return restoreColumns(p, want), o.trace, nil
}

// optimizeBody applies, in order, the rules that are not whole-query.
func (o *optimizer) optimizeBody(p plan.Plan, on map[string]bool) (plan.Plan, error) {
	for i, r := range Rules {
		if r.WholeQuery || !on[r.Name] {
			continue
		}
		var err error
		if p, err = o.run(i, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// run applies Rules[i] to p, tracing it when asked.
func (o *optimizer) run(i int, p plan.Plan) (plan.Plan, error) {
	if o.trace == nil {
		return Rules[i].apply(o, p)
	}
	before := ExplainPlan(p, ExplainOptions{Verbose: true, NoRows: true})
	start := time.Now()
	out, err := Rules[i].apply(o, p)
	t := &o.trace[i]
	t.Time += time.Since(start)
	if err == nil && ExplainPlan(out, ExplainOptions{Verbose: true, NoRows: true}) != before {
		t.Changed = true
	}
	return out, err
}

// restoreColumns wraps p in a projection when rules changed its output
// columns or their order (a reordered join at the root).
func restoreColumns(p plan.Plan, want []plan.Column) plan.Plan {
	got := p.Columns()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].ID == want[i].ID
	}
	if same {
		return p
	}
	exprs := make([]plan.Expr, len(want))
	for i, c := range want {
		exprs[i] = plan.NewColRef(c)
	}
	return &plan.ProjectNode{Input: p, Exprs: exprs, Cols: want}
}

// maxColumnID is the largest column ID used in p, its subqueries and its
// shared subplans.
func maxColumnID(p plan.Plan) plan.ColumnID {
	var m plan.ColumnID
	plan.WalkPlanDeep(p, func(n plan.Plan) {
		for _, c := range n.Columns() {
			m = max(m, c.ID)
		}
	})
	return m
}
