package storage

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Key filters over Arrow arrays: for scans whose source does not apply
// them itself (a storage node's records arriving over Flight), exec
// applies them to each record it receives, before the record goes
// further up the plan.

// KeyFilterApplier is implemented by record iterators that apply the
// ScanOptions.KeyFilters they were given (the local Scanner).
type KeyFilterApplier interface {
	AppliesKeyFilters() bool
}

// AppliesKeyFilters implements KeyFilterApplier.
func (s *Scanner) AppliesKeyFilters() bool { return true }

// KeyFilterReporter is implemented by record iterators that apply the key
// filters to some of their records and not to others: a scan of a storage
// node's files decodes (and filters) here what it reads locally or as
// stored bytes, and passes on unfiltered the rows a node sends over
// Flight. LastFiltered reports whether the record Next returned last went
// through the filters; exec filters the others (filtering a record twice
// costs a second hash per row and counts its rows twice in EXPLAIN
// ANALYZE).
type KeyFilterReporter interface {
	LastFiltered() bool
}

// FilterArray narrows the rows sel of a (nil: all a.Len() rows) to those
// whose value may be a build key, writing into out (cap >= candidates).
// ok is false when the filter is not active (every row passes: sel is
// returned unchanged) or a's type is not the filter's domain.
func (f *KeyFilter) FilterArray(a arrow.Array, sel []int32, out []int32) (kept []int32, ok bool) {
	st := f.active()
	if st == nil {
		return sel, false
	}
	n := a.Len()
	tested := n
	if sel != nil {
		tested = len(sel)
	}
	if st.empty {
		f.count(tested, 0)
		return out[:0], true
	}
	var valid []bool
	if a.NullN() > 0 {
		valid = make([]bool, n)
		for i := range valid {
			valid[i] = a.IsValid(i)
		}
	}
	switch {
	case st.ints && (a.DataType().ID() == arrow.INT32 || a.DataType().ID() == arrow.DATE32):
		kept = keyRowsInt(st, fixedValues[int32](a), valid, sel, out)
	case st.ints && isInt64Layout(a.DataType()):
		kept = keyRowsInt(st, fixedValues[int64](a), valid, sel, out)
	case !st.ints:
		if id := a.DataType().ID(); id != arrow.STRING && id != arrow.BINARY {
			return sel, false
		}
		d := a.Data()
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
		var data []byte
		if b := d.Buffers()[2]; b != nil {
			data = b.Bytes()
		}
		kept = keyRowsBytes(st, offs, data, nil, valid, sel, n, out)
	default:
		return sel, false
	}
	f.count(tested, len(kept))
	return kept, true
}

func isInt64Layout(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT64, arrow.DECIMAL64, arrow.TIMESTAMP, arrow.TIME64:
		return true
	}
	return false
}
