package vector

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// The benchmarks time the dispatched kernels (the assembly where the CPU
// has AVX2+FMA) and, in the same run and for the same b.N, the portable Go
// fallback (metric x_fallback: how many times faster the dispatched kernel
// is) and, for batch kernels, a plain read of the same bytes (metric
// of_ceiling: read time / kernel time, 1.0 meaning the kernel runs at the
// speed memory can be read). Ratios within one run are what to compare on
// a shared machine; see README.md.

var sinkF float32

// measure runs run(b.N) as the benchmark, then again with the fallback
// kernels, and reports GB/s and the ratio.
func measure(b *testing.B, bytesPerOp int64, run func(n int)) time.Duration {
	b.SetBytes(bytesPerOp)
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	fast := b.Elapsed()
	saved := useAVX2
	useAVX2 = false
	start := time.Now()
	run(b.N)
	slow := time.Since(start)
	useAVX2 = saved
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/fast.Seconds()/1e9, "GB/s")
	b.ReportMetric(slow.Seconds()/fast.Seconds(), "x_fallback")
	return fast
}

func BenchmarkPairwise(b *testing.B) {
	kernels := []struct {
		name string
		f    func(a, b []float32) float32
	}{
		{"Dot", Dot}, {"L2Sq", L2Sq}, {"L1", L1}, {"Cosine", CosineDistance},
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, k := range kernels {
		for _, dim := range []int{128, 768, 1536} {
			x, y := randVec(r, dim), randVec(r, dim)
			b.Run(fmt.Sprintf("%s/dim=%d", k.name, dim), func(b *testing.B) {
				measure(b, int64(8*dim), func(n int) {
					for range n {
						sinkF += k.f(x, y)
					}
				})
			})
		}
	}
}

// benchShapes are (rows, dim) blocks larger than the last-level cache, so
// that batch kernels stream from memory as exact search over chunks does.
var benchShapes = [][2]int{{100_000, 128}, {20_000, 768}}

func BenchmarkBatch(b *testing.B) {
	kernels := []struct {
		name string
		f    func(q, data []float32, dim int, out []float32)
	}{
		{"Dot", DotBatch}, {"L2Sq", L2SqBatch}, {"L1", L1Batch}, {"Cosine", CosineDistanceBatch},
		{"L2SqBytes", func(q, data []float32, dim int, out []float32) {
			L2SqBatchBytes(q, bytesOf(data), dim, out)
		}},
	}
	r := rand.New(rand.NewPCG(2, 2))
	for _, shape := range benchShapes {
		rows, dim := shape[0], shape[1]
		q, data := randVec(r, dim), randVec(r, rows*dim)
		out := make([]float32, rows)
		for _, k := range kernels {
			b.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, dim), func(b *testing.B) {
				fast := measure(b, int64(4*len(data)), func(n int) {
					for range n {
						k.f(q, data, dim, out)
					}
				})
				start := time.Now()
				for range b.N {
					sinkF += readAll(data)
				}
				b.ReportMetric(time.Since(start).Seconds()/fast.Seconds(), "of_ceiling")
			})
		}
	}
}

// BenchmarkBatchHalf measures halfvec rows (convert-then-compute in blocks).
func BenchmarkBatchHalf(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	rows, dim := 100_000, 128
	q := randVec(r, dim)
	data := make([]uint16, rows*dim)
	Float32sToFloat16s(data, randVec(r, rows*dim))
	out := make([]float32, rows)
	b.Run(fmt.Sprintf("L2Sq/%dx%d", rows, dim), func(b *testing.B) {
		measure(b, int64(2*len(data)), func(n int) {
			for range n {
				L2SqBatchHalf(q, data, dim, out)
			}
		})
	})
}

// BenchmarkReadCeiling is the plain read of the batch benchmarks' bytes.
func BenchmarkReadCeiling(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, shape := range benchShapes {
		data := randVec(r, shape[0]*shape[1])
		b.Run(fmt.Sprintf("%dx%d", shape[0], shape[1]), func(b *testing.B) {
			measure(b, int64(4*len(data)), func(n int) {
				for range n {
					sinkF += readAll(data)
				}
			})
		})
	}
}

// BenchmarkTopK pushes a chunk's worth of distances through a k=10 heap.
func BenchmarkTopK(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	dists := randVec(r, 100_000)
	tk := NewTopK(10)
	res := make([]Neighbor, 0, 10)
	b.ReportAllocs()
	b.SetBytes(int64(4 * len(dists)))
	for b.Loop() {
		tk.Reset(10)
		tk.PushBatch(dists, 0)
		res = tk.AppendSorted(res[:0])
	}
}

// readAll sums data with the fastest kernel available: the memory-read
// ceiling a streaming kernel cannot beat.
func readAll(data []float32) float32 {
	if useAVX2 {
		return sumAVX2(data)
	}
	return sumGeneric(data)
}

// bytesOf views f's memory as bytes, as a chunk buffer arrives.
func bytesOf(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}
