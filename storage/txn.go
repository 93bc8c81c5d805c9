package storage

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// spillBytes is how much a transaction buffers in memory per table before
// its inserted rows go into a fragment written straight to the object
// store; below it, the rows are committed into Pebble as buffered rows.
const spillBytes = 4 << 20

// Txn is a transaction. It reads one snapshot, taken at its first
// operation, for its whole life (its own writes overlaid), and keeps its
// writes to itself until Commit, which assigns each written table its next
// version and makes everything durable in one synced Pebble batch. Large
// inserts are written as fragments to the object store while the
// transaction runs, so its memory stays bounded. A Txn is used by one
// goroutine at a time.
type Txn struct {
	db       *DB
	snap     *pebble.Snapshot
	beginSeq uint64
	// logAt is the last log entry applied before the snapshot was taken:
	// the snapshot holds at least the state as of it (horizons); began
	// is when.
	logAt uint64
	began time.Time
	// shared is set when snap is read by other transactions too (it was
	// exported or imported); exports are the identifiers this txn gave it.
	shared  *sharedSnap
	exports []string
	tables  map[uint64]*txnTable
	// pk holds the primary key entries this txn wrote, by full key.
	pk pkSet
	// pkKeys and pkProbes hold the keys of an insert and those to look
	// for among the committed ones; pkUpper bounds the look.
	pkKeys   []byte
	pkProbes []pkProbe
	pkUpper  []byte
	// onAbort runs when the txn ends without committing (OnAbort).
	onAbort []func()
	// checkedAt is the commit sequence seen before the first primary key
	// check; if no commit happened since, Commit skips the re-check.
	checkedAt uint64
	checked   bool
	done      bool

	keyBuf, rowBuf []byte
	// ids holds the row ids of an insert.
	ids []uint64

	// fragMu guards frags: the live fragments of each table in the txn's
	// snapshot, listed once (a statement's scans, searches and fetches
	// each need them, from several goroutines).
	fragMu sync.Mutex
	frags  map[uint64][]*fragment
}

// liveFragments returns t's live fragments in the txn's snapshot; the
// slice is shared and must not be modified.
func (txn *Txn) liveFragments(t *TableDesc) ([]*fragment, error) {
	txn.fragMu.Lock()
	defer txn.fragMu.Unlock()
	if f, ok := txn.frags[t.ID]; ok {
		return f, nil
	}
	f, err := txn.db.liveFragments(txn.snap, t)
	if err != nil {
		return nil, err
	}
	if txn.frags == nil {
		txn.frags = make(map[uint64][]*fragment)
	}
	txn.frags[t.ID] = slices.Clip(f)
	return f, nil
}

// txnTable holds a txn's writes to one table.
type txnTable struct {
	t *TableDesc
	// pending holds inserted rows not yet in w, with their row ids.
	pending      *types.Batch
	pendingIDs   []uint64
	pendingBytes int64
	w            *fragWriter
	// own holds the row id ranges this txn inserted.
	own []idRange
	// deleted holds the ids of committed rows this txn deleted; ownDel
	// those of its own inserted rows.
	deleted map[uint64]struct{}
	ownDel  map[uint64]struct{}
	// inserted counts the txn's inserted rows.
	inserted int64
}

type idRange struct{ lo, hi uint64 } // inclusive

type pkEntry struct {
	table   *TableDesc
	row     uint64
	present bool
}

// Begin starts a transaction.
func (db *DB) Begin() *Txn {
	return &Txn{db: db}
}

func (txn *Txn) check() error {
	if txn.done {
		return pgerror.Newf(pgerror.InvalidTransactionState, "transaction is already finished")
	}
	if txn.snap == nil {
		txn.db.commitMu.Lock()
		txn.logAt, txn.began = txn.db.LogSeq(), time.Now()
		txn.snap = txn.db.kv.NewSnapshot()
		txn.beginSeq = txn.db.commitSeq
		txn.db.openTxns[txn] = txn.beginSeq
		txn.db.commitMu.Unlock()
	}
	return nil
}

