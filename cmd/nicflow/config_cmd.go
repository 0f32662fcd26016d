package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var configCmd = &cobra.Command{
	Use:   "config",
	Short: "The config file and NICFLOW_* environment variables: example, check, show",
	Long: `Every flag of every command can be set three ways besides the command line:

  environment   NICFLOW_ and the long flag name in capitals, - as _
                (--pg-listen: NICFLOW_PG_LISTEN, --log-level: NICFLOW_LOG_LEVEL)
  config file   TOML, named by --config FILE or NICFLOW_CONFIG; keys are the
                long flag names. A key at the top applies to every command
                that has that flag; a key in a section to that command:
                [coordinator], [worker], [storage], [serve], [sql],
                [cluster.local] (and a section's persistent flags, such as
                [user] dir, to its subcommands).
  default       the flag's default (--help shows it)

Precedence: command line > environment > config file > default. Values are
parsed exactly as on the command line: sizes and durations are strings
("8GiB", "30s"), numbers are integers, switches are true or false, lists are
arrays of strings (or one comma-separated string).

An unknown key or section is an error naming the file, the line and the
nearest valid name, so a misspelt setting never falls back to its default
silently; so is a value of the wrong type.

Two variables keep the meaning they had before: NICFLOW_MEMORY_LIMIT is the
default memory budget of every process (the default of --memory-limit and of
a node's --memory), and NICFLOW_PASSWORD the password of "nicflow user add".
Logs go to standard error as text or JSON (--log-format) at --log-level.

"nicflow config example" prints a commented file with every key and its
default (docs/nicflow.example.toml is its output); see docs/configuration.md.`,
	Example: `  nicflow config example > /etc/nicflow/nicflow.toml
  nicflow config check --config /etc/nicflow/nicflow.toml
  nicflow --config /etc/nicflow/nicflow.toml config show worker
  NICFLOW_CONFIG=/etc/nicflow/nicflow.toml NICFLOW_LOG_FORMAT=json nicflow worker`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
}

var configExampleCmd = &cobra.Command{
	Annotations: map[string]string{noConfigFile: "1"},
	Use:         "example",
	Short:       "Print a commented config file with every key and its default",
	Long: `example prints a TOML config file generated from the real flags of every
command: each key commented out with its default value, its help and its
environment variable. Uncomment and edit what you need.`,
	Example: `  nicflow config example > nicflow.toml`,
	Args:    cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return writeConfigExample(cmd.OutOrStdout(), cmd.Root())
	},
}

var configCheckCmd = &cobra.Command{
	Annotations: map[string]string{noConfigFile: "1"},
	Use:         "check [FILE]",
	Short:       "Check a config file: syntax, keys, and the type of every value",
	Long: `check reads a config file (FILE, else --config, else NICFLOW_CONFIG) and
reports every unknown key or section and every value whose type does not fit
its flag, for every command the file configures. Sizes, addresses and other
strings are checked by the command that uses them, when it runs.`,
	Example: `  nicflow config check /etc/nicflow/nicflow.toml`,
	Args:    cobra.MaximumNArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		path := rootConfig.file
		if len(args) == 1 {
			path = args[0]
		} else if !cmd.Flags().Changed("config") {
			path = os.Getenv(envPrefix + "CONFIG")
		}
		if path == "" {
			return usagef("give the file: nicflow config check FILE")
		}
		cf, err := loadConfigFile(path)
		if err != nil {
			return err
		}
		if err := cf.check(cmd.Root()); err != nil {
			return err
		}
		n, err := cf.checkTypes(cmd.Root())
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d settings)\n", path, n)
		return nil
	},
}

