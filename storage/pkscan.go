package storage

import (
	"slices"

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
func (txn *Txn) pkRow(t *TableDesc, key []byte) (id uint64, ok bool, err error) {
	if e, found := txn.pk.get(key); found {
		return e.row, e.present, nil
	}
	return txn.db.viewPK(txn.snap, t, key)
}

// pkLookupKeys returns the primary key entry keys that the predicates
// pin down: one for equalities on every key column (pkLookupKey), or one
// per value of `key IN (...)` on a one-column key (ZoneIn), NULLs left out.
// ok is false when the predicates do not pin the key down.
func pkLookupKeys(t *TableDesc, preds []ZonePred) (keys [][]byte, ok bool) {
	if key, ok := pkLookupKey(t, preds); ok {
		return [][]byte{key}, true
	}
	if len(t.PrimaryKey) != 1 {
		return nil, false
	}
	c := t.PrimaryKey[0]
	for _, p := range preds {
		if p.Op != ZoneIn || p.Col != c || p.Val == nil || !pkValueFits(t.Columns[c].Type, p.Val.Type) {
			continue
		}
		b := &types.Batch{Cols: make([]*types.Vec, len(t.Columns))}
		b.Cols[c] = p.Val
		for r := range p.Val.Len() {
			if !p.Val.Nulls[r] {
				keys = append(keys, appendPKKey(nil, t, b, r))
			}
		}
		return keys, true
	}
	return nil, false
}

// pkValueFits reports whether values of type v encode as keys of a
// primary key column of type col.
func pkValueFits(col, v types.Type) bool {
	if v.Phys() != col.Phys() {
		return false
	}
	return v.Phys() != types.PhysBytes || v.Kind == col.Kind || v.IsTextual() && col.IsTextual()
}

// startPKScan makes s return the rows (at most one per key) that a
// primary key lookup finds, read by id in storage order, instead of
// scanning the table.
func (s *Scanner) startPKScan(txn *Txn, keys [][]byte) error {
	ids := make([]uint64, 0, len(keys))
	for _, key := range keys {
		id, ok, err := txn.pkRow(s.t, key)
		if err != nil {
			s.pkDone = true
			return err
		}
		if ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > 0 {
		txn.db.stats.PKLookups.Add(1)
	}
	return s.startIDScan(txn, slices.Compact(ids))
}

// startIDScan makes s return the rows with the given ids (ascending,
// distinct) that exist, read by id, instead of scanning the table.
func (s *Scanner) startIDScan(txn *Txn, ids []uint64) error {
	s.pkIDs = ids
	if len(s.pkIDs) == 0 {
		s.pkDone = true
		return nil
	}
	rf, err := txn.NewRowFetcher(s.t, s.cols, 0)
	if err != nil {
		return err
	}
	s.pkFetch = rf
	return nil
}

// nextPK is Next for a primary key lookup: the next rows found, up to a
// batch of them.
func (s *Scanner) nextPK() (*types.Batch, []uint64, error) {
	if s.pkDone || len(s.pkIDs) == 0 {
		s.pkDone = true
		return nil, nil, nil
	}
	part := s.pkIDs[:min(len(s.pkIDs), types.BatchSize)]
	s.pkIDs = s.pkIDs[len(part):]
	b, ids, err := s.pkFetch.Fetch(part, s.pkBatch)
	if err != nil {
		return nil, nil, err
	}
	s.pkBatch = b
	if len(s.cols) == 0 {
		b.SetLen(len(ids))
	}
	if len(ids) == 0 {
		return s.nextPK()
	}
	return b, ids, nil
}

// PKLookup reports whether a scan of t with preds is answered by primary
// key lookups (equalities on every key column, or the key IN a list), or
// by _rowid's (equal to a value or IN a list): at most one row per key,
// read by id.
func PKLookup(t *TableDesc, preds []ZonePred) bool {
	return LookupOf(t, preds) != NoLookup
}

// Lookup says how a scan finds its rows.
type Lookup uint8

// Lookups.
const (
	// NoLookup: the scan reads the table (what zone maps leave of it).
	NoLookup Lookup = iota
	// LookupByKey: the rows are looked up by primary key.
	LookupByKey
	// LookupByRowID: the rows are read by _rowid.
	LookupByRowID
)

// LookupOf returns how a scan of t with preds finds its rows (as of the
// current snapshot: a scan of a past version or of a row group reads the
// table).
func LookupOf(t *TableDesc, preds []ZonePred) Lookup {
	if _, ok := rowIDLookup(t, preds); ok {
		return LookupByRowID
	}
	if _, ok := pkLookupKeys(t, preds); ok {
		return LookupByKey
	}
	return NoLookup
}
