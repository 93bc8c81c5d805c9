package hnsw

import "sync"

// searcher is the scratch state of one search or insert: a visited set, the
// two heaps and buffers. Searchers are pooled per index so that a search
// allocates nothing per visited node (nor, once warm, at all).
type searcher struct {
	// marks[n] == gen means node n was visited in the current pass; bumping
	// gen empties the set without clearing the array.
	marks []uint16
	gen   uint16

	cand minHeap
	res  maxHeap

	nbrs   []uint32 // a neighbour list copied out under its lock
	eps    []item   // entry points of the next layer
	sorted []item   // res in ascending order
	selR   []item   // neighbour selection: kept
	selP   []item   // neighbour selection: pruned
	tmp    []item   // neighbour list being shrunk
	layers [][]item // an insert's chosen neighbours per layer
	q      []float32
	acc    acceptor
}

// reset empties the visited set for a pass over an index of n node slots.
func (s *searcher) reset(n int) {
	if len(s.marks) < n {
		s.marks = make([]uint16, n+n/4)
		s.gen = 0
	}
	s.gen++
	if s.gen == 0 {
		clear(s.marks)
		s.gen = 1
	}
}

// visit marks n and reports whether it was already marked.
func (s *searcher) visit(n uint32) bool {
	if s.marks[n] == s.gen {
		return true
	}
	s.marks[n] = s.gen
	return false
}

// maxPooledMarks bounds the visited array a pooled searcher keeps (64 Mi
// nodes, 128 MiB); larger ones are dropped after use rather than pinned.
const maxPooledMarks = 64 << 20

type searcherPool struct{ p sync.Pool }

func (p *searcherPool) get() *searcher {
	if s, ok := p.p.Get().(*searcher); ok {
		return s
	}
	return &searcher{}
}

func (p *searcherPool) put(s *searcher) {
	if len(s.marks) > maxPooledMarks {
		return
	}
	p.p.Put(s)
}
