package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
)

var benchSLTFlags bench.SLTOptions

var benchSLTCmd = &cobra.Command{
	Use:   "slt FILE|DIR...",
	Short: "Run sqllogictest conformance files and print how many records nicflow answers right",
	Long: `Run test files in the sqllogictest format (SQLite's corpus: select1.test ...
select5.test, random/, index/, evidence/; the records DuckDB's and
CockroachDB's files share with it), each in a fresh database, and print per
file and in total how many queries and statements gave the expected result,
then the failures grouped by cause.

nicflow reads SQL as PostgreSQL does, so records marked "skipif postgresql"
are skipped and "onlyif postgresql" ones run (--dialect changes the name).
Results are formatted by the record's type letters as SQLite's runner does
(I integer, R three decimals, T text), sorted by its sort mode, and compared
value by value or by their md5 hash.`,
	Example: `  # SQLite's corpus, checked out from github.com/gregrahn/sqllogictest
  nicflow bench slt sqllogictest/test/select1.test sqllogictest/test/evidence

  # show the first 3 failures of each file
  nicflow bench slt --show 3 sqllogictest/test/random/select`,
	Args: cobra.MinimumNArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		o := benchSLTFlags
		o.Files = args
		if err := o.Validate(); err != nil {
			return usagef("%v", err)
		}
		_, err := bench.RunSLT(cmd.Context(), o, cmd.OutOrStdout())
		return err
	},
}

func init() {
	f := benchSLTCmd.Flags()
	f.StringVar(&benchSLTFlags.Dialect, "dialect", "postgresql", "the name nicflow answers to in skipif/onlyif records")
	f.DurationVar(&benchSLTFlags.Timeout, "timeout", 30*time.Second, "time limit of one statement (past it, the record fails)")
	f.IntVar(&benchSLTFlags.Parallelism, "parallel", 2, "pipelines per query")
	f.IntVar(&benchSLTFlags.ShowFailures, "show", 0, "print up to this many failures per file (SQL, expected, got)")
	f.StringVar(&benchSLTFlags.Dir, "dir", "", "directory for the per-file databases (default: a temporary one)")
	benchCmd.AddCommand(benchSLTCmd)
}
