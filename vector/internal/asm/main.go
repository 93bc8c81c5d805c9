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

// kernel describes one reduction over one or two streams of values: vec
// folds a block of 8 lanes into the accumulators, scalar folds one element
// into the low lane of the (reduced) accumulators. Their a and b operands
// are either memory (float32) or a register already holding float32 values
// (converted from float16 by the caller).
type kernel struct {
	name   string
	doc    string
	outs   int  // number of accumulator groups (results)
	unroll int  // 8-lane blocks per main-loop iteration
	mask   bool // needs the absolute-value mask (0x7fffffff) in a register
	vec    func(acc []VecVirtual, a, b Op, mask VecVirtual)
	scalar func(acc []Register, a, b Op, mask VecVirtual)
}

// ld returns op as a register, loading 8 float32 from memory if needed.
func ld(op Op) Op {
	if r, ok := op.(Register); ok {
		return r
	}
	t := YMM()
	VMOVUPS(op, t)
	return t
}

// ld1 returns op as a register, loading one float32 from memory if needed.
func ld1(op Op) Op {
	if r, ok := op.(Register); ok {
		return r
	}
	t := XMM()
	VMOVSS(op, t)
	return t
}

var (
	dot = kernel{
		name: "dot", outs: 1, unroll: 4,
		doc: "returns the inner product of a and b[:len(a)].",
		vec: func(acc []VecVirtual, a, b Op, _ VecVirtual) {
			VFMADD231PS(b, ld(a), acc[0])
		},
		scalar: func(acc []Register, a, b Op, _ VecVirtual) {
			VFMADD231SS(b, ld1(a), acc[0])
		},
	}
	l2sq = kernel{
		name: "l2sq", outs: 1, unroll: 4,
		doc: "returns the squared Euclidean distance between a and b[:len(a)].",
		vec: func(acc []VecVirtual, a, b Op, _ VecVirtual) {
			t := YMM()
			VSUBPS(b, ld(a), t)
			VFMADD231PS(t, t, acc[0])
		},
		scalar: func(acc []Register, a, b Op, _ VecVirtual) {
			t := XMM()
			VSUBSS(b, ld1(a), t)
			VFMADD231SS(t, t, acc[0])
		},
	}
	l1 = kernel{
		name: "l1", outs: 1, unroll: 4, mask: true,
		doc: "returns the taxicab distance between a and b[:len(a)].",
		vec: func(acc []VecVirtual, a, b Op, mask VecVirtual) {
			t := YMM()
			VSUBPS(b, ld(a), t)
			VANDPS(mask, t, t)
			VADDPS(t, acc[0], acc[0])
		},
		scalar: func(acc []Register, a, b Op, mask VecVirtual) {
			t := XMM()
			VSUBSS(b, ld1(a), t)
			VANDPS(mask.AsX(), t, t)
			VADDSS(t, acc[0], acc[0])
		},
	}
	// cos accumulates a·b, a·a and b·b in one pass.
	cos = kernel{
		name: "cos", outs: 3, unroll: 4,
		doc: "returns a·b, a·a and b·b over a and b[:len(a)] in one pass.",
		vec: func(acc []VecVirtual, a, b Op, _ VecVirtual) {
			ta, tb := ld(a), ld(b)
			VFMADD231PS(tb, ta, acc[0])
			VFMADD231PS(ta, ta, acc[1])
			VFMADD231PS(tb, tb, acc[2])
		},
		scalar: func(acc []Register, a, b Op, _ VecVirtual) {
			ta, tb := ld1(a), ld1(b)
			VFMADD231SS(tb, ta, acc[0])
			VFMADD231SS(ta, ta, acc[1])
			VFMADD231SS(tb, tb, acc[2])
		},
	}
	// dotsq accumulates a·b and b·b: a batch cosine row with the query norm known.
	dotsq = kernel{
		name: "dotsq", outs: 2, unroll: 4,
		vec: func(acc []VecVirtual, a, b Op, _ VecVirtual) {
			tb := ld(b)
			VFMADD231PS(a, tb, acc[0])
			VFMADD231PS(tb, tb, acc[1])
		},
		scalar: func(acc []Register, a, b Op, _ VecVirtual) {
			tb := ld1(b)
			VFMADD231SS(a, tb, acc[0])
			VFMADD231SS(tb, tb, acc[1])
		},
	}
	// sum only reads a: the memory-read ceiling the benchmarks compare with.
	sum = kernel{
		name: "sum", outs: 1, unroll: 4,
		vec: func(acc []VecVirtual, a, _ Op, _ VecVirtual) {
			VADDPS(a, acc[0], acc[0])
		},
		scalar: func(acc []Register, a, _ Op, _ VecVirtual) {
			VADDSS(a, acc[0], acc[0])
		},
	}
)

