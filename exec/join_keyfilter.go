package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/storage"
)

// Join key filters: a hash join publishes the values of some of its build
// keys, once its build is complete, to scans below its probe side
// (storage/keyfilter.go says why and what may and may not happen). The
// planner decides which keys and which scans (engine/phys); the join only
// collects and publishes.
//
// Collecting costs a hash per build row and key (8 bytes each until the
// filter is built), charged to an account of its own: when the budget
// cannot cover it, or the build holds more than storage.MaxKeyFilterKeys
// rows, the filter is dropped, never the query. A build that spills
// disables its filters (the scans pass every row).

// JoinKeyFilter asks a hash join to publish the build values of key Key
// (an index into the spec's LeftKeys/RightKeys) into Filter.
type JoinKeyFilter struct {
	Key    int
	Filter *storage.KeyFilter
}

// ProbeDropsUnmatched reports whether the join's probe-side rows without a
// matching build row affect nothing (are not output, mark nothing): only
// then may a key filter drop them before the join.
func (s HashJoinSpec) ProbeDropsUnmatched() bool {
	if s.NullAware {
		return false
	}
	buildLeft := s.buildLeft()
	switch s.Type {
	case JoinInner:
		return true
	case JoinSemi:
		return true
	case JoinAnti, JoinMark:
		return buildLeft // the probe is the right side
	case JoinLeft:
		return buildLeft
	case JoinRight:
		return !buildLeft
	}
	return false
}

// EmitsWhileProbing reports whether the join keeps no state per build row:
// every output row is produced while a probe row is probed, none in a tail
// of build rows after the probe side ends (outer joins preserving the
// build side, and semi, anti and mark joins building on their preserved
// left side, keep matched flags). Then the probe side may be split
// between tasks that each join against all build rows (dist), and output
// batches belong to the probe batch being probed (phys/segment.go).
func (s HashJoinSpec) EmitsWhileProbing() bool {
	buildLeft := s.buildLeft()
	switch s.Type {
	case JoinFull:
		return false
	case JoinLeft:
		return !buildLeft
	case JoinRight:
		return buildLeft
	case JoinSemi, JoinAnti, JoinMark:
		return !buildLeft
	}
	return true
}

// KeyFilterDomain says whether a key of type t can be filtered and in
// which domain: integers (ints true: stored as 32- or 64-bit integers) or
// bytes (strings, binary).
func KeyFilterDomain(t arrow.DataType) (ints, ok bool) {
	switch t.ID() {
	case arrow.INT32, arrow.DATE32, arrow.INT64, arrow.DECIMAL64, arrow.TIMESTAMP, arrow.TIME64:
		return true, true
	case arrow.STRING, arrow.BINARY:
		return false, true
	}
	return false, false
}

// SetKeyFilters makes the hash join instances ops (one HashJoin, or the
// probers of NewParallelHashJoin) publish filters. Call before Open.
func SetKeyFilters(ops []Operator, filters []JoinKeyFilter) {
	for _, o := range ops {
		h, ok := o.(*HashJoin)
		if !ok {
			continue
		}
		if h.shared != nil {
			h.shared.keyFilters = filters
		} else {
			h.keyFilters = filters
		}
	}
}

// keyCollector gathers one build goroutine's key values for each filter.
type keyCollector struct {
	filters []JoinKeyFilter
	b       []*storage.KeyFilterBuilder
	acct    *Account
	charged int64
}

func newKeyCollector(filters []JoinKeyFilter, shape *joinShape, env *Env) *keyCollector {
	if len(filters) == 0 {
		return nil
	}
	c := &keyCollector{filters: filters, acct: env.Budget.NewAccount("join key filter")}
	for _, f := range filters {
		ints, _ := KeyFilterDomain(shape.buildSchema.Field(shape.buildKeys[f.Key]).Type)
		c.b = append(c.b, storage.NewKeyFilterBuilder(ints))
	}
	return c
}

// add collects the build key values of the rows of sel (nil: rows 0..n-1),
// which have no NULL key.
func (c *keyCollector) add(keyCols []arrow.Array, sel []int32, n int) {
	if c == nil {
		return
	}
	for i, f := range c.filters {
		b := c.b[i]
		if b.Dropped {
			continue
		}
		a := keyCols[f.Key]
		switch a.DataType().ID() {
		case arrow.INT32, arrow.DATE32:
			storage.AddInts(b, valuesOf[int32](a)[:n], sel)
		case arrow.INT64, arrow.DECIMAL64, arrow.TIMESTAMP, arrow.TIME64:
			storage.AddInts(b, valuesOf[int64](a)[:n], sel)
		case arrow.STRING, arrow.BINARY:
			offs, data := bytesOf(a)
			if sel == nil {
				for j := 0; j < n; j++ {
					b.AddBytes(data[offs[j]:offs[j+1]])
				}
			} else {
				for _, j := range sel {
					b.AddBytes(data[offs[j]:offs[j+1]])
				}
			}
		default:
			b.Dropped = true
		}
	}
	c.charge()
}

// charge brings the account to what the builders hold; a builder the
// budget cannot cover is dropped.
func (c *keyCollector) charge() {
	var n int64
	for _, b := range c.b {
		n += b.Bytes()
	}
	if err := c.acct.chargeTo(&c.charged, n); err != nil {
		for _, b := range c.b {
			b.Drop()
		}
		c.acct.chargeTo(&c.charged, 0)
	}
}

// merge adds o's keys to c (o is then released).
func (c *keyCollector) merge(o *keyCollector) {
	if c == nil || o == nil {
		return
	}
	for i := range c.b {
		c.b[i].Merge(o.b[i])
	}
	o.release()
	c.charge()
}

// publish builds and publishes every filter, then frees the keys.
func (c *keyCollector) publish() {
	if c == nil {
		return
	}
	for i, f := range c.filters {
		f.Filter.Publish(c.b[i])
	}
	c.release()
}

func (c *keyCollector) release() {
	if c == nil {
		return
	}
	c.b = nil
	c.acct.Close()
	c.charged = 0
}

// disableKeyFilters publishes "no filter" (the build spilled or failed).
func disableKeyFilters(filters []JoinKeyFilter) {
	for _, f := range filters {
		f.Filter.Disable()
	}
}
