package storage

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/zeebo/xxh3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The storage service: a Flight server over a DB.
//
//	DoGet(ticket)          ticket = MarshalScanSpec(spec): prune, filter and
//	                       stream the scan's records (split to stay under
//	                       MaxMessageBytes); scan counters travel in the
//	                       "nicflow-scan-stats" trailer.
//	ListFlights            one FlightInfo per table (schema, rows, bytes).
//	GetFlightInfo(path=[t]) the table's schema and a ticket scanning it all.
//	DoPut                  receive a file for placement: the first message's
//	                       descriptor Cmd holds a JSON putHeader, DataBody
//	                       of every message carries file bytes.
//
// Errors carry their nferr kind in the gRPC status message
// ("nicflow/<kind>: <message>") so that the client rebuilds the same kind.

// ServerOptions configure the storage service.
type ServerOptions struct {
	// NodeID names this storage node in errors and logs.
	NodeID string
	// TLS enables TLS (mutual TLS when it sets ClientAuth); nil: plaintext.
	TLS *tls.Config
	// MaxMessageBytes is the target size of one streamed record (default
	// 2 MiB, half of gRPC's default 4 MiB receive limit, so a slightly
	// underestimated record still fits).
	MaxMessageBytes int
	// DisableLocalReads refuses short-circuit local reads (see
	// localread.go): every client then receives its scans over Flight.
	DisableLocalReads bool
	// ScanParallelism is the number of goroutines decoding each scan
	// (default 1).
	ScanParallelism int
	// ScanObserver, when set, is called as every scan served over Flight
	// ends, with its duration (from the scanner's start to the last
	// record sent), its statistics and its error (nil when it completed).
	// It serves the node's metrics; it must not block.
	ScanObserver func(d time.Duration, st ScanStats, err error)
	// ReadObserver, when set, is called as every read of stored bytes
	// (remotebytes.go) ends, with the bytes served and its error. It must
	// not block.
	ReadObserver func(bytes int64, err error)
}

// Validate fills defaults.
func (o *ServerOptions) Validate() error {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 2 << 20
	}
	if o.MaxMessageBytes < 1<<10 {
		return nferr.Queryf("storage service: MaxMessageBytes %d is too small (min 1 KiB)", o.MaxMessageBytes)
	}
	if o.ScanParallelism <= 0 {
		o.ScanParallelism = 1
	}
	if o.NodeID == "" {
		h, _ := os.Hostname()
		o.NodeID = h
	}
	return nil
}

// Server is a running storage service.
type Server struct {
	flight.BaseFlightServer
	db   *DB
	opts ServerOptions
	grpc *grpc.Server
	lis  net.Listener
	done chan struct{}
	err  error
	// localToken proves a client shares the node's directory ("": local
	// reads are off).
	localToken string
}

const statsTrailer = "nicflow-scan-stats"

// maxPutFile bounds a received file (a corrupt or hostile header must not
// make the node fill its disk).
const maxPutFile = 64 << 30

// NewServer creates a storage service over db listening on addr
// ("127.0.0.1:0" picks a port). Serve starts it.
func NewServer(db *DB, addr string, opts ServerOptions) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nferr.IOf("storage node %s: listening on %s: %w", opts.NodeID, addr, err)
	}
	// NB: scans stream megabytes per request: 1 MiB socket buffers cut
	// the write syscalls (gRPC's default is 32 KiB) and 16 MiB windows keep
	// a stream from stalling on flow control between nearby nodes.
	gopts := []grpc.ServerOption{grpc.MaxRecvMsgSize(16 << 20),
		grpc.WriteBufferSize(1 << 20), grpc.ReadBufferSize(1 << 20),
		grpc.InitialWindowSize(16 << 20), grpc.InitialConnWindowSize(32 << 20)}
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s := &Server{db: db, opts: opts, lis: lis, grpc: grpc.NewServer(gopts...), done: make(chan struct{})}
	if !opts.DisableLocalReads {
		// NB: a directory we cannot write a token to only disables local
		// reads; the service itself still works.
		if tok, err := writeLocalToken(db.Dir()); err == nil {
			s.localToken = tok
		}
	} else {
		// A token left by an earlier run would let pooled clients keep
		// reading locally.
		os.Remove(filepath.Join(db.Dir(), localReadToken))
	}
	flight.RegisterFlightServiceServer(s.grpc, s)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Serve serves until Stop; it returns nil after a Stop.
