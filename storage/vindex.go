package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
	"github.com/deeplaked/deeplaked/vector"
	"github.com/deeplaked/deeplaked/vector/hnsw"
	"github.com/deeplaked/deeplaked/vector/ivf"
)

// vectorIndex is the in-memory state of an hnsw index: the graph over the
// rows of the table's fragments, and which fragments it covers.
//
// A search uses the graph for the fragments that are both covered (every
// row added) and live in its snapshot, skipping rows deleted in the
// snapshot, and searches the rest of the table exactly (buffered rows,
// fragments not covered yet, the txn's own rows). Graph nodes keep their
// fragment (nodeFrag), so rows of a fragment the snapshot does not see are
// never returned from the graph. Fragments flushed later are added in the
// background; compaction moves rows between fragments without touching the
// graph.
type vectorIndex struct {
	desc IndexDesc
	typ  types.Type

	graph annIndex

	// mu guards the maps; searches hold it shared while they run.
	mu       sync.RWMutex
	nodeFrag map[uint64]uint64   // row id → fragment id
	fragRows map[uint64][]uint64 // fragment id → its row ids in the graph
	covered  map[uint64]bool     // fragments whose every row is in the graph
	// adding serializes additions of fragments and saves; under it,
	// savedKey is the object of the last saved copy (savedNodes nodes) and
	// saveSeq numbers the copies. dirty (under mu) marks changes since.
	adding     sync.Mutex
	savedKey   string
	savedNodes int
	saveSeq    uint64
	dirty      bool
	// compacting (under mu) is set while compactGraph rebuilds the graph.
	compacting bool
}

// annIndex is the structure behind a vector index: hnsw's graph (or
// another method's), over float32 vectors identified by row ids.
type annIndex interface {
	AddBatch(ids []uint64, vecs []float32, workers int) error
	Contains(id uint64) bool
	Delete(id uint64) bool
	Len() int
	Size() int64
	WriteTo(w io.Writer) (int64, error)
	// Distances computes the SQL operator's distance from q to each of
	// ids that the index holds (found), from the vectors it keeps.
	Distances(q []float32, ids []uint64, dist []float32, found []bool) error
	// Vectors copies the stored vectors of ids (normalized under cosine).
	Vectors(ids []uint64, dst []float32, found []bool)
	// search returns the k nearest vectors passing filter, ascending, with
	// the SQL operator's distance; param is hnsw's ef_search.
	search(q []float32, k, param int, filter func(id uint64) bool) ([]IndexHit, error)
}

// IndexHit is a row a vector index found: its id and the SQL operator's
// distance (Euclidean for <->, the negative inner product for <#>, the
// cosine distance for <=>).
type IndexHit struct {
	ID       uint64
	Distance float32
}

// hnswGraph is an hnsw.Index as an annIndex.
type hnswGraph struct{ *hnsw.Index }

func (g hnswGraph) search(q []float32, k, ef int, filter func(id uint64) bool) ([]IndexHit, error) {
	res, err := g.Search(q, k, max(ef, k), filter, nil)
	if err != nil {
		return nil, err
	}
	hits := make([]IndexHit, len(res))
	for i, r := range res {
		hits[i] = IndexHit{ID: r.ID, Distance: r.Distance}
	}
	return hits, nil
}

// indexMetric returns the graph metric of an operator class.
func indexMetric(opclass string) (hnsw.Metric, bool) {
	switch opclass {
	case "vector_l2_ops", "halfvec_l2_ops":
		return hnsw.L2, true
	case "vector_ip_ops", "halfvec_ip_ops":
		return hnsw.InnerProduct, true
	case "vector_cosine_ops", "halfvec_cosine_ops":
		return hnsw.Cosine, true
	case "vector_l1_ops", "halfvec_l1_ops":
		return hnsw.L1, true
	}
	return 0, false
}

