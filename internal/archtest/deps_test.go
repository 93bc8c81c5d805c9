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
	"types":   {"pgerror"},
	"storage": {"types", "pgerror"},
	"plan":    {"types", "pgerror", "storage"},
	"exec":    {"plan", "types", "pgerror", "storage"},
	"planner": {"plan", "types", "pgerror", "storage"},
	"sql":     {"plan", "types", "pgerror", "storage"},
	"session": {"sql", "planner", "exec", "plan", "types", "pgerror", "storage"},
	"wire":    {"session", "types", "pgerror"},
	"server":  {"wire", "session", "storage", "types", "pgerror"},
	"client":  {},
}

// exclusive names foreign modules only one project package may import.
var exclusive = map[string]string{
	"github.com/pganalyze/pg_query_go": "sql",
	"github.com/jackc/pgx/v5/pgproto3": "wire",
	"github.com/cockroachdb/pebble":    "storage",
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
			for mod, owner := range exclusive {
				if strings.HasPrefix(imp, mod) && top != owner {
					t.Errorf("%s imports %s; only %s/ may", name, imp, owner)
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
