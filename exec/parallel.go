package exec

// Parallel plans inside one node.
//
// nicflow parallelizes a query on one node the way it parallelizes across
// nodes: the planner instantiates a pipeline once per core and joins the
// pipelines with exchanges (exchange.go). The helpers here assemble the two
// shapes that need more than an exchange:
//
//   - NewParallelHashJoin: N build pipelines fill ONE shared hash table
//     concurrently (partitioned by the row hash of the key, one key table
//     per partition, so inserters rarely wait for each other), and N probe
//     pipelines probe it concurrently. No repartition of the probe
//     side is needed, which is what makes a broadcast-style local join
//     cheap: the build side is shared memory, not copied N times.
//   - NewParallelHashAgg: N partial aggregates, then either one final
//     aggregate behind a Gather (few groups: TPC-H Q1), or a HashRepartition
//     by group key into M single-phase aggregates behind a Gather (many
//     groups: every group lives in exactly one aggregate).

import (
	"sync"
	"sync/atomic"

	"github.com/nicflow/nicflow/internal/nferr"
)

// sharedBuild is a hash join build shared by several probing HashJoins.
type sharedBuild struct {
	shape  *joinShape
	inputs []Operator

	once     sync.Once
	bt       *joinTable
	gb       *graceBuild // the build spilled (join_spill.go)
	spillW   atomic.Pointer[partWriters]
	err      error
	probers  int32
	closed   atomic.Int32
	inClosed bool
	closedIn []bool     // inputs closed early (they failed)
	mu       sync.Mutex // serializes inserts and input lifecycle

	keyFilters []JoinKeyFilter // published when the build completes
}

// closeInput closes input i as soon as it failed. NB: its siblings may be
// waiting for rows that an exchange can only deliver once the failed
// input stops holding its share of that exchange (a repartition blocks
// on a full output nobody reads): closing it now breaks that wait cycle
// (TestSharedBuildInputFails).
func (s *sharedBuild) closeInput(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inClosed || s.closedIn[i] {
		return
	}
	s.closedIn[i] = true
	s.inputs[i].Close()
}

// get builds the table on first call (draining every build input in its
// own goroutine) and returns it; later callers wait for the build.
func (s *sharedBuild) get(env *Env) (*joinTable, *graceBuild, error) {
	s.once.Do(func() { s.bt, s.err = s.build(env) })
	return s.bt, s.gb, s.err
}

// spillWriters returns the partition writers of a build that spills,
// creating them for the first input that runs out of memory.
func (s *sharedBuild) spillWriters(env *Env) (*partWriters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.spillW.Load(); w != nil {
		return w, nil
	}
	w, err := newPartWriters(env, "hash join build", s.shape.buildSchema, s.shape.buildKeys, 0)
	if err != nil {
		return nil, err
	}
	s.spillW.Store(w)
	return w, nil
}

