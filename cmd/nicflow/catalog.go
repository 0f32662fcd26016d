package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

var catalogFlags struct {
	dir       string
	format    string
	rowGroups int
}

var catalogCmd = &cobra.Command{
	Use:   "catalog",
	Short: "Inspect the catalog: tables, files, row groups, statistics",
	Long: `The catalog (DIR/catalog, a Pebble store) records every table of a database:
its columns, its Parquet files with sizes and checksums, the row groups of each
file with per-column min/max/null statistics (used to skip row groups), and
which storage nodes hold each file.

  catalog ls       one line per table
  catalog show     one table in detail
  catalog verify   re-read every file and check sizes, checksums and footers
  catalog recover  bring back a lost or damaged catalog (from its manifests,
                   or rebuilt from the data files)

A damaged or incomplete catalog is never modified by opening it: every command
that only reads opens it read-only, and one that finds it damaged exits with
status 3 and says how to recover.`,
}

var catalogRecoverFlags struct{ dryRun bool }

var catalogRecoverCmd = &cobra.Command{
	Use:   "recover --dir DIR [--dry-run]",
	Short: "Bring back a lost or damaged catalog, deleting nothing",
	Long: `recover gets a database's catalog back in the least destructive way that
works. It needs the database to itself (stop servers that have it open first).

  1. A catalog that opens and holds every commit its seal (DIR/catalog.seal)
     counts is healthy: nothing is done.
  2. A catalog whose manifest marker (DIR/catalog/marker.manifest.*) is gone:
     each MANIFEST-* file is tried on a copy, newest first, and the first whose
     catalog is whole gets its marker back. Nothing else changes.
  3. Otherwise (no catalog, or a damaged one) the catalog is rebuilt from the
     data files (DIR/<table>/<table>-*.parquet) and their footers. The old
     catalog and seal are moved to DIR/catalog.damaged-<time>, never deleted.

Every file nicflow writes records in its footer the table's definition and
what the write replaced, so a rebuilt table gets back its columns, defaults,
CHECK constraints, indexes, primary and unique keys and foreign keys, and files
that a later UPDATE, DELETE, CREATE OR REPLACE or compaction replaced (but that
were not yet deleted) stay out. Files written by older versions or by tpch gen
give their columns only. Views, external tables and a cluster's storage nodes
are recorded in the catalog alone: recover lists them as things to recreate.

Exit status 0 when the catalog is healthy or was recovered, 3 when there is
nothing to recover it from, 7 when another process has the database open.`,
	Example: `  nicflow catalog recover --dir data --dry-run    # say what it would do
  nicflow catalog recover --dir data`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		if catalogFlags.dir == "" {
			return usagef("--dir is required")
		}
		out := cmd.OutOrStdout()
		rep, err := storage.Recover(cmd.Context(), catalogFlags.dir, storage.RecoverOptions{DryRun: catalogRecoverFlags.dryRun, Progress: cmd.ErrOrStderr()})
		if err != nil {
			return err
		}
		would := ""
		if catalogRecoverFlags.dryRun {
			would = "would be "
		}
		switch rep.Action {
		case "healthy":
			fmt.Fprintf(out, "catalog of %s is healthy: nothing to recover (%d tables)\n", catalogFlags.dir, len(rep.Tables))
			return nil
		case "marker":
			fmt.Fprintf(out, "catalog of %s %srecovered: its manifest marker was missing; %s holds the whole catalog\n", catalogFlags.dir, would, rep.Manifest)
		case "rebuilt":
			fmt.Fprintf(out, "catalog of %s %srebuilt from its data files\n", catalogFlags.dir, would)
			if rep.Damage != "" {
				fmt.Fprintf(out, "  it was damaged: %s\n", rep.Damage)
			}
			if rep.Aside != "" {
				fmt.Fprintf(out, "  the old catalog was moved to %s\n", rep.Aside)
			}
		}
		if len(rep.Tables) > 0 {
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tFILES\tROWS\tLEFT OUT\tDEFINITION")
			for _, t := range rep.Tables {
				def := "from footers"
				if !t.Defined {
					def = "columns only"
				}
				if rep.Action == "marker" {
					def = "catalog"
				}
				rows := fmt.Sprint(t.Rows)
				if catalogRecoverFlags.dryRun {
					rows = "-"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", t.Name, t.Files, rows, t.Skipped, def)
			}
			tw.Flush()
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(out, "note: %s\n", w)
		}
		return nil
	},
}

