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
	"runtime/debug"
	"syscall"
	"time"

	"github.com/nicflow/nicflow/internal/buildinfo"
	"github.com/nicflow/nicflow/storage"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/internal/nferr"
)

var rootCmd = &cobra.Command{
	Use:     "nicflow",
	Version: buildinfo.Version(),
	Short:   "A distributed, Arrow-native SQL and dataflow engine for SmartNIC clusters",
	Long: `nicflow runs SQL over Parquet data, embedded in one process or spread over a
cluster of small nodes (SmartNICs/DPUs, ARM boards, containers).

Quick start (embedded, one process):
  nicflow tpch gen --sf 0.1 --dir data      # generate TPC-H data as Parquet
  nicflow tpch run --dir data --verify      # run the 22 TPC-H queries, check answers
  nicflow sql --dir data "select count(*) from lineitem"

Every command explains itself: nicflow <command> --help.

Exit status says who is at fault:
  0    success
  1    local I/O error (disk, permissions)
  2    bad query or usage (syntax, unknown names, bad flags, query too large)
  3    bad data (a damaged file or catalog, division by zero or a bad cast
       on the data, a wrong TPC-H answer; see nicflow catalog recover)
  4    resource exhausted (memory limit, disk full or quota: data files,
       spill files and the catalog alike)
  5    unavailable (a node dead or unreachable, a stale placement)
  6    authentication (another cluster's keys, certificates)
  7    busy (the database is in use by another process)
  70   internal error (a bug in nicflow)
  130  canceled (Ctrl-C)`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// exitCodeFor maps an error's blame to the process exit status
// (nferr.ExitStatus; the table is in the root command's help).
func exitCodeFor(err error) int { return nferr.ExitStatus(nferr.KindOf(err)) }

func main() {
	if v := os.Getenv("NICFLOW_LOCK_WAIT"); v != "" {
		// How long to wait for another process's commit on the same
		// database (default 2m).
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "nicflow: NICFLOW_LOCK_WAIT=%q: want a duration such as 30s\n", v)
			os.Exit(2)
		}
		storage.LockWait = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx)
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

// execute runs the command line; a panic (a bug) becomes an internal error
// with its stack on stderr, not Go's exit status 2, which means a bad query.
func execute(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "%s\n", debug.Stack())
			err = nferr.Internalf("nicflow panicked (a bug; please report it with the stack above): %v", r)
		}
	}()
	return rootCmd.ExecuteContext(ctx)
}
