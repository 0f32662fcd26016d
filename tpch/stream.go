package tpch

import (
	"bufio"
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// driverOf returns the table whose rows drive t's generation: part drives
// partsupp (4 rows per part), orders drives lineitem (1..7 per order).
func driverOf(t Table) Table {
	switch t {
	case PartSupp:
		return Part
	case Lineitem:
		return Orders
	}
	return t
}

// childOf returns the table generated together with driver d, or -1.
func childOf(d Table) Table {
	switch d {
	case Part:
		return PartSupp
	case Orders:
		return Lineitem
	}
	return -1
}

// groupGen generates rows of one driver table (and its child) from any
// starting row.
type groupGen struct {
	driver Table
	pg     *partGen
	sg     *suppGen
	cg     *custGen
	og     *orderGen
	code   *codeGen
}

// newGroupGen positions the streams of driver's group at row start
// (1-based).
func newGroupGen(sc Scale, pool []byte, driver Table, start int64) *groupGen {
	g := &groupGen{driver: driver}
	switch driver {
	case Part:
		g.pg = newPartGen(sc, pool, start)
	case Supplier:
		g.sg = newSuppGen(pool, start)
	case Customer:
		g.cg = newCustGen(pool, start)
	case Orders:
		g.og = newOrderGen(sc, pool, start)
	case Nation:
		g.code = &codeGen{pool: pool, cmnt: newStream(sdNCmnt, start)}
	case Region:
		g.code = &codeGen{pool: pool, cmnt: newStream(sdRCmnt, start)}
	default:
		panic("tpch: newGroupGen of a child table")
	}
	return g
}

// rows generates driver rows [start, start+n) into a (the driver's batch)
// and c (the child's batch); either may be nil. Rows must be requested in
// sequence from the start given to newGroupGen.
func (g *groupGen) rows(start, n int64, a, c *batch) {
	end := start + n
	switch g.driver {
	case Part:
		for i := start; i < end; i++ {
			g.pg.row(i, a, c)
		}
	case Supplier:
		for i := start; i < end; i++ {
			g.sg.row(i, a)
		}
	case Customer:
		for i := start; i < end; i++ {
			g.cg.row(i, a)
		}
	case Orders:
		for i := start; i < end; i++ {
			g.og.row(i, a, c)
		}
	case Nation:
		for i := start; i < end; i++ {
			g.code.nation(i, a)
		}
	case Region:
		for i := start; i < end; i++ {
			g.code.region(i, a)
		}
	}
}

// batchDriverRows is how many driver rows go into one batch: big enough to
// amortize per-batch work, small enough to stay in cache-friendly sizes
// (8192 orders make about 32K lineitem rows, ~4 MB of .tbl text).
const batchDriverRows = 8192

// generateRange generates driver rows [start, start+count) of the group of
// driver, calling emit for each non-empty batch of a wanted table. Batches
// are reused: emit must not keep them.
func generateRange(ctx context.Context, sc Scale, driver Table, start, count int64, wantDriver, wantChild bool, emit func(*batch) error) error {
	pool := textPool()
	g := newGroupGen(sc, pool, driver, start)
	var a, c *batch
	if wantDriver {
		a = newBatch(driver, batchDriverRows)
	}
	if wantChild {
		c = newBatch(childOf(driver), batchDriverRows*4)
	}
	for done := int64(0); done < count; {
		if err := ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		n := min(int64(batchDriverRows), count-done)
		if a != nil {
			a.reset()
		}
		if c != nil {
			c.reset()
		}
		g.rows(start+done, n, a, c)
		done += n
		for _, b := range [2]*batch{a, c} {
			if b != nil && b.n > 0 {
				if err := emit(b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// WriteTbl streams table t at scale factor sf to w in dbgen's .tbl format
// (byte-identical to `dbgen -s SF`), single-threaded, and returns the
// number of rows written. It is the simple streaming form used by tests;
// Generate writes files in parallel.
func WriteTbl(ctx context.Context, w io.Writer, t Table, sf float64) (int64, error) {
	sc, err := NewScale(sf)
	if err != nil {
		return 0, err
	}
	if t < 0 || t >= numTables {
		return 0, nferr.Queryf("unknown TPC-H table %d", int(t))
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var rows int64
	var buf []byte
	d := driverOf(t)
	err = generateRange(ctx, sc, d, 1, sc.Rows(d), t == d, t != d, func(b *batch) error {
		rows += int64(b.n)
		buf = appendTbl(buf[:0], b)
		_, err := bw.Write(buf)
		return err
	})
	if err != nil {
		return rows, nferr.Wrap(nferr.KindIO, err, "writing %s", t)
	}
	if err := bw.Flush(); err != nil {
		return rows, nferr.IOf("writing %s: %w", t, err)
	}
	return rows, nil
}

// Records streams table t at scale factor sf as Arrow record batches of
// about batchRows rows (schema ArrowSchema(t)), generated in order on the
// calling goroutine. fn owns each record only during the call: it must
// Retain what it keeps. Rows [first, first+count) of the driver table are
// generated (count <= 0: to the end); for partsupp and lineitem the range
// counts parts and orders.
func Records(ctx context.Context, t Table, sf float64, mem memory.Allocator, first, count int64, fn func(arrow.RecordBatch) error) error {
	sc, err := NewScale(sf)
	if err != nil {
		return err
	}
	if t < 0 || t >= numTables {
		return nferr.Queryf("unknown TPC-H table %d", int(t))
	}
	d := driverOf(t)
	total := sc.Rows(d)
	if first < 1 {
		first = 1
	}
	if first > total {
		return nil
	}
	if count <= 0 || first+count-1 > total {
		count = total - first + 1
	}
	schema := ArrowSchema(t)
	return generateRange(ctx, sc, d, first, count, t == d, t != d, func(b *batch) error {
		rec := b.toRecord(mem, schema)
		defer rec.Release()
		return fn(rec)
	})
}
