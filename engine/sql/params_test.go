package sql

import "testing"

func TestBindParams(t *testing.T) {
	src := "select $1, '$1', \"$2\", $10 -- $2\n/* $3 */ from t where a = $2 and b = $1::int"
	vals := make([]ParamValue, 10)
	vals[0] = ParamValue{Text: "it's"}
	vals[1] = ParamValue{Null: true}
	vals[9] = ParamValue{Text: "5", Type: "INTEGER"}
	got, err := BindParams(src, vals)
	want := "select ('it''s'), '$1', \"$2\", CAST('5' AS INTEGER) -- $2\n/* $3 */ from t where a = NULL and b = ('it''s')::int"
	if err != nil || got != want {
		t.Errorf("BindParams:\n got %q, %v\nwant %q", got, err, want)
	}
	if n, err := ParamCount(src); err != nil || n != 10 {
		t.Errorf("ParamCount = %d, %v", n, err)
	}
	if _, err := BindParams("select $2", []ParamValue{{Text: "x"}}); err == nil {
		t.Error("a parameter without a value: no error")
	}
	if _, err := ParamCount("select $0"); err == nil {
		t.Error("$0: no error")
	}
	// A value is never SQL: it parses back as one string literal.
	got, err = BindParams("select $1", []ParamValue{{Text: "x'); drop table t; --"}})
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := Parse(got)
	if err != nil || len(stmts) != 1 {
		t.Errorf("%q parsed into %d statements: %v", got, len(stmts), err)
	}
}
