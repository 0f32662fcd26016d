package tpch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Format is the output format of Generate.
type Format string

// The output formats.
const (
	// FormatParquet writes DIR/<table>/<table>-NNNN.parquet.
	FormatParquet Format = "parquet"
	// FormatTbl writes DIR/<table>.tbl, byte-identical to dbgen.
	FormatTbl Format = "tbl"
)

// ParseFormat accepts "parquet" and "tbl".
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case FormatParquet, FormatTbl:
		return f, nil
	}
	return "", nferr.Queryf("unknown format %q (want parquet or tbl)", s)
}

// GenOptions configures Generate.
type GenOptions struct {
	// SF is the scale factor (> 0, fractional allowed, at most MaxSF).
	SF float64
	// Dir is the output directory; it is created if missing.
	Dir string
	// Format defaults to FormatParquet.
	Format Format
	// Tables to generate; empty means all eight.
	Tables []Table
	// Parallel is the number of generating goroutines; 0 means GOMAXPROCS.
	Parallel int
	// Force replaces existing output of the requested tables; without it,
	// existing output is an error and nothing is written.
	Force bool
	// IfMissing makes Generate return at once (Skipped) when every requested
	// table was already generated completely for this SF and format.
	IfMissing bool
	// Parquet tunes the Parquet files (ignored for tbl).
	Parquet ParquetOptions
	// Progress, when set, is called with the number of rows just finished
	// for a table. It is called from several goroutines at once.
	Progress func(t Table, rows int64)

	// chunkRows, when set (tests only), overrides the driver rows per job.
	chunkRows int64
}

// Validate checks the options and applies defaults.
func (o *GenOptions) Validate() error {
	if _, err := NewScale(o.SF); err != nil {
		return err
	}
	if o.Dir == "" {
		return nferr.Queryf("an output directory is required")
	}
	if o.Format == "" {
		o.Format = FormatParquet
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return err
	}
	if len(o.Tables) == 0 {
		o.Tables = AllTables()
	}
	seen := map[Table]bool{}
	var ts []Table
	for _, t := range o.Tables {
		if t < 0 || t >= numTables {
			return nferr.Queryf("unknown TPC-H table %d", int(t))
		}
		if !seen[t] {
			seen[t] = true
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	o.Tables = ts
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	if o.Force && o.IfMissing {
		return nferr.Queryf("--force and --if-missing contradict each other")
	}
	o.Parquet.ensureDefaults()
	return o.Parquet.Validate()
}

// TableResult describes one generated table.
type TableResult struct {
	Table Table
	Rows  int64
	Bytes int64
	// Files are the written files, relative to Dir, in order.
	Files []string
}

// GenResult is what Generate did.
type GenResult struct {
	// Skipped is set when IfMissing found the data complete.
	Skipped bool
	Tables  []TableResult
	Elapsed time.Duration
}

// MarkerFile is written in Dir after a successful generation; it records
// the SF, format, row counts and files of every generated table so
// IfMissing can tell complete data from a partial or different one.
const MarkerFile = "tpch-gen.json"

type markerTable struct {
	SF     float64  `json:"sf"`
	Format Format   `json:"format"`
	Rows   int64    `json:"rows"`
	Files  []string `json:"files"`
}

type marker struct {
	Generator string                 `json:"generator"`
	Tables    map[string]markerTable `json:"tables"`
}

func readMarker(dir string) (*marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if errors.Is(err, os.ErrNotExist) {
		return &marker{Tables: map[string]markerTable{}}, nil
	}
	if err != nil {
		return nil, nferr.IOf("reading %s: %w", filepath.Join(dir, MarkerFile), err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nferr.Dataf("%s is corrupt: %v", filepath.Join(dir, MarkerFile), err)
	}
	if m.Tables == nil {
		m.Tables = map[string]markerTable{}
	}
	return &m, nil
}

func writeMarker(dir string, m *marker) error {
	m.Generator = "nicflow tpch gen (dbgen 2.17.3 compatible)"
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nferr.Internalf("encoding %s: %v", MarkerFile, err)
	}
	return writeFileAtomic(filepath.Join(dir, MarkerFile), append(b, '\n'))
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nferr.IOf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nferr.IOf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nferr.IOf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nferr.IOf("installing %s: %w", path, err)
	}
	return nil
}

// complete reports whether the marker says t was generated for sf and
// format and all its files are still there.
func (m *marker) complete(dir string, t Table, sf float64, f Format) bool {
	e, ok := m.Tables[t.String()]
	if !ok || e.SF != sf || e.Format != f || len(e.Files) == 0 {
		return false
	}
	for _, p := range e.Files {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// outputPath is where table t's output goes (a file for tbl, a directory
// for parquet), relative to Dir.
func outputPath(t Table, f Format) string {
	if f == FormatTbl {
		return t.String() + ".tbl"
	}
	return t.String()
}

// Generate writes the requested tables at the requested scale factor.
//
// Output is first written under temporary names in Dir and renamed into
// place only when every table is complete, so an error or cancellation
// leaves the directory as it was (temporary files are removed). Existing
// output of a requested table is an error unless Force is set.
func Generate(ctx context.Context, opts GenOptions) (GenResult, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return GenResult{}, err
	}
	sc, _ := NewScale(opts.SF)
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return GenResult{}, nferr.IOf("creating output directory: %w", err)
	}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		return GenResult{}, nferr.IOf("output directory %s is not a directory", opts.Dir)
	}
	m, err := readMarker(opts.Dir)
	if err != nil {
		return GenResult{}, err
	}
	if opts.IfMissing {
		all := true
		for _, t := range opts.Tables {
			all = all && m.complete(opts.Dir, t, opts.SF, opts.Format)
		}
		if all {
			return GenResult{Skipped: true, Elapsed: time.Since(start)}, nil
		}
	}
	if !opts.Force {
		var existing []string
		for _, t := range opts.Tables {
			p := filepath.Join(opts.Dir, outputPath(t, opts.Format))
			if _, err := os.Lstat(p); err == nil {
				existing = append(existing, p)
			}
		}
		if len(existing) > 0 {
			return GenResult{}, nferr.Queryf("%s already exists (use --force to replace)", strings.Join(existing, ", "))
		}
	}

	// Every table gets a temporary directory in Dir (same file system, so
	// installing is a rename).
	tmpRoot, err := os.MkdirTemp(opts.Dir, ".tpch-gen-tmp-*")
	if err != nil {
		return GenResult{}, nferr.IOf("cannot write in %s: %w", opts.Dir, err)
	}
	defer os.RemoveAll(tmpRoot)

	results, err := run(ctx, &opts, sc, tmpRoot)
	if err != nil {
		return GenResult{}, err
	}
	// Install: replace old outputs by the new ones.
	for i := range results {
		r := &results[i]
		rel := outputPath(r.Table, opts.Format)
		dst := filepath.Join(opts.Dir, rel)
		if err := os.RemoveAll(dst); err != nil {
			return GenResult{}, nferr.IOf("replacing %s: %w", dst, err)
		}
		if err := os.Rename(filepath.Join(tmpRoot, rel), dst); err != nil {
			return GenResult{}, nferr.IOf("installing %s: %w", dst, err)
		}
		m.Tables[r.Table.String()] = markerTable{SF: opts.SF, Format: opts.Format, Rows: r.Rows, Files: r.Files}
	}
	// Tables of the other format with the same name stay, but the marker
	// entry now describes the new output.
	if err := writeMarker(opts.Dir, m); err != nil {
		return GenResult{}, err
	}
	return GenResult{Tables: results, Elapsed: time.Since(start)}, nil
}

