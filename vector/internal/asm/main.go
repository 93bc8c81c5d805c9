// Command asm generates the AVX2+FMA distance kernels of package vector
// (kernels_amd64.s and stubs_amd64.go) with avo. Run it through go generate
// in the vector directory; it is a separate module so that avo is not a
// dependency of the server.
package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// kernel describes one reduction over one or two float32 streams: vec folds a
// block of 8 lanes into the accumulators, scalar folds one element into the
// low lane of the (reduced) accumulators.
type kernel struct {
	name   string
	doc    string
	outs   int  // number of accumulator groups (results)
	unroll int  // 8-lane blocks per main-loop iteration
	mask   bool // needs the absolute-value mask (0x7fffffff) in a register
	vec    func(acc []VecVirtual, a, b Mem, mask VecVirtual)
	scalar func(acc []Register, a, b Mem, mask VecVirtual)
}

var (
	dot = kernel{
		name: "dot", outs: 1, unroll: 4,
		doc: "returns the inner product of a and b[:len(a)].",
		vec: func(acc []VecVirtual, a, b Mem, _ VecVirtual) {
			t := YMM()
			VMOVUPS(a, t)
			VFMADD231PS(b, t, acc[0])
		},
		scalar: func(acc []Register, a, b Mem, _ VecVirtual) {
			t := XMM()
			VMOVSS(a, t)
			VFMADD231SS(b, t, acc[0])
		},
	}
	l2sq = kernel{
		name: "l2sq", outs: 1, unroll: 4,
		doc: "returns the squared Euclidean distance between a and b[:len(a)].",
		vec: func(acc []VecVirtual, a, b Mem, _ VecVirtual) {
			t := YMM()
			VMOVUPS(a, t)
			VSUBPS(b, t, t)
			VFMADD231PS(t, t, acc[0])
		},
		scalar: func(acc []Register, a, b Mem, _ VecVirtual) {
			t := XMM()
			VMOVSS(a, t)
			VSUBSS(b, t, t)
			VFMADD231SS(t, t, acc[0])
		},
	}
	l1 = kernel{
		name: "l1", outs: 1, unroll: 4, mask: true,
		doc: "returns the taxicab distance between a and b[:len(a)].",
		vec: func(acc []VecVirtual, a, b Mem, mask VecVirtual) {
			t := YMM()
			VMOVUPS(a, t)
			VSUBPS(b, t, t)
			VANDPS(mask, t, t)
			VADDPS(t, acc[0], acc[0])
		},
		scalar: func(acc []Register, a, b Mem, mask VecVirtual) {
			t := XMM()
			VMOVSS(a, t)
			VSUBSS(b, t, t)
			VANDPS(mask.AsX(), t, t)
			VADDSS(t, acc[0], acc[0])
		},
	}
	// cos accumulates a·b, a·a and b·b in one pass.
	cos = kernel{
		name: "cos", outs: 3, unroll: 4,
		doc: "returns a·b, a·a and b·b over a and b[:len(a)] in one pass.",
		vec: func(acc []VecVirtual, a, b Mem, _ VecVirtual) {
			ta, tb := YMM(), YMM()
			VMOVUPS(a, ta)
			VMOVUPS(b, tb)
			VFMADD231PS(tb, ta, acc[0])
			VFMADD231PS(ta, ta, acc[1])
			VFMADD231PS(tb, tb, acc[2])
		},
		scalar: func(acc []Register, a, b Mem, _ VecVirtual) {
			ta, tb := XMM(), XMM()
			VMOVSS(a, ta)
			VMOVSS(b, tb)
			VFMADD231SS(tb, ta, acc[0])
			VFMADD231SS(ta, ta, acc[1])
			VFMADD231SS(tb, tb, acc[2])
		},
	}
	// dotsq accumulates a·b and b·b: a batch cosine row with the query norm known.
	dotsq = kernel{
		name: "dotsq", outs: 2, unroll: 4,
		vec: func(acc []VecVirtual, a, b Mem, _ VecVirtual) {
			tb := YMM()
			VMOVUPS(b, tb)
			VFMADD231PS(a, tb, acc[0])
			VFMADD231PS(tb, tb, acc[1])
		},
		scalar: func(acc []Register, a, b Mem, _ VecVirtual) {
			ta, tb := XMM(), XMM()
			VMOVSS(a, ta)
			VMOVSS(b, tb)
			VFMADD231SS(tb, ta, acc[0])
			VFMADD231SS(tb, tb, acc[1])
		},
	}
	// sum only reads a: the memory-read ceiling the benchmarks compare with.
	sum = kernel{
		name: "sum", outs: 1, unroll: 4,
		vec: func(acc []VecVirtual, a, _ Mem, _ VecVirtual) {
			VADDPS(a, acc[0], acc[0])
		},
		scalar: func(acc []Register, a, _ Mem, _ VecVirtual) {
			VADDSS(a, acc[0], acc[0])
		},
	}
)

