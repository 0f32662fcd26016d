package dist

import (
	"sync"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/storage"
)

// Key filters across stages.
//
// A hash join's probe side often reaches the join through a network
// repartition: the scan feeding it runs in another stage, on other
// workers. Within a task a join publishes its build keys to the scans
// below its probe side (phys/keyfilter.go); across stages the plan lists
// such filters (DistPlan.KeyFilters, phys.CrossStageKeyFilters) and they
// travel:
//
//	join stage task i  --part i-->  coordinator (FilterRelay)
//	                                   | every part in: merge (OR)
//	scan stage tasks  <--filter-------'
//
// Every task of the join stage publishes one part (the keys of its
// partition, or "disabled" when its build spilled or held too many keys),
// all sized alike (RemoteKeyFilter.Words) so that the merge is an OR. The
// merged filter passes every key of every partition: a probe row that
// fails it matches no build row anywhere. Scans apply it from the moment
// it arrives (TaskFilters.Deliver) and never wait for it: a filter that
// comes late, or never (a join task failed, the query ended), changes no
// answer (storage/keyfilter.go's invariant).

// crossStageFilters finds the plan's cross-stage key filters.
func crossStageFilters(dp *DistPlan, opts DistOptions) []phys.RemoteKeyFilter {
	roots := map[int]*phys.PhysNode{}
	for _, s := range dp.Stages {
		roots[s.ID] = s.Root
	}
	via := func(n *phys.PhysNode) (*phys.PhysNode, int, bool) {
		if n.Remote == nil {
			return nil, 0, false
		}
		s := dp.Stage(n.Remote.Stage)
		if s == nil || len(s.Root.Columns) != len(n.Columns) {
			return nil, 0, false
		}
		return s.Root, s.ID, true
	}
	fs := phys.CrossStageKeyFilters(roots, via)
	for i := range fs {
		if opts.KeyFilterWait > 0 && fs[i].BuildRows <= opts.KeyFilterWaitRows {
			fs[i].Wait = opts.KeyFilterWait
		}
	}
	return fs
}

// stageFilters are the cross-stage filters stage id publishes or applies.
func (dp *DistPlan) stageFilters(id int) []phys.RemoteKeyFilter {
	var out []phys.RemoteKeyFilter
	for _, f := range dp.KeyFilters {
		if f.JoinStage == id || f.ScanStage == id {
			out = append(out, f)
		}
	}
	return out
}

func (fe FragmentEnv) filterHub() phys.FilterHub {
	if fe.Filters == nil {
		return nil
	}
	return fe.Filters
}

// TaskFilters is one task's end of the cross-stage key filters: it sends
// the parts its joins publish and publishes the merged filters that
// arrive into its scans' filter objects. Safe for concurrent use.
type TaskFilters struct {
	send func(id int, p storage.KeyFilterPart)

	mu      sync.Mutex
	expect  map[int][]*storage.KeyFilter
	arrived map[int]storage.KeyFilterPart
}

// NewTaskFilters returns a task's filters; send delivers a part of filter
// id to the coordinator (it may block: it runs on a goroutine of its own).
func NewTaskFilters(send func(id int, p storage.KeyFilterPart)) *TaskFilters {
	return &TaskFilters{send: send, expect: map[int][]*storage.KeyFilter{}, arrived: map[int]storage.KeyFilterPart{}}
}

// Published implements phys.FilterHub: the task's join published its part.
func (t *TaskFilters) Published(id int, f *storage.KeyFilter) {
	p, ok := f.Part()
	if !ok {
		return
	}
	go t.send(id, p)
}

// Expect implements phys.FilterHub: a scan applies filter id through f.
func (t *TaskFilters) Expect(id int, f *storage.KeyFilter) {
	t.mu.Lock()
	p, ok := t.arrived[id]
	t.expect[id] = append(t.expect[id], f)
	t.mu.Unlock()
	if ok {
		f.PublishPart(p)
	}
}

// Deliver publishes the merged filter id into the scans that apply it
// (and into those built later).
func (t *TaskFilters) Deliver(id int, p storage.KeyFilterPart) {
	t.mu.Lock()
	if _, dup := t.arrived[id]; dup {
		t.mu.Unlock()
		return
	}
	t.arrived[id] = p
	fs := append([]*storage.KeyFilter(nil), t.expect[id]...)
	t.mu.Unlock()
	for _, f := range fs {
		f.PublishPart(p)
	}
}

// FilterRelay merges the parts of a distributed plan's cross-stage key
// filters (the coordinator's side) and hands each merged filter to
// deliver, once, when every task of its join stage sent its part. Safe for
// concurrent use.
type FilterRelay struct {
	deliver func(f phys.RemoteKeyFilter, p storage.KeyFilterPart)

	mu      sync.Mutex
	filters map[int]*relayed
}

type relayed struct {
	f      phys.RemoteKeyFilter
	want   int
	parts  map[int]storage.KeyFilterPart
	merged *storage.KeyFilterPart
}

// NewFilterRelay returns the relay of dp's cross-stage filters.
func NewFilterRelay(dp *DistPlan, deliver func(f phys.RemoteKeyFilter, p storage.KeyFilterPart)) *FilterRelay {
	r := &FilterRelay{deliver: deliver, filters: map[int]*relayed{}}
	for _, f := range dp.KeyFilters {
		want := 1
		if s := dp.Stage(f.JoinStage); s != nil {
			want = s.Tasks
		}
		r.filters[f.ID] = &relayed{f: f, want: want, parts: map[int]storage.KeyFilterPart{}}
	}
	return r
}

// Part records task's part of filter id (a part of an unknown filter, a
// task out of range or a second part of a task is ignored: a retried
// attempt's tasks get a new relay).
func (r *FilterRelay) Part(id, task int, p storage.KeyFilterPart) {
	r.mu.Lock()
	f := r.filters[id]
	if f == nil || f.merged != nil || task < 0 || task >= f.want {
		r.mu.Unlock()
		return
	}
	if _, dup := f.parts[task]; dup {
		r.mu.Unlock()
		return
	}
	f.parts[task] = p
	if len(f.parts) < f.want {
		r.mu.Unlock()
		return
	}
	parts := make([]storage.KeyFilterPart, 0, len(f.parts))
	for _, q := range f.parts {
		parts = append(parts, q)
	}
	m := storage.MergeKeyFilterParts(parts)
	f.merged, f.parts = &m, nil
	r.mu.Unlock()
	r.deliver(f.f, m)
}

// Merged returns the merged filters applied by stage (those a task
// starting late missed), by filter ID.
func (r *FilterRelay) Merged(stage int) map[int]storage.KeyFilterPart {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]storage.KeyFilterPart{}
	for id, f := range r.filters {
		if f.merged != nil && f.f.ScanStage == stage {
			out[id] = *f.merged
		}
	}
	return out
}
