package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// vecRows returns rows [start, start+n) of (id int8, v vector(4)), row i's
// vector being (i%97, i%89, i%83, i/1000): distinct points.
func vecRows(t *TableDesc, start, n int) *types.Batch {
	b := types.NewBatch(t.ColumnTypes(), n)
	for i := start; i < start+n; i++ {
		b.Cols[0].AppendInt(int64(i))
		var v []byte
		for _, f := range []float32{float32(i % 97), float32(i % 89), float32(i % 83), float32(i) / 1000} {
			v = binary.LittleEndian.AppendUint32(v, math.Float32bits(f))
		}
		b.Cols[1].AppendBytes(v)
	}
	return b
}

// openVecTable opens a database in dir (rows flushed only when asked, old
// versions not retained, no background compaction) with table vi (id
// int8, v vector(4)) holding vecRows 0..rows-1 in one flushed fragment.
func openVecTable(t *testing.T, dir string, rows int) (*DB, *TableDesc) {
	t.Helper()
	db, err := Open(Options{Dir: dir, FlushRows: 1 << 30, VersionRetention: -1, NoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, &TableDesc{Name: "vi", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "v", Type: types.VectorOf(4)},
	}})
	insert(t, db, tbl, vecRows(tbl, 0, rows))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, tbl
}

// TestVectorIndexSearch builds an hnsw index over flushed fragments and
// checks that searches use the graph for the fragments it covers (rows
// flushed later join it in the background), never return deleted rows,
// and that a compaction keeps the graph covering the merged fragment.
func TestVectorIndexSearch(t *testing.T) {
	db, tbl := openVecTable(t, t.TempDir(), 3000)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.CreateIndex(ctx, "vi", IndexDesc{Name: "vi_v_idx", Method: "hnsw", Column: 1, OpClass: "vector_l2_ops", M: 16, EfConstruction: 64}, false); err != nil {
		t.Fatal(err)
	}
	tbl, _ = db.Table("vi")
	ix := tbl.Indexes[0]
	q := []float32{5, 5, 5, 1}
	search := func(stage string) ([]uint64, []RowGroup) {
		t.Helper()
		txn := db.Begin()
		defer txn.Rollback()
		hits, rest, ok, err := txn.IndexSearch(tbl, ix.ID, q, 5, 100, nil)
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, err %v", stage, ok, err)
		}
		var ids []uint64
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		return ids, rest
	}
	ids, rest := search("built")
	if len(ids) != 5 {
		t.Fatalf("built: %d hits", len(ids))
	}
	for _, g := range rest {
		if g.Kind == GroupFragment {
			t.Fatalf("built: fragment group %+v left to the exact search", g)
		}
	}
	// The index ranks rows it holds from its own vectors, the distances
	// its search reports; an id it does not hold is left to the caller.
	{
		txn := db.Begin()
		hits, _, _, err := txn.IndexSearch(tbl, ix.ID, q, 5, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		ask := []uint64{hits[2].ID, 1 << 62, hits[0].ID}
		dist, found, ok, err := txn.IndexDistances(tbl, ix.ID, q, ask)
		txn.Rollback()
		if err != nil || !ok {
			t.Fatalf("IndexDistances: ok %v, err %v", ok, err)
		}
		if !found[0] || found[1] || !found[2] || dist[0] != hits[2].Distance || dist[2] != hits[0].Distance {
			t.Fatalf("IndexDistances(%v) = %v, %v; the search found %v", ask, dist, found, hits)
		}
		// And it hands out the rows' own vectors (an l2 index keeps them
		// as stored).
		txn = db.Begin()
		vecs, found, ok, err := txn.IndexVectors(tbl, ix.ID, ask)
		rows, _, ferr := txn.FetchRows(tbl, []int{1}, []uint64{ask[0]})
		txn.Rollback()
		if err != nil || ferr != nil || !ok || !found[0] || found[1] || !found[2] {
			t.Fatalf("IndexVectors(%v): found %v, ok %v, err %v, %v", ask, found, ok, err, ferr)
		}
		raw := rows.Cols[0].Bytes.Get(0)
		for i := range 4 {
			if want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); vecs[i] != want {
				t.Fatalf("IndexVectors: %v, the row holds %v", vecs[:4], raw)
			}
		}
	}
	// A deleted row leaves the results.
	txn := db.Begin()
	row, _, err := txn.FetchRows(tbl, []int{0}, ids[:1])
	if err != nil || row.Len() != 1 {
		t.Fatal(err)
	}
	victim := row.Cols[0].Ints[0]
	deleteIDs(t, txn, tbl, func(id int64) bool { return id == victim })
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	again, _ := search("deleted")
	for _, id := range again {
		if id == ids[0] {
			t.Fatalf("deleted row %d returned", id)
		}
	}
	// A flushed fragment joins the graph in the background.
	insert(t, db, tbl, vecRows(tbl, 3000, 2000))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, rest := search("flushed")
		frags := 0
		for _, g := range rest {
			if g.Kind == GroupFragment {
				frags++
			}
		}
		if frags == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flushed fragment never joined the graph")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A compaction merges the fragments; the graph still covers them.
	if _, err := db.Compact(ctx, "vi"); err != nil {
		t.Fatal(err)
	}
	ids2, rest2 := search("compacted")
	for _, g := range rest2 {
		if g.Kind == GroupFragment {
			t.Fatalf("compacted: fragment group %+v left to the exact search", g)
		}
	}
	if len(ids2) != 5 {
		t.Fatalf("compacted: %d hits", len(ids2))
	}
}