var catalogLsCmd = &cobra.Command{
	Use:   "ls --dir DIR",
	Short: "List tables with rows, files, row groups and size",
	Example: `  nicflow catalog ls --dir data
  nicflow catalog ls --dir data --format json`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		db, err := openCatalogReader()
		if err != nil {
			return err
		}
		defer db.Close()
		return printTables(cmd.OutOrStdout(), db.Tables(), catalogFlags.format)
	},
}

var catalogShowCmd = &cobra.Command{
	Use:   "show --dir DIR TABLE",
	Short: "Show a table's columns, statistics, files and row groups",
	Example: `  nicflow catalog show --dir data lineitem
  nicflow catalog show --dir data lineitem --row-groups 0     # files only
  nicflow catalog show --dir data orders --format json`,
	Args: cobra.ExactArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		db, err := openCatalogReader()
		if err != nil {
			return err
		}
		defer db.Close()
		t, err := db.Table(args[0])
		if err != nil {
			return err
		}
		return printTable(cmd.OutOrStdout(), t, catalogFlags.format, catalogFlags.rowGroups)
	},
}

var catalogVerifyCmd = &cobra.Command{
	Use:   "verify --dir DIR [TABLE...]",
	Short: "Check every file's size, checksum and footer against the catalog",
	Long: `verify reads every file of the named tables (all tables by default) and checks
its size, its whole-file xxh3 checksum and its Parquet footer against the
catalog. It exits with status 3 (bad data) when any file is missing or corrupt.
Scans check sizes and footers on every open, and every column chunk they read
against the chunk checksums the catalog recorded when the file was written;
whole-file checksums are checked here, because reading whole files would
double the I/O of scans that read a few columns.

A catalog written before nicflow recorded chunk checksums has only whole-file
checksums, so every process reads each such file whole before its first scan
of it (50-100 ms per query at TPC-H SF 1). Any process that verified such a
file records its footer and chunk checksums in the catalog, so that later
ones skip that; verify does it for every file that passes and says how many
it upgraded. A file that fails gets nothing recorded and stays an error.`,
	Example: `  nicflow catalog verify --dir data
  nicflow catalog verify --dir data lineitem orders

  # an older database: the first verify upgrades it
  $ nicflow catalog verify --dir data/sf1
  verified 18 files: 18 ok, 0 bad
  recorded footer and chunk checksums of 18 files: scans no longer read them whole first`,
	RunE: func(cmd *cobra.Command, args []string) error {
		db, err := openCatalogReader()
		if err != nil {
			return err
		}
		defer db.Close()
		// NB: with an error, res holds the files verified before it (the
		// error: canceled, or their checksums could not be recorded).
		res, err := db.Verify(cmd.Context(), args...)
		if err != nil && len(res) == 0 {
			return err
		}
		bad, recorded := 0, 0
		for _, r := range res {
			if r.Err != nil {
				bad++
				fmt.Fprintf(cmd.OutOrStdout(), "BAD  %s\n", r.Err)
			}
			if r.Recorded {
				recorded++
			}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "verified %d files: %d ok, %d bad\n", len(res), len(res)-bad, bad)
		if recorded > 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "recorded footer and chunk checksums of %d files: scans no longer read them whole first\n", recorded)
		}
		if err != nil {
			return err
		}
		if bad > 0 {
			return nferr.Dataf("%d of %d files failed verification", bad, len(res))
		}
		return nil
	},
}

func openCatalogReader() (*storage.DB, error) {
	if catalogFlags.dir == "" {
		return nil, usagef("--dir is required")
	}
	switch catalogFlags.format {
	case "text", "json":
	default:
		return nil, usagef("--format must be text or json, got %q", catalogFlags.format)
	}
	db, err := storage.OpenExisting(catalogFlags.dir, storage.Options{})
	if err != nil {
		return nil, err
	}
	reportRecovered(db)
	return db, nil
}

