package exec

// Row hashing and hash partitioning.
//
// Two hash functions exist on purpose:
//
//   - the row hash (HashRows, hashCol*): hashes key columns value by value,
//     independent of how an operator stores keys. It decides partitions:
//     HashPartition, the local HashRepartition exchange and the network
//     shuffle all call it, so a row lands in the same partition whichever
//     of them routes it.
//   - the table hash (hashtable.go): hashes a hash table's packed key.
//
// INVARIANT: the two are independent functions. A hash table built from one
// partition sees keys whose row hashes share their high bits; if the table
// used the same bits its slots would cluster.

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// nullHash is the row hash of a NULL key value: an arbitrary odd constant,
// distinct from the hash of any common value.
const nullHash = 0x7b2c4e9a1f3d5c61

// combineMul is the 64-bit golden-ratio constant (2^64/phi), the usual odd
// multiplier for mixing a hash into an accumulator.
const combineMul = 0x9e3779b97f4a7c15

// mix64 is MurmurHash3's 64-bit finalizer: a bijection with full avalanche,
// the row hash of fixed-width values.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// combineHash folds column hash c into the row hash h so far. The rotation
// makes (a, b) and (b, a) hash differently; the multiply spreads every input
// bit into the high bits, which pick partitions.
func combineHash(h, c uint64) uint64 {
	return (bits.RotateLeft64(h, 23) ^ c) * combineMul
}

// canonFloat returns the bits of f with -0 folded into +0 and every NaN into
// one NaN, so equal SQL values hash (and group) alike.
func canonFloat(f float64) uint64 {
	if f == 0 {
		return 0
	}
	if f != f {
		return 0x7ff8000000000001
	}
	return math.Float64bits(f)
}

// colHasher hashes the live rows of one column into h (one entry per live
// row); first says whether h holds no previous columns yet.
type colHasher func(a arrow.Array, sel []int32, n int, h []uint64, first bool)

func putHash(h []uint64, j int, c uint64, first bool) {
	if first {
		h[j] = c
	} else {
		h[j] = combineHash(h[j], c)
	}
}

// makeColHasher chooses the hash loop for a column type once.
func makeColHasher(c colInfo) colHasher {
	switch c.class {
	case pcBool:
		return hashBoolCol
	case pcBytes:
		return hashBytesCol
	case pcDec128, pcOpaque:
		if c.width == 16 {
			return hash128Col
		}
		return hashIntCol[uint64]
	case pcFloat:
		if c.width == 4 {
			return hashFloatCol[float32]
		}
		return hashFloatCol[float64]
	case pcUint:
		switch c.width {
		case 1:
			return hashIntCol[uint8]
		case 2:
			return hashIntCol[uint16]
		case 4:
			return hashIntCol[uint32]
		}
		return hashIntCol[uint64]
	}
	switch c.width {
	case 1:
		return hashIntCol[int8]
	case 2:
		return hashIntCol[int16]
	case 4:
		return hashIntCol[int32]
	}
	return hashIntCol[int64]
}

// hashIntCol hashes integers as their value widened to 64 bits, so an int32
// and an int64 holding the same number hash alike. U is the bit pattern T
// is stored as (the same width).
func hashIntCol[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](a arrow.Array, sel []int32, n int, h []uint64, first bool) {
	vals := valuesOf[T](a)
	bm, off := validityOf(a)
	switch {
	case bm == nil && sel == nil:
		for j, v := range vals[:n] {
			putHash(h, j, mix64(uint64(v)), first)
		}
	case bm == nil:
		for j, i := range sel {
			putHash(h, j, mix64(uint64(vals[i])), first)
		}
	default:
		for j := 0; j < lenLive(sel, n); j++ {
			i := rowAt(sel, j)
			c := uint64(nullHash)
			if bitIsSet(bm, off+i) {
				c = mix64(uint64(vals[i]))
			}
			putHash(h, j, c, first)
		}
	}
}

func hashFloatCol[T float32 | float64](a arrow.Array, sel []int32, n int, h []uint64, first bool) {
	vals := valuesOf[T](a)
	bm, off := validityOf(a)
	for j := 0; j < lenLive(sel, n); j++ {
		i := rowAt(sel, j)
		c := uint64(nullHash)
		if bm == nil || bitIsSet(bm, off+i) {
			c = mix64(canonFloat(float64(vals[i])))
		}
		putHash(h, j, c, first)
	}
}

func hash128Col(a arrow.Array, sel []int32, n int, h []uint64, first bool) {
	vals := valuesOf[[2]uint64](a)
	bm, off := validityOf(a)
	for j := 0; j < lenLive(sel, n); j++ {
		i := rowAt(sel, j)
		c := uint64(nullHash)
		if bm == nil || bitIsSet(bm, off+i) {
			c = mix64(vals[i][0] ^ mix64(vals[i][1]))
		}
		putHash(h, j, c, first)
	}
}

func hashBoolCol(a arrow.Array, sel []int32, n int, h []uint64, first bool) {
	vals, voff := boolBitsOf(a)
	bm, off := validityOf(a)
	for j := 0; j < lenLive(sel, n); j++ {
		i := rowAt(sel, j)
		c := uint64(nullHash)
		if bm == nil || bitIsSet(bm, off+i) {
			v := uint64(0)
			if bitIsSet(vals, voff+i) {
				v = 1
			}
			c = mix64(v)
		}
		putHash(h, j, c, first)
	}
}

