package storage

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Txn is a write transaction. Its writes go into a Pebble indexed batch, so
// its own scans see them, and Commit applies them atomically with a synced
// write. A Txn is used by one goroutine at a time.
type Txn struct {
	db *DB
	b  *pebble.Batch
	// pk holds the primary key entries this txn wrote, by full key.
	pk map[string]pkEntry
	// deleted holds the row ids this txn deleted.
	deleted map[uint64]struct{}
	// inserted counts inserted rows per table.
	inserted map[uint64]int64
	// touched holds the tables this txn wrote.
	touched map[uint64]*TableDesc
	// checkedAt is the commit sequence seen before the first primary key
	// check; if no commit happened since, Commit skips the re-check.
	checkedAt uint64
	checked   bool
	done      bool

	keyBuf, rowBuf []byte
	full           *types.Batch // scratch: one row of all columns of a table
}

type pkEntry struct {
	table   *TableDesc
	row     uint64
	present bool
}

// Begin starts a transaction.
func (db *DB) Begin() *Txn {
	return &Txn{db: db, b: db.kv.NewIndexedBatch()}
}

func (txn *Txn) check() error {
	if txn.done {
		return pgerror.Newf(pgerror.InvalidTransactionState, "transaction is already finished")
	}
	return nil
}

func (txn *Txn) touch(t *TableDesc) {
	if txn.touched == nil {
		txn.touched = make(map[uint64]*TableDesc)
		txn.pk = make(map[string]pkEntry)
		txn.deleted = make(map[uint64]struct{})
		txn.inserted = make(map[uint64]int64)
	}
	txn.touched[t.ID] = t
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
	if err := txn.check(); err != nil {
		return err
	}
	if err := checkLayout(t, rows); err != nil {
		return err
	}
	n := rows.Len()
	if n == 0 {
		return nil
	}
	txn.touch(t)
	first, err := txn.db.alloc(rowIDCounter, uint64(n))
	if err != nil {
		return err
	}
	var idBuf [8]byte
	for i := range n {
		id := first + uint64(i)
		if len(t.PrimaryKey) > 0 {
			txn.keyBuf = appendPKKey(txn.keyBuf[:0], t, rows, i)
			if err := txn.checkPK(t, txn.keyBuf, rows, i); err != nil {
				return err
			}
			binary.BigEndian.PutUint64(idBuf[:], id)
			if err := txn.b.Set(txn.keyBuf, idBuf[:], nil); err != nil {
				return ioErrorf(err, "insert into %q", t.Name)
			}
			txn.pk[string(txn.keyBuf)] = pkEntry{table: t, row: id, present: true}
		}
		txn.keyBuf = appendIDKey(txn.keyBuf[:0], t.ID, tagRow, id)
		txn.rowBuf = appendRow(txn.rowBuf[:0], rows, i)
		if err := txn.b.Set(txn.keyBuf, txn.rowBuf, nil); err != nil {
			return ioErrorf(err, "insert into %q", t.Name)
		}
	}
	txn.inserted[t.ID] += int64(n)
	return nil
}

// checkPK returns a 23505 error if key is taken by a row this txn can see.
func (txn *Txn) checkPK(t *TableDesc, key []byte, rows *types.Batch, i int) error {
	if e, ok := txn.pk[string(key)]; ok {
		if e.present {
			return uniqueViolation(t, rows, i)
		}
		return nil
	}
	if !txn.checked {
		txn.checked = true
		txn.checkedAt = txn.db.commitSeq.Load()
	}
	row, found, err := txn.db.committedPK(key)
	if err != nil {
		return err
	}
	if found {
		if _, gone := txn.deleted[row]; !gone {
			return uniqueViolation(t, rows, i)
		}
	}
	return nil
}

