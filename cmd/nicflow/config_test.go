package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// testTree is a small command tree with every kind of flag the real one
// has: nicflow serve, nicflow user (persistent --dir) add, nicflow tpch run.
func testTree() (root, serve, userAdd, tpchRun *cobra.Command) {
	run := func(*cobra.Command, []string) error { return nil }
	root = &cobra.Command{Use: "nicflow"}
	root.PersistentFlags().String("config", "", "")
	root.PersistentFlags().String("log-level", "info", "")
	serve = &cobra.Command{Use: "serve", RunE: run}
	f := serve.Flags()
	f.String("pg-listen", "127.0.0.1:5433", "")
	f.String("dir", "", "")
	f.Int("parallel", 0, "")
	f.Bool("auth", false, "")
	f.Duration("timeout", 30*time.Second, "")
	f.Float64("ratio", 0.5, "")
	f.StringSlice("join", nil, "")
	f.StringArrayP("command", "c", nil, "")
	user := &cobra.Command{Use: "user"}
	user.PersistentFlags().String("dir", "", "")
	userAdd = &cobra.Command{Use: "add", RunE: run}
	userAdd.Flags().String("role", "", "")
	user.AddCommand(userAdd)
	tpch := &cobra.Command{Use: "tpch"}
	tpchRun = &cobra.Command{Use: "run", RunE: run}
	tpchRun.Flags().String("dir", "", "")
	tpchRun.Flags().Int("parallel", 0, "")
	tpch.AddCommand(tpchRun)
	root.AddCommand(serve, user, tpch)
	return
}

// configure parses args on cmd and applies env and file as applyConfig
// does.
func configure(t *testing.T, cmd *cobra.Command, args []string, env map[string]string, file string) error {
	t.Helper()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var cf *configFile
	if file != "" {
		var err error
		if cf, err = parseConfig("test.toml", []byte(file)); err != nil {
			return err
		}
		if err := cf.check(cmd.Root()); err != nil {
			return err
		}
	}
	vals, err := resolveFlags(cmd, cf, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return err
	}
	return applyFlags(cmd.Flags(), vals)
}

func flagString(t *testing.T, cmd *cobra.Command, name string) string {
	t.Helper()
	f := cmd.Flags().Lookup(name)
	if f == nil {
		t.Fatalf("%s has no --%s", cmd.Name(), name)
	}
	return f.Value.String()
}

func TestConfigPrecedence(t *testing.T) {
	const file = `
log-level = "warn"        # shared: every command
parallel = 3              # shared: serve and tpch run

[serve]
pg-listen = "0.0.0.0:5433"
dir = "/from/file"
auth = true
timeout = "1m30s"
ratio = 2
join = ["a:1", "b,2:3"]
command = ["select 1", "select 2"]

[user]
dir = "/users"            # persistent: applies to user add

[tpch.run]
parallel = 7
`
	_, serve, userAdd, tpchRun := testTree()
	env := map[string]string{
		"NICFLOW_DIR":          "/from/env",
		"NICFLOW_PG_LISTEN":    "", // empty: not set
		"NICFLOW_PARALLEL":     "5",
		"NICFLOW_MEMORY_LIMIT": "1GiB",
	}
	if err := configure(t, serve, []string{"--parallel", "9"}, env, file); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"parallel":  "9",            // command line > env > file
		"dir":       "/from/env",    // env > file
		"pg-listen": "0.0.0.0:5433", // file (the empty variable is ignored)
		"auth":      "true",
		"timeout":   "1m30s",
		"ratio":     "2",
		"join":      `[a:1,"b,2:3"]`,
		"command":   "[select 1,select 2]",
		"log-level": "warn", // the root's persistent flag, from the top level
	} {
		if got := flagString(t, serve, name); got != want {
			t.Errorf("serve --%s = %s, want %s", name, got, want)
		}
	}
	if got := serve.Flags().Lookup("join").Value.(interface{ GetSlice() []string }).GetSlice(); len(got) != 2 || got[1] != "b,2:3" {
		t.Errorf("join items %q", got)
	}
	if !serve.Flags().Changed("auth") || serve.Flags().Changed("config") {
		t.Error("flags set from the file must count as given, --config not")
	}

	// [user] dir reaches user add (a persistent flag of user); env wins
	// over it, so the env is left out here.
	if err := configure(t, userAdd, nil, nil, file); err != nil {
		t.Fatal(err)
	}
	if got := flagString(t, userAdd, "dir"); got != "/users" {
		t.Errorf("user add --dir = %s, want /users from [user]", got)
	}
	// The most specific section wins over the top level.
	if err := configure(t, tpchRun, nil, nil, file); err != nil {
		t.Fatal(err)
	}
	if got := flagString(t, tpchRun, "parallel"); got != "7" {
		t.Errorf("tpch run --parallel = %s, want 7 from [tpch.run]", got)
	}
}

