package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countStore is a MemStore that counts the reads of objects that reach
// it, and holds
// whole-object reads while gate is set and open.
type countStore struct {
	*MemStore
	gets, ranges, sized atomic.Int64
	gate                chan struct{}
}

func newCountStore() *countStore { return &countStore{MemStore: NewMemStore()} }

func (s *countStore) Get(ctx context.Context, key string) ([]byte, error) {
	if key == identityKey { // read once by every DiskCache
		return s.MemStore.Get(ctx, key)
	}
	s.gets.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	return s.MemStore.Get(ctx, key)
}

func (s *countStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	s.ranges.Add(1)
	return s.MemStore.GetRange(ctx, key, off, n)
}

// sizedCountStore is a countStore with GetSizedInto, as S3Store has.
type sizedCountStore struct{ *countStore }

func (s sizedCountStore) GetSizedInto(ctx context.Context, key string, size int64, buf []byte, progress func([]byte) error) ([]byte, error) {
	s.sized.Add(1)
	data, err := s.MemStore.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	buf = append(buf, data...)
	if progress != nil {
		if err := progress(buf); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func testObject(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func newTestDiskCache(t *testing.T, inner ObjectStore, dir string, max int64) *DiskCache {
	t.Helper()
	c, err := NewDiskCache(inner, dir, max, DiskCacheOptions{RangeFills: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// cacheDir is a cache directory to be made: t.TempDir's own mode lets
// others in.
func cacheDir(t *testing.T) string { return filepath.Join(t.TempDir(), "cache") }

// mustGet reads key and checks its bytes; from a DiskCache, once the
// copy it keeps is written.
func mustGet(t *testing.T, s ObjectStore, key string, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), key)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("get %s = %d bytes, %v; want its %d bytes", key, len(got), err, len(want))
	}
	if c, ok := s.(*DiskCache); ok {
		c.writes.Wait()
	}
}

// settle returns c's stats once the copies it is writing are written.
func settle(c *DiskCache) DiskCacheStats {
	c.writes.Wait()
	return c.Stats()
}

func TestDiskCacheHitMiss(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	c := newTestDiskCache(t, inner, cacheDir(t), 64<<20)
	key := fragChunkKey(1, 7, 0, 1)
	obj := testObject(1, 300_000) // 4 blocks and a part
	if err := c.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, obj)
	mustGet(t, c, key, obj)
	if st := settle(c); inner.gets.Load() != 1 || st.Hits != 1 || st.Misses != 1 || st.Fills != 1 || st.HitBytes != int64(len(obj)) ||
		st.Files != 1 || st.Bytes != diskCacheFileLen(int64(len(obj))) {
		t.Fatalf("after two gets: %d inner gets, %+v", inner.gets.Load(), st)
	}

	// GetInto and GetSizedInto from the file, progress seeing growing
	// prefixes that end with the whole object.
	var seen []int
	progress := func(read []byte) error {
		if !bytes.Equal(read, obj[:len(read)]) {
			t.Fatalf("progress saw %d bytes that differ from the object's", len(read))
		}
		seen = append(seen, len(read))
		return nil
	}
	got, err := c.GetInto(ctx, key, []byte("prefix"), progress)
	if err != nil || !bytes.Equal(got, append([]byte("prefix"), obj...)) {
		t.Fatalf("GetInto = %d bytes, %v", len(got), err)
	}
	if len(seen) != 2 || seen[0] != getIntoPiece || seen[1] != len(obj) {
		t.Fatalf("progress saw %v, want [%d %d]", seen, getIntoPiece, len(obj))
	}
	buf := make([]byte, 0, 1<<20)
	got, err = c.GetSizedInto(ctx, key, int64(len(obj)), buf, nil)
	if err != nil || !bytes.Equal(got, obj) || &got[0] != &buf[:1][0] {
		t.Fatalf("GetSizedInto = %d bytes, %v (into the caller's buffer: %v)", len(got), err, err == nil && &got[0] == &buf[:1][0])
	}
	// Range reads of a cached object: the file's bytes, as MemStore
	// would return them.
	for _, r := range [][2]int64{{0, 10}, {65530, 20}, {65536, 65536}, {299_990, 100}, {0, -1}, {123_456, -1},
		{300_000, 5}, {300_001, 5}, {-1, 5}, {5, 0}, {0, 300_000}} {
		want, _ := inner.MemStore.GetRange(ctx, key, r[0], r[1])
		got, err := c.GetRange(ctx, key, r[0], r[1])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("GetRange(%d, %d) = %d bytes, %v; want %d bytes", r[0], r[1], len(got), err, len(want))
		}
	}
	if inner.gets.Load() != 1 || inner.ranges.Load() != 0 {
		t.Fatalf("the inner store was read again: %d gets, %d range reads", inner.gets.Load(), inner.ranges.Load())
	}
	if st := settle(c); st.Misses != 1 || st.Corrupt != 0 {
		t.Fatalf("stats %+v", st)
	}

	// A range read of an object not in the cache goes to the inner
	// store (no background reads in this cache).
	other := fragChunkKey(1, 7, 1, 1)
	if err := c.Put(ctx, other, obj[:1000]); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetRange(ctx, other, 10, 10); err != nil || !bytes.Equal(got, obj[10:20]) || inner.ranges.Load() != 1 {
		t.Fatalf("range miss = %q, %v; %d inner range reads", got, err, inner.ranges.Load())
	}
	// A missing object is ErrNotFound, and not cached.
	if _, err := c.Get(ctx, fragChunkKey(1, 8, 0, 1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing object: %v", err)
	}
}

// TestDiskCacheSized: GetSizedInto reads through the inner store's
// GetSizedInto, and an object of another size than the caller's is
// returned but not kept.
func TestDiskCacheSized(t *testing.T) {
	ctx := context.Background()
	inner := sizedCountStore{newCountStore()}
	c := newTestDiskCache(t, inner, cacheDir(t), 64<<20)
	key := fragChunkKey(1, 1, 0, 1)
	obj := testObject(2, 70_000)
	if err := inner.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetSizedInto(ctx, key, 1000, nil, nil); err != nil || len(got) != len(obj) {
		t.Fatalf("GetSizedInto of the wrong size = %d bytes, %v", len(got), err)
	}
	if st := settle(c); st.Files != 0 || inner.sized.Load() != 1 {
		t.Fatalf("an object of another size was cached: %+v; %d sized reads", st, inner.sized.Load())
	}
	for range 2 {
		if got, err := c.GetSizedInto(ctx, key, int64(len(obj)), nil, nil); err != nil || !bytes.Equal(got, obj) {
			t.Fatalf("GetSizedInto = %d bytes, %v", len(got), err)
		}
	}
	if st := settle(c); st.Files != 1 || st.Hits != 1 || inner.sized.Load() != 2 || inner.gets.Load() != 0 {
		t.Fatalf("stats %+v; %d sized reads, %d gets", st, inner.sized.Load(), inner.gets.Load())
	}
}

func TestDiskCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	const size = 100_000
	flen := diskCacheFileLen(size)
	dir := cacheDir(t)
	c := newTestDiskCache(t, inner, dir, 4*flen+flen/2) // room for 4
	objs := map[string][]byte{}
	var keys []string
	for i := range 6 {
		k := fragChunkKey(2, 1, i, 1)
		keys = append(keys, k)
		objs[k] = testObject(uint64(i), size)
		if err := inner.Put(ctx, k, objs[k]); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys[:4] {
		mustGet(t, c, k, objs[k])
	}
	mustGet(t, c, keys[0], objs[keys[0]]) // 0 is now the most recent
	mustGet(t, c, keys[4], objs[keys[4]]) // evicts 1
	mustGet(t, c, keys[5], objs[keys[5]]) // evicts 2
	st := settle(c)
	if st.Evictions != 2 || st.Files != 4 || st.Bytes != 4*flen {
		t.Fatalf("stats %+v", st)
	}
	for i, k := range keys {
		_, err := os.Stat(c.path(k))
		if cached := err == nil; cached != (i != 1 && i != 2) {
			t.Errorf("object %d cached: %v", i, cached)
		}
	}
	before := inner.gets.Load()
	mustGet(t, c, keys[0], objs[keys[0]])
	mustGet(t, c, keys[3], objs[keys[3]])
	if inner.gets.Load() != before {
		t.Fatal("a kept object was read from the inner store")
	}
	mustGet(t, c, keys[1], objs[keys[1]])
	if inner.gets.Load() != before+1 {
		t.Fatal("an evicted object was not read from the inner store")
	}

	// An object over a quarter of the cache passes by it.
	big := fragChunkKey(2, 2, 0, 1)
	if err := inner.Put(ctx, big, testObject(9, 2*size)); err != nil {
		t.Fatal(err)
	}
	n := settle(c).Fills
	if _, err := c.Get(ctx, big); err != nil || settle(c).Fills != n {
		t.Fatalf("a big object: %v, cached %v", err, settle(c).Fills != n)
	}
}

// corruptFile flips one byte of the file at off.
func corruptFile(t *testing.T, p string, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func TestDiskCacheCorruptFile(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	c := newTestDiskCache(t, inner, cacheDir(t), 64<<20)
	key := fragChunkKey(3, 1, 0, 1)
	obj := testObject(3, 200_000)
	if err := inner.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, obj)

	// A whole read: the damage is found, the file deleted, the object
	// read from the inner store and cached again.
	corruptFile(t, c.path(key), 150_000)
	var calls int
	got, err := c.GetInto(ctx, key, nil, func(read []byte) error {
		calls++
		if !bytes.Equal(read, obj[:len(read)]) {
			t.Fatal("progress saw damaged bytes")
		}
		return nil
	})
	if err != nil || !bytes.Equal(got, obj) {
		t.Fatalf("read of a damaged file = %d bytes, %v", len(got), err)
	}
	if st := settle(c); st.Corrupt != 1 || st.Fills != 2 || inner.gets.Load() != 2 {
		t.Fatalf("stats %+v, %d inner gets", st, inner.gets.Load())
	}
	mustGet(t, c, key, obj)
	if inner.gets.Load() != 2 {
		t.Fatal("the replaced file was not read")
	}

	// A range read of a damaged block goes to the inner store; a block
	// of the file left intact would have been served.
	corruptFile(t, c.path(key), 10)
	if got, err := c.GetRange(ctx, key, 5, 10); err != nil || !bytes.Equal(got, obj[5:15]) {
		t.Fatalf("range read of a damaged block = %d bytes, %v", len(got), err)
	}
	if st := settle(c); st.Corrupt != 2 || st.Files != 0 || inner.ranges.Load() != 1 {
		t.Fatalf("stats %+v, %d inner range reads", st, inner.ranges.Load())
	}
	if _, err := os.Stat(c.path(key)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the damaged file is still there: %v", err)
	}

	// Damaged checksums, a short file: the same.
	mustGet(t, c, key, obj)
	corruptFile(t, c.path(key), int64(len(obj))+3)
	mustGet(t, c, key, obj)
	if err := os.Truncate(c.path(key), 1000); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, obj)
	if st := settle(c); st.Corrupt != 4 || st.Files != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestDiskCacheOneFetch: concurrent readers of an object not cached yet
// read it from the inner store once.
func TestDiskCacheOneFetch(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	key := fragChunkKey(4, 1, 0, 1)
	obj := testObject(4, 500_000)
	if err := inner.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	inner.gate = make(chan struct{})
	c := newTestDiskCache(t, inner, cacheDir(t), 64<<20)
	const readers = 8
	var wg sync.WaitGroup
	var started sync.WaitGroup
	started.Add(readers)
	for i := range readers {
		wg.Go(func() {
			started.Done()
			var got []byte
			var err error
			if i%2 == 0 {
				got, err = c.GetInto(ctx, key, nil, nil)
			} else {
				got, err = c.Get(ctx, key)
			}
			if err != nil || !bytes.Equal(got, obj) {
				t.Errorf("reader %d: %d bytes, %v", i, len(got), err)
			}
		})
	}
	started.Wait()
	// Let the readers reach the cache; whoever is first holds the one
	// read of the inner store, the others wait for it.
	for inner.gets.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(inner.gate)
	wg.Wait()
	if n := inner.gets.Load(); n != 1 {
		t.Fatalf("%d reads of the inner store, want 1", n)
	}
	if st := settle(c); st.Misses != 1 || st.Hits != readers-1 {
		t.Fatalf("stats %+v", st)
	}

	// A reader that fails (here: its context ends) hands the read to a
	// waiting one.
	key2 := fragChunkKey(4, 1, 1, 1)
	if err := inner.Put(ctx, key2, obj); err != nil {
		t.Fatal(err)
	}
	inner.gate = make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	failed := make(chan error, 1)
	go func() {
		_, err := c.GetInto(cctx, key2, nil, func([]byte) error { return cctx.Err() })
		failed <- err
	}()
	for inner.gets.Load() == 1 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		got, err := c.Get(ctx, key2)
		if err == nil && !bytes.Equal(got, obj) {
			err = errors.New("wrong bytes")
		}
		done <- err
	}()
	cancel()
	inner.gate <- struct{}{}
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Fatalf("the canceled reader: %v", err)
	}
	close(inner.gate)
	if err := <-done; err != nil {
		t.Fatalf("the waiting reader: %v", err)
	}
}

