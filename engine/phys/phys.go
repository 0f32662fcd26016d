package phys

import (
	"math/bits"
	"sort"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/storage"
)

// The physical plan.
//
// A physical plan is plain data: a tree of PhysNodes, each naming one exec
// operator kind and carrying its exec spec (HashJoinSpec, HashAggSpec,
// SortSpec, ExchangeSpec, exec.Expr trees, storage.ScanSpec ...), so that
// it serializes to JSON as is. Build (build.go) instantiates exec
// operators from it; the distributed planner cuts it into stages at its
// Exchange nodes and ships the fragments between them to workers.
//
// Parallelism is explicit: every node produces Streams parallel output
// streams with the same columns (one pipeline per stream, driven by the
// goroutine of the exchange above it). The rule per kind:
//
//	scan          Streams instances share one queue of row-group tasks
//	              (morsel-driven: an instance takes the next row group
//	              when it finishes one, so skewed groups balance)
//	values        1 stream
//	series        1 stream: generate_series (Series)
//	filter, project, unnest, hash_agg, sort, topn, limit, distinct,
//	window, max_one_row, row_id, single_check
//	              one operator per input stream (Streams = input's)
//	hash_join     Inputs[0] left, Inputs[1] right; the probe side (the
//	              one not named by Join.Build) keeps its streams; all
//	              streams of the build side fill one shared hash table
//	nl_join       one join per left stream; the right input has as many
//	              streams as the left (a broadcast) or one
//	exchange      gather and merge: 1 stream; hash and broadcast:
//	              Exchange.Outputs streams
//	union         the concatenation of its inputs' streams (UNION ALL
//	              needs no operator)
//	shared_scan   1 stream reading the materialized rows of
//	              PhysPlan.Shared[Shared.Def] (computed once, at the first
//	              read)
//	recursive     1 stream: WITH RECURSIVE's fixpoint (exec.RecursiveUnion):
//	              Inputs[0] is the anchor (1 stream); Recursive.Term is
//	              built again for every run. The term's root is one
//	              stream and its leaves are work_scan, shared_scan and
//	              values only: the planner computes its parts that do not
//	              read the work table once, as shared subplans (so a term
//	              never scans a table, and a distributed task can run it
//	              whole, its exchanges local)
//	work_scan     1 stream reading the rows the previous run of recursive
//	              node Work.Rec added (only inside that node's term)
//	apply         one operator per input stream: the input's columns and
//	              the value of subquery Apply.Sub run for the row's values
//	              of the parameters Apply.Params (cached per distinct
//	              values); Sub, like a recursive term, has one stream at
//	              its root and shared_scan, values and work_scan leaves,
//	              and is built again for every run
//
// INVARIANT: every stream of a node with more than one stream is consumed
// by its own goroutine: each path from such a node to the root passes an
// exchange (whose producers are goroutines) or a shared join build (whose
// inputs are drained by goroutines). The planner ends every plan with a
// gather or a merge when the root has several streams.
//
// INVARIANT: operators keep their input's row order within a stream;
// exchanges other than merge do not keep any order. The planner relies on
// this for ORDER BY: a sort's order survives to the root only through
// single-stream nodes.

// PhysKind names the operator of a physical node.
type PhysKind string

// The physical node kinds.
const (
	PhysScan        PhysKind = "scan"
	PhysValues      PhysKind = "values"
	PhysSeries      PhysKind = "series"
	PhysFilter      PhysKind = "filter"
	PhysProject     PhysKind = "project"
	PhysHashAgg     PhysKind = "hash_agg"
	PhysHashJoin    PhysKind = "hash_join"
	PhysNLJoin      PhysKind = "nl_join"
	PhysSort        PhysKind = "sort"
	PhysTopN        PhysKind = "topn"
	PhysLimit       PhysKind = "limit"
	PhysDistinct    PhysKind = "distinct"
	PhysWindow      PhysKind = "window"
	PhysExchange    PhysKind = "exchange"
	PhysUnion       PhysKind = "union"
	PhysSharedScan  PhysKind = "shared_scan"
	PhysMaxOneRow   PhysKind = "max_one_row"
	PhysRowID       PhysKind = "row_id"
	PhysSingleCheck PhysKind = "single_check"
	PhysRecursive   PhysKind = "recursive"
	PhysWorkScan    PhysKind = "work_scan"
	PhysApply       PhysKind = "apply"
	PhysUnnest      PhysKind = "unnest"
	// PhysRemote reads the receivers of a network exchange (distributed
	// fragments only, dist.go): Streams receivers of channel
	// Remote.Exchange.
	PhysRemote PhysKind = "remote"
)

