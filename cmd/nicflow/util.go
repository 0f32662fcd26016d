package main

import (
	"fmt"
	"strings"
)

// usageError is a wrong invocation: a bad flag value or a missing argument.
// main prints it with a pointer to --help and exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// isCobraUsageError recognizes the errors cobra returns for unknown flags,
// commands and wrong argument counts.
func isCobraUsageError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// splitList splits a comma-separated flag value into its items, trimmed of
// spaces; empty items ("a,,b", a trailing comma) are dropped.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
