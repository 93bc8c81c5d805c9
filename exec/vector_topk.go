package exec

import (
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
	"github.com/deeplaked/deeplaked/vector"
)

// vectorTopKOp runs an exact nearest-neighbour search (plan.VectorTopK):
// the table's row groups are split among workers, one per CPU, each
// scanning the vector and filter columns of its groups (windows onto the
// chunks), computing distances and keeping its k nearest rows in a heap;
// the heaps are merged and the k rows fetched by row id, in distance
// order.
type vectorTopKOp struct {
	env  *Env
	n    *plan.VectorTopK
	rows *types.Batch
	pos  int
	out  *types.Batch
	done bool
}

func newVectorTopK(env *Env, n *plan.VectorTopK) (Operator, error) {
	if env.Txn == nil {
		return nil, pgerror.AssertionFailedf("vector search without a transaction")
	}
	return &vectorTopKOp{env: env, n: n}, nil
}

// hit is a row found by a search: its distance class (0 a number, 1 NaN,
// 2 NULL: the order ORDER BY gives them), the distance and the row id.
type hit struct {
	class uint8
	dist  float32
	id    uint64
}

func (a hit) less(b hit) bool {
	if a.class != b.class {
		return a.class < b.class
	}
	if a.dist != b.dist {
		return a.dist < b.dist
	}
	return a.id < b.id
}

// hitHeap keeps the k smallest hits: a max-heap on less.
type hitHeap struct {
	k int
	h []hit
}

// worst returns the largest kept hit; ok is false until k are kept.
func (h *hitHeap) worst() (hit, bool) {
	if len(h.h) < h.k {
		return hit{}, false
	}
	return h.h[0], true
}

func (h *hitHeap) push(x hit) {
	if len(h.h) < h.k {
		h.h = append(h.h, x)
		for i := len(h.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h.h[p].less(h.h[i]) {
				break
			}
			h.h[p], h.h[i] = h.h[i], h.h[p]
			i = p
		}
		return
	}
	if h.k == 0 || !x.less(h.h[0]) {
		return
	}
	h.h[0] = x
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.h) && h.h[m].less(h.h[l]) {
			m = l
		}
		if r < len(h.h) && h.h[m].less(h.h[r]) {
			m = r
		}
		if m == i {
			break
		}
		h.h[i], h.h[m] = h.h[m], h.h[i]
		i = m
	}
}

func (o *vectorTopKOp) Next() (*types.Batch, error) {
	if !o.done {
		o.done = true
		if err := o.run(); err != nil {
			return nil, err
		}
		o.out = types.NewBatch(batchTypes(o.rows), types.BatchSize)
	}
	if o.rows == nil || o.pos >= o.rows.Len() {
		return nil, nil
	}
	end := min(o.pos+types.BatchSize, o.rows.Len())
	o.rows.Window(o.out, o.pos, end)
	o.pos = end
	return o.out, nil
}

func batchTypes(b *types.Batch) []types.Type {
	ts := make([]types.Type, len(b.Cols))
	for i, c := range b.Cols {
		ts[i] = c.Type
	}
	return ts
}

func (o *vectorTopKOp) Close() {}

// limit evaluates LIMIT + OFFSET: the rows the search must keep (-1: all).
func (o *vectorTopKOp) limit() (int, error) {
	k := int64(-1)
	if o.n.Count != nil {
		v, err := o.env.foldConst(o.n.Count)
		if err != nil {
			return 0, err
		}
		if !v.Nulls[0] {
			if v.Ints[0] < 0 {
				return 0, pgerror.New("2201W", "LIMIT must not be negative")
			}
			k = v.Ints[0]
		}
	}
	if o.n.Offset != nil && k >= 0 {
		v, err := o.env.foldConst(o.n.Offset)
		if err != nil {
			return 0, err
		}
		if !v.Nulls[0] && v.Ints[0] > 0 {
			k += v.Ints[0]
		}
	}
	if k < 0 || k > math.MaxInt32 {
		return -1, nil
	}
	return int(k), nil
}

