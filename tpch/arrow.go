package tpch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// toRecord copies the batch into Arrow arrays allocated from mem.
func (b *batch) toRecord(mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	defs := tableCols[b.table]
	cols := make([]arrow.Array, len(defs))
	for i, d := range defs {
		dt := schema.Field(i).Type
		c := &b.cols[i]
		switch d.kind {
		case kInt64, kDecimal:
			buf := memory.NewResizableBuffer(mem)
			buf.Resize(8 * b.n)
			copy(arrow.Int64Traits.CastFromBytes(buf.Bytes()), c.i64[:b.n])
			cols[i] = fixedArray(dt, b.n, buf)
		case kInt32, kDate:
			buf := memory.NewResizableBuffer(mem)
			buf.Resize(4 * b.n)
			copy(arrow.Int32Traits.CastFromBytes(buf.Bytes()), c.i32[:b.n])
			cols[i] = fixedArray(dt, b.n, buf)
		default:
			total := 0
			for _, s := range c.str[:b.n] {
				total += len(s)
			}
			offs := memory.NewResizableBuffer(mem)
			offs.Resize(4 * (b.n + 1))
			o := arrow.Int32Traits.CastFromBytes(offs.Bytes())
			data := memory.NewResizableBuffer(mem)
			data.Resize(total)
			db := data.Bytes()
			pos := 0
			for r, s := range c.str[:b.n] {
				o[r] = int32(pos)
				pos += copy(db[pos:], s)
			}
			o[b.n] = int32(pos)
			ad := array.NewData(dt, b.n, []*memory.Buffer{nil, offs, data}, nil, 0, 0)
			cols[i] = array.MakeFromData(ad)
			ad.Release()
			offs.Release()
			data.Release()
		}
	}
	rec := array.NewRecordBatch(schema, cols, int64(b.n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func fixedArray(dt arrow.DataType, n int, buf *memory.Buffer) arrow.Array {
	ad := array.NewData(dt, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	arr := array.MakeFromData(ad)
	ad.Release()
	buf.Release()
	return arr
}