var configShowCmd = &cobra.Command{
	Use:   "show COMMAND...",
	Short: "Show a command's settings and where each comes from",
	Long: `show prints every flag of a command with the value it would run with and
its source: the environment variable, the config file and line, or the
default. Command-line flags are not part of it: they win over all of these.`,
	Example: `  nicflow --config nicflow.toml config show worker
  NICFLOW_PG_LISTEN=0.0.0.0:5433 nicflow config show serve`,
	Args: cobra.MinimumNArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		target, rest, err := cmd.Root().Find(args)
		if err != nil || len(rest) > 0 || target == cmd.Root() {
			return usagef("no command %q", strings.Join(args, " "))
		}
		cf, err := loadConfigFor(cmd)
		if err != nil {
			return err
		}
		// The target's inherited flags are merged in by InheritedFlags;
		// none of them was given on this command line.
		target.InheritedFlags()
		vals, err := resolveFlags(target, cf, os.LookupEnv)
		if err != nil {
			return err
		}
		return writeSettings(cmd.OutOrStdout(), target, vals)
	},
}

func init() {
	configCmd.AddCommand(configExampleCmd, configCheckCmd, configShowCmd)
	rootCmd.AddCommand(configCmd)
}

// secretFlag reports flags whose values show hides.
func secretFlag(name string) bool {
	for _, s := range []string{"password", "secret", "token"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

func writeSettings(w io.Writer, cmd *cobra.Command, vals map[string]flagValue) error {
	type row struct{ name, value, from string }
	var rows []row
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if notFromConfig[f.Name] || f.Hidden {
			return
		}
		r := row{name: f.Name, value: f.DefValue, from: "default"}
		if v, ok := vals[f.Name]; ok {
			r.value, r.from = strings.Join(v.args, " "), v.from
		} else if f.Changed {
			// A root flag this very command line parsed (--log-level), or
			// set from the environment or file for it.
			r.value, r.from = f.Value.String(), "command line"
			if v, ok := appliedConfig[f.Name]; ok {
				r.value, r.from = strings.Join(v.args, " "), v.from
			}
		}
		if secretFlag(f.Name) && r.value != "" {
			r.value = "(hidden)"
		}
		rows = append(rows, r)
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	wn, wv := 4, 5
	for _, r := range rows {
		wn, wv = max(wn, len(r.name)), max(wv, len(strconv.Quote(r.value)))
	}
	fmt.Fprintf(w, "%-*s  %-*s  %s\n", wn, "flag", wv, "value", "from")
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-*s  %-*s  %s\n", wn, r.name, wv, strconv.Quote(r.value), r.from); err != nil {
			return err
		}
	}
	return nil
}

// checkTypes converts every value of the file for every command it
// configures, as applyConfig would, without setting any flag: a probe
// flag of the same type parses each value. It returns the number of
// values checked.
func (cf *configFile) checkTypes(root *cobra.Command) (int, error) {
	n := 0
	var walk func(c *cobra.Command, t *configTable) error
	walk = func(c *cobra.Command, t *configTable) error {
		var err error
		c.InheritedFlags() // merge the persistent flags of the ancestors
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if err != nil || notFromConfig[f.Name] {
				return
			}
			e, sec, ok := cf.lookup(c, f.Name)
			if !ok || e.v == "" {
				return
			}
			args, cerr := tomlFlagArgs(f, e.v)
			if cerr == nil {
				cerr = probeFlag(f, args)
			}
			if cerr != nil {
				err = usagef("config file %s:%d: %s%s: %v", cf.path, e.line, sectionPrefix(sec), f.Name, cerr)
			}
			n++
		})
		if err != nil {
			return err
		}
		for _, s := range configCommands(c) {
			var st *configTable
			if t != nil {
				st = t.subs[s.Name()]
			}
			if err := walk(s, st); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, cf.top); err != nil {
		return 0, err
	}
	return n, nil
}

// probeFlag parses args with a fresh flag of f's type.
func probeFlag(f *pflag.Flag, args []string) error {
	fs := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	switch f.Value.Type() {
	case "bool":
		fs.Bool("x", false, "")
	case "int":
		fs.Int("x", 0, "")
	case "int32":
		fs.Int32("x", 0, "")
	case "int64":
		fs.Int64("x", 0, "")
	case "uint":
		fs.Uint("x", 0, "")
	case "uint32":
		fs.Uint32("x", 0, "")
	case "uint64":
		fs.Uint64("x", 0, "")
	case "float64":
		fs.Float64("x", 0, "")
	case "duration":
		fs.Duration("x", 0, "")
	case "count":
		fs.Count("x", "")
	default:
		return nil // strings and lists: the command checks their content
	}
	for _, a := range args {
		if err := fs.Set("x", a); err != nil {
			return fmt.Errorf("want %s: %v", flagTypeText(f), err)
		}
	}
	return nil
}

