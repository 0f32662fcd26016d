package bind

import (
	"strings"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
)

// PostgreSQL's JSON constructors, rewritten before binding into the text
// functions nicflow has (JSON is text here; see to_json):
//
//	json_agg(x [ORDER BY ...]) [FILTER ...]    '[' || string_agg(coalesce(to_json(x), 'null'), ', ' ...) || ']'
//	json_object_agg(k, v)                      '{ ' || string_agg(to_json(k::text) || ' : ' || coalesce(to_json(v), 'null'), ', ') || ' }'
//	json_build_array(a, b, ...)                '[' || coalesce(to_json(a), 'null') || ', ' || ... || ']'
//	row_to_json(t), to_json(t), json_agg(t)    a whole row t: '{"c1":' || coalesce(to_json(t.c1), 'null') || ',"c2":' ... || '}'
//
// spaced as PostgreSQL prints each (json_agg's ", ", json_object_agg's
// "{ "a" : 1 }", row_to_json's no spaces); jsonb_agg and
// jsonb_build_array are the same text. No row gives NULL, as PostgreSQL's
// aggregates do.

// jsonCall rewrites x when it is one of the calls above (ok false: not).
func (b *binder) jsonCall(x *sql.FuncCall, s *scope) (sql.Expr, bool, error) {
	if x.Over != nil || x.Name.Quoted {
		return nil, false, nil
	}
	at := x.Pos
	lit := func(v string) sql.Expr { return &sql.Literal{Pos: at, Kind: sql.LitString, Text: v} }
	cat := func(es ...sql.Expr) sql.Expr {
		e := es[0]
		for _, r := range es[1:] {
			e = &sql.BinaryExpr{Pos: at, Op: "||", L: e, R: r}
		}
		return e
	}
	call := func(name string, args ...sql.Expr) *sql.FuncCall {
		return &sql.FuncCall{Pos: at, Name: sql.Ident{Pos: at, Name: name}, Args: args}
	}
	value := func(e sql.Expr) sql.Expr {
		if r := b.wholeRow(e, s); r != nil {
			return r
		}
		return call("coalesce", call("to_json", e), lit("null"))
	}
	name := strings.ToLower(x.Name.Name)
	switch name {
	case "json_agg", "jsonb_agg":
		if len(x.Args) != 1 || x.Star {
			return nil, true, b.errorf(x, "%s takes one argument", name)
		}
		agg := call("string_agg", value(x.Args[0]), lit(", "))
		agg.Distinct, agg.OrderBy, agg.Filter = x.Distinct, x.OrderBy, x.Filter
		return cat(lit("["), agg, lit("]")), true, nil
	case "json_object_agg":
		if len(x.Args) != 2 || x.Star {
			return nil, true, b.errorf(x, "json_object_agg takes two arguments (key, value)")
		}
		key := call("to_json", &sql.Cast{Pos: at, X: x.Args[0], Type: &sql.TypeName{Pos: at, Name: "text"}})
		agg := call("string_agg", cat(key, lit(" : "), value(x.Args[1])), lit(", "))
		agg.Distinct, agg.OrderBy, agg.Filter = x.Distinct, x.OrderBy, x.Filter
		return cat(lit("{ "), agg, lit(" }")), true, nil
	}
	if x.Distinct || x.Star || x.Filter != nil || len(x.OrderBy) > 0 {
		return nil, false, nil
	}
	switch name {
	case "json_build_array", "jsonb_build_array":
		parts := []sql.Expr{lit("[")}
		for i, a := range x.Args {
			if i > 0 {
				parts = append(parts, lit(", "))
			}
			parts = append(parts, value(a))
		}
		return cat(append(parts, lit("]"))...), true, nil
	case "row_to_json", "to_json", "to_jsonb":
		if len(x.Args) == 1 {
			if r := b.wholeRow(x.Args[0], s); r != nil {
				return r, true, nil
			}
		}
		if name == "row_to_json" {
			return nil, true, b.errorf(x, "row_to_json takes a row: the name of a table or alias in FROM")
		}
	}
	return nil, false, nil
}

// wholeRow is the JSON object of the row of FROM item e names (a table or
// alias with no column of that name in scope: rowColumns), or nil when e
// is no such name: '{"c1":' || coalesce(to_json(t.c1), 'null') || ',"c2":'
// ... || '}'.
func (b *binder) wholeRow(e sql.Expr, s *scope) sql.Expr {
	cols, names := b.rowColumns(e, s)
	if cols == nil {
		return nil
	}
	at := e.(*sql.ColumnRef).Pos
	lit := func(v string) sql.Expr { return &sql.Literal{Pos: at, Kind: sql.LitString, Text: v} }
	var out sql.Expr = lit("{")
	for i, col := range cols {
		sep := ","
		if i == 0 {
			sep = ""
		}
		key := lit(sep + jsonQuote(names[i]) + ":")
		v := &sql.FuncCall{Pos: at, Name: sql.Ident{Pos: at, Name: "coalesce"}, Args: []sql.Expr{
			&sql.FuncCall{Pos: at, Name: sql.Ident{Pos: at, Name: "to_json"}, Args: []sql.Expr{col}}, lit("null")}}
		out = &sql.BinaryExpr{Pos: at, Op: "||", L: &sql.BinaryExpr{Pos: at, Op: "||", L: out, R: key}, R: v}
	}
	return &sql.BinaryExpr{Pos: at, Op: "||", L: out, R: lit("}")}
}

// rowColumns lists the columns (as references, and their names) of the
// FROM item a bare name e refers to as a whole row: a table or alias in
// scope when no column of scope has that name (a column wins, as in
// PostgreSQL); nil when e is no such name.
func (b *binder) rowColumns(e sql.Expr, s *scope) ([]sql.Expr, []string) {
	ref, ok := e.(*sql.ColumnRef)
	if !ok || len(ref.Parts) != 1 {
		return nil, nil
	}
	name := ref.Parts[0].Name
	var item *scopeItem
	for sc := s; sc != nil && item == nil; sc = sc.parent {
		for _, it := range sc.items {
			for _, c := range it.cols {
				if strings.EqualFold(c.Name, name) {
					return nil, nil
				}
			}
			if it.name == name && item == nil {
				item = it
			}
		}
	}
	if item == nil || len(item.unreadable) > 0 {
		return nil, nil
	}
	at := ref.Pos
	var cols []sql.Expr
	var names []string
	for i, c := range item.cols {
		if item.hidden != nil && item.hidden[i] {
			continue
		}
		cols = append(cols, &sql.ColumnRef{Pos: at, Parts: []sql.Ident{{Pos: at, Name: name}, {Pos: at, Name: c.Name, Quoted: true}}})
		names = append(names, c.Name)
	}
	return cols, names
}

// jsonQuote is s as a JSON string.
func jsonQuote(s string) string { return string(expr.AppendJSONString(nil, []byte(s))) }
