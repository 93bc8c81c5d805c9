package ivf

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/deeplaked/deeplaked/vector"
)

// Train finds the index's centroids by k-means on sample, rows of Dim values
// back to back (pgvector trains on SampleSize(lists) rows drawn from the
// table). The same sample and seed give the same centroids whatever workers
// is (GOMAXPROCS when <= 0). A sample of no more distinct rows than lists
// makes each distinct row a centroid, so the index gets fewer lists; under
// Cosine zero vectors are left out, and a sample with no other row returns
// ErrEmptySample (under InnerProduct a sample of zero vectors gives one list). An index already trained returns ErrTrained.
func (x *Index) Train(sample []float32, workers int) error {
	d := x.cfg.Dim
	if len(sample)%d != 0 {
		return fmt.Errorf("%w: %d floats are not rows of %d", ErrDimension, len(sample), d)
	}
	if !finite(sample) {
		return ErrInvalidVector
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lists != nil {
		return ErrTrained
	}
	return x.train(sample, workers)
}

// trainOnBatch trains an untrained index on a sample of a batch being added:
// SampleSize(lists) rows chosen with the seed, or all of them.
func (x *Index) trainOnBatch(vecs []float32, workers int) error {
	d := x.cfg.Dim
	n := len(vecs) / d
	sample := vecs
	if want := SampleSize(x.cfg.Lists); n > want {
		r := rand.New(rand.NewPCG(x.cfg.Seed, 0x1bf5a3))
		perm := make([]int32, n)
		for i := range perm {
			perm[i] = int32(i)
		}
		for i := range want { // partial Fisher-Yates
			j := i + r.IntN(n-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		picked := perm[:want]
		slices.Sort(picked)
		sample = make([]float32, 0, want*d)
		for _, i := range picked {
			sample = append(sample, vecs[int(i)*d:(int(i)+1)*d]...)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lists != nil {
		return nil // trained by a concurrent batch
	}
	return x.train(sample, workers)
}

// train sets the centroids from sample. The caller holds mu.
func (x *Index) train(sample []float32, workers int) error {
	d := x.cfg.Dim
	m := x.cfg.Metric
	spherical := m != L2
	// raw rows feed the means; space rows are what distances are taken in:
	// the rows themselves under L2, their unit vectors under spherical
	// k-means. Under Cosine the stored rows are unit vectors, so raw is the
	// unit vectors too.
	var raw, space []float32
	n := len(sample) / d
	if spherical {
		space = make([]float32, 0, len(sample))
		if m == InnerProduct {
			raw = make([]float32, 0, len(sample))
		}
		u := make([]float32, d)
		for i := range n {
			v := sample[i*d : (i+1)*d]
			if !normalize(u, v) {
				continue // no direction to cluster by
			}
			space = append(space, u...)
			if m == InnerProduct {
				raw = append(raw, v...)
			}
		}
		if m == Cosine {
			raw = space
		}
	} else {
		raw, space = sample, sample
	}
	n = len(space) / d
	var centroids []float32
	switch {
	case n == 0 && m == InnerProduct && len(sample) > 0:
		// Only zero vectors, which inner product indexes: one list, with
		// any unit centroid.
		centroids = make([]float32, d)
		centroids[0] = 1
	case n == 0:
		return ErrEmptySample
	case n <= x.cfg.Lists:
		centroids = distinctRows(space, d)
	default:
		km := kmeans{d: d, k: x.cfg.Lists, n: n, raw: raw, space: space, spherical: spherical, workers: workers}
		centroids = km.run(rand.New(rand.NewPCG(x.cfg.Seed, 0x6b6d65616e73)))
	}
	x.centroids = centroids
	x.lists = make([]*list, len(centroids)/d)
	for i := range x.lists {
		x.lists[i] = &list{}
	}
	return nil
}

// distinctRows returns the distinct rows of data, sorted by their bytes:
// pgvector's centres for a sample no larger than lists (it fills the
// remaining lists with random vectors, which only make empty lists).
func distinctRows(data []float32, d int) []float32 {
	n := len(data) / d
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = data[i*d : (i+1)*d]
	}
	key := func(r []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&r[0])), 4*len(r)) }
	slices.SortFunc(rows, func(a, b []float32) int { return bytes.Compare(key(a), key(b)) })
	out := make([]float32, 0, len(data))
	for i, r := range rows {
		if i > 0 && bytes.Equal(key(r), key(rows[i-1])) {
			continue
		}
		out = append(out, r...)
	}
	return out
}

// kmeans is one k-means run: k-means++ seeding, then Lloyd's iterations
// (at most pgvector's 500, until no row changes centre) accelerated with
// Hamerly's bounds, which skip the rows whose nearest centre provably did not
// change. The bounds need a metric: Euclidean distance in the space rows,
// which for spherical k-means are unit vectors (the chord, monotone in the
// angle pgvector's spherical distance measures). Like Elkan's bounds, which
// pgvector uses, they change the cost, not the result.
type kmeans struct {
	d, k, n   int
	raw       []float32 // rows averaged into centres
	space     []float32 // rows distances are taken to
	spherical bool      // centres are normalized after each update
	workers   int

	centres []float32 // k*d
	assign  []int32
	upper   []float32 // distance to the assigned centre, or more
	lower   []float32 // distance to every other centre, or less
}

func (km *kmeans) row(i int) []float32    { return km.space[i*km.d : (i+1)*km.d] }
func (km *kmeans) centre(c int) []float32 { return km.centres[c*km.d : (c+1)*km.d] }

func (km *kmeans) run(r *rand.Rand) []float32 {
	km.seed(r)
	km.assign = make([]int32, km.n)
	km.upper = make([]float32, km.n)
	km.lower = make([]float32, km.n)
	parallel(km.n, km.workers, km.newBuf, func(buf any, lo, hi int) {
		for i := lo; i < hi; i++ {
			km.nearest(i, buf.([]float32))
		}
	})
	half := make([]float32, km.k) // half the distance to the nearest other centre
	cc := make([]float32, km.k)
	for iter := 0; iter < maxIterations; iter++ {
		moved := km.update()
		var maxMove float32
		for _, v := range moved {
			maxMove = max(maxMove, v)
		}
		for i := range km.n {
			km.upper[i] += moved[km.assign[i]]
			km.lower[i] -= maxMove
		}
		for c := range km.k {
			vector.L2SqBatch(km.centre(c), km.centres, km.d, cc)
			cc[c] = float32(math.Inf(1))
			half[c] = float32(math.Sqrt(float64(slices.Min(cc)))) / 2
		}
		var changes atomic.Int64
		parallel(km.n, km.workers, km.newBuf, func(buf any, lo, hi int) {
			ch := 0
			for i := lo; i < hi; i++ {
				bound := max(half[km.assign[i]], km.lower[i])
				if km.upper[i] <= bound {
					continue
				}
				km.upper[i] = dist(km.row(i), km.centre(int(km.assign[i])))
				if km.upper[i] <= bound {
					continue
				}
				old := km.assign[i]
				km.nearest(i, buf.([]float32))
				if km.assign[i] != old {
					ch++
				}
			}
			changes.Add(int64(ch))
		})
		if changes.Load() == 0 {
			break
		}
	}
	// Centres are the means of the final assignment, as pgvector's are.
	km.update()
	return km.centres
}

func (km *kmeans) newBuf() any { return make([]float32, km.k) }

func dist(a, b []float32) float32 { return float32(math.Sqrt(float64(vector.L2Sq(a, b)))) }

// nearest assigns row i to its nearest centre and sets its exact bounds.
func (km *kmeans) nearest(i int, buf []float32) {
	vector.L2SqBatch(km.row(i), km.centres, km.d, buf)
	best, second := 0, -1
	for c := 1; c < km.k; c++ {
		if buf[c] < buf[best] {
			best, second = c, best
		} else if second < 0 || buf[c] < buf[second] {
			second = c
		}
	}
	km.assign[i] = int32(best)
	km.upper[i] = float32(math.Sqrt(float64(buf[best])))
	km.lower[i] = float32(math.Inf(1))
	if second >= 0 {
		km.lower[i] = float32(math.Sqrt(float64(buf[second])))
	}
}

// seed picks the initial centres by k-means++: the first uniformly, each
// next with probability proportional to its squared distance to the nearest
// centre already picked.
func (km *kmeans) seed(r *rand.Rand) {
	d := km.d
	km.centres = make([]float32, km.k*d)
	weight := make([]float32, km.n)
	dists := make([]float32, km.n)
	for i := range weight {
		weight[i] = float32(math.Inf(1))
	}
	pick := r.IntN(km.n)
	for c := range km.k {
		copy(km.centre(c), km.row(pick))
		if c == km.k-1 {
			break
		}
		vector.L2SqBatch(km.centre(c), km.space, d, dists)
		var sum float64
		for i, w := range dists {
			weight[i] = min(weight[i], w)
			sum += float64(weight[i])
		}
		if sum == 0 { // fewer distinct rows than centres; the rest repeat
			continue
		}
		choice := sum * r.Float64()
		pick = km.n - 1
		for i, w := range weight {
			choice -= float64(w)
			if choice <= 0 {
				pick = i
				break
			}
		}
	}
}

// update moves every centre to the mean of its rows (normalized under
// spherical k-means) and returns how far each moved. A centre left without
// rows takes the row furthest from its own centre, so that no list stays
// empty while another is large.
func (km *kmeans) update() []float32 {
	d := km.d
	sums := make([]float64, km.k*d)
	counts := make([]int, km.k)
	for i := range km.n {
		a := int(km.assign[i])
		counts[a]++
		s := sums[a*d : (a+1)*d]
		for j, v := range km.raw[i*d : (i+1)*d] {
			s[j] += float64(v)
		}
	}
	for c := range km.k {
		if counts[c] > 0 {
			continue
		}
		far := -1
		for i := range km.n {
			if counts[km.assign[i]] > 1 && (far < 0 || km.upper[i] > km.upper[far]) {
				far = i
			}
		}
		if far < 0 {
			continue
		}
		old := int(km.assign[far])
		v := km.raw[far*d : (far+1)*d]
		for j, x := range v {
			sums[old*d+j] -= float64(x)
			sums[c*d+j] = float64(x)
		}
		counts[old]--
		counts[c] = 1
		km.assign[far] = int32(c)
		km.upper[far], km.lower[far] = 0, 0
	}
	moved := make([]float32, km.k)
	next := make([]float32, d)
	for c := range km.k {
		if counts[c] == 0 {
			continue
		}
		s := sums[c*d : (c+1)*d]
		for j := range next {
			next[j] = float32(s[j] / float64(counts[c]))
		}
		if km.spherical && !normalize(next, next) {
			continue // rows cancel out: keep the old direction
		}
		moved[c] = dist(km.centre(c), next)
		copy(km.centre(c), next)
	}
	return moved
}
