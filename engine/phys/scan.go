package phys

import (
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/storage"
)

// scanFilters splits a scan's filters into the predicates storage
// evaluates and the residual exec evaluates.
func scanFilters(n *plan.ScanNode) (preds []*storage.Predicate, residual []plan.Expr) {
	cols := map[plan.ColumnID]scanColumn{}
	for i, c := range n.Cols {
		f := n.Table.Schema.Field(n.Fields[i])
		cols[c.ID] = scanColumn{name: f.Name, typ: f.Type}
	}
	for _, f := range n.Filters {
		if p, ok := scanPredicate(f, cols); ok {
			preds = append(preds, p)
		} else {
			residual = append(residual, f)
		}
	}
	return preds, residual
}

// ScanFilter is the predicate storage evaluates for scan n (nil when none
// of its filters translates): every row the scan returns passes it.
func ScanFilter(n *plan.ScanNode) *storage.Predicate {
	preds, _ := scanFilters(n)
	return andPreds(preds)
}

func (pl *physPlanner) scan(n *plan.ScanNode, need plan.ColSet) (*pnode, error) {
	preds, residual := scanFilters(n)
	keep := union(need, plan.ColSet{})
	for _, r := range residual {
		keep.AddAll(plan.ColsOf(r))
	}
	table := n.Table.Name
	var tasks []storage.FileRange
	groups := 0
	st, _ := n.Table.Handle.(*storage.Table)
	if st != nil {
		table = st.QualifiedName()
		// NB: row groups the pushed filter's statistics rule out get no
		// task (the scan would skip them): a query reading a few row
		// groups of a big table then plans as few streams and tasks.
		may := st.RowGroupMayMatch(andPreds(preds))
		for _, f := range st.Files {
			for g := range f.RowGroups {
				groups++
				if may(f, g) {
					tasks = append(tasks, storage.FileRange{Path: f.Path, RowGroups: []int{g}})
				}
			}
		}
	} else {
		// NB: a table without storage (a test catalog) is one task: the
		// whole table (FileRange{} scans every file).
		tasks = []storage.FileRange{{}}
		groups = -1
	}
	spec := storage.ScanSpec{Table: table, Columns: []string{}}
	var layout []plan.ColumnID
	var pcols []PhysColumn
	for i, c := range n.Cols {
		if !keep.Has(c.ID) {
			continue
		}
		f := n.Table.Schema.Field(n.Fields[i])
		t, err := expr.TypeOf(f.Type)
		if err != nil {
			return nil, err
		}
		spec.Columns = append(spec.Columns, f.Name)
		layout = append(layout, c.ID)
		pcols = append(pcols, PhysColumn{Name: c.QualifiedName(), Type: t, Nullable: f.Nullable})
	}
	spec.Filter = andPreds(preds)
	streams := max(1, min(pl.opts.Parallelism, len(tasks)))
	if st == nil {
		// Without storage the table's row groups are unknown: assume
		// groups of rowsPerGroup rows (what `tpch gen` writes), so small
		// tables stay single-stream in EXPLAIN of test catalogs.
		streams = max(1, min(pl.opts.Parallelism, int(n.Table.RowCount()/rowsPerGroup)+1))
	}
	if st != nil && len(tasks) == 0 {
		tasks = nil // an empty table: no task at all
	}
	op := &ScanOp{Spec: spec, Tasks: tasks, RowGroups: groups, TableRows: float64(n.Table.RowCount())}
	if st != nil && len(tasks) > 1 {
		op.Clustered = clusteredCols(st, tasks, spec.Columns, pcols)
	}
	if len(residual) > 0 {
		op.Residual = logicalExprList(residual)
	}
	rows := pl.est.Rows(n)
	if op.Spec.Filter != nil && len(residual) == 0 && op.TableRows > 0 {
		// The estimate of what the pushed filter keeps: a storage node
		// filters a scan that keeps few rows (storage.ClientOptions.
		// ScanMode auto), and serves the stored bytes of the others.
		op.Spec.Selectivity = min(max(rows/op.TableRows, 1e-9), 1)
	}
	out, err := pl.node(&PhysNode{Kind: PhysScan, Streams: streams, Columns: pcols, Scan: op}, layout, rows)
	if err != nil {
		return nil, err
	}
	if len(residual) > 0 {
		return pl.filter(out, plan.AndOf(residual), rows)
	}
	return out, nil
}

// clusteredCols finds the scan's integer output columns without NULLs
// whose row groups hold disjoint value ranges once sorted (a neighbour may
// share its edge value: dbgen's lineitem rows of one order can straddle two
// row groups). One entry per task (a row group the scan reads: those its
// filter's statistics rule out have no task, and no entry), in the tasks'
// order.
func clusteredCols(st *storage.Table, tasks []storage.FileRange, names []string, cols []PhysColumn) []ClusterCol {
	files := make(map[string]*storage.File, len(st.Files))
	for _, f := range st.Files {
		files[f.Path] = f
	}
	var out []ClusterCol
	for i, name := range names {
		if k := cols[i].Type.ID; k != expr.TypeInt32 && k != expr.TypeInt64 {
			continue
		}
		tc := st.ColumnIndex(name)
		if tc < 0 {
			continue
		}
		cc := ClusterCol{Out: i, Name: name}
		ok := true
		for _, t := range tasks {
			f := files[t.Path]
			if f == nil || len(t.RowGroups) != 1 || t.RowGroups[0] < 0 || t.RowGroups[0] >= len(f.RowGroups) {
				ok = false
				break
			}
			rg := f.RowGroups[t.RowGroups[0]]
			stats := rg.Columns
			ok = tc < len(stats) && stats[tc].Nulls == 0 && stats[tc].Min != nil && stats[tc].Max != nil &&
				stats[tc].Min.Kind == storage.KindInt && stats[tc].Max.Kind == storage.KindInt
			if !ok {
				break
			}
			cc.Min = append(cc.Min, stats[tc].Min.Int)
			cc.Max = append(cc.Max, stats[tc].Max.Int)
			cc.Rows = append(cc.Rows, rg.Rows)
		}
		if !ok || len(cc.Min) < 2 {
			continue
		}
		order := cc.byMin()
		for j := 1; j < len(order) && ok; j++ {
			ok = cc.Max[order[j-1]] <= cc.Min[order[j]]
		}
		if !ok {
			continue
		}
		// NB: sorted and disjoint, the last range ends highest.
		cc.Lo, cc.Hi = cc.Min[order[0]], cc.Max[order[len(order)-1]]
		out = append(out, cc)
	}
	return out
}
