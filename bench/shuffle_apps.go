package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
)

// The workloads of `nicflow bench shuffle`, after Buddy's applications
// (which come from the Conveyors benchmarks) plus the engine's own pattern:
//
//   - histogram: random increments to a distributed table. Each update is
//     an 8-byte message to the rank owning the slot; the receiver does one
//     increment (Buddy's "balanced" workload).
//   - transpose: sparse matrix transpose. Each rank owns a block of rows in
//     CSR form; it walks them and sends every nonzero (i, j) to the owner of
//     row j of the transpose, which rebuilds its rows with a counting sort
//     (Buddy's "host-dominated" workload: real local work per message).
//   - repartition: hash repartition of lineitem-shaped Arrow batches, as the
//     engine's exchanges do: partition each batch by orderkey, encode one IPC
//     payload per destination, decode on arrival.
//
// Every rank is both a sender and a receiver and uses the runtime library's
// non-blocking calls: TrySend, and when that fails, drain the inbox.

// appParams sizes the workloads (per rank).
type appParams struct {
	// Histogram: table slots per rank and updates sent per rank.
	TableSize int `json:"table_size"`
	Updates   int `json:"updates"`
	// Transpose: rows per rank and nonzeros per row.
	Rows      int `json:"rows"`
	RowDegree int `json:"row_degree"`
	// Repartition: batches per rank and rows per batch.
	Batches   int `json:"batches"`
	BatchRows int `json:"batch_rows"`
}

// appResult is what one node reports for its ranks.
type appResult struct {
	Msgs      int64   `json:"msgs"`
	Bytes     int64   `json:"bytes"`
	RecvMsgs  int64   `json:"recv_msgs"`
	CheckA    uint64  `json:"check_a"` // workload checksums, summed over nodes
	CheckB    uint64  `json:"check_b"`
	ElapsedS  float64 `json:"elapsed_s"`
	WorkerCPU float64 `json:"worker_cpu_s"`
}

// rankApp is one rank's workload: prepare (untimed) then run.
type rankApp interface {
	prepare(rank, ranks int, seed uint64) error
	run(ctx context.Context, c *rankComm) (appResult, error)
}

// rankComm is a rank's access to the shuffle layer: the endpoint of the
// run's first channel, opened before the clock starts, and a way to open
// the channel of a later round (SSSP runs one channel per round).
type rankComm struct {
	ep   *shuffle.Endpoint
	open func(round int) (*shuffle.Endpoint, error)
}

func newRankApp(name string, p appParams) (rankApp, error) {
	switch name {
	case "histogram":
		return &histogramApp{p: p}, nil
	case "transpose":
		return &transposeApp{p: p}, nil
	case "repartition":
		return &repartitionApp{p: p}, nil
	case "sssp":
		return &ssspApp{p: p}, nil
	}
	return nil, nferr.Queryf("unknown shuffle benchmark app %q: want histogram, transpose, repartition or sssp", name)
}

// conveyor sends one message, draining the inbox through recv while all
// buffers are in flight (Buddy's non-blocking runtime: never block on a
// send while messages wait to be consumed).
func conveyor(ctx context.Context, ep *shuffle.Endpoint, dst int, p []byte, recv func([]byte) error) error {
	for {
		ok, err := ep.TrySend(dst, p)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := drain(ep, recv); err != nil {
			return err
		}
		in, bufs := ep.Wait()
		select {
		case <-in:
		case <-bufs:
		case <-ctx.Done():
			return nferr.With(nferr.KindCanceled, ctx.Err())
		// A bounded wait: a wake-up consumed by drain must not stall us.
		case <-time.After(time.Millisecond):
		}
	}
}

// drain consumes every message ready in the inbox.
func drain(ep *shuffle.Endpoint, recv func([]byte) error) error {
	for {
		p, ok, err := ep.TryRecv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := recv(p); err != nil {
			return err
		}
	}
}

// finish ends the rank's stream and receives until every sender is done.
func finish(ctx context.Context, ep *shuffle.Endpoint, recv func([]byte) error) error {
	if err := ep.CloseSend(); err != nil {
		return err
	}
	for {
		p, err := ep.Recv(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := recv(p); err != nil {
			return err
		}
	}
}

// xorshift is a tiny deterministic generator for the hot loops.
type xorshift uint64

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}

func seedFor(seed uint64, rank int) xorshift {
	return xorshift(seed*0x9E3779B97F4A7C15 + uint64(rank)*0xBF58476D1CE4E5B9 + 1)
}

// --- histogram ---

type histogramApp struct {
	p     appParams
	rank  int
	ranks int
	rng   xorshift
	table []int64
}