// PhysPlan is a physical plan: the root node, the shared subplans it reads
// (views and CTEs used twice, TPC-H Q15) and the result's column names.
type PhysPlan struct {
	Root   *PhysNode     `json:"root"`
	Shared []*PhysShared `json:"shared,omitempty"`
	// Names are the result's column names (Root's columns, in order).
	Names []string `json:"names"`
	// Rules is what each physical rule did (EXPLAIN VERBOSE; rules.go).
	Rules []RuleUse `json:"rules,omitempty"`
}

// PhysShared is a subplan computed once and read by shared_scan nodes.
type PhysShared struct {
	ID   int       `json:"id"`
	Name string    `json:"name"`
	Root *PhysNode `json:"root"`
}

// PhysColumn describes an output column of a node.
type PhysColumn struct {
	Name     string    `json:"name"`
	Type     expr.Type `json:"type"`
	Nullable bool      `json:"nullable,omitempty"`
}

// PhysNode is one operator of a physical plan; exactly the spec field of
// its Kind is set. See the file comment for Streams.
type PhysNode struct {
	// ID numbers the node within its plan (EXPLAIN ANALYZE statistics).
	ID      int          `json:"id"`
	Kind    PhysKind     `json:"kind"`
	Inputs  []*PhysNode  `json:"inputs,omitempty"`
	Streams int          `json:"streams"`
	Columns []PhysColumn `json:"columns"`
	// EstRows is the optimizer's estimate of the node's output rows (all
	// streams together).
	EstRows float64 `json:"est_rows"`
	// NoKeyFilters: a hash join that publishes no join key filter (the
	// join_key_filters rule disabled).
	NoKeyFilters bool `json:"no_key_filters,omitempty"`

	Scan        *ScanOp                  `json:"scan,omitempty"`
	Values      *ValuesOp                `json:"values,omitempty"`
	Filter      *expr.Expr               `json:"filter,omitempty"`
	Project     *ProjectOp               `json:"project,omitempty"`
	Agg         *exec.HashAggSpec        `json:"agg,omitempty"`
	Join        *exec.HashJoinSpec       `json:"join,omitempty"`
	NLJoin      *exec.NestedLoopJoinSpec `json:"nl_join,omitempty"`
	Sort        *exec.SortSpec           `json:"sort,omitempty"`
	TopN        *exec.TopNSpec           `json:"topn,omitempty"`
	Limit       *LimitOp                 `json:"limit,omitempty"`
	Distinct    *exec.DistinctSpec       `json:"distinct,omitempty"`
	Window      *exec.WindowSpec         `json:"window,omitempty"`
	Exchange    *exec.ExchangeSpec       `json:"exchange,omitempty"`
	Shared      *SharedOp                `json:"shared,omitempty"`
	SingleCheck *SingleCheckOp           `json:"single_check,omitempty"`
	Remote      *RemoteOp                `json:"remote,omitempty"`
	Recursive   *RecursiveOp             `json:"recursive,omitempty"`
	Work        *WorkOp                  `json:"work,omitempty"`
	Apply       *ApplyOp                 `json:"apply,omitempty"`
	Series      *exec.SeriesSpec         `json:"series,omitempty"`
	Unnest      *UnnestOp                `json:"unnest,omitempty"`
}

// UnnestOp expands the arrays Arrays computes over the input (exec.Unnest):
// Names are the output columns after the input's, an element and a
// subscript per array, then the ordinality.
type UnnestOp struct {
	Arrays []expr.Expr `json:"arrays"`
	Names  []string    `json:"names"`
}

// ApplyOp evaluates subquery Sub (one column) for each input row with its
// parameters bound to the row's values: Params[i] is bound to input
// column Cols[i]. SubID numbers the subquery (EXPLAIN). Table makes it a
// LATERAL join: each input row once per row of Sub, followed by all of
// Sub's columns; with Left, a row for which Sub has none once, with
// NULLs.
type ApplyOp struct {
	Sub    *PhysNode `json:"sub"`
	Params []int     `json:"params"`
	Cols   []int     `json:"cols"`
	SubID  int       `json:"sub_id"`
	Table  bool      `json:"table,omitempty"`
	Left   bool      `json:"left,omitempty"`
}

// RecursiveOp is a recursive CTE: Term is the recursive term's tree, whose
// work_scan nodes of Work read the rows the previous run added; Distinct
// is UNION (rather than UNION ALL).
type RecursiveOp struct {
	Work     int       `json:"work"`
	Term     *PhysNode `json:"term"`
	Distinct bool      `json:"distinct,omitempty"`
}

// WorkOp reads the work table of recursive CTE Work.
type WorkOp struct {
	Work int `json:"work"`
}

