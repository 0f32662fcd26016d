package engine

import (
	"strings"

	"github.com/nicflow/nicflow/engine/bind"
	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/storage"
)

// UPDATE and DELETE rewrite only the files their WHERE may touch: the
// filter the optimizer pushed into the scan of the target (in the query of
// the rows hit) is tested against every row group's statistics, and only
// the files with a row group that may match are read, rewritten and
// replaced; the other files stay as they are. The whole table is
// rewritten when nothing narrows it: no WHERE, a WHERE storage cannot test
// (a subquery, a function), every file a candidate, or a table that
// references itself (its key and reference records are rebuilt from the
// rows written, which must then be all of them). A narrowed rewrite of a
// table with unique keys or foreign keys moves the replaced files' records
// to the rows written (storage: commitNarrowKeys).

// dmlFiles is the part of table t an UPDATE or DELETE rewrites.
type dmlFiles struct {
	// paths are the files replaced (nil: the whole table).
	paths []string
	// rows are the rows in them.
	rows int64
	// def is t with only those files (nil: the whole table).
	def *plan.TableDef
}

// narrowDML finds the files of table t that the rows of hit (the rows the
// statement changes, with t scanned once) may be in.
func narrowDML(t *plan.TableDef, st *storage.Table, hit *bind.QueryStmt) dmlFiles {
	whole := dmlFiles{rows: st.Rows()}
	if hit == nil {
		return whole
	}
	for _, fk := range st.ForeignKeys {
		if strings.EqualFold(fk.RefTable, st.QualifiedName()) {
			return whole // it references itself: its records are rebuilt
		}
	}
	var scans []*plan.ScanNode
	plan.WalkPlanDeep(hit.Plan, func(n plan.Plan) {
		if sc, ok := n.(*plan.ScanNode); ok && sc.Table == t {
			scans = append(scans, sc)
		}
	})
	if len(scans) != 1 {
		return whole
	}
	pred := phys.ScanFilter(scans[0])
	if pred == nil {
		return whole
	}
	files, err := st.FilesMayMatch(pred)
	if err != nil || len(files) == len(st.Files) {
		return whole
	}
	narrow := *st
	narrow.Files = files
	def := *t
	def.Handle = &narrow
	out := dmlFiles{def: &def, paths: []string{}, rows: narrow.Rows()}
	for _, f := range files {
		out.paths = append(out.paths, f.Path)
	}
	return out
}

// restrict returns q reading only the narrowed files of t (q itself for
// the whole table), or false when a scan of t it holds is out of reach.
func (d dmlFiles) restrict(t *plan.TableDef, q *bind.QueryStmt) (*bind.QueryStmt, bool) {
	if d.def == nil || q == nil {
		return q, true
	}
	p := plan.MapPlan(q.Plan, func(n plan.Plan) plan.Plan {
		if sc, ok := n.(*plan.ScanNode); ok && sc.Table == t {
			c := *sc
			c.Table = d.def
			return &c
		}
		return n
	})
	missed := false
	plan.WalkPlanDeep(p, func(n plan.Plan) {
		if sc, ok := n.(*plan.ScanNode); ok && sc.Table == t {
			missed = true // in a shared subplan: MapPlan does not go there
		}
	})
	if missed {
		return nil, false
	}
	c := *q
	c.Plan = p
	return &c, true
}
