package hnsw

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Node states, kept per node and changed with atomic operations.
const (
	stateReady   = 1 << iota // vector and own lists written; safe to read
	stateDeleted             // tombstone: routes searches, never returned
)

// lockStripes is the number of mutexes guarding neighbour lists; node n's
// lists are guarded by locks[n%lockStripes]. A goroutine holds at most one
// stripe at a time, so stripes cannot deadlock.
const lockStripes = 1 << 12

// Index is an HNSW graph over float32 vectors identified by uint64 ids.
//
// Nodes are numbered 0..n-1 in insertion order; all per-node data lives in
// arenas indexed by node number.
type Index struct {
	cfg  Config
	m0   int      // neighbours on layer 0 (2*M)
	ml   float64  // level multiplier 1/ln(M)
	dist distFunc // orders search results
	// bdist links the graph: dist, except under InnerProduct (see
	// ipBuildDistance).
	bdist     distFunc
	maxSqNorm atomic.Uint32 // float32 bits of Φ², InnerProduct only

	// mutMu excludes mutations (Add, Delete, Reserve) while WriteTo takes a
	// snapshot; searches do not take it.
	mutMu sync.RWMutex

	// growMu guards the arena slice headers: writers hold it to reallocate,
	// everyone reading or writing inside the arenas holds it shared.
	growMu   sync.RWMutex
	capNodes int       // node slots in the arenas
	vecs     []float32 // capNodes*Dim
	ids      []uint64
	levels   []uint8
	state    []uint32
	links0   []uint32 // capNodes*(m0+1): count, then m0 slots
	upperOff []uint32 // node's first word in upper when its level > 0
	upper    []uint32 // per node with level L > 0: L lists of count + M slots

	// allocMu guards node numbering and the id map.
	allocMu   sync.Mutex
	n         atomic.Uint32 // nodes allocated
	upperUsed int
	byID      map[uint64]uint32 // live nodes only
	nDeleted  atomic.Int64

	// epMu guards the entry point and the top level.
	epMu  sync.RWMutex
	entry int32 // -1 while empty
	top   int

	// walkOnly keeps filtered searches on the graph (tests of the walk).
	walkOnly bool

	locks [lockStripes]sync.Mutex
	pool  searcherPool
}

// New returns an empty index. Zero M and EfConstruction take pgvector's
// defaults (16 and 64).
func New(cfg Config) (*Index, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return newIndex(cfg), nil
}

func newIndex(cfg Config) *Index {
	x := &Index{
		cfg:   cfg,
		m0:    2 * cfg.M,
		ml:    1 / math.Log(float64(cfg.M)),
		dist:  distanceFor(cfg.Metric),
		byID:  make(map[uint64]uint32),
		entry: -1,
	}
	x.bdist = x.dist
	if cfg.Metric == InnerProduct {
		x.bdist = x.ipBuildDistance
	}
	return x
}

// Config returns the index's configuration with defaults filled in.
func (x *Index) Config() Config { return x.cfg }

// Len returns the number of live (not deleted) vectors.
func (x *Index) Len() int {
	x.allocMu.Lock()
	defer x.allocMu.Unlock()
	return len(x.byID)
}

// Deleted returns the number of tombstoned nodes still in the graph.
func (x *Index) Deleted() int { return int(x.nDeleted.Load()) }

// Size returns the bytes held by the index's arenas and id map (the map at
// an estimated 24 bytes per entry).
func (x *Index) Size() int64 {
	x.growMu.RLock()
	b := 4*int64(cap(x.vecs)) + 8*int64(cap(x.ids)) + int64(cap(x.levels)) +
		4*int64(cap(x.state)) + 4*int64(cap(x.links0)) + 4*int64(cap(x.upperOff)) +
		4*int64(cap(x.upper))
	x.growMu.RUnlock()
	return b + 24*int64(x.Len())
}

// vec returns node n's stored vector (normalized under Cosine).
func (x *Index) vec(n uint32) []float32 {
	d := x.cfg.Dim
	i := int(n) * d
	return x.vecs[i : i+d : i+d]
}

// list returns node n's neighbour list on layer l: a count, then the slots.
// The caller holds the node's stripe lock.
func (x *Index) list(n uint32, l int) []uint32 {
	if l == 0 {
		w := x.m0 + 1
		i := int(n) * w
		return x.links0[i : i+w : i+w]
	}
	w := x.cfg.M + 1
	i := int(x.upperOff[n]) + (l-1)*w
	return x.upper[i : i+w : i+w]
}

func (x *Index) stripe(n uint32) *sync.Mutex { return &x.locks[n%lockStripes] }

// neighbours copies node n's layer-l neighbours into s.nbrs under the node's
// lock, so the caller computes distances without holding it.
func (x *Index) neighbours(s *searcher, n uint32, l int) []uint32 {
	mu := x.stripe(n)
	mu.Lock()
	lst := x.list(n, l)
	s.nbrs = append(s.nbrs[:0], lst[1:1+lst[0]]...)
	mu.Unlock()
	return s.nbrs
}

func (x *Index) layerM(l int) int {
	if l == 0 {
		return x.m0
	}
	return x.cfg.M
}

