package vector

import (
	"math"
	"slices"
)

// Neighbor is one search result: a row id and its distance to the query.
type Neighbor struct {
	Dist float32
	ID   int64
}

// before is the result order: smaller distance first, NaN after every
// number (as PostgreSQL orders float8), equal distances by smaller id, so
// that results do not depend on scan order.
func before(a, b Neighbor) bool {
	if a.Dist < b.Dist {
		return true
	}
	if a.Dist > b.Dist {
		return false
	}
	an, bn := a.Dist != a.Dist, b.Dist != b.Dist
	if an != bn {
		return bn // a number comes before NaN
	}
	return a.ID < b.ID
}

// TopK keeps the k nearest of the neighbours pushed into it: a bounded
// max-heap whose root is the current k-th nearest. Once sized (NewTopK or
// Reset with the largest k it will see) it allocates nothing. A TopK is not
// safe for concurrent use; exact search keeps one per worker and merges.
type TopK struct {
	k    int
	heap []Neighbor // max-heap by before: heap[0] is the worst kept
}

// NewTopK returns a TopK that keeps k neighbours.
func NewTopK(k int) *TopK {
	t := &TopK{}
	t.Reset(k)
	return t
}

// Reset empties t and makes it keep k neighbours, reusing its storage.
func (t *TopK) Reset(k int) {
	if k < 0 {
		k = 0
	}
	t.k = k
	if cap(t.heap) < k {
		t.heap = make([]Neighbor, 0, k)
	}
	t.heap = t.heap[:0]
}

// K returns the number of neighbours t keeps.
func (t *TopK) K() int { return t.k }

// Len returns the number of neighbours held, at most K.
func (t *TopK) Len() int { return len(t.heap) }

// Threshold returns the distance a row must not exceed to enter: +Inf until
// k neighbours are held, then the k-th smallest distance. A scan may skip
// rows whose distance (or a lower bound of it) is greater; a row at exactly
// the threshold may still enter with a smaller id.
func (t *TopK) Threshold() float32 {
	if len(t.heap) < t.k {
		return float32(math.Inf(1))
	}
	if t.k == 0 {
		return float32(math.Inf(-1))
	}
	return t.heap[0].Dist
}

// Push offers a neighbour and reports whether it was kept.
func (t *TopK) Push(dist float32, id int64) bool {
	n := Neighbor{Dist: dist, ID: id}
	if len(t.heap) < t.k {
		t.heap = append(t.heap, n)
		t.up(len(t.heap) - 1)
		return true
	}
	if t.k == 0 || !before(n, t.heap[0]) {
		return false
	}
	t.heap[0] = n
	t.down(0)
	return true
}

// PushBatch offers dists[i] with id base+i for every i, skipping rows over
// the threshold without touching the heap: the loop exact search runs after
// a batch kernel.
func (t *TopK) PushBatch(dists []float32, base int64) {
	th := t.Threshold()
	for i, d := range dists {
		if d > th {
			continue
		}
		if t.Push(d, base+int64(i)) && len(t.heap) == t.k {
			th = t.heap[0].Dist
		}
	}
}

// AppendSorted appends the neighbours held, nearest first, to dst and
// returns it. t is left unchanged.
func (t *TopK) AppendSorted(dst []Neighbor) []Neighbor {
	start := len(dst)
	dst = append(dst, t.heap...)
	slices.SortFunc(dst[start:], func(a, b Neighbor) int {
		if before(a, b) {
			return -1
		}
		if before(b, a) {
			return 1
		}
		return 0
	})
	return dst
}

func (t *TopK) up(i int) {
	h := t.heap
	for i > 0 {
		p := (i - 1) / 2
		if !before(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (t *TopK) down(i int) {
	h := t.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && before(h[l], h[r]) {
			m = r
		}
		if !before(h[i], h[m]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