func (s *sharedBuild) build(env *Env) (*joinTable, error) {
	// The key filters' values: each build goroutine collects its own,
	// merged into kc as it ends; published only when the table is built
	// in memory, disabled otherwise.
	kc := newKeyCollector(s.keyFilters, s.shape, env)
	var kcMu sync.Mutex
	built := false
	defer func() {
		if built {
			kc.publish()
		} else if kc != nil {
			kc.release()
			disableKeyFilters(s.keyFilters)
		}
	}()
	acct := env.NewSpillableAccount("hash join build")
	t := newJoinTable(s.shape, acct, s.shape.reserveKeys)
	parallel := len(s.inputs) > 1
	if parallel {
		// Enough partitions that concurrent inserters rarely meet.
		n := 1
		for n < 4*len(s.inputs) && n < maxJoinParts {
			n *= 2
		}
		t.partition(n, env)
	}
	s.mu.Lock()
	for _, in := range s.inputs {
		if err := in.Open(env); err != nil {
			s.mu.Unlock()
			return t, err
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(s.inputs))
	var failed atomic.Bool
	for i, in := range s.inputs {
		wg.Add(1)
		go func(i int, in Operator) {
			defer wg.Done()
			var sc buildScratch
			if kc != nil {
				sc.kc = newKeyCollector(s.keyFilters, s.shape, env)
				defer func() {
					kcMu.Lock()
					kc.merge(sc.kc)
					kcMu.Unlock()
				}()
			}
			if parallel {
				sc.part, _ = NewHashPartitioner(s.shape.buildSchema, s.shape.buildKeys, len(t.parts))
			}
			for !failed.Load() {
				if err := env.Ctx.Err(); err != nil {
					errs[i] = nferr.With(nferr.KindCanceled, err)
					failed.Store(true)
					return
				}
				if w := s.spillW.Load(); w != nil {
					// A sibling ran out of memory: the rest goes to disk.
					if err := drainTo(env, in, w); err != nil {
						errs[i] = err
						failed.Store(true)
						s.closeInput(i)
					}
					return
				}
				b, err := in.Next()
				if err != nil {
					errs[i] = err
					failed.Store(true)
					s.closeInput(i)
					return
				}
				if b == nil {
					return
				}
				if parallel {
					err = t.addBatchParallel(b, &sc)
				} else {
					err = t.addBatch(b, &sc)
				}
				if err != nil && joinCanSpill(env, s.shape, 0, err) {
					// NB: keep reading this input (into partition files):
					// siblings may wait on an exchange it shares.
					var w *partWriters
					if w, err = s.spillWriters(env); err == nil && !s.shape.storeBuild {
						err = w.write(b)
					}
					if err == nil {
						err = drainTo(env, in, w)
					}
				}
				if err != nil {
					errs[i] = err
					failed.Store(true)
					s.closeInput(i)
					return
				}
			}
		}(i, in)
	}
	wg.Wait()
	s.closeInputs()
	w := s.spillW.Load()
	for _, err := range errs {
		if err != nil {
			if w != nil {
				w.abort()
			}
			return t, err
		}
	}
	if w == nil {
		if err := t.finish(); err != nil {
			if !joinCanSpill(env, s.shape, 0, err) {
				return t, err
			}
			if w, err = s.spillWriters(env); err != nil {
				return t, err
			}
		}
	}
	if w != nil {
		gb, err := finishBuildSpill(env, t, w, s.probers)
		if err != nil {
			return nil, err
		}
		s.gb = gb
		return nil, nil
	}
	t.probersLeft.Store(s.probers)
	built = true
	return t, nil
}

func (s *sharedBuild) closeInputs() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inClosed {
		return nil
	}
	s.inClosed = true
	var first error
	for i, in := range s.inputs {
		if s.closedIn[i] {
			continue
		}
		if err := in.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// done is called by each prober's Close; the last one frees the table.
func (s *sharedBuild) done() {
	if s.closed.Add(1) != s.probers {
		return
	}
	// INVARIANT: every prober has closed, so nobody is inside get and the
	// once has either run to completion or never started.
	s.once.Do(func() {})
	s.closeInputs()
	if s.bt != nil {
		s.bt.release()
		s.bt = nil
	}
	if s.gb != nil {
		for _, r := range s.gb.runs {
			if r != nil {
				r.remove()
			}
		}
	}
}

// NewParallelHashJoin returns len(probes) hash join operators that share one
// hash table built from all builds (the build side of spec: for Build
// right, builds are the right inputs and probes the left ones). Each
// returned operator probes its own input and is driven by its own pipeline
// (typically under a Gather); together they produce the join of
// union(probes) with union(builds). The operators own the inputs: builds
// are closed when the last operator closes.
//
// NB: for joins that emit build rows at the end (outer joins keeping the
// build side, and semi/anti/mark joins built on the left) the last prober
// to reach end of stream emits them; every prober must then be drained.
func NewParallelHashJoin(probes, builds []Operator, spec HashJoinSpec) ([]Operator, error) {
	if len(probes) == 0 || len(builds) == 0 {
		return nil, nferr.Internalf("parallel hash join: %d probe and %d build inputs", len(probes), len(builds))
	}
	left, right := probes[0].Schema(), builds[0].Schema()
	if spec.buildLeft() {
		left, right = right, left
	}
	for _, in := range probes[1:] {
		if err := checkSchemaTypes(probes[0].Schema(), in.Schema()); err != nil {
			return nil, nferr.Wrap(nferr.KindInternal, err, "parallel hash join: probe inputs differ")
		}
	}
	for _, in := range builds[1:] {
		if err := checkSchemaTypes(builds[0].Schema(), in.Schema()); err != nil {
			return nil, nferr.Wrap(nferr.KindInternal, err, "parallel hash join: build inputs differ")
		}
	}
	shape, err := newJoinShape(left, right, spec, "hash join")
	if err != nil {
		return nil, err
	}
	sb := &sharedBuild{shape: shape, inputs: builds, probers: int32(len(probes)), closedIn: make([]bool, len(builds))}
	ops := make([]Operator, len(probes))
	for i, p := range probes {
		ops[i] = &HashJoin{shape: shape, probe: p, shared: sb, spec: spec}
		if shape.buildLeft {
			ops[i].(*HashJoin).right = p
		} else {
			ops[i].(*HashJoin).left = p
		}
	}
	return ops, nil
}

// ParallelAggStrategy chooses how NewParallelHashAgg splits an aggregate.
type ParallelAggStrategy string

// The strategies.
const (
	// AggSplitPartial runs a partial aggregate per input and one final
	// aggregate over their gathered states: best when groups are few
	// (each partial shrinks its input to a handful of rows).
	AggSplitPartial ParallelAggStrategy = "partial"
	// AggSplitRepartition hash-repartitions the input rows by group key
	// into one single-phase aggregate per input: best when groups are
	// many (partials would not shrink the data), and required for
	// DISTINCT aggregates.
	AggSplitRepartition ParallelAggStrategy = "repartition"
)

// NewParallelHashAgg returns one operator computing the single-phase
// aggregate spec over the union of inputs, with one aggregate pipeline per
// input (each driven by its own goroutine under a Gather). A global
// aggregate (no group columns) always uses partials; with DISTINCT
// aggregates it gathers the inputs into one aggregate.
func NewParallelHashAgg(inputs []Operator, spec HashAggSpec, strategy ParallelAggStrategy) (Operator, error) {
	if len(inputs) == 0 {
		return nil, nferr.Internalf("parallel hash aggregate: no inputs")
	}
	if spec.phase() != AggSingle {
		return nil, nferr.Internalf("parallel hash aggregate: spec is already phase %s", spec.Phase)
	}
	distinct := false
	for _, a := range spec.Aggs {
		distinct = distinct || a.Distinct
	}
	if distinct && len(spec.GroupCols) == 0 {
		g, err := NewGather(inputs)
		if err != nil {
			return nil, err
		}
		return NewHashAgg(g, spec)
	}
	if (strategy == AggSplitRepartition || distinct) && len(spec.GroupCols) > 0 {
		parts, err := NewHashRepartition(inputs, spec.GroupCols, len(inputs))
		if err != nil {
			return nil, err
		}
		aggs := make([]Operator, len(parts))
		for i, p := range parts {
			a, err := NewHashAgg(p, spec)
			if err != nil {
				return nil, err
			}
			aggs[i] = a
		}
		return NewGather(aggs)
	}
	pspec, fspec, err := SplitAgg(spec)
	if err != nil {
		return nil, err
	}
	partials := make([]Operator, len(inputs))
	for i, in := range inputs {
		p, err := NewHashAgg(in, pspec)
		if err != nil {
			return nil, err
		}
		partials[i] = p
	}
	g, err := NewGather(partials)
	if err != nil {
		return nil, err
	}
	return NewHashAgg(g, fspec)
}
