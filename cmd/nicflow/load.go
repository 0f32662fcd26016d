package main

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/storage"
)

var loadFlags struct {
	dir       string
	table     string
	format    string
	delimiter string
	header    bool
	null      string
	replace   bool
	create    string
}

var loadCmd = &cobra.Command{
	Use:   "load --dir DIR --table T [flags] FILE...",
	Short: "Load csv, tbl or Parquet files into a table (atomically)",
	Long: `load appends the rows of one or more files to a table of the database in
--dir, as COPY does in SQL. The load is atomic: either every row of every file
is committed, or (on a bad row, an error, Ctrl-C or a crash) none is, and no
file is left behind.

Formats (from the extension unless --format is given):
  csv      comma-separated (--delimiter to change), RFC 4180 quotes, --header
  tbl      dbgen output: '|'-separated with a trailing '|'
  parquet  columns are matched by name; types must agree; columns nicflow
           does not read (STRUCT, MAP, lists of lists) are not loaded, and
           named on stderr

Decimals are parsed exactly (no floating point); dates are YYYY-MM-DD. A bad
row stops the load with the file, line and column named, e.g.
  lineitem.tbl:17: column l_quantity (field 5): not a decimal number: "x"

A table that does not exist is created: with the columns --create gives,
or else with the files' own: a Parquet file's columns, or CSV columns named
by the header line (read with --header, detected without it) and typed from
every value (bigint, double, date, timestamp, boolean, else text).`,
	Example: `  nicflow load --dir data --table nation --create "n_nationkey int32, n_name utf8, n_regionkey int32, n_comment utf8" nation.tbl
  nicflow load --dir data --table orders --format csv --header --delimiter ';' orders.csv
  nicflow load --dir data --table lineitem --replace lineitem-*.parquet`,
	Args: cobra.MinimumNArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		f := loadFlags
		if f.dir == "" || f.table == "" {
			return usagef("--dir and --table are required")
		}
		opts := storage.CopyOptions{Format: f.format, Header: f.header, Null: f.null, Replace: f.replace}
		if f.delimiter != "" {
			d := f.delimiter
			if d == `\t` || d == "tab" {
				d = "\t"
			}
			if len(d) != 1 {
				return usagef("--delimiter must be one byte, got %q", f.delimiter)
			}
			opts.Delimiter = d[0]
		}
		for _, p := range args {
			o := opts
			if err := o.Validate(p); err != nil {
				return usagef("%v", err)
			}
		}
		db, err := storage.Open(f.dir, storage.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		reportRecovered(db)
		if f.create != "" {
			sch, err := parseColumnList(f.create)
			if err != nil {
				return usagef("--create: %v", err)
			}
			if err := db.CreateTable(f.table, sch, storage.CreateOptions{IfNotExists: true}); err != nil {
				return err
			}
		} else if _, err := db.Table(f.table); err != nil {
			// A new table: its columns from the files.
			o := opts
			if err := o.Validate(args[0]); err != nil {
				return usagef("%v", err)
			}
			cols, header, err := storage.InferColumns(args, o)
			if err != nil {
				return err
			}
			sch, err := storage.ArrowSchema(cols)
			if err != nil {
				return err
			}
			if err := db.CreateTable(f.table, sch, storage.CreateOptions{}); err != nil {
				return err
			}
			opts.Header = header
			fmt.Fprintf(cmd.ErrOrStderr(), "created table %s (%s)\n", f.table, describeColumns(cols))
		}
		for _, p := range args {
			// Columns nicflow does not read (nested ones, types it has no
			// reading for) are not loaded: say which.
			if o := opts; o.Validate(p) == nil && o.Format == "parquet" {
				bad, err := storage.ParquetUnreadable(nil, p)
				if err != nil {
					return err
				}
				for _, u := range bad {
					fmt.Fprintf(cmd.ErrOrStderr(), "not loading column %s (%s) of %s: %s\n", u.Name, u.Kind, p, u.Reason)
				}
			}
		}
		n, err := db.Copy(cmd.Context(), f.table, args, opts)
		if err != nil {
			return err
		}
		t, err := db.Table(f.table)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "loaded %d rows into %s (now %d rows in %d files)\n", n, t.QualifiedName(), t.Rows(), len(t.Files))
		return nil
	},
}

func init() {
	f := loadCmd.Flags()
	f.StringVar(&loadFlags.dir, "dir", "", "database directory (required)")
	f.StringVar(&loadFlags.table, "table", "", "table to load into, name or schema.name (required)")
	f.StringVar(&loadFlags.format, "format", "", "csv, tbl or parquet (default: from the file extension)")
	f.StringVar(&loadFlags.delimiter, "delimiter", "", "field delimiter, one byte or \\t (csv default ',', tbl '|')")
	f.BoolVar(&loadFlags.header, "header", false, "the first line holds column names (csv)")
	f.StringVar(&loadFlags.null, "null", "", "text of a NULL field (default: the empty field)")
	f.BoolVar(&loadFlags.replace, "replace", false, "replace the table's rows instead of appending")
	f.StringVar(&loadFlags.create, "create", "", `create the table if missing: "name type [not null], ..." (types: int32, int64, float64, bool, utf8, date32, decimal(P,S))`)
	rootCmd.AddCommand(loadCmd)
}

// describeColumns lists columns as "name type, ...".
func describeColumns(cols []storage.Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + c.Type
	}
	return strings.Join(parts, ", ")
}

// parseColumnList parses "a int32 not null, b decimal(15,2), c utf8" into
// a schema. Columns are nullable unless followed by "not null".
func parseColumnList(s string) (*arrow.Schema, error) {
	var fields []arrow.Field
	// Split on commas outside parentheses (decimal(15,2)).
	depth, start := 0, 0
	var parts []string
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, s[start:])
	for _, p := range parts {
		w := strings.Fields(strings.TrimSpace(p))
		if len(w) < 2 {
			return nil, fmt.Errorf("column %q: want \"name type [not null]\"", strings.TrimSpace(p))
		}
		nullable := true
		typ := strings.Join(w[1:], " ")
		if l := strings.ToLower(typ); strings.HasSuffix(l, " not null") {
			nullable = false
			typ = typ[:len(typ)-len(" not null")]
		}
		t, err := storage.ParseType(typ)
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: w[0], Type: t, Nullable: nullable})
	}
	return arrow.NewSchema(fields, nil), nil
}
