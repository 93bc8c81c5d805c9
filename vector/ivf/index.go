package ivf

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// list is one inverted list: the rows nearest to one centroid, in arrival
// order. Rows never move, so (list, slot) names a row for its lifetime.
type list struct {
	mu    sync.RWMutex
	ids   []uint64
	vecs  []float32 // len(ids)*dim, back to back (unit vectors under Cosine)
	dead  []bool    // tombstones, len(ids)
	ndead int
}

// loc is where a live row is stored.
type loc struct {
	list, slot uint32
}

// Index is an IVFFlat index over float32 vectors identified by uint64 ids.
//
// Locks, always taken in this order: mu guards the centroids and the list
// set (written only by training, once); idMu guards the id map and is held
// by every mutation, so that a row is in the map exactly when it is in its
// list; each list's RWMutex guards its arenas. Search takes mu and one list
// at a time, both shared, never idMu: searches run beside each other and
// beside mutations of the lists they are not reading.
type Index struct {
	cfg Config

	mu        sync.RWMutex
	centroids []float32 // len(lists)*Dim; unit vectors unless L2
	lists     []*list   // nil until trained

	idMu     sync.Mutex
	byID     map[uint64]loc
	nDeleted atomic.Int64

	pool sync.Pool // *scratch
}

// New returns an empty, untrained index. A zero Lists takes pgvector's
// default (100).
func New(cfg Config) (*Index, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return newIndex(cfg), nil
}

func newIndex(cfg Config) *Index {
	return &Index{cfg: cfg, byID: make(map[uint64]loc)}
}

// Config returns the index's configuration with defaults filled in.
func (x *Index) Config() Config { return x.cfg }

// Trained reports whether the index has centroids.
func (x *Index) Trained() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.lists != nil
}

// Lists returns the number of lists in use: Config().Lists once trained on
// enough distinct rows, fewer when the sample had fewer, 0 before training.
func (x *Index) Lists() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.lists)
}

// Len returns the number of live (not deleted) vectors.
func (x *Index) Len() int {
	x.idMu.Lock()
	defer x.idMu.Unlock()
	return len(x.byID)
}

// Deleted returns the number of tombstoned rows still in the lists.
func (x *Index) Deleted() int { return int(x.nDeleted.Load()) }

// Contains reports whether id is live in the index.
func (x *Index) Contains(id uint64) bool {
	x.idMu.Lock()
	defer x.idMu.Unlock()
	_, ok := x.byID[id]
	return ok
}

// Size returns the bytes held by the centroids, the list arenas and the id
// map (the map at an estimated 32 bytes per entry).
func (x *Index) Size() int64 {
	x.mu.RLock()
	b := 4 * int64(cap(x.centroids))
	for _, l := range x.lists {
		l.mu.RLock()
		b += 8*int64(cap(l.ids)) + 4*int64(cap(l.vecs)) + int64(cap(l.dead))
		l.mu.RUnlock()
	}
	x.mu.RUnlock()
	return b + 32*int64(x.Len())
}

// Add inserts v under id, training the index on v alone if it is untrained
// (which leaves it one list: train first, or use AddBatch). Under Cosine a
// zero vector returns ErrZeroVector and is not indexed. An id that is live
// returns ErrDuplicateID; a deleted id may be added again.
func (x *Index) Add(id uint64, v []float32) error {
	if len(v) != x.cfg.Dim {
		return fmt.Errorf("%w: got %d, index has %d", ErrDimension, len(v), x.cfg.Dim)
	}
	if x.cfg.Metric == Cosine && sqNorm64(v) == 0 && finite(v) {
		return ErrZeroVector
	}
	return x.AddBatch([]uint64{id}, v, 1)
}

