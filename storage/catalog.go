package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"maps"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// ColumnDesc describes one column of a table.
type ColumnDesc struct {
	Name    string
	Type    types.Type
	NotNull bool
	// Default is the SQL text of the DEFAULT expression, "" if none.
	Default string
	// Serial marks a serial/bigserial column, whose default is NextVal.
	Serial bool
	// Compression is the column's chunk compression ("none", "zstd",
	// "lz4", "s2"); "" means the table's default.
	Compression string `json:",omitempty"`
	// SeqACL is the ACL of a serial column's sequence; nil while it has
	// its default (the table's owner holds every privilege).
	SeqACL ACL `json:",omitempty"`
}

// TableDesc describes a table. A TableDesc returned by the DB is shared
// and must not be modified.
type TableDesc struct {
	ID   uint64
	Name string
	// Database is the OID of the database the table belongs to.
	Database uint32
	Columns  []ColumnDesc
	// PrimaryKey holds the column ordinals of the primary key; empty if none.
	PrimaryKey []int
	// Options are the storage parameters of CREATE TABLE ... WITH (...).
	Options TableOptions
	// Indexes are the table's vector indexes (see index.go).
	Indexes []IndexDesc `json:",omitempty"`
	// Owner is the role that created the table; "" for tables made before
	// tables had owners, which belong to the bootstrap superuser.
	Owner string `json:",omitempty"`
	// ACL holds the privileges granted on the table; nil while it has its
	// default (the owner holds every privilege, PUBLIC none).
	ACL ACL `json:",omitempty"`
	// View, when set, makes the descriptor a view's: the text of its
	// query, bound wherever the view is named; Columns are its result's.
	// A view has no rows of its own.
	View string `json:",omitempty"`

	// Branch is the branch of the table this descriptor reads and writes,
	// "" for main (the table itself). A branch's descriptor is derived
	// from its table's (Catalog.Branch) and never stored: ID is the
	// branch's own, Root the table's, and Base the layers the branch
	// forks from, main's first (branch.go).
	Branch string  `json:"-"`
	Root   uint64  `json:"-"`
	Base   []Layer `json:"-"`
	// AsOf, when not 0, makes the descriptor a read-only view of that
	// version of its table (a commit's or a tag's, "t@ref"): scans read it
	// and writes are 25006.
	AsOf uint64 `json:"-"`
}

// TableOptions are a table's storage parameters. Zero values mean the
// defaults.
type TableOptions struct {
	// ChunkSize is the target size in bytes of a column chunk before
	// compression (WITH (chunk_size = '16MB')); 0 means DefaultChunkSize.
	ChunkSize int64 `json:",omitempty"`
	// Compression is the default compression of the table's columns
	// (WITH (compression = zstd)); "" means DefaultCompression.
	Compression string `json:",omitempty"`
}

func (t *TableDesc) chunkSize() int64 {
	if t.Options.ChunkSize > 0 {
		return t.Options.ChunkSize
	}
	return DefaultChunkSize
}

// columnCompression returns the compression of column c.
func (t *TableDesc) columnCompression(c int) Compression {
	name := t.Columns[c].Compression
	if name == "" {
		name = t.Options.Compression
	}
	if name == "" {
		name = DefaultCompression
	}
	comp, err := ParseCompression(name)
	if err != nil {
		return CompressionNone
	}
	return comp
}

// DefaultChunkSize is the target size of a column chunk before compression.
const DefaultChunkSize = 8 << 20

// DefaultCompression is the compression of columns that name none.
const DefaultCompression = "lz4"

// Compressions are the accepted compression names.
var Compressions = []string{"none", "zstd", "lz4", "s2"}

// ColumnTypes returns the types of the table's columns in order.
func (t *TableDesc) ColumnTypes() []types.Type {
	ts := make([]types.Type, len(t.Columns))
	for i, c := range t.Columns {
		ts[i] = c.Type
	}
	return ts
}

