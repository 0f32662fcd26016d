package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Stored bytes on the wire.
//
// A storage node can serve a scan two ways. Over DoGet it runs the scan
// itself and sends decoded, filtered Arrow batches: its CPU decodes and
// filters, and the network carries Arrow (the 22 TPC-H queries at SF 1
// moved 2.58 GB of it for a 306 MB database). Or it serves the Parquet
// bytes as stored (compressed, encoded), as an object store serves range
// reads, and the client decodes them with the same Scanner local reads
// use: the same pruning, filters, join key filters, checksums of every
// chunk against the catalog entry, on the client's cores. That is the
// smart-NIC arrangement (Lovelock): storage serves bytes, the many small
// workers decode.
//
// Protocol: the client learns the node's catalog entry of the table (the
// table handshake, localScanAction; the same one local reads use), then
// reads ranges of a file with the DoAction readAction. Its body
// (readRequest) names the table, the file's catalog path and checksum,
// and the byte ranges; the node answers only for a file its own catalog
// lists for that table with that checksum (anything else is
// KindUnavailable: a stale placement, for the client to fail over), checks
// the file's size against its catalog, and streams the ranges' bytes in
// order, in results of at most readResultBytes. The client checks every
// footer and chunk against the checksums of the catalog entry, so damaged
// bytes are a KindData error naming the file and the node, never a wrong
// answer.
//
// A scan reads a row group's chunks in one request (prefetch) and a file's
// footer with its tail in one more; the scan's workers run their requests
// in parallel. ClientOptions.ScanMode chooses between the two ways per scan
// (scanMode).

// readAction is the Flight action type of a range read.
const readAction = "nicflow.read"

// readRequest is readAction's body.
type readRequest struct {
	Table    string     `json:"table"`
	Path     string     `json:"path"`
	Checksum string     `json:"checksum"`
	Ranges   [][2]int64 `json:"ranges"` // offset, length
}

// Bounds of one read request: what a hostile or broken client can make a
// node read and hold.
const (
	maxReadRanges   = 4096
	maxReadBytes    = 1 << 30
	readResultBytes = 1 << 20
	// footerTail is what a client reads of a file's end to find its
	// footer in one request (most footers are smaller).
	footerTail = 64 << 10
)

