package vector

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func sortedNeighbors(ns []Neighbor) []Neighbor {
	s := slices.Clone(ns)
	slices.SortFunc(s, func(a, b Neighbor) int {
		switch {
		case before(a, b):
			return -1
		case before(b, a):
			return 1
		}
		return 0
	})
	return s
}

func TestBefore(t *testing.T) {
	nan := float32(math.NaN())
	order := []Neighbor{{-1, 5}, {0, 1}, {0, 2}, {1, 0}, {float32(math.Inf(1)), 0}, {nan, 1}, {nan, 3}}
	for i := range order {
		for j := range order {
			if got := before(order[i], order[j]); got != (i < j) {
				t.Errorf("before(%v, %v) = %v", order[i], order[j], got)
			}
		}
	}
}

func TestTopKAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	tk := NewTopK(0)
	var got []Neighbor
	for trial := range 500 {
		n := r.IntN(300)
		k := []int{0, 1, 2, 5, 10, 100, 400}[trial%7]
		all := make([]Neighbor, n)
		for i := range all {
			// Few distinct distances: many ties, settled by id.
			d := float32(r.IntN(20))
			if r.IntN(50) == 0 {
				d = float32(math.NaN())
			}
			all[i] = Neighbor{Dist: d, ID: int64(r.IntN(1000))}
		}
		tk.Reset(k)
		for i, nb := range all {
			tk.Push(nb.Dist, nb.ID)
			seen := sortedNeighbors(all[:i+1])
			th := tk.Threshold()
			switch {
			case i+1 < k:
				if !math.IsInf(float64(th), 1) {
					t.Fatalf("threshold %v before k rows", th)
				}
			case k > 0:
				if w := seen[k-1].Dist; th != w && !(th != th && w != w) {
					t.Fatalf("threshold %v, want %v", th, w)
				}
			}
		}
		want := sortedNeighbors(all)[:min(k, n)]
		got = tk.AppendSorted(got[:0])
		if !equalNeighbors(got, want) {
			t.Fatalf("trial %d k=%d n=%d:\n got %v\nwant %v", trial, k, n, got, want)
		}
		// PushBatch with ids base+i gives the same as pushing one by one.
		dists := make([]float32, n)
		for i := range dists {
			dists[i] = all[i].Dist
			all[i].ID = 1000 + int64(i)
		}
		tk.Reset(k)
		tk.PushBatch(dists, 1000)
		want = sortedNeighbors(all)[:min(k, n)]
		if got = tk.AppendSorted(got[:0]); !equalNeighbors(got, want) {
			t.Fatalf("PushBatch trial %d:\n got %v\nwant %v", trial, got, want)
		}
	}
}

func equalNeighbors(a, b []Neighbor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || (a[i].Dist != b[i].Dist && !(a[i].Dist != a[i].Dist && b[i].Dist != b[i].Dist)) {
			return false
		}
	}
	return true
}

func TestTopKReuse(t *testing.T) {
	tk := NewTopK(3)
	for i := range 10 {
		tk.Push(float32(10-i), int64(i))
	}
	res := tk.AppendSorted(nil)
	if len(res) != 3 || res[0].ID != 9 || res[2].ID != 7 || tk.Len() != 3 {
		t.Fatalf("got %v", res)
	}
	// AppendSorted leaves the heap usable.
	if !tk.Push(0.5, 42) || tk.Threshold() != 2 {
		t.Fatalf("after push: threshold %v", tk.Threshold())
	}
	tk.Reset(2)
	if tk.Len() != 0 || tk.K() != 2 {
		t.Fatalf("reset: len %d k %d", tk.Len(), tk.K())
	}
	if allocs := testing.AllocsPerRun(50, func() {
		tk.Reset(3)
		for i := range 100 {
			tk.Push(float32(i%7), int64(i))
		}
		res = tk.AppendSorted(res[:0])
	}); allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