// job is one unit of parallel work: driver rows [start, start+count) of a
// group, written as chunk number idx of the group's outputs.
type job struct {
	driver       Table
	idx          int
	start, count int64
	wantDriver   bool
	wantChild    bool
}

// run generates everything into tmp and returns per-table results.
func run(ctx context.Context, o *GenOptions, sc Scale, tmp string) ([]TableResult, error) {
	want := map[Table]bool{}
	for _, t := range o.Tables {
		want[t] = true
	}
	if o.Format == FormatParquet {
		for _, t := range o.Tables {
			if err := os.Mkdir(filepath.Join(tmp, t.String()), 0o755); err != nil {
				return nil, nferr.IOf("creating %s: %w", filepath.Join(tmp, t.String()), err)
			}
		}
	}
	// Groups in descending size so the long ones start first.
	var jobs []job
	for _, d := range []Table{Orders, Part, Customer, Supplier, Nation, Region} {
		c := childOf(d)
		wd, wc := want[d], c >= 0 && want[c]
		if !wd && !wc {
			continue
		}
		per := chunkDriverRows(o, d, wc)
		total := sc.Rows(d)
		for i, s := 0, int64(1); s <= total; i, s = i+1, s+per {
			jobs = append(jobs, job{driver: d, idx: i, start: s, count: min(per, total-s+1), wantDriver: wd, wantChild: wc})
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		results  = map[Table]*TableResult{}
	)
	for _, t := range o.Tables {
		results[t] = &TableResult{Table: t}
	}
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}

	var tw map[Table]*tblWriter
	if o.Format == FormatTbl {
		tw = map[Table]*tblWriter{}
		for _, t := range o.Tables {
			w, err := newTblWriter(filepath.Join(tmp, t.String()+".tbl"))
			if err != nil {
				for _, w := range tw {
					w.abort()
				}
				return nil, err
			}
			tw[t] = w
		}
	}
	// tokens bounds the chunks generated but not yet written (tbl output is
	// written in chunk order), so memory stays bounded.
	tokens := make(chan struct{}, 2*o.Parallel+2)
	jobCh := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < o.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobCh {
				var err error
				if o.Format == FormatTbl {
					err = runTblJob(ctx, o, sc, j, tw, tokens)
				} else {
					err = runParquetJob(ctx, o, sc, j, tmp, results, &mu)
					<-tokens
				}
				if err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			break feed
		}
		select {
		case jobCh <- j:
		case <-ctx.Done():
			<-tokens
			break feed
		}
	}
	close(jobCh)
	wg.Wait()
	if tw != nil {
		for t, w := range tw {
			rows, bytes, err := w.close()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			results[t].Rows, results[t].Bytes = rows, bytes
			results[t].Files = []string{t.String() + ".tbl"}
		}
	}
	if firstErr == nil {
		if err := ctx.Err(); err != nil {
			firstErr = nferr.With(nferr.KindCanceled, err)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	out := make([]TableResult, 0, len(o.Tables))
	for _, t := range o.Tables {
		r := results[t]
		sort.Strings(r.Files)
		out = append(out, *r)
	}
	return out, nil
}

// chunkDriverRows is the number of driver rows per job.
func chunkDriverRows(o *GenOptions, d Table, withChild bool) int64 {
	if o.chunkRows > 0 {
		return o.chunkRows
	}
	if o.Format == FormatTbl {
		// About 8 MB of text per chunk: large enough for sequential writes,
		// small enough that 2*Parallel+2 chunks in flight stay modest.
		switch d {
		case Orders:
			return 16384 // ~16K orders: 1.9 MB orders + 7.9 MB lineitem
		case Part:
			return 16384 // 2 MB part + 9.5 MB partsupp
		default:
			return 65536 // customer ~10 MB, supplier ~9 MB
		}
	}
	per := int64(o.Parquet.RowGroupRows) * int64(o.Parquet.RowGroupsPerFile)
	if withChild {
		per /= 4 // the child's files hold ~4 rows per driver row
	}
	return max(per, 1)
}

// ---- tbl output ----

// tblWriter writes one table's chunks to its file in chunk order.
type tblWriter struct {
	path    string
	f       *os.File
	bw      *bufio.Writer
	mu      sync.Mutex
	next    int
	pending map[int]tblChunk
	rows    int64
	bytes   int64
	err     error
}

type tblChunk struct {
	data []byte
	rows int64
	done func()
}

func newTblWriter(path string) (*tblWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nferr.IOf("creating %s: %w", path, err)
	}
	return &tblWriter{path: path, f: f, bw: bufio.NewWriterSize(f, 1<<20), pending: map[int]tblChunk{}}, nil
}

