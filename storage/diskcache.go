package storage

import (
	"container/list"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DiskCache is an ObjectStore that keeps the chunk objects read from
// another, slow one (S3) in files on a local disk, so that the second pass
// over a table (a training run's second epoch) reads the disk instead of
// the network. Chunk objects are immutable and their keys never reused,
// so a cached copy never goes stale; manifests, the identity object and
// everything else pass through untouched (diskCacheable says which keys
// are cached).
//
// Whole-object reads (Get, GetInto, GetSizedInto) of a chunk not in the
// cache read it from the inner store, once however many readers ask at
// the same time, and keep it: its file is written in the background (up
// to diskCacheWriteBehind bytes at once), and the readers that asked
// meanwhile wait for it. Range reads are served from a cached copy
// when there is one; otherwise they go to the inner store and, when
// DiskCacheOptions.RangeFills allows, queue a read of the whole object in
// the background (an exact shuffle reads one block per row, and its next
// epoch then finds every chunk it touched on disk).
//
// The files take at most the given bytes, least recently used out first.
// Each file carries a CRC-32C per 64 KiB block, checked on every read: a
// damaged file is deleted and the read goes to the inner store (Stats
// counts them). A progress callback may then see the first pieces of the
// object twice, from the file and again from the inner store. Files are
// written to a temporary name and renamed, without fsync: after a crash,
// NewDiskCache drops temporary files and files whose length does not
// match their trailer, and checksums catch the rest on read.
//
// The cache directory belongs to one storage location: it records the
// location's identity (identityKey) and is emptied when it meets another
// one. One process at a time uses it (a lock file).
type DiskCache struct {
	inner  ObjectStore
	dir    string
	objDir string
	max    int64
	log    *slog.Logger
	lock   *os.File
	// files keeps the cache files of recent reads open.
	files fdCache

	mu      sync.Mutex
	entries map[string]*diskEntry
	lru     list.List // *diskEntry, most recently used first
	used    int64     // bytes of the entries' files
	flights map[string]*diskFlight
	tooBig  map[string]bool // objects a range fill found past rangeFillMax
	closed  bool

	// owned is set once the directory is known to belong to inner's
	// storage location (own).
	ownerMu sync.Mutex
	owned   atomic.Bool

	fillq  chan string
	bgStop context.CancelFunc
	bg     sync.WaitGroup
	// writes counts writeBehind's writes, pending their bytes.
	writes  sync.WaitGroup
	pending atomic.Int64

	hits, misses, hitBytes, fills, fillBytes, evictions, corrupt atomic.Int64
	lastWarn                                                     atomic.Int64
}

var (
	_ ObjectStore      = (*DiskCache)(nil)
	_ bufferedGetter   = (*DiskCache)(nil)
	_ sizedGetter      = (*DiskCache)(nil)
	_ concurrentReader = (*DiskCache)(nil)
	_ rangeIntoGetter  = diskCacheRanges{}
)

// DiskCacheOptions are NewDiskCache's settings.
type DiskCacheOptions struct {
	// RangeFills is how many whole-object reads range misses may have
	// running in the background at once (DefaultDiskCacheRangeFills);
	// negative: none, range misses are only passed on. An object over
	// 64 MiB is not read this way.
	RangeFills int
	// Logger receives warnings (a cache file that cannot be written);
	// slog.Default() if nil.
	Logger *slog.Logger
}

// DefaultDiskCacheRangeFills is DiskCacheOptions.RangeFills' default.
const DefaultDiskCacheRangeFills = 2

// DiskCacheStats counts what a DiskCache did since NewDiskCache.
type DiskCacheStats struct {
	// Hits and Misses count the reads of cacheable objects served from
	// a cache file and from the inner store.
	Hits, Misses int64
	// HitBytes are the bytes that hits returned.
	HitBytes int64
	// Fills and FillBytes count the objects written into the cache and
	// their bytes (once written: a read's copy is written after it
	// returns).
	Fills, FillBytes int64
	// Evictions counts files deleted to make room.
	Evictions int64
	// Corrupt counts files found damaged (a checksum mismatch, a short
	// or unreadable file), deleted, and read from the inner store.
	Corrupt int64
	// Files and Bytes are the files the cache holds now and their size.
	Files, Bytes int64
}

type diskEntry struct {
	key  string
	size int64 // the object's bytes; the file is diskCacheFileLen(size)
	el   *list.Element
	// touched is when the file's mtime was last set, which orders the
	// files when the cache is opened again.
	touched time.Time
}

// diskFlight is one read of an object from the inner store that other
// readers of it wait for.
type diskFlight struct {
	done   chan struct{}
	stored bool
	err    error
}

// A cache file is the object's bytes, a CRC-32C (little-endian) of each
// diskCacheBlock of them, and a trailer: the object's length (uint64,
// little-endian) and diskCacheMagic.
const (
	diskCacheBlock      = 64 << 10
	diskCacheTrailerLen = 16
	diskCacheMagic      = "dlcache1"
	// diskCacheTouchEvery is how often a file's mtime is set on reads.
	diskCacheTouchEvery = time.Minute
	// rangeFillMax is the largest object a range miss reads whole.
	rangeFillMax = 64 << 20
	// diskCacheOwnerFile holds the identity of the storage location the
	// files belong to; diskCacheLockFile is locked while a process uses
	// the directory.
	diskCacheOwnerFile = "storage-identity"
	diskCacheLockFile  = "lock"
)

func diskCacheBlocks(n int64) int64 { return (n + diskCacheBlock - 1) / diskCacheBlock }

func diskCacheFileLen(n int64) int64 { return n + 4*diskCacheBlocks(n) + diskCacheTrailerLen }

// errCacheFile marks a cache file that is missing, short, unreadable or
// fails its checksums: the read goes to the inner store.
var errCacheFile = errors.New("storage: damaged cache file")

// NewDiskCache returns a cache of inner's chunk objects in dir (created
// 0700; one that group or others can reach is refused), holding files of
// at most maxBytes in all. It drops what a crash left behind and takes the
// files that remain in their last-used order. Close it when done.
func NewDiskCache(inner ObjectStore, dir string, maxBytes int64, opts DiskCacheOptions) (*DiskCache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("storage: cache size %d: want a positive number of bytes", maxBytes)
	}
	c := &DiskCache{inner: inner, dir: dir, objDir: filepath.Join(dir, "objects"), max: maxBytes,
		log: opts.Logger, files: fdCache{max: dirStoreOpenFiles},
		entries: make(map[string]*diskEntry), flights: make(map[string]*diskFlight), tooBig: make(map[string]bool)}
	if c.log == nil {
		c.log = slog.Default()
	}
	if err := os.MkdirAll(c.objDir, DirMode); err != nil {
		return nil, fmt.Errorf("storage: creating cache directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: cache directory: %w", err)
	}
	if fi.Mode().Perm()&0o027 != 0 {
		return nil, fmt.Errorf("storage: cache directory %s has mode %04o: it holds table data, so group must not write it nor others reach it (chmod 0700 %s)",
			dir, fi.Mode().Perm(), dir)
	}
	if c.lock, err = lockDir(filepath.Join(dir, diskCacheLockFile)); err != nil {
		return nil, err
	}
	if err := c.load(); err != nil {
		c.lock.Close()
		return nil, err
	}
	fills := opts.RangeFills
	if fills == 0 {
		fills = DefaultDiskCacheRangeFills
	}
	if fills > 0 {
		var ctx context.Context
		ctx, c.bgStop = context.WithCancel(context.Background())
		c.fillq = make(chan string, 64)
		for range fills {
			c.bg.Go(func() { c.rangeFiller(ctx) })
		}
	}
	return c, nil
}

