package storage

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Compaction merges small fragments into one whose chunks reach the
// table's chunk size, and drops the rows whose deletion no retained version
// or open transaction can miss. It writes the new fragment first, then
// swaps it for the old ones in one commit; readers of older snapshots keep
// reading the old fragments, whose objects VACUUM deletes later.

// maxCompactFragments bounds the fragments one compaction merges.
const maxCompactFragments = 64

// Compact runs one compaction pass over table name of database postgres
// and reports how many fragments it merged.
func (db *DB) Compact(ctx context.Context, name string) (int, error) {
	t, err := db.Table(name)
	if err != nil {
		return 0, err
	}
	ts, ok := db.state(t.ID)
	if !ok {
		return 0, undefinedTable(name)
	}
	return db.compactTable(ctx, ts)
}

// horizon returns the version up to which deletions may be applied
// physically: no retained version and no open transaction reads an older
// one. Callers hold db.commitMu.
func (db *DB) horizon(r pebble.Reader, ts *tableState) (uint64, error) {
	h := ts.head
	lo, hi := sectionSpan(ts.desc.ID, tagVersion)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, ioErrorf(err, "reading versions")
	}
	if it.First() {
		if v, ok := idFromKey(it.Key()); ok && v < h {
			h = v
		}
	}
	if err := it.Close(); err != nil {
		return 0, ioErrorf(err, "reading versions")
	}
	for _, seq := range db.openTxns {
		if v := ts.visibleHeadAt(seq); v < h {
			h = v
		}
	}
	return h, nil
}

func (db *DB) compactTable(ctx context.Context, ts *tableState) (int, error) {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	t := ts.desc
	if _, live := db.state(t.ID); !live {
		return 0, nil
	}
	began := time.Now()
	db.commitMu.Lock()
	snap := db.kv.NewSnapshot()
	horizon, err := db.horizon(snap, ts)
	db.commitMu.Unlock()
	defer snap.Close()
	if err != nil {
		return 0, err
	}
	frags, err := db.liveFragments(snap, t)
	if err != nil {
		return 0, err
	}
	s := newScanner(db, t, ScanOptions{Cols: allColumns(len(t.Columns))})
	defer s.Close()
	if err := s.loadDeleted(snap, horizon); err != nil {
		return 0, err
	}
	picked := pickCompaction(frags, s.deleted, t.chunkSize())
	if len(picked) == 0 {
		return 0, nil
	}
	for _, f := range picked {
		s.sources = append(s.sources, scanSource{frag: f, kind: srcFragment})
	}
	s.wantXmin = true
	s.dropped = []uint64{}
	w, err := db.newFragWriter(ctx, t, true)
	if err != nil {
		return 0, err
	}
	defer w.done()
	rows := 0
	for {
		b, ids, err := s.Next()
		if err != nil {
			w.abort()
			return 0, err
		}
		if b == nil {
			break
		}
		if err := w.add(b, ids, s.xmin); err != nil {
			w.abort()
			return 0, err
		}
		rows += len(ids)
	}
	var added []*fragment
	if rows > 0 {
		f, err := w.finish()
		if err != nil {
			w.abort()
			return 0, err
		}
		added = append(added, f)
	} else {
		w.abort()
	}
	if db.lapsed(began) {
		w.abort()
		return 0, db.errLapsed()
	}
	if err := db.commitFragments(ts, opCompact, added, picked, s.dropped, nil, nil); err != nil {
		w.abort()
		if errors.Is(err, errGone) {
			return 0, nil
		}
		return 0, err
	}
	db.log.Debug("storage: compacted", "table", t.Name, "fragments", len(picked), "rows", rows, "dropped", len(s.dropped))
	return len(picked), nil
}

// compactGap is the widest gap of row ids a flushed or compacted fragment
// spans: servers of one location take row ids in blocks of rowIDBlock
// each, and a fragment whose range held the ids another server has still
// to hand out would overlap, and so block the compaction of, every
// fragment of that server's later rows.
const compactGap = rowIDBlock / 2

// pickCompaction chooses fragments to merge: small ones (every column one
// chunk under a quarter of the chunk size) when there are at least two,
// and any with deleted rows to drop. The chosen fragments' row id ranges
// do not overlap, so their rows concatenated in order stay sorted: of
// the candidates, as many as can be taken without overlap (earliest end
// first, so that one wide fragment does not keep out the many it
// overlaps), in the run with the most of them whose gaps are at most
// compactGap.
func pickCompaction(frags []*fragment, deleted []uint64, chunkSize int64) []*fragment {
	var cands []*fragment
	small, withDel := 0, 0
	for _, f := range frags {
		isSmall := chunksBelow(f, chunkSize/4)
		i := sort.Search(len(deleted), func(i int) bool { return deleted[i] >= f.MinRow })
		hasDel := i < len(deleted) && deleted[i] <= f.MaxRow
		if isSmall || hasDel {
			cands = append(cands, f)
			if isSmall {
				small++
			}
			if hasDel {
				withDel++
			}
		}
	}
	if small < 2 && withDel == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].MaxRow < cands[j].MaxRow })
	var chosen []*fragment
	for _, f := range cands {
		if len(chosen) > 0 && f.MinRow <= chosen[len(chosen)-1].MaxRow {
			continue
		}
		chosen = append(chosen, f)
	}
	// The run of chosen fragments, no gap wider than compactGap, worth
	// most: the most fragments, or (for a lone one) rows to drop.
	var out []*fragment
	for start := 0; start < len(chosen); {
		end := start + 1
		for end < len(chosen) && end-start < maxCompactFragments && chosen[end].MinRow-chosen[end-1].MaxRow <= compactGap {
			end++
		}
		if run := chosen[start:end]; len(run) > len(out) || len(out) == 1 && !hasDeleted(out[0], deleted) && hasDeleted(run[0], deleted) {
			out = run
		}
		start = end
	}
	if len(out) == 1 && !hasDeleted(out[0], deleted) {
		// A lone fragment is worth rewriting only to drop rows.
		return nil
	}
	return slices.Clone(out)
}

// hasDeleted tells whether some of f's rows are in deleted (sorted).
func hasDeleted(f *fragment, deleted []uint64) bool {
	i := sort.Search(len(deleted), func(i int) bool { return deleted[i] >= f.MinRow })
	return i < len(deleted) && deleted[i] <= f.MaxRow
}

// chunksBelow reports whether every column of f is a single chunk smaller
// than limit stored bytes: the fragment of a small flush.
func chunksBelow(f *fragment, limit int64) bool {
	for _, cs := range f.Cols {
		if len(cs) != 1 || cs[0].Size >= limit {
			return false
		}
	}
	return true
}
