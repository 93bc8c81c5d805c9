package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/klauspost/compress/zstd"
)

// The commit log: every change of the replicated part of the catalog (all
// of it but the keys local to one data directory, isReplicated) is also an
// entry of a log kept in the storage location, deeplake/log/<seq>, written
// put-if-absent, so the location alone holds everything needed to serve
// its tables: a new data directory attaches to it (Options.Attach) by
// loading the latest checkpoint (deeplake/checkpoints/<seq>/…, the
// replicated keys as of entry seq) and applying the entries after it.
//
// Entries are numbered from 1 without gaps; the data directory records
// under logSeqKey the last one it applied, in the same synced batch as
// the change. With DurabilityBucket a commit's entry is in the location
// before the commit is applied and acknowledged; with DurabilityLocal the
// entry is queued in the same batch (outKey) and uploaded in order by a
// background worker (uploadLoop), so a data directory lost before its
// upload loses the commits still queued.

// Durability says when a commit is acknowledged.
type Durability uint8

const (
	// DurabilityLocal acknowledges a commit once it is in the data
	// directory's synced log; its log entry is uploaded in the background.
	DurabilityLocal Durability = iota
	// DurabilityBucket acknowledges a commit only once its log entry is
	// in the storage location.
	DurabilityBucket
)

func (d Durability) String() string {
	if d == DurabilityBucket {
		return "bucket"
	}
	return "local"
}

// ParseDurability reads a --durability value.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "", "local":
		return DurabilityLocal, nil
	case "bucket":
		return DurabilityBucket, nil
	}
	return 0, fmt.Errorf("durability %q: want local or bucket", s)
}

const (
	logPrefix        = "deeplake/log/"
	checkpointPrefix = "deeplake/checkpoints/"
	// checkpointPart is the most replicated bytes one checkpoint object
	// holds before compression.
	checkpointPart = 32 << 20
)

// checkpointEvery is how many log entries a data directory writes between
// checkpoints (a variable for tests).
var checkpointEvery uint64 = 4096

var (
	// logSeqKey holds the last log entry applied to this data directory.
	logSeqKey = []byte("l/seq")
	// outPrefix holds the entries committed here and not yet uploaded
	// (DurabilityLocal), by sequence number.
	outPrefix = []byte("l/out/")
	// checkpointKey holds the sequence of the last checkpoint written.
	checkpointKey = []byte("l/checkpoint")
)

func logKey(seq uint64) string        { return logPrefix + fmt.Sprintf("%020d", seq) }
func checkpointDir(seq uint64) string { return checkpointPrefix + fmt.Sprintf("%020d", seq) + "/" }

func outKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), outPrefix...), seq)
}

// isReplicated tells whether a Pebble key belongs to the replicated state
// every data directory of a location shares, rather than to this data
// directory alone: its record of the location, its log position and
// upload queue, the catalog layout, the dropped tables whose objects it
// still has to delete, and where it saved its vector index graphs.
func isReplicated(k []byte) bool {
	switch {
	case len(k) == 0:
		return false
	case k[0] == 'l':
		return false
	case k[0] == 't':
		return !(len(k) == idKeyLen && k[9] == tagIndex)
	case bytes.Equal(k, storageKey), bytes.Equal(k, layoutKey), bytes.HasPrefix(k, dropPrefix):
		return false
	}
	return true
}

// Record kinds of an entry's payload (Pebble's, for readability).
const (
	recDelete      = byte(pebble.InternalKeyKindDelete)
	recSet         = byte(pebble.InternalKeyKindSet)
	recRangeDelete = byte(pebble.InternalKeyKindRangeDelete)
)

// replicatedRecords encodes the records of b that change replicated keys:
// per record its kind, then key and value (a range deletion's end key)
// each with a uvarint length. It returns nil when there are none.
func replicatedRecords(b *pebble.Batch) ([]byte, error) {
	var out []byte
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return nil, ioErrorf(err, "reading a batch")
		}
		if !ok {
			return out, nil
		}
		var rec byte
		switch kind {
		case pebble.InternalKeyKindSet:
			rec = recSet
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
			rec, v = recDelete, nil
		case pebble.InternalKeyKindRangeDelete:
			rec = recRangeDelete
			// A range over local keys only (none is made today) is
			// replicated whole: its replicated part needs it.
		default:
			return nil, assertf("batch record of kind %v", kind)
		}
		if rec != recRangeDelete && !isReplicated(k) {
			continue
		}
		out = append(out, rec)
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
}

