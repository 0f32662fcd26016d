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
// read only, are run to learn their columns. A parameter ($1) in src is
// an error: DescribeStatement describes statements with parameters.
func (s *Session) Describe(src string) (names []string, types []arrow.DataType, ok bool, err error) {
	d, err := s.describeSrc(src, nil, false)
	if err != nil {
		return nil, nil, false, err
	}
	return d.Names, d.Types, d.Rows, nil
}

// Description is what a client learns of a statement before running it.
type Description struct {
	// Params are the types of its parameters $1, $2, ...: the client's
	// where it gave one, else the type the parameter's context gives it
	// (bind.BindDescribe: id = $1 has id's type, LIMIT $1 is BIGINT,
	// $1::date a DATE, an INSERT's VALUES the target columns' types),
	// else text.
	Params []arrow.DataType
	// Names and Types are the columns of its rows; Rows is false for a
	// statement without rows.
	Names []string
	Types []arrow.DataType
	Rows  bool
}

// DescribeStatement is Describe for a statement with parameters $1, $2,
// ...: given[i], when not nil, is the type the client gave parameter
// i+1; the others' types are inferred from their context. The result's
// Params has one type for each of max(len(given), highest $n)
// parameters.
func (s *Session) DescribeStatement(src string, given []arrow.DataType) (*Description, error) {
	return s.describeSrc(src, given, true)
}

func (s *Session) describeSrc(src string, given []arrow.DataType, params bool) (*Description, error) {
	stmts, err := sql.Parse(src)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, nferr.Queryf("cannot describe %d statements at once", len(stmts))
	}
	d := &Description{}
	s.mu.Lock()
	var st bind.Statement
	if params {
		st, d.Params, err = prepareDescribe(s.catalog(), src, stmts[0].Stmt, s.zone, given, s.opts.DisabledRules...)
	} else {
		st, err = PrepareIn(s.catalog(), src, stmts[0].Stmt, s.zone, s.opts.DisabledRules...)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d.Names, d.Types, d.Rows, err = s.columnsOf(st)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// columnsOf returns the columns a bound statement returns (ok false: no
// rows).
func (s *Session) columnsOf(st bind.Statement) (names []string, types []arrow.DataType, ok bool, err error) {
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
