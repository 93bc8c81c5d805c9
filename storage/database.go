package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
)

// DatabaseDesc describes a database: a namespace of tables, as
// PostgreSQL's databases are. It is stored as JSON under m/db/<name>; its
// tables' descriptors under m/rel/<OID>. Table ids, and so the tables'
// rows and objects, are global: a database is only the catalog's.
type DatabaseDesc struct {
	OID  uint32
	Name string
	// Owner is the owning role's name; "" for the database made when the
	// data directory was, owned by the bootstrap superuser.
	Owner   string `json:",omitempty"`
	Created time.Time
}

// PostgresDatabase is the database made with the data directory, with
// PostgreSQL's OID for it; the tables of a data directory written before
// there were databases are moved into it (see migrateLayout).
const (
	PostgresDatabase        = "postgres"
	PostgresOID      uint32 = 5
)

// firstDatabaseOID is added to the ids of the table id counter to give
// databases made later their OIDs, as tables get theirs: 16384 up, the
// first OID PostgreSQL gives user objects.
const firstDatabaseOID = 16384

// catalogLayout is the layout m/layout records: tables keyed by database.
const catalogLayout = "2"

// databaseGone is the error for a statement on database oid dropped since
// its session began.
func databaseGone(oid uint32) error {
	return pgerror.Newf(pgerror.InvalidCatalogName, "database with OID %d does not exist", oid)
}

func undefinedDatabase(name string) error {
	return pgerror.Newf(pgerror.InvalidCatalogName, "database \"%s\" does not exist", name)
}

// readDatabases returns the databases stored in r.
func readDatabases(r pebble.Reader) ([]*DatabaseDesc, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: dbPrefix, UpperBound: prefixEnd(dbPrefix)})
	if err != nil {
		return nil, ioErrorf(err, "reading databases")
	}
	var out []*DatabaseDesc
	for it.First(); it.Valid(); it.Next() {
		d := new(DatabaseDesc)
		if err := json.Unmarshal(it.Value(), d); err != nil {
			it.Close()
			return nil, corruptionf("database %q: %v", it.Key(), err)
		}
		out = append(out, d)
	}
	if err := it.Close(); err != nil {
		return nil, ioErrorf(err, "reading databases")
	}
	return out, nil
}

// migrateLayout brings a catalog to the current layout in one synced
// batch, so that a crash leaves it either as it was or migrated: on a
// new data directory it makes database postgres; on one written before
// there were databases (descriptors under m/table/<name>) it also moves
// every table into postgres (m/rel/<5><name>, Database set). A catalog
// that records the current layout is left alone: a database postgres
// dropped since stays dropped.
func (db *DB) migrateLayout() (migrated int, err error) {
	kv := db.kv
	v, closer, err := kv.Get(layoutKey)
	switch {
	case err == nil:
		cur := string(v)
		closer.Close()
		if cur != catalogLayout {
			return 0, corruptionf("catalog layout %q is not %q: the data directory was written by a newer deeplaked", cur, catalogLayout)
		}
		return 0, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, ioErrorf(err, "reading the catalog layout")
	}
	b := kv.NewBatch()
	defer b.Close()
	it, err := kv.NewIter(&pebble.IterOptions{LowerBound: legacyTablePrefix, UpperBound: prefixEnd(legacyTablePrefix)})
	if err != nil {
		return 0, ioErrorf(err, "reading catalog")
	}
	for it.First(); it.Valid(); it.Next() {
		t := new(TableDesc)
		if err := json.Unmarshal(it.Value(), t); err != nil {
			it.Close()
			return 0, corruptionf("table descriptor %q: %v", it.Key(), err)
		}
		t.Database = PostgresOID
		data, err := json.Marshal(t)
		if err == nil {
			err = b.Set(descKey(PostgresOID, t.Name), data, nil)
		}
		if err == nil {
			err = b.Delete(bytes.Clone(it.Key()), nil)
		}
		if err != nil {
			it.Close()
			return 0, ioErrorf(err, "migrating table %q", t.Name)
		}
		migrated++
	}
	if err := it.Close(); err != nil {
		return 0, ioErrorf(err, "reading catalog")
	}
	if _, closer, err := kv.Get(databaseKey(PostgresDatabase)); err == nil {
		closer.Close()
	} else if errors.Is(err, pebble.ErrNotFound) {
		data, err := json.Marshal(&DatabaseDesc{OID: PostgresOID, Name: PostgresDatabase, Created: time.Now().UTC()})
		if err == nil {
			err = b.Set(databaseKey(PostgresDatabase), data, nil)
		}
		if err != nil {
			return 0, ioErrorf(err, "making database postgres")
		}
	} else {
		return 0, ioErrorf(err, "reading database postgres")
	}
	err = b.Set(layoutKey, []byte(catalogLayout), nil)
	if err == nil {
		err = db.commitDDL(b)
	}
	if err != nil {
		return 0, ioErrorf(err, "migrating the catalog")
	}
	return migrated, nil
}

