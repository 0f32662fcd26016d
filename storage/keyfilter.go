package storage

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Join key filters (runtime filters).
//
// A hash join whose probe side drops the rows that find no match (inner
// joins, semi joins, the non-preserved side of an outer join) knows, once
// its build is complete, the only values a probe key can take in a row
// that survives. A KeyFilter carries that knowledge from the join to a
// scan below its probe side reading the key's column: the scan drops the
// rows whose value cannot be a build key before it materializes them, so
// that neither the scan's output nor the operators between the scan and
// the join (repartitions, aggregates grouped on the key, other joins) see
// them. DuckDB and DataFusion call these dynamic or runtime join filters.
//
// The filter is an optimization only, and it is never waited for: a scan
// that reads rows before the join published the filter passes them all,
// and the join still tests every row it receives. So a filter may be
// published late, or never (Disable: the build spilled, or held too many
// keys), without changing any answer. What it must never do is drop a row
// whose value is a build key: the key set is a Bloom filter (false
// positives only) within the build's [min, max] range, over values of one
// domain on both sides (int64 for integer, date, time, timestamp and
// 64-bit decimal columns; bytes for strings).
//
// NULL keys never match, so a filter drops rows whose key is NULL.
//
// A filter that passes nearly everything costs a test per row for nothing
// (and cache misses when its bit array is large): each filter counts the
// rows it tested and passed, and turns itself off once it has seen enough
// rows pass (keyFilterOffRatio).

// KeyFilter is the set of build keys of one probe key column of a hash
// join, published once by the join and read concurrently by the scans of
// that column. The zero value is not ready (passes everything); use
// NewKeyFilter.
type KeyFilter struct {
	state atomic.Pointer[keyFilterState]
	// off: the filter passes nearly everything; scans stop testing.
	off    atomic.Bool
	tested atomic.Int64
	passed atomic.Int64
	// Name describes the filter for EXPLAIN ANALYZE ("join 7 key 0").
	Name string
	// words fixes the bit array's size (SetWords; 0: by the keys) and
	// notify is called on publishing (Notify).
	words  int
	notify func(*KeyFilter)
	// ready is closed once the filter is published or disabled (Ready).
	ready     chan struct{}
	readyOnce sync.Once
}

type keyFilterState struct {
	disabled bool // pass everything (the join gave up)
	empty    bool // no build key: nothing passes
	ints     bool // int64 domain (else bytes)
	lo, hi   int64
	words    []uint64
	shift    uint // word index = hash >> shift
	keys     int
}

// NewKeyFilter returns a filter that passes everything until it is
// published.
func NewKeyFilter(name string) *KeyFilter { return &KeyFilter{Name: name, ready: make(chan struct{})} }

// Ready is closed once the filter is published or disabled (nil for a
// filter not made by NewKeyFilter: never).
func (f *KeyFilter) Ready() <-chan struct{} { return f.ready }

// KeyFilterStats is what a filter did, for EXPLAIN ANALYZE.
type KeyFilterStats struct {
	Ready    bool  // published (and not disabled)
	Off      bool  // turned off: it passed nearly every row
	Keys     int   // build keys inserted (repeats counted)
	Bytes    int   // size of the bit array
	Tested   int64 // rows tested
	Passed   int64 // rows passed
	Disabled bool  // the join did not publish a usable filter
}

// Stats reports the filter's counters.
func (f *KeyFilter) Stats() KeyFilterStats {
	st := KeyFilterStats{Off: f.off.Load(), Tested: f.tested.Load(), Passed: f.passed.Load()}
	if s := f.state.Load(); s != nil {
		st.Disabled = s.disabled
		st.Ready = !s.disabled
		st.Keys = s.keys
		st.Bytes = 8 * len(s.words)
	}
	return st
}

// Tally adds another task's counters of the same filter (distributed
// EXPLAIN ANALYZE adds up the tasks' reports).
func (f *KeyFilter) Tally(tested, passed int64, off bool) {
	f.tested.Add(tested)
	f.passed.Add(passed)
	if off {
		f.off.Store(true)
	}
}

// Disable publishes "no filter": scans pass every row.
func (f *KeyFilter) Disable() {
	f.state.Store(&keyFilterState{disabled: true})
	f.notified()
}

// active returns the published state when scans should apply it.
func (f *KeyFilter) active() *keyFilterState {
	if f == nil || f.off.Load() {
		return nil
	}
	s := f.state.Load()
	if s == nil || s.disabled {
		return nil
	}
	return s
}