func (o *vectorTopKOp) run() error {
	n := o.n
	k, err := o.limit()
	if err != nil {
		return err
	}
	if k < 0 {
		k = math.MaxInt32
	}
	qv, err := o.env.foldConst(n.Query)
	if err != nil {
		return err
	}
	var q []float32
	if !qv.Nulls[0] {
		qa := vectorArg{t: n.Query.Type()}
		q = slices.Clone(qa.row(qv, 0))
	}
	// The searches rank rows by their kernels' distances, which may differ
	// from the operator's value in the last bits; they keep a few rows
	// beyond k, whose values are then computed as the operator computes
	// them, and those values decide the order and the cut.
	kk := k
	if k < math.MaxInt32 {
		kk = k + min(k, 64)
	}
	var all []hit
	groups, err := o.env.Txn.RowGroups(n.Scan.Table)
	if err != nil {
		return err
	}
	if n.Index != nil && q != nil && k < math.MaxInt32 {
		hits, rest, ok, err := o.indexSearch(q, k, kk)
		if err != nil {
			return err
		}
		if ok {
			all, groups = hits, rest
		}
	}
	found, err := o.exact(groups, q, kk)
	if err != nil {
		return err
	}
	all = append(all, found...)
	slices.SortFunc(all, func(a, b hit) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	all = slices.CompactFunc(all, func(a, b hit) bool { return a.id == b.id })
	if len(all) > kk {
		all = all[:kk]
	}
	ids := make([]uint64, len(all))
	for i, h := range all {
		ids[i] = h.id
	}
	dist, err := o.distances(ids, q)
	if err != nil {
		return err
	}
	ids, dist = exactOrder(ids, dist, k)
	rows, got, err := o.env.Txn.FetchRows(n.Scan.Table, n.Scan.Cols, ids)
	if err != nil {
		return err
	}
	if len(got) != len(ids) {
		return pgerror.AssertionFailedf("vector search: %d of %d rows found", len(got), len(ids))
	}
	rows.Cols = append(rows.Cols, dist)
	o.rows = rows
	return nil
}

// exactOrder sorts ids by their distances dist as ORDER BY does (numbers
// ascending, then NaN, then NULL; equal ones by id) and keeps the first k,
// with their distances.
func exactOrder(ids []uint64, dist *types.Vec, k int) ([]uint64, *types.Vec) {
	class := func(i int) int {
		switch {
		case dist.Nulls[i]:
			return 2
		case math.IsNaN(dist.Floats[i]):
			return 1
		}
		return 0
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if ca, cb := class(a), class(b); ca != cb {
			return ca - cb
		}
		if da, db := dist.Floats[a], dist.Floats[b]; da != db && !math.IsNaN(da) {
			if da < db {
				return -1
			}
			return 1
		}
		if ids[a] < ids[b] {
			return -1
		}
		if ids[a] > ids[b] {
			return 1
		}
		return 0
	})
	order = order[:min(k, len(order))]
	outIDs := make([]uint64, len(order))
	out := types.NewVec(dist.Type, len(order))
	for i, o := range order {
		outIDs[i] = ids[o]
		out.AppendFrom(dist, o)
	}
	return outIDs, out
}

// distances computes the output distance of each row of ids as the
// operator computes it (exec's distance, the same arithmetic whichever
// plan reads it), from the vectors the index keeps when it keeps them as
// stored, otherwise from the rows' own vectors, fetched.
func (o *vectorTopKOp) distances(ids []uint64, q []float32) (*types.Vec, error) {
	n := o.n
	out := types.NewVec(n.Dist, len(ids))
	if q == nil {
		for range ids {
			out.AppendNull()
		}
		return out, nil
	}
	dim := len(q)
	var vecs []float32
	var found []bool
	if n.Index != nil {
		var ok bool
		var err error
		vecs, found, ok, err = o.env.Txn.IndexVectors(n.Scan.Table, n.Index.ID, ids)
		if err != nil {
			return nil, err
		}
		if !ok || len(vecs) != len(ids)*dim {
			found = nil
		}
	}
	var missing []uint64
	for i, id := range ids {
		if found == nil || !found[i] {
			missing = append(missing, id)
		}
	}
	var fetched *types.Vec
	if len(missing) > 0 {
		b, got, err := o.env.Txn.FetchRows(n.Search.Table, []int{n.Search.Cols[n.SearchCol]}, missing)
		if err != nil {
			return nil, err
		}
		if len(got) != len(missing) {
			return nil, pgerror.AssertionFailedf("vector search: %d of %d rows found", len(got), len(missing))
		}
		fetched = b.Cols[0]
	}
	arg := vectorArg{t: n.Search.Columns()[n.SearchCol].Type}
	j := 0
	for i := range ids {
		var p []float32
		if found != nil && found[i] {
			p = vecs[i*dim : (i+1)*dim]
		} else {
			if fetched.Nulls[j] {
				out.AppendNull()
				j++
				continue
			}
			p = arg.row(fetched, j)
			j++
		}
		if len(p) != dim {
			return nil, pgerror.Newf(pgerror.DataException, "different vector dimensions %d and %d", len(p), dim)
		}
		out.AppendFloat(distance(n.Op, p, q))
	}
	return out, nil
}