func (t *TableDesc) validate() error {
	if t.Name == "" {
		return pgerror.Newf(pgerror.InvalidTableDefinition, "table name is empty")
	}
	seen := make(map[string]bool, len(t.Columns))
	for _, c := range t.Columns {
		if seen[c.Name] {
			return pgerror.Newf(pgerror.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		seen[c.Name] = true
	}
	for _, k := range t.PrimaryKey {
		if k < 0 || k >= len(t.Columns) {
			return pgerror.Newf(pgerror.InvalidTableDefinition, "primary key column %d out of range", k)
		}
	}
	return nil
}

// loadCatalog reads every database and table descriptor and counts
// buffered rows.
func (db *DB) loadCatalog() error {
	dbs, err := readDatabases(db.kv)
	if err != nil {
		return err
	}
	for _, d := range dbs {
		db.dbs[d.Name] = d
		db.dbByOID[d.OID] = d
	}
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: relPrefix, UpperBound: prefixEnd(relPrefix)})
	if err != nil {
		return ioErrorf(err, "reading catalog")
	}
	for it.First(); it.Valid(); it.Next() {
		t := new(TableDesc)
		if err := json.Unmarshal(it.Value(), t); err != nil {
			it.Close()
			return corruptionf("table descriptor %q: %v", it.Key(), err)
		}
		ts := &tableState{desc: t}
		db.tables[tableKey{t.Database, t.Name}] = ts
		db.byID[t.ID] = ts
	}
	if err := it.Close(); err != nil {
		return ioErrorf(err, "reading catalog")
	}
	if err := db.loadBranchesLocked(nil); err != nil {
		return err
	}
	for _, ts := range db.byID {
		lo, hi := sectionSpan(ts.desc.ID, tagRow)
		it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return ioErrorf(err, "counting buffered rows")
		}
		var n int64
		for it.First(); it.Valid(); it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			return ioErrorf(err, "counting buffered rows")
		}
		ts.pending.Store(n)
		h, err := headVersion(db.kv, ts.desc.ID)
		if err != nil {
			return err
		}
		ts.head, ts.baseHead = h, h
	}
	return nil
}

func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// tableKey names a table: its database and its name in it.
type tableKey struct {
	db   uint32
	name string
}

// Catalog is the tables of one database, as its sessions see them: every
// lookup, creation and drop by name stays inside it. Table ids, rows,
// objects and background work (flushes, compactions, VACUUM's cleanup,
// index saves) are the DB's, shared by every database.
type Catalog struct {
	db  *DB
	oid uint32
}

// Catalog returns the tables of database oid. It does not check that the
// database exists: a catalog of a database dropped since finds no tables
// and creates none.
func (db *DB) Catalog(oid uint32) *Catalog { return &Catalog{db: db, oid: oid} }

// OID returns the OID of the catalog's database.
func (c *Catalog) OID() uint32 { return c.oid }

// DB returns the database server the catalog belongs to.
func (c *Catalog) DB() *DB { return c.db }

// postgres is the catalog of database postgres, which the DB's own table
// methods (Table, CreateTable, ...) work on.
func (db *DB) postgres() *Catalog { return &Catalog{db: db, oid: PostgresOID} }

// CreateTable adds the table described by desc to database desc.Database
// (postgres when 0); see Catalog.CreateTable.
func (db *DB) CreateTable(desc *TableDesc, ifNotExists bool) (created bool, err error) {
	oid := desc.Database
	if oid == 0 {
		oid = PostgresOID
	}
	return db.Catalog(oid).CreateTable(desc, ifNotExists)
}

// CreateTable adds the table described by desc to the catalog's database
// and assigns desc.ID and desc.Database. If a table of that name exists it
// returns (false, nil) when ifNotExists and a 42P07 error otherwise. The
// descriptor is durable when CreateTable returns; the DB keeps desc, so
// the caller must not modify it afterwards.
func (c *Catalog) CreateTable(desc *TableDesc, ifNotExists bool) (created bool, err error) {
	return retryDDL(c.db, func() (bool, error) { return c.createTable(desc, ifNotExists) })
}

func (c *Catalog) createTable(desc *TableDesc, ifNotExists bool) (created bool, err error) {
	db := c.db
	if err := desc.validate(); err != nil {
		return false, err
	}
	db.catMu.Lock()
	defer db.catMu.Unlock()
	if _, ok := db.dbByOID[c.oid]; !ok {
		return false, databaseGone(c.oid)
	}
	if _, ok := db.tables[tableKey{c.oid, desc.Name}]; ok || db.indexTable(c.oid, desc.Name) != nil {
		if ifNotExists {
			return false, nil
		}
		return false, pgerror.Newf(pgerror.DuplicateTable, "relation %q already exists", desc.Name)
	}
	id, err := db.alloc(tableIDCounter, 1)
	if err != nil {
		return false, err
	}
	desc.ID, desc.Database = id, c.oid
	data, err := json.Marshal(desc)
	if err != nil {
		return false, assertf("encoding descriptor of %q: %v", desc.Name, err)
	}
	if err := db.syncSet(descKey(c.oid, desc.Name), data); err != nil {
		return false, ioErrorf(err, "creating table %q", desc.Name)
	}
	ts := &tableState{desc: desc}
	db.tables[tableKey{c.oid, desc.Name}] = ts
	db.byID[id] = ts
	return true, nil
}