// applyRecords adds the records encoded by replicatedRecords to b.
func applyRecords(b *pebble.Batch, recs []byte) error {
	for len(recs) > 0 {
		kind := recs[0]
		recs = recs[1:]
		var kv [2][]byte
		for i := range kv {
			n, w := binary.Uvarint(recs)
			if w <= 0 || uint64(len(recs)-w) < n {
				return corruptionf("log entry: truncated record")
			}
			kv[i] = recs[w : w+int(n)]
			recs = recs[w+int(n):]
		}
		var err error
		switch kind {
		case recSet:
			err = b.Set(kv[0], kv[1], nil)
		case recDelete:
			err = b.Delete(kv[0], nil)
		case recRangeDelete:
			err = b.DeleteRange(kv[0], kv[1], nil)
		default:
			return corruptionf("log entry: record kind %d", kind)
		}
		if err != nil {
			return ioErrorf(err, "applying a log entry")
		}
	}
	return nil
}

// logEntry is one entry of the commit log, or one part of a checkpoint.
//
//	"DLE1" | seq BE8 | unix nanos BE8 | node len u8 | node | crc32c BE4 | zstd(records)
//
// The checksum covers the compressed records.
type logEntry struct {
	seq  uint64
	time int64
	node string
	recs []byte
}

var (
	entryMagic = []byte("DLE1")
	crcTable   = crc32.MakeTable(crc32.Castagnoli)
	zenc, _    = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zdec, _    = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
)

func (e *logEntry) encode() []byte {
	out := append([]byte(nil), entryMagic...)
	out = binary.BigEndian.AppendUint64(out, e.seq)
	out = binary.BigEndian.AppendUint64(out, uint64(e.time))
	out = append(out, byte(len(e.node)))
	out = append(out, e.node...)
	z := zenc.EncodeAll(e.recs, nil)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(z, crcTable))
	return append(out, z...)
}

func decodeEntry(key string, data []byte) (*logEntry, error) {
	bad := func(what string) error { return corruptionf("log entry %s: %s", key, what) }
	if len(data) < 4+8+8+1 || !bytes.Equal(data[:4], entryMagic) {
		return nil, bad("not a log entry")
	}
	e := &logEntry{seq: binary.BigEndian.Uint64(data[4:]), time: int64(binary.BigEndian.Uint64(data[12:]))}
	n := int(data[20])
	rest := data[21:]
	if len(rest) < n+4 {
		return nil, bad("truncated")
	}
	e.node = string(rest[:n])
	sum := binary.BigEndian.Uint32(rest[n:])
	z := rest[n+4:]
	if crc32.Checksum(z, crcTable) != sum {
		return nil, bad("checksum mismatch")
	}
	recs, err := zdec.DecodeAll(z, nil)
	if err != nil {
		return nil, bad(err.Error())
	}
	e.recs = recs
	return e, nil
}

// commitBatch commits b, a change made by this data directory, durably:
// when b changes replicated keys it becomes the next log entry, put in
// the location first (DurabilityBucket) or queued for upload in b
// (DurabilityLocal). It is the only way the catalog is written.
func (db *DB) commitBatch(b *pebble.Batch) error { return db.commitBatchMode(b, true, 0) }

// commitDDL is commitBatch for a catalog change that is not rebuilt by
// itself: a commit that has to be built again is a 40001 error.
func (db *DB) commitDDL(b *pebble.Batch) error { return db.retryable(db.commitBatch(b)) }