// indexSearch walks the hnsw index: the k nearest rows of the part of the
// table its graph covers, as hits in the exact search's distance scale,
// and the row groups left for the exact search. A filter is evaluated
// first over its own columns, into the set of row ids the graph may
// return; when few rows pass, the kk nearest of them are ranked exactly
// instead. ok is false when the index cannot serve this snapshot.
func (o *vectorTopKOp) indexSearch(q []float32, k, kk int) (hits []hit, rest []storage.RowGroup, ok bool, err error) {
	n := o.n
	// The method's search parameter: hnsw.ef_search or ivfflat.probes.
	ef, setting := 40, "hnsw.ef_search"
	if n.Index.Method == "ivfflat" {
		ef, setting = 1, "ivfflat.probes"
	}
	if o.env.Setting != nil {
		if v, found := o.env.Setting(setting); found {
			if x, err := strconv.Atoi(v); err == nil && x > 0 {
				ef = x
			}
		}
	}
	var allow func(uint64) bool
	if n.Search.Filter != nil {
		pass, err := o.filterIDs()
		if err != nil {
			return nil, nil, false, err
		}
		if len(pass) <= filteredExactRows {
			// Few rows pass: their distances, computed exactly, cost less
			// than a walk through the graph looking for them.
			hits, err := o.rankIDs(pass, q, kk)
			return hits, nil, err == nil, err
		}
		allow = func(id uint64) bool {
			_, found := slices.BinarySearch(pass, id)
			return found
		}
	}
	res, rest, ok, err := o.env.Txn.IndexSearch(n.Scan.Table, n.Index.ID, q, k, ef, allow)
	if err != nil || !ok {
		return nil, nil, ok, err
	}
	hits = make([]hit, 0, len(res))
	for _, r := range res {
		d := r.Distance
		if n.Op == plan.OpL2Distance {
			d *= d // the exact search orders by the square
		}
		hits = append(hits, hit{dist: d, id: r.ID})
	}
	return hits, rest, true, nil
}

// filteredExactRows is how many rows may pass a filter for an index
// search to compute their distances exactly instead of walking the graph.
const filteredExactRows = 20000

// rankIDs returns the k nearest of the rows ids (all the snapshot's rows
// that pass the filter): the distances of the rows the index holds from
// the vectors it keeps in memory, the others' from their fetched vectors.
func (o *vectorTopKOp) rankIDs(ids []uint64, q []float32, k int) ([]hit, error) {
	n := o.n
	dist, found, ok, err := o.env.Txn.IndexDistances(n.Scan.Table, n.Index.ID, q, ids)
	if err != nil || !ok {
		if err == nil {
			return o.exactIDs(ids, q, k)
		}
		return nil, err
	}
	h := hitHeap{k: k}
	var missing []uint64
	for i, id := range ids {
		if !found[i] {
			missing = append(missing, id)
			continue
		}
		d := dist[i]
		if n.Op == plan.OpL2Distance {
			d *= d // the exact search orders by the square
		}
		x := hit{dist: d, id: id}
		if d != d {
			x.class, x.dist = 1, 0
		}
		h.push(x)
	}
	if len(missing) == 0 {
		return h.h, nil
	}
	rest, err := o.exactIDs(missing, q, k)
	if err != nil {
		return nil, err
	}
	return append(h.h, rest...), nil
}

