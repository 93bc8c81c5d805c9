package storage

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/deeplaked/deeplaked/types"
)

// pkLookupKey returns the primary key entry key that equality predicates
// on every primary key column pin down, or ok=false when they don't (a key
// column without an equality, a NULL or a value of another physical
// layout). A scan with such predicates can return at most one row.
func pkLookupKey(t *TableDesc, preds []ZonePred) (key []byte, ok bool) {
	if len(t.PrimaryKey) == 0 {
		return nil, false
	}
	b := &types.Batch{Cols: make([]*types.Vec, len(t.Columns))}
	row := -1
	for _, c := range t.PrimaryKey {
		for _, p := range preds {
			if p.Op != ZoneEq || p.Col != c || p.Val == nil || p.Val.Nulls[p.Row] {
				continue
			}
			if p.Val.Type.Phys() != t.Columns[c].Type.Phys() || (row >= 0 && p.Row != row) {
				continue
			}
			if p.Val.Type.Phys() == types.PhysBytes && p.Val.Type.Kind != t.Columns[c].Type.Kind &&
				!(p.Val.Type.IsTextual() && t.Columns[c].Type.IsTextual()) {
				continue
			}
			b.Cols[c], row = p.Val, p.Row
			break
		}
		if b.Cols[c] == nil {
			return nil, false
		}
	}
	return appendPKKey(nil, t, b, row), true
}

// pkRow returns the id of the row whose primary key entry key is, as the
// txn sees it (its own inserts and deletes included), or ok=false.
func (txn *Txn) pkRow(key []byte) (id uint64, ok bool, err error) {
	if e, found := txn.pk[string(key)]; found {
		return e.row, e.present, nil
	}
	v, closer, err := txn.snap.Get(key)
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

// startPKScan makes s return the one row (or none) a primary key lookup
// finds, read by id, instead of scanning the table.
func (s *Scanner) startPKScan(txn *Txn, key []byte) error {
	id, ok, err := txn.pkRow(key)
	if err != nil || !ok {
		s.pkDone = true
		return err
	}
	b, ids, err := txn.FetchRows(s.t, s.cols, []uint64{id})
	if err != nil {
		return err
	}
	s.pkBatch, s.pkIDs = b, ids
	txn.db.stats.PKLookups.Add(1)
	return nil
}

// nextPK is Next for a primary key lookup.
func (s *Scanner) nextPK() (*types.Batch, []uint64, error) {
	if s.pkDone || s.pkBatch == nil || len(s.pkIDs) == 0 {
		s.pkDone = true
		return nil, nil, nil
	}
	s.pkDone = true
	if len(s.cols) == 0 {
		s.pkBatch.SetLen(len(s.pkIDs))
	}
	return s.pkBatch, s.pkIDs, nil
}

// PKLookup reports whether a scan of t with preds is answered by a primary
// key lookup (equalities on every key column): at most one row, read by
// its id.
func PKLookup(t *TableDesc, preds []ZonePred) bool {
	_, ok := pkLookupKey(t, preds)
	return ok
}