// newVectorIndex returns the empty state of index ix of t.
func newVectorIndex(t *TableDesc, ix IndexDesc) (*vectorIndex, error) {
	metric, ok := indexMetric(ix.OpClass)
	if !ok {
		return nil, pgerror.Unimplementedf("%s indexes with %s are not supported yet", ix.Method, ix.OpClass)
	}
	typ := t.Columns[ix.Column].Type
	g, err := newANN(ix, typ, metric)
	if err != nil {
		return nil, err
	}
	return &vectorIndex{desc: ix, typ: typ, graph: g, nodeFrag: make(map[uint64]uint64),
		fragRows: make(map[uint64][]uint64), covered: make(map[uint64]bool)}, nil
}

// newANN returns an empty structure for index ix over vectors of typ.
func newANN(ix IndexDesc, typ types.Type, metric hnsw.Metric) (annIndex, error) {
	var g annIndex
	switch ix.Method {
	case "hnsw":
		h, err := hnsw.New(hnsw.Config{Dim: typ.Width, M: ix.M, EfConstruction: ix.EfConstruction, Metric: metric, Seed: ix.ID})
		if err != nil {
			return nil, pgerror.Wrapf(err, pgerror.InvalidParameterValue, "index %q", ix.Name)
		}
		g = hnswGraph{h}
	case "ivfflat":
		l, err := ivf.New(ivf.Config{Dim: typ.Width, Lists: ix.Lists, Metric: ivfMetric[metric], Seed: ix.ID})
		if err != nil {
			return nil, pgerror.Wrapf(err, pgerror.InvalidParameterValue, "index %q", ix.Name)
		}
		g = ivfLists{l}
	default:
		return nil, pgerror.Unimplementedf("%s indexes are not supported yet", ix.Method)
	}
	return g, nil
}

// ivfMetric maps the graph metrics to ivf's, which are their own type.
var ivfMetric = map[hnsw.Metric]ivf.Metric{hnsw.L2: ivf.L2, hnsw.InnerProduct: ivf.InnerProduct, hnsw.Cosine: ivf.Cosine}

// ivfLists is an ivf.Index (ivfflat) as an annIndex; its search parameter
// is ivfflat.probes.
type ivfLists struct{ *ivf.Index }

func (g ivfLists) search(q []float32, k, probes int, filter func(id uint64) bool) ([]IndexHit, error) {
	res, err := g.Search(q, k, probes, filter, nil)
	if err != nil {
		return nil, err
	}
	hits := make([]IndexHit, len(res))
	for i, r := range res {
		hits[i] = IndexHit{ID: r.ID, Distance: r.Distance}
	}
	return hits, nil
}

// readANN reads a saved index structure of method.
func readANN(method string, data []byte) (annIndex, int, error) {
	if method == "ivfflat" {
		l, err := ivf.Read(bytes.NewReader(data))
		if err != nil {
			return nil, 0, err
		}
		return ivfLists{l}, l.Len(), nil
	}
	h, err := hnsw.Read(bytes.NewReader(data))
	if err != nil {
		return nil, 0, err
	}
	return hnswGraph{h}, h.Len(), nil
}

// trainIVF trains a new ivfflat index on a sample of the table's vectors
// spread over its fragments (every n-th row), as pgvector samples the
// table at build time.
func (db *DB) trainIVF(ctx context.Context, t *TableDesc, vi *vectorIndex, frags []*fragment) error {
	l := vi.graph.(ivfLists)
	var total int64
	for _, f := range frags {
		total += f.Rows
	}
	want := int64(ivf.SampleSize(vi.desc.Lists))
	step := max(1, total/want)
	var sample []float32
	var seen int64
	for _, f := range frags {
		s := newScanner(db, t, ScanOptions{Cols: []int{vi.desc.Column}, Borrow: true})
		s.sources = []scanSource{{frag: f, kind: srcFragment}}
		for {
			if err := ctx.Err(); err != nil {
				s.Close()
				return pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
			}
			b, _, err := s.Next()
			if err != nil {
				s.Close()
				return err
			}
			if b == nil {
				break
			}
			v := b.Cols[0]
			for i := range v.Len() {
				val := v.Bytes.Get(i)
				if seen%step == 0 && !v.Nulls[i] && len(val) == vi.typ.Width*vi.typ.VectorElemSize() {
					sample = appendVector(sample, vi.typ, val)
				}
				seen++
			}
		}
		s.Close()
	}
	if len(sample) == 0 {
		return nil // trained on its first rows when some come
	}
	if err := l.Train(sample, runtime.GOMAXPROCS(0)); err != nil && !errors.Is(err, ivf.ErrEmptySample) {
		return pgerror.Wrapf(err, pgerror.InternalError, "building index %q", vi.desc.Name)
	}
	return nil
}

