package storage

import "github.com/cockroachdb/pebble/v2"

// Row groups split a table's rows, as one snapshot sees them, into runs
// stored together, so that a reader can visit them in any order (the
// shuffled, sharded tensor stream) and read each as one scan. Together the
// groups of a snapshot hold every row of the table exactly once.

// RowGroupRows is the most rows of a fragment in one row group.
const RowGroupRows = 16384

// RowGroupKind says where a row group's rows are stored.
type RowGroupKind uint8

// Row group kinds.
const (
	// GroupFragment is the rows [Start, End) of fragment Fragment.
	GroupFragment RowGroupKind = iota + 1
	// GroupBuffered is every buffered row.
	GroupBuffered
	// GroupOwn is the rows the transaction itself inserted.
	GroupOwn
)

// RowGroup is one run of a table's rows (see Txn.RowGroups).
type RowGroup struct {
	Kind       RowGroupKind
	Fragment   uint64
	Start, End int64
}

// RowGroups lists the row groups of table t in the txn's snapshot, in
// scan order: runs of at most RowGroupRows rows of each fragment, then the
// buffered rows, then the txn's own inserts (when it has any). A scan with
// ScanOptions.Group reads one of them; deleted rows are skipped as in any
// scan, so a group may read back fewer rows than its range.
func (txn *Txn) RowGroups(t *TableDesc) ([]RowGroup, error) {
	if err := txn.check(); err != nil {
		return nil, err
	}
	var gs []RowGroup
	for _, lt := range viewTables(t) {
		frags, err := txn.liveFragments(lt)
		if err != nil {
			return nil, err
		}
		for _, f := range frags {
			for lo := int64(0); lo < f.Rows; lo += RowGroupRows {
				gs = append(gs, RowGroup{Kind: GroupFragment, Fragment: f.ID, Start: lo, End: min(f.Rows, lo+RowGroupRows)})
			}
		}
	}
	gs = append(gs, RowGroup{Kind: GroupBuffered})
	if tt := txn.tables[t.ID]; tt != nil && (tt.w != nil || len(tt.pendingIDs) > 0) {
		gs = append(gs, RowGroup{Kind: GroupOwn})
	}
	return gs, nil
}

// restrictToGroup keeps the sources of group g, and in startFragment its
// row range: the buffered rows of each table of the view are one group.
func (s *Scanner) restrictToGroup(g *RowGroup) {
	kept := s.sources[:0]
	for _, src := range s.sources {
		var keep bool
		switch {
		case src.own:
			keep = g.Kind == GroupOwn
		case src.kind == srcBuffered:
			keep = g.Kind == GroupBuffered
		default:
			keep = g.Kind == GroupFragment && src.frag.ID == g.Fragment
		}
		if keep {
			kept = append(kept, src)
		}
	}
	s.sources = kept
	if g.Kind == GroupFragment {
		s.groupRange = &[2]int64{g.Start, g.End}
	}
}

// fragRange returns the rows of f a scan reads: all of them, or those of
// its row group.
func (s *Scanner) fragRange(f *fragment) [2]int64 {
	if s.groupRange == nil {
		return [2]int64{0, f.Rows}
	}
	return [2]int64{max(0, s.groupRange[0]), min(f.Rows, s.groupRange[1])}
}

// HasDeletedRows reports whether any row of t is deleted in the txn's
// view (its snapshot and its own deletes): when none is, a fragment row
// group holds exactly End-Start visible rows, and a reader can skip it
// whole by its count.
func (txn *Txn) HasDeletedRows(t *TableDesc) (bool, error) {
	if err := txn.check(); err != nil {
		return false, err
	}
	del, err := txn.deletedIDs(t)
	return len(del) > 0, err
}

// StoredBytes returns how many stored bytes the chunks of each of columns
// cols of t's committed fragments hold, in the txn's snapshot: what a
// scan of those columns reads, to weigh one plan of reading against
// another.
func (txn *Txn) StoredBytes(t *TableDesc, cols []int) ([]int64, error) {
	if err := txn.check(); err != nil {
		return nil, err
	}
	var frags []*fragment
	for _, lt := range viewTables(t) {
		fs, err := txn.liveFragments(lt)
		if err != nil {
			return nil, err
		}
		frags = append(frags, fs...)
	}
	out := make([]int64, len(cols))
	for _, f := range frags {
		for j, c := range cols {
			if c < 0 || c > RowIDColumn(t) {
				return nil, assertf("stored bytes of %q: column %d out of range", t.Name, c)
			}
			for _, ck := range f.Cols[c] {
				out[j] += ck.Size
			}
		}
	}
	return out, nil
}

// viewTables returns the descriptors of the tables a scan of view t
// reads: each layer's of a branch, then t's own.
func viewTables(t *TableDesc) []*TableDesc {
	out := make([]*TableDesc, 0, len(t.Base)+1)
	for _, l := range t.Base {
		lt := *t
		lt.ID, lt.Base = l.Table, nil
		out = append(out, &lt)
	}
	return append(out, t)
}

// EstimatedRows returns about how many rows table t holds in the txn's
// snapshot, for the planner's estimates: the rows of its live fragments,
// deleted ones included, and its committed buffered rows, counted up to
// maxCountedBuffered.
func (txn *Txn) EstimatedRows(t *TableDesc) (int64, error) {
	if err := txn.check(); err != nil {
		return 0, err
	}
	var n int64
	for _, lt := range viewTables(t) {
		frags, err := txn.liveFragments(lt)
		if err != nil {
			return 0, err
		}
		for _, f := range frags {
			n += f.Rows
		}
		b, err := countSection(txn.snap, lt, tagRow, maxCountedBuffered)
		if err != nil {
			return 0, err
		}
		n += b
	}
	return n, nil
}

// maxCountedBuffered bounds the buffered rows EstimatedRows counts one by
// one (a table flushes them to fragments long before).
const maxCountedBuffered = 1 << 16

// countSection counts the keys of t's section tag in r, up to limit.
func countSection(r pebble.Reader, t *TableDesc, tag byte, limit int64) (int64, error) {
	lo, hi := sectionSpan(t.ID, tag)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, ioErrorf(err, "reading table %q", t.Name)
	}
	defer it.Close()
	var n int64
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		return 0, ioErrorf(err, "reading table %q", t.Name)
	}
	return n, nil
}
