package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/bind"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Describe plans the one statement of src without running it and returns
// the columns it returns (names and types), or ok false for a statement
// without rows. It serves protocols that describe a statement before
// executing it (the PostgreSQL extended query protocol): a statement that
// changes the database is not run. SHOW, DESCRIBE and SHOW TABLES, which
// read only, are run to learn their columns.
func (s *Session) Describe(src string) (names []string, types []arrow.DataType, ok bool, err error) {
	stmts, err := sql.Parse(src)
	if err != nil {
		return nil, nil, false, err
	}
	if len(stmts) != 1 {
		return nil, nil, false, nferr.Queryf("cannot describe %d statements at once", len(stmts))
	}
	s.mu.Lock()
	st, err := PrepareIn(s.catalog(), src, stmts[0].Stmt, s.zone, s.opts.DisabledRules...)
	s.mu.Unlock()
	if err != nil {
		return nil, nil, false, err
	}
	var ret *bind.Returning
	switch x := st.(type) {
	case *bind.QueryStmt:
		for _, c := range x.Plan.Columns() {
			types = append(types, c.Type)
		}
		return x.Names, types, true, nil
	case *bind.ExplainStmt:
		return []string{"plan"}, []arrow.DataType{typStr}, true, nil
	case *bind.ShowTablesStmt, *bind.ShowStmt, *bind.DescribeStmt:
		s.mu.Lock()
		r, err := s.runStmt(context.Background(), st)
		s.mu.Unlock()
		if err != nil {
			return nil, nil, false, err
		}
		defer r.Close()
		for _, f := range r.Schema.Fields() {
			names, types = append(names, f.Name), append(types, f.Type)
		}
		return names, types, true, nil
	case *bind.InsertStmt:
		ret = x.Returning
	case *bind.UpdateStmt:
		ret = x.Returning
	case *bind.DeleteStmt:
		ret = x.Returning
	}
	if ret == nil {
		return nil, nil, false, nil
	}
	for _, e := range ret.Exprs {
		types = append(types, e.Type())
	}
	return ret.Names, types, true, nil
}
