package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Each server running on a shared location (an S3 prefix) keeps a record
// of itself, deeplake/nodes/<node>, with a heartbeat it renews every
// NodeHeartbeat. The record tells two things the log alone cannot:
//
//   - a data directory copied while its server runs carries the same node
//     name as the original; the copy finds the original's heartbeat moving
//     and refuses to start (a server killed with SIGKILL stops moving, so
//     its own restart waits out at most three heartbeats);
//   - a server with DurabilityLocal needs the location to itself, since
//     its log entries reach the location late: it refuses to start beside
//     another live server, and others refuse to start beside it.
//
// A server that finds its record taken over by another start of its node
// stops committing.

const nodesPrefix = "deeplake/nodes/"

// DefaultNodeHeartbeat is Options.NodeHeartbeat's default.
const DefaultNodeHeartbeat = time.Second

// nodeRecord is the content of a node's record.
type nodeRecord struct {
	Node       string
	Boot       string // random, new at every start
	Dir        string
	Host       string
	PID        int
	Durability string
	Started    time.Time
	Heartbeat  time.Time
	Stopped    bool
	// Horizon is the oldest log entry a snapshot of the server may read
	// as of (minOpenLog): objects removed after it stay.
	Horizon uint64
}

func nodeKey(node string) string { return nodesPrefix + node }

func (db *DB) heartbeatEvery() time.Duration {
	if db.opts.NodeHeartbeat > 0 {
		return db.opts.NodeHeartbeat
	}
	return DefaultNodeHeartbeat
}

// shared tells whether the location may be shared with other servers.
func (db *DB) shared() bool { return db.opts.Location != "" }

func (db *DB) readNode(ctx context.Context, key string) (nodeRecord, bool, error) {
	var r nodeRecord
	data, err := db.store.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		return r, false, ioErrorf(err, "reading %s", key)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, false, corruptionf("%s: %v", key, err)
	}
	return r, true, nil
}

// live tells whether r's server is running, as far as its heartbeat
// says: one not renewed for three heartbeats is taken for dead (to start
// in its place, or beside it).
func (db *DB) live(r nodeRecord) bool {
	return !r.Stopped && time.Since(r.Heartbeat) < 3*db.heartbeatEvery()
}

// deleteGrace is how long after its last heartbeat a server's horizon
// and unfinished writes are still respected by the others' VACUUM: long
// past a killed server's end, so that a server paused for less (its
// machine suspended, swapping, or cut off from the storage) finds what
// it reads and writes still there. A server that was out of contact for
// half of it stops its transactions from before (lapsed).
func (db *DB) deleteGrace() time.Duration { return 120 * db.heartbeatEvery() }

// mayRead tells whether r's server may still read or write objects that
// only it knows of (its horizon, its fragments in flight).
func (db *DB) mayRead(r nodeRecord) bool {
	return !r.Stopped && time.Since(r.Heartbeat) < db.deleteGrace()
}

// lapsed tells whether this server was out of contact with the location
// (its heartbeat not renewed for half of deleteGrace) since began: a
// transaction or write begun before may have lost objects to another
// server's VACUUM, and must not commit.
func (db *DB) lapsed(began time.Time) bool {
	if !db.shared() {
		return false
	}
	last := time.Unix(0, db.heartbeatOK.Load())
	if time.Since(last) > db.deleteGrace()/2 {
		return true // out of contact right now
	}
	at := db.lapseAt.Load()
	return at != 0 && began.UnixNano() < at
}

// errLapsed is the error of a commit refused by lapsed.
func (db *DB) errLapsed() error {
	return pgerror.Newf(pgerror.SerializationFailure, "could not serialize access: this server was out of contact with storage %s for longer than %s", db.locationName(), db.deleteGrace()/2).
		WithHint("Another server may have vacuumed what this transaction wrote or read; retry it.")
}

