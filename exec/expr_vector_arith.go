package exec

import (
	"encoding/binary"
	"math"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// maxVectorDims is pgvector's limit on a vector's (and a halfvec's)
// dimensions.
const maxVectorDims = 16000

// vectorArithEval evaluates pgvector's element-wise operators (+ - *),
// concatenation (||) and subvector(v, start, count) over vectors or
// halfvecs, with pgvector's checks: equal dimensions (22000), no overflow
// or underflow (22003), at least one and at most 16,000 dimensions.
type vectorArithEval struct {
	call *plan.Call
	args []evaluator
	a, b vectorArg
	out  *types.Vec
	vals []*types.Vec
	res  []float32
	buf  []byte
}

func (e *Env) compileVectorArith(x *plan.Call) (evaluator, error) {
	v := &vectorArithEval{call: x, out: types.NewVec(x.Typ, types.BatchSize)}
	var err error
	if v.args, err = e.compileArgs(x.Args); err != nil {
		return nil, err
	}
	v.a.t = x.Args[0].Type()
	if x.Op != plan.OpSubvector {
		v.b.t = x.Args[1].Type()
	}
	return v, nil
}

func (v *vectorArithEval) eval(b *types.Batch) (*types.Vec, error) {
	vals := v.vals[:0]
	for _, a := range v.args {
		// Each evaluator owns its output; evaluating the next one does
		// not touch it.
		x, err := a.eval(b)
		if err != nil {
			return nil, err
		}
		vals = append(vals, x)
	}
	v.vals = vals
	out := v.out
	out.Reset()
	half := v.call.Typ.Kind == types.HalfVec
	for i, n := 0, b.Len(); i < n; i++ {
		null := false
		for _, x := range vals {
			null = null || x.Nulls[i]
		}
		if null {
			out.AppendNull()
			continue
		}
		p := v.a.row(vals[0], i)
		var err error
		if v.call.Op == plan.OpSubvector {
			v.res, err = subvector(v.res[:0], p, vals[1].Ints[i], vals[2].Ints[i])
		} else {
			// p may alias a's scratch; b's row has its own.
			v.res, err = elementwise(v.call.Op, v.res[:0], p, v.b.row(vals[1], i), half)
		}
		if err != nil {
			return nil, err
		}
		v.buf = v.buf[:0]
		for _, f := range v.res {
			if half {
				v.buf = binary.LittleEndian.AppendUint16(v.buf, types.Float32ToFloat16(f))
			} else {
				v.buf = binary.LittleEndian.AppendUint32(v.buf, math.Float32bits(f))
			}
		}
		out.AppendBytes(v.buf)
	}
	return out, nil
}

// elementwise appends p op q to dst (p and q concatenated for ||). For
// halfvecs the results are checked against the half range.
func elementwise(op plan.Op, dst, p, q []float32, half bool) ([]float32, error) {
	if op == plan.OpVectorConcat {
		if len(p)+len(q) > maxVectorDims {
			return nil, pgerror.Newf(pgerror.ProgramLimitExceeded, "vector cannot have more than %d dimensions", maxVectorDims)
		}
		return append(append(dst, p...), q...), nil
	}
	if len(p) != len(q) {
		return nil, pgerror.Newf(pgerror.DataException, "different vector dimensions %d and %d", len(p), len(q))
	}
	for i := range p {
		var r float32
		switch op {
		case plan.OpVectorAdd:
			r = p[i] + q[i]
		case plan.OpVectorSub:
			r = p[i] - q[i]
		default:
			r = p[i] * q[i]
		}
		if half {
			r = types.Float16ToFloat32(types.Float32ToFloat16(r))
		}
		if math.IsInf(float64(r), 0) {
			return nil, pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
		}
		if op == plan.OpVectorMul && r == 0 && p[i] != 0 && q[i] != 0 {
			return nil, pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: underflow")
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// subvector appends elements start..start+count-1 (1-based) of p to dst,
// clipped to p, as pgvector's subvector does.
func subvector(dst, p []float32, start, count int64) ([]float32, error) {
	dim := int64(len(p))
	if count < 1 {
		return nil, pgerror.New(pgerror.DataException, "vector must have at least 1 dimension")
	}
	end := start + count
	if start > dim-count {
		end = dim + 1
	}
	if start < 1 {
		start = 1
	} else if start > dim {
		return nil, pgerror.New(pgerror.DataException, "vector must have at least 1 dimension")
	}
	if end <= start {
		return nil, pgerror.New(pgerror.DataException, "vector must have at least 1 dimension")
	}
	return append(dst, p[start-1:end-1]...), nil
}
