package main

import (
	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/tpch"
)

var benchGenFlags struct {
	sf       float64
	formats  string
	tables   string
	dir      string
	parallel int
	codec    string
}

var benchGenCmd = &cobra.Command{
	Use:   "gen",
	Short: "Measure TPC-H data generation (rows/s, MB/s, peak RSS)",
	Long: `Measure "tpch gen": every table alone (on all cores), then all tables in one
run, for each format, printing rows/s, MB/s, elapsed seconds and the peak
resident memory of each run (VmHWM, reset between runs). The 300 MiB text
pool every comment comes from is built once per process and timed
separately.

Output goes to a temporary directory that is removed afterwards, unless --dir
is given.`,
	Example: `  # the figures in docs/decisions.md
  nicflow bench gen --sf 1

  # Parquet only, zstd, keep the files
  nicflow bench gen --sf 1 --format parquet --codec zstd --dir /tmp/sf1`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		o := bench.GenOptions{SF: benchGenFlags.sf, Dir: benchGenFlags.dir, Parallel: benchGenFlags.parallel,
			Parquet: tpch.ParquetOptions{Codec: benchGenFlags.codec}}
		for _, f := range splitList(benchGenFlags.formats) {
			ff, err := tpch.ParseFormat(f)
			if err != nil {
				return usagef("--format: %v", err)
			}
			o.Formats = append(o.Formats, ff)
		}
		var err error
		if o.Tables, err = parseTables(benchGenFlags.tables); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return usagef("%v", err)
		}
		_, err = bench.RunGen(cmd.Context(), o, cmd.OutOrStdout())
		return err
	},
}

func init() {
	f := benchGenCmd.Flags()
	f.Float64Var(&benchGenFlags.sf, "sf", 1, "scale factor")
	f.StringVar(&benchGenFlags.formats, "format", "tbl,parquet", "formats to measure, comma-separated")
	f.StringVar(&benchGenFlags.tables, "tables", "", "tables to measure alone (default: all eight)")
	f.StringVar(&benchGenFlags.dir, "dir", "", "output directory (default: a temporary one, removed)")
	f.IntVar(&benchGenFlags.parallel, "parallel", 0, "generating goroutines (default: GOMAXPROCS)")
	f.StringVar(&benchGenFlags.codec, "codec", "", "Parquet compression (default snappy)")
	benchCmd.AddCommand(benchGenCmd)
}