// TestVectorIndexPersists closes and reopens a database with an hnsw or
// ivfflat index: the graph is loaded from its saved copy (no row added again) and
// serves searches; DROP INDEX removes the copy.
func TestVectorIndexPersists(t *testing.T) {
	for _, ix := range []IndexDesc{
		{Name: "vi_v_idx", Method: "hnsw", Column: 1, OpClass: "vector_l2_ops", M: 8, EfConstruction: 32},
		{Name: "vi_v_idx", Method: "ivfflat", Column: 1, OpClass: "vector_l2_ops", Lists: 10},
	} {
		t.Run(ix.Method, func(t *testing.T) { testVectorIndexPersists(t, ix) })
	}
}

func testVectorIndexPersists(t *testing.T, desc IndexDesc) {
	dir := t.TempDir()
	ctx := context.Background()
	db, tbl := openVecTable(t, dir, 3000)
	if _, err := db.CreateIndex(ctx, "vi", desc, false); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, vecRows(tbl, 3000, 500))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return db.Stats().IndexRowsAdded.Load() == 3500 })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(Options{Dir: dir, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, _ = db.Table("vi")
	ix := tbl.Indexes[0]
	waitFor(t, func() bool { return db.IndexReady(tbl, ix.ID) })
	if n := db.Stats().IndexRowsAdded.Load(); n != 0 {
		t.Fatalf("%d rows added again after a restart", n)
	}
	txn := db.Begin()
	hits, rest, ok, err := txn.IndexSearch(tbl, ix.ID, []float32{5, 5, 5, 1}, 5, 10, nil)
	txn.Rollback()
	if err != nil || !ok || len(hits) != 5 {
		t.Fatalf("after the restart: %d hits, ok %v, err %v", len(hits), ok, err)
	}
	for _, g := range rest {
		if g.Kind == GroupFragment {
			t.Fatalf("after the restart: fragment group %+v left to the exact search", g)
		}
	}
	if _, err := db.DropIndex("vi_v_idx", false); err != nil {
		t.Fatal(err)
	}
	if keys, _ := db.Store().List(ctx, "tables/"); slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "/indexes/") }) {
		t.Fatalf("the dropped index's objects remain: %v", keys)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVectorIndexCatchesUp flushes a fragment while CREATE INDEX builds
// the graph, after it listed the fragments: the index adds it before
// CREATE INDEX returns instead of leaving it to exact search for good.
func TestVectorIndexCatchesUp(t *testing.T) {
	db, tbl := openVecTable(t, t.TempDir(), 1000)
	defer db.Close()
	ctx := context.Background()
	buildIndexHook = func() {
		buildIndexHook = nil
		insert(t, db, tbl, vecRows(tbl, 1000, 500))
		if err := db.Flush(ctx); err != nil {
			t.Error(err)
		}
	}
	defer func() { buildIndexHook = nil }()
	if _, err := db.CreateIndex(ctx, "vi", IndexDesc{Name: "vi_v_idx", Method: "hnsw", Column: 1, OpClass: "vector_l2_ops", M: 16, EfConstruction: 64}, false); err != nil {
		t.Fatal(err)
	}
	if buildIndexHook != nil {
		t.Fatal("the hook did not run")
	}
	tbl, _ = db.Table("vi")
	txn := db.Begin()
	defer txn.Rollback()
	hits, rest, ok, err := txn.IndexSearch(tbl, tbl.Indexes[0].ID, []float32{1, 2, 3, 4}, 5, 40, nil)
	if err != nil || !ok || len(hits) != 5 {
		t.Fatalf("search: %d hits, ok %v, err %v", len(hits), ok, err)
	}
	for _, g := range rest {
		if g.Kind == GroupFragment {
			t.Fatalf("fragment %d flushed during the build is left to exact search", g.Fragment)
		}
	}
}

// TestVectorIndexDropsDeletedRows deletes 40% of an indexed table and
// vacuums it: the graph, whose deleted rows stay as tombstones, is
// rebuilt in the background from its live rows, saved, and searches over
// it return only live rows, for hnsw and ivfflat.
func TestVectorIndexDropsDeletedRows(t *testing.T) {
	for _, method := range []string{"hnsw", "ivfflat"} {
		t.Run(method, func(t *testing.T) {
			dir := t.TempDir()
			db, tbl := openVecTable(t, dir, 5000)
			ctx := context.Background()
			ix := IndexDesc{Name: "vi_v_idx", Method: method, Column: 1, OpClass: "vector_l2_ops", M: 16, EfConstruction: 64, Lists: 10}
			if _, err := db.CreateIndex(ctx, "vi", ix, false); err != nil {
				t.Fatal(err)
			}
			tbl, _ = db.Table("vi")
			txn := db.Begin()
			if n := deleteIDs(t, txn, tbl, func(id int64) bool { return id%5 < 2 }); n != 2000 {
				t.Fatalf("deleted %d rows", n)
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Vacuum(ctx, "vi"); err != nil {
				t.Fatal(err)
			}
			vi := db.tables[tableKey{PostgresOID, "vi"}].vindexes[tbl.Indexes[0].ID]
			deadline := time.Now().Add(20 * time.Second)
			for db.stats.IndexRebuilds.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the index was not rebuilt")
				}
				time.Sleep(10 * time.Millisecond)
			}
			vi.adding.Lock() // the save after the rebuild is done
			vi.mu.RLock()
			live, del := vi.graph.Len(), vi.graph.(interface{ Deleted() int }).Deleted()
			vi.mu.RUnlock()
			vi.adding.Unlock()
			if live != 3000 || del != 0 {
				t.Fatalf("after the rebuild: %d live, %d deleted; want 3000, 0", live, del)
			}
			txn = db.Begin()
			hits, rest, ok, err := txn.IndexSearch(tbl, tbl.Indexes[0].ID, []float32{5, 5, 5, 1}, 50, 400, nil)
			if err != nil || !ok || len(hits) != 50 {
				t.Fatalf("search: %d hits, ok %v, err %v", len(hits), ok, err)
			}
			for _, g := range rest {
				if g.Kind == GroupFragment {
					t.Fatalf("fragment %d left to exact search", g.Fragment)
				}
			}
			ids := make([]uint64, len(hits))
			for i, h := range hits {
				ids[i] = h.ID
			}
			rows, _, err := txn.FetchRows(tbl, []int{0}, ids)
			txn.Rollback()
			if err != nil || rows.Len() != len(ids) {
				t.Fatalf("fetching the hits: %v, %d rows", err, rows.Len())
			}
			for _, id := range rows.Cols[0].Ints {
				if id%5 < 2 {
					t.Fatalf("deleted row %d returned", id)
				}
			}
			// The rebuilt copy is what a restart loads.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = Open(Options{Dir: dir, FlushRows: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			deadline = time.Now().Add(20 * time.Second)
			for !db.IndexReady(tbl, tbl.Indexes[0].ID) {
				if time.Now().After(deadline) {
					t.Fatal("the index was not loaded")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n := db.stats.IndexRowsAdded.Load(); n != 0 {
				t.Fatalf("the restart added %d rows again", n)
			}
			vi = db.tables[tableKey{PostgresOID, "vi"}].vindexes[tbl.Indexes[0].ID]
			vi.mu.RLock()
			live, del = vi.graph.Len(), vi.graph.(interface{ Deleted() int }).Deleted()
			vi.mu.RUnlock()
			if live != 3000 || del != 0 {
				t.Fatalf("after the restart: %d live, %d deleted; want 3000, 0", live, del)
			}
		})
	}
}

// TestReindex rebuilds an ivfflat index made on an empty table, whose
// lists were trained on the first rows added alone: REINDEX trains them
// on every row, and the index then has the lists it asked for.
func TestReindex(t *testing.T) {
	db, tbl := openVecTable(t, t.TempDir(), 0)
	defer db.Close()
	ctx := context.Background()
	ix := IndexDesc{Name: "vi_v_idx", Method: "ivfflat", Column: 1, OpClass: "vector_l2_ops", Lists: 20}
	if _, err := db.CreateIndex(ctx, "vi", ix, false); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, vecRows(tbl, 0, 5))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, vecRows(tbl, 5, 3000))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, _ = db.Table("vi")
	vi, err := db.vectorIndexOf(tbl, tbl.Indexes[0].ID)
	if err != nil || vi == nil {
		t.Fatalf("index state: %v", err)
	}
	lists := func() int {
		vi.mu.RLock()
		defer vi.mu.RUnlock()
		return vi.graph.(ivfLists).Lists()
	}
	waitFor(t, func() bool { return db.Stats().IndexRowsAdded.Load() == 3005 })
	if n := lists(); n >= 20 {
		t.Fatalf("%d lists before REINDEX: the test needs an index trained on few rows", n)
	}
	if err := db.Reindex(ctx, "vi_v_idx", false); err != nil {
		t.Fatal(err)
	}
	if n := lists(); n != 20 {
		t.Fatalf("%d lists after REINDEX, want 20", n)
	}
	if err := db.Reindex(ctx, "vi", true); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().IndexRebuilds.Load(); n != 2 {
		t.Fatalf("%d rebuilds, want 2", n)
	}
	for _, tc := range []struct {
		name  string
		table bool
		code  string
	}{{"vi", false, "42809"}, {"nope", false, "42704"}, {"nope", true, "42P01"}} {
		err := db.Reindex(ctx, tc.name, tc.table)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || string(pe.Code) != tc.code {
			t.Errorf("Reindex(%q, %v): %v, want SQLSTATE %s", tc.name, tc.table, err, tc.code)
		}
	}
}