// readRanges serves readAction.
func (s *Server) readRanges(body []byte, stream flight.FlightService_DoActionServer) (err error) {
	var served int64
	if obs := s.opts.ReadObserver; obs != nil {
		defer func() { obs(served, err) }()
	}
	var req readRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return s.statusErr(nferr.Dataf("storage node %s: malformed read request: %v", s.opts.NodeID, err))
	}
	if len(req.Ranges) > maxReadRanges {
		return s.statusErr(nferr.Queryf("storage node %s: a read of %d ranges (at most %d)", s.opts.NodeID, len(req.Ranges), maxReadRanges))
	}
	t, err := s.db.Table(req.Table)
	if err != nil {
		return s.statusErr(nferr.Unavailablef("storage node %s does not hold table %s", s.opts.NodeID, req.Table))
	}
	f := t.file(req.Path)
	if f == nil || req.Checksum == "" || f.Checksum != req.Checksum {
		return s.statusErr(nferr.Unavailablef("storage node %s does not hold %s of table %s (stale placement)", s.opts.NodeID, req.Path, req.Table))
	}
	var total int64
	for _, r := range req.Ranges {
		if r[0] < 0 || r[1] < 0 || r[0] > f.Size || r[1] > f.Size-r[0] {
			return s.statusErr(nferr.Queryf("storage node %s: range %d+%d lies outside %s (%d bytes)", s.opts.NodeID, r[0], r[1], req.Path, f.Size))
		}
		total += r[1]
	}
	if total > maxReadBytes {
		return s.statusErr(nferr.Queryf("storage node %s: a read of %d bytes (at most %d)", s.opts.NodeID, total, int64(maxReadBytes)))
	}
	// NB: the size is checked on every request: a file truncated or
	// replaced under the catalog is KindData here, not bytes of another
	// file there.
	if err := s.db.checkSize(f); err != nil {
		return s.statusErr(err)
	}
	p := s.db.Path(f)
	h, err := os.Open(p)
	if err != nil {
		return s.statusErr(fileErr(p, err))
	}
	defer h.Close()
	buf := make([]byte, min(total, readResultBytes))
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		err := stream.Send(&flight.Result{Body: buf[:n]})
		// NB: gRPC may hold the message until it is written; a new buffer
		// for the next one.
		buf, n = make([]byte, len(buf)), 0
		return err
	}
	for _, r := range req.Ranges {
		off, left := r[0], r[1]
		for left > 0 {
			k := min(left, int64(len(buf)-n))
			if _, err := h.ReadAt(buf[n:n+int(k)], off); err != nil {
				return s.statusErr(nferr.IOf("storage node %s: reading %s: %v", s.opts.NodeID, p, err))
			}
			n += int(k)
			off += k
			left -= k
			if n == len(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	served = total
	return nil
}

// remoteFiles reads the files of one table on one storage node, for one
// scan (its context, its connection).
type remoteFiles struct {
	ctx   context.Context
	c     flight.Client
	node  string // "<id> (<addr>)", for messages
	table string
	// wire counts the bytes received (ScanStats.WireBytes).
	wire *atomic.Int64
}

func (r *remoteFiles) name(f *File) string { return f.Path + " on storage node " + r.node }

// read fetches ranges of f, in one request, into dst (one slice per range,
// of its length).
func (r *remoteFiles) read(f *File, ranges [][2]int64, dst [][]byte) error {
	body, err := json.Marshal(readRequest{Table: r.table, Path: f.Path, Checksum: f.Checksum, Ranges: ranges})
	if err != nil {
		return nferr.Internalf("read request: %v", err)
	}
	st, err := r.c.DoAction(r.ctx, &flight.Action{Type: readAction, Body: body})
	if err != nil {
		return decodeStatus(err, r.node)
	}
	i, off := 0, 0
	for {
		res, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return decodeStatus(err, r.node)
		}
		b := res.GetBody()
		r.wire.Add(int64(len(b)))
		for len(b) > 0 {
			for i < len(dst) && off == len(dst[i]) {
				i, off = i+1, 0
			}
			if i == len(dst) {
				return nferr.Dataf("storage node %s sent more bytes of %s than asked", r.node, f.Path)
			}
			k := copy(dst[i][off:], b)
			off += k
			b = b[k:]
		}
	}
	for i < len(dst) && off == len(dst[i]) {
		i, off = i+1, 0
	}
	if i != len(dst) {
		return nferr.Unavailablef("storage node %s sent fewer bytes of %s than asked", r.node, f.Path)
	}
	return nil
}

// open returns a handle reading f through the node.
func (r *remoteFiles) open(f *File) *remoteFile { return &remoteFile{r: r, f: f} }

// prefetcher is a file handle that can fetch several ranges at once (a
// storage node's file: one request instead of one per chunk).
type prefetcher interface {
	prefetch(ranges [][2]int64)
}

// remoteFile is a file of a storage node as a ReaderAt. Reads are served
// from what prefetch (a row group's chunks) and the first read of the
// tail (the footer) fetched, else by a request of their own.
type remoteFile struct {
	r *remoteFiles
	f *File

	mu  sync.Mutex
	pos int64 // for Seek
	// extents are fetched bytes: the tail stays, a prefetched chunk is
	// dropped once read whole.
	extents []extent
}

type extent struct {
	off  int64
	b    []byte
	keep bool
}

func (h *remoteFile) prefetch(ranges [][2]int64) {
	var want [][2]int64
	h.mu.Lock()
	for _, rg := range ranges {
		if rg[1] > 0 && h.find(rg[0], rg[1]) < 0 {
			want = append(want, rg)
		}
	}
	h.mu.Unlock()
	if len(want) == 0 {
		return
	}
	sort.Slice(want, func(i, j int) bool { return want[i][0] < want[j][0] })
	dst := make([][]byte, len(want))
	for i, rg := range want {
		dst[i] = make([]byte, rg[1])
	}
	if h.r.read(h.f, want, dst) != nil {
		return // the reads themselves ask again and report the error
	}
	h.mu.Lock()
	for i, rg := range want {
		h.extents = append(h.extents, extent{off: rg[0], b: dst[i]})
	}
	h.mu.Unlock()
}

// find returns the extent holding [off, off+n), or -1. The caller holds mu.
func (h *remoteFile) find(off, n int64) int {
	for i, e := range h.extents {
		if off >= e.off && off+n <= e.off+int64(len(e.b)) {
			return i
		}
	}
	return -1
}

func (h *remoteFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > h.f.Size {
		return 0, fmt.Errorf("read at %d of %s (%d bytes)", off, h.r.name(h.f), h.f.Size)
	}
	n := int64(len(p))
	short := false
	if off+n > h.f.Size {
		n, short = h.f.Size-off, true
	}
	h.mu.Lock()
	if i := h.find(off, n); i >= 0 {
		e := h.extents[i]
		copy(p[:n], e.b[off-e.off:])
		if !e.keep && off == e.off && n == int64(len(e.b)) {
			h.extents = append(h.extents[:i], h.extents[i+1:]...)
		}
		h.mu.Unlock()
		if short {
			return int(n), io.EOF
		}
		return int(n), nil
	}
	h.mu.Unlock()
	// The footer: the file's tail in one request, kept for the reads that
	// follow (its length, then the footer, then arrow-go's reader).
	if off+n == h.f.Size && n <= footerTail {
		start := max(h.f.Size-footerTail, 0)
		tail := make([]byte, h.f.Size-start)
		if err := h.r.read(h.f, [][2]int64{{start, int64(len(tail))}}, [][]byte{tail}); err != nil {
			return 0, err
		}
		h.mu.Lock()
		h.extents = append(h.extents, extent{off: start, b: tail, keep: true})
		h.mu.Unlock()
		copy(p[:n], tail[off-start:])
		return int(n), nil
	}
	if err := h.r.read(h.f, [][2]int64{{off, n}}, [][]byte{p[:n]}); err != nil {
		return 0, err
	}
	if short {
		return int(n), io.EOF
	}
	return int(n), nil
}

func (h *remoteFile) Seek(offset int64, whence int) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pos, err := seekOffset(h.f.Path, h.pos, h.f.Size, offset, whence)
	if err == nil {
		h.pos = pos
	}
	return pos, err
}

