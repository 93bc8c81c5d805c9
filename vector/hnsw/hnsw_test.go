package hnsw

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// meanRecall searches every query and returns the mean recall@k against
// brute force over the same rows and filter.
func meanRecall(t *testing.T, x *Index, ids []uint64, vecs, queries []float32, k, ef int, keep func(uint64) bool) float64 {
	t.Helper()
	dim := x.cfg.Dim
	var sum float64
	nq := len(queries) / dim
	var got []Result
	for i := range nq {
		q := queries[i*dim : (i+1)*dim]
		var err error
		got, err = x.Search(q, k, ef, keep, got)
		if err != nil {
			t.Fatal(err)
		}
		want := exact(x.cfg.Metric, dim, ids, vecs, q, k, keep)
		if len(got) != len(want) {
			t.Fatalf("query %d: %d results, want %d", i, len(got), len(want))
		}
		for j, r := range got {
			if keep != nil && !keep(r.ID) {
				t.Fatalf("query %d: result %d fails the filter", i, r.ID)
			}
			if j > 0 && (got[j-1].Distance > r.Distance || got[j-1].Distance == r.Distance && got[j-1].ID > r.ID) {
				t.Fatalf("query %d: results out of order: %v", i, got)
			}
		}
		sum += recall(got, want)
	}
	return sum / float64(nq)
}

func TestRecall(t *testing.T) {
	for _, tc := range []struct {
		n, dim, clusters int
	}{
		{20000, 64, 100},
		{3000, 128, 30},
	} {
		n := tc.n
		if raceEnabled || testing.Short() {
			n = min(n, 2000)
		}
		vecs := clustered(n, tc.dim, tc.clusters, 1)
		queries := clustered(200, tc.dim, tc.clusters, 1)[:100*tc.dim] // same centres
		// Queries come from the same clusters but are not in the index.
		queries = perturb(queries, 2)
		ids := seqIDs(n, 1000)
		for _, m := range metrics {
			t.Run(fmt.Sprintf("%dx%d/%v", n, tc.dim, m), func(t *testing.T) {
				x := build(t, Config{Dim: tc.dim, Metric: m, Seed: 7}, ids, vecs, 0)
				if x.Len() != n {
					t.Fatalf("Len = %d, want %d", x.Len(), n)
				}
				if err := x.check(); err != nil {
					t.Fatal(err)
				}
				r := meanRecall(t, x, ids, vecs, queries, 10, 64, nil)
				t.Logf("recall@10 ef=64: %.4f", r)
				if r < 0.95 {
					t.Fatalf("recall@10 at ef=64 is %.4f, want >= 0.95", r)
				}
			})
		}
	}
}

// perturb adds small noise to every coordinate, so queries differ from rows.
func perturb(v []float32, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 9))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x + float32(r.NormFloat64()*0.05)
	}
	return out
}

func TestFilteredSearch(t *testing.T) {
	n, dim := 20000, 64
	if raceEnabled || testing.Short() {
		n = 3000
	}
	vecs := clustered(n, dim, 100, 3)
	ids := seqIDs(n, 0)
	queries := perturb(clustered(50, dim, 100, 3), 4)
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Metric: m, Seed: 1}, ids, vecs, 0)
		for _, sel := range []int{100, 10} { // 1% and 10% of the rows pass
			t.Run(fmt.Sprintf("%v/1in%d", m, sel), func(t *testing.T) {
				// A filter uncorrelated with position: a hash of the id.
				keep := func(id uint64) bool { return splitmix64(id)%uint64(sel) == 0 }
				r := meanRecall(t, x, ids, vecs, queries, 10, 64, keep)
				t.Logf("filtered recall@10 ef=64: %.4f", r)
				if r < 0.95 {
					t.Fatalf("filtered recall@10 is %.4f, want >= 0.95", r)
				}
			})
		}
	}
}

// The graph walk alone, without the exact scan, widens until it has k
// matches at 1% selectivity.
func TestFilteredWalk(t *testing.T) {
	n, dim := 10000, 32
	if raceEnabled {
		n = 3000
	}
	vecs := clustered(n, dim, 50, 6)
	ids := seqIDs(n, 0)
	queries := perturb(clustered(40, dim, 50, 6), 7)
	for _, m := range metrics {
		t.Run(m.String(), func(t *testing.T) {
			x := build(t, Config{Dim: dim, Metric: m, Seed: 2}, ids, vecs, 0)
			x.walkOnly = true
			keep := func(id uint64) bool { return splitmix64(id)%100 == 0 }
			r := meanRecall(t, x, ids, vecs, queries, 10, 40, keep)
			t.Logf("walk-only 1%% recall@10 ef=40: %.4f", r)
			if r < 0.95 {
				t.Fatalf("walk-only filtered recall %.4f, want >= 0.95", r)
			}
		})
	}
}

