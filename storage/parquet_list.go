package storage

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Array columns: a Parquet LIST of plain values (listColumn), read a row
// group at a time. The element leaf's levels and values are decoded whole
// when the row group starts (a colDecoder over levels, not rows), the
// rows' element ranges are worked out from the repetition and definition
// levels (listLevels), and each batch materializes its rows' lists from
// them. A row group's list column is thus held in memory whole while it
// is read; its rows' lists are built per batch, selection applied.

// listRows is a row group's decoded list column.
type listRows struct {
	elemT arrow.DataType
	elems *vector // one slot per level; the elements' slots are in slots
	n     int     // levels
	slots []int32 // the elements' slots, row after row
	start []int32 // row r's elements are slots[start[r]:start[r+1]]
	valid []bool  // row r is not NULL
}

// listDecoder is the colReader of a list column.
type listDecoder struct {
	rows *listRows
	pos  int
}

// newListDecoder decodes the whole column chunk cr of a row group of rows
// rows, the element of a list of type t.
func newListDecoder(cr file.ColumnChunkReader, t arrow.DataType, name string, rows int, levels int64) (*listDecoder, error) {
	lt, ok := t.(*arrow.ListType)
	if !ok {
		return nil, nferr.Internalf("column %s: a list decoder for %s", name, t)
	}
	descr := cr.Descriptor()
	if descr.MaxRepetitionLevel() != 1 {
		return nil, nferr.Dataf("column %s: a list with %d repetition levels (nicflow reads lists of plain values)", name, descr.MaxRepetitionLevel())
	}
	d, err := newColDecoder(cr, lt.Elem(), name)
	if err != nil {
		return nil, err
	}
	d.maxRep = 1
	if levels < int64(rows) || levels > 1<<31-1 {
		return nil, nferr.Dataf("column %s: %d levels for %d rows", name, levels, rows)
	}
	L := int(levels)
	lr := &listRows{elemT: lt.Elem(), elems: &vector{}, n: L}
	if L > 0 {
		if err := d.read(lr.elems, L); err != nil {
			return nil, err
		}
	}
	// NB: a repeated leaf has definition levels (its repeated node adds
	// one), so d.def is filled.
	def, rep := d.def[:L], d.rep[:L]
	listDef, elemDef := listLevels(descr)
	lr.slots = make([]int32, 0, L)
	lr.start = make([]int32, 0, rows+1)
	lr.valid = make([]bool, 0, rows)
	for k := 0; k < L; k++ {
		if rep[k] == 0 {
			lr.start = append(lr.start, int32(len(lr.slots)))
			lr.valid = append(lr.valid, def[k] >= listDef)
		} else if len(lr.start) == 0 {
			return nil, nferr.Dataf("column %s: the column chunk starts inside a list", name)
		}
		if def[k] >= elemDef {
			lr.slots = append(lr.slots, int32(k))
		}
	}
	if len(lr.valid) != rows {
		return nil, nferr.Dataf("column %s: the column chunk holds %d lists, the row group %d rows", name, len(lr.valid), rows)
	}
	lr.start = append(lr.start, int32(len(lr.slots)))
	return &listDecoder{rows: lr}, nil
}

func (d *listDecoder) read(v *vector, n int) error {
	if d.pos+n > len(d.rows.valid) {
		return nferr.Dataf("a list column read past its row group")
	}
	v.kind, v.n, v.valid, v.dict = kList, n, nil, nil
	v.list, v.listOff = d.rows, d.pos
	d.pos += n
	return nil
}

func (d *listDecoder) skip(n int) error {
	d.pos += n
	return nil
}

// materializeList builds the lists of v's rows (sel: those of them, nil:
// all n).
func materializeList(alloc memory.Allocator, t arrow.DataType, v *vector, sel []int32, n int) arrow.Array {
	lr := v.list
	if sel != nil {
		n = len(sel)
	}
	row := func(k int) int {
		if sel != nil {
			return v.listOff + int(sel[k])
		}
		return v.listOff + k
	}
	ob := fixedBuffer(alloc, n+1, 4)
	defer ob.Release()
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())[:n+1]
	var slots []int32
	var validity *memory.Buffer
	nulls := 0
	for k := 0; k < n; k++ {
		r := row(k)
		offs[k] = int32(len(slots))
		if !lr.valid[r] {
			if validity == nil {
				validity = memory.NewResizableBuffer(alloc)
				validity.Resize(int(bitutil.BytesForBits(int64(n))))
				bitutil.SetBitsTo(validity.Bytes(), 0, int64(n), true)
			}
			bitutil.ClearBit(validity.Bytes(), k)
			nulls++
			continue
		}
		slots = append(slots, lr.slots[lr.start[r]:lr.start[r+1]]...)
	}
	offs[n] = int32(len(slots))
	if slots == nil {
		slots = []int32{} // NB: nil would mean every slot
	}
	child := materialize(alloc, lr.elemT, lr.elems, slots, lr.n)
	defer child.Release()
	data := array.NewData(t, n, []*memory.Buffer{validity, ob}, []arrow.ArrayData{child.Data()}, nulls, 0)
	if validity != nil {
		validity.Release()
	}
	defer data.Release()
	return array.MakeFromData(data)
}
