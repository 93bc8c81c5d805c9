package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// maxFlushRows bounds the buffered rows one flush moves into a fragment.
const maxFlushRows = 1 << 20

// Flush writes the committed buffered rows of every table of every
// database into fragments and returns when they are durable.
func (db *DB) Flush(ctx context.Context) error {
	for _, t := range db.allTables() {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts, ok := db.state(t.ID)
		if !ok {
			continue
		}
		if err := db.flushTable(ctx, ts); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) state(id uint64) (*tableState, bool) {
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	ts, ok := db.byID[id]
	return ts, ok
}

// flushTable moves the table's committed buffered rows into a fragment
// with a per-row _xmin column. The fragment becomes part of the table in
// one synced batch that records it and deletes the buffered rows it holds,
// so a reader sees each row exactly once: buffered before that batch, in
// the fragment after it.
func (db *DB) flushTable(ctx context.Context, ts *tableState) (err error) {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	t := ts.desc
	if _, live := db.state(t.ID); !live {
		return nil
	}
	// Rows committed after the swap are counted again; rows before it are
	// in the snapshot. A failed flush puts its count back, so the flusher
	// returns for the rows (after a backoff) even if no more arrive.
	taken := ts.pending.Swap(0)
	defer func() {
		if err != nil {
			ts.pending.Add(taken)
			ts.failures.Add(1)
			backoff := min(flushRetryMax, flushRetryMin<<min(ts.failures.Load(), 10))
			ts.retryAt.Store(time.Now().Add(backoff).UnixNano())
		} else {
			ts.failures.Store(0)
			ts.retryAt.Store(0)
		}
	}()
	began := time.Now()
	snap := db.kv.NewSnapshot()
	defer snap.Close()
	lo, hi := sectionSpan(t.ID, tagRow)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return ioErrorf(err, "flushing table %q", t.Name)
	}
	defer it.Close()
	b := types.NewBatch(t.ColumnTypes(), types.BatchSize)
	dec := types.NewRowDecoder(t.ColumnTypes())
	dec.Bind(nil, b)
	var ids, xmins, flushed []uint64
	// A gap of more than compactGap row ids starts a new fragment (rows
	// of two servers of a location, each taking ids in blocks of its
	// own): a fragment's row id range never spans the ids another
	// server has still to hand out (see pickCompaction).
	var w *fragWriter
	var ws []*fragWriter
	var added []*fragment
	abortAll := func() {
		for _, w := range ws {
			w.abort()
		}
	}
	defer func() {
		for _, w := range ws {
			w.done()
		}
	}()
	finish := func() error {
		f, err := w.finish()
		if err != nil {
			return err
		}
		added = append(added, f)
		w = nil
		return nil
	}
	var total int
	var last uint64
	valid := it.First()
	for valid && total < maxFlushRows {
		b.Reset()
		ids, xmins = ids[:0], xmins[:0]
		cut := false
		for ; valid && len(ids) < types.BatchSize; valid = it.Next() {
			id, ok := idFromKey(it.Key())
			if ok && total+len(ids) > 0 && id-last > compactGap {
				if len(ids) > 0 {
					cut = true
					break
				}
				if w != nil {
					if err := finish(); err != nil {
						abortAll()
						return err
					}
				}
			}
			v := it.Value()
			x, n := binary.Uvarint(v)
			if !ok || n <= 0 {
				abortAll()
				return corruptionf("table %q: bad buffered row %x", t.Name, it.Key())
			}
			if err := decodeBuffered(dec, v[n:]); err != nil {
				abortAll()
				return inTable(err, "table %q, row %d", t.Name, id)
			}
			ids = append(ids, id)
			xmins = append(xmins, x)
			last = id
		}
		if err := it.Error(); err != nil {
			abortAll()
			return ioErrorf(err, "flushing table %q", t.Name)
		}
		if len(ids) == 0 {
			break
		}
		b.SetLen(len(ids))
		if w == nil {
			if w, err = db.newFragWriter(ctx, t, true); err != nil {
				abortAll()
				return err
			}
			ws = append(ws, w)
		}
		if err := w.add(b, ids, xmins); err != nil {
			abortAll()
			return err
		}
		total += len(ids)
		flushed = append(flushed, ids...)
		if cut {
			if err := finish(); err != nil {
				abortAll()
				return err
			}
		}
	}
	if w != nil {
		if err := finish(); err != nil {
			abortAll()
			return err
		}
	}
	if len(added) == 0 {
		return nil
	}
	if db.lapsed(began) {
		abortAll()
		return db.errLapsed()
	}
	if valid {
		ts.pending.Add(1) // more to do: keep the flusher interested
	}
	// Delete exactly the rows flushed: a txn that allocated a smaller row
	// id may have committed after the snapshot.
	err = db.commitFragments(ts, opFlush, added, nil, nil, func(wb *pebble.Batch) error {
		var key []byte
		for _, id := range flushed {
			key = appendIDKey(key[:0], t.ID, tagRow, id)
			if err := wb.Delete(key, nil); err != nil {
				return err
			}
		}
		return nil
	}, func() (bool, error) {
		var key []byte
		for _, id := range flushed {
			key = appendIDKey(key[:0], t.ID, tagRow, id)
			_, closer, err := db.kv.Get(key)
			if errors.Is(err, pebble.ErrNotFound) {
				return false, nil
			}
			if err != nil {
				return false, ioErrorf(err, "flushing table %q", t.Name)
			}
			closer.Close()
		}
		return true, nil
	})
	if errors.Is(err, errGone) {
		abortAll()
		return nil
	}
	if err != nil {
		abortAll()
		return err
	}
	db.log.Debug("storage: flushed", "table", t.Name, "fragments", len(added), "rows", len(flushed))
	return nil
}

