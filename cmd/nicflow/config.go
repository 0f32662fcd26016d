package main

// Configuration of every command from three places besides the command
// line, generically over cobra's flag sets (so a new flag gets all of it):
//
//   - an environment variable per flag: NICFLOW_ and the long flag name in
//     capitals with _ for - (--pg-listen: NICFLOW_PG_LISTEN);
//   - a TOML file (--config FILE or NICFLOW_CONFIG): keys named exactly as
//     the long flags, at the top (shared: every command with that flag) or
//     in a section per command ([serve], [cluster.local]);
//   - the flag's default.
//
// Precedence: command line > environment > file > default. The root
// command's PersistentPreRunE (applyConfig) sets every flag the command
// line left unchanged, first from the environment, then from the file,
// through pflag's own Set, so a value from either is parsed and checked
// exactly like the same value on the command line and the flag counts as
// given (Changed). It also sets up logging (--log-format, --log-level).
//
// A file key applies to the command of its section, and to the
// subcommands of that command for the flags they inherit from it
// (persistent flags: [user] dir applies to `user add`); a key at the top
// applies to every command that has the flag. Unknown keys and sections
// are errors naming the file, the line and the nearest valid key.

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// envPrefix starts every nicflow environment variable.
const envPrefix = "NICFLOW_"

// envReserved are NICFLOW_ variables that kept the meaning they had before
// every flag got one: they are never read as the flag of the same name.
var envReserved = map[string]string{
	// exec.DefaultMemoryLimit: the default memory budget of every
	// process, so the default of --memory-limit (embedded runs) and of a
	// node's --memory. Read as --memory-limit it would also set the
	// coordinator's per-task budget and clash with `sql --cluster`.
	"NICFLOW_MEMORY_LIMIT": "the default memory budget of every process (default of --memory-limit and --memory)",
	// `nicflow user add`: the new user's password.
	"NICFLOW_PASSWORD": "the password of `nicflow user add`",
}

// notFromConfig are flags that neither the environment nor the file set:
// cobra's own, and --config itself (NICFLOW_CONFIG names the file).
var notFromConfig = map[string]bool{"help": true, "version": true, "config": true}

// noConfigFile annotates commands that do not read the config file in
// effect (config example and check: a broken file must not stop them).
const noConfigFile = "nicflow:no-config-file"

// appliedConfig are the values applyConfig set (for `nicflow config show`).
var appliedConfig map[string]flagValue

var rootConfig struct {
	file      string
	logFormat string
	logLevel  string
}

func init() {
	pf := rootCmd.PersistentFlags()
	pf.StringVar(&rootConfig.file, "config", "", "TOML config file: keys named as the long flags, at the top or in a [command] section (default $NICFLOW_CONFIG; see `nicflow config --help`)")
	pf.StringVar(&rootConfig.logFormat, "log-format", "text", "log format on standard error: text or json (one JSON object a line)")
	pf.StringVar(&rootConfig.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	rootCmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return applyConfig(cmd) }
	// NB: a subcommand's own PersistentPreRunE must not silently turn the
	// configuration off: run every hook from the root down.
	cobra.EnableTraverseRunHooks = true
	cobra.AddTemplateFunc("configHelp", configHelp)
	rootCmd.SetUsageTemplate(rootCmd.UsageTemplate() + "{{configHelp .}}")
}

// envName is the environment variable of a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyConfig sets cmd's unchanged flags from the environment and the
// config file, then sets up logging.
func applyConfig(cmd *cobra.Command) error {
	if s := os.Getenv("NICFLOW_MEMORY_LIMIT"); s != "" {
		if _, err := exec.ParseBytes(s); err != nil {
			return usagef("NICFLOW_MEMORY_LIMIT=%q: want a size such as 2GiB", s)
		}
	}
	var cf *configFile
	if cmd.Annotations[noConfigFile] == "" {
		var err error
		if cf, err = loadConfigFor(cmd); err != nil {
			return err
		}
	}
	vals, err := resolveFlags(cmd, cf, os.LookupEnv)
	if err != nil {
		return err
	}
	if err := applyFlags(cmd.Flags(), vals); err != nil {
		return err
	}
	appliedConfig = vals
	if err := applyS3Flags(); err != nil {
		return err
	}
	return setupLogging(rootConfig.logFormat, rootConfig.logLevel, os.Stderr)
}

