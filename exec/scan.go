package exec

import (
	"context"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// Scan is the table scan operator: it reads a storage.ScanSpec (projection,
// pushed-down predicate, optionally a share of the files and row groups)
// from a storage.Source, which is either the local database
// (*storage.DB, embedded mode) or a *storage.RemoteScanner reading from
// storage nodes over Flight.
//
// Batches from the local database are dense (Sel is nil); batches from a
// storage node carry a selection when key filters (ScanConfig.KeyFilters)
// dropped rows. The storage filter compacts survivors
// while it copies them out of the Parquet decoder's buffers, which costs
// one gather per surviving value, whereas a selection vector would force
// materializing every decoded row into Arrow arrays first (see
// storage.materialize). A batch never has more than Env.BatchSize rows
// (unless the spec sets its own BatchSize).
//
// Each returned batch wraps one record of the storage scan; it is released
// on the next call of Next or Close (the Operator borrowing rule).
type Scan struct {
	src         storage.Source
	spec        storage.ScanSpec
	parallelism int
	keyFilters  []storage.ScanKeyFilter
	schema      *arrow.Schema
	// selfFilter: the source does not apply keyFilters (a storage node's
	// scan): Next applies those on projected columns, kfCol[i] being
	// filter i's output column (-1: not projected).
	selfFilter bool
	kfCol      []int
	sel        []int32
	// reporter, when the source says so per record, tells the records it
	// filtered already (storage.KeyFilterReporter): those are not
	// filtered twice.
	reporter storage.KeyFilterReporter

	env    *Env
	it     storage.RecordIterator
	cur    arrow.RecordBatch
	out    Batch
	done   bool
	err    error
	closed bool
}

// ScanConfig holds optional knobs of NewScan.
type ScanConfig struct {
	// Parallelism is the number of goroutines the storage scan decodes with
	// (default 1: planners run one scan per pipeline, each with its own
	// share of the row groups). Remote scans ignore it.
	Parallelism int
	// KeyFilters are join key filters the storage scan applies (local
	// scans only; see storage.ScanOptions).
	KeyFilters []storage.ScanKeyFilter
}

// NewScan builds a scan operator. The spec's table and columns are
// resolved now (so Schema is known); files are opened in Open.
func NewScan(src storage.Source, spec storage.ScanSpec, cfg ScanConfig) (*Scan, error) {
	if src == nil {
		return nil, nferr.Internalf("scan of %s: nil storage source", spec.Table)
	}
	sch, err := src.ScanSchema(spec)
	if err != nil {
		return nil, err
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 1
	}
	return &Scan{src: src, spec: spec, parallelism: cfg.Parallelism, keyFilters: cfg.KeyFilters, schema: sch}, nil
}

// Schema implements Operator.
func (s *Scan) Schema() *arrow.Schema { return s.schema }

// Spec is the scan's spec (for EXPLAIN).
func (s *Scan) Spec() storage.ScanSpec { return s.spec }

// Open implements Operator: it plans the storage scan (pruning row groups
// with catalog statistics).
func (s *Scan) Open(env *Env) error {
	if s.closed {
		return nferr.Internalf("scan of %s: Open after Close", s.spec.Table)
	}
	if s.it != nil {
		return nferr.Internalf("scan of %s: Open called twice", s.spec.Table)
	}
	s.env = env
	spec := s.spec
	if spec.BatchSize <= 0 {
		spec.BatchSize = env.BatchSize
	}
	if err := waitKeyFilters(env.Ctx, s.keyFilters); err != nil {
		return err
	}
	it, err := s.src.OpenScan(env.Ctx, spec, storage.ScanOptions{Alloc: env.Alloc, Parallelism: s.parallelism, KeyFilters: s.keyFilters})
	if err != nil {
		return err
	}
	s.it = it
	if a, ok := it.(storage.KeyFilterApplier); len(s.keyFilters) > 0 && (!ok || !a.AppliesKeyFilters()) {
		s.selfFilter = true
		s.reporter, _ = it.(storage.KeyFilterReporter)
		for _, k := range s.keyFilters {
			s.kfCol = append(s.kfCol, slices.Index(spec.Columns, k.Column))
		}
	}
	return nil
}

// Next implements Operator.
func (s *Scan) Next() (*Batch, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.done {
		return nil, nil
	}
	if s.it == nil {
		return nil, nferr.Internalf("scan of %s: Next before Open", s.spec.Table)
	}
	s.release()
	for {
		if err := s.env.Ctx.Err(); err != nil {
			s.err = nferr.With(nferr.KindCanceled, err)
			return nil, s.err
		}
		rec, err := s.it.Next(s.env.Ctx)
		if err != nil {
			s.err = err
			return nil, err
		}
		if rec == nil {
			s.done = true
			return nil, nil
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		s.cur = rec
		s.out = Batch{Cols: rec.Columns(), N: int(rec.NumRows())}
		if s.selfFilter && (s.reporter == nil || !s.reporter.LastFiltered()) && !s.applyKeyFilters() {
			s.release()
			continue // no row can match
		}
		return &s.out, nil
	}
}

// applyKeyFilters narrows s.out to the rows the key filters pass (a
// selection vector); false when none does.
func (s *Scan) applyKeyFilters() bool {
	var sel []int32 // nil: all rows
	for i, k := range s.keyFilters {
		c := s.kfCol[i]
		if c < 0 {
			continue
		}
		if cap(s.sel) < s.out.N {
			s.sel = make([]int32, s.out.N)
		}
		kept, ok := k.Filter.FilterArray(s.out.Cols[c], sel, s.sel[:s.out.N])
		if !ok {
			continue
		}
		if len(kept) == 0 {
			return false
		}
		sel = kept
	}
	if sel != nil && len(sel) < s.out.N {
		s.out.Sel = sel
	}
	return true
}

func (s *Scan) release() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	s.out = Batch{}
}

// Stats are the storage counters of the scan so far (row groups pruned,
// rows and bytes read).
func (s *Scan) Stats() storage.ScanStats {
	if s.it == nil {
		return storage.ScanStats{}
	}
	return s.it.Stats()
}

// Close implements Operator; it stops the storage scan's goroutines and
// waits for them.
func (s *Scan) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.release()
	if s.it != nil {
		return s.it.Close()
	}
	return nil
}

// waitKeyFilters waits, up to each filter's Wait, for the key filters that
// come from another stage to be published, so that the scan starts with
// them (row groups pruned by their range, rows dropped before they are
// shuffled). A filter that does not come in time is applied when it does.
func waitKeyFilters(ctx context.Context, fs []storage.ScanKeyFilter) error {
	var deadline time.Time
	for _, f := range fs {
		if f.Wait <= 0 || f.Filter == nil || f.Filter.Ready() == nil {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(f.Wait)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(left)
		select {
		case <-f.Filter.Ready():
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nferr.With(nferr.KindCanceled, ctx.Err())
		}
		t.Stop()
	}
	return nil
}
