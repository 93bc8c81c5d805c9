package ivf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
)

// meanRecall searches every query and returns the mean recall@k against
// brute force over the same rows and filter. It fails the test on results
// out of order, failing the filter, or fewer than brute force finds.
func meanRecall(t *testing.T, x *Index, ids []uint64, vecs, queries []float32, k, probes int, keep func(uint64) bool) float64 {
	t.Helper()
	dim := x.cfg.Dim
	var sum float64
	nq := len(queries) / dim
	var got []Result
	for i := range nq {
		q := queries[i*dim : (i+1)*dim]
		var err error
		got, err = x.Search(q, k, probes, keep, got)
		if err != nil {
			t.Fatal(err)
		}
		want := exact(x.cfg.Metric, dim, ids, vecs, q, k, keep)
		if len(got) != len(want) {
			t.Fatalf("query %d: %d results, want %d", i, len(got), len(want))
		}
		checkResults(t, got, keep)
		sum += recall(got, want)
	}
	return sum / float64(nq)
}

func checkResults(t *testing.T, got []Result, keep func(uint64) bool) {
	t.Helper()
	for j, r := range got {
		if keep != nil && !keep(r.ID) {
			t.Fatalf("result %d fails the filter", r.ID)
		}
		if j > 0 && (got[j-1].Distance > r.Distance || got[j-1].Distance == r.Distance && got[j-1].ID >= r.ID) {
			t.Fatalf("results out of order: %v", got)
		}
	}
}

// recallData is 20,000×64 rows in 100 gaussian clusters and 100 queries from
// the same clusters, not in the index.
func recallData() (n, dim int, ids []uint64, vecs, queries []float32) {
	n, dim = 20000, 64
	if raceEnabled || testing.Short() {
		n = 4000
	}
	vecs = clustered(n, dim, 100, 1)
	queries = perturb(clustered(100, dim, 100, 1), 2)
	return n, dim, seqIDs(n, 1000), vecs, queries
}

func TestRecall(t *testing.T) {
	n, dim, ids, vecs, queries := recallData()
	for _, m := range metrics {
		t.Run(m.String(), func(t *testing.T) {
			x := build(t, Config{Dim: dim, Lists: 100, Metric: m, Seed: 7}, ids, vecs, 0)
			if x.Len() != n || x.Lists() != 100 {
				t.Fatalf("Len = %d, Lists = %d, want %d, 100", x.Len(), x.Lists(), n)
			}
			r := meanRecall(t, x, ids, vecs, queries, 10, 10, nil)
			t.Logf("recall@10 probes=10: %.4f", r)
			if r < 0.9 {
				t.Fatalf("recall@10 at probes=10 is %.4f, want >= 0.9", r)
			}
			if r := meanRecall(t, x, ids, vecs, queries, 10, 100, nil); r != 1 {
				t.Fatalf("recall@10 with every list probed is %.4f, want 1", r)
			}
			if r1 := meanRecall(t, x, ids, vecs, queries, 10, 1, nil); r1 > r {
				t.Fatalf("recall at probes=1 (%.4f) above probes=10 (%.4f)", r1, r)
			}
		})
	}
}

// Lists partition the rows: each row is in exactly one list, the list of its
// nearest centroid.
func TestRowsInNearestList(t *testing.T) {
	const dim = 16
	vecs := clustered(3000, dim, 20, 3)
	ids := seqIDs(3000, 0)
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Lists: 20, Metric: m, Seed: 1}, ids, vecs, 2)
		seen := 0
		dists := make([]float32, x.Lists())
		for c, l := range x.lists {
			for j, id := range l.ids {
				seen++
				centroidDists(m, l.vecs[j*dim:(j+1)*dim], x.centroids, dim, dists)
				if argmin(dists) != c {
					t.Fatalf("%v: row %d in list %d, nearest centroid %d", m, id, c, argmin(dists))
				}
			}
		}
		if seen != 3000 {
			t.Fatalf("%v: %d rows in lists, want 3000", m, seen)
		}
		sizes := make([]int, x.Lists())
		for c, l := range x.lists {
			sizes[c] = len(l.ids)
		}
		if slices.Min(sizes) == 0 {
			t.Fatalf("%v: an empty list: %v", m, sizes)
		}
	}
}

