package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/internal/buildinfo"
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
		Short: "Print the version, commit, build date, Go version and platform",
		Long: `Print what this binary is: its version (stamped by "make release" from git
describe, else the module version, else "(devel)"), the commit and build
date (stamped, else the VCS revision and commit time Go recorded), the Go
version and the platform. "nicflow --version" prints the same.`,
		Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprint(cmd.OutOrStdout(), buildinfo.Get().String())
		},
	}
)

func init() {
	rootCmd.AddCommand(tpchCmd, benchCmd, versionCmd)
	// NB: --version prints what `nicflow version` prints.
	rootCmd.SetVersionTemplate(buildinfo.Get().String())
}