// DropTable drops table name of database postgres; see Catalog.DropTable.
func (db *DB) DropTable(name string, ifExists bool) (bool, error) {
	return db.postgres().DropTable(name, ifExists)
}

// DropTableID drops table name of database postgres if it is table id;
// see Catalog.DropTableID.
func (db *DB) DropTableID(name string, id uint64) (bool, error) {
	return db.postgres().DropTableID(name, id)
}

// DropTable removes the table name with its rows, key entries, chunk
// references, sequences and chunk objects. A missing table is (false, nil)
// when ifExists and a 42P01 error otherwise.
func (c *Catalog) DropTable(name string, ifExists bool) (bool, error) {
	return c.db.dropTable(c.oid, name, ifExists, 0)
}

// DropTableID drops the table name if it is the table id (not one made
// again under that name since); (false, nil) otherwise.
func (c *Catalog) DropTableID(name string, id uint64) (bool, error) {
	return c.db.dropTable(c.oid, name, true, id)
}

// dropTable is DropTable of database dbOID, of table id only unless id is
// 0.
func (db *DB) dropTable(dbOID uint32, name string, ifExists bool, id uint64) (bool, error) {
	return retryDDL(db, func() (bool, error) { return db.dropTableOnce(dbOID, name, ifExists, id) })
}

func (db *DB) dropTableOnce(dbOID uint32, name string, ifExists bool, id uint64) (bool, error) {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.catMu.Lock()
	ts, ok := db.tables[tableKey{dbOID, name}]
	if ok && id != 0 && ts.desc.ID != id {
		ok = false
	}
	if !ok {
		db.catMu.Unlock()
		if ifExists {
			return false, nil
		}
		return false, undefinedTable(name)
	}
	t := ts.desc
	b := db.kv.NewBatch()
	defer b.Close()
	branches := db.branchDescsLocked([]*TableDesc{t})
	err := dropTableBatch(b, t)
	if err == nil {
		err = dropBranchesBatch(b, branches)
	}
	if err == nil {
		err = db.commitDDL(b)
	}
	if err != nil {
		db.catMu.Unlock()
		return false, ioErrorf(err, "dropping table %q", name)
	}
	db.forgetTable(t)
	db.catMu.Unlock()
	db.deleteDroppedLater(append([]*TableDesc{t}, branches...))
	return true, nil
}

// dropTableBatch adds to b the writes that drop table t: its descriptor,
// its data keys and sequences go, and m/dropped/<id> records that its
// objects are still to delete.
func dropTableBatch(b *pebble.Batch, t *TableDesc) error {
	lo, hi := tableSpan(t.ID)
	err := b.Delete(descKey(t.Database, t.Name), nil)
	if err == nil {
		err = b.DeleteRange(lo, hi, nil)
	}
	if err == nil {
		err = b.Set(droppedKey(t.ID), []byte(t.Name), nil)
	}
	for c := range t.Columns {
		if err == nil {
			err = b.Delete(seqKey(t.ID, c), nil)
		}
	}
	return err
}

// forgetTable removes dropped table t from the in-memory catalog. Callers
// hold db.catMu.
func (db *DB) forgetTable(t *TableDesc) {
	delete(db.tables, tableKey{t.Database, t.Name})
	delete(db.byID, t.ID)
	db.forgetBranchesLocked(t.ID)
}

// deleteDroppedLater deletes the objects of the tables just dropped once
// no transaction open now, which may be reading them from its snapshot (a
// stream, say), is left: at once when none is open.
func (db *DB) deleteDroppedLater(tables []*TableDesc) {
	seq := db.LogSeq()
	db.logMu.Lock()
	if db.dropSeq == nil {
		db.dropSeq = make(map[uint64]uint64)
	}
	for _, t := range tables {
		db.dropSeq[t.ID] = seq
	}
	db.logMu.Unlock()
	for _, t := range tables {
		for c := range t.Columns {
			db.forgetCounter(seqKey(t.ID, c))
		}
	}
	waits := make(map[*Txn]struct{})
	db.commitMu.Lock()
	for txn := range db.openTxns {
		waits[txn] = struct{}{}
	}
	if len(waits) > 0 {
		for _, t := range tables {
			d := &droppedTable{id: t.ID, name: t.Name, waits: maps.Clone(waits)}
			db.dropping = append(db.dropping, d)
		}
	}
	db.commitMu.Unlock()
	if len(waits) == 0 {
		for _, t := range tables {
			db.deleteDropped(db.ctx(), t.ID, t.Name)
		}
	}
}

