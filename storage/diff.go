package storage

import (
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// Diffs. Two views of a table (versions, branches) share a prefix of
// layers; past it each has its own segments: a range of versions of a
// table (lo, hi]. A row differs between the views only if a segment of one
// of them inserted it or wrote a deletion marker for it, so a diff reads
// those segments alone: their deletion markers, and the rows committed in
// them (fragments and chunks committed outside the range are skipped by
// their version and their _xmin zone maps). It never scans what the views
// share. What it holds is the ids (and primary keys) of the rows that
// differ, not their values, which it streams.

// DiffKind says how a row differs between two views.
type DiffKind uint8

// Diff kinds.
const (
	// diffSame is a row both views hold, under one id: a merge copies
	// rows with their ids. It is never returned.
	diffSame DiffKind = iota

	// DiffAdded is a row of the second view that the first lacks.
	DiffAdded
	// DiffDeleted is a row of the first view that the second lacks.
	DiffDeleted
	// DiffUpdated is a primary key both views hold, in different rows:
	// the second view's row.
	DiffUpdated
)

func (k DiffKind) String() string {
	switch k {
	case DiffAdded:
		return "added"
	case DiffDeleted:
		return "deleted"
	case DiffUpdated:
		return "updated"
	}
	return "?"
}

// segment is the versions (lo, hi] of table table.
type segment struct{ table, lo, hi uint64 }

// viewLayers returns the layers of view t as txn reads it: its base, then
// its own table at its version (AsOf, or the version txn reads).
func (txn *Txn) viewLayers(t *TableDesc) ([]Layer, error) {
	v, err := txn.readVersion(t)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(t.Base), Layer{Table: t.ID, Version: v}), nil
}

// divergence returns the segments of views a and b past their common
// layers.
func divergence(a, b []Layer) (sa, sb []segment) {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	ka, kb := k, k
	if k < len(a) && k < len(b) && a[k].Table == b[k].Table {
		low := min(a[k].Version, b[k].Version)
		if a[k].Version > low {
			sa = append(sa, segment{a[k].Table, low, a[k].Version})
		}
		if b[k].Version > low {
			sb = append(sb, segment{b[k].Table, low, b[k].Version})
		}
		ka, kb = k+1, k+1
	}
	for _, l := range a[ka:] {
		if l.Version > 0 {
			sa = append(sa, segment{l.Table, 0, l.Version})
		}
	}
	for _, l := range b[kb:] {
		if l.Version > 0 {
			sb = append(sb, segment{l.Table, 0, l.Version})
		}
	}
	return sa, sb
}

