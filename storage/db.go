// Package storage keeps deeplaked's tables: the catalog, sequences and
// not-yet-flushed rows in Pebble (synced, so acknowledged writes survive a
// crash), and flushed rows column-wise in immutable chunk objects behind an
// ObjectStore. docs/storage.md describes the key layout, the chunk format
// and the durability argument.
package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultFlushRows is the number of committed buffered rows of a table
// above which a background flush writes them into a chunk.
const DefaultFlushRows = 8192

// Options configure Open.
type Options struct {
	// Dir holds the catalog (Dir/catalog) and, unless Store is set, the
	// chunk objects (Dir/objects). Unused when InMemory.
	Dir string
	// InMemory keeps everything in memory: Pebble on a memory filesystem
	// and a MemStore unless Store is set.
	InMemory bool
	// Store overrides where chunk objects live.
	Store ObjectStore
	// Logger receives storage and Pebble logs; slog.Default() if nil.
	Logger *slog.Logger
	// FlushRows overrides DefaultFlushRows.
	FlushRows int
}

// DB is an open database. Its methods are safe for concurrent use.
type DB struct {
	opts  Options
	log   *slog.Logger
	kv    *pebble.DB
	store ObjectStore

	// catMu guards tables. Commits hold it for reading so that a table
	// cannot be dropped under a committing transaction.
	catMu  sync.RWMutex
	tables map[string]*tableState
	byID   map[uint64]*tableState

	// commitMu serializes commits so that primary key checks and the
	// write that follows them are atomic.
	commitMu sync.Mutex
	// commitSeq counts commits that wrote primary key entries.
	commitSeq atomic.Uint64

	ctrMu    sync.Mutex
	counters map[string]*counter

	chunks chunkCache

	// flushMu serializes flushes with each other and with DropTable.
	flushMu sync.Mutex
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
}

// tableState is the in-memory state of one table.
type tableState struct {
	desc *TableDesc
	// pending approximates the committed buffered rows not yet flushed.
	pending atomic.Int64
}

// pebbleLogger sends Pebble's log lines to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	panic(fmt.Sprintf(format, args...))
}

// Open opens (creating if needed) the database described by opts.
func Open(opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FlushRows <= 0 {
		opts.FlushRows = DefaultFlushRows
	}
	if !opts.InMemory && opts.Dir == "" {
		return nil, errors.New("storage: Options.Dir is required unless InMemory")
	}
	popts := &pebble.Options{Logger: pebbleLogger{opts.Logger}}
	// Primary key checks are point lookups that mostly miss; bloom filters
	// answer those without reading data blocks.
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	dir := filepath.Join(opts.Dir, "catalog")
	store := opts.Store
	if opts.InMemory {
		popts.FS = vfs.NewMem()
		dir = "catalog"
		if store == nil {
			store = NewMemStore()
		}
	} else if store == nil {
		ds, err := NewDirStore(filepath.Join(opts.Dir, "objects"))
		if err != nil {
			return nil, err
		}
		store = ds
	}
	kv, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("storage: opening pebble in %s: %w", dir, err)
	}
	db := &DB{
		opts:     opts,
		log:      opts.Logger,
		kv:       kv,
		store:    store,
		tables:   make(map[string]*tableState),
		byID:     make(map[uint64]*tableState),
		counters: make(map[string]*counter),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	db.chunks.init(chunkCacheEntries)
	if err := db.loadCatalog(); err != nil {
		_ = kv.Close()
		return nil, err
	}
	go db.flushLoop()
	db.maybeKick()
	return db, nil
}

// Close stops background work and closes Pebble. Buffered rows stay in
// Pebble's log and tables; the next Open sees them.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(db.stop)
	<-db.done
	if err := db.releaseCounters(); err != nil {
		db.log.Warn("storage: keeping reserved counter blocks", "err", err)
	}
	if err := db.kv.Close(); err != nil {
		return fmt.Errorf("storage: closing pebble: %w", err)
	}
	return nil
}

// Store returns the object store holding the chunk objects.
func (db *DB) Store() ObjectStore { return db.store }

func (db *DB) ctx() context.Context { return context.Background() }
