package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
)

// IndexDesc describes a vector index of a table: CREATE INDEX ... ON t
// USING hnsw | ivfflat (column opclass) WITH (...). Index names share the
// namespace of table names, as PostgreSQL's relations do.
type IndexDesc struct {
	ID     uint64
	Name   string
	Method string // "hnsw" or "ivfflat"
	Column int
	// OpClass is the operator class, which names the distance the index
	// orders by: vector_l2_ops, vector_ip_ops, vector_cosine_ops,
	// vector_l1_ops, and the halfvec_* ones.
	OpClass string
	// M and EfConstruction are hnsw's build parameters; Lists ivfflat's.
	M              int `json:",omitempty"`
	EfConstruction int `json:",omitempty"`
	Lists          int `json:",omitempty"`
}

// indexTable returns the table of database dbOID holding the index name,
// or nil. Callers hold db.catMu.
func (db *DB) indexTable(dbOID uint32, name string) *tableState {
	for _, ts := range db.byID {
		if ts.desc.Database != dbOID {
			continue
		}
		for _, ix := range ts.desc.Indexes {
			if ix.Name == name {
				return ts
			}
		}
	}
	return nil
}

// IndexTable is Catalog.IndexTable of database postgres.
func (db *DB) IndexTable(name string) *TableDesc { return db.postgres().IndexTable(name) }

// IndexTable returns the descriptor of the table holding index name, or
// nil when there is no such index.
func (c *Catalog) IndexTable(name string) *TableDesc {
	db := c.db
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	if ts := db.indexTable(c.oid, name); ts != nil {
		return ts.desc
	}
	return nil
}

// CreateIndex is Catalog.CreateIndex on a table of database postgres.
func (db *DB) CreateIndex(ctx context.Context, table string, idx IndexDesc, ifNotExists bool) (bool, error) {
	return db.postgres().CreateIndex(ctx, table, idx, ifNotExists)
}

// CreateIndex adds idx (its ID assigned here) to table. A relation of the
// index's name is (false, nil) when ifNotExists and 42P07 otherwise. The
// graph is built first, from the table's fragments as they are when the
// build starts (rows flushed during it are added afterwards), without
// holding the catalog; then the table's descriptor is replaced by a copy
// holding the index: descriptors already handed out stay as they were.
func (c *Catalog) CreateIndex(ctx context.Context, table string, idx IndexDesc, ifNotExists bool) (bool, error) {
	return retryDDL(c.db, func() (bool, error) { return c.createIndex(ctx, table, idx, ifNotExists) })
}

func (c *Catalog) createIndex(ctx context.Context, table string, idx IndexDesc, ifNotExists bool) (bool, error) {
	db := c.db
	check := func() (*tableState, bool, error) {
		ts, ok := db.tables[tableKey{c.oid, table}]
		if !ok {
			return nil, false, undefinedTable(table)
		}
		if _, clash := db.tables[tableKey{c.oid, idx.Name}]; clash || db.indexTable(c.oid, idx.Name) != nil {
			if ifNotExists {
				return nil, false, nil
			}
			return nil, false, pgerror.Newf(pgerror.DuplicateTable, "relation %q already exists", idx.Name)
		}
		if idx.Column < 0 || idx.Column >= len(ts.desc.Columns) {
			return nil, false, assertf("index %q on column %d of %q", idx.Name, idx.Column, table)
		}
		return ts, true, nil
	}
	db.catMu.RLock()
	ts, ok, err := check()
	db.catMu.RUnlock()
	if !ok {
		return false, err
	}
	id, err := db.alloc(tableIDCounter, 1)
	if err != nil {
		return false, err
	}
	idx.ID = id
	if err := db.buildIndex(ctx, ts, idx, false); err != nil {
		return false, err
	}
	db.catMu.Lock()
	defer db.catMu.Unlock()
	if ts2, ok, err := check(); !ok || ts2 != ts {
		ts.dropIndexState(id)
		db.dropIndexObjects(ts.desc.ID, id)
		if err == nil && ok {
			err = undefinedTable(table)
		}
		return false, err
	}
	desc := *ts.desc
	desc.Indexes = append(slices.Clone(ts.desc.Indexes), idx)
	if err := db.putDesc(&desc); err != nil {
		ts.dropIndexState(id)
		db.dropIndexObjects(ts.desc.ID, id)
		return false, err
	}
	ts.desc = &desc
	return true, nil
}

// DropIndex is Catalog.DropIndex in database postgres.
func (db *DB) DropIndex(name string, ifExists bool) (bool, error) {
	return db.postgres().DropIndex(name, ifExists)
}

// DropIndex removes the index name. A missing index is (false, nil) when
// ifExists and 42704 otherwise; a table's name is 42809.
func (c *Catalog) DropIndex(name string, ifExists bool) (bool, error) {
	return retryDDL(c.db, func() (bool, error) { return c.dropIndex(name, ifExists) })
}

