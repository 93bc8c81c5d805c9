package exec

import (
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// An exact shuffle through shared memory (SHARED_MEMORY, SHUFFLE 'exact')
// of a table's fixed-width columns keeps, beside each row's id, where its
// values of those columns are stored (the extents of a hollow scan), and
// fetches by id only its other columns: the frames read the stored values
// straight into the area (see tensor_extent.go). A row whose value is not
// stored where it can be read so (a chunk compressed, with NULLs or
// deleted rows, or rows not yet flushed) has it fetched by id.

// exactRows is that state.
type exactRows struct {
	// hollow are the scan's output indexes of the hollow columns, cols
	// their table columns; exts[h][k] the extent of the value of hollow
	// column h of the row of ids[k] (Rows 0: fetch it by id).
	hollow []int
	cols   []int
	exts   [][]storage.Extent
	// narrow fetches the other columns, full the hollow ones of the rows
	// that have no extent (nil until needed).
	narrow, full *storage.RowFetcher
	// Per batch of rows fetched: order holds their positions (k) sorted
	// by id, byID the extents in that order, out the batch in the scan's
	// column order, vals the hollow columns' Vecs in it, lack the ids of
	// the rows whose value must be fetched.
	order []int
	byID  [][]storage.Extent
	out   *types.Batch
	vals  []*types.Vec
	lack  []uint64
	nbuf  *types.Batch
	fbuf  *types.Batch
}

// newExactRows returns the state of an exact shuffle of scan's rows whose
// hollow columns (scan output indexes) are read as extents, or nil when
// there are none.
func newExactRows(scan *plan.Scan, hollowTable []int) *exactRows {
	if len(hollowTable) == 0 {
		return nil
	}
	ex := &exactRows{}
	for j, c := range scan.Cols {
		if slices.Contains(hollowTable, c) {
			ex.hollow = append(ex.hollow, j)
			ex.cols = append(ex.cols, c)
		}
	}
	ex.exts = make([][]storage.Extent, len(ex.hollow))
	ex.byID = make([][]storage.Extent, len(ex.hollow))
	return ex
}

func (ex *exactRows) close() {
	if ex.narrow != nil {
		ex.narrow.Close()
	}
	if ex.full != nil {
		ex.full.Close()
	}
}

// collect appends the ids of group g's rows to ids, and their extents to
// ex.exts, reading the hollow columns' chunks' headers only.
func (c *CopyTo) collectExact(ex *exactRows, g *storage.RowGroup, ids []uint64) ([]uint64, error) {
	scan := &plan.Scan{Table: c.groupScan.Table, Cols: ex.cols}
	op, err := newGroupScan(c.env, scan, g, c.opts.Tensor.Version, ex.cols, true)
	if err != nil {
		return ids, err
	}
	defer op.Close()
	err = Drain(op, func(b *types.Batch) error {
		ids = append(ids, op.ids...)
		for h, v := range b.Cols {
			e, ok := op.sc.Extent(v)
			for i := range b.Len() {
				if ok {
					ex.exts[h] = append(ex.exts[h], e.Slice(i, i+1))
				} else {
					ex.exts[h] = append(ex.exts[h], storage.Extent{})
				}
			}
		}
		return nil
	})
	return ids, err
}

// swap exchanges rows a and b (their ids are swapped by the caller).
func (ex *exactRows) swap(a, b int) {
	for _, e := range ex.exts {
		e[a], e[b] = e[b], e[a]
	}
}

// fetch reads the rows at positions ks of ids (ids[k] for k in ks): their
// other columns by id, their hollow columns' values as extents where
// they have one (rowExtent then tells them), by id where not. It returns
// the batch in the scan's column order, rows sorted by id, and the ids in
// that order.
func (c *CopyTo) fetchExact(ex *exactRows, ids []uint64, ks []int, sorted []uint64) (*types.Batch, []uint64, error) {
	ex.order = append(ex.order[:0], ks...)
	slices.SortFunc(ex.order, func(a, b int) int {
		switch {
		case ids[a] < ids[b]:
			return -1
		case ids[a] > ids[b]:
			return 1
		}
		return 0
	})
	sorted = sorted[:0]
	for _, k := range ex.order {
		sorted = append(sorted, ids[k])
	}
	scan := c.groupScan
	version := c.opts.Tensor.Version
	if ex.out == nil {
		ex.out = &types.Batch{Cols: make([]*types.Vec, len(scan.Cols))}
		ex.vals = make([]*types.Vec, len(ex.hollow))
		for h, j := range ex.hollow {
			ex.vals[h] = types.NewVec(scan.Table.Columns[scan.Cols[j]].Type, 0)
		}
	}
	// The other columns, by id.
	var narrowCols []int
	for j, col := range scan.Cols {
		if !slices.Contains(ex.hollow, j) {
			narrowCols = append(narrowCols, col)
		}
	}
	var found []uint64
	if len(narrowCols) > 0 {
		if ex.narrow == nil {
			rf, err := c.env.Txn.NewRowFetcher(scan.Table, narrowCols, version)
			if err != nil {
				return nil, nil, err
			}
			ex.narrow = rf
		}
		b, f, err := ex.narrow.Fetch(sorted, ex.nbuf)
		if err != nil {
			return nil, nil, err
		}
		ex.nbuf, found = b, f
		if len(found) != len(sorted) {
			return nil, nil, pgerror.AssertionFailedf("exact shuffle: %d of %d rows found by id", len(found), len(sorted))
		}
		k := 0
		for j := range scan.Cols {
			if !slices.Contains(ex.hollow, j) {
				ex.out.Cols[j] = b.Cols[k]
				k++
			}
		}
	} else {
		found = sorted
	}
	// The hollow columns: extents, or values fetched by id.
	ex.lack = ex.lack[:0]
	for h := range ex.hollow {
		ex.byID[h] = ex.byID[h][:0]
		for _, k := range ex.order {
			e := ex.exts[h][k]
			ex.byID[h] = append(ex.byID[h], e)
			if e.Rows == 0 && (len(ex.lack) == 0 || ex.lack[len(ex.lack)-1] != ids[k]) {
				ex.lack = append(ex.lack, ids[k])
			}
		}
	}
	slices.Sort(ex.lack)
	ex.lack = slices.Compact(ex.lack)
	var fb *types.Batch
	if len(ex.lack) > 0 {
		if ex.full == nil {
			rf, err := c.env.Txn.NewRowFetcher(scan.Table, ex.cols, version)
			if err != nil {
				return nil, nil, err
			}
			ex.full = rf
		}
		b, f, err := ex.full.Fetch(ex.lack, ex.fbuf)
		if err != nil {
			return nil, nil, err
		}
		if len(f) != len(ex.lack) {
			return nil, nil, pgerror.AssertionFailedf("exact shuffle: %d of %d rows found by id", len(f), len(ex.lack))
		}
		ex.fbuf, fb = b, b
	}
	for h, j := range ex.hollow {
		v := ex.vals[h]
		v.Reset()
		for i, e := range ex.byID[h] {
			if e.Rows > 0 {
				v.AppendBytes(nil) // its value is the extent's (rowExtent)
				continue
			}
			r, _ := slices.BinarySearch(ex.lack, sorted[i])
			v.AppendFrom(fb.Cols[h], r)
		}
		ex.out.Cols[j] = v
	}
	ex.out.SetLen(len(sorted))
	return ex.out, found, nil
}

// rowExtent is tensorFrames.rowExtent for the batches fetchExact makes.
func (ex *exactRows) rowExtent(v *types.Vec, i int) (storage.Extent, bool) {
	for h, hv := range ex.vals {
		if hv == v {
			e := ex.byID[h][i]
			return e, e.Rows > 0
		}
	}
	return storage.Extent{}, false
}