func TestFilteredSearch(t *testing.T) {
	n, dim, ids, vecs, queries := recallData()
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Lists: 100, Metric: m, Seed: 7}, ids, vecs, 0)
		for _, tc := range []struct {
			name string
			keep func(uint64) bool
		}{
			{"1%", func(id uint64) bool { return id%100 == 0 }},
			{"10%", func(id uint64) bool { return id%10 == 0 }},
			{"3 rows", func(id uint64) bool { return id == 1000 || id == 1500 || id == uint64(999+n) }},
		} {
			t.Run(fmt.Sprintf("%v/%s", m, tc.name), func(t *testing.T) {
				// probes=1: the iterative scan must go on to further lists.
				r := meanRecall(t, x, ids, vecs, queries, 10, 1, tc.keep)
				t.Logf("recall@10 probes=1: %.4f", r)
				if r < 0.5 {
					t.Fatalf("filtered recall %.4f", r)
				}
				if r := meanRecall(t, x, ids, vecs, queries, 10, 100, tc.keep); r != 1 {
					t.Fatalf("filtered recall with every list probed is %.4f, want 1", r)
				}
			})
		}
	}
}

func TestDelete(t *testing.T) {
	const n, dim = 4000, 32
	vecs := clustered(n, dim, 20, 5)
	queries := perturb(clustered(50, dim, 20, 5), 6)
	ids := seqIDs(n, 0)
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Lists: 20, Metric: m, Seed: 2}, ids, vecs, 0)
		deleted := func(id uint64) bool { return id%5 == 0 }
		for _, id := range ids {
			if deleted(id) && !x.Delete(id) {
				t.Fatalf("Delete(%d) = false", id)
			}
		}
		if x.Delete(0) {
			t.Fatal("second Delete(0) = true")
		}
		if x.Len() != n*4/5 || x.Deleted() != n/5 || x.Contains(0) || !x.Contains(1) {
			t.Fatalf("Len %d, Deleted %d, Contains(0) %v", x.Len(), x.Deleted(), x.Contains(0))
		}
		live := func(id uint64) bool { return !deleted(id) }
		var got []Result
		for i := range 50 {
			q := queries[i*dim : (i+1)*dim]
			got, _ = x.Search(q, 10, 20, nil, got)
			want := exact(m, dim, ids, vecs, q, 10, live)
			if r := recall(got, want); r != 1 || len(got) != 10 {
				t.Fatalf("%v: query %d: %d results, recall %.2f against live rows", m, i, len(got), r)
			}
			// A filter that passes only deleted rows finds nothing.
			got, _ = x.Search(q, 10, 1, deleted, got)
			if len(got) != 0 {
				t.Fatalf("%v: deleted rows returned: %v", m, got)
			}
		}
		// A deleted id may be added again, as a new row.
		if err := x.Add(0, vecs[:dim]); err != nil {
			t.Fatal(err)
		}
		got, _ = x.Search(vecs[:dim], 1, 1, func(id uint64) bool { return id == 0 }, got)
		if len(got) != 1 || got[0].ID != 0 {
			t.Fatalf("%v: re-added row not found: %v", m, got)
		}
	}
}

