package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// maxChunkRows caps the rows of one chunk; a flush of more rows writes
// several chunks.
const maxChunkRows = 1 << 16

// chunkCacheEntries is how many decoded chunks the DB keeps.
const chunkCacheEntries = 64

// chunkRef is the value of a t<id>c<seq> key: where a chunk object is and
// which rows it holds.
type chunkRef struct {
	key            string
	minRow, maxRow uint64
	rows           uint32
}

func appendChunkRef(dst []byte, r chunkRef) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, r.minRow)
	dst = binary.LittleEndian.AppendUint64(dst, r.maxRow)
	dst = binary.LittleEndian.AppendUint32(dst, r.rows)
	return append(dst, r.key...)
}

func decodeChunkRef(v []byte) (chunkRef, error) {
	if len(v) < 20 {
		return chunkRef{}, corruptionf("chunk reference: %d bytes", len(v))
	}
	r := chunkRef{
		minRow: binary.LittleEndian.Uint64(v),
		maxRow: binary.LittleEndian.Uint64(v[8:]),
		rows:   binary.LittleEndian.Uint32(v[16:]),
		key:    string(v[20:]),
	}
	if r.minRow > r.maxRow || r.rows == 0 {
		return chunkRef{}, corruptionf("chunk reference %q: rows [%d, %d] count %d", r.key, r.minRow, r.maxRow, r.rows)
	}
	return r, nil
}

// chunkCache keeps recently decoded chunks, evicting the oldest.
type chunkCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]*chunk
	order []string
}

func (c *chunkCache) init(max int) {
	c.max = max
	c.m = make(map[string]*chunk, max)
}

func (c *chunkCache) get(key string) *chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

func (c *chunkCache) put(key string, ck *chunk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return
	}
	for len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = ck
	c.order = append(c.order, key)
}

func (c *chunkCache) dropTable(id uint64) {
	prefix := tableObjectPrefix(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.order[:0]
	for _, k := range c.order {
		if strings.HasPrefix(k, prefix) {
			delete(c.m, k)
		} else {
			kept = append(kept, k)
		}
	}
	c.order = kept
}

// loadChunk returns the decoded chunk of ref, from the cache or the store.
func (db *DB) loadChunk(ctx context.Context, t *TableDesc, ref chunkRef) (*chunk, error) {
	if ck := db.chunks.get(ref.key); ck != nil {
		return ck, nil
	}
	data, err := db.store.Get(ctx, ref.key)
	if err != nil {
		return nil, ioErrorf(err, "reading chunk of table %q", t.Name)
	}
	ck, err := decodeChunk(data, t)
	if err != nil {
		return nil, fmt.Errorf("table %q, object %s: %w", t.Name, ref.key, err)
	}
	if len(ck.rowIDs) != int(ref.rows) || ck.rowIDs[0] != ref.minRow || ck.rowIDs[len(ck.rowIDs)-1] != ref.maxRow {
		return nil, corruptionf("table %q, object %s: rows disagree with the catalog's reference", t.Name, ref.key)
	}
	db.chunks.put(ref.key, ck)
	return ck, nil
}

// Flush writes the committed buffered rows of every table into chunks and
// returns when they are durable.
func (db *DB) Flush(ctx context.Context) error {
	for _, t := range db.Tables() {
		if err := ctx.Err(); err != nil {
			return err
		}
		db.catMu.RLock()
		ts, ok := db.byID[t.ID]
		db.catMu.RUnlock()
		if !ok {
			continue
		}
		if err := db.flushTable(ctx, ts); err != nil {
			return err
		}
	}
	return nil
}

// flushTable moves the table's committed buffered rows into chunk objects.
// Each chunk becomes visible in one synced batch that records its reference
// and deletes the buffered rows it holds, so a reader sees each row exactly
// once: buffered before that batch, in the chunk after it.
func (db *DB) flushTable(ctx context.Context, ts *tableState) error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	t := ts.desc
	db.catMu.RLock()
	_, live := db.byID[t.ID]
	db.catMu.RUnlock()
	if !live {
		return nil
	}
	// Rows committed after the swap are counted again; rows before it are
	// in the iterator's view.
	ts.pending.Swap(0)
	lo, hi := sectionSpan(t.ID, tagRow)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return ioErrorf(err, "flushing table %q", t.Name)
	}
	defer it.Close()
	b := types.NewBatch(t.ColumnTypes(), 0)
	dec := newRowDecoder(t)
	all := make([]int, len(t.Columns))
	for i := range all {
		all[i] = i
	}
	dec.bind(all, b)
	var ids []uint64
	var buf []byte
	valid := it.First()
	for valid {
		b.Reset()
		ids = ids[:0]
		for ; valid && len(ids) < maxChunkRows; valid = it.Next() {
			id, ok := idFromKey(it.Key())
			if !ok {
				return corruptionf("table %q: bad buffered row key %x", t.Name, it.Key())
			}
			if err := dec.decode(it.Value()); err != nil {
				return fmt.Errorf("table %q, row %d: %w", t.Name, id, err)
			}
			ids = append(ids, id)
		}
		if err := it.Error(); err != nil {
			return ioErrorf(err, "flushing table %q", t.Name)
		}
		if len(ids) == 0 {
			break
		}
		if err := db.writeChunk(ctx, t, ids, b, buf[:0]); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) writeChunk(ctx context.Context, t *TableDesc, ids []uint64, b *types.Batch, buf []byte) error {
	seq, err := db.alloc(chunkCounter, 1)
	if err != nil {
		return err
	}
	ref := chunkRef{key: chunkObjectKey(t.ID, seq), minRow: ids[0], maxRow: ids[len(ids)-1], rows: uint32(len(ids))}
	buf = appendChunk(buf, ids, b.Cols)
	if err := db.store.Put(ctx, ref.key, buf); err != nil {
		return ioErrorf(err, "writing chunk of table %q", t.Name)
	}
	wb := db.kv.NewBatch()
	defer wb.Close()
	key := appendIDKey(nil, t.ID, tagChunk, seq)
	if err := wb.Set(key, appendChunkRef(nil, ref), nil); err != nil {
		return ioErrorf(err, "recording chunk of table %q", t.Name)
	}
	for _, id := range ids {
		key = appendIDKey(key[:0], t.ID, tagRow, id)
		if err := wb.Delete(key, nil); err != nil {
			return ioErrorf(err, "recording chunk of table %q", t.Name)
		}
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		return ioErrorf(err, "recording chunk of table %q", t.Name)
	}
	db.log.Debug("storage: flushed chunk", "table", t.Name, "object", ref.key, "rows", len(ids))
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

// flushLoop is the background flusher.
func (db *DB) flushLoop() {
	defer close(db.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-db.stop
		cancel()
	}()
	limit := int64(db.opts.FlushRows)
	for {
		select {
		case <-db.stop:
			return
		case <-db.kick:
		}
		db.catMu.RLock()
		var due []*tableState
		for _, ts := range db.byID {
			if ts.pending.Load() > limit {
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
	}
}