// keyFilterOffRatio: after keyFilterProbation rows, a filter passing more
// than this share of them turns off.
const (
	keyFilterOffRatio  = 0.85
	keyFilterProbation = 64 << 10
)

// count records a batch's outcome and turns a useless filter off.
func (f *KeyFilter) count(tested, passed int) {
	t := f.tested.Add(int64(tested))
	p := f.passed.Add(int64(passed))
	if t >= keyFilterProbation && float64(p) > keyFilterOffRatio*float64(t) {
		f.off.Store(true)
	}
}

// KeyHashInt is the key filter hash of an integer-domain key value (the
// value widened to int64). It differs from exec's row and table hashes on
// purpose: those pick partitions and slots.
func KeyHashInt(v int64) uint64 {
	x := uint64(v) ^ 0x5bd1e9955bd1e995
	x ^= x >> 31
	x *= 0x7fb5d329728ea185
	x ^= x >> 27
	x *= 0x81dadef4bc2dd44d
	x ^= x >> 33
	return x
}

// KeyHashBytes is the key filter hash of a string or binary key value.
func KeyHashBytes(b []byte) uint64 { return xxh3.Hash(b) }

// keyFilterMask is the three bits a hash sets in its word.
func keyFilterMask(h uint64) uint64 {
	return 1<<(h&63) | 1<<((h>>6)&63) | 1<<((h>>12)&63)
}

// KeyFilterBuilder collects the build keys of one probe key column. Each
// build goroutine fills its own; Merge combines them before Publish.
type KeyFilterBuilder struct {
	Ints   bool
	lo, hi int64
	hashes []uint64
	// Dropped: the builder stopped collecting (too many keys); its filter
	// cannot be published.
	Dropped bool
}

// MaxKeyFilterKeys bounds the build rows a filter collects: beyond it the
// bit array (16 bits a key) would outgrow the caches that make a test
// cheap, and a build that large rarely filters well.
const MaxKeyFilterKeys = 4 << 20

// NewKeyFilterBuilder starts a builder for an integer (ints) or bytes
// domain.
func NewKeyFilterBuilder(ints bool) *KeyFilterBuilder {
	return &KeyFilterBuilder{Ints: ints, lo: math.MaxInt64, hi: math.MinInt64}
}

// Bytes is the memory the builder holds.
func (b *KeyFilterBuilder) Bytes() int64 { return int64(cap(b.hashes)) * 8 }

// Drop stops collecting: the filter will not be published.
func (b *KeyFilterBuilder) Drop() { b.Dropped, b.hashes = true, nil }

// room reports whether n more keys fit; it drops the builder when not.
func (b *KeyFilterBuilder) room(n int) bool {
	if b.Dropped {
		return false
	}
	if len(b.hashes)+n > MaxKeyFilterKeys {
		b.Drop()
		return false
	}
	return true
}

// AddInts adds the values of vals at the rows of sel (nil: all rows).
// The caller leaves rows with a NULL key out of sel.
func AddInts[T int32 | int64](b *KeyFilterBuilder, vals []T, sel []int32) {
	n := len(vals)
	if sel != nil {
		n = len(sel)
	}
	if !b.room(n) {
		return
	}
	lo, hi := b.lo, b.hi
	hs := b.hashes
	if sel == nil {
		for _, x := range vals {
			v := int64(x)
			lo, hi = min(lo, v), max(hi, v)
			hs = append(hs, KeyHashInt(v))
		}
	} else {
		for _, i := range sel {
			v := int64(vals[i])
			lo, hi = min(lo, v), max(hi, v)
			hs = append(hs, KeyHashInt(v))
		}
	}
	b.lo, b.hi, b.hashes = lo, hi, hs
}

// AddBytes adds one bytes-domain value.
func (b *KeyFilterBuilder) AddBytes(v []byte) {
	if !b.room(1) {
		return
	}
	b.hashes = append(b.hashes, KeyHashBytes(v))
}

// Merge adds o's keys to b.
func (b *KeyFilterBuilder) Merge(o *KeyFilterBuilder) {
	if o == nil {
		return
	}
	if o.Dropped || !b.room(len(o.hashes)) {
		b.Drop()
		return
	}
	b.lo, b.hi = min(b.lo, o.lo), max(b.hi, o.hi)
	b.hashes = append(b.hashes, o.hashes...)
}

