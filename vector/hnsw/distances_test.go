package hnsw

import (
	"math"
	"testing"
)

// TestDistances checks Distances against the SQL operator's value computed
// in float64, for live rows, and that deleted and unknown ids are reported
// as not found with their slots left alone.
func TestDistances(t *testing.T) {
	const n, dim = 500, 24
	vecs := clustered(n, dim, 10, 3)
	ids := seqIDs(n, 100)
	q := perturb(vecs[:dim], 9)
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Metric: m, Seed: 1}, ids, vecs, 2)
		if !x.Delete(ids[7]) {
			t.Fatal("delete failed")
		}
		ask := []uint64{ids[3], ids[7], 5, ids[n-1], ids[0]}
		dist := []float32{-1, -1, -1, -1, -1}
		found := make([]bool, len(ask))
		if err := x.Distances(q, ask, dist, found); err != nil {
			t.Fatal(err)
		}
		for i, id := range ask {
			live := id >= 100 && id != ids[7]
			if found[i] != live {
				t.Fatalf("%v: id %d found %v, want %v", m, id, found[i], live)
			}
			if !live {
				if dist[i] != -1 {
					t.Fatalf("%v: id %d not live but its distance was written", m, id)
				}
				continue
			}
			j := int(id - 100)
			want := trueDistance(m, q, vecs[j*dim:(j+1)*dim])
			if math.Abs(float64(dist[i]-want)) > 1e-3*max(1, math.Abs(float64(want))) {
				t.Fatalf("%v: id %d distance %v, want %v", m, id, dist[i], want)
			}
		}
		got := make([]float32, len(ask)*dim)
		x.Vectors(ask, got, found)
		for i, id := range ask {
			live := id >= 100 && id != ids[7]
			if found[i] != live {
				t.Fatalf("%v: Vectors: id %d found %v, want %v", m, id, found[i], live)
			}
			if !live || m == Cosine { // cosine keeps unit vectors
				continue
			}
			j := int(id - 100)
			for c := range dim {
				if got[i*dim+c] != vecs[j*dim+c] {
					t.Fatalf("%v: Vectors: id %d = %v, want %v", m, id, got[i*dim:(i+1)*dim], vecs[j*dim:(j+1)*dim])
				}
			}
		}
		if err := x.Distances(q[:dim-1], ask, dist, found); err == nil {
			t.Fatalf("%v: a query of the wrong dimension was accepted", m)
		}
	}
}
