package hnsw

import (
	"slices"
	"sync/atomic"
)

// insert links node, whose vector and level are written, into the graph
// (algorithm 1 of the paper). The caller holds growMu shared.
//
// It runs in three phases so that no other goroutine can reach the node
// before its own lists are complete: search every layer and choose the
// neighbours; write the node's lists and mark it ready; then add the reverse
// links, one neighbour lock at a time.
func (x *Index) insert(s *searcher, node uint32, level int) {
	q := x.vec(node)
	x.epMu.RLock()
	ep, top := x.entry, x.top
	x.epMu.RUnlock()
	if ep < 0 {
		x.epMu.Lock()
		if x.entry < 0 {
			x.entry, x.top = int32(node), level
			atomic.OrUint32(&x.state[node], stateReady)
			x.epMu.Unlock()
			return
		}
		ep, top = x.entry, x.top
		x.epMu.Unlock()
	}

	s.reset(x.capNodes)
	cur := item{x.bdist(q, x.vec(uint32(ep))), uint32(ep)}
	for l := top; l > level; l-- {
		cur = x.greedy(s, x.bdist, q, cur, l)
	}
	for len(s.layers) <= level {
		s.layers = append(s.layers, nil)
	}
	s.eps = append(s.eps[:0], cur)
	linked := min(level, top)
	for l := linked; l >= 0; l-- {
		s.reset(x.capNodes)
		x.searchLayer(s, x.bdist, q, s.eps, x.cfg.EfConstruction, l, nil, 0)
		w := s.sortResults()
		s.layers[l] = append(s.layers[l][:0], x.selectNeighbours(s, w, x.layerM(l))...)
		s.eps = append(s.eps[:0], w...)
	}

	for l := linked; l >= 0; l-- {
		mu := x.stripe(node)
		mu.Lock()
		lst := x.list(node, l)
		lst[0] = uint32(len(s.layers[l]))
		for i, e := range s.layers[l] {
			lst[1+i] = e.n
		}
		mu.Unlock()
	}
	atomic.OrUint32(&x.state[node], stateReady)

	for l := linked; l >= 0; l-- {
		for _, e := range s.layers[l] {
			x.link(s, e.n, node, e.d, l)
		}
	}

	if level > top {
		x.epMu.Lock()
		if level > x.top {
			x.entry, x.top = int32(node), level
		}
		x.epMu.Unlock()
	}
}

// link adds node to from's layer-l list. A full list is shrunk back to its
// size with the neighbour heuristic over the old neighbours and node.
func (x *Index) link(s *searcher, from, node uint32, d float32, l int) {
	mu := x.stripe(from)
	mu.Lock()
	defer mu.Unlock()
	lst := x.list(from, l)
	cnt := int(lst[0])
	if cnt < x.layerM(l) {
		lst[1+cnt] = node
		lst[0]++
		return
	}
	base := x.vec(from)
	c := s.tmp[:0]
	for _, o := range lst[1 : 1+cnt] {
		c = append(c, item{x.bdist(base, x.vec(o)), o})
	}
	c = append(c, item{d, node})
	slices.SortFunc(c, cmpItem)
	s.tmp = c
	kept := x.selectNeighbours(s, c, x.layerM(l))
	lst[0] = uint32(len(kept))
	for i, e := range kept {
		lst[1+i] = e.n
	}
}

func cmpItem(a, b item) int {
	if a.less(b) {
		return -1
	}
	if b.less(a) {
		return 1
	}
	return 0
}

// selectNeighbours picks at most m of the candidates c (ascending by
// distance to the base node) with the paper's heuristic (algorithm 4), as
// pgvector does: a candidate is kept when it is nearer to the base than to
// every candidate kept before it, which spreads the links over directions;
// pruned candidates then fill the free slots, nearest first. The result
// aliases the searcher's scratch.
func (x *Index) selectNeighbours(s *searcher, c []item, m int) []item {
	if len(c) <= m {
		return c
	}
	r, p := s.selR[:0], s.selP[:0]
	for _, e := range c {
		if len(r) >= m {
			break
		}
		ev := x.vec(e.n)
		good := true
		for _, k := range r {
			if x.bdist(ev, x.vec(k.n)) <= e.d {
				good = false
				break
			}
		}
		if good {
			r = append(r, e)
		} else {
			p = append(p, e)
		}
	}
	for _, e := range p {
		if len(r) >= m {
			break
		}
		r = append(r, e)
	}
	s.selR, s.selP = r, p
	return r
}
