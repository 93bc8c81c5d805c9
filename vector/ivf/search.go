package ivf

import (
	"fmt"
	"slices"
)

// scanChunk is the number of rows one batch kernel call covers; the
// distances of a chunk live in the pooled scratch.
const scanChunk = 256

// scratch is the state of one search, pooled per index so that a search
// allocates nothing once warm.
type scratch struct {
	q     []float32
	cdist []float32 // distance from the query to each centroid
	order []int32   // lists, nearest first as far as sorted
	dists []float32 // one chunk of row distances
	top   topK
}

// maxPooledLists bounds the per-list scratch a pooled search keeps.
const maxPooledLists = 1 << 16

func (x *Index) getScratch() *scratch {
	s, ok := x.pool.Get().(*scratch)
	if !ok {
		s = &scratch{dists: make([]float32, scanChunk)}
	}
	if cap(s.q) < x.cfg.Dim {
		s.q = make([]float32, x.cfg.Dim)
	}
	return s
}

func (x *Index) putScratch(s *scratch) {
	if cap(s.cdist) > maxPooledLists || cap(s.top.h) > 1<<16 {
		return
	}
	x.pool.Put(s)
}

// Search returns in dst[:0] the k nearest live vectors to q that pass filter
// (nil passes all), ascending by distance, equal distances by ascending id.
// probes is the number of lists scanned (ivfflat.probes; 0 means the default
// 1, more than the lists means all of them): those whose centroids are
// nearest to q, every row of them exactly.
//
// Iterative scan: when the probed lists hold fewer than k rows that pass the
// filter and are not deleted, the search goes on to the next nearest lists,
// one at a time, until it holds k or has scanned every list, as pgvector
// 0.8's ivfflat.iterative_scan does (without its max_probes cap). So a
// search returns k results whenever k live rows pass the filter, however
// selective it is; a filter that passes a fraction p of the rows costs about
// k/p rows scanned, at worst the whole index.
//
// The filter is called only for rows that could enter the result, while a
// list's lock is held shared: it must not call back into the index.
//
// Search allocates nothing once its pooled scratch has warmed up; dst is
// appended to and returned. It may run concurrently with Add, AddBatch and
// Delete; a row added during the search may or may not be seen.
func (x *Index) Search(q []float32, k, probes int, filter func(id uint64) bool, dst []Result) ([]Result, error) {
	dst = dst[:0]
	if len(q) != x.cfg.Dim {
		return dst, fmt.Errorf("%w: got %d, index has %d", ErrDimension, len(q), x.cfg.Dim)
	}
	if !finite(q) {
		return dst, ErrInvalidVector
	}
	if k <= 0 {
		return dst, nil
	}
	if probes <= 0 {
		probes = DefaultProbes
	}
	s := x.getScratch()
	defer x.putScratch(s)
	if x.cfg.Metric == Cosine {
		// A zero query stays zero: every distance is 1, as in pgvector,
		// whose scan does not reject it either.
		normalize(s.q[:x.cfg.Dim], q)
		q = s.q[:x.cfg.Dim]
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	nl := len(x.lists)
	if nl == 0 {
		return dst, nil
	}
	probes = min(probes, nl)
	if cap(s.cdist) < nl {
		s.cdist = make([]float32, nl)
		s.order = make([]int32, nl)
	}
	cdist, order := s.cdist[:nl], s.order[:nl]
	centroidDists(x.cfg.Metric, q, x.centroids, x.cfg.Dim, cdist)
	for i := range order {
		order[i] = int32(i)
	}
	nearestFirst(order, cdist, probes)

	s.top.reset(k)
	for i := 0; i < nl; i++ {
		if i == probes {
			if s.top.len() >= k {
				break
			}
			sortLists(order[probes:], cdist) // iterative scan: the rest, nearest first
		}
		x.scanList(s, q, x.lists[order[i]], filter)
	}
	return s.top.appendSorted(dst, x.cfg.Metric), nil
}

// scanList offers every live row of l that passes filter to s.top.
func (x *Index) scanList(s *scratch, q []float32, l *list, filter func(uint64) bool) {
	d := x.cfg.Dim
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := len(l.ids)
	for lo := 0; lo < n; lo += scanChunk {
		hi := min(lo+scanChunk, n)
		out := s.dists[:hi-lo]
		rowDists(x.cfg.Metric, q, l.vecs[lo*d:hi*d], d, out)
		th := s.top.threshold()
		for i, dist := range out {
			if dist > th {
				continue
			}
			r := lo + i
			if l.ndead > 0 && l.dead[r] {
				continue
			}
			id := l.ids[r]
			if filter != nil && !filter(id) {
				continue
			}
			if s.top.push(dist, id) {
				th = s.top.threshold()
			}
		}
	}
}

// listBefore orders lists by centroid distance, then by number.
func listBefore(cdist []float32, a, b int32) bool {
	return cdist[a] < cdist[b] || cdist[a] == cdist[b] && a < b
}

// nearestFirst moves the p nearest lists to order[:p], sorted.
func nearestFirst(order []int32, cdist []float32, p int) {
	if 4*p >= len(order) {
		sortLists(order, cdist)
		return
	}
	// order[:p] is a max-heap of the p nearest so far.
	h := order[:p]
	for i := p/2 - 1; i >= 0; i-- {
		siftDown(h, i, cdist)
	}
	for i := p; i < len(order); i++ {
		if listBefore(cdist, order[i], h[0]) {
			h[0], order[i] = order[i], h[0]
			siftDown(h, 0, cdist)
		}
	}
	sortLists(h, cdist)
}

func siftDown(h []int32, i int, cdist []float32) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && listBefore(cdist, h[l], h[r]) {
			m = r
		}
		if !listBefore(cdist, h[i], h[m]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func sortLists(order []int32, cdist []float32) {
	slices.SortFunc(order, func(a, b int32) int {
		if listBefore(cdist, a, b) {
			return -1
		}
		if listBefore(cdist, b, a) {
			return 1
		}
		return 0
	})
}

// hit is a row kept by topK: its internal distance and id.
type hit struct {
	d  float32
	id uint64
}

// worse is the result order reversed: larger distance, then larger id.
func worse(a, b hit) bool { return a.d > b.d || a.d == b.d && a.id > b.id }

// topK keeps the k nearest rows offered: a max-heap whose root is the
// current k-th nearest.
type topK struct {
	k int
	h []hit
}

func (t *topK) reset(k int) {
	t.k = k
	if cap(t.h) < k && k <= 1<<16 {
		t.h = make([]hit, 0, k)
	}
	t.h = t.h[:0]
}

func (t *topK) len() int { return len(t.h) }

// threshold is the distance a row must not exceed to enter.
func (t *topK) threshold() float32 {
	if len(t.h) < t.k {
		return float32(inf)
	}
	return t.h[0].d
}

// push offers a row and reports whether it was kept.
func (t *topK) push(d float32, id uint64) bool {
	n := hit{d, id}
	if len(t.h) < t.k {
		t.h = append(t.h, n)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return true
	}
	if !worse(t.h[0], n) {
		return false
	}
	t.h[0] = n
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(t.h) {
			break
		}
		m := l
		if r := l + 1; r < len(t.h) && worse(t.h[r], t.h[l]) {
			m = r
		}
		if !worse(t.h[m], t.h[i]) {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
	return true
}

// appendSorted sorts the kept rows, nearest first, and appends them to dst
// with the metric's reported distances.
func (t *topK) appendSorted(dst []Result, m Metric) []Result {
	slices.SortFunc(t.h, func(a, b hit) int {
		if worse(b, a) {
			return -1
		}
		if worse(a, b) {
			return 1
		}
		return 0
	})
	for _, h := range t.h {
		dst = append(dst, Result{ID: h.id, Distance: reported(m, h.d)})
	}
	return dst
}
