package storage

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Page-level access to Parquet column chunks for the flat decoder
// (parquet_flat.go): page headers are decoded here from the chunk's bytes,
// and pages are decompressed into a buffer the decoder reuses.
//
// NB: arrow-go's page reader allocates a buffer for the whole column chunk
// per row group (ReaderProperties.GetStream), copies each compressed page
// once more before decompressing it, and its page header type is internal.
// A Parquet page header is a small Thrift struct in the compact protocol,
// so it is decoded by hand over a byte slice: every read is bounds-checked
// against the slice, which makes hostile bytes an error, not a panic or an
// allocation of attacker-chosen size.

// Parquet's page types and encodings (parquet.thrift). The numbers are the
// format's, so they are spelled out rather than taken from arrow-go's
// internal Thrift package.
const (
	pageData       = 0
	pageIndex      = 1
	pageDictionary = 2
	pageDataV2     = 3

	encPlain         = 0
	encPlainDict     = 2
	encRLE           = 3
	encBitPacked     = 4
	encRLEDictionary = 8
)

// maxPageBytes bounds a page's declared sizes (arrow-go's reader uses the
// same 256 MiB default): a corrupt header cannot make us allocate more.
const maxPageBytes = 256 << 20

// pageHeader is the part of parquet.thrift's PageHeader the decoder uses.
type pageHeader struct {
	typ          int32
	uncompressed int32
	compressed   int32
	// DataPageHeader / DictionaryPageHeader / DataPageHeaderV2
	numValues int32
	encoding  int32
	defEnc    int32 // v1: definition level encoding
	// v2
	numNulls     int32
	numRows      int32
	defLen       int32
	repLen       int32
	isCompressed bool
	hasData      bool // a data, dictionary or v2 sub-header was present
}

// Thrift compact protocol type ids.
const (
	ctStop   = 0
	ctTrue   = 1
	ctFalse  = 2
	ctByte   = 3
	ctI16    = 4
	ctI32    = 5
	ctI64    = 6
	ctDouble = 7
	ctBinary = 8
	ctList   = 9
	ctSet    = 10
	ctMap    = 11
	ctStruct = 12
)

// maxThriftDepth bounds nesting while skipping unknown fields.
const maxThriftDepth = 16

// thriftReader reads the Thrift compact protocol from a byte slice.
type thriftReader struct {
	b   []byte
	pos int
	err error
}

func (r *thriftReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *thriftReader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail("page header truncated")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *thriftReader) uvarint() uint64 {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	r.fail("page header: varint too long")
	return 0
}

func (r *thriftReader) zigzag() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *thriftReader) i32() int32 {
	v := r.zigzag()
	if v < -1<<31 || v > 1<<31-1 {
		r.fail("page header: i32 out of range")
		return 0
	}
	return int32(v)
}

// fieldHeader reads a field header; ok is false at the struct's end.
func (r *thriftReader) fieldHeader(last *int16) (id int16, typ byte, ok bool) {
	c := r.byte()
	if r.err != nil || c == ctStop {
		return 0, 0, false
	}
	typ = c & 0x0f
	if d := c >> 4; d != 0 {
		id = *last + int16(d)
	} else {
		v := r.zigzag()
		if v < -1<<15 || v > 1<<15-1 {
			r.fail("page header: field id out of range")
			return 0, 0, false
		}
		id = int16(v)
	}
	*last = id
	return id, typ, true
}

// skip discards a value of type typ.
func (r *thriftReader) skip(typ byte, depth int) {
	if depth > maxThriftDepth {
		r.fail("page header nests deeper than %d levels", maxThriftDepth)
		return
	}
	switch typ {
	case ctTrue, ctFalse:
		// the value is in the type nibble (fields) or one byte (lists,
		// handled by the caller's element loop)
	case ctByte:
		r.byte()
	case ctI16, ctI32, ctI64:
		r.uvarint()
	case ctDouble:
		r.bytes(8)
	case ctBinary:
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.fail("page header: binary of %d bytes exceeds the header", n)
			return
		}
		r.bytes(int(n))
	case ctList, ctSet:
		h := r.byte()
		n := uint64(h >> 4)
		if n == 15 {
			n = r.uvarint()
		}
		et := h & 0x0f
		if n > uint64(len(r.b)) { // every element takes at least one byte
			r.fail("page header: list of %d elements exceeds the header", n)
			return
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			if et == ctTrue || et == ctFalse {
				r.byte()
			} else {
				r.skip(et, depth+1)
			}
		}
	case ctMap:
		n := r.uvarint()
		if n == 0 {
			return
		}
		if n > uint64(len(r.b)) {
			r.fail("page header: map of %d entries exceeds the header", n)
			return
		}
		kv := r.byte()
		kt, vt := kv>>4, kv&0x0f
		for i := uint64(0); i < n && r.err == nil; i++ {
			for _, t := range []byte{kt, vt} {
				if t == ctTrue || t == ctFalse {
					r.byte()
				} else {
					r.skip(t, depth+1)
				}
			}
		}
	case ctStruct:
		var last int16
		for r.err == nil {
			_, t, ok := r.fieldHeader(&last)
			if !ok {
				return
			}
			r.skip(t, depth+1)
		}
	default:
		r.fail("page header: unknown Thrift type %d", typ)
	}
}