// lockDir takes an exclusive lock on the file name, or says which process
// is using it.
func lockDir(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("storage: cache directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("storage: cache directory %s is in use by another process", filepath.Dir(name))
		}
		return nil, fmt.Errorf("storage: locking cache directory: %w", err)
	}
	return f, nil
}

// load indexes the files in the cache directory, oldest mtime least
// recently used, deleting temporary files, files of no cacheable key and
// files whose length disagrees with their trailer.
func (c *DiskCache) load() error {
	des, err := os.ReadDir(c.objDir)
	if err != nil {
		return fmt.Errorf("storage: reading cache directory: %w", err)
	}
	type found struct {
		key   string
		size  int64
		mtime time.Time
	}
	var files []found
	for _, de := range des {
		name := de.Name()
		p := filepath.Join(c.objDir, name)
		key := diskCacheKeyOf(name)
		if strings.HasSuffix(name, tmpSuffix) || !de.Type().IsRegular() || !diskCacheable(key) {
			_ = os.RemoveAll(p)
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		n, ok := readCacheTrailer(p, fi.Size())
		if !ok {
			c.corrupt.Add(1)
			_ = os.Remove(p)
			continue
		}
		files = append(files, found{key, n, fi.ModTime()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mtime.Before(files[j].mtime) })
	for _, f := range files {
		e := &diskEntry{key: f.key, size: f.size, touched: f.mtime}
		e.el = c.lru.PushFront(e)
		c.entries[f.key] = e
		c.used += diskCacheFileLen(f.size)
	}
	c.mu.Lock()
	c.evictLocked(nil)
	c.mu.Unlock()
	return nil
}

// readCacheTrailer returns the object length in the trailer of the cache
// file p of size bytes, and whether the file has that length.
func readCacheTrailer(p string, size int64) (int64, bool) {
	if size < diskCacheTrailerLen {
		return 0, false
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var t [diskCacheTrailerLen]byte
	if _, err := f.ReadAt(t[:], size-diskCacheTrailerLen); err != nil {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint64(t[:8]))
	if string(t[8:]) != diskCacheMagic || n < 0 || n > size || diskCacheFileLen(n) != size {
		return 0, false
	}
	return n, true
}

// diskCacheable reports whether key names a chunk object of a fragment,
// tables/<table>/frags/<fragment hex>/<column hex>-<seq hex>.dlc (see
// fragChunkKey): immutable, never rewritten under its key.
func diskCacheable(key string) bool {
	rest, ok := strings.CutPrefix(key, "tables/")
	if !ok {
		return false
	}
	table, rest, ok := strings.Cut(rest, "/frags/")
	if !ok || !allOf(table, "0123456789") {
		return false
	}
	frag, rest, ok := strings.Cut(rest, "/")
	if !ok || !allOf(frag, hexDigits) {
		return false
	}
	name, ok := strings.CutSuffix(rest, ".dlc")
	if !ok {
		return false
	}
	col, seq, ok := strings.Cut(name, "-")
	return ok && allOf(col, hexDigits) && allOf(seq, hexDigits)
}

const hexDigits = "0123456789abcdef"

// allOf reports whether s is non-empty and made of bytes of set.
func allOf(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return s != ""
}

// A cacheable key is stored flat in objDir: "tables/1/frags/…/0000-….dlc"
// as "1_frags_…_0000-….dlc" (the keys hold no '_').
func diskCacheName(key string) string {
	return strings.ReplaceAll(strings.TrimPrefix(key, "tables/"), "/", "_")
}

func diskCacheKeyOf(name string) string { return "tables/" + strings.ReplaceAll(name, "_", "/") }

func (c *DiskCache) path(key string) string { return filepath.Join(c.objDir, diskCacheName(key)) }

func (c *DiskCache) pathOf(key string) (string, error) { return c.path(key), nil }

// Store returns the cache as the ObjectStore to read through: c itself,
// or, when inner reads byte ranges into a caller's buffer, a view of c
// that does too. A scan reads the columns a tensor stream takes whole
// (hollow) only from such stores, by byte ranges; over S3, which does not,
// it reads each chunk whole, and so fills the cache.
func (c *DiskCache) Store() ObjectStore {
	if _, ok := c.inner.(rangeIntoGetter); ok {
		return diskCacheRanges{c}
	}
	return c
}

// diskCacheRanges is a DiskCache over a store with GetRangeInto.
type diskCacheRanges struct{ *DiskCache }

// GetRangeInto implements rangeIntoGetter.
func (r diskCacheRanges) GetRangeInto(ctx context.Context, key string, off, n int64, buf []byte) ([]byte, error) {
	return r.getRange(ctx, key, off, n, buf, true)
}

// Inner returns the store the cache reads from.
func (c *DiskCache) Inner() ObjectStore { return c.inner }

// Stats returns the cache's counters.
func (c *DiskCache) Stats() DiskCacheStats {
	c.mu.Lock()
	files, used := int64(len(c.entries)), c.used
	c.mu.Unlock()
	return DiskCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), HitBytes: c.hitBytes.Load(),
		Fills: c.fills.Load(), FillBytes: c.fillBytes.Load(), Evictions: c.evictions.Load(),
		Corrupt: c.corrupt.Load(), Files: files, Bytes: used}
}

// Close stops the background reads, closes the files and unlocks the
// directory. Reads after Close pass through to the inner store.
func (c *DiskCache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.writes.Wait()
	if c.bgStop != nil {
		c.bgStop()
		c.bg.Wait()
	}
	c.files.closeAll()
	return c.lock.Close() // releases the flock
}

// ReadConcurrency implements concurrentReader as the inner store does:
// reads that miss go there.
func (c *DiskCache) ReadConcurrency() int { return readConcurrency(c.inner) }

// Put implements ObjectStore, dropping a cached copy of key.
func (c *DiskCache) Put(ctx context.Context, key string, data []byte) error {
	c.forget(key)
	err := c.inner.Put(ctx, key, data)
	c.forget(key)
	return err
}

// PutIfAbsent implements ObjectStore, dropping a cached copy of key.
func (c *DiskCache) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := c.inner.PutIfAbsent(ctx, key, data)
	if err == nil {
		c.forget(key)
	}
	return err
}

