package storage

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The flat decoder reads the column chunks of flat (non-nested) columns
// whose pages use PLAIN or dictionary encoding, which is every file nicflow
// writes and most files other engines write. It decodes pages straight into
// the scanner's vectors and, when every data page of a chunk is
// dictionary-encoded, keeps the dictionary indices instead of the values:
// filters then test each dictionary entry once (filter.go) and the survivors
// are gathered from the dictionary (arrays.go). Chunks it does not handle
// (other encodings, encryption, deprecated BIT_PACKED levels, files from
// writers with PARQUET-816) go through arrow-go's column readers (colDecoder).
//
// Compared with arrow-go's column readers it avoids, per row group and
// column: a fresh buffer for the whole chunk and a second copy of every
// compressed page (the chunk is read into a reused buffer and pages are
// decompressed from it), and for strings a copy of every value into a
// fresh buffer and a []byte header per value (values are copied once, from
// the page into the vector). Pages whose rows are all skipped are not
// decompressed.

// bitReaderSlack is the number of bytes kept readable past the end of page
// data (decompression buffers and chunk buffers are that much longer), so
// that bit unpacking can load whole 64-bit words near the end of a run.
const bitReaderSlack = 8

// maxRun clamps run lengths from the file: no read needs more values than a
// page holds, and the clamp keeps counts in int range on 32-bit platforms.
const maxRun = 1 << 30

// rleDecoder decodes Parquet's RLE / bit-packing hybrid (definition levels,
// dictionary indices, RLE booleans).
type rleDecoder struct {
	data  []byte // the runs
	full  []byte // data[:cap(data)]: whole-word loads may read past len(data)
	pos   int    // byte offset of the next run header
	width int
	mask  uint64
	rep   int    // values left in the current RLE run
	val   uint32 // and its value
	bp    int    // values left in the current bit-packed run
	bit   int    // bit offset in data of the next bit-packed value
}

func (d *rleDecoder) init(data []byte, width int) error {
	if width < 0 || width > 32 {
		return fmt.Errorf("bit width %d out of range", width)
	}
	*d = rleDecoder{data: data, full: data[:cap(data)], width: width, mask: 1<<uint(width) - 1}
	return nil
}

func (d *rleDecoder) nextRun() error {
	var h uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return fmt.Errorf("run header varint too long")
		}
		if d.pos >= len(d.data) {
			return fmt.Errorf("page holds fewer values than its header says")
		}
		c := d.data[d.pos]
		d.pos++
		h |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	if h&1 == 0 { // RLE run: count, then the value in ceil(width/8) bytes
		nb := (d.width + 7) / 8
		if d.pos+nb > len(d.data) {
			return fmt.Errorf("RLE run truncated")
		}
		var v uint32
		for i := 0; i < nb; i++ {
			v |= uint32(d.data[d.pos+i]) << (8 * i)
		}
		d.pos += nb
		d.rep, d.val = int(min(h>>1, maxRun)), v
		return nil
	}
	// Bit-packed run of groups of 8 values. NB: writers may truncate the
	// last run's bytes to the values it really holds, so the count is
	// clamped to what the bytes can hold.
	groups := min(h>>1, maxRun/8)
	avail := uint64(len(d.data) - d.pos)
	w := uint64(d.width)
	var nbytes, cnt uint64
	switch {
	case w == 0:
		cnt = groups * 8
	case groups*w > avail:
		nbytes, cnt = avail, avail*8/w
	default:
		nbytes, cnt = groups*w, groups*8
	}
	d.bp, d.bit = int(cnt), d.pos*8
	d.pos += int(nbytes)
	return nil
}

// bitsAt returns the w-bit value at bit offset bit of b (bytes past len(b)
// read as zero).
func bitsAt(b []byte, bit int, mask uint64) uint64 {
	i := bit >> 3
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:]) >> (bit & 7) & mask
	}
	var w uint64
	for k := 0; k < 8 && i+k < len(b); k++ {
		w |= uint64(b[i+k]) << (8 * k)
	}
	return w >> (bit & 7) & mask
}

// decode fills out with the next len(out) values. With wantMax it returns
// the largest (callers bound dictionary indices with it); without, it
// returns 0 and takes the faster loop.
func (d *rleDecoder) decode(out []int32, wantMax bool) (uint32, error) {
	var mx uint32
	for len(out) > 0 {
		switch {
		case d.rep > 0:
			m := min(d.rep, len(out))
			v := int32(d.val)
			for i := range out[:m] {
				out[i] = v
			}
			mx = max(mx, d.val)
			d.rep -= m
			out = out[m:]
		case d.bp > 0:
			m := min(d.bp, len(out))
			if wantMax {
				mx = max(mx, d.unpackMax(out[:m]))
			} else {
				d.unpack(out[:m])
			}
			d.bp -= m
			out = out[m:]
		default:
			if err := d.nextRun(); err != nil {
				return 0, err
			}
		}
	}
	return mx, nil
}

