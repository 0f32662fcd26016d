package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	o := Options{}
	for _, c := range []struct {
		live int64
		want int
	}{
		{0, 400}, {1 << 20, 400}, {128 << 20, 400}, {256 << 20, 200},
		{512 << 20, 100}, {2 << 30, 50}, {64 << 30, 50},
	} {
		if got := Percent(o, c.live); got != c.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", c.live>>20, got, c.want)
		}
	}
	if got := Percent(Options{Max: 100, Min: 300}, 1<<40); got != 100 {
		t.Errorf("Min above Max: %d, want 100", got)
	}
}

// The tuner lowers GOGC once the live heap outgrows the headroom, and
// raises it again when the heap shrinks.
func TestTunerFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	Start(Options{Max: 400, Min: 50, Headroom: 8 << 20})
	gogc := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	waitFor := func(ok func(int) bool, what string) {
		t.Helper()
		for i := 0; i < 200; i++ {
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
			if ok(gogc()) {
				return
			}
		}
		t.Fatalf("GOGC is %d: %s", gogc(), what)
	}
	live := make([]byte, 64<<20)
	for i := range live {
		live[i] = byte(i)
	}
	waitFor(func(p int) bool { return p <= 50 }, "want 50 with 64 MiB live and 8 MiB headroom")
	runtime.KeepAlive(live)
	live = nil
	waitFor(func(p int) bool { return p > 50 }, "want it raised once the heap is freed")
}
