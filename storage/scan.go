package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/nicflow/nicflow/internal/nferr"
)

// ScanSpec says what a scan reads. It is plain data: it serializes to JSON
// (Marshal/UnmarshalScanSpec) and travels in Flight tickets to storage
// nodes.
type ScanSpec struct {
	// Table is "name" or "schema.name".
	Table string `json:"table"`
	// Files, when non-empty, restricts the scan to these files (paths as
	// in File.Path) and, per file, to some row groups, so that a planner
	// can split one table between pipelines or nodes.
	Files []FileRange `json:"files,omitempty"`
	// Columns is the projection, in output order. Empty means no columns:
	// batches then carry only a row count (count(*)).
	Columns []string `json:"columns"`
	// Filter is applied at the data; rows pass when it is TRUE. Nil: all.
	Filter *Predicate `json:"filter,omitempty"`
	// BatchSize bounds the rows of each produced record (default 8192).
	BatchSize int `json:"batch_size,omitempty"`
	// Codec asks a storage node to compress the batches it sends for this
	// scan over Flight (Arrow IPC body compression): "" or "none", "lz4"
	// or "zstd". Readers decompress whatever they receive; a local scan
	// ignores it.
	Codec string `json:"codec,omitempty"`
	// Selectivity is the planner's estimate of the fraction of rows
	// Filter keeps (0: unknown). A client reading a storage node's files
	// lets the node filter (ClientOptions.ScanMode auto) when it is small
	// enough that filtered batches cost the network less than the stored
	// bytes.
	Selectivity float64 `json:"sel,omitempty"`
}

// ScanCodecs are the values of ScanSpec.Codec.
var ScanCodecs = []string{"none", "lz4", "zstd"}

// CheckScanCodec validates a scan codec name ("" is none).
func CheckScanCodec(c string) error {
	if c == "" || slices.Contains(ScanCodecs, c) {
		return nil
	}
	return nferr.Queryf("scan codec %q: want none, lz4 or zstd", c)
}

// FileRange selects one file and optionally some of its row groups (nil:
// all row groups).
type FileRange struct {
	Path      string `json:"path"`
	RowGroups []int  `json:"rowgroups,omitempty"`
}

// AllColumns returns the spec with every column of t projected.
func (s ScanSpec) AllColumns(t *Table) ScanSpec {
	s.Columns = make([]string, len(t.Columns))
	for i, c := range t.Columns {
		s.Columns[i] = c.Name
	}
	return s
}

// ticketMagic prefixes encoded scan specs so that a storage node rejects
// other tickets with a clear error.
const ticketMagic = "nfscan1:"

// maxSpecBytes bounds a decoded ticket (IN lists of a few thousand values
// fit easily).
const maxSpecBytes = 4 << 20

// MarshalScanSpec encodes a spec (a Flight ticket).
func MarshalScanSpec(s ScanSpec) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nferr.Internalf("encoding scan spec: %v", err)
	}
	return append([]byte(ticketMagic), b...), nil
}