// unpack decodes len(out) values of the current bit-packed run.
func (d *rleDecoder) unpack(out []int32) {
	w, mask, bit, full := uint(d.width), d.mask, d.bit, d.full
	end := bit + len(out)*int(w)
	p := bit >> 3
	// NB: the loop refills a 64-bit buffer 32 bits at a time (0.7-0.9
	// ns/value here against 1.1-1.3 for one unaligned load per value); it
	// may load up to 4 bytes past the run, hence the test against full.
	if (end+7)>>3+4 > len(full) || w == 0 {
		for i := range out {
			out[i] = int32(bitsAt(full, bit, mask))
			bit += int(w)
		}
		d.bit = bit
		return
	}
	buf := uint64(binary.LittleEndian.Uint32(full[p:])) >> (bit & 7)
	nb := 32 - uint(bit&7)
	p += 4
	for i := range out {
		if nb < w {
			buf |= uint64(binary.LittleEndian.Uint32(full[p:])) << nb
			p += 4
			nb += 32
		}
		out[i] = int32(buf & mask)
		buf >>= w
		nb -= w
	}
	d.bit = end
}

// unpackMax is unpack that also returns the largest value.
func (d *rleDecoder) unpackMax(out []int32) uint32 {
	d.unpack(out)
	var mx uint32
	for _, x := range out {
		mx = max(mx, uint32(x))
	}
	return mx
}

// levels decodes len(valid) definition levels: valid[i] is level ==
// maxDef. It returns the number of valid (non-null) rows.
func (d *rleDecoder) levels(valid []bool, maxDef uint32) (int, error) {
	nn := 0
	for len(valid) > 0 {
		switch {
		case d.rep > 0:
			m := min(d.rep, len(valid))
			t := d.val == maxDef
			for i := range valid[:m] {
				valid[i] = t
			}
			if t {
				nn += m
			}
			d.rep -= m
			valid = valid[m:]
		case d.bp > 0 && d.width == 1 && maxDef == 1:
			// One bit per level, 1 = present: the run is a validity
			// bitmap; 8 levels per byte through a table.
			m := min(d.bp, len(valid))
			i, bit := 0, d.bit
			for ; i+8 <= m; i += 8 {
				b := uint8(bitsAt(d.full, bit, 0xff))
				*(*[8]bool)(valid[i : i+8]) = byteBools[b]
				nn += bits.OnesCount8(b)
				bit += 8
			}
			for ; i < m; i++ {
				t := bitsAt(d.full, bit, 1) == 1
				valid[i] = t
				nn += b2i(t)
				bit++
			}
			d.bit = bit
			d.bp -= m
			valid = valid[m:]
		case d.bp > 0:
			m := min(d.bp, len(valid))
			bit := d.bit
			for i := range valid[:m] {
				t := uint32(bitsAt(d.full, bit, d.mask)) == maxDef
				valid[i] = t
				nn += b2i(t)
				bit += d.width
			}
			d.bit = bit
			d.bp -= m
			valid = valid[m:]
		default:
			if err := d.nextRun(); err != nil {
				return 0, err
			}
		}
	}
	return nn, nil
}

// byteBools[b] are the 8 bits of b, least significant first.
var byteBools = func() (t [256][8]bool) {
	for b := range t {
		for k := range 8 {
			t[b][k] = b>>k&1 == 1
		}
	}
	return
}()

// skip discards n values.
func (d *rleDecoder) skip(n int) error {
	for n > 0 {
		switch {
		case d.rep > 0:
			m := min(d.rep, n)
			d.rep -= m
			n -= m
		case d.bp > 0:
			m := min(d.bp, n)
			d.bp -= m
			d.bit += m * d.width
			n -= m
		default:
			if err := d.nextRun(); err != nil {
				return err
			}
		}
	}
	return nil
}

// dictIDs numbers loaded dictionaries process-wide, so that a filter's
// per-dictionary results can be cached by id (filter.go).
var dictIDs atomic.Uint64