func (c *Catalog) dropIndex(name string, ifExists bool) (bool, error) {
	db := c.db
	db.catMu.Lock()
	defer db.catMu.Unlock()
	ts := db.indexTable(c.oid, name)
	if ts == nil {
		if _, ok := db.tables[tableKey{c.oid, name}]; ok {
			return false, pgerror.Newf(pgerror.WrongObjectType, "\"%s\" is not an index", name).
				WithHint("Use DROP TABLE to remove a table.")
		}
		if ifExists {
			return false, nil
		}
		return false, pgerror.Newf(pgerror.UndefinedObject, "index \"%s\" does not exist", name)
	}
	desc := *ts.desc
	var id uint64
	desc.Indexes = slices.DeleteFunc(slices.Clone(ts.desc.Indexes), func(ix IndexDesc) bool {
		if ix.Name == name {
			id = ix.ID
		}
		return ix.Name == name
	})
	if err := db.putDesc(&desc); err != nil {
		return false, err
	}
	ts.desc = &desc
	ts.dropIndexState(id)
	db.dropIndexObjects(desc.ID, id)
	return true, nil
}

// putDesc writes a table descriptor durably.
func (db *DB) putDesc(desc *TableDesc) error {
	data, err := json.Marshal(desc)
	if err != nil {
		return assertf("encoding descriptor of %q: %v", desc.Name, err)
	}
	if err := db.syncSet(descKey(desc.Database, desc.Name), data); err != nil {
		return ioErrorf(err, "writing the descriptor of %q", desc.Name)
	}
	return nil
}

// dropIndexObjects deletes the saved copies of index id of table and its
// catalog entry. A failure leaves garbage, not a broken database.
func (db *DB) dropIndexObjects(table, id uint64) {
	if err := db.syncDelete(appendIDKey(nil, table, tagIndex, id)); err != nil {
		db.log.Warn("storage: leaving the entry of a dropped index", "err", err)
	}
	ctx := db.ctx()
	keys, err := db.store.List(ctx, fmt.Sprintf("tables/%d/indexes/%d/", table, id))
	for _, k := range keys {
		if err == nil {
			err = db.store.Delete(ctx, k)
		}
	}
	if err != nil {
		db.log.Warn("storage: leaving objects of a dropped index", "err", err)
	}
}

// Reindex is Catalog.Reindex in database postgres.
func (db *DB) Reindex(ctx context.Context, name string, table bool) error {
	return db.postgres().Reindex(ctx, name, table)
}

// Reindex rebuilds the vector indexes named: index name when table is
// false, every vector index of table name otherwise. Each structure is
// rebuilt from the vectors of its live rows (an ivfflat index trains its
// lists again on them), then saved; searches use the old one meanwhile.
// A primary key index needs nothing. An unknown name is 42704; a table's
// name given as an index 42809.
func (c *Catalog) Reindex(ctx context.Context, name string, table bool) error {
	db := c.db
	db.catMu.RLock()
	var ts *tableState
	var ids []uint64
	if table {
		var ok bool
		if ts, ok = db.tables[tableKey{c.oid, name}]; !ok {
			db.catMu.RUnlock()
			return undefinedTable(name)
		}
		for _, ix := range ts.desc.Indexes {
			ids = append(ids, ix.ID)
		}
	} else if ts = db.indexTable(c.oid, name); ts != nil {
		for _, ix := range ts.desc.Indexes {
			if ix.Name == name {
				ids = append(ids, ix.ID)
			}
		}
	} else {
		_, isTable := db.tables[tableKey{c.oid, name}]
		isPkey := false
		for k, t := range db.tables {
			isPkey = isPkey || k.db == c.oid && len(t.desc.PrimaryKey) > 0 && name == k.name+"_pkey"
		}
		db.catMu.RUnlock()
		switch {
		case isPkey:
			return nil
		case isTable:
			return pgerror.Newf(pgerror.WrongObjectType, "\"%s\" is not an index", name)
		}
		return pgerror.Newf(pgerror.UndefinedObject, "index \"%s\" does not exist", name)
	}
	t := ts.desc
	db.catMu.RUnlock()
	for _, id := range ids {
		ts.vmu.Lock()
		vi := ts.vindexes[id]
		ts.vmu.Unlock()
		if vi == nil {
			return pgerror.Newf(pgerror.ObjectNotInPrerequisiteState, "index of table \"%s\" is still being loaded", t.Name).
				WithHint("Try again when its searches use it (EXPLAIN shows an Index Scan).")
		}
		vi.mu.Lock()
		vi.compacting = true
		vi.mu.Unlock()
		if err := db.compactGraph(ctx, t, vi); err != nil {
			if ctx.Err() != nil {
				return pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
			}
			return err
		}
	}
	return nil
}