func (s *Server) Serve() error {
	err := s.grpc.Serve(s.lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop stops accepting calls and waits for running ones (up to timeout,
// then cancels them).
func (s *Server) Stop(timeout time.Duration) {
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		s.grpc.Stop()
		<-done
	}
}

func (s *Server) statusErr(err error) error { return nferr.ToStatus(err) }

// decodeStatus rebuilds an nferr error from a gRPC error of node: the kind
// the node sent, or the kind of the status code (a node that cannot be
// reached is unavailable: scans fail over to a replica).
func decodeStatus(err error, node string) error {
	return nferr.FromStatus(err, "storage node "+node)
}

// DoGet streams a scan.
func (s *Server) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.statusErr(nferr.Internalf("storage node %s: scan panicked: %v", s.opts.NodeID, r))
		}
	}()
	spec, err := UnmarshalScanSpec(tkt.GetTicket())
	if err != nil {
		return s.statusErr(err)
	}
	if err := s.holds(spec); err != nil {
		return s.statusErr(err)
	}
	start := time.Now()
	sc, err := s.db.NewScanner(spec, ScanOptions{Parallelism: s.opts.ScanParallelism})
	if err != nil {
		return s.statusErr(err)
	}
	defer sc.Close()
	var scanErr error // the scan's own error, for the observer
	if obs := s.opts.ScanObserver; obs != nil {
		defer func() { obs(time.Since(start), sc.Stats(), scanErr) }()
	}
	ctx := stream.Context()
	w := flight.NewRecordWriter(stream, scanWriterOptions(sc.Schema(), spec.Codec)...)
	defer w.Close()
	for {
		rec, err := sc.Next(ctx)
		if err != nil {
			scanErr = err
			return s.statusErr(err)
		}
		if rec == nil {
			break
		}
		err = writeSplit(w, rec, s.opts.MaxMessageBytes)
		rec.Release()
		if err != nil {
			scanErr = nferr.Unavailablef("storage node %s: sending records: %v", s.opts.NodeID, err)
			return s.statusErr(scanErr)
		}
	}
	st, _ := json.Marshal(sc.Stats())
	stream.SetTrailer(metadata.Pairs(statsTrailer, string(st)))
	return nil
}

// scanWriterOptions are the IPC writer options of a scan stream: its
// schema and the body compression the client asked for. A buffer that
// compression would shrink by less than a tenth is sent as it is.
func scanWriterOptions(schema *arrow.Schema, codec string) []ipc.Option {
	opts := []ipc.Option{ipc.WithSchema(schema)}
	switch codec {
	case "lz4":
		opts = append(opts, ipc.WithLZ4(), ipc.WithMinSpaceSavings(0.1))
	case "zstd":
		opts = append(opts, ipc.WithZstd(), ipc.WithMinSpaceSavings(0.1))
	}
	return opts
}

// recordBytes estimates a record's IPC body size.
func recordBytes(rec arrow.RecordBatch) int {
	n := 0
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += b.Len()
			}
		}
	}
	return n
}

// writeSplit writes rec as slices of at most about max bytes.
func writeSplit(w *flight.Writer, rec arrow.RecordBatch, max int) error {
	size := recordBytes(rec)
	rows := rec.NumRows()
	if size <= max || rows <= 1 {
		return w.Write(rec)
	}
	parts := int64((size + max - 1) / max)
	step := (rows + parts - 1) / parts
	for off := int64(0); off < rows; off += step {
		part := rec.NewSlice(off, min(off+step, rows))
		err := w.Write(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) tableInfo(t *Table) (*flight.FlightInfo, error) {
	sch, err := ArrowSchema(t.Columns)
	if err != nil {
		return nil, err
	}
	tkt, err := MarshalScanSpec(ScanSpec{Table: t.QualifiedName()}.AllColumns(t))
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sch, memory.DefaultAllocator),
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{t.QualifiedName()}},
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     t.Rows(),
		TotalBytes:       t.Bytes(),
	}, nil
}

// ListFlights lists the node's tables.
func (s *Server) ListFlights(_ *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	for _, t := range s.db.Tables() {
		info, err := s.tableInfo(t)
		if err != nil {
			return s.statusErr(err)
		}
		if err := stream.Send(info); err != nil {
			return err
		}
	}
	return nil
}

// GetFlightInfo describes one table (descriptor path = [table]).
func (s *Server) GetFlightInfo(_ context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if d == nil || len(d.GetPath()) != 1 {
		return nil, s.statusErr(nferr.Queryf("flight descriptor must be a path naming one table"))
	}
	t, err := s.db.Table(d.GetPath()[0])
	if err != nil {
		return nil, s.statusErr(err)
	}
	info, err := s.tableInfo(t)
	if err != nil {
		return nil, s.statusErr(err)
	}
	return info, nil
}

// putHeader describes a file sent with DoPut.
type putHeader struct {
	Magic    string   `json:"magic"`
	Table    string   `json:"table"`
	Columns  []Column `json:"columns"`
	Path     string   `json:"path"` // relative path to store the file at
	Size     int64    `json:"size"`
	Checksum string   `json:"checksum"`
}

const putMagic = "nfput1"

// DoPut receives one file for placement and registers it.
func (s *Server) DoPut(stream flight.FlightService_DoPutServer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.statusErr(nferr.Internalf("storage node %s: put panicked: %v", s.opts.NodeID, r))
		}
	}()
	first, err := stream.Recv()
	if err != nil {
		return s.statusErr(nferr.Dataf("put: no header: %v", err))
	}
	var h putHeader
	if first.GetFlightDescriptor() == nil {
		return s.statusErr(nferr.Dataf("put: the first message has no descriptor"))
	}
	if err := json.Unmarshal(first.GetFlightDescriptor().GetCmd(), &h); err != nil || h.Magic != putMagic {
		return s.statusErr(nferr.Dataf("put: malformed file header"))
	}
	if h.Size < 0 || h.Size > maxPutFile {
		return s.statusErr(nferr.Dataf("put: file size %d out of range", h.Size))
	}
	body := &putReader{stream: stream, buf: first.GetDataBody()}
	if err := s.db.ReceiveFile(stream.Context(), h, body); err != nil {
		return s.statusErr(err)
	}
	return stream.Send(&flight.PutResult{AppMetadata: []byte("ok")})
}

