package bench

import (
	"container/heap"
	"context"
	"encoding/binary"
	"math"

	"github.com/nicflow/nicflow/internal/nferr"
)

// sssp: single-source shortest paths by synchronous Bellman-Ford, Buddy's
// "communication-dominated" workload. Each rank owns Rows vertices of a
// random directed graph with RowDegree out-edges per vertex (weights
// 1-100). A round relaxes the out-edges of every vertex whose distance
// dropped in the previous round, sending (vertex, distance) to the owner;
// the round's channel ends with every sender's end of stream, which is the
// round's barrier. Every rank also tells every rank how many vertices it
// relaxed; a round in which nobody relaxed anything ends the run.
//
// Check: the sum of the distances of reachable vertices equals a Dijkstra
// run over the whole graph by rank 0 (before the clock starts).
type ssspApp struct {
	p      appParams
	rank   int
	ranks  int
	seed   uint64
	rowPtr []int32
	dst    []uint32 // global vertex ids
	wt     []uint32
	ref    uint64 // rank 0: Dijkstra's sum of distances
}

const ssspInf = math.MaxUint32

// ssspEdges generates vertex v's out-edges deterministically, so that any
// rank can rebuild any part of the graph.
func ssspEdges(seed uint64, v uint32, n uint32, degree int, f func(dst, w uint32)) {
	rng := seedFor(seed^0x55AA55AA, int(v))
	for d := 0; d < degree; d++ {
		r := rng.next()
		f(uint32(r%uint64(n)), uint32(r>>40%100)+1)
	}
}

func (s *ssspApp) prepare(rank, ranks int, seed uint64) error {
	s.rank, s.ranks, s.seed = rank, ranks, seed
	n := uint64(s.p.Rows) * uint64(ranks)
	if n >= 1<<31 {
		return nferr.Queryf("sssp: %d vertices exceed the 32-bit ids", n)
	}
	base := uint32(rank * s.p.Rows)
	s.rowPtr = make([]int32, s.p.Rows+1)
	for i := 0; i < s.p.Rows; i++ {
		ssspEdges(seed, base+uint32(i), uint32(n), s.p.RowDegree, func(d, w uint32) {
			s.dst = append(s.dst, d)
			s.wt = append(s.wt, w)
		})
		s.rowPtr[i+1] = int32(len(s.dst))
	}
	if rank == 0 {
		s.ref = ssspReference(seed, uint32(n), s.p.RowDegree)
	}
	return nil
}

// ssspReference runs Dijkstra from vertex 0 over the whole graph and
// returns the sum of the distances of reachable vertices.
func ssspReference(seed uint64, n uint32, degree int) uint64 {
	dist := make([]uint32, n)
	for i := range dist {
		dist[i] = ssspInf
	}
	dist[0] = 0
	h := &distHeap{{0, 0}}
	for h.Len() > 0 {
		it := heap.Pop(h).(distItem)
		if it.d != dist[it.v] {
			continue
		}
		ssspEdges(seed, it.v, n, degree, func(d, w uint32) {
			if nd := it.d + w; nd < dist[d] {
				dist[d] = nd
				heap.Push(h, distItem{d, nd})
			}
		})
	}
	var sum uint64
	for _, d := range dist {
		if d != ssspInf {
			sum += uint64(d)
		}
	}
	return sum
}

type distItem struct{ v, d uint32 }
type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func (s *ssspApp) run(ctx context.Context, c *rankComm) (appResult, error) {
	var res appResult
	rows := uint32(s.p.Rows)
	base := uint32(s.rank) * rows
	dist := make([]uint32, rows)
	for i := range dist {
		dist[i] = ssspInf
	}
	var active []uint32
	if s.rank == 0 {
		dist[0] = 0
		active = append(active, 0)
	}
	inNext := make([]bool, rows)
	var next []uint32
	var msg [8]byte
	var cnt [4]byte
	ep := c.ep
	for round := 0; ; round++ {
		if round > 0 {
			var err error
			if ep, err = c.open(round); err != nil {
				return res, err
			}
		}
		var relaxedAnywhere uint64
		recv := func(p []byte) error {
			switch len(p) {
			case 4: // a rank's count of relaxed vertices this round
				relaxedAnywhere += uint64(binary.LittleEndian.Uint32(p))
			case 8:
				v := binary.LittleEndian.Uint32(p[0:4])
				d := binary.LittleEndian.Uint32(p[4:8])
				if v < base || v >= base+rows {
					return nferr.Dataf("sssp: vertex %d is not on rank %d", v, s.rank)
				}
				l := v - base
				if d < dist[l] {
					dist[l] = d
					if !inNext[l] {
						inNext[l] = true
						next = append(next, l)
					}
				}
			default:
				return nferr.Dataf("sssp: message of %d bytes", len(p))
			}
			res.RecvMsgs++
			return nil
		}
		binary.LittleEndian.PutUint32(cnt[:], uint32(len(active)))
		for r := 0; r < s.ranks; r++ {
			if err := conveyor(ctx, ep, r, cnt[:], recv); err != nil {
				return res, err
			}
			res.Msgs++
			res.Bytes += 4
		}
		for _, u := range active {
			du := dist[u]
			for k := s.rowPtr[u]; k < s.rowPtr[u+1]; k++ {
				v := s.dst[k]
				binary.LittleEndian.PutUint32(msg[0:4], v)
				binary.LittleEndian.PutUint32(msg[4:8], du+s.wt[k])
				if err := conveyor(ctx, ep, int(v/rows), msg[:], recv); err != nil {
					return res, err
				}
				res.Msgs++
				res.Bytes += 8
			}
		}
		if err := finish(ctx, ep, recv); err != nil {
			return res, err
		}
		ep.Close()
		if relaxedAnywhere == 0 {
			break
		}
		active, next = next, active[:0]
		for _, l := range active {
			inNext[l] = false
		}
	}
	for _, d := range dist {
		if d != ssspInf {
			res.CheckA += uint64(d)
		}
	}
	res.CheckB = s.ref
	return res, nil
}
