package cluster

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// NodeInfo is what a node advertises to the cluster: its identity, role,
// resources and the addresses of its ports. It travels in memberlist's node
// metadata (see encodeMeta), so every member knows every other member's
// NodeInfo without asking.
type NodeInfo struct {
	// ID is the node's unique name (memberlist's node name).
	ID string `json:"id"`
	// Role is the node's role.
	Role Role `json:"role"`
	// GossipAddr is the memberlist address (host:port).
	GossipAddr string `json:"gossip_addr"`
	// Cores and Memory (bytes) are what the node offers to tasks.
	Cores  int   `json:"cores"`
	Memory int64 `json:"memory"`
	// NICBandwidth is the node's network bandwidth in bits per second.
	NICBandwidth int64 `json:"nic_bandwidth"`
	// ControlAddr is the gRPC address: Flight client port on a coordinator,
	// task control port on a worker.
	ControlAddr string `json:"control_addr"`
	// DataAddr is the shuffle agent's address ("" if none).
	DataAddr string `json:"data_addr,omitempty"`
	// FlightAddr is the Flight storage service's address ("" if none).
	FlightAddr string `json:"flight_addr,omitempty"`
	// AdminAddr is the HTTP admin address ("" if disabled). It is usually
	// bound to loopback and reachable only on the node's own machine.
	AdminAddr string `json:"admin_addr,omitempty"`
	// Started is when the node process started (distinguishes a restarted
	// node that reuses its ID).
	Started time.Time `json:"started"`
	// Leaving is set by a node that is shutting down gracefully: schedulers
	// stop placing work on it, and its departure is reported as a leave,
	// not a failure.
	Leaving bool `json:"leaving,omitempty"`
}

func (n NodeInfo) String() string {
	return fmt.Sprintf("%s %s (%s)", n.Role, n.ID, n.GossipAddr)
}

// metaVersion is the first byte of the encoded metadata. A node that reads a
// version it does not know ignores the member (it cannot schedule on it) and
// logs why, instead of misreading it.
const metaVersion = 1

// metaMaxSize is memberlist.MetaMaxSize: memberlist refuses larger metadata.
const metaMaxSize = 512

const metaFlagLeaving = 1

// encodeMeta writes n (all fields but ID and GossipAddr, which memberlist
// carries itself) as: version u8, role u8, cores uvarint, memory uvarint,
// bandwidth uvarint, started (unix ms) uvarint, four addresses as uvarint
// length + bytes (control, data, flight, admin), then a flags byte (bit 0:
// leaving).
func encodeMeta(n NodeInfo) ([]byte, error) {
	b := make([]byte, 0, 128)
	b = append(b, metaVersion, byte(n.Role))
	b = binary.AppendUvarint(b, uint64(n.Cores))
	b = binary.AppendUvarint(b, uint64(n.Memory))
	b = binary.AppendUvarint(b, uint64(n.NICBandwidth))
	b = binary.AppendUvarint(b, uint64(n.Started.UnixMilli()))
	for _, s := range []string{n.ControlAddr, n.DataAddr, n.FlightAddr, n.AdminAddr} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	var flags byte
	if n.Leaving {
		flags |= metaFlagLeaving
	}
	b = append(b, flags)
	if len(b) > metaMaxSize {
		return nil, nferr.Queryf("node metadata is %d bytes, more than memberlist's %d: shorten the advertised addresses", len(b), metaMaxSize)
	}
	return b, nil
}

// decodeMeta parses metadata written by encodeMeta. It never panics; a
// malformed or unknown-version payload is a KindData error.
func decodeMeta(b []byte) (NodeInfo, error) {
	var n NodeInfo
	if len(b) < 2 {
		return n, nferr.Dataf("node metadata: %d bytes, too short", len(b))
	}
	if b[0] != metaVersion {
		return n, nferr.Dataf("node metadata: version %d, this node reads version %d (mixed nicflow versions?)", b[0], metaVersion)
	}
	n.Role = Role(b[1])
	if n.Role < RoleCoordinator || n.Role > RoleStorage {
		return n, nferr.Dataf("node metadata: unknown role %d", b[1])
	}
	p := 2
	next := func(what string, max uint64) (uint64, error) {
		v, k := binary.Uvarint(b[p:])
		if k <= 0 {
			return 0, nferr.Dataf("node metadata: truncated %s at byte %d", what, p)
		}
		if v > max {
			return 0, nferr.Dataf("node metadata: %s %d out of range", what, v)
		}
		p += k
		return v, nil
	}
	v, err := next("cores", 1<<16)
	if err != nil {
		return n, err
	}
	n.Cores = int(v)
	if v, err = next("memory", 1<<62); err != nil {
		return n, err
	}
	n.Memory = int64(v)
	if v, err = next("bandwidth", 1<<62); err != nil {
		return n, err
	}
	n.NICBandwidth = int64(v)
	if v, err = next("start time", 1<<50); err != nil {
		return n, err
	}
	n.Started = time.UnixMilli(int64(v))
	for _, dst := range []*string{&n.ControlAddr, &n.DataAddr, &n.FlightAddr, &n.AdminAddr} {
		l, err := next("address length", metaMaxSize)
		if err != nil {
			return n, err
		}
		if uint64(len(b)-p) < l {
			return n, nferr.Dataf("node metadata: address of %d bytes overruns the %d-byte payload", l, len(b))
		}
		*dst = string(b[p : p+int(l)])
		p += int(l)
	}
	if p < len(b) {
		n.Leaving = b[p]&metaFlagLeaving != 0
	}
	// NB: trailing bytes are allowed: a later minor revision of version 1 may
	// append fields that older nodes ignore.
	return n, nil
}