// UnmarshalScanSpec decodes a spec from untrusted bytes; errors are
// KindData and never panics.
func UnmarshalScanSpec(b []byte) (ScanSpec, error) {
	var s ScanSpec
	if len(b) > maxSpecBytes {
		return s, nferr.Dataf("scan ticket of %d bytes exceeds the limit of %d", len(b), maxSpecBytes)
	}
	if !strings.HasPrefix(string(b), ticketMagic) {
		return s, nferr.Dataf("not a nicflow scan ticket (missing %q prefix)", ticketMagic)
	}
	dec := json.NewDecoder(strings.NewReader(string(b[len(ticketMagic):])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return ScanSpec{}, nferr.Dataf("malformed scan ticket: %v", err)
	}
	if s.Table == "" {
		return ScanSpec{}, nferr.Dataf("malformed scan ticket: no table")
	}
	if s.Filter != nil {
		if err := s.Filter.check(0); err != nil {
			return ScanSpec{}, err
		}
	}
	if s.BatchSize < 0 || s.BatchSize > 1<<20 {
		return ScanSpec{}, nferr.Dataf("malformed scan ticket: batch size %d out of range", s.BatchSize)
	}
	if err := CheckScanCodec(s.Codec); err != nil {
		return ScanSpec{}, nferr.Dataf("malformed scan ticket: %v", err)
	}
	for _, f := range s.Files {
		for _, rg := range f.RowGroups {
			if rg < 0 {
				return ScanSpec{}, nferr.Dataf("malformed scan ticket: negative row group %d", rg)
			}
		}
	}
	return s, nil
}

// ScanOptions are the local execution knobs of a scan (not part of the
// spec: each node picks its own).
type ScanOptions struct {
	// Alloc allocates the records the scan returns (default: Go allocator).
	Alloc memory.Allocator
	// Parallelism is the number of goroutines decoding row groups (default
	// 1: the caller's goroutine does all the work; planners that run one
	// scan per core keep it at 1).
	Parallelism int
	// KeyFilters are join key filters (keyfilter.go) on columns of the
	// table: rows whose value cannot match drop before they are
	// materialized, and row groups whose statistics say none can match are
	// skipped. Only the local Scanner applies them (KeyFilterApplier): a
	// storage node's scan ignores them, and exec.Scan applies them to the
	// records it receives.
	KeyFilters []ScanKeyFilter
}

// ScanKeyFilter applies Filter to table column Column. exec.Scan waits up
// to Wait for the filter to be published before it starts reading (a
// filter from another stage's join, which the scan's task cannot see
// coming; bounded, so that a late filter costs at most Wait).
type ScanKeyFilter struct {
	Column string
	Filter *KeyFilter
	Wait   time.Duration
}

// ScanStats count what a scan did. BytesRead counts the compressed bytes
// of the column chunks read.
type ScanStats struct {
	RowGroupsTotal  int64 `json:"row_groups_total"`
	RowGroupsPruned int64 `json:"row_groups_pruned"`
	RowsRead        int64 `json:"rows_read"`
	RowsReturned    int64 `json:"rows_returned"`
	BytesRead       int64 `json:"bytes_read"`
	// LocalScans counts the storage-node scans a client ran itself on the
	// node's files (short-circuit local reads) instead of over Flight.
	LocalScans int64 `json:"local_scans,omitempty"`
	// ByteScans counts the storage-node scans a client decoded itself from
	// the Parquet bytes the node served (remotebytes.go).
	ByteScans int64 `json:"byte_scans,omitempty"`
	// WireBytes counts what crossed the network from storage nodes for
	// the scan: Flight payloads of batches, or the stored bytes.
	WireBytes int64 `json:"wire_bytes,omitempty"`
}

func (s *ScanStats) add(o *ScanStats) {
	atomic.AddInt64(&s.RowGroupsTotal, o.RowGroupsTotal)
	atomic.AddInt64(&s.RowGroupsPruned, o.RowGroupsPruned)
	atomic.AddInt64(&s.RowsRead, o.RowsRead)
	atomic.AddInt64(&s.RowsReturned, o.RowsReturned)
	atomic.AddInt64(&s.BytesRead, o.BytesRead)
	atomic.AddInt64(&s.LocalScans, o.LocalScans)
	atomic.AddInt64(&s.ByteScans, o.ByteScans)
	atomic.AddInt64(&s.WireBytes, o.WireBytes)
}

func (s *ScanStats) load() ScanStats {
	return ScanStats{
		RowGroupsTotal:  atomic.LoadInt64(&s.RowGroupsTotal),
		RowGroupsPruned: atomic.LoadInt64(&s.RowGroupsPruned),
		RowsRead:        atomic.LoadInt64(&s.RowsRead),
		LocalScans:      atomic.LoadInt64(&s.LocalScans),
		RowsReturned:    atomic.LoadInt64(&s.RowsReturned),
		BytesRead:       atomic.LoadInt64(&s.BytesRead),
		ByteScans:       atomic.LoadInt64(&s.ByteScans),
		WireBytes:       atomic.LoadInt64(&s.WireBytes),
	}
}

// RecordIterator is a stream of records: local scans, remote scans and
// loads all produce one.
type RecordIterator interface {
	// Schema of every record.
	Schema() *arrow.Schema
	// Next returns the next record, or (nil, nil) at the end. The caller
	// owns the record and must Release it.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Stats so far.
	Stats() ScanStats
	// Close stops the scan and releases everything. Idempotent.
	Close() error
}

// task is one row group to read.
type task struct {
	file *File
	rg   int
}

// Scanner reads a table with projection, row-group pruning and a pushed
// down filter. Construction plans the scan (prunes with catalog statistics,
// without opening files); Next does the I/O.
type Scanner struct {
	files   *fileSet
	table   *Table
	spec    ScanSpec
	opts    ScanOptions
	out     *arrow.Schema
	outCols []int // vector index of each output column
	need    []int // table column of each vector
	needT   []arrow.DataType
	nFilter int // vectors [0, nFilter) are filter columns
	filter  *cnode
	kf      []scanKeyFilter
	tasks   []task
	batch   int
	stats   ScanStats

	// sequential mode
	w    *worker
	next int

	// parallel mode
	started bool
	cancel  context.CancelFunc
	ch      chan arrow.RecordBatch
	errc    chan error
	wg      sync.WaitGroup
	taskIdx atomic.Int64
	err     error
	closed  bool
}

// NewScanner plans a scan of spec over db's catalog.
func (db *DB) NewScanner(spec ScanSpec, opts ScanOptions) (*Scanner, error) {
	t, err := db.Table(spec.Table)
	if err != nil {
		return nil, err
	}
	return db.newScanner(t, spec, opts)
}

func (db *DB) newScanner(t *Table, spec ScanSpec, opts ScanOptions) (*Scanner, error) {
	if t.root != nil {
		// A file table under a file access root: its files open
		// through the root (files_root.go).
		return newScanner(t.root.fs, t, spec, opts)
	}
	return newScanner(db.fs, t, spec, opts)
}

// newScanner plans a scan of t's files in fs.
func newScanner(fs *fileSet, t *Table, spec ScanSpec, opts ScanOptions) (*Scanner, error) {
	if opts.Alloc == nil {
		opts.Alloc = memory.DefaultAllocator
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 1
	}
	if opts.Parallelism > 4*runtime.GOMAXPROCS(0) {
		opts.Parallelism = 4 * runtime.GOMAXPROCS(0)
	}
	sch, err := ArrowSchema(t.Columns)
	if err != nil {
		return nil, err
	}
	s := &Scanner{files: fs, table: t, spec: spec, opts: opts, batch: spec.BatchSize}
	if s.batch <= 0 {
		s.batch = 8192 // exec.DefaultBatchSize (storage does not import exec)
	}
	vecOf := map[int]int{}
	addNeed := func(tc int) int {
		if v, ok := vecOf[tc]; ok {
			return v
		}
		vecOf[tc] = len(s.need)
		s.need = append(s.need, tc)
		s.needT = append(s.needT, sch.Field(tc).Type)
		return len(s.need) - 1
	}
	// Filter columns first: they are decoded before the others.
	if spec.Filter != nil {
		for _, c := range spec.Filter.Columns() {
			tc := t.ColumnIndex(c)
			if tc < 0 {
				return nil, nferr.Queryf("scan of %s: filter %s: unknown column %q", t.QualifiedName(), spec.Filter, c)
			}
			addNeed(tc)
		}
		s.nFilter = len(s.need)
		s.filter, err = compilePredicate(spec.Filter, sch, func(name string) (int, bool) {
			v, ok := vecOf[t.ColumnIndex(name)]
			return v, ok
		}, 0)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindQuery, err, "scan of %s", t.QualifiedName())
		}
	}
	fields := make([]arrow.Field, 0, len(spec.Columns))
	for _, c := range spec.Columns {
		tc := t.ColumnIndex(c)
		if tc < 0 {
			return nil, nferr.Queryf("scan of %s: unknown column %q", t.QualifiedName(), c)
		}
		s.outCols = append(s.outCols, addNeed(tc))
		fields = append(fields, sch.Field(tc))
	}
	s.out = arrow.NewSchema(fields, nil)
	for _, k := range opts.KeyFilters {
		tc := t.ColumnIndex(k.Column)
		if tc < 0 {
			return nil, nferr.Internalf("scan of %s: key filter on unknown column %q", t.QualifiedName(), k.Column)
		}
		s.kf = append(s.kf, scanKeyFilter{vec: addNeed(tc), tcol: tc, f: k.Filter})
	}

	// Plan: select files and row groups, prune with statistics.
	var want map[string]map[int]bool
	if len(spec.Files) > 0 {
		want = map[string]map[int]bool{}
		known := map[string]bool{}
		for _, f := range t.Files {
			known[f.Path] = true
		}
		for _, fr := range spec.Files {
			if !known[fr.Path] {
				return nil, nferr.Queryf("scan of %s: file %s is not part of the table", t.QualifiedName(), fr.Path)
			}
			m := want[fr.Path]
			if m == nil {
				m = map[int]bool{}
				want[fr.Path] = m
			}
			if fr.RowGroups == nil {
				m[-1] = true
			}
			for _, rg := range fr.RowGroups {
				m[rg] = true
			}
		}
	}
	for _, f := range t.Files {
		var m map[int]bool
		if want != nil {
			if m = want[f.Path]; m == nil {
				continue
			}
		}
		for rg := range f.RowGroups {
			if m != nil && !m[-1] && !m[rg] {
				continue
			}
			s.stats.RowGroupsTotal++
			if !f.RowGroups[rg].mayHold(s.filter) {
				s.stats.RowGroupsPruned++
				continue
			}
			s.tasks = append(s.tasks, task{file: f, rg: rg})
		}
	}
	if want != nil {
		for _, fr := range spec.Files {
			for _, rg := range fr.RowGroups {
				for _, f := range t.Files {
					if f.Path == fr.Path && rg >= len(f.RowGroups) {
						return nil, nferr.Queryf("scan of %s: file %s has no row group %d", t.QualifiedName(), fr.Path, rg)
					}
				}
			}
		}
	}
	return s, nil
}