func main() {
	ConstraintExpr("amd64,!purego")

	for _, k := range []kernel{dot, l2sq, l1, cos} {
		pairwise(k, false)
	}
	single(sum)
	for _, k := range []kernel{dot, l2sq, l1} {
		batch(k, false)
	}
	cosBatch(false)

	// float16 (F16C): conversions, and the same kernels reading binary16
	// rows, converted in registers.
	cpuid()
	convert()
	for _, k := range []kernel{dot, l2sq, l1, cos} {
		pairwise(k, true)
	}
	for _, k := range []kernel{dot, l2sq, l1} {
		batch(k, true)
	}
	cosBatch(true)
	Generate()
}

// absMask materializes 0x7fffffff in every lane of a new register.
func absMask() VecVirtual {
	m := YMM()
	VPCMPEQD(m, m, m)
	VPSRLD(U8(1), m, m)
	return m
}

// stream is one input of a kernel: its pointer, and whether it holds
// binary16 values (2 bytes each, converted on load) or float32.
type stream struct {
	m    Mem
	half bool
	used bool
}

func (s stream) size() int {
	if s.half {
		return 2
	}
	return 4
}

// block returns the operand for 8 values at element offset off.
func (s stream) block(off int) Op {
	if !s.half {
		return s.m.Offset(4 * off)
	}
	t := YMM()
	VCVTPH2PS(s.m.Offset(2*off), t)
	return t
}

// one returns the operand for the single value at s.m.
func (s stream) one() Op {
	if !s.half {
		return s.m
	}
	g, t := GP32(), XMM()
	MOVWLZX(s.m, g)
	VMOVD(g, t)
	VCVTPH2PS(t, t)
	return t
}

func (s stream) advance(elems int) {
	if s.used {
		ADDQ(U32(s.size()*elems), s.m.Base)
	}
}

// body emits the loops that reduce n elements of a (and b) into the low
// lanes of the returned X registers. It advances the streams' bases by n
// elements and consumes n.
func body(k kernel, a, b stream, n Register, mask VecVirtual) []Register {
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
		a.advance(elems)
		b.advance(elems)
	}
	var bop func(off int) Op
	if b.used {
		bop = b.block
	} else {
		bop = func(int) Op { return nil }
	}

	Comment("Main loop: several independent accumulators hide the FMA latency.")
	Label("big")
	CMPQ(n, U32(8*k.unroll))
	JL(LabelRef("block8"))
	for u := 0; u < k.unroll; u++ {
		k.vec(group(u), a.block(8*u), bop(8*u), mask)
	}
	advance(8 * k.unroll)
	SUBQ(U32(8*k.unroll), n)
	JMP(LabelRef("big"))

	Label("block8")
	CMPQ(n, U32(8))
	JL(LabelRef("reduce"))
	k.vec(group(0), a.block(0), bop(0), mask)
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
	var bone Op
	if b.used {
		bone = b.one()
	}
	k.scalar(out, a.one(), bone, mask)
	advance(1)
	DECQ(n)
	JMP(LabelRef("tail"))
	Label("done")
	return out
}

func suffix(half bool) string {
	if half {
		return "HalfAVX2"
	}
	return "AVX2"
}

func pairwise(k kernel, half bool) {
	elem := "float32"
	if half {
		elem = "uint16"
	}
	sig := "func(a, b []" + elem + ") float32"
	if k.outs == 3 {
		sig = "func(a, b []" + elem + ") (ab, aa, bb float32)"
	}
	name := k.name + suffix(half)
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	if half {
		Doc(name + " " + k.doc + " Both hold binary16 values.")
	} else {
		Doc(name + " " + k.doc)
	}
	a := stream{m: Mem{Base: Load(Param("a").Base(), GP64())}, half: half, used: true}
	b := stream{m: Mem{Base: Load(Param("b").Base(), GP64())}, half: half, used: true}
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
	a := stream{m: Mem{Base: Load(Param("a").Base(), GP64())}, used: true}
	n := Load(Param("a").Len(), GP64())
	out := body(k, a, stream{}, n, nil)
	VZEROUPPER()
	Store(out[0], ReturnIndex(0))
	RET()
}

// rows emits the row loop shared by the batch kernels: for each of
// len(out) rows of dim elements it reduces q against the row and calls store
// with the results and the address of out[row].
func rows(k kernel, half bool, mask VecVirtual, store func(res []Register, dst Mem)) {
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
	res := body(k, stream{m: Mem{Base: a}, used: true}, stream{m: Mem{Base: data}, half: half, used: true}, n, mask)
	store(res, Mem{Base: dst})
	ADDQ(U32(4), dst)
	DECQ(nrows)
	JMP(LabelRef("row"))

	Label("end")
	VZEROUPPER()
	RET()
}

func rowType(half bool) string {
	if half {
		return "uint16"
	}
	return "float32"
}

