package exec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/s2"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Spill is one query's spill space on one node: a directory of its own
// (SpillPrefix, the process id and the query) under a root directory,
// created on the first spill and removed with everything in it by Close;
// and a cap on the bytes the query keeps on disk at once.
//
// Spill files are Arrow IPC streams cut into blocks of up to spillBlock
// bytes, each compressed with S2 (klauspost/compress: no state kept
// between blocks, so a writer holds one block of memory) and framed as
// [stored length uint32][raw length uint32][xxh3 of the stored bytes
// uint64][stored bytes]; a reader checks every block, so a damaged spill
// file is a data error, never a wrong answer. Each file is written once,
// read once and removed.
//
// A Spill is safe for concurrent use: the pipelines of a query share it.
// Child views of it (EXPLAIN ANALYZE gives one to each operator) count
// what they write apart and write into the same directory under the same
// cap.
type Spill struct {
	parent *Spill // nil: the query's spill space itself
	root   string
	name   string
	limit  int64

	used    atomic.Int64 // bytes on disk now
	written atomic.Int64 // bytes written in total
	files   atomic.Int64 // files created in total

	mu     sync.Mutex
	dir    string
	seq    int
	closed bool
}

// SpillPrefix starts the name of every query's spill directory.
const SpillPrefix = "nicflow-spill-"

// spillBlock is the raw size of one checksummed block.
const spillBlock = 8 << 10

// spillHeader is the size of a block's frame header.
const spillHeader = 16

// spillWriterBytes is what one open spill writer holds in memory (its
// block buffer and a share of the encoder's); operators charge it.
const spillWriterBytes = spillBlock + 2<<10

var s2Bufs = sync.Pool{New: func() any { b := make([]byte, s2.MaxEncodedLen(spillBlock)); return &b }}

// NewSpill returns the spill space of query (any text; it becomes part of
// a directory name) under root, keeping at most limit bytes on disk at
// once (0: no cap). Nothing touches the disk until an operator spills.
func NewSpill(root, query string, limit int64) *Spill {
	q := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, query)
	if len(q) > 40 {
		q = q[:40]
	}
	return &Spill{root: root, name: fmt.Sprintf("%s%d-%s", SpillPrefix, os.Getpid(), q), limit: limit}
}

// Child returns a view of the query's spill space that counts its own
// Written and Files (the space counts them too, a view's parent view does
// not); its Close does nothing.
func (s *Spill) Child() *Spill { return &Spill{parent: s.top(), root: s.root, limit: s.limit} }

// top is the query's spill space.
func (s *Spill) top() *Spill {
	for s.parent != nil {
		s = s.parent
	}
	return s
}

// Root is the directory spill directories are made in.
func (s *Spill) Root() string { return s.root }

// Limit is the cap on bytes on disk (0: none).
func (s *Spill) Limit() int64 { return s.limit }

// Written is the number of bytes the query has spilled so far.
func (s *Spill) Written() int64 { return s.written.Load() }

// OnDisk is the bytes the query's spill files hold on disk now.
func (s *Spill) OnDisk() int64 { return s.top().used.Load() }

// Files is the number of spill files the query has written so far.
func (s *Spill) Files() int64 { return s.files.Load() }

// create opens a new spill file for batches of schema.
func (s *Spill) create(schema *arrow.Schema, op string) (*spillWriter, error) {
	t := s.top()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, nferr.With(nferr.KindCanceled, errors.New("spill: the query has ended"))
	}
	if t.dir == "" {
		dir := filepath.Join(t.root, t.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.mu.Unlock()
			return nil, spillIOError(err, t.root)
		}
		t.dir = dir
	}
	t.seq++
	path := filepath.Join(t.dir, fmt.Sprintf("%06d-%s.arrows", t.seq, strings.ReplaceAll(op, " ", "-")))
	t.mu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, spillIOError(err, path)
	}
	for v := s; v != nil; v = v.parent {
		v.files.Add(1)
	}
	w := &spillWriter{spill: s, f: f, path: path, schema: schema}
	w.blocks = &blockWriter{w: w}
	w.ipc = ipc.NewWriter(w.blocks, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	return w, nil
}

