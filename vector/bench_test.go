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

// measure runs run(b.N) as the benchmark and, interleaved with it in ten
// slices so that a noisy neighbour hits both alike, the same work on the
// fallback kernels and, if ceiling is not nil, ceiling(b.N). It reports GB/s
// of the dispatched kernels, x_fallback and of_ceiling.
func measure(b *testing.B, bytesPerOp int64, run, ceiling func(n int)) {
	b.SetBytes(bytesPerOp)
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	var fast, slow, ceil time.Duration
	slice := max(1, b.N/10)
	for done := 0; done < b.N; done += slice {
		n := min(slice, b.N-done)
		b.StartTimer()
		start := time.Now()
		run(n)
		fast += time.Since(start)
		b.StopTimer()
		useAVX2 = false
		start = time.Now()
		run(n)
		slow += time.Since(start)
		useAVX2 = saved
		if ceiling != nil {
			start = time.Now()
			ceiling(n)
			ceil += time.Since(start)
		}
	}
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/fast.Seconds()/1e9, "GB/s")
	b.ReportMetric(slow.Seconds()/fast.Seconds(), "x_fallback")
	if ceiling != nil {
		b.ReportMetric(ceil.Seconds()/fast.Seconds(), "of_ceiling")
	}
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
				}, nil)
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
		{"L2SqBytesUnaligned", func(q, data []float32, dim int, out []float32) {
			// The rows one byte in: decoded through the stack buffer.
			L2SqBatchBytes(q, bytesOf(data)[1:], dim, out[:len(out)-1])
		}},
	}
	r := rand.New(rand.NewPCG(2, 2))
	for _, shape := range benchShapes {
		rows, dim := shape[0], shape[1]
		q, data := randVec(r, dim), randVec(r, rows*dim)
		out := make([]float32, rows)
		for _, k := range kernels {
			b.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, dim), func(b *testing.B) {
				measure(b, int64(4*len(data)), func(n int) {
					for range n {
						k.f(q, data, dim, out)
					}
				}, func(n int) {
					for range n {
						sinkF += readAll(data)
					}
				})
			})
		}
	}
}

// BenchmarkPairwiseHalf measures halfvec pairs (2 bytes per value).
func BenchmarkPairwiseHalf(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, dim := range []int{128, 768, 1536} {
		x, y := make([]uint16, dim), make([]uint16, dim)
		Float32sToFloat16s(x, randVec(r, dim))
		Float32sToFloat16s(y, randVec(r, dim))
		b.Run(fmt.Sprintf("L2Sq/dim=%d", dim), func(b *testing.B) {
			measure(b, int64(4*dim), func(n int) {
				for range n {
					sinkF += L2SqHalf(x, y)
				}
			}, nil)
		})
	}
}

// BenchmarkBatchHalf measures halfvec rows against a float32 query.
func BenchmarkBatchHalf(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	rows, dim := 100_000, 128
	q := randVec(r, dim)
	data := make([]uint16, rows*dim)
	Float32sToFloat16s(data, randVec(r, rows*dim))
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(data))), 2*len(data))
	out := make([]float32, rows)
	for _, k := range []struct {
		name string
		f    func()
	}{
		{"L2Sq", func() { L2SqBatchHalf(q, data, dim, out) }},
		{"Cosine", func() { CosineDistanceBatchHalf(q, data, dim, out) }},
		{"L2SqBytes", func() { L2SqBatchHalfBytes(q, raw, dim, out) }},
	} {
		b.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, dim), func(b *testing.B) {
			measure(b, int64(2*len(data)), func(n int) {
				for range n {
					k.f()
				}
			}, nil)
		})
	}
}

// BenchmarkConvert measures bulk float16 -> float32 conversion.
func BenchmarkConvert(b *testing.B) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	measure(b, int64(2*len(src)), func(n int) {
		for range n {
			Float16sToFloat32s(dst, src)
		}
	}, nil)
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
			}, nil)
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