// prepare checks v and returns the vector to store or search with: v itself,
// or under Cosine its normalized copy in buf. ok is false for a zero vector
// under Cosine.
func (x *Index) prepare(v, buf []float32) (out []float32, ok bool, err error) {
	if len(v) != x.cfg.Dim {
		return nil, false, fmt.Errorf("%w: got %d, index has %d", ErrDimension, len(v), x.cfg.Dim)
	}
	if !finite(v) {
		return nil, false, ErrInvalidVector
	}
	if x.cfg.Metric != Cosine {
		return v, true, nil
	}
	buf = buf[:x.cfg.Dim]
	ok = normalize(buf, v)
	return buf, ok, nil
}

// Reserve makes room for n more nodes, so a bulk load does not pause to
// reallocate the arenas while it runs.
func (x *Index) Reserve(n int) {
	x.mutMu.RLock()
	defer x.mutMu.RUnlock()
	x.allocMu.Lock()
	nodes := int(x.n.Load()) + n
	upper := x.upperUsed + expectedUpper(n, x.cfg.M)
	x.allocMu.Unlock()
	x.grow(nodes, upper)
}

// expectedUpper estimates the upper-layer words n new nodes need: a node has
// on average 1/(M-1) upper layers of M+1 words; the estimate adds a quarter
// and a constant so that it is rarely exceeded.
func expectedUpper(n, m int) int {
	return (n*(m+1)/(m-1))*5/4 + 64*(m+1)
}

// grow reallocates the arenas to hold at least nodes nodes and upper words
// of upper-layer lists. It waits for every reader to leave.
func (x *Index) grow(nodes, upper int) {
	x.growMu.Lock()
	defer x.growMu.Unlock()
	if nodes > x.capNodes {
		c := max(nodes, 2*x.capNodes, 1024)
		d := x.cfg.Dim
		x.vecs = growTo(x.vecs, c*d, x.capNodes*d)
		x.ids = growTo(x.ids, c, x.capNodes)
		x.levels = growTo(x.levels, c, x.capNodes)
		x.state = growTo(x.state, c, x.capNodes)
		x.links0 = growTo(x.links0, c*(x.m0+1), x.capNodes*(x.m0+1))
		x.upperOff = growTo(x.upperOff, c, x.capNodes)
		x.capNodes = c
	}
	if upper > len(x.upper) {
		c := max(upper, 2*len(x.upper), 1024)
		x.upper = growTo(x.upper, c, len(x.upper))
	}
}

// growTo returns a slice of length n holding the first used elements of s.
func growTo[T any](s []T, n, used int) []T {
	t := make([]T, n)
	copy(t, s[:used])
	return t
}

// Add inserts v under id. It is safe to call from many goroutines at once.
// Under Cosine a zero vector returns ErrZeroVector and is not indexed. An id
// that is live in the index returns ErrDuplicateID; a deleted id may be added
// again (as a new node).
func (x *Index) Add(id uint64, v []float32) error {
	s := x.pool.get()
	defer x.pool.put(s)
	if cap(s.q) < x.cfg.Dim {
		s.q = make([]float32, x.cfg.Dim)
	}
	v, ok, err := x.prepare(v, s.q)
	if err != nil {
		return err
	}
	if !ok {
		return ErrZeroVector
	}
	x.mutMu.RLock()
	defer x.mutMu.RUnlock()
	level := levelFor(x.cfg.Seed, id, x.ml)
	node, err := x.alloc(id, level) // returns holding growMu shared
	if err != nil {
		return err
	}
	defer x.growMu.RUnlock()
	copy(x.vec(node), v)
	if x.cfg.Metric == InnerProduct {
		x.noteNorm(v)
	}
	x.ids[node] = id
	x.levels[node] = uint8(level)
	x.insert(s, node, level)
	return nil
}

// alloc numbers a new node for id and reserves its upper-layer lists,
// growing the arenas if they are full. It returns holding growMu shared.
func (x *Index) alloc(id uint64, level int) (uint32, error) {
	need := level * (x.cfg.M + 1)
	for {
		x.growMu.RLock()
		x.allocMu.Lock()
		if _, dup := x.byID[id]; dup {
			x.allocMu.Unlock()
			x.growMu.RUnlock()
			return 0, fmt.Errorf("%w: %d", ErrDuplicateID, id)
		}
		n := int(x.n.Load())
		if n < x.capNodes && x.upperUsed+need <= len(x.upper) {
			if n >= math.MaxUint32 {
				x.allocMu.Unlock()
				x.growMu.RUnlock()
				return 0, fmt.Errorf("%w: index is full", ErrConfig)
			}
			node := uint32(n)
			x.upperOff[node] = uint32(x.upperUsed)
			x.upperUsed += need
			x.byID[id] = node
			x.n.Store(uint32(n + 1))
			x.allocMu.Unlock()
			return node, nil
		}
		upper := x.upperUsed + need
		x.allocMu.Unlock()
		x.growMu.RUnlock()
		x.grow(n+1, upper)
	}
}

// Delete tombstones id and reports whether it was live. The node keeps
// routing searches; it is never returned again.
func (x *Index) Delete(id uint64) bool {
	x.mutMu.RLock()
	defer x.mutMu.RUnlock()
	x.allocMu.Lock()
	node, ok := x.byID[id]
	if ok {
		delete(x.byID, id)
	}
	x.allocMu.Unlock()
	if !ok {
		return false
	}
	x.growMu.RLock()
	atomic.OrUint32(&x.state[node], stateDeleted)
	x.growMu.RUnlock()
	x.nDeleted.Add(1)
	return true
}

// Contains reports whether id is live in the index.
func (x *Index) Contains(id uint64) bool {
	x.allocMu.Lock()
	defer x.allocMu.Unlock()
	_, ok := x.byID[id]
	return ok
}