func (h *histogramApp) prepare(rank, ranks int, seed uint64) error {
	h.rank, h.ranks, h.rng = rank, ranks, seedFor(seed, rank)
	h.table = make([]int64, h.p.TableSize)
	return nil
}

func (h *histogramApp) run(ctx context.Context, c *rankComm) (appResult, error) {
	ep := c.ep
	var res appResult
	ts := uint64(h.p.TableSize)
	global := ts * uint64(h.ranks)
	recv := func(p []byte) error {
		if len(p) != 8 {
			return nferr.Dataf("histogram: message of %d bytes", len(p))
		}
		idx := binary.LittleEndian.Uint64(p)
		if idx >= ts {
			return nferr.Dataf("histogram: slot %d out of range", idx)
		}
		h.table[idx]++
		res.RecvMsgs++
		return nil
	}
	var msg [8]byte
	for i := 0; i < h.p.Updates; i++ {
		g := h.rng.next() % global
		binary.LittleEndian.PutUint64(msg[:], g%ts)
		if err := conveyor(ctx, ep, int(g/ts), msg[:], recv); err != nil {
			return res, err
		}
	}
	if err := finish(ctx, ep, recv); err != nil {
		return res, err
	}
	res.Msgs = int64(h.p.Updates)
	res.Bytes = res.Msgs * 8
	for _, v := range h.table {
		res.CheckA += uint64(v)
	}
	return res, nil
}

// --- transpose ---

type transposeApp struct {
	p     appParams
	rank  int
	ranks int
	// CSR of this rank's rows.
	rowPtr []int32
	cols   []int32
	// Received nonzeros (row of the transpose, column) and the rebuilt CSR.
	inRow, inCol []int32
}

func (t *transposeApp) prepare(rank, ranks int, seed uint64) error {
	t.rank, t.ranks = rank, ranks
	n := t.p.Rows * ranks
	if n >= 1<<31 {
		return nferr.Queryf("transpose: %d rows exceed the 32-bit indexes", n)
	}
	rng := seedFor(seed, rank)
	t.rowPtr = make([]int32, t.p.Rows+1)
	t.cols = make([]int32, 0, t.p.Rows*t.p.RowDegree)
	for i := 0; i < t.p.Rows; i++ {
		for d := 0; d < t.p.RowDegree; d++ {
			t.cols = append(t.cols, int32(rng.next()%uint64(n)))
		}
		t.rowPtr[i+1] = int32(len(t.cols))
	}
	return nil
}

func (t *transposeApp) run(ctx context.Context, c *rankComm) (appResult, error) {
	ep := c.ep
	var res appResult
	rows := int32(t.p.Rows)
	base := int32(t.rank) * rows
	n := uint64(t.p.Rows) * uint64(t.ranks)
	recv := func(p []byte) error {
		if len(p) != 8 {
			return nferr.Dataf("transpose: message of %d bytes", len(p))
		}
		j := int32(binary.LittleEndian.Uint32(p[0:4])) // row of the transpose
		i := int32(binary.LittleEndian.Uint32(p[4:8])) // its column
		if j < base || j >= base+rows {
			return nferr.Dataf("transpose: row %d is not on rank %d", j, t.rank)
		}
		t.inRow = append(t.inRow, j-base)
		t.inCol = append(t.inCol, i)
		res.RecvMsgs++
		return nil
	}
	var msg [8]byte
	for r := int32(0); r < rows; r++ {
		i := base + r
		for k := t.rowPtr[r]; k < t.rowPtr[r+1]; k++ {
			j := t.cols[k]
			binary.LittleEndian.PutUint32(msg[0:4], uint32(j))
			binary.LittleEndian.PutUint32(msg[4:8], uint32(i))
			// Checksum over the sent nonzeros; the receivers' must match.
			res.CheckA += uint64(i)*n + uint64(j)
			if err := conveyor(ctx, ep, int(j/rows), msg[:], recv); err != nil {
				return res, err
			}
		}
	}
	if err := finish(ctx, ep, recv); err != nil {
		return res, err
	}
	// Local work on arrival: rebuild the transposed rows with a counting
	// sort into CSR.
	ptr := make([]int32, t.p.Rows+1)
	for _, r := range t.inRow {
		ptr[r+1]++
	}
	for r := 0; r < t.p.Rows; r++ {
		ptr[r+1] += ptr[r]
	}
	out := make([]int32, len(t.inCol))
	next := append([]int32(nil), ptr[:t.p.Rows]...)
	for k, r := range t.inRow {
		out[next[r]] = t.inCol[k]
		next[r]++
	}
	for r := 0; r < t.p.Rows; r++ {
		j := uint64(base) + uint64(r)
		for k := ptr[r]; k < ptr[r+1]; k++ {
			res.CheckB += uint64(out[k])*n + j
		}
	}
	res.Msgs = int64(len(t.cols))
	res.Bytes = res.Msgs * 8
	return res, nil
}