// buildIndex builds index ix of ts over the table's fragments, in
// parallel, and installs it.
func (db *DB) buildIndex(ctx context.Context, ts *tableState, ix IndexDesc, load bool) error {
	t := ts.desc
	var vi *vectorIndex
	if load {
		vi = db.loadIndex(ctx, ts, ix)
	}
	if vi == nil {
		var err error
		if vi, err = newVectorIndex(t, ix); err != nil {
			return err
		}
	}
	snap := db.kv.NewSnapshot()
	frags, err := db.liveFragments(snap, t)
	snap.Close()
	if err != nil {
		return err
	}
	if l, ok := vi.graph.(ivfLists); ok && !l.Trained() {
		if err := db.trainIVF(ctx, t, vi, frags); err != nil {
			return err
		}
	}
	for _, f := range frags {
		if vi.covered[f.ID] {
			continue
		}
		if err := db.addFragment(ctx, t, vi, f); err != nil {
			return err
		}
	}
	vi.adding.Lock()
	if vi.savedKey == "" || vi.dirty {
		if err := db.saveIndex(ctx, t, vi); err != nil {
			vi.adding.Unlock()
			return err
		}
	}
	vi.adding.Unlock()
	if buildIndexHook != nil {
		buildIndexHook()
	}
	ts.vmu.Lock()
	if ts.vindexes == nil {
		ts.vindexes = make(map[uint64]*vectorIndex)
	}
	ts.vindexes[ix.ID] = vi
	ts.vmu.Unlock()
	// Fragments committed while the graph was built (flushed, or made by
	// a compaction) were not handed to it; later ones reach it through
	// indexesCommitted. addFragment skips rows the graph holds.
	snap = db.kv.NewSnapshot()
	frags, err = db.liveFragments(snap, t)
	snap.Close()
	if err != nil {
		return err
	}
	for _, f := range frags {
		vi.mu.RLock()
		done := vi.covered[f.ID]
		vi.mu.RUnlock()
		if !done {
			if err := db.addFragment(ctx, t, vi, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildIndexHook, when set (by tests), runs after buildIndex has listed
// the fragments it builds the graph from, before it installs the graph.
var buildIndexHook func()

// addFragment adds the rows of fragment f to vi's graph, in parallel, and
// marks f covered.
func (db *DB) addFragment(ctx context.Context, t *TableDesc, vi *vectorIndex, f *fragment) error {
	vi.adding.Lock()
	defer vi.adding.Unlock()
	s := newScanner(db, t, ScanOptions{Cols: []int{vi.desc.Column}, Borrow: true})
	defer s.Close()
	s.sources = []scanSource{{frag: f, kind: srcFragment}}
	dim := vi.typ.Width
	var ids, present []uint64
	var vecs []float32
	for {
		if err := ctx.Err(); err != nil {
			return pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
		}
		b, bids, err := s.Next()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		v := b.Cols[0]
		for i, id := range bids {
			val := v.Bytes.Get(i)
			switch {
			case v.Nulls[i] || len(val) != dim*vi.typ.VectorElemSize():
			case vi.graph.Contains(id):
				// Added before: a fragment compacted into this one, or
				// a graph loaded from its saved copy.
				present = append(present, id)
			default:
				ids = append(ids, id)
				vecs = appendVector(vecs, vi.typ, val)
			}
		}
	}
	if err := vi.graph.AddBatch(ids, vecs, runtime.GOMAXPROCS(0)); err != nil {
		return pgerror.Wrapf(err, pgerror.InternalError, "building index %q", vi.desc.Name)
	}
	db.stats.IndexRowsAdded.Add(int64(len(ids)))
	vi.mu.Lock()
	rows := append(present, ids...)
	for _, id := range rows {
		vi.nodeFrag[id] = f.ID
	}
	vi.fragRows[f.ID] = rows
	vi.covered[f.ID] = true
	vi.dirty = true
	vi.mu.Unlock()
	return nil
}

// compactGraphShare is the share of an index's entries that may be
// deleted rows before the structure is rebuilt without them (pgvector's
// VACUUM repairs its graph instead): tombstones still cost every search
// that walks through them, and their memory.
const compactGraphShare = 0.25

// staleShare returns the share of the graph's entries that are deleted
// rows. The caller holds vi.mu.
func (vi *vectorIndex) staleShare() float64 {
	type deletedCounter interface{ Deleted() int }
	dc, ok := vi.graph.(deletedCounter)
	if !ok {
		return 0
	}
	del := dc.Deleted()
	if del < 1000 {
		return 0
	}
	return float64(del) / float64(del+vi.graph.Len())
}

// compactGraph rebuilds vi's structure from the vectors of its live rows,
// which it keeps, leaving the deleted rows out, and saves it. Additions
// wait meanwhile; searches go on over the old structure until the new one
// replaces it. Rows deleted meanwhile are deleted from the new one too.
func (db *DB) compactGraph(ctx context.Context, t *TableDesc, vi *vectorIndex) error {
	vi.adding.Lock()
	defer vi.adding.Unlock()
	defer func() {
		vi.mu.Lock()
		vi.compacting = false
		vi.mu.Unlock()
	}()
	vi.mu.RLock()
	old := vi.graph
	ids := make([]uint64, 0, len(vi.nodeFrag))
	for id := range vi.nodeFrag {
		ids = append(ids, id)
	}
	vi.mu.RUnlock()
	slices.Sort(ids)
	dim := vi.typ.Width
	vecs := make([]float32, len(ids)*dim)
	found := make([]bool, len(ids))
	vi.mu.RLock()
	old.Vectors(ids, vecs, found)
	vi.mu.RUnlock()
	n := 0
	for i, id := range ids {
		if found[i] {
			ids[n] = id
			copy(vecs[n*dim:(n+1)*dim], vecs[i*dim:(i+1)*dim])
			n++
		}
	}
	ids, vecs = ids[:n], vecs[:n*dim]
	metric, _ := indexMetric(vi.desc.OpClass)
	g, err := newANN(vi.desc, vi.typ, metric)
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	if l, ok := g.(ivfLists); ok && n > 0 {
		step := max(1, n/ivf.SampleSize(vi.desc.Lists))
		var sample []float32
		for i := 0; i < n; i += step {
			sample = append(sample, vecs[i*dim:(i+1)*dim]...)
		}
		if err := l.Train(sample, workers); err != nil {
			return pgerror.Wrapf(err, pgerror.InternalError, "rebuilding index %q", vi.desc.Name)
		}
	}
	// In pieces, so that closing the database need not wait for all of it.
	const piece = 50000
	for lo := 0; lo < n; lo += piece {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+piece, n)
		if err := g.AddBatch(ids[lo:hi], vecs[lo*dim:hi*dim], workers); err != nil {
			return pgerror.Wrapf(err, pgerror.InternalError, "rebuilding index %q", vi.desc.Name)
		}
	}
	vi.mu.Lock()
	for _, id := range ids {
		if _, live := vi.nodeFrag[id]; !live {
			g.Delete(id)
		}
	}
	vi.graph = g
	vi.dirty = true
	vi.mu.Unlock()
	db.stats.IndexRebuilds.Add(1)
	return db.saveIndex(ctx, t, vi)
}

// indexSaveGrowth is how much a graph grows (as a fraction of its saved
// size) before background additions save it again; Close saves the rest.
const indexSaveGrowth = 0.25

// indexObjectKey names the object holding a saved graph. Each server of
// a location saves its own graphs: node names it.
func indexObjectKey(table, index uint64, node string, seq uint64) string {
	return fmt.Sprintf("tables/%d/indexes/%d/%s-%016x.hnsw", table, index, node, seq)
}

// saveIndex writes vi's graph as a new object and records it, with the
// fragments it covers, in the catalog; the previous copy is deleted. The
// caller holds vi.adding, so the graph does not change meanwhile.
func (db *DB) saveIndex(ctx context.Context, t *TableDesc, vi *vectorIndex) error {
	var buf bytes.Buffer
	if _, err := vi.graph.WriteTo(&buf); err != nil {
		return pgerror.Wrapf(err, pgerror.InternalError, "saving index %q", vi.desc.Name)
	}
	vi.saveSeq++
	key := indexObjectKey(t.ID, vi.desc.ID, db.node, vi.saveSeq)
	if err := db.store.Put(ctx, key, buf.Bytes()); err != nil {
		return ioErrorf(err, "saving index %q", vi.desc.Name)
	}
	vi.mu.Lock()
	val := binary.AppendUvarint(nil, uint64(len(key)))
	val = append(val, key...)
	for f, ok := range vi.covered {
		if ok {
			val = binary.AppendUvarint(val, f)
		}
	}
	vi.dirty = false
	vi.mu.Unlock()
	// The key is written only while the table is live, under the catalog
	// lock: a drop after it lists the copy with the table's objects and
	// deletes the key with the table's; a drop before it leaves the copy
	// to be deleted here.
	db.catMu.RLock()
	_, live := db.byID[t.ID]
	var err error
	if live {
		err = db.syncSet(appendIDKey(nil, t.ID, tagIndex, vi.desc.ID), val)
	}
	db.catMu.RUnlock()
	if !live {
		_ = db.store.Delete(ctx, key)
		return nil
	}
	if err != nil {
		return ioErrorf(err, "saving index %q", vi.desc.Name)
	}
	if vi.savedKey != "" {
		if err := db.store.Delete(ctx, vi.savedKey); err != nil {
			db.log.Warn("storage: leaving an old copy of an index", "index", vi.desc.Name, "err", err)
		}
	}
	vi.savedKey, vi.savedNodes = key, vi.graph.Len()
	return nil
}

// maybeSaveIndex saves vi when it has grown enough since its last save.
// The caller holds vi.adding.
func (db *DB) maybeSaveIndex(ctx context.Context, t *TableDesc, vi *vectorIndex) {
	if vi.savedKey != "" && float64(vi.graph.Len()) < float64(vi.savedNodes)*(1+indexSaveGrowth) {
		return
	}
	if err := db.saveIndex(ctx, t, vi); err != nil && ctx.Err() == nil {
		db.log.Warn("storage: saving an index failed; a restart adds its rows again", "index", vi.desc.Name, "err", err)
	}
}

// loadIndex returns index ix of ts from its saved graph, with the
// fragments the copy covered that are still live, or nil when there is
// none (or it cannot be read: the index is then built again).
func (db *DB) loadIndex(ctx context.Context, ts *tableState, ix IndexDesc) *vectorIndex {
	t := ts.desc
	val, closer, err := db.kv.Get(appendIDKey(nil, t.ID, tagIndex, ix.ID))
	if err != nil {
		return nil
	}
	val = bytes.Clone(val)
	closer.Close()
	n, k := binary.Uvarint(val)
	if k <= 0 || uint64(len(val)-k) < n {
		return nil
	}
	key := string(val[k : k+int(n)])
	rest := val[k+int(n):]
	covered := make(map[uint64]bool)
	for len(rest) > 0 {
		f, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil
		}
		covered[f] = true
		rest = rest[k:]
	}
	data, err := db.store.Get(ctx, key)
	if err != nil {
		db.log.Warn("storage: the saved copy of an index is unreadable; building it again", "index", ix.Name, "err", err)
		return nil
	}
	g, nodes, err := readANN(ix.Method, data)
	if err != nil {
		db.log.Warn("storage: the saved copy of an index is corrupt; building it again", "index", ix.Name, "err", err)
		return nil
	}
	vi, err := newVectorIndex(t, ix)
	if err != nil {
		return nil
	}
	vi.graph, vi.savedKey, vi.savedNodes = g, key, nodes
	snap := db.kv.NewSnapshot()
	frags, err := db.liveFragments(snap, t)
	snap.Close()
	if err != nil {
		return nil
	}
	// The covered fragments' rows are in the graph: map them to their
	// fragments from the row id column alone.
	for _, f := range frags {
		if !covered[f.ID] {
			continue
		}
		ids, err := db.fragmentRowIDs(t, f)
		if err != nil {
			return nil
		}
		var in []uint64
		for _, id := range ids {
			if g.Contains(id) {
				vi.nodeFrag[id] = f.ID
				in = append(in, id)
			}
		}
		vi.fragRows[f.ID] = in
		vi.covered[f.ID] = true
	}
	return vi
}

// fragmentRowIDs returns the row ids of fragment f, deleted ones included.
func (db *DB) fragmentRowIDs(t *TableDesc, f *fragment) ([]uint64, error) {
	s := newScanner(db, t, ScanOptions{})
	defer s.Close()
	s.sources = []scanSource{{frag: f, kind: srcFragment}}
	var ids []uint64
	for {
		b, bids, err := s.Next()
		if err != nil {
			return nil, err
		}
		if b == nil {
			return ids, nil
		}
		ids = append(ids, bids...)
	}
}

// appendVector appends the elements of a vector or halfvec value.
func appendVector(dst []float32, t types.Type, val []byte) []float32 {
	if t.Kind == types.HalfVec {
		for k := 0; k+2 <= len(val); k += 2 {
			dst = append(dst, vector.Float16ToFloat32(binary.LittleEndian.Uint16(val[k:])))
		}
		return dst
	}
	for k := 0; k+4 <= len(val); k += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(val[k:])))
	}
	return dst
}

