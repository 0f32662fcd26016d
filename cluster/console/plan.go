package console

import "strings"

// PlanNode is one line of a plan as a tree: an operator with its figures
// (estimated rows and, after EXPLAIN ANALYZE, actual rows, batches, time,
// peak memory...), a section ("Logical plan:", "Stage 1: ...") or a note
// ("Total: ...").
type PlanNode struct {
	Kind     string      `json:"kind"` // "section", "op", "note"
	Text     string      `json:"text"`
	Figures  []string    `json:"figures,omitempty"`
	Children []*PlanNode `json:"children,omitempty"`
}

// ParsePlan turns the text of EXPLAIN [ANALYZE] (embedded or distributed)
// or of a registry's plan into trees: a line's children are the lines
// after it indented deeper (two spaces a level), as the explainers print
// them. Any text parses: a line that fits no pattern is an operator.
func ParsePlan(text string) []*PlanNode {
	type open struct {
		depth int
		n     *PlanNode
	}
	var roots []*PlanNode
	var stack []open
	base := 0 // 1 inside a section whose operators are not indented
	for _, raw := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		line := strings.TrimRight(raw, " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		indent := (len(line) - len(trimmed)) / 2
		n := &PlanNode{Kind: "op", Text: trimmed}
		depth := indent + base
		switch {
		case indent == 0 && strings.HasPrefix(trimmed, "Total:"):
			n.Kind, depth, base = "note", 0, 0
		case indent == 0 && (strings.HasSuffix(trimmed, ":") || strings.HasPrefix(trimmed, "Distributed plan:")):
			n.Kind, depth = "section", 0
			n.Text = strings.TrimSuffix(trimmed, ":")
			base = 1
		case indent == 0 && strings.HasPrefix(trimmed, "Stage ") && base > 0:
			n.Kind = "section"
		default:
			n.Text, n.Figures = splitFigures(trimmed)
		}
		for len(stack) > 0 && stack[len(stack)-1].depth >= depth {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			roots = append(roots, n)
		} else {
			p := stack[len(stack)-1].n
			p.Children = append(p.Children, n)
		}
		stack = append(stack, open{depth, n})
	}
	return roots
}

// splitFigures splits "Scan t [a]  (rows 3, actual 2 in 1 batches)" into
// the operator and its figures.
func splitFigures(s string) (string, []string) {
	if !strings.HasSuffix(s, ")") {
		return s, nil
	}
	i := strings.LastIndex(s, "  (")
	if i < 0 {
		return s, nil
	}
	inner := s[i+3 : len(s)-1]
	var figs []string
	for _, f := range strings.Split(inner, ", ") {
		if f = strings.TrimSpace(f); f != "" {
			figs = append(figs, f)
		}
	}
	return s[:i], figs
}