// --- repartition ---

// lineitemSchema is lineitem-shaped: the same column types as TPC-H's
// lineitem (money as decimal64), synthetic values.
var lineitemSchema = arrow.NewSchema([]arrow.Field{
	{Name: "l_orderkey", Type: arrow.PrimitiveTypes.Int64},
	{Name: "l_partkey", Type: arrow.PrimitiveTypes.Int64},
	{Name: "l_suppkey", Type: arrow.PrimitiveTypes.Int64},
	{Name: "l_linenumber", Type: arrow.PrimitiveTypes.Int32},
	{Name: "l_quantity", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_extendedprice", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_discount", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_tax", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_returnflag", Type: arrow.BinaryTypes.String},
	{Name: "l_linestatus", Type: arrow.BinaryTypes.String},
	{Name: "l_shipdate", Type: arrow.FixedWidthTypes.Date32},
	{Name: "l_commitdate", Type: arrow.FixedWidthTypes.Date32},
	{Name: "l_receiptdate", Type: arrow.FixedWidthTypes.Date32},
	{Name: "l_shipinstruct", Type: arrow.BinaryTypes.String},
	{Name: "l_shipmode", Type: arrow.BinaryTypes.String},
	{Name: "l_comment", Type: arrow.BinaryTypes.String},
}, nil)

var (
	liFlags    = []string{"A", "N", "R"}
	liStatus   = []string{"F", "O"}
	liInstruct = []string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	liModes    = []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
	liWords    = []string{"carefully", "final", "deposits", "sleep", "furiously", "regular", "accounts", "boost", "quickly", "ironic", "packages", "haggle", "blithely", "pending", "requests", "nag"}
)

// genLineitem builds one batch of n synthetic rows; orderkeys start at
// key0 and repeat 1-7 times like lineitem's.
func genLineitem(mem memory.Allocator, rng *xorshift, key0 int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, lineitemSchema)
	defer b.Release()
	b.Reserve(n)
	ok := b.Field(0).(*array.Int64Builder)
	pk := b.Field(1).(*array.Int64Builder)
	sk := b.Field(2).(*array.Int64Builder)
	ln := b.Field(3).(*array.Int32Builder)
	qty := b.Field(4).(*array.Decimal64Builder)
	price := b.Field(5).(*array.Decimal64Builder)
	disc := b.Field(6).(*array.Decimal64Builder)
	tax := b.Field(7).(*array.Decimal64Builder)
	rf := b.Field(8).(*array.StringBuilder)
	ls := b.Field(9).(*array.StringBuilder)
	sd := b.Field(10).(*array.Date32Builder)
	cd := b.Field(11).(*array.Date32Builder)
	rd := b.Field(12).(*array.Date32Builder)
	si := b.Field(13).(*array.StringBuilder)
	sm := b.Field(14).(*array.StringBuilder)
	cm := b.Field(15).(*array.StringBuilder)
	key, line := key0, int32(1)
	lines := int32(1 + rng.next()%7)
	var comment []byte
	for i := 0; i < n; i++ {
		if line > lines {
			key++
			line, lines = 1, int32(1+rng.next()%7)
		}
		r := rng.next()
		ok.Append(key)
		pk.Append(int64(r%200000) + 1)
		sk.Append(int64(r>>20%10000) + 1)
		ln.Append(line)
		q := int64(r>>34%50) + 1
		qty.Append(decimal.Decimal64(q * 100))
		price.Append(decimal.Decimal64(q * int64(90000+r>>40%20000)))
		disc.Append(decimal.Decimal64(r >> 44 % 11))
		tax.Append(decimal.Decimal64(r >> 48 % 9))
		rf.Append(liFlags[r>>52%3])
		ls.Append(liStatus[r>>55%2])
		day := int32(8036 + r>>13%2526) // 1992-01-02 .. 1998-12-01
		sd.Append(arrow.Date32(day))
		cd.Append(arrow.Date32(day + int32(r>>9%60) - 30))
		rd.Append(arrow.Date32(day + int32(r>>5%30) + 1))
		si.Append(liInstruct[r>>57%4])
		sm.Append(liModes[r>>59%7])
		comment = comment[:0]
		for w, nw := 0, 2+int(r>>3%5); w < nw; w++ {
			if w > 0 {
				comment = append(comment, ' ')
			}
			comment = append(comment, liWords[rng.next()%uint64(len(liWords))]...)
		}
		cm.BinaryBuilder.Append(comment)
		line++
	}
	return b.NewRecordBatch()
}

