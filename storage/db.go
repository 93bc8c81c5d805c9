// Package storage keeps deeplaked's tables: the catalog, sequences and
// not-yet-flushed rows in Pebble (synced, so acknowledged writes survive a
// crash), and flushed rows column-wise in immutable chunk objects behind an
// ObjectStore, whose location also holds a log of every catalog change
// (replog.go): the location alone serves its tables, to any number of
// servers. docs/storage.md describes the key layout, the log, the chunk
// format and the durability argument.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

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
	// Location names Store in messages and in the data directory's record
	// of its storage ("s3://bucket/prefix"); "" for the data directory's
	// own objects. Open refuses a data directory and a store that do not
	// belong together (identity.go).
	Location string
	// Logger receives storage and Pebble logs; slog.Default() if nil.
	Logger *slog.Logger
	// FlushRows overrides DefaultFlushRows.
	FlushRows int
	// VersionRetention is how long old table versions are kept for
	// readers of past versions; VACUUM expires older ones. 0 means
	// DefaultVersionRetention; a negative value keeps only the current
	// version.
	VersionRetention time.Duration
	// NoCompaction turns off background compaction (tests).
	NoCompaction bool
	// ChunkCacheBytes is the budget of decoded column chunks kept for
	// random access (primary key lookups); 0 means DefaultChunkCacheBytes.
	ChunkCacheBytes int64
	// WholeChunkFetch is the stored size up to which FetchRows reads a
	// chunk whole through the chunk cache rather than the byte ranges of
	// its rows (above 256 KiB only while the cache has room for it); 0
	// means DefaultWholeChunkFetch, negative always ranges.
	WholeChunkFetch int64
	// EpochLinger is how long an epoch's snapshot (Txn.ReadEpoch) is kept
	// after the last transaction reading it ended; 0 means
	// DefaultEpochLinger.
	EpochLinger time.Duration
	// Durability says when a commit is acknowledged: once in the data
	// directory (DurabilityLocal, the default; the storage location gets
	// it in the background) or once in the storage location.
	Durability Durability
	// RefreshInterval is how often the data directory applies the
	// entries other servers added to the location's log; 0 means
	// DefaultRefreshInterval. Unused for the data directory's own
	// objects, which no other server shares.
	RefreshInterval time.Duration
	// NodeHeartbeat is how often a server on a shared location renews
	// its node record (node.go); 0 means DefaultNodeHeartbeat.
	NodeHeartbeat time.Duration
	// Attach lets a new data directory serve a storage location that
	// already holds a catalog: Open loads it from the location's
	// checkpoint and log.
	Attach bool
}

// DefaultWholeChunkFetch is Options.WholeChunkFetch's default.
const DefaultWholeChunkFetch = 16 << 20

// DefaultVersionRetention is how long old table versions are kept.
const DefaultVersionRetention = 7 * 24 * time.Hour