// indexesCommitted updates the table's vector indexes after a commit of
// fragments: a compaction's new fragment takes the graph rows of the
// fragments it replaces (covered when they all were) and its dropped rows
// leave the graph; a flushed fragment is added in the background. Called
// with db.commitMu held: it only updates maps and starts goroutines.
func (db *DB) indexesCommitted(ts *tableState, op uint8, added, removed []*fragment, dropped []uint64) {
	ts.vmu.Lock()
	vis := make([]*vectorIndex, 0, len(ts.vindexes))
	for _, vi := range ts.vindexes {
		vis = append(vis, vi)
	}
	ts.vmu.Unlock()
	for _, vi := range vis {
		if op == opCompact && len(added) <= 1 {
			vi.mu.Lock()
			for _, id := range dropped {
				vi.graph.Delete(id)
			}
			all := true
			var moved []uint64
			for _, f := range removed {
				all = all && vi.covered[f.ID]
				moved = append(moved, vi.fragRows[f.ID]...)
				delete(vi.fragRows, f.ID)
				delete(vi.covered, f.ID)
			}
			gone := make(map[uint64]bool, len(dropped))
			for _, id := range dropped {
				gone[id] = true
				delete(vi.nodeFrag, id)
			}
			moved = slices.DeleteFunc(moved, func(id uint64) bool { return gone[id] })
			for _, f := range added {
				for _, id := range moved {
					vi.nodeFrag[id] = f.ID
				}
				vi.fragRows[f.ID] = moved
				vi.covered[f.ID] = all
			}
			stale := vi.staleShare() > compactGraphShare && !vi.compacting
			if stale {
				vi.compacting = true
			}
			vi.mu.Unlock()
			if stale {
				t, vi := ts.desc, vi
				db.background(func(ctx context.Context) {
					if err := db.compactGraph(ctx, t, vi); err != nil && ctx.Err() == nil {
						db.log.Warn("storage: rebuilding an index without its deleted rows failed", "index", vi.desc.Name, "err", err)
					}
				})
			}
			if all {
				continue
			}
		}
		for _, f := range added {
			t, f, vi := ts.desc, f, vi
			db.background(func(ctx context.Context) {
				if err := db.addFragment(ctx, t, vi, f); err != nil {
					if ctx.Err() == nil {
						db.log.Warn("storage: indexing a fragment failed; it is searched exactly", "index", vi.desc.Name, "err", err)
					}
					return
				}
				vi.adding.Lock()
				db.maybeSaveIndex(ctx, t, vi)
				vi.adding.Unlock()
			})
		}
	}
}