type putReader struct {
	stream flight.FlightService_DoPutServer
	buf    []byte
	eof    bool
}

func (r *putReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		m, err := r.stream.Recv()
		if err == io.EOF {
			r.eof = true
			continue
		}
		if err != nil {
			return 0, err
		}
		r.buf = m.GetDataBody()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// ReceiveFile stores a file sent by another node (placement) and adds it
// to table h.Table, creating the table if needed. A file with the same
// path replaces the old one. Atomic like every catalog change.
func (db *DB) ReceiveFile(ctx context.Context, h putHeader, body io.Reader) error {
	s, n, err := splitName(h.Table)
	if err != nil {
		return err
	}
	rel := filepath.Clean(h.Path)
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "..") || filepath.Dir(rel) != tableDir(s, n) || !strings.HasSuffix(rel, ".parquet") {
		return nferr.Dataf("put: bad file path %q for table %s", h.Path, h.Table)
	}
	if _, err := ArrowSchema(h.Columns); err != nil || len(h.Columns) == 0 {
		return nferr.Dataf("put: bad columns for table %s", h.Table)
	}
	if t, _ := db.cat.lookup(h.Table); t != nil {
		if len(t.Columns) != len(h.Columns) {
			return nferr.Dataf("put: table %s has %d columns here, the file's table %d", h.Table, len(t.Columns), len(h.Columns))
		}
		for i := range t.Columns {
			if !strings.EqualFold(t.Columns[i].Name, h.Columns[i].Name) || t.Columns[i].Type != h.Columns[i].Type {
				return nferr.Dataf("put: table %s column %d is %s %s here, %s %s in the file's table", h.Table, i+1,
					t.Columns[i].Name, t.Columns[i].Type, h.Columns[i].Name, h.Columns[i].Type)
			}
		}
		if t.External {
			return nferr.Queryf("put: table %s is external here", h.Table)
		}
	}
	dir := filepath.Join(db.dir, tableDir(s, n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nferr.IOf("creating %s: %w", dir, err)
	}
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	tx := db.cat.begin()
	id := tx.nextID()
	tmpName := fmt.Sprintf(".tmp-%016x-put", id)
	tx.putJSON([]byte(fmt.Sprintf("%s%016x", pfxIntent, id)), &intent{ID: id, Dir: tableDir(s, n), Prefixes: []string{tmpName}, PID: os.Getpid(), Started: time.Now().UTC()})
	err = tx.commit()
	db.cat.unlockWrite()
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, tmpName)
	cleanup := func() {
		os.Remove(tmp)
		if db.cat.lockWrite() == nil {
			_ = db.cat.pdb.Delete([]byte(fmt.Sprintf("%s%016x", pfxIntent, id)), nil)
			db.cat.unlockWrite()
		}
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		cleanup()
		return nferr.IOf("creating %s: %w", tmp, err)
	}
	hh := xxh3.New()
	nw, err := io.Copy(io.MultiWriter(f, hh), io.LimitReader(body, h.Size+1))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		if ctx.Err() != nil {
			return nferr.With(nferr.KindCanceled, ctx.Err())
		}
		return nferr.IOf("receiving %s: %v", rel, err)
	}
	if nw != h.Size || formatChecksum(hh.Sum64()) != h.Checksum {
		cleanup()
		return nferr.Dataf("put: file %s arrived damaged: %d bytes with checksum %s, expected %d bytes with %s", rel, nw, formatChecksum(hh.Sum64()), h.Size, h.Checksum)
	}
	fm, _, err := db.describeFile(tmp, h.Columns)
	if err != nil {
		cleanup()
		return err
	}
	final := filepath.Join(db.dir, rel)
	if err := os.Rename(tmp, final); err != nil {
		cleanup()
		return nferr.IOf("installing %s: %w", final, err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	fm.Path = rel
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	old := db.cat.tables[tableKeyName(s, n)]
	var t Table
	if old != nil {
		t = *old
		t.Generation++
		t.Files = nil
		for _, of := range old.Files {
			if of.Path != rel {
				t.Files = append(t.Files, of)
			}
		}
	} else {
		t = Table{Schema: s, Name: n, Columns: h.Columns, Generation: 1, Created: time.Now().UTC(), Received: true}
	}
	tx = db.cat.begin()
	fm.ID = tx.nextID()
	t.Files = append(t.Files, fm)
	tx.putTable(&t)
	tx.b.Delete([]byte(fmt.Sprintf("%s%016x", pfxIntent, id)), nil)
	if err := tx.commit(); err != nil {
		return err
	}
	db.fs.footers.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), final+"\x00") {
			db.fs.footers.Delete(k)
		}
		return true
	})
	return nil
}

// ---------------------------------------------------------------------------
// Client side.

