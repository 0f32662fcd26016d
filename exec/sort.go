package exec

// Sort.
//
// Design: the input is materialized into a rowStore (typed Go columns,
// charged to the "sort" account); then a permutation of row numbers is
// sorted and the output gathered from the store in env.BatchSize chunks.
//
// The permutation sort uses normalized keys: each row gets a 64-bit prefix
// that orders like its sort key (ascending or descending, NULLS FIRST or
// LAST folded in, integers range-compressed with the column's min/max so
// several small keys share the word, strings contribute their first bytes).
//
//   - When the prefix captures the whole key (every key fits), the rows are
//     ordered by an LSD radix sort on the prefix: stable, no comparisons.
//   - Otherwise pdqsort orders (prefix, row) entries, comparing prefixes
//     first and falling back to typed per-key comparators (chosen once per
//     key type) on equal prefixes, then to the row number: the sort is
//     stable.
//
// External sort (sort_spill.go): when the budget runs out and the query may
// spill, the sorted store becomes a run written to a spill file, and the
// runs are merged with the k-way merge of OrderedMerge (exchange_merge.go),
// which compares rows with the same typed comparators.
//
// SQL defaults (PostgreSQL): ASC puts NULLs last, DESC puts NULLs first;
// NaN sorts above every other float; strings compare by bytes.