// TestConfigSectionsDoNotLeak: a section's key applies to its command's own
// flags only, not to a subcommand's flag that has the same name.
func TestConfigSectionsDoNotLeak(t *testing.T) {
	root := &cobra.Command{Use: "nicflow"}
	storage := &cobra.Command{Use: "storage", RunE: func(*cobra.Command, []string) error { return nil }}
	storage.Flags().String("dir", "", "")
	place := &cobra.Command{Use: "place", RunE: func(*cobra.Command, []string) error { return nil }}
	place.Flags().String("dir", "", "")
	storage.AddCommand(place)
	root.AddCommand(storage)
	if err := configure(t, place, nil, nil, "[storage]\ndir = \"/store\"\n"); err != nil {
		t.Fatal(err)
	}
	if got := flagString(t, place, "dir"); got != "" {
		t.Errorf("storage place --dir = %q: [storage] dir leaked into the subcommand", got)
	}
}

// TestEmptyIsUnset: an empty string in the file, like an empty variable,
// leaves the flag at its default (the example file's "" defaults).
func TestEmptyIsUnset(t *testing.T) {
	_, serve, _, _ := testTree()
	if err := configure(t, serve, nil, map[string]string{"NICFLOW_DIR": ""}, "[serve]\npg-listen = \"\"\ndir = \"\"\n"); err != nil {
		t.Fatal(err)
	}
	if got := flagString(t, serve, "pg-listen"); got != "127.0.0.1:5433" || serve.Flags().Changed("pg-listen") || serve.Flags().Changed("dir") {
		t.Errorf("pg-listen %q (changed %v): an empty value must leave the default", got, serve.Flags().Changed("pg-listen"))
	}
}

