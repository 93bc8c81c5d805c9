package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// VacuumStats reports what Vacuum removed.
type VacuumStats struct {
	// Versions is the number of expired table versions forgotten.
	Versions int
	// Fragments is the number of fragments compacted away.
	Fragments int
	// Objects is the number of chunk and manifest objects deleted.
	Objects int
}

// Vacuum flushes the buffered rows of table name (every table if name is
// "") into fragments, expires its versions older than the retention
// window (never the current one), compacts the table so rows deleted
// before the oldest retained version are dropped, then deletes the
// objects that no retained version and no open transaction can read:
// chunks of fragments compacted away, leftovers of failed or crashed
// writes, and manifests of expired versions. A vacuumed table that no one
// writes to keeps its layout: the row groups of sharded streams stay put.
//
// The DB's Vacuum vacuums every table of every database when name is "",
// else table name of database postgres; Catalog.Vacuum one database's.
func (db *DB) Vacuum(ctx context.Context, name string) (VacuumStats, error) {
	if name != "" {
		return db.postgres().Vacuum(ctx, name)
	}
	return db.vacuum(ctx, db.allTables())
}

// Vacuum is DB.Vacuum on table name of the database, or on all its
// tables when name is "".
func (c *Catalog) Vacuum(ctx context.Context, name string) (VacuumStats, error) {
	tables := c.Tables()
	if name != "" {
		t, err := c.Table(name)
		if err != nil {
			return VacuumStats{}, err
		}
		tables = []*TableDesc{t}
	}
	return c.db.vacuum(ctx, tables)
}

