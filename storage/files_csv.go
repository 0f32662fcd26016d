package storage

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// CSV files as tables (read_csv): the files are parsed once into a cached
// Parquet file under the database directory (cache/csv), which then scans
// like any file table. Column types are inferred from every value of the
// files (not a sample, so no later row can fail the type): the first type
// of boolean, bigint, double, date, timestamp, time that reads every non-NULL
// value, else varchar; a column of NULLs only is varchar.
//
// INVARIANT: a cache file is named after its source (the files' paths and
// the options) and their version (sizes and modification times): a
// changed file makes a new cache file and the old one is removed.

// CSVOptions are read_csv's options.
type CSVOptions struct {
	// Header: the first line names the columns. Nil: detected (the first
	// line is a header when a value of it does not fit a column's type
	// inferred from the other lines, or, when every column is text, when
	// it has distinct non-empty names).
	Header *bool
	// Delimiter: 0 detects it among ',', '|', ';' and tab (the one that
	// splits the first lines into the same number of fields, the most).
	Delimiter byte
	// Null is the text of NULL (default: the empty unquoted field).
	Null string
	// Quote is the quote character (0: '"').
	Quote byte
	// Columns, when set, names and types the columns (type names as
	// ParseType reads them) instead of inference.
	Columns []Column
}

// CSVTableName is the table name of the CSV files pattern names with
// options o, under root (nil: none): FileTableName's, then "\x00csv" and
// the options, each after a '\x00'.
func CSVTableName(pattern string, root *FileRoot, o CSVOptions) (string, error) {
	name, err := FileTableName(pattern, root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("\x00csv")
	if o.Header != nil {
		fmt.Fprintf(&b, "\x00header=%v", *o.Header)
	}
	if o.Delimiter != 0 {
		fmt.Fprintf(&b, "\x00delim=%d", o.Delimiter)
	}
	if o.Null != "" {
		fmt.Fprintf(&b, "\x00null=%q", o.Null)
	}
	if o.Quote != 0 {
		fmt.Fprintf(&b, "\x00quote=%d", o.Quote)
	}
	for _, c := range o.Columns {
		fmt.Fprintf(&b, "\x00col=%s:%s", c.Name, c.Type)
	}
	return name + b.String(), nil
}

// parseCSVOptions reads the options of a CSVTableName (its parts after
// "csv").
func parseCSVOptions(parts []string) (CSVOptions, error) {
	var o CSVOptions
	for _, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "header":
			h := v == "true"
			o.Header = &h
		case "delim":
			d, _ := strconv.Atoi(v)
			o.Delimiter = byte(d)
		case "null":
			o.Null, _ = strconv.Unquote(v)
		case "quote":
			q, _ := strconv.Atoi(v)
			o.Quote = byte(q)
		case "col":
			name, typ, _ := strings.Cut(v, ":")
			o.Columns = append(o.Columns, Column{Name: name, Type: typ, Nullable: true})
		default:
			return o, nferr.Queryf("malformed CSV table name")
		}
	}
	return o, nil
}

// csvTable is the file table over the CSV files of pattern (absolute),
// matched and read through root when it is set.
func (db *DB) csvTable(pattern string, root *FileRoot, o CSVOptions) (*Table, error) {
	paths, err := matchAny(root, pattern)
	if err != nil {
		return nil, err
	}
	src := fnv.New64a()
	ver := fnv.New64a()
	fmt.Fprintf(src, "%q %+v", paths, o)
	ver.Write([]byte(csvInferVersion))
	for _, p := range paths {
		stamp, _, _, err := stampOf(root, p)
		if err != nil {
			return nil, err
		}
		ver.Write([]byte(stamp))
	}
	dir := filepath.Join(db.dir, "cache", "csv")
	srcKey := fmt.Sprintf("%016x", src.Sum64())
	cache := filepath.Join(dir, fmt.Sprintf("%s-%016x.parquet", srcKey, ver.Sum64()))
	if _, err := os.Stat(cache); err != nil {
		if err := db.convertCSV(paths, root, o, dir, cache); err != nil {
			return nil, err
		}
		// Older versions of the same source are stale.
		old, _ := filepath.Glob(filepath.Join(dir, srcKey+"-*.parquet"))
		for _, f := range old {
			if f != cache {
				os.Remove(f)
			}
		}
	}
	t, err := db.fileTable(cache, nil)
	if err != nil {
		return nil, err
	}
	c := *t
	c.Location = pattern
	return &c, nil
}

