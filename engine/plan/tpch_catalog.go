package plan

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// TPCHCatalog returns an in-memory catalog with the eight TPC-H tables and
// statistics of scale factor 1 (row counts exact; minimum, maximum and
// distinct counts as measured on dbgen SF1 data, distinct counts rounded).
// Tests and EXPLAIN examples use it; a real database gets its statistics
// from the storage catalog.
//
// Types follow docs/architecture.md: keys int64; p_size, ps_availqty and
// l_linenumber int32; money, quantities, discounts and taxes decimal(15,2)
// (decimal64); dates date32; strings utf8. No column is nullable.
func TPCHCatalog() *MemCatalog {
	c := NewMemCatalog()
	for _, t := range tpchTables() {
		c.AddTable(t)
	}
	return c
}

type tpchCol struct {
	name     string
	typ      arrow.DataType
	min, max any
	distinct int64
}

func tpchTable(name string, rows int64, cols []tpchCol) *TableDef {
	fields := make([]arrow.Field, len(cols))
	stats := make([]ColumnStats, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ}
		stats[i] = ColumnStats{Min: c.min, Max: c.max, Distinct: c.distinct}
	}
	return &TableDef{
		Name:   name,
		Schema: arrow.NewSchema(fields, nil),
		Stats:  &TableStats{Rows: rows, Columns: stats},
	}
}

// days is the date32 value of a calendar day.
func days(y int, m time.Month, d int) arrow.Date32 {
	return arrow.Date32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func tpchTables() []*TableDef {
	i64 := arrow.PrimitiveTypes.Int64
	i32 := arrow.PrimitiveTypes.Int32
	str := arrow.BinaryTypes.String
	date := arrow.FixedWidthTypes.Date32
	money := &arrow.Decimal64Type{Precision: 15, Scale: 2}
	return []*TableDef{
		tpchTable("region", 5, []tpchCol{
			{"r_regionkey", i64, int64(0), int64(4), 5},
			{"r_name", str, "AFRICA", "MIDDLE EAST", 5},
			{"r_comment", str, nil, nil, 5},
		}),
		tpchTable("nation", 25, []tpchCol{
			{"n_nationkey", i64, int64(0), int64(24), 25},
			{"n_name", str, "ALGERIA", "VIETNAM", 25},
			{"n_regionkey", i64, int64(0), int64(4), 5},
			{"n_comment", str, nil, nil, 25},
		}),
		tpchTable("supplier", 10_000, []tpchCol{
			{"s_suppkey", i64, int64(1), int64(10_000), 10_000},
			{"s_name", str, "Supplier#000000001", "Supplier#000010000", 10_000},
			{"s_address", str, nil, nil, 10_000},
			{"s_nationkey", i64, int64(0), int64(24), 25},
			{"s_phone", str, "10-102-116-6785", "34-998-900-4911", 10_000},
			{"s_acctbal", money, int64(-99_999), int64(999_999), 9_955},
			{"s_comment", str, nil, nil, 10_000},
		}),
		tpchTable("customer", 150_000, []tpchCol{
			{"c_custkey", i64, int64(1), int64(150_000), 150_000},
			{"c_name", str, "Customer#000000001", "Customer#000150000", 150_000},
			{"c_address", str, nil, nil, 150_000},
			{"c_nationkey", i64, int64(0), int64(24), 25},
			{"c_phone", str, "10-100-106-1617", "34-999-618-6881", 150_000},
			{"c_acctbal", money, int64(-99_999), int64(999_999), 140_187},
			{"c_mktsegment", str, "AUTOMOBILE", "MACHINERY", 5},
			{"c_comment", str, nil, nil, 149_968},
		}),
		tpchTable("part", 200_000, []tpchCol{
			{"p_partkey", i64, int64(1), int64(200_000), 200_000},
			{"p_name", str, nil, nil, 199_997},
			{"p_mfgr", str, "Manufacturer#1", "Manufacturer#5", 5},
			{"p_brand", str, "Brand#11", "Brand#55", 25},
			{"p_type", str, "ECONOMY ANODIZED BRASS", "STANDARD POLISHED TIN", 150},
			{"p_size", i32, int32(1), int32(50), 50},
			{"p_container", str, "JUMBO BAG", "WRAP PKG", 40},
			{"p_retailprice", money, int64(90_100), int64(209_899), 20_899},
			{"p_comment", str, nil, nil, 131_753},
		}),
		tpchTable("partsupp", 800_000, []tpchCol{
			{"ps_partkey", i64, int64(1), int64(200_000), 200_000},
			{"ps_suppkey", i64, int64(1), int64(10_000), 10_000},
			{"ps_availqty", i32, int32(1), int32(9_999), 9_999},
			{"ps_supplycost", money, int64(100), int64(100_000), 99_865},
			{"ps_comment", str, nil, nil, 799_124},
		}),
		tpchTable("orders", 1_500_000, []tpchCol{
			{"o_orderkey", i64, int64(1), int64(6_000_000), 1_500_000},
			{"o_custkey", i64, int64(1), int64(149_999), 99_996},
			{"o_orderstatus", str, "F", "P", 3},
			{"o_totalprice", money, int64(85_738), int64(55_586_094), 1_464_556},
			{"o_orderdate", date, days(1992, 1, 1), days(1998, 8, 2), 2_406},
			{"o_orderpriority", str, "1-URGENT", "5-LOW", 5},
			{"o_clerk", str, "Clerk#000000001", "Clerk#000001000", 1_000},
			{"o_shippriority", i32, int32(0), int32(0), 1},
			{"o_comment", str, nil, nil, 1_482_071},
		}),
		tpchTable("lineitem", 6_001_215, []tpchCol{
			{"l_orderkey", i64, int64(1), int64(6_000_000), 1_500_000},
			{"l_partkey", i64, int64(1), int64(200_000), 200_000},
			{"l_suppkey", i64, int64(1), int64(10_000), 10_000},
			{"l_linenumber", i32, int32(1), int32(7), 7},
			{"l_quantity", money, int64(100), int64(5_000), 50},
			{"l_extendedprice", money, int64(90_100), int64(10_494_950), 933_900},
			{"l_discount", money, int64(0), int64(10), 11},
			{"l_tax", money, int64(0), int64(8), 9},
			{"l_returnflag", str, "A", "R", 3},
			{"l_linestatus", str, "F", "O", 2},
			{"l_shipdate", date, days(1992, 1, 2), days(1998, 12, 1), 2_526},
			{"l_commitdate", date, days(1992, 1, 31), days(1998, 10, 31), 2_466},
			{"l_receiptdate", date, days(1992, 1, 3), days(1998, 12, 31), 2_554},
			{"l_shipinstruct", str, "COLLECT COD", "TAKE BACK RETURN", 4},
			{"l_shipmode", str, "AIR", "TRUCK", 7},
			{"l_comment", str, nil, nil, 4_580_667},
		}),
	}
}
