package phys

import (
	"fmt"
	"slices"
	"time"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/storage"
)

// Join key filters in the plan (storage/keyfilter.go, exec/join_keyfilter.go
// say what they are): which hash join publishes a filter on which probe
// key, and which scan applies it on which column.
//
// A probe key qualifies when the join drops unmatched probe rows
// (HashJoinSpec.ProbeDropsUnmatched), its type has a filter domain, and
// the key is a plain column all the way down to a scan, through operators
// under which filtering a column commutes:
//
//	filter, sort, exchange  rows pass unchanged
//	union (ALL)             the key of each input
//	project                 the key is a column reference
//	hash_agg                the key is a group column
//	distinct                the key is one of the distinct columns
//	hash_join               the key comes from an input whose rows the
//	                        join does not NULL-extend (either input of an
//	                        inner join, the left of left/semi/anti/mark
//	                        joins, the right of a right join)
//
// Anything else (limits, top-N, windows, shared inputs, expressions)
// stops the search: there the filter would change which rows reach the
// join. Targets are found per plan or fragment built (a fragment's remote
// nodes end that search); a distributed plan's search also follows network
// exchanges into the stages producing a join's probe side
// (CrossStageKeyFilters: the filter's parts then travel through the
// coordinator, engine/dist/filters.go). A scan of the local database, or
// of a storage node's files read locally or as stored bytes, applies its
// filters while decoding; a scan a storage node runs (rows) has them
// applied to the records it receives (exec.Scan).
//
// Estimates do not decide: a HAVING or LIKE estimate may be off by four
// orders of magnitude (TPC-H Q18 at SF 10: 15M orders estimated, 624
// built), and a filter that turns out useless costs little at run time
// (its build stops collecting beyond storage.MaxKeyFilterKeys, and its
// scans stop testing after a probation).

// keyFilterTarget is one filter: join node Join's probe key Key, applied
// by scan node Scan to its column Column (a table column name).
type keyFilterTarget struct {
	Join, Key, Scan int
	Column          string
	// BuildCol names the join's build key column (EXPLAIN ANALYZE).
	BuildCol string
	// build and buildKey are the join's build input and key column
	// (planning only).
	build    *PhysNode
	buildKey int
	// scanStage is the stage of the scan when the search crossed a
	// network exchange (via, CrossStageKeyFilters), else 0.
	scanStage int
	via       func(*PhysNode) (*PhysNode, int, bool)
}