// exactIDs returns the k nearest of the rows ids (all the snapshot's rows
// that pass the filter), their vectors fetched by id.
func (o *vectorTopKOp) exactIDs(ids []uint64, q []float32, k int) ([]hit, error) {
	n := o.n
	w := &topKWorker{o: o, q: q, heap: hitHeap{k: k}, arg: vectorArg{t: n.Search.Columns()[n.SearchCol].Type}}
	col := n.Search.Cols[n.SearchCol]
	for len(ids) > 0 {
		if err := o.env.canceled(); err != nil {
			return nil, err
		}
		part := ids[:min(len(ids), types.BatchSize)]
		ids = ids[len(part):]
		b, got, err := o.env.Txn.FetchRows(n.Search.Table, []int{col}, part)
		if err != nil {
			return nil, err
		}
		if err := w.add(b.Cols[0], got, nil); err != nil {
			return nil, err
		}
	}
	return w.heap.h, nil
}

// filterIDs returns the ids of the rows that pass the search's filter,
// ascending, from a scan of the filter's columns.
func (o *vectorTopKOp) filterIDs() ([]uint64, error) {
	n := o.n
	fs := n.FilterScan
	pred, err := o.env.compile(fs.Filter)
	if err != nil {
		return nil, err
	}
	sc, err := o.env.Txn.ScanWith(fs.Table, storage.ScanOptions{Cols: fs.Cols, Preds: fs.ZonePreds(), Borrow: true, Cached: true})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var ids []uint64
	var rows []int
	for {
		if err := o.env.canceled(); err != nil {
			return nil, err
		}
		b, bids, err := sc.Next()
		if err != nil {
			return nil, err
		}
		if b == nil {
			break
		}
		p, err := pred.eval(b)
		if err != nil {
			return nil, err
		}
		rows = selectRows(rows[:0], p, b.Len())
		for _, r := range rows {
			ids = append(ids, bids[r])
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// exact computes the distance of every row of groups that passes the
// filter, on one worker per CPU, and returns the k nearest.
func (o *vectorTopKOp) exact(groups []storage.RowGroup, q []float32, k int) ([]hit, error) {
	n := o.n
	if len(groups) == 0 {
		return nil, nil
	}
	workers := min(runtime.GOMAXPROCS(0), len(groups))
	if groups[len(groups)-1].Kind == storage.GroupOwn {
		// The txn's own rows are read through state one scan at a time
		// may touch.
		workers = 1
	}
	ws := make([]*topKWorker, workers)
	for i := range ws {
		w := &topKWorker{o: o, q: q, heap: hitHeap{k: k}, arg: vectorArg{t: n.Search.Columns()[n.SearchCol].Type}}
		if n.Search.Filter != nil {
			var err error
			if w.filter, err = o.env.compile(n.Search.Filter); err != nil {
				return nil, err
			}
		}
		ws[i] = w
	}
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					w.err = pgerror.AssertionFailedf("vector search: %v", r)
				}
			}()
			for g := i; g < len(groups) && w.err == nil; g += workers {
				w.err = w.scan(&groups[g])
			}
		}()
	}
	wg.Wait()
	var all []hit
	for _, w := range ws {
		if w.err != nil {
			return nil, w.err
		}
		all = append(all, w.heap.h...)
	}
	return all, nil
}

// topKWorker searches some of the row groups.
type topKWorker struct {
	o      *vectorTopKOp
	q      []float32
	filter evaluator
	arg    vectorArg
	heap   hitHeap
	rows   []int
	dists  []float32
	err    error
}

