package plan

import "time"

// RuleRun is what one rule did to a query: whether it changed the plan (or
// a shared subplan) and the time it took, summed over its applications.
type RuleRun struct {
	Rule    string
	Changed bool
	Time    time.Duration
}