// Delete implements ObjectStore, deleting the cached copy of key.
func (c *DiskCache) Delete(ctx context.Context, key string) error {
	err := c.inner.Delete(ctx, key)
	c.forget(key)
	return err
}

// List implements ObjectStore.
func (c *DiskCache) List(ctx context.Context, prefix string) ([]string, error) {
	return c.inner.List(ctx, prefix)
}

// Get implements ObjectStore.
func (c *DiskCache) Get(ctx context.Context, key string) ([]byte, error) {
	return c.getWhole(ctx, key, nil, nil, -1, func(buf []byte) ([]byte, error) {
		data, err := c.inner.Get(ctx, key)
		if err != nil || len(buf) == 0 {
			return data, err
		}
		return append(buf, data...), nil
	})
}

// GetInto implements bufferedGetter.
func (c *DiskCache) GetInto(ctx context.Context, key string, buf []byte, progress func(read []byte) error) ([]byte, error) {
	return c.getWhole(ctx, key, buf, progress, -1, func(buf []byte) ([]byte, error) {
		return getInto(ctx, c.inner, key, buf, progress)
	})
}

// GetSizedInto implements sizedGetter. Only an object of the given size
// is cached.
func (c *DiskCache) GetSizedInto(ctx context.Context, key string, size int64, buf []byte, progress func(read []byte) error) ([]byte, error) {
	return c.getWhole(ctx, key, buf, progress, size, func(buf []byte) ([]byte, error) {
		if sg, ok := c.inner.(sizedGetter); ok {
			return sg.GetSizedInto(ctx, key, size, buf, progress)
		}
		return getInto(ctx, c.inner, key, buf, progress)
	})
}

