package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Parent commands whose subcommands live in their own files
// (tpch_gen.go, tpch_run.go, bench_gen.go, bench_shuffle.go, ...).
var (
	tpchCmd = &cobra.Command{
		Use:   "tpch",
		Short: "Generate TPC-H data and run the TPC-H queries",
		Long: `TPC-H is the benchmark nicflow is measured on. "tpch gen" writes the eight
tables at any scale factor (byte-identical to the official dbgen in .tbl form,
or as Parquet registered in the catalog); "tpch run" runs the 22 queries and
can verify their answers.`,
	}
	benchCmd = &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that print figures (generation, shuffle, queries)",
	}
	versionCmd = &cobra.Command{
		Use:   "version",
		Short: "Print the version, Go version and platform",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			v := "devel"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			fmt.Fprintf(cmd.OutOrStdout(), "nicflow %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
)

func init() {
	rootCmd.AddCommand(tpchCmd, benchCmd, versionCmd)
}
