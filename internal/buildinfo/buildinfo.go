// Package buildinfo names the running build of nicflow: the module version
// Go records in the binary (a pseudo-version with the commit when built
// from a git checkout with -buildvcs, as `make build` does). It imports
// only the standard library; any package may use it.
package buildinfo

import "runtime/debug"

// Version is the build's version: the module version, or "(devel)" with
// the VCS revision (marked +dirty for a modified tree) when Go recorded
// only that, or "(devel)" alone.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "(devel)"
	}
	rev = rev[:min(len(rev), 12)]
	if dirty {
		rev += "+dirty"
	}
	return "(devel) rev " + rev
}

// SQLVersion is what SQL's version() returns: the build and the dialect
// nicflow reads, for clients that look for "PostgreSQL" in it.
func SQLVersion() string {
	return "nicflow " + Version() + ", reading SQL as PostgreSQL 16 does"
}
