// Package vector holds the float32 and float16 distance kernels of vector
// search and the top-k selector that exact search feeds with them.
//
// Distances follow pgvector: L2Sq is the squared Euclidean distance (the
// square root is taken once per result, not per row), Dot is the inner
// product (pgvector's <#> is its negation), CosineDistance is
// 1 - a·b/(|a||b|) clamped to [0, 2] and NaN when either norm is zero, L1 is
// the taxicab distance.
//
// On amd64 with AVX2 and FMA the kernels run in generated assembly
// (internal/asm, avo); elsewhere, and with the purego build tag, they run in
// portable Go. Both are exact to float32 rounding, not bit-identical: the
// summation order differs.
//
// Kernels panic on mismatched lengths: a dimension mismatch is a bug in the
// caller, which checks dimensions (SQLSTATE 22000) before it gets here.
// No kernel allocates.
package vector

//go:generate go run -C internal/asm . -out ../../kernels_amd64.s -stubs ../../stubs_amd64.go -pkg vector
