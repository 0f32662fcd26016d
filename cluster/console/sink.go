package console

import (
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Sink receives the result of a console run: it keeps the first rows as
// text for the result table and counts the others. It implements
// cluster.ResultWriter.
type Sink struct {
	max  int
	zone *time.Location

	mu      sync.Mutex
	columns []string
	types   []string
	fmts    []*engine.ValueFormatter
	rows    [][]*string // nil: NULL
	total   int64
	status  string
}

func newSink(maxRows int) *Sink { return &Sink{max: maxRows} }

func (s *Sink) setStatus(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = tag
}

// SetSchema declares the result's columns; a schema without columns
// carrying a status tag (a cluster's DDL and DML) is a status.
func (s *Sink) SetSchema(sch *arrow.Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch.NumFields() == 0 {
		if md := sch.Metadata(); md.FindKey(cluster.StatusMetadataKey) >= 0 {
			s.status = md.Values()[md.FindKey(cluster.StatusMetadataKey)]
		}
		return nil
	}
	if s.fmts != nil {
		return nil
	}
	for _, f := range sch.Fields() {
		vf, err := engine.NewValueFormatterIn(f.Type, s.zone)
		if err != nil {
			return nferr.Queryf("column %s: %v", f.Name, err)
		}
		s.fmts = append(s.fmts, vf)
		s.columns = append(s.columns, f.Name)
		s.types = append(s.types, f.Type.String())
	}
	return nil
}

// Write keeps the batch's rows as text while the table has room and
// counts them all.
func (s *Sink) Write(rec arrow.RecordBatch) error {
	if s.fmts == nil {
		if err := s.SetSchema(rec.Schema()); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(rec.NumCols()) != len(s.fmts) {
		return nferr.Internalf("result batch has %d columns, the result %d", rec.NumCols(), len(s.fmts))
	}
	n := int(rec.NumRows())
	for i := 0; i < n && len(s.rows) < s.max; i++ {
		row := make([]*string, len(s.fmts))
		for c, f := range s.fmts {
			if v, null := f.Format(rec.Column(c), i); !null {
				row[c] = &v
			}
		}
		s.rows = append(s.rows, row)
	}
	s.total += int64(n)
	return nil
}

// ResultView is a console run's result: the first rows as text.
type ResultView struct {
	Columns []string    `json:"columns,omitempty"`
	Types   []string    `json:"types,omitempty"`
	Rows    [][]*string `json:"rows,omitempty"`
	// TotalRows counts every row; Truncated says Rows holds fewer.
	TotalRows int64 `json:"total_rows"`
	Truncated bool  `json:"truncated,omitempty"`
	// Status is the command tag of a statement without rows.
	Status string `json:"status,omitempty"`
}

func (s *Sink) view() ResultView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ResultView{
		Columns: s.columns, Types: s.types, Rows: s.rows, TotalRows: s.total,
		Truncated: int64(len(s.rows)) < s.total, Status: s.status,
	}
}

// planText returns the result as plan text when it is one (an EXPLAIN:
// one "plan" column), else "".
func (s *Sink) planText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.columns) != 1 || s.columns[0] != "plan" || int64(len(s.rows)) < s.total {
		return ""
	}
	var b []byte
	for _, r := range s.rows {
		if r[0] != nil {
			b = append(b, *r[0]...)
		}
		b = append(b, '\n')
	}
	return string(b)
}
