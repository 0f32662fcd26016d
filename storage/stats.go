package storage

import (
	"math/big"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// ColumnStats are one column's statistics in one row group. Min and Max
// are nil when unknown (no statistics in the file, all values null, or a
// string too long to keep); a nil bound never prunes.
type ColumnStats struct {
	Nulls int64  `json:"nulls"`
	Min   *Value `json:"min,omitempty"`
	Max   *Value `json:"max,omitempty"`
	// Distinct is an estimate of the number of distinct values (0: unknown).
	Distinct int64 `json:"ndv,omitempty"`
	// GroupSpan, in Table.ColumnStats of an integer, date or time
	// column, is the mean width (max - min + 1) of its row groups' ranges
	// (0: unknown): the table's range over it says how many row groups'
	// worth of values the table holds.
	GroupSpan float64 `json:"-"`
}

// maxStatString bounds string statistics kept in the catalog: a longer min
// is truncated (still a lower bound), a longer max is dropped.
const maxStatString = 64

// mustMatch reports whether every row of a row group with these statistics
// passes n. It errs on the side of false: only comparisons (=, <, <=, >, >=,
// BETWEEN) of integer, date, time, decimal and float columns with both
// bounds known and no NULLs (a NULL fails every comparison), IS NOT NULL,
// and ANDs and ORs of them.
func (n *cnode) mustMatch(stats func(tcol int) *ColumnStats, rows int64) bool {
	switch n.op {
	case OpAnd:
		for _, a := range n.args {
			if !a.mustMatch(stats, rows) {
				return false
			}
		}
		return len(n.args) > 0
	case OpOr:
		for _, a := range n.args {
			if a.mustMatch(stats, rows) {
				return true
			}
		}
		return false
	}
	if n.constFalse || rows <= 0 {
		return false
	}
	st := stats(n.tcol)
	if st == nil || st.Nulls != 0 {
		return false // unknown (-1) or some NULLs
	}
	if n.op == OpIsNotNull {
		return true
	}
	if !isRangeOp(n.op) {
		return false
	}
	if n.constTrue {
		return true
	}
	if n.rangeEmpty() || st.Min == nil || st.Max == nil {
		return false
	}
	switch n.kind {
	case kInt32, kInt64:
		return st.Min.Int >= n.i64lo && st.Max.Int <= n.i64hi
	case kFloat64:
		lo, hi := st.Min.Float, st.Max.Float
		return lo == lo && hi == hi && lo >= n.f64lo && hi <= n.f64hi
	}
	return false
}

// mayMatch reports whether a row group with these statistics can hold a row
// passing n. stats(i) returns the statistics of table column i (nil when
// unknown). It errs on the side of true.
func (n *cnode) mayMatch(stats func(tcol int) *ColumnStats, rows int64) bool {
	switch n.op {
	case OpAnd:
		for _, a := range n.args {
			if !a.mayMatch(stats, rows) {
				return false
			}
		}
		return true
	case OpOr:
		for _, a := range n.args {
			if a.mayMatch(stats, rows) {
				return true
			}
		}
		return false
	}
	if n.constFalse {
		return false
	}
	st := stats(n.tcol)
	if st == nil {
		return true
	}
	switch n.op {
	case OpIsNull:
		return st.Nulls > 0
	case OpIsNotNull:
		return st.Nulls < rows
	}
	if st.Nulls >= rows {
		return false // all null: no comparison is TRUE
	}
	if n.constTrue {
		return true
	}
	if isRangeOp(n.op) && n.rangeEmpty() {
		return false
	}
	if st.Min == nil || st.Max == nil {
		// Strings: a truncated min still bounds from below.
		if n.kind == kString && st.Min != nil && n.hasHi && isRangeOp(n.op) {
			c := strings.Compare(st.Min.Str, n.strhi)
			return !(c > 0 || (c == 0 && n.strHiStrict))
		}
		return true
	}
	switch n.kind {
	case kInt32, kInt64:
		lo, hi := st.Min.Int, st.Max.Int
		switch n.op {
		case OpIn:
			return setMeets(n.i64set, lo, hi)
		case OpNe:
			return !(lo == hi && len(n.i64set) == 1 && n.i64set[0] == lo)
		}
		return !(hi < n.i64lo || lo > n.i64hi)
	case kFloat64:
		lo, hi := st.Min.Float, st.Max.Float
		if lo != lo || hi != hi { // NaN bounds are useless
			return true
		}
		switch n.op {
		case OpIn:
			return setMeets(n.f64set, lo, hi)
		case OpNe:
			return !(lo == hi && len(n.f64set) == 1 && n.f64set[0] == lo)
		}
		return !(hi < n.f64lo || lo > n.f64hi)
	case kBool:
		lo, hi := int64(b2i(st.Min.Bool)), int64(b2i(st.Max.Bool))
		switch n.op {
		case OpIn, OpNe:
			for _, b := range []bool{false, true} {
				v := int64(b2i(b))
				if v < lo || v > hi {
					continue
				}
				in := false
				for _, c := range n.boolset {
					in = in || c == b
				}
				if in != (n.op == OpNe) {
					return true
				}
			}
			return false
		}
		return !(hi < n.i64lo || lo > n.i64hi)
	case kString:
		lo, hi := st.Min.Str, st.Max.Str
		switch n.op {
		case OpPrefix:
			p := n.strlo
			// Some value in [lo, hi] starts with p iff p's range
			// [p, p+"\xff...") meets [lo, hi].
			if hi < p {
				return false
			}
			if len(lo) >= len(p) && lo[:len(p)] > p {
				return false
			}
			if len(lo) < len(p) && lo > p {
				return false
			}
			return true
		case OpIn:
			return setMeets(n.strset, lo, hi)
		case OpNe:
			return !(lo == hi && len(n.strset) == 1 && n.strset[0] == lo)
		}
		if n.hasLo {
			c := strings.Compare(hi, n.strlo)
			if c < 0 || (c == 0 && n.strLoStrict) {
				return false
			}
		}
		if n.hasHi {
			c := strings.Compare(lo, n.strhi)
			if c > 0 || (c == 0 && n.strHiStrict) {
				return false
			}
		}
		return true
	case kDec128:
		lo, ok1 := dec128Of(*st.Min)
		hi, ok2 := dec128Of(*st.Max)
		if !ok1 || !ok2 {
			return true
		}
		switch n.op {
		case OpIn:
			for _, c := range n.d128set {
				if !c.Less(lo) && !hi.Less(c) {
					return true
				}
			}
			return false
		case OpNe:
			return !(lo == hi && len(n.d128set) == 1 && n.d128set[0] == lo)
		}
		return !(hi.Less(n.d128lo) || n.d128hi.Less(lo))
	}
	return true
}

func dec128Of(v Value) (decimal128.Num, bool) {
	switch v.Kind {
	case KindDecimal, KindInt:
		return decimal128.FromI64(v.Int), true
	case KindDecimal128:
		b, ok := new(big.Int).SetString(v.Str, 10)
		if !ok || b.BitLen() > 127 {
			return decimal128.Num{}, false
		}
		return decimal128.FromBigInt(b), true
	}
	return decimal128.Num{}, false
}

// setMeets reports whether an IN set (sorted when longer than smallSet,
// cnode.sortSets) holds a value in [lo, hi].
func setMeets[S int64 | float64 | string](set []S, lo, hi S) bool {
	if len(set) > smallSet {
		i, _ := slices.BinarySearch(set, lo)
		return i < len(set) && set[i] <= hi
	}
	for _, c := range set {
		if c >= lo && c <= hi {
			return true
		}
	}
	return false
}
