package exec

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// populateWrite maps the whole pages inside [p, p+n) writable with one
// madvise(MADV_POPULATE_WRITE), and touches the partial pages at both ends
// itself. It reports false when the kernel does not support it.
func populateWrite(p unsafe.Pointer, n uintptr) bool {
	if populateUnsupported.Load() {
		return false
	}
	start := uintptr(p)
	lo := (start + pageSize - 1) &^ (pageSize - 1)
	hi := (start + n) &^ (pageSize - 1)
	if hi <= lo {
		return false
	}
	b := unsafe.Slice((*byte)(p), n)
	if err := unix.Madvise(b[lo-start:hi-start], unix.MADV_POPULATE_WRITE); err != nil {
		populateUnsupported.Store(true)
		return false
	}
	// The partial pages at both ends (NB: writing zero keeps a fresh
	// slice as it is).
	b[0] = 0
	b[n-1] = 0
	return true
}
