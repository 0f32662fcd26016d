package shuffle

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Spec describes one channel: a set of sender tasks streaming messages to a
// set of receiver tasks, each task placed on a node. One exchange of one
// query stage is one channel; a Buddy application is one channel whose
// ranks are both senders and receivers.
//
// Every node that runs a task of the channel opens it with the same Spec;
// agents build their next-hop tables from it.
type Spec struct {
	// ID names the channel, unique in the cluster while it is in use (the
	// engine derives it from the query and exchange ids). Not 0.
	ID uint64
	// Senders[s] is the node index of sender task s.
	Senders []int
	// Receivers[r] is the node index of receiver task r.
	Receivers []int
}

// maxSpecNodes bounds node indexes: 65536 nodes is far beyond any cluster
// this layer targets, and keeps next-hop tables small.
const maxSpecNodes = 1 << 16

// UniformSpec returns a Spec for nodes*perNode ranks that are both senders
// and receivers, rank i on node i/perNode (Buddy's MPI layout).
func UniformSpec(id uint64, nodes, perNode int) *Spec {
	s := &Spec{ID: id, Senders: make([]int, nodes*perNode), Receivers: make([]int, nodes*perNode)}
	for i := range s.Senders {
		s.Senders[i] = i / perNode
		s.Receivers[i] = i / perNode
	}
	return s
}

// Validate checks the spec against a cluster of the given number of nodes.
func (s *Spec) Validate(nodes int) error {
	if s == nil {
		return nferr.Internalf("shuffle: nil channel spec")
	}
	if s.ID == 0 {
		return nferr.Internalf("shuffle: channel id 0 is reserved")
	}
	if len(s.Senders) == 0 || len(s.Receivers) == 0 {
		return nferr.Internalf("shuffle: channel %#x needs at least one sender and one receiver", s.ID)
	}
	if len(s.Receivers) > MaxReceivers || len(s.Senders) > MaxReceivers {
		return nferr.Internalf("shuffle: channel %#x has %d senders and %d receivers, limit %d", s.ID, len(s.Senders), len(s.Receivers), MaxReceivers)
	}
	for i, n := range s.Senders {
		if n < 0 || n >= nodes || n >= maxSpecNodes {
			return nferr.Internalf("shuffle: channel %#x: sender %d on node %d, cluster has %d nodes", s.ID, i, n, nodes)
		}
	}
	for i, n := range s.Receivers {
		if n < 0 || n >= nodes || n >= maxSpecNodes {
			return nferr.Internalf("shuffle: channel %#x: receiver %d on node %d, cluster has %d nodes", s.ID, i, n, nodes)
		}
	}
	return nil
}

func (s *Spec) equal(o *Spec) bool {
	return s.ID == o.ID && slices.Equal(s.Senders, o.Senders) && slices.Equal(s.Receivers, o.Receivers)
}

// nodes is one more than the largest node index in the spec.
func (s *Spec) nodes() int {
	n := 0
	for _, x := range s.Senders {
		n = max(n, x+1)
	}
	for _, x := range s.Receivers {
		n = max(n, x+1)
	}
	return n
}

// Open and close frame bodies: i32 sender, i32 receiver (-1: none), then for
// open the spec: u64 id, u32 #senders, u32 #receivers, u16 node per task.
func encodeOpen(s *Spec, sender, receiver int) []byte {
	b := make([]byte, 0, 24+2*(len(s.Senders)+len(s.Receivers)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(sender)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(receiver)))
	b = binary.LittleEndian.AppendUint64(b, s.ID)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Senders)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Receivers)))
	for _, n := range s.Senders {
		b = binary.LittleEndian.AppendUint16(b, uint16(n))
	}
	for _, n := range s.Receivers {
		b = binary.LittleEndian.AppendUint16(b, uint16(n))
	}
	return b
}

func decodeOpen(b []byte) (s *Spec, sender, receiver int, err error) {
	if len(b) < 24 {
		return nil, 0, 0, fmt.Errorf("open frame of %d bytes", len(b))
	}
	sender = int(int32(binary.LittleEndian.Uint32(b[0:4])))
	receiver = int(int32(binary.LittleEndian.Uint32(b[4:8])))
	s = &Spec{ID: binary.LittleEndian.Uint64(b[8:16])}
	ns := binary.LittleEndian.Uint32(b[16:20])
	nr := binary.LittleEndian.Uint32(b[20:24])
	if ns > MaxReceivers || nr > MaxReceivers || int64(len(b)) != 24+2*(int64(ns)+int64(nr)) {
		return nil, 0, 0, fmt.Errorf("open frame of %d bytes for %d senders and %d receivers", len(b), ns, nr)
	}
	s.Senders = make([]int, ns)
	s.Receivers = make([]int, nr)
	off := 24
	for i := range s.Senders {
		s.Senders[i] = int(binary.LittleEndian.Uint16(b[off:]))
		off += 2
	}
	for i := range s.Receivers {
		s.Receivers[i] = int(binary.LittleEndian.Uint16(b[off:]))
		off += 2
	}
	if sender < -1 || sender >= len(s.Senders) || receiver < -1 || receiver >= len(s.Receivers) {
		return nil, 0, 0, fmt.Errorf("open frame for sender %d and receiver %d of a %dx%d channel", sender, receiver, ns, nr)
	}
	return s, sender, receiver, nil
}

func encodeClose(sender, receiver int) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b[0:4], uint32(int32(sender)))
	binary.LittleEndian.PutUint32(b[4:8], uint32(int32(receiver)))
	return b
}

func decodeClose(b []byte) (sender, receiver int, err error) {
	if len(b) != 8 {
		return 0, 0, fmt.Errorf("close frame of %d bytes", len(b))
	}
	return int(int32(binary.LittleEndian.Uint32(b[0:4]))), int(int32(binary.LittleEndian.Uint32(b[4:8]))), nil
}