func hashBytesCol(a arrow.Array, sel []int32, n int, h []uint64, first bool) {
	offs, data := bytesOf(a)
	bm, off := validityOf(a)
	for j := 0; j < lenLive(sel, n); j++ {
		i := rowAt(sel, j)
		c := uint64(nullHash)
		if bm == nil || bitIsSet(bm, off+i) {
			c = xxh3.Hash(data[offs[i]:offs[i+1]])
		}
		putHash(h, j, c, first)
	}
}

// lenLive is the number of live rows for selection sel over n rows.
func lenLive(sel []int32, n int) int {
	if sel != nil {
		return len(sel)
	}
	return n
}

// rowAt is the physical row of live row j.
func rowAt(sel []int32, j int) int {
	if sel != nil {
		return int(sel[j])
	}
	return j
}

// HashPartitioner assigns rows to m partitions by the row hash of key
// columns. It is the one partitioning function of nicflow: local
// repartition exchanges and the network shuffle both use it, so equal keys
// meet in the same partition. Not safe for concurrent use (it reuses
// scratch buffers); build one per goroutine.
type HashPartitioner struct {
	keys    []int
	m       int
	hashers []colHasher
	hashes  []uint64
	parts   []int32
	selSplit
}

// NewHashPartitioner validates the key columns against schema and returns a
// partitioner into m >= 1 partitions. With no key columns every row goes to
// partition 0.
func NewHashPartitioner(schema *arrow.Schema, keys []int, m int) (*HashPartitioner, error) {
	if m < 1 {
		return nil, nferr.Internalf("hash partition: %d partitions (want >= 1)", m)
	}
	p := &HashPartitioner{keys: append([]int(nil), keys...), m: m, selSplit: newSelSplit(m)}
	for _, k := range keys {
		ci, err := classifyCol(schema, k, "hash partition", "key")
		if err != nil {
			return nil, err
		}
		p.hashers = append(p.hashers, makeColHasher(ci))
	}
	return p, nil
}

// Partitions is the number of partitions m.
func (p *HashPartitioner) Partitions() int { return p.m }

// Hash returns the row hash of every live row of b. The slice is reused by
// the next call.
func (p *HashPartitioner) Hash(b *Batch) []uint64 {
	n := b.Len()
	p.hashes = resize(p.hashes, n)
	if len(p.hashers) == 0 {
		clear(p.hashes)
	}
	for i, hf := range p.hashers {
		hf(b.Cols[p.keys[i]], b.Sel, b.N, p.hashes, i == 0)
	}
	return p.hashes
}

// Partition returns the partition in [0, m) of every live row of b (one
// entry per live row, in order). The slice is reused by the next call.
func (p *HashPartitioner) Partition(b *Batch) []int32 {
	h := p.Hash(b)
	p.parts = resize(p.parts, len(h))
	m := uint64(p.m)
	for j, x := range h {
		p.parts[j] = partitionOf(x, m)
	}
	return p.parts
}

// partitionOf maps a row hash to [0, m) with Lemire's multiply-shift, which
// uses the high bits of the hash.
func partitionOf(h, m uint64) int32 {
	hi, _ := bits.Mul64(h, m)
	return int32(hi)
}

// Split returns, for each partition, the selection vector (physical row
// positions of b, ascending) of its rows; nil for partitions without rows.
// The slices are reused by the next call.
func (p *HashPartitioner) Split(b *Batch) [][]int32 {
	return p.split(b, p.Partition(b))
}

// selSplit turns the partitions of a batch's live rows into one selection
// vector per partition (scratch reused from call to call).
type selSplit struct {
	counts []int
	sels   [][]int32
	selBuf []int32
}

func newSelSplit(m int) selSplit { return selSplit{counts: make([]int, m), sels: make([][]int32, m)} }

// split returns, for each partition, the physical positions in b of the
// live rows parts puts there (parts: one entry per live row).
func (p *selSplit) split(b *Batch, parts []int32) [][]int32 {
	clear(p.counts)
	for _, q := range parts {
		p.counts[q]++
	}
	p.selBuf = resize(p.selBuf, len(parts))
	pos := 0
	for q := range p.sels {
		if p.counts[q] == 0 {
			p.sels[q] = nil
			continue
		}
		p.sels[q] = p.selBuf[pos : pos : pos+p.counts[q]]
		pos += p.counts[q]
	}
	for j, q := range parts {
		p.sels[q] = append(p.sels[q], int32(rowAt(b.Sel, j)))
	}
	return p.sels
}

// SplitBatches returns one batch per partition: b's columns (borrowed,
// valid as long as b) with a selection of the partition's rows; nil for
// partitions without rows. Compact a batch to ship it densely.
func (p *HashPartitioner) SplitBatches(b *Batch) []*Batch {
	sels := p.Split(b)
	out := make([]*Batch, len(sels))
	for q, sel := range sels {
		if len(sel) > 0 {
			out[q] = &Batch{Cols: b.Cols, N: b.N, Sel: sel}
		}
	}
	return out
}

// HashPartition returns the partition in [0, m) of every live row of b by
// the row hash of its key columns; a convenience over HashPartitioner.
func HashPartition(b *Batch, schema *arrow.Schema, keys []int, m int) ([]int32, error) {
	p, err := NewHashPartitioner(schema, keys, m)
	if err != nil {
		return nil, err
	}
	return append([]int32(nil), p.Partition(b)...), nil
}

// HashRows returns the row hash of every live row of b over the key
// columns.
func HashRows(b *Batch, schema *arrow.Schema, keys []int) ([]uint64, error) {
	p, err := NewHashPartitioner(schema, keys, 1)
	if err != nil {
		return nil, err
	}
	return append([]uint64(nil), p.Hash(b)...), nil
}

// resize returns s with length n, reallocating only when it is too small.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}
