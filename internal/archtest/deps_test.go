// Package archtest enforces the package dependency graph written in
// docs/architecture.md: cmd -> cluster -> engine -> exec -> {storage, shuffle}.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/nicflow/nicflow"

// allowed lists, for each top-level package, the nicflow packages it may
// import (directly). Subpackages inherit their top-level package's row and
// may import their own top-level package's subpackages. internal/* is
// importable by all.
var allowed = map[string][]string{
	"storage": {},
	"shuffle": {},
	"exec":    {"storage", "shuffle"},
	"tpch":    {"storage"},
	"engine":  {"exec", "storage", "shuffle"},
	"cluster": {"engine", "exec", "storage", "shuffle"},
	"bench":   {"engine", "exec", "storage", "shuffle", "tpch", "cluster"},
	"cmd":     {"cluster", "engine", "exec", "storage", "shuffle", "tpch", "bench"},
}

// phases lists, for each package of the planner (engine and below), the
// engine packages it may import: the phases depend one way, sql <- plan <-
// bind and plan <- opt <- phys <- dist, and the engine facade on all. An
// engine package that is not listed fails the test.
var phases = map[string][]string{
	"engine/sql":  {},
	"engine/plan": {},
	"engine/bind": {"engine/sql", "engine/plan"},
	"engine/opt":  {"engine/plan"},
	"engine/phys": {"engine/plan", "engine/opt"},
	"engine/dist": {"engine/plan", "engine/opt", "engine/phys"},
	"engine":      {"engine/sql", "engine/plan", "engine/bind", "engine/opt", "engine/phys", "engine/dist"},
}

// phase is the planner package pkg belongs to ("engine/opt" for
// engine/opt and anything below it), or "" outside engine.
func phase(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	if rel != "engine" && !strings.HasPrefix(rel, "engine/") {
		return ""
	}
	parts := strings.SplitN(rel, "/", 3)
	if len(parts) == 1 {
		return "engine"
	}
	return parts[0] + "/" + parts[1]
}

// forbiddenExternal lists third-party packages that must not appear in the
// main module: cgo-only libraries live in their own modules under bench/.
var forbiddenExternal = []string{"github.com/duckdb/", "github.com/marcboeker/go-duckdb", "github.com/xitongsys/parquet-go", "github.com/apache/arrow/go/"}

func top(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	if i := strings.IndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return rel
}

func TestDependencyGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg, from := f[0], top(f[0])
		if from == "internal" {
			for _, imp := range f[1:] {
				if strings.HasPrefix(imp, module+"/") && top(imp) != "internal" && !strings.HasPrefix(pkg, module+"/internal/archtest") {
					t.Errorf("%s (internal) imports %s: internal packages are leaves", pkg, imp)
				}
			}
			continue
		}
		ok, known := allowed[from]
		if !known {
			t.Errorf("package %s is not in the dependency table; add it to allowed and docs/architecture.md", pkg)
			continue
		}
		for _, imp := range f[1:] {
			for _, bad := range forbiddenExternal {
				if strings.HasPrefix(imp, bad) {
					t.Errorf("%s imports %s: not allowed in the pure-Go main module", pkg, imp)
				}
			}
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := top(imp)
			if to == "engine" && from == "engine" {
				checkPhase(t, pkg, imp)
				continue
			}
			if to == from || to == "internal" {
				continue
			}
			permitted := false
			for _, a := range ok {
				if a == to {
					permitted = true
				}
			}
			if !permitted {
				t.Errorf("%s imports %s: %s may not depend on %s (see docs/architecture.md)", pkg, imp, from, to)
			}
		}
	}
}

// checkPhase checks one import between two packages under engine against
// phases.
func checkPhase(t *testing.T, pkg, imp string) {
	from, to := phase(pkg), phase(imp)
	if from == to {
		return
	}
	ok, known := phases[from]
	if !known {
		t.Errorf("planner package %s is not in the phase table; add it to phases and engine/doc.go", pkg)
		return
	}
	for _, a := range ok {
		if a == to {
			return
		}
	}
	t.Errorf("%s imports %s: phase %s may not depend on %s (see engine/doc.go)", pkg, imp, from, to)
}