// TestVectorIndexSnapshot searches the graph from a txn that began before
// rows nearer the query were flushed and joined the graph: that txn must
// not see them, a later one must.
func TestVectorIndexSnapshot(t *testing.T) {
	db, tbl := openVecTable(t, t.TempDir(), 2000)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.CreateIndex(ctx, "vi", IndexDesc{Name: "vi_v_idx", Method: "hnsw", Column: 1, OpClass: "vector_l2_ops", M: 16, EfConstruction: 64}, false); err != nil {
		t.Fatal(err)
	}
	tbl, _ = db.Table("vi")
	ixID := tbl.Indexes[0].ID
	q := []float32{1000, 1000, 1000, 1000}
	old := db.Begin()
	defer old.Rollback()
	if _, err := old.RowGroups(tbl); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	// Rows at the query itself, flushed into a fragment of their own.
	b := types.NewBatch(tbl.ColumnTypes(), 3)
	for i := range 3 {
		b.Cols[0].AppendInt(int64(100000 + i))
		var v []byte
		for _, f := range q {
			v = binary.LittleEndian.AppendUint32(v, math.Float32bits(f))
		}
		b.Cols[1].AppendBytes(v)
	}
	insert(t, db, tbl, b)
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return db.Stats().IndexRowsAdded.Load() == 2003 })
	nearest := func(txn *Txn) []IndexHit {
		t.Helper()
		hits, _, ok, err := txn.IndexSearch(tbl, ixID, q, 3, 40, nil)
		if err != nil || !ok {
			t.Fatalf("search: ok %v, err %v", ok, err)
		}
		return hits
	}
	for _, h := range nearest(old) {
		if h.Distance == 0 {
			t.Fatalf("a txn older than the flush found row %d of it", h.ID)
		}
	}
	now := db.Begin()
	defer now.Rollback()
	if hits := nearest(now); len(hits) != 3 || hits[2].Distance != 0 {
		t.Fatalf("a new txn found %v, want the 3 flushed rows", hits)
	}
}
