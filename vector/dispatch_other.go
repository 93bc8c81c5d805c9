//go:build !amd64 || purego

package vector

// useAVX2 and useF16C are always false here; the stubs below are never
// called.
var (
	useAVX2 = false
	useF16C = false
)

const noAsm = "vector: no AVX2 kernels"

func dotAVX2(a, b []float32) float32                                       { panic(noAsm) }
func l2sqAVX2(a, b []float32) float32                                      { panic(noAsm) }
func l1AVX2(a, b []float32) float32                                        { panic(noAsm) }
func cosAVX2(a, b []float32) (ab, aa, bb float32)                          { panic(noAsm) }
func sumAVX2(a []float32) float32                                          { panic(noAsm) }
func dotBatchAVX2(q, data []float32, dim int, out []float32)               { panic(noAsm) }
func l2sqBatchAVX2(q, data []float32, dim int, out []float32)              { panic(noAsm) }
func l1BatchAVX2(q, data []float32, dim int, out []float32)                { panic(noAsm) }
func cosBatchAVX2(q, data []float32, dim int, qq float64, out []float32)   { panic(noAsm) }
func f16toF32AVX2(dst []float32, src []uint16)                             { panic(noAsm) }
func f32toF16AVX2(dst []uint16, src []float32)                             { panic(noAsm) }
func dotHalfAVX2(a, b []uint16) float32                                    { panic(noAsm) }
func l2sqHalfAVX2(a, b []uint16) float32                                   { panic(noAsm) }
func l1HalfAVX2(a, b []uint16) float32                                     { panic(noAsm) }
func cosHalfAVX2(a, b []uint16) (ab, aa, bb float32)                       { panic(noAsm) }
func dotBatchHalfAVX2(q []float32, data []uint16, dim int, out []float32)  { panic(noAsm) }
func l2sqBatchHalfAVX2(q []float32, data []uint16, dim int, out []float32) { panic(noAsm) }
func l1BatchHalfAVX2(q []float32, data []uint16, dim int, out []float32)   { panic(noAsm) }
func cosBatchHalfAVX2(q []float32, data []uint16, dim int, qq float64, out []float32) {
	panic(noAsm)
}