// put hands over chunk idx; it is written once all earlier chunks are.
// done is called when the chunk's bytes are no longer needed. put returns
// the writer's first write error, if any, so the generation stops.
func (w *tblWriter) put(idx int, c tblChunk) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[idx] = c
	for {
		c, ok := w.pending[w.next]
		if !ok {
			return w.err
		}
		delete(w.pending, w.next)
		w.next++
		if w.err == nil {
			if _, err := w.bw.Write(c.data); err != nil {
				w.err = nferr.IOf("writing %s: %w", w.path, err)
			}
			w.rows += c.rows
			w.bytes += int64(len(c.data))
		}
		c.done()
	}
}

func (w *tblWriter) close() (int64, int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.pending {
		c.done()
	}
	w.pending = nil
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = nferr.IOf("writing %s: %w", w.path, err)
		}
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = nferr.IOf("closing %s: %w", w.path, err)
	}
	return w.rows, w.bytes, w.err
}

func (w *tblWriter) abort() { w.f.Close() }

var tblBufPool = sync.Pool{New: func() any { return new([]byte) }}

func runTblJob(ctx context.Context, o *GenOptions, sc Scale, j job, tw map[Table]*tblWriter, tokens chan struct{}) error {
	var outs [2]*[]byte
	var rows [2]int64
	for i := range outs {
		outs[i] = tblBufPool.Get().(*[]byte)
		*outs[i] = (*outs[i])[:0]
	}
	err := generateRange(ctx, sc, j.driver, j.start, j.count, j.wantDriver, j.wantChild, func(b *batch) error {
		k := 0
		if b.table != j.driver {
			k = 1
		}
		*outs[k] = appendTbl(*outs[k], b)
		rows[k] += int64(b.n)
		if o.Progress != nil {
			o.Progress(b.table, int64(b.n))
		}
		return nil
	})
	// The token is released when the last of the job's outputs is written.
	var pendingMu sync.Mutex
	pending := 0
	tables := [2]Table{j.driver, childOf(j.driver)}
	wanted := [2]bool{j.wantDriver, j.wantChild}
	for k := range 2 {
		if wanted[k] {
			pending++
		}
	}
	release := func(buf *[]byte) func() {
		return func() {
			tblBufPool.Put(buf)
			pendingMu.Lock()
			pending--
			last := pending == 0
			pendingMu.Unlock()
			if last {
				<-tokens
			}
		}
	}
	for k := range 2 {
		if !wanted[k] {
			tblBufPool.Put(outs[k])
			continue
		}
		data := *outs[k]
		if err != nil {
			// Keep the chunk order intact for the writer; the data is
			// dropped since the whole generation fails.
			data = nil
		}
		if werr := tw[tables[k]].put(j.idx, tblChunk{data: data, rows: rows[k], done: release(outs[k])}); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// ---- parquet output ----

func runParquetJob(ctx context.Context, o *GenOptions, sc Scale, j job, tmp string, results map[Table]*TableResult, mu *sync.Mutex) (err error) {
	type out struct {
		t   Table
		rel string
		f   *os.File
		bw  *bufio.Writer
		w   *pqWriter
	}
	var outs []*out
	defer func() {
		for _, x := range outs {
			if x.f != nil {
				x.f.Close()
			}
		}
	}()
	open := func(t Table) (*out, error) {
		rel := filepath.Join(t.String(), fmt.Sprintf("%s-%04d.parquet", t, j.idx))
		f, err := os.Create(filepath.Join(tmp, rel))
		if err != nil {
			return nil, nferr.IOf("creating %s: %w", filepath.Join(o.Dir, rel), err)
		}
		x := &out{t: t, rel: rel, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
		x.w = newPQWriter(x.bw, t, o.Parquet)
		outs = append(outs, x)
		return x, nil
	}
	var dw, cw *out
	if j.wantDriver {
		if dw, err = open(j.driver); err != nil {
			return err
		}
	}
	if j.wantChild {
		if cw, err = open(childOf(j.driver)); err != nil {
			return err
		}
		// The child's row groups end on driver boundaries: RowGroupRows/4
		// driver rows per group (about RowGroupRows child rows).
		cw.w.limit = int(^uint(0) >> 1)
	}
	per := int64(o.Parquet.RowGroupRows)
	if j.wantChild {
		per = max(per/4, 1)
	}
	for s := j.start; s < j.start+j.count; s += per {
		n := min(per, j.start+j.count-s)
		err := generateRange(ctx, sc, j.driver, s, n, j.wantDriver, j.wantChild, func(b *batch) error {
			x := dw
			if b.table != j.driver {
				x = cw
			}
			if err := x.w.write(b); err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(b.table, int64(b.n))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if cw != nil {
			if err := cw.w.closeGroup(); err != nil {
				return err
			}
		}
	}
	for _, x := range outs {
		if err := x.w.close(); err != nil {
			return err
		}
		if err := x.bw.Flush(); err != nil {
			return nferr.IOf("writing %s: %w", x.rel, err)
		}
		st, err := x.f.Stat()
		if err != nil {
			return nferr.IOf("writing %s: %w", x.rel, err)
		}
		if err := x.f.Close(); err != nil {
			return nferr.IOf("closing %s: %w", x.rel, err)
		}
		x.f = nil
		mu.Lock()
		r := results[x.t]
		r.Rows += x.w.rows
		r.Bytes += st.Size()
		r.Files = append(r.Files, x.rel)
		mu.Unlock()
	}
	return nil
}

// GeneratedSF returns the scale factor of the complete Parquet TPC-H data
// that Generate wrote in dir, read from its MarkerFile. It fails with a
// KindQuery error when dir holds no such data, some table is missing or
// not Parquet, or the tables have different scale factors.
func GeneratedSF(dir string) (float64, error) {
	path := filepath.Join(dir, MarkerFile)
	if _, err := os.Stat(path); err != nil {
		return 0, nferr.Queryf("%s has no %s: not TPC-H data from `nicflow tpch gen`", dir, MarkerFile)
	}
	m, err := readMarker(dir)
	if err != nil {
		return 0, err
	}
	sf := -1.0
	for _, t := range AllTables() {
		e, ok := m.Tables[t.String()]
		if !ok || e.Format != FormatParquet {
			return 0, nferr.Queryf("%s: table %s was not generated as Parquet in %s (run nicflow tpch gen --dir %s)", path, t, dir, dir)
		}
		if sf >= 0 && e.SF != sf {
			return 0, nferr.Queryf("%s: tables of different scale factors (%g and %g)", path, sf, e.SF)
		}
		sf = e.SF
	}
	return sf, nil
}