// commitBatchMode is commitBatch; a strict commit (one built from the
// in-memory state) is refused with errRetry while entries of other
// servers are applied but not yet in memory, a loose one (built from
// Pebble alone: a counter block) is not, but is refused with errRetry
// when entries were applied since builtAt, the log entry applied when
// its building began (its reads may predate them).
func (db *DB) commitBatchMode(b *pebble.Batch, strict bool, builtAt uint64) error {
	db.logMu.Lock()
	defer db.logMu.Unlock()
	if !db.logging() {
		// The data directory's own objects: no other server can share
		// them, and losing the data directory loses them too, so no log
		// is kept. Commits are still numbered, for horizons.
		seq := db.logSeq + 1
		if nb, err := db.patchRemovals(b, seq); err != nil {
			return err
		} else if nb != nil {
			defer nb.Close()
			b = nb
		}
		if err := b.Set(logSeqKey, binary.BigEndian.AppendUint64(nil, seq), nil); err != nil {
			return ioErrorf(err, "committing")
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return err
		}
		db.logSeq, db.memSeq = seq, seq
		return nil
	}
	recs, err := replicatedRecords(b)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return b.Commit(pebble.Sync)
	}
	if err := db.logUsable(); err != nil {
		return err
	}
	if strict && db.memSeq != db.logSeq || !strict && db.logSeq != builtAt {
		// Entries of other servers are applied but not yet in memory,
		// or since b's reads: b was built on an older state.
		return errRetry
	}
	seq := db.logSeq + 1
	if nb, err := db.patchRemovals(b, seq); err != nil {
		return err
	} else if nb != nil {
		defer nb.Close()
		b = nb
		if recs, err = replicatedRecords(b); err != nil {
			return err
		}
	}
	e := logEntry{seq: seq, time: db.now().UnixNano(), node: db.node, recs: recs}
	data := e.encode()
	if db.opts.Durability == DurabilityBucket {
		if err := db.publish(seq, data); err != nil {
			if errors.Is(err, errLostRace) {
				// Another server committed entry seq first: apply it
				// (and any after it), and have the caller rebuild.
				db.logBroken = nil
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if cerr := db.catchUpLocked(ctx); cerr != nil {
					db.logBroken = cerr
					return cerr
				}
				return errRetry
			}
			return err
		}
	} else if err := b.Set(outKey(seq), data, nil); err != nil {
		return ioErrorf(err, "committing")
	}
	if err := b.Set(logSeqKey, binary.BigEndian.AppendUint64(nil, seq), nil); err != nil {
		return ioErrorf(err, "committing")
	}
	if err := b.Commit(pebble.Sync); err != nil {
		// A published entry is applied by the next catch-up.
		db.logBroken = err
		return ioErrorf(err, "committing")
	}
	if db.memSeq == db.logSeq {
		db.memSeq = seq
	}
	db.logSeq = seq
	if db.opts.Durability == DurabilityBucket && seq >= db.lastCheckpoint+checkpointEvery && !db.checkpointing {
		db.checkpointing = true
		db.background(func(ctx context.Context) {
			if err := db.checkpointNow(ctx); err != nil {
				db.log.Warn("storage: writing a checkpoint", "err", err)
			}
			db.logMu.Lock()
			db.checkpointing = false
			db.logMu.Unlock()
		})
	}
	if db.opts.Durability == DurabilityLocal {
		db.queued++
		select {
		case db.uploadKick <- struct{}{}:
		default:
		}
	}
	return nil
}

// logging tells whether commits go into the location's log: only a
// location other servers can reach (an S3 prefix) has one.
func (db *DB) logging() bool { return db.opts.Location != "" }

// ErrLogDiverged marks a location whose log holds, at a sequence number
// this data directory wrote, another writer's entry.
var ErrLogDiverged = errors.New("storage: another writer appended to this location's log")

// logUsable refuses commits once the log is in a state no commit may
// build on: an entry's outcome unknown (a failed put whose reply was
// lost, or a published entry not applied here), until a catch-up settles
// it; or another writer's entry where this data directory's should be.
func (db *DB) logUsable() error {
	if db.diverged != nil {
		return pgerror.Newf(pgerror.ReadOnlySQLTransaction, "cannot commit: %v", db.diverged).
			WithHint("Another server wrote to this storage location as if it were this data directory; restart the server to check which is which.")
	}
	if db.logBroken == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.catchUpLocked(ctx); err != nil {
		return err
	}
	db.logBroken = nil
	return nil
}

// publish puts entry seq in the location. A put that fails may still have
// landed: the entry is read back to tell, and while that cannot be told
// the log is marked broken and the commit's outcome is unknown.
func (db *DB) publish(seq uint64, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := db.store.PutIfAbsent(ctx, logKey(seq), data)
	if err == nil {
		return nil
	}
	got, gerr := db.store.Get(ctx, logKey(seq))
	switch {
	case gerr == nil && bytes.Equal(got, data):
		return nil // the put landed; its reply was lost
	case gerr == nil:
		return errLostRace
	case errors.Is(gerr, ErrNotFound) && !errors.Is(err, ErrExists):
		return ioErrorf(err, "writing the commit to %s", db.locationName())
	}
	db.logBroken = err
	return pgerror.Newf(pgerror.TransactionResolutionUnknown, "commit outcome unknown: writing it to %s failed: %v", db.locationName(), err).
		WithHint("The commit is visible if the write landed; the next commit finds out.")
}