// flatDecoder reads one column chunk of a flat column into vectors (see
// the top of the file). One lives per scan worker and column and is reset
// for every row group, keeping its buffers.
type flatDecoder struct {
	name     string
	phys     parquet.Type
	kind     physKind
	unsigned bool // INT32 with an unsigned logical type (read as int64)
	typeLen  int  // FIXED_LEN_BYTE_ARRAY width
	maxDef   int16
	// dictOnly: every data page is dictionary-encoded (the chunk's
	// encoding statistics say so), so read produces dictionary vectors.
	dictOnly bool
	pages    pageReader
	chunk    []byte // the chunk's bytes (the scan worker reads them here)
	rows     int64  // rows of the chunk not read or skipped yet
	// chunkRows is the chunk's rows (what bounds a page's values).
	chunkRows int64

	// The chunk's dictionary as a vector of the column's kind: dictN
	// entries, then zero (or empty) entries up to dict.n, a power of two
	// (NULL rows point at entry dictN).
	dict    vector
	dictN   int
	dictID  uint64
	hasDict bool

	hdr     pageHeader // the current data page
	pgRows  int        // its rows not consumed yet
	loaded  bool       // its body is decompressed and decoders are set
	defs    rleDecoder
	hasDefs bool
	enc     int32
	idx     rleDecoder // dictionary indices or RLE booleans
	// idxChecked: the page's bit width can address entries beyond the
	// padded dictionary, so decoded indices are checked.
	idxChecked bool
	plain      []byte // PLAIN values not consumed yet
	bitPos     int    // PLAIN booleans: bit offset into plain
	// delta holds a DELTA_BINARY_PACKED page's values (parquet_delta.go),
	// decoded when the page is loaded; delta[deltaPos:] are not consumed.
	delta    []int64
	deltaPos int

	tmp []int32

	// tsMul, tsDiv convert timestamps to microseconds (timestampScale).
	tsMul, tsDiv int64
}

// flatChunkSupported reports whether the flat decoder reads a column
// chunk: flat column, unencrypted, PLAIN/dictionary values (or
// DELTA_BINARY_PACKED integers), RLE levels,
// a known codec, and a writer without the PARQUET-816 size bug.
func flatChunkSupported(md *metadata.FileMetaData, cc *metadata.ColumnChunkMetaData, descr *schema.Column) bool {
	if cc.CryptoMetadata() != nil || descr.MaxRepetitionLevel() != 0 || descr.MaxDefinitionLevel() > 1 {
		return false
	}
	if md.WriterVersion().LessThan(metadata.Parquet816FixedVersion) {
		return false
	}
	if lt, ok := descr.LogicalType().(schema.IntLogicalType); ok && !lt.IsSigned() && descr.PhysicalType() == parquet.Types.Int64 {
		return false // UINT_64 becomes decimal(20,0): the column decoder converts it
	}
	switch descr.PhysicalType() {
	case parquet.Types.Boolean, parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Float,
		parquet.Types.Double, parquet.Types.ByteArray:
	case parquet.Types.FixedLenByteArray:
		switch descr.LogicalType().(type) {
		case schema.DecimalLogicalType, schema.NoLogicalType:
			// decimals and nicflow's intervals (flatKindOK tells bytea)
		default:
			return false // UUID, FLOAT16, INTERVAL: the column decoder converts them
		}
		if descr.ConvertedType() == schema.ConvertedTypes.Interval {
			return false
		}
	default:
		return false
	}
	for _, e := range cc.Encodings() {
		switch e {
		case parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.RLE:
		case parquet.Encodings.DeltaBinaryPacked:
			if p := descr.PhysicalType(); p != parquet.Types.Int32 && p != parquet.Types.Int64 {
				return false
			}
		default:
			return false
		}
	}
	if _, err := compress.GetCodec(cc.Compression()); err != nil {
		return false
	}
	return true
}

// chunkRange is where a column chunk's pages lie in its file.
func chunkRange(cc *metadata.ColumnChunkMetaData) (start, length int64) {
	start = cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
		start = cc.DictionaryPageOffset()
	}
	return start, cc.TotalCompressedSize()
}