// Schema is the schema of the records Next returns.
func (s *Scanner) Schema() *arrow.Schema { return s.out }

// Table is the table snapshot the scan reads.
func (s *Scanner) Table() *Table { return s.table }

// Stats returns the counters so far.
func (s *Scanner) Stats() ScanStats { return s.stats.load() }

// Tasks is the number of row groups left to read after pruning.
func (s *Scanner) Tasks() int { return len(s.tasks) }

// Next returns the next record (owned by the caller), or nil at the end.
func (s *Scanner) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.closed {
		return nil, nferr.Internalf("scan of %s: Next after Close", s.table.QualifiedName())
	}
	if s.opts.Parallelism <= 1 || len(s.tasks) <= 1 {
		return s.nextSequential(ctx)
	}
	if !s.started {
		s.start(ctx)
	}
	select {
	case rec, ok := <-s.ch:
		if ok {
			return rec, nil
		}
		select {
		case err := <-s.errc:
			s.err = err
			return nil, err
		default:
		}
		return nil, nil
	case <-ctx.Done():
		s.err = nferr.With(nferr.KindCanceled, ctx.Err())
		return nil, s.err
	}
}

func (s *Scanner) nextSequential(ctx context.Context) (arrow.RecordBatch, error) {
	if s.w == nil {
		s.w = newWorker(s)
	}
	for {
		if err := ctx.Err(); err != nil {
			s.err = nferr.With(nferr.KindCanceled, err)
			return nil, s.err
		}
		if s.w.active {
			rec, err := s.w.nextChunk(ctx)
			if err != nil {
				s.err = err
				return nil, err
			}
			if rec != nil {
				return rec, nil
			}
		}
		if s.next >= len(s.tasks) {
			s.w.closeFile()
			return nil, nil
		}
		t := s.tasks[s.next]
		s.next++
		if err := s.w.begin(t); err != nil {
			s.err = err
			return nil, err
		}
	}
}