func (db *DB) locationName() string {
	if db.opts.Location == "" {
		return "the data directory's objects"
	}
	return db.opts.Location
}

// loadLogState reads the data directory's log position at Open.
func (db *DB) loadLogState() error {
	v, closer, err := db.kv.Get(logSeqKey)
	switch {
	case err == nil:
		if len(v) != 8 {
			closer.Close()
			return corruptionf("%s: %d-byte value", logSeqKey, len(v))
		}
		db.logSeq = binary.BigEndian.Uint64(v)
		db.hasLog = true
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return ioErrorf(err, "reading %s", logSeqKey)
	}
	if v, closer, err := db.kv.Get(checkpointKey); err == nil {
		if len(v) == 8 {
			db.lastCheckpoint = binary.BigEndian.Uint64(v)
		}
		closer.Close()
	}
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: outPrefix, UpperBound: prefixEnd(outPrefix)})
	if err != nil {
		return ioErrorf(err, "reading the upload queue")
	}
	for it.First(); it.Valid(); it.Next() {
		db.queued++
	}
	return it.Close()
}

// startLog makes the log the data directory's, at Open, after the
// identity check: a data directory that has no log position yet (new,
// or written before the log existed) starts one, with a checkpoint of
// what it already holds as entry 0's state; one that has a position
// applies what the location holds beyond it.
func (db *DB) startLog(ctx context.Context) error {
	if err := db.loadLogState(); err != nil {
		return err
	}
	if !db.logging() {
		return nil
	}
	if err := db.loadNode(); err != nil {
		return err
	}
	if err := db.claimNode(ctx); err != nil {
		return err
	}
	if !db.hasLog {
		last, err := db.lastLogEntry(ctx)
		if err != nil {
			return err
		}
		if last > 0 || db.attaching {
			if err := db.attach(ctx); err != nil {
				return err
			}
		} else {
			if err := db.writeCheckpoint(ctx, db.kv, 0); err != nil {
				return err
			}
			b := db.kv.NewBatch()
			_ = b.Set(logSeqKey, binary.BigEndian.AppendUint64(nil, 0), nil)
			err := b.Commit(pebble.Sync)
			b.Close()
			if err != nil {
				return ioErrorf(err, "starting the log")
			}
		}
		db.hasLog = true
	}
	db.logMu.Lock()
	defer db.logMu.Unlock()
	if err := db.checkQueue(ctx); err != nil {
		return err
	}
	if db.queued == 0 {
		return db.catchUpLocked(ctx)
	}
	if db.opts.Durability == DurabilityBucket {
		// Entries published from now on must follow the queued ones.
		db.logMu.Unlock()
		err := db.uploadQueued()
		db.logMu.Lock()
		if err != nil {
			return fmt.Errorf("storage: %d commits of data directory %s are not in %s yet, and --durability bucket needs them there first: %w",
				db.queued, db.opts.Dir, db.locationName(), err)
		}
		return db.catchUpLocked(ctx)
	}
	return nil
}

// checkQueue makes sure the entries this data directory queued and the
// location's log agree where they overlap: the first queued entry may
// have been uploaded before a crash (then the location holds it, byte for
// byte), but another entry there means another writer used this
// location's log as if it were this data directory.
func (db *DB) checkQueue(ctx context.Context) error {
	if db.queued == 0 {
		return nil
	}
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: outPrefix, UpperBound: prefixEnd(outPrefix)})
	if err != nil {
		return ioErrorf(err, "reading the upload queue")
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		seq := binary.BigEndian.Uint64(it.Key()[len(outPrefix):])
		got, err := db.store.Get(ctx, logKey(seq))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return ioErrorf(err, "reading %s", logKey(seq))
		}
		if !bytes.Equal(got, it.Value()) {
			return fmt.Errorf("%w: entry %d of %s is not the one data directory %s committed; another server used this data directory's place in the log (a copy of the data directory?)",
				ErrForeignStorage, seq, db.locationName(), db.opts.Dir)
		}
	}
	return it.Error()
}