// TestReservedEnv: NICFLOW_MEMORY_LIMIT and NICFLOW_PASSWORD keep their
// meaning and never set flags of the same name.
func TestReservedEnv(t *testing.T) {
	root := &cobra.Command{Use: "nicflow"}
	c := &cobra.Command{Use: "sql", RunE: func(*cobra.Command, []string) error { return nil }}
	c.Flags().String("memory-limit", "", "")
	c.Flags().String("password", "", "")
	root.AddCommand(c)
	env := map[string]string{"NICFLOW_MEMORY_LIMIT": "1GiB", "NICFLOW_PASSWORD": "pw"}
	if err := configure(t, c, nil, env, ""); err != nil {
		t.Fatal(err)
	}
	if c.Flags().Changed("memory-limit") || c.Flags().Changed("password") {
		t.Error("a reserved variable set a flag")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string // all in the error
	}{
		{"misspelt key", "[serve]\npg-listn = \"x\"\n", []string{"test.toml:2:", `unknown key "pg-listn" in [serve]`, `did you mean "pg-listen"`}},
		{"underscores", "\n\n[serve]\npg_listen = \"x\"\n", []string{"test.toml:4:", `did you mean "pg-listen"`}},
		{"key of another command", "[tpch.run]\nauth = true\n", []string{"test.toml:2:", "tpch run has no --auth (a flag of serve)"}},
		{"unknown top key", "paralel = 2\n", []string{"test.toml:1:", `unknown key "paralel" at the top level`, `did you mean "parallel"`}},
		{"unknown section", "[srve]\nparallel = 1\n", []string{"test.toml:1:", "unknown section [srve]", "did you mean [serve]?"}},
		{"unknown subsection", "[tpch.rn]\n", []string{"test.toml:1:", "unknown section [tpch.rn]", "did you mean [tpch.run]?"}},
		{"command as a key", "serve = 1\n", []string{"test.toml:1:", "serve is a command: its settings go in a [serve] section"}},
		{"flag as a table", "[serve.dir]\n", []string{"dir is a flag: give it a value"}},
		{"config in the file", "config = \"x.toml\"\n", []string{"config cannot be set in the config file"}},
		{"array of tables", "[[serve]]\nparallel = 1\n", []string{"array of tables"}},
		{"syntax", "[serve]\nparallel = = 1\n", []string{"test.toml:2:"}},
		{"several", "a1 = 1\n[serve]\nb2 = 2\n", []string{"2 problems", "test.toml:1:", "test.toml:3:"}},
		{"bad int", "[serve]\nparallel = \"4\"\n", []string{"test.toml:2:", "[serve] parallel", `want an integer, not the string "4"`}},
		{"bad bool", "[serve]\nauth = \"yes\"\n", []string{"[serve] auth", "want a boolean (true or false)"}},
		{"bad string", "[serve]\ndir = 5\n", []string{"[serve] dir", "want a string, not the integer 5"}},
		{"bad list item", "[serve]\njoin = [\"a\", 1]\n", []string{"[serve] join", "item 2 is the integer 1"}},
		{"bad duration", "[serve]\ntimeout = \"30 seconds\"\n", []string{"test.toml:2 [serve]", "timeout", "want a duration"}},
		{"date", "[serve]\ndir = 2024-01-01\n", []string{"a date or time (quote it to make a string)"}},
	} {
		_, serve, _, _ := testTree()
		err := configure(t, serve, nil, nil, tc.file)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: %v is not a usage error (exit status 2)", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
	// Environment values are checked as the command line's are.
	_, serve, _, _ := testTree()
	err := configure(t, serve, nil, map[string]string{"NICFLOW_PARALLEL": "many"}, "")
	if err == nil || !strings.Contains(err.Error(), "NICFLOW_PARALLEL") || !strings.Contains(err.Error(), "want an integer") {
		t.Errorf("bad environment value: %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"memroy", "memory", 1}, {"pg-listn", "pg-listen", 1}, {"abc", "xyz", 3}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if got := nearest("zzzzzz", []string{"dir", "listen"}); got != "" {
		t.Errorf("nearest suggested %q for nothing alike", got)
	}
}

// TestConfigExample: docs/nicflow.example.toml is what `nicflow config
// example` prints (regenerate it with the command in the error), and the
// example with every key uncommented is a valid file for every command.
func TestConfigExample(t *testing.T) {
	var b bytes.Buffer
	if err := writeConfigExample(&b, rootCmd); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../docs/nicflow.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, b.Bytes()) {
		t.Errorf("docs/nicflow.example.toml differs from the flags: regenerate it with\n  go run ./cmd/nicflow config example > docs/nicflow.example.toml")
	}
	// As it is (every key commented out) and with every key set.
	for _, text := range []string{b.String(), regexp.MustCompile(`(?m)^# ([a-z0-9-]+ = )`).ReplaceAllString(b.String(), "$1")} {
		cf, err := parseConfig("example.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := cf.check(rootCmd); err != nil {
			t.Fatal(err)
		}
		if _, err := cf.checkTypes(rootCmd); err != nil {
			t.Fatal(err)
		}
	}
	// Every command with flags has its section, every root flag its key.
	for _, want := range []string{"\n[serve]\n", "\n[sql]\n", "\n[coordinator]\n", "\n[worker]\n", "\n[storage]\n", "\n[cluster.local]\n", "\n# log-format = \"text\"\n", "# keys = \"\"\n", "(NICFLOW_PG_LISTEN)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the example lacks %q", want)
		}
	}
}

// TestConfigHelp: every runnable command's --help says how to set its
// flags from the environment and the file.
func TestConfigHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			u := c.UsageString()
			if !strings.Contains(u, "Environment and config file:") || !strings.Contains(u, "NICFLOW_") {
				t.Errorf("nicflow %s --help does not mention the environment and the config file", strings.Join(commandPath(c), " "))
			}
		}
		for _, s := range configCommands(c) {
			walk(s)
		}
	}
	walk(rootCmd)
}