// DB is an open database. Its methods are safe for concurrent use.
type DB struct {
	// auth caches the roles and memberships as privileges are decided
	// (Auth), valid while rolesGen, which every write of a role or
	// membership advances, is what it was read at.
	auth     atomic.Pointer[cachedAuth]
	rolesGen atomic.Uint64

	opts  Options
	log   *slog.Logger
	kv    *pebble.DB
	store ObjectStore
	// ownStore is store when Open made it (Options.Dir), closed by Close.
	ownStore *DirStore
	// chunks caches decoded chunks for random access.
	chunks *chunkCache
	// headers keeps the headers of chunks read by byte ranges.
	headers *headerCache

	// catMu guards tables and databases. Commits hold it for reading so
	// that a table cannot be dropped under a committing transaction.
	catMu  sync.RWMutex
	tables map[tableKey]*tableState
	byID   map[uint64]*tableState
	// branches holds each table's branches by name, by the table's ID
	// (branch.go); their tables are in byID too.
	branches map[uint64]map[string]*branchState
	// forks caches the primary keys of branches' base views (branchpk.go).
	forks forkCache
	// streamMu serializes the commits streams make (StreamSource).
	streamMu sync.Mutex
	dbs      map[string]*DatabaseDesc
	dbByOID  map[uint32]*DatabaseDesc

	// commitMu serializes commits (and snapshot creation, so that a
	// snapshot and commitSeq agree). It guards commitSeq, openTxns and the
	// tables' head versions.
	commitMu sync.Mutex
	// nameMu orders the naming of commits (commitVersion): a commit's
	// first parent is the commit named last before it at or below its
	// version, so two named at once must not both take the same parent.
	nameMu    sync.Mutex
	commitSeq uint64
	openTxns  map[*Txn]uint64
	// exported holds the snapshots transactions exported
	// (Txn.ExportSnapshot), by identifier, under commitMu; exportSeq
	// numbers them.
	exported  map[string]*sharedSnap
	exportSeq uint64
	// dropping holds the dropped tables whose objects wait for the
	// transactions open when they were dropped (droppedTable), under
	// commitMu.
	dropping []*droppedTable
	// epochs holds the epochs' snapshots (Txn.ReadEpoch) by key, under
	// commitMu; epochLinger is how long one is kept unread.
	epochs      map[string]*epochSnap
	epochLinger time.Duration
	// lapsing counts epochs being dropped outside commitMu (lapseEpoch).
	lapsing sync.WaitGroup
	// pkSeq counts commits that wrote primary key entries.
	pkSeq atomic.Uint64
	// inflight holds the fragments being written by open transactions.
	inflight inflightSet
	// loadSem bounds the chunk loads running at once; encodeSem the chunk
	// compressions.
	loadSem   chan struct{}
	encodeSem chan struct{}
	stats     ScanStats

	ctrMu    sync.Mutex
	counters map[string]*counter

	// flushMu serializes flushes with each other and with DropTable.
	flushMu sync.Mutex
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
	// bg counts background work (background), which Close waits for;
	// bgMu orders its start with Close.
	bg   sync.WaitGroup
	bgMu sync.Mutex

	// logMu serializes the commits that change replicated keys, so that
	// log order is commit order; it guards the log state below. It is
	// taken last, after commitMu and catMu.
	logMu sync.Mutex
	// logSeq is the last log entry applied here; hasLog whether the data
	// directory has a log position at all.
	logSeq uint64
	hasLog bool
	// queued counts the entries not yet uploaded (DurabilityLocal).
	queued int
	// lastCheckpoint is the entry of the last checkpoint written or
	// loaded.
	lastCheckpoint uint64
	// logBroken is set when an entry's fate is unknown; diverged when the
	// location's log holds another writer's entry where this data
	// directory's should be.
	logBroken, diverged error
	// checkpointing is set while a background checkpoint is written.
	checkpointing bool
	// node names this data directory in the entries it writes.
	node string
	// attaching is set by Open when a new data directory attaches.
	attaching  bool
	uploadKick chan struct{}
	uploadDone chan struct{}
	// memSeq is the log entry the in-memory state (catalog maps, head
	// versions) reflects, under logMu; entries of other servers applied
	// to Pebble put logSeq ahead of it until reloadMemory.
	memSeq      uint64
	refreshDone chan struct{}
	// boot names this start of the node; nodeRec is its record
	// (node.go), written by claimNode and then heartbeatLoop alone.
	boot          string
	nodeRec       nodeRecord
	heartbeatDone chan struct{}
	// dropSeq holds, under logMu, the log entry at which each table
	// dropped since Open was dropped; openLogSeq the entry at Open, for
	// the tables dropped before.
	dropSeq    map[uint64]uint64
	openLogSeq uint64
	// heartbeatOK is when the node's record was last renewed, lapseAt
	// when it was last renewed after a lapse (unix ns; node.go lapsed).
	heartbeatOK, lapseAt atomic.Int64
}

