package storage

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
)

// Several servers on one location: each applies, every RefreshInterval
// (and at once in Refresh), the entries the others appended to the log,
// first to Pebble (catchUpLocked, under logMu) and then to its memory
// (reloadMemory: databases, table descriptors, head versions, the caches
// that count on no one else writing). A commit that finds entries not yet
// in memory, or loses the put of its entry to another server's, gets
// errRetry: the caller brings memory up to date and builds the commit
// again against the new state, where its conflict checks see the other
// servers' deletion markers and primary keys.

// DefaultRefreshInterval is Options.RefreshInterval's default.
const DefaultRefreshInterval = time.Second

var (
	// errLostRace is publish's answer when another server wrote the
	// entry's place first.
	errLostRace = errors.New("storage: another server committed first")
	// errRetry asks a committer to rebuild its commit on the state
	// Refresh brings.
	errRetry = errors.New("storage: the log moved on; commit again")
)

// maxCommitRetries bounds how often one commit is rebuilt after losing to
// other servers' commits.
const maxCommitRetries = 100

// retryExhausted is the error of a commit that lost too many times.
func retryExhausted() error {
	return pgerror.New(pgerror.SerializationFailure, "could not serialize access due to concurrent commits on other servers").
		WithHint("Other servers of this storage location kept committing first; retry the transaction.")
}

// retryable turns errRetry into 40001 for the commits that are not
// rebuilt by themselves (DDL): the client retries the statement, which
// then sees the other server's change.
func (db *DB) retryable(err error) error {
	if !errors.Is(err, errRetry) {
		return err
	}
	// The caller may hold the catalog's locks: memory is brought up to
	// date once it lets them go.
	go func() {
		if err := db.reloadMemory(); err != nil {
			db.log.Warn("storage: applying other servers' commits", "err", err)
		}
	}()
	return &retryError{pgerror.New(pgerror.SerializationFailure, "could not serialize access due to a concurrent change on another server").
		WithHint("Another server of this storage location changed the catalog meanwhile; retry the statement.")}
}

// retryError is the 40001 error of a catalog change that lost to another
// server's; errors.Is still finds errRetry in it, for retryDDL.
type retryError struct{ pe *pgerror.Error }

func (e *retryError) Error() string   { return e.pe.Error() }
func (e *retryError) Unwrap() []error { return []error{e.pe, errRetry} }

// retryDDL runs a catalog change again, on the state with the other
// servers' changes, while it loses to them: CREATE TABLE and DROP TABLE,
// CREATE and DROP INDEX, CREATE and DROP DATABASE re-check (the table
// may exist now) and commit again. The others give the client 40001.
func retryDDL[T any](db *DB, fn func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := fn()
		if !errors.Is(err, errRetry) || attempt == maxCommitRetries {
			return v, err
		}
		if rerr := db.reloadMemory(); rerr != nil {
			return v, rerr
		}
	}
}

// Refresh applies every entry other servers added to the location's log
// since the last refresh, so that the next transaction sees their
// commits (SQL deeplake_refresh()).
func (db *DB) Refresh(ctx context.Context) error {
	db.logMu.Lock()
	err := db.catchUpLocked(ctx)
	stale := db.memSeq != db.logSeq
	db.logMu.Unlock()
	if err != nil {
		return err
	}
	if stale {
		return db.reloadMemory()
	}
	return nil
}

// LogSeq returns the last entry of the location's log applied here.
func (db *DB) LogSeq() uint64 {
	db.logMu.Lock()
	defer db.logMu.Unlock()
	return db.logSeq
}

// refreshLoop runs Refresh every RefreshInterval while the location may
// be shared (an S3 prefix).
func (db *DB) refreshLoop() {
	defer close(db.refreshDone)
	if db.opts.Location == "" || db.opts.InMemory && db.opts.Store == nil {
		return
	}
	every := db.opts.RefreshInterval
	if every <= 0 {
		every = DefaultRefreshInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every*10+10*time.Second)
		if err := db.Refresh(ctx); err != nil {
			db.log.Warn("storage: applying other servers' commits", "err", err)
		}
		cancel()
	}
}

// reloadMemory makes the in-memory state what Pebble holds after entries
// of other servers were applied.
func (db *DB) reloadMemory() error {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.catMu.Lock()
	defer db.catMu.Unlock()
	db.logMu.Lock()
	defer db.logMu.Unlock()
	if db.memSeq == db.logSeq {
		return nil
	}
	dbs, err := readDatabases(db.kv)
	if err != nil {
		return err
	}
	clear(db.dbs)
	clear(db.dbByOID)
	for _, d := range dbs {
		db.dbs[d.Name] = d
		db.dbByOID[d.OID] = d
	}
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: relPrefix, UpperBound: prefixEnd(relPrefix)})
	if err != nil {
		return ioErrorf(err, "reading catalog")
	}
	seen := make(map[uint64]bool, len(db.byID))
	for it.First(); it.Valid(); it.Next() {
		t := new(TableDesc)
		if err := json.Unmarshal(it.Value(), t); err != nil {
			it.Close()
			return corruptionf("table descriptor %q: %v", it.Key(), err)
		}
		seen[t.ID] = true
		ts, ok := db.byID[t.ID]
		if ok {
			old := ts.desc
			if old.Name != t.Name || old.Database != t.Database {
				delete(db.tables, tableKey{old.Database, old.Name})
			}
			if !descEqual(old, t) {
				ts.desc = t
			}
		} else {
			ts = &tableState{desc: t}
			db.byID[t.ID] = ts
		}
		db.tables[tableKey{t.Database, t.Name}] = ts
	}
	if err := it.Close(); err != nil {
		return ioErrorf(err, "reading catalog")
	}
	// Branches of tables dropped by another server go with them first.
	for id, ts := range db.byID {
		if !seen[id] && ts.desc.Branch == "" {
			db.forgetBranchesLocked(id)
		}
	}
	if err := db.loadBranchesLocked(seen); err != nil {
		return err
	}
	for id, ts := range db.byID {
		if !seen[id] {
			// Dropped by another server, which deletes its objects.
			delete(db.byID, id)
			if cur, ok := db.tables[tableKey{ts.desc.Database, ts.desc.Name}]; ok && cur == ts {
				delete(db.tables, tableKey{ts.desc.Database, ts.desc.Name})
			}
			continue
		}
		h, err := headVersion(db.kv, id)
		if err != nil {
			return err
		}
		if h != ts.head {
			db.commitSeq++
			ts.setHead(h, db.commitSeq, db.minOpenSeq())
		}
	}
	db.rolesGen.Add(1)
	db.pkSeq.Add(1)
	db.memSeq = db.logSeq
	// Vector indexes another server made: built here in the background
	// (searches run exactly until then).
	for _, ts := range db.byID {
		for _, ix := range ts.desc.Indexes {
			ts.vmu.Lock()
			_, built := ts.vindexes[ix.ID]
			built = built || ts.building[ix.ID]
			if !built {
				if ts.building == nil {
					ts.building = make(map[uint64]bool)
				}
				ts.building[ix.ID] = true
			}
			ts.vmu.Unlock()
			if !built {
				db.background(func(ctx context.Context) {
					defer func() {
						ts.vmu.Lock()
						delete(ts.building, ix.ID)
						ts.vmu.Unlock()
					}()
					if err := db.buildIndex(ctx, ts, ix, true); err != nil && ctx.Err() == nil {
						db.log.Warn("storage: building index failed; its searches run exactly", "index", ix.Name, "err", err)
					}
				})
			}
		}
	}
	return nil
}

// descEqual tells whether two descriptors encode alike.
func descEqual(a, b *TableDesc) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