// reset prepares the decoder for a chunk whose bytes (with
// bitReaderSlack bytes of capacity beyond them) are in chunk.
func (d *flatDecoder) reset(name string, descr *schema.Column, cc *metadata.ColumnChunkMetaData, kind physKind, rows int64, chunk []byte) error {
	codec, err := compress.GetCodec(cc.Compression())
	if err != nil {
		return err
	}
	if cc.Compression() == compress.Codecs.Uncompressed {
		codec = nil
	}
	d.name, d.phys, d.kind = name, descr.PhysicalType(), kind
	d.typeLen, d.maxDef = descr.TypeLength(), descr.MaxDefinitionLevel()
	d.unsigned = false
	d.tsMul, d.tsDiv, _ = timestampScale(descr)
	if lt, ok := descr.LogicalType().(schema.IntLogicalType); ok && !lt.IsSigned() {
		d.unsigned = true
	}
	if !flatKindOK(d.phys, kind, d.typeLen) {
		return fmt.Errorf("column %s: Parquet type %s cannot be read as this column's type", name, d.phys)
	}
	d.dictOnly = cc.HasDictionaryPage() && allDictEncoded(cc)
	d.pages.reset(chunk, codec, cc.TotalUncompressedSize())
	d.rows, d.chunkRows = rows, rows
	d.hasDict, d.dictN, d.dictID = false, 0, 0
	d.pgRows, d.loaded, d.hasDefs = 0, false, false
	d.plain, d.bitPos = nil, 0
	return nil
}

func flatKindOK(p parquet.Type, k physKind, typeLen int) bool {
	switch p {
	case parquet.Types.Boolean:
		return k == kBool
	case parquet.Types.Int32:
		return k == kInt32 || k == kInt64
	case parquet.Types.Int64:
		return k == kInt64
	case parquet.Types.Float, parquet.Types.Double:
		return k == kFloat64
	case parquet.Types.ByteArray:
		return k == kString
	case parquet.Types.FixedLenByteArray:
		return (k == kInt64 || k == kDec128) && typeLen > 0 && typeLen <= 16
	}
	return false
}

// width is the PLAIN width of a fixed-size physical type in bytes (0 for
// booleans and byte arrays).
func (d *flatDecoder) width() int {
	switch d.phys {
	case parquet.Types.Int32, parquet.Types.Float:
		return 4
	case parquet.Types.Int64, parquet.Types.Double:
		return 8
	case parquet.Types.FixedLenByteArray:
		return d.typeLen
	}
	return 0
}

// nextPage reads page headers up to the next data page with rows, loading
// the dictionary page on the way. The data page's body is decompressed
// only when rows of it are needed (loadPage).
func (d *flatDecoder) nextPage() error {
	for {
		h, ok, err := d.pages.header()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the column chunk ends %d rows early", d.rows)
		}
		switch h.typ {
		case pageDictionary:
			if d.hasDict {
				return fmt.Errorf("column chunk has a second dictionary page")
			}
			pg, err := d.pages.body(h)
			if err != nil {
				return err
			}
			if err := d.loadDict(pg); err != nil {
				return err
			}
		case pageData, pageDataV2:
			if !h.hasData {
				return fmt.Errorf("data page without a data page header")
			}
			if h.typ == pageDataV2 && h.numRows != h.numValues {
				return fmt.Errorf("data page v2 of a flat column has %d rows but %d values", h.numRows, h.numValues)
			}
			if h.numValues == 0 {
				d.pages.skipBody(h)
				continue
			}
			d.hdr, d.pgRows, d.loaded = h, int(h.numValues), false
			return nil
		default: // index pages and unknown page types hold no rows
			d.pages.skipBody(h)
		}
	}
}

// loadPage decompresses the current data page and sets up its decoders.
func (d *flatDecoder) loadPage() error {
	pg, err := d.pages.body(d.hdr)
	if err != nil {
		return err
	}
	data := pg.data
	d.hasDefs = false
	if d.maxDef > 0 {
		lv := pg.levels
		if d.hdr.typ == pageData {
			if d.hdr.defEnc != encRLE {
				return fmt.Errorf("definition levels in encoding %d are not supported", d.hdr.defEnc)
			}
			n, ok := le32(data, 0)
			if !ok || int64(n) > int64(len(data)-4) {
				return fmt.Errorf("definition levels run past the page")
			}
			lv, data = data[4:4+n], data[4+n:]
		}
		if err := d.defs.init(lv, bits.Len16(uint16(d.maxDef))); err != nil {
			return err
		}
		d.hasDefs = true
	}
	d.enc = d.hdr.encoding
	switch d.enc {
	case encPlain:
		if d.dictOnly {
			return fmt.Errorf("PLAIN page in a column chunk whose metadata says every page is dictionary-encoded")
		}
		d.plain, d.bitPos = data, 0
	case encPlainDict, encRLEDictionary:
		if !d.hasDict {
			return fmt.Errorf("dictionary-encoded page without a dictionary page")
		}
		if len(data) < 1 {
			return fmt.Errorf("dictionary-encoded page without a bit width")
		}
		if err := d.idx.init(data[1:], int(data[0])); err != nil {
			return err
		}
		// Indices of this width stay inside the padded dictionary unless
		// the page is corrupt or from an odd writer: check those.
		d.idxChecked = 1<<uint(data[0]) > d.dict.n
	case encDeltaBinaryPacked:
		if d.phys != parquet.Types.Int32 && d.phys != parquet.Types.Int64 {
			return fmt.Errorf("delta-encoded values of type %s", d.phys)
		}
		var err error
		// NB: bounded by the chunk's rows too: a corrupt header's count
		// must not size the buffer.
		most := int(min(int64(d.hdr.numValues), d.chunkRows))
		if d.delta, err = deltaPage(d.delta, data, most, d.phys == parquet.Types.Int32, d.unsigned); err != nil {
			return err
		}
		d.deltaPos = 0
	case encRLE:
		if d.phys != parquet.Types.Boolean {
			return fmt.Errorf("RLE-encoded values of type %s", d.phys)
		}
		n, ok := le32(data, 0)
		if !ok || int64(n) > int64(len(data)-4) {
			return fmt.Errorf("RLE booleans run past the page")
		}
		if err := d.idx.init(data[4:4+n], 1); err != nil {
			return err
		}
	default:
		return fmt.Errorf("values in encoding %d are not supported", d.enc)
	}
	if d.dictOnly && d.enc != encPlainDict && d.enc != encRLEDictionary {
		return fmt.Errorf("page in encoding %d in a column chunk whose metadata says every page is dictionary-encoded", d.enc)
	}
	d.loaded = true
	return nil
}

