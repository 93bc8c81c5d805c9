package exec

import (
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// An exact shuffle (SHUFFLE 'exact') of a table's fixed-width columns
// fetches by id only the rows' other columns: for each batch of rows it
// sends, it asks where their values of those columns are stored
// (RowFetcher.Extents) and the frames read them straight into the shared
// area (SHARED_MEMORY) or into their buffers (see tensor_extent.go). A row whose value cannot
// be read so (its chunk compressed, with NULLs, or checksum blocks of
// several rows; a row not yet flushed) has it fetched by id.

// exactRows is that state.
type exactRows struct {
	// hollow are the scan's output indexes of those columns, cols their
	// table columns.
	hollow []int
	cols   []int
	// narrow fetches the other columns (nil when there are none), full
	// finds the hollow ones' extents, and one[h] fetches hollow column h
	// of the rows that have no extent for it (made when first needed), so
	// that a row lacking one column's extent does not have its other
	// columns read twice.
	narrow, full *storage.RowFetcher
	one          []*storage.RowFetcher
	newFetcher   func(cols []int) (*storage.RowFetcher, error)
	// Per batch of rows (sorted by id): byID[h] the extents of hollow
	// column h, out the batch in the scan's column order, vals the hollow
	// columns' Vecs in it, lack[h] the ids of the rows whose value of
	// column h must be fetched, into fbuf[h].
	byID [][]storage.Extent
	out  *types.Batch
	vals []*types.Vec
	lack [][]uint64
	nbuf *types.Batch
	fbuf []*types.Batch
	// batches and hits count the batches fetched and the extents found:
	// a stream that finds none in its first exactTries batches (a
	// compressed column, say) fetches its rows as without shared memory
	// from then on (off).
	batches, hits int
	off           bool
}

// exactTries is how many batches an exact shuffle looks for extents in
// before it gives up when it finds none.
const exactTries = 4

// newExactRows returns the state of an exact shuffle of scan's rows whose
// hollow columns (table columns) are read as extents, or nil when there
// are none.
func (c *CopyTo) newExactRows(scan *plan.Scan, hollowTable []int) (*exactRows, error) {
	if len(hollowTable) == 0 {
		return nil, nil
	}
	ex := &exactRows{}
	var narrowCols []int
	for j, col := range scan.Cols {
		if slices.Contains(hollowTable, col) {
			ex.hollow = append(ex.hollow, j)
			ex.cols = append(ex.cols, col)
		} else {
			narrowCols = append(narrowCols, col)
		}
	}
	version := c.opts.Tensor.Version
	ex.newFetcher = func(cols []int) (*storage.RowFetcher, error) {
		return c.env.Txn.NewRowFetcher(scan.Table, cols, version)
	}
	var err error
	if ex.full, err = ex.newFetcher(ex.cols); err != nil {
		return nil, err
	}
	if len(narrowCols) > 0 {
		if ex.narrow, err = ex.newFetcher(narrowCols); err != nil {
			ex.close()
			return nil, err
		}
	}
	ex.one = make([]*storage.RowFetcher, len(ex.hollow))
	ex.lack = make([][]uint64, len(ex.hollow))
	ex.fbuf = make([]*types.Batch, len(ex.hollow))
	ex.byID = make([][]storage.Extent, len(ex.hollow))
	ex.out = &types.Batch{Cols: make([]*types.Vec, len(scan.Cols))}
	ex.vals = make([]*types.Vec, len(ex.hollow))
	for h, col := range ex.cols {
		ex.vals[h] = types.NewVec(scan.Table.Columns[col].Type, 0)
	}
	return ex, nil
}

func (ex *exactRows) close() {
	if ex.narrow != nil {
		ex.narrow.Close()
	}
	if ex.full != nil {
		ex.full.Close()
	}
	for _, f := range ex.one {
		if f != nil {
			f.Close()
		}
	}
}

// fetch reads the rows sorted (ids; ascending reads them in storage
// order, but any order will do): their other columns by id, their hollow
// columns' values as extents where they have one (rowExtent then tells
// them), by id where not. It returns the batch in the scan's column
// order, a row per id of sorted, in that order.
func (ex *exactRows) fetch(sorted []uint64) (*types.Batch, error) {
	if ex.narrow != nil {
		b, found, err := ex.narrow.Fetch(sorted, ex.nbuf)
		if err != nil {
			return nil, err
		}
		ex.nbuf = b
		if len(found) != len(sorted) {
			return nil, pgerror.AssertionFailedf("exact shuffle: %d of %d rows found by id", len(found), len(sorted))
		}
		k := 0
		for j := range ex.out.Cols {
			if !slices.Contains(ex.hollow, j) {
				ex.out.Cols[j] = b.Cols[k]
				k++
			}
		}
	}
	if err := ex.full.Extents(sorted, ex.cols, true, ex.byID); err != nil {
		return nil, err
	}
	for h := range ex.cols {
		ex.lack[h] = ex.lack[h][:0]
		for i, e := range ex.byID[h] {
			if e.Rows == 0 {
				ex.lack[h] = append(ex.lack[h], sorted[i])
			} else {
				ex.hits++
			}
		}
	}
	if ex.batches++; ex.hits == 0 && ex.batches >= exactTries {
		ex.off = true
	}
	for h, j := range ex.hollow {
		var fb *types.Batch
		if lack := ex.lack[h]; len(lack) > 0 {
			if ex.one[h] == nil {
				f, err := ex.newFetcher(ex.cols[h : h+1])
				if err != nil {
					return nil, err
				}
				ex.one[h] = f
			}
			b, found, err := ex.one[h].Fetch(lack, ex.fbuf[h])
			if err != nil {
				return nil, err
			}
			if len(found) != len(lack) {
				return nil, pgerror.AssertionFailedf("exact shuffle: %d of %d rows found by id", len(found), len(lack))
			}
			ex.fbuf[h], fb = b, b
		}
		v := ex.vals[h]
		v.Reset()
		r := 0 // the rows of lack[h] are sorted's, in order
		for _, e := range ex.byID[h] {
			if e.Rows > 0 {
				v.AppendBytes(nil) // its value is the extent's (rowExtent)
				continue
			}
			v.AppendFrom(fb.Cols[0], r)
			r++
		}
		ex.out.Cols[j] = v
	}
	ex.out.SetLen(len(sorted))
	return ex.out, nil
}

// rowExtent is tensorFrames.rowExtent for the batches fetch makes.
func (ex *exactRows) rowExtent(v *types.Vec, i int) (storage.Extent, bool) {
	for h, hv := range ex.vals {
		if hv == v {
			e := ex.byID[h][i]
			return e, e.Rows > 0
		}
	}
	return storage.Extent{}, false
}
