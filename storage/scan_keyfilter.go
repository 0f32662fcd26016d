package storage

// Join key filters in the scan (keyfilter.go): applied after the pushed
// down predicate, before materialization, and to row groups by their
// statistics when a task starts.

// scanKeyFilter is a key filter bound to the vector of its column.
type scanKeyFilter struct {
	vec  int // index in Scanner.need / worker.vecs
	tcol int // table column
	f    *KeyFilter
}

// keyFiltersExclude reports whether a published filter says no row of rg
// can match (its column's min and max miss the build keys' range, or the
// build has no key).
func (s *Scanner) keyFiltersExclude(rg *RowGroup) bool {
	for _, k := range s.kf {
		st := k.f.active()
		if st == nil {
			continue
		}
		if st.empty {
			return true
		}
		if !st.ints || k.tcol >= len(rg.Columns) {
			continue
		}
		cs := &rg.Columns[k.tcol]
		if cs.Min == nil || cs.Max == nil || !intStatKind(cs.Min.Kind) || cs.Min.Kind != cs.Max.Kind {
			continue
		}
		if !st.mayOverlap(cs.Min.Int, cs.Max.Int) {
			return true
		}
	}
	return false
}

// intStatKind: statistics whose Int is the column's stored integer.
func intStatKind(k ValueKind) bool {
	return k == KindInt || k == KindDate || k == KindTimestamp || k == KindTime
}

// applyKeyFilters narrows the candidate rows sel (nil: all n) by every
// published key filter, decoding the filters' columns.
func (w *worker) applyKeyFilters(sel []int32, n int) ([]int32, error) {
	// NB: when sel is a prefix of w.sel (the pushed-down predicate's
	// output), the buffer already holds n rows and grow keeps it.
	w.sel = grow(w.sel, n)
	for _, k := range w.s.kf {
		st := k.f.active()
		if st == nil {
			continue
		}
		if err := w.decode(k.vec, n); err != nil {
			return nil, err
		}
		v := w.vecs[k.vec]
		out := w.sel[:n]
		var tested int
		if sel == nil {
			tested = n
		} else {
			tested = len(sel)
		}
		r, ok := keyFilterRows(st, v, sel, n, out)
		if !ok {
			continue // a domain this filter cannot test: pass
		}
		k.f.count(tested, len(r))
		sel = r
		if len(sel) == 0 {
			return sel, nil
		}
	}
	return sel, nil
}

// keyFilterRows keeps the candidate rows whose value may be a build key;
// ok is false when the vector's kind is not the filter's domain.
//
// NB: out may alias sel (filtering in place: the k-th output never
// overtakes the k-th input).
func keyFilterRows(st *keyFilterState, v *vector, sel []int32, n int, out []int32) ([]int32, bool) {
	if st.empty {
		return out[:0], true
	}
	switch {
	case st.ints && (v.kind == kInt32 || v.kind == kInt64):
		if v.dict != nil {
			if v.kind == kInt32 {
				return keyRowsDictInt(st, v.dict.i32, v.idx, v.valid, sel, n, out), true
			}
			return keyRowsDictInt(st, v.dict.i64, v.idx, v.valid, sel, n, out), true
		}
		if v.kind == kInt32 {
			return keyRowsInt(st, v.i32[:n], v.valid, sel, out), true
		}
		return keyRowsInt(st, v.i64[:n], v.valid, sel, out), true
	case !st.ints && v.kind == kString:
		if v.dict != nil {
			return keyRowsBytes(st, v.dict.offs, v.dict.data, v.idx, v.valid, sel, n, out), true
		}
		return keyRowsBytes(st, v.offs, v.data, nil, v.valid, sel, n, out), true
	}
	return nil, false
}

// keyRowsInt and keyRowsDictInt are the scan's hot loops: the state's
// fields in locals, the hash and the word test inlined, and the output
// cursor advanced by the outcome (no branch per row; filter.go's NB).

func keyRowsInt[T int32 | int64](st *keyFilterState, x []T, valid []bool, sel []int32, out []int32) []int32 {
	lo, hi, words, shift := st.lo, st.hi, st.words, st.shift
	k := 0
	out = out[:cap(out)]
	switch {
	case sel == nil && valid == nil:
		for i, val := range x {
			v := int64(val)
			h := KeyHashInt(v)
			m := keyFilterMask(h)
			out[k] = int32(i)
			k += b2i(v >= lo && v <= hi && words[h>>shift]&m == m)
		}
	case sel == nil:
		valid = valid[:len(x)]
		for i, val := range x {
			v := int64(val)
			h := KeyHashInt(v)
			m := keyFilterMask(h)
			out[k] = int32(i)
			k += b2i(valid[i] && v >= lo && v <= hi && words[h>>shift]&m == m)
		}
	default:
		for _, i := range sel {
			v := int64(x[i])
			h := KeyHashInt(v)
			m := keyFilterMask(h)
			out[k] = i
			k += b2i((valid == nil || valid[i]) && v >= lo && v <= hi && words[h>>shift]&m == m)
		}
	}
	return out[:k]
}

func keyRowsDictInt[T int32 | int64](st *keyFilterState, dict []T, idx []int32, valid []bool, sel []int32, n int, out []int32) []int32 {
	// The dictionary's entries are tested once each, then rows look
	// their entry's outcome up (a dictionary larger than the chunk is
	// tested row by row).
	if len(dict) > n {
		k := 0
		out = out[:cap(out)]
		for j := 0; j < lenRows(sel, n); j++ {
			i := int32(j)
			if sel != nil {
				i = sel[j]
			}
			out[k] = i
			k += b2i((valid == nil || valid[i]) && st.mayHoldInt(int64(dict[idx[i]])))
		}
		return out[:k]
	}
	pass := make([]bool, len(dict))
	for e, val := range dict {
		pass[e] = st.mayHoldInt(int64(val))
	}
	k := 0
	out = out[:cap(out)]
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			k += b2i((valid == nil || valid[i]) && pass[idx[i]])
		}
		return out[:k]
	}
	for _, i := range sel {
		out[k] = i
		k += b2i((valid == nil || valid[i]) && pass[idx[i]])
	}
	return out[:k]
}

func lenRows(sel []int32, n int) int {
	if sel != nil {
		return len(sel)
	}
	return n
}

// keyRowsBytes keeps the candidate rows whose string (row i is
// data[offs[i]:offs[i+1]], or entry idx[i] of a dictionary when idx is
// set) may be a build key. The scan's vectors and Arrow arrays
// (FilterArray) both lay strings out this way.
func keyRowsBytes(st *keyFilterState, offs []int32, data []byte, idx []int32, valid []bool, sel []int32, n int, out []int32) []int32 {
	k := 0
	out = out[:cap(out)]
	for j := 0; j < lenRows(sel, n); j++ {
		i := int32(j)
		if sel != nil {
			i = sel[j]
		}
		e := i
		if idx != nil {
			e = idx[i]
		}
		out[k] = i
		if (valid == nil || valid[i]) && st.mayHoldBytes(data[offs[e]:offs[e+1]]) {
			k++
		}
	}
	return out[:k]
}