// Close removes the query's spill directory and every file in it. Safe to
// call more than once; files created afterwards are refused.
func (s *Spill) Close() error {
	if s.parent != nil {
		return nil
	}
	s.mu.Lock()
	dir := s.dir
	s.closed, s.dir = true, ""
	s.mu.Unlock()
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nferr.IOf("spill: removing %s: %v", dir, err)
	}
	return nil
}

// charge counts n more bytes on disk against the cap.
func (s *Spill) charge(n int64, path string) error {
	used := s.top().used.Add(n)
	for v := s; v != nil; v = v.parent {
		v.written.Add(n)
	}
	if s.limit > 0 && used > s.limit {
		return nferr.Resourcef("spill: the query needs more than its spill limit of %s on disk (writing %s; raise --spill-limit or SET spill_limit, or give it more memory)",
			FormatBytes(s.limit), path)
	}
	return nil
}

func (s *Spill) uncharge(n int64) { s.top().used.Add(-n) }

// spillIOError turns a failed spill write into the query's error: a full
// disk is a resource error naming the device's path.
func spillIOError(err error, path string) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return nferr.Resourcef("spill: no space left on device %s (free space there, or point --spill-dir / SET spill_dir elsewhere)", path)
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return nferr.IOf("spill: cannot write %s: %v (point --spill-dir / SET spill_dir at a writable directory)", path, err)
	}
	return nferr.IOf("spill: %v", err)
}

// CleanSpillLeftovers removes from root the spill directories of nicflow
// processes that no longer run (killed while spilling); it returns how
// many it removed. A missing root is not an error.
func CleanSpillLeftovers(root string) (int, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, nferr.IOf("spill: reading %s: %v", root, err)
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), SpillPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if os.RemoveAll(filepath.Join(root, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// spillWriter writes one spill file.
type spillWriter struct {
	spill  *Spill
	f      *os.File
	blocks *blockWriter
	ipc    *ipc.Writer
	path   string
	schema *arrow.Schema
	rows   int64
	bytes  int64 // charged to the spill
	err    error
}

// write appends the live rows of cols (n physical rows, selection sel) to
// the file.
func (w *spillWriter) write(alloc memory.Allocator, cols []arrow.Array, n int, sel []int32) error {
	if w.err != nil {
		return w.err
	}
	b := &Batch{Cols: cols, N: n, Sel: sel}
	if b.Len() == 0 {
		return nil
	}
	var own *Batch
	if sel != nil {
		own = Compact(alloc, b)
		b = own
	}
	rec := array.NewRecordBatch(w.schema, b.Cols, int64(b.N))
	err := w.ipc.Write(rec)
	rec.Release()
	if own != nil {
		releaseArrays(own.Cols)
	}
	if err == nil {
		err = w.blocks.err
	}
	if err != nil {
		w.err = asSpillErr(err, w.path)
		return w.err
	}
	w.rows += int64(b.N)
	return nil
}

func asSpillErr(err error, path string) error {
	var ne *nferr.Error
	if errors.As(err, &ne) {
		return err
	}
	return spillIOError(err, path)
}

// finish completes the file and returns it for reading.
func (w *spillWriter) finish() (*spillRun, error) {
	err := w.ipc.Close()
	if err == nil {
		err = w.blocks.flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.err = asSpillErr(err, w.path)
		w.remove()
		return nil, w.err
	}
	return &spillRun{spill: w.spill, path: w.path, schema: w.schema, rows: w.rows, bytes: w.bytes}, nil
}

// abort closes and removes the file.
func (w *spillWriter) abort() {
	w.ipc.Close()
	w.f.Close()
	w.remove()
}

func (w *spillWriter) remove() {
	os.Remove(w.path)
	w.spill.uncharge(w.bytes)
	w.bytes = 0
}

// blockWriter cuts the IPC stream into checksummed blocks.
type blockWriter struct {
	w   *spillWriter
	buf []byte
	err error
}

func (b *blockWriter) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), spillBlock-len(b.buf))
		b.buf = append(b.buf, p[:k]...)
		p = p[k:]
		if len(b.buf) == spillBlock {
			if err := b.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (b *blockWriter) flush() error {
	if b.err != nil || len(b.buf) == 0 {
		return b.err
	}
	dst := s2Bufs.Get().(*[]byte)
	defer s2Bufs.Put(dst)
	enc := s2.Encode(*dst, b.buf)
	var hdr [spillHeader]byte
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(enc)))
	binary.LittleEndian.PutUint32(hdr[4:8], uint32(len(b.buf)))
	binary.LittleEndian.PutUint64(hdr[8:16], xxh3.Hash(enc))
	size := int64(len(hdr) + len(enc))
	b.w.bytes += size
	if err := b.w.spill.charge(size, b.w.path); err != nil {
		b.err = err
		return err
	}
	if _, err := b.w.f.Write(hdr[:]); err != nil {
		b.err = spillIOError(err, b.w.path)
		return b.err
	}
	if _, err := b.w.f.Write(enc); err != nil {
		b.err = spillIOError(err, b.w.path)
		return b.err
	}
	b.buf = b.buf[:0]
	return nil
}

