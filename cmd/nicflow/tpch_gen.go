package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/nicflow/nicflow/storage"
	"github.com/nicflow/nicflow/tpch"
)

type tpchGenFlags struct {
	sf        string
	dir       string
	format    string
	tables    string
	parallel  int
	force     bool
	ifMissing bool
	codec     string
	rowGroup  int
}

var genFlags tpchGenFlags

var tpchGenCmd = &cobra.Command{
	Use:   "gen --sf SF --dir DIR",
	Short: "Generate the TPC-H tables (Parquet, or dbgen-identical .tbl)",
	Long: `Generate the eight TPC-H tables at any scale factor (0.01 to 1000; fractional
values allowed) into DIR.

Two formats:
  parquet (default)  DIR/<table>/<table>-NNNN.parquet, registered in DIR's
                     catalog so "nicflow sql --dir DIR" finds them. Keys are
                     int64, money and quantities DECIMAL(15,2), dates DATE,
                     min/max statistics on, dictionary encoding on columns
                     with few distinct values.
  tbl                DIR/<table>.tbl, byte-identical to the official TPC-H
                     dbgen 2.17.3 ("dbgen -s SF"): same random streams,
                     text, dates and '|'-terminated records.

Generation runs on all cores (--parallel) with bounded memory. Output is
written under temporary names and renamed into place only when every table is
complete: an error or Ctrl-C leaves DIR as it was. Existing tables are an
error unless --force; --if-missing exits 0 without doing anything when the
requested tables already exist complete for this SF and format (recorded in
DIR/tpch-gen.json).

Row counts: SF 1 has 6,001,215 lineitem, 1,500,000 orders, 800,000 partsupp,
200,000 part, 150,000 customer, 10,000 supplier, 25 nation and 5 region rows.`,
	Example: `  # SF 1 as Parquet (about 400 MB), registered for SQL
  nicflow tpch gen --sf 1 --dir data/sf1

  # dbgen-identical text files, then check one against dbgen's md5
  nicflow tpch gen --sf 0.1 --dir /tmp/tbl --format tbl
  md5sum /tmp/tbl/lineitem.tbl

  # only two tables, replacing what is there
  nicflow tpch gen --sf 10 --dir data/sf10 --tables lineitem,orders --force

  # what "make run" does: generate only if not already there
  nicflow tpch gen --sf 0.1 --dir data/sf0.1 --if-missing`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		opts, err := genFlags.options()
		if err != nil {
			return err
		}
		return runTpchGen(cmd.Context(), opts, cmd.OutOrStdout(), os.Stderr)
	},
}

func init() {
	f := tpchGenCmd.Flags()
	f.StringVar(&genFlags.sf, "sf", "", "scale factor, e.g. 0.01, 0.1, 1, 10 (required)")
	f.StringVar(&genFlags.dir, "dir", "", "output directory, created if missing (required)")
	f.StringVar(&genFlags.format, "format", "parquet", "output format: parquet or tbl")
	f.StringVar(&genFlags.tables, "tables", "", "comma-separated tables to generate (default: all eight)")
	f.IntVar(&genFlags.parallel, "parallel", 0, "generating goroutines (default: GOMAXPROCS)")
	f.BoolVar(&genFlags.force, "force", false, "replace existing tables")
	f.BoolVar(&genFlags.ifMissing, "if-missing", false, "do nothing when the tables already exist complete for this SF and format")
	f.StringVar(&genFlags.codec, "codec", "", "Parquet compression: snappy (default), zstd, lz4, gzip, none")
	f.IntVar(&genFlags.rowGroup, "row-group-rows", 0, fmt.Sprintf("rows per Parquet row group (default %d)", tpch.DefaultRowGroupRows))
	tpchCmd.AddCommand(tpchGenCmd)
}

// options turns the flags into validated GenOptions.
func (g tpchGenFlags) options() (tpch.GenOptions, error) {
	if g.sf == "" {
		return tpch.GenOptions{}, usagef("--sf is required")
	}
	if g.dir == "" {
		return tpch.GenOptions{}, usagef("--dir is required")
	}
	sf, err := strconv.ParseFloat(strings.TrimSpace(g.sf), 64)
	if err != nil {
		return tpch.GenOptions{}, usagef("--sf %q is not a number", g.sf)
	}
	format, err := tpch.ParseFormat(g.format)
	if err != nil {
		return tpch.GenOptions{}, usagef("--format: %v", err)
	}
	tables, err := parseTables(g.tables)
	if err != nil {
		return tpch.GenOptions{}, err
	}
	if g.parallel < 0 {
		return tpch.GenOptions{}, usagef("--parallel must be positive")
	}
	opts := tpch.GenOptions{
		SF: sf, Dir: g.dir, Format: format, Tables: tables, Parallel: g.parallel,
		Force: g.force, IfMissing: g.ifMissing,
		Parquet: tpch.ParquetOptions{Codec: g.codec, RowGroupRows: g.rowGroup},
	}
	if err := opts.Validate(); err != nil {
		return tpch.GenOptions{}, usagef("%v", err)
	}
	return opts, nil
}

