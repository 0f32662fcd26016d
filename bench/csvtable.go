package bench

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/nicflow/nicflow/internal/nferr"
)

// csvTable is a CSV file with a header, read by column name: columns may
// come in any order and unknown ones are ignored, so a CSV from an older
// or newer nicflow still reads.
type csvTable struct {
	name string
	col  map[string]int
	recs [][]string
}

func readCSVTable(r io.Reader, name string, required ...string) (*csvTable, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, nferr.Dataf("%s CSV: %v", name, err)
	}
	if len(recs) == 0 {
		return nil, nferr.Dataf("%s CSV is empty", name)
	}
	t := &csvTable{name: name, col: map[string]int{}, recs: recs[1:]}
	for i, h := range recs[0] {
		t.col[h] = i
	}
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			return nil, nferr.Dataf("%s CSV lacks column %q", name, c)
		}
	}
	return t, nil
}

// each calls fn for every data row, and returns the first error of a
// value that does not parse.
func (t *csvTable) each(fn func(r *csvRow)) error {
	for i, rec := range t.recs {
		r := &csvRow{t: t, rec: rec, line: i + 2}
		fn(r)
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// csvRow is one data row; its getters return zero for a missing column or
// an empty value, and remember the first value that does not parse.
type csvRow struct {
	t    *csvTable
	rec  []string
	line int
	err  error
}

func (r *csvRow) str(c string) string {
	if i, ok := r.t.col[c]; ok && i < len(r.rec) {
		return r.rec[i]
	}
	return ""
}

func (r *csvRow) int(c string) int {
	s := r.str(c)
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil && r.err == nil {
		r.err = nferr.Dataf("%s CSV line %d, column %s: %q is not an integer", r.t.name, r.line, c, s)
	}
	return v
}

func (r *csvRow) float(c string) float64 {
	s := r.str(c)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && r.err == nil {
		r.err = nferr.Dataf("%s CSV line %d, column %s: %q is not a number", r.t.name, r.line, c, s)
	}
	return v
}
