package main

// Tests of the deployment files at the repository root and in deploy/:
// the Dockerfile and .dockerignore (static checks: there is no Docker
// engine on the test machines), docker-compose.yml and the systemd units.
// Every command line they run is given to this binary's real flag parser,
// so that they cannot drift from the CLI. The Helm chart has its own test
// module (deploy/helm/test).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/emutest"
)

const repoRoot = "../.."

// commandLineError gives args (a nicflow command line without the program
// name) to this binary's flag parser, with --help so that nothing runs:
// unknown commands or flags, and values of the wrong type, fail. It also
// fails when the command resolved is not the one args name.
func commandLineError(exe string, args []string) error {
	if len(args) == 0 {
		return errors.New("empty nicflow command line")
	}
	var path []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		path = append(path, a)
	}
	cmd := exec.Command(exe, append(slices.Clone(args), "--help")...)
	cmd.Env = append(os.Environ(), testNodeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("nicflow %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if want := "Usage:\n  nicflow " + strings.Join(path, " "); !strings.Contains(string(out), want) {
		return fmt.Errorf("nicflow %s did not resolve to `nicflow %s`:\n%s", strings.Join(args, " "), strings.Join(path, " "), out)
	}
	return nil
}

func checkCommandLine(t *testing.T, where string, args []string) {
	t.Helper()
	if err := commandLineError(mustExe(t), args); err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

func TestCheckCommandLineCatchesDrift(t *testing.T) {
	exe := mustExe(t)
	if err := commandLineError(exe, []string{"worker", "--keys", "k", "--join=c:7946", "--cores", "2"}); err != nil {
		t.Fatalf("a valid command line was refused: %v", err)
	}
	// What drift looks like must fail.
	for _, args := range [][]string{
		{"worker", "--keys", "k", "--no-such-flag"},
		{"worker", "--cores", "many"},
		{"no-such-command", "--dir", "x"},
		{"cluster", "nope", "--dir", "x"},
	} {
		if err := commandLineError(exe, args); err == nil {
			t.Errorf("nicflow %s accepted", strings.Join(args, " "))
		}
	}
}

// dockerInstr is one Dockerfile instruction.
type dockerInstr struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
	line int
}

// parseDockerfile reads instructions, joining continuation lines and
// dropping comments and parser directives.
func parseDockerfile(t *testing.T, path string) []dockerInstr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dockerInstr
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, dockerInstr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dockerStage is one FROM ... stage.
type dockerStage struct {
	from, name, platform string
	instrs               []dockerInstr
}

func dockerStages(instrs []dockerInstr) (args map[string]string, stages []*dockerStage) {
	args = map[string]string{}
	for _, in := range instrs {
		switch {
		case in.cmd == "FROM":
			s := &dockerStage{}
			f := strings.Fields(in.args)
			for i := 0; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "--platform="):
					s.platform = strings.TrimPrefix(f[i], "--platform=")
				case strings.EqualFold(f[i], "AS") && i+1 < len(f):
					s.name = f[i+1]
					i++
				default:
					s.from = f[i]
				}
			}
			stages = append(stages, s)
		case len(stages) == 0 && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = strings.Trim(v, `"`)
		case len(stages) > 0:
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	return args, stages
}

