package exec

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// approx_count_distinct(x): the number of distinct non-NULL values of x,
// estimated with HyperLogLog (Flajolet et al. 2007) over 2^12 registers:
// a standard error of 1.6%, and exact while a group has seen at most
// hllSparseMax distinct values (it keeps their hashes until then, a few
// bytes per group instead of 4 KiB). Values hash as the row hash does
// (hash.go), mixed again so that a stream partitioned by x still spreads
// over the registers. The partial state is the sketch as bytes (a sparse
// list of hashes or the registers), merged by union (register max), so
// the aggregate runs in two phases and across workers like count.

// AggApproxCountDistinct is approx_count_distinct.
const AggApproxCountDistinct AggFunc = "approx_count_distinct"

const (
	hllP         = 12
	hllM         = 1 << hllP
	hllSparseMax = 128
	hllSparseTag = 0
	hllDenseTag  = 1
)

type hllFn struct {
	hash   colHasher
	hs     []uint64
	sparse [][]uint64 // per group: distinct hashes while few
	dense  [][]uint8  // per group: registers once many (nil before)
	size   int64
}

func newHLLFn(dt arrow.DataType, final bool) (aggFn, aggTypes, bool) {
	t := aggTypes{typInt64, []arrow.DataType{arrow.BinaryTypes.Binary}}
	if final {
		return &hllFn{}, t, dt.ID() == arrow.BINARY
	}
	c, ok := classify(dt)
	if !ok {
		return nil, t, false
	}
	return &hllFn{hash: makeColHasher(c)}, t, true
}

func (f *hllFn) grow(n int) {
	f.sparse = growTo(f.sparse, n)
	f.dense = growTo(f.dense, n)
}

func (f *hllFn) bytes() int64 { return sliceBytes(f.sparse) + sliceBytes(f.dense) + f.size }

// hllMix re-mixes a row hash (hash.go) for the sketch.
func hllMix(h uint64) uint64 { return mix64(h ^ 0x2545f4914f6cdd1d) }

// add records hash h in group g.
func (f *hllFn) add(g uint32, h uint64) {
	if d := f.dense[g]; d != nil {
		hllRegister(d, h)
		return
	}
	s := f.sparse[g]
	if slices.Contains(s, h) {
		return
	}
	if len(s) < hllSparseMax {
		before := cap(s)
		f.sparse[g] = append(s, h)
		f.size += int64(cap(f.sparse[g])-before) * 8
		return
	}
	d := make([]uint8, hllM)
	for _, x := range s {
		hllRegister(d, x)
	}
	hllRegister(d, h)
	f.size += hllM - int64(cap(s))*8
	f.dense[g], f.sparse[g] = d, nil
}

func hllRegister(d []uint8, h uint64) {
	idx := h >> (64 - hllP)
	rho := uint8(bits.LeadingZeros64(h<<hllP|1<<(hllP-1)) + 1)
	if rho > d[idx] {
		d[idx] = rho
	}
}

func (f *hllFn) update(gids []uint32, a arrow.Array, sel []int32, n int) error {
	f.hs = resize(f.hs, len(gids))
	f.hash(a, sel, n, f.hs, true)
	bm, off := validityOf(a)
	for j, g := range gids {
		if bm != nil && !bitIsSet(bm, off+rowAt(sel, j)) {
			continue
		}
		f.add(g, hllMix(f.hs[j]))
	}
	return nil
}

func (f *hllFn) merge(gids []uint32, st []arrow.Array, sel []int32, _ int) error {
	offs, data := bytesOf(st[0])
	for j, g := range gids {
		i := rowAt(sel, j)
		b := data[offs[i]:offs[i+1]]
		if len(b) == 0 {
			continue
		}
		switch {
		case b[0] == hllSparseTag && (len(b)-1)%8 == 0:
			for k := 1; k < len(b); k += 8 {
				f.add(g, binary.LittleEndian.Uint64(b[k:]))
			}
		case b[0] == hllDenseTag && len(b) == 1+hllM:
			if f.dense[g] == nil {
				d := make([]uint8, hllM)
				for _, x := range f.sparse[g] {
					hllRegister(d, x)
				}
				f.size += hllM - int64(cap(f.sparse[g]))*8
				f.dense[g], f.sparse[g] = d, nil
			}
			d := f.dense[g]
			for k, r := range b[1:] {
				d[k] = max(d[k], r)
			}
		default:
			return nferr.Dataf("approx_count_distinct: a partial state of %d bytes is malformed", len(b))
		}
	}
	return nil
}

// estimate is the group's distinct count: exact while sparse, else the
// HyperLogLog estimate with linear counting for small cardinalities.
func (f *hllFn) estimate(g int) int64 {
	d := f.dense[g]
	if d == nil {
		return int64(len(f.sparse[g]))
	}
	sum, zeros := 0.0, 0
	for _, r := range d {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	m := float64(hllM)
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return int64(math.Round(e))
}

func (f *hllFn) result(alloc memory.Allocator, start, end int) (arrow.Array, error) {
	out := make([]int64, end-start)
	for g := start; g < end; g++ {
		out[g-start] = f.estimate(g)
	}
	return arrayFromSlice(alloc, typInt64, out, nil), nil
}

func (f *hllFn) partial(alloc memory.Allocator, start, end int) []arrow.Array {
	vals := make([][]byte, end-start)
	seen := make([]bool, end-start)
	for g := start; g < end; g++ {
		var b []byte
		if d := f.dense[g]; d != nil {
			b = append([]byte{hllDenseTag}, d...)
		} else {
			b = make([]byte, 1, 1+8*len(f.sparse[g]))
			b[0] = hllSparseTag
			for _, h := range f.sparse[g] {
				b = binary.LittleEndian.AppendUint64(b, h)
			}
		}
		vals[g-start], seen[g-start] = b, true
	}
	return []arrow.Array{stringsArray(alloc, arrow.BinaryTypes.Binary, vals, seen)}
}