type repartitionApp struct {
	p       appParams
	rank    int
	ranks   int
	mem     memory.Allocator
	batches []arrow.RecordBatch
	// per destination: the rows going there, and their builder
	parts [][]int32
	bld   []*array.RecordBuilder
}

func (a *repartitionApp) prepare(rank, ranks int, seed uint64) error {
	a.rank, a.ranks = rank, ranks
	a.mem = memory.NewGoAllocator()
	rng := seedFor(seed, rank)
	key := int64(rank) << 40
	for i := 0; i < a.p.Batches; i++ {
		b := genLineitem(a.mem, &rng, key, a.p.BatchRows)
		key += int64(a.p.BatchRows)
		a.batches = append(a.batches, b)
	}
	a.parts = make([][]int32, ranks)
	a.bld = make([]*array.RecordBuilder, ranks)
	for d := range a.bld {
		a.bld[d] = array.NewRecordBuilder(a.mem, lineitemSchema)
	}
	return nil
}

// partitionOf hashes an orderkey to a destination (a multiplicative hash:
// consecutive keys spread evenly).
func partitionOf(key int64, n int) int {
	hi, _ := bits.Mul64(uint64(key)*0x9E3779B97F4A7C15, uint64(n))
	return int(hi)
}

func (a *repartitionApp) run(ctx context.Context, c *rankComm) (appResult, error) {
	ep := c.ep
	var res appResult
	enc, err := shuffle.NewBatchEncoder(lineitemSchema, a.mem)
	if err != nil {
		return res, err
	}
	dec, err := shuffle.NewBatchDecoder(lineitemSchema, a.mem)
	if err != nil {
		return res, err
	}
	defer dec.Close()
	recv := func(p []byte) error {
		rec, err := dec.Decode(p)
		if err != nil {
			return err
		}
		keys := rec.Column(0).(*array.Int64).Int64Values()
		for _, k := range keys {
			if partitionOf(k, a.ranks) != a.rank {
				rec.Release()
				return nferr.Dataf("repartition: orderkey %d reached rank %d", k, a.rank)
			}
			res.CheckB += uint64(k)
		}
		res.RecvMsgs += int64(len(keys))
		rec.Release()
		return nil
	}
	for _, b := range a.batches {
		keys := b.Column(0).(*array.Int64).Int64Values()
		for d := range a.parts {
			a.parts[d] = a.parts[d][:0]
		}
		for i, k := range keys {
			d := partitionOf(k, a.ranks)
			a.parts[d] = append(a.parts[d], int32(i))
			res.CheckA += uint64(k)
		}
		for d, rows := range a.parts {
			if len(rows) == 0 {
				continue
			}
			part := takeRows(a.bld[d], b, rows)
			p, err := enc.Encode(part)
			part.Release()
			if err != nil {
				return res, err
			}
			res.Msgs++
			res.Bytes += int64(len(p))
			if err := conveyor(ctx, ep, d, p, recv); err != nil {
				return res, err
			}
		}
		if err := ctx.Err(); err != nil {
			return res, nferr.With(nferr.KindCanceled, err)
		}
	}
	if err := finish(ctx, ep, recv); err != nil {
		return res, err
	}
	for _, b := range a.batches {
		b.Release()
	}
	for _, b := range a.bld {
		b.Release()
	}
	a.batches = nil
	return res, nil
}

// takeRows copies the given rows of b into a new batch. The column types
// are dispatched once per column, then each column is a typed loop.
func takeRows(bld *array.RecordBuilder, b arrow.RecordBatch, rows []int32) arrow.RecordBatch {
	bld.Reserve(len(rows))
	for c := 0; c < int(b.NumCols()); c++ {
		switch col := b.Column(c).(type) {
		case *array.Int64:
			v := col.Int64Values()
			fb := bld.Field(c).(*array.Int64Builder)
			for _, r := range rows {
				fb.UnsafeAppend(v[r])
			}
		case *array.Int32:
			v := col.Int32Values()
			fb := bld.Field(c).(*array.Int32Builder)
			for _, r := range rows {
				fb.UnsafeAppend(v[r])
			}
		case *array.Decimal64:
			fb := bld.Field(c).(*array.Decimal64Builder)
			for _, r := range rows {
				fb.UnsafeAppend(col.Value(int(r)))
			}
		case *array.Date32:
			v := col.Date32Values()
			fb := bld.Field(c).(*array.Date32Builder)
			for _, r := range rows {
				fb.UnsafeAppend(v[r])
			}
		case *array.String:
			fb := bld.Field(c).(*array.StringBuilder)
			for _, r := range rows {
				fb.Append(col.Value(int(r)))
			}
		default:
			panic(fmt.Sprintf("takeRows: unexpected column type %T", col))
		}
	}
	return bld.NewRecordBatch()
}