// Publish builds the filter from the collected keys and makes it visible
// to scans (or disables it when the builder was dropped).
func (f *KeyFilter) Publish(b *KeyFilterBuilder) {
	if b == nil || b.Dropped {
		f.Disable()
		return
	}
	n := len(b.hashes)
	s := &keyFilterState{ints: b.Ints, lo: b.lo, hi: b.hi, keys: n}
	if n == 0 {
		s.empty = true
		f.state.Store(s)
		f.notified()
		return
	}
	// 16 bits a key, a power of two of 64-bit words, at least 8 words
	// (or the size the plan fixed: SetWords).
	words := f.words
	if words == 0 {
		words = 8
		for words*64 < 16*n {
			words *= 2
		}
	}
	s.words = make([]uint64, words)
	s.shift = uint(64 - bits.TrailingZeros(uint(words)))
	for _, h := range b.hashes {
		s.words[h>>s.shift] |= keyFilterMask(h)
	}
	f.state.Store(s)
	f.notified()
}

// mayHoldInt reports whether v may be a build key.
func (s *keyFilterState) mayHoldInt(v int64) bool {
	if v < s.lo || v > s.hi {
		return false
	}
	h := KeyHashInt(v)
	m := keyFilterMask(h)
	return s.words[h>>s.shift]&m == m
}

// mayHoldBytes reports whether v may be a build key.
func (s *keyFilterState) mayHoldBytes(v []byte) bool {
	h := KeyHashBytes(v)
	m := keyFilterMask(h)
	return s.words[h>>s.shift]&m == m
}

// mayOverlap reports whether integer range [lo, hi] may hold a build key
// (row-group pruning by statistics).
func (s *keyFilterState) mayOverlap(lo, hi int64) bool {
	if s.empty {
		return false
	}
	return !s.ints || (hi >= s.lo && lo <= s.hi)
}

// Key filters across processes.
//
// A join and a scan below its probe side may run in different tasks of a
// distributed plan (the probe side repartitioned to the join's workers):
// each of the join's tasks then builds its part of the filter (the build
// keys of its partition), the coordinator merges the parts (the union of
// the partitions' keys) and sends the filter to the scan's tasks, which
// publish it into their KeyFilter when it arrives. Parts are built with one
// bit array size chosen when the query was planned (SetWords), so that
// merging is a bitwise OR; a part built larger is folded down (word i of
// the smaller array is the OR of the words of the larger whose index
// drops to i: the index is the hash's top bits).

// KeyFilterPart is a published filter as data: what a join task sends and
// the coordinator merges and forwards.
type KeyFilterPart struct {
	Disabled bool
	Empty    bool
	Ints     bool
	Lo, Hi   int64
	Keys     int
	Words    []uint64
}

// MaxKeyFilterWords bounds a filter's bit array (4 MiB): the largest a
// part may be on the wire, and what a planner may ask for.
const MaxKeyFilterWords = 1 << 19

// SetWords fixes the size of the bit array Publish builds (a power of two
// of 64-bit words, at most MaxKeyFilterWords; 0: sized by the keys).
func (f *KeyFilter) SetWords(words int) { f.words = words }

// Notify sets fn to be called once the filter is published or disabled
// (a distributed join task sends its part then). It must not block.
func (f *KeyFilter) Notify(fn func(*KeyFilter)) { f.notify = fn }

func (f *KeyFilter) notified() {
	if f.ready != nil {
		f.readyOnce.Do(func() { close(f.ready) })
	}
	if f.notify != nil {
		f.notify(f)
	}
}

// Part returns the published filter as data; ok is false before it is
// published.
func (f *KeyFilter) Part() (p KeyFilterPart, ok bool) {
	s := f.state.Load()
	if s == nil {
		return p, false
	}
	return KeyFilterPart{Disabled: s.disabled, Empty: s.empty, Ints: s.ints, Lo: s.lo, Hi: s.hi, Keys: s.keys, Words: s.words}, true
}

// PublishPart publishes a filter received as data (validated: Check).
func (f *KeyFilter) PublishPart(p KeyFilterPart) {
	if p.Disabled || p.Check() != nil {
		f.Disable()
		return
	}
	s := &keyFilterState{empty: p.Empty, ints: p.Ints, lo: p.Lo, hi: p.Hi, keys: p.Keys}
	if !p.Empty {
		s.words = p.Words
		s.shift = uint(64 - bits.TrailingZeros(uint(len(p.Words))))
	}
	f.state.Store(s)
	f.notified()
}

// Check reports whether p is a filter that can be applied: a non-empty
// enabled filter has a power-of-two bit array of at least 8 words and at
// most MaxKeyFilterWords, and an integer one lo <= hi.
func (p KeyFilterPart) Check() error {
	if p.Disabled || p.Empty {
		return nil
	}
	n := len(p.Words)
	if n < 8 || n > MaxKeyFilterWords || n&(n-1) != 0 {
		return nferr.Dataf("key filter of %d words (want a power of two from 8 to %d)", n, MaxKeyFilterWords)
	}
	if p.Ints && p.Lo > p.Hi {
		return nferr.Dataf("key filter range [%d, %d] is empty", p.Lo, p.Hi)
	}
	return nil
}