func TestLogFormats(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var b bytes.Buffer
	if err := setupLogging("json", "warn", &b); err != nil {
		t.Fatal(err)
	}
	slog.Info("hidden")
	slog.Warn("shown", "node", "w1")
	var rec map[string]any
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON object: %q (%v)", b.String(), err)
	}
	if rec["msg"] != "shown" || rec["node"] != "w1" || rec["level"] != "WARN" {
		t.Errorf("record %v", rec)
	}
	b.Reset()
	if err := setupLogging("text", "debug", &b); err != nil {
		t.Fatal(err)
	}
	slog.Debug("dbg", "k", 1)
	if !strings.Contains(b.String(), "level=DEBUG msg=dbg k=1") {
		t.Errorf("text log %q", b.String())
	}
	if err := setupLogging("xml", "info", &b); err == nil {
		t.Error("--log-format xml accepted")
	}
	if err := setupLogging("text", "loud", &b); err == nil {
		t.Error("--log-level loud accepted")
	}
}

// TestConfigEndToEnd runs nicflow as a process: the file, the environment
// and the command line set `sql --format`, in that order of precedence;
// a broken file fails with status 2; `config show` names the sources.
func TestConfigEndToEnd(t *testing.T) {
	exe := mustExe(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "nicflow.toml")
	if err := os.WriteFile(file, []byte("[sql]\nformat = \"csv\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(append(os.Environ(), testNodeEnv+"=1"), env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	q := []string{"sql", "-c", "select 42 as answer"}
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, q, "answer\n42\n"}, // no config: the default table format would draw a header rule
		{[]string{"NICFLOW_CONFIG=" + file}, q, "answer\n42\n"},
		{[]string{"NICFLOW_CONFIG=" + file, "NICFLOW_FORMAT=json"}, q, `{"answer":42}`},
		{[]string{"NICFLOW_FORMAT=json"}, append([]string{"--config", file, "--format", "csv"}, q...), "answer\n42\n"},
	} {
		out, code := run(c.env, c.args...)
		if c.env == nil {
			if code != 0 || strings.Contains(out, "answer\n42\n") {
				t.Errorf("without a config: exit %d, output %q", code, out)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("env %v, args %v: exit %d, output %q, want %q", c.env, c.args, code, out, c.want)
		}
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[sql]\nformatt = \"csv\"\n"), 0o644)
	if out, code := run(nil, append([]string{"--config", bad}, q...)...); code != 2 || !strings.Contains(out, bad+":2:") || !strings.Contains(out, `did you mean "format"`) {
		t.Errorf("bad file: exit %d, output %q", code, out)
	}
	if out, code := run(nil, "--config", filepath.Join(dir, "missing.toml"), "version"); code != 1 || !strings.Contains(out, "missing.toml") {
		t.Errorf("missing file: exit %d, output %q", code, out)
	}
	out, code := run([]string{"NICFLOW_CONFIG=" + file, "NICFLOW_PARALLEL=3"}, "config", "show", "sql")
	if code != 0 || !regexp.MustCompile(`format +"csv" +`+regexp.QuoteMeta(file)+`:2 \[sql\]`).MatchString(out) ||
		!regexp.MustCompile(`parallel +"3" +NICFLOW_PARALLEL`).MatchString(out) || !regexp.MustCompile(`dir +"" +default`).MatchString(out) {
		t.Errorf("config show sql: exit %d\n%s", code, out)
	}
	if out, code := run(nil, "config", "check", file); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("config check: exit %d, %s", code, out)
	}
	// A broken file in effect does not stop the commands that do not read
	// it; the others fail naming it.
	if out, code := run([]string{"NICFLOW_CONFIG=" + bad}, "config", "example"); code != 0 || !strings.Contains(out, "[worker]") {
		t.Errorf("config example with a broken NICFLOW_CONFIG: exit %d, %.200s", code, out)
	}
	if out, code := run([]string{"NICFLOW_CONFIG=" + bad}, "config", "check", file); code != 0 {
		t.Errorf("config check FILE with a broken NICFLOW_CONFIG: exit %d, %s", code, out)
	}
	if out, code := run([]string{"NICFLOW_CONFIG=" + bad}, "version"); code != 2 || !strings.Contains(out, "bad.toml:2:") {
		t.Errorf("version with a broken NICFLOW_CONFIG: exit %d, %s", code, out)
	}
}
