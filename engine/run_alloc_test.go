package engine

import (
	"testing"
)

func TestPoolAllocator(t *testing.T) {
	p := newPoolAllocator()
	for _, n := range []int{0, 1, 100, 4095, 4096, 4097, 1 << 20, 1<<24 + 1} {
		b := p.Allocate(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Allocate(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := range b {
			b[i] = 0xff
		}
		p.Free(b)
		c := p.Allocate(n)
		for i, x := range c {
			if x != 0 {
				t.Fatalf("Allocate(%d) after a Free: byte %d is %#x, want zero", n, i, x)
			}
		}
		// Growth copies and zeroes the rest; shrinking keeps the buffer.
		for i := range c {
			c[i] = 7
		}
		g := p.Reallocate(n+10, c)
		if len(g) != n+10 || (n > 0 && g[n-1] != 7) || g[n+9] != 0 {
			t.Fatalf("Reallocate(%d -> %d) lost or dirtied bytes", n, n+10)
		}
		s := p.Reallocate(n/2, g)
		if len(s) != n/2 {
			t.Fatalf("Reallocate shrink: len %d", len(s))
		}
		p.Free(s)
	}
	if class(1<<12) != 0 || class(1<<12+1) != 1 || class(1<<24) != poolClasses-1 || class(1<<24+1) != -1 || class(100) != -1 {
		t.Errorf("size classes: %d %d %d %d %d", class(1<<12), class(1<<12+1), class(1<<24), class(1<<24+1), class(100))
	}
}

func BenchmarkPoolAllocator(b *testing.B) {
	p := newPoolAllocator()
	b.ReportAllocs()
	b.SetBytes(64 << 10)
	for i := 0; i < b.N; i++ {
		p.Free(p.Allocate(64 << 10))
	}
}
