package exec

// Batch compaction and the typed column storage of the stateful operators.
//
// Operators that keep rows (hash join build side, sort, top-N, window, nested
// loop join) copy the live rows of their input batches into vecs: growable,
// typed, Go-memory columns that they own outright (no reference counting) and
// charge to their Account. Output batches are then gathered from vecs (or
// from input arrays) into fresh Arrow arrays allocated with env.Alloc.
//
// Types are classified once, when an operator is built, into a physical
// class (colInfo); the loops below are generic over the value's bit pattern
// (uint8..uint64, [2]uint64), so one instantiation serves every type of that
// width: int64, float64, date64, timestamp and decimal64 all move as uint64.

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// physClass is how an operator treats a column's values.
type physClass uint8

const (
	// pcBool is an Arrow boolean (bit-packed values).
	pcBool physClass = iota + 1
	// pcInt is a two's complement signed integer of width 1, 2, 4 or 8 bytes:
	// ints, dates, times, timestamps, durations, decimal32/64, month intervals.
	pcInt
	// pcUint is an unsigned integer of width 1, 2, 4 or 8 bytes.
	pcUint
	// pcFloat is an IEEE float of width 4 or 8.
	pcFloat
	// pcDec128 is a 16-byte two's complement decimal128.
	pcDec128
	// pcOpaque is a fixed-width value with equality but no order
	// (day-time and month-day-nano intervals).
	pcOpaque
	// pcBytes is utf8 or binary with int32 offsets.
	pcBytes
)

// colInfo is the physical description of a column type.
type colInfo struct {
	dt    arrow.DataType
	class physClass
	width int // bytes per value for fixed-width classes; 0 for bool and bytes
}

func (c colInfo) ordered() bool { return c.class != pcOpaque }

// classify returns the physical class of dt, or ok=false for types the
// stateful operators do not handle (nested, large_utf8, dictionary, ...).
func classify(dt arrow.DataType) (colInfo, bool) {
	c := colInfo{dt: dt}
	switch dt.ID() {
	case arrow.BOOL:
		c.class = pcBool
	case arrow.INT8:
		c.class, c.width = pcInt, 1
	case arrow.INT16:
		c.class, c.width = pcInt, 2
	case arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.DECIMAL32, arrow.INTERVAL_MONTHS:
		c.class, c.width = pcInt, 4
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION, arrow.DECIMAL64:
		c.class, c.width = pcInt, 8
	case arrow.UINT8:
		c.class, c.width = pcUint, 1
	case arrow.UINT16:
		c.class, c.width = pcUint, 2
	case arrow.UINT32:
		c.class, c.width = pcUint, 4
	case arrow.UINT64:
		c.class, c.width = pcUint, 8
	case arrow.FLOAT32:
		c.class, c.width = pcFloat, 4
	case arrow.FLOAT64:
		c.class, c.width = pcFloat, 8
	case arrow.DECIMAL128:
		c.class, c.width = pcDec128, 16
	case arrow.INTERVAL_DAY_TIME:
		c.class, c.width = pcOpaque, 8
	case arrow.INTERVAL_MONTH_DAY_NANO:
		c.class, c.width = pcOpaque, 16
	case arrow.STRING, arrow.BINARY:
		c.class = pcBytes
	default:
		return c, false
	}
	return c, true
}

// classifyCol classifies column i of schema s for operator op, with a
// KindQuery error naming both when the type is not supported.
func classifyCol(s *arrow.Schema, i int, op, role string) (colInfo, error) {
	if i < 0 || i >= s.NumFields() {
		return colInfo{}, nferr.Queryf("%s: %s column %d out of range (input has %d columns)", op, role, i, s.NumFields())
	}
	c, ok := classify(s.Field(i).Type)
	if !ok {
		// Arrays are payload (carried, never hashed or ordered).
		switch role {
		case "build", "probe", "left", "right", "input":
			c, ok = classifyPayload(s.Field(i).Type)
		}
	}
	if !ok && expr.IsArray(s.Field(i).Type) {
		return c, nferr.Queryf("%s: %s column %d (%s) is an array (%s): arrays are not ordered yet (ORDER BY or a window over an array; GROUP BY, DISTINCT and joins take them)", op, role, i, s.Field(i).Name, expr.TypeName(s.Field(i).Type))
	}
	if !ok {
		return c, nferr.Queryf("%s: %s column %d (%s) has unsupported type %s", op, role, i, s.Field(i).Name, s.Field(i).Type)
	}
	return c, nil
}