// TestDockerfile checks the Dockerfile statically: a cross-compiling
// builder on the build platform with CGO off, a distroless or scratch
// final stage running as a non-root user, and an entrypoint that is the
// binary the builder wrote.
func TestDockerfile(t *testing.T) {
	globalArgs, stages := dockerStages(parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile")))
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage Dockerfile, got %d stages", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if build.platform != "$BUILDPLATFORM" {
		t.Errorf("builder stage: --platform=%q, want $BUILDPLATFORM (cross-compile instead of emulating)", build.platform)
	}
	if !strings.HasPrefix(build.from, "golang:") {
		t.Errorf("builder stage from %q, want golang:", build.from)
	}
	// The Go version of the builder is the module's.
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	goVer := strings.NewReplacer("${GO_VERSION}", globalArgs["GO_VERSION"], "$GO_VERSION", globalArgs["GO_VERSION"]).Replace(strings.TrimPrefix(build.from, "golang:"))
	if !strings.HasPrefix(goVer, string(m[1])) {
		t.Errorf("builder image golang:%s, want Go %s as go.mod says", goVer, m[1])
	}
	var buildRun string
	declared := map[string]bool{}
	for _, in := range build.instrs {
		if in.cmd == "ARG" {
			k, _, _ := strings.Cut(in.args, "=")
			declared[k] = true
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			buildRun = in.args
		}
	}
	if buildRun == "" {
		t.Fatal("builder stage has no RUN ... go build")
	}
	for _, w := range []string{"CGO_ENABLED=0", "GOOS=${TARGETOS}", "GOARCH=${TARGETARCH}", "./cmd/nicflow", "-trimpath",
		"buildinfo.version=", "buildinfo.commit=", "buildinfo.date="} {
		if !strings.Contains(buildRun, w) {
			t.Errorf("go build step lacks %q:\n%s", w, buildRun)
		}
	}
	for _, a := range []string{"TARGETOS", "TARGETARCH"} {
		if !declared[a] {
			t.Errorf("builder stage does not declare ARG %s (BuildKit sets it only when declared)", a)
		}
	}
	out := regexp.MustCompile(`-o\s+(\S+)`).FindStringSubmatch(buildRun)
	if out == nil {
		t.Fatal("go build step has no -o")
	}
	if !(final.from == "scratch" || strings.HasPrefix(final.from, "gcr.io/distroless/static")) {
		t.Errorf("final stage from %q, want scratch or gcr.io/distroless/static", final.from)
	}
	var user, entry, binDest string
	for _, in := range final.instrs {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			var e []string
			if err := json.Unmarshal([]byte(in.args), &e); err != nil || len(e) == 0 {
				t.Errorf("line %d: ENTRYPOINT %s is not in exec (JSON) form", in.line, in.args)
				continue
			}
			entry = e[0]
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) >= 3 && f[0] == "--from="+build.name && f[len(f)-2] == out[1] {
				binDest = f[len(f)-1]
			}
		case "RUN":
			t.Errorf("line %d: RUN in the final stage (distroless has no shell)", in.line)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("final stage USER %q: want a non-root user", user)
	}
	if !regexp.MustCompile(`^\d+$`).MatchString(uid) {
		t.Errorf("final stage USER %q: want a numeric UID (Kubernetes runAsNonRoot can only verify numbers)", user)
	}
	if binDest == "" {
		t.Errorf("final stage does not copy the built %s from stage %s", out[1], build.name)
	}
	if entry != binDest {
		t.Errorf("ENTRYPOINT runs %q, but the binary is copied to %q", entry, binDest)
	}
	if entry != imageBinary {
		t.Errorf("ENTRYPOINT %q, but compose health checks and the Helm chart call %q", entry, imageBinary)
	}
}

// imageBinary is where the image keeps nicflow.
const imageBinary = "/usr/local/bin/nicflow"

