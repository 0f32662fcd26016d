package storage

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// vector holds one column of one scan chunk in typed slices (the decoder's
// output), before any Arrow array is built. Row i of the chunk is element i;
// valid is nil when the chunk has no nulls.
//
// INVARIANT: only the slice of the vector's kind is meaningful, and its
// length is at least n (buffers are reused across chunks and may be longer).
type vector struct {
	kind  physKind
	n     int
	valid []bool
	i32   []int32
	i64   []int64
	f64   []float64
	b     []bool
	offs  []int32 // strings: value i is data[offs[i]:offs[i+1]]
	data  []byte
	d128  []decimal128.Num

	// Dictionary form (the flat decoder, for column chunks whose data
	// pages are all dictionary-encoded): when dict != nil, row i holds
	// entry idx[i] of dict, whose values are in the slice of its kind:
	// dictN real entries, then zero (or empty) ones up to dict.n (NULL
	// rows point at entry dictN); valid still marks NULL rows. dictID
	// identifies the dictionary process-wide (filters cache per-entry
	// results by it).
	//
	// INVARIANT: 0 <= idx[i] < dict.n for i < n (flatDecoder.decodeIdx).
	dict   *vector
	dictN  int
	dictID uint64
	idx    []int32

	validBuf []bool // backing store of valid, kept across chunks

	// An array column's rows (kind kList): rows listOff.. of list.
	list    *listRows
	listOff int

	// A string dictionary's entries as 8-byte words and lengths, when all
	// have at most 8 bytes (shortOK), for dictionary shortFor
	// (materializeDict).
	shortFor  uint64
	shortOK   bool
	shortMax  int
	shortWord []uint64
	shortLen  []int32
}

func (v *vector) str(i int) []byte { return v.data[v.offs[i]:v.offs[i+1]] }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// filter narrows the candidate rows of a chunk to those where the predicate
// is TRUE. sel lists candidate rows in ascending order (nil = all rows
// 0..n-1); the result is written into out (cap >= number of candidates) and
// returned. scratch provides temporaries for OR.
//
// NB: the hot loops write the candidate index unconditionally and advance
// the output cursor by the comparison result, which the Go compiler turns
// into branch-free code (SETcc), so random selectivity costs no mispredicts.
func (n *cnode) filter(vecs []*vector, sel []int32, rows int, out []int32, scratch *filterScratch) []int32 {
	switch n.op {
	case OpAnd:
		cur := sel
		for i, a := range n.args {
			if cur != nil && len(cur) == 0 {
				return out[:0]
			}
			if i == 0 {
				cur = a.filter(vecs, cur, rows, out, scratch)
			} else {
				// Filtering in place is safe: the k-th output never
				// overtakes the k-th input.
				cur = a.filter(vecs, cur, rows, out, scratch)
			}
		}
		return cur
	case OpOr:
		// Union of each child's survivors among the same candidates.
		acc := scratch.get(rows)[:0]
		tmp := scratch.get(rows)
		for _, a := range n.args {
			r := a.filter(vecs, sel, rows, tmp[:cap(tmp)], scratch)
			acc = mergeUnion(acc, r, scratch)
		}
		out = append(out[:0], acc...)
		scratch.put(tmp)
		scratch.put(acc)
		return out
	}
	v := vecs[n.col]
	if n.constFalse {
		return out[:0]
	}
	switch n.op {
	case OpIsNull:
		return filterNull(v.valid, sel, rows, out, false)
	case OpIsNotNull:
		return filterNull(v.valid, sel, rows, out, true)
	}
	if n.constTrue {
		return filterNull(v.valid, sel, rows, out, true)
	}
	if isRangeOp(n.op) && n.rangeEmpty() {
		return out[:0]
	}
	if v.dict != nil {
		return filterDict(v.idx[:rows], scratch.dictMask(n, v), sel, out)
	}
	return n.filterValues(v, sel, rows, out)
}