// droppedTable is a dropped table whose objects are kept while the
// transactions in waits, open when it was dropped, may read them. Its
// m/dropped key says so in the catalog until they are deleted, so that a
// crash before then leaves them to the next Open (droppedLeft), and a
// failed deletion to the next VACUUM (retryDropped).
type droppedTable struct {
	id    uint64
	name  string
	waits map[*Txn]struct{}
}

// txnEnded deletes, in the background, the objects of the dropped tables
// that waited for txn alone. Callers hold db.commitMu.
func (db *DB) txnEnded(txn *Txn) {
	k := 0
	for _, d := range db.dropping {
		delete(d.waits, txn)
		if len(d.waits) > 0 {
			db.dropping[k] = d
			k++
			continue
		}
		// Not run once Close has begun: left to the next Open.
		db.background(func(ctx context.Context) { db.deleteDropped(ctx, d.id, d.name) })
	}
	clear(db.dropping[k:])
	db.dropping = db.dropping[:k]
}

// deleteDropped deletes the objects of dropped table id, then its
// m/dropped key. A failure leaves unreachable objects, not a broken
// database; the next VACUUM or Open tries again.
func (db *DB) deleteDropped(ctx context.Context, id uint64, name string) {
	// Another server of the location may still read the table from a
	// snapshot taken before it applied the drop.
	db.logMu.Lock()
	seq, ok := db.dropSeq[id]
	if !ok {
		seq = db.openLogSeq
	}
	db.logMu.Unlock()
	if others, _, err := db.othersHorizon(ctx); err != nil || others < seq {
		db.log.Debug("storage: keeping the objects of a dropped table another server may read", "table", name)
		return
	}
	keys, err := db.store.List(ctx, tableObjectPrefix(id))
	if err == nil {
		for _, k := range keys {
			if err = db.store.Delete(ctx, k); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = db.syncDelete(droppedKey(id))
	}
	if err != nil {
		db.log.Warn("storage: leaving objects of dropped table", "table", name, "err", err)
	}
}

// droppedLeft lists the tables dropped before the last Close or crash
// while transactions were reading them, whose objects are still to be
// deleted.
func (db *DB) droppedLeft() ([]droppedTable, error) {
	var out []droppedTable
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: dropPrefix, UpperBound: prefixEnd(dropPrefix)})
	if err != nil {
		return nil, ioErrorf(err, "reading the dropped tables")
	}
	for it.First(); it.Valid(); it.Next() {
		if k := it.Key(); len(k) == len(dropPrefix)+8 {
			out = append(out, droppedTable{id: binary.BigEndian.Uint64(k[len(dropPrefix):]), name: string(it.Value())})
		}
	}
	if err := it.Close(); err != nil {
		return nil, ioErrorf(err, "reading the dropped tables")
	}
	return out, nil
}

// Table returns the descriptor of table name of database postgres, or a
// 42P01 error.
func (db *DB) Table(name string) (*TableDesc, error) { return db.postgres().Table(name) }

// Tables returns every table of database postgres, sorted by name.
func (db *DB) Tables() []*TableDesc { return db.postgres().Tables() }

// Table returns the descriptor of table name, or a 42P01 error.
func (c *Catalog) Table(name string) (*TableDesc, error) {
	c.db.catMu.RLock()
	ts, ok := c.db.tables[tableKey{c.oid, name}]
	c.db.catMu.RUnlock()
	if !ok {
		return nil, undefinedTable(name)
	}
	return ts.desc, nil
}

// Tables returns every table of the database, sorted by name.
func (c *Catalog) Tables() []*TableDesc {
	db := c.db
	db.catMu.RLock()
	var out []*TableDesc
	for k, ts := range db.tables {
		if k.db == c.oid {
			out = append(out, ts.desc)
		}
	}
	db.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// allTables returns the tables of every database, by id.
func (db *DB) allTables() []*TableDesc {
	db.catMu.RLock()
	out := make([]*TableDesc, 0, len(db.byID))
	for _, ts := range db.byID {
		out = append(out, ts.desc)
	}
	db.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (db *DB) tableByID(id uint64) (*tableState, error) {
	db.catMu.RLock()
	ts, ok := db.byID[id]
	db.catMu.RUnlock()
	if !ok {
		return nil, pgerror.Newf(pgerror.UndefinedTable, "table %d was dropped", id)
	}
	return ts, nil
}