// dockerignoreRE turns a .dockerignore pattern into a regexp over
// slash-separated paths relative to the context (Go filepath.Match syntax
// plus **, as Docker reads it); a pattern also excludes what is under a
// matching directory.
func dockerignoreRE(p string) *regexp.Regexp {
	p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/")
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
					b.WriteString("(.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("(/.*)?$")
	return regexp.MustCompile(b.String())
}

// TestDockerignore checks that .dockerignore keeps out the repository's
// bulk but none of the files the binary is built from: every Go and
// embedded file of the module's packages nicflow imports, go.mod, go.sum
// and what the Dockerfile copies.
func TestDockerignore(t *testing.T) {
	if os.Getenv(emutest.Env) != "" {
		t.Skipf("needs the go command, which does not run under %s", os.Getenv(emutest.Env))
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var exclude []*regexp.Regexp
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") {
			t.Fatalf(".dockerignore: exceptions (%s) are not checked by this test; add support before using them", l)
		}
		exclude = append(exclude, dockerignoreRE(l))
	}
	excluded := func(rel string) bool {
		for _, re := range exclude {
			if re.MatchString(rel) {
				return true
			}
		}
		return false
	}
	// The checker must see exclusions at all.
	for _, p := range []string{".git/config", "cmd/nicflow/deploy_test.go", "tpch/testdata/x", "dist/nicflow"} {
		if !excluded(p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", `{{if and (not .Standard) .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}{{end}}`, "./cmd/nicflow")
	cmd.Dir = root
	listed, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	needed := []string{"go.mod", "go.sum", "LICENSE"}
	for _, l := range strings.Split(strings.TrimSpace(string(listed)), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		dir, err := filepath.Rel(root, f[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range f[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(dir, name)))
		}
	}
	if len(needed) < 50 {
		t.Fatalf("go list found only %d files; the listing is broken", len(needed))
	}
	for _, p := range needed {
		if excluded(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
}

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image     string         `yaml:"image"`
	Build     map[string]any `yaml:"build"`
	Command   any            `yaml:"command"`
	Restart   string         `yaml:"restart"`
	Profiles  []string       `yaml:"profiles"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Volumes     []any    `yaml:"volumes"`
	Ports       []string `yaml:"ports"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Deploy *struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

// interpolate applies compose's ${VAR:-default} with an empty environment.
func interpolate(s string) string {
	return regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}`).ReplaceAllString(s, "$1")
}

func (s composeService) args(t *testing.T, name string) []string {
	switch c := s.Command.(type) {
	case []any:
		var out []string
		for _, a := range c {
			out = append(out, interpolate(fmt.Sprint(a)))
		}
		return out
	case nil:
		return nil
	default:
		t.Errorf("service %s: command %v: use the list form (the image has no shell)", name, c)
		return nil
	}
}

// deployFlagValue returns the value of --name in args (--name=v or --name v).
func deployFlagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// volumeMount returns the source and target of a compose volume entry.
func volumeMount(v any) (source, target string, readOnly bool) {
	switch v := v.(type) {
	case string:
		f := strings.Split(v, ":")
		if len(f) >= 2 {
			return f[0], f[1], len(f) > 2 && strings.Contains(f[2], "ro")
		}
	case map[string]any:
		ro, _ := v["read_only"].(bool)
		return fmt.Sprint(v["source"]), fmt.Sprint(v["target"]), ro
	}
	return "", "", false
}

// TestComposeFile checks docker-compose.yml: the one-shot key and data
// services run first, every node has the keys, a health check that this
// binary serves, its own volume where it keeps data, and a command line
// nicflow accepts.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	roles := map[string][]string{}
	storageIDs := map[string]string{}
	dataVolumes := map[string]string{}
	for name, s := range cf.Services {
		args := s.args(t, name)
		checkCommandLine(t, "docker-compose.yml service "+name, args)
		if len(args) == 0 {
			continue
		}
		if s.Image == "" || s.Build == nil {
			t.Errorf("service %s: want the image built from the Dockerfile (image and build)", name)
		}
		mounts := map[string]string{}
		for _, v := range s.Volumes {
			src, dst, ro := volumeMount(v)
			if _, ok := cf.Volumes[src]; !ok {
				t.Errorf("service %s mounts volume %q, which volumes: does not declare", name, src)
			}
			mounts[dst] = src
			if dst == "/etc/nicflow/keys" && !ro && name != "keys" {
				t.Errorf("service %s mounts the keys writable; only the keys service writes them", name)
			}
		}
		role := args[0]
		roles[role] = append(roles[role], name)
		isNode := role == "coordinator" || role == "worker" || role == "storage"
		if k, ok := deployFlagValue(args, "keys"); ok || isNode {
			if mounts[k] != "keys" {
				t.Errorf("service %s: --keys %q is not the keys volume's mount", name, k)
			}
			if s.DependsOn == nil {
				t.Errorf("service %s uses the keys but depends on nothing", name)
			}
		}
		if d, ok := deployFlagValue(args, "dir"); ok && role != "cluster" {
			vol := ""
			for dst, src := range mounts {
				if d == dst || strings.HasPrefix(d, dst+"/") {
					vol = src
				}
			}
			if vol == "" {
				t.Errorf("service %s: --dir %s is on no volume (its data would die with the container)", name, d)
			}
			if role == "storage" || role == "coordinator" {
				if other, dup := dataVolumes[vol]; dup {
					t.Errorf("services %s and %s keep their databases on the same volume %s (each holds its catalog lock)", other, name, vol)
				}
				dataVolumes[vol] = name
			}
		}
		if role == "storage" {
			id, ok := deployFlagValue(args, "node-id")
			if !ok {
				t.Errorf("storage service %s has no --node-id (the catalog records placement by it)", name)
			}
			if other, dup := storageIDs[id]; dup {
				t.Errorf("storage services %s and %s share --node-id %s", other, name, id)
			}
			storageIDs[id] = name
		}
		if isNode {
			if j, ok := deployFlagValue(args, "join"); role != "coordinator" && (!ok || !strings.HasPrefix(j, "coordinator:")) {
				t.Errorf("service %s: --join %q, want the coordinator service", name, j)
			}
			if s.Healthcheck == nil || len(s.Healthcheck.Test) < 3 || s.Healthcheck.Test[0] != "CMD" || s.Healthcheck.Test[1] != imageBinary {
				t.Errorf("service %s: want a health check [CMD, %s, health, ...] (distroless has no shell)", name, imageBinary)
				continue
			}
			checkCommandLine(t, "docker-compose.yml health check of "+name, s.Healthcheck.Test[2:])
			admin, _ := deployFlagValue(s.Healthcheck.Test[2:], "admin")
			wantAdmin := map[string]string{"coordinator": "7480", "worker": "7481", "storage": "7482"}[role]
			if a, ok := deployFlagValue(args, "admin"); ok {
				_, wantAdmin, _ = strings.Cut(a, ":")
			}
			if !strings.HasSuffix(admin, ":"+wantAdmin) {
				t.Errorf("service %s: health check asks %s, but the node's admin port is %s", name, admin, wantAdmin)
			}
		}
	}
	for _, r := range []string{"coordinator", "worker", "storage", "tpch"} {
		if len(roles[r]) == 0 {
			t.Errorf("docker-compose.yml runs no %s", r)
		}
	}
	keys := cf.Services["keys"]
	if a := keys.args(t, "keys"); len(a) < 2 || a[0] != "cluster" || a[1] != "init" || !slices.Contains(a, "--if-missing") {
		t.Errorf("keys service runs %v, want cluster init ... --if-missing (idempotent)", a)
	}
	if keys.Restart != "no" {
		t.Errorf("keys service restart %q, want \"no\" (one-shot)", keys.Restart)
	}
	for _, name := range roles["coordinator"] {
		c := cf.Services[name]
		for _, dep := range []string{"keys", roles["tpch"][0]} {
			if c.DependsOn[dep].Condition != "service_completed_successfully" {
				t.Errorf("coordinator does not wait for %s to complete successfully", dep)
			}
		}
		if !slices.ContainsFunc(c.Ports, func(p string) bool { return strings.HasSuffix(p, ":7400") }) {
			t.Errorf("coordinator does not publish its client port 7400: %v", c.Ports)
		}
	}
	for _, r := range []string{"worker", "storage"} {
		for _, name := range roles[r] {
			if cf.Services[name].DependsOn["coordinator"].Condition != "service_healthy" {
				t.Errorf("%s does not wait for a healthy coordinator", name)
			}
		}
	}
}

// envFile reads KEY=VALUE lines.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, l)
		}
		env[k] = v
	}
	return env
}

// systemdArgs expands an ExecStart line as systemd does for these units:
// %d is the credentials directory, ${VAR} one word, $VAR split on spaces.
func systemdArgs(line string, env map[string]string, credDir string) []string {
	var out []string
	for _, w := range strings.Fields(line) {
		w = strings.ReplaceAll(w, "%d", credDir)
		if m := regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)$`).FindStringSubmatch(w); m != nil {
			out = append(out, strings.Fields(env[m[1]])...)
			continue
		}
		out = append(out, regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).ReplaceAllStringFunc(w, func(s string) string {
			return env[s[2:len(s)-1]]
		}))
	}
	return out
}