// loadDict decodes the dictionary page into d.dict.
func (d *flatDecoder) loadDict(pg page) error {
	if e := pg.hdr.encoding; e != encPlain && e != encPlainDict {
		return fmt.Errorf("dictionary page in encoding %d", e)
	}
	n := int(pg.hdr.numValues)
	// Bound the count by the bytes before allocating for it.
	minBits := 8 * d.width()
	switch d.phys {
	case parquet.Types.Boolean:
		minBits = 1
	case parquet.Types.ByteArray:
		minBits = 32
	}
	if int64(n)*int64(minBits) > 8*int64(len(pg.data)) {
		return fmt.Errorf("dictionary page of %d bytes cannot hold %d entries", len(pg.data), n)
	}
	// NB: the entries are padded with zero (or empty) values up to a power
	// of two above n: entry n is the one NULL rows point at, and every
	// index of the bit width a writer uses for n entries (bits.Len(n-1))
	// stays inside, so the hot loops need no bounds test per index (pages
	// with a wider bit width are checked: loadPage).
	size := 1 << bits.Len(uint(n))
	dv := &d.dict
	dv.kind, dv.n, dv.valid, dv.dict = d.kind, size, nil, nil
	d.sizeDense(dv, size)
	if d.kind == kString {
		dv.offs[0] = 0
	}
	if _, err := d.decodePlain(dv, 0, n, pg.data, 0); err != nil {
		return fmt.Errorf("dictionary page: %v", err)
	}
	switch d.kind {
	case kInt32:
		clear(dv.i32[n:size])
	case kInt64:
		clear(dv.i64[n:size])
	case kFloat64:
		clear(dv.f64[n:size])
	case kBool:
		clear(dv.b[n:size])
	case kString:
		for i := n + 1; i <= size; i++ {
			dv.offs[i] = dv.offs[n]
		}
	case kDec128:
		clear(dv.d128[n:size])
	}
	d.dictN, d.hasDict, d.dictID = n, true, dictIDs.Add(1)
	return nil
}

// sizeDense sizes v's value slice for n rows (strings: n+1 offsets and an
// empty data buffer).
func (d *flatDecoder) sizeDense(v *vector, n int) {
	switch d.kind {
	case kInt32:
		v.i32 = grow(v.i32, n)
	case kInt64:
		v.i64 = grow(v.i64, n)
	case kFloat64:
		v.f64 = grow(v.f64, n)
	case kBool:
		v.b = grow(v.b, n)
	case kString:
		v.offs = grow(v.offs, n+1)
		v.data = v.data[:0]
	case kDec128:
		v.d128 = grow(v.d128, n)
	}
}

// nativeLE: the machine is little-endian like Parquet, so PLAIN numbers
// are copied with one memmove.
var nativeLE = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

func copyLE[T int32 | int64 | float64](dst []T, src []byte) {
	size := int(unsafe.Sizeof(dst[0]))
	if nativeLE {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)*size), src)
		return
	}
	for i := range dst {
		switch p := any(&dst[i]).(type) {
		case *int32:
			*p = int32(binary.LittleEndian.Uint32(src[4*i:]))
		case *int64:
			*p = int64(binary.LittleEndian.Uint64(src[8*i:]))
		case *float64:
			*p = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
		}
	}
}

