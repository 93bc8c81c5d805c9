package session

import (
	"strings"

	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/storage"
)

// Branches in a session (docs/versioning.md): deeplake.branch names the
// branch statements read and write, for every table ("dev") or for one
// ("t:dev"), several entries separated by commas; a table's own entry wins
// over the one for all. Names are bound through viewCatalog, which also
// resolves "t@ref".

// viewCatalog is the session's catalog as statements bind against it:
// each table on the session's branch of it, and "t@ref" the view the ref
// names.
type viewCatalog struct{ s *Session }

func (c viewCatalog) Table(name string) (*storage.TableDesc, error) {
	return c.s.cat.View(name, c.s.branchFor(name))
}

// views returns the catalog statements bind against.
func (s *Session) views() sql.Catalog { return viewCatalog{s} }

// branchFor returns the session's branch of table name ("" for main).
func (s *Session) branchFor(name string) string {
	all := ""
	for _, e := range strings.Split(s.settings.cur["deeplake.branch"], ",") {
		e = strings.TrimSpace(e)
		if t, b, ok := strings.Cut(e, ":"); ok {
			if t == name {
				return b
			}
			continue
		}
		all = e
	}
	return all
}

// checkBranch validates deeplake.branch: entries "name" or "table:name",
// at most one without a table, names of branches (not empty, no @).
func checkBranch(p *param, v, _ string) (string, error) {
	var out []string
	bare := 0
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		t, b, scoped := strings.Cut(e, ":")
		if !scoped {
			b, bare = e, bare+1
		}
		if b == "" || len(b) > 63 || strings.ContainsAny(b, "@:\x00") || scoped && t == "" || bare > 1 {
			return "", invalidValue(p, v).
				WithDetail("The value is a branch name for every table, or table:branch entries, separated by commas.")
		}
		out = append(out, e)
	}
	return strings.Join(out, ", "), nil
}