// convertCSV parses the CSV files (opened through root when it is set)
// into the Parquet file cache (written under a temporary name and renamed,
// so a reader sees it whole).
func (db *DB) convertCSV(paths []string, root *FileRoot, o CSVOptions, dir, cache string) error {
	copts := CopyOptions{Format: "csv", Delimiter: o.Delimiter, Null: o.Null, Quote: o.Quote, BatchRows: 64 << 10, Root: root}
	if copts.Delimiter == 0 {
		d, err := detectDelimiter(root, paths[0], o.Quote)
		if err != nil {
			return err
		}
		copts.Delimiter = d
	}
	cols := o.Columns
	header := false
	if o.Header != nil {
		header = *o.Header
	} else if cols != nil {
		// Declared columns: the first line is a header when a value of it
		// does not read as its column's type.
		var err error
		if header, err = firstLineMisfits(paths[0], copts, cols); err != nil {
			return err
		}
	}
	if cols == nil {
		var err error
		if cols, header, err = inferCSV(paths, copts, o.Header); err != nil {
			return err
		}
	}
	copts.Header = header
	sch, err := ArrowSchema(cols)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nferr.OS(err, "creating %s", dir)
	}
	w, err := CreateParquetFile(nil, cache, sch, WriteOptions{})
	if err != nil {
		return err
	}
	for _, p := range paths {
		err := parseText(context.Background(), p, sch, copts, "read_csv", func(rec arrow.RecordBatch) error { return w.Write(rec) })
		if err != nil {
			w.Abort()
			return err
		}
	}
	_, err = w.Close()
	return err
}