// Databases returns every database, sorted by name.
func (db *DB) Databases() []*DatabaseDesc {
	db.catMu.RLock()
	out := make([]*DatabaseDesc, 0, len(db.dbs))
	for _, d := range db.dbs {
		out = append(out, d)
	}
	db.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupDatabase returns database name, or a 3D000 error.
func (db *DB) LookupDatabase(name string) (*DatabaseDesc, error) {
	db.catMu.RLock()
	d, ok := db.dbs[name]
	db.catMu.RUnlock()
	if !ok {
		return nil, undefinedDatabase(name)
	}
	return d, nil
}

// CreateDatabase makes an empty database owned by role owner; a database
// of that name is 42P04. It is durable when CreateDatabase returns.
func (db *DB) CreateDatabase(name, owner string) (*DatabaseDesc, error) {
	return retryDDL(db, func() (*DatabaseDesc, error) { return db.createDatabase(name, owner) })
}

func (db *DB) createDatabase(name, owner string) (*DatabaseDesc, error) {
	if name == "" {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "database name is empty")
	}
	db.catMu.Lock()
	defer db.catMu.Unlock()
	if _, ok := db.dbs[name]; ok {
		return nil, pgerror.Newf(pgerror.DuplicateDatabase, "database \"%s\" already exists", name)
	}
	id, err := db.alloc(tableIDCounter, 1)
	if err != nil {
		return nil, err
	}
	if id > math.MaxUint32-firstDatabaseOID {
		return nil, pgerror.New(pgerror.ProgramLimitExceeded, "out of database OIDs")
	}
	d := &DatabaseDesc{OID: uint32(firstDatabaseOID + id), Name: name, Owner: owner, Created: time.Now().UTC()}
	if err := db.putDatabase(nil, d); err != nil {
		return nil, err
	}
	db.dbs[name] = d
	db.dbByOID[d.OID] = d
	return d, nil
}

// putDatabase writes d's record: into b when b is set, else durably at
// once.
func (db *DB) putDatabase(b *pebble.Batch, d *DatabaseDesc) error {
	data, err := json.Marshal(d)
	if err != nil {
		return assertf("encoding database %q: %v", d.Name, err)
	}
	if b != nil {
		err = b.Set(databaseKey(d.Name), data, nil)
	} else {
		err = db.syncSet(databaseKey(d.Name), data)
	}
	if err != nil {
		return ioErrorf(err, "writing database %q", d.Name)
	}
	return nil
}

// DropDatabase removes database name with all its tables, in one synced
// batch: the database's record, and for each table what DropTable
// removes. The tables' objects go as a dropped table's do, once no
// transaction open now is left. A missing database is (false, nil) when
// ifExists and 3D000 otherwise. Callers make sure no session is using
// the database.
func (db *DB) DropDatabase(name string, ifExists bool) (bool, error) {
	return retryDDL(db, func() (bool, error) { return db.dropDatabase(name, ifExists) })
}

func (db *DB) dropDatabase(name string, ifExists bool) (bool, error) {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.catMu.Lock()
	d, ok := db.dbs[name]
	if !ok {
		db.catMu.Unlock()
		if ifExists {
			return false, nil
		}
		return false, undefinedDatabase(name)
	}
	var tables []*TableDesc
	for k, ts := range db.tables {
		if k.db == d.OID {
			tables = append(tables, ts.desc)
		}
	}
	b := db.kv.NewBatch()
	defer b.Close()
	branches := db.branchDescsLocked(tables)
	err := b.Delete(databaseKey(name), nil)
	for _, t := range tables {
		if err == nil {
			err = dropTableBatch(b, t)
		}
	}
	if err == nil {
		err = dropBranchesBatch(b, branches)
	}
	if err == nil {
		err = db.commitDDL(b)
	}
	if err != nil {
		db.catMu.Unlock()
		return false, ioErrorf(err, "dropping database %q", name)
	}
	for _, t := range tables {
		db.forgetTable(t)
	}
	delete(db.dbs, name)
	delete(db.dbByOID, d.OID)
	db.catMu.Unlock()
	db.deleteDroppedLater(append(tables, branches...))
	return true, nil
}

// RenameDatabase gives database name the name to (42P04 if taken, 3D000
// if name does not exist). Its tables keep their keys: they are keyed by
// the database's OID.
func (db *DB) RenameDatabase(name, to string) error {
	if to == "" {
		return pgerror.New(pgerror.InvalidParameterValue, "database name is empty")
	}
	db.catMu.Lock()
	defer db.catMu.Unlock()
	d, ok := db.dbs[name]
	if !ok {
		return undefinedDatabase(name)
	}
	if _, taken := db.dbs[to]; taken {
		return pgerror.Newf(pgerror.DuplicateDatabase, "database \"%s\" already exists", to)
	}
	nd := *d
	nd.Name = to
	b := db.kv.NewBatch()
	defer b.Close()
	err := b.Delete(databaseKey(name), nil)
	if err == nil {
		err = db.putDatabase(b, &nd)
	}
	if err == nil {
		err = db.commitDDL(b)
	}
	if err != nil {
		return ioErrorf(err, "renaming database %q", name)
	}
	delete(db.dbs, name)
	db.dbs[to] = &nd
	db.dbByOID[nd.OID] = &nd
	return nil
}

// SetDatabaseOwner makes role owner the owner of database name (3D000 if
// it does not exist).
func (db *DB) SetDatabaseOwner(name, owner string) error {
	db.catMu.Lock()
	defer db.catMu.Unlock()
	d, ok := db.dbs[name]
	if !ok {
		return undefinedDatabase(name)
	}
	nd := *d
	nd.Owner = owner
	if err := db.putDatabase(nil, &nd); err != nil {
		return err
	}
	db.dbs[name] = &nd
	db.dbByOID[nd.OID] = &nd
	return nil
}
