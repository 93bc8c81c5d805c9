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
func (*Reindex) stmt()         {}

// Reindex is REINDEX [(options)] INDEX|TABLE [CONCURRENTLY] name: it
// rebuilds vector indexes (pgvector's docs use it after bulk changes).
type Reindex struct {
	Name  string
	Table bool
}

func convertReindex(s *pg.ReindexStmt) (Stmt, error) {
	switch s.Kind {
	case pg.ReindexObjectType_REINDEX_OBJECT_INDEX, pg.ReindexObjectType_REINDEX_OBJECT_TABLE:
	default:
		return nil, unsupported("REINDEX SCHEMA, SYSTEM and DATABASE")
	}
	if s.Relation == nil {
		return nil, unsupported("this REINDEX")
	}
	name, err := rangeName(s.Relation)
	if err != nil {
		return nil, err
	}
	return &Reindex{Name: name, Table: s.Kind == pg.ReindexObjectType_REINDEX_OBJECT_TABLE}, nil
}

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