// claimNode checks, before the data directory writes anything, that no
// other server runs as this data directory's node, and that the
// durabilities of the servers on the location can live together; then it
// writes the node's record.
func (db *DB) claimNode(ctx context.Context) error {
	if !db.shared() {
		return nil
	}
	var boot [8]byte
	_, _ = rand.Read(boot[:])
	db.boot = hex.EncodeToString(boot[:])
	every := db.heartbeatEvery()
	mine, ok, err := db.readNode(ctx, nodeKey(db.node))
	if err != nil {
		return err
	}
	if ok && !mine.Stopped {
		// Running, or killed: a running server renews its heartbeat.
		// Watch it for three heartbeats.
		deadline := time.Now().Add(3 * every)
		for db.live(mine) && time.Now().Before(deadline) {
			time.Sleep(every / 4)
			now, ok, err := db.readNode(ctx, nodeKey(db.node))
			if err != nil {
				return err
			}
			if !ok || now.Stopped {
				break
			}
			if !now.Heartbeat.Equal(mine.Heartbeat) || now.Boot != mine.Boot {
				return fmt.Errorf("%w: a server is running on storage %s as the data directory %s belongs to (node %s, data directory %s on host %s, pid %d, started %s): data directory %s is a copy of it, and two servers must never be one; stop the other server, or start this one with a new, empty data directory and --attach",
					ErrForeignStorage, db.locationName(), db.opts.Dir, db.node, now.Dir, now.Host, now.PID, now.Started.Format(time.RFC3339), db.opts.Dir)
			}
		}
	}
	keys, err := db.store.List(ctx, nodesPrefix)
	if err != nil {
		return ioErrorf(err, "listing %s", nodesPrefix)
	}
	for _, k := range keys {
		if k == nodeKey(db.node) {
			continue
		}
		r, ok, err := db.readNode(ctx, k)
		if err != nil || !ok || !db.live(r) {
			continue
		}
		if r.Durability != DurabilityLocal.String() && db.opts.Durability != DurabilityLocal {
			continue
		}
		// A server that was killed leaves a record that stops moving.
		if running, err := db.stillRunning(ctx, k, r); err != nil {
			return err
		} else if !running {
			continue
		}
		switch {
		case r.Durability == DurabilityLocal.String():
			return fmt.Errorf("%w: the server of data directory %s on host %s (pid %d) runs on storage %s with --durability local, which needs the location to itself; restart it with --durability bucket to share the location",
				ErrForeignStorage, r.Dir, r.Host, r.PID, db.locationName())
		case db.opts.Durability == DurabilityLocal:
			return fmt.Errorf("%w: the server of data directory %s on host %s (pid %d) runs on storage %s, and a server with --durability local needs the location to itself; start this one with --durability bucket",
				ErrForeignStorage, r.Dir, r.Host, r.PID, db.locationName())
		}
	}
	host, _ := os.Hostname()
	now := time.Now().UTC()
	db.nodeRec = nodeRecord{Node: db.node, Boot: db.boot, Dir: db.opts.Dir, Host: host, PID: os.Getpid(),
		Durability: db.opts.Durability.String(), Started: now, Heartbeat: now, Horizon: db.logSeq}
	if err := db.putNode(ctx); err != nil {
		return err
	}
	db.heartbeatOK.Store(time.Now().UnixNano())
	if db.opts.Durability != DurabilityLocal {
		return nil
	}
	// Two servers with local durability starting at once both passed the
	// check above; each sees the other's record now (S3 reads what was
	// written before), and both give way.
	keys, err = db.store.List(ctx, nodesPrefix)
	if err != nil {
		return ioErrorf(err, "listing %s", nodesPrefix)
	}
	for _, k := range keys {
		if k == nodeKey(db.node) {
			continue
		}
		if r, ok, err := db.readNode(ctx, k); err == nil && ok && db.live(r) {
			db.nodeRec.Stopped = true
			_ = db.putNode(ctx)
			return fmt.Errorf("%w: the server of data directory %s on host %s (pid %d) started on storage %s at the same time, and a server with --durability local needs the location to itself; start it again, or with --durability bucket",
				ErrForeignStorage, r.Dir, r.Host, r.PID, db.locationName())
		}
	}
	return nil
}

