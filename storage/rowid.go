package storage

import (
	"slices"

	"github.com/deeplaked/deeplaked/types"
)

// RowIDName is the name SQL gives the system column of a row's id.
const RowIDName = "_rowid"

// RowIDColumn returns the ordinal by which scans (ScanOptions.Cols and
// ZonePred.Col), row fetchers and StoredBytes name the system column
// _rowid of t: one past its last column. Its values, int8, are the row
// ids that Scanner.Next and RowFetcher.Fetch return beside the rows; a
// row keeps its id until it is deleted (an UPDATE deletes the old row).
// Equalities and IN lists on it are answered by reading the rows by id.
func RowIDColumn(t *TableDesc) int { return len(t.Columns) }

// rowIDCols places _rowid among the columns a scan or a fetch returns: the
// stored columns are read as before, and _rowid is filled from the ids of
// the rows read.
type rowIDCols struct {
	// at lists the places of _rowid among the n columns asked.
	at   []int
	n    int
	vec  *types.Vec
	view types.Batch
}

// splitRowID returns cols without _rowid, and where it was among them (nil
// when it was not asked).
func splitRowID(t *TableDesc, cols []int) ([]int, *rowIDCols) {
	rc := RowIDColumn(t)
	if !slices.Contains(cols, rc) {
		return cols, nil
	}
	r := &rowIDCols{n: len(cols), vec: types.NewVec(types.TypInt8, 0)}
	stored := make([]int, 0, len(cols))
	for j, c := range cols {
		if c == rc {
			r.at = append(r.at, j)
		} else {
			stored = append(stored, c)
		}
	}
	return stored, r
}

// merge returns the batch of the columns asked: those of b, the stored
// columns, with ids as _rowid in their places. The batch is r's own,
// valid until the next merge and as long as b's columns.
func (r *rowIDCols) merge(b *types.Batch, ids []uint64) *types.Batch {
	r.vec.Reset()
	for _, id := range ids {
		r.vec.AppendInt(int64(id))
	}
	cols, k, a := r.view.Cols[:0], 0, 0
	for j := range r.n {
		if a < len(r.at) && r.at[a] == j {
			cols = append(cols, r.vec)
			a++
			continue
		}
		cols = append(cols, b.Cols[k])
		k++
	}
	r.view.Cols = cols
	return &r.view
}

// rowIDLookup returns the ids that equalities or an IN list on _rowid pin
// down (ascending, distinct; negative values left out), or ok=false when
// the predicates do not pin _rowid down.
func rowIDLookup(t *TableDesc, preds []ZonePred) (ids []uint64, ok bool) {
	rc := RowIDColumn(t)
	for _, p := range preds {
		if p.Col != rc || p.Val == nil || p.Val.Type.Phys() != types.PhysInt || (p.Op != ZoneEq && p.Op != ZoneIn) {
			continue
		}
		rows := []int{p.Row}
		if p.Op == ZoneIn {
			rows = rows[:0]
			for r := range p.Val.Len() {
				rows = append(rows, r)
			}
		}
		for _, r := range rows {
			if !p.Val.Nulls[r] && p.Val.Ints[r] >= 0 {
				ids = append(ids, uint64(p.Val.Ints[r]))
			}
		}
		slices.Sort(ids)
		return slices.Compact(ids), true
	}
	return nil, false
}
