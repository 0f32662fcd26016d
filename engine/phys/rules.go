package phys

import (
	"fmt"
	"strings"
)

// Physical rules (issue 32, item 2): the choices lowering makes beyond
// the one plan every logical operator has, each named, listed in Rules in
// the order lowering meets them, disable-able by name (SET disabled_rules,
// with the optimizer's rules; PlanOptions.Disabled) and reported by
// EXPLAIN VERBOSE with how often it acted (PhysPlan.Rules). Disabling one
// gives the plan without that choice, which answers the same: every rule
// is an optimization, never needed for a plan to run.
//
// A rule acts where lowering calls physPlanner.use (or, for filters
// decided at build time, where PlanPhysical counts them); use reports
// whether the rule is enabled and counts the use when it is, so a count
// is the number of places the plan differs from the rule's absence.

// Physical rule names.
const (
	RuleSegmentedAgg     = "segmented_agg"      // aggregates grouped on a key stored in order: no repartition, a row group at a time
	RuleRepartitionAgg   = "repartition_agg"    // aggregates of many groups repartitioned by key instead of partial + final
	RuleSemiBuildLeft    = "semi_build_left"    // semi/anti/mark joins build on a much smaller left input
	RuleCSE              = "cse"                // common subexpressions computed once, in a projection below
	RuleJoinKeyFilters   = "join_key_filters"   // hash joins publish their build keys to the scans under their probe side
	RuleSemiDistinctKeys = "semi_distinct_keys" // distributed: a left-built semi/anti/mark join's repartitioned probe sends distinct keys
	RuleRangeBuild       = "range_build"        // distributed: a build side sent by value range to the tasks of a range-split probe scan
	RulePartialAgg       = "partial_agg"        // distributed: an aggregate over a network repartition sends partial states, not rows
)

// PhysRule is one physical rule.
type PhysRule struct {
	Name string
	// Effect says what the rule changes, for EXPLAIN VERBOSE and errors.
	Effect string
}

// Rules lists the physical rules in the order lowering meets them.
var Rules = []PhysRule{
	{RuleSegmentedAgg, "an aggregate grouped on a key its scan's row groups hold in disjoint ranges runs per scan stream, without a repartition, emitting groups a row group at a time (local plans)"},
	{RuleRepartitionAgg, "an aggregate estimated to have more groups than PlanOptions.RepartitionGroups repartitions its input by the group key instead of merging partial aggregates in one final aggregate"},
	{RuleSemiBuildLeft, "a semi, anti or mark join whose left input is estimated 4x smaller than its right builds its hash table on the left"},
	{RuleCSE, "an expression used twice or more in one projection or join key list is computed once, in a projection below"},
	{RuleJoinKeyFilters, "a hash join that drops unmatched probe rows publishes a filter of its build keys to the scans under its probe side (and across stages on a cluster)"},
	{RuleSemiDistinctKeys, "on a cluster, a semi, anti or mark join that builds on its left input and repartitions a probe side of more rows than Workers times the build's sends each task's distinct probe keys instead of its rows"},
	{RuleRangeBuild, "on a cluster, a join whose probe side can be split by value range on a join key (a table stored in key order) sends its build side by range to the probe's tasks instead of broadcasting it or repartitioning both sides"},
	{RulePartialAgg, "on a cluster, an aggregate over a network repartition aggregates each task's rows first and sends partial states (unless it expects them to hardly reduce the rows) instead of the rows"},
}

// RuleNames lists the physical rules' names in order.
func RuleNames() []string {
	out := make([]string, len(Rules))
	for i, r := range Rules {
		out[i] = r.Name
	}
	return out
}

// IsRule reports whether name is a physical rule.
func IsRule(name string) bool {
	for _, r := range Rules {
		if r.Name == name {
			return true
		}
	}
	return false
}

// RuleUse is what one physical rule did in a plan (EXPLAIN VERBOSE).
type RuleUse struct {
	Rule     string `json:"rule"`
	Uses     int    `json:"uses"`
	Disabled bool   `json:"disabled,omitempty"`
}

// ExplainRules describes what each physical rule did, one line each.
func ExplainRules(uses []RuleUse) string {
	var b strings.Builder
	b.WriteString("Physical rules:\n")
	for _, u := range uses {
		what := "no change"
		switch {
		case u.Disabled:
			what = "disabled"
		case u.Uses == 1:
			what = "applied once"
		case u.Uses > 1:
			what = fmt.Sprintf("applied %d times", u.Uses)
		}
		fmt.Fprintf(&b, "  %-16s %s\n", u.Rule, what)
	}
	return b.String()
}

// RuleDisabled reports whether the plan was made with rule disabled (SET
// disabled_rules): the distributed planner, which applies some rules
// itself (segmented aggregation over range splits), honours it too.
func (p *PhysPlan) RuleDisabled(rule string) bool {
	for _, u := range p.Rules {
		if u.Rule == rule {
			return u.Disabled
		}
	}
	return false
}

// use reports whether rule is enabled, counting a use when it is.
func (pl *physPlanner) use(rule string) bool {
	if pl.disabled[rule] {
		return false
	}
	pl.uses[rule]++
	return true
}

// ruleUses is the plan's report, in Rules order.
func (pl *physPlanner) ruleUses() []RuleUse {
	out := make([]RuleUse, len(Rules))
	for i, r := range Rules {
		out[i] = RuleUse{Rule: r.Name, Uses: pl.uses[r.Name], Disabled: pl.disabled[r.Name]}
	}
	return out
}