func (s *Scanner) start(ctx context.Context) {
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	p := min(s.opts.Parallelism, len(s.tasks))
	s.tasks = interleaveByFile(s.tasks)
	// NB: 2 records per worker in flight keep decoders busy while the
	// consumer works, and bound memory to about 3*p batches.
	s.ch = make(chan arrow.RecordBatch, 2*p)
	s.errc = make(chan error, p)
	s.wg.Add(p)
	for i := 0; i < p; i++ {
		go func() {
			defer s.wg.Done()
			w := newWorker(s)
			defer w.release()
			for {
				i := int(s.taskIdx.Add(1) - 1)
				if i >= len(s.tasks) || ctx.Err() != nil {
					return
				}
				err := w.run(ctx, s.tasks[i], func(r arrow.RecordBatch) bool {
					select {
					case s.ch <- r:
						return true
					case <-ctx.Done():
						r.Release()
						return false
					}
				})
				if err != nil {
					s.errc <- err
					s.cancel()
					return
				}
			}
		}()
	}
	go func() {
		s.wg.Wait()
		close(s.ch)
	}()
}

// Close stops the workers, waits for them and releases pending records.
// Idempotent.
func (s *Scanner) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.started {
		s.cancel()
		for r := range s.ch {
			r.Release()
		}
		s.wg.Wait()
	}
	if s.w != nil {
		s.w.release()
	}
	return nil
}

// worker decodes row groups; each goroutine has its own (buffers are
// reused across chunks and row groups, and pooled across scans: see
// workerBufs).
type worker struct {
	s       *Scanner
	bufs    *workerBufs
	vecs    []*vector
	decs    []*colDecoder // arrow-go readers of the current row group (fallback)
	cols    []colReader   // the reader of each vector in the current row group
	have    []bool
	sel     []int32
	scratch *filterScratch
	props   *parquet.ReaderProperties
	rec     *recycler

	curPath string
	fh      fileHandle
	rdr     *file.Reader
	// sized is the last file whose size a column-less scan checked.
	sized string

	// the row group being read
	cur    task
	path   string
	rows   int
	off    int
	active bool
	// implied[i]: the filter's conjunct i holds for every row of the
	// current row group by its statistics (mustMatch), so it is not
	// evaluated there (nor its column decoded for it).
	implied []bool
}

// colReader reads one column of the current row group: a flatDecoder or,
// for chunks it does not handle, an arrow-go colDecoder.
type colReader interface {
	read(v *vector, n int) error
	skip(n int) error
}