// commitFragments commits a physical change of ts's table: fragments added
// and removed, deletion markers dropped, plus extra writes, as one new
// version with a manifest.
func (db *DB) commitFragments(ts *tableState, op uint8, added []*fragment, removed []*fragment, dropMarkers []uint64, extra func(*pebble.Batch) error, still func() (bool, error)) error {
	for attempt := 0; ; attempt++ {
		err := db.commitFragmentsOnce(ts, op, added, removed, dropMarkers, extra, still)
		if !errors.Is(err, errRetry) {
			return err
		}
		if attempt == maxCommitRetries {
			return retryExhausted()
		}
		if err := db.reloadMemory(); err != nil {
			return err
		}
	}
}

// errGone is the outcome of a flush or compaction whose input another
// server of the location flushed or compacted first.
var errGone = errors.New("storage: another server changed these rows first")

func (db *DB) commitFragmentsOnce(ts *tableState, op uint8, added []*fragment, removed []*fragment, dropMarkers []uint64, extra func(*pebble.Batch) error, still func() (bool, error)) error {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	t := ts.desc
	if cur, ok := db.byID[t.ID]; !ok || cur != ts {
		return undefinedTable(t.Name)
	}
	if db.opts.Location != "" {
		// Another server of the location may have flushed these rows or
		// compacted these fragments first.
		for _, f := range removed {
			_, closer, err := db.kv.Get(appendIDKey(nil, t.ID, tagFragment, f.ID))
			if errors.Is(err, pebble.ErrNotFound) {
				return errGone
			}
			if err != nil {
				return ioErrorf(err, "committing %q", t.Name)
			}
			closer.Close()
		}
		if still != nil {
			ok, err := still()
			if err != nil {
				return err
			}
			if !ok {
				return errGone
			}
		}
	}
	rm := make(map[uint64]bool, len(removed))
	for _, f := range removed {
		rm[f.ID] = true
	}
	rec := versionRecord{Parent: ts.head, Time: db.now().UnixNano(), Op: op}
	v, err := db.putManifest(ts, ts.head+1, &rec, added, rm)
	if err != nil {
		return err
	}
	wb := db.kv.NewBatch()
	defer wb.Close()
	var key []byte
	for _, f := range added {
		key = appendIDKey(key[:0], t.ID, tagFragment, f.ID)
		if err := wb.Set(key, f.appendBinary(nil), nil); err != nil {
			return ioErrorf(err, "committing %q", t.Name)
		}
	}
	// The removal's log entry, filled in by commitBatch (removalPending).
	seqVal := []byte(nil)
	for _, f := range removed {
		key = appendIDKey(key[:0], t.ID, tagFragment, f.ID)
		if err := wb.Delete(key, nil); err != nil {
			return ioErrorf(err, "committing %q", t.Name)
		}
		key = appendIDKey(key[:0], t.ID, tagRemoved, f.ID)
		if err := wb.Set(key, seqVal, nil); err != nil {
			return ioErrorf(err, "committing %q", t.Name)
		}
	}
	for _, rid := range dropMarkers {
		key = appendIDKey(key[:0], t.ID, tagDelete, rid)
		if err := wb.Delete(key, nil); err != nil {
			return ioErrorf(err, "committing %q", t.Name)
		}
	}
	if extra != nil {
		if err := extra(wb); err != nil {
			return ioErrorf(err, "committing %q", t.Name)
		}
	}
	key = appendIDKey(key[:0], t.ID, tagVersion, v)
	if err := wb.Set(key, rec.appendBinary(nil), nil); err != nil {
		return ioErrorf(err, "committing %q", t.Name)
	}
	if err := db.commitBatch(wb); err != nil {
		return ioErrorf(err, "committing %q", t.Name)
	}
	db.commitSeq++
	ts.setHead(v, db.commitSeq, db.minOpenSeq())
	db.indexesCommitted(ts, op, added, removed, dropMarkers)
	return nil
}