// spillRun is a finished spill file.
type spillRun struct {
	spill  *Spill
	path   string
	schema *arrow.Schema
	rows   int64
	bytes  int64
	gone   bool
}

// remove deletes the file (idempotent).
func (r *spillRun) remove() {
	if r.gone {
		return
	}
	r.gone = true
	os.Remove(r.path)
	r.spill.uncharge(r.bytes)
}

// spillReader is an Operator over a spill file; Close removes the file.
type spillReader struct {
	run  *spillRun
	f    *os.File
	rd   *ipc.Reader
	out  Batch
	rec  arrow.RecordBatch
	env  *Env
	err  error
	done bool
}

func newSpillReader(r *spillRun) *spillReader { return &spillReader{run: r} }

func (r *spillReader) Schema() *arrow.Schema { return r.run.schema }

func (r *spillReader) Open(env *Env) error {
	r.env = env
	f, err := os.Open(r.run.path)
	if err != nil {
		return nferr.IOf("spill: %v", err)
	}
	r.f = f
	rd, err := ipc.NewReader(&blockReader{r: bufio.NewReaderSize(f, 16<<10), path: r.run.path}, ipc.WithAllocator(env.Alloc), ipc.WithSchema(r.run.schema))
	if err != nil {
		return spillReadErr(err, r.run.path)
	}
	r.rd = rd
	return nil
}

func spillReadErr(err error, path string) error {
	var ne *nferr.Error
	if errors.As(err, &ne) {
		return err
	}
	return nferr.Dataf("spill file %s is unreadable: %v", path, err)
}

func (r *spillReader) Next() (*Batch, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	r.out = Batch{}
	if r.done || r.rd == nil {
		return nil, nil
	}
	if err := r.env.Ctx.Err(); err != nil {
		r.err = nferr.With(nferr.KindCanceled, err)
		return nil, r.err
	}
	for r.rd.Next() {
		rec := r.rd.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		r.rec = rec
		r.out = Batch{Cols: rec.Columns(), N: int(rec.NumRows())}
		return &r.out, nil
	}
	if err := r.rd.Err(); err != nil {
		r.err = spillReadErr(err, r.run.path)
		return nil, r.err
	}
	r.done = true
	return nil, nil
}

func (r *spillReader) Close() error {
	r.closeKeep()
	r.run.remove()
	return nil
}

// closeKeep closes the reader but leaves the file.
func (r *spillReader) closeKeep() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.rd != nil {
		r.rd.Release()
		r.rd = nil
	}
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	return nil
}

// blockReader checks and unframes the blocks of a spill file.
type blockReader struct {
	r     *bufio.Reader
	path  string
	enc   []byte
	raw   []byte
	buf   []byte
	pos   int
	block int
}

func (b *blockReader) Read(p []byte) (int, error) {
	for b.pos == len(b.buf) {
		var hdr [spillHeader]byte
		if _, err := io.ReadFull(b.r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, nferr.Dataf("spill file %s is truncated in block %d", b.path, b.block)
		}
		n, raw := binary.LittleEndian.Uint32(hdr[0:4]), binary.LittleEndian.Uint32(hdr[4:8])
		if n == 0 || n > uint32(s2.MaxEncodedLen(spillBlock)) || raw == 0 || raw > spillBlock {
			return 0, nferr.Dataf("spill file %s is damaged: block %d claims %d bytes (%d raw)", b.path, b.block, n, raw)
		}
		b.enc = resize(b.enc, int(n))
		if _, err := io.ReadFull(b.r, b.enc); err != nil {
			return 0, nferr.Dataf("spill file %s is truncated in block %d", b.path, b.block)
		}
		if xxh3.Hash(b.enc) != binary.LittleEndian.Uint64(hdr[8:16]) {
			return 0, nferr.Dataf("spill file %s is damaged: checksum mismatch in block %d", b.path, b.block)
		}
		out, err := s2.Decode(b.raw[:cap(b.raw)], b.enc)
		if err != nil || len(out) != int(raw) {
			return 0, nferr.Dataf("spill file %s is damaged: block %d does not decode", b.path, b.block)
		}
		b.raw, b.buf, b.pos = out, out, 0
		b.block++
	}
	k := copy(p, b.buf[b.pos:])
	b.pos += k
	return k, nil
}

