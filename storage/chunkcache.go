package storage

import (
	"container/list"
	"context"
	"sync"

	"github.com/deeplaked/deeplaked/types"
)

// DefaultChunkCacheBytes is the default budget of the decoded-chunk cache.
const DefaultChunkCacheBytes = 256 << 20

// chunkCache keeps decoded column chunks for random access (primary key
// lookups, FetchRows), least recently used first out, within a budget of
// decoded bytes. Chunk objects are immutable and their keys never reused,
// so an entry never goes stale; one whose object was vacuumed just ages
// out. Full scans do not go through it: they stream more than it holds.
type chunkCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *cacheEntry, most recent first
	byKey  map[string]*list.Element
}

type cacheEntry struct {
	key  string
	vec  *types.Vec
	size int64
}

func newChunkCache(budget int64) *chunkCache {
	return &chunkCache{budget: budget, lru: list.New(), byKey: make(map[string]*list.Element)}
}

// vecSize is the memory a decoded Vec holds.
func vecSize(v *types.Vec) int64 {
	return int64(cap(v.Nulls) + cap(v.Bools) + 8*cap(v.Ints) + 8*cap(v.Floats) + cap(v.Bytes.Data) + 4*cap(v.Bytes.Offsets))
}

func (c *chunkCache) get(key string) *types.Vec {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cacheEntry).vec
	}
	return nil
}

// has reports whether key is cached, without counting it as a use.
func (c *chunkCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byKey[key]
	return ok
}

// room reports whether an entry of size bytes would be kept (see put)
// without evicting any.
func (c *chunkCache) room(size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return size <= c.budget/4 && c.used+size <= c.budget
}

func (c *chunkCache) put(key string, v *types.Vec) {
	size := vecSize(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.budget/4 {
		return // one chunk must not push out everything else
	}
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.lru.PushFront(&cacheEntry{key: key, vec: v, size: size})
	c.used += size
	for c.used > c.budget {
		last := c.lru.Back()
		e := last.Value.(*cacheEntry)
		c.lru.Remove(last)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
}

// cachedChunk returns the decoded chunk key, from the cache or read and
// decoded into it. The Vec is shared: callers must not change it.
func (db *DB) cachedChunk(ctx context.Context, t *TableDesc, key string, typ types.Type, ck fragChunk) (*types.Vec, error) {
	if v := db.chunks.get(key); v != nil {
		db.stats.ChunkCacheHits.Add(1)
		return v, nil
	}
	v := types.NewVec(typ, int(ck.Rows))
	if err := db.readChunk(ctx, t, key, typ, ck, v); err != nil {
		return nil, err
	}
	db.chunks.put(key, v)
	return v, nil
}
