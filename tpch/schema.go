package tpch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
)

// colKind is the storage class of a generated column.
type colKind uint8

const (
	kInt64   colKind = iota // keys: arrow int64
	kInt32                  // p_size, ps_availqty, l_linenumber, o_shippriority
	kDecimal                // decimal(15,2) as int64 hundredths: arrow decimal64(15,2)
	kDate                   // days since 1970-01-01: arrow date32
	kString                 // utf8
)

// colDef describes one column of a table.
type colDef struct {
	name string
	kind colKind
	// dict asks for Parquet dictionary encoding: set on columns with few
	// distinct values (flags, modes, priorities, small numeric domains,
	// dates), where it shrinks files and speeds scans; never on unique
	// columns (keys, comments, names), where it only costs time.
	dict bool
}

// Column indexes, per table, into batch.cols and the schemas below.
const (
	pPartkey = iota
	pName
	pMfgr
	pBrand
	pType
	pSize
	pContainer
	pRetailprice
	pComment
)

const (
	psPartkey = iota
	psSuppkey
	psAvailqty
	psSupplycost
	psComment
)

const (
	sSuppkey = iota
	sName
	sAddress
	sNationkey
	sPhone
	sAcctbal
	sComment
)

const (
	cCustkey = iota
	cName
	cAddress
	cNationkey
	cPhone
	cAcctbal
	cMktsegment
	cComment
)

const (
	oOrderkey = iota
	oCustkey
	oOrderstatus
	oTotalprice
	oOrderdate
	oOrderpriority
	oClerk
	oShippriority
	oComment
)

const (
	lOrderkey = iota
	lPartkey
	lSuppkey
	lLinenumber
	lQuantity
	lExtendedprice
	lDiscount
	lTax
	lReturnflag
	lLinestatus
	lShipdate
	lCommitdate
	lReceiptdate
	lShipinstruct
	lShipmode
	lComment
)

const (
	nNationkey = iota
	nName
	nRegionkey
	nComment
)

const (
	rRegionkey = iota
	rName
	rComment
)

var tableCols = [numTables][]colDef{
	Part: {
		{"p_partkey", kInt64, false}, {"p_name", kString, false}, {"p_mfgr", kString, true},
		{"p_brand", kString, true}, {"p_type", kString, true}, {"p_size", kInt32, true},
		{"p_container", kString, true}, {"p_retailprice", kDecimal, false}, {"p_comment", kString, false},
	},
	PartSupp: {
		{"ps_partkey", kInt64, false}, {"ps_suppkey", kInt64, false}, {"ps_availqty", kInt32, false},
		{"ps_supplycost", kDecimal, false}, {"ps_comment", kString, false},
	},
	Supplier: {
		{"s_suppkey", kInt64, false}, {"s_name", kString, false}, {"s_address", kString, false},
		{"s_nationkey", kInt64, true}, {"s_phone", kString, false}, {"s_acctbal", kDecimal, false},
		{"s_comment", kString, false},
	},
	Customer: {
		{"c_custkey", kInt64, false}, {"c_name", kString, false}, {"c_address", kString, false},
		{"c_nationkey", kInt64, true}, {"c_phone", kString, false}, {"c_acctbal", kDecimal, false},
		{"c_mktsegment", kString, true}, {"c_comment", kString, false},
	},
	Orders: {
		{"o_orderkey", kInt64, false}, {"o_custkey", kInt64, false}, {"o_orderstatus", kString, true},
		{"o_totalprice", kDecimal, false}, {"o_orderdate", kDate, true}, {"o_orderpriority", kString, true},
		{"o_clerk", kString, true}, {"o_shippriority", kInt32, true}, {"o_comment", kString, false},
	},
	Lineitem: {
		{"l_orderkey", kInt64, false}, {"l_partkey", kInt64, false}, {"l_suppkey", kInt64, false},
		{"l_linenumber", kInt32, true}, {"l_quantity", kDecimal, true}, {"l_extendedprice", kDecimal, false},
		{"l_discount", kDecimal, true}, {"l_tax", kDecimal, true}, {"l_returnflag", kString, true},
		{"l_linestatus", kString, true}, {"l_shipdate", kDate, true}, {"l_commitdate", kDate, true},
		{"l_receiptdate", kDate, true}, {"l_shipinstruct", kString, true}, {"l_shipmode", kString, true},
		{"l_comment", kString, false},
	},
	Nation: {
		{"n_nationkey", kInt64, false}, {"n_name", kString, false}, {"n_regionkey", kInt64, false},
		{"n_comment", kString, false},
	},
	Region: {
		{"r_regionkey", kInt64, false}, {"r_name", kString, false}, {"r_comment", kString, false},
	},
}

