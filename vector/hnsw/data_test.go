package hnsw

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// clustered returns n vectors of dim dimensions, back to back, drawn around
// clusters gaussian centres (centres uniform in [-1, 1), spread 0.15 per
// dimension), deterministic for a seed.
func clustered(n, dim, clusters int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	centres := make([]float32, clusters*dim)
	for i := range centres {
		centres[i] = float32(r.Float64()*2 - 1)
	}
	out := make([]float32, n*dim)
	for i := range n {
		c := centres[r.IntN(clusters)*dim:][:dim]
		for j := range dim {
			out[i*dim+j] = c[j] + float32(r.NormFloat64()*0.15)
		}
	}
	return out
}

func seqIDs(n int, base uint64) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = base + uint64(i)
	}
	return ids
}

// exact returns the k nearest ids to q among vecs (ids[i] for row i) that
// pass keep, by the metric's true distance, ties by id.
func exact(m Metric, dim int, ids []uint64, vecs, q []float32, k int, keep func(uint64) bool) []Result {
	var all []Result
	for i, id := range ids {
		if keep != nil && !keep(id) {
			continue
		}
		all = append(all, Result{ID: id, Distance: trueDistance(m, q, vecs[i*dim:(i+1)*dim])})
	}
	slices.SortFunc(all, func(a, b Result) int {
		if a.Distance != b.Distance {
			if a.Distance < b.Distance {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return all[:min(k, len(all))]
}

// trueDistance is the SQL operator's value, computed in float64.
func trueDistance(m Metric, a, b []float32) float32 {
	var dot, na, nb, l2, l1 float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
		l2 += (x - y) * (x - y)
		l1 += math.Abs(x - y)
	}
	switch m {
	case L2:
		return float32(math.Sqrt(l2))
	case L1:
		return float32(l1)
	case InnerProduct:
		return float32(-dot)
	}
	return float32(1 - dot/math.Sqrt(na*nb))
}

// recall is the fraction of want's ids found in got.
func recall(got, want []Result) float64 {
	if len(want) == 0 {
		return 1
	}
	hit := 0
	for _, w := range want {
		for _, g := range got {
			if g.ID == w.ID {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(len(want))
}

func build(t testing.TB, cfg Config, ids []uint64, vecs []float32, workers int) *Index {
	t.Helper()
	x, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.AddBatch(ids, vecs, workers); err != nil {
		t.Fatal(err)
	}
	return x
}

var metrics = []Metric{L2, InnerProduct, Cosine, L1}