func TestDiskCacheReopenAfterCrash(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	dir := cacheDir(t)
	c := newTestDiskCache(t, inner, dir, 64<<20)
	const size = 100_000
	var keys []string
	objs := map[string][]byte{}
	for i := range 4 {
		k := fragChunkKey(5, 1, i, 1)
		keys = append(keys, k)
		objs[k] = testObject(uint64(10+i), size)
		if err := inner.Put(ctx, k, objs[k]); err != nil {
			t.Fatal(err)
		}
		mustGet(t, c, k, objs[k])
	}
	// What a kill -9 can leave: a temporary file, a file cut short (a
	// rename of a file whose data never reached the disk); and a file of
	// no object.
	c.Close()
	tmp := c.path(keys[0]) + ".123" + tmpSuffix
	if err := os.WriteFile(tmp, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(c.path(keys[1]), 5000); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "objects", "stray")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Last used: 3, then 2, then 0 (mtimes; the cache sets them on
	// reads).
	now := time.Now()
	for i, k := range []string{keys[0], keys[2], keys[3]} {
		tm := now.Add(-time.Duration(i+1) * time.Hour)
		if err := os.Chtimes(c.path(k), tm, tm); err != nil {
			t.Fatal(err)
		}
	}

	// Reopened with room for two: the least recent of the three sound
	// files goes.
	c2 := newTestDiskCache(t, inner, dir, 2*diskCacheFileLen(size)+100)
	st := settle(c2)
	if st.Files != 2 || st.Corrupt != 1 || st.Evictions != 1 {
		t.Fatalf("reopened: %+v", st)
	}
	for _, p := range []string{tmp, stray, c.path(keys[1]), c.path(keys[3])} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	before := inner.gets.Load()
	mustGet(t, c2, keys[0], objs[keys[0]])
	mustGet(t, c2, keys[2], objs[keys[2]])
	if inner.gets.Load() != before {
		t.Fatal("a file kept across the reopen was not read")
	}
	mustGet(t, c2, keys[1], objs[keys[1]])
	if inner.gets.Load() != before+1 {
		t.Fatal("the truncated file was served")
	}
}

func TestDiskCacheBypassesOtherKeys(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	c := newTestDiskCache(t, inner, cacheDir(t), 64<<20)
	for _, k := range []string{manifestKey(1, 1), "deeplake/other", indexObjectKey(1, 1, "n", 1),
		"tables/1/frags/0000000000000001/0000-00000001.dlc.bak", "tables/x/frags/0000000000000001/0000-00000001.dlc",
		"tables/1/frags/000000000000000G/0000-00000001.dlc", "tables/1/frags/0000000000000001/0000_00000001.dlc"} {
		if diskCacheable(k) {
			t.Errorf("%s is cacheable", k)
		}
		if err := c.Put(ctx, k, []byte("v1")); err != nil {
			t.Fatal(err)
		}
		before := inner.gets.Load()
		for range 2 {
			if got, err := c.GetInto(ctx, k, nil, nil); err != nil || string(got) != "v1" {
				t.Fatalf("get %s = %q, %v", k, got, err)
			}
		}
		if err := c.Put(ctx, k, []byte("v2")); err != nil {
			t.Fatal(err)
		}
		mustGet(t, c, k, []byte("v2"))
		if n := inner.gets.Load() - before; n != 3 {
			t.Errorf("%s: %d of 3 reads reached the inner store", k, n)
		}
	}
	if !diskCacheable(fragChunkKey(12, 0xabc, 3, 77)) {
		t.Fatal("a chunk key is not cacheable")
	}
	if st := settle(c); st.Files != 0 || st.Hits != 0 || st.Misses != 0 {
		t.Fatalf("stats %+v", st)
	}
	des, _ := os.ReadDir(c.objDir)
	if len(des) != 0 {
		t.Fatalf("files in the cache: %v", des)
	}
}

// TestDiskCachePutDelete: writes pass through and drop the cached copy.
func TestDiskCachePutDelete(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	c := newTestDiskCache(t, inner, cacheDir(t), 64<<20)
	key := fragChunkKey(6, 1, 0, 1)
	if err := c.Put(ctx, key, []byte("one")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, []byte("one"))
	if err := c.Put(ctx, key, []byte("two")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, []byte("two"))
	if err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.path(key)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cached copy of a deleted object: %v", err)
	}
	if _, err := c.Get(ctx, key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := c.PutIfAbsent(ctx, key, []byte("three")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, []byte("three"))
	if keys, err := c.List(ctx, "tables/6/"); err != nil || len(keys) != 1 {
		t.Fatalf("list = %v, %v", keys, err)
	}
}

// TestDiskCacheFastPaths: the cache offers the fast paths of the store it
// wraps, and reads through them.
func TestDiskCacheFastPaths(t *testing.T) {
	ctx := context.Background()
	ds, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := newTestDiskCache(t, ds, cacheDir(t), 64<<20)
	s := c.Store()
	if _, ok := s.(bufferedGetter); !ok {
		t.Error("no GetInto over a DirStore")
	}
	if _, ok := s.(sizedGetter); !ok {
		t.Error("no GetSizedInto over a DirStore")
	}
	if got := readConcurrency(s); got != dirStoreReadConcurrency {
		t.Errorf("read concurrency %d, want the DirStore's %d", got, dirStoreReadConcurrency)
	}
	rg, ok := s.(rangeIntoGetter)
	if !ok {
		t.Fatal("no GetRangeInto over a DirStore")
	}
	key := fragChunkKey(7, 1, 0, 1)
	obj := testObject(7, 150_000)
	if err := s.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 1<<20)
	for range 2 { // a miss, from the DirStore; a hit, from the file
		got, err := rg.GetRangeInto(ctx, key, 70_000, 100, buf)
		if err != nil || !bytes.Equal(got, obj[70_000:70_100]) || &got[0] != &buf[:1][0] {
			t.Fatalf("GetRangeInto = %d bytes, %v", len(got), err)
		}
		if _, err := s.(bufferedGetter).GetInto(ctx, key, nil, nil); err != nil {
			t.Fatal(err)
		}
		c.writes.Wait()
	}
	if st := settle(c); st.Hits != 2 || st.Misses != 2 {
		t.Fatalf("stats %+v", st)
	}

	// Over a store without byte-range reads into a buffer (S3Store,
	// FaultStore), neither: a scan then reads chunks whole, and they
	// reach the cache.
	c2 := newTestDiskCache(t, NewFaultStore(ds, 1), cacheDir(t), 64<<20)
	if _, ok := c2.Store().(rangeIntoGetter); ok {
		t.Error("GetRangeInto over a store without it")
	}
	if _, ok := c2.Store().(bufferedGetter); !ok {
		t.Error("no GetInto over a FaultStore")
	}
}