// TestSystemdUnits checks deploy/systemd: each unit runs a nicflow command
// line the flag parser accepts (with the example environment file), as a
// non-root user with the hardening directives, writing only under its
// ReadWritePaths, with its keys as credentials; systemd-analyze verify
// finds nothing to say where it is installed.
func TestSystemdUnits(t *testing.T) {
	dir := filepath.Join(repoRoot, "deploy", "systemd")
	env := envFile(t, filepath.Join(dir, "nicflow.env"))
	units, err := filepath.Glob(filepath.Join(dir, "nicflow-*.service"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range units {
		names = append(names, filepath.Base(u))
	}
	want := []string{"nicflow-coordinator.service", "nicflow-serve.service", "nicflow-storage.service", "nicflow-worker.service"}
	if !slices.Equal(names, want) {
		t.Errorf("units %v, want %v", names, want)
	}
	for _, u := range units {
		raw, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(u)
		keys := map[string][]string{}
		for _, l := range strings.Split(string(raw), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "[") {
				continue
			}
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Errorf("%s: %q is not KEY=VALUE", name, l)
				continue
			}
			keys[k] = append(keys[k], v)
		}
		for k, v := range map[string]string{"NoNewPrivileges": "yes", "ProtectSystem": "strict", "User": "nicflow", "PrivateTmp": "yes",
			"ProtectHome": "yes", "CapabilityBoundingSet": "", "Restart": "on-failure"} {
			if got := keys[k]; len(got) != 1 || got[0] != v {
				t.Errorf("%s: %s=%v, want %q", name, k, got, v)
			}
		}
		if len(keys["EnvironmentFile"]) != 1 || !strings.HasSuffix(keys["EnvironmentFile"][0], "/etc/nicflow/nicflow.env") {
			t.Errorf("%s: EnvironmentFile=%v, want /etc/nicflow/nicflow.env", name, keys["EnvironmentFile"])
		}
		if len(keys["ExecStart"]) != 1 {
			t.Fatalf("%s: want one ExecStart, got %v", name, keys["ExecStart"])
		}
		exec := keys["ExecStart"][0]
		if !strings.HasPrefix(exec, imageBinary+" ") {
			t.Errorf("%s: ExecStart runs %q, want %s (docs/deployment.md installs it there)", name, exec, imageBinary)
		}
		args := systemdArgs(strings.TrimPrefix(exec, imageBinary+" "), env, "/run/credentials/"+name)
		checkCommandLine(t, name, args)
		role := strings.TrimSuffix(strings.TrimPrefix(name, "nicflow-"), ".service")
		if args[0] != role {
			t.Errorf("%s runs nicflow %s", name, args[0])
		}
		if d, ok := deployFlagValue(args, "dir"); ok {
			if !slices.ContainsFunc(keys["ReadWritePaths"], func(p string) bool { return d == p || strings.HasPrefix(d, p+"/") }) {
				t.Errorf("%s: --dir %s is not under ReadWritePaths %v (ProtectSystem=strict makes it read-only)", name, d, keys["ReadWritePaths"])
			}
		}
		if role != "serve" {
			if k, _ := deployFlagValue(args, "keys"); k != "/run/credentials/"+name {
				t.Errorf("%s: --keys %q, want %%d (the credentials directory)", name, k)
			}
			var creds []string
			for _, c := range keys["LoadCredential"] {
				id, path, _ := strings.Cut(c, ":")
				creds = append(creds, id)
				if filepath.Base(path) != id {
					t.Errorf("%s: credential %s loads %s: the file names nicflow reads must be kept", name, id, path)
				}
			}
			slices.Sort(creds)
			if want := []string{"ca.crt", "cluster.key", "node.crt", "node.key"}; !slices.Equal(creds, want) {
				t.Errorf("%s: credentials %v, want %v (a node directory from nicflow cluster cert)", name, creds, want)
			}
		}
	}
	verifyUnits(t, units)
}