// loadConfigFor reads the file of --config, else of NICFLOW_CONFIG, and
// checks it against the whole command tree; nil when neither is given.
func loadConfigFor(cmd *cobra.Command) (*configFile, error) {
	path, where := rootConfig.file, "--config"
	if f := cmd.Flags().Lookup("config"); f == nil || !f.Changed {
		path, where = os.Getenv(envPrefix+"CONFIG"), envPrefix+"CONFIG"
	}
	if path == "" {
		return nil, nil
	}
	cf, err := loadConfigFile(path)
	if err != nil {
		if nferr.Is(err, nferr.KindIO) {
			return nil, nferr.IOf("%s: %w", where, err)
		}
		return nil, err
	}
	if err := cf.check(cmd.Root()); err != nil {
		return nil, err
	}
	configInEffect, _ = filepath.Abs(path)
	return cf, nil
}

// configInEffect is the absolute path of the file applyConfig read.
var configInEffect string

// childEnv passes this process's configuration on to the nodes a command
// starts as processes (cluster local): the config file in effect and the
// log settings, as environment variables, so that the command line the
// command gives each node still wins over them.
func childEnv() []string {
	env := []string{"NICFLOW_LOG_FORMAT=" + rootConfig.logFormat, "NICFLOW_LOG_LEVEL=" + rootConfig.logLevel}
	if configInEffect != "" {
		env = append(env, envPrefix+"CONFIG="+configInEffect)
	}
	return env
}

// setupLogging makes slog's default logger (which every node and server
// logs through) write format at level to w.
func setupLogging(format, level string, w io.Writer) error {
	lvl, err := parseLogLevel(level)
	if err != nil {
		return err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return usagef("--log-format %q: want text or json", format)
	}
	slog.SetDefault(slog.New(h))
	return nil
}

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usagef("--log-level %q: want debug, info, warn or error", s)
}

// ---------------------------------------------------------------- resolving

// flagValue is a value for one flag from the environment or the file.
type flagValue struct {
	flag *pflag.Flag
	// args are passed to the flag's Set in order: one, except for a
	// stringArray flag set from a TOML array (Set appends).
	args []string
	// from names the source: "NICFLOW_X" or "FILE:LINE [section]".
	from string
}

// resolveFlags returns the values the environment (through lookup) and cf
// give the flags of cmd that the command line left unchanged, by flag name.
func resolveFlags(cmd *cobra.Command, cf *configFile, lookup func(string) (string, bool)) (map[string]flagValue, error) {
	out := map[string]flagValue{}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || notFromConfig[f.Name] {
			return
		}
		env := envName(f.Name)
		if _, reserved := envReserved[env]; !reserved {
			if v, ok := lookup(env); ok && v != "" {
				out[f.Name] = flagValue{flag: f, args: []string{v}, from: env}
				return
			}
		}
		if cf == nil {
			return
		}
		e, sec, ok := cf.lookup(cmd, f.Name)
		if !ok || e.v == "" {
			// NB: an empty string leaves the flag at its default, as an
			// empty variable does: the example file's "" defaults then
			// mean what they say when uncommented.
			return
		}
		args, cerr := tomlFlagArgs(f, e.v)
		if cerr != nil {
			err = usagef("config file %s:%d: %s%s: %v", cf.path, e.line, sectionPrefix(sec), f.Name, cerr)
			return
		}
		out[f.Name] = flagValue{flag: f, args: args, from: fmt.Sprintf("%s:%d%s", cf.path, e.line, sectionSuffix(sec))}
	})
	return out, err
}