// Decimal15_2 is the Arrow type of every money and quantity column.
var Decimal15_2 = &arrow.Decimal64Type{Precision: 15, Scale: 2}

// ArrowSchema returns the Arrow schema of table t: keys int64, p_size,
// ps_availqty, l_linenumber and o_shippriority int32, decimal(15,2) columns
// decimal64(15,2), dates date32, strings utf8; no column is nullable.
func ArrowSchema(t Table) *arrow.Schema {
	defs := tableCols[t]
	fields := make([]arrow.Field, len(defs))
	for i, c := range defs {
		var dt arrow.DataType
		switch c.kind {
		case kInt64:
			dt = arrow.PrimitiveTypes.Int64
		case kInt32:
			dt = arrow.PrimitiveTypes.Int32
		case kDecimal:
			dt = Decimal15_2
		case kDate:
			dt = arrow.FixedWidthTypes.Date32
		default:
			dt = arrow.BinaryTypes.String
		}
		fields[i] = arrow.Field{Name: c.name, Type: dt}
	}
	return arrow.NewSchema(fields, nil)
}

// Columns returns the column names of table t in order.
func Columns(t Table) []string {
	out := make([]string, len(tableCols[t]))
	for i, c := range tableCols[t] {
		out[i] = c.name
	}
	return out
}

// colVec holds the values of one column of a batch; which slice is used
// depends on the column's kind (i64: int64/decimal, i32: int32/date).
type colVec struct {
	i64 []int64
	i32 []int32
	str []parquet.ByteArray
}

// batch is a columnar slice of generated rows. Strings reference either the
// text pool, static distribution members, or the batch's arena; all stay
// valid until the batch is reset.
type batch struct {
	table Table
	n     int
	cols  []colVec
	arena []byte
}

func newBatch(t Table, capRows int) *batch {
	b := &batch{table: t, cols: make([]colVec, len(tableCols[t]))}
	for i, c := range tableCols[t] {
		switch c.kind {
		case kInt64, kDecimal:
			b.cols[i].i64 = make([]int64, 0, capRows)
		case kInt32, kDate:
			b.cols[i].i32 = make([]int32, 0, capRows)
		default:
			b.cols[i].str = make([]parquet.ByteArray, 0, capRows)
		}
	}
	// 48 bytes per row covers names, addresses and phones of the tables
	// that format strings; the arena grows if needed (older slices stay
	// valid: they keep their backing array).
	b.arena = make([]byte, 0, capRows*48)
	return b
}

func (b *batch) reset() {
	b.n = 0
	for i := range b.cols {
		c := &b.cols[i]
		c.i64, c.i32 = c.i64[:0], c.i32[:0]
		clear(c.str)
		c.str = c.str[:0]
	}
	b.arena = b.arena[:0]
}

// appendArena copies s into the arena and returns the stored bytes.
func (b *batch) appendArena(s []byte) parquet.ByteArray {
	start := len(b.arena)
	b.arena = append(b.arena, s...)
	return b.arena[start:len(b.arena):len(b.arena)]
}
