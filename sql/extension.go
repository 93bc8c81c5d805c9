package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"
)

// CreateExtension is CREATE EXTENSION [IF NOT EXISTS] name [WITH ...]:
// the extensions deeplaked supports are built in (plan.Extensions), so
// it only checks the name.
type CreateExtension struct {
	Name        string
	IfNotExists bool
}

// DropExtension is DROP EXTENSION [IF EXISTS] name [, ...] [CASCADE |
// RESTRICT].
type DropExtension struct {
	Names    []string
	IfExists bool
}

func (*CreateExtension) stmt() {}
func (*DropExtension) stmt()   {}

func convertCreateExtension(s *pg.CreateExtensionStmt) (Stmt, error) {
	return &CreateExtension{Name: s.Extname, IfNotExists: s.IfNotExists}, nil
}

func convertDropExtension(d *pg.DropStmt) (Stmt, error) {
	de := &DropExtension{IfExists: d.MissingOk}
	for _, o := range d.Objects {
		de.Names = append(de.Names, constText(o))
	}
	return de, nil
}