// decodePlain decodes cnt PLAIN values from src into v's rows
// [at, at+cnt) (strings: appended to v.data, v.offs[at] must be set);
// bitPos is the bit offset of the first boolean. It returns the bytes (or,
// for booleans, bits) consumed.
func (d *flatDecoder) decodePlain(v *vector, at, cnt int, src []byte, bitPos int) (int, error) {
	if w := d.width(); w > 0 {
		nb := cnt * w
		if nb > len(src) || nb < 0 {
			return 0, fmt.Errorf("page holds fewer values than its header says")
		}
		src = src[:nb]
		switch {
		case d.phys == parquet.Types.Int32 && d.kind == kInt32:
			copyLE(v.i32[at:at+cnt], src)
		case d.phys == parquet.Types.Int32: // widened to int64
			dst := v.i64[at : at+cnt]
			if d.unsigned {
				for i := range dst {
					dst[i] = int64(binary.LittleEndian.Uint32(src[4*i:]))
				}
			} else {
				for i := range dst {
					dst[i] = int64(int32(binary.LittleEndian.Uint32(src[4*i:])))
				}
			}
			scaleTimestamps(dst, d.tsMul, d.tsDiv) // TIME(MILLIS)
		case d.phys == parquet.Types.Int64:
			copyLE(v.i64[at:at+cnt], src)
			scaleTimestamps(v.i64[at:at+cnt], d.tsMul, d.tsDiv)
		case d.phys == parquet.Types.Double:
			copyLE(v.f64[at:at+cnt], src)
		case d.phys == parquet.Types.Float:
			dst := v.f64[at : at+cnt]
			for i := range dst {
				dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
			}
		case d.phys == parquet.Types.FixedLenByteArray:
			for i := 0; i < cnt; i++ {
				num := beToDecimal128(src[i*w : (i+1)*w])
				if d.kind == kInt64 {
					if num.HighBits() != int64(num.LowBits())>>63 {
						return 0, fmt.Errorf("decimal value does not fit 64 bits")
					}
					v.i64[at+i] = int64(num.LowBits())
				} else {
					v.d128[at+i] = num
				}
			}
		}
		return nb, nil
	}
	switch d.phys {
	case parquet.Types.Boolean:
		if int64(bitPos)+int64(cnt) > 8*int64(len(src)) {
			return 0, fmt.Errorf("page holds fewer values than its header says")
		}
		dst := v.b[at : at+cnt]
		for i := range dst {
			b := bitPos + i
			dst[i] = src[b>>3]>>(b&7)&1 == 1
		}
		return cnt, nil
	case parquet.Types.ByteArray:
		p := 0
		offs := v.offs
		for i := 0; i < cnt; i++ {
			l, ok := le32(src, p)
			if !ok || int64(l) > int64(len(src)-p-4) {
				return 0, fmt.Errorf("string value runs past the page")
			}
			v.data = append(v.data, src[p+4:p+4+int(l)]...)
			p += 4 + int(l)
			if len(v.data) > math.MaxInt32 {
				return 0, fmt.Errorf("strings of one batch exceed 2 GiB")
			}
			offs[at+i+1] = int32(len(v.data))
		}
		return p, nil
	}
	return 0, fmt.Errorf("unsupported physical type %s", d.phys)
}

// read decodes the next n rows into v: dictionary form (v.dict, v.idx)
// when the chunk is dictionary-only, values otherwise.
func (d *flatDecoder) read(v *vector, n int) error {
	if int64(n) > d.rows {
		return fmt.Errorf("column %s: expected %d values, the column chunk holds %d", d.name, n, d.rows)
	}
	v.kind, v.n = d.kind, n
	if d.dictOnly {
		v.idx = grow(v.idx, n)
		v.dict = nil // set once the dictionary is loaded
	} else {
		v.dict = nil
		d.sizeDense(v, n)
		if d.kind == kString {
			v.offs[0] = 0
		}
	}
	var valid []bool
	if d.maxDef > 0 {
		v.validBuf = grow(v.validBuf, n)
		valid = v.validBuf
	}
	nulls := 0
	for off := 0; off < n; {
		if d.pgRows == 0 {
			if err := d.nextPage(); err != nil {
				return fmt.Errorf("column %s: %v", d.name, err)
			}
		}
		if !d.loaded {
			if err := d.loadPage(); err != nil {
				return fmt.Errorf("column %s: %v", d.name, err)
			}
		}
		m := min(n-off, d.pgRows)
		nv := m
		var pv []bool
		if d.hasDefs {
			pv = valid[off : off+m]
			nn, err := d.defs.levels(pv, uint32(d.maxDef))
			if err != nil {
				return fmt.Errorf("column %s: definition levels: %v", d.name, err)
			}
			nv = nn
			nulls += m - nn
		} else if valid != nil {
			for i := range valid[off : off+m] {
				valid[off+i] = true
			}
		}
		if err := d.values(v, off, m, nv, pv); err != nil {
			return fmt.Errorf("column %s: %v", d.name, err)
		}
		d.pgRows -= m
		off += m
	}
	d.rows -= int64(n)
	v.valid = nil
	if nulls > 0 {
		v.valid = valid
	}
	if d.dictOnly {
		v.dict, v.dictN, v.dictID = &d.dict, d.dictN, d.dictID
		if !d.hasDict {
			// NB: only possible for n == 0.
			v.dict, v.dictN = &d.dict, 0
		}
	}
	return nil
}

