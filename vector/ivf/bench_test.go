package ivf

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The benchmark data set: 100k clustered 128-d vectors and 500 queries from
// the same clusters (hnsw's benchmark set), with exact answers computed once
// by brute force.
const (
	benchN        = 100000
	benchDim      = 128
	benchClusters = 100
	benchLists    = 100
	benchQueries  = 500
	benchK        = 10
)

var bench struct {
	once    sync.Once
	vecs    []float32
	ids     []uint64
	queries []float32
	x       *Index
	truth   [][]Result // per query, exact top benchK
	truth1  [][]Result // per query, exact top benchK among ids%100 == 0
	trainT  time.Duration
	addT    time.Duration

	// hard is a second set: the same size drawn from one gaussian, data
	// without clusters for k-means to find, so that probes matter.
	hard struct {
		vecs, queries []float32
		x             *Index
		truth         [][]Result
	}
}

func benchSetup(b *testing.B) {
	bench.once.Do(func() {
		bench.vecs = clustered(benchN, benchDim, benchClusters, 101)
		bench.ids = seqIDs(benchN, 0)
		bench.queries = perturb(clustered(benchQueries, benchDim, benchClusters, 101), 102)
		x, err := New(Config{Dim: benchDim, Lists: benchLists, Metric: L2, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		bench.trainT, bench.addT = timedBuild(b, x, 0)
		bench.x = x
		bench.truth = make([][]Result, benchQueries)
		bench.truth1 = make([][]Result, benchQueries)
		var wg sync.WaitGroup
		procs := runtime.GOMAXPROCS(0)
		for w := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < benchQueries; i += procs {
					q := bench.queries[i*benchDim : (i+1)*benchDim]
					bench.truth[i] = exact(L2, benchDim, bench.ids, bench.vecs, q, benchK, nil)
					bench.truth1[i] = exact(L2, benchDim, bench.ids, bench.vecs, q, benchK, onePercent)
				}
			}()
		}
		wg.Wait()

		h := &bench.hard
		h.vecs = clustered(benchN, benchDim, 1, 103)
		h.queries = perturb(clustered(benchHardQueries, benchDim, 1, 103), 104)
		h.x, _ = New(Config{Dim: benchDim, Lists: benchLists, Metric: L2, Seed: 1})
		if err := h.x.AddBatch(bench.ids, h.vecs, 0); err != nil {
			b.Fatal(err)
		}
		h.truth = make([][]Result, benchHardQueries)
		for w := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < benchHardQueries; i += procs {
					q := h.queries[i*benchDim : (i+1)*benchDim]
					h.truth[i] = exact(L2, benchDim, bench.ids, h.vecs, q, benchK, nil)
				}
			}()
		}
		wg.Wait()
	})
	b.ResetTimer()
}

const benchHardQueries = 200

func onePercent(id uint64) bool { return id%100 == 0 }

// timedBuild trains x on a sample of the benchmark rows (SampleSize, drawn as
// AddBatch draws it) and adds them all, returning the time of each step.
func timedBuild(b *testing.B, x *Index, workers int) (train, add time.Duration) {
	b.Helper()
	start := time.Now()
	if err := x.trainOnBatch(bench.vecs, workers); err != nil {
		b.Fatal(err)
	}
	train = time.Since(start)
	start = time.Now()
	if err := x.AddBatch(bench.ids, bench.vecs, workers); err != nil {
		b.Fatal(err)
	}
	return train, time.Since(start)
}

// BenchmarkBuild trains (k-means on SampleSize(100) = 10,000 rows) and fills
// an index of 100 lists with 100k×128 clustered vectors, on one goroutine and
// on GOMAXPROCS. Run it with -benchtime 1x.
func BenchmarkBuild(b *testing.B) {
	bench.vecs = clustered(benchN, benchDim, benchClusters, 101)
	bench.ids = seqIDs(benchN, 0)
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			cpu0 := cpuTime()
			var train, add time.Duration
			for b.Loop() {
				x, err := New(Config{Dim: benchDim, Lists: benchLists, Metric: L2, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				t, a := timedBuild(b, x, workers)
				train += t
				add += a
				b.ReportMetric(float64(x.Size())/(1<<20), "MiB")
			}
			b.ReportMetric(train.Seconds()/float64(b.N), "train-s")
			b.ReportMetric(add.Seconds()/float64(b.N), "add-s")
			b.ReportMetric(float64(benchN)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			// CPU seconds per build: on a shared machine wall time shows what
			// cores were free, CPU time what the build cost.
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s")
		})
	}
}

// BenchmarkSearch measures one query per op over the 100k×128 index of 100
// lists, with recall@10 against the exact answers computed in the same run,
// and over the same number of rows drawn from one gaussian ("gaussian").
// "brute" probes every list, an exact scan with the same kernels: the anchor
// the other figures compare with. It also reports the build (train and add
// on GOMAXPROCS workers).
func BenchmarkSearch(b *testing.B) {
	benchSetup(b)
	x := bench.x
	h := &bench.hard
	for _, tc := range []struct {
		name    string
		x       *Index
		queries []float32
		probes  int
		filter  func(uint64) bool
		truth   [][]Result
	}{
		{"brute", x, bench.queries, benchLists, nil, bench.truth},
		{"probes=1", x, bench.queries, 1, nil, bench.truth},
		{"probes=10", x, bench.queries, 10, nil, bench.truth},
		{"probes=40", x, bench.queries, 40, nil, bench.truth},
		{"filter=1%/probes=10", x, bench.queries, 10, onePercent, bench.truth1},
		{"gaussian/probes=1", h.x, h.queries, 1, nil, h.truth},
		{"gaussian/probes=10", h.x, h.queries, 10, nil, h.truth},
		{"gaussian/probes=40", h.x, h.queries, 40, nil, h.truth},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]Result, 0, benchK)
			var sum float64
			i := 0
			for b.Loop() {
				qi := i % len(tc.truth)
				dst, _ = tc.x.Search(tc.queries[qi*benchDim:][:benchDim], benchK, tc.probes, tc.filter, dst)
				sum += recall(dst, tc.truth[qi])
				i++
			}
			b.ReportMetric(sum/float64(i), "recall@10")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			if tc.name == "brute" {
				b.ReportMetric(bench.trainT.Seconds(), "train-s")
				b.ReportMetric(bench.addT.Seconds(), "add-s")
				b.ReportMetric(float64(x.Size())/(1<<20), "mem-MiB")
			}
		})
	}
}
