package phys

import (
	"fmt"
	"strings"
	"time"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/exec"
)

// ExplainPhysical prints a physical plan as an indented tree, one node per
// line: the operator with its spec, "xN" when it runs as N parallel
// instances, and its estimated rows. With stats (EXPLAIN ANALYZE, from
// Executable.Stats) each line also gets the actual rows and batches (all
// instances together), the time spent in the operator itself and the peak
// memory its instances held.
//
// Time is wall time: an operator's own time excludes the inputs it pulls
// in its own goroutine, but includes waiting for inputs driven by other
// goroutines (an exchange's producers, a shared hash join build).
func ExplainPhysical(p *PhysPlan, stats map[int]*OpStats) string {
	return explainPhysical(p, stats, nil)
}

// ExplainLocalPhysical is ExplainPhysical for a plan that runs in this
// process over the local database: scans also list the join key filters
// they apply (keyfilter.go), as "join filters=[column, ...]".
func ExplainLocalPhysical(p *PhysPlan, stats map[int]*OpStats) string {
	roots := []*PhysNode{p.Root}
	for _, d := range p.Shared {
		roots = append(roots, d.Root)
	}
	kf := map[int][]string{}
	for _, t := range keyFilterTargets(roots...) {
		kf[t.Scan] = append(kf[t.Scan], t.Column)
	}
	return explainPhysical(p, stats, kf)
}

func explainPhysical(p *PhysPlan, stats map[int]*OpStats, keyFilters map[int][]string) string {
	e := &physExplainer{stats: stats, keyFilters: keyFilters}
	e.node(p.Root, 0)
	for _, d := range p.Shared {
		fmt.Fprintf(&e.b, "Shared %d (%s):\n", d.ID, d.Name)
		e.node(d.Root, 1)
	}
	return e.b.String()
}

type physExplainer struct {
	b          strings.Builder
	stats      map[int]*OpStats
	keyFilters map[int][]string // scan node ID -> filtered columns
}

func (e *physExplainer) node(n *PhysNode, depth int) {
	line := strings.Repeat("  ", depth) + physLine(n)
	if cols := e.keyFilters[n.ID]; len(cols) > 0 {
		line += " join filters=[" + strings.Join(cols, ", ") + "]"
	}
	if n.Streams > 1 {
		line += fmt.Sprintf(" x%d", n.Streams)
	}
	line += "  (" + e.figures(n) + ")"
	e.b.WriteString(line + "\n")
	for _, in := range n.Inputs {
		e.node(in, depth+1)
	}
	if t := n.Rerun(); t != nil {
		e.node(t, depth+1)
	}
}

func (e *physExplainer) figures(n *PhysNode) string {
	s := "rows " + opt.FormatRows(n.EstRows)
	if e.stats == nil {
		return s
	}
	rows, batches, ok := e.actual(n)
	if !ok {
		return s
	}
	s += fmt.Sprintf(", actual %d in %d batches", rows, batches)
	st := e.stats[n.ID]
	if st == nil {
		return s
	}
	s += ", time " + FormatDuration(time.Duration(e.selfNanos(n)))
	if peak := st.PeakBytes(); peak > 0 {
		s += ", peak " + exec.FormatBytes(peak)
	}
	if sp, files := st.Spilled(); sp > 0 {
		s += fmt.Sprintf(", spilled %s in %d files", exec.FormatBytes(sp), files)
	}
	if st.Scan != nil {
		t := st.Scan.Totals()
		s += fmt.Sprintf(", row groups %d/%d", t.RowGroupsTotal-t.RowGroupsPruned, t.RowGroupsTotal)
		if t.LocalScans > 0 {
			s += fmt.Sprintf(", %d read locally", t.LocalScans)
		}
		if t.ByteScans > 0 {
			s += fmt.Sprintf(", %d read as stored bytes", t.ByteScans)
		}
		if t.WireBytes > 0 {
			s += fmt.Sprintf(", %s on the wire for %s of chunks", exec.FormatBytes(t.WireBytes), exec.FormatBytes(t.BytesRead))
		}
	}
	for _, f := range st.KeyFilters {
		k := f.Stats()
		switch {
		case k.Tested == 0:
			s += fmt.Sprintf(", %s: unused", f.Name)
		case k.Off:
			s += fmt.Sprintf(", %s: passed %s of %s, then off", f.Name, opt.FormatRows(float64(k.Passed)), opt.FormatRows(float64(k.Tested)))
		default:
			s += fmt.Sprintf(", %s: passed %s of %s", f.Name, opt.FormatRows(float64(k.Passed)), opt.FormatRows(float64(k.Tested)))
		}
	}
	return s
}

