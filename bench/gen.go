package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/tpch"
)

// GenOptions configures RunGen, the TPC-H generation benchmark.
type GenOptions struct {
	// SF is the scale factor (default 1).
	SF float64
	// Formats to measure (default tbl and parquet).
	Formats []tpch.Format
	// Tables to measure one by one (default all eight).
	Tables []tpch.Table
	// Dir receives the output; empty means a temporary directory that is
	// removed afterwards. Existing TPC-H output in Dir is replaced.
	Dir string
	// Parallel is passed to tpch.Generate (0: GOMAXPROCS).
	Parallel int
	// Parquet tunes the Parquet output.
	Parquet tpch.ParquetOptions
}

// Validate applies defaults and checks the options.
func (o *GenOptions) Validate() error {
	if o.SF == 0 {
		o.SF = 1
	}
	if _, err := tpch.NewScale(o.SF); err != nil {
		return err
	}
	if len(o.Formats) == 0 {
		o.Formats = []tpch.Format{tpch.FormatTbl, tpch.FormatParquet}
	}
	if len(o.Tables) == 0 {
		o.Tables = tpch.AllTables()
	}
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	return o.Parquet.Validate()
}

// GenFigure is one measured generation.
type GenFigure struct {
	Format  tpch.Format
	Table   string // a table name, or "all" for all tables in one run
	Rows    int64
	Bytes   int64
	Elapsed time.Duration
	// PeakRSS is the process's peak resident set during this run (bytes),
	// or -1 when the platform cannot tell.
	PeakRSS int64
}

// RunGen measures tpch.Generate: each table alone (using all cores), then
// all tables in one run, for each format, and prints a table of rows/s,
// MB/s, elapsed time and peak RSS to w.
func RunGen(ctx context.Context, o GenOptions, w io.Writer) ([]GenFigure, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "nicflow-bench-gen-*")
		if err != nil {
			return nil, nferr.IOf("creating a temporary directory: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Fprintf(w, "TPC-H generation benchmark: SF %g, %d goroutines, GOMAXPROCS %d, %s/%s, %s\n",
		o.SF, o.Parallel, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, cpuModel())
	// The text pool is built once per process; build it outside the timings
	// and report it separately (both formats need it).
	t0 := time.Now()
	tpch.WarmTextPool()
	fmt.Fprintf(w, "text pool (300 MiB, built once per process): %.2fs\n\n", time.Since(t0).Seconds())

	var figs []GenFigure
	run := func(f tpch.Format, tables []tpch.Table, label string) error {
		resetPeakRSS()
		opts := tpch.GenOptions{SF: o.SF, Dir: filepath.Join(dir, string(f)), Format: f, Tables: tables,
			Parallel: o.Parallel, Force: true, Parquet: o.Parquet}
		res, err := tpch.Generate(ctx, opts)
		if err != nil {
			return err
		}
		fig := GenFigure{Format: f, Table: label, Elapsed: res.Elapsed, PeakRSS: peakRSS()}
		for _, t := range res.Tables {
			fig.Rows += t.Rows
			fig.Bytes += t.Bytes
		}
		figs = append(figs, fig)
		return nil
	}
	for _, f := range o.Formats {
		for _, t := range o.Tables {
			if err := run(f, []tpch.Table{t}, t.String()); err != nil {
				return figs, err
			}
		}
		if err := run(f, o.Tables, "all"); err != nil {
			return figs, err
		}
	}
	printGenFigures(w, figs)
	return figs, nil
}

func printGenFigures(w io.Writer, figs []GenFigure) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "format\ttable\trows\tMB\tseconds\trows/s\tMB/s\tpeak RSS MB\t")
	for _, f := range figs {
		s := f.Elapsed.Seconds()
		rss := "n/a"
		if f.PeakRSS >= 0 {
			rss = strconv.FormatFloat(float64(f.PeakRSS)/(1<<20), 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.2f\t%.0f\t%.1f\t%s\t\n", f.Format, f.Table, f.Rows,
			float64(f.Bytes)/1e6, s, float64(f.Rows)/s, float64(f.Bytes)/1e6/s, rss)
	}
	tw.Flush()
	fmt.Fprintln(w, "(each table alone uses all goroutines; lineitem and partsupp also generate the orders and parts they belong to; \"all\" is one run of every table)")
}

// peakRSS reads VmHWM (peak resident set) from /proc/self/status.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return -1
}

// resetPeakRSS resets VmHWM to the current RSS (Linux: clear_refs 5), so
// each run reports its own peak. Failing silently leaves a running maximum.
func resetPeakRSS() {
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
		}
	}
	return "unknown CPU"
}