// values decodes the nv non-null values of rows [off, off+m) of the
// current page into v; pv tells which rows are valid (nil: all).
func (d *flatDecoder) values(v *vector, off, m, nv int, pv []bool) error {
	switch d.enc {
	case encPlainDict, encRLEDictionary:
		if d.dictOnly {
			out := v.idx[off : off+nv]
			if err := d.decodeIdx(out); err != nil {
				return err
			}
			if nv < m {
				spreadFill(v.idx[off:off+m], pv, nv, int32(d.dictN))
			}
			return nil
		}
		d.tmp = grow(d.tmp, nv)
		ix := d.tmp[:nv]
		if err := d.decodeIdx(ix); err != nil {
			return err
		}
		d.gatherDict(v, off, ix)
	case encDeltaBinaryPacked:
		if nv > len(d.delta)-d.deltaPos {
			return fmt.Errorf("page holds fewer values than its header says")
		}
		src := d.delta[d.deltaPos : d.deltaPos+nv]
		d.deltaPos += nv
		if d.kind == kInt32 {
			dst := v.i32[off : off+nv]
			for i, x := range src {
				dst[i] = int32(x)
			}
		} else {
			dst := v.i64[off : off+nv]
			copy(dst, src)
			scaleTimestamps(dst, d.tsMul, d.tsDiv)
		}
	case encRLE: // booleans
		d.tmp = grow(d.tmp, nv)
		ix := d.tmp[:nv]
		if _, err := d.idx.decode(ix, false); err != nil {
			return err
		}
		dst := v.b[off : off+nv]
		for i, x := range ix {
			dst[i] = x != 0
		}
	default:
		used, err := d.decodePlain(v, off, nv, d.plain, d.bitPos)
		if err != nil {
			return err
		}
		if d.phys == parquet.Types.Boolean {
			d.bitPos += used
		} else {
			d.plain = d.plain[used:]
		}
	}
	if nv < m {
		d.spread(v, off, m, nv, pv)
	}
	return nil
}

// decodeIdx decodes dictionary indices.
//
// INVARIANT: every index is below d.dict.n (the padded dictionary's
// size), by the bit width or by the check here. An index at or above dictN
// but below the padding is not detected: it reads as a zero value, like
// any other corrupt value a checksum-less Parquet page can hold
// (DB.Verify checks whole-file checksums).
func (d *flatDecoder) decodeIdx(ix []int32) error {
	mx, err := d.idx.decode(ix, d.idxChecked)
	if err != nil {
		return err
	}
	if d.idxChecked && len(ix) > 0 && int64(mx) >= int64(d.dictN) {
		return fmt.Errorf("dictionary index %d out of range (the dictionary has %d entries)", mx, d.dictN)
	}
	return nil
}

// gatherDict writes the dictionary entries ix at v's rows [off, off+len(ix)).
func (d *flatDecoder) gatherDict(v *vector, off int, ix []int32) {
	dv := &d.dict
	switch d.kind {
	case kInt32:
		gatherDict(v.i32[off:off+len(ix)], dv.i32, ix, nil)
	case kInt64:
		gatherDict(v.i64[off:off+len(ix)], dv.i64, ix, nil)
	case kFloat64:
		gatherDict(v.f64[off:off+len(ix)], dv.f64, ix, nil)
	case kBool:
		gatherDict(v.b[off:off+len(ix)], dv.b, ix, nil)
	case kDec128:
		gatherDict(v.d128[off:off+len(ix)], dv.d128, ix, nil)
	case kString:
		for i, x := range ix {
			v.data = append(v.data, dv.data[dv.offs[x]:dv.offs[x+1]]...)
			v.offs[off+i+1] = int32(len(v.data))
		}
	}
}