import (
	"bytes"
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// NullOrder places NULLs in a sort.
type NullOrder string

// The NULL orders. The default follows PostgreSQL: NULLS LAST for ASC,
// NULLS FIRST for DESC.
const (
	NullsDefault NullOrder = ""
	NullsFirst   NullOrder = "first"
	NullsLast    NullOrder = "last"
)

// SortKey is one ORDER BY item: an input column and a direction.
type SortKey struct {
	Col   int
	Desc  bool
	Nulls NullOrder
}

// nullsFirst resolves the NULL order.
func (k SortKey) nullsFirst() bool {
	switch k.Nulls {
	case NullsFirst:
		return true
	case NullsLast:
		return false
	}
	return k.Desc
}

// SortSpec configures a sort.
type SortSpec struct {
	Keys []SortKey
}

// sortKeyInfo is a validated sort key.
type sortKeyInfo struct {
	SortKey
	info colInfo
}

// checkSortKeys validates keys against schema for operator op.
func checkSortKeys(schema *arrow.Schema, keys []SortKey, op string) ([]sortKeyInfo, error) {
	if len(keys) == 0 {
		return nil, nferr.Queryf("%s: no sort keys", op)
	}
	out := make([]sortKeyInfo, len(keys))
	for i, k := range keys {
		c, err := classifyCol(schema, k.Col, op, "sort key")
		if err != nil {
			return nil, err
		}
		if !c.ordered() {
			return nil, nferr.Queryf("%s: cannot order by %s of type %s", op, schema.Field(k.Col).Name, c.dt)
		}
		if k.Nulls != NullsDefault && k.Nulls != NullsFirst && k.Nulls != NullsLast {
			return nil, nferr.Queryf("%s: unknown NULL order %q", op, k.Nulls)
		}
		out[i] = sortKeyInfo{SortKey: k, info: c}
	}
	return out, nil
}

// ------------------------------------------------------------ comparators

// cmpFn compares rows i and j of one key (direction and NULL order
// applied).
type cmpFn func(i, j int) int

// rowComparer compares two rows of two stores (they may be the same) on
// all keys.
type rowComparer struct {
	fns []func(a, b *rowStore, i, j int) int
}

func (rc *rowComparer) compare(a, b *rowStore, i, j int) int {
	for _, f := range rc.fns {
		if c := f(a, b, i, j); c != 0 {
			return c
		}
	}
	return 0
}

// newRowComparer chooses a typed comparator per key once.
func newRowComparer(keys []sortKeyInfo) *rowComparer {
	rc := &rowComparer{}
	for _, k := range keys {
		rc.fns = append(rc.fns, makeKeyCmp(k))
	}
	return rc
}

// makeKeyCmp returns a comparator of column k.Col of two stores.
func makeKeyCmp(k sortKeyInfo) func(a, b *rowStore, i, j int) int {
	col, desc, nf := k.Col, k.Desc, k.nullsFirst()
	var valCmp func(x, y colVec, i, j int) int
	switch k.info.class {
	case pcBool:
		valCmp = func(x, y colVec, i, j int) int {
			return boolCmp(x.(*boolVec).vals[i], y.(*boolVec).vals[j])
		}
	case pcBytes:
		valCmp = func(x, y colVec, i, j int) int {
			return bytes.Compare(x.(*bytesVec).value(i), y.(*bytesVec).value(j))
		}
	case pcDec128:
		valCmp = func(x, y colVec, i, j int) int {
			a := castSlice[i128](x.(*fixedVec[[2]uint64]).vals)
			b := castSlice[i128](y.(*fixedVec[[2]uint64]).vals)
			return a[i].cmp(b[j])
		}
	case pcFloat:
		if k.info.width == 4 {
			valCmp = floatVecCmp[float32, uint32]
		} else {
			valCmp = floatVecCmp[float64, uint64]
		}
	case pcUint:
		switch k.info.width {
		case 1:
			valCmp = intVecCmp[uint8, uint8]
		case 2:
			valCmp = intVecCmp[uint16, uint16]
		case 4:
			valCmp = intVecCmp[uint32, uint32]
		default:
			valCmp = intVecCmp[uint64, uint64]
		}
	default:
		switch k.info.width {
		case 1:
			valCmp = intVecCmp[int8, uint8]
		case 2:
			valCmp = intVecCmp[int16, uint16]
		case 4:
			valCmp = intVecCmp[int32, uint32]
		default:
			valCmp = intVecCmp[int64, uint64]
		}
	}
	return func(a, b *rowStore, i, j int) int {
		x, y := a.vecs[col], b.vecs[col]
		xn, yn := x.IsNull(i), y.IsNull(j)
		if xn || yn {
			switch {
			case xn && yn:
				return 0
			case xn == nf:
				return -1
			}
			return 1
		}
		c := valCmp(x, y, i, j)
		if desc {
			return -c
		}
		return c
	}
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func intVecCmp[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64, U uint8 | uint16 | uint32 | uint64](x, y colVec, i, j int) int {
	a := castSlice[T](x.(*fixedVec[U]).vals)
	b := castSlice[T](y.(*fixedVec[U]).vals)
	return cmp.Compare(a[i], b[j])
}

func floatVecCmp[T float32 | float64, U uint32 | uint64](x, y colVec, i, j int) int {
	a := castSlice[T](x.(*fixedVec[U]).vals)
	b := castSlice[T](y.(*fixedVec[U]).vals)
	return expr.FloatOrder(a[i], b[j])
}

// bind returns a comparator of rows of store s on keys, with every key's
// typed slice captured (no interface calls per comparison): the sort's
// inner loop.
func bindComparer(keys []sortKeyInfo, s *rowStore) func(i, j int) int {
	fns := make([]cmpFn, len(keys))
	for k, key := range keys {
		fns[k] = bindKeyCmp(key, s.vecs[key.Col])
	}
	if len(fns) == 1 {
		return fns[0]
	}
	return func(i, j int) int {
		for _, f := range fns {
			if c := f(i, j); c != 0 {
				return c
			}
		}
		return 0
	}
}

func bindKeyCmp(k sortKeyInfo, v colVec) cmpFn {
	var c cmpFn
	switch k.info.class {
	case pcBool:
		vals := v.(*boolVec).vals
		c = func(i, j int) int { return boolCmp(vals[i], vals[j]) }
	case pcBytes:
		bv := v.(*bytesVec)
		c = func(i, j int) int {
			return bytes.Compare(bv.data[bv.offs[i]:bv.offs[i+1]], bv.data[bv.offs[j]:bv.offs[j+1]])
		}
	case pcDec128:
		vals := castSlice[i128](v.(*fixedVec[[2]uint64]).vals)
		c = func(i, j int) int { return vals[i].cmp(vals[j]) }
	case pcFloat:
		if k.info.width == 4 {
			c = boundCmp(castSlice[float32](v.(*fixedVec[uint32]).vals), expr.FloatOrder[float32])
		} else {
			c = boundCmp(castSlice[float64](v.(*fixedVec[uint64]).vals), expr.FloatOrder[float64])
		}
	case pcUint:
		switch k.info.width {
		case 1:
			c = boundCmp(v.(*fixedVec[uint8]).vals, cmp.Compare[uint8])
		case 2:
			c = boundCmp(v.(*fixedVec[uint16]).vals, cmp.Compare[uint16])
		case 4:
			c = boundCmp(v.(*fixedVec[uint32]).vals, cmp.Compare[uint32])
		default:
			c = boundCmp(v.(*fixedVec[uint64]).vals, cmp.Compare[uint64])
		}
	default:
		switch k.info.width {
		case 1:
			c = boundCmp(castSlice[int8](v.(*fixedVec[uint8]).vals), cmp.Compare[int8])
		case 2:
			c = boundCmp(castSlice[int16](v.(*fixedVec[uint16]).vals), cmp.Compare[int16])
		case 4:
			c = boundCmp(castSlice[int32](v.(*fixedVec[uint32]).vals), cmp.Compare[int32])
		default:
			c = boundCmp(castSlice[int64](v.(*fixedVec[uint64]).vals), cmp.Compare[int64])
		}
	}
	if k.Desc {
		asc := c
		c = func(i, j int) int { return -asc(i, j) }
	}
	if nm := nullMaskOf(v); nm != nil && nm.nulls > 0 {
		val, nf := c, k.nullsFirst()
		c = func(i, j int) int {
			xn, yn := nm.isNull(i), nm.isNull(j)
			if xn || yn {
				switch {
				case xn && yn:
					return 0
				case xn == nf:
					return -1
				}
				return 1
			}
			return val(i, j)
		}
	}
	return c
}

// boundCmp compares vals[i] and vals[j] with cmpf (inlined per type).
func boundCmp[T any](vals []T, cmpf func(a, b T) int) cmpFn {
	return func(i, j int) int { return cmpf(vals[i], vals[j]) }
}

// ------------------------------------------------------- normalized keys

// normOf returns the order-preserving unsigned image of a fixed-width
// value (ascending): signed integers flip the sign bit, floats flip all
// bits when negative (NaN canonical, largest; -0 as +0).
func normInt(v int64) uint64 { return uint64(v) ^ (1 << 63) }

func normFloat(f float64) uint64 {
	if f != f {
		return math.MaxUint64
	}
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// normColumn writes the normalized (ascending) value of every row of a
// fixed-width or boolean store column to out; NULL rows get 0.
func normColumn(v colVec, c colInfo, out []uint64) {
	n := v.Len()
	switch c.class {
	case pcBool:
		for i, b := range v.(*boolVec).vals[:n] {
			out[i] = 0
			if b {
				out[i] = 1
			}
		}
	case pcFloat:
		if c.width == 4 {
			for i, f := range castSlice[float32](v.(*fixedVec[uint32]).vals)[:n] {
				out[i] = normFloat(float64(f))
			}
		} else {
			for i, f := range castSlice[float64](v.(*fixedVec[uint64]).vals)[:n] {
				out[i] = normFloat(f)
			}
		}
	case pcUint:
		switch c.width {
		case 1:
			for i, x := range v.(*fixedVec[uint8]).vals[:n] {
				out[i] = uint64(x)
			}
		case 2:
			for i, x := range v.(*fixedVec[uint16]).vals[:n] {
				out[i] = uint64(x)
			}
		case 4:
			for i, x := range v.(*fixedVec[uint32]).vals[:n] {
				out[i] = uint64(x)
			}
		default:
			copy(out, v.(*fixedVec[uint64]).vals[:n])
		}
	case pcDec128:
		// Only the high word: a prefix, never the whole key.
		for i, x := range v.(*fixedVec[[2]uint64]).vals[:n] {
			out[i] = x[1] ^ (1 << 63)
		}
	default:
		switch c.width {
		case 1:
			for i, x := range castSlice[int8](v.(*fixedVec[uint8]).vals)[:n] {
				out[i] = normInt(int64(x))
			}
		case 2:
			for i, x := range castSlice[int16](v.(*fixedVec[uint16]).vals)[:n] {
				out[i] = normInt(int64(x))
			}
		case 4:
			for i, x := range castSlice[int32](v.(*fixedVec[uint32]).vals)[:n] {
				out[i] = normInt(int64(x))
			}
		default:
			for i, x := range castSlice[int64](v.(*fixedVec[uint64]).vals)[:n] {
				out[i] = normInt(x)
			}
		}
	}
	if nm := nullMaskOf(v); nm != nil && nm.nulls > 0 {
		for i := 0; i < n; i++ {
			if nm.isNull(i) {
				out[i] = 0
			}
		}
	}
}

func nullMaskOf(v colVec) *nullMask {
	switch x := v.(type) {
	case *boolVec:
		return &x.nm
	case *bytesVec:
		return &x.nm
	case *fixedVec[uint8]:
		return &x.nm
	case *fixedVec[uint16]:
		return &x.nm
	case *fixedVec[uint32]:
		return &x.nm
	case *fixedVec[uint64]:
		return &x.nm
	case *fixedVec[[2]uint64]:
		return &x.nm
	}
	return nil
}

// sortEntry is a row to sort: its normalized prefix and its number.
type sortEntry struct {
	key uint64
	row uint32
}

// buildPrefixes fills the 64-bit prefixes of a store's rows and returns how
// many leading keys they capture completely: on equal prefixes those keys
// are equal, and when full == len(keys) equal prefixes are true ties.
func buildPrefixes(s *rowStore, keys []sortKeyInfo, ents []sortEntry, scratch []uint64) (full int) {
	n := s.n
	for i := range ents[:n] {
		ents[i] = sortEntry{row: uint32(i)}
	}
	avail := uint(64)
	for ki, k := range keys {
		v := s.vecs[k.Col]
		nm := nullMaskOf(v)
		hasNull := nm.nulls > 0
		nullBits := uint(0)
		if hasNull {
			nullBits = 1
		}
		if avail <= nullBits {
			return ki
		}
		if k.info.class == pcBytes {
			bv := v.(*bytesVec)
			maxLen, zero := 0, false
			// Bytes every value shares (TPC-H's "Clerk#000000...") order
			// nothing: the prefix starts after them.
			var lcp []byte
			first := true
			for i := 0; i < n; i++ {
				if hasNull && nm.isNull(i) {
					continue
				}
				b := bv.value(i)
				if l := len(b); l > maxLen {
					maxLen = l
				}
				if first {
					lcp, first = b, false
					continue
				}
				m := min(len(lcp), len(b))
				p := 0
				for p < m && lcp[p] == b[p] {
					p++
				}
				lcp = lcp[:p]
			}
			skip := len(lcp)
			zero = bytes.IndexByte(bv.data, 0) >= 0
			room := int(avail-nullBits) / 8
			take := min(maxLen-skip, room)
			width := uint(8 * take)
			for i := 0; i < n; i++ {
				var x uint64
				if !(hasNull && nm.isNull(i)) {
					b := bv.value(i)[skip:]
					for p := 0; p < take; p++ {
						x <<= 8
						if p < len(b) {
							x |= uint64(b[p])
						}
					}
					if k.Desc && width > 0 {
						x = ^x & (1<<width - 1)
					}
				}
				addField(&ents[i], x, width, nullBits, hasNull && nm.isNull(i), k.nullsFirst(), avail)
			}
			avail -= width + nullBits
			// Exact only when every string fit and no string holds a zero
			// byte (zero padding would tie "a" with "a\x00").
			if take < maxLen-skip || zero {
				return ki
			}
			continue
		}
		norm := scratch[:n]
		normColumn(v, k.info, norm)
		lo, hi := uint64(math.MaxUint64), uint64(0)
		for i, x := range norm {
			if hasNull && nm.isNull(i) {
				continue
			}
			lo, hi = min(lo, x), max(hi, x)
		}
		if lo > hi {
			lo, hi = 0, 0
		}
		width := uint(bits.Len64(hi - lo))
		partial := false
		shift := uint(0)
		if width+nullBits > avail {
			shift = width - (avail - nullBits)
			width = avail - nullBits
			partial = true
		}
		for i, x := range norm {
			isNull := hasNull && nm.isNull(i)
			var f uint64
			if !isNull {
				if k.Desc {
					f = (hi - x) >> shift
				} else {
					f = (x - lo) >> shift
				}
			}
			addField(&ents[i], f, width, nullBits, isNull, k.nullsFirst(), avail)
		}
		avail -= width + nullBits
		if partial || k.info.class == pcDec128 {
			return ki
		}
	}
	return len(keys)
}

// addField writes a field just below the bits used so far (avail bits are
// still free): first the NULL bit (when the column has NULLs), then width
// value bits.
func addField(e *sortEntry, v uint64, width, nullBits uint, isNull, nullsFirst bool, avail uint) {
	pos := avail
	if nullBits == 1 {
		pos--
		if isNull != nullsFirst {
			e.key |= 1 << pos
		}
	}
	if width > 0 {
		pos -= width
		e.key |= v << pos
	}
}

// radixSort sorts entries by key with a stable LSD radix sort on the bytes
// that differ between entries.
func radixSort(ents, tmp []sortEntry) []sortEntry {
	if len(ents) < 2 {
		return ents
	}
	var and, or uint64 = math.MaxUint64, 0
	for _, e := range ents {
		and &= e.key
		or |= e.key
	}
	diff := and ^ or
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		count = [256]int{}
		for _, e := range ents {
			count[(e.key>>shift)&0xff]++
		}
		pos := 0
		for b := range count {
			c := count[b]
			count[b] = pos
			pos += c
		}
		for _, e := range ents {
			b := (e.key >> shift) & 0xff
			tmp[count[b]] = e
			count[b]++
		}
		ents, tmp = tmp, ents
	}
	return ents
}

// sortRowOverhead is the memory sortStore needs per row beyond the rows
// themselves: two sortEntry slices and a uint64 scratch.
const sortRowOverhead = 16*2 + 8

// sortStore returns the rows of s in sorted order (stable). It charges its
// working memory to acct; nil means the caller has reserved it already.
func sortStore(env *Env, s *rowStore, keys []sortKeyInfo, rc *rowComparer, acct *Account) ([]uint32, error) {
	n := s.n
	if acct != nil {
		extra := int64(n) * sortRowOverhead
		if err := acct.Grow(extra); err != nil {
			return nil, err
		}
		defer acct.Shrink(extra)
	}
	ents := make([]sortEntry, n)
	scratch := make([]uint64, n)
	full := buildPrefixes(s, keys, ents, scratch)
	if err := env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	if full == len(keys) {
		ents = radixSort(ents, make([]sortEntry, n))
	} else {
		// Equal prefixes mean equal keys[:full]: compare the rest.
		rest := bindComparer(keys[full:], s)
		// NB: the comparator cannot observe cancellation; pdqsort on
		// in-memory rows is bounded (n log n) and checked right after.
		slices.SortFunc(ents, func(a, b sortEntry) int {
			if a.key != b.key {
				if a.key < b.key {
					return -1
				}
				return 1
			}
			if c := rest(int(a.row), int(b.row)); c != 0 {
				return c
			}
			return cmp.Compare(a.row, b.row)
		})
	}
	if err := env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	perm := make([]uint32, n)
	for i, e := range ents {
		perm[i] = e.row
	}
	return perm, nil
}

// Sort is the sort operator: it materializes its input, sorts it (stable)
// and emits it in batches of env.BatchSize. With Env.Spill set it sorts
// more than the budget holds (sort_spill.go).
type Sort struct {
	in     Operator
	spec   []SortKey
	keys   []sortKeyInfo
	infos  []colInfo
	schema *arrow.Schema
	rc     *rowComparer

	env    *Env
	x      *extSort
	perm   []uint32
	pos    int
	sorted bool
	idx    []int32
	opState
}

// NewSort validates spec against the input schema.
func NewSort(in Operator, spec SortSpec) (*Sort, error) {
	keys, err := checkSortKeys(in.Schema(), spec.Keys, "sort")
	if err != nil {
		return nil, err
	}
	s := &Sort{in: in, spec: spec.Keys, keys: keys, schema: in.Schema(), rc: newRowComparer(keys)}
	for i := 0; i < s.schema.NumFields(); i++ {
		c, err := classifyCol(s.schema, i, "sort", "input")
		if err != nil {
			return nil, err
		}
		s.infos = append(s.infos, c)
	}
	return s, nil
}

// Schema implements Operator: the input's.
func (s *Sort) Schema() *arrow.Schema { return s.schema }

// Open implements Operator.
func (s *Sort) Open(env *Env) error {
	s.env = env
	s.x = newExtSort(env, "sort", s.schema, s.spec, s.keys, s.infos, s.rc)
	return s.in.Open(env)
}

// drainInto drains in into store, charging acct.
func drainInto(env *Env, in Operator, store *rowStore, acct *Account) error {
	var charged int64
	return forEachBatch(env, in, func(b *Batch) error {
		store.appendBatch(b)
		if n := store.bytes(); n > charged {
			if err := acct.Grow(n - charged); err != nil {
				return err
			}
			charged = n
		}
		return nil
	})
}

// Next implements Operator.
func (s *Sort) Next() (*Batch, error) {
	if done, err := s.begin(); done {
		return nil, err
	}
	if !s.sorted {
		err := s.x.drain(s.in)
		if err == nil {
			s.perm, err = s.x.finish()
		}
		if err != nil {
			return s.fail(err)
		}
		s.sorted = true
	}
	if s.x.merge != nil {
		b, err := s.x.merge.Next()
		if err != nil {
			s.err = err
		}
		return b, err
	}
	if s.pos >= len(s.perm) {
		return nil, nil
	}
	if err := s.env.Ctx.Err(); err != nil {
		return s.fail(nferr.With(nferr.KindCanceled, err))
	}
	end := min(s.pos+max(s.env.BatchSize, 1), len(s.perm))
	s.idx = s.idx[:0]
	for _, r := range s.perm[s.pos:end] {
		s.idx = append(s.idx, int32(r))
	}
	s.pos = end
	return s.produce(s.x.store.gather(s.env.Alloc, s.idx, nil), len(s.idx)), nil
}

// Close implements Operator.
func (s *Sort) Close() error {
	if !s.closing() {
		return nil
	}
	s.perm = nil
	if s.x != nil {
		s.x.close()
	}
	return s.in.Close()
}