func printTables(w io.Writer, tables []*storage.Table, format string) error {
	if format == "json" {
		type summary struct {
			Table     string `json:"table"`
			Columns   int    `json:"columns"`
			Rows      int64  `json:"rows"`
			Files     int    `json:"files"`
			RowGroups int    `json:"row_groups"`
			Bytes     int64  `json:"bytes"`
			External  bool   `json:"external,omitempty"`
		}
		out := []summary{}
		for _, t := range tables {
			out = append(out, summary{t.QualifiedName(), len(t.Columns), t.Rows(), len(t.Files), t.RowGroupCount(), t.Bytes(), t.External})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(tables) == 0 {
		fmt.Fprintln(w, "no tables")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TABLE\tCOLUMNS\tROWS\tFILES\tROW GROUPS\tSIZE\t")
	for _, t := range tables {
		name := t.QualifiedName()
		if t.External {
			name += " (external)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t\n", name, len(t.Columns), t.Rows(), len(t.Files), t.RowGroupCount(), exec.FormatBytes(t.Bytes()))
	}
	return tw.Flush()
}

func statText(v *storage.Value) string {
	if v == nil {
		return "-"
	}
	return v.String()
}

func nullText(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func printTable(w io.Writer, t *storage.Table, format string, maxRG int) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}
	fmt.Fprintf(w, "table %s: %d rows, %d files, %d row groups, %s", t.QualifiedName(), t.Rows(), len(t.Files), t.RowGroupCount(), exec.FormatBytes(t.Bytes()))
	if t.External {
		fmt.Fprintf(w, ", external (%s)", t.Location)
	}
	fmt.Fprintf(w, ", generation %d\n\n", t.Generation)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tTYPE\tNULL\tNULLS\tMIN\tMAX\tDISTINCT≥")
	for i, c := range t.Columns {
		st := t.ColumnStats(i)
		null := "not null"
		if c.Nullable {
			null = "null"
		}
		nd := "-"
		if st.Distinct > 0 {
			nd = fmt.Sprint(st.Distinct)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Type, null, nullText(st.Nulls), statText(st.Min), statText(st.Max), nd)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tROWS\tROW GROUPS\tSIZE\tCHECKSUM\tNODES")
	for _, f := range t.Files {
		nodes := "local"
		if len(f.Nodes) > 0 {
			nodes = strings.Join(f.Nodes, ",")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", f.Path, f.Rows, len(f.RowGroups), exec.FormatBytes(f.Size), f.Checksum, nodes)
	}
	tw.Flush()
	if maxRG == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := []string{"FILE", "RG", "ROWS", "SIZE"}
	for _, c := range t.Columns {
		hdr = append(hdr, c.Name+" [min, max] nulls")
	}
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	shown := 0
	for fi, f := range t.Files {
		for ri, rg := range f.RowGroups {
			if maxRG > 0 && shown == maxRG {
				tw.Flush()
				fmt.Fprintf(w, "... %d more row groups (--row-groups -1 shows all)\n", t.RowGroupCount()-shown)
				return nil
			}
			cells := []string{fmt.Sprint(fi), fmt.Sprint(ri), fmt.Sprint(rg.Rows), exec.FormatBytes(rg.Bytes)}
			for _, st := range rg.Columns {
				cells = append(cells, fmt.Sprintf("[%s, %s] %s", statText(st.Min), statText(st.Max), nullText(st.Nulls)))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
			shown++
		}
	}
	return tw.Flush()
}

func init() {
	pf := catalogCmd.PersistentFlags()
	pf.StringVar(&catalogFlags.dir, "dir", "", "database directory (required)")
	pf.StringVar(&catalogFlags.format, "format", "text", "output format: text or json")
	catalogShowCmd.Flags().IntVar(&catalogFlags.rowGroups, "row-groups", 20, "row groups to list (0: none, -1: all)")
	catalogRecoverCmd.Flags().BoolVar(&catalogRecoverFlags.dryRun, "dry-run", false, "say what recover would do, change nothing")
	catalogCmd.AddCommand(catalogLsCmd, catalogShowCmd, catalogVerifyCmd, catalogRecoverCmd)
	rootCmd.AddCommand(catalogCmd)
}