// tableState is the in-memory state of one table.
type tableState struct {
	desc *TableDesc
	// pending approximates the committed buffered rows not yet flushed.
	pending atomic.Int64
	// failures counts background flushes failed in a row; retryAt (unix
	// ns) is when the next may run.
	failures atomic.Int64
	retryAt  atomic.Int64
	// head is the table's current version; baseHead the one it had when
	// the database opened, and stamps the versions committed since, with
	// their commit sequence. Guarded by db.commitMu.
	head, baseHead uint64
	stamps         []verStamp
	// vindexes holds the graphs of the table's hnsw indexes, by index
	// ID, under vmu.
	vmu      sync.Mutex
	vindexes map[uint64]*vectorIndex
	// building marks, under vmu, the indexes another server made that
	// a background build is making here (reloadMemory).
	building map[uint64]bool
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
	if opts.ChunkCacheBytes <= 0 {
		opts.ChunkCacheBytes = DefaultChunkCacheBytes
	}
	if opts.WholeChunkFetch == 0 {
		opts.WholeChunkFetch = DefaultWholeChunkFetch
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
	if !opts.InMemory {
		if err := os.MkdirAll(opts.Dir, DirMode); err != nil {
			return nil, fmt.Errorf("storage: creating data directory: %w", err)
		}
		popts.FS = privateFS{vfs.Default}
	}
	if opts.InMemory {
		popts.FS = vfs.NewMem()
		dir = "catalog"
		if store == nil {
			store = NewMemStore()
		}
	}
	if !opts.InMemory {
		// Temporary files are unlinked once created (TempFile); any left
		// by a crash between the two are removed.
		_ = os.RemoveAll(filepath.Join(opts.Dir, "tmp"))
	}
	var owned *DirStore
	if store == nil {
		ds, err := NewDirStore(filepath.Join(opts.Dir, "objects"))
		if err != nil {
			return nil, err
		}
		store, owned = ds, ds
	}
	kv, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("storage: opening pebble in %s: %w", dir, err)
	}
	db := &DB{
		opts:      opts,
		log:       opts.Logger,
		kv:        kv,
		store:     store,
		ownStore:  owned,
		chunks:    newChunkCache(opts.ChunkCacheBytes),
		headers:   newHeaderCache(),
		tables:    make(map[tableKey]*tableState),
		byID:      make(map[uint64]*tableState),
		branches:  make(map[uint64]map[string]*branchState),
		dbs:       make(map[string]*DatabaseDesc),
		dbByOID:   make(map[uint32]*DatabaseDesc),
		counters:  make(map[string]*counter),
		openTxns:  make(map[*Txn]uint64),
		loadSem:   make(chan struct{}, 2*runtime.GOMAXPROCS(0)),
		encodeSem: make(chan struct{}, runtime.GOMAXPROCS(0)),
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),

		uploadKick: make(chan struct{}, 1),
		uploadDone: make(chan struct{}),

		refreshDone:   make(chan struct{}),
		heartbeatDone: make(chan struct{}),
	}
	db.epochLinger = opts.EpochLinger
	if db.epochLinger <= 0 {
		db.epochLinger = DefaultEpochLinger
	}
	// Before anything is written or deleted: the data directory and the
	// store must belong together.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = db.checkIdentity(ctx)
	if err == nil {
		err = db.startLog(ctx)
	}
	// Memory is loaded from Pebble below (loadCatalog).
	db.memSeq, db.openLogSeq = db.logSeq, db.logSeq
	cancel()
	if err != nil {
		_ = kv.Close()
		return nil, err
	}
	migrated, err := db.migrateLayout()
	if err != nil {
		_ = kv.Close()
		return nil, err
	}
	if migrated > 0 {
		db.log.Info("storage: moved the tables of an earlier catalog layout into database postgres", "tables", migrated)
	}
	if err := db.loadCatalog(); err != nil {
		_ = kv.Close()
		return nil, err
	}
	go db.flushLoop()
	go db.uploadLoop()
	go db.refreshLoop()
	go db.heartbeatLoop()
	db.maybeKick()
	db.rebuildIndexes()
	// The tables dropped before a crash are listed now, before any
	// transaction can drop another, and their objects deleted meanwhile.
	left, err := db.droppedLeft()
	if err != nil {
		db.log.Warn("storage: reading the dropped tables", "err", err)
	}
	if len(left) > 0 {
		db.background(func(ctx context.Context) {
			for _, d := range left {
				if ctx.Err() != nil {
					return
				}
				db.deleteDropped(ctx, d.id, d.name)
			}
		})
	}
	return db, nil
}