func TestTrainDeterministic(t *testing.T) {
	const dim = 24
	sample := clustered(5000, dim, 40, 9)
	for _, m := range metrics {
		var first []float32
		for _, workers := range []int{1, 2, 5} {
			x, _ := New(Config{Dim: dim, Lists: 40, Metric: m, Seed: 3})
			if err := x.Train(sample, workers); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = x.centroids
			} else if !slices.Equal(first, x.centroids) {
				t.Fatalf("%v: centroids differ with %d workers", m, workers)
			}
			if err := x.Train(sample, workers); !errors.Is(err, ErrTrained) {
				t.Fatalf("second Train: %v", err)
			}
		}
		x, _ := New(Config{Dim: dim, Lists: 40, Metric: m, Seed: 4})
		x.Train(sample, 1)
		if slices.Equal(first, x.centroids) {
			t.Fatalf("%v: another seed gave the same centroids", m)
		}
		if m != L2 {
			for c := range 40 {
				if s := sqNorm64(x.centroids[c*dim : (c+1)*dim]); math.Abs(s-1) > 1e-5 {
					t.Fatalf("%v: centroid %d has squared norm %v", m, c, s)
				}
			}
		}
	}
}

// With fewer distinct rows than lists each distinct row is a centroid.
func TestTrainSmallSample(t *testing.T) {
	for _, m := range metrics {
		x, _ := New(Config{Dim: 2, Lists: 100, Metric: m})
		sample := []float32{1, 0, 0, 1, 1, 0, -1, 0, 0.5, 0.5}
		if err := x.Train(sample, 0); err != nil {
			t.Fatal(err)
		}
		want := 4
		if m != L2 {
			want = 4 // (0.5, 0.5) normalizes to a new direction, not (1, 0) or (0, 1)
		}
		if x.Lists() != want {
			t.Fatalf("%v: %d lists, want %d", m, x.Lists(), want)
		}
		if err := x.AddBatch([]uint64{1, 2, 3}, []float32{2, 0, 0, 3, -1, -1}, 0); err != nil {
			t.Fatal(err)
		}
		got, err := x.Search([]float32{0, 1}, 5, 1, nil, nil)
		if err != nil || len(got) != 3 {
			t.Fatalf("%v: %v %v", m, got, err)
		}

		// An untrained index trains on its first batch, however small.
		y, _ := New(Config{Dim: 2, Lists: 10, Metric: m})
		if err := y.Add(7, []float32{1, 2}); err != nil {
			t.Fatal(err)
		}
		if y.Lists() != 1 || !y.Trained() {
			t.Fatalf("%v: %d lists after one Add", m, y.Lists())
		}
		if got, _ := y.Search([]float32{1, 1}, 3, 4, nil, nil); len(got) != 1 || got[0].ID != 7 {
			t.Fatalf("%v: %v", m, got)
		}
	}
	ip, _ := New(Config{Dim: 2, Metric: InnerProduct})
	if err := ip.AddBatch([]uint64{1, 2}, []float32{0, 0, 0, 0}, 1); err != nil || ip.Lists() != 1 || ip.Len() != 2 {
		t.Fatalf("zero vectors under InnerProduct: %v, %d lists, %d rows", err, ip.Lists(), ip.Len())
	}
	x, _ := New(Config{Dim: 2, Metric: Cosine})
	if err := x.Train([]float32{0, 0}, 1); !errors.Is(err, ErrEmptySample) {
		t.Fatalf("Train on a zero vector under Cosine: %v", err)
	}
	if err := x.Train(nil, 1); !errors.Is(err, ErrEmptySample) {
		t.Fatalf("Train on nothing: %v", err)
	}
	if got, err := x.Search([]float32{1, 0}, 3, 1, nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("untrained search: %v %v", got, err)
	}
}