func main() {
	ConstraintExpr("amd64,!purego")

	for _, k := range []kernel{dot, l2sq, l1} {
		pairwise(k)
	}
	pairwise(cos)
	single(sum)
	for _, k := range []kernel{dot, l2sq, l1} {
		batch(k)
	}
	cosBatch()
	Generate()
}

// absMask materializes 0x7fffffff in every lane of a new register.
func absMask() VecVirtual {
	m := YMM()
	VPCMPEQD(m, m, m)
	VPSRLD(U8(1), m, m)
	return m
}

// body emits the loops that reduce n elements starting at a (and b) into the
// low lanes of the returned X registers. It advances a.Base and b.Base by n
// elements and consumes n. With b.Base nil only a is read.
func body(k kernel, a, b Mem, n Register, mask VecVirtual) []Register {
	two := b.Base != nil
	acc := make([][]VecVirtual, k.outs)
	for g := range acc {
		acc[g] = make([]VecVirtual, k.unroll)
		for u := range acc[g] {
			acc[g][u] = YMM()
			VXORPS(acc[g][u], acc[g][u], acc[g][u])
		}
	}
	group := func(u int) []VecVirtual {
		r := make([]VecVirtual, k.outs)
		for g := range r {
			r[g] = acc[g][u]
		}
		return r
	}
	advance := func(elems int) {
		ADDQ(U32(4*elems), a.Base)
		if two {
			ADDQ(U32(4*elems), b.Base)
		}
	}

	Comment("Main loop: several independent accumulators hide the FMA latency.")
	Label("big")
	CMPQ(n, U32(8*k.unroll))
	JL(LabelRef("block8"))
	for u := 0; u < k.unroll; u++ {
		k.vec(group(u), a.Offset(32*u), b.Offset(32*u), mask)
	}
	advance(8 * k.unroll)
	SUBQ(U32(8*k.unroll), n)
	JMP(LabelRef("big"))

	Label("block8")
	CMPQ(n, U32(8))
	JL(LabelRef("reduce"))
	k.vec(group(0), a, b, mask)
	advance(8)
	SUBQ(U32(8), n)
	JMP(LabelRef("block8"))

	Label("reduce")
	out := make([]Register, k.outs)
	for g := range acc {
		for step := 1; step < k.unroll; step *= 2 {
			for u := 0; u+step < k.unroll; u += 2 * step {
				VADDPS(acc[g][u+step], acc[g][u], acc[g][u])
			}
		}
		v := acc[g][0]
		x, t := v.AsX(), XMM()
		VEXTRACTF128(U8(1), v, t)
		VADDPS(t, x, x)
		VMOVHLPS(x, x, t)
		VADDPS(t, x, x)
		VMOVSHDUP(x, t)
		VADDSS(t, x, x)
		out[g] = x
	}

	Comment("Tail: fewer than 8 elements, one at a time.")
	Label("tail")
	TESTQ(n, n)
	JE(LabelRef("done"))
	k.scalar(out, a, b, mask)
	advance(1)
	DECQ(n)
	JMP(LabelRef("tail"))
	Label("done")
	return out
}

