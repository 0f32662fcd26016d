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
	"time"

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
// the DoAction "nicflow.local-scan" with a ticket naming a table (the
// answer is kept in the client's ClientPool, which a worker's tasks share,
// and reused while the token file and the checksums of the files read
// still match it); the node answers with its directory, the token and the table's catalog
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

// DoAction serves localScanAction (the table handshake), readAction
// (remotebytes.go), inventoryAction (repair.go) and retainAction
// (retain.go).
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	switch a.GetType() {
	case inventoryAction:
		return s.inventory(stream)
	case retainAction:
		return s.retain(a.GetBody(), stream)
	case readAction:
		return s.readRanges(a.GetBody(), stream)
	}
	if a.GetType() != localScanAction {
		return status.Errorf(codes.Unimplemented, "storage node %s: unknown action %q", s.opts.NodeID, a.GetType())
	}
	// NB: with local reads off the token is empty: the reply still gives
	// the table's catalog entry, for reads of its stored bytes.
	spec, err := UnmarshalScanSpec(a.GetBody())
	if err != nil {
		return s.statusErr(err)
	}
	t, err := s.db.Table(spec.Table)
	if err != nil {
		return s.statusErr(err)
	}
	if t.root != nil {
		// NB: the files of a file table under a file access root open
		// through the root (files_root.go), which a client reading
		// them itself would not use: it scans through the node.
		return status.Errorf(codes.Unimplemented, "storage node %s: no local reads of files under a file access root", s.opts.NodeID)
	}
	// NB: Open made the directory absolute.
	body, err := json.Marshal(localScanReply{Dir: s.db.Dir(), Token: s.localToken, Table: t})
	if err != nil {
		return s.statusErr(nferr.Internalf("storage node %s: %v", s.opts.NodeID, err))
	}
	return stream.Send(&flight.Result{Body: body})
}

// localDirs holds, per directory a storage node announced and this
// process was shown to see, the files (and footers) read from it. It is
// process-wide so that every task of a worker shares the footer cache.
var localDirs sync.Map // dir -> *fileSet

// localTable is what a client learned from one node's table handshake:
// the node's catalog entry of the table (nil: the node did not answer;
// asked again after localRetry) and, when this process sees the node's
// directory, the files there (nil: read them over the network).
type localTable struct {
	files *fileSet
	table *Table
	// dir and token are the node's directory and the token that matched.
	dir, token string
	// at is when the node answered (a pooled "cannot" is asked again later).
	at time.Time
}

// localRetry is how long a pooled "cannot read locally" answer stands
// before the node is asked again (it may have been restarting).
const localRetry = 10 * time.Second

// reusable reports whether a pooled answer still holds for the files a
// scan reads: the node's token file is unchanged (a restarted node, or one
// that turned local reads off, invalidates it) and every file has the
// checksum the plan expects (a table replaced under the same file names
// does not reuse a stale catalog entry).
func (lt *localTable) reusable(frs []FileRange, files map[string]*File) bool {
	if lt.table == nil {
		return time.Since(lt.at) < localRetry
	}
	for _, fr := range frs {
		f, have := files[fr.Path], lt.table.file(fr.Path)
		if f == nil || f.Checksum == "" || have == nil || have.Checksum != f.Checksum {
			return false
		}
	}
	return lt.files == nil || holdsToken(lt.dir, lt.token)
}

// holdsToken reports whether dir's token file holds token.
func holdsToken(dir, token string) bool {
	b, err := os.ReadFile(filepath.Join(dir, localReadToken))
	return err == nil && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(string(b))), []byte(token)) == 1
}

// localTableOf returns whether this process sees the directory of the node
// at addr, and the table's catalog entry there. The answer is kept in the
// client pool (the scanner's own, or a worker's shared one) and serves
// later scans while it stays valid for their files
// (localTable.reusable).
func (it *remoteIter) localTableOf(ctx context.Context, c flight.Client, addr string, spec ScanSpec, files map[string]*File) *localTable {
	p := it.r.cl.pool
	key := addr + "\x00" + strings.ToLower(spec.Table)
	p.mu.Lock()
	lt, ok := p.local[key]
	p.mu.Unlock()
	if ok && lt.reusable(spec.Files, files) {
		return lt
	}
	lt = askLocal(ctx, c, spec.Table)
	p.mu.Lock()
	if p.local == nil {
		p.local = map[string]*localTable{}
	}
	p.local[key] = lt
	p.mu.Unlock()
	return lt
}

// askLocal runs the local-read handshake for a table.
func askLocal(ctx context.Context, c flight.Client, table string) *localTable {
	lt := &localTable{at: time.Now()}
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
	if err := json.Unmarshal(res.GetBody(), &r); err != nil || r.Table == nil {
		return lt
	}
	lt.table = r.Table
	if r.Dir == "" || r.Token == "" || !holdsToken(r.Dir, r.Token) {
		return lt
	}
	v, _ := localDirs.LoadOrStore(r.Dir, newFileSet(r.Dir))
	lt.files, lt.dir, lt.token = v.(*fileSet), r.Dir, r.Token
	return lt
}

// nodeScanner returns a Scanner of spec over the node's files in fs, with
// the node's catalog entry lt.table, or nil when the entry does not hold
// the files or differs from the plan (use DoGet: the node answers). An
// error is one of the scan itself (bad spec, a file failing its checks).
func (it *remoteIter) nodeScanner(fs *fileSet, lt *localTable, spec ScanSpec) (*Scanner, error) {
	if lt.table == nil {
		return nil, nil
	}
	for _, fr := range spec.Files {
		if lt.table.file(fr.Path) == nil {
			return nil, nil // placed there after we asked: let the node answer
		}
	}
	sc, err := newScanner(fs, lt.table, spec, ScanOptions{Alloc: it.alloc, Parallelism: it.parallelism, KeyFilters: it.keyFilters})
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

// streamLocal drains a scanner of the node's files (read locally or as
// stored bytes) into the iterator's channel; it returns the number of
// records sent. count adds to the scan's figures.
func (it *remoteIter) streamLocal(ctx context.Context, sc *Scanner, count func(*ScanStats)) (int, error) {
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
		if err := it.deliver(ctx, rec, len(it.keyFilters) > 0); err != nil {
			return n, err
		}
		n++
	}
	s := sc.Stats()
	count(&s)
	it.addStats(s)
	return n, nil
}

// file is the table's file at path (nil: none).
func (t *Table) file(path string) *File {
	for _, f := range t.Files {
		if f.Path == path {
			return f
		}
	}
	return nil
}