// spread moves the nv dense values at v's rows [off, off+nv) to the valid
// rows of [off, off+m) (back to front, in place); NULL rows get zero (or
// an empty string).
func (d *flatDecoder) spread(v *vector, off, m, nv int, pv []bool) {
	switch d.kind {
	case kInt32:
		spreadFill(v.i32[off:off+m], pv, nv, 0)
	case kInt64:
		spreadFill(v.i64[off:off+m], pv, nv, 0)
	case kFloat64:
		spreadFill(v.f64[off:off+m], pv, nv, 0)
	case kBool:
		spreadFill(v.b[off:off+m], pv, nv, false)
	case kDec128:
		spreadFill(v.d128[off:off+m], pv, nv, decimal128.Num{})
	case kString:
		// Offsets: end offsets of the dense values sit at offs[off+1 :
		// off+nv+1]; row r's end offset is that of the last valid row
		// at or before r.
		ends := v.offs[off+1 : off+m+1]
		j := nv - 1
		for r := m - 1; r >= 0; r-- {
			if pv[r] {
				ends[r] = ends[j]
				j--
			} else if j >= 0 {
				ends[r] = ends[j]
			} else {
				ends[r] = v.offs[off]
			}
		}
	}
}

// spreadFill moves nv dense values to the valid positions of vals (back to
// front, in place) and writes fill at the others.
func spreadFill[T any](vals []T, valid []bool, nv int, fill T) {
	// NB: from the back, a run of valid rows at a time is one copy; once
	// every NULL is placed the rows before are where they were.
	i, j := len(vals), nv
	for i > j {
		p := i - 1
		for valid[p] {
			p--
		}
		run := i - p - 1
		copy(vals[p+1:i], vals[j-run:j])
		j -= run
		vals[p] = fill
		i = p
	}
}

// skip discards the next n rows; pages skipped whole are not decompressed.
func (d *flatDecoder) skip(n int) error {
	if int64(n) > d.rows {
		return fmt.Errorf("column %s: cannot skip %d rows, the column chunk holds %d", d.name, n, d.rows)
	}
	d.rows -= int64(n)
	for n > 0 {
		if d.pgRows == 0 {
			if err := d.nextPage(); err != nil {
				return fmt.Errorf("column %s: %v", d.name, err)
			}
		}
		m := min(n, d.pgRows)
		if !d.loaded && m == d.pgRows {
			d.pages.skipBody(d.hdr)
			d.pgRows, n = 0, n-m
			continue
		}
		if !d.loaded {
			if err := d.loadPage(); err != nil {
				return fmt.Errorf("column %s: %v", d.name, err)
			}
		}
		nv := m
		if d.hasDefs {
			var scratch [256]bool
			nv = 0
			for left := m; left > 0; {
				k := min(left, len(scratch))
				nn, err := d.defs.levels(scratch[:k], uint32(d.maxDef))
				if err != nil {
					return fmt.Errorf("column %s: definition levels: %v", d.name, err)
				}
				nv += nn
				left -= k
			}
		}
		if err := d.skipValues(nv); err != nil {
			return fmt.Errorf("column %s: %v", d.name, err)
		}
		d.pgRows -= m
		n -= m
	}
	return nil
}

func (d *flatDecoder) skipValues(nv int) error {
	switch d.enc {
	case encPlainDict, encRLEDictionary, encRLE:
		return d.idx.skip(nv)
	case encDeltaBinaryPacked:
		if nv > len(d.delta)-d.deltaPos {
			return fmt.Errorf("page holds fewer values than its header says")
		}
		d.deltaPos += nv
		return nil
	}
	if w := d.width(); w > 0 {
		if nv*w > len(d.plain) {
			return fmt.Errorf("page holds fewer values than its header says")
		}
		d.plain = d.plain[nv*w:]
		return nil
	}
	switch d.phys {
	case parquet.Types.Boolean:
		if int64(d.bitPos)+int64(nv) > 8*int64(len(d.plain)) {
			return fmt.Errorf("page holds fewer values than its header says")
		}
		d.bitPos += nv
	case parquet.Types.ByteArray:
		p := 0
		for i := 0; i < nv; i++ {
			l, ok := le32(d.plain, p)
			if !ok || int64(l) > int64(len(d.plain)-p-4) {
				return fmt.Errorf("string value runs past the page")
			}
			p += 4 + int(l)
		}
		d.plain = d.plain[p:]
	}
	return nil
}
