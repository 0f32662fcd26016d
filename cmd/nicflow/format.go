package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine"
)

// Result formatting for `nicflow sql` (and `nicflow tpch run --format`).
// Every value goes through engine's canonical text (engine.ValueFormatter:
// decimals with their scale, dates as YYYY-MM-DD, doubles in shortest
// round-trip form), the same text tpch.CheckAnswer compares; the formats
// differ only in layout and in how they show NULL:
//
//	table  aligned columns under a header, numbers right-aligned, NULL as
//	       "NULL", then "(N rows)"; the rows are buffered to align them
//	csv    RFC 4180 (quotes when needed) with a header line; NULL is the
//	       empty field (an empty string is written as "")
//	tsv    tab-separated with a header line; a tab, line break or
//	       backslash in a value is written \t, \n, \r or \\; NULL is \N
//	markdown  a GitHub table: a header row, a separator, a row per row;
//	       '|' in a value is written \|; NULL is NULL
//	json   JSON Lines: one object per row, keyed by column name; integers,
//	       decimals and doubles as JSON numbers (NaN and infinities as
//	       strings), booleans as true/false, dates and strings as
//	       strings, NULL as null

// Output formats.
const (
	formatTable    = "table"
	formatCSV      = "csv"
	formatJSON     = "json"
	formatTSV      = "tsv"
	formatMarkdown = "markdown"
)

func checkFormat(f string, allowed ...string) error {
	for _, a := range allowed {
		if f == a {
			return nil
		}
	}
	return usagef("--format %q: want %s", f, strings.Join(allowed, ", "))
}

// rowWriter prints the rows of one result.
type rowWriter interface {
	// row prints one row; cells[i] is the canonical text, null[i] marks NULL.
	row(cells []string, null []bool) error
	// end finishes the result after n rows.
	end(n int64) error
}

func newRowWriter(w io.Writer, format string, sch *arrow.Schema) (rowWriter, error) {
	switch format {
	case formatCSV:
		cw := csv.NewWriter(w)
		names := make([]string, sch.NumFields())
		for i, f := range sch.Fields() {
			names[i] = f.Name
		}
		if err := cw.Write(names); err != nil {
			return nil, err
		}
		return &csvWriter{w: w, cw: cw}, nil
	case formatTSV, formatMarkdown:
		lw := &lineWriter{w: bufio.NewWriter(w), md: format == formatMarkdown}
		names := make([]string, sch.NumFields())
		for i, f := range sch.Fields() {
			names[i] = f.Name
		}
		if err := lw.row(names, make([]bool, len(names))); err != nil {
			return nil, err
		}
		if lw.md {
			lw.w.WriteString("|" + strings.Repeat(" --- |", len(names)) + "\n")
		}
		return lw, nil
	case formatJSON:
		jw := &jsonWriter{w: bufio.NewWriter(w)}
		for _, f := range sch.Fields() {
			k, _ := json.Marshal(f.Name)
			jw.keys = append(jw.keys, string(k))
			jw.kinds = append(jw.kinds, jsonKindOf(f.Type))
		}
		return jw, nil
	}
	tw := &tableWriter{w: w}
	for _, f := range sch.Fields() {
		tw.names = append(tw.names, f.Name)
		tw.right = append(tw.right, isNumberType(f.Type))
	}
	return tw, nil
}

func isNumberType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT32, arrow.INT64, arrow.FLOAT64, arrow.DECIMAL64, arrow.DECIMAL128:
		return true
	}
	return false
}

// writeResult prints every row of r; it returns the number of rows.
func writeResult(w io.Writer, format string, r *engine.Result) (int64, error) {
	return writeRecordsIn(w, format, r.Schema, r.Next, r.Zone)
}