// getInto is GetInto on s, with Get where s has no GetInto.
func getInto(ctx context.Context, s ObjectStore, key string, buf []byte, progress func(read []byte) error) ([]byte, error) {
	if bg, ok := s.(bufferedGetter); ok {
		return bg.GetInto(ctx, key, buf, progress)
	}
	data, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	start := len(buf)
	buf = append(buf, data...)
	if progress != nil {
		if err := progress(buf[start:]); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// GetRange implements ObjectStore. A negative n reads to the end.
func (c *DiskCache) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	return c.getRange(ctx, key, off, n, nil, false)
}

// usable reports whether reads of key go through the cache.
func (c *DiskCache) usable(ctx context.Context, key string) bool {
	return diskCacheable(key) && c.own(ctx)
}

// getWhole reads the object key, appended to buf: from its cache file,
// or with fetch (which appends it to buf too), keeping it. Of concurrent
// readers of one object only one fetches it; the others wait and read the
// file it wrote. size is the size the caller knows, or -1.
func (c *DiskCache) getWhole(ctx context.Context, key string, buf []byte, progress func([]byte) error, size int64, fetch func(buf []byte) ([]byte, error)) ([]byte, error) {
	if !c.usable(ctx, key) {
		return fetch(buf)
	}
	start := len(buf)
	for {
		e, f, lead := c.lookup(key, true)
		switch {
		case e != nil:
			out, err := c.readWhole(e, buf, progress)
			if err == nil {
				return out, nil
			}
			if !errors.Is(err, errCacheFile) && !errors.Is(err, ErrCorruption) {
				return nil, err // progress failed otherwise
			}
			// The file is damaged (or, rarely, its bytes were damaged
			// before they were cached): read the object again.
			c.drop(e)
		case !lead:
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err == nil && !f.stored {
				return fetch(buf) // not cacheable (too big, a disk error)
			}
			// Read the file it wrote; if it failed, fetch in its stead.
		default:
			c.misses.Add(1)
			out, err := fetch(buf)
			stored := false
			if err == nil && (size < 0 || int64(len(out)-start) == size) {
				if c.writeBehind(key, f, out[start:]) {
					return out, nil
				}
				stored = c.keep(key, out[start:])
			}
			c.land(key, f, stored, err)
			return out, err
		}
	}
}

// lookup returns key's entry (marked used), or else the read of it in
// flight, or, when lead is set, starts one that the caller makes (lead
// true) and ends with land. A closed cache returns neither: the caller
// reads past it.
func (c *DiskCache) lookup(key string, lead bool) (e *diskEntry, f *diskFlight, leader bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		if lead {
			return nil, &diskFlight{done: make(chan struct{})}, true
		}
		return nil, nil, false
	}
	if e = c.entries[key]; e != nil {
		c.lru.MoveToFront(e.el)
		var touch bool
		now := time.Now()
		if now.Sub(e.touched) >= diskCacheTouchEvery {
			e.touched, touch = now, true
		}
		c.mu.Unlock()
		if touch {
			_ = os.Chtimes(c.path(key), now, now)
		}
		return e, nil, false
	}
	if f = c.flights[key]; f != nil || !lead {
		c.mu.Unlock()
		return nil, f, false
	}
	f = &diskFlight{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()
	return nil, f, true
}

// land ends the flight f of key.
func (c *DiskCache) land(key string, f *diskFlight, stored bool, err error) {
	c.mu.Lock()
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	c.mu.Unlock()
	f.stored, f.err = stored, err
	close(f.done)
}

// readWhole appends the object of e's file to buf, checking each block
// before progress sees it. A damaged file is errCacheFile.
func (c *DiskCache) readWhole(e *diskEntry, buf []byte, progress func([]byte) error) ([]byte, error) {
	of, err := c.files.acquire(e.key, c.pathOf)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheFile, err)
	}
	defer c.files.release(of)
	n := e.size
	crcs := getScratch(int(4 * diskCacheBlocks(n)))
	defer putScratch(crcs)
	if err := preadFull(of.fd, *crcs, n); err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheFile, err)
	}
	start := len(buf)
	if int64(cap(buf)-start) < n {
		// Room to spare, as DirStore.GetInto leaves, for a pooled
		// buffer reused for objects of about one size.
		extra := int64(0)
		if buf != nil {
			extra = n/16 + 4096
		}
		nb := make([]byte, start, int64(start)+n+extra)
		copy(nb, buf)
		buf = nb
	}
	buf = buf[:start+int(n)]
	piece := n
	if progress != nil {
		piece = getIntoPiece
	}
	for at := int64(0); at < n || (at == 0 && progress != nil); {
		m := min(piece, n-at)
		chunk := buf[start+int(at) : start+int(at+m)]
		if err := preadFull(of.fd, chunk, at); err != nil {
			return nil, fmt.Errorf("%w: %v", errCacheFile, err)
		}
		if !checkCacheBlocks(chunk, *crcs, at) {
			return nil, fmt.Errorf("%w: %s: checksum mismatch", errCacheFile, e.key)
		}
		at += m
		if progress != nil {
			if err := progress(buf[start : start+int(at)]); err != nil {
				return nil, err
			}
			if n == 0 {
				break
			}
		}
	}
	c.hits.Add(1)
	c.hitBytes.Add(n)
	return buf, nil
}

