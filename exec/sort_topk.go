package exec

import (
	"slices"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// maxHeapRows is the most rows a sort under a LIMIT keeps in a heap;
// for more it sorts as usual, holding about twice as many rows (see
// sortOp.trim), which past this many is no slower and can spill (a
// variable for benchmarks).
var maxHeapRows int64 = 10000

// topKHeap keeps the first k rows of its input in the order of keys, rows
// of equal keys in input order: the rows the stable full sort would put
// first. It is a max-heap of the rows held, the one that sorts last at
// its top; a row is copied in only when it sorts before that one, which
// it replaces. Rows are appended to rows and never moved there, so the
// order of their indexes is their input order; the replaced ones are
// dropped when they come to outnumber the rows held (compact).
type topKHeap struct {
	keys []plan.SortKey
	k    int
	rows *types.Batch
	// heap lists the rows of rows held, as a max-heap on before.
	heap  []int32
	spare *types.Batch
	// remap is compact's scratch: each row's index once compacted.
	remap []int32
}

func newTopKHeap(keys []plan.SortKey, ts []types.Type, k int) *topKHeap {
	return &topKHeap{keys: keys, k: k, rows: types.NewBatch(ts, min(k, types.BatchSize))}
}

// before reports whether row x of rows sorts before row y.
func (h *topKHeap) before(x, y int32) bool {
	c := compareKeys(h.keys, h.rows, int(x), h.rows, int(y))
	return c < 0 || c == 0 && x < y
}

// add takes the rows of b that are among the first k seen so far.
func (h *topKHeap) add(b *types.Batch) {
	n := b.Len()
	for r := 0; r < n; r++ {
		if len(h.heap) < h.k {
			h.heap = append(h.heap, h.copyRow(b, r))
			h.up(len(h.heap) - 1)
			continue
		}
		// A row equal to the last held came after it: it is not taken.
		if h.k == 0 || compareKeys(h.keys, b, r, h.rows, int(h.heap[0])) >= 0 {
			continue
		}
		h.heap[0] = h.copyRow(b, r)
		h.down(0)
		if h.rows.Len() >= 2*h.k+types.BatchSize {
			h.compact()
		}
	}
}

// copyRow appends row r of b to rows and returns its index there.
func (h *topKHeap) copyRow(b *types.Batch, r int) int32 {
	for i, c := range b.Cols {
		h.rows.Cols[i].AppendFrom(c, r)
	}
	return int32(h.rows.Len() - 1)
}

func (h *topKHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(h.heap[p], h.heap[i]) {
			return
		}
		h.heap[p], h.heap[i] = h.heap[i], h.heap[p]
		i = p
	}
}

// down moves the row at i down to its place. As in Floyd's heapsort it
// first follows the path of the children that sort last to a leaf, one
// comparison a level, then climbs back to where the row belongs: a row
// that replaces the top mostly belongs near the leaves.
func (h *topKHeap) down(i int) {
	x, n := h.heap[i], len(h.heap)
	start := i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.before(h.heap[c], h.heap[c+1]) {
			c++
		}
		h.heap[i] = h.heap[c]
		i = c
	}
	for i > start {
		p := (i - 1) / 2
		if !h.before(h.heap[p], x) {
			break
		}
		h.heap[i] = h.heap[p]
		i = p
	}
	h.heap[i] = x
}

// compact drops the rows replaced: rows keeps only those held, in input
// order, and the heap is renumbered (its order does not change, as the
// indexes keep their order).
func (h *topKHeap) compact() {
	n := h.rows.Len()
	h.remap = slices.Grow(h.remap[:0], n)[:n]
	for i := range h.remap {
		h.remap[i] = -1
	}
	for _, r := range h.heap {
		h.remap[r] = 0
	}
	if h.spare == nil {
		h.spare = types.NewBatch(batchTypes(h.rows), len(h.heap))
	}
	compactRows(h.rows, h.spare, h.remap)
	h.rows, h.spare = h.spare, h.rows
	for i, r := range h.heap {
		h.heap[i] = h.remap[r]
	}
}

// inOrder returns the rows held, in input order (as the sort would have
// held them had it held every row); h is not used after.
func (h *topKHeap) inOrder() *types.Batch {
	h.compact()
	h.spare = nil
	return h.rows
}

// sorted returns the rows held and their order, perm reused for it; h
// is not used after.
func (h *topKHeap) sorted(perm []int) (*types.Batch, []int) {
	slices.SortFunc(h.heap, func(x, y int32) int {
		if x == y {
			return 0
		}
		if h.before(x, y) {
			return -1
		}
		return 1
	})
	perm = perm[:0]
	for _, r := range h.heap {
		perm = append(perm, int(r))
	}
	return h.rows, perm
}

// bytes is about the memory the heap holds.
func (h *topKHeap) bytes() int64 {
	return batchBytes(h.rows) + batchBytes(h.spare) + 4*int64(cap(h.heap)+cap(h.remap))
}

// compactRows copies into spare, in order, the rows of rows whose remap
// entry is not negative, and sets each such entry to the row's index in
// spare.
func compactRows(rows, spare *types.Batch, remap []int32) {
	spare.Reset()
	for r, live := range remap {
		if live < 0 {
			continue
		}
		remap[r] = int32(spare.Len())
		for i, c := range rows.Cols {
			spare.Cols[i].AppendFrom(c, r)
		}
	}
}