func batch(k kernel, half bool) {
	name := k.name + "Batch" + suffix(half)
	TEXT(name, NOSPLIT, "func(q []float32, data []"+rowType(half)+", dim int, out []float32)")
	Pragma("noescape")
	Doc(name + " stores in out[i] the " + k.name + " kernel of q and row i of data (dim values each).")
	var mask VecVirtual
	if k.mask {
		mask = absMask()
	}
	rows(k, half, mask, func(res []Register, dst Mem) {
		VMOVSS(res[0], dst)
	})
}

// cosBatch finishes each row as pgvector's cosine_distance does, in float64:
// 1 - clamp(ab / sqrt(qq*bb), -1, 1), NaN kept (a zero norm gives NaN).
func cosBatch(half bool) {
	name := "cosBatch" + suffix(half)
	TEXT(name, NOSPLIT, "func(q []float32, data []"+rowType(half)+", dim int, qq float64, out []float32)")
	Pragma("noescape")
	Doc(name + " stores in out[i] the cosine distance of q (whose squared norm is qq) and row i of data.")
	one := GLOBL("one"+suffix(half), RODATA|NOPTR)
	DATA(0, U64(math.Float64bits(1)))
	negOne := GLOBL("negone"+suffix(half), RODATA|NOPTR)
	DATA(0, U64(math.Float64bits(-1)))
	qq, po, no := XMM(), XMM(), XMM()
	Load(Param("qq"), qq)
	VMOVSD(one, po)
	VMOVSD(negOne, no)
	rows(dotsq, half, nil, func(res []Register, dst Mem) {
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

// cpuid exposes the CPUID instruction (x/sys/cpu does not report F16C).
func cpuid() {
	TEXT("cpuid", NOSPLIT, "func(leaf, sub uint32) (eax, ebx, ecx, edx uint32)")
	Doc("cpuid returns the registers CPUID sets for leaf and subleaf sub.")
	Load(Param("leaf"), EAX)
	Load(Param("sub"), ECX)
	CPUID()
	Store(EAX, ReturnIndex(0))
	Store(EBX, ReturnIndex(1))
	Store(ECX, ReturnIndex(2))
	Store(EDX, ReturnIndex(3))
	RET()
}

// convert emits the bulk binary16 <-> float32 conversions (F16C). The
// float32 -> binary16 direction rounds to nearest even (imm8 0).
func convert() {
	TEXT("f16toF32AVX2", NOSPLIT, "func(dst []float32, src []uint16)")
	Pragma("noescape")
	Doc("f16toF32AVX2 converts src into dst[:len(src)].")
	d := Mem{Base: Load(Param("dst").Base(), GP64())}
	s := Mem{Base: Load(Param("src").Base(), GP64())}
	n := Load(Param("src").Len(), GP64())
	Label("block8")
	CMPQ(n, U32(8))
	JL(LabelRef("tail"))
	t := YMM()
	VCVTPH2PS(s, t)
	VMOVUPS(t, d)
	ADDQ(U32(16), s.Base)
	ADDQ(U32(32), d.Base)
	SUBQ(U32(8), n)
	JMP(LabelRef("block8"))
	Label("tail")
	TESTQ(n, n)
	JE(LabelRef("done"))
	x := stream{m: s, half: true}.one()
	VMOVSS(x, d)
	ADDQ(U32(2), s.Base)
	ADDQ(U32(4), d.Base)
	DECQ(n)
	JMP(LabelRef("tail"))
	Label("done")
	VZEROUPPER()
	RET()

	TEXT("f32toF16AVX2", NOSPLIT, "func(dst []uint16, src []float32)")
	Pragma("noescape")
	Doc("f32toF16AVX2 converts src into dst[:len(src)], rounding to nearest even.")
	d = Mem{Base: Load(Param("dst").Base(), GP64())}
	s = Mem{Base: Load(Param("src").Base(), GP64())}
	n = Load(Param("src").Len(), GP64())
	Label("block8")
	CMPQ(n, U32(8))
	JL(LabelRef("tail"))
	y := YMM()
	VMOVUPS(s, y)
	VCVTPS2PH(U8(0), y, d)
	ADDQ(U32(32), s.Base)
	ADDQ(U32(16), d.Base)
	SUBQ(U32(8), n)
	JMP(LabelRef("block8"))
	Label("tail")
	TESTQ(n, n)
	JE(LabelRef("done"))
	x1, g := XMM(), GP32()
	VMOVSS(s, x1)
	VCVTPS2PH(U8(0), x1, x1)
	VMOVD(x1, g)
	MOVW(g.As16(), d)
	ADDQ(U32(4), s.Base)
	ADDQ(U32(2), d.Base)
	DECQ(n)
	JMP(LabelRef("tail"))
	Label("done")
	VZEROUPPER()
	RET()
}