// fold returns words folded down to n words (n a power of two no larger).
func fold(words []uint64, n int) []uint64 {
	if len(words) == n {
		return words
	}
	out := make([]uint64, n)
	per := len(words) / n
	for i, w := range words {
		out[i/per] |= w
	}
	return out
}

// MergeKeyFilterParts returns the filter passing every key any part
// passes: disabled when one is, empty when all are; parts of different
// domains disable it.
func MergeKeyFilterParts(parts []KeyFilterPart) KeyFilterPart {
	out := KeyFilterPart{Empty: true, Lo: math.MaxInt64, Hi: math.MinInt64}
	n := 0
	for i, p := range parts {
		if p.Disabled || p.Check() != nil {
			return KeyFilterPart{Disabled: true}
		}
		if i == 0 {
			out.Ints = p.Ints
		} else if p.Ints != out.Ints {
			return KeyFilterPart{Disabled: true}
		}
		if p.Empty {
			continue
		}
		out.Empty = false
		out.Keys += p.Keys
		out.Lo, out.Hi = min(out.Lo, p.Lo), max(out.Hi, p.Hi)
		if n == 0 || len(p.Words) < n {
			n = len(p.Words)
		}
	}
	if out.Empty {
		out.Lo, out.Hi = 0, 0
		return out
	}
	out.Words = make([]uint64, n)
	for _, p := range parts {
		if p.Empty {
			continue
		}
		for i, w := range fold(p.Words, n) {
			out.Words[i] |= w
		}
	}
	return out
}

// keyFilterPartVersion is the first byte of a marshaled part.
const keyFilterPartVersion = 1

// MarshalBinary encodes p: version, flags, lo, hi, keys, then the words
// (little-endian).
func (p KeyFilterPart) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+8*len(p.Words))
	var flags byte
	if p.Disabled {
		flags |= 1
	}
	if p.Empty {
		flags |= 2
	}
	if p.Ints {
		flags |= 4
	}
	b = append(b, keyFilterPartVersion, flags)
	b = binary.AppendVarint(b, p.Lo)
	b = binary.AppendVarint(b, p.Hi)
	b = binary.AppendUvarint(b, uint64(p.Keys))
	for _, w := range p.Words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b, nil
}

// UnmarshalKeyFilterPart decodes MarshalBinary's bytes (from the network:
// anything malformed is KindData, and the part is checked).
func UnmarshalKeyFilterPart(b []byte) (KeyFilterPart, error) {
	var p KeyFilterPart
	if len(b) < 2 || b[0] != keyFilterPartVersion {
		return p, nferr.Dataf("key filter: malformed (%d bytes)", len(b))
	}
	flags := b[1]
	p.Disabled, p.Empty, p.Ints = flags&1 != 0, flags&2 != 0, flags&4 != 0
	r := b[2:]
	var k int
	if p.Lo, k = binary.Varint(r); k <= 0 {
		return p, nferr.Dataf("key filter: malformed range")
	}
	r = r[k:]
	if p.Hi, k = binary.Varint(r); k <= 0 {
		return p, nferr.Dataf("key filter: malformed range")
	}
	r = r[k:]
	keys, k := binary.Uvarint(r)
	if k <= 0 || keys > 1<<40 {
		return p, nferr.Dataf("key filter: malformed key count")
	}
	p.Keys, r = int(keys), r[k:]
	if len(r)%8 != 0 || len(r)/8 > MaxKeyFilterWords {
		return p, nferr.Dataf("key filter: %d bytes of bit array", len(r))
	}
	if len(r) > 0 {
		p.Words = make([]uint64, len(r)/8)
		for i := range p.Words {
			p.Words[i] = binary.LittleEndian.Uint64(r[8*i:])
		}
	}
	if p.Empty || p.Disabled {
		p.Words = nil
	}
	if err := p.Check(); err != nil {
		return KeyFilterPart{}, err
	}
	return p, nil
}

// KeyFilterWords is the bit array size for about n keys (16 bits a key, a
// power of two from 8 words to MaxKeyFilterWords).
func KeyFilterWords(n float64) int {
	words := 8
	for float64(words*64) < 16*n && words < MaxKeyFilterWords {
		words *= 2
	}
	return words
}