// filterValues runs a leaf test over a vector of values (not in
// dictionary form).
func (n *cnode) filterValues(v *vector, sel []int32, rows int, out []int32) []int32 {
	// IN and <> test set membership (<> negated); the other ops a range.
	isSet, negate := n.op == OpIn || n.op == OpNe, n.op == OpNe
	switch n.kind {
	case kInt32:
		if isSet {
			return filterSet(v.i32[:rows], v.valid, sel, out, n.i64set, negate)
		}
		return filterRange32(v.i32[:rows], v.valid, sel, out, n.i64lo, n.i64hi)
	case kInt64:
		if isSet {
			return filterSet(v.i64[:rows], v.valid, sel, out, n.i64set, negate)
		}
		return filterRange64(v.i64[:rows], v.valid, sel, out, n.i64lo, n.i64hi)
	case kFloat64:
		if isSet {
			return filterSet(v.f64[:rows], v.valid, sel, out, n.f64set, negate)
		}
		return filterRangeF(v.f64[:rows], v.valid, sel, out, n.f64lo, n.f64hi)
	case kBool:
		if isSet {
			return filterBoolSet(v.b[:rows], v.valid, sel, out, n.boolset, negate)
		}
		var want []bool
		for _, b := range []bool{false, true} {
			if int64(b2i(b)) >= n.i64lo && int64(b2i(b)) <= n.i64hi {
				want = append(want, b)
			}
		}
		return filterBoolSet(v.b[:rows], v.valid, sel, out, want, false)
	case kString:
		return n.filterString(v, sel, rows, out)
	case kDec128:
		return n.filterDec128(v, sel, rows, out)
	}
	return out[:0]
}

func filterNull(valid []bool, sel []int32, rows int, out []int32, wantValid bool) []int32 {
	k := 0
	if valid == nil {
		if !wantValid {
			return out[:0]
		}
		if sel == nil {
			out = out[:rows]
			for i := range out {
				out[i] = int32(i)
			}
			return out
		}
		return append(out[:0], sel...)
	}
	out = out[:cap(out)]
	if sel == nil {
		for i := 0; i < rows; i++ {
			out[k] = int32(i)
			k += b2i(valid[i] == wantValid)
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(valid[i] == wantValid)
		}
	}
	return out[:k]
}

// filterRange64 keeps rows with lo <= x <= hi.
func filterRange64(x []int64, valid []bool, sel []int32, out []int32, lo, hi int64) []int32 {
	return filterRangeInt(x, valid, sel, out, lo, uint64(hi-lo))
}

func filterRange32(x []int32, valid []bool, sel []int32, out []int32, lo64, hi64 int64) []int32 {
	// Clamp to int32: the compiler normalized out-of-range constants to
	// MinInt32-1 / MaxInt32+1.
	if lo64 > hi64 || hi64 < -1<<31 || lo64 > 1<<31-1 {
		return out[:0]
	}
	if lo64 < -1<<31 {
		lo64 = -1 << 31
	}
	if hi64 > 1<<31-1 {
		hi64 = 1<<31 - 1
	}
	lo := int32(lo64)
	return filterRangeInt(x, valid, sel, out, lo, uint32(int32(hi64)-lo))
}

// filterRangeInt keeps rows with lo <= x <= lo+w. The test is one unsigned
// comparison: x-lo <= w in wrapping arithmetic (U is T's unsigned twin).
func filterRangeInt[T int32 | int64, U uint32 | uint64](x []T, valid []bool, sel []int32, out []int32, lo T, w U) []int32 {
	out = out[:cap(out)]
	k := 0
	switch {
	case sel == nil && valid == nil:
		out = out[:len(x)]
		for i, v := range x {
			out[k] = int32(i)
			k += b2i(U(v-lo) <= w)
		}
	case sel == nil:
		for i, v := range x {
			out[k] = int32(i)
			k += b2i(U(v-lo) <= w && valid[i])
		}
	case valid == nil:
		for _, i := range sel {
			out[k] = i
			k += b2i(U(x[i]-lo) <= w)
		}
	default:
		for _, i := range sel {
			out[k] = i
			k += b2i(U(x[i]-lo) <= w && valid[i])
		}
	}
	return out[:k]
}