// release drops the txn's snapshot and its claim on old versions.
func (txn *Txn) release() {
	txn.done = true
	if txn.snap != nil {
		db := txn.db
		db.commitMu.Lock()
		delete(db.openTxns, txn)
		db.txnEnded(txn)
		for _, id := range txn.exports {
			delete(db.exported, id)
		}
		last := true
		if s := txn.shared; s != nil {
			s.refs--
			last = s.refs == 0
			db.epochReleased(s)
		}
		db.commitMu.Unlock()
		if last {
			_ = txn.snap.Close()
		}
		txn.snap = nil
	}
}

func (txn *Txn) table(t *TableDesc) *txnTable {
	if txn.tables == nil {
		txn.tables = make(map[uint64]*txnTable)
	}
	tt, ok := txn.tables[t.ID]
	if !ok {
		tt = &txnTable{t: t, deleted: make(map[uint64]struct{}), ownDel: make(map[uint64]struct{})}
		txn.tables[t.ID] = tt
	}
	return tt
}

func (tt *txnTable) owns(id uint64) bool {
	i := sort.Search(len(tt.own), func(i int) bool { return tt.own[i].hi >= id })
	return i < len(tt.own) && tt.own[i].lo <= id
}

func checkLayout(t *TableDesc, rows *types.Batch) error {
	if len(rows.Cols) != len(t.Columns) {
		return assertf("insert into %q: %d columns, table has %d", t.Name, len(rows.Cols), len(t.Columns))
	}
	n := rows.Len()
	for c, v := range rows.Cols {
		if v.Type.Phys() != t.Columns[c].Type.Phys() || v.Len() != n {
			return assertf("insert into %q: column %d is %s with %d rows, want %s with %d", t.Name, c, v.Type, v.Len(), t.Columns[c].Type, n)
		}
	}
	return nil
}

// Insert adds rows (one Vec per table column, in column order) to table t.
// The caller has applied defaults, coercions and NOT NULL checks. A
// primary key equal to a committed row's or to one inserted earlier in
// this txn is a 23505 error.
func (txn *Txn) Insert(t *TableDesc, rows *types.Batch) error {
	if err := txn.checkInsert(t, rows); err != nil {
		return err
	}
	n := rows.Len()
	if n == 0 {
		return nil
	}
	first, err := txn.db.alloc(rowIDCounter, uint64(n))
	if err != nil {
		return err
	}
	return txn.insert(t, rows, func(i int) uint64 { return first + uint64(i) })
}

// insertKeeping is Insert of rows that keep the ids they have in another
// branch (a merge copies them so): ids ascending, above every id this txn
// inserted into t so far.
func (txn *Txn) insertKeeping(t *TableDesc, rows *types.Batch, ids []uint64) error {
	if err := txn.checkInsert(t, rows); err != nil {
		return err
	}
	if len(ids) != rows.Len() || !slices.IsSorted(ids) {
		return assertf("insert into %q: %d rows, %d ids, sorted %v", t.Name, rows.Len(), len(ids), slices.IsSorted(ids))
	}
	if len(ids) == 0 {
		return nil
	}
	if tt := txn.table(t); len(tt.own) > 0 && tt.own[len(tt.own)-1].hi >= ids[0] {
		return assertf("insert into %q: kept id %d below the txn's own", t.Name, ids[0])
	}
	return txn.insert(t, rows, func(i int) uint64 { return ids[i] })
}

// checkInsert returns the error of inserting rows into t, if any.
func (txn *Txn) checkInsert(t *TableDesc, rows *types.Batch) error {
	if err := txn.check(); err != nil {
		return err
	}
	if err := writable(t); err != nil {
		return err
	}
	return checkLayout(t, rows)
}