// checkCacheBlocks checks b, the object's bytes from off (a multiple of
// diskCacheBlock), against crcs, the checksums of all its blocks from the
// block at off.
func checkCacheBlocks(b, crcs []byte, off int64) bool {
	for i := 0; i < len(b); i += diskCacheBlock {
		blk := b[i:min(i+diskCacheBlock, len(b))]
		k := 4 * ((off + int64(i)) / diskCacheBlock)
		if crc32.Checksum(blk, crc32c) != binary.LittleEndian.Uint32(crcs[k:]) {
			return false
		}
	}
	return true
}

// getRange reads n bytes at off of key (to the end for a negative n):
// from its cache file, or from the inner store, then maybe queueing a
// read of the whole object. into says the read is GetRangeInto's, into
// buf's storage when it has room.
func (c *DiskCache) getRange(ctx context.Context, key string, off, n int64, buf []byte, into bool) ([]byte, error) {
	pass := func() ([]byte, error) {
		if into {
			if rg, ok := c.inner.(rangeIntoGetter); ok {
				return rg.GetRangeInto(ctx, key, off, n, buf)
			}
		}
		return c.inner.GetRange(ctx, key, off, n)
	}
	if !c.usable(ctx, key) {
		return pass()
	}
	for {
		e, _, _ := c.lookup(key, false)
		if e == nil {
			break
		}
		out, err := c.readRange(e, off, n, buf)
		if err == nil {
			return out, nil
		}
		c.drop(e)
	}
	c.misses.Add(1)
	out, err := pass()
	if err == nil && c.fillq != nil {
		select {
		case c.fillq <- key:
		default: // the fillers are busy
		}
	}
	return out, err
}