func (db *DB) firstQueued() (uint64, []byte, error) {
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: outPrefix, UpperBound: prefixEnd(outPrefix)})
	if err != nil {
		return 0, nil, ioErrorf(err, "reading the upload queue")
	}
	defer it.Close()
	if !it.First() {
		return 0, nil, it.Error()
	}
	k := it.Key()
	return binary.BigEndian.Uint64(k[len(outPrefix):]), append([]byte(nil), it.Value()...), nil
}

// lastLogEntry returns the sequence of the location's last log entry, 0
// when it has none.
func (db *DB) lastLogEntry(ctx context.Context) (uint64, error) {
	keys, err := db.store.List(ctx, logPrefix)
	if err != nil {
		return 0, ioErrorf(err, "listing %s", logPrefix)
	}
	var last uint64
	for _, k := range keys {
		if s, err := strconv.ParseUint(strings.TrimPrefix(k, logPrefix), 10, 64); err == nil && s > last {
			last = s
		}
	}
	return last, nil
}

// catchUpLocked applies the location's entries after db.logSeq. db.logMu
// must be held.
func (db *DB) catchUpLocked(ctx context.Context) error {
	applied := 0
	for {
		key := logKey(db.logSeq + 1)
		data, err := db.store.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return ioErrorf(err, "reading %s", key)
		}
		e, err := decodeEntry(key, data)
		if err != nil {
			return err
		}
		if e.seq != db.logSeq+1 {
			return corruptionf("log entry %s says it is entry %d", key, e.seq)
		}
		if err := db.applyEntry(e); err != nil {
			return err
		}
		applied++
	}
	if applied > 0 {
		db.log.Info("storage: applied the location's log", "entries", applied, "seq", db.logSeq)
	}
	return nil
}

// applyEntry applies an entry read from the location.
func (db *DB) applyEntry(e *logEntry) error {
	b := db.kv.NewBatch()
	defer b.Close()
	if err := applyRecords(b, e.recs); err != nil {
		return err
	}
	if err := b.Set(logSeqKey, binary.BigEndian.AppendUint64(nil, e.seq), nil); err != nil {
		return ioErrorf(err, "applying the log")
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return ioErrorf(err, "applying the log")
	}
	db.logSeq = e.seq
	return nil
}

// attach fills a new data directory from the location: the latest
// checkpoint, then every entry after it.
func (db *DB) attach(ctx context.Context) error {
	if !db.attaching && !db.opts.Attach {
		// (With --attach again, an attach cut short before the log
		// position was recorded starts over.)
		return fmt.Errorf("%w: storage %s holds a catalog; start with --attach to serve it from the new data directory %s",
			ErrForeignStorage, db.locationName(), db.opts.Dir)
	}
	seqs, err := db.checkpoints(ctx)
	if err != nil {
		return err
	}
	if len(seqs) == 0 {
		return corruptionf("storage %s has a log but no checkpoint to start it from", db.locationName())
	}
	cp := seqs[len(seqs)-1]
	parts, err := db.store.List(ctx, checkpointDir(cp))
	if err != nil {
		return ioErrorf(err, "listing checkpoint %d", cp)
	}
	for _, key := range parts {
		if strings.HasSuffix(key, "/done") {
			continue
		}
		data, err := db.store.Get(ctx, key)
		if err != nil {
			return ioErrorf(err, "reading %s", key)
		}
		e, err := decodeEntry(key, data)
		if err != nil {
			return err
		}
		b := db.kv.NewBatch()
		err = applyRecords(b, e.recs)
		if err == nil {
			err = b.Commit(pebble.NoSync)
		}
		b.Close()
		if err != nil {
			return ioErrorf(err, "loading checkpoint %d", cp)
		}
	}
	b := db.kv.NewBatch()
	_ = b.Set(logSeqKey, binary.BigEndian.AppendUint64(nil, cp), nil)
	_ = b.Set(checkpointKey, binary.BigEndian.AppendUint64(nil, cp), nil)
	err = b.Commit(pebble.Sync)
	b.Close()
	if err != nil {
		return ioErrorf(err, "loading checkpoint %d", cp)
	}
	db.logSeq, db.lastCheckpoint = cp, cp
	db.logMu.Lock()
	err = db.catchUpLocked(ctx)
	db.logMu.Unlock()
	if err == nil {
		db.log.Info("storage: attached the data directory to its storage location", "location", db.locationName(), "checkpoint", cp, "seq", db.logSeq)
	}
	return err
}