func (db *DB) vacuum(ctx context.Context, tables []*TableDesc) (VacuumStats, error) {
	var st VacuumStats
	db.retryDropped(ctx)
	// A table's branches are vacuumed with it.
	db.catMu.RLock()
	for _, b := range db.branchDescsLocked(slices.Clone(tables)) {
		if !slices.ContainsFunc(tables, func(t *TableDesc) bool { return t.ID == b.ID }) {
			tables = append(tables, b)
		}
	}
	db.catMu.RUnlock()
	for _, t := range tables {
		ts, ok := db.state(t.ID)
		if !ok {
			continue
		}
		if err := db.flushBuffered(ctx, ts); err != nil {
			return st, err
		}
		if err := db.expireVersions(ts, &st); err != nil {
			return st, err
		}
		for {
			n, err := db.compactTable(ctx, ts)
			if err != nil {
				return st, err
			}
			st.Fragments += n
			if n < maxCompactFragments {
				break
			}
		}
		// The compaction's own version may make older ones expirable.
		if err := db.expireVersions(ts, &st); err != nil {
			return st, err
		}
		if err := db.collect(ctx, ts, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// retryDropped deletes the objects of the dropped tables that no open
// transaction waits for (see dropTable) but are still recorded: their
// deletion failed.
func (db *DB) retryDropped(ctx context.Context) {
	// dropTable holds flushMu from writing the m/dropped key until the
	// table waits in db.dropping.
	db.flushMu.Lock()
	left, err := db.droppedLeft()
	db.commitMu.Lock()
	waiting := make(map[uint64]bool, len(db.dropping))
	for _, d := range db.dropping {
		waiting[d.id] = true
	}
	db.commitMu.Unlock()
	db.flushMu.Unlock()
	if err != nil {
		return
	}
	for _, d := range left {
		if !waiting[d.id] && ctx.Err() == nil {
			db.deleteDropped(ctx, d.id, d.name)
		}
	}
}

// flushBuffered flushes the table's buffered rows, maxFlushRows at a
// time, until none is left or a flush moves none (the table dropped, or
// rows arriving as fast).
func (db *DB) flushBuffered(ctx context.Context, ts *tableState) error {
	var last []byte
	for range 64 {
		first, err := firstKey(db.kv, ts.desc, tagRow)
		if err != nil || first == nil || bytes.Equal(first, last) {
			return err
		}
		last = first
		if err := db.flushTable(ctx, ts); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) retention() int64 {
	r := db.opts.VersionRetention
	if r == 0 {
		r = DefaultVersionRetention
	}
	return int64(r)
}

// expireVersions deletes the version records older than the retention
// window, keeping the current version.
func (db *DB) expireVersions(ts *tableState, st *VacuumStats) error {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	t := ts.desc
	cutoff := db.now().UnixNano() - db.retention()
	if db.opts.VersionRetention < 0 {
		cutoff = 1<<63 - 1
	}
	lo, hi := sectionSpan(t.ID, tagVersion)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return ioErrorf(err, "reading versions of %q", t.Name)
	}
	defer it.Close()
	named, err := db.namedVersions(db.kv, t)
	if err != nil {
		return err
	}
	b := db.kv.NewBatch()
	defer b.Close()
	for it.First(); it.Valid(); it.Next() {
		v, _ := idFromKey(it.Key())
		if v >= ts.head {
			break
		}
		if named[v] {
			// A commit or tag names it: kept, and with it (the oldest
			// retained version being the horizon) what it reads.
			continue
		}
		r, err := decodeVersionRecord(it.Value())
		if err != nil {
			return err
		}
		if r.Time >= cutoff {
			break
		}
		// An open transaction may still read this version.
		inUse := false
		for _, seq := range db.openTxns {
			if ts.visibleHeadAt(seq) <= v {
				inUse = true
			}
		}
		if inUse {
			break
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			return ioErrorf(err, "expiring versions of %q", t.Name)
		}
		st.Versions++
	}
	if err := it.Error(); err != nil {
		return ioErrorf(err, "reading versions of %q", t.Name)
	}
	if err := db.commitDDL(b); err != nil {
		return ioErrorf(err, "expiring versions of %q", t.Name)
	}
	return nil
}

// collect deletes the table's objects that nothing can read any more.
func (db *DB) collect(ctx context.Context, ts *tableState, st *VacuumStats) error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	t := ts.desc
	keys, err := db.store.List(ctx, tableFragsPrefix(t.ID))
	if err != nil {
		return ioErrorf(err, "listing objects of %q", t.Name)
	}
	// Fragments still being written are claimed first; one that is not
	// claimed now is either committed (and read below) or abandoned.
	byFrag := make(map[uint64][]string)
	for _, k := range keys {
		rest := strings.TrimPrefix(k, tableFragsPrefix(t.ID))
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			continue
		}
		id, err := strconv.ParseUint(rest[:slash], 16, 64)
		if err != nil || db.inflight.has(k) {
			continue
		}
		byFrag[id] = append(byFrag[id], k)
	}
	db.commitMu.Lock()
	live, err := db.liveFragments(db.kv, t)
	if err != nil {
		db.commitMu.Unlock()
		return err
	}
	minOpen := db.minOpenLogLocked()
	removed := make(map[uint64]uint64) // fragment → log entry of removal
	lo, hi := sectionSpan(t.ID, tagRemoved)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err == nil {
		for it.First(); it.Valid(); it.Next() {
			id, _ := idFromKey(it.Key())
			seq, _ := binary.Uvarint(it.Value())
			removed[id] = seq
		}
		err = it.Close()
	}
	head := ts.head
	db.commitMu.Unlock()
	if err != nil {
		return ioErrorf(err, "reading removed fragments of %q", t.Name)
	}
	// Other servers of the location: their snapshots, and the fragments
	// they are writing, which this one cannot see.
	others, alone, err := db.othersHorizon(ctx)
	if err != nil {
		return err
	}
	minOpen = min(minOpen, others)
	for _, f := range live {
		delete(byFrag, f.ID)
	}
	b := db.kv.NewBatch()
	defer b.Close()
	for id, objs := range byFrag {
		seq, ok := removed[id]
		if ok && seq > minOpen {
			continue // an open transaction's snapshot still lists it
		}
		if !ok && !alone {
			continue // perhaps being written by another server
		}
		for _, k := range objs {
			if err := db.store.Delete(ctx, k); err != nil {
				return ioErrorf(err, "deleting %s", k)
			}
			st.Objects++
		}
		if _, ok := removed[id]; ok {
			if err := b.Delete(appendIDKey(nil, t.ID, tagRemoved, id), nil); err != nil {
				return ioErrorf(err, "vacuuming %q", t.Name)
			}
		}
	}
	// Removal records whose objects are already gone.
	for id, seq := range removed {
		if _, ok := byFrag[id]; !ok && seq <= minOpen {
			if err := b.Delete(appendIDKey(nil, t.ID, tagRemoved, id), nil); err != nil {
				return ioErrorf(err, "vacuuming %q", t.Name)
			}
		}
	}
	if err := db.commitDDL(b); err != nil {
		return ioErrorf(err, "vacuuming %q", t.Name)
	}
	// Manifests of versions that are no longer retained.
	mkeys, err := db.store.List(ctx, "tables/"+strconv.FormatUint(t.ID, 10)+"/manifests/")
	if err != nil {
		return ioErrorf(err, "listing manifests of %q", t.Name)
	}
	for _, k := range mkeys {
		base := k[strings.LastIndexByte(k, '/')+1:]
		v, err := strconv.ParseUint(strings.TrimSuffix(base, ".dlm"), 16, 64)
		if err != nil || v > head {
			continue
		}
		_, closer, err := db.kv.Get(appendIDKey(nil, t.ID, tagVersion, v))
		if err == nil {
			closer.Close()
			continue
		}
		if err := db.store.Delete(ctx, k); err != nil {
			return ioErrorf(err, "deleting %s", k)
		}
		st.Objects++
	}
	return nil
}
