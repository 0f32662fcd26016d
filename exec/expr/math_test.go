package expr

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestGcdLcm checks gcd and lcm against math/big for random operands of
// every size, signs, zeros and the int64 extremes, overflow included.
func TestGcdLcm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := []int64{0, 1, -1, 2, 6, -9, 12, 18, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 1 << 62, -(1 << 32)}
	for i := 0; i < 5000; i++ {
		v := r.Int64() >> r.IntN(64)
		if r.IntN(2) == 0 {
			v = -v
		}
		vals = append(vals, v)
	}
	maxI := big.NewInt(math.MaxInt64)
	for i, a := range vals {
		b := vals[(i*7919+5)%len(vals)]
		ba, bb := new(big.Int).Abs(big.NewInt(a)), new(big.Int).Abs(big.NewInt(b))
		g := new(big.Int).GCD(nil, nil, ba, bb)
		l := new(big.Int)
		if g.Sign() != 0 {
			l.Mul(new(big.Int).Quo(ba, g), bb)
		}
		for _, c := range []struct {
			lcm  bool
			want *big.Int
		}{{false, g}, {true, l}} {
			got, ovf := gcdLcm(a, b, c.lcm)
			if wantOvf := c.want.Cmp(maxI) > 0; ovf != wantOvf || !ovf && got != c.want.Int64() {
				t.Fatalf("gcdLcm(%d, %d, lcm %v) = %d (overflow %v), want %v", a, b, c.lcm, got, ovf, c.want)
			}
		}
	}
}
