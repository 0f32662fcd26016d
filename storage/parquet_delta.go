package storage

import (
	"encoding/binary"
	"fmt"
)

// DELTA_BINARY_PACKED pages (Parquet's delta encoding of INT32 and INT64
// values), decoded by the flat decoder: a header (values per block, its
// miniblocks, the value count, the first value), then blocks of a minimum
// delta and one bit width per miniblock, each miniblock its values'
// (delta - minimum) bit-packed least significant bit first. Values add up
// in the type's width, wrapping, as writers compute them. nicflow writes
// it for integer columns of many distinct values (tpch gen's keys and
// prices: D73), where it is smaller than PLAIN with snappy and needs no
// decompression.
//
// A page is decoded whole when it is loaded (deltaPage), into int64s; the
// reader then copies them out as it would PLAIN values.

// encDeltaBinaryPacked is DELTA_BINARY_PACKED's code in page headers.
const encDeltaBinaryPacked = 5

// maxDeltaBlock bounds a header's block size (writers use 128 to 1,024
// values): a corrupt header cannot make the decoder allocate more.
const maxDeltaBlock = 1 << 16

// deltaPage decodes the values of a DELTA_BINARY_PACKED page body src
// into dst (grown as needed): the count its header gives, at most most
// (the page's values, NULLs included, which are not encoded). int32s says
// the column is INT32 (the values wrap at 32 bits), unsigned that it is
// read zero-extended.
func deltaPage(dst []int64, src []byte, most int, int32s, unsigned bool) ([]int64, error) {
	p := 0
	uv := func(what string) (uint64, error) {
		x, k := binary.Uvarint(src[p:])
		if k <= 0 {
			return 0, fmt.Errorf("delta encoding: bad %s", what)
		}
		p += k
		return x, nil
	}
	zz := func(what string) (int64, error) {
		x, k := binary.Varint(src[p:])
		if k <= 0 {
			return 0, fmt.Errorf("delta encoding: bad %s", what)
		}
		p += k
		return x, nil
	}
	blockSize, err := uv("block size")
	if err != nil {
		return nil, err
	}
	minis, err := uv("miniblock count")
	if err != nil {
		return nil, err
	}
	total, err := uv("value count")
	if err != nil {
		return nil, err
	}
	first, err := zz("first value")
	if err != nil {
		return nil, err
	}
	if blockSize == 0 || blockSize > maxDeltaBlock || blockSize%128 != 0 || minis == 0 || blockSize%minis != 0 || (blockSize/minis)%32 != 0 {
		return nil, fmt.Errorf("delta encoding: blocks of %d values in %d miniblocks", blockSize, minis)
	}
	if total > uint64(most) {
		return nil, fmt.Errorf("delta encoding: %d values in a page of %d", total, most)
	}
	n := int(total)
	if cap(dst) < n {
		dst = make([]int64, n)
	}
	dst = dst[:n]
	if n == 0 {
		return dst, nil
	}
	per := int(blockSize / minis)
	// NB: values add up in int64, wrapping; an INT32 column's are cut to
	// 32 bits at the end (the low 32 bits of a sum do not depend on the
	// bits above them).
	prev := first
	dst[0] = first
	got := 1
	// ext is src with the slack page buffers keep beyond a page (up to 8
	// bytes), so that unpacking loads whole words.
	ext := src[:cap(src)]
	for got < n {
		minDelta, err := zz("minimum delta")
		if err != nil {
			return nil, err
		}
		if uint64(len(src)-p) < minis {
			return nil, fmt.Errorf("delta encoding: the page ends in a block header")
		}
		widths := src[p : p+int(minis)]
		p += int(minis)
		for m := 0; m < int(minis) && got < n; m++ {
			w := uint(widths[m])
			if w > 64 || (int32s && w > 32) {
				return nil, fmt.Errorf("delta encoding: miniblock of %d-bit deltas", w)
			}
			size := per * int(w) / 8
			if len(src)-p < size {
				// NB: writers pad a miniblock whole, even the last.
				return nil, fmt.Errorf("delta encoding: the page ends in a miniblock")
			}
			k := min(per, n-got)
			prev = accumMini(dst[got:got+k], ext[p:min(p+size+8, len(ext))], size, w, minDelta, prev)
			p += size
			got += k
		}
	}
	if int32s {
		if unsigned {
			for i, v := range dst {
				dst[i] = int64(uint32(v))
			}
		} else {
			for i, v := range dst {
				dst[i] = int64(int32(v))
			}
		}
	}
	return dst, nil
}

// accumMini writes the values of a miniblock's first len(dst) deltas of w
// bits (its size bytes at the start of body, which may run up to 8 bytes
// beyond them) after prev, and returns the last.
func accumMini(dst []int64, body []byte, size int, w uint, minDelta, prev int64) int64 {
	if w == 0 {
		for i := range dst {
			prev += minDelta
			dst[i] = prev
		}
		return prev
	}
	if w <= 56 && len(body) >= size+8 {
		// Every value lies in the 8 bytes from its first: one load each.
		mask := uint64(1)<<w - 1
		bit := uint(0)
		for i := range dst {
			v := binary.LittleEndian.Uint64(body[bit>>3:]) >> (bit & 7) & mask
			prev += minDelta + int64(v)
			dst[i] = prev
			bit += w
		}
		return prev
	}
	var buf [64]uint64
	for done := 0; done < len(dst); {
		k := min(len(dst)-done, len(buf))
		unpackBits(buf[:k], body[:size], done*int(w), w)
		for _, u := range buf[:k] {
			prev += minDelta + int64(u)
			dst[done] = prev
			done++
		}
	}
	return prev
}

// unpackBits reads len(dst) values of w bits, least significant bit first,
// from src starting at bit offset bit.
func unpackBits(dst []uint64, src []byte, bit int, w uint) {
	if w == 0 {
		clear(dst)
		return
	}
	mask := ^uint64(0)
	if w < 64 {
		mask = 1<<w - 1
	}
	for i := range dst {
		b, s := bit>>3, uint(bit&7)
		var v uint64
		if b+8 <= len(src) {
			v = binary.LittleEndian.Uint64(src[b:]) >> s
			if s+w > 64 {
				v |= uint64(src[b+8]) << (64 - s)
			}
		} else {
			// The miniblock's last bytes: a byte at a time.
			for j := 0; b+j < len(src) && j < 9; j++ {
				if sh := 8*j - int(s); sh >= 0 {
					v |= uint64(src[b+j]) << uint(sh)
				} else {
					v |= uint64(src[b+j]) >> uint(-sh)
				}
			}
		}
		dst[i] = v & mask
		bit += int(w)
	}
}