// vectorIndexOf returns the in-memory state of index indexID of t, nil
// while it is not built (or after it is dropped).
func (db *DB) vectorIndexOf(t *TableDesc, indexID uint64) (*vectorIndex, error) {
	ts, err := db.tableByID(t.ID)
	if err != nil {
		return nil, err
	}
	ts.vmu.Lock()
	defer ts.vmu.Unlock()
	return ts.vindexes[indexID], nil
}

// IndexSearch searches the hnsw index indexID of t for the k rows nearest
// to q, of those the txn's snapshot sees that pass allow (nil: all), with
// param (hnsw.ef_search). hits holds what the index found (the SQL
// operator's distance); rest the row groups the graph does not cover, for
// the caller to search exactly. ok is false when the index cannot serve
// the snapshot: every group is then in rest.
func (txn *Txn) IndexSearch(t *TableDesc, indexID uint64, q []float32, k, param int, allow func(id uint64) bool) (hits []IndexHit, rest []RowGroup, ok bool, err error) {
	groups, err := txn.RowGroups(t)
	if err != nil {
		return nil, nil, false, err
	}
	vi, err := txn.db.vectorIndexOf(t, indexID)
	if err != nil {
		return nil, nil, false, err
	}
	if vi == nil || len(q) != vi.typ.Width {
		return nil, groups, false, nil
	}
	frags, err := txn.liveFragments(t)
	if err != nil {
		return nil, nil, false, err
	}
	deleted, err := txn.deletedIDs(t)
	if err != nil {
		return nil, nil, false, err
	}
	vi.mu.RLock()
	defer vi.mu.RUnlock()
	use := make(map[uint64]bool, len(frags))
	for _, f := range frags {
		if vi.covered[f.ID] {
			use[f.ID] = true
		}
	}
	// Every node is a row of the snapshot when each fragment with nodes is
	// covered and live and none of their rows is deleted: then no check
	// per node.
	plain := allow == nil && len(deleted) == 0 && len(use) == len(vi.fragRows)
	for f := range vi.fragRows {
		if !plain {
			break
		}
		plain = use[f]
	}
	var filter func(id uint64) bool
	if !plain {
		filter = func(id uint64) bool {
			f, in := vi.nodeFrag[id]
			if !in || !use[f] {
				return false
			}
			if i := sort.Search(len(deleted), func(i int) bool { return deleted[i] >= id }); i < len(deleted) && deleted[i] == id {
				return false
			}
			return allow == nil || allow(id)
		}
	}
	hits, err = vi.graph.search(q, k, param, filter)
	if err != nil {
		return nil, nil, false, pgerror.Wrapf(err, pgerror.InternalError, "searching index %q", vi.desc.Name)
	}
	for _, g := range groups {
		if g.Kind == GroupFragment && use[g.Fragment] {
			continue
		}
		rest = append(rest, g)
	}
	return hits, rest, true, nil
}