// maybeKick wakes the flusher if some table has enough buffered rows.
func (db *DB) maybeKick() {
	limit := int64(db.opts.FlushRows)
	db.catMu.RLock()
	due := false
	for _, ts := range db.byID {
		if ts.pending.Load() > limit {
			due = true
			break
		}
	}
	db.catMu.RUnlock()
	if due {
		select {
		case db.kick <- struct{}{}:
		default:
		}
	}
}

// compactEvery is how often the background worker looks for fragments to
// compact.
const compactEvery = 10 * time.Second

// flushRetryMin and flushRetryMax bound the backoff after a failed
// background flush of a table; the worker wakes every flushPoll to retry.
const (
	flushRetryMin = 100 * time.Millisecond
	flushRetryMax = 10 * time.Second
	flushPoll     = time.Second
)

// flushLoop is the background flusher and compactor.
func (db *DB) flushLoop() {
	defer close(db.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-db.stop
		cancel()
	}()
	limit := int64(db.opts.FlushRows)
	tick := time.NewTicker(flushPoll)
	defer tick.Stop()
	lastCompact := time.Now()
	for {
		compact := false
		select {
		case <-db.stop:
			return
		case <-db.kick:
		case now := <-tick.C:
			if now.Sub(lastCompact) >= compactEvery {
				compact, lastCompact = true, now
			}
		}
		now := time.Now().UnixNano()
		db.catMu.RLock()
		var due, all []*tableState
		for _, ts := range db.byID {
			all = append(all, ts)
			if ts.pending.Load() > limit && ts.retryAt.Load() <= now {
				due = append(due, ts)
			}
		}
		db.catMu.RUnlock()
		for _, ts := range due {
			if err := db.flushTable(ctx, ts); err != nil {
				if ctx.Err() != nil {
					return
				}
				db.log.Error("storage: background flush failed", "table", ts.desc.Name, "err", err)
			}
		}
		if !compact || db.opts.NoCompaction {
			continue
		}
		sort.Slice(all, func(i, j int) bool { return all[i].desc.ID < all[j].desc.ID })
		for _, ts := range all {
			if _, err := db.compactTable(ctx, ts); err != nil {
				if ctx.Err() != nil {
					return
				}
				db.log.Error("storage: background compaction failed", "table", ts.desc.Name, "err", err)
			}
		}
	}
}