func pairwise(k kernel) {
	sig := "func(a, b []float32) float32"
	if k.outs == 3 {
		sig = "func(a, b []float32) (ab, aa, bb float32)"
	}
	TEXT(k.name+"AVX2", NOSPLIT, sig)
	Pragma("noescape")
	Doc(k.name + "AVX2 " + k.doc)
	a := Mem{Base: Load(Param("a").Base(), GP64())}
	b := Mem{Base: Load(Param("b").Base(), GP64())}
	n := Load(Param("a").Len(), GP64())
	var mask VecVirtual
	if k.mask {
		mask = absMask()
	}
	out := body(k, a, b, n, mask)
	VZEROUPPER()
	for i, x := range out {
		Store(x, ReturnIndex(i))
	}
	RET()
}

func single(k kernel) {
	TEXT(k.name+"AVX2", NOSPLIT, "func(a []float32) float32")
	Pragma("noescape")
	Doc(k.name + "AVX2 returns the sum of a; it only reads memory.")
	a := Mem{Base: Load(Param("a").Base(), GP64())}
	n := Load(Param("a").Len(), GP64())
	out := body(k, a, Mem{}, n, nil)
	VZEROUPPER()
	Store(out[0], ReturnIndex(0))
	RET()
}

// rows emits the row loop shared by the batch kernels: for each of
// len(out) rows of dim elements it reduces q against the row and calls store
// with the results and the address of out[row].
func rows(k kernel, mask VecVirtual, store func(res []Register, dst Mem)) {
	q := Load(Param("q").Base(), GP64())
	data := Load(Param("data").Base(), GP64())
	dim := Load(Param("dim"), GP64())
	dst := Load(Param("out").Base(), GP64())
	nrows := Load(Param("out").Len(), GP64())

	Label("row")
	TESTQ(nrows, nrows)
	JE(LabelRef("end"))
	a, n := GP64(), GP64()
	MOVQ(q, a)
	MOVQ(dim, n)
	res := body(k, Mem{Base: a}, Mem{Base: data}, n, mask)
	store(res, Mem{Base: dst})
	ADDQ(U32(4), dst)
	DECQ(nrows)
	JMP(LabelRef("row"))

	Label("end")
	VZEROUPPER()
	RET()
}

func batch(k kernel) {
	TEXT(k.name+"BatchAVX2", NOSPLIT, "func(q, data []float32, dim int, out []float32)")
	Pragma("noescape")
	Doc(k.name + "BatchAVX2 stores in out[i] the " + k.name + " kernel of q and row i of data (dim values each).")
	var mask VecVirtual
	if k.mask {
		mask = absMask()
	}
	rows(k, mask, func(res []Register, dst Mem) {
		VMOVSS(res[0], dst)
	})
}

// cosBatch finishes each row as pgvector's cosine_distance does, in float64:
// 1 - clamp(ab / sqrt(qq*bb), -1, 1), NaN kept (a zero norm gives NaN).
func cosBatch() {
	TEXT("cosBatchAVX2", NOSPLIT, "func(q, data []float32, dim int, qq float64, out []float32)")
	Pragma("noescape")
	Doc("cosBatchAVX2 stores in out[i] the cosine distance of q (whose squared norm is qq) and row i of data.")
	one := ConstData("one", U64(math.Float64bits(1)))
	negOne := ConstData("negone", U64(math.Float64bits(-1)))
	qq, po, no := XMM(), XMM(), XMM()
	Load(Param("qq"), qq)
	VMOVSD(one, po)
	VMOVSD(negOne, no)
	rows(dotsq, nil, func(res []Register, dst Mem) {
		ab, bb := res[0], res[1]
		VCVTSS2SD(ab, ab, ab)
		VCVTSS2SD(bb, bb, bb)
		VMULSD(qq, bb, bb)
		VSQRTSD(bb, bb, bb)
		VDIVSD(bb, ab, ab)
		// MINSD/MAXSD return their first Go operand when either is NaN.
		VMINSD(ab, po, ab)
		VMAXSD(ab, no, ab)
		VSUBSD(ab, po, ab)
		VCVTSD2SS(ab, ab, ab)
		VMOVSS(ab, dst)
	})
}