func filterRangeF(x []float64, valid []bool, sel []int32, out []int32, lo, hi float64) []int32 {
	out = out[:cap(out)]
	k := 0
	switch {
	case sel == nil && valid == nil:
		for i, v := range x {
			out[k] = int32(i)
			k += b2i(v >= lo && v <= hi)
		}
	case sel == nil:
		for i, v := range x {
			out[k] = int32(i)
			k += b2i(v >= lo && v <= hi && valid[i])
		}
	case valid == nil:
		for _, i := range sel {
			out[k] = i
			k += b2i(x[i] >= lo && x[i] <= hi)
		}
	default:
		for _, i := range sel {
			out[k] = i
			k += b2i(x[i] >= lo && x[i] <= hi && valid[i])
		}
	}
	return out[:k]
}

type setElem interface{ ~int32 | ~int64 | ~float64 }

// filterSet keeps rows whose value is in set (or not in it, for <>). IN lists
// are short in practice (TPC-H: <= 8), so a linear probe beats a hash map.
func filterSet[T setElem, S int64 | float64](x []T, valid []bool, sel []int32, out []int32, set []S, negate bool) []int32 {
	out = out[:cap(out)]
	k := 0
	test := func(v T) bool { return setHas(set, S(v)) != negate }
	if sel == nil {
		for i, v := range x {
			out[k] = int32(i)
			k += b2i((valid == nil || valid[i]) && test(v))
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i((valid == nil || valid[i]) && test(x[i]))
		}
	}
	return out[:k]
}

func filterBoolSet(x []bool, valid []bool, sel []int32, out []int32, set []bool, negate bool) []int32 {
	var want [2]bool
	for _, b := range set {
		want[b2i(b)] = true
	}
	if negate {
		want[0], want[1] = !want[0], !want[1]
	}
	out = out[:cap(out)]
	k := 0
	if sel == nil {
		for i, v := range x {
			out[k] = int32(i)
			k += b2i((valid == nil || valid[i]) && want[b2i(v)])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i((valid == nil || valid[i]) && want[b2i(x[i])])
		}
	}
	return out[:k]
}

func (n *cnode) strTest(s []byte) bool {
	switch n.op {
	case OpPrefix:
		return bytes.HasPrefix(s, []byte(n.strlo))
	case OpIn, OpNe:
		found := false
		if len(n.strset) > smallSet {
			_, found = slices.BinarySearchFunc(n.strset, s, compareStringBytes)
		} else {
			for _, c := range n.strset {
				if string(s) == c {
					found = true
					break
				}
			}
		}
		return found != (n.op == OpNe)
	}
	if n.hasLo {
		c := strings.Compare(string(s), n.strlo)
		if c < 0 || (c == 0 && n.strLoStrict) {
			return false
		}
	}
	if n.hasHi {
		c := strings.Compare(string(s), n.strhi)
		if c > 0 || (c == 0 && n.strHiStrict) {
			return false
		}
	}
	return true
}

// compareStringBytes compares a and b bytewise, as strings.Compare would
// (without converting b, which would allocate per row).
func compareStringBytes(a string, b []byte) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return cmp.Compare(len(a), len(b))
}

func (n *cnode) filterString(v *vector, sel []int32, rows int, out []int32) []int32 {
	out = out[:cap(out)]
	k := 0
	if sel == nil {
		for i := 0; i < rows; i++ {
			out[k] = int32(i)
			k += b2i((v.valid == nil || v.valid[i]) && n.strTest(v.str(i)))
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i((v.valid == nil || v.valid[i]) && n.strTest(v.str(int(i))))
		}
	}
	return out[:k]
}