// segmentMarkers returns the ids of the rows whose deletion markers the
// segments hold, sorted.
func (txn *Txn) segmentMarkers(segs []segment) ([]uint64, error) {
	var out []uint64
	for _, sg := range segs {
		lo, hi := sectionSpan(sg.table, tagDelete)
		it, err := txn.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return nil, ioErrorf(err, "reading deletions")
		}
		for it.First(); it.Valid(); it.Next() {
			rid, ok := idFromKey(it.Key())
			x, n := binary.Uvarint(it.Value())
			if !ok || n <= 0 {
				it.Close()
				return nil, corruptionf("bad deletion marker %x", it.Key())
			}
			if x > sg.lo && x <= sg.hi {
				out = append(out, rid)
			}
		}
		if err := it.Close(); err != nil {
			return nil, ioErrorf(err, "reading deletions")
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// segmentScan returns a Scanner of columns cols of the rows segment sg of
// view t's table committed, minus the rows deleted.
func (txn *Txn) segmentScan(t *TableDesc, sg segment, cols []int, deleted []uint64) (*Scanner, error) {
	lt := *t
	lt.ID, lt.Base, lt.AsOf = sg.table, nil, 0
	s := newScanner(txn.db, &lt, ScanOptions{Cols: cols})
	s.txn = txn
	frags, err := txn.liveFragments(&lt)
	if err != nil {
		return nil, err
	}
	for _, f := range frags {
		s.sources = append(s.sources, scanSource{frag: f, kind: srcFragment, table: sg.table, asOf: sg.hi, from: sg.lo})
	}
	s.sources = append(s.sources, scanSource{kind: srcBuffered, table: sg.table, asOf: sg.hi, from: sg.lo})
	s.deleted = deleted
	it, err := txn.snap.NewIter(&pebble.IterOptions{})
	if err != nil {
		return nil, ioErrorf(err, "scanning %q", t.Name)
	}
	s.it = it
	return s, nil
}

func inSorted(s []uint64, id uint64) bool {
	_, ok := slices.BinarySearch(s, id)
	return ok
}

// minus returns the ids of a not in any of bs (all sorted).
func minus(a []uint64, bs ...[]uint64) []uint64 {
	var out []uint64
	for _, id := range a {
		in := false
		for _, b := range bs {
			if inSorted(b, id) {
				in = true
				break
			}
		}
		if !in {
			out = append(out, id)
		}
	}
	return out
}

// DiffScanner streams the rows that differ between two views of a table
// (Txn.Diff).
type DiffScanner struct {
	txn  *Txn
	a, b *TableDesc
	cols []int
	pk   bool
	// gone holds the rows of a that b lacks, not yet emitted: by primary
	// key (byKey) for a table with one, else by id (goneSet); goneIDs
	// lists them for reading.
	byKey   map[string]goneRow
	goneSet map[uint64]struct{}
	goneIDs []uint64
	out     *types.Batch
	outIDs  []uint64
	// addCommon are rows of the shared layers a deleted and b did not.
	addCommon []uint64
	segsB     []segment
	segB      int
	db        []uint64 // b's deletions
	sc        *Scanner
	phase     int
	fetchAt   int
	fetchIDs  []uint64
	rf        *RowFetcher
	kinds     []DiffKind
	key       []byte
	seed      maphash.Seed
	row       []byte
	// charge takes what the diff holds from a session's budget; charged
	// is what it took, err the failure that ended it.
	charge  Charge
	charged int64
	err     error
}

// goneRow is a row of a that b lacks: its id and a hash of its values,
// which tell an update from a copy of the same values under a new id.
type goneRow struct{ id, sum uint64 }

// sum hashes the values of row i of b.
func (d *DiffScanner) sum(b *types.Batch, i int) uint64 {
	d.row = types.AppendRow(d.row[:0], b, i)
	return maphash.Bytes(d.seed, d.row)
}

// Diff returns the rows that differ between views a and b of one table
// (both descriptors from the catalog: the table, a branch, "t@ref"), as
// the txn reads them: rows of b that a lacks (DiffAdded), rows of a that
// b lacks (DiffDeleted), and for a table with a primary key, keys both
// hold in different rows (DiffUpdated, b's row, in place of the pair).
// Its memory grows with the rows that differ (ids and keys), not with
// the table.
func (txn *Txn) Diff(a, b *TableDesc, charge Charge) (*DiffScanner, error) {
	if err := txn.check(); err != nil {
		return nil, err
	}
	if rootOf(a) != rootOf(b) {
		return nil, assertf("diff of views of two tables")
	}
	la, err := txn.viewLayers(a)
	if err != nil {
		return nil, err
	}
	lb, err := txn.viewLayers(b)
	if err != nil {
		return nil, err
	}
	return txn.diffLayers(a, la, b, lb, charge)
}

// Charge takes n more bytes of memory (n < 0 gives them back) from the
// budget of the session a structure is held for, or fails (53200); nil
// charges nothing.
type Charge func(n int64) error

// Bytes charged for what a diff or merge holds per row.
const (
	chargeID    = 8  // an id in a slice
	chargeEntry = 48 // a map entry, besides its key
)

// diffLayers is Diff of views a and b with layers la and lb (a has no
// rows when la is empty).
func (txn *Txn) diffLayers(a *TableDesc, la []Layer, b *TableDesc, lb []Layer, charge Charge) (*DiffScanner, error) {
	sa, sb := divergence(la, lb)
	d := &DiffScanner{txn: txn, a: a, b: b, cols: allColumns(len(a.Columns)), pk: len(a.PrimaryKey) > 0, segsB: sb, charge: charge}
	da, err := txn.segmentMarkers(sa)
	if err == nil {
		d.use(chargeID * int64(len(da)))
		d.db, err = txn.segmentMarkers(sb)
		d.use(chargeID * int64(len(d.db)))
	}
	if err == nil {
		err = d.err
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	dbm := d.db
	d.seed = maphash.MakeSeed()
	if d.pk {
		d.byKey = make(map[string]goneRow)
	} else {
		d.goneSet = make(map[uint64]struct{})
	}
	// Rows a's segments inserted: gone from b unless a deleted them
	// too (then they are in neither).
	var aOnly []uint64
	for _, sg := range sa {
		err := d.eachRow(a, sg, d.cols, func(id uint64, kb *types.Batch, i int) {
			if inSorted(da, id) {
				aOnly = append(aOnly, id)
				d.use(chargeID)
				return
			}
			d.gone(id, kb, i)
		})
		if err == nil {
			err = d.err
		}
		if err != nil {
			d.Close()
			return nil, err
		}
	}
	// Rows b's segments inserted and deleted: in neither.
	var bOnly []uint64
	for _, sg := range sb {
		err := d.eachRow(b, sg, nil, func(id uint64, _ *types.Batch, _ int) {
			if inSorted(dbm, id) {
				bOnly = append(bOnly, id)
				d.use(chargeID)
			}
		})
		if err == nil {
			err = d.err
		}
		if err != nil {
			d.Close()
			return nil, err
		}
	}
	slices.Sort(aOnly)
	slices.Sort(bOnly)
	// Shared rows one side deleted and the other did not.
	gone := minus(dbm, bOnly, da)
	d.use(chargeID * int64(len(gone)))
	err = d.fetchEach(a, d.cols, gone, func(id uint64, kb *types.Batch, i int) { d.gone(id, kb, i) })
	if err == nil {
		d.addCommon = minus(da, aOnly, dbm)
		d.use(chargeID * int64(len(d.addCommon)))
		err = d.err
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// use charges n bytes; a failure is kept in d.err.
func (d *DiffScanner) use(n int64) {
	if d.charge == nil || d.err != nil {
		return
	}
	if err := d.charge(n); err != nil {
		d.err = err
		return
	}
	d.charged += n
}

// gone records row id of a (row i of b, every column) as one b lacks.
func (d *DiffScanner) gone(id uint64, b *types.Batch, i int) {
	if !d.pk {
		d.goneSet[id] = struct{}{}
		d.use(chargeEntry)
		return
	}
	d.key = appendPKKey(d.key[:0], d.a, b, i)
	d.byKey[string(d.key)] = goneRow{id: id, sum: d.sum(b, i)}
	d.use(chargeEntry + int64(len(d.key)))
}

// eachRow calls fn for every row segment sg of view t committed, with
// columns cols.
func (d *DiffScanner) eachRow(t *TableDesc, sg segment, cols []int, fn func(id uint64, b *types.Batch, i int)) error {
	s, err := d.txn.segmentScan(t, sg, cols, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		b, ids, err := s.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		for i, id := range ids {
			fn(id, b, i)
		}
	}
}

// fetchEach calls fn for each of the rows ids of view t, with columns
// cols, read by id.
func (d *DiffScanner) fetchEach(t *TableDesc, cols []int, ids []uint64, fn func(id uint64, b *types.Batch, i int)) error {
	if len(ids) == 0 {
		return nil
	}
	rf, err := d.txn.NewRowFetcher(t, cols, 0)
	if err != nil {
		return err
	}
	defer rf.Close()
	for k := 0; k < len(ids); k += types.BatchSize {
		b, got, err := rf.Fetch(ids[k:min(k+types.BatchSize, len(ids))], nil)
		if err != nil {
			return err
		}
		for i, id := range got {
			fn(id, b, i)
		}
	}
	return nil
}

// Next returns the next batch of differing rows (every column of the
// table), how each differs, and their row ids; a nil batch at the end.
// The batch and slices are valid until the next call.
func (d *DiffScanner) Next() (*types.Batch, []DiffKind, []uint64, error) {
	for {
		switch d.phase {
		case 0: // rows b's segments inserted and kept
			if d.sc == nil {
				if d.segB == len(d.segsB) {
					d.phase++
					continue
				}
				sc, err := d.txn.segmentScan(d.b, d.segsB[d.segB], d.cols, d.db)
				if err != nil {
					return nil, nil, nil, err
				}
				d.sc = sc
			}
			b, ids, err := d.sc.Next()
			if err != nil {
				return nil, nil, nil, err
			}
			if b == nil {
				d.sc.Close()
				d.sc = nil
				d.segB++
				continue
			}
			if b, kinds, ids := d.added(b, ids); len(ids) > 0 {
				return b, kinds, ids, nil
			}
		case 1: // shared rows a deleted and b kept
			b, ids, err := d.fetchNext(d.b, d.addCommon)
			if err != nil {
				return nil, nil, nil, err
			}
			if b != nil {
				if b, kinds, ids := d.added(b, ids); len(ids) > 0 {
					return b, kinds, ids, nil
				}
				continue
			}
			d.phase++
			d.fetchAt = 0
			for _, g := range d.byKey {
				d.goneIDs = append(d.goneIDs, g.id)
			}
			for id := range d.goneSet {
				d.goneIDs = append(d.goneIDs, id)
			}
			d.byKey, d.goneSet = nil, nil
			slices.Sort(d.goneIDs)
		case 2: // rows of a that b lacks, not paired with one of b's
			b, ids, err := d.fetchNext(d.a, d.goneIDs)
			if b == nil || err != nil {
				d.phase++
				return nil, nil, nil, err
			}
			d.kinds = d.kinds[:0]
			for range ids {
				d.kinds = append(d.kinds, DiffDeleted)
			}
			return b, d.kinds, ids, nil
		default:
			return nil, nil, nil, nil
		}
	}
}

// added returns rows of b that a lacks, with their kinds: updated where
// a row of a that b lacks has the key (which then pairs with it), else
// added. A row a holds under the same id (a merge copied it) is the same
// row: left out, with its pair.
func (d *DiffScanner) added(b *types.Batch, ids []uint64) (*types.Batch, []DiffKind, []uint64) {
	d.kinds = d.kinds[:0]
	same := 0
	for i, id := range ids {
		k := DiffAdded
		if d.pk {
			d.key = appendPKKey(d.key[:0], d.a, b, i)
			if old, ok := d.byKey[string(d.key)]; ok {
				delete(d.byKey, string(d.key))
				k = DiffUpdated
				if old.id == id || old.sum == d.sum(b, i) {
					k = diffSame // the same row, or a copy of its values
				}
			}
		} else if _, ok := d.goneSet[id]; ok {
			delete(d.goneSet, id)
			k = diffSame
		}
		if k == diffSame {
			same++
		}
		d.kinds = append(d.kinds, k)
	}
	if same == 0 {
		return b, d.kinds, ids
	}
	// Keep the rows that differ.
	if d.out == nil {
		d.out = types.NewBatch(d.a.ColumnTypes(), types.BatchSize)
	}
	d.out.Reset()
	d.outIDs = d.outIDs[:0]
	kinds := d.kinds[:0]
	for i, k := range d.kinds {
		if k == diffSame {
			continue
		}
		for c := range d.out.Cols {
			d.out.Cols[c].AppendFrom(b.Cols[c], i)
		}
		d.outIDs = append(d.outIDs, ids[i])
		kinds = append(kinds, k)
	}
	d.out.SetLen(len(d.outIDs))
	return d.out, kinds, d.outIDs
}

// fetchNext reads the next batch of rows ids of view t (every column),
// from d.fetchAt on.
func (d *DiffScanner) fetchNext(t *TableDesc, ids []uint64) (*types.Batch, []uint64, error) {
	for d.fetchAt < len(ids) {
		if d.rf == nil || d.rf.t != t {
			if d.rf != nil {
				d.rf.Close()
			}
			rf, err := d.txn.NewRowFetcher(t, d.cols, 0)
			if err != nil {
				return nil, nil, err
			}
			d.rf = rf
		}
		part := ids[d.fetchAt:min(d.fetchAt+types.BatchSize, len(ids))]
		d.fetchAt += len(part)
		b, got, err := d.rf.Fetch(part, nil)
		if err != nil || len(got) > 0 {
			return b, got, err
		}
	}
	return nil, nil, nil
}

// Close releases the scanner and gives back what it charged.
func (d *DiffScanner) Close() {
	if d.charge != nil && d.charged > 0 {
		d.charge(-d.charged)
		d.charged = 0
	}
	if d.sc != nil {
		d.sc.Close()
		d.sc = nil
	}
	if d.rf != nil {
		d.rf.Close()
		d.rf = nil
	}
}