// ---------------------------------------------------------------- example

// exampleFirst are the commands whose sections open the example file.
var exampleFirst = []string{"serve", "sql", "coordinator", "worker", "storage", "cluster"}

// writeConfigExample writes the commented example file: the root's
// persistent flags at the top, then a section per command with flags of
// its own, every key commented out with its default.
func writeConfigExample(w io.Writer, root *cobra.Command) error {
	var b strings.Builder
	b.WriteString(`# nicflow configuration file (TOML). Generated by ` + "`nicflow config example`" + `
# from the flags of every command: docs/nicflow.example.toml is this output.
#
# Give it with --config FILE or NICFLOW_CONFIG=FILE. Keys are the long flag
# names. A key at the top level applies to every command that has that flag
# (the cluster key directory, the log format); a key in a [section] applies
# to that command ([worker], [cluster.local]) and, for the flags they
# inherit, to its subcommands. Precedence: command line > NICFLOW_*
# environment variable > this file > default. Unknown keys are errors.
#
# Every key below is commented out and shows its default: uncomment and edit
# what you need. Sizes and durations are strings ("8GiB", "30s"), lists are
# arrays of strings. See docs/configuration.md.
`)
	writeExampleFlags(&b, root.PersistentFlags())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		subs := configCommands(c)
		if c == root {
			// The roles first, the benchmarks last.
			rank := func(c *cobra.Command) int {
				if i := slices.Index(exampleFirst, c.Name()); i >= 0 {
					return i
				}
				if c.Name() == "bench" {
					return len(exampleFirst) + 1
				}
				return len(exampleFirst)
			}
			sort.SliceStable(subs, func(i, j int) bool { return rank(subs[i]) < rank(subs[j]) })
		}
		for _, s := range subs {
			if s == configCmd {
				continue
			}
			own := pflag.NewFlagSet(s.Name(), pflag.ContinueOnError)
			s.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if !notFromConfig[f.Name] && !f.Hidden && f.Deprecated == "" {
					own.AddFlag(f)
				}
			})
			if own.HasFlags() {
				fmt.Fprintf(&b, "\n\n[%s]\n", strings.Join(commandPath(s), "."))
				for _, l := range wrapText("nicflow "+strings.Join(commandPath(s), " ")+": "+s.Short, 76) {
					b.WriteString("# " + l + "\n")
				}
				writeExampleFlags(&b, own)
			}
			walk(s)
		}
	}
	walk(root)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeExampleFlags(b *strings.Builder, fs *pflag.FlagSet) {
	fs.SortFlags = true
	fs.VisitAll(func(f *pflag.Flag) {
		if notFromConfig[f.Name] || f.Hidden {
			return
		}
		_, usage := pflag.UnquoteUsage(f)
		env := envName(f.Name)
		if _, reserved := envReserved[env]; reserved {
			env = "no variable: " + env + " is " + envReserved[env]
		}
		b.WriteString("\n")
		for _, l := range wrapText(usage+" ("+env+")", 76) {
			b.WriteString("# " + l + "\n")
		}
		fmt.Fprintf(b, "# %s = %s\n", f.Name, tomlDefault(f))
	})
}

// tomlDefault writes a flag's default as a TOML value.
func tomlDefault(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count", "float32", "float64":
		return f.DefValue
	case "stringSlice", "stringArray", "intSlice", "int64Slice", "uintSlice":
		s := strings.TrimSuffix(strings.TrimPrefix(f.DefValue, "["), "]")
		if s == "" {
			return "[]"
		}
		var items []string
		for _, x := range strings.Split(s, ",") {
			if strings.HasSuffix(f.Value.Type(), "Slice") && !strings.HasPrefix(f.Value.Type(), "string") {
				items = append(items, x)
			} else {
				items = append(items, tomlString(x))
			}
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return tomlString(f.DefValue)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// wrapText breaks s into lines of at most width bytes at spaces.
func wrapText(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
