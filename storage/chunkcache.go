package storage

import (
	"container/list"
	"context"
	"sync"

	"github.com/deeplaked/deeplaked/types"
)

// DefaultChunkCacheBytes is the default budget of the decoded-chunk cache.
const DefaultChunkCacheBytes = 256 << 20

// lruCache keeps values by string key, least recently used first out,
// within a budget of bytes (size says a value's); one value may take up
// to a quarter of it. Its keys name immutable objects and are never
// reused, so an entry never goes stale; one whose object was vacuumed
// just ages out.
type lruCache[V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *cacheEntry[V], most recent first
	byKey  map[string]*list.Element
	size   func(V) int64
}

type cacheEntry[V any] struct {
	key  string
	val  V
	size int64
}

func newLRUCache[V any](budget int64, size func(V) int64) *lruCache[V] {
	return &lruCache[V]{budget: budget, lru: list.New(), byKey: make(map[string]*list.Element), size: size}
}

// chunkCache keeps decoded column chunks for random access (primary key
// lookups, FetchRows) within a budget of decoded bytes. Full scans do not
// go through it: they stream more than it holds.
type chunkCache = lruCache[*types.Vec]

func newChunkCache(budget int64) *chunkCache { return newLRUCache(budget, vecSize) }

// headerCache keeps the parsed headers of the column chunks read by byte
// ranges, so that a lookup by key reads only its row's block: on S3, one
// round trip instead of two.
type headerCache = lruCache[colChunkHeader]

// headerCacheBytes is the header cache's budget: the headers of about
// 7,500 chunks of 8 MB in 16 kB blocks (2 kB of checksums each), 60 GB
// of such chunks.
const headerCacheBytes = 16 << 20

func newHeaderCache() *headerCache {
	return newLRUCache(headerCacheBytes, func(h colChunkHeader) int64 {
		return int64(len(h.crcs) + len(h.nulls) + 8*len(h.tshape) + 160)
	})
}

// vecSize is the memory a decoded Vec holds.
func vecSize(v *types.Vec) int64 {
	return int64(cap(v.Nulls) + cap(v.Bools) + 8*cap(v.Ints) + 8*cap(v.Floats) + cap(v.Bytes.Data) + 4*cap(v.Bytes.Offsets))
}

// get returns the value of key, if cached, counting it as used.
func (c *lruCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cacheEntry[V]).val, true
	}
	var zero V
	return zero, false
}

// has reports whether key is cached, without counting it as a use.
func (c *lruCache[V]) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byKey[key]
	return ok
}

// room reports whether an entry of size bytes would be kept (see put)
// without evicting any.
func (c *lruCache[V]) room(size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return size <= c.budget/4 && c.used+size <= c.budget
}

func (c *lruCache[V]) put(key string, v V) {
	size := c.size(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.budget/4 {
		return // one entry must not push out everything else
	}
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.lru.PushFront(&cacheEntry[V]{key: key, val: v, size: size})
	c.used += size
	for c.used > c.budget {
		last := c.lru.Back()
		e := last.Value.(*cacheEntry[V])
		c.lru.Remove(last)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
}

// cachedChunk returns the decoded chunk key, from the cache or read and
// decoded into it. The Vec is shared: callers must not change it.
func (db *DB) cachedChunk(ctx context.Context, t *TableDesc, key string, typ types.Type, ck fragChunk) (*types.Vec, error) {
	if v, ok := db.chunks.get(key); ok {
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