// Close stops background work and closes Pebble. Buffered rows stay in
// Pebble's log and tables; the next Open sees them.
func (db *DB) Close() error {
	db.bgMu.Lock() // background work started before this is counted in bg
	closing := db.closed.CompareAndSwap(false, true)
	db.bgMu.Unlock()
	if !closing {
		return nil
	}
	close(db.stop)
	<-db.done
	<-db.uploadDone
	<-db.refreshDone
	<-db.heartbeatDone
	db.bg.Wait()
	db.closeEpochs()
	db.saveIndexes()
	if err := db.releaseCounters(); err != nil {
		db.log.Warn("storage: keeping reserved counter blocks", "err", err)
	}
	// A last upload, so that a clean shutdown leaves nothing queued when
	// the location is reachable.
	if err := db.uploadQueued(); err != nil {
		db.log.Warn("storage: commits left to upload at the next start", "err", err)
	}
	if db.ownStore != nil {
		_ = db.ownStore.Close()
	}
	if err := db.kv.Close(); err != nil {
		return fmt.Errorf("storage: closing pebble: %w", err)
	}
	return nil
}

// Stats returns the database's scan counters.
func (db *DB) Stats() *ScanStats { return &db.stats }

// Store returns the object store holding the chunk objects.
func (db *DB) Store() ObjectStore { return db.store }

func (db *DB) ctx() context.Context { return context.Background() }

// File modes of the data directory: only the server's user may read it,
// as PostgreSQL has it, since the catalog holds every role's password
// verifier.
const (
	// DirMode is the mode of the directories the server creates.
	DirMode fs.FileMode = 0o700
	// FileMode is the mode of the files the server creates.
	FileMode fs.FileMode = 0o600
)

// ErrDataDirPermissions marks a data directory that group or others can
// write, or others can read; see CheckDataDir.
var ErrDataDirPermissions = errors.New("data directory has invalid permissions")

// DataDirPermError is the refusal of a data directory that others can
// reach. It matches ErrDataDirPermissions.
type DataDirPermError struct {
	Dir  string
	Mode fs.FileMode
}

func (e *DataDirPermError) Error() string {
	return fmt.Sprintf("data directory %q has invalid permissions (%04o)\n"+
		"DETAIL:  Permissions should be u=rwx (0700) or u=rwx,g=rx (0750).\n"+
		"HINT:  Fix them with: chmod 0700 %q", e.Dir, e.Mode.Perm(), e.Dir)
}

func (e *DataDirPermError) Is(target error) bool { return target == ErrDataDirPermissions }

// CheckDataDir creates dir (mode 0700) if it does not exist, and refuses
// one that group or others can write or others can read, as PostgreSQL's
// checkDataDir does: 0700 and 0750 pass. Open does not call it: the server
// does, before opening its data directory.
func CheckDataDir(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("storage: creating data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("storage: data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("storage: data directory %q is not a directory", dir)
	}
	if fi.Mode().Perm()&0o027 != 0 {
		return &DataDirPermError{Dir: dir, Mode: fi.Mode()}
	}
	return nil
}

// privateFS is Pebble's file system with the data directory's modes: the
// files and directories it creates are the server user's alone, whatever
// the process umask.
type privateFS struct{ vfs.FS }

func (p privateFS) private(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if err := os.Chmod(name, FileMode); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return p.private(f, name, err)
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, category, opts...)
	return p.private(f, name, err)
}

func (p privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	return p.private(f, newname, err)
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error { return p.FS.MkdirAll(dir, DirMode) }

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err == nil {
		err = os.Chmod(name, FileMode)
		if err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, err
}