// checkpoints lists the complete checkpoints of the location, oldest
// first.
func (db *DB) checkpoints(ctx context.Context) ([]uint64, error) {
	keys, err := db.store.List(ctx, checkpointPrefix)
	if err != nil {
		return nil, ioErrorf(err, "listing %s", checkpointPrefix)
	}
	var seqs []uint64
	for _, k := range keys {
		rest, ok := strings.CutSuffix(strings.TrimPrefix(k, checkpointPrefix), "/done")
		if !ok {
			continue
		}
		if s, err := strconv.ParseUint(rest, 10, 64); err == nil {
			seqs = append(seqs, s)
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// writeCheckpoint writes the replicated keys of r, the state as of entry
// seq, to the location: parts of at most checkpointPart bytes, then the
// marker "done" that makes it complete.
func (db *DB) writeCheckpoint(ctx context.Context, r pebble.Reader, seq uint64) error {
	it, err := r.NewIter(&pebble.IterOptions{})
	if err != nil {
		return ioErrorf(err, "reading the catalog")
	}
	defer it.Close()
	dir := checkpointDir(seq)
	part := 0
	var recs []byte
	flush := func() error {
		e := logEntry{seq: seq, time: db.now().UnixNano(), node: db.node, recs: recs}
		key := dir + fmt.Sprintf("part-%06d", part)
		if err := db.store.Put(ctx, key, e.encode()); err != nil {
			return ioErrorf(err, "writing %s", key)
		}
		part++
		recs = recs[:0]
		return nil
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if !isReplicated(k) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return ioErrorf(err, "reading the catalog")
		}
		recs = append(recs, recSet)
		recs = binary.AppendUvarint(recs, uint64(len(k)))
		recs = append(recs, k...)
		recs = binary.AppendUvarint(recs, uint64(len(v)))
		recs = append(recs, v...)
		if len(recs) >= checkpointPart {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return ioErrorf(err, "reading the catalog")
	}
	if len(recs) > 0 || part == 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	if err := db.store.Put(ctx, dir+"done", []byte(strconv.Itoa(part))); err != nil {
		return ioErrorf(err, "writing %sdone", dir)
	}
	return nil
}

// uploadLoop uploads the queued entries in order (DurabilityLocal), and
// writes a checkpoint every checkpointEvery entries.
func (db *DB) uploadLoop() {
	defer close(db.uploadDone)
	if !db.logging() {
		return
	}
	backoff := time.Second
	for {
		err := db.uploadQueued()
		switch {
		case err == nil:
			backoff = time.Second
		case errors.Is(err, ErrLogDiverged):
			db.log.Error("storage: stopped uploading the log", "err", err)
			return
		default:
			db.log.Warn("storage: uploading the log", "err", err, "retry_in", backoff)
		}
		wait := time.Duration(0)
		if err != nil {
			wait = backoff
			backoff = min(2*backoff, time.Minute)
		}
		if wait == 0 {
			select {
			case <-db.uploadKick:
				continue
			case <-db.stop:
				return // Close makes a last pass
			}
		}
		select {
		case <-time.After(wait):
		case <-db.stop:
			return
		}
	}
}

// uploadQueued uploads every queued entry, oldest first.
func (db *DB) uploadQueued() error {
	ctx := context.Background()
	for {
		seq, data, err := db.firstQueued()
		if err != nil || data == nil {
			return err
		}
		if err := db.store.PutIfAbsent(ctx, logKey(seq), data); err != nil {
			if !errors.Is(err, ErrExists) {
				return ioErrorf(err, "uploading %s", logKey(seq))
			}
			got, gerr := db.store.Get(ctx, logKey(seq))
			if gerr != nil {
				return ioErrorf(gerr, "reading %s", logKey(seq))
			}
			if !bytes.Equal(got, data) {
				err := fmt.Errorf("%w: entry %d of %s", ErrLogDiverged, seq, db.locationName())
				db.logMu.Lock()
				db.diverged = err
				db.logMu.Unlock()
				return err
			}
		}
		// Unsynced: an entry uploaded again after a crash is found there,
		// byte for byte.
		if err := db.kv.Delete(outKey(seq), pebble.NoSync); err != nil {
			return ioErrorf(err, "uploading the log")
		}
		db.logMu.Lock()
		db.queued--
		db.logMu.Unlock()
		if seq >= db.lastCheckpoint+checkpointEvery {
			if err := db.checkpointNow(ctx); err != nil {
				db.log.Warn("storage: writing a checkpoint", "err", err)
			}
		}
	}
}

// checkpointNow writes a checkpoint of the state as of the last entry
// uploaded or published.
func (db *DB) checkpointNow(ctx context.Context) error {
	db.logMu.Lock()
	if db.queued > 0 && db.opts.Durability == DurabilityLocal {
		// The state must not run ahead of the location's log.
		db.logMu.Unlock()
		return nil
	}
	seq := db.logSeq
	snap := db.kv.NewSnapshot()
	db.logMu.Unlock()
	defer snap.Close()
	if err := db.writeCheckpoint(ctx, snap, seq); err != nil {
		return err
	}
	db.logMu.Lock()
	db.lastCheckpoint = max(db.lastCheckpoint, seq)
	db.logMu.Unlock()
	return db.kv.Set(checkpointKey, binary.BigEndian.AppendUint64(nil, seq), pebble.Sync)
}

// SyncLog waits until every commit acknowledged so far is in the storage
// location (DurabilityLocal uploads in the background).
func (db *DB) SyncLog(ctx context.Context) error {
	for {
		db.logMu.Lock()
		q, div := db.queued, db.diverged
		db.logMu.Unlock()
		if div != nil {
			return div
		}
		if q == 0 {
			return nil
		}
		select {
		case db.uploadKick <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// syncSet sets k to v as one commit.
func (db *DB) syncSet(k, v []byte) error {
	b := db.kv.NewBatch()
	defer b.Close()
	if err := b.Set(k, v, nil); err != nil {
		return err
	}
	return db.commitDDL(b)
}

// syncDelete deletes k as one commit.
func (db *DB) syncDelete(k []byte) error {
	b := db.kv.NewBatch()
	defer b.Close()
	if err := b.Delete(k, nil); err != nil {
		return err
	}
	return db.commitDDL(b)
}

// localNodeKey holds the random name this data directory writes log entries
// under.
var localNodeKey = []byte("l/node")

func (db *DB) loadNode() error {
	v, closer, err := db.kv.Get(localNodeKey)
	if err == nil {
		db.node = string(v)
		closer.Close()
		return nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return ioErrorf(err, "reading %s", localNodeKey)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	db.node = hex.EncodeToString(id[:])
	if err := db.kv.Set(localNodeKey, []byte(db.node), pebble.Sync); err != nil {
		return ioErrorf(err, "writing %s", localNodeKey)
	}
	return nil
}

// patchRemovals returns a copy of b whose records of fragments removed
// (t<id>x<fragment>) with an empty value carry the log entry seq of the
// commit instead, or nil when b has none: a removal's entry is known only
// as the commit is made, and horizons compare it with the entries other
// snapshots hold.
func (db *DB) patchRemovals(b *pebble.Batch, seq uint64) (*pebble.Batch, error) {
	isPlaceholder := func(kind pebble.InternalKeyKind, k, v []byte) bool {
		return kind == pebble.InternalKeyKindSet && len(v) == 0 && len(k) == idKeyLen && k[0] == 't' && k[9] == tagRemoved
	}
	found := false
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return nil, ioErrorf(err, "reading a batch")
		}
		if !ok {
			break
		}
		if isPlaceholder(kind, k, v) {
			found = true
			break
		}
	}
	if !found {
		return nil, nil
	}
	val := binary.AppendUvarint(nil, seq)
	nb := db.kv.NewBatch()
	r = b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			nb.Close()
			return nil, ioErrorf(err, "reading a batch")
		}
		if !ok {
			return nb, nil
		}
		switch {
		case isPlaceholder(kind, k, v):
			err = nb.Set(k, val, nil)
		case kind == pebble.InternalKeyKindSet:
			err = nb.Set(k, v, nil)
		case kind == pebble.InternalKeyKindRangeDelete:
			err = nb.DeleteRange(k, v, nil)
		default:
			err = nb.Delete(k, nil)
		}
		if err != nil {
			nb.Close()
			return nil, ioErrorf(err, "copying a batch")
		}
	}
}