// workerBufs are a worker's reusable buffers: vectors, flat decoders (with
// their chunk, page and dictionary buffers), selection and filter scratch,
// and the recycling allocator of arrow-go's readers.
//
// NB: they are pooled because a planner that opens one scan per row group
// (engine's scan instances take row groups from a shared queue) would
// otherwise start every row group with fresh buffers: fresh zeroed
// megabyte buffers cost more CPU (memclr, GC) than decoding the small
// columns of a Q6-like scan (2.8 GB of the 9.6 GB the 22 TPC-H queries
// allocated at SF 1 before pooling).
type workerBufs struct {
	rec     *recycler
	vecs    []*vector
	flat    []*flatDecoder
	sel     []int32
	scratch filterScratch
}

var workerPool = sync.Pool{New: func() any { return &workerBufs{rec: &recycler{}} }}

func newWorker(s *Scanner) *worker {
	b := workerPool.Get().(*workerBufs)
	for len(b.vecs) < len(s.need) {
		b.vecs = append(b.vecs, &vector{})
		b.flat = append(b.flat, &flatDecoder{})
	}
	// NB: the mask cache is keyed by compiled predicate nodes, which are
	// the previous scan's.
	clear(b.scratch.masks)
	w := &worker{s: s, bufs: b, vecs: b.vecs[:len(s.need)], sel: b.sel, scratch: &b.scratch,
		decs: make([]*colDecoder, len(s.need)), cols: make([]colReader, len(s.need)), have: make([]bool, len(s.need))}
	w.rec = b.rec
	w.props = parquet.NewReaderProperties(w.rec)
	return w
}

// release closes the worker's file and returns its buffers to the pool.
func (w *worker) release() {
	w.closeFile()
	if w.bufs != nil {
		w.bufs.sel = w.sel
		workerPool.Put(w.bufs)
		w.bufs, w.rec = nil, nil
	}
}

func (w *worker) closeDecoders() {
	for i, d := range w.decs {
		if d != nil {
			d.r.Close()
			w.decs[i] = nil
		}
	}
	clear(w.cols)
}

func (w *worker) closeFile() {
	w.closeDecoders()
	if w.rdr != nil {
		w.rdr.Close() // closes fh too
		w.rdr = nil
	} else if w.fh != nil {
		w.fh.Close()
	}
	w.fh = nil
	w.curPath = ""
}

func (w *worker) open(f *File) error {
	p := w.s.files.Path(f)
	if w.curPath == p && w.rdr != nil {
		return nil
	}
	w.closeFile()
	// NB: one stat per file per scan: a file truncated or replaced since
	// its footer was cached is caught here, not by the decoder.
	if err := w.s.files.checkSize(f); err != nil {
		return err
	}
	md, err := w.s.files.footer(f)
	if err != nil {
		return err
	}
	fh, err := w.s.files.open(f)
	if err != nil {
		return err
	}
	rdr, err := file.NewParquetReader(fh, file.WithMetadata(md), file.WithReadProps(w.props))
	if err != nil {
		fh.Close()
		return nferr.Dataf("data file %s: %v", p, err)
	}
	w.fh, w.rdr, w.curPath = fh, rdr, p
	return nil
}

// run reads one row group and emits its records; emit returns false when
// the scan is being stopped.
func (w *worker) run(ctx context.Context, t task, emit func(arrow.RecordBatch) bool) error {
	if err := w.begin(t); err != nil {
		return err
	}
	for {
		rec, err := w.nextChunk(ctx)
		if err != nil || rec == nil {
			return err
		}
		if !emit(rec) {
			w.end()
			return nil
		}
	}
}