func (n *cnode) dec128Test(x decimal128.Num) bool {
	switch n.op {
	case OpIn, OpNe:
		found := false
		if len(n.d128set) > smallSet {
			_, found = slices.BinarySearchFunc(n.d128set, x, func(a, b decimal128.Num) int { return a.Cmp(b) })
		} else {
			for _, c := range n.d128set {
				if x == c {
					found = true
					break
				}
			}
		}
		return found != (n.op == OpNe)
	}
	return !x.Less(n.d128lo) && !n.d128hi.Less(x)
}

func (n *cnode) filterDec128(v *vector, sel []int32, rows int, out []int32) []int32 {
	out = out[:cap(out)]
	k := 0
	if sel == nil {
		for i := 0; i < rows; i++ {
			out[k] = int32(i)
			k += b2i((v.valid == nil || v.valid[i]) && n.dec128Test(v.d128[i]))
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i((v.valid == nil || v.valid[i]) && n.dec128Test(v.d128[i]))
		}
	}
	return out[:k]
}

// filterDict keeps the rows whose dictionary entry passes: mask[e] is the
// leaf's result for entry e (false for the NULL entry and the padding).
func filterDict(idx []int32, mask []bool, sel []int32, out []int32) []int32 {
	out = out[:cap(out)]
	k := 0
	if sel == nil {
		for i, e := range idx {
			out[k] = int32(i)
			k += b2i(mask[e])
		}
	} else {
		for _, i := range sel {
			out[k] = i
			k += b2i(mask[idx[i]])
		}
	}
	return out[:k]
}

// dictMask returns leaf n's result for every entry of v's dictionary (and
// false for its NULL entry), computed once per dictionary: a string test
// then runs once per distinct value of a row group instead of once per row.
func (s *filterScratch) dictMask(n *cnode, v *vector) []bool {
	if s.masks == nil {
		s.masks = map[*cnode]*dictMask{}
	}
	m := s.masks[n]
	if m == nil {
		m = &dictMask{}
		s.masks[n] = m
	}
	if m.id == v.dictID && m.mask != nil {
		return m.mask
	}
	d := *v.dict
	d.valid, d.dict = nil, nil // the entries themselves; none is NULL
	m.pass = grow(m.pass, v.dictN)
	pass := n.filterValues(&d, nil, v.dictN, m.pass)
	m.mask = grow(m.mask, v.dict.n)
	clear(m.mask)
	for _, e := range pass {
		m.mask[e] = true
	}
	m.id = v.dictID
	return m.mask
}

// dictMask caches one leaf's per-entry results for one dictionary.
type dictMask struct {
	id   uint64
	mask []bool
	pass []int32
}

// filterScratch recycles selection buffers used by OR, and caches
// dictionary masks (it belongs to one scan worker).
type filterScratch struct {
	free  [][]int32
	masks map[*cnode]*dictMask
}

func (s *filterScratch) get(n int) []int32 {
	for i := len(s.free) - 1; i >= 0; i-- {
		if cap(s.free[i]) >= n {
			b := s.free[i]
			s.free = append(s.free[:i], s.free[i+1:]...)
			return b[:n]
		}
	}
	return make([]int32, n)
}

func (s *filterScratch) put(b []int32) { s.free = append(s.free, b) }

// mergeUnion merges two ascending index lists into acc (ascending, no
// duplicates).
func mergeUnion(acc, r []int32, scratch *filterScratch) []int32 {
	if len(r) == 0 {
		return acc
	}
	if len(acc) == 0 {
		return append(acc, r...)
	}
	res := scratch.get(len(acc) + len(r))[:0]
	i, j := 0, 0
	for i < len(acc) && j < len(r) {
		switch {
		case acc[i] < r[j]:
			res = append(res, acc[i])
			i++
		case acc[i] > r[j]:
			res = append(res, r[j])
			j++
		default:
			res = append(res, acc[i])
			i++
			j++
		}
	}
	res = append(res, acc[i:]...)
	res = append(res, r[j:]...)
	acc = append(acc[:0], res...)
	scratch.put(res)
	return acc
}