// RemoteOp is the receiving end of a network exchange in a distributed
// fragment: the task's Streams receivers of exchange Exchange (a shuffle
// channel of the query), fed by the tasks of stage Stage.
type RemoteOp struct {
	Exchange int               `json:"exchange"`
	Stage    int               `json:"stage"`
	Kind     exec.ExchangeKind `json:"kind"`
	// Keys are the hash columns of a hash exchange (EXPLAIN).
	Keys []int `json:"keys,omitempty"`
	// Held (Kind exec.ExchangeHeld; adaptive execution, dist/adaptive.go)
	// names the output an earlier wave of the query kept on the workers:
	// task t's stream s reads part t's stream s, on node Parts[t].Node,
	// where it was computed. Exchange and Stage are then 0.
	Held  string     `json:"held,omitempty"`
	Parts []HeldPart `json:"parts,omitempty"`
	// HistKeys are the columns whose hashes the parts' histograms count
	// (HeldPart.Hist; the keys of the join the held rows feed).
	HistKeys []int `json:"hist_keys,omitempty"`
}

// HeldPart is one task's share of a held output: the node holding it
// (shuffle node index) and its size.
type HeldPart struct {
	Node  int   `json:"node"`
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
	// Hist counts the part's rows by the high bits of their key hash
	// (HistBuckets buckets; nil when the held stage had no HistKeys):
	// bucket i holds the rows whose hash h has h>>(64-HistBits) == i, so
	// a hash exchange into m partitions (multiply-shift on the high bits)
	// sends bucket i to about partition i*m/HistBuckets.
	Hist []int64 `json:"hist,omitempty"`
}

// HistBits and HistBuckets size a held part's key histogram.
const (
	HistBits    = 10
	HistBuckets = 1 << HistBits
)

// ScanOp is a table scan: Spec is the template (table, projected columns,
// the predicate storage evaluates at the data); each task is one row group
// (Spec.Files is replaced by one task per storage scan).
type ScanOp struct {
	Spec  storage.ScanSpec    `json:"spec"`
	Tasks []storage.FileRange `json:"tasks"`
	// RowGroups is the table's row-group count (EXPLAIN).
	RowGroups int `json:"row_groups"`
	// Residual is the part of the scan's filter storage cannot evaluate,
	// run by a filter node above the scan; kept here for EXPLAIN only.
	Residual string `json:"residual,omitempty"`
	// TableRows is the table's row count (statistics), which decides
	// whether a distributed plan may read the table on every worker.
	TableRows float64 `json:"table_rows,omitempty"`
	// Replicated (distributed plans): every task of the stage reads every
	// row group (a small table joined on every worker) instead of its
	// share.
	Replicated bool `json:"replicated,omitempty"`
	// Clustered lists the integer output columns without NULLs whose row
	// groups hold disjoint value ranges (a table stored in key order, as
	// dbgen writes lineitem and orders by order key): a distributed plan
	// may split the scan by value range instead of by row group (Range).
	Clustered []ClusterCol `json:"clustered,omitempty"`
	// Range (distributed plans): the task of index t of Range.Parts reads
	// only the rows whose column lies in part t (RangePart.Bound) and only
	// the row groups that may hold such rows, so that two scans ranged
	// alike put equal keys in the same task (a join or aggregate on the
	// column needs no network exchange).
	Range *RangePart `json:"range,omitempty"`
}

// ClusterCol is a clustered column of a scan: Out is its output column,
// Name its storage column, [Lo, Hi] the table's value range, and Min, Max
// and Rows its range and row count in each entry of ScanOp.Tasks.
type ClusterCol struct {
	Out  int     `json:"out"`
	Name string  `json:"name"`
	Lo   int64   `json:"lo"`
	Hi   int64   `json:"hi"`
	Min  []int64 `json:"min"`
	Max  []int64 `json:"max"`
	Rows []int64 `json:"rows,omitempty"`
}

// byMin lists the row groups (indexes of Min) by ascending minimum.
func (cc ClusterCol) byMin() []int {
	order := make([]int, len(cc.Min))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return cc.Min[order[a]] < cc.Min[order[b]] })
	return order
}

// RangePart splits a scan by the value of a clustered column: part i of
// Parts holds values from Bound(i) to Bound(i+1)-1 (the first part
// everything below Bound(1), the last everything from Bound(Parts-1)).
// Cuts, when set, are those bounds; otherwise Col's [Lo, Hi] is cut in
// equal widths. Two scans joined on their clustered columns share one
// RangePart (its Cuts chosen on one of them), so their ranges need not
// be equal.
type RangePart struct {
	Col   ClusterCol `json:"col"`
	Parts int        `json:"parts"`
	Cuts  []int64    `json:"cuts,omitempty"`
}