// begin positions the worker at the start of a row group.
func (w *worker) begin(t task) (err error) {
	w.end()
	w.cur, w.off, w.active = t, 0, true
	w.rows = int(t.file.RowGroups[t.rg].Rows)
	w.path = w.s.files.Path(t.file)
	if w.s.keyFiltersExclude(&t.file.RowGroups[t.rg]) {
		atomic.AddInt64(&w.s.stats.RowGroupsPruned, 1)
		w.rows = 0
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = nferr.Dataf("data file %s row group %d is corrupt (the Parquet decoder failed: %v)", w.path, t.rg, r)
			w.closeFile()
			w.active = false
		}
		if err != nil {
			w.end()
		}
	}()
	s := w.s
	w.implyConjuncts(&t.file.RowGroups[t.rg])
	if len(s.need) == 0 {
		// count(*): no column is read, but a missing or truncated file
		// is still an error, not a count from the catalog.
		if w.sized != w.path {
			if err := s.files.checkSize(t.file); err != nil {
				return err
			}
			w.sized = w.path
		}
		return nil
	}
	if err := w.open(t.file); err != nil {
		return err
	}
	md := w.rdr.MetaData()
	if t.rg >= md.NumRowGroups() {
		return nferr.Dataf("data file %s has no row group %d", w.path, t.rg)
	}
	rgm := md.RowGroup(t.rg)
	if rgm.NumRows() != int64(w.rows) {
		return nferr.Dataf("data file %s row group %d has %d rows, the catalog recorded %d", w.path, t.rg, rgm.NumRows(), w.rows)
	}
	if p, ok := w.fh.(prefetcher); ok {
		// A storage node's file: every chunk of the row group in one
		// request (errors surface at the reads below).
		rs := make([][2]int64, 0, len(s.need))
		for _, tc := range s.need {
			if cc, err := rgm.ColumnChunk(t.file.ColumnIndex[tc]); err == nil {
				start, length := chunkRange(cc)
				rs = append(rs, [2]int64{start, length})
			}
		}
		p.prefetch(rs)
	}
	var bytes int64
	for i, tc := range s.need {
		pc := t.file.ColumnIndex[tc]
		name := s.table.Columns[tc].Name
		cc, err := rgm.ColumnChunk(pc)
		if err != nil {
			return nferr.Dataf("data file %s row group %d column %s: %v", w.path, t.rg, name, err)
		}
		bytes += cc.TotalCompressedSize()
		descr := md.Schema.Column(pc)
		if flatChunkSupported(md, cc, descr) && flatKindOK(descr.PhysicalType(), kindOf(s.needT[i]), descr.TypeLength()) {
			fd := w.bufs.flat[i]
			if err := w.readChunk(fd, cc, t.file.Size); err != nil {
				// NB: a storage node's read failing keeps its kind
				// (KindUnavailable: the scan fails over).
				return nferr.Wrap(nferr.KindData, err, "data file %s row group %d column %s", w.path, t.rg, name)
			}
			if err := checkChunk(t.file, t.rg, tc, fd.chunk); err != nil {
				return nferr.Dataf("data file %s row group %d column %s is corrupt: %v", w.path, t.rg, name, err)
			}
			if err := fd.reset(name, descr, cc, kindOf(s.needT[i]), int64(w.rows), fd.chunk); err != nil {
				return nferr.Dataf("data file %s row group %d: %v", w.path, t.rg, err)
			}
			w.cols[i] = fd
			continue
		}
		if err := checkChunkAt(w.fh, t.file, t.rg, tc, cc); err != nil {
			if _, kinded := nferr.As(err); kinded {
				return nferr.Wrap(nferr.KindData, err, "data file %s row group %d column %s", w.path, t.rg, name)
			}
			return nferr.Dataf("data file %s row group %d column %s is corrupt: %v", w.path, t.rg, name, err)
		}
		cr, err := w.rdr.RowGroup(t.rg).Column(pc)
		if err != nil {
			return nferr.Dataf("data file %s row group %d column %s: %v", w.path, t.rg, name, err)
		}
		if s.needT[i].ID() == arrow.LIST {
			// An array column: decoded whole now, its rows' lists
			// built per batch.
			ld, err := newListDecoder(cr, s.needT[i], name, w.rows, cc.NumValues())
			cr.Close()
			if err != nil {
				return nferr.Wrap(nferr.KindData, err, "data file %s row group %d", w.path, t.rg)
			}
			w.cols[i] = ld
			continue
		}
		d, err := newColDecoder(cr, s.needT[i], name)
		if err != nil {
			cr.Close()
			return nferr.Wrap(nferr.KindData, err, "data file %s", w.path)
		}
		w.decs[i], w.cols[i] = d, d
	}
	atomic.AddInt64(&s.stats.BytesRead, bytes)
	return nil
}

// readChunk reads a column chunk's bytes into the decoder's buffer (which
// keeps bitReaderSlack bytes of capacity beyond them).
func (w *worker) readChunk(fd *flatDecoder, cc *metadata.ColumnChunkMetaData, fileSize int64) error {
	start, length := chunkRange(cc)
	if start < 0 || length < 0 || start > fileSize || length > fileSize-start {
		return fmt.Errorf("column chunk at %d+%d lies outside the file of %d bytes", start, length, fileSize)
	}
	n := int(length)
	if cap(fd.chunk) < n+bitReaderSlack {
		fd.chunk = make([]byte, n, n+n/8+bitReaderSlack)
	}
	fd.chunk = fd.chunk[:n]
	if _, err := w.fh.ReadAt(fd.chunk, start); err != nil {
		return fmt.Errorf("reading the column chunk: %w", err)
	}
	return nil
}

// end releases the current row group's decoders.
func (w *worker) end() {
	w.closeDecoders()
	w.active = false
}

func (w *worker) decode(i, n int) error {
	if w.have[i] {
		return nil
	}
	w.have[i] = true
	if err := w.cols[i].read(w.vecs[i], n); err != nil {
		return nferr.Dataf("data file %s row group %d: %v", w.path, w.cur.rg, err)
	}
	return nil
}

