// Command nicflow is the single binary of the nicflow engine: data
// generation, SQL, the cluster roles (coordinator, worker, storage, agent) and
// the benchmarks are its subcommands. Each subcommand lives in its own file
// and adds itself to rootCmd in an init function.
//
// Flags live here and only here: subcommands turn them into the documented
// option structs of the library packages, which validate them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/internal/nferr"
)

var rootCmd = &cobra.Command{
	Use:   "nicflow",
	Short: "A distributed, Arrow-native SQL and dataflow engine for SmartNIC clusters",
	Long: `nicflow runs SQL over Parquet data, embedded in one process or spread over a
cluster of small nodes (SmartNICs/DPUs, ARM boards, containers).

Quick start (embedded, one process):
  nicflow tpch gen --sf 0.1 --dir data      # generate TPC-H data as Parquet
  nicflow tpch run --dir data --verify      # run the 22 TPC-H queries, check answers
  nicflow sql --dir data "select count(*) from lineitem"

Every command explains itself: nicflow <command> --help.`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// exitCodeFor maps an error's blame to the process exit code, so scripts can
// tell a bad query (2) from bad data (3), exhausted resources (4), an
// unreachable node (5), cancellation (130) and everything else (1).
func exitCodeFor(err error) int {
	switch nferr.KindOf(err) {
	case nferr.KindQuery:
		return 2
	case nferr.KindData:
		return 3
	case nferr.KindResource:
		return 4
	case nferr.KindUnavailable:
		return 5
	case nferr.KindCanceled:
		return 130
	default:
		return 1
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := rootCmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		var usage *usageError
		if errors.As(err, &usage) || isCobraUsageError(err) {
			fmt.Fprintf(os.Stderr, "nicflow: %v\n(see nicflow --help)\n", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "nicflow: %v\n", err)
		os.Exit(exitCodeFor(err))
	}
}