// ClientOptions configure connections to storage nodes.
type ClientOptions struct {
	// TLS for the connections; nil: plaintext.
	TLS *tls.Config
	// MaxMessageBytes is the largest message accepted (default 64 MiB).
	MaxMessageBytes int
	// LocalReads lets scans read a storage node's files directly when this
	// process sees the node's directory (same machine and filesystem,
	// proved by a token the node writes there): the node then does no work
	// and nothing crosses the network. Scans fall back to Flight whenever
	// that is not so. See localread.go.
	LocalReads bool
	// Pool, when set, lends the connections to storage nodes (and keeps
	// what local-read handshakes learned) across scanners: a worker's tasks
	// then share one TLS connection per node instead of dialing their own.
	// The pool must be used with one TLS configuration only.
	Pool *ClientPool
	// Codec is the compression storage nodes apply to the batches of this
	// client's Flight scans (ScanSpec.Codec): "" or "none", "lz4", "zstd".
	// It trades the nodes' and this client's CPU for network bytes.
	Codec string
	// ScanMode is how storage nodes serve scans this client does not read
	// locally (remotebytes.go): ScanModeBytes, the Parquet bytes as
	// stored, decoded here; ScanModeRows, the node's own scan, filtered
	// Arrow batches; ScanModeAuto ("", the default): bytes, unless the
	// scan's filter is estimated to keep at most PushdownSelectivity of
	// the rows (ScanSpec.Selectivity), when the node's filtered batches
	// cost the network less.
	ScanMode string
}

// Scan modes (ClientOptions.ScanMode).
const (
	ScanModeAuto  = "auto"
	ScanModeBytes = "bytes"
	ScanModeRows  = "rows"
)

// ScanModes are the values of ClientOptions.ScanMode.
var ScanModes = []string{ScanModeAuto, ScanModeBytes, ScanModeRows}

// CheckScanMode validates a scan mode name ("" is auto).
func CheckScanMode(m string) error {
	switch m {
	case "", ScanModeAuto, ScanModeBytes, ScanModeRows:
		return nil
	}
	return nferr.Queryf("scan mode %q: want auto, bytes or rows", m)
}

// PushdownSelectivity is the estimated fraction of rows a filter keeps at
// or below which ScanModeAuto has the storage node filter: Parquet's
// encodings and compression make the stored bytes of TPC-H's columns 3 to
// 8 times smaller than their Arrow batches, so filtered batches cost the
// network less only when the filter keeps fewer rows than about that.
var PushdownSelectivity = 0.1

// bytesFor reports whether a scan with spec is served as stored bytes.
func (o *ClientOptions) bytesFor(spec ScanSpec) bool {
	switch o.ScanMode {
	case ScanModeBytes:
		return true
	case ScanModeRows:
		return false
	}
	return !(spec.Filter != nil && spec.Selectivity > 0 && spec.Selectivity <= PushdownSelectivity)
}

// ClientPool holds connections to storage nodes, shared by every scanner
// given it in ClientOptions.Pool, and the local-read handshakes they made
// (each reuse checked against the plan's file checksums and the node's
// token file; see localread.go). It is safe for concurrent use. Close it
// when the process stops serving.
type ClientPool struct {
	mu     sync.Mutex
	m      map[string]flight.Client
	local  map[string]*localTable
	closed bool
}

// NewClientPool returns an empty pool.
func NewClientPool() *ClientPool { return &ClientPool{} }

func (p *ClientPool) get(addr string, opts ClientOptions) (flight.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nferr.Unavailablef("storage node %s: the connection pool is closed", addr)
	}
	if cl, ok := p.m[addr]; ok {
		return cl, nil
	}
	cl, err := dialNode(addr, opts)
	if err != nil {
		return nil, err
	}
	if p.m == nil {
		p.m = map[string]flight.Client{}
	}
	p.m[addr] = cl
	return cl, nil
}

// Warm opens the pooled connection to the storage node at addr now (TLS
// and HTTP/2 set-up, a few milliseconds, more on a loaded machine) rather
// than in the first scan that needs it: gRPC dials lazily, so it makes one
// cheap call (ListActions; any answer, even "unimplemented", means the
// connection is up). Errors are returned for logging only: a scan dials
// again when it needs the node.
func (p *ClientPool) Warm(ctx context.Context, addr string, opts ClientOptions) error {
	cl, err := p.get(addr, opts)
	if err != nil {
		return err
	}
	st, err := cl.ListActions(ctx, &flight.Empty{})
	if err == nil {
		for {
			if _, err = st.Recv(); err != nil {
				break
			}
		}
	}
	if err == io.EOF || status.Code(err) == codes.Unimplemented {
		return nil
	}
	return err
}

// Close closes the pooled connections; later scans through the pool fail.
func (p *ClientPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cl := range p.m {
		cl.Close()
	}
	p.m, p.local, p.closed = nil, nil, true
	return nil
}

// nodeClients are a scanner's connections: those of ClientOptions.Pool,
// or of a pool of its own, closed with it.
type nodeClients struct {
	opts ClientOptions
	pool *ClientPool
}