// fixedT lists the bit patterns fixed-width values move as.
type fixedT interface {
	uint8 | uint16 | uint32 | uint64 | [2]uint64
}

// castBytes views b as a slice of T.
//
// NB: this reinterprets Arrow buffers exactly like arrow's own
// XxxTraits.CastFromBytes; Arrow buffers are allocated 64-byte aligned.
func castBytes[T any](b []byte) []T {
	var zero T
	sz := int(unsafe.Sizeof(zero))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

// valuesOf returns the values of a fixed-width array as []T, indexed like the
// array (the array's offset is applied).
func valuesOf[T any](a arrow.Array) []T {
	d := a.Data()
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil || d.Len() == 0 {
		return nil
	}
	all := castBytes[T](bufs[1].Bytes())
	return all[d.Offset() : d.Offset()+d.Len()]
}

// validityOf returns the validity bitmap of a and the bit offset of row 0,
// or nil when a has no nulls.
func validityOf(a arrow.Array) ([]byte, int) {
	if a.NullN() == 0 {
		return nil, 0
	}
	d := a.Data()
	b := d.Buffers()[0]
	if b == nil {
		return nil, 0
	}
	return b.Bytes(), d.Offset()
}

// boolBitsOf returns the value bitmap of a boolean array and its bit offset.
func boolBitsOf(a arrow.Array) ([]byte, int) {
	d := a.Data()
	b := d.Buffers()[1]
	if b == nil {
		return nil, 0
	}
	return b.Bytes(), d.Offset()
}

// bytesOf returns the offsets (len+1, not rebased) and data of a utf8 or
// binary array.
func bytesOf(a arrow.Array) ([]int32, []byte) {
	d := a.Data()
	bufs := d.Buffers()
	var offs []int32
	if bufs[1] != nil {
		all := castBytes[int32](bufs[1].Bytes())
		if len(all) > 0 {
			offs = all[d.Offset() : d.Offset()+d.Len()+1]
		}
	}
	if offs == nil {
		offs = []int32{0}
	}
	var data []byte
	if len(bufs) > 2 && bufs[2] != nil {
		data = bufs[2].Bytes()
	}
	return offs, data
}

func bitIsSet(bm []byte, i int) bool { return bm[i>>3]&(1<<(uint(i)&7)) != 0 }
func setBit(bm []byte, i int)        { bm[i>>3] |= 1 << (uint(i) & 7) }
func clearBit(bm []byte, i int)      { bm[i>>3] &^= 1 << (uint(i) & 7) }

// validityWriter builds the validity buffer of an output array lazily: no
// buffer is allocated until the first null.
type validityWriter struct {
	alloc memory.Allocator
	n     int
	buf   *memory.Buffer
	bits  []byte
	nulls int
}

func (w *validityWriter) setNull(i int) {
	if w.bits == nil {
		w.buf = memory.NewResizableBuffer(w.alloc)
		w.buf.Resize((w.n + 7) / 8)
		w.bits = w.buf.Bytes()
		for j := range w.bits {
			w.bits[j] = 0xff
		}
	}
	clearBit(w.bits, i)
	w.nulls++
}

// makeArray wraps buffers (validity may be nil) into an array; it takes over
// the caller's references to the buffers.
func makeArray(dt arrow.DataType, n int, nulls int, bufs ...*memory.Buffer) arrow.Array {
	data := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	arr := array.MakeFromData(data)
	data.Release()
	return arr
}

func newBuffer(alloc memory.Allocator, size int) *memory.Buffer {
	b := memory.NewResizableBuffer(alloc)
	b.Resize(size)
	return b
}

// gatherFixed builds an array of type dt from src[idx[i]]; idx[i] < 0 or a
// null in src (bitmap bm at bit offset bmOff, nil = no nulls) gives NULL.
func gatherFixed[T fixedT](alloc memory.Allocator, dt arrow.DataType, src []T, bm []byte, bmOff int, idx []int32) arrow.Array {
	n := len(idx)
	var zero T
	vb := newBuffer(alloc, n*int(unsafe.Sizeof(zero)))
	dst := castBytes[T](vb.Bytes())
	w := validityWriter{alloc: alloc, n: n}
	if bm == nil {
		for i, j := range idx {
			if j < 0 {
				dst[i] = zero
				w.setNull(i)
				continue
			}
			dst[i] = src[j]
		}
	} else {
		for i, j := range idx {
			if j < 0 || !bitIsSet(bm, bmOff+int(j)) {
				dst[i] = zero
				w.setNull(i)
				continue
			}
			dst[i] = src[j]
		}
	}
	return makeArray(dt, n, w.nulls, w.buf, vb)
}

// gatherBool is gatherFixed for bit-packed booleans.
func gatherBool(alloc memory.Allocator, dt arrow.DataType, src []byte, srcOff int, bm []byte, bmOff int, idx []int32) arrow.Array {
	n := len(idx)
	vb := newBuffer(alloc, (n+7)/8)
	dst := vb.Bytes()
	clear(dst)
	w := validityWriter{alloc: alloc, n: n}
	for i, j := range idx {
		if j < 0 || (bm != nil && !bitIsSet(bm, bmOff+int(j))) {
			w.setNull(i)
			continue
		}
		if bitIsSet(src, srcOff+int(j)) {
			setBit(dst, i)
		}
	}
	return makeArray(dt, n, w.nulls, w.buf, vb)
}

// gatherBytes is gatherFixed for utf8/binary; offs has one entry per source
// row plus one.
func gatherBytes[O int32 | int64](alloc memory.Allocator, dt arrow.DataType, offs []O, data []byte, bm []byte, bmOff int, idx []int32) arrow.Array {
	n := len(idx)
	total := 0
	for _, j := range idx {
		if j >= 0 {
			total += int(offs[j+1] - offs[j])
		}
	}
	ob := newBuffer(alloc, (n+1)*4)
	dofs := castBytes[int32](ob.Bytes())
	db := newBuffer(alloc, total)
	dd := db.Bytes()
	w := validityWriter{alloc: alloc, n: n}
	pos := 0
	for i, j := range idx {
		dofs[i] = int32(pos)
		if j < 0 || (bm != nil && !bitIsSet(bm, bmOff+int(j))) {
			w.setNull(i)
			continue
		}
		pos += copy(dd[pos:], data[offs[j]:offs[j+1]])
	}
	dofs[n] = int32(pos)
	return makeArray(dt, n, w.nulls, w.buf, ob, db)
}

// takeFn gathers rows idx (physical positions, < 0 for NULL) of an input
// array into a new array.
type takeFn func(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array

// makeTaker chooses the take loop for c once, at build time.
func makeTaker(c colInfo) takeFn {
	switch c.class {
	case pcBool:
		return func(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
			vals, voff := boolBitsOf(a)
			bm, boff := validityOf(a)
			return gatherBool(alloc, a.DataType(), vals, voff, bm, boff, idx)
		}
	case pcBytes:
		return func(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
			offs, data := bytesOf(a)
			bm, boff := validityOf(a)
			return gatherBytes(alloc, a.DataType(), offs, data, bm, boff, idx)
		}
	case pcList:
		return takeList
	case pcNull:
		return takeNull
	}
	switch c.width {
	case 1:
		return takeFixed[uint8]
	case 2:
		return takeFixed[uint16]
	case 4:
		return takeFixed[uint32]
	case 8:
		return takeFixed[uint64]
	default:
		return takeFixed[[2]uint64]
	}
}

func takeFixed[T fixedT](alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	bm, boff := validityOf(a)
	return gatherFixed(alloc, a.DataType(), valuesOf[T](a), bm, boff, idx)
}

// Compact returns a batch with the live rows of b in dense arrays (Sel nil).
// The result owns its arrays: release them with releaseArrays(c.Cols). When
// b has no selection the arrays are shared (retained), not copied.
func Compact(alloc memory.Allocator, b *Batch) *Batch {
	out := &Batch{Cols: make([]arrow.Array, len(b.Cols)), N: b.Len()}
	if b.Sel == nil {
		for i, c := range b.Cols {
			c.Retain()
			out.Cols[i] = c
		}
		return out
	}
	for i, c := range b.Cols {
		ci, ok := classify(c.DataType())
		if !ok {
			// NB: types the stateful operators do not know still compact
			// through arrow's generic (slower) path.
			out.Cols[i] = takeGeneric(alloc, c, b.Sel)
			continue
		}
		out.Cols[i] = makeTaker(ci)(alloc, c, b.Sel)
	}
	return out
}

// takeGeneric concatenates one-row slices: slow, used only for types without
// a typed path (nested types passing through Compact).
func takeGeneric(alloc memory.Allocator, c arrow.Array, sel []int32) arrow.Array {
	parts := make([]arrow.Array, len(sel))
	for i, j := range sel {
		parts[i] = array.NewSlice(c, int64(j), int64(j)+1)
	}
	out, err := array.Concatenate(parts, alloc)
	for _, p := range parts {
		p.Release()
	}
	if err != nil {
		// Concatenate fails only on mismatched types, impossible here.
		panic(err)
	}
	return out
}

// releaseArrays releases every non-nil array of cols.
func releaseArrays(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}

// arrayBytes estimates the memory an array keeps alive: the sum of its
// buffer sizes (shared buffers are counted by every holder).
func arrayBytes(a arrow.Array) int64 {
	var n int64
	for _, b := range a.Data().Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range a.Data().Children() {
		for _, b := range c.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// ArraySize is arrayBytes for other packages (the bytes an array's
// buffers hold).
func ArraySize(a arrow.Array) int64 { return arrayBytes(a) }

// batchBytes estimates the memory a batch keeps alive.
func batchBytes(b *Batch) int64 {
	n := int64(len(b.Sel) * 4)
	for _, c := range b.Cols {
		n += arrayBytes(c)
	}
	return n
}

// colVec is a growable typed column owned by an operator. Memory is plain Go
// memory accounted by the owner through Bytes; vecs hold no Arrow buffers,
// so nothing needs releasing.
type colVec interface {
	// Len is the number of values.
	Len() int
	// Append copies the live rows of a (positions sel, or 0..n-1 when sel
	// is nil).
	Append(a arrow.Array, sel []int32, n int)
	// AppendRange copies rows [start, end) of a.
	AppendRange(a arrow.Array, start, end int)
	// AppendNulls appends k NULLs.
	AppendNulls(k int)
	// AppendVec copies rows [start, end) of src, a colVec of the same type.
	AppendVec(src colVec, start, end int)
	// Gather builds an Arrow array from rows idx (< 0 gives NULL).
	Gather(alloc memory.Allocator, idx []int32) arrow.Array
	// IsNull reports whether row i is NULL.
	IsNull(i int) bool
	// HasNulls reports whether any row is NULL.
	HasNulls() bool
	// Bytes is the memory held, by capacity.
	Bytes() int64
	// Reset empties the colVec, keeping its capacity.
	Reset()
	// Type is the Arrow type of the column.
	Type() arrow.DataType
}

// newColVec returns an empty colVec for c.
func newColVec(c colInfo) colVec {
	switch c.class {
	case pcBool:
		return &boolVec{dt: c.dt}
	case pcBytes:
		return &bytesVec{dt: c.dt, offs: []int64{0}}
	case pcList:
		return newListVec(c.dt)
	case pcNull:
		return &nullVec{}
	}
	switch c.width {
	case 1:
		return &fixedVec[uint8]{dt: c.dt}
	case 2:
		return &fixedVec[uint16]{dt: c.dt}
	case 4:
		return &fixedVec[uint32]{dt: c.dt}
	case 8:
		return &fixedVec[uint64]{dt: c.dt}
	default:
		return &fixedVec[[2]uint64]{dt: c.dt}
	}
}

// nullMask is a colVec's validity: an Arrow-layout bitmap (bit set = valid)
// materialized at the first NULL; nil means no NULLs so far.
type nullMask struct {
	bits  []byte
	nulls int
}

// extend makes room for rows [n0, n1), all valid.
func (m *nullMask) extend(n0, n1 int) {
	if m.bits == nil {
		return
	}
	need := (n1 + 7) / 8
	for len(m.bits) < need {
		m.bits = append(m.bits, 0xff)
	}
	// INVARIANT: bits past the last row are 1 (bytes are born 0xff and
	// only rows < n are ever cleared), so rows [n0, len) are already valid.
}

// setNull marks row i (< n) NULL.
func (m *nullMask) setNull(i, n int) {
	if m.bits == nil {
		m.bits = make([]byte, (n+7)/8, (n+7)/8+64)
		for j := range m.bits {
			m.bits[j] = 0xff
		}
	}
	clearBit(m.bits, i)
	m.nulls++
}

func (m *nullMask) isNull(i int) bool { return m.bits != nil && !bitIsSet(m.bits, i) }

// appendFrom records the validity of the rows just appended at [n0, n1)
// from source bitmap bm (offset off) with positions sel (or start+k).
func (m *nullMask) appendFrom(n0, n1 int, bm []byte, off int, sel []int32, start int) {
	m.extend(n0, n1)
	if bm == nil {
		return
	}
	if sel != nil {
		for k, j := range sel {
			if !bitIsSet(bm, off+int(j)) {
				m.setNull(n0+k, n1)
			}
		}
		return
	}
	for k := 0; k < n1-n0; k++ {
		if !bitIsSet(bm, off+start+k) {
			m.setNull(n0+k, n1)
		}
	}
}

// appendMask records the validity of rows [n0, n1) copied from rows
// start.. of a vec with mask src.
func (m *nullMask) appendMask(n0, n1 int, src *nullMask, start int) {
	m.extend(n0, n1)
	if src.nulls == 0 {
		return
	}
	for k := 0; k < n1-n0; k++ {
		if src.isNull(start + k) {
			m.setNull(n0+k, n1)
		}
	}
}

// all returns the validity bitmap of rows [0, n) as an Arrow buffer, or
// nil when no row is NULL.
func (m *nullMask) all(alloc memory.Allocator, n int) *memory.Buffer {
	if m.nulls == 0 {
		return nil
	}
	b := newBuffer(alloc, (n+7)/8)
	copy(b.Bytes(), m.bits[:(n+7)/8])
	return b
}

func (m *nullMask) reset() { m.bits, m.nulls = nil, 0 }

func (m *nullMask) bytes() int64 { return int64(cap(m.bits)) }

// fixedVec stores fixed-width values as their bit patterns.
type fixedVec[T fixedT] struct {
	dt   arrow.DataType
	vals []T
	nm   nullMask
}

func (v *fixedVec[T]) Len() int             { return len(v.vals) }
func (v *fixedVec[T]) Type() arrow.DataType { return v.dt }
func (v *fixedVec[T]) IsNull(i int) bool    { return v.nm.isNull(i) }
func (v *fixedVec[T]) HasNulls() bool       { return v.nm.nulls > 0 }

func (v *fixedVec[T]) Append(a arrow.Array, sel []int32, n int) {
	src := valuesOf[T](a)
	n0 := len(v.vals)
	if sel == nil {
		v.vals = append(growSlice(v.vals, n), src[:n]...)
	} else {
		v.vals = growSlice(v.vals, len(sel))[:n0+len(sel)]
		dst := v.vals[n0:]
		for k, j := range sel {
			dst[k] = src[j]
		}
	}
	bm, off := validityOf(a)
	v.nm.appendFrom(n0, len(v.vals), bm, off, sel, 0)
}

func (v *fixedVec[T]) AppendRange(a arrow.Array, start, end int) {
	src := valuesOf[T](a)
	n0 := len(v.vals)
	v.vals = append(v.vals, src[start:end]...)
	bm, off := validityOf(a)
	v.nm.appendFrom(n0, len(v.vals), bm, off, nil, start)
}

func (v *fixedVec[T]) AppendNulls(k int) {
	n0 := len(v.vals)
	var zero T
	for i := 0; i < k; i++ {
		v.vals = append(v.vals, zero)
	}
	v.nm.extend(n0, len(v.vals))
	for i := n0; i < len(v.vals); i++ {
		v.nm.setNull(i, len(v.vals))
	}
}

func (v *fixedVec[T]) AppendVec(src colVec, start, end int) {
	s := src.(*fixedVec[T])
	n0 := len(v.vals)
	v.vals = append(growSlice(v.vals, end-start), s.vals[start:end]...)
	v.nm.appendMask(n0, len(v.vals), &s.nm, start)
}

func (v *fixedVec[T]) Gather(alloc memory.Allocator, idx []int32) arrow.Array {
	var bm []byte
	if v.nm.nulls > 0 {
		bm = v.nm.bits
	}
	return gatherFixed(alloc, v.dt, v.vals, bm, 0, idx)
}

// all builds an array of every row in order: one copy of the values
// (Gather's per-row loop over an identity selection, without it).
func (v *fixedVec[T]) all(alloc memory.Allocator) arrow.Array {
	var zero T
	n := len(v.vals)
	vb := newBuffer(alloc, n*int(unsafe.Sizeof(zero)))
	copy(castBytes[T](vb.Bytes()), v.vals)
	bm := v.nm.all(alloc, n)
	return makeArray(v.dt, n, v.nm.nulls, bm, vb)
}

func (v *fixedVec[T]) Bytes() int64 {
	var zero T
	return int64(cap(v.vals))*int64(unsafe.Sizeof(zero)) + v.nm.bytes()
}

func (v *fixedVec[T]) Reset() { v.vals = v.vals[:0]; v.nm.reset() }

// boolVec stores booleans one byte per value (simple random access; boolean
// payload columns are rare and small).
type boolVec struct {
	dt   arrow.DataType
	vals []bool
	nm   nullMask
}

func (v *boolVec) Len() int             { return len(v.vals) }
func (v *boolVec) Type() arrow.DataType { return v.dt }
func (v *boolVec) IsNull(i int) bool    { return v.nm.isNull(i) }
func (v *boolVec) HasNulls() bool       { return v.nm.nulls > 0 }

func (v *boolVec) Append(a arrow.Array, sel []int32, n int) {
	bits, boff := boolBitsOf(a)
	n0 := len(v.vals)
	if sel == nil {
		for j := 0; j < n; j++ {
			v.vals = append(v.vals, bits != nil && bitIsSet(bits, boff+j))
		}
	} else {
		for _, j := range sel {
			v.vals = append(v.vals, bits != nil && bitIsSet(bits, boff+int(j)))
		}
	}
	bm, off := validityOf(a)
	v.nm.appendFrom(n0, len(v.vals), bm, off, sel, 0)
}

func (v *boolVec) AppendRange(a arrow.Array, start, end int) {
	bits, boff := boolBitsOf(a)
	n0 := len(v.vals)
	for j := start; j < end; j++ {
		v.vals = append(v.vals, bits != nil && bitIsSet(bits, boff+j))
	}
	bm, off := validityOf(a)
	v.nm.appendFrom(n0, len(v.vals), bm, off, nil, start)
}

func (v *boolVec) AppendNulls(k int) {
	n0 := len(v.vals)
	for i := 0; i < k; i++ {
		v.vals = append(v.vals, false)
	}
	v.nm.extend(n0, len(v.vals))
	for i := n0; i < len(v.vals); i++ {
		v.nm.setNull(i, len(v.vals))
	}
}

func (v *boolVec) AppendVec(src colVec, start, end int) {
	s := src.(*boolVec)
	n0 := len(v.vals)
	v.vals = append(growSlice(v.vals, end-start), s.vals[start:end]...)
	v.nm.appendMask(n0, len(v.vals), &s.nm, start)
}

func (v *boolVec) Gather(alloc memory.Allocator, idx []int32) arrow.Array {
	n := len(idx)
	vb := newBuffer(alloc, (n+7)/8)
	dst := vb.Bytes()
	clear(dst)
	w := validityWriter{alloc: alloc, n: n}
	for i, j := range idx {
		if j < 0 || v.nm.isNull(int(j)) {
			w.setNull(i)
			continue
		}
		if v.vals[j] {
			setBit(dst, i)
		}
	}
	return makeArray(v.dt, n, w.nulls, w.buf, vb)
}

func (v *boolVec) Bytes() int64 { return int64(cap(v.vals)) + v.nm.bytes() }
func (v *boolVec) Reset()       { v.vals = v.vals[:0]; v.nm.reset() }

// bytesVec stores utf8/binary values with 64-bit offsets, so a column may
// exceed the 2 GiB of one Arrow utf8 array; gathered output batches are
// small and use int32 offsets.
type bytesVec struct {
	dt   arrow.DataType
	offs []int64 // len = Len()+1
	data []byte
	nm   nullMask
}

func (v *bytesVec) Len() int             { return len(v.offs) - 1 }
func (v *bytesVec) Type() arrow.DataType { return v.dt }
func (v *bytesVec) IsNull(i int) bool    { return v.nm.isNull(i) }
func (v *bytesVec) HasNulls() bool       { return v.nm.nulls > 0 }

// value returns row i's bytes (empty for NULL).
func (v *bytesVec) value(i int) []byte { return v.data[v.offs[i]:v.offs[i+1]] }

func (v *bytesVec) Append(a arrow.Array, sel []int32, n int) {
	offs, data := bytesOf(a)
	n0 := v.Len()
	if sel == nil {
		v.data = append(growSlice(v.data, int(offs[n]-offs[0])), data[offs[0]:offs[n]]...)
		v.offs = growSlice(v.offs, n)
		base := int64(len(v.data)) - int64(offs[n])
		for j := 1; j <= n; j++ {
			v.offs = append(v.offs, base+int64(offs[j]))
		}
	} else {
		// The selected values' bytes are counted first, so the data grows
		// once per batch, not once per row.
		total := 0
		for _, j := range sel {
			total += int(offs[j+1] - offs[j])
		}
		v.data = growSlice(v.data, total)
		v.offs = growSlice(v.offs, len(sel))
		pos := len(v.data)
		buf := v.data[:pos+total]
		for _, j := range sel {
			pos += copy(buf[pos:], data[offs[j]:offs[j+1]])
			v.offs = append(v.offs, int64(pos))
		}
		v.data = buf
	}
	bm, off := validityOf(a)
	v.nm.appendFrom(n0, v.Len(), bm, off, sel, 0)
}

func (v *bytesVec) AppendRange(a arrow.Array, start, end int) {
	offs, data := bytesOf(a)
	n0 := v.Len()
	v.data = append(growSlice(v.data, int(offs[end]-offs[start])), data[offs[start]:offs[end]]...)
	v.offs = growSlice(v.offs, end-start)
	base := int64(len(v.data)) - int64(offs[end])
	for j := start + 1; j <= end; j++ {
		v.offs = append(v.offs, base+int64(offs[j]))
	}
	bm, off := validityOf(a)
	v.nm.appendFrom(n0, v.Len(), bm, off, nil, start)
}

func (v *bytesVec) AppendNulls(k int) {
	n0 := v.Len()
	for i := 0; i < k; i++ {
		v.offs = append(v.offs, int64(len(v.data)))
	}
	v.nm.extend(n0, v.Len())
	for i := n0; i < v.Len(); i++ {
		v.nm.setNull(i, v.Len())
	}
}

func (v *bytesVec) AppendVec(src colVec, start, end int) {
	s := src.(*bytesVec)
	n0 := v.Len()
	v.data = append(growSlice(v.data, int(s.offs[end]-s.offs[start])), s.data[s.offs[start]:s.offs[end]]...)
	v.offs = growSlice(v.offs, end-start)
	base := int64(len(v.data)) - s.offs[end]
	for j := start + 1; j <= end; j++ {
		v.offs = append(v.offs, base+s.offs[j])
	}
	v.nm.appendMask(n0, v.Len(), &s.nm, start)
}

func (v *bytesVec) Gather(alloc memory.Allocator, idx []int32) arrow.Array {
	var bm []byte
	if v.nm.nulls > 0 {
		bm = v.nm.bits
	}
	return gatherBytes(alloc, v.dt, v.offs, v.data, bm, 0, idx)
}

// all builds an array of every row in order: the bytes in one copy, the
// offsets narrowed to Arrow's 32 bits.
func (v *bytesVec) all(alloc memory.Allocator) arrow.Array {
	n := v.Len()
	ob := newBuffer(alloc, (n+1)*4)
	dofs := castBytes[int32](ob.Bytes())
	base := v.offs[0]
	for i, o := range v.offs[:n+1] {
		dofs[i] = int32(o - base)
	}
	db := newBuffer(alloc, int(v.offs[n]-base))
	copy(db.Bytes(), v.data[base:v.offs[n]])
	bm := v.nm.all(alloc, n)
	return makeArray(v.dt, n, v.nm.nulls, bm, ob, db)
}

func (v *bytesVec) Bytes() int64 {
	return int64(cap(v.offs))*8 + int64(cap(v.data)) + v.nm.bytes()
}

func (v *bytesVec) Reset() { v.offs = v.offs[:1]; v.data = v.data[:0]; v.nm.reset() }

// growSlice makes room for k more elements with amortized doubling (the
// vectors of a sort or a join build grow to hundreds of megabytes: Go's
// append grows large slices by a quarter, allocating about five times the
// final size on the way, each time on fresh pages). The part about to be
// filled is prefaulted (see prefault): the copy and the appends that
// follow do not fault page by page.
func growSlice[T any](s []T, k int) []T {
	if cap(s)-len(s) >= k {
		return s
	}
	c := 2 * cap(s)
	if c < len(s)+k {
		c = len(s) + k
	}
	ns := make([]T, len(s), c)
	prefault(ns[: len(s)+k : len(s)+k])
	copy(ns, s)
	return ns
}

// rowStore is a set of vecs holding whole rows: the materialized input of
// sort, top-N, window and join build sides.
type rowStore struct {
	vecs []colVec
	n    int
}

func newRowStore(cols []colInfo) *rowStore {
	s := &rowStore{vecs: make([]colVec, len(cols))}
	for i, c := range cols {
		s.vecs[i] = newColVec(c)
	}
	return s
}

// appendBatch copies the live rows of b (only the columns the store has:
// column i of the store comes from b.Cols[i]).
func (s *rowStore) appendBatch(b *Batch) {
	for i, v := range s.vecs {
		v.Append(b.Cols[i], b.Sel, b.N)
	}
	s.n += b.Len()
}

// appendCols copies the live rows of the given columns (positions sel or
// 0..n-1).
func (s *rowStore) appendCols(cols []arrow.Array, sel []int32, n int) {
	for i, v := range s.vecs {
		v.Append(cols[i], sel, n)
	}
	if sel != nil {
		s.n += len(sel)
	} else {
		s.n += n
	}
}

// gather builds output arrays for rows idx.
func (s *rowStore) gather(alloc memory.Allocator, idx []int32, out []arrow.Array) []arrow.Array {
	for _, v := range s.vecs {
		out = append(out, v.Gather(alloc, idx))
	}
	return out
}

// allGatherer is a colVec that builds an array of all its rows in bulk.
type allGatherer interface {
	all(alloc memory.Allocator) arrow.Array
}

// gatherAll builds output arrays of every row, in order (gather of the
// identity selection, in bulk where the colVec can).
func (s *rowStore) gatherAll(alloc memory.Allocator, idx *[]int32, out []arrow.Array) []arrow.Array {
	for _, v := range s.vecs {
		if g, ok := v.(allGatherer); ok {
			out = append(out, g.all(alloc))
			continue
		}
		out = append(out, v.Gather(alloc, expr.SelAll(idx, nil, s.n)))
	}
	return out
}

func (s *rowStore) bytes() int64 {
	var n int64
	for _, v := range s.vecs {
		n += v.Bytes()
	}
	return n
}

func (s *rowStore) reset() {
	for _, v := range s.vecs {
		v.Reset()
	}
	s.n = 0
}

// nullArray returns an all-NULL array of type dt and length n.
func nullArray(alloc memory.Allocator, dt arrow.DataType, n int) arrow.Array {
	return array.MakeArrayOfNull(alloc, dt, n)
}

// castSlice reinterprets a slice of U as a slice of T (same memory).
func castSlice[T, U any](u []U) []T {
	if len(u) == 0 {
		return nil
	}
	var zt T
	var zu U
	n := len(u) * int(unsafe.Sizeof(zu)) / int(unsafe.Sizeof(zt))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(u))), n)
}

// sizeOf is unsafe.Sizeof for a value of a type parameter.
func sizeOf[T any](v T) uintptr { return unsafe.Sizeof(v) }