// insert adds rows, row i with id id(i) (ascending).
func (txn *Txn) insert(t *TableDesc, rows *types.Batch, id func(int) uint64) error {
	n := rows.Len()
	tt := txn.table(t)
	if len(t.PrimaryKey) > 0 {
		if err := txn.addKeys(t, tt, rows, id); err != nil {
			return err
		}
	}
	for i := range n {
		rid := id(i)
		if k := len(tt.own); k > 0 && tt.own[k-1].hi+1 == rid {
			tt.own[k-1].hi++
		} else {
			tt.own = append(tt.own, idRange{rid, rid})
		}
	}
	tt.inserted += int64(n)
	if tt.w != nil && len(tt.pendingIDs) == 0 {
		// Past the first spill the rows go straight into the fragment,
		// not through pending (one copy of them fewer).
		txn.ids = txn.ids[:0]
		for i := range n {
			txn.ids = append(txn.ids, id(i))
		}
		return tt.w.add(rows, txn.ids, nil)
	}
	if tt.pending == nil {
		tt.pending = types.NewBatch(t.ColumnTypes(), n)
	}
	for c, v := range rows.Cols {
		appendRange(tt.pending.Cols[c], v, 0, n)
	}
	for i := range n {
		tt.pendingIDs = append(tt.pendingIDs, id(i))
	}
	tt.pending.SetLen(len(tt.pendingIDs))
	for c, v := range rows.Cols {
		tt.pendingBytes += chunkRawSize(t.Columns[c].Type, v, 0, n)
	}
	if tt.pendingBytes >= spillBytes {
		return txn.spill(tt)
	}
	return nil
}

// spill moves tt's pending rows into its fragment writer.
func (txn *Txn) spill(tt *txnTable) error {
	if len(tt.pendingIDs) == 0 {
		return nil
	}
	if tt.w == nil {
		w, err := txn.db.newFragWriter(context.Background(), tt.t, false)
		if err != nil {
			return err
		}
		tt.w = w
	}
	if err := tt.w.add(tt.pending, tt.pendingIDs, nil); err != nil {
		return err
	}
	tt.pending.Reset()
	tt.pendingIDs = tt.pendingIDs[:0]
	tt.pendingBytes = 0
	return nil
}

// uniqueViolation formats PostgreSQL's 23505 error for row i of rows.
func uniqueViolation(t *TableDesc, rows *types.Batch, i int) error {
	return pgerror.Newf(pgerror.UniqueViolation, "duplicate key value violates unique constraint %q", t.Name+"_pkey").
		WithDetail("Key %s already exists.", keyText(t, rows, i))
}

// keyText renders the primary key of row i of rows as PostgreSQL's key
// details do: (a, b)=(1, 2).
func keyText(t *TableDesc, rows *types.Batch, i int) string {
	var names, vals []byte
	for j, c := range t.PrimaryKey {
		if j > 0 {
			names = append(names, ", "...)
			vals = append(vals, ", "...)
		}
		names = append(names, t.Columns[c].Name...)
		if rows.Cols[c].Nulls[i] {
			vals = append(vals, "null"...)
		} else {
			vals = appendKeyText(vals, rows.Cols[c], i)
		}
	}
	return "(" + string(names) + ")=(" + string(vals) + ")"
}

// Delete removes the rows with the given ids from table t. For a table
// with a primary key it reads the rows to learn their keys; DeleteRows
// avoids that when the caller has them.
func (txn *Txn) Delete(t *TableDesc, rowIDs []uint64) error {
	if len(t.PrimaryKey) == 0 || len(rowIDs) == 0 {
		return txn.DeleteRows(t, rowIDs, nil)
	}
	if err := txn.check(); err != nil {
		return err
	}
	want := make(map[uint64]int, len(rowIDs))
	for _, id := range rowIDs {
		want[id] = -1
	}
	rows := types.NewBatch(t.ColumnTypes(), len(rowIDs))
	ids := make([]uint64, 0, len(rowIDs))
	sc, err := txn.Scan(t, allColumns(len(t.Columns)))
	if err != nil {
		return err
	}
	defer sc.Close()
	for {
		b, bids, err := sc.Next()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		for i, id := range bids {
			if _, ok := want[id]; ok {
				for c := range b.Cols {
					rows.Cols[c].AppendFrom(b.Cols[c], i)
				}
				ids = append(ids, id)
			}
		}
	}
	rows.SetLen(len(ids))
	return txn.DeleteRows(t, ids, rows)
}