func (r *thriftReader) bytes(n int) []byte {
	if n < 0 || r.pos+n > len(r.b) {
		r.fail("page header truncated")
		r.pos = len(r.b)
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

// readI32Field reads an i32 field value, checking its type.
func (r *thriftReader) readI32Field(typ byte, dst *int32) {
	if typ != ctI32 {
		r.skip(typ, 1)
		r.fail("page header: field of type %d where an i32 was expected", typ)
		return
	}
	*dst = r.i32()
}

// parsePageHeader decodes a PageHeader at the start of b and returns it
// with its encoded length.
func parsePageHeader(b []byte) (h pageHeader, n int, err error) {
	r := &thriftReader{b: b}
	h.isCompressed = true // the format's default for v2 pages
	var last int16
	seen := 0
	for r.err == nil {
		id, typ, ok := r.fieldHeader(&last)
		if !ok {
			break
		}
		switch id {
		case 1:
			r.readI32Field(typ, &h.typ)
			seen |= 1
		case 2:
			r.readI32Field(typ, &h.uncompressed)
			seen |= 2
		case 3:
			r.readI32Field(typ, &h.compressed)
			seen |= 4
		case 5, 7, 8: // DataPageHeader, DictionaryPageHeader, DataPageHeaderV2
			if typ != ctStruct {
				r.fail("page header: sub-header of type %d", typ)
				break
			}
			h.hasData = true
			r.subHeader(id, &h)
		default:
			r.skip(typ, 1)
		}
	}
	if r.err != nil {
		return h, 0, r.err
	}
	if seen != 7 {
		return h, 0, fmt.Errorf("page header lacks a required field")
	}
	if h.uncompressed < 0 || h.compressed < 0 || h.uncompressed > maxPageBytes || h.compressed > maxPageBytes {
		return h, 0, fmt.Errorf("page header: page sizes %d/%d out of range", h.compressed, h.uncompressed)
	}
	if h.numValues < 0 || h.numNulls < 0 || h.numRows < 0 || h.defLen < 0 || h.repLen < 0 {
		return h, 0, fmt.Errorf("page header: negative counts")
	}
	return h, r.pos, nil
}

// subHeader reads DataPageHeader (5), DictionaryPageHeader (7) or
// DataPageHeaderV2 (8).
func (r *thriftReader) subHeader(which int16, h *pageHeader) {
	var last int16
	for r.err == nil {
		id, typ, ok := r.fieldHeader(&last)
		if !ok {
			return
		}
		switch {
		case id == 1: // num_values in all three
			r.readI32Field(typ, &h.numValues)
		case which == 5 && id == 2, which == 7 && id == 2, which == 8 && id == 4:
			r.readI32Field(typ, &h.encoding)
		case which == 5 && id == 3:
			r.readI32Field(typ, &h.defEnc)
		case which == 8 && id == 2:
			r.readI32Field(typ, &h.numNulls)
		case which == 8 && id == 3:
			r.readI32Field(typ, &h.numRows)
		case which == 8 && id == 5:
			r.readI32Field(typ, &h.defLen)
		case which == 8 && id == 6:
			r.readI32Field(typ, &h.repLen)
		case which == 8 && id == 7 && (typ == ctTrue || typ == ctFalse):
			h.isCompressed = typ == ctTrue
		default:
			r.skip(typ, 1)
		}
	}
}

// page is one page of a column chunk, decompressed.
type page struct {
	hdr pageHeader
	// levels holds the definition levels of a v2 page (never compressed);
	// data the rest of the page: levels and values for v1, values for v2,
	// the entries of a dictionary page.
	levels []byte
	data   []byte
}

// pageReader walks the pages of one column chunk held in memory.
type pageReader struct {
	chunk []byte
	pos   int
	codec compress.Codec // nil: uncompressed
	buf   []byte         // decompression buffer, reused
	// maxPage bounds a page's uncompressed size: the chunk's uncompressed
	// size from the footer (so a corrupt page header cannot make the
	// reader allocate more than the file claims to hold), at most
	// maxPageBytes.
	maxPage int64
	// batch is codec when it decompresses several pages in one submission
	// (a device's queue, shuffle.OffloadParquetDecompression); ahead holds
	// the pages it decompressed ahead of the reader, abuf their bytes.
	batch batchDecoder
	ahead []aheadPage
	abuf  []byte
}

// batchDecoder is a codec that decompresses several blocks at once:
// srcs[i] into dsts[i] (room for the block's output), results in outs[i]
// and errs[i]. A device codec submits them all before waiting, so that one
// decoder keeps several of the device's engines busy.
type batchDecoder interface {
	DecodeBatch(dsts, srcs, outs [][]byte, errs []error)
}

// pageWindow is how many pages a batch decoder is given at once. Pages the
// reader then skips (page-index pruning) were decompressed for nothing, so
// the window stays small.
const pageWindow = 8

// aheadPage is a page decompressed ahead: the offset of its compressed
// bytes in the chunk, its buffer, and what the codec returned.
type aheadPage struct {
	at       int
	dst, out []byte
	err      error
}

func (p *pageReader) reset(chunk []byte, codec compress.Codec, uncompressed int64) {
	p.chunk, p.pos, p.codec = chunk, 0, codec
	p.maxPage = maxPageBytes
	if uncompressed > 0 && uncompressed < p.maxPage {
		p.maxPage = uncompressed
	}
	p.batch, _ = codec.(batchDecoder)
	p.ahead = p.ahead[:0]
}

// header reads the next page header without its body; ok is false at the
// end of the chunk.
func (p *pageReader) header() (h pageHeader, ok bool, err error) {
	if p.pos >= len(p.chunk) {
		return h, false, nil
	}
	h, n, err := parsePageHeader(p.chunk[p.pos:])
	if err != nil {
		return h, false, err
	}
	if int64(p.pos)+int64(n)+int64(h.compressed) > int64(len(p.chunk)) {
		return h, false, fmt.Errorf("page of %d bytes runs past the end of the column chunk", h.compressed)
	}
	if int64(h.uncompressed) > p.maxPage {
		return h, false, fmt.Errorf("page of %d bytes uncompressed exceeds its column chunk's %d", h.uncompressed, p.maxPage)
	}
	p.pos += n
	return h, true, nil
}

// skipBody skips the body of the page whose header was just read.
func (p *pageReader) skipBody(h pageHeader) { p.pos += int(h.compressed) }

// body returns the page whose header was just read, decompressed. The
// page's slices are valid until the next call.
func (p *pageReader) body(h pageHeader) (page, error) {
	raw := p.chunk[p.pos : p.pos+int(h.compressed)]
	p.pos += int(h.compressed)
	pg := page{hdr: h}
	if h.typ == pageDataV2 {
		ll := int(h.defLen) + int(h.repLen)
		if ll > len(raw) || ll > int(h.uncompressed) {
			return pg, fmt.Errorf("data page v2: levels of %d bytes exceed the page", ll)
		}
		pg.levels = raw[h.repLen:ll]
		raw = raw[ll:]
		if p.codec == nil || !h.isCompressed {
			if len(raw) != int(h.uncompressed)-ll {
				return pg, fmt.Errorf("data page v2: %d value bytes, the header says %d", len(raw), int(h.uncompressed)-ll)
			}
			pg.data = raw
			return pg, nil
		}
		out, err := p.decompressAt(raw, int(h.uncompressed)-ll)
		pg.data = out
		return pg, err
	}
	if p.codec == nil {
		if len(raw) != int(h.uncompressed) {
			return pg, fmt.Errorf("uncompressed page of %d bytes, the header says %d", len(raw), h.uncompressed)
		}
		pg.data = raw
		return pg, nil
	}
	out, err := p.decompressAt(raw, int(h.uncompressed))
	pg.data = out
	return pg, err
}

// compressedPart is the part of a page's body that is compressed and its
// uncompressed size; ok is false when nothing in it is (or it is bad: body
// says why).
func (p *pageReader) compressedPart(h pageHeader, raw []byte) (src []byte, n int, ok bool) {
	if p.codec == nil {
		return nil, 0, false
	}
	if h.typ == pageDataV2 {
		ll := int(h.defLen) + int(h.repLen)
		if !h.isCompressed || ll > len(raw) || ll > int(h.uncompressed) {
			return nil, 0, false
		}
		return raw[ll:], int(h.uncompressed) - ll, true
	}
	return raw, int(h.uncompressed), true
}

// decompressAt decompresses src, the compressed part of the page body at
// the reader's position: through the pages decompressed ahead when the
// codec is a batch decoder, else on this core.
func (p *pageReader) decompressAt(src []byte, n int) ([]byte, error) {
	if p.batch == nil || len(src) == 0 {
		return p.decompress(src, n)
	}
	at := p.offsetOf(src)
	for len(p.ahead) > 0 && p.ahead[0].at < at {
		p.ahead = p.ahead[1:] // skipped pages
	}
	if len(p.ahead) == 0 || p.ahead[0].at != at {
		p.fillAhead(src, n)
	}
	if len(p.ahead) == 0 || p.ahead[0].at != at {
		return p.decompress(src, n)
	}
	a := p.ahead[0]
	p.ahead = p.ahead[1:]
	return decoded(a.dst, a.out, a.err)
}

// offsetOf is the offset of b (a slice of the chunk) in the chunk.
func (p *pageReader) offsetOf(b []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(p.chunk))))
}