// runTpchGen generates, registers Parquet tables and prints a summary.
func runTpchGen(ctx context.Context, opts tpch.GenOptions, stdout io.Writer, stderr *os.File) error {
	// NB: the database opens (its catalog created if new) before any data
	// file is written: data files in a directory without a catalog are a
	// database that lost it (storage.Open refuses them).
	var db *storage.DB
	if opts.Format == tpch.FormatParquet {
		var err error
		if db, err = storage.Open(opts.Dir, storage.Options{}); err != nil {
			return err
		}
		reportRecovered(db)
		defer db.Close()
	}
	bars := newGenProgress(opts, stderr)
	if bars != nil {
		opts.Progress = bars.add
	}
	res, err := tpch.Generate(ctx, opts)
	if bars != nil {
		bars.finish(err == nil)
	}
	if err != nil {
		return err
	}
	if res.Skipped {
		fmt.Fprintf(stdout, "TPC-H SF %g (%s) already complete in %s; nothing to do\n", opts.SF, opts.Format, opts.Dir)
		return nil
	}
	if opts.Format == tpch.FormatParquet {
		files := map[string][]string{}
		for _, t := range res.Tables {
			files[t.Table.String()] = t.Files
		}
		if err := db.RegisterFiles(ctx, files); err != nil {
			return err
		}
		if err := db.Close(); err != nil {
			return err
		}
	}
	var rows, bytes int64
	for _, t := range res.Tables {
		rows += t.Rows
		bytes += t.Bytes
	}
	fmt.Fprintf(stdout, "generated TPC-H SF %g (%s) in %s: %d tables, %d rows, %.1f MB in %.2fs\n",
		opts.SF, opts.Format, opts.Dir, len(res.Tables), rows, float64(bytes)/1e6, res.Elapsed.Seconds())
	return nil
}

// genProgress shows one bar per table while generating, only on a terminal.
type genProgress struct {
	p    *mpb.Progress
	bars map[tpch.Table]*mpb.Bar
}

func newGenProgress(opts tpch.GenOptions, stderr *os.File) *genProgress {
	if !term.IsTerminal(int(stderr.Fd())) {
		return nil
	}
	sc, err := tpch.NewScale(opts.SF)
	if err != nil {
		return nil
	}
	tables := opts.Tables
	if len(tables) == 0 {
		tables = tpch.AllTables()
	}
	gp := &genProgress{p: mpb.New(mpb.WithOutput(stderr), mpb.WithRefreshRate(150*time.Millisecond)),
		bars: map[tpch.Table]*mpb.Bar{}}
	for _, t := range tables {
		// NB: bars are created with total 0 and given their total at once:
		// mpb then does not stop counting at the total, which lineitem's
		// estimate (4 rows per order) may pass; finish sets the real total.
		b := gp.p.AddBar(0,
			mpb.PrependDecorators(decor.Name(fmt.Sprintf("%-9s", t)), decor.CountersNoUnit(" %d / %d rows")),
			mpb.AppendDecorators(decor.Percentage()))
		b.SetTotal(sc.EstimatedRows(t), false)
		gp.bars[t] = b
	}
	return gp
}

func (g *genProgress) add(t tpch.Table, rows int64) {
	if b := g.bars[t]; b != nil {
		b.IncrInt64(rows)
	}
}

func (g *genProgress) finish(ok bool) {
	for _, b := range g.bars {
		if ok {
			b.SetTotal(-1, true) // the real count

		} else {
			b.Abort(false)
		}
	}
	g.p.Wait()
}

// parseTables parses a --tables value: comma-separated TPC-H table names;
// none (every table) when it is blank.
func parseTables(s string) ([]tpch.Table, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var tables []tpch.Table
	for _, name := range strings.Split(s, ",") {
		t, err := tpch.ParseTable(name)
		if err != nil {
			return nil, usagef("--tables: %v", err)
		}
		tables = append(tables, t)
	}
	return tables, nil
}