func sectionPrefix(sec string) string {
	if sec == "" {
		return ""
	}
	return "[" + sec + "] "
}

func sectionSuffix(sec string) string {
	if sec == "" {
		return ""
	}
	return " [" + sec + "]"
}

// applyFlags sets the flags (marking them Changed, as if given on the
// command line); a bad value is a usage error naming its source and what
// the flag wants.
func applyFlags(fs *pflag.FlagSet, vals map[string]flagValue) error {
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := vals[n]
		for _, a := range v.args {
			if err := fs.Set(n, a); err != nil {
				return usagef("%s: %s = %q: want %s (%v)", v.from, n, a, flagTypeText(v.flag), err)
			}
		}
	}
	return nil
}

// flagTypeText says in words what a flag's values are.
func flagTypeText(f *pflag.Flag) string {
	switch t := f.Value.Type(); t {
	case "bool":
		return "a boolean (true or false)"
	case "int", "int8", "int16", "int32", "int64", "count":
		return "an integer"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a non-negative integer"
	case "float32", "float64":
		return "a number"
	case "duration":
		return `a duration such as "30s" or "1m30s"`
	case "string":
		return "a string"
	case "stringSlice", "stringArray":
		return "a list of strings"
	case "intSlice", "int64Slice", "uintSlice":
		return "a list of integers"
	default:
		return "a " + t
	}
}

// tomlFlagArgs turns a TOML value into the arguments of the flag's Set.
// TOML types must match the flag's: strings for string and duration flags,
// integers for integer flags, booleans for bool flags, arrays (or one
// string) for list flags.
func tomlFlagArgs(f *pflag.Flag, v any) ([]string, error) {
	want := func() error { return fmt.Errorf("want %s, not %s", flagTypeText(f), tomlTypeText(v)) }
	switch t := f.Value.Type(); t {
	case "bool":
		if b, ok := v.(bool); ok {
			return []string{strconv.FormatBool(b)}, nil
		}
	case "int", "int8", "int16", "int32", "int64", "count", "uint", "uint8", "uint16", "uint32", "uint64":
		if n, ok := v.(int64); ok {
			return []string{strconv.FormatInt(n, 10)}, nil
		}
	case "float32", "float64":
		switch n := v.(type) {
		case int64:
			return []string{strconv.FormatInt(n, 10)}, nil
		case float64:
			return []string{strconv.FormatFloat(n, 'g', -1, 64)}, nil
		}
	case "stringSlice", "stringArray":
		if s, ok := v.(string); ok {
			if t == "stringSlice" {
				return []string{csvJoin([]string{s})}, nil
			}
			return []string{s}, nil
		}
		a, ok := v.([]any)
		if !ok {
			return nil, want()
		}
		items := make([]string, len(a))
		for i, x := range a {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("want a list of strings; item %d is %s", i+1, tomlTypeText(x))
			}
			items[i] = s
		}
		if t == "stringArray" {
			return items, nil
		}
		// NB: an empty array empties the list: pflag's first Set replaces
		// the default.
		return []string{csvJoin(items)}, nil
	case "intSlice", "int64Slice", "uintSlice":
		a, ok := v.([]any)
		if !ok {
			return nil, want()
		}
		items := make([]string, len(a))
		for i, x := range a {
			n, ok := x.(int64)
			if !ok {
				return nil, fmt.Errorf("want a list of integers; item %d is %s", i+1, tomlTypeText(x))
			}
			items[i] = strconv.FormatInt(n, 10)
		}
		return []string{strings.Join(items, ",")}, nil
	default: // "string", "duration" and every other type parse a string
		if s, ok := v.(string); ok {
			return []string{s}, nil
		}
	}
	return nil, want()
}