// committedPK looks key up among committed primary key entries.
func (db *DB) committedPK(key []byte) (row uint64, found bool, err error) {
	v, closer, err := db.kv.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, ioErrorf(err, "reading primary key")
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, corruptionf("primary key entry: %d-byte value", len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// uniqueViolation formats PostgreSQL's 23505 error for row i of rows.
func uniqueViolation(t *TableDesc, rows *types.Batch, i int) error {
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
	return pgerror.Newf(pgerror.UniqueViolation, "duplicate key value violates unique constraint %q", t.Name+"_pkey").
		WithDetail("Key (%s)=(%s) already exists.", names, vals)
}

// Delete removes the rows with the given ids from table t: it writes a
// deletion marker per row (rows in chunks and buffered rows alike) and
// removes their primary key entries. Ids of rows that do not exist or were
// already deleted are ignored.
func (txn *Txn) Delete(t *TableDesc, rowIDs []uint64) error {
	if err := txn.check(); err != nil {
		return err
	}
	txn.touch(t)
	var f *rowFinder
	if len(t.PrimaryKey) > 0 {
		f = &rowFinder{txn: txn, t: t}
	}
	for _, id := range rowIDs {
		if _, ok := txn.deleted[id]; ok {
			continue
		}
		if f != nil {
			b, i, ok, err := f.find(id)
			if err != nil {
				return err
			}
			if ok {
				txn.keyBuf = appendPKKey(txn.keyBuf[:0], t, b, i)
				if err := txn.b.Delete(txn.keyBuf, nil); err != nil {
					return ioErrorf(err, "delete from %q", t.Name)
				}
				txn.pk[string(txn.keyBuf)] = pkEntry{table: t}
			}
		}
		txn.keyBuf = appendIDKey(txn.keyBuf[:0], t.ID, tagDelete, id)
		if err := txn.b.Set(txn.keyBuf, nil, nil); err != nil {
			return ioErrorf(err, "delete from %q", t.Name)
		}
		txn.keyBuf = appendIDKey(txn.keyBuf[:0], t.ID, tagRow, id)
		if err := txn.b.Delete(txn.keyBuf, nil); err != nil {
			return ioErrorf(err, "delete from %q", t.Name)
		}
		txn.deleted[id] = struct{}{}
	}
	return nil
}

// rowFinder reads single rows by id, for deletes that must learn a row's
// primary key.
type rowFinder struct {
	txn    *Txn
	t      *TableDesc
	refs   []chunkRef
	loaded bool
	dec    *rowDecoder
}

// find returns a batch holding row id at index i. The batch is valid
// until the next call.
func (f *rowFinder) find(id uint64) (*types.Batch, int, bool, error) {
	txn, t := f.txn, f.t
	key := appendIDKey(nil, t.ID, tagRow, id)
	v, closer, err := txn.b.Get(key) // reads this txn's writes over committed data
	if err == nil {
		defer closer.Close()
		if txn.full == nil || len(txn.full.Cols) != len(t.Columns) {
			txn.full = types.NewBatch(t.ColumnTypes(), 1)
		}
		for c, vec := range txn.full.Cols {
			vec.SetType(t.Columns[c].Type)
		}
		if f.dec == nil {
			f.dec = newRowDecoder(t)
		}
		f.dec.bind(allColumns(len(t.Columns)), txn.full)
		if err := f.dec.decode(v); err != nil {
			return nil, 0, false, fmt.Errorf("table %q, row %d: %w", t.Name, id, err)
		}
		return txn.full, 0, true, nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, false, ioErrorf(err, "reading row %d of %q", id, t.Name)
	}
	// Not buffered: look in the chunks. A flush may have moved the row
	// since the refs were read, so a miss reloads them once.
	for attempt := 0; attempt < 2; attempt++ {
		if !f.loaded || attempt == 1 {
			refs, err := txn.db.chunkRefs(t)
			if err != nil {
				return nil, 0, false, err
			}
			f.refs, f.loaded = refs, true
		}
		for _, ref := range f.refs {
			if id < ref.minRow || id > ref.maxRow {
				continue
			}
			ck, err := txn.db.loadChunk(context.Background(), t, ref)
			if err != nil {
				return nil, 0, false, err
			}
			i := sort.Search(len(ck.rowIDs), func(i int) bool { return ck.rowIDs[i] >= id })
			if i < len(ck.rowIDs) && ck.rowIDs[i] == id {
				return &types.Batch{Cols: ck.cols}, i, true, nil
			}
		}
	}
	return nil, 0, false, nil
}

func allColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// chunkRefs returns the committed chunk references of t.
func (db *DB) chunkRefs(t *TableDesc) ([]chunkRef, error) {
	lo, hi := sectionSpan(t.ID, tagChunk)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, ioErrorf(err, "reading chunks of %q", t.Name)
	}
	defer it.Close()
	var refs []chunkRef
	for it.First(); it.Valid(); it.Next() {
		ref, err := decodeChunkRef(it.Value())
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, it.Error()
}

// Commit makes the txn's writes durable (a synced Pebble write) and
// visible. It re-checks primary keys against commits that happened since
// they were first checked, so of two txns inserting one key the second to
// commit fails with 23505. After Commit, the txn is finished whatever the
// outcome.
func (txn *Txn) Commit() error {
	if err := txn.check(); err != nil {
		return err
	}
	txn.done = true
	defer txn.b.Close()
	if txn.b.Empty() {
		return nil
	}
	db := txn.db
	db.commitMu.Lock()
	err := txn.commitLocked()
	db.commitMu.Unlock()
	if err != nil {
		return err
	}
	db.catMu.RLock()
	for id, n := range txn.inserted {
		if ts, ok := db.byID[id]; ok {
			ts.pending.Add(n)
		}
	}
	db.catMu.RUnlock()
	db.maybeKick()
	return nil
}

func (txn *Txn) commitLocked() error {
	db := txn.db
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	for id, t := range txn.touched {
		if ts, ok := db.byID[id]; !ok || ts.desc != t {
			return undefinedTable(t.Name)
		}
	}
	if txn.checked && txn.db.commitSeq.Load() != txn.checkedAt {
		for key, e := range txn.pk {
			if !e.present {
				continue
			}
			row, found, err := db.committedPK([]byte(key))
			if err != nil {
				return err
			}
			if _, gone := txn.deleted[row]; found && row != e.row && !gone {
				return txn.conflict(e)
			}
		}
	}
	if err := txn.b.Commit(pebble.Sync); err != nil {
		return ioErrorf(err, "committing")
	}
	if len(txn.pk) > 0 {
		txn.db.commitSeq.Add(1)
	}
	return nil
}

// conflict builds the 23505 error for an entry that another txn committed
// first, reading the key values back from this txn's own row.
func (txn *Txn) conflict(e pkEntry) error {
	f := &rowFinder{txn: txn, t: e.table}
	b, i, ok, err := f.find(e.row)
	if err != nil {
		return err
	}
	if !ok {
		return pgerror.Newf(pgerror.UniqueViolation, "duplicate key value violates unique constraint %q", e.table.Name+"_pkey")
	}
	return uniqueViolation(e.table, b, i)
}

// Rollback discards the txn's writes. It is a no-op after Commit.
func (txn *Txn) Rollback() {
	if txn.done {
		return
	}
	txn.done = true
	_ = txn.b.Close()
}

// appendKeyText appends value i of v as PostgreSQL prints it in a key
// detail message.
func appendKeyText(dst []byte, v *types.Vec, i int) []byte {
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
