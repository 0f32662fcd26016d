package dist

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
	"github.com/nicflow/nicflow/storage"
)

// LocalDistOptions configure RunDistributedLocal.
type LocalDistOptions struct {
	// Source runs the scans (the database, or a PlacedScanner).
	Source storage.Source
	// Alloc allocates every task's buffers (tests: a checked allocator).
	Alloc memory.Allocator
	// Analyze runs the tasks with EXPLAIN ANALYZE reports.
	Analyze bool
	// BatchSize of the tasks (0: default).
	BatchSize int
	// Held keeps the held outputs of adaptive waves (nil: DefaultHeld);
	// SpillDir is where they and the tasks spill (FragmentEnv.SpillDir).
	Held     *HeldStore
	SpillDir string
}

// LocalDistResult is what RunDistributedLocal returns.
type LocalDistResult struct {
	// Records are the result batches (the caller releases them).
	Records []arrow.RecordBatch
	Stats   *DistStats
	// BytesShuffled sums the payload bytes of every exchange.
	BytesShuffled int64
	// Plan is the plan that ran: the one given, or what Adapt made of it.
	Plan *DistPlan
}

var localQuery atomic.Uint64

// RunDistributedLocal runs a distributed plan in this process: one shuffle
// agent per simulated worker on an in-process network (shuffle.MemNetwork),
// every task on its own goroutine, wide stages' task t on worker t, single
// stages spread round-robin. It exercises the distributed planner and the
// network exchanges without a cluster (tests, and comparing plans).
func RunDistributedLocal(ctx context.Context, dp *DistPlan, o LocalDistOptions) (res *LocalDistResult, err error) {
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	w := dp.Workers
	net := shuffle.NewMemNetwork()
	q := localQuery.Add(1)
	peers := make([]string, w)
	for i := range peers {
		peers[i] = fmt.Sprintf("mem:dist-%d-%d", q, i)
	}
	agents := make([]*shuffle.Agent, w)
	clients := make([]*shuffle.Client, w)
	xs := make([]*Exchanges, w)
	defer func() {
		for _, x := range xs {
			if x != nil {
				x.Close()
			}
		}
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
		for _, a := range agents {
			if a != nil {
				a.Close()
			}
		}
	}()
	for i := range agents {
		a, err := shuffle.NewAgent(shuffle.AgentConfig{Node: i, Peers: peers, Mem: net, Options: shuffle.Options{Insecure: true}})
		if err != nil {
			return nil, err
		}
		agents[i] = a
		if clients[i], err = a.Client(); err != nil {
			return nil, err
		}
		xs[i] = NewExchanges(clients[i])
	}
	defer FragmentEnv{Held: o.Held}.held().Drop(fmt.Sprintf("local-%d.", q))
	dp, err = Adapt(ctx, dp, fmt.Sprintf("local-%d", q), func(ctx context.Context, wave *DistPlan) (map[string][]phys.HeldPart, *DistStats, error) {
		wres, parts, err := runLocalStages(ctx, wave, xs, o, localQuery.Add(1))
		var st *DistStats
		if wres != nil && o.Analyze {
			st = wres.Stats
		}
		return parts, st, err
	})
	if err != nil {
		return nil, err
	}
	res, _, err = runLocalStages(ctx, dp, xs, o, q)
	if res != nil {
		res.Plan = dp
	}
	return res, err
}

// runLocalStages runs every task of dp (a wave's held stages report their
// parts).
func runLocalStages(ctx context.Context, dp *DistPlan, xs []*Exchanges, o LocalDistOptions, q uint64) (res *LocalDistResult, parts map[string][]phys.HeldPart, err error) {
	w := len(xs)
	node := func(stage, task int) int {
		if n, ok := dp.HeldNode(stage, task); ok {
			return n
		}
		s := dp.Stage(stage)
		if s != nil && s.Tasks == 1 {
			return stage % w
		}
		return task % w
	}
	frags, err := dp.Fragments("local", q, node)
	if err != nil {
		return nil, nil, err
	}
	parts = map[string][]phys.HeldPart{}
	for _, s := range dp.Stages {
		if s.Out != nil && s.Out.Kind == exec.ExchangeHeld {
			parts[s.Out.Held] = make([]phys.HeldPart, s.Tasks)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	res = &LocalDistResult{}
	var mu sync.Mutex
	var reports []TaskReport
	var wg sync.WaitGroup
	var firstErr error
	var rootDone atomic.Bool
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil && !rootDone.Load() {
			firstErr = err
		}
		mu.Unlock()
		cancel(err)
	}
	root := dp.Root()
	if root.Out != nil {
		root = nil // a wave: every stage is held or feeds one
	}
	var counters []*FragmentCounters
	// Cross-stage key filters: every task's end, and the relay merging
	// the parts (the coordinator's job on a cluster).
	tfs := map[int][]*TaskFilters{}
	relay := NewFilterRelay(dp, func(kf phys.RemoteKeyFilter, p storage.KeyFilterPart) {
		for _, tf := range tfs[kf.ScanStage] {
			tf.Deliver(kf.ID, p)
		}
	})
	for _, s := range dp.Stages {
		for t := range frags[s.ID] {
			tfs[s.ID] = append(tfs[s.ID], NewTaskFilters(func(id int, p storage.KeyFilterPart) { relay.Part(id, t, p) }))
		}
	}
	for _, s := range dp.Stages {
		for t, f := range frags[s.ID] {
			f.BatchSize, f.Analyze = o.BatchSize, o.Analyze
			ctr := &FragmentCounters{}
			counters = append(counters, ctr)
			send := func(rec arrow.RecordBatch) error {
				if f.Analyze {
					r, err := DecodeReport(rec)
					if err != nil {
						return err
					}
					mu.Lock()
					reports = append(reports, r)
					mu.Unlock()
					return nil
				}
				if s != root {
					return nferr.Internalf("stage %d sent output to the coordinator", s.ID)
				}
				rec.Retain()
				mu.Lock()
				res.Records = append(res.Records, rec)
				mu.Unlock()
				return nil
			}
			n := node(s.ID, t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := RunFragment(ctx, f, FragmentEnv{Exchanges: xs[n], Source: o.Source, Alloc: o.Alloc, Send: send, Counters: ctr, Node: fmt.Sprintf("worker-%d", n),
					Filters: tfs[s.ID][t], Held: o.Held, SpillDir: o.SpillDir})
				if err != nil {
					fail(nferr.Wrap(nferr.KindOf(err), err, "stage %d task %d", s.ID, t))
					return
				}
				if s.Out != nil && s.Out.Kind == exec.ExchangeHeld {
					mu.Lock()
					parts[s.Out.Held][t] = phys.HeldPart{Node: n, Rows: ctr.Out.Rows.Load(), Hist: ctr.Hist}
					mu.Unlock()
				}
				if s == root {
					// The result is complete: whatever still runs (a
					// producer whose consumer stopped early) is not needed.
					rootDone.Store(true)
					cancel(nil)
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range counters {
		res.BytesShuffled += c.Sent.Bytes.Load()
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		for _, r := range res.Records {
			r.Release()
		}
		return nil, nil, firstErr
	}
	if o.Analyze {
		res.Stats = CollectStats(reports)
	}
	return res, parts, nil
}