// readRange reads n bytes at off of e's file (to the end for a negative
// n), checking the blocks they lie in; into buf when it has room for the
// blocks. A damaged file is errCacheFile.
func (c *DiskCache) readRange(e *diskEntry, off, n int64, buf []byte) ([]byte, error) {
	size := e.size
	if off < 0 || off > size {
		c.hits.Add(1)
		return nil, nil
	}
	end := size
	if n >= 0 && off+n < end {
		end = off + n
	}
	if off == end {
		c.hits.Add(1)
		return buf[:0], nil
	}
	b0, b1 := off/diskCacheBlock, diskCacheBlocks(end)
	lo, hi := b0*diskCacheBlock, min(b1*diskCacheBlock, size)
	of, err := c.files.acquire(e.key, c.pathOf)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheFile, err)
	}
	defer c.files.release(of)
	crcs := getScratch(int(4 * (b1 - b0)))
	defer putScratch(crcs)
	if err := preadFull(of.fd, *crcs, size+4*b0); err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheFile, err)
	}
	if int64(cap(buf)) < hi-lo {
		buf = make([]byte, hi-lo)
	}
	blocks := buf[:hi-lo]
	if err := preadFull(of.fd, blocks, lo); err != nil {
		return nil, fmt.Errorf("%w: %v", errCacheFile, err)
	}
	if !checkCacheBlocks(blocks, *crcs, 0) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", errCacheFile, e.key)
	}
	m := copy(blocks, blocks[off-lo:end-lo])
	c.hits.Add(1)
	c.hitBytes.Add(int64(m))
	return blocks[:m], nil
}

