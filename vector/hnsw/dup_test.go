package hnsw

import "testing"

// TestFilteredSearchDuplicates searches a graph of many equal vectors
// (50 distinct points, 100 copies each), where a walk can run out of
// candidates before it has met the filter's rows: the search must still
// return k matches.
func TestFilteredSearchDuplicates(t *testing.T) {
	x, err := New(Config{Dim: 3, Metric: L2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		p := i % 50
		if err := x.Add(uint64(i), []float32{float32(p % 7), float32(p % 11), float32(p % 13)}); err != nil {
			t.Fatal(err)
		}
	}
	filter := func(id uint64) bool { return id%100 == 42 }
	res, err := x.Search([]float32{3, 1, 2}, 7, 40, filter, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 7 {
		t.Fatalf("%d results, want 7", len(res))
	}
	for _, r := range res {
		if !filter(r.ID) {
			t.Fatalf("row %d does not pass the filter", r.ID)
		}
	}
}