func TestInputErrors(t *testing.T) {
	x, _ := New(Config{Dim: 3, Lists: 2, Metric: Cosine})
	if _, err := New(Config{Dim: 3, Lists: MaxLists + 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("lists over the limit: %v", err)
	}
	if _, err := New(Config{Dim: 0, Metric: L2}); !errors.Is(err, ErrConfig) {
		t.Fatalf("dim 0: %v", err)
	}
	if err := x.Add(1, []float32{1, 2}); !errors.Is(err, ErrDimension) {
		t.Fatalf("short vector: %v", err)
	}
	if err := x.Add(1, []float32{1, float32(math.NaN()), 2}); !errors.Is(err, ErrInvalidVector) {
		t.Fatalf("NaN: %v", err)
	}
	if err := x.Add(1, []float32{0, 0, 0}); !errors.Is(err, ErrZeroVector) {
		t.Fatalf("zero vector: %v", err)
	}
	if err := x.AddBatch([]uint64{1, 2, 1}, make([]float32, 9), 1); err != nil {
		t.Fatalf("zero vectors only are skipped: %v", err)
	}
	if err := x.AddBatch([]uint64{1, 2, 3}, []float32{1, 0, 0, 0, 0, 0, 0, 1, 0}, 1); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 2 || x.Contains(2) {
		t.Fatalf("Len %d, Contains(2) %v: the zero vector was indexed", x.Len(), x.Contains(2))
	}
	if err := x.AddBatch([]uint64{4, 1}, []float32{1, 1, 1, 1, 1, 1}, 1); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("live id: %v", err)
	}
	if err := x.AddBatch([]uint64{5, 5}, []float32{1, 1, 1, 1, 1, 1}, 1); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("id twice in a batch: %v", err)
	}
	if x.Len() != 2 || x.Contains(4) || x.Contains(5) {
		t.Fatal("a rejected batch inserted rows")
	}
	if _, err := x.Search([]float32{1, 2}, 1, 1, nil, nil); !errors.Is(err, ErrDimension) {
		t.Fatalf("short query: %v", err)
	}
	got, err := x.Search([]float32{0, 0, 0}, 5, 1, nil, nil)
	if err != nil || len(got) != 2 || got[0].Distance != 1 {
		t.Fatalf("zero query under Cosine: %v %v", got, err)
	}
}

// The reported distances are the SQL operators' values.
func TestReportedDistances(t *testing.T) {
	a, q := []float32{3, 4}, []float32{1, 0}
	for _, m := range metrics {
		x, _ := New(Config{Dim: 2, Lists: 1, Metric: m})
		if err := x.Add(1, a); err != nil {
			t.Fatal(err)
		}
		got, _ := x.Search(q, 1, 1, nil, nil)
		if want := trueDistance(m, q, a); len(got) != 1 || math.Abs(float64(got[0].Distance-want)) > 1e-6 {
			t.Fatalf("%v: %v, want distance %v", m, got, want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	const dim, n = 8, 3000
	vecs := clustered(n, dim, 10, 11)
	for _, m := range metrics {
		x, _ := New(Config{Dim: dim, Lists: 10, Metric: m, Seed: 1})
		if err := x.Train(vecs[:500*dim], 2); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 4 {
					if i%50 < 25 {
						if err := x.Add(uint64(i), vecs[i*dim:(i+1)*dim]); err != nil {
							t.Error(err)
							return
						}
					}
				}
				lo := 50*w + 25
				ids := seqIDs(25, uint64(lo))
				if err := x.AddBatch(ids, vecs[lo*dim:(lo+25)*dim], 2); err != nil {
					t.Error(err)
				}
				for i := w; i < n; i += 8 {
					x.Delete(uint64(i))
				}
			}()
		}
		stop := make(chan struct{})
		var sw sync.WaitGroup
		for range 2 {
			sw.Add(1)
			go func() {
				defer sw.Done()
				var got []Result
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					q := vecs[(i%n)*dim:][:dim]
					var err error
					got, err = x.Search(q, 5, 2, func(id uint64) bool { return id%3 != 0 }, got)
					if err != nil {
						t.Error(err)
						return
					}
					x.Contains(uint64(i))
					x.Size()
				}
			}()
		}
		wg.Wait()
		close(stop)
		sw.Wait()
		// Every live row finds itself.
		var got []Result
		live := 0
		for i := range n {
			if !x.Contains(uint64(i)) {
				continue
			}
			live++
			got, _ = x.Search(vecs[i*dim:(i+1)*dim], 1, 10, func(id uint64) bool { return id == uint64(i) }, got)
			if len(got) != 1 {
				t.Fatalf("%v: live row %d not found", m, i)
			}
		}
		if live != x.Len() || x.Len()+x.Deleted() == 0 {
			t.Fatalf("%v: %d live rows, Len %d", m, live, x.Len())
		}
	}
}

func TestSearchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const dim = 32
	vecs := clustered(5000, dim, 20, 13)
	x := build(t, Config{Dim: dim, Lists: 20, Metric: Cosine, Seed: 1}, seqIDs(5000, 0), vecs, 0)
	x.Delete(3)
	dst := make([]Result, 0, 10)
	keep := func(id uint64) bool { return id%50 == 0 }
	for _, filter := range []func(uint64) bool{nil, keep} {
		x.Search(vecs[:dim], 10, 3, filter, dst)
		if a := testing.AllocsPerRun(50, func() {
			dst, _ = x.Search(vecs[dim:2*dim], 10, 3, filter, dst)
		}); a != 0 {
			t.Fatalf("Search allocates %v times per call", a)
		}
	}
}

// A search at probes p returns exactly the k nearest rows of the p lists
// whose centroids are nearest the query, no more lists and no fewer.
func TestProbesScanNearestLists(t *testing.T) {
	const dim, n = 16, 4000
	vecs := clustered(n, dim, 8, 17) // fewer clusters than lists: lists split them
	queries := perturb(clustered(30, dim, 8, 17), 18)
	ids := seqIDs(n, 0)
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Lists: 40, Metric: m, Seed: 5}, ids, vecs, 0)
		var got []Result
		for _, p := range []int{1, 3, 10} {
			diff := 0
			for i := range 30 {
				q := queries[i*dim : (i+1)*dim]
				got, _ = x.Search(q, 10, p, nil, got)
				cq := q
				if m == Cosine {
					cq = make([]float32, dim)
					normalize(cq, q)
				}
				cd := make([]float32, x.Lists())
				centroidDists(m, cq, x.centroids, dim, cd)
				order := make([]int32, len(cd))
				for c := range order {
					order[c] = int32(c)
				}
				sortLists(order, cd)
				probed := map[uint64]bool{}
				for _, c := range order[:p] {
					for _, id := range x.lists[c].ids {
						probed[id] = true
					}
				}
				want := exact(m, dim, ids, vecs, q, 10, func(id uint64) bool { return probed[id] })
				if len(want) < 10 {
					continue // the iterative scan goes further
				}
				if r := recall(got, want); r != 1 {
					t.Fatalf("%v probes=%d query %d: %v, want %v", m, p, i, got, want)
				}
				if recall(got, exact(m, dim, ids, vecs, q, 10, nil)) < 1 {
					diff++
				}
			}
			t.Logf("%v probes=%d: %d of 30 queries miss a true neighbour", m, p, diff)
			if p == 1 && diff == 0 {
				t.Fatalf("%v: one list of 40 held every query's true neighbours: too easy to test probes", m)
			}
		}
	}
}

// Equal distances come back by ascending id, whatever the insertion order
// and list.
func TestTiesByID(t *testing.T) {
	for _, m := range metrics {
		x, _ := New(Config{Dim: 2, Lists: 2, Metric: m})
		if err := x.Train([]float32{1, 0, 0, 1}, 1); err != nil {
			t.Fatal(err)
		}
		ids := []uint64{50, 3, 90, 1, 7, 60}
		vecs := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, 3}
		if err := x.AddBatch(ids, vecs, 2); err != nil {
			t.Fatal(err)
		}
		got, _ := x.Search([]float32{1, 1}, 4, 2, nil, nil)
		var gotIDs []uint64
		for _, r := range got {
			gotIDs = append(gotIDs, r.ID)
		}
		if !slices.Equal(gotIDs, []uint64{1, 3, 7, 50}) || got[0].Distance != got[3].Distance {
			t.Fatalf("%v: %v", m, got)
		}
	}
}
