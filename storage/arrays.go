package storage

import (
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// materialize builds an Arrow array of type t from rows of v: the rows
// listed in sel (ascending), or rows 0..n-1 when sel is nil. Buffers come
// from alloc; the caller owns the result.
//
// This is where the scanner compacts: selected rows are gathered straight
// from the decoder's typed slices into the output buffers, so a filtered
// scan copies each surviving value once and never builds a selection
// vector on top of a full-size array.
func materialize(alloc memory.Allocator, t arrow.DataType, v *vector, sel []int32, n int) arrow.Array {
	if v.kind == kList {
		return materializeList(alloc, t, v, sel, n)
	}
	if sel != nil {
		n = len(sel)
	}
	var validity *memory.Buffer
	nulls := 0
	if v.valid != nil {
		validity = memory.NewResizableBuffer(alloc)
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := validity.Bytes()
		for i := range bits {
			bits[i] = 0
		}
		if sel == nil {
			for i := 0; i < n; i++ {
				if v.valid[i] {
					bitutil.SetBit(bits, i)
				} else {
					nulls++
				}
			}
		} else {
			for k, i := range sel {
				if v.valid[i] {
					bitutil.SetBit(bits, k)
				} else {
					nulls++
				}
			}
		}
		if nulls == 0 {
			validity.Release()
			validity = nil
		}
	}
	var data *array.Data
	if v.dict != nil {
		data = materializeDict(alloc, t, v, sel, n, validity, nulls)
		if validity != nil {
			validity.Release()
		}
		arr := array.MakeFromData(data)
		data.Release()
		return arr
	}
	switch v.kind {
	case kInt32:
		buf := fixedBuffer(alloc, n, 4)
		gather(arrow.Int32Traits.CastFromBytes(buf.Bytes())[:n], v.i32, sel)
		data = array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
		buf.Release()
	case kInt64:
		buf := fixedBuffer(alloc, n, 8)
		gather(arrow.Int64Traits.CastFromBytes(buf.Bytes())[:n], v.i64, sel)
		data = array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
		buf.Release()
	case kFloat64:
		buf := fixedBuffer(alloc, n, 8)
		gather(arrow.Float64Traits.CastFromBytes(buf.Bytes())[:n], v.f64, sel)
		data = array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
		buf.Release()
	case kBool:
		buf := memory.NewResizableBuffer(alloc)
		buf.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := buf.Bytes()
		for i := range bits {
			bits[i] = 0
		}
		if sel == nil {
			for i := 0; i < n; i++ {
				if v.b[i] {
					bitutil.SetBit(bits, i)
				}
			}
		} else {
			for k, i := range sel {
				if v.b[i] {
					bitutil.SetBit(bits, k)
				}
			}
		}
		data = array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
		buf.Release()
	case kString:
		ob := fixedBuffer(alloc, n+1, 4)
		offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())[:n+1]
		size := 0
		if sel == nil {
			size = int(v.offs[n] - v.offs[0])
		} else {
			for _, i := range sel {
				size += int(v.offs[i+1] - v.offs[i])
			}
		}
		db := memory.NewResizableBuffer(alloc)
		db.Resize(size)
		out := db.Bytes()
		if sel == nil {
			base := v.offs[0]
			copy(out, v.data[base:v.offs[n]])
			for i := 0; i <= n; i++ {
				offs[i] = v.offs[i] - base
			}
		} else {
			pos := int32(0)
			for k, i := range sel {
				offs[k] = pos
				pos += int32(copy(out[pos:], v.data[v.offs[i]:v.offs[i+1]]))
			}
			offs[n] = pos
		}
		data = array.NewData(t, n, []*memory.Buffer{validity, ob, db}, nil, nulls, 0)
		ob.Release()
		db.Release()
	case kDec128:
		buf := fixedBuffer(alloc, n, 16)
		dst := unsafe.Slice((*decimal128.Num)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
		gather(dst, v.d128, sel)
		data = array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
		buf.Release()
	}
	if validity != nil {
		validity.Release()
	}
	arr := array.MakeFromData(data)
	data.Release()
	return arr
}

// fixedBuffer allocates n values of width bytes.
func fixedBuffer(alloc memory.Allocator, n, width int) *memory.Buffer {
	buf := memory.NewResizableBuffer(alloc)
	buf.Resize(n * width)
	return buf
}

func gather[T any](dst, src []T, sel []int32) {
	if sel == nil {
		copy(dst, src[:len(dst)])
		return
	}
	for k, i := range sel {
		dst[k] = src[i]
	}
}

// arrayToVector views (or, for booleans, strings and decimals, copies) an
// Arrow array into a vector; used when loading and in tests.
func arrayToVector(arr arrow.Array, v *vector) {
	n := arr.Len()
	v.kind, v.n = kindOf(arr.DataType()), n
	v.valid = nil
	if arr.NullN() > 0 {
		v.valid = grow(v.valid, n)
		for i := 0; i < n; i++ {
			v.valid[i] = arr.IsValid(i)
		}
	}
	switch v.kind {
	case kInt32:
		v.i32 = fixedValues[int32](arr)
	case kInt64:
		v.i64 = fixedValues[int64](arr)
	case kFloat64:
		v.f64 = fixedValues[float64](arr)
	case kBool:
		b := arr.(*array.Boolean)
		v.b = grow(v.b, n)
		for i := 0; i < n; i++ {
			v.b[i] = b.Value(i)
		}
	case kString:
		d := arr.Data()
		raw := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+n+1]
		v.offs = grow(v.offs, n+1)
		copy(v.offs, raw)
		v.data = nil
		if b := d.Buffers()[2]; b != nil {
			v.data = b.Bytes()
		}
	case kDec128:
		d := arr.(*array.Decimal128)
		v.d128 = grow(v.d128, n)
		for i := 0; i < n; i++ {
			v.d128[i] = d.Value(i)
		}
	}
}

