package storage

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Pruning storage nodes. The catalog that places tables (a coordinator's)
// is the only source of truth about what a storage node should hold: when
// a statement rewrites a table (UPDATE, DELETE, an upsert, a compaction)
// or drops it, the nodes still hold the old files. DB.Prune tells every
// node, per table, the files the catalog places there (retainAction); the
// node drops, among the tables it received by placement (Table.Received),
// those the catalog no longer has or whose columns changed (a table
// dropped and created again under its name), and the files the catalog no
// longer places on it. Tables a node loaded itself are never touched.
//
// A scan planned before a prune may ask a node for a file it has just
// dropped: the node answers KindUnavailable (a stale placement, see
// repair.go) and the query is retried with the new catalog.

// retainAction asks a storage node to keep only the listed files of the
// tables it received.
const retainAction = "nicflow.retain"

// maxRetainBody bounds a retain request (a catalog of many tables and
// files is still far below it).
const maxRetainBody = 64 << 20

// retainTable is one table a node should keep, with the files it should
// keep (paths relative to the database directory).
type retainTable struct {
	Table   string   `json:"table"`
	Columns []Column `json:"columns"`
	Files   []string `json:"files"`
}

// PruneReport says what a prune did on one node.
type PruneReport struct {
	// Tables and Files count the received tables dropped and the files
	// removed from tables that stay.
	Tables int `json:"tables"`
	Files  int `json:"files"`
}

// Prune tells every given node which files of which tables the catalog
// places on it, and the nodes drop the rest of what they received. It
// returns the nodes' reports by node ID and the nodes that could not be
// reached (they are pruned by a later call). A file placed on a node is
// kept there even if the placement is stale. Callers must not run it
// concurrently with Place or Repair on the same nodes (a file sent but
// not yet recorded would be dropped).
func (db *DB) Prune(ctx context.Context, nodes []Node, opts ClientOptions) (map[string]PruneReport, []string, error) {
	tables := db.Tables()
	cl := newNodeClients(opts)
	defer cl.close()
	reps := map[string]PruneReport{}
	var unreachable []string
	for _, n := range nodes {
		keep := make([]retainTable, 0, len(tables))
		for _, t := range tables {
			if t.External {
				continue
			}
			rt := retainTable{Table: t.QualifiedName(), Columns: t.Columns, Files: []string{}}
			for _, f := range t.Files {
				if slices.Contains(f.Nodes, n.ID) {
					rt.Files = append(rt.Files, f.Path)
				}
			}
			keep = append(keep, rt)
		}
		rep, err := retainOn(ctx, cl, n, keep)
		if err != nil {
			if ctx.Err() != nil {
				return reps, unreachable, nferr.With(nferr.KindCanceled, ctx.Err())
			}
			unreachable = append(unreachable, n.ID)
			continue
		}
		reps[n.ID] = rep
	}
	return reps, unreachable, nil
}

func retainOn(ctx context.Context, cl *nodeClients, n Node, keep []retainTable) (PruneReport, error) {
	var rep PruneReport
	c, err := cl.get(n.Addr)
	if err != nil {
		return rep, err
	}
	body, err := json.Marshal(keep)
	if err != nil {
		return rep, nferr.Internalf("retain request: %v", err)
	}
	st, err := c.DoAction(ctx, &flight.Action{Type: retainAction, Body: body})
	if err != nil {
		return rep, decodeStatus(err, n.ID)
	}
	r, err := st.Recv()
	if err != nil {
		return rep, decodeStatus(err, n.ID)
	}
	if err := json.Unmarshal(r.GetBody(), &rep); err != nil {
		return rep, nferr.Dataf("storage node %s: malformed retain reply: %v", n.ID, err)
	}
	return rep, nil
}

// retain answers retainAction.
func (s *Server) retain(body []byte, stream flight.FlightService_DoActionServer) error {
	if len(body) > maxRetainBody {
		return s.statusErr(nferr.Dataf("retain: request of %d bytes exceeds %d", len(body), maxRetainBody))
	}
	var keep []retainTable
	if err := json.Unmarshal(body, &keep); err != nil {
		return s.statusErr(nferr.Dataf("retain: malformed request: %v", err))
	}
	rep, err := s.db.retain(keep)
	if err != nil {
		return s.statusErr(err)
	}
	b, _ := json.Marshal(rep)
	return stream.Send(&flight.Result{Body: b})
}

// retain drops the received tables not in keep (or kept with other
// columns) and the files of received tables that keep does not list, in
// one catalog commit; the files are deleted as garbage.
func (db *DB) retain(keep []retainTable) (PruneReport, error) {
	var rep PruneReport
	want := make(map[string]*retainTable, len(keep))
	for i := range keep {
		s, n, err := splitName(keep[i].Table)
		if err != nil {
			return rep, nferr.Dataf("retain: %v", err)
		}
		want[tableKeyName(s, n)] = &keep[i]
	}
	if err := db.cat.lockWrite(); err != nil {
		return rep, err
	}
	defer db.cat.unlockWrite()
	tx := db.cat.begin()
	var gs []*garbage
	for key, t := range db.cat.tables {
		if !t.Received || t.External {
			continue
		}
		k := want[key]
		if k == nil || !sameColumnDefs(t.Columns, k.Columns) {
			tx.dropTable(t.Schema, t.Name)
			gs = append(gs, db.garbageOf(tx, t, nil))
			rep.Tables++
			continue
		}
		files := make(map[string]bool, len(k.Files))
		for _, p := range k.Files {
			files[filepath.Clean(p)] = true
		}
		nt := *t
		nt.Files = nil
		for _, f := range t.Files {
			if files[filepath.Clean(f.Path)] {
				nt.Files = append(nt.Files, f)
			}
		}
		if len(nt.Files) == len(t.Files) {
			continue
		}
		rep.Files += len(t.Files) - len(nt.Files)
		nt.Generation++
		tx.putTable(&nt)
		gs = append(gs, db.garbageOf(tx, t, &nt))
	}
	if rep.Tables == 0 && rep.Files == 0 {
		tx.abort()
		return rep, nil
	}
	if err := tx.commit(); err != nil {
		return PruneReport{}, err
	}
	for _, g := range gs {
		db.finishGarbage(g)
	}
	return rep, nil
}

// sameColumnDefs: the same column names (case-insensitively) and types.
func sameColumnDefs(a, b []Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i].Name, b[i].Name) || a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}