// IndexDistances computes, from the vectors index indexID keeps, the SQL
// operator's distance from q to each row of ids the index holds: dist[i]
// for ids[i] where found[i]. ids must be rows the txn's snapshot sees (a
// row's id names one value for its lifetime, so the index's vector is the
// row's). The rest, found[i] false, are for the caller to fetch. ok is
// false when the index is not there (dropped, or q has another dimension).
func (txn *Txn) IndexDistances(t *TableDesc, indexID uint64, q []float32, ids []uint64) (dist []float32, found []bool, ok bool, err error) {
	vi, err := txn.db.vectorIndexOf(t, indexID)
	if err != nil {
		return nil, nil, false, err
	}
	if vi == nil || len(q) != vi.typ.Width {
		return nil, nil, false, nil
	}
	dist = make([]float32, len(ids))
	found = make([]bool, len(ids))
	vi.mu.RLock()
	defer vi.mu.RUnlock()
	if err := vi.graph.Distances(q, ids, dist, found); err != nil {
		return nil, nil, false, pgerror.Wrapf(err, pgerror.InternalError, "searching index %q", vi.desc.Name)
	}
	return dist, found, true, nil
}

// IndexVectors returns the vectors of the rows of ids that index indexID
// holds, as the rows store them (vecs[i*dim:], for halfvec the float32
// equal to each half), where found[i]. ok is false when the index is not
// there or keeps other values than the rows' (cosine indexes keep unit
// vectors). ids must be rows the txn's snapshot sees.
func (txn *Txn) IndexVectors(t *TableDesc, indexID uint64, ids []uint64) (vecs []float32, found []bool, ok bool, err error) {
	vi, err := txn.db.vectorIndexOf(t, indexID)
	if err != nil {
		return nil, nil, false, err
	}
	if vi == nil {
		return nil, nil, false, nil
	}
	if m, _ := indexMetric(vi.desc.OpClass); m == hnsw.Cosine {
		return nil, nil, false, nil
	}
	vecs = make([]float32, len(ids)*vi.typ.Width)
	found = make([]bool, len(ids))
	vi.mu.RLock()
	vi.graph.Vectors(ids, vecs, found)
	vi.mu.RUnlock()
	return vecs, found, true, nil
}