// rangeFiller reads, one after another, the whole objects range misses
// queued, and keeps them.
func (c *DiskCache) rangeFiller(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-c.fillq:
			c.mu.Lock()
			skip := c.closed || c.entries[key] != nil || c.flights[key] != nil || c.tooBig[key]
			c.mu.Unlock()
			if skip {
				continue
			}
			_, f, lead := c.lookup(key, true)
			if !lead {
				continue
			}
			data, err := c.inner.GetRange(ctx, key, 0, rangeFillMax+1)
			stored := false
			switch {
			case err != nil:
			case len(data) > rangeFillMax:
				c.mu.Lock()
				if len(c.tooBig) >= 4096 {
					clear(c.tooBig)
				}
				c.tooBig[key] = true
				c.mu.Unlock()
			default:
				stored = c.keep(key, data)
			}
			c.land(key, f, stored, err)
		}
	}
}

// writeBehind keeps a copy of data, the object key, in the background and
// then ends the flight f (whose waiters then read the file), unless
// diskCacheWriteBehind bytes are being written already or the cache is
// closed. The reader goes on meanwhile: a scan's chunk load is not held up
// by the write, which on a busy machine takes about as long as a part of
// the chunk took to come from S3.
func (c *DiskCache) writeBehind(key string, f *diskFlight, data []byte) bool {
	n := int64(len(data))
	if diskCacheFileLen(n) > c.max/4 {
		return false
	}
	if c.pending.Add(n) > diskCacheWriteBehind {
		c.pending.Add(-n)
		return false
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.pending.Add(-n)
		return false
	}
	c.writes.Add(1)
	c.mu.Unlock()
	cp := getWriteBuf(int(n))
	copy(*cp, data)
	go func() {
		defer c.writes.Done()
		stored := c.keep(key, *cp)
		putWriteBuf(cp)
		c.pending.Add(-n)
		c.land(key, f, stored, nil)
	}()
	return true
}

// diskCacheWriteBehind bounds the bytes writeBehind holds.
const diskCacheWriteBehind = 64 << 20

var writeBufs sync.Pool

