package storage

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Keeping placements true. A storage node may lose files (a new disk, a
// directory copied without its catalog) or leave the cluster; the catalog
// that placed the files must notice and act:
//   - a node asked for a table or file it does not hold answers
//     KindUnavailable (a stale placement), so scans fail over to a replica
//     and the query may be retried, never a "table does not exist";
//   - DB.Repair asks every alive node what it holds (inventoryAction),
//     sends every file that has fewer good copies than the replication
//     factor to nodes that lack it, and records where the good copies are.

// inventoryAction lists the files a storage node holds.
const inventoryAction = "nicflow.inventory"

// heldFile is one file in a node's inventory.
type heldFile struct {
	Table    string `json:"table"`
	Path     string `json:"path"`
	Checksum string `json:"checksum"`
}

// holds refuses a scan of a table or file this node does not hold.
func (s *Server) holds(spec ScanSpec) error {
	t, err := s.db.Table(spec.Table)
	if err != nil {
		return nferr.Unavailablef("storage node %s does not hold table %s (a stale placement: it lost its copy)", s.opts.NodeID, spec.Table)
	}
	if len(spec.Files) == 0 {
		return nil
	}
	have := make(map[string]bool, len(t.Files))
	for _, f := range t.Files {
		have[f.Path] = true
	}
	for _, fr := range spec.Files {
		if !have[fr.Path] {
			return nferr.Unavailablef("storage node %s does not hold file %s of table %s (a stale placement: it lost its copy)", s.opts.NodeID, fr.Path, spec.Table)
		}
	}
	return nil
}

// inventory answers inventoryAction: every file of every table whose file
// is present with its recorded size.
func (s *Server) inventory(stream flight.FlightService_DoActionServer) error {
	var out []heldFile
	for _, t := range s.db.Tables() {
		for _, f := range t.Files {
			if s.db.checkSize(f) != nil {
				continue
			}
			out = append(out, heldFile{Table: t.QualifiedName(), Path: f.Path, Checksum: f.Checksum})
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return s.statusErr(nferr.Internalf("inventory: %v", err))
	}
	return stream.Send(&flight.Result{Body: b})
}

// inventoryOf asks node n for its inventory: file path -> checksum.
func inventoryOf(ctx context.Context, cl *nodeClients, n Node) (map[string]string, error) {
	c, err := cl.get(n.Addr)
	if err != nil {
		return nil, err
	}
	st, err := c.DoAction(ctx, &flight.Action{Type: inventoryAction})
	if err != nil {
		return nil, decodeStatus(err, n.ID)
	}
	r, err := st.Recv()
	if err != nil {
		return nil, decodeStatus(err, n.ID)
	}
	var files []heldFile
	if err := json.Unmarshal(r.GetBody(), &files); err != nil {
		return nil, nferr.Dataf("storage node %s: malformed inventory: %v", n.ID, err)
	}
	m := make(map[string]string, len(files))
	for _, f := range files {
		m[f.Path] = f.Checksum
	}
	return m, nil
}

// RepairReport says what Repair did.
type RepairReport struct {
	// Copied counts files sent to a node; Unreachable lists nodes whose
	// inventory could not be read (treated as holding nothing).
	Copied      int
	Unreachable []string
}

// Repair brings every placed table back to replication copies on the
// given (alive) storage nodes: files a node lost, or whose only copies were
// on nodes not given, are sent again from this database (the catalog's
// source), and the catalog records the nodes that hold good copies, those
// that held them before first, then former holders that could not be asked
// (they may return). Tables never placed are left alone.
func (db *DB) Repair(ctx context.Context, nodes []Node, replication int, opts ClientOptions) (RepairReport, error) {
	var rep RepairReport
	if len(nodes) == 0 {
		return rep, nil
	}
	replication = min(max(replication, 1), len(nodes))
	cl := newNodeClients(opts)
	defer cl.close()
	inv := map[string]map[string]string{}
	for _, n := range nodes {
		m, err := inventoryOf(ctx, cl, n)
		if err != nil {
			if ctx.Err() != nil {
				return rep, nferr.With(nferr.KindCanceled, ctx.Err())
			}
			rep.Unreachable = append(rep.Unreachable, n.ID)
			continue
		}
		inv[n.ID] = m
	}
	byID := map[string]Node{}
	var ids []string
	for _, n := range nodes {
		if _, ok := inv[n.ID]; ok {
			byID[n.ID] = n
			ids = append(ids, n.ID)
		}
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return rep, nil
	}
	for _, t := range db.Tables() {
		if t.External || !placedAnywhere(t) {
			continue
		}
		changed := false
		placed := make(map[uint64][]string, len(t.Files))
		for i, f := range t.Files {
			var good []string
			for _, id := range f.Nodes { // former holders first
				if sum, ok := inv[id][f.Path]; ok && sum == f.Checksum {
					good = append(good, id)
				}
			}
			for k := 0; len(good) < replication && k < len(ids); k++ {
				id := ids[(i+k)%len(ids)]
				if slices.Contains(good, id) {
					continue
				}
				if sum, ok := inv[id][f.Path]; !ok || sum != f.Checksum {
					if err := db.sendFile(ctx, cl, byID[id], t, f); err != nil {
						return rep, err
					}
					rep.Copied++
				}
				good = append(good, id)
			}
			// Former holders that could not be asked (down, or not given)
			// stay listed after the good copies: they may come back with
			// their files, and a scan tries them last.
			for _, id := range f.Nodes {
				if _, asked := inv[id]; !asked && !slices.Contains(good, id) {
					good = append(good, id)
				}
			}
			if !slices.Equal(good, f.Nodes) {
				changed = true
			}
			placed[f.ID] = good
		}
		if changed {
			if err := db.setPlacement(t, placed); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

func placedAnywhere(t *Table) bool {
	for _, f := range t.Files {
		if len(f.Nodes) > 0 {
			return true
		}
	}
	return false
}
