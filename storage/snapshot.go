package storage

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/deeplaked/deeplaked/pgerror"
)

// A sharedSnap is a snapshot several transactions read: the one that
// exported it and those that imported it. The last of them to end closes
// it. Its fields are guarded by DB.commitMu.
type sharedSnap struct {
	snap *pebble.Snapshot
	seq  uint64
	// logAt and began are the snapshot's Txn.logAt and Txn.began.
	logAt uint64
	began time.Time
	refs  int
	// epoch is set when the snapshot is an epoch's (Txn.ReadEpoch).
	epoch *epochSnap
}

// ExportSnapshot makes the txn's snapshot one that other transactions can
// read, as PostgreSQL's pg_export_snapshot() does, and returns its
// identifier. It can be imported (ImportSnapshot) while the txn is open;
// a transaction that imported it reads it to its own end. Sharded streams
// of one epoch that read one snapshot see one layout of the table.
func (txn *Txn) ExportSnapshot() (string, error) {
	if err := txn.check(); err != nil {
		return "", err
	}
	db := txn.db
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	if txn.shared == nil {
		txn.shared = &sharedSnap{snap: txn.snap, seq: txn.beginSeq, logAt: txn.logAt, began: txn.began, refs: 1}
	}
	db.exportSeq++
	id := fmt.Sprintf("%08X-%016X-1", db.exportSeq, txn.beginSeq)
	if db.exported == nil {
		db.exported = make(map[string]*sharedSnap)
	}
	db.exported[id] = txn.shared
	txn.exports = append(txn.exports, id)
	return id, nil
}

// ImportSnapshot makes the txn read the snapshot exported as id, as SET
// TRANSACTION SNAPSHOT does. It must come before the txn reads anything
// (25001), and the exporting transaction must still be open (22023).
func (txn *Txn) ImportSnapshot(id string) error {
	if txn.done {
		return pgerror.Newf(pgerror.InvalidTransactionState, "transaction is already finished")
	}
	if txn.snap != nil {
		return pgerror.New(pgerror.ActiveSQLTransaction, "SET TRANSACTION SNAPSHOT must be called before any query")
	}
	db := txn.db
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	s, ok := db.exported[id]
	if !ok {
		return pgerror.Newf(pgerror.InvalidParameterValue, "invalid snapshot identifier: \"%s\"", id)
	}
	txn.join(s)
	return nil
}

// join makes the txn read s. The caller holds commitMu.
func (txn *Txn) join(s *sharedSnap) {
	s.refs++
	txn.snap, txn.shared, txn.beginSeq, txn.logAt, txn.began = s.snap, s, s.seq, s.logAt, s.began
	txn.db.openTxns[txn] = s.seq
	// A dropped table whose objects wait for a transaction reading s
	// waits for this one as well: it reads the table from s too.
	for _, d := range txn.db.dropping {
		for w := range d.waits {
			if w.shared == s {
				d.waits[txn] = struct{}{}
				break
			}
		}
	}
}
