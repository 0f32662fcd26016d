// Package gctune sets the Go collector's pace for processes that run
// queries: a high GOGC while the live heap is small, lower as it grows.
//
// A query allocates Arrow buffers at a high rate and keeps little, so a
// small heap is best collected rarely (GOGC 400: a fifth less CPU than the
// default 100 over the TPC-H queries at SF 1, docs/decisions.md D19). But
// GOGC is a ratio: a query holding a 1 GiB hash table may then grow its
// heap to 5 GiB before the next collection, every byte of it on fresh
// pages the kernel must fault in (TPC-H Q18 at SF 10 in a fresh process:
// 2.4 s of system time, peak RSS 2.3 GiB against 0.9 s and 1.9 GiB at
// GOGC 100). Start bounds the heap's growth between collections in bytes
// instead: after every collection GOGC becomes headroom / live heap, kept
// within [Min, Max] percent.
//
// INVARIANT: only the pace changes; the soft memory limit (SetMemoryLimit)
// still applies on top, and an explicit GOGC in the environment disables
// the tuner (Start is not called).
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Options bound the tuner.
type Options struct {
	// Max and Min bound GOGC, in percent (defaults 400 and 50).
	Max, Min int
	// Headroom is how many bytes the heap may grow beyond the live heap
	// between two collections (default 512 MiB), when Max and Min allow.
	Headroom int64
}

func (o *Options) defaults() {
	if o.Max <= 0 {
		o.Max = 400
	}
	if o.Min <= 0 {
		o.Min = 50
	}
	if o.Min > o.Max {
		o.Min = o.Max
	}
	if o.Headroom <= 0 {
		o.Headroom = 512 << 20
	}
}

var started sync.Once

// Start sets GOGC to o.Max and then adjusts it after every collection, for
// the life of the process. Later calls do nothing.
func Start(o Options) {
	started.Do(func() {
		o.defaults()
		t := &tuner{o: o, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, percent: o.Max}
		debug.SetGCPercent(o.Max)
		t.arm()
	})
}

type tuner struct {
	o       Options
	sample  []metrics.Sample
	percent int
}

// sentinel is a heap object whose finalizer runs after the collection
// that found it unreachable; each run arms a new one. NB: large enough to
// escape the tiny allocator, whose blocks outlive their objects.
type sentinel struct{ _ [64]byte }

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		t.adjust()
		t.arm()
	})
}

// adjust sets GOGC for the live heap the last collection left.
func (t *tuner) adjust() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := Percent(t.o, int64(t.sample[0].Value.Uint64()))
	if p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

// Percent is the GOGC the tuner sets for a live heap of live bytes.
func Percent(o Options, live int64) int {
	o.defaults()
	if live <= 0 {
		return o.Max
	}
	p := o.Headroom * 100 / live
	return int(max(int64(o.Min), min(int64(o.Max), p)))
}
