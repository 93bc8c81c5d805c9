package hnsw

import (
	"slices"
	"sync/atomic"
)

// Result is one neighbour found by Search.
type Result struct {
	ID uint64
	// Distance is the value of the metric's SQL operator: Euclidean distance
	// (<->), negative inner product (<#>) or cosine distance (<=>).
	Distance float32
}

// acceptor decides which nodes a search may return: not deleted, and
// passing the caller's filter. A nil *acceptor accepts every node.
type acceptor struct {
	x      *Index
	filter func(id uint64) bool
}

func (a *acceptor) ok(n uint32) bool {
	if atomic.LoadUint32(&a.x.state[n])&stateDeleted != 0 {
		return false
	}
	return a.filter == nil || a.filter(a.x.ids[n])
}

// Search returns in dst[:0] the k nearest live vectors to q that pass filter
// (nil passes all), ascending by distance, equal distances by ascending id.
// ef is the size of the candidate list (hnsw.ef_search; 0 means the default
// 40); it is raised to k when smaller.
//
// Deleted nodes and nodes that fail the filter are still traversed, so they
// keep the graph connected, but only accepted nodes enter the result list,
// and the search stops only once that list holds ef accepted nodes and no
// candidate is nearer than its furthest. It therefore returns k results
// whenever k accepted nodes are reachable, however selective the filter.
//
// NB: the cost grows as the filter narrows: a filter that passes a fraction
// p of the nodes needs about ef/p visits (a distance and a filter call each)
// to collect ef matches, and in practice several times that before the walk
// can stop. An exact scan costs a filter call per node and a distance per
// match. So the walk estimates p from the nodes it has checked and switches
// to the scan as soon as the walk's expected remaining cost exceeds the
// scan's, and in any case once it has computed distances for half the
// index. A selective filter thus costs about one pass of filter calls plus
// p*n distances, and its answer is exact; a search never costs much more
// than one brute-force pass.
//
// Search allocates nothing once its pooled scratch has warmed up; dst is
// appended to and returned. It may run concurrently with Add and Delete.
// NB: filter runs while the search holds the index's arenas shared; it must
// not call Add, Delete or Reserve on the same index.
func (x *Index) Search(q []float32, k, ef int, filter func(id uint64) bool, dst []Result) ([]Result, error) {
	dst = dst[:0]
	s := x.pool.get()
	defer x.pool.put(s)
	if cap(s.q) < x.cfg.Dim {
		s.q = make([]float32, x.cfg.Dim)
	}
	// A zero query under Cosine stays zero: every distance is 1, as in
	// pgvector, whose scan does not reject it either.
	q, _, err := x.prepare(q, s.q)
	if err != nil || k <= 0 {
		return dst, err
	}
	if ef <= 0 {
		ef = DefaultEfSearch
	}
	ef = max(ef, k)

	x.growMu.RLock()
	defer x.growMu.RUnlock()
	x.epMu.RLock()
	ep, top := x.entry, x.top
	x.epMu.RUnlock()
	if ep < 0 {
		return dst, nil
	}
	s.reset(x.capNodes)
	cur := item{x.dist(q, x.vec(uint32(ep))), uint32(ep)}
	for l := top; l > 0; l-- {
		cur = x.greedy(s, x.dist, q, cur, l)
	}

	var acc *acceptor
	scanN := 0
	if filter != nil || x.nDeleted.Load() > 0 {
		s.acc = acceptor{x: x, filter: filter}
		acc = &s.acc
		scanN = int(x.n.Load())
	}
	s.reset(x.capNodes)
	s.eps = append(s.eps[:0], cur)
	if !x.searchLayer(s, x.dist, q, s.eps, ef, 0, acc, scanN) {
		x.scan(s, q, k, acc)
	}
	res := s.sortResults()
	if acc != nil {
		s.acc = acceptor{} // drop the filter's closure before pooling
	}
	// Keep k, and whatever ties the k-th, for the order by id below.
	if len(res) > k {
		cut := k
		for cut < len(res) && res[cut].d == res[k-1].d {
			cut++
		}
		res = res[:cut]
	}
	for _, r := range res {
		dst = append(dst, Result{ID: x.ids[r.n], Distance: reported(x.cfg.Metric, r.d)})
	}
	// The heap orders equal distances by node number; order them by id
	// before cutting to k.
	slices.SortStableFunc(dst, func(a, b Result) int {
		switch {
		case a.Distance < b.Distance:
			return -1
		case a.Distance > b.Distance:
			return 1
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	if len(dst) > k {
		dst = dst[:k]
	}
	return dst, nil
}

// greedy walks layer l from cur to the nearest node it can reach by always
// moving to a nearer neighbour (the paper's search with ef = 1).
func (x *Index) greedy(s *searcher, dist distFunc, q []float32, cur item, l int) item {
	for changed := true; changed; {
		changed = false
		for _, nb := range x.neighbours(s, cur.n, l) {
			if d := dist(q, x.vec(nb)); d < cur.d {
				cur = item{d, nb}
				changed = true
			}
		}
	}
	return cur
}

// searchLayer is the paper's algorithm 2 on layer l: a best-first walk from
// eps that leaves in s.res the ef nearest nodes the accept function passes
// (all nodes for a nil acc). Nodes that fail it are walked through but not
// kept, and the walk goes on until s.res holds ef of them.
//
// With scanN > 0 (the node count) the walk gives up, returning false, when
// an exact scan of scanN nodes is expected to be cheaper than going on (see
// Search).
func (x *Index) searchLayer(s *searcher, dist distFunc, q []float32, eps []item, ef, l int, acc *acceptor, scanN int) bool {
	s.cand, s.res = s.cand[:0], s.res[:0]
	for _, e := range eps {
		if s.visit(e.n) {
			continue
		}
		s.cand.push(e)
		if acc == nil || acc.ok(e.n) {
			s.res.push(e)
			if len(s.res) > ef {
				s.res.pop()
			}
		}
	}
	evals, checked, accepted := 0, 0, 0
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if len(s.res) >= ef && c.d > s.res[0].d {
			break
		}
		nbrs := x.neighbours(s, c.n, l)
		for _, nb := range nbrs {
			if s.visit(nb) {
				continue
			}
			d := dist(q, x.vec(nb))
			evals++
			if len(s.res) < ef || d < s.res[0].d {
				s.cand.push(item{d, nb})
				checked++
				if acc == nil || acc.ok(nb) {
					accepted++
					s.res.push(item{d, nb})
					if len(s.res) > ef {
						s.res.pop()
					}
				}
			}
		}
		if scanN > 0 && x.scanCheaper(scanN, evals, checked, accepted, ef-len(s.res)) {
			return false
		}
	}
	// The walk ran out of candidates: when a filter (or tombstones) left
	// it short of ef matches, the part of the graph it reached may not be
	// all there is (many equal vectors can leave few links between their
	// copies), so an exact scan finds the rest.
	return scanN == 0 || len(s.res) >= ef || x.walkOnly
}

// scanCheaper reports whether a filtered walk that has computed evals
// distances, of which checked went through the filter and accepted passed it,
// should give way to an exact scan of n nodes while it still lacks missing
// matches. Costs are in distance computations: a filter call (with the node's
// state) is taken to cost what 8 dimensions of a distance cost.
func (x *Index) scanCheaper(n, evals, checked, accepted, missing int) bool {
	if x.walkOnly {
		return false
	}
	if evals > n/2 {
		return true
	}
	if missing <= 0 || checked < 64 {
		return false
	}
	p := float64(accepted+1) / float64(checked+1)
	filterCost := min(1, max(1.0/32, 8/float64(x.cfg.Dim)))
	walk := 4 * float64(missing) / p
	scan := float64(n) * (filterCost + p)
	return walk > scan
}

// scan replaces s.res with the exact k nearest accepted nodes, computing a
// distance for every node that is ready and accepted.
func (x *Index) scan(s *searcher, q []float32, k int, acc *acceptor) {
	s.res = s.res[:0]
	n := x.n.Load()
	for i := range n {
		if atomic.LoadUint32(&x.state[i])&stateReady == 0 || !acc.ok(i) {
			continue
		}
		d := x.dist(q, x.vec(i))
		if len(s.res) < k || d < s.res[0].d {
			s.res.push(item{d, i})
			if len(s.res) > k {
				s.res.pop()
			}
		}
	}
}

// sortResults empties s.res into s.sorted, ascending.
func (s *searcher) sortResults() []item {
	if cap(s.sorted) < len(s.res) {
		s.sorted = make([]item, len(s.res), 2*len(s.res))
	}
	out := s.sorted[:len(s.res)]
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = s.res.pop()
	}
	s.sorted = out
	return out
}