// nextChunk returns the next non-empty record of the current row group, or
// nil when the row group is done (then the decoders are released).
func (w *worker) nextChunk(ctx context.Context) (rec arrow.RecordBatch, err error) {
	s := w.s
	defer func() {
		if r := recover(); r != nil {
			rec, err = nil, nferr.Dataf("data file %s row group %d is corrupt (the Parquet decoder failed: %v)", w.path, w.cur.rg, r)
			w.closeFile()
		}
		if err != nil || rec == nil {
			w.end()
		}
	}()
	for w.active && w.off < w.rows {
		if err := ctx.Err(); err != nil {
			return nil, nferr.With(nferr.KindCanceled, err)
		}
		n := min(s.batch, w.rows-w.off)
		w.off += n
		atomic.AddInt64(&s.stats.RowsRead, int64(n))
		if len(s.need) == 0 {
			atomic.AddInt64(&s.stats.RowsReturned, int64(n))
			return array.NewRecordBatch(s.out, nil, int64(n)), nil
		}
		for i := range w.have {
			w.have[i] = false
		}
		var sel []int32 // nil: all rows
		if s.filter != nil {
			w.sel = grow(w.sel, n)
			if sel, err = w.evalFilter(n); err != nil {
				return nil, err
			}
			if len(sel) == n {
				sel = nil
			}
		}
		if len(s.kf) > 0 && (sel == nil || len(sel) > 0) {
			if sel, err = w.applyKeyFilters(sel, n); err != nil {
				return nil, err
			}
		}
		if sel != nil && len(sel) == 0 {
			for i := range s.need {
				if !w.have[i] {
					if err := w.cols[i].skip(n); err != nil {
						return nil, nferr.Dataf("data file %s row group %d: %v", w.path, w.cur.rg, err)
					}
				}
			}
			continue
		}
		for i := range s.need {
			if err := w.decode(i, n); err != nil {
				return nil, err
			}
		}
		cols := make([]arrow.Array, len(s.outCols))
		for k, vi := range s.outCols {
			cols[k] = materialize(s.opts.Alloc, s.out.Field(k).Type, w.vecs[vi], sel, n)
		}
		m := n
		if sel != nil {
			m = len(sel)
		}
		atomic.AddInt64(&s.stats.RowsReturned, int64(m))
		rec := array.NewRecordBatch(s.out, cols, int64(m))
		for _, c := range cols {
			c.Release()
		}
		return rec, nil
	}
	return nil, nil
}

// conjuncts are f's top-level conjuncts (f itself unless an AND).
func conjuncts(f *cnode) []*cnode {
	if f.op == OpAnd {
		return f.args
	}
	return []*cnode{f}
}

// implyConjuncts sets w.implied for row group rg: which of the filter's
// conjuncts its statistics say every row passes. A range split's bounds
// (a distributed task's share of a table stored in key order) on the row
// groups inside the task's range, and a time filter on the row groups of
// data stored in time order that lie wholly inside it, are not evaluated
// row by row, and a column read only for them is not decoded.
func (w *worker) implyConjuncts(rg *RowGroup) {
	w.implied = w.implied[:0]
	if w.s.filter == nil {
		return
	}
	for _, c := range conjuncts(w.s.filter) {
		w.implied = append(w.implied, c.mustMatch(rg.stats, rg.Rows))
	}
}

// evalFilter evaluates the scan's filter over a chunk, decoding filter
// columns lazily: the conjuncts of a top-level AND run in order (those
// the row group implies skipped: implyConjuncts), and a column is decoded
// only when a conjunct needs it and rows survive.
func (w *worker) evalFilter(n int) ([]int32, error) {
	conj := conjuncts(w.s.filter)
	var sel []int32
	for i, c := range conj {
		if i < len(w.implied) && w.implied[i] {
			continue
		}
		if err := w.decodeFor(c, n); err != nil {
			return nil, err
		}
		sel = c.filter(w.vecs, sel, n, w.sel[:n], w.scratch)
		if len(sel) == 0 {
			return sel, nil
		}
	}
	return sel, nil
}

func (w *worker) decodeFor(c *cnode, n int) error {
	if c.op == OpAnd || c.op == OpOr {
		for _, a := range c.args {
			if err := w.decodeFor(a, n); err != nil {
				return err
			}
		}
		return nil
	}
	return w.decode(c.col, n)
}

// String describes the scan (for EXPLAIN and logs).
func (s *Scanner) String() string {
	st := s.stats.load()
	return fmt.Sprintf("scan %s columns=%v filter=%s row_groups=%d/%d", s.table.QualifiedName(), s.spec.Columns, s.spec.Filter, len(s.tasks), st.RowGroupsTotal)
}

