package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func settings(kv ...string) []debug.BuildSetting {
	var s []debug.BuildSetting
	for i := 0; i < len(kv); i += 2 {
		s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
	}
	return s
}

func TestResolve(t *testing.T) {
	recorded := &debug.BuildInfo{
		GoVersion: "go1.26.1",
		Main:      debug.Module{Path: "github.com/nicflow/nicflow", Version: "(devel)"},
		Settings: settings("vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.time", "2026-01-02T03:04:05Z",
			"vcs.modified", "true", "GOOS", "linux", "GOARCH", "arm64"),
	}
	for _, tc := range []struct {
		name                     string
		sVersion, sCommit, sDate string
		bi                       *debug.BuildInfo
		want                     Info
		short                    string
	}{
		{
			name:  "nothing known",
			want:  Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
			short: "(devel)",
		},
		{
			name: "recorded only: vcs settings fill commit, date, modified and platform",
			bi:   recorded,
			want: Info{Version: "(devel)", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true,
				Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.1", Platform: "linux/arm64"},
			short: "(devel) rev 0123456789ab+dirty",
		},
		{
			name:  "go install @version: the module version",
			bi:    &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}},
			want:  Info{Version: "v0.4.0", GoVersion: "go1.26.1", Platform: runtime.GOOS + "/" + runtime.GOARCH},
			short: "v0.4.0",
		},
		{
			name:     "stamped wins field by field over recorded",
			sVersion: "v0.4.0-3-gfedcba9", sCommit: "fedcba9876543210fedcba9876543210fedcba98", sDate: "2026-05-06T07:08:09Z",
			bi: recorded,
			want: Info{Version: "v0.4.0-3-gfedcba9", Commit: "fedcba9876543210fedcba9876543210fedcba98", Modified: false,
				Date: "2026-05-06T07:08:09Z", GoVersion: "go1.26.1", Platform: "linux/arm64"},
			short: "v0.4.0-3-gfedcba9",
		},
		{
			name:     "stamped dirty version marks the tree modified; missing stamped date falls back",
			sVersion: "fedcba9-dirty",
			bi:       &debug.BuildInfo{Settings: settings("vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")},
			want:     Info{Version: "fedcba9-dirty", Modified: true, Date: "2026-01-02T03:04:05Z", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
			short:    "fedcba9-dirty",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.sVersion, tc.sCommit, tc.sDate, tc.bi)
			if got != tc.want {
				t.Errorf("resolve:\n got %+v\nwant %+v", got, tc.want)
			}
			if s := got.Short(); s != tc.short {
				t.Errorf("Short() = %q, want %q", s, tc.short)
			}
		})
	}
}

func TestString(t *testing.T) {
	s := Info{Version: "v1.2.3", Commit: "abc", Modified: true, Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.1", Platform: "linux/arm64"}.String()
	want := "nicflow v1.2.3\ncommit:   abc (modified)\nbuilt:    2026-01-02T03:04:05Z\ngo:       go1.26.1\nplatform: linux/arm64\n"
	if s != want {
		t.Errorf("String():\n%s\nwant:\n%s", s, want)
	}
	if s := (Info{Version: "(devel)", GoVersion: "go1.26.1", Platform: "linux/amd64"}).String(); !strings.Contains(s, "commit:   unknown\nbuilt:    unknown\n") {
		t.Errorf("unknown fields not marked:\n%s", s)
	}
}

// TestLinkerStamp builds a program with the Makefile's -X flags and checks
// that the stamped values come out: the variable names the Makefile uses
// must exist in this package (a rename here would silently drop them, the
// linker ignores -X for missing symbols).
func TestLinkerStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a program")
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("builds and runs a host binary")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no go command at %s (test binary run without its toolchain, e.g. under qemu)", goBin)
	}
	// What make would run: every build target stamps the three variables.
	if mk, err := exec.LookPath("make"); err == nil {
		for _, target := range []string{"build", "build-arm64", "release"} {
			cmd := exec.Command(mk, "-n", target)
			cmd.Dir = "../.."
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("make -n %s: %v", target, err)
			}
			for _, v := range []string{"version", "commit", "date"} {
				if !strings.Contains(string(out), "-X github.com/nicflow/nicflow/internal/buildinfo."+v+"=") {
					t.Errorf("make %s does not stamp buildinfo.%s:\n%s", target, v, out)
				}
			}
		}
	} else {
		t.Log("make not installed: the Makefile's stamping not checked")
	}
	// NB: the program must live in this module to import an internal
	// package: write it to a directory inside the module.
	pkgDir, err := os.MkdirTemp(".", "stamp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pkgDir)
	if err := os.WriteFile(filepath.Join(pkgDir, "main.go"), []byte(`package main

import (
	"fmt"

	"github.com/nicflow/nicflow/internal/buildinfo"
)

func main() { fmt.Print(buildinfo.Get().String()) }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "stamped")
	const p = "github.com/nicflow/nicflow/internal/buildinfo"
	ld := "-X " + p + ".version=v9.8.7-1-gabcdef0 -X " + p + ".commit=abcdef0123 -X " + p + ".date=2026-03-04T05:06:07Z"
	cmd := exec.Command(goBin, "build", "-buildvcs=false", "-ldflags", ld, "-o", bin, "./"+filepath.Base(pkgDir))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"nicflow v9.8.7-1-gabcdef0\n", "commit:   abcdef0123\n", "built:    2026-03-04T05:06:07Z\n", "platform: " + runtime.GOOS + "/" + runtime.GOARCH + "\n"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("stamped binary printed\n%s\nwant a line %q", out, w)
		}
	}
}