// NewRangePart splits cc into parts: at row-group boundaries (so that no
// row group is read by two tasks) balanced by rows, when cc has at least
// one row group per part; else in equal widths. NB: with one to two row
// groups per part the parts are unequal (one or two row groups each), but
// equal widths would cut nearly every row group, and a row group cut in
// two is read and decoded whole by both tasks: 23 row groups split 16
// ways were 38 reads (Q9 on 16 workers), against 23 at the boundaries.
func NewRangePart(cc ClusterCol, parts int) *RangePart {
	r := &RangePart{Col: cc, Parts: parts}
	n := len(cc.Min)
	if n < parts || len(cc.Rows) != n {
		return r.equalWidths()
	}
	order := cc.byMin()
	// cum[j]: rows in the row groups before sorted position j.
	cum := make([]int64, n+1)
	for j, g := range order {
		cum[j+1] = cum[j] + cc.Rows[g]
	}
	prev := 0
	for i := 1; i < parts; i++ {
		target := cum[n] * int64(i) / int64(parts)
		// The boundary nearest the target, after the previous cut and
		// leaving one row group for each later part.
		best := prev + 1
		for j := prev + 1; j <= n-(parts-i); j++ {
			if abs64(cum[j]-target) < abs64(cum[best]-target) {
				best = j
			}
		}
		cut := cc.Min[order[best]]
		if len(r.Cuts) > 0 && cut <= r.Cuts[len(r.Cuts)-1] {
			return (&RangePart{Col: cc, Parts: parts}).equalWidths() // duplicate minimums
		}
		r.Cuts = append(r.Cuts, cut)
		prev = best
	}
	return r
}

// equalWidths sets Cuts to the equal-width bounds of [Col.Lo, Col.Hi].
func (r *RangePart) equalWidths() *RangePart {
	r.Cuts = nil
	cuts := make([]int64, 0, r.Parts-1)
	for i := 1; i < r.Parts; i++ {
		cuts = append(cuts, r.Bound(i))
	}
	r.Cuts = cuts
	return r
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Bound is the lowest value of part i (1 <= i < Parts).
func (r *RangePart) Bound(i int) int64 {
	if len(r.Cuts) == r.Parts-1 {
		return r.Cuts[i-1]
	}
	// NB: 128-bit product: the span may be as wide as int64.
	span := uint64(r.Col.Hi-r.Col.Lo) + 1
	hi, lo := bits.Mul64(span, uint64(i))
	q, _ := bits.Div64(hi, lo, uint64(r.Parts))
	return r.Col.Lo + int64(q)
}

// Same reports whether two range splits put equal values in the same part.
func (r *RangePart) Same(o *RangePart) bool {
	if r.Parts != o.Parts {
		return false
	}
	for i := 1; i < r.Parts; i++ {
		if r.Bound(i) != o.Bound(i) {
			return false
		}
	}
	return true
}

// ValuesOp is a constant relation: one column-free expression per cell.
type ValuesOp struct {
	Names []string      `json:"names"`
	Rows  [][]expr.Expr `json:"rows"`
}

// ProjectOp computes one expression per output column.
type ProjectOp struct {
	Exprs []expr.Expr `json:"exprs"`
	Names []string    `json:"names"`
}

// LimitOp is LIMIT Limit (negative: none) OFFSET Offset.
type LimitOp struct {
	Limit  int64 `json:"limit"`
	Offset int64 `json:"offset"`
}

// SharedOp reads shared subplan Def.
type SharedOp struct {
	Def int `json:"def"`
}

// SingleCheckOp fails the query when two consecutive rows of a stream
// carry the same row id in column Col: the check after the left join that
// computes a JoinSingle (a scalar subquery matching two rows). It relies
// on joins emitting the matches of one probe row consecutively (exec's
// hash and nested-loop joins do).
type SingleCheckOp struct {
	Col int `json:"col"`
}

// Walk calls fn on n and every node below it (pre-order).
// A recursive node's term and an apply node's subquery come after its
// inputs.
func (n *PhysNode) Walk(fn func(*PhysNode)) {
	fn(n)
	for _, in := range n.Inputs {
		in.Walk(fn)
	}
	if t := n.Rerun(); t != nil {
		t.Walk(fn)
	}
}

// Rerun is the tree a recursive node (its term) or an apply node (its
// subquery) builds again for every run; nil for other kinds.
func (n *PhysNode) Rerun() *PhysNode {
	switch {
	case n.Recursive != nil:
		return n.Recursive.Term
	case n.Apply != nil:
		return n.Apply.Sub
	}
	return nil
}

// WithRerun returns a copy of n (which has a rerun tree) whose rerun tree
// is t.
func (n *PhysNode) WithRerun(t *PhysNode) *PhysNode {
	c := *n
	switch {
	case n.Recursive != nil:
		r := *n.Recursive
		r.Term = t
		c.Recursive = &r
	case n.Apply != nil:
		a := *n.Apply
		a.Sub = t
		c.Apply = &a
	}
	return &c
}