// DeleteRows removes the rows with the given ids from table t; rows holds
// their values (row i has id rowIDs[i]), needed when t has a primary key
// and otherwise ignored. Deleting a committed row writes a deletion marker
// at commit; a row deleted meanwhile by another commit makes Commit fail
// with 40001. Ids already deleted by this txn are ignored.
func (txn *Txn) DeleteRows(t *TableDesc, rowIDs []uint64, rows *types.Batch) error {
	if err := txn.check(); err != nil {
		return err
	}
	if err := writable(t); err != nil {
		return err
	}
	if len(rowIDs) == 0 {
		return nil
	}
	tt := txn.table(t)
	if len(t.PrimaryKey) > 0 && (rows == nil || rows.Len() != len(rowIDs)) {
		return assertf("delete from %q: primary key table needs the deleted rows", t.Name)
	}
	for i, id := range rowIDs {
		if tt.owns(id) {
			if _, ok := tt.ownDel[id]; ok {
				continue
			}
			tt.ownDel[id] = struct{}{}
		} else {
			if _, ok := tt.deleted[id]; ok {
				continue
			}
			tt.deleted[id] = struct{}{}
		}
		if len(t.PrimaryKey) > 0 {
			txn.keyBuf = appendPKKey(txn.keyBuf[:0], t, rows, i)
			txn.pk.put(t, txn.keyBuf, 0, false)
		}
	}
	return nil
}

// Writable returns the 25006 error of a write to a version of a table
// (a descriptor with AsOf: "t@tag"), nil for a table or branch.
func Writable(t *TableDesc) error { return writable(t) }

// writable returns the 25006 error of a write to a version of a table.
func writable(t *TableDesc) error {
	if t.AsOf == 0 {
		return nil
	}
	return pgerror.Newf(pgerror.ReadOnlySQLTransaction, "cannot write to version %d of table %q", t.AsOf, t.Name).
		WithDetail("A commit or a tag names a version, which never changes; a branch can be written.")
}

func allColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// Commit makes the txn's writes durable and visible: each written table
// gets its next version. A committed row this txn deleted that another
// commit deleted first fails the commit with 40001; a primary key another
// commit took first fails it with 23505. After Commit, the txn is finished
// whatever the outcome.
func (txn *Txn) Commit() (err error) {
	if txn.done {
		return txn.check()
	}
	defer func() {
		if err != nil {
			txn.aborted()
		}
	}()
	defer txn.release()
	var writers []*fragWriter
	defer func() {
		for _, w := range writers {
			w.done()
		}
	}()
	frags := make(map[uint64]*fragment)
	for id, tt := range txn.tables {
		if tt.w == nil {
			continue
		}
		writers = append(writers, tt.w)
		if err := txn.spill(tt); err != nil {
			tt.w.abort()
			return err
		}
		f, err := tt.w.finish()
		if err != nil {
			tt.w.abort()
			return err
		}
		frags[id] = f
	}
	db := txn.db
	for attempt := 0; ; attempt++ {
		db.commitMu.Lock()
		err = txn.commitLocked(frags)
		db.commitMu.Unlock()
		if !errors.Is(err, errRetry) {
			break
		}
		// Another server committed first: build the commit again on
		// the state with its commits, whose deletion markers and
		// primary keys the checks then see.
		if attempt == maxCommitRetries {
			err = retryExhausted()
			break
		}
		if err = db.reloadMemory(); err != nil {
			break
		}
	}
	if err != nil {
		for _, tt := range txn.tables {
			if tt.w != nil {
				tt.w.abort()
			}
		}
		return err
	}
	db.catMu.RLock()
	for id, tt := range txn.tables {
		if ts, ok := db.byID[id]; ok && tt.w == nil {
			ts.pending.Add(tt.inserted)
		}
	}
	db.catMu.RUnlock()
	db.maybeKick()
	return nil
}

