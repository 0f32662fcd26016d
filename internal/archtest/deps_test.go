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
