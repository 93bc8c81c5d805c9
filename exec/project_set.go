package exec

import (
	"strconv"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// projectSetOp runs a select list's set-returning functions on each input
// row in lockstep.
type projectSetOp struct {
	in    Operator
	srfs  []plan.SRF
	args  []evaluator
	vals  []*types.Vec
	out   *types.Batch
	ncols int
	lens  []int
	elems [][]string // text arrays: the elements of the current row
	buf   []byte
	tmp   *types.Vec // one tensor element
}

func newProjectSet(env *Env, n *plan.ProjectSet) (Operator, error) {
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	p := &projectSetOp{in: in, srfs: n.SRFs, ncols: len(n.Input.Columns())}
	var ts []types.Type
	for _, c := range n.Columns() {
		ts = append(ts, c.Type)
	}
	p.out = types.NewBatch(ts, types.BatchSize)
	for _, f := range n.SRFs {
		ev, err := env.compile(f.Arg)
		if err != nil {
			in.Close()
			return nil, err
		}
		p.args = append(p.args, ev)
	}
	p.vals = make([]*types.Vec, len(n.SRFs))
	p.lens = make([]int, len(n.SRFs))
	p.elems = make([][]string, len(n.SRFs))
	return p, nil
}

func (p *projectSetOp) Next() (*types.Batch, error) {
	for {
		b, err := p.in.Next()
		if err != nil || b == nil {
			return nil, err
		}
		for k, a := range p.args {
			if p.vals[k], err = a.eval(b); err != nil {
				return nil, err
			}
		}
		p.out.Reset()
		for r := 0; r < b.Len(); r++ {
			rows := 0
			for k, f := range p.srfs {
				p.lens[k] = p.arrayLen(k, f, r)
				rows = max(rows, p.lens[k])
			}
			for j := 0; j < rows; j++ {
				for c := 0; c < p.ncols; c++ {
					p.out.Cols[c].AppendFrom(b.Cols[c], r)
				}
				for k, f := range p.srfs {
					p.appendValue(p.out.Cols[p.ncols+k], k, f, r, j)
				}
			}
		}
		if p.out.Len() > 0 || len(p.out.Cols) == 0 {
			return p.out, nil
		}
	}
}

// arrayLen returns the element count of SRF k's array at row r (0 for NULL).
func (p *projectSetOp) arrayLen(k int, f plan.SRF, r int) int {
	v := p.vals[k]
	if v.Nulls[r] {
		return 0
	}
	if t := f.Arg.Type(); t.Kind == types.Tensor {
		n, ok := types.ArrayLength(t, v.GetBytes(r), 1)
		if !ok {
			return 0
		}
		return n
	}
	p.elems[k] = types.ArrayElems(string(v.GetBytes(r)))
	return len(p.elems[k])
}

// appendValue appends SRF k's j-th value (0-based) for row r.
func (p *projectSetOp) appendValue(dst *types.Vec, k int, f plan.SRF, r, j int) {
	if j >= p.lens[k] {
		dst.AppendNull()
		return
	}
	if f.Kind == plan.SRFGenerateSubscripts {
		dst.AppendInt(int64(j + 1))
		return
	}
	t := f.Arg.Type()
	var elem []byte
	if t.Kind == types.Tensor {
		et, _ := types.SubscriptType(t, len(t.Shape))
		if f.Kind == plan.SRFUnnest {
			types.AppendSubscript(dst, t, p.vals[k].GetBytes(r), []int64{int64(j + 1)})
			return
		}
		if p.tmp == nil || !p.tmp.Type.Equal(et) {
			p.tmp = types.NewVec(et, 1)
		}
		p.tmp.Reset()
		types.AppendSubscript(p.tmp, t, p.vals[k].GetBytes(r), []int64{int64(j + 1)})
		if p.tmp.Nulls[0] {
			elem = nil
		} else {
			elem = types.AppendText(nil, p.tmp, 0)
		}
	} else {
		elem = []byte(p.elems[k][j])
		if f.Kind == plan.SRFUnnest {
			dst.AppendBytes(elem)
			return
		}
	}
	// _pg_expandarray: the record (x, n) as text.
	p.buf = append(append(append(p.buf[:0], '('), elem...), ',')
	p.buf = strconv.AppendInt(p.buf, int64(j+1), 10)
	dst.AppendBytes(append(p.buf, ')'))
}

func (p *projectSetOp) Close() { p.in.Close() }