// TestDiskCacheRangeFill: a range miss reads the whole object in the
// background, and later range reads find it in the cache.
func TestDiskCacheRangeFill(t *testing.T) {
	ctx := context.Background()
	inner := newCountStore()
	c, err := NewDiskCache(inner, cacheDir(t), 64<<20, DiskCacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := fragChunkKey(8, 1, 0, 1)
	obj := testObject(8, 300_000)
	if err := inner.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetRange(ctx, key, 1000, 16); err != nil || !bytes.Equal(got, obj[1000:1016]) {
		t.Fatalf("range miss = %d bytes, %v", len(got), err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for settle(c).Fills == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the object was not read in the background")
		}
		time.Sleep(time.Millisecond)
	}
	before := inner.ranges.Load()
	if got, err := c.GetRange(ctx, key, 200_000, 16); err != nil || !bytes.Equal(got, obj[200_000:200_016]) {
		t.Fatalf("range hit = %d bytes, %v", len(got), err)
	}
	if inner.ranges.Load() != before {
		t.Fatal("a range read of a filled object reached the inner store")
	}
	if st := settle(c); st.Hits != 1 || st.Misses != 1 || st.Fills != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestDiskCacheDirectory: the directory is the server user's alone, one
// process uses it at a time, and it belongs to one storage location.
func TestDiskCacheDirectory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	inner := newCountStore()
	ident, _ := json.Marshal(Identity{ID: "aaaa"})
	if err := inner.Put(ctx, identityKey, ident); err != nil {
		t.Fatal(err)
	}
	c := newTestDiskCache(t, inner, dir, 64<<20)
	key := fragChunkKey(9, 1, 0, 1)
	if err := inner.Put(ctx, key, []byte("data")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, key, []byte("data"))
	for p, want := range map[string]os.FileMode{dir: 0o700, c.objDir: 0o700, c.path(key): 0o600,
		filepath.Join(dir, diskCacheOwnerFile): 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %04o", p, fi.Mode().Perm(), err, want)
		}
	}
	if _, err := NewDiskCache(inner, dir, 64<<20, DiskCacheOptions{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second cache on the directory: %v", err)
	}
	c.Close()

	// Another location's identity: the files go.
	other := newCountStore()
	ident, _ = json.Marshal(Identity{ID: "bbbb"})
	if err := other.Put(ctx, identityKey, ident); err != nil {
		t.Fatal(err)
	}
	if err := other.Put(ctx, key, []byte("else")); err != nil {
		t.Fatal(err)
	}
	c2 := newTestDiskCache(t, other, dir, 64<<20)
	mustGet(t, c2, key, []byte("else"))
	if st := settle(c2); st.Hits != 0 || st.Misses != 1 {
		t.Fatalf("another location's cache file was served: %+v", st)
	}
	c2.Close()

	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDiskCache(other, dir, 64<<20, DiskCacheOptions{}); err == nil || !strings.Contains(err.Error(), "0755") {
		t.Fatalf("a directory others can reach: %v", err)
	}
}
