package exec

import (
	"encoding/binary"
	"math"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
	"github.com/deeplaked/deeplaked/vector"
)

// vectorArg reads the float32 elements of a vector operand's rows in
// place: a vector's value is its elements, a one-dimensional float32
// tensor's value its elements after the dims of a ragged one.
type vectorArg struct {
	t       types.Type
	dims    []int
	scratch []float32
}

// row returns the elements of row i of v. The slice aliases v, or the
// arg's scratch when the bytes are not aligned for float32.
func (a *vectorArg) row(v *types.Vec, i int) []float32 {
	b := v.Bytes.Get(i)
	switch a.t.Kind {
	case types.Tensor:
		a.dims, b = types.TensorDims(a.t, b, a.dims)
	case types.HalfVec:
		s := a.scratch[:0]
		for k := 0; k+2 <= len(b); k += 2 {
			s = append(s, types.Float16ToFloat32(binary.LittleEndian.Uint16(b[k:])))
		}
		a.scratch = s
		return s
	}
	return floatsOf(b, &a.scratch)
}

// floatsOf views b, little-endian float32s, as []float32; unaligned bytes
// are copied into scratch.
func floatsOf(b []byte, scratch *[]float32) []float32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if f, ok := vector.AsFloat32s(b); ok {
		return f
	}
	s := (*scratch)[:0]
	for k := range n {
		s = append(s, math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:])))
	}
	*scratch = s
	return s
}

// compileArgs compiles a call's arguments.
func (e *Env) compileArgs(args []plan.Expr) ([]evaluator, error) {
	out := make([]evaluator, 0, len(args))
	for _, a := range args {
		ae, err := e.compile(a)
		if err != nil {
			return nil, err
		}
		out = append(out, ae)
	}
	return out, nil
}

// vectorEval evaluates pgvector's distance operators and functions.
type vectorEval struct {
	call   *plan.Call
	args   []evaluator
	a, b   vectorArg
	out    *types.Vec
	scaled []byte
}

func (e *Env) compileVector(x *plan.Call) (evaluator, error) {
	v := &vectorEval{call: x, out: types.NewVec(x.Typ, types.BatchSize)}
	var err error
	if v.args, err = e.compileArgs(x.Args); err != nil {
		return nil, err
	}
	v.a.t = x.Args[0].Type()
	if len(x.Args) > 1 {
		v.b.t = x.Args[1].Type()
	}
	return v, nil
}

func (v *vectorEval) eval(b *types.Batch) (*types.Vec, error) {
	x, err := v.args[0].eval(b)
	if err != nil {
		return nil, err
	}
	var y *types.Vec
	if len(v.args) > 1 {
		// x is evaluated into its evaluator's own output, which the
		// second evaluation does not touch.
		if y, err = v.args[1].eval(b); err != nil {
			return nil, err
		}
	}
	out := v.out
	out.Reset()
	op := v.call.Op
	for i, n := 0, b.Len(); i < n; i++ {
		if x.Nulls[i] || y != nil && y.Nulls[i] {
			out.AppendNull()
			continue
		}
		p := v.a.row(x, i)
		switch op {
		case plan.OpVectorNorm:
			out.AppendFloat(math.Sqrt(float64(dotF32(p, p))))
			continue
		case plan.OpL2Normalize:
			v.scaled = appendNormalized(v.scaled[:0], p, v.call.Typ.Kind == types.HalfVec)
			out.AppendBytes(v.scaled)
			continue
		}
		q := v.b.row(y, i)
		if len(p) != len(q) {
			return nil, pgerror.Newf(pgerror.DataException, "different vector dimensions %d and %d", len(p), len(q))
		}
		out.AppendFloat(distance(op, p, q))
	}
	return out, nil
}

// distance computes op between two vectors of equal length, as pgvector
// does: float32 arithmetic, the result widened to float8.
func distance(op plan.Op, p, q []float32) float64 {
	switch op {
	case plan.OpL2Distance:
		return math.Sqrt(float64(l2SqF32(p, q)))
	case plan.OpNegInnerProduct:
		return -float64(dotF32(p, q))
	case plan.OpInnerProduct:
		return float64(dotF32(p, q))
	case plan.OpL1Distance:
		return float64(l1F32(p, q))
	}
	return cosineDistance(p, q)
}

// cosineDistance is 1 - cos(p, q), the similarity clamped to [-1, 1];
// NaN when either vector is zero. As pgvector's cosine_distance: the dot
// product and the norms summed in float4, the division in float8.
func cosineDistance(p, q []float32) float64 {
	d, np, nq := float64(dotF32(p, q)), float64(dotF32(p, p)), float64(dotF32(q, q))
	sim := d / math.Sqrt(np*nq)
	if math.IsNaN(sim) {
		return math.NaN()
	}
	return 1 - max(-1, min(1, sim))
}

// appendNormalized appends p scaled to unit length (p itself when its norm
// is 0), as little-endian float32s, or halves.
func appendNormalized(dst []byte, p []float32, half bool) []byte {
	norm := math.Sqrt(float64(dotF32(p, p)))
	for _, f := range p {
		if norm > 0 {
			f = float32(float64(f) / norm)
		}
		if half {
			dst = binary.LittleEndian.AppendUint16(dst, types.Float32ToFloat16(f))
		} else {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
		}
	}
	return dst
}

// The kernels: vector's SIMD ones (AVX2 where the CPU has it).
func dotF32(p, q []float32) float32  { return vector.Dot(p, q) }
func l2SqF32(p, q []float32) float32 { return vector.L2Sq(p, q) }
func l1F32(p, q []float32) float32   { return vector.L1(p, q) }
