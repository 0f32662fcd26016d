package expr

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// TestDivRound64 checks the 128-bit path of decimal division against
// exact big-integer arithmetic: random operands of every size, ties
// (rounded away from zero), signs, and the int64 extremes.
func TestDivRound64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []int64{0, 1, -1, 2, -2, 3, 5, -5, 7, 10, 99, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 1 << 40, -(1 << 40)}
	for i := 0; i < 20000; i++ {
		v := r.Int64() >> r.IntN(64)
		if r.IntN(2) == 0 {
			v = -v
		}
		vals = append(vals, v)
	}
	for i, x := range vals {
		y := vals[(i*7919+13)%len(vals)]
		if y == 0 {
			y = 3
		}
		for _, shift := range []int32{0, 1, 2, 9, 14, 16, 18, 19} {
			got, ok := divRound64(x, y, shift)
			want, wok := divRoundBig(decimal128.FromI64(x), decimal128.FromI64(y), shift)
			// divRound64 fails only past 127 bits; divRoundBig also
			// past 38 digits (divRound checks that for both).
			if ok && (!wok && in38(got) || wok && got != want) {
				t.Fatalf("%d * 10^%d / %d: got %v (%v), want %v (%v)", x, shift, y, got.BigInt(), ok, want.BigInt(), wok)
			}
			if !ok && wok {
				t.Fatalf("%d * 10^%d / %d: no result, want %v", x, shift, y, want.BigInt())
			}
		}
	}
	// Ties: 5 / 2 = 2.5 -> 3, -5 / 2 -> -3.
	if q, _ := divRound64(5, 2, 0); q != decimal128.FromI64(3) {
		t.Fatalf("5/2 = %v", q.BigInt())
	}
	if q, _ := divRound64(-5, 2, 0); q != decimal128.FromI64(-3) {
		t.Fatalf("-5/2 = %v", q.BigInt())
	}
}