// Source is anything that can run scans: a local DB or a RemoteScanner
// over storage nodes. exec.NewScan works over either.
type Source interface {
	// ScanSchema is the schema of the records a scan of spec returns,
	// computed without I/O (so operators know their schema when built).
	ScanSchema(spec ScanSpec) (*arrow.Schema, error)
	// OpenScan starts a scan.
	OpenScan(ctx context.Context, spec ScanSpec, opts ScanOptions) (RecordIterator, error)
}

// ScanSchema implements Source.
func (db *DB) ScanSchema(spec ScanSpec) (*arrow.Schema, error) {
	t, err := db.Table(spec.Table)
	if err != nil {
		return nil, err
	}
	return projectSchema(t, spec)
}

func projectSchema(t *Table, spec ScanSpec) (*arrow.Schema, error) {
	sch, err := ArrowSchema(t.Columns)
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, 0, len(spec.Columns))
	for _, c := range spec.Columns {
		i := t.ColumnIndex(c)
		if i < 0 {
			return nil, nferr.Queryf("scan of %s: unknown column %q", t.QualifiedName(), c)
		}
		fields = append(fields, sch.Field(i))
	}
	return arrow.NewSchema(fields, nil), nil
}

// OpenScan implements Source.
func (db *DB) OpenScan(_ context.Context, spec ScanSpec, opts ScanOptions) (RecordIterator, error) {
	return db.NewScanner(spec, opts)
}

// recycler is a memory.Allocator that keeps freed buffers for reuse. It
// serves one scan worker (the parquet decoder's internal buffers), so it
// only needs a mutex for safety, not for throughput.
//
// NB: reused buffers are not zeroed; the parquet decoder overwrites the
// bytes it asked for before reading them.
type recycler struct {
	mu   sync.Mutex
	free [][]byte
}

// maxRecycled bounds the buffers kept (a few columns' page and
// decompression buffers).
const maxRecycled = 32

func (r *recycler) Allocate(n int) []byte {
	r.mu.Lock()
	best := -1
	for i, b := range r.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(r.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := r.free[best]
		r.free[best] = r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.mu.Unlock()
		return b[:n]
	}
	r.mu.Unlock()
	return make([]byte, n)
}

func (r *recycler) Reallocate(n int, b []byte) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := r.Allocate(n + n/2)[:n]
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	r.mu.Lock()
	if len(r.free) < maxRecycled {
		r.free = append(r.free, b[:cap(b)])
	}
	r.mu.Unlock()
}

// interleaveByFile reorders tasks round-robin over files (f0rg0, f1rg0,
// f2rg0, f0rg1, ...) so that parallel workers mostly read different files.
func interleaveByFile(tasks []task) []task {
	var files []*File
	by := map[*File][]task{}
	for _, t := range tasks {
		if _, ok := by[t.file]; !ok {
			files = append(files, t.file)
		}
		by[t.file] = append(by[t.file], t)
	}
	if len(files) <= 1 {
		return tasks
	}
	out := make([]task, 0, len(tasks))
	for i := 0; len(out) < len(tasks); i++ {
		for _, f := range files {
			if ts := by[f]; i < len(ts) {
				out = append(out, ts[i])
			}
		}
	}
	return out
}

// Split divides a table's row groups into at most n shares of similar row
// counts, for a planner that runs one scan per pipeline: scan i gets
// ScanSpec.Files = shares[i]. Row groups are dealt largest first to the
// share with the fewest rows; within a share, files and row groups keep
// their order. Empty shares are dropped.
func (t *Table) Split(n int) [][]FileRange {
	type rg struct {
		fi, ri int
		rows   int64
	}
	var all []rg
	for fi, f := range t.Files {
		for ri, r := range f.RowGroups {
			all = append(all, rg{fi, ri, r.Rows})
		}
	}
	if n <= 0 {
		n = 1
	}
	n = min(n, len(all))
	if n == 0 {
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].rows > all[j].rows })
	load := make([]int64, n)
	owner := make(map[[2]int]int, len(all))
	for _, r := range all {
		best := 0
		for i := range load {
			if load[i] < load[best] {
				best = i
			}
		}
		load[best] += r.rows
		owner[[2]int{r.fi, r.ri}] = best
	}
	shares := make([][]FileRange, n)
	for fi, f := range t.Files {
		for ri := range f.RowGroups {
			s := owner[[2]int{fi, ri}]
			sh := shares[s]
			if len(sh) == 0 || sh[len(sh)-1].Path != f.Path {
				sh = append(sh, FileRange{Path: f.Path, RowGroups: []int{}})
			}
			sh[len(sh)-1].RowGroups = append(sh[len(sh)-1].RowGroups, ri)
			shares[s] = sh
		}
	}
	return shares
}