// actual is a node's counted rows and batches (a union sums its inputs).
func (e *physExplainer) actual(n *PhysNode) (rows, batches int64, ok bool) {
	if st := e.stats[n.ID]; st != nil {
		return st.Rows.Load(), st.Batches.Load(), true
	}
	if n.Kind == PhysUnion {
		for _, in := range n.Inputs {
			r, b, ok := e.actual(in)
			if !ok {
				return 0, 0, false
			}
			rows, batches = rows+r, batches+b
		}
		return rows, batches, true
	}
	return 0, 0, false
}

// selfNanos is a node's time minus that of the inputs it drives in its
// own goroutines.
func (e *physExplainer) selfNanos(n *PhysNode) int64 {
	st := e.stats[n.ID]
	t := st.Nanos.Load()
	for i, in := range n.Inputs {
		if !samePipeline(n, i) {
			continue
		}
		t -= e.inclusive(in)
	}
	if r := n.Rerun(); r != nil {
		t -= e.inclusive(r)
	}
	return max(t, 0)
}

func (e *physExplainer) inclusive(n *PhysNode) int64 {
	if st := e.stats[n.ID]; st != nil {
		return st.Nanos.Load()
	}
	var t int64
	if n.Kind == PhysUnion {
		for _, in := range n.Inputs {
			t += e.inclusive(in)
		}
	}
	return t
}

// samePipeline reports whether node n pulls input i in the goroutine that
// runs n (rather than through an exchange or a shared build's goroutines).
func samePipeline(n *PhysNode, i int) bool {
	switch n.Kind {
	case PhysExchange:
		return false
	case PhysHashJoin:
		build := 1
		if n.Join.Build == exec.SideLeft {
			build = 0
		}
		if i != build {
			return true
		}
		// A build shared by several probes is drained by goroutines.
		return n.Streams == 1 && n.Inputs[build].Streams == 1
	}
	return true
}

func FormatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}