func newNodeClients(opts ClientOptions) *nodeClients {
	c := &nodeClients{opts: opts, pool: opts.Pool}
	if c.pool == nil {
		c.pool = NewClientPool()
	}
	return c
}

func (c *nodeClients) get(addr string) (flight.Client, error) {
	return c.pool.get(addr, c.opts)
}

func (c *nodeClients) close() {
	if c.opts.Pool == nil {
		c.pool.Close()
	}
}

// dialNode makes a Flight client for a storage node.
func dialNode(addr string, opts ClientOptions) (flight.Client, error) {
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	max := opts.MaxMessageBytes
	if max <= 0 {
		max = 64 << 20
	}
	cl, err := flight.NewClientWithMiddleware(addr, nil, nil,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max)),
		// NB: as the server's (NewServer): big buffers and windows for
		// streamed scans.
		grpc.WithWriteBufferSize(1<<20), grpc.WithReadBufferSize(1<<20),
		grpc.WithInitialWindowSize(16<<20), grpc.WithInitialConnWindowSize(32<<20))
	if err != nil {
		return nil, nferr.Unavailablef("storage node %s: %v", addr, err)
	}
	return cl, nil
}

// Place copies the files of a table to storage nodes and records the
// placement in the catalog in one batch: the files, in the table's order
// (the order rows were written, often key order), are cut into len(nodes)
// contiguous blocks, block k's files on node k and the `replication`-1
// nodes after it. A wide scan's task reads a contiguous block of row
// groups too (phys.TaskShare), so with a task per node each task's rows
// lie on one node (and a worker beside it reads them locally) instead of
// a slice of every node's. Files already on a node are not sent again.
func (db *DB) Place(ctx context.Context, table string, nodes []Node, replication int, opts ClientOptions) error {
	if len(nodes) == 0 {
		return nferr.Queryf("place %s: no storage nodes", table)
	}
	if replication <= 0 {
		replication = 1
	}
	if replication > len(nodes) {
		return nferr.Queryf("place %s: replication factor %d exceeds the %d storage nodes", table, replication, len(nodes))
	}
	t, err := db.Table(table)
	if err != nil {
		return err
	}
	if t.External {
		return nferr.Queryf("place %s: external tables are not placed", table)
	}
	cl := newNodeClients(opts)
	defer cl.close()
	placed := make(map[uint64][]string, len(t.Files))
	for i, f := range t.Files {
		var ids []string
		home := i * len(nodes) / len(t.Files)
		for r := 0; r < replication; r++ {
			n := nodes[(home+r)%len(nodes)]
			ids = append(ids, n.ID)
			already := false
			for _, have := range f.Nodes {
				already = already || have == n.ID
			}
			if already {
				continue
			}
			if err := db.sendFile(ctx, cl, n, t, f); err != nil {
				return err
			}
		}
		placed[f.ID] = ids
	}
	if err := db.SetNodes(nodes); err != nil {
		return err
	}
	return db.setPlacement(t, placed)
}

// setPlacement records the nodes holding each file of t (by file ID),
// unless t changed since it was read.
func (db *DB) setPlacement(t *Table, placed map[uint64][]string) error {
	if err := db.cat.lockWrite(); err != nil {
		return err
	}
	defer db.cat.unlockWrite()
	cur := db.cat.tables[tableKeyName(t.Schema, t.Name)]
	if cur == nil || cur.Generation != t.Generation {
		return nferr.Queryf("place %s: the table changed while its files were being sent; run it again", t.QualifiedName())
	}
	nt := *cur
	nt.Files = make([]*File, len(cur.Files))
	for i, f := range cur.Files {
		nf := *f
		nf.Nodes = placed[f.ID]
		nt.Files[i] = &nf
	}
	nt.Generation++
	tx := db.cat.begin()
	tx.putTable(&nt)
	return tx.commit()
}

