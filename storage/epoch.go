package storage

import (
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
)

// DefaultEpochLinger is Options.EpochLinger's default.
const DefaultEpochLinger = 2 * time.Minute

// MaxEpochKey is the longest epoch key ReadEpoch takes, in bytes.
const MaxEpochKey = 256

// MaxEpochs bounds the epochs a DB holds at once: each pins a snapshot
// (and the old versions it reads) until it lapses.
const MaxEpochs = 4096

// An epochSnap is a snapshot named by a key that statements of one
// training epoch share (COPY ... WITH (EPOCH 'key')): the shards of an
// epoch, run by processes that cannot hand each other a snapshot
// identifier, read one view of the database by naming the same key. The
// DB holds it through holder, a transaction that reads nothing, and lets
// it go once no statement has read it for the linger time. Its fields are
// guarded by DB.commitMu.
type epochSnap struct {
	key    string
	holder *Txn
	timer  *time.Timer
	// idleSince is when the last reader ended (zero while one reads).
	idleSince time.Time
}

// ReadEpoch makes the txn read the snapshot of the epoch named key: the
// first transaction to name a key takes a new snapshot and registers it;
// the others, until the key lapses, read that one. A key lapses when no
// transaction has read its snapshot for Options.EpochLinger (counted from
// the end of the last one), or when the DB closes. Like ImportSnapshot it
// must come before the txn reads anything (25001).
func (txn *Txn) ReadEpoch(key string) error {
	if txn.done {
		return pgerror.Newf(pgerror.InvalidTransactionState, "transaction is already finished")
	}
	if txn.snap != nil {
		return pgerror.New(pgerror.ActiveSQLTransaction, "EPOCH must come before any query of the transaction").
			WithHint("Run the COPY as the first statement of its transaction.")
	}
	if key == "" || len(key) > MaxEpochKey {
		return pgerror.Newf(pgerror.InvalidParameterValue, "EPOCH key must hold 1 to %d bytes", MaxEpochKey)
	}
	db := txn.db
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	if db.closed.Load() {
		return pgerror.New(pgerror.AdminShutdown, "the database is closing")
	}
	e, ok := db.epochs[key]
	if !ok {
		if len(db.epochs) >= MaxEpochs {
			return pgerror.Newf(pgerror.ConfigurationLimitExceeded, "too many epochs held (%d)", MaxEpochs).
				WithHint("An epoch's snapshot is kept until no statement has read it for the linger time; reuse keys within a run's epoch, not across statements.")
		}
		logAt, began := db.LogSeq(), time.Now()
		holder := &Txn{db: db, snap: db.kv.NewSnapshot(), beginSeq: db.commitSeq, logAt: logAt, began: began}
		holder.shared = &sharedSnap{snap: holder.snap, seq: holder.beginSeq, logAt: logAt, began: began, refs: 1}
		db.openTxns[holder] = holder.beginSeq
		e = &epochSnap{key: key, holder: holder}
		holder.shared.epoch = e
		e.timer = time.AfterFunc(db.epochLinger, func() { db.lapseEpoch(e) })
		if db.epochs == nil {
			db.epochs = make(map[string]*epochSnap)
		}
		db.epochs[key] = e
	}
	e.idleSince = time.Time{}
	txn.join(e.holder.shared)
	return nil
}

// epochReleased is called, under commitMu, when a transaction that read
// s has ended; once only the holder is left, the linger time starts.
func (db *DB) epochReleased(s *sharedSnap) {
	if e := s.epoch; e != nil && s.refs == 1 && db.epochs[e.key] == e {
		e.idleSince = time.Now()
		e.timer.Reset(db.epochLinger)
	}
}

// lapseEpoch drops e's snapshot if no transaction has read it for the
// linger time; a reader that came and went since the timer was set moved
// the time on.
func (db *DB) lapseEpoch(e *epochSnap) {
	db.commitMu.Lock()
	if db.epochs[e.key] != e || e.holder.shared.refs > 1 || db.closed.Load() {
		db.commitMu.Unlock()
		return
	}
	if left := db.epochLinger - time.Since(e.idleSince); left > 0 {
		e.timer.Reset(left)
		db.commitMu.Unlock()
		return
	}
	delete(db.epochs, e.key)
	db.lapsing.Add(1) // closeEpochs waits for the release
	db.commitMu.Unlock()
	e.holder.release()
	db.lapsing.Done()
}

// closeEpochs drops every epoch's snapshot (DB.Close), and waits for the
// ones lapsing meanwhile.
func (db *DB) closeEpochs() {
	db.commitMu.Lock()
	held := make([]*epochSnap, 0, len(db.epochs))
	for _, e := range db.epochs {
		e.timer.Stop()
		held = append(held, e)
	}
	db.epochs = nil
	db.commitMu.Unlock()
	for _, e := range held {
		e.holder.release()
	}
	db.lapsing.Wait()
}
