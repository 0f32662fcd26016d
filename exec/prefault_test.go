package exec

import "testing"

// TestPrefault checks that prefault keeps fresh slices zeroed and writable
// through both paths (madvise where the kernel has it, the page-by-page
// fallback), at sizes below and above prefaultMin and not page aligned.
func TestPrefault(t *testing.T) {
	type slot struct {
		k uint64
		g uint32
	}
	for _, fallback := range []bool{false, true} {
		for _, n := range []int{0, 1, 100, prefaultMin/16 + 3, 1<<20/16 + 7} {
			populateUnsupported.Store(fallback)
			s := make([]slot, n, n+n/4)
			prefault(s)
			full := s[:cap(s)]
			for i, x := range full {
				if x != (slot{}) {
					t.Fatalf("fallback=%v n=%d: slot %d is %v after prefault, want zero", fallback, n, i, x)
				}
			}
			for i := range full {
				full[i] = slot{uint64(i), uint32(i)}
			}
			for i, x := range full {
				if x.k != uint64(i) {
					t.Fatalf("fallback=%v n=%d: slot %d reads %v", fallback, n, i, x)
				}
			}
			populateUnsupported.Store(false)
		}
	}
}