func (db *DB) sendFile(ctx context.Context, cl *nodeClients, n Node, t *Table, f *File) error {
	c, err := cl.get(n.Addr)
	if err != nil {
		return err
	}
	src, err := os.Open(db.Path(f))
	if err != nil {
		return fileErr(db.Path(f), err)
	}
	defer src.Close()
	stream, err := c.DoPut(ctx)
	if err != nil {
		return decodeStatus(err, n.ID)
	}
	h, _ := json.Marshal(putHeader{Magic: putMagic, Table: t.QualifiedName(), Columns: t.Columns, Path: f.Path, Size: f.Size, Checksum: f.Checksum})
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: h}
	// NB: 1 MiB chunks stay well under gRPC's 4 MiB default message limit.
	buf := make([]byte, 1<<20)
	first := true
	for {
		k, rerr := io.ReadFull(src, buf)
		if k > 0 || first {
			m := &flight.FlightData{DataBody: append([]byte(nil), buf[:k]...)}
			if first {
				m.FlightDescriptor = desc
				first = false
			}
			if err := stream.Send(m); err != nil {
				_, rerr2 := stream.Recv()
				return decodeStatus(errors.Join(err, rerr2), n.ID)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nferr.IOf("reading %s: %v", db.Path(f), rerr)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return decodeStatus(err, n.ID)
	}
	if _, err := stream.Recv(); err != nil {
		return decodeStatus(err, n.ID)
	}
	return nil
}

// RemoteScanner runs scans on storage nodes: it prunes row groups with the
// local catalog's statistics, sends each node a ScanSpec naming the files
// (and surviving row groups) it holds, and merges the nodes' streams. A
// file is read from its first replica; when a node fails before sending
// anything, its files are retried on their next replicas.
type RemoteScanner struct {
	db    *DB
	nodes map[string]string
	cl    *nodeClients
}

// NewRemoteScanner makes a client for the given nodes (nil: the nodes
// recorded in the catalog).
func NewRemoteScanner(db *DB, nodes []Node, opts ClientOptions) *RemoteScanner {
	if nodes == nil {
		nodes = db.Nodes()
	}
	m := map[string]string{}
	for _, n := range nodes {
		m[n.ID] = n.Addr
	}
	return &RemoteScanner{db: db, nodes: m, cl: newNodeClients(opts)}
}

// Close closes the connections.
func (r *RemoteScanner) Close() error { r.cl.close(); return nil }

// ScanSchema implements Source.
func (r *RemoteScanner) ScanSchema(spec ScanSpec) (*arrow.Schema, error) {
	return r.db.ScanSchema(spec)
}

// OpenScan implements Source.
func (r *RemoteScanner) OpenScan(ctx context.Context, spec ScanSpec, opts ScanOptions) (RecordIterator, error) {
	plan, err := r.db.NewScanner(spec, ScanOptions{})
	if err != nil {
		return nil, err
	}
	defer plan.Close()
	if opts.Alloc == nil {
		opts.Alloc = memory.DefaultAllocator
	}
	it := &remoteIter{r: r, schema: plan.Schema(), alloc: opts.Alloc, spec: spec, parallelism: opts.Parallelism, keyFilters: opts.KeyFilters}
	it.stats.RowGroupsTotal = plan.stats.RowGroupsTotal
	it.stats.RowGroupsPruned = plan.stats.RowGroupsPruned
	// Group surviving row groups by file, files by replica.
	type fileRGs struct {
		f   *File
		rgs []int
	}
	var order []*File
	byFile := map[*File]*fileRGs{}
	for _, t := range plan.tasks {
		fr := byFile[t.file]
		if fr == nil {
			fr = &fileRGs{f: t.file}
			byFile[t.file] = fr
			order = append(order, t.file)
		}
		fr.rgs = append(fr.rgs, t.rg)
	}
	ranges := make([]FileRange, len(order))
	files := map[string]*File{}
	for i, f := range order {
		ranges[i] = FileRange{Path: f.Path, RowGroups: byFile[f].rgs}
		files[f.Path] = f
	}
	if err := it.start(ctx, ranges, files, " (run placement first)"); err != nil {
		return nil, err
	}
	return it, nil
}

// start fetches ranges, the files' row groups to read, from the first
// replica of each file, one goroutine per node. A file that is not in files
// or is placed on no node is an error (unplacedHint ends its text).
func (it *remoteIter) start(ctx context.Context, ranges []FileRange, files map[string]*File, unplacedHint string) error {
	groups := map[string][]FileRange{}
	var nodeOrder []string
	for _, fr := range ranges {
		f := files[fr.Path]
		if f == nil || len(f.Nodes) == 0 {
			return nferr.Queryf("scan of %s: file %s is not placed on any storage node%s", it.spec.Table, fr.Path, unplacedHint)
		}
		node := f.Nodes[0]
		if _, ok := groups[node]; !ok {
			nodeOrder = append(nodeOrder, node)
		}
		groups[node] = append(groups[node], fr)
	}
	ctx, it.cancel = context.WithCancel(ctx)
	it.ch = make(chan delivered, 2*max(1, len(groups)))
	it.errc = make(chan error, len(groups)+1)
	for _, node := range nodeOrder {
		it.wg.Add(1)
		go it.fetch(ctx, node, groups[node], files, map[string]bool{node: true})
	}
	go func() { it.wg.Wait(); close(it.ch) }()
	return nil
}

type remoteIter struct {
	r      *RemoteScanner
	schema *arrow.Schema
	alloc  memory.Allocator
	spec   ScanSpec
	// parallelism of a local scan (ScanOptions.Parallelism).
	parallelism int
	// keyFilters are the scan's join key filters (ScanOptions.KeyFilters):
	// a scan of the node's files run here applies them too.
	keyFilters []ScanKeyFilter
	// keepRG keeps the row-group counts of the node's scans (PlacedScanner:
	// the client planned nothing; RemoteScanner counted them already).
	keepRG bool
	stats  ScanStats
	cancel context.CancelFunc
	ch     chan delivered
	// lastFiltered: the record Next returned last went through the key
	// filters (LastFiltered).
	lastFiltered bool
	errc         chan error
	wg           sync.WaitGroup
	err          error
	closed       bool
}

// fetch streams one node's share; on a failure before the first record
// it retries each file on a replica not yet tried.
func (it *remoteIter) fetch(ctx context.Context, node string, frs []FileRange, files map[string]*File, tried map[string]bool) {
	defer it.wg.Done()
	got, err := it.stream(ctx, node, frs, files)
	if err == nil || ctx.Err() != nil {
		if err != nil && ctx.Err() == nil {
			it.fail(err)
		}
		return
	}
	// NB: a damaged or missing file at one replica (KindData) is read
	// from another as well: only a replica's good bytes are ever used.
	if got > 0 || !(nferr.Is(err, nferr.KindUnavailable) || nferr.Is(err, nferr.KindData)) {
		it.fail(err)
		return
	}
	// Failover: regroup by next untried replica.
	next := map[string][]FileRange{}
	for _, fr := range frs {
		alt := ""
		for _, n := range files[fr.Path].Nodes {
			if !tried[n] {
				alt = n
				break
			}
		}
		if alt == "" {
			it.fail(err)
			return
		}
		next[alt] = append(next[alt], fr)
	}
	for alt, g := range next {
		t2 := map[string]bool{alt: true}
		for k := range tried {
			t2[k] = true
		}
		it.wg.Add(1)
		go it.fetch(ctx, alt, g, files, t2)
	}
}

func (it *remoteIter) fail(err error) {
	select {
	case it.errc <- err:
	default:
	}
	it.cancel()
}

// stream runs one DoGet; it returns the number of records received.
func (it *remoteIter) stream(ctx context.Context, node string, frs []FileRange, files map[string]*File) (int, error) {
	addr, ok := it.r.nodes[node]
	if !ok {
		return 0, nferr.Unavailablef("storage node %s has no known address", node)
	}
	c, err := it.r.cl.get(addr)
	if err != nil {
		return 0, err
	}
	spec := it.spec
	spec.Files = frs
	spec.Codec = it.r.cl.opts.Codec
	opts := &it.r.cl.opts
	if bytes := opts.bytesFor(spec); opts.LocalReads || bytes {
		lt := it.localTableOf(ctx, c, addr, spec, files)
		if opts.LocalReads && lt.files != nil {
			sc, err := it.nodeScanner(lt.files, lt, spec)
			if err != nil {
				return 0, err
			}
			if sc != nil {
				return it.streamLocal(ctx, sc, func(s *ScanStats) { s.LocalScans = 1 })
			}
		}
		if bytes && lt.table != nil && bytesReadable(lt.table, spec.Files) {
			wire := &atomic.Int64{}
			sc, err := it.nodeScanner(remoteFileSet(ctx, c, node, addr, spec.Table, wire), lt, spec)
			if err != nil {
				return 0, err
			}
			if sc != nil {
				return it.streamLocal(ctx, sc, func(s *ScanStats) { s.ByteScans, s.WireBytes = 1, wire.Load() })
			}
		}
	}
	tkt, err := MarshalScanSpec(spec)
	if err != nil {
		return 0, err
	}
	name := node + " (" + addr + ")"
	st, err := c.DoGet(ctx, &flight.Ticket{Ticket: tkt})
	if err != nil {
		return 0, decodeStatus(err, name)
	}
	counted := &countingStream{FlightService_DoGetClient: st}
	rdr, err := flight.NewRecordReader(counted, ipc.WithAllocator(it.alloc))
	if err != nil {
		return 0, decodeStatus(err, name)
	}
	defer rdr.Release()
	n := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		if err := it.deliver(ctx, rec, false); err != nil {
			return n, err
		}
		n++
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return n, decodeStatus(err, name)
	}
	var s ScanStats
	if tr := st.Trailer(); len(tr.Get(statsTrailer)) == 1 {
		_ = json.Unmarshal([]byte(tr.Get(statsTrailer)[0]), &s)
	}
	s.WireBytes = counted.n
	it.addStats(s)
	return n, nil
}

