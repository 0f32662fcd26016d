package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrays (SQL T[], exec/expr/array.go: Arrow lists of a scalar element)
// as payload of the stateful operators: a row store keeps a list column
// as a listVec, the elements in a colVec of the element's class and each
// row's end offset into them. Arrays are never keys here (no hash, no
// order): classifyCol refuses them as keys.

// pcList is a list of a scalar element type (classifyCol for payload
// columns only).
const pcList physClass = 100

// classifyPayload is classify, lists of classifiable elements included.
func classifyPayload(dt arrow.DataType) (colInfo, bool) {
	if dt.ID() == arrow.NULL {
		return colInfo{dt: dt, class: pcNull}, true
	}
	if lt, ok := dt.(*arrow.ListType); ok {
		if _, ok := classify(lt.Elem()); ok {
			return colInfo{dt: dt, class: pcList}, true
		}
		return colInfo{dt: dt}, false
	}
	return classify(dt)
}

// listVec is a colVec of arrays.
type listVec struct {
	dt    arrow.DataType
	elem  colVec
	offs  []int64 // row i's elements are elem[offs[i], offs[i+1])
	nulls nullMask
}

func newListVec(dt arrow.DataType) *listVec {
	ec, _ := classify(dt.(*arrow.ListType).Elem())
	return &listVec{dt: dt, elem: newColVec(ec), offs: []int64{0}}
}

func (v *listVec) Len() int             { return len(v.offs) - 1 }
func (v *listVec) Type() arrow.DataType { return v.dt }
func (v *listVec) IsNull(i int) bool    { return v.nulls.isNull(i) }
func (v *listVec) HasNulls() bool       { return v.nulls.nulls > 0 }
func (v *listVec) Bytes() int64 {
	return int64(cap(v.offs))*8 + v.elem.Bytes() + v.nulls.bytes()
}

func (v *listVec) Reset() {
	v.elem.Reset()
	v.offs = v.offs[:1]
	v.nulls.reset()
}

// appendRow copies row i of list array l (child its values).
func (v *listVec) appendRow(l *array.List, child arrow.Array, i int) {
	n0 := v.Len()
	if l.IsNull(i) {
		v.offs = append(v.offs, v.offs[n0])
		v.nulls.extend(n0, n0+1)
		v.nulls.setNull(n0, n0+1)
		return
	}
	s, e := l.ValueOffsets(i)
	if e > s {
		v.elem.AppendRange(child, int(s), int(e))
	}
	v.offs = append(v.offs, int64(v.elem.Len()))
	v.nulls.extend(n0, n0+1)
}

func (v *listVec) Append(a arrow.Array, sel []int32, n int) {
	l := a.(*array.List)
	child := l.ListValues()
	for j := 0; j < lenLive(sel, n); j++ {
		v.appendRow(l, child, rowAt(sel, j))
	}
}

func (v *listVec) AppendRange(a arrow.Array, start, end int) {
	l := a.(*array.List)
	child := l.ListValues()
	for i := start; i < end; i++ {
		v.appendRow(l, child, i)
	}
}

func (v *listVec) AppendNulls(k int) {
	for ; k > 0; k-- {
		n0 := v.Len()
		v.offs = append(v.offs, v.offs[n0])
		v.nulls.extend(n0, n0+1)
		v.nulls.setNull(n0, n0+1)
	}
}

func (v *listVec) AppendVec(src colVec, start, end int) {
	s := src.(*listVec)
	for r := start; r < end; r++ {
		n0 := v.Len()
		if s.nulls.isNull(r) {
			v.offs = append(v.offs, v.offs[n0])
			v.nulls.extend(n0, n0+1)
			v.nulls.setNull(n0, n0+1)
			continue
		}
		if s.offs[r+1] > s.offs[r] {
			v.elem.AppendVec(s.elem, int(s.offs[r]), int(s.offs[r+1]))
		}
		v.offs = append(v.offs, int64(v.elem.Len()))
		v.nulls.extend(n0, n0+1)
	}
}

// Gather builds the list array of rows idx (< 0: NULL).
func (v *listVec) Gather(alloc memory.Allocator, idx []int32) arrow.Array {
	var cidx []int32
	ob := newBuffer(alloc, (len(idx)+1)*4)
	offs := castBytes[int32](ob.Bytes())
	offs[0] = 0
	w := validityWriter{alloc: alloc, n: len(idx)}
	for k, r := range idx {
		if r < 0 || v.nulls.isNull(int(r)) {
			w.setNull(k)
		} else {
			for e := v.offs[r]; e < v.offs[r+1]; e++ {
				cidx = append(cidx, int32(e))
			}
		}
		offs[k+1] = int32(len(cidx))
	}
	child := v.elem.Gather(alloc, cidx)
	data := array.NewData(v.dt, len(idx), []*memory.Buffer{w.buf, ob}, []arrow.ArrayData{child.Data()}, w.nulls, 0)
	child.Release()
	ob.Release()
	if w.buf != nil {
		w.buf.Release()
	}
	out := array.MakeFromData(data)
	data.Release()
	return out
}

// takeList gathers rows idx (< 0: NULL) of a list array.
func takeList(alloc memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	v := newListVec(a.DataType())
	v.AppendRange(a, 0, a.Len())
	return v.Gather(alloc, idx)
}

// pcNull is the type of an untyped NULL column (SELECT NULL AS x): every
// value NULL, payload only.
const pcNull physClass = 101

// nullVec is a colVec of untyped NULLs: just their count.
type nullVec struct{ n int }

func (v *nullVec) Len() int                                  { return v.n }
func (v *nullVec) Type() arrow.DataType                      { return arrow.Null }
func (v *nullVec) IsNull(int) bool                           { return true }
func (v *nullVec) HasNulls() bool                            { return v.n > 0 }
func (v *nullVec) Bytes() int64                              { return 8 }
func (v *nullVec) Reset()                                    { v.n = 0 }
func (v *nullVec) Append(_ arrow.Array, sel []int32, n int)  { v.n += lenLive(sel, n) }
func (v *nullVec) AppendRange(_ arrow.Array, start, end int) { v.n += end - start }
func (v *nullVec) AppendNulls(k int)                         { v.n += k }
func (v *nullVec) AppendVec(_ colVec, start, end int)        { v.n += end - start }
func (v *nullVec) Gather(_ memory.Allocator, idx []int32) arrow.Array {
	return array.NewNull(len(idx))
}

func takeNull(_ memory.Allocator, _ arrow.Array, idx []int32) arrow.Array {
	return array.NewNull(len(idx))
}