func getWriteBuf(n int) *[]byte {
	if b, ok := writeBufs.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

func putWriteBuf(b *[]byte) {
	if cap(*b) <= 32<<20 {
		writeBufs.Put(b)
	}
}

// keep writes data, the object key, into the cache, making room, and
// reports whether it did. An object over a quarter of the cache is not
// kept.
func (c *DiskCache) keep(key string, data []byte) bool {
	n := int64(len(data))
	flen := diskCacheFileLen(n)
	if flen > c.max/4 {
		return false
	}
	p := c.path(key)
	tmp, err := writeCacheFile(p, data)
	if err != nil {
		c.warn("writing a cache file", "key", key, "err", err)
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = os.Remove(tmp)
		return false
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		c.warn("writing a cache file", "key", key, "err", err)
		return false
	}
	if old := c.entries[key]; old != nil {
		c.removeLocked(old, false)
	}
	c.files.forget(key)
	e := &diskEntry{key: key, size: n, touched: time.Now()}
	e.el = c.lru.PushFront(e)
	c.entries[key] = e
	c.used += flen
	c.evictLocked(e)
	c.fills.Add(1)
	c.fillBytes.Add(n)
	return true
}

// writeCacheFile writes the cache file of data to a temporary file beside
// p and returns its name.
func writeCacheFile(p string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*"+tmpSuffix)
	if err != nil {
		return "", err
	}
	n := int64(len(data))
	tail := make([]byte, 0, 4*diskCacheBlocks(n)+diskCacheTrailerLen)
	for i := int64(0); i < n; i += diskCacheBlock {
		tail = binary.LittleEndian.AppendUint32(tail, crc32.Checksum(data[i:min(i+diskCacheBlock, n)], crc32c))
	}
	tail = binary.LittleEndian.AppendUint64(tail, uint64(n))
	tail = append(tail, diskCacheMagic...)
	_, err = f.Write(data)
	if err == nil {
		_, err = f.Write(tail)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// evictLocked deletes least recently used files until the cache is within
// its bytes, sparing keep.
func (c *DiskCache) evictLocked(keep *diskEntry) {
	for c.used > c.max {
		e := c.lru.Back().Value.(*diskEntry)
		if e == keep {
			return
		}
		c.removeLocked(e, true)
		c.evictions.Add(1)
	}
}

// removeLocked takes e out of the index, and deletes its file if file is
// set.
func (c *DiskCache) removeLocked(e *diskEntry, file bool) {
	c.lru.Remove(e.el)
	delete(c.entries, e.key)
	c.used -= diskCacheFileLen(e.size)
	if file {
		_ = os.Remove(c.path(e.key))
	}
	c.files.forget(e.key)
}

// drop deletes e's file, found damaged, unless it was replaced meanwhile.
func (c *DiskCache) drop(e *diskEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[e.key] == e {
		c.removeLocked(e, true)
		c.corrupt.Add(1)
	}
}

// forget deletes the cached copy of key, if any.
func (c *DiskCache) forget(key string) {
	if !diskCacheable(key) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		c.removeLocked(e, true)
	}
}

// own reports whether the cache directory belongs to inner's storage
// location, making it so, once, if it is empty or another location's:
// its files are then deleted and the location's identity recorded. A
// store without an identity object (a test's) is identity "". On an error
// reading the identity the cache is passed by, until a later read.
func (c *DiskCache) own(ctx context.Context) bool {
	if c.owned.Load() {
		return true
	}
	c.ownerMu.Lock()
	defer c.ownerMu.Unlock()
	if c.owned.Load() {
		return true
	}
	var ident Identity
	data, err := c.inner.Get(ctx, identityKey)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return false
	default:
		if json.Unmarshal(data, &ident) != nil {
			return false
		}
	}
	owner := filepath.Join(c.dir, diskCacheOwnerFile)
	recorded, err := os.ReadFile(owner)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil || string(recorded) != ident.ID {
		c.mu.Lock()
		n := len(c.entries)
		for _, e := range c.entries {
			c.removeLocked(e, true)
		}
		c.mu.Unlock()
		if n > 0 {
			c.log.Warn("cache directory belonged to another storage location; emptied it", "dir", c.dir, "files", n)
		}
		tmp, err := os.CreateTemp(c.dir, diskCacheOwnerFile+".*"+tmpSuffix)
		if err != nil {
			return false
		}
		_, err = tmp.WriteString(ident.ID)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), owner)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return false
		}
	}
	c.owned.Store(true)
	return true
}

// warn logs msg at most once a minute.
func (c *DiskCache) warn(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := c.lastWarn.Load()
	if now-last < int64(time.Minute) || !c.lastWarn.CompareAndSwap(last, now) {
		return
	}
	c.log.Warn("disk cache: "+msg, args...)
}

var cacheScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// getScratch returns a pooled buffer of n bytes.
func getScratch(n int) *[]byte {
	b := cacheScratch.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	*b = (*b)[:n]
	return b
}

func putScratch(b *[]byte) {
	if cap(*b) <= 1<<20 {
		cacheScratch.Put(b)
	}
}

// preadFull reads len(b) bytes at off of fd; the file ending first is
// io.ErrUnexpectedEOF.
func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		k, err := syscall.Pread(fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[k:], off+int64(k)
	}
	return nil
}