// fillAhead decompresses, in one batch, the page whose compressed part is
// first (its body just consumed) and up to pageWindow-1 pages after it in
// the chunk. A header it cannot read ends the window there (the reader
// reports the error when it gets to it).
func (p *pageReader) fillAhead(first []byte, n int) {
	type job struct {
		at  int
		src []byte
		n   int
	}
	jobs := []job{{p.offsetOf(first), first, n}}
	total := n + bitReaderSlack
	for pos := p.pos; len(jobs) < pageWindow && pos < len(p.chunk); {
		h, hn, err := parsePageHeader(p.chunk[pos:])
		if err != nil || int64(pos)+int64(hn)+int64(h.compressed) > int64(len(p.chunk)) || int64(h.uncompressed) > p.maxPage {
			break
		}
		raw := p.chunk[pos+hn : pos+hn+int(h.compressed)]
		pos += hn + int(h.compressed)
		if h.typ != pageData && h.typ != pageDataV2 && h.typ != pageDictionary {
			continue
		}
		if src, m, ok := p.compressedPart(h, raw); ok && len(src) > 0 {
			jobs = append(jobs, job{p.offsetOf(src), src, m})
			total += m + bitReaderSlack
		}
	}
	// NB: the pages' bytes live in one buffer, each page followed by the
	// slack bit unpacking may read; a page stays valid until the reader
	// moves past the window (pageReader.body's contract is one page).
	if cap(p.abuf) < total {
		p.abuf = make([]byte, total)
	}
	buf := p.abuf[:total]
	dsts, srcs := make([][]byte, len(jobs)), make([][]byte, len(jobs))
	outs, errs := make([][]byte, len(jobs)), make([]error, len(jobs))
	off := 0
	for i, j := range jobs {
		dsts[i], srcs[i] = buf[off:off+j.n:off+j.n+bitReaderSlack], j.src
		off += j.n + bitReaderSlack
	}
	p.batch.DecodeBatch(dsts, srcs, outs, errs)
	p.ahead = p.ahead[:0]
	for i, j := range jobs {
		p.ahead = append(p.ahead, aheadPage{at: j.at, dst: dsts[i], out: outs[i], err: errs[i]})
	}
}