// csvJoin writes items as one CSV record, the form a stringSlice flag
// parses (items holding commas or quotes are quoted).
func csvJoin(items []string) string {
	if len(items) == 0 {
		return ""
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(items) //nolint:errcheck // a bytes.Buffer does not fail
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

func tomlTypeText(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case int64:
		return fmt.Sprintf("the integer %d", x)
	case float64:
		return fmt.Sprintf("the number %g", x)
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case time.Time, toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return "a date or time (quote it to make a string)"
	}
	return fmt.Sprintf("a %T", v)
}

// ---------------------------------------------------------------- the file

// configFile is a parsed config file: the top level and a table per
// command section, with the line of every key.
type configFile struct {
	path string
	top  *configTable
}

// configTable is the top level or one [section].
type configTable struct {
	name string // "" for the top level, "serve", "cluster.local"
	line int    // the header's line (0 for the top level)
	keys map[string]configEntry
	subs map[string]*configTable
}

type configEntry struct {
	v    any
	line int
}

// loadConfigFile parses a TOML config file (nothing checked against the
// commands yet: configFile.check).
func loadConfigFile(path string) (*configFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nferr.IOf("reading config file %s: %w", path, err)
	}
	return parseConfig(path, b)
}

func parseConfig(path string, b []byte) (*configFile, error) {
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		if de, ok := err.(*toml.DecodeError); ok {
			row, col := de.Position()
			msg := de.Error()
			if strings.HasSuffix(strings.ToLower(path), ".json") {
				msg += " (this is a JSON file: the config file is TOML now, with keys named as the flags; see docs/configuration.md)"
			}
			return nil, usagef("config file %s:%d:%d: %s", path, row, col, msg)
		}
		return nil, usagef("config file %s: %v", path, err)
	}
	lines, err := keyLines(b)
	if err != nil {
		return nil, usagef("config file %s: %v", path, err)
	}
	cf := &configFile{path: path}
	cf.top, err = buildTable(path, "", nil, doc, lines)
	if err != nil {
		return nil, err
	}
	return cf, nil
}

