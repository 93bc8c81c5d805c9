package exec

import (
	"math"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// appendOp returns the batches of each input in turn.
type appendOp struct {
	ins []Operator
	cur int
}

func newAppend(env *Env, n *plan.Append) (Operator, error) {
	a := &appendOp{}
	for _, in := range n.Inputs {
		op, err := Build(env, in)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.ins = append(a.ins, op)
	}
	return a, nil
}

func (a *appendOp) Next() (*types.Batch, error) {
	for a.cur < len(a.ins) {
		b, err := a.ins[a.cur].Next()
		if err != nil {
			return nil, err
		}
		if b != nil {
			return b, nil
		}
		a.cur++
	}
	return nil, nil
}

func (a *appendOp) Close() {
	for _, in := range a.ins {
		in.Close()
	}
}

// seriesOp produces generate_series's integers a batch at a time.
type seriesOp struct {
	env              *Env
	next, stop, step int64
	done             bool
	out              *types.Batch
}

func newSeries(env *Env, n *plan.Series) (Operator, error) {
	s := &seriesOp{env: env, step: 1, out: types.NewBatch([]types.Type{n.Typ}, types.BatchSize)}
	vals := []*int64{&s.next, &s.stop, &s.step}
	for i, x := range []plan.Expr{n.Start, n.Stop, n.Step} {
		if x == nil {
			continue
		}
		v, err := env.foldConst(x)
		if err != nil {
			return nil, err
		}
		if v.Nulls[0] {
			s.done = true // a NULL argument: no rows
			continue
		}
		*vals[i] = v.Ints[0]
	}
	if s.step == 0 {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "step size cannot equal zero")
	}
	return s, nil
}

func (s *seriesOp) Next() (*types.Batch, error) {
	if s.done {
		return nil, nil
	}
	if err := s.env.canceled(); err != nil {
		return nil, err
	}
	s.out.Reset()
	col := s.out.Cols[0]
	for col.Len() < types.BatchSize {
		if (s.step > 0 && s.next > s.stop) || (s.step < 0 && s.next < s.stop) {
			s.done = true
			break
		}
		col.AppendInt(s.next)
		if (s.step > 0 && s.next > math.MaxInt64-s.step) || (s.step < 0 && s.next < math.MinInt64-s.step) {
			s.done = true
			break
		}
		s.next += s.step
	}
	if col.Len() == 0 {
		return nil, nil
	}
	return s.out, nil
}

func (s *seriesOp) Close() {}
