package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/nicflow/nicflow/internal/nferr"
)

// SeriesSpec is generate_series(Start, Stop, Step): Start, Start+Step, ...
// while not past Stop (inclusive), one BIGINT column named Name.
type SeriesSpec struct {
	Start int64  `json:"start"`
	Stop  int64  `json:"stop"`
	Step  int64  `json:"step"`
	Name  string `json:"name"`
}

// Rows is the series' length.
func (s SeriesSpec) Rows() int64 {
	if s.Step == 0 || (s.Step > 0 && s.Start > s.Stop) || (s.Step < 0 && s.Start < s.Stop) {
		return 0
	}
	// NB: in uint64: Stop - Start may not fit an int64.
	span := uint64(s.Stop - s.Start)
	step := uint64(s.Step)
	if s.Step < 0 {
		span, step = uint64(s.Start-s.Stop), uint64(-s.Step)
	}
	return int64(span/step) + 1
}

// Series is the operator producing a SeriesSpec's rows in batches.
type Series struct {
	spec   SeriesSpec
	schema *arrow.Schema
	env    *Env
	next   int64 // rows produced
	rows   int64
	out    Batch
	owned  arrow.Array
}

// NewSeries validates spec (a zero step is a query error, as in
// PostgreSQL).
func NewSeries(spec SeriesSpec) (*Series, error) {
	if spec.Step == 0 {
		return nil, nferr.Queryf("step size cannot equal zero")
	}
	name := spec.Name
	if name == "" {
		name = "generate_series"
	}
	return &Series{spec: spec, rows: spec.Rows(), schema: arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64}}, nil)}, nil
}

// Schema implements Operator.
func (s *Series) Schema() *arrow.Schema { return s.schema }

// Open implements Operator.
func (s *Series) Open(env *Env) error {
	s.env = env
	return nil
}

// Next implements Operator.
func (s *Series) Next() (*Batch, error) {
	s.release()
	if s.next >= s.rows || s.env == nil {
		return nil, nil
	}
	if err := s.env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	n := min(s.rows-s.next, int64(s.env.BatchSize))
	b := array.NewInt64Builder(s.env.Alloc)
	defer b.Release()
	b.Reserve(int(n))
	v := s.spec.Start + s.next*s.spec.Step
	for i := int64(0); i < n; i++ {
		b.UnsafeAppend(v)
		v += s.spec.Step
	}
	s.next += n
	s.owned = b.NewArray()
	s.out = Batch{Cols: []arrow.Array{s.owned}, N: int(n)}
	return &s.out, nil
}

func (s *Series) release() {
	if s.owned != nil {
		s.owned.Release()
		s.owned = nil
	}
	s.out = Batch{}
}

// Close implements Operator.
func (s *Series) Close() error {
	s.release()
	s.next = s.rows
	return nil
}
