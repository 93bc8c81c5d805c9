package sql

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// CreateIndex is CREATE INDEX [IF NOT EXISTS] [name] ON table USING method
// (column [opclass]) [WITH (...)]: a vector index (hnsw, ivfflat).
type CreateIndex struct {
	Name, Table, Method, Column, OpClass string
	Options                              []Option
	IfNotExists                          bool
}

// DropIndex is DROP INDEX [IF EXISTS] name [, ...].
type DropIndex struct {
	Names    []string
	IfExists bool
}

func (*CreateIndex) stmt() {}
func (*DropIndex) stmt()   {}
func (*Reindex) stmt()     {}

func convertCreateIndex(s *pg.IndexStmt) (Stmt, error) {
	table, err := rangeName(s.Relation)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Unique || s.Primary:
		return nil, unsupported("CREATE UNIQUE INDEX")
	case s.WhereClause != nil:
		return nil, unsupported("partial indexes (CREATE INDEX ... WHERE)")
	case len(s.IndexParams) != 1 || len(s.IndexIncludingParams) > 0:
		return nil, unsupported("indexes of more or fewer than one column")
	}
	el := s.IndexParams[0].GetIndexElem()
	if el == nil || el.Name == "" {
		return nil, unsupported("indexes on expressions")
	}
	ci := &CreateIndex{Name: s.Idxname, Table: table, Method: strings.ToLower(s.AccessMethod), Column: el.Name, IfNotExists: s.IfNotExists}
	if len(el.Opclass) > 0 {
		ci.OpClass = constText(el.Opclass[len(el.Opclass)-1])
	}
	if ci.Options, err = convertOptions(s.Options); err != nil {
		return nil, err
	}
	return ci, nil
}

func convertDropIndex(d *pg.DropStmt) (Stmt, error) {
	di := &DropIndex{IfExists: d.MissingOk}
	for _, o := range d.Objects {
		l := o.GetList()
		if l == nil || len(l.Items) == 0 {
			continue
		}
		di.Names = append(di.Names, constText(l.Items[len(l.Items)-1]))
	}
	return di, nil
}

// vector index operator classes: the distance each orders by, by method.
var indexOpClasses = map[string]map[string]bool{
	"hnsw": {
		"vector_l2_ops": true, "vector_ip_ops": true, "vector_cosine_ops": true, "vector_l1_ops": true,
		"halfvec_l2_ops": true, "halfvec_ip_ops": true, "halfvec_cosine_ops": true, "halfvec_l1_ops": true,
	},
	"ivfflat": {
		"vector_l2_ops": true, "vector_ip_ops": true, "vector_cosine_ops": true,
		"halfvec_l2_ops": true, "halfvec_ip_ops": true, "halfvec_cosine_ops": true,
	},
}

// Index limits, pgvector's.
const (
	maxIndexDims        = 2000
	maxHalfIndexDims    = 4000
	defaultHNSWM        = 16
	defaultHNSWEfConstr = 64
	defaultIVFLists     = 100
)

// BindCreateIndex checks s against the table and pgvector's rules and
// returns the index to create: its name (table_column_idx by default, made
// unique as PostgreSQL does), column, operator class and parameters.
func BindCreateIndex(db *storage.Catalog, s *CreateIndex) (string, storage.IndexDesc, error) {
	var ix storage.IndexDesc
	t, err := db.Table(s.Table)
	if err != nil {
		return "", ix, err
	}
	col := -1
	for i, c := range t.Columns {
		if c.Name == s.Column {
			col = i
		}
	}
	if col < 0 {
		return "", ix, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" does not exist", s.Column)
	}
	ct := t.Columns[col].Type
	method := s.Method
	if _, ok := indexOpClasses[method]; !ok {
		if method == "btree" || method == "hash" || method == "gin" || method == "gist" || method == "brin" {
			return "", ix, pgerror.Unimplementedf("CREATE INDEX USING %s is not supported yet (indexes are hnsw and ivfflat on vectors; primary keys have their own)", method)
		}
		return "", ix, pgerror.Newf(pgerror.UndefinedObject, "access method \"%s\" does not exist", method)
	}
	if !ct.IsVector() {
		return "", ix, pgerror.Newf(pgerror.UndefinedObject, "data type %s has no default operator class for access method \"%s\"", ct, method).
			WithHint("You must specify an operator class for the index or define a default operator class for the data type.")
	}
	prefix := "vector"
	if ct.Kind == types.HalfVec {
		prefix = "halfvec"
	}
	op := s.OpClass
	if op == "" {
		op = prefix + "_l2_ops"
	}
	if !indexOpClasses[method][op] {
		return "", ix, pgerror.Newf(pgerror.UndefinedObject, "operator class \"%s\" does not exist for access method \"%s\"", op, method)
	}
	if !strings.HasPrefix(op, prefix+"_") {
		return "", ix, pgerror.Newf(pgerror.DatatypeMismatch, "operator class \"%s\" does not accept data type %s", op, ct)
	}
	limit := maxIndexDims
	if ct.Kind == types.HalfVec {
		limit = maxHalfIndexDims
	}
	switch {
	case ct.Width == 0:
		return "", ix, pgerror.New(pgerror.DataException, "column does not have dimensions")
	case ct.Width > limit:
		return "", ix, pgerror.Newf(pgerror.ProgramLimitExceeded, "column cannot have more than %d dimensions for %s index", limit, method)
	}
	ix = storage.IndexDesc{Method: method, Column: col, OpClass: op}
	if method == "hnsw" {
		ix.M, ix.EfConstruction = defaultHNSWM, defaultHNSWEfConstr
	} else {
		ix.Lists = defaultIVFLists
	}
	for _, o := range s.Options {
		name := strings.ToLower(o.Name)
		var dst *int
		lo, hi := 0, 0
		switch {
		case method == "hnsw" && name == "m":
			dst, lo, hi = &ix.M, 2, 100
		case method == "hnsw" && name == "ef_construction":
			dst, lo, hi = &ix.EfConstruction, 4, 1000
		case method == "ivfflat" && name == "lists":
			dst, lo, hi = &ix.Lists, 1, 32768
		default:
			return "", ix, pgerror.Newf(pgerror.InvalidParameterValue, "unrecognized parameter \"%s\"", o.Name)
		}
		n, err := strconv.Atoi(strings.TrimSpace(o.Value))
		if err != nil || !o.HasValue {
			return "", ix, pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for integer option \"%s\": %s", name, o.Value)
		}
		if n < lo || n > hi {
			return "", ix, pgerror.Newf(pgerror.InvalidParameterValue, "value %d out of bounds for option \"%s\"", n, name).
				WithDetail("Valid values are between \"%d\" and \"%d\".", lo, hi)
		}
		*dst = n
	}
	if method == "hnsw" && ix.EfConstruction < 2*ix.M {
		return "", ix, pgerror.New(pgerror.InvalidParameterValue, "ef_construction must be greater than or equal to 2 * m")
	}
	name := s.Name
	if name == "" {
		base := s.Table + "_" + s.Column + "_idx"
		name = base
		for i := 1; db.IndexTable(name) != nil || tableExists(db, name); i++ {
			name = base + strconv.Itoa(i)
		}
	}
	ix.Name = name
	return name, ix, nil
}

func tableExists(db *storage.Catalog, name string) bool {
	_, err := db.Table(name)
	return err == nil
}

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
