package tpch

import (
	"strconv"
)

// appendMoney appends hundredths as dbgen prints money: optional '-',
// dollars, '.', two digits.
func appendMoney(dst []byte, cents int64) []byte {
	if cents < 0 {
		dst = append(dst, '-')
		cents = -cents
	}
	dst = strconv.AppendInt(dst, cents/100, 10)
	c := cents % 100
	return append(dst, '.', byte('0'+c/10), byte('0'+c%10))
}

func appendDate(dst []byte, date32 int32) []byte {
	s := &dateStrs[date32-epoch1992]
	return append(dst, s[:]...)
}

// appendTbl appends the rows of b in dbgen's .tbl format: fields in schema
// order, each followed by '|', one row per line.
//
// NB: l_quantity is printed as an integer (dbgen prints the count, not a
// decimal) although it is a decimal(15,2) column.
func appendTbl(dst []byte, b *batch) []byte {
	defs := tableCols[b.table]
	cols := b.cols
	for r := 0; r < b.n; r++ {
		for ci := range defs {
			c := &cols[ci]
			switch defs[ci].kind {
			case kInt64:
				dst = strconv.AppendInt(dst, c.i64[r], 10)
			case kInt32:
				dst = strconv.AppendInt(dst, int64(c.i32[r]), 10)
			case kDecimal:
				if b.table == Lineitem && ci == lQuantity {
					dst = strconv.AppendInt(dst, c.i64[r]/100, 10)
				} else {
					dst = appendMoney(dst, c.i64[r])
				}
			case kDate:
				dst = appendDate(dst, c.i32[r])
			default:
				dst = append(dst, c.str[r]...)
			}
			dst = append(dst, '|')
		}
		dst = append(dst, '\n')
	}
	return dst
}
