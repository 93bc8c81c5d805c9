package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
)

// counterBlock is how many values a counter reserves with one synced write.
// After a crash or restart a counter continues after its last reserved
// block, so values are never handed out twice (gaps are allowed).
const counterBlock = 1024

// rowIDBlock is how many row ids one reservation takes.
const rowIDBlock = 1 << 16

// counter hands out increasing uint64 values starting at 1. Values below
// limit are reserved on disk; next is the first one not handed out yet.
type counter struct {
	key         []byte
	next, limit uint64
}

// counterLocked returns the counter stored under key, loading it on first
// use. db.ctrMu must be held.
func (db *DB) counterLocked(key []byte) (*counter, error) {
	if c, ok := db.counters[string(key)]; ok {
		return c, nil
	}
	c := &counter{key: key, next: 1, limit: 1}
	v, closer, err := db.kv.Get(key)
	switch {
	case err == nil:
		if len(v) != 8 {
			closer.Close()
			return nil, corruptionf("counter %q: %d-byte value", key, len(v))
		}
		c.limit = binary.BigEndian.Uint64(v)
		c.next = c.limit
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return nil, ioErrorf(err, "reading counter %q", key)
	}
	db.counters[string(key)] = c
	return c, nil
}

// alloc reserves n consecutive values of the counter under key and returns
// the first.
func (db *DB) alloc(key []byte, n uint64) (uint64, error) {
	db.ctrMu.Lock()
	defer db.ctrMu.Unlock()
	c, err := db.counterLocked(key)
	if err != nil {
		return 0, err
	}
	if c.next > math.MaxInt64-n {
		return 0, pgerror.Newf(pgerror.DataException, "counter %q exhausted", key)
	}
	if c.next+n > c.limit {
		block := uint64(counterBlock)
		if string(key) == string(rowIDCounter) {
			// A block is a commit of the log: rows come in large
			// numbers, and their ids may have gaps.
			block = rowIDBlock
		}
		for attempt := 0; ; attempt++ {
			// The stored mark is above this block when another server
			// of the location reserved one since: go on after it. (An
			// entry applied after this read fails the commit below.)
			at := db.LogSeq()
			stored, err := db.storedCounter(key)
			if err != nil {
				return 0, err
			}
			base := c.next
			if stored > c.limit {
				base = stored
			}
			limit := base + n + block
			b := db.kv.NewBatch()
			_ = b.Set(key, binary.BigEndian.AppendUint64(nil, limit), nil)
			err = db.commitBatchMode(b, false, at)
			b.Close()
			if errors.Is(err, errRetry) && attempt < maxCommitRetries {
				continue
			}
			if err != nil {
				return 0, ioErrorf(db.retryable(err), "reserving counter %q", key)
			}
			c.next, c.limit = base, limit
			break
		}
	}
	v := c.next
	c.next += n
	return v, nil
}

// forgetCounter drops the cached state of key (after its deletion).
func (db *DB) forgetCounter(key []byte) {
	db.ctrMu.Lock()
	delete(db.counters, string(key))
	db.ctrMu.Unlock()
}

// NextVal returns the next value of the sequence behind serial column col
// of table tableID. Values start at 1 and never repeat, across crashes and
// restarts too.
func (db *DB) NextVal(tableID uint64, col int) (int64, error) {
	db.catMu.RLock()
	ts, ok := db.byID[tableID]
	db.catMu.RUnlock()
	if !ok {
		return 0, pgerror.Newf(pgerror.UndefinedTable, "relation with OID %d does not exist", tableID)
	}
	if col < 0 || col >= len(ts.desc.Columns) {
		return 0, assertf("sequence column %d out of range for table %q", col, ts.desc.Name)
	}
	v, err := db.alloc(seqKey(tableID, col), 1)
	if err != nil {
		return 0, fmt.Errorf("nextval for %s.%s: %w", ts.desc.Name, ts.desc.Columns[col].Name, err)
	}
	return int64(v), nil
}

var (
	rowIDCounter   = ctrKey("rowid")
	tableIDCounter = ctrKey("table")
	fragCounter    = ctrKey("frag")
)

// releaseCounters gives back the unused part of each reserved block, so
// that after a clean shutdown counters continue without a gap. After a
// crash they continue after the reserved block instead.
func (db *DB) releaseCounters() error {
	db.ctrMu.Lock()
	defer db.ctrMu.Unlock()
	b := db.kv.NewBatch()
	defer b.Close()
	for _, c := range db.counters {
		if stored, err := db.storedCounter(c.key); err != nil || stored != c.limit {
			continue // another server reserved after this block
		}
		if c.next < c.limit {
			if err := b.Set(c.key, binary.BigEndian.AppendUint64(nil, c.next), nil); err != nil {
				return err
			}
			c.limit = c.next
		}
	}
	if b.Empty() {
		return nil
	}
	if err := db.commitBatch(b); err != nil && !errors.Is(err, errRetry) {
		return err
	}
	return nil
}

// storedCounter reads the mark stored under key, 0 when none.
func (db *DB) storedCounter(key []byte) (uint64, error) {
	v, closer, err := db.kv.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, ioErrorf(err, "reading counter %q", key)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, corruptionf("counter %q: %d-byte value", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
