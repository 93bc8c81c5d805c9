//go:build !amd64 || purego

package vector

// useAVX2 is always false here; the stubs below are never called.
var useAVX2 = false

func dotAVX2(a, b []float32) float32                          { panic("vector: no AVX2 kernels") }
func l2sqAVX2(a, b []float32) float32                         { panic("vector: no AVX2 kernels") }
func l1AVX2(a, b []float32) float32                           { panic("vector: no AVX2 kernels") }
func cosAVX2(a, b []float32) (ab, aa, bb float32)             { panic("vector: no AVX2 kernels") }
func sumAVX2(a []float32) float32                             { panic("vector: no AVX2 kernels") }
func dotBatchAVX2(q, data []float32, dim int, out []float32)  { panic("vector: no AVX2 kernels") }
func l2sqBatchAVX2(q, data []float32, dim int, out []float32) { panic("vector: no AVX2 kernels") }
func l1BatchAVX2(q, data []float32, dim int, out []float32)   { panic("vector: no AVX2 kernels") }
func cosBatchAVX2(q, data []float32, dim int, qq float64, out []float32) {
	panic("vector: no AVX2 kernels")
}
