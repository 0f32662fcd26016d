package exec

import (
	"sync/atomic"
	"unsafe"
)

// Fresh memory and the zero page. A large make() takes pages straight from
// the OS that no one has touched yet. Code that reads such a slice before
// it writes it (an open-addressing table checking a slot for empty, an
// accumulator doing acc[g] += v) takes two page faults per 4 KiB page: the
// read maps the kernel's shared zero page, and the write that follows
// replaces it (copy on write), which flushes the TLB of every CPU running
// the process (an inter-processor interrupt each time). Profiles of fresh
// `nicflow sql` processes at TPC-H SF 1 had these write-protect faults at
// 19-22% of all CPU in Q18 and Q20 (hash table growth, decimal sums).
// prefault makes the pages of such a slice writable before use: one
// madvise(MADV_POPULATE_WRITE) on Linux, which maps them without a fault
// per page, else a write to every page (one ordinary fault each, no copy,
// no TLB flush).

// prefaultMin is the size below which prefault does nothing: a small
// allocation mostly lands on pages the heap already touched, and the
// system call would cost more than it saves.
const prefaultMin = 64 << 10

// pageSize is the granularity prefault touches; a smaller page than the
// real one only touches some pages twice.
const pageSize = 4096

// populateUnsupported is set once madvise(MADV_POPULATE_WRITE) failed
// (kernels before 5.14 answer EINVAL), and always outside Linux: prefault
// touches the pages itself from then on.
var populateUnsupported atomic.Bool

// prefault makes the memory of s (its whole capacity) resident and writable.
// s must be freshly allocated and not yet shared: the fallback writes zero
// bytes into it. It never changes its contents.
func prefault[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < prefaultMin {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))
	if populateWrite(base, n) {
		return
	}
	b := unsafe.Slice((*byte)(base), n)
	// NB: a fresh slice from make is zeroed; writing zero keeps it so.
	for i := 0; i < len(b); i += pageSize {
		b[i] = 0
	}
	b[len(b)-1] = 0
}