// physLine describes one node.
func physLine(n *PhysNode) string {
	in := func(i int) []PhysColumn {
		if i < len(n.Inputs) {
			return n.Inputs[i].Columns
		}
		return nil
	}
	switch n.Kind {
	case PhysScan:
		table, _, _ := strings.Cut(n.Scan.Spec.Table, "\x00") // a file table's options (storage.FileTableName)
		s := "Scan " + table + " [" + strings.Join(n.Scan.Spec.Columns, ", ") + "]"
		if n.Scan.Spec.Filter != nil {
			s += " storage filter=[" + n.Scan.Spec.Filter.String() + "]"
		}
		if n.Scan.RowGroups >= 0 {
			s += fmt.Sprintf(" row groups=%d", n.Scan.RowGroups)
		}
		if n.Scan.Replicated {
			s += " replicated"
		}
		if r := n.Scan.Range; r != nil {
			s += fmt.Sprintf(" split by %s range into %d", r.Col.Name, r.Parts)
		}
		return s
	case PhysValues:
		return fmt.Sprintf("Values %d rows", len(n.Values.Rows))
	case PhysSeries:
		return fmt.Sprintf("Series %d to %d step %d", n.Series.Start, n.Series.Stop, n.Series.Step)
	case PhysFilter:
		return "Filter " + n.Filter.String()
	case PhysUnnest:
		items := make([]string, len(n.Unnest.Arrays))
		for i, x := range n.Unnest.Arrays {
			items[i] = n.Unnest.Names[2*i] + ", " + n.Unnest.Names[2*i+1] + " := " + x.String()
		}
		return "Unnest [" + strings.Join(items, ", ") + "] ordinality [" + n.Unnest.Names[len(n.Unnest.Names)-1] + "]"
	case PhysProject:
		items := make([]string, len(n.Project.Exprs))
		for i, x := range n.Project.Exprs {
			s := x.String()
			if name := n.Project.Names[i]; name != s {
				s = name + " := " + s
			}
			items[i] = s
		}
		return "Project [" + strings.Join(items, ", ") + "]"
	case PhysHashAgg:
		s := "HashAggregate"
		if n.Agg.Phase != "" && n.Agg.Phase != exec.AggSingle {
			s += " " + string(n.Agg.Phase)
		}
		if n.Agg.Segmented {
			s += " segmented"
		}
		if len(n.Agg.GroupCols) > 0 {
			s += " group=[" + ColNames(in(0), n.Agg.GroupCols) + "]"
		}
		aggs := make([]string, len(n.Agg.Aggs))
		for i, a := range n.Agg.Aggs {
			switch {
			case a.Func == exec.AggCountStar && n.Agg.Phase != exec.AggFinal:
				aggs[i] = "count(*)"
			default:
				d := ""
				if a.Distinct {
					d = "DISTINCT "
				}
				aggs[i] = fmt.Sprintf("%s(%s%s)", a.Func, d, ColNames(in(0), []int{a.Arg}))
				if a.Filter != nil && n.Agg.Phase != exec.AggFinal {
					aggs[i] += " FILTER (WHERE " + ColNames(in(0), []int{*a.Filter}) + ")"
				}
			}
		}
		if len(aggs) > 0 {
			s += " aggs=[" + strings.Join(aggs, ", ") + "]"
		}
		return s
	case PhysHashJoin:
		keys := make([]string, len(n.Join.LeftKeys))
		for i := range keys {
			keys[i] = ColNames(in(0), n.Join.LeftKeys[i:i+1]) + " = " + ColNames(in(1), n.Join.RightKeys[i:i+1])
		}
		s := "HashJoin " + string(n.Join.Type)
		if n.Join.NullAware {
			s += " null-aware"
		}
		s += " on [" + strings.Join(keys, ", ") + "]"
		if n.Join.Residual != nil {
			s += " cond=[" + n.Join.Residual.String() + "]"
		}
		build := n.Join.Build
		if build == "" {
			build = exec.SideRight
		}
		return s + " build=" + string(build)
	case PhysNLJoin:
		s := "NestedLoopJoin " + string(n.NLJoin.Type)
		if n.NLJoin.Condition != nil {
			s += " cond=[" + n.NLJoin.Condition.String() + "]"
		}
		return s
	case PhysSort:
		return "Sort [" + sortKeys(in(0), n.Sort.Keys) + "]"
	case PhysTopN:
		s := fmt.Sprintf("TopN %d", n.TopN.Limit)
		if n.TopN.Offset > 0 {
			s += fmt.Sprintf(" offset %d", n.TopN.Offset)
		}
		return s + " [" + sortKeys(in(0), n.TopN.Keys) + "]"
	case PhysLimit:
		s := "Limit"
		if n.Limit.Limit >= 0 {
			s += fmt.Sprintf(" %d", n.Limit.Limit)
		}
		if n.Limit.Offset > 0 {
			s += fmt.Sprintf(" offset %d", n.Limit.Offset)
		}
		return s
	case PhysDistinct:
		return "Distinct"
	case PhysWindow:
		s := "Window"
		if len(n.Window.PartitionBy) > 0 {
			s += " partition=[" + ColNames(in(0), n.Window.PartitionBy) + "]"
		}
		if len(n.Window.OrderBy) > 0 {
			s += " order=[" + sortKeys(in(0), n.Window.OrderBy) + "]"
		}
		fs := make([]string, len(n.Window.Funcs))
		for i, f := range n.Window.Funcs {
			switch f.Func {
			case exec.WinRowNumber, exec.WinRank, exec.WinDenseRank, exec.WinCountStar, exec.WinPercentRank, exec.WinCumeDist:
				fs[i] = string(f.Func) + "()"
			case exec.WinNtile:
				fs[i] = fmt.Sprintf("ntile(%d)", f.N)
			case exec.WinLag, exec.WinLead, exec.WinNthValue:
				fs[i] = fmt.Sprintf("%s(%s, %d)", f.Func, ColNames(in(0), []int{f.Arg}), f.N)
			default:
				fs[i] = fmt.Sprintf("%s(%s)", f.Func, ColNames(in(0), []int{f.Arg}))
			}
		}
		return s + " funcs=[" + strings.Join(fs, ", ") + "]"
	case PhysExchange:
		x := n.Exchange
		switch x.Kind {
		case exec.ExchangeGather:
			return "Gather"
		case exec.ExchangeHash:
			return "Repartition hash=[" + ColNames(in(0), x.Keys) + "]"
		case exec.ExchangeBroadcast:
			return "Broadcast"
		case exec.ExchangeMerge:
			return "Merge [" + sortKeys(in(0), x.SortKeys) + "]"
		}
		return "Exchange " + string(x.Kind)
	case PhysUnion:
		return "UnionAll"
	case PhysSharedScan:
		return fmt.Sprintf("SharedScan %d", n.Shared.Def)
	case PhysRecursive:
		s := "RecursiveUnion"
		if !n.Recursive.Distinct {
			s += "All"
		}
		return s + fmt.Sprintf(" work=%d (anchor, then the term per run)", n.Recursive.Work)
	case PhysWorkScan:
		return fmt.Sprintf("WorkScan %d", n.Work.Work)
	case PhysApply:
		names := make([]string, len(n.Apply.Params))
		for i, c := range n.Apply.Cols {
			names[i] = fmt.Sprintf("$%d := %s", n.Apply.Params[i], in(0)[c].Name)
		}
		if n.Apply.Table {
			kind := "lateral"
			if n.Apply.Left {
				kind = "left lateral"
			}
			return fmt.Sprintf("Apply %s %d per distinct [%s] (the last input is the subquery, run for each; its rows join the row)", kind, n.Apply.SubID, strings.Join(names, ", "))
		}
		return fmt.Sprintf("Apply subquery %d per distinct [%s] (the last input is the subquery, run for each)", n.Apply.SubID, strings.Join(names, ", "))
	case PhysMaxOneRow:
		return "MaxOneRow"
	case PhysRowID:
		return "RowID"
	case PhysSingleCheck:
		return "SingleCheck"
	case PhysRemote:
		r := n.Remote
		if r.Held != "" {
			return fmt.Sprintf("Held output of an earlier wave (%d parts)", len(r.Parts))
		}
		s := fmt.Sprintf("Receive exchange %d from stage %d (%s", r.Exchange, r.Stage, r.Kind)
		if r.Kind == exec.ExchangeHash || r.Kind == exec.ExchangeRange {
			s += " [" + ColNames(n.Columns, r.Keys) + "]"
		}
		return s + ")"
	}
	return string(n.Kind)
}

func sortKeys(cols []PhysColumn, keys []exec.SortKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = ColNames(cols, []int{k.Col})
		if k.Desc {
			s[i] += " DESC"
		}
		if (k.Nulls == exec.NullsFirst) != k.Desc {
			if k.Nulls == exec.NullsFirst {
				s[i] += " NULLS FIRST"
			} else {
				s[i] += " NULLS LAST"
			}
		}
	}
	return strings.Join(s, ", ")
}