func (txn *Txn) commitLocked(frags map[uint64]*fragment) error {
	db := txn.db
	if len(txn.tables) > 0 && db.lapsed(txn.began) {
		return db.errLapsed()
	}
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	wrote := false
	for id, tt := range txn.tables {
		// NB: a table dropped and created again has a new id; its
		// descriptor may have been replaced since (CREATE INDEX).
		if _, ok := db.byID[id]; !ok {
			return undefinedTable(tt.t.Name)
		}
		if tt.inserted > 0 || len(tt.deleted) > 0 {
			wrote = true
		}
		// First deleter wins: a marker committed since our snapshot
		// means another txn deleted (or updated) the row.
		for rid := range tt.deleted {
			key := appendIDKey(txn.keyBuf[:0], id, tagDelete, rid)
			_, closer, err := db.kv.Get(key)
			if err == nil {
				closer.Close()
				return pgerror.New(pgerror.SerializationFailure, "could not serialize access due to concurrent update").
					WithDetail("A row of table %q was deleted or updated by a transaction that committed after this one started.", tt.t.Name)
			}
			if !errors.Is(err, pebble.ErrNotFound) {
				return ioErrorf(err, "checking row %d of %q", rid, tt.t.Name)
			}
		}
	}
	if !wrote {
		return nil
	}
	if txn.checked && db.pkSeq.Load() != txn.checkedAt {
		err := txn.pk.each(func(key []byte, e pkEntry) error {
			if !e.present {
				return nil
			}
			row, found, err := db.viewPK(db.kv, e.table, key)
			if err != nil {
				return err
			}
			tt := txn.tables[e.table.ID]
			if _, gone := tt.deleted[row]; found && row != e.row && !gone {
				return txn.conflict(e)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// NB: a load's batch holds millions of key entries; sized at once,
	// it is not copied as it grows.
	b := db.kv.NewBatchWithSize(txn.pk.keyBytes + txn.pk.len()*(pkPrefixLen+16) + 1<<16)
	defer b.Close()
	heads := make(map[uint64]uint64, len(txn.tables))
	for id, tt := range txn.tables {
		if tt.inserted == 0 && len(tt.deleted) == 0 {
			continue
		}
		ts := db.byID[id]
		v := ts.head + 1
		rec := versionRecord{Parent: ts.head, Time: db.now().UnixNano(), Op: opWrite, Added: tt.inserted - int64(len(tt.ownDel)), Deleted: int64(len(tt.deleted))}
		if f := frags[id]; f != nil {
			var err error
			if v, err = db.putManifest(ts, v, &rec, []*fragment{f}, nil); err != nil {
				return err
			}
			f.Xmin = v
			txn.keyBuf = appendIDKey(txn.keyBuf[:0], id, tagFragment, f.ID)
			if err := b.Set(txn.keyBuf, f.appendBinary(nil), nil); err != nil {
				return ioErrorf(err, "committing")
			}
		}
		if err := txn.writeRows(b, tt, v); err != nil {
			return err
		}
		txn.keyBuf = appendIDKey(txn.keyBuf[:0], id, tagVersion, v)
		if err := b.Set(txn.keyBuf, rec.appendBinary(nil), nil); err != nil {
			return ioErrorf(err, "committing")
		}
		heads[id] = v
	}
	var idBuf [8]byte
	err := txn.pk.each(func(key []byte, e pkEntry) error {
		var err error
		if e.present {
			binary.BigEndian.PutUint64(idBuf[:], e.row)
			err = b.Set(key, idBuf[:], nil)
		} else if e.table.Branch != "" {
			// A branch's tombstone: the key is not looked for in its base.
			err = b.Set(key, nil, nil)
		} else {
			err = b.Delete(key, nil)
		}
		if err != nil {
			return ioErrorf(err, "committing")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := db.commitBatch(b); err != nil {
		return ioErrorf(err, "committing")
	}
	db.commitSeq++
	if txn.pk.len() > 0 {
		db.pkSeq.Add(1)
	}
	for id, v := range heads {
		db.byID[id].setHead(v, db.commitSeq, db.minOpenSeq())
	}
	return nil
}

// writeRows adds tt's pending rows (as buffered rows committed by version
// v) and its deletion markers to b.
func (txn *Txn) writeRows(b *pebble.Batch, tt *txnTable, v uint64) error {
	id := tt.t.ID
	// Own rows deleted before they left pending are not written at all
	// (tt stays as it is: a commit may be built again).
	var unwritten map[uint64]bool
	for i, rid := range tt.pendingIDs {
		if _, gone := tt.ownDel[rid]; gone {
			if unwritten == nil {
				unwritten = make(map[uint64]bool)
			}
			unwritten[rid] = true
			continue
		}
		txn.keyBuf = appendIDKey(txn.keyBuf[:0], id, tagRow, rid)
		txn.rowBuf = binary.AppendUvarint(txn.rowBuf[:0], v)
		txn.rowBuf = types.AppendRow(txn.rowBuf, tt.pending, i)
		if err := b.Set(txn.keyBuf, txn.rowBuf, nil); err != nil {
			return ioErrorf(err, "committing")
		}
	}
	// Own rows deleted after they went into the fragment, and committed
	// rows: a marker with the deleting version.
	var vb [binary.MaxVarintLen64]byte
	val := vb[:binary.PutUvarint(vb[:], v)]
	for _, m := range []map[uint64]struct{}{tt.deleted, tt.ownDel} {
		for rid := range m {
			if unwritten[rid] {
				continue
			}
			txn.keyBuf = appendIDKey(txn.keyBuf[:0], id, tagDelete, rid)
			if err := b.Set(txn.keyBuf, val, nil); err != nil {
				return ioErrorf(err, "committing")
			}
		}
	}
	return nil
}

// conflict builds the 23505 error for an entry that another txn committed
// first, reading the key values back from this txn's own rows.
func (txn *Txn) conflict(e pkEntry) error {
	tt := txn.tables[e.table.ID]
	if i := sort.Search(len(tt.pendingIDs), func(i int) bool { return tt.pendingIDs[i] >= e.row }); i < len(tt.pendingIDs) && tt.pendingIDs[i] == e.row {
		return uniqueViolation(e.table, tt.pending, i)
	}
	return pgerror.Newf(pgerror.UniqueViolation, "duplicate key value violates unique constraint %q", e.table.Name+"_pkey")
}

// Rollback discards the txn's writes. It is a no-op after Commit.
func (txn *Txn) Rollback() {
	if txn.done {
		return
	}
	for _, tt := range txn.tables {
		if tt.w != nil {
			tt.w.abort()
		}
	}
	txn.release()
	txn.aborted()
}

// OnAbort registers fn to run, after the txn's end, if it ends without
// committing: rolled back, or a Commit that fails. Statements whose side
// effects are outside the txn (CREATE TABLE ... AS makes its table at
// once) undo them there.
func (txn *Txn) OnAbort(fn func()) { txn.onAbort = append(txn.onAbort, fn) }

func (txn *Txn) aborted() {
	fns := txn.onAbort
	txn.onAbort = nil
	for _, fn := range fns {
		fn()
	}
}

// appendKeyText appends value i of v as PostgreSQL prints it in a key
// detail message.
func appendKeyText(dst []byte, v *types.Vec, i int) []byte {
	if v.Type.IsDateTime() {
		return types.AppendText(dst, v, i)
	}
	switch v.Type.Phys() {
	case types.PhysBool:
		if v.Bools[i] {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case types.PhysInt:
		return strconv.AppendInt(dst, v.Ints[i], 10)
	case types.PhysFloat:
		f := v.Floats[i]
		switch {
		case math.IsNaN(f):
			return append(dst, "NaN"...)
		case math.IsInf(f, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(f, -1):
			return append(dst, "-Infinity"...)
		}
		bits := 64
		if v.Type.Kind == types.Float4 {
			bits = 32
		}
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	}
	b := v.Bytes.Get(i)
	if v.Type.Kind == types.Bytea {
		dst = append(dst, `\x`...)
		return hex.AppendEncode(dst, b)
	}
	return append(dst, b...)
}
