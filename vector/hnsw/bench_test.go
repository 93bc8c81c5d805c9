package hnsw

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The benchmark data set: 100k clustered 128-d vectors and 500 queries from
// the same clusters, with exact answers computed once by brute force.
const (
	benchN        = 100000
	benchDim      = 128
	benchClusters = 100
	benchQueries  = 500
	benchK        = 10
)

var bench struct {
	once    sync.Once
	vecs    []float32
	ids     []uint64
	queries []float32
	x       *Index
	truth   [][]Result    // per query, exact top benchK
	truth1  [][]Result    // per query, exact top benchK among ids%100 == 0
	truth10 [][]Result    // per query, exact top benchK among ids%10 == 0
	buildT  time.Duration // parallel build of x
	loadT   time.Duration // Read of x's stored form
	stored  int           // bytes of x's stored form
}

func benchSetup(b *testing.B) {
	bench.once.Do(func() {
		bench.vecs = clustered(benchN, benchDim, benchClusters, 101)
		bench.ids = seqIDs(benchN, 0)
		bench.queries = perturb(clustered(benchQueries, benchDim, benchClusters, 101), 102)
		start := time.Now()
		x, err := New(Config{Dim: benchDim, Metric: L2, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := x.AddBatch(bench.ids, bench.vecs, 0); err != nil {
			b.Fatal(err)
		}
		bench.buildT = time.Since(start)
		bench.x = x
		var w sliceWriter
		if _, err := x.WriteTo(&w); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if _, err := Read(&sliceReader{b: w}); err != nil {
			b.Fatal(err)
		}
		bench.loadT = time.Since(start)
		bench.stored = len(w)
		bench.truth = make([][]Result, benchQueries)
		bench.truth1 = make([][]Result, benchQueries)
		bench.truth10 = make([][]Result, benchQueries)
		var wg sync.WaitGroup
		for w := range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < benchQueries; i += runtime.GOMAXPROCS(0) {
					q := bench.queries[i*benchDim : (i+1)*benchDim]
					bench.truth[i] = exact(L2, benchDim, bench.ids, bench.vecs, q, benchK, nil)
					bench.truth1[i] = exact(L2, benchDim, bench.ids, bench.vecs, q, benchK, onePercent)
					bench.truth10[i] = exact(L2, benchDim, bench.ids, bench.vecs, q, benchK, tenPercent)
				}
			}()
		}
		wg.Wait()
	})
	b.ResetTimer()
}

func onePercent(id uint64) bool { return id%100 == 0 }
func tenPercent(id uint64) bool { return id%10 == 0 }

// BenchmarkBuild inserts 100k×128 clustered vectors into an empty index on
// one goroutine and on GOMAXPROCS goroutines. Run it with -benchtime 1x.
func BenchmarkBuild(b *testing.B) {
	vecs := clustered(benchN, benchDim, benchClusters, 101)
	ids := seqIDs(benchN, 0)
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				x, err := New(Config{Dim: benchDim, Metric: L2, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				if err := x.AddBatch(ids, vecs, workers); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(x.Size())/(1<<20), "MiB")
			}
			b.ReportMetric(float64(benchN)*float64(b.N)/b.Elapsed().Seconds(), "inserts/s")
			// CPU seconds per build: on a shared machine wall time shows what
			// cores were free, CPU time what the build cost.
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s")
		})
	}
}

// BenchmarkSearch measures one query per op over the 100k×128 index, with
// recall@10 against the exact answers; "brute" is the exact scan itself, the
// anchor the other figures compare with in the same run. brute also reports
// the parallel build of the index and one Read of its stored form.
func BenchmarkSearch(b *testing.B) {
	benchSetup(b)
	x := bench.x
	b.Run("brute", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			q := bench.queries[(i%benchQueries)*benchDim:][:benchDim]
			bruteTopK(x, q, benchK, nil)
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		b.ReportMetric(bench.buildT.Seconds(), "build-s")
		b.ReportMetric(bench.loadT.Seconds()*1000, "load-ms")
		b.ReportMetric(float64(bench.stored)/(1<<20), "stored-MiB")
		b.ReportMetric(float64(x.Size())/(1<<20), "mem-MiB")
	})
	for _, tc := range []struct {
		name   string
		ef     int
		filter func(uint64) bool
		truth  [][]Result
	}{
		{"ef=40", 40, nil, bench.truth},
		{"ef=100", 100, nil, bench.truth},
		{"ef=200", 200, nil, bench.truth},
		{"filter=10%/ef=40", 40, tenPercent, bench.truth10},
		{"filter=1%/ef=40", 40, onePercent, bench.truth1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]Result, 0, benchK)
			var sum float64
			i := 0
			for b.Loop() {
				qi := i % benchQueries
				dst, _ = x.Search(bench.queries[qi*benchDim:][:benchDim], benchK, tc.ef, tc.filter, dst)
				sum += recall(dst, tc.truth[qi])
				i++
			}
			b.ReportMetric(sum/float64(i), "recall@10")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// bruteTopK is the exact scan over the index's arena with its own kernel.
func bruteTopK(x *Index, q []float32, k int, keep func(uint64) bool) []item {
	var h maxHeap
	n := int(x.n.Load())
	for i := range n {
		if keep != nil && !keep(x.ids[i]) {
			continue
		}
		d := x.dist(q, x.vec(uint32(i)))
		if len(h) < k || d < h[0].d {
			h.push(item{d, uint32(i)})
			if len(h) > k {
				h.pop()
			}
		}
	}
	return h
}

type sliceWriter []byte

func (w *sliceWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, fmt.Errorf("EOF")
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