// batchDistances computes the distance of every row of vec with one batch
// kernel call when its values lie back to back, each of the query's
// dimensions, none NULL (a window onto a chunk, as scans give them); it
// reports false otherwise, and the rows are taken one by one.
func (w *topKWorker) batchDistances(vec *types.Vec) bool {
	t := vec.Type
	n := vec.Len()
	dim := len(w.q)
	size := 4
	switch {
	case t.Kind == types.HalfVec:
		size = 2
	case t.Kind == types.Vector:
	case t.Kind == types.Tensor && !t.Ragged():
	default:
		return false
	}
	offs := vec.Bytes.Offsets
	if n == 0 || int(offs[n]-offs[0]) != n*dim*size {
		return false
	}
	for i := range n {
		if vec.Nulls[i] || int(offs[i+1]-offs[i]) != dim*size {
			return false
		}
	}
	data := vec.Bytes.Data[offs[0]:offs[n]]
	if cap(w.dists) < n {
		w.dists = make([]float32, n, max(n, types.BatchSize))
	}
	out := w.dists[:n]
	half := size == 2
	switch w.o.n.Op {
	case plan.OpL2Distance:
		if half {
			vector.L2SqBatchHalfBytes(w.q, data, dim, out)
		} else {
			vector.L2SqBatchBytes(w.q, data, dim, out)
		}
	case plan.OpNegInnerProduct:
		if half {
			vector.DotBatchHalfBytes(w.q, data, dim, out)
		} else {
			vector.DotBatchBytes(w.q, data, dim, out)
		}
		for i := range out {
			out[i] = -out[i]
		}
	case plan.OpL1Distance:
		if half {
			vector.L1BatchHalfBytes(w.q, data, dim, out)
		} else {
			vector.L1BatchBytes(w.q, data, dim, out)
		}
	default:
		if half {
			vector.CosineDistanceBatchHalfBytes(w.q, data, dim, out)
		} else {
			vector.CosineDistanceBatchBytes(w.q, data, dim, out)
		}
	}
	w.dists = out
	return true
}

func (w *topKWorker) scan(g *storage.RowGroup) error {
	n := w.o.n
	sc, err := w.o.env.Txn.ScanWith(n.Search.Table, storage.ScanOptions{Cols: n.Search.Cols, Preds: n.Search.ZonePreds(), Group: g, Borrow: true, Cached: true})
	if err != nil {
		return err
	}
	defer sc.Close()
	for {
		if err := w.o.env.canceled(); err != nil {
			return err
		}
		b, ids, err := sc.Next()
		if err != nil || b == nil {
			return err
		}
		w.rows = w.rows[:0]
		if w.filter != nil {
			pred, err := w.filter.eval(b)
			if err != nil {
				return err
			}
			w.rows = selectRows(w.rows, pred, b.Len())
		} else {
			for i := range b.Len() {
				w.rows = append(w.rows, i)
			}
		}
		if err := w.add(b.Cols[n.SearchCol], ids, w.rows); err != nil {
			return err
		}
	}
}

// add pushes rows (nil: all) of vec, the rows ids, into the worker's heap
// with their distances to the query.
func (w *topKWorker) add(vec *types.Vec, ids []uint64, rows []int) error {
	if rows == nil {
		w.rows = w.rows[:0]
		for i := range vec.Len() {
			w.rows = append(w.rows, i)
		}
		rows = w.rows
	}
	if w.q != nil && w.batchDistances(vec) {
		for _, i := range rows {
			h := hit{id: ids[i], dist: w.dists[i]}
			if h.dist != h.dist {
				h.class, h.dist = 1, 0
			}
			w.heap.push(h)
		}
		return nil
	}
	for _, i := range rows {
		h := hit{id: ids[i], class: 2}
		if !vec.Nulls[i] && w.q != nil {
			p := w.arg.row(vec, i)
			if len(p) != len(w.q) {
				return pgerror.Newf(pgerror.DataException, "different vector dimensions %d and %d", len(p), len(w.q))
			}
			d := searchDistance(w.o.n.Op, p, w.q)
			h.class, h.dist = 0, d
			if d != d {
				h.class, h.dist = 1, 0
			}
		}
		w.heap.push(h)
	}
	return nil
}

// searchDistance is a distance that orders rows as op does: L2's square
// (no square root per row), the negative inner product, cosine, L1.
func searchDistance(op plan.Op, p, q []float32) float32 {
	switch op {
	case plan.OpL2Distance:
		return l2SqF32(p, q)
	case plan.OpNegInnerProduct:
		return -dotF32(p, q)
	case plan.OpL1Distance:
		return l1F32(p, q)
	}
	return float32(cosineDistance(p, q))
}