// A filter that passes only a handful of rows still gets every one of them
// (or k), never fewer.
func TestFilteredSearchTiny(t *testing.T) {
	n, dim := 5000, 32
	vecs := clustered(n, dim, 20, 5)
	ids := seqIDs(n, 0)
	x := build(t, Config{Dim: dim, Metric: L2, Seed: 1}, ids, vecs, 1)
	q := vecs[:dim]
	for _, pass := range []int{0, 1, 3, 10, 25} {
		keep := func(id uint64) bool { return id%200 == 7 && int(id/200) < pass }
		got, err := x.Search(q, 10, 40, keep, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := exact(L2, dim, ids, vecs, q, 10, keep)
		if len(got) != len(want) || recall(got, want) != 1 {
			t.Fatalf("%d passing: got %v, want %v", pass, got, want)
		}
	}
}

func TestDelete(t *testing.T) {
	n, dim := 10000, 64
	if raceEnabled || testing.Short() {
		n = 2000
	}
	vecs := clustered(n, dim, 50, 11)
	ids := seqIDs(n, 0)
	queries := perturb(clustered(100, dim, 50, 11), 12)
	for _, m := range metrics {
		t.Run(m.String(), func(t *testing.T) {
			x := build(t, Config{Dim: dim, Metric: m, Seed: 3}, ids, vecs, 0)
			deleted := func(id uint64) bool { return splitmix64(id^77)%5 == 0 } // 20%
			nDel := 0
			for _, id := range ids {
				if deleted(id) {
					if !x.Delete(id) {
						t.Fatalf("Delete(%d) = false", id)
					}
					nDel++
				}
			}
			for _, id := range ids[:50] {
				if deleted(id) && x.Delete(id) {
					t.Fatalf("second Delete(%d) reported a live id", id)
				}
			}
			if x.Deleted() != nDel || x.Len() != n-nDel {
				t.Fatalf("Deleted = %d, Len = %d; want %d, %d", x.Deleted(), x.Len(), nDel, n-nDel)
			}
			live := func(id uint64) bool { return !deleted(id) }
			// Search without a filter: deleted rows must never come back, and
			// recall is measured against the live rows.
			var sum float64
			for i := range len(queries) / dim {
				q := queries[i*dim : (i+1)*dim]
				got, err := x.Search(q, 10, 64, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range got {
					if deleted(r.ID) {
						t.Fatalf("deleted id %d returned", r.ID)
					}
				}
				want := exact(m, dim, ids, vecs, q, 10, live)
				if len(got) != 10 {
					t.Fatalf("%d results, want 10", len(got))
				}
				sum += recall(got, want)
			}
			r := sum / float64(len(queries)/dim)
			t.Logf("recall@10 after deleting 20%%: %.4f", r)
			if r < 0.95 {
				t.Fatalf("recall after deletes %.4f, want >= 0.95", r)
			}
		})
	}
}

func TestReAddDeleted(t *testing.T) {
	x, err := New(Config{Dim: 2, Metric: L2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := x.Add(uint64(i), []float32{float32(i), 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Add(5, []float32{1, 1}); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("duplicate Add: %v", err)
	}
	x.Delete(5)
	if err := x.Add(5, []float32{50.5, 0}); err != nil {
		t.Fatal(err)
	}
	got, _ := x.Search([]float32{50.5, 0}, 3, 0, nil, nil)
	if len(got) != 3 || got[0].ID != 5 || got[0].Distance != 0 {
		t.Fatalf("got %v", got)
	}
	got, _ = x.Search([]float32{5, 0}, 1, 0, nil, nil)
	if got[0].ID == 5 {
		t.Fatalf("old vector of re-added id returned: %v", got)
	}
	if x.Len() != 100 || x.Deleted() != 1 {
		t.Fatalf("Len %d Deleted %d", x.Len(), x.Deleted())
	}
}

func TestConcurrentAdd(t *testing.T) {
	n, dim := 4000, 16
	if raceEnabled {
		n = 1500
	}
	vecs := clustered(n, dim, n, 21) // a centre per row: no cluster gaps
	ids := seqIDs(n, 100)
	for _, m := range metrics {
		t.Run(m.String(), func(t *testing.T) {
			x, err := New(Config{Dim: dim, M: 8, EfConstruction: 32, Metric: m})
			if err != nil {
				t.Fatal(err)
			}
			// No Reserve: the arenas grow while inserts and searches run.
			const workers = 6
			done := make(chan error, workers+1)
			for w := range workers {
				go func() {
					for i := w; i < n; i += workers {
						if err := x.Add(ids[i], vecs[i*dim:(i+1)*dim]); err != nil {
							done <- err
							return
						}
						if i%97 == 0 {
							x.Delete(ids[i])
						}
					}
					done <- nil
				}()
			}
			go func() {
				var res []Result
				for i := 0; i < 300; i++ {
					var err error
					res, err = x.Search(vecs[(i%n)*dim:][:dim], 5, 20, nil, res)
					if err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for range workers + 1 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if err := x.check(); err != nil {
				t.Fatal(err)
			}
			// Every live vector's nearest neighbour (itself, but for inner
			// product) is found.
			live := func(id uint64) bool { return (id-100)%97 != 0 }
			miss := 0
			var res []Result
			for i := range n {
				q := vecs[i*dim : (i+1)*dim]
				res, _ = x.Search(q, 1, 40, nil, res)
				want := exact(m, dim, ids, vecs, q, 1, live)
				if len(res) != 1 || res[0].ID != want[0].ID && res[0].Distance != want[0].Distance {
					miss++
				}
			}
			// The graph depends on the order concurrent inserts land in:
			// inner product misses 0.6–1.1% of its 4000 queries with both
			// cores busy, every other opclass at most 0.1%.
			if float64(miss) > 0.02*float64(n) {
				t.Fatalf("%d of %d vectors do not find themselves", miss, n)
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	if _, err := New(Config{Dim: 0}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Dim 0: %v", err)
	}
	if _, err := New(Config{Dim: 3, M: 40, EfConstruction: 64, Metric: L2}); !errors.Is(err, ErrConfig) {
		t.Fatalf("ef_construction < 2m: %v", err)
	}
	if _, err := New(Config{Dim: 3}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no metric: %v", err)
	}
	x, err := New(Config{Dim: 3, Metric: Cosine})
	if err != nil {
		t.Fatal(err)
	}
	if c := x.Config(); c.M != 16 || c.EfConstruction != 64 {
		t.Fatalf("defaults: %+v", c)
	}
	if err := x.Add(1, []float32{1, 2}); !errors.Is(err, ErrDimension) {
		t.Fatalf("short vector: %v", err)
	}
	nan := float32(0)
	nan = nan / nan
	if err := x.Add(1, []float32{1, nan, 2}); !errors.Is(err, ErrInvalidVector) {
		t.Fatalf("NaN: %v", err)
	}
	if err := x.Add(1, []float32{0, 0, 0}); !errors.Is(err, ErrZeroVector) {
		t.Fatalf("zero vector under cosine: %v", err)
	}
	if x.Len() != 0 {
		t.Fatal("rejected vectors were indexed")
	}
	if _, err := x.Search([]float32{1}, 1, 0, nil, nil); !errors.Is(err, ErrDimension) {
		t.Fatalf("short query: %v", err)
	}
	got, err := x.Search([]float32{1, 2, 3}, 5, 0, nil, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty index: %v %v", got, err)
	}
}

func TestSearchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector")
	}
	n, dim := 2000, 32
	vecs := clustered(n, dim, 10, 1)
	x := build(t, Config{Dim: dim, Metric: Cosine}, seqIDs(n, 0), vecs, 1)
	x.Delete(3)
	dst := make([]Result, 0, 10) // k, not ef: Search must not need room for ef
	// No filter, a filter the walk serves, a filter the exact scan serves.
	for _, keep := range []func(uint64) bool{nil, func(id uint64) bool { return id%2 == 0 }, func(id uint64) bool { return id%10 == 0 }} {
		x.Search(vecs[:dim], 10, 100, keep, make([]Result, 0, 10)) // warm the pool
		allocs := testing.AllocsPerRun(100, func() {
			dst, _ = x.Search(vecs[:dim], 10, 100, keep, dst)
		})
		if allocs != 0 {
			t.Fatalf("Search allocates %.1f times per call", allocs)
		}
	}
}

// Equal distances come back by ascending id, also across the k-th place.
func TestTiesByID(t *testing.T) {
	x, err := New(Config{Dim: 2, Metric: L2})
	if err != nil {
		t.Fatal(err)
	}
	pts := map[uint64][]float32{9: {1, 0}, 3: {0, 1}, 7: {-1, 0}, 1: {0, -1}, 4: {2, 2}}
	for _, id := range []uint64{9, 3, 7, 1, 4} {
		if err := x.Add(id, pts[id]); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := x.Search([]float32{0, 0}, 2, 0, nil, nil)
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 3 || got[0].Distance != 1 {
		t.Fatalf("got %v, want ids 1 and 3 at distance 1", got)
	}
	got, _ = x.Search([]float32{0, 0}, 5, 0, nil, nil)
	want := []uint64{1, 3, 7, 9, 4}
	for i, r := range got {
		if r.ID != want[i] {
			t.Fatalf("got %v, want ids %v", got, want)
		}
	}
}
