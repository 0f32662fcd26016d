// Package buildinfo names the running build of nicflow: its version, commit
// and build date, the Go version and the platform.
//
// Release builds (`make release`, `make build`) stamp version, commit and
// date with the linker:
//
//	-ldflags "-X github.com/nicflow/nicflow/internal/buildinfo.version=v0.4.0
//	          -X github.com/nicflow/nicflow/internal/buildinfo.commit=<sha>
//	          -X github.com/nicflow/nicflow/internal/buildinfo.date=<RFC 3339>"
//
// A build that was not stamped (go build, go install, go test) falls back
// to what Go records in the binary: the module version (go install
// ...@v0.4.0), the VCS revision and commit time (vcs.revision, vcs.time,
// vcs.modified; recorded with -buildvcs from a git checkout). Invariant: a
// stamped value always wins over the recorded one, field by field. It
// imports only the standard library; any package may use it.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by the linker (-X); empty in a build that was not stamped.
var (
	version string
	commit  string
	date    string
)

// Info is what is known about the running build.
type Info struct {
	Version   string // e.g. v0.4.0, v0.4.0-12-gabcdef0-dirty, or "(devel)"
	Commit    string // full VCS revision, "" when unknown
	Modified  bool   // built from a tree with uncommitted changes
	Date      string // build date (stamped) or commit time (recorded), RFC 3339; "" when unknown
	GoVersion string // e.g. go1.26.8
	Platform  string // GOOS/GOARCH, e.g. linux/arm64
}

// Get returns the running build's information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
}

// resolve combines the stamped values with the recorded build information
// bi (nil when the binary has none), stamped values first.
func resolve(sVersion, sCommit, sDate string, bi *debug.BuildInfo) Info {
	i := Info{Version: sVersion, Commit: sCommit, Date: sDate, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if sVersion != "" {
		// git describe --dirty marks a modified tree in the version.
		i.Modified = strings.HasSuffix(sVersion, "-dirty")
	}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.Date == "" {
					i.Date = s.Value
				}
			case "vcs.modified":
				if sVersion == "" {
					i.Modified = s.Value == "true"
				}
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			i.Platform = goos + "/" + goarch
		}
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	return i
}

// Short is the version in one word-ish string: the version, plus the short
// commit when the version does not name it ("(devel) rev abcdef012345+dirty").
func (i Info) Short() string {
	if i.Version != "(devel)" || i.Commit == "" {
		return i.Version
	}
	rev := i.Commit[:min(len(i.Commit), 12)]
	if i.Modified {
		rev += "+dirty"
	}
	return "(devel) rev " + rev
}

// String is what `nicflow version` and `nicflow --version` print: one
// field a line.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nicflow %s\n", i.Version)
	c := i.Commit
	if c == "" {
		c = "unknown"
	} else if i.Modified {
		c += " (modified)"
	}
	d := i.Date
	if d == "" {
		d = "unknown"
	}
	fmt.Fprintf(&b, "commit:   %s\n", c)
	fmt.Fprintf(&b, "built:    %s\n", d)
	fmt.Fprintf(&b, "go:       %s\n", i.GoVersion)
	fmt.Fprintf(&b, "platform: %s\n", i.Platform)
	return b.String()
}

// Version is the build's version for one-line uses (logs, SQL version()):
// Get().Short().
func Version() string { return Get().Short() }

// SQLVersion is what SQL's version() returns: the build and the dialect
// nicflow reads, for clients that look for "PostgreSQL" in it.
func SQLVersion() string {
	return "nicflow " + Version() + ", reading SQL as PostgreSQL 16 does"
}
