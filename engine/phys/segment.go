package phys

import (
	"sort"

	"github.com/nicflow/nicflow/exec"
)

// Segmented aggregation: a table stored in key order (lineitem and orders
// as dbgen writes them, any table loaded sorted) has row groups whose key
// ranges are disjoint. A scan stream reads whole row groups, so an
// aggregate grouped on that key, in the same pipeline as the scan, sees
// every group's rows in one stream and within one row group: it needs no
// repartition by the key, and it can emit and forget its groups each time
// the scan starts a row group (exec.HashAggSpec.Segmented), holding one
// row group's groups instead of the whole table's. The physical planner
// uses it for local plans only (PlanOptions.Local): a distributed stage
// may replicate or split scans. The distributed planner makes an aggregate
// segmented where it splits the scan by value range on the group column
// (dist's splitRepartitionedAgg, SegmentsOn).
//
// The pipeline from the scan to the aggregate may hold filters,
// projections of the key column and hash joins that the scan's stream
// probes and that emit their output while probing (no build-side tail),
// with the key coming from the probe side: each output batch then belongs
// to the row group the scan is reading.

// SegmentsOn reports whether an aggregate over in grouped on column col
// can run segmented (the distributed planner's range-split aggregates).
func SegmentsOn(in *PhysNode, col int) bool { return segmentSource(in, col) != nil }

// segmentScan returns the scan whose row groups segment an aggregate over
// in grouped on cols, or nil.
func segmentScan(in *PhysNode, cols []int) *PhysNode {
	for _, c := range cols {
		if s := segmentSource(in, c); s != nil {
			return s
		}
	}
	return nil
}

// segmentSource follows output column col of n through the same pipeline
// down to a scan whose row groups hold disjoint ranges of it.
func segmentSource(n *PhysNode, col int) *PhysNode {
	for n != nil {
		if col < 0 || col >= len(n.Columns) {
			return nil
		}
		switch n.Kind {
		case PhysScan:
			// NB: a scan split by value range (a distributed task's
			// share) keeps every value of its range column in one task
			// and, within it, in one row group: it segments an aggregate
			// on that column, not on another (a row group cut by the
			// range may hold one of its values on both sides).
			if n.Scan == nil || n.Scan.Replicated {
				return nil
			}
			for _, cc := range n.Scan.Clustered {
				if cc.Out == col && strictlyDisjoint(cc) && (n.Scan.Range == nil || n.Scan.Range.Col.Name == cc.Name) {
					return n
				}
			}
			return nil
		case PhysFilter:
			n = n.Inputs[0]
		case PhysProject:
			var ok bool
			if n, col, ok = projectedColumn(n, col); !ok {
				return nil
			}
		case PhysHashJoin:
			left := len(n.Inputs[0].Columns)
			buildLeft := n.Join.Build == exec.SideLeft
			probeLeft := !buildLeft
			fromLeft := col < left
			if fromLeft != probeLeft || !n.Join.EmitsWhileProbing() {
				return nil
			}
			if fromLeft {
				n = n.Inputs[0]
			} else {
				n, col = n.Inputs[1], col-left
			}
		default:
			return nil
		}
	}
	return nil
}

// strictlyDisjoint: no value is in two row groups (ClusterCol allows a
// range to end where the next begins).
func strictlyDisjoint(cc ClusterCol) bool {
	if len(cc.Min) != len(cc.Max) || len(cc.Min) < 2 {
		return false
	}
	order := make([]int, len(cc.Min))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return cc.Min[order[a]] < cc.Min[order[b]] })
	for j := 1; j < len(order); j++ {
		if cc.Max[order[j-1]] >= cc.Min[order[j]] {
			return false
		}
	}
	return true
}