// deletedIDs returns the ids of t's rows deleted in the txn's snapshot and
// by the txn itself, ascending.
func (txn *Txn) deletedIDs(t *TableDesc) ([]uint64, error) {
	s := newScannerCap(txn.db, t, ScanOptions{}, 1)
	defer s.Close()
	if err := s.loadView(txn.snap, 0); err != nil {
		return nil, err
	}
	if tt := txn.tables[t.ID]; tt != nil {
		for id := range tt.deleted {
			s.deleted = append(s.deleted, id)
		}
		for id := range tt.ownDel {
			s.deleted = append(s.deleted, id)
		}
		slices.Sort(s.deleted)
	}
	return s.deleted, nil
}

// rebuildIndexes builds the graphs of the indexes the catalog lists, in
// the background: until one is ready its searches run exactly.
func (db *DB) rebuildIndexes() {
	for _, ts := range db.byID {
		for _, ix := range ts.desc.Indexes {
			ts, ix := ts, ix
			db.background(func(ctx context.Context) {
				if err := db.buildIndex(ctx, ts, ix, true); err != nil && ctx.Err() == nil {
					db.log.Warn("storage: building index failed; its searches run exactly", "index", ix.Name, "err", err)
				}
			})
		}
	}
}

// background runs fn on its own goroutine with a context canceled when
// the database closes; Close waits for it. A panic in fn is logged. Once
// Close has begun, fn is not run.
func (db *DB) background(fn func(ctx context.Context)) {
	db.bgMu.Lock()
	defer db.bgMu.Unlock()
	if db.closed.Load() {
		return
	}
	db.bg.Add(1)
	go func() {
		defer db.bg.Done()
		defer func() {
			if r := recover(); r != nil {
				db.log.Error("storage: background work failed", "panic", r)
			}
		}()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-db.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		fn(ctx)
	}()
}

