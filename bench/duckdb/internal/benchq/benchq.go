// Package benchq holds what the DuckDB comparison programs of this module
// share: the query list flag and the query texts as both engines take them.
package benchq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// StripComments drops the "--" comments of a query text (DuckDB's
// prepared statements refuse a text that ends in one).
func StripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Args checks the flags both programs take and returns the queries of
// qlist (ParseQueries).
func Args(dir, qlist string, runs, threads int) ([]int, error) {
	if dir == "" {
		return nil, fmt.Errorf("--dir is required")
	}
	if runs < 1 || threads < 1 {
		return nil, fmt.Errorf("--runs and --threads must be at least 1")
	}
	return ParseQueries(qlist)
}

// ParseQueries reads a query list such as "1-22" or "1,3,6" (TPC-H
// numbers 1 to 22, each once, in the order given).
func ParseQueries(s string) ([]int, error) { return ParseQueryList(s, 22) }

// ParseQueryList reads a query list of numbers 1 to n.
func ParseQueryList(s string, n int) ([]int, error) {
	var qs []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad query list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("bad query list %q", s)
			}
		}
		for q := a; q <= b; q++ {
			if q < 1 || q > n {
				return nil, fmt.Errorf("query %d out of range 1-%d", q, n)
			}
			if !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
	}
	return qs, nil
}
