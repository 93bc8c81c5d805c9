package hnsw

// item is a node with its distance to the current query.
type item struct {
	d float32
	n uint32
}

// less orders items by distance, then by node, so that equal distances give
// the same order on every run.
func (a item) less(b item) bool { return a.d < b.d || (a.d == b.d && a.n < b.n) }

// minHeap holds the candidates still to expand, nearest on top.
type minHeap []item

func (h *minHeap) push(x item) {
	s := append(*h, x)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

func (h *minHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		c := l
		if r := l + 1; r < len(s) && s[r].less(s[l]) {
			c = r
		}
		if !s[c].less(s[i]) {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}

// maxHeap holds the best results so far, furthest on top, so the furthest
// is dropped when a nearer one arrives.
type maxHeap []item

func (h *maxHeap) push(x item) {
	s := append(*h, x)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[p].less(s[i]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

func (h *maxHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		c := l
		if r := l + 1; r < len(s) && s[l].less(s[r]) {
			c = r
		}
		if !s[i].less(s[c]) {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}