// countingStream counts the payload bytes of a DoGet's messages.
type countingStream struct {
	flight.FlightService_DoGetClient
	n int64
}

func (c *countingStream) Recv() (*flight.FlightData, error) {
	d, err := c.FlightService_DoGetClient.Recv()
	if d != nil {
		c.n += int64(len(d.DataHeader) + len(d.DataBody) + len(d.AppMetadata))
	}
	return d, err
}

// addStats adds the figures of one node's scan (over Flight or local).
func (it *remoteIter) addStats(s ScanStats) {
	if !it.keepRG {
		// Row groups were counted (and pruned) by this client's plan.
		s.RowGroupsTotal, s.RowGroupsPruned = 0, 0
	}
	it.stats.add(&s)
}

// delivered is a record on its way to Next, and whether the key filters
// were applied to it.
type delivered struct {
	rec      arrow.RecordBatch
	filtered bool
}

// deliver hands rec (owned by the iterator) to Next, or releases it when
// the scan is canceled first; filtered: it went through the key filters.
func (it *remoteIter) deliver(ctx context.Context, rec arrow.RecordBatch, filtered bool) error {
	select {
	case it.ch <- delivered{rec, filtered}:
		return nil
	case <-ctx.Done():
		rec.Release()
		return nferr.With(nferr.KindCanceled, ctx.Err())
	}
}

func (it *remoteIter) Schema() *arrow.Schema { return it.schema }

func (it *remoteIter) Stats() ScanStats { return it.stats.load() }

