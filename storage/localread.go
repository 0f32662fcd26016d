package storage

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Short-circuit local reads.
//
// A worker that shares a filesystem with a storage node (the same machine,
// or a DPU with the node's SSD mounted) can decode the node's Parquet files
// itself instead of receiving the decoded batches over Flight: the node
// then does no work for the scan, and neither side pays for IPC encoding,
// TLS and gRPC copies. HDFS calls this a short-circuit read.
//
// Protocol: the storage service writes a random token to
// DIR/localReadToken at start. A client with ClientOptions.LocalReads sends
// the DoAction "nicflow.local-scan" with a ticket naming a table (once per
// client, node and table: a worker task asks once for all its scans); the
// node answers with its directory, the token and the table's catalog
// entry. If the client can read DIR/localReadToken and it holds the
// same token, the directory it sees is the node's own, and it scans the
// files there with the same Scanner (pruning, filters, checks of size and
// footer against the catalog entry) the node would have run. Anything else
// (another machine, another mount namespace, no permission, an old node
// without the action) falls back to DoGet, silently: local reads are an
// optimization, never a requirement.
//
// Failure semantics differ in one way: once a worker reads locally, the
// scan no longer depends on the storage process (a killed node does not
// fail it), only on its files.

// localReadToken is the token file's name in a storage node's directory.
const localReadToken = ".nicflow-local-read"

// localScanAction is the Flight action type of the local-read handshake.
const localScanAction = "nicflow.local-scan"

// localScanReply answers localScanAction.
type localScanReply struct {
	Dir   string `json:"dir"`
	Token string `json:"token"`
	// Table is the catalog entry of the table the ticket names.
	Table *Table `json:"table"`
}

// writeLocalToken writes a fresh token to dir and returns it.
func writeLocalToken(dir string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	if err := writeFileAtomic(filepath.Join(dir, localReadToken), []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// DoAction serves localScanAction.
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	if a.GetType() != localScanAction {
		return status.Errorf(codes.Unimplemented, "storage node %s: unknown action %q", s.opts.NodeID, a.GetType())
	}
	if s.localToken == "" {
		return status.Errorf(codes.Unimplemented, "storage node %s: local reads are off", s.opts.NodeID)
	}
	spec, err := UnmarshalScanSpec(a.GetBody())
	if err != nil {
		return s.statusErr(err)
	}
	t, err := s.db.Table(spec.Table)
	if err != nil {
		return s.statusErr(err)
	}
	// NB: Open made the directory absolute.
	body, err := json.Marshal(localScanReply{Dir: s.db.Dir(), Token: s.localToken, Table: t})
	if err != nil {
		return s.statusErr(nferr.Internalf("storage node %s: %v", s.opts.NodeID, err))
	}
	return stream.Send(&flight.Result{Body: body})
}

// localDirs caches, per directory a storage node announced, whether this
// process sees it (the token matched) and the footers read from it. It is
// process-wide so that every task of a worker shares the footer cache.
var localDirs sync.Map // dir -> *localDir

type localDir struct {
	mu    sync.Mutex
	token string // last token that matched ("" none)
	files *fileSet
}

// sees reports whether dir holds token, reading the token file only when
// the token changed (a restarted node writes a new one).
func (d *localDir) sees(dir, token string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.token == token {
		return true
	}
	b, err := os.ReadFile(filepath.Join(dir, localReadToken))
	if err != nil || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(string(b))), []byte(token)) != 1 {
		return false
	}
	d.token = token
	return true
}

// localTable is what a client learned about reading one table of one
// node locally: nil table when it cannot.
type localTable struct {
	files *fileSet
	table *Table
}

// localTableOf asks the node at addr (once per client and table) whether
// this process sees its directory, and for the table's catalog entry.
func (it *remoteIter) localTableOf(ctx context.Context, c flight.Client, addr, table string) *localTable {
	cl := it.r.cl
	key := addr + "\x00" + strings.ToLower(table)
	cl.mu.Lock()
	lt, ok := cl.local[key]
	cl.mu.Unlock()
	if ok {
		return lt
	}
	lt = &localTable{}
	defer func() {
		cl.mu.Lock()
		if cl.local == nil {
			cl.local = map[string]*localTable{}
		}
		cl.local[key] = lt
		cl.mu.Unlock()
	}()
	tkt, err := MarshalScanSpec(ScanSpec{Table: table})
	if err != nil {
		return lt
	}
	st, err := c.DoAction(ctx, &flight.Action{Type: localScanAction, Body: tkt})
	if err != nil {
		return lt
	}
	res, err := st.Recv()
	if err != nil {
		return lt
	}
	// Drain to the end of the stream so the call completes.
	for {
		if _, err := st.Recv(); err != nil {
			break
		}
	}
	var r localScanReply
	if err := json.Unmarshal(res.GetBody(), &r); err != nil || r.Table == nil || r.Dir == "" || r.Token == "" {
		return lt
	}
	v, _ := localDirs.LoadOrStore(r.Dir, &localDir{})
	d := v.(*localDir)
	if !d.sees(r.Dir, r.Token) {
		return lt
	}
	d.mu.Lock()
	if d.files == nil {
		d.files = &fileSet{dir: r.Dir}
	}
	lt.files, lt.table = d.files, r.Table
	d.mu.Unlock()
	return lt
}

// localScanner returns a Scanner over the node's files for spec when this
// process sees the node's directory, or nil (use DoGet). An error is one
// of the scan itself (bad spec, a file failing its checks).
func (it *remoteIter) localScanner(ctx context.Context, c flight.Client, addr string, spec ScanSpec) (*Scanner, error) {
	lt := it.localTableOf(ctx, c, addr, spec.Table)
	if lt.table == nil {
		return nil, nil
	}
	for _, fr := range spec.Files {
		if !lt.table.hasFile(fr.Path) {
			return nil, nil // placed there after we asked: let the node answer
		}
	}
	sc, err := newScanner(lt.files, lt.table, spec, ScanOptions{Alloc: it.alloc, Parallelism: it.parallelism})
	if err != nil {
		return nil, err
	}
	if !sameSchema(sc.Schema(), it.schema) {
		sc.Close()
		return nil, nil // the node's table differs from the plan's: let it say so over DoGet
	}
	return sc, nil
}

func sameSchema(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// streamLocal drains a local scanner into the iterator's channel; it
// returns the number of records sent.
func (it *remoteIter) streamLocal(ctx context.Context, sc *Scanner) (int, error) {
	defer sc.Close()
	n := 0
	for {
		rec, err := sc.Next(ctx)
		if err != nil {
			return n, err
		}
		if rec == nil {
			break
		}
		if err := it.deliver(ctx, rec); err != nil {
			return n, err
		}
		n++
	}
	s := sc.Stats()
	if !it.keepRG {
		// Row groups were counted (and pruned) by the caller's plan already.
		s.RowGroupsTotal, s.RowGroupsPruned = 0, 0
	}
	s.LocalScans = 1
	it.stats.add(&s)
	return n, nil
}

func (t *Table) hasFile(path string) bool {
	for _, f := range t.Files {
		if f.Path == path {
			return true
		}
	}
	return false
}