// partWriters writes batches to one file per partition; safe for
// concurrent use.
type partWriters struct {
	mu     sync.Mutex
	env    *Env
	op     string
	schema *arrow.Schema
	keys   []int
	level  int
	bits   int
	part   *HashPartitioner
	ws     []*spillWriter
	acct   *Account
	by     [][]int32
	err    error
}

func newPartWriters(env *Env, op string, schema *arrow.Schema, keys []int, level int) (*partWriters, error) {
	n, bits := spillFanout(env.Budget.root().Limit())
	p, err := NewHashPartitioner(schema, keys, n)
	if err != nil {
		return nil, err
	}
	return &partWriters{env: env, op: op, schema: schema, keys: keys, level: level, bits: bits, part: p,
		ws: make([]*spillWriter, n), acct: env.Budget.NewForcedAccount(op + " spill buffers"), by: make([][]int32, n)}, nil
}

// write appends the live rows of b to their partitions.
func (w *partWriters) write(b *Batch) error {
	if b.Len() == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	hashes := w.part.Hash(b)
	for p := range w.by {
		w.by[p] = w.by[p][:0]
	}
	for j, h := range hashes {
		p := spillPart(h, w.level, w.bits)
		w.by[p] = append(w.by[p], int32(rowAt(b.Sel, j)))
	}
	for p, sel := range w.by {
		if len(sel) == 0 {
			continue
		}
		if w.ws[p] == nil {
			sw, err := w.env.Spill.create(w.schema, w.op)
			if err != nil {
				w.err = err
				return err
			}
			w.ws[p] = sw
			w.acct.Grow(spillWriterBytes) //nolint:errcheck // forced account
		}
		if err := w.ws[p].write(w.env.Alloc, b.Cols, b.N, sel); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// finish closes the files and returns the runs, one per partition (nil
// for an empty one).
func (w *partWriters) finish() ([]*spillRun, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	runs := make([]*spillRun, len(w.ws))
	var first error
	for p, sw := range w.ws {
		if sw == nil {
			continue
		}
		w.ws[p] = nil
		if first != nil {
			sw.abort()
			continue
		}
		r, err := sw.finish()
		if err != nil {
			first = err
			continue
		}
		runs[p] = r
	}
	w.acct.Close()
	if first != nil {
		for _, r := range runs {
			if r != nil {
				r.remove()
			}
		}
		return nil, first
	}
	return runs, nil
}

// abort removes everything written.
func (w *partWriters) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, sw := range w.ws {
		if sw != nil {
			sw.abort()
			w.ws[p] = nil
		}
	}
	w.acct.Close()
}

// partitionRun returns the batches of one operator per spilled partition,
// one partition after another: the second phase of the hybrid aggregate,
// the grace join and DISTINCT. open makes the next partition's operator,
// or returns nil when none is left.
type partitionRun struct{ sub Operator }

func (p *partitionRun) next(env *Env, open func() (Operator, error)) (*Batch, error) {
	for {
		if p.sub == nil {
			sub, err := open()
			if err != nil || sub == nil {
				return nil, err
			}
			p.sub = sub
			if err := sub.Open(env); err != nil {
				return nil, err
			}
		}
		b, err := p.sub.Next()
		if err != nil || b != nil {
			return b, err
		}
		p.sub.Close()
		p.sub = nil
	}
}

// close closes the partition being read, if any.
func (p *partitionRun) close() {
	if p.sub != nil {
		p.sub.Close()
		p.sub = nil
	}
}

// forEachBatch calls fn on every batch of in until its end, checking for
// cancellation between batches. The batch is borrowed until fn returns.
func forEachBatch(env *Env, in Operator, fn func(*Batch) error) error {
	for {
		if err := env.Ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		b, err := in.Next()
		if err != nil || b == nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}