// seekOffset is io.Seeker's arithmetic for a reader of a file of size
// bytes at pos: the new position, or an error naming the file.
func seekOffset(name string, pos, size, off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += pos
	case io.SeekEnd:
		off += size
	default:
		return 0, fmt.Errorf("seek %s: bad whence %d", name, whence)
	}
	if off < 0 {
		return 0, fmt.Errorf("seek %s: negative offset %d", name, off)
	}
	return off, nil
}

func (h *remoteFile) Close() error {
	h.mu.Lock()
	h.extents = nil
	h.mu.Unlock()
	return nil
}

// remoteFooters caches, per storage node and file, the footers read over
// the network: a worker's tasks share them as they share local ones.
var remoteFooters sync.Map // node address -> *sync.Map

// remoteFileSet is a fileSet reading table's files on the node at addr
// for one scan.
func remoteFileSet(ctx context.Context, c flight.Client, node, addr, table string, wire *atomic.Int64) *fileSet {
	v, _ := remoteFooters.LoadOrStore(addr, &sync.Map{})
	return &fileSet{footers: v.(*sync.Map), remote: &remoteFiles{ctx: ctx, c: c, node: node + " (" + addr + ")", table: table, wire: wire}}
}

// bytesReadable reports whether a scan of frs can read t's files as
// stored bytes: each is in t, with the chunk and footer checksums that let
// the client check what it receives (files of older catalogs have their
// whole file checked instead, which the node's own scan does).
func bytesReadable(t *Table, frs []FileRange) bool {
	for _, fr := range frs {
		f := t.file(fr.Path)
		if f == nil || f.Checksum == "" || f.FooterSum == 0 || !hasChunkSums(f) {
			return false
		}
	}
	return true
}
