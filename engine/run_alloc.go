package engine

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator is an Arrow allocator that reuses freed buffers: a query
// allocates and releases the same few batch-sized buffers thousands of
// times (scan output, expression results, gathers), and with Go's
// allocator each is fresh memory for the collector to account for and
// the kernel to fault in and zero.
//
// Buffers from 4 KiB to 16 MiB come from per-size-class pools (powers of
// two); others from Go directly. A returned buffer is zeroed, like Go's
// (Arrow builders rely on zeroed validity bitmaps), and has exactly the
// requested capacity, so Reallocate never hands out stale bytes beyond the
// length it had.
//
// INVARIANT: Free is called only with buffers this allocator returned,
// after the last use of their bytes (Arrow's reference counting).
type poolAllocator struct {
	pools [poolClasses]sync.Pool
}

const (
	poolMinShift = 12 // 4 KiB: smaller buffers are cheap to allocate
	poolMaxShift = 24 // 16 MiB: larger ones are rare (big string columns)
	poolClasses  = poolMaxShift - poolMinShift + 1
)

func newPoolAllocator() *poolAllocator { return &poolAllocator{} }

// NewPoolAllocator returns an Arrow allocator that reuses freed buffers by
// size class (what embedded sessions use). It is safe for concurrent use;
// a worker shares one among its tasks (FragmentEnv.Alloc).
func NewPoolAllocator() memory.Allocator { return newPoolAllocator() }

// class is the pool index of a size, or -1.
func class(n int) int {
	if n <= 0 || n > 1<<poolMaxShift {
		return -1
	}
	s := bits.Len(uint(n - 1))
	if s < poolMinShift {
		return -1
	}
	return s - poolMinShift
}

func (p *poolAllocator) Allocate(n int) []byte {
	c := class(n)
	if c < 0 {
		return make([]byte, n)
	}
	if v := p.pools[c].Get(); v != nil {
		b := unsafe.Slice((*byte)(v.(unsafe.Pointer)), 1<<(c+poolMinShift))
		clear(b[:n])
		return b[:n:n]
	}
	b := make([]byte, 1<<(c+poolMinShift))
	return b[:n:n]
}

func (p *poolAllocator) Reallocate(n int, b []byte) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := p.Allocate(n)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *poolAllocator) Free(b []byte) {
	// NB: the capacity is the size asked for; its class names the pool of
	// the underlying array, which is the class's full size.
	c := class(cap(b))
	if c < 0 || cap(b) == 0 {
		return
	}
	p.pools[c].Put(unsafe.Pointer(unsafe.SliceData(b)))
}