// saveIndexes saves the graphs changed since their last save, for Close.
func (db *DB) saveIndexes() {
	for _, ts := range db.byID {
		ts.vmu.Lock()
		vis := make([]*vectorIndex, 0, len(ts.vindexes))
		for _, vi := range ts.vindexes {
			vis = append(vis, vi)
		}
		ts.vmu.Unlock()
		for _, vi := range vis {
			vi.adding.Lock()
			vi.mu.RLock()
			dirty := vi.dirty
			vi.mu.RUnlock()
			if dirty {
				if err := db.saveIndex(context.Background(), ts.desc, vi); err != nil {
					db.log.Warn("storage: saving an index at close failed; the next open adds its rows again", "index", vi.desc.Name, "err", err)
				}
			}
			vi.adding.Unlock()
		}
	}
}

// dropIndexState forgets the graph of index id.
func (ts *tableState) dropIndexState(id uint64) {
	ts.vmu.Lock()
	delete(ts.vindexes, id)
	ts.vmu.Unlock()
}

// IndexSize returns the bytes the graph of index id of table t holds in
// memory (0 until it is built).
func (db *DB) IndexSize(t *TableDesc, id uint64) int64 {
	vi, err := db.vectorIndexOf(t, id)
	if err != nil || vi == nil {
		return 0
	}
	vi.mu.RLock()
	defer vi.mu.RUnlock()
	return vi.graph.Size()
}

// IndexReady reports whether index id of table t has its graph.
func (db *DB) IndexReady(t *TableDesc, id uint64) bool {
	vi, err := db.vectorIndexOf(t, id)
	return err == nil && vi != nil
}
