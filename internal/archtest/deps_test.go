// Package archtest checks the layering of the project: each package imports
// only the layers below it, and foreign libraries stay in their one layer.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/deeplaked/deeplaked/"

// allowed lists, for each package, the project packages it may import.
var allowed = map[string][]string{
	"pgerror": {},
	"vector":  {}, // leaf libraries: distance kernels, hnsw, ivf
	"types":   {"pgerror"},
	"storage": {"types", "pgerror", "vector"},
	"plan":    {"types", "pgerror", "storage"},
	"exec":    {"plan", "types", "pgerror", "storage", "vector"},
	"planner": {"plan", "types", "pgerror", "storage"},
	"sql":     {"plan", "types", "pgerror", "storage"},
	"session": {"sql", "planner", "exec", "plan", "types", "pgerror", "storage"},
	"wire":    {"session", "types", "pgerror"},
	"server":  {"wire", "session", "storage", "types", "pgerror"},
	"client":  {},
}

// exclusive names foreign modules only some project packages may import:
// the server's protocol stays in wire/; the client packages, which speak
// it too, are not part of the server.
var exclusive = map[string][]string{
	"github.com/pganalyze/pg_query_go": {"sql"},
	"github.com/jackc/pgx/v5/pgproto3": {"wire", "client"},
	"github.com/cockroachdb/pebble":    {"storage"},
}

func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}", "github.com/deeplaked/deeplaked/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		name := strings.TrimPrefix(pkg, module)
		top, _, _ := strings.Cut(name, "/")
		ok, checked := allowed[top]
		if checked {
			seen++
		}
		for _, imp := range strings.Split(imports, ",") {
			if imp == "" {
				continue
			}
			for mod, owners := range exclusive {
				if strings.HasPrefix(imp, mod) && !contains(owners, top) {
					t.Errorf("%s imports %s; only %s may", name, imp, strings.Join(owners, "/, ")+"/")
				}
			}
			if !checked || !strings.HasPrefix(imp, module) {
				continue
			}
			dep, _, _ := strings.Cut(strings.TrimPrefix(imp, module), "/")
			if dep == top {
				continue
			}
			if !contains(ok, dep) {
				t.Errorf("%s imports %s, which is not below it", name, imp)
			}
		}
	}
	if seen < len(allowed) {
		t.Errorf("saw %d of the %d layered packages; is the list stale?", seen, len(allowed))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