// keyLines maps every key path of the document (parts joined by NUL) to
// the line it is defined on.
func keyLines(b []byte) (map[string]int, error) {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(b)
	var prefix []string
	keyOf := func(it unstable.Iterator) ([]string, int) {
		var parts []string
		line := 0
		for it.Next() {
			k := it.Node()
			if line == 0 {
				line = p.Shape(k.Raw).Start.Line
			}
			parts = append(parts, string(k.Data))
		}
		return parts, line
	}
	var keyval func(n *unstable.Node, prefix []string)
	keyval = func(n *unstable.Node, prefix []string) {
		parts, line := keyOf(n.Key())
		full := slices.Concat(prefix, parts)
		for i := len(prefix) + 1; i <= len(full); i++ {
			k := strings.Join(full[:i], "\x00")
			if _, ok := lines[k]; !ok {
				lines[k] = line
			}
		}
		if v := n.Value(); v.Kind == unstable.InlineTable {
			it := v.Children()
			for it.Next() {
				keyval(it.Node(), full)
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var line int
			prefix, line = keyOf(e.Key())
			for i := 1; i <= len(prefix); i++ {
				k := strings.Join(prefix[:i], "\x00")
				if _, ok := lines[k]; !ok || i == len(prefix) {
					lines[k] = line
				}
			}
		case unstable.KeyValue:
			keyval(e, prefix)
		}
	}
	return lines, p.Error()
}

func buildTable(path, name string, parts []string, m map[string]any, lines map[string]int) (*configTable, error) {
	t := &configTable{name: name, line: lines[strings.Join(parts, "\x00")], keys: map[string]configEntry{}, subs: map[string]*configTable{}}
	for k, v := range m {
		kp := append(slices.Clone(parts), k)
		line := lines[strings.Join(kp, "\x00")]
		switch x := v.(type) {
		case map[string]any:
			sub, err := buildTable(path, strings.TrimPrefix(name+"."+k, "."), kp, x, lines)
			if err != nil {
				return nil, err
			}
			t.subs[k] = sub
		case []any:
			for _, e := range x {
				if _, ok := e.(map[string]any); ok {
					return nil, usagef("config file %s:%d: %s is an array of tables; nicflow's config has one table per command", path, line, strings.Join(kp, "."))
				}
			}
			t.keys[k] = configEntry{v: v, line: line}
		default:
			t.keys[k] = configEntry{v: v, line: line}
		}
	}
	return t, nil
}

// lookup finds the file's value for flag name of cmd: in cmd's section,
// then (for a flag cmd inherits) in the sections of the commands between
// the one defining it and cmd, then at the top. sec names the section
// ("" for the top level).
func (cf *configFile) lookup(cmd *cobra.Command, name string) (e configEntry, sec string, ok bool) {
	owner := flagOwner(cmd, name)
	path := commandPath(cmd)
	// tables[i] is the table of the command path[:i] (nil when absent).
	tables := []*configTable{cf.top}
	for _, p := range path {
		t := tables[len(tables)-1]
		if t != nil {
			t = t.subs[p]
		}
		tables = append(tables, t)
	}
	ownerDepth := len(commandPath(owner))
	for i := len(tables) - 1; i >= 1 && i >= ownerDepth; i-- {
		if t := tables[i]; t != nil {
			if e, ok := t.keys[name]; ok {
				return e, t.name, true
			}
		}
	}
	e, ok = cf.top.keys[name]
	return e, "", ok
}

// flagOwner is the command that defines flag name of cmd: cmd itself, or
// the ancestor whose persistent flag cmd inherits.
func flagOwner(cmd *cobra.Command, name string) *cobra.Command {
	if cmd.LocalNonPersistentFlags().Lookup(name) != nil || cmd.PersistentFlags().Lookup(name) != nil {
		return cmd
	}
	for p := cmd.Parent(); p != nil; p = p.Parent() {
		if p.PersistentFlags().Lookup(name) != nil {
			return p
		}
	}
	return cmd
}

// commandPath is cmd's names below the root: [cluster local].
func commandPath(cmd *cobra.Command) []string {
	var path []string
	for c := cmd; c.HasParent(); c = c.Parent() {
		path = append([]string{c.Name()}, path...)
	}
	return path
}

// flagNames are the flags settable in cmd's section: its own and those it
// inherits.
func flagNames(cmd *cobra.Command) map[string]bool {
	names := map[string]bool{}
	add := func(f *pflag.Flag) {
		if !notFromConfig[f.Name] {
			names[f.Name] = true
		}
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	return names
}

// configCommands are the commands that have a section: every command but
// cobra's own and hidden ones.
func configCommands(cmd *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cmd.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// problem is one thing wrong with a config file.
type problem struct {
	line int
	msg  string
}

// check reports the file's unknown keys and sections, every one with its
// line and the nearest valid name.
func (cf *configFile) check(root *cobra.Command) error {
	// Where each flag name is defined, for "pg-listen is a flag of serve".
	owners := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for n := range flagNames(c) {
			if own := flagOwner(c, n); own == c {
				owners[n] = append(owners[n], strings.Join(commandPath(c), " "))
			}
		}
		for _, s := range configCommands(c) {
			walk(s)
		}
	}
	walk(root)
	var probs []problem
	cf.checkTable(cf.top, root, owners, &probs)
	if len(probs) == 0 {
		return nil
	}
	sort.Slice(probs, func(i, j int) bool { return probs[i].line < probs[j].line })
	if len(probs) == 1 {
		return usagef("config file %s:%d: %s", cf.path, probs[0].line, probs[0].msg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config file %s has %d problems:", cf.path, len(probs))
	for i, p := range probs {
		if i == 10 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(probs)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s:%d: %s", cf.path, p.line, p.msg)
	}
	return usagef("%s", b.String())
}

func (cf *configFile) checkTable(t *configTable, cmd *cobra.Command, owners map[string][]string, probs *[]problem) {
	top := t.name == ""
	valid := flagNames(cmd)
	if top {
		for n := range owners {
			valid[n] = true
		}
	}
	subs := map[string]*cobra.Command{}
	for _, c := range configCommands(cmd) {
		subs[c.Name()] = c
		for _, a := range c.Aliases {
			subs[a] = c
		}
	}
	where := "at the top level"
	if !top {
		where = "in [" + t.name + "]"
	}
	for k, e := range t.keys {
		switch {
		case notFromConfig[k]:
			*probs = append(*probs, problem{e.line, fmt.Sprintf("%s cannot be set in the config file", k)})
		case valid[k]:
		case subs[k] != nil:
			*probs = append(*probs, problem{e.line, fmt.Sprintf("%s is a command: its settings go in a [%s] section", k, strings.TrimPrefix(t.name+"."+k, "."))})
		case len(owners[k]) > 0:
			*probs = append(*probs, problem{e.line, fmt.Sprintf("unknown key %q %s: %s has no --%s (a flag of %s)", k, where, cmdLabel(cmd), k, strings.Join(owners[k], ", "))})
		default:
			cands := make([]string, 0, len(valid))
			for n := range valid {
				cands = append(cands, n)
			}
			*probs = append(*probs, problem{e.line, fmt.Sprintf("unknown key %q %s%s", k, where, suggest(k, cands))})
		}
	}
	for k, sub := range t.subs {
		c := subs[k]
		if c == nil {
			if valid[k] {
				*probs = append(*probs, problem{sub.line, fmt.Sprintf("%s is a flag: give it a value (%s = ...), not a table", k, k)})
				continue
			}
			cands := make([]string, 0, len(subs))
			for n := range subs {
				cands = append(cands, n)
			}
			msg := fmt.Sprintf("unknown section [%s]: %s has no command %q", sub.name, cmdLabel(cmd), k)
			if s := nearest(k, cands); s != "" {
				msg += fmt.Sprintf("; did you mean [%s]?", strings.TrimPrefix(t.name+"."+s, "."))
			}
			*probs = append(*probs, problem{sub.line, msg})
			continue
		}
		cf.checkTable(sub, c, owners, probs)
	}
}

func cmdLabel(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return "nicflow"
	}
	return strings.Join(commandPath(cmd), " ")
}

// suggest is "; did you mean "x"?" for the nearest candidate, or "".
func suggest(key string, cands []string) string {
	if s := nearest(key, cands); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// nearest is the candidate closest to s in edit distance, when it is close
// enough to be what was meant (a third of the length, at least 1).
func nearest(s string, cands []string) string {
	sort.Strings(cands)
	best, bestD := "", max(1, len(s)/3)+1
	norm := strings.ReplaceAll(strings.ToLower(s), "_", "-")
	for _, c := range cands {
		if d := editDistance(norm, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein (optimal string alignment)
// distance: insertions, deletions, substitutions and transpositions.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// ---------------------------------------------------------------- help

// configHelp is the paragraph every command's --help ends with.
func configHelp(cmd *cobra.Command) string {
	var example string
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if example == "" && !notFromConfig[f.Name] && !f.Hidden {
			example = f.Name
		}
	})
	var text string
	if example == "" || !cmd.HasParent() {
		text = "Every flag can also be set by an environment variable, NICFLOW_ and the flag name in capitals with _ for - " +
			"(--log-level: NICFLOW_LOG_LEVEL), or in the TOML file of --config or NICFLOW_CONFIG, at the top or in a " +
			"section named after the command ([worker], [cluster.local])."
	} else {
		text = fmt.Sprintf("Every flag can also be set by an environment variable, NICFLOW_ and its name in capitals "+
			"(--%s: %s), or in the TOML file of --config or NICFLOW_CONFIG, section [%s] (%s = ...).",
			example, envName(example), strings.Join(commandPath(cmd), "."), example)
	}
	text += " Precedence: command line > environment > config file > default. See `nicflow config --help`."
	var b strings.Builder
	b.WriteString("\nEnvironment and config file:\n")
	for _, l := range wrapText(text, 76) {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
