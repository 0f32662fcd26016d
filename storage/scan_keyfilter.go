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
		return keyRowsBytes(st, v, sel, n, out), true
	}
	return nil, false
}

func keyRowsInt[T int32 | int64](st *keyFilterState, x []T, valid []bool, sel []int32, out []int32) []int32 {
	k := 0
	out = out[:cap(out)]
	if sel == nil {
		for i, val := range x {
			out[k] = int32(i)
			if (valid == nil || valid[i]) && st.mayHoldInt(int64(val)) {
				k++
			}
		}
		return out[:k]
	}
	for _, i := range sel {
		out[k] = i
		if (valid == nil || valid[i]) && st.mayHoldInt(int64(x[i])) {
			k++
		}
	}
	return out[:k]
}

func keyRowsDictInt[T int32 | int64](st *keyFilterState, dict []T, idx []int32, valid []bool, sel []int32, n int, out []int32) []int32 {
	k := 0
	out = out[:cap(out)]
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			if (valid == nil || valid[i]) && st.mayHoldInt(int64(dict[idx[i]])) {
				k++
			}
		}
		return out[:k]
	}
	for _, i := range sel {
		out[k] = i
		if (valid == nil || valid[i]) && st.mayHoldInt(int64(dict[idx[i]])) {
			k++
		}
	}
	return out[:k]
}

func keyRowsBytes(st *keyFilterState, v *vector, sel []int32, n int, out []int32) []int32 {
	offs, data, idx := v.offs, v.data, []int32(nil)
	if v.dict != nil {
		offs, data, idx = v.dict.offs, v.dict.data, v.idx
	}
	val := func(i int32) []byte {
		if idx != nil {
			i = idx[i]
		}
		return data[offs[i]:offs[i+1]]
	}
	k := 0
	out = out[:cap(out)]
	if sel == nil {
		for i := 0; i < n; i++ {
			out[k] = int32(i)
			if (v.valid == nil || v.valid[i]) && st.mayHoldBytes(val(int32(i))) {
				k++
			}
		}
		return out[:k]
	}
	for _, i := range sel {
		out[k] = i
		if (v.valid == nil || v.valid[i]) && st.mayHoldBytes(val(i)) {
			k++
		}
	}
	return out[:k]
}