// materializeDict builds the array of a vector in dictionary form: the
// selected rows' entries are gathered from the dictionary (NULL rows point
// at its zero entry, so the loops have no branch).
func materializeDict(alloc memory.Allocator, t arrow.DataType, v *vector, sel []int32, n int, validity *memory.Buffer, nulls int) *array.Data {
	d := v.dict
	idx := v.idx
	switch v.kind {
	case kInt32:
		buf := fixedBuffer(alloc, n, 4)
		gatherDict(arrow.Int32Traits.CastFromBytes(buf.Bytes())[:n], d.i32, idx, sel)
		defer buf.Release()
		return array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
	case kInt64:
		buf := fixedBuffer(alloc, n, 8)
		gatherDict(arrow.Int64Traits.CastFromBytes(buf.Bytes())[:n], d.i64, idx, sel)
		defer buf.Release()
		return array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
	case kFloat64:
		buf := fixedBuffer(alloc, n, 8)
		gatherDict(arrow.Float64Traits.CastFromBytes(buf.Bytes())[:n], d.f64, idx, sel)
		defer buf.Release()
		return array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
	case kDec128:
		buf := fixedBuffer(alloc, n, 16)
		dst := unsafe.Slice((*decimal128.Num)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
		gatherDict(dst, d.d128, idx, sel)
		defer buf.Release()
		return array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
	case kBool:
		buf := memory.NewResizableBuffer(alloc)
		buf.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := buf.Bytes()
		clear(bits)
		for k := 0; k < n; k++ {
			r := k
			if sel != nil {
				r = int(sel[k])
			}
			if d.b[idx[r]] {
				bitutil.SetBit(bits, k)
			}
		}
		defer buf.Release()
		return array.NewData(t, n, []*memory.Buffer{validity, buf}, nil, nulls, 0)
	}
	// Strings: sizes first, then one copy per value.
	ob := fixedBuffer(alloc, n+1, 4)
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())[:n+1]
	db := memory.NewResizableBuffer(alloc)
	defer ob.Release()
	defer db.Release()
	if d.shortFor != v.dictID || d.shortLen == nil {
		d.prepareShort(v.dictID)
	}
	if d.shortOK {
		// NB: every entry is at most 8 bytes (TPC-H's flags, modes and
		// priorities): each value is one 8-byte word from a per-dictionary
		// table, stored where the output has 8 bytes left (a memmove call
		// per 1-byte value cost a quarter of Q1's CPU). Bytes a word writes
		// past its value are overwritten by the next value or lie beyond
		// the data.
		// Room for the longest entry per row (exact for flags) and one
		// word of slack; the length is set to what was written.
		room := n*d.shortMax + 8
		db.Reserve(room)
		end := gatherShort(db.Buf()[:room], offs, d.shortWord, d.shortLen, idx, sel, n)
		offs[n] = end
		db.ResizeNoShrink(int(end))
		return array.NewData(t, n, []*memory.Buffer{validity, ob, db}, nil, nulls, 0)
	}
	do := d.offs
	size := 0
	if sel == nil {
		for _, e := range idx[:n] {
			size += int(do[e+1] - do[e])
		}
	} else {
		for _, r := range sel {
			e := idx[r]
			size += int(do[e+1] - do[e])
		}
	}
	db.Resize(size)
	out := db.Bytes()
	pos := int32(0)
	for k := 0; k < n; k++ {
		r := k
		if sel != nil {
			r = int(sel[k])
		}
		e := idx[r]
		offs[k] = pos
		pos += int32(copy(out[pos:], d.data[do[e]:do[e+1]]))
	}
	offs[n] = pos
	return array.NewData(t, n, []*memory.Buffer{validity, ob, db}, nil, nulls, 0)
}

// prepareShort fills the short-string tables of a string dictionary
// (shortOK when every entry has at most 8 bytes) for dictionary id.
func (d *vector) prepareShort(id uint64) {
	d.shortFor, d.shortOK, d.shortMax = id, true, 0
	d.shortWord = grow(d.shortWord, d.n)
	d.shortLen = grow(d.shortLen, d.n)
	for e := 0; e < d.n; e++ {
		v := d.data[d.offs[e]:d.offs[e+1]]
		if len(v) > 8 {
			d.shortOK = false
			return
		}
		d.shortMax = max(d.shortMax, len(v))
		var w [8]byte
		copy(w[:], v)
		d.shortWord[e], d.shortLen[e] = binary.LittleEndian.Uint64(w[:]), int32(len(v))
	}
}

// gatherShort writes the selected rows' words into out (which has 8 bytes
// of room past the data), their offsets into offs, and returns the end
// offset.
func gatherShort(out []byte, offs []int32, words []uint64, lens []int32, idx, sel []int32, n int) int32 {
	pos := 0
	offs = offs[:n]
	if sel == nil {
		for k, e := range idx[:n] {
			offs[k] = int32(pos)
			binary.LittleEndian.PutUint64(out[pos:pos+8], words[e])
			pos += int(lens[e])
		}
		return int32(pos)
	}
	for k, r := range sel[:n] {
		e := idx[r]
		offs[k] = int32(pos)
		binary.LittleEndian.PutUint64(out[pos:pos+8], words[e])
		pos += int(lens[e])
	}
	return int32(pos)
}

// gatherDict writes dict[idx[r]] for the selected rows r (all rows when
// sel is nil) into dst.
func gatherDict[T any](dst, dict []T, idx, sel []int32) {
	if sel == nil {
		for k, e := range idx[:len(dst)] {
			dst[k] = dict[e]
		}
		return
	}
	for k, r := range sel {
		dst[k] = dict[idx[r]]
	}
}
