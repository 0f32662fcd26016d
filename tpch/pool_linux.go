//go:build linux

package tpch

import "syscall"

// allocPool returns size bytes of anonymous memory outside the Go heap.
//
// NB: the 300 MiB text pool lives for the whole process; keeping it out of
// the heap stops it from doubling the garbage collector's heap target
// (GOGC counts live heap), which cut peak RSS of an SF 1 generation by
// about 300 MB. Falls back to the heap if mmap fails.
func allocPool(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, size)
	}
	// Comments are copied from random offsets of the pool: with 4 KiB
	// pages nearly every copy misses the TLB. Transparent huge pages (when
	// the kernel allows them for madvise'd memory) cut those misses and the
	// page faults of building the pool; the advice is a hint, so its
	// failure is ignored.
	_ = syscall.Madvise(b, madvHugepage)
	return b
}

// madvHugepage is Linux's MADV_HUGEPAGE (the syscall package lacks it).
const madvHugepage = 14