// stillRunning watches the record under key, which says its server is
// live, for up to three heartbeats: true as soon as the heartbeat moves,
// false if it goes stale or the server marks itself stopped.
func (db *DB) stillRunning(ctx context.Context, key string, r nodeRecord) (bool, error) {
	every := db.heartbeatEvery()
	for deadline := time.Now().Add(3 * every); time.Now().Before(deadline); {
		time.Sleep(every / 4)
		now, ok, err := db.readNode(ctx, key)
		if err != nil {
			return false, err
		}
		if !ok || now.Stopped {
			return false, nil
		}
		if !now.Heartbeat.Equal(r.Heartbeat) || now.Boot != r.Boot {
			return true, nil
		}
	}
	return false, nil
}

func (db *DB) putNode(ctx context.Context) error {
	data, err := json.Marshal(&db.nodeRec)
	if err != nil {
		return assertf("encoding the node record: %v", err)
	}
	if err := db.store.Put(ctx, nodeKey(db.node), data); err != nil {
		return ioErrorf(err, "writing %s", nodeKey(db.node))
	}
	return nil
}

// heartbeatLoop renews the node's record; it stops the commits of a
// server whose record another start of its node took over.
func (db *DB) heartbeatLoop() {
	defer close(db.heartbeatDone)
	if !db.shared() {
		return
	}
	t := time.NewTicker(db.heartbeatEvery())
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			db.nodeRec.Stopped = true
			db.nodeRec.Heartbeat = time.Now().UTC()
			if err := db.putNode(ctx); err != nil {
				db.log.Warn("storage: marking the node stopped", "err", err)
			}
			cancel()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*db.heartbeatEvery())
		cur, ok, err := db.readNode(ctx, nodeKey(db.node))
		if err == nil && ok && cur.Boot != db.boot {
			err := fmt.Errorf("%w: another server started as this data directory's node %s (data directory %s on host %s, pid %d)", ErrLogDiverged, db.node, cur.Dir, cur.Host, cur.PID)
			db.log.Error("storage: stopped committing", "err", err)
			db.logMu.Lock()
			db.diverged = err
			db.logMu.Unlock()
			cancel()
			return
		}
		db.nodeRec.Heartbeat = time.Now().UTC()
		db.nodeRec.Horizon = db.minOpenLog()
		if err := db.putNode(ctx); err != nil {
			if !strings.Contains(err.Error(), "context") {
				db.log.Warn("storage: renewing the node's heartbeat", "err", err)
			}
		} else {
			now := time.Now()
			if prev := time.Unix(0, db.heartbeatOK.Load()); now.Sub(prev) > db.deleteGrace()/2 {
				db.log.Warn("storage: out of contact with the storage location; transactions begun before cannot commit", "for", now.Sub(prev))
				db.lapseAt.Store(now.UnixNano())
			}
			db.heartbeatOK.Store(now.UnixNano())
		}
		cancel()
	}
}

// minOpenLog returns the oldest log entry an open snapshot holds the
// state as of, or the last applied when none is open.
func (db *DB) minOpenLog() uint64 {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	return db.minOpenLogLocked()
}

// minOpenLogLocked is minOpenLog for a caller holding db.commitMu.
func (db *DB) minOpenLogLocked() uint64 {
	m := db.LogSeq()
	for txn := range db.openTxns {
		m = min(m, txn.logAt)
	}
	return m
}

// othersHorizon returns the oldest log entry a snapshot of another live
// server of the location may read as of (the largest value when there is
// none), and whether no other server is live.
func (db *DB) othersHorizon(ctx context.Context) (uint64, bool, error) {
	if !db.shared() {
		return ^uint64(0), true, nil
	}
	keys, err := db.store.List(ctx, nodesPrefix)
	if err != nil {
		return 0, false, ioErrorf(err, "listing %s", nodesPrefix)
	}
	h, alone := ^uint64(0), true
	for _, k := range keys {
		if k == nodeKey(db.node) {
			continue
		}
		r, ok, err := db.readNode(ctx, k)
		if err != nil {
			return 0, false, err
		}
		if ok && db.mayRead(r) {
			h, alone = min(h, r.Horizon), false
		}
	}
	return h, alone, nil
}