// detectDelimiter picks the delimiter that splits the first lines of path
// into the same number of fields, the most ("," when none does).
func detectDelimiter(root *FileRoot, path string, quote byte) (byte, error) {
	best, bestN := byte(','), 1
	for _, d := range []byte{',', '|', ';', '\t'} {
		if d == quote {
			continue
		}
		n, lines := -1, 0
		consistent := true
		err := textRecords(path, CopyOptions{Format: "csv", Delimiter: d, Quote: quote, Root: root}, "read_csv", func(_ int, fields [][]byte, _ []bool) error {
			if n >= 0 && len(fields) != n {
				consistent = false
			}
			n = len(fields)
			if lines++; lines >= 20 || !consistent {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			if nferr.KindOf(err) == nferr.KindData {
				continue // not this delimiter (an unbalanced quote, ...)
			}
			return 0, err
		}
		if consistent && n > bestN {
			best, bestN = d, n
		}
	}
	return best, nil
}

var errStop = fmt.Errorf("stop")

// firstLineMisfits reports whether a value of the first record of path
// does not read as its column's type (or the record has another number
// of fields): then that line is a header.
func firstLineMisfits(path string, o CopyOptions, cols []Column) (bool, error) {
	misfit := false
	err := textRecords(path, o, "read_csv", func(_ int, fields [][]byte, quoted []bool) error {
		if len(fields) != len(cols) {
			misfit = true
			return errStop
		}
		for i, c := range cols {
			t, err := ParseType(c.Type)
			if err != nil {
				return err
			}
			b := &colBuilder{name: c.Name, typ: t, kind: kindOf(t), nullable: true}
			if d, ok := t.(arrow.DecimalType); ok {
				b.prec, b.scale = d.GetPrecision(), d.GetScale()
			}
			b.reset()
			if why := b.add(fields[i], !quoted[i] && string(fields[i]) == o.Null); why != "" {
				misfit = true
			}
		}
		return errStop
	})
	if err != nil && err != errStop {
		return false, err
	}
	return misfit, nil
}

// The inferred types, in order of preference.
const (
	csvBool = 1 << iota
	csvInt
	csvFloat
	csvDate
	csvTimestamp
	csvTime
	csvAll = csvBool | csvInt | csvFloat | csvDate | csvTimestamp | csvTime
)

// csvInferVersion names the inference rules in the cache key: a cache
// file typed by older rules (before TIME) is converted again.
const csvInferVersion = "time"

// fitsCSV is the set of inferred types value v reads as.
func fitsCSV(v []byte) int {
	m := 0
	switch strings.ToLower(string(v)) {
	case "true", "false", "t", "f":
		m |= csvBool
	}
	if _, why := parseInt(v, 64); why == "" {
		m |= csvInt | csvFloat
	} else if _, why := parseFloat(v); why == "" {
		m |= csvFloat
	}
	// NB: strictly a date (a timestamp's text loads into a date column,
	// but infers a timestamp).
	if d, ok := civil.ParseDate(v); ok && d >= civil.MinDate && d <= civil.MaxDate {
		m |= csvDate | csvTimestamp
	} else if _, ok, in := civil.ParseTimestamp(v, false); ok && in {
		m |= csvTimestamp
	} else if plainTime(v) {
		m |= csvTime
	}
	return m
}

// plainTime reports a time of day in the plain form H[H]:MM[:SS[.f...]]
// (no date, zone or AM/PM): what a CSV column of times holds. Numbers
// never read as times.
func plainTime(v []byte) bool {
	_, n := civil.ParseDigits(v, 2)
	if n == 0 || n >= len(v) || v[n] != ':' {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != ':' && c != '.' {
			return false
		}
	}
	_, ok := civil.ParseTime(v)
	return ok
}

// inferCSV types the columns of the files from all their values and reads
// or detects the header; it returns the columns and whether the files
// have a header line.
func inferCSV(paths []string, o CopyOptions, header *bool) ([]Column, bool, error) {
	var masks []int
	var first [][]byte
	var firstQuoted []bool
	rows := 0
	for fi, p := range paths {
		err := textRecords(p, o, "read_csv", func(lineNo int, fields [][]byte, quoted []bool) error {
			if fi == 0 && lineNo == 1 {
				for i, f := range fields {
					first = append(first, append([]byte(nil), f...))
					firstQuoted = append(firstQuoted, quoted[i])
				}
				masks = make([]int, len(fields))
				for i := range masks {
					masks[i] = csvAll
				}
				return nil
			}
			if len(fields) != len(masks) {
				return nferr.Dataf("%s:%d: expected %d fields, found %d", p, lineNo, len(masks), len(fields))
			}
			if fi > 0 && lineNo == 1 && (header == nil || *header) {
				return nil // a header line of a later file (checked by the load)
			}
			rows++
			for i, f := range fields {
				if !quoted[i] && string(f) == o.Null {
					continue
				}
				masks[i] &= fitsCSV(f)
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
	}
	if masks == nil {
		return nil, false, nferr.Dataf("%s is empty", paths[0])
	}
	typeOf := func(m int) string {
		switch {
		case m&csvBool != 0:
			return "bool"
		case m&csvInt != 0:
			return "int64"
		case m&csvFloat != 0:
			return "float64"
		case m&csvDate != 0:
			return "date32"
		case m&csvTimestamp != 0:
			return "timestamp"
		case m&csvTime != 0:
			return "time"
		}
		return "utf8"
	}
	has := false
	if header != nil {
		has = *header
	} else {
		// A header when a first-line value does not fit its column's
		// type; when every column is text, when the names are distinct
		// and not empty.
		allText, misfit := true, false
		seen := map[string]bool{}
		distinct := true
		for i, f := range first {
			if rows > 0 && masks[i] != 0 && masks[i] != csvAll {
				allText = false
				if fitsCSV(f)&masks[i] == 0 && !(string(f) == o.Null && !firstQuoted[i]) {
					misfit = true
				}
			}
			k := strings.ToLower(strings.TrimSpace(string(f)))
			if k == "" || seen[k] {
				distinct = false
			}
			seen[k] = true
		}
		has = misfit || (allText && distinct && rows > 0)
	}
	if !has && first != nil {
		// The first line is data: its values count for the types.
		for i, f := range first {
			if !(string(f) == o.Null && !firstQuoted[i]) {
				masks[i] &= fitsCSV(f)
			}
		}
	}
	cols := make([]Column, len(masks))
	seen := map[string]int{}
	for i, m := range masks {
		name := "column" + strconv.Itoa(i)
		if has {
			if n := strings.TrimSpace(string(first[i])); n != "" {
				name = n
			}
		}
		if k := strings.ToLower(name); seen[k] > 0 {
			name += "_" + strconv.Itoa(seen[k])
			seen[k]++
		} else {
			seen[k] = 1
		}
		if m == csvAll {
			m = 0 // only NULLs: text
		}
		cols[i] = Column{Name: name, Type: typeOf(m), Nullable: true}
	}
	return cols, has, nil
}

// InferColumns infers the columns of a table loaded from files (`nicflow
// load` into a table that does not exist): a Parquet file's own columns,
// or CSV columns typed from every value (inferCSV), with the header read
// when o.Header is set and detected otherwise. It returns the columns and,
// for CSV, whether the files have a header line. tbl files have no names:
// their columns must be given.
func InferColumns(paths []string, o CopyOptions) ([]Column, bool, error) {
	if len(paths) == 0 {
		return nil, false, nferr.Queryf("no files to infer columns from")
	}
	switch o.Format {
	case "parquet":
		md, _, err := readFooterIn(o.Root, paths[0])
		if err != nil {
			return nil, false, err
		}
		sch, err := schemaOfFooter(paths[0], md)
		if err != nil {
			return nil, false, err
		}
		cols, err := SchemaColumns(sch)
		return cols, false, err
	case "csv":
		if o.Delimiter == 0 {
			o.Delimiter = ','
		}
		var header *bool
		if o.Header {
			header = &o.Header
		}
		return inferCSV(paths, o, header)
	}
	return nil, false, nferr.Queryf("the columns of %s files cannot be inferred (they have no names): give them with --create", o.Format)
}