// AddBatch inserts len(ids) vectors, vecs holding them back to back
// (len(vecs) == len(ids)*Dim), finding nearest centroids on workers
// goroutines (GOMAXPROCS when workers <= 0). An untrained index is first
// trained on a sample of the batch (SampleSize rows, drawn with the seed).
// Under Cosine zero vectors are skipped, as pgvector skips them. The batch is
// checked first: a wrong length, NaN or infinity, or an id that is live or
// repeated returns an error and inserts nothing.
func (x *Index) AddBatch(ids []uint64, vecs []float32, workers int) error {
	d := x.cfg.Dim
	if len(vecs) != len(ids)*d {
		return fmt.Errorf("%w: %d floats for %d rows of %d", ErrDimension, len(vecs), len(ids), d)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	skip := 0
	for i := range ids {
		v := vecs[i*d : (i+1)*d]
		if !finite(v) {
			return ErrInvalidVector
		}
		if x.cfg.Metric == Cosine && sqNorm64(v) == 0 {
			skip++
		}
	}
	if skip == len(ids) {
		return nil
	}
	if err := x.checkIDs(ids); err != nil {
		return err
	}
	if !x.Trained() {
		if err := x.trainOnBatch(vecs, workers); err != nil {
			return err
		}
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	assign := x.assign(vecs, workers) // -1 for skipped zero vectors

	// Rows by list, in input order: a counting sort.
	nl := len(x.lists)
	start := make([]int, nl+1)
	for _, a := range assign {
		if a >= 0 {
			start[a+1]++
		}
	}
	for c := range nl {
		start[c+1] += start[c]
	}
	order := make([]int32, start[nl])
	fill := slices.Clone(start[:nl])
	for i, a := range assign {
		if a >= 0 {
			order[fill[a]] = int32(i)
			fill[a]++
		}
	}

	x.idMu.Lock()
	defer x.idMu.Unlock()
	// Checked again under the lock: another batch may have taken an id.
	for _, i := range order {
		if _, dup := x.byID[ids[i]]; dup {
			return fmt.Errorf("%w: %d", ErrDuplicateID, ids[i])
		}
	}
	for c := range nl {
		rows := order[start[c]:start[c+1]]
		if len(rows) == 0 {
			continue
		}
		l := x.lists[c]
		l.mu.Lock()
		base := len(l.ids)
		l.ids = slices.Grow(l.ids, len(rows))
		l.vecs = slices.Grow(l.vecs, len(rows)*d)
		l.dead = slices.Grow(l.dead, len(rows))
		for j, i := range rows {
			l.ids = append(l.ids, ids[i])
			at := len(l.vecs)
			l.vecs = append(l.vecs, vecs[int(i)*d:(int(i)+1)*d]...)
			if x.cfg.Metric == Cosine {
				v := l.vecs[at:]
				normalize(v, v)
			}
			l.dead = append(l.dead, false)
			x.byID[ids[i]] = loc{uint32(c), uint32(base + j)}
		}
		l.mu.Unlock()
	}
	return nil
}

// checkIDs reports an id of ids that is live in the index or repeated in
// ids. It sorts a copy when the batch is large enough to need one.
func (x *Index) checkIDs(ids []uint64) error {
	x.idMu.Lock()
	for _, id := range ids {
		if _, dup := x.byID[id]; dup {
			x.idMu.Unlock()
			return fmt.Errorf("%w: %d", ErrDuplicateID, id)
		}
	}
	x.idMu.Unlock()
	if len(ids) < 2 {
		return nil
	}
	s := slices.Clone(ids)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return fmt.Errorf("%w: %d twice in one batch", ErrDuplicateID, s[i])
		}
	}
	return nil
}

// assign returns the nearest centroid of every row of vecs, -1 for a zero
// vector under Cosine. The caller holds mu shared.
func (x *Index) assign(vecs []float32, workers int) []int32 {
	d := x.cfg.Dim
	n := len(vecs) / d
	nl := len(x.lists)
	out := make([]int32, n)
	parallel(n, workers, func() any { return make([]float32, nl) }, func(buf any, lo, hi int) {
		dists := buf.([]float32)
		for i := lo; i < hi; i++ {
			v := vecs[i*d : (i+1)*d]
			if x.cfg.Metric == Cosine && sqNorm64(v) == 0 {
				out[i] = -1
				continue
			}
			centroidDists(x.cfg.Metric, v, x.centroids, d, dists)
			out[i] = int32(argmin(dists))
		}
	})
	return out
}

// argmin returns the index of the smallest value, the first of equals.
func argmin(d []float32) int {
	best := 0
	for i, v := range d {
		if v < d[best] {
			best = i
		}
	}
	return best
}

// parallel runs body over [0, n) in chunks on up to workers goroutines, each
// with its own scratch from newScratch. The result must not depend on which
// goroutine runs which chunk.
func parallel(n, workers int, newScratch func() any, body func(scratch any, lo, hi int)) {
	const chunk = 64
	workers = min(max(workers, 1), (n+chunk-1)/chunk)
	if workers <= 1 {
		if n > 0 {
			body(newScratch(), 0, n)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScratch()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				body(s, lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
}

// Delete tombstones id and reports whether it was live. The row stays in its
// list and is never returned again.
func (x *Index) Delete(id uint64) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	x.idMu.Lock()
	defer x.idMu.Unlock()
	at, ok := x.byID[id]
	if !ok {
		return false
	}
	delete(x.byID, id)
	l := x.lists[at.list]
	l.mu.Lock()
	l.dead[at.slot] = true
	l.ndead++
	l.mu.Unlock()
	x.nDeleted.Add(1)
	return true
}
