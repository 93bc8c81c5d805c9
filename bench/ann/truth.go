package main

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/deeplaked/deeplaked/vector"
)

// truthBlock is how many rows one L2SqBatch call scores.
const truthBlock = 4096

// topK keeps the k nearest (distance, id) pairs seen, nearest first; ties
// go to the smaller id, so the truth does not depend on the scan order.
type topK struct {
	dist []float32
	ids  []int32
}

func newTopK(k int) *topK {
	return &topK{dist: make([]float32, 0, k), ids: make([]int32, 0, k)}
}

func (t *topK) reset() { t.dist, t.ids = t.dist[:0], t.ids[:0] }

func (t *topK) push(d float32, id int32) {
	k := cap(t.dist)
	n := len(t.dist)
	if n == k && !less(d, id, t.dist[n-1], t.ids[n-1]) {
		return
	}
	if n < k {
		t.dist, t.ids = t.dist[:n+1], t.ids[:n+1]
	} else {
		n--
	}
	// Insertion from the back: k is 10.
	for n > 0 && less(d, id, t.dist[n-1], t.ids[n-1]) {
		t.dist[n], t.ids[n] = t.dist[n-1], t.ids[n-1]
		n--
	}
	t.dist[n], t.ids[n] = d, id
}

func less(d1 float32, id1 int32, d2 float32, id2 int32) bool {
	return d1 < d2 || d1 == d2 && id1 < id2
}

// groundTruth computes, by brute force over every row, the exact k
// nearest ids of each query in L2 distance (truth) and the exact k nearest
// among the rows of the query's category (truthCat), queries × k each,
// padded with noID. Queries are spread over all cores.
func groundTruth(d *dataSet) (truth, truthCat []int32) {
	k := d.K
	truth = make([]int32, d.Queries*k)
	truthCat = make([]int32, d.Queries*k)
	for i := range truth {
		truth[i], truthCat[i] = noID, noID
	}
	// Rows of each category, packed: the filtered scans read only these.
	byCat := make([][]int32, d.Categories)
	for i, c := range d.categories {
		byCat[c] = append(byCat[c], int32(i))
	}
	catVecs := make([][]float32, d.Categories)
	for c, ids := range byCat {
		v := make([]float32, 0, len(ids)*d.Dim)
		for _, id := range ids {
			v = append(v, d.vector(int(id))...)
		}
		catVecs[c] = v
	}

	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dist := make([]float32, truthBlock)
			top := newTopK(k)
			for {
				qi := int(next.Add(1) - 1)
				if qi >= d.Queries {
					return
				}
				q := d.query(qi)
				top.reset()
				for lo := 0; lo < d.Rows; lo += truthBlock {
					n := min(truthBlock, d.Rows-lo)
					vector.L2SqBatch(q, d.vectors[lo*d.Dim:(lo+n)*d.Dim], d.Dim, dist[:n])
					for j, x := range dist[:n] {
						top.push(x, int32(lo+j))
					}
				}
				copy(truth[qi*k:], top.ids)

				c := d.queryCats[qi]
				ids, vecs := byCat[c], catVecs[c]
				top.reset()
				for lo := 0; lo < len(ids); lo += truthBlock {
					n := min(truthBlock, len(ids)-lo)
					vector.L2SqBatch(q, vecs[lo*d.Dim:(lo+n)*d.Dim], d.Dim, dist[:n])
					for j, x := range dist[:n] {
						top.push(x, ids[lo+j])
					}
				}
				copy(truthCat[qi*k:], top.ids)
			}
		}()
	}
	wg.Wait()
	return truth, truthCat
}

func writeTruth(dir string, truth, truthCat []int32) error {
	if err := os.WriteFile(filepath.Join(dir, fileTruth), i32Bytes(truth), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fileTruthCat), i32Bytes(truthCat), 0o644)
}

func readTruth(d *dataSet, dir string) (truth, truthCat []int32, err error) {
	if truth, err = readI32(filepath.Join(dir, fileTruth), d.Queries*d.K); err != nil {
		return nil, nil, err
	}
	truthCat, err = readI32(filepath.Join(dir, fileTruthCat), d.Queries*d.K)
	return truth, truthCat, err
}

// recall is the fraction of the true ids of one query (noID ends them)
// found in got.
func recall(truth []int32, got []int32) (found, want int) {
	for _, t := range truth {
		if t == noID {
			break
		}
		want++
		for _, g := range got {
			if g == t {
				found++
				break
			}
		}
	}
	return found, want
}
