package engine

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestDescribeStatementParams: a parameter takes the type of its context,
// as PostgreSQL infers it; a client's type wins; an untyped one is text;
// the result's columns are described as with NULLs.
func TestDescribeStatementParams(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		"create table t (id int, big bigint, d decimal(12,2), x double precision, v text, day date, ts timestamp, tz timestamptz, b boolean, by bytea)",
		"insert into t values (1, 2, 3.5, 0.5, 'a', '2024-01-01', '2024-01-01 10:00', '2024-01-01 10:00+00', true, '\\x01')",
	} {
		exec1(t, s, q)
	}
	for _, c := range []struct {
		src, want string
		given     []arrow.DataType
	}{
		{src: "select * from t where id = $1", want: "int32"},
		{src: "select * from t where $1 = big", want: "int64"},
		{src: "select * from t where big > $1 and x < $2 and v like $3", want: "int64 float64 utf8"},
		{src: "select d + $1 from t", want: "decimal64(12, 2)"},
		{src: "select * from t limit $1 offset $2", want: "int64 int64"},
		{src: "select $1::date, cast($2 as timestamp)", want: "date32 timestamp[us]"},
		{src: "select * from t where ts between $1 and $2 or tz = $3 or day in ($4, $5)", want: "timestamp[us] timestamp[us] timestamp[us, tz=UTC] date32 date32"},
		{src: "insert into t (id, d, v, day, ts, b, by) values ($1, $2, $3, $4, $5, $6, $7)", want: "int32 decimal64(12, 2) utf8 date32 timestamp[us] bool binary"},
		{src: "insert into t values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10), ($11, 1, 1, 1, 'x', null, null, null, null, null)", want: "int32 int64 decimal64(12, 2) float64 utf8 date32 timestamp[us] timestamp[us, tz=UTC] bool binary int32"},
		{src: "update t set v = $1, x = x * $2 where id = $3", want: "utf8 float64 int32"},
		{src: "delete from t where day < $1", want: "date32"},
		{src: "select $1, $2 || 'x', coalesce($3, big) from t", want: "utf8 utf8 int64"},
		{src: "select * from t where id in (select id from t where v = $2) and b = $1", want: "bool utf8"},
		{src: "select extract(year from $1)", want: "timestamp[us]"},
		{src: "select * from t where id = $1 and v = $3", want: "int32 utf8 utf8"},
		{src: "select * from t where id = $1", given: []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String}, want: "int64 utf8"},
		{src: "select * from t where id = $1 and big = $2", given: []arrow.DataType{nil, arrow.PrimitiveTypes.Int32}, want: "int32 int32"},
	} {
		d, err := s.DescribeStatement(c.src, c.given)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		var got []string
		for _, p := range d.Params {
			got = append(got, p.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.src, strings.Join(got, " "), c.want)
		}
	}
	// The columns are described as Describe does with NULLs.
	d, err := s.DescribeStatement("select id, d * $1 as p from t where v = $2", nil)
	if err != nil || !d.Rows || strings.Join(d.Names, ",") != "id,p" || d.Types[0].ID() != arrow.INT32 {
		t.Errorf("columns: %+v %v", d, err)
	}
	if d, err := s.DescribeStatement("insert into t (id) values ($1)", nil); err != nil || d.Rows {
		t.Errorf("an insert has no rows: %+v %v", d, err)
	}
	// Describing runs nothing: the table is as it was.
	if r := exec1(t, s, "select count(*) from t"); r[0][0] != "1" {
		t.Errorf("describe changed the table: %s rows", r)
	}
	// A number beside a decimal keeps its fraction digits, whether it
	// came as a string literal or as a parameter's value.
	if r := exec1(t, s, "select d + '0.0001', d = '3.501', d * ('2') from t"); r[0][0] != "3.5001" || r[0][1] != "false" || r[0][2] != "7.0000" {
		t.Errorf("untyped numbers beside a decimal: %v", r)
	}
	// Without the protocol's parameters, $1 is an error, and a bad
	// statement fails as it would at execution.
	if _, _, _, err := s.Describe("select $1"); err == nil {
		t.Error("Describe accepted a parameter")
	}
	if _, err := s.DescribeStatement("select nosuch from t where id = $1", nil); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("a bad statement: %v", err)
	}
}