func (it *remoteIter) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if it.err != nil {
		return nil, it.err
	}
	select {
	case d, ok := <-it.ch:
		if ok {
			it.lastFiltered = d.filtered
			return d.rec, nil
		}
		select {
		case err := <-it.errc:
			it.err = err
			return nil, err
		default:
		}
		return nil, nil
	case <-ctx.Done():
		it.err = nferr.With(nferr.KindCanceled, ctx.Err())
		return nil, it.err
	}
}

func (it *remoteIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	it.cancel()
	for d := range it.ch {
		d.rec.Release()
	}
	it.wg.Wait()
	return nil
}

// LastFiltered implements KeyFilterReporter: the records of the node's
// files read here (locally or as stored bytes) went through the scan's key
// filters (nodeScanner gives them to the Scanner); rows sent by the node
// over Flight did not.
func (it *remoteIter) LastFiltered() bool { return it.lastFiltered }

// PlacedTable is what a node without the catalog (a cluster worker) needs
// to scan a placed table through storage nodes: the columns and, per file,
// the storage nodes holding a replica (primary first). The coordinator
// takes it from its catalog (DB.PlacedTable) and ships it in plan
// fragments.
type PlacedTable struct {
	Columns []Column            `json:"columns"`
	Files   map[string][]string `json:"files"`
	// Checksums are the files' checksums (File.Checksum) by path: a worker
	// reuses a local-read handshake only for files whose checksum it knows.
	Checksums map[string]string `json:"checksums,omitempty"`
}

// PlacedTable returns the placement of a table's files. A file placed on
// no storage node is an error naming it.
func (db *DB) PlacedTable(name string) (*PlacedTable, error) {
	t, err := db.Table(name)
	if err != nil {
		return nil, err
	}
	pt := &PlacedTable{Columns: t.Columns, Files: make(map[string][]string, len(t.Files))}
	for _, f := range t.Files {
		if len(f.Nodes) == 0 {
			return nil, nferr.Queryf("table %s: file %s is not placed on any storage node (run `nicflow storage place`)", t.QualifiedName(), f.Path)
		}
		pt.Files[f.Path] = append([]string(nil), f.Nodes...)
		if f.Checksum != "" {
			if pt.Checksums == nil {
				pt.Checksums = make(map[string]string, len(t.Files))
			}
			pt.Checksums[f.Path] = f.Checksum
		}
	}
	return pt, nil
}

// PlacedScanner is a Source for nodes without the catalog: scans whose
// ScanSpec.Files name the row groups to read (the coordinator pruned them
// with its statistics) go to the storage nodes holding the files, with
// the projection and the predicate, so filtering happens at the storage
// node; like RemoteScanner it fails over to the next replica when a node
// fails before sending anything.
type PlacedScanner struct {
	tables map[string]*Table
	r      *RemoteScanner
}

// NewPlacedScanner makes a source over the given tables (by the name used
// in ScanSpec.Table) and storage nodes.
func NewPlacedScanner(tables map[string]*PlacedTable, nodes []Node, opts ClientOptions) *PlacedScanner {
	m := map[string]string{}
	for _, n := range nodes {
		m[n.ID] = n.Addr
	}
	ts := make(map[string]*Table, len(tables))
	for name, pt := range tables {
		t := &Table{Name: name, Columns: pt.Columns}
		for path, ns := range pt.Files {
			t.Files = append(t.Files, &File{Path: path, Nodes: ns, Checksum: pt.Checksums[path]})
		}
		ts[strings.ToLower(name)] = t
	}
	return &PlacedScanner{tables: ts, r: &RemoteScanner{nodes: m, cl: newNodeClients(opts)}}
}

// Close closes the connections.
func (p *PlacedScanner) Close() error { return p.r.Close() }

func (p *PlacedScanner) table(name string) (*Table, error) {
	t, ok := p.tables[strings.ToLower(name)]
	if !ok {
		return nil, nferr.Internalf("scan of %s: the plan fragment carries no placement for it", name)
	}
	return t, nil
}

// ScanSchema implements Source.
func (p *PlacedScanner) ScanSchema(spec ScanSpec) (*arrow.Schema, error) {
	t, err := p.table(spec.Table)
	if err != nil {
		return nil, err
	}
	return projectSchema(t, spec)
}

// OpenScan implements Source. spec.Files must name the files (and row
// groups) to read.
func (p *PlacedScanner) OpenScan(ctx context.Context, spec ScanSpec, opts ScanOptions) (RecordIterator, error) {
	t, err := p.table(spec.Table)
	if err != nil {
		return nil, err
	}
	sch, err := projectSchema(t, spec)
	if err != nil {
		return nil, err
	}
	if opts.Alloc == nil {
		opts.Alloc = memory.DefaultAllocator
	}
	files := map[string]*File{}
	for _, f := range t.Files {
		files[f.Path] = f
	}
	it := &remoteIter{r: p.r, schema: sch, alloc: opts.Alloc, spec: spec, parallelism: opts.Parallelism, keyFilters: opts.KeyFilters, keepRG: true}
	if err := it.start(ctx, spec.Files, files, ""); err != nil {
		return nil, err
	}
	return it, nil
}