// writeRecordsIn formats the batches next returns (until nil) of schema
// sch, TIMESTAMPTZ values in zone loc (the session's; nil: UTC): embedded
// results and cluster results print the same.
func writeRecordsIn(w io.Writer, format string, sch *arrow.Schema, next func() (arrow.RecordBatch, error), loc *time.Location) (int64, error) {
	rw, err := newRowWriter(w, format, sch)
	if err != nil {
		return 0, err
	}
	fs := make([]*engine.ValueFormatter, sch.NumFields())
	for i, f := range sch.Fields() {
		if fs[i], err = engine.NewValueFormatterIn(f.Type, loc); err != nil {
			return 0, err
		}
	}
	cells := make([]string, len(fs))
	null := make([]bool, len(fs))
	var n int64
	for {
		rec, err := next()
		if err != nil {
			return n, err
		}
		if rec == nil {
			break
		}
		for row := 0; row < int(rec.NumRows()); row++ {
			for c, f := range fs {
				cells[c], null[c] = f.Format(rec.Column(c), row)
			}
			if err := rw.row(cells, null); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, rw.end(n)
}

// ---------------------------------------------------------------- table

type tableWriter struct {
	w     io.Writer
	names []string
	right []bool
	rows  [][]string
}

func (t *tableWriter) row(cells []string, null []bool) error {
	r := make([]string, len(cells))
	for i, c := range cells {
		if null[i] {
			c = "NULL"
		}
		r[i] = c
	}
	t.rows = append(t.rows, r)
	return nil
}

func (t *tableWriter) end(n int64) error {
	width := make([]int, len(t.names))
	for i, name := range t.names {
		width[i] = utf8.RuneCountInString(name)
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	bw := bufio.NewWriter(t.w)
	pad := func(s string, w int, right bool) string {
		p := strings.Repeat(" ", w-utf8.RuneCountInString(s))
		if right {
			return p + s
		}
		return s + p
	}
	var lb strings.Builder
	line := func(cells []string, header bool) {
		lb.Reset()
		for i, c := range cells {
			if i > 0 {
				lb.WriteString(" | ")
			} else {
				lb.WriteString(" ")
			}
			lb.WriteString(pad(c, width[i], t.right[i] && !header))
		}
		bw.WriteString(strings.TrimRight(lb.String(), " "))
		bw.WriteString("\n")
	}
	if len(t.names) > 0 {
		line(t.names, true)
		for i := range t.names {
			if i > 0 {
				bw.WriteString("+")
			}
			bw.WriteString(strings.Repeat("-", width[i]+2))
		}
		bw.WriteString("\n")
	}
	for _, r := range t.rows {
		line(r, false)
	}
	if n == 1 {
		bw.WriteString("(1 row)\n")
	} else {
		fmt.Fprintf(bw, "(%d rows)\n", n)
	}
	t.rows = nil
	return bw.Flush()
}

// ---------------------------------------------------------------- csv

// lineWriter writes tsv or markdown rows.
type lineWriter struct {
	w  *bufio.Writer
	md bool
}

var (
	tsvEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)
	mdEscaper  = strings.NewReplacer("|", `\|`, "\n", "<br>", "\r", "")
)

func (l *lineWriter) row(cells []string, null []bool) error {
	if l.md {
		l.w.WriteString("|")
	}
	for i, v := range cells {
		switch {
		case l.md:
			if null[i] {
				v = "NULL"
			}
			l.w.WriteString(" " + mdEscaper.Replace(v) + " |")
		default:
			if i > 0 {
				l.w.WriteByte('\t')
			}
			if null[i] {
				l.w.WriteString(`\N`)
			} else {
				l.w.WriteString(tsvEscaper.Replace(v))
			}
		}
	}
	_, err := l.w.WriteString("\n")
	return err
}

func (l *lineWriter) end(int64) error { return l.w.Flush() }

type csvWriter struct {
	w   io.Writer
	cw  *csv.Writer
	buf []string
}

func (c *csvWriter) row(cells []string, null []bool) error {
	// NB: encoding/csv writes an empty string unquoted, which would read
	// back as NULL; RFC 4180 allows "" for the empty string.
	empty := false
	for i, v := range cells {
		if v == "" && !null[i] {
			empty = true
		}
	}
	if !empty {
		return c.cw.Write(cells)
	}
	c.cw.Flush()
	var b strings.Builder
	for i, v := range cells {
		if i > 0 {
			b.WriteRune(c.cw.Comma)
		}
		switch {
		case null[i]:
		case v == "":
			b.WriteString(`""`)
		default:
			var one strings.Builder
			w := csv.NewWriter(&one)
			w.Comma = c.cw.Comma
			w.Write([]string{v})
			w.Flush()
			b.WriteString(strings.TrimSuffix(one.String(), "\n"))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(c.w, b.String())
	return err
}

func (c *csvWriter) end(int64) error {
	c.cw.Flush()
	return c.cw.Error()
}

// ---------------------------------------------------------------- json

type jsonKind uint8

const (
	jsonNumber jsonKind = iota
	jsonFloat
	jsonBool
	jsonString
)

func jsonKindOf(t arrow.DataType) jsonKind {
	switch t.ID() {
	case arrow.INT32, arrow.INT64, arrow.DECIMAL64, arrow.DECIMAL128:
		return jsonNumber
	case arrow.FLOAT64:
		return jsonFloat
	case arrow.BOOL:
		return jsonBool
	}
	return jsonString
}

type jsonWriter struct {
	w     *bufio.Writer
	keys  []string
	kinds []jsonKind
}

func (j *jsonWriter) row(cells []string, null []bool) error {
	j.w.WriteByte('{')
	for i, c := range cells {
		if i > 0 {
			j.w.WriteByte(',')
		}
		j.w.WriteString(j.keys[i])
		j.w.WriteByte(':')
		switch {
		case null[i]:
			j.w.WriteString("null")
		case j.kinds[i] == jsonNumber || j.kinds[i] == jsonBool:
			j.w.WriteString(c)
		case j.kinds[i] == jsonFloat && !strings.ContainsAny(c, "NI"):
			j.w.WriteString(c)
		default:
			b, _ := json.Marshal(c)
			j.w.Write(b)
		}
	}
	j.w.WriteString("}\n")
	return nil
}

func (j *jsonWriter) end(int64) error { return j.w.Flush() }