// verifyUnits runs systemd-analyze verify on copies of the units whose
// ExecStart names this test binary (verify wants an executable there).
func verifyUnits(t *testing.T, units []string) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: units not verified by systemd")
		return
	}
	if os.Getenv(emutest.Env) != "" {
		t.Logf("under %s: systemd-analyze not run", os.Getenv(emutest.Env))
		return
	}
	dir := t.TempDir()
	var paths []string
	for _, u := range units {
		raw, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(raw), "ExecStart="+imageBinary+" ", "ExecStart="+mustExe(t)+" ")), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(sa, append([]string{"verify"}, paths...)...).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, dir) {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestHealthCommand runs `nicflow health` as the container health checks
// do, against a real local cluster's admin ports and a real PostgreSQL
// server, and against things that are not healthy.
func TestHealthCommand(t *testing.T) {
	exe := mustExe(t)
	run := func(args ...string) (int, string) {
		t.Helper()
		return runExe(t, exe, append([]string{"health"}, args...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc, err := cluster.StartLocal(ctx, cluster.LocalOptions{Dir: t.TempDir(), Workers: 1, Exe: exe, Env: []string{testNodeEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Stop() })
	coord, worker := lc.Nodes[0], lc.Nodes[1]
	if coord.Role != cluster.RoleCoordinator || worker.Role != cluster.RoleWorker {
		t.Fatalf("nodes %v, %v: want the coordinator first, then the worker", coord.Role, worker.Role)
	}
	// Both see each other: the coordinator and the worker.
	if code, out := run("--admin", coord.AdminAddr, "--min-members", "2"); code != 0 || !strings.HasPrefix(out, "ok: coordinator "+coord.ID) {
		t.Errorf("healthy coordinator: exit %d\n%s", code, out)
	}
	if code, out := run("--admin", worker.AdminAddr, "--min-members", "2"); code != 0 || !strings.HasPrefix(out, "ok: worker "+worker.ID) {
		t.Errorf("healthy worker: exit %d\n%s", code, out)
	}
	if code, out := run("--admin", coord.AdminAddr, "--min-members", "3"); code != 5 || !strings.Contains(out, "sees 2 alive members, want at least 3") {
		t.Errorf("too few members: exit %d, want 5\n%s", code, out)
	}
	// Not a nicflow admin port: the worker's gRPC control port.
	if code, out := run("--admin", worker.ControlAddr, "--timeout", "2s"); code != 5 {
		t.Errorf("a gRPC port as admin port: exit %d, want 5\n%s", code, out)
	}
	// A PostgreSQL server answers without a login (its sessions cannot
	// even open here); an HTTP server is not one.
	srv, err := pgwire.Listen(pgwire.Options{Listen: "127.0.0.1:0", Open: func() (engine.Conn, error) {
		return nil, errors.New("no database: the health check must not open a session")
	}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	if code, out := run("--pg", srv.Addr()); code != 0 || !strings.HasPrefix(out, "ok: PostgreSQL server") {
		t.Errorf("healthy PostgreSQL server: exit %d\n%s", code, out)
	}
	// (the HTTP server waits for a request line that never comes)
	if code, out := run("--pg", coord.AdminAddr, "--timeout", "1s"); code != 5 || !strings.Contains(out, "did not answer") {
		t.Errorf("an HTTP server as PostgreSQL server: exit %d, want 5\n%s", code, out)
	}
	// Servers that answer with something else: a banner, one byte that
	// happens to be a PostgreSQL answer then more, or that and hanging up.
	for _, answer := range []string{"X", "SSH-2.0-x\r\n", "N"} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(answer))
				c.Close()
			}
		}()
		if code, out := run("--pg", lis.Addr().String()); code != 5 || !strings.Contains(out, "is not a PostgreSQL server") {
			t.Errorf("a server answering %q as PostgreSQL server: exit %d, want 5\n%s", answer, code, out)
		}
	}
	lc.Stop()
	if code, out := run("--admin", coord.AdminAddr); code != 5 {
		t.Errorf("stopped coordinator: exit %d, want 5\n%s", code, out)
	}
	if code, out := run("--admin", "nohost"); code != 2 {
		t.Errorf("--admin without a port: exit %d, want 2\n%s", code, out)
	}
}

// TestKeysIfMissing runs cluster init and cluster cert twice, as the
// compose keys service and the chart's init containers may: --if-missing
// keeps what is there, and refuses what belongs to another cluster.
func TestKeysIfMissing(t *testing.T) {
	exe := mustExe(t)
	run := func(args ...string) (int, string) {
		t.Helper()
		return runExe(t, exe, append([]string{"cluster"}, args...)...)
	}
	dir := t.TempDir()
	ca, w := filepath.Join(dir, "ca"), filepath.Join(dir, "worker")
	mustRun := func(want int, wantOut string, args ...string) {
		t.Helper()
		if code, out := run(args...); code != want || !strings.Contains(out, wantOut) {
			t.Errorf("nicflow cluster %s: exit %d, want %d with %q\n%s", strings.Join(args, " "), code, want, wantOut, out)
		}
	}
	mustRun(0, "wrote cluster key", "init", "--dir", ca, "--if-missing")
	key, err := os.ReadFile(filepath.Join(ca, cluster.ClusterKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	mustRun(0, "kept", "init", "--dir", ca, "--if-missing")
	mustRun(2, "already holds a cluster key", "init", "--dir", ca)
	mustRun(2, "contradict", "init", "--dir", ca, "--if-missing", "--force")
	if again, _ := os.ReadFile(filepath.Join(ca, cluster.ClusterKeyFile)); !bytes.Equal(again, key) {
		t.Fatal("--if-missing replaced the cluster key")
	}
	mustRun(0, "wrote worker certificate", "cert", "--dir", ca, "--out", w, "--name", "worker", "--role", "worker", "--if-missing")
	crt, _ := os.ReadFile(filepath.Join(w, cluster.NodeCertFile))
	mustRun(0, "kept", "cert", "--dir", ca, "--out", w, "--name", "worker", "--role", "worker", "--if-missing")
	if again, _ := os.ReadFile(filepath.Join(w, cluster.NodeCertFile)); !bytes.Equal(again, crt) {
		t.Error("--if-missing issued a new certificate")
	}
	// A kept directory must be for the role asked, and of this cluster.
	mustRun(6, "is for a worker, not a storage", "cert", "--dir", ca, "--out", w, "--name", "s", "--role", "storage", "--if-missing")
	other := filepath.Join(dir, "other")
	mustRun(0, "wrote", "init", "--dir", other)
	mustRun(6, "another cluster", "cert", "--dir", other, "--out", w, "--name", "worker", "--role", "worker", "--if-missing")
}