// keyFilterTargets finds the filters of the trees under roots (inputs
// only: a recursive term or an apply's subquery is built again for every
// run and gets none).
func keyFilterTargets(roots ...*PhysNode) []keyFilterTarget {
	var out []keyFilterTarget
	var walk func(n *PhysNode)
	walk = func(n *PhysNode) {
		if n == nil {
			return
		}
		if n.Kind == PhysHashJoin && n.Join != nil {
			out = append(out, joinKeyFilters(n)...)
		}
		for _, in := range n.Inputs {
			walk(in)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return dropWholeTableBuilds(out)
}

// dropWholeTableBuilds removes the filters of joins whose build key is a
// column of a whole table: a scan with no predicate and no key filter of
// its own, reached through projections and exchanges. Such a build holds
// every value of the column, so its filter would pass nearly every probe
// row (TPC-H's orders joined to all of customer), after costing a hash per
// build row. Removing one join's filters may leave another scan whole:
// repeat until nothing changes.
func dropWholeTableBuilds(ts []keyFilterTarget) []keyFilterTarget {
	for {
		filtered := map[int]bool{}
		for _, t := range ts {
			filtered[t.Scan] = true
		}
		var keep []keyFilterTarget
		for _, t := range ts {
			if !t.wholeBuild(filtered) {
				keep = append(keep, t)
			}
		}
		if len(keep) == len(ts) {
			return ts
		}
		ts = keep
	}
}

// wholeBuild reports whether t's build key is a column of a whole table.
func (t keyFilterTarget) wholeBuild(filtered map[int]bool) bool {
	n, col := t.build, t.buildKey
	for n != nil && col >= 0 && col < len(n.Columns) {
		switch n.Kind {
		case PhysScan:
			return n.Scan != nil && n.Scan.Spec.Filter == nil && n.Scan.Residual == "" && !filtered[n.ID]
		case PhysExchange:
			n = n.Inputs[0]
		case PhysRemote:
			var ok bool
			if t.via == nil {
				return false
			}
			if n, _, ok = t.via(n); !ok {
				return false
			}
		case PhysProject:
			var ok bool
			if n, col, ok = projectedColumn(n, col); !ok {
				return false
			}
		default:
			return false
		}
	}
	return false
}

func joinKeyFilters(n *PhysNode) []keyFilterTarget { return joinKeyFiltersVia(n, nil) }

// ProbeKeyFiltered reports whether hash join n filters a scan under its
// probe side by its build keys (in the tree as planned, before it is cut
// into stages).
func ProbeKeyFiltered(n *PhysNode) bool {
	return n.Kind == PhysHashJoin && n.Join != nil && len(joinKeyFilters(n)) > 0
}

// joinKeyFiltersVia is joinKeyFilters whose search follows network
// exchanges through via (nil: it stops there).
func joinKeyFiltersVia(n *PhysNode, via func(*PhysNode) (*PhysNode, int, bool)) []keyFilterTarget {
	spec := n.Join
	if len(n.Inputs) != 2 || n.NoKeyFilters || !spec.ProbeDropsUnmatched() {
		return nil
	}
	probe, build, keys, bkeys := n.Inputs[0], n.Inputs[1], spec.LeftKeys, spec.RightKeys
	if spec.Build == exec.SideLeft {
		probe, build, keys, bkeys = n.Inputs[1], n.Inputs[0], spec.RightKeys, spec.LeftKeys
	}
	var out []keyFilterTarget
	for i, k := range keys {
		if k < 0 || k >= len(probe.Columns) {
			continue
		}
		if _, ok := exec.KeyFilterDomain(probe.Columns[k].Type.Arrow()); !ok {
			continue
		}
		for _, sc := range traceKeyColumnVia(probe, k, via, 0, nil) {
			t := keyFilterTarget{Join: n.ID, Key: i, Scan: sc.scan.ID, Column: sc.col, build: build, buildKey: -1, scanStage: sc.stage, via: via}
			if i < len(bkeys) {
				t.buildKey = bkeys[i]
			}
			if i < len(bkeys) && bkeys[i] >= 0 && bkeys[i] < len(build.Columns) {
				t.BuildCol = build.Columns[bkeys[i]].Name
			}
			out = append(out, t)
		}
	}
	return out
}

// keyScanCol is a scan node and one of its table columns (in stage stage
// when the search crossed a network exchange, else 0).
type keyScanCol struct {
	scan  *PhysNode
	col   string
	stage int
}

// traceKeyColumn follows output column col of n down to the scan columns
// it is (see the file comment for the operators it passes; a UNION ALL
// leads to one in each input), appending them to out.
func traceKeyColumn(n *PhysNode, col int, out []keyScanCol) []keyScanCol {
	return traceKeyColumnVia(n, col, nil, 0, out)
}

// traceKeyColumnVia is traceKeyColumn that also follows network exchanges:
// via maps a PhysRemote node to the root of the stage whose rows it
// receives (the same columns) and that stage's ID.
func traceKeyColumnVia(n *PhysNode, col int, via func(*PhysNode) (*PhysNode, int, bool), stage int, out []keyScanCol) []keyScanCol {
	for {
		if n == nil || col < 0 || col >= len(n.Columns) {
			return out
		}
		switch n.Kind {
		case PhysRemote:
			if via == nil {
				return out
			}
			var ok bool
			if n, stage, ok = via(n); !ok {
				return out
			}
			continue
		case PhysScan:
			if n.Scan == nil || col >= len(n.Scan.Spec.Columns) {
				return out
			}
			return append(out, keyScanCol{n, n.Scan.Spec.Columns[col], stage})
		case PhysUnion:
			for _, in := range n.Inputs {
				out = traceKeyColumnVia(in, col, via, stage, out)
			}
			return out
		case PhysFilter, PhysSort, PhysExchange:
			n = n.Inputs[0]
		case PhysProject:
			var ok bool
			if n, col, ok = projectedColumn(n, col); !ok {
				return out
			}
		case PhysHashAgg:
			if col >= len(n.Agg.GroupCols) {
				return out
			}
			n, col = n.Inputs[0], n.Agg.GroupCols[col]
		case PhysDistinct:
			if n.Distinct.Cols != nil && !slices.Contains(n.Distinct.Cols, col) {
				return out
			}
			n = n.Inputs[0]
		case PhysHashJoin:
			left := len(n.Inputs[0].Columns)
			switch t := n.Join.Type; {
			case col < left && t != exec.JoinRight && t != exec.JoinFull:
				n = n.Inputs[0]
			case col >= left && (t == exec.JoinInner || t == exec.JoinRight):
				n, col = n.Inputs[1], col-left
			default:
				return out
			}
		default:
			return out
		}
	}
}

// projectedColumn follows output column col of project node n to the
// input column it passes on unchanged; ok is false for an expression.
func projectedColumn(n *PhysNode, col int) (in *PhysNode, inCol int, ok bool) {
	e := n.Project.Exprs[col]
	if e.Kind != expr.KindColumn {
		return nil, 0, false
	}
	return n.Inputs[0], e.Index, true
}

// keyFilterName names a filter in EXPLAIN ANALYZE.
func keyFilterName(t keyFilterTarget) string {
	return fmt.Sprintf("%s in %s", t.Column, t.BuildCol)
}

// RemoteKeyFilter is a join key filter whose join and scan run in
// different stages of a distributed plan: every task of JoinStage builds a
// part (the keys of its partition) with Words words, the coordinator
// merges the parts and sends the filter to the tasks of ScanStage, whose
// scan node Scan applies it on table column Column once it arrives.
type RemoteKeyFilter struct {
	ID        int    `json:"id"`
	JoinStage int    `json:"join_stage"`
	Join      int    `json:"join"`
	Key       int    `json:"key"`
	ScanStage int    `json:"scan_stage"`
	Scan      int    `json:"scan"`
	Column    string `json:"column"`
	Name      string `json:"name"`
	Words     int    `json:"words"`
	// BuildRows is the build side's estimated rows; Wait how long the
	// scan waits for the filter before it reads (dist decides).
	BuildRows float64       `json:"build_rows"`
	Wait      time.Duration `json:"wait,omitempty"`
}

// CrossStageKeyFilters finds the key filters of a distributed plan whose
// join (in the stage of roots' key) and scan lie in different stages:
// the search of a probe key follows network exchanges through via (a
// PhysRemote node to the root of the stage producing its rows). Filters of
// whole-table builds are dropped as within a stage. Each filter's parts
// are sized for the build's estimated rows.
func CrossStageKeyFilters(roots map[int]*PhysNode, via func(*PhysNode) (*PhysNode, int, bool)) []RemoteKeyFilter {
	ids := make([]int, 0, len(roots))
	for id := range roots {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var all []keyFilterTarget
	stageOf := map[int]int{}
	for _, id := range ids {
		var walk func(n *PhysNode)
		walk = func(n *PhysNode) {
			if n == nil {
				return
			}
			if n.Kind == PhysHashJoin && n.Join != nil {
				stageOf[n.ID] = id
				all = append(all, joinKeyFiltersVia(n, via)...)
			}
			for _, in := range n.Inputs {
				walk(in)
			}
		}
		walk(roots[id])
	}
	var out []RemoteKeyFilter
	for _, t := range dropWholeTableBuilds(all) {
		js := stageOf[t.Join]
		if t.scanStage == 0 || t.scanStage == js {
			continue // within one stage: the fragment's own filters
		}
		est := 1.0
		if t.build != nil {
			est = max(t.build.EstRows, 1)
		}
		out = append(out, RemoteKeyFilter{ID: len(out) + 1, JoinStage: js, Join: t.Join, Key: t.Key, ScanStage: t.scanStage,
			Scan: t.Scan, Column: t.Column, Name: keyFilterName(t), Words: storage.KeyFilterWords(est), BuildRows: est})
	}
	return out
}