// decompress decodes src into the reused buffer, which keeps
// bitReaderSlack bytes beyond the page so that bit unpacking may read whole
// words past the last value.
func (p *pageReader) decompress(src []byte, n int) ([]byte, error) {
	if cap(p.buf) < n+bitReaderSlack {
		p.buf = make([]byte, n+bitReaderSlack, n+n/4+bitReaderSlack)
	}
	dst := p.buf[:n]
	out, err := compress.Decode(p.codec, dst, src)
	return decoded(dst, out, err)
}

// decoded checks a page a codec decoded into dst (len(dst) bytes, the
// header's size) as out.
func decoded(dst, out []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, fmt.Errorf("decompressing a page: %v", err)
	}
	if len(out) != len(dst) {
		return nil, fmt.Errorf("page decompressed to %d bytes, the header says %d", len(out), len(dst))
	}
	if len(dst) > 0 && &out[0] != &dst[0] {
		// NB: a codec may return a fresh slice when dst is too small;
		// ours never is, but keep the page bytes in our buffer either way
		// (the slack beyond them is what bit unpacking relies on).
		copy(dst, out)
		out = dst
	}
	return out, nil
}

// le32 reads a little-endian uint32 at b[i:], ok false when b is short.
func le32(b []byte, i int) (uint32, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[i:]), true
}
