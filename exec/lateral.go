package exec

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// lateralJoinOp runs its right plan once per left row, with that row's
// argument values as Params, and pairs the row with what it returns.
type lateralJoinOp struct {
	env   *Env
	n     *plan.LateralJoin
	left  Operator
	args  []evaluator
	on    evaluator
	frame []*types.Vec
	vals  []*types.Vec
	probe *types.Batch
	row   int
	right *types.Batch // the right plan's rows for the current left row
	nl    int
	out   *types.Batch
	rows  []int
	sub   gatherer
}

func newLateralJoin(env *Env, n *plan.LateralJoin) (Operator, error) {
	left, err := Build(env, n.Left)
	if err != nil {
		return nil, err
	}
	l := &lateralJoinOp{env: env, n: n, left: left, nl: len(n.Left.Columns())}
	for _, a := range n.Args {
		ev, err := env.compile(a)
		if err != nil {
			left.Close()
			return nil, err
		}
		l.args = append(l.args, ev)
		l.frame = append(l.frame, types.NewVec(a.Type(), 1))
	}
	if n.On != nil {
		if l.on, err = env.compile(n.On); err != nil {
			left.Close()
			return nil, err
		}
	}
	var ts, rts []types.Type
	for _, c := range n.Columns() {
		ts = append(ts, c.Type)
	}
	for _, c := range n.Right.Columns() {
		rts = append(rts, c.Type)
	}
	l.out = types.NewBatch(ts, types.BatchSize)
	l.right = types.NewBatch(rts, types.BatchSize)
	l.vals = make([]*types.Vec, len(l.args))
	return l, nil
}

// runRight fills l.right with the right plan's rows for left row r.
func (l *lateralJoinOp) runRight(r int) error {
	for k, v := range l.vals {
		l.frame[k].Reset()
		l.frame[k].AppendFrom(v, r)
	}
	l.env.params = append(l.env.params, l.frame)
	defer func() { l.env.params = l.env.params[:len(l.env.params)-1] }()
	op, err := Build(l.env, l.n.Right)
	if err != nil {
		return err
	}
	defer op.Close()
	l.right.Reset()
	n := 0
	for {
		b, err := op.Next()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		for i, c := range b.Cols {
			l.right.Cols[i].AppendVec(c)
		}
		n += b.Len()
		if batchBytes(l.right) > maxBuildBytes {
			return tooMuchMemory("a LATERAL item")
		}
	}
	l.right.SetLen(n)
	return nil
}

func (l *lateralJoinOp) Next() (*types.Batch, error) {
	for {
		if err := l.env.canceled(); err != nil {
			return nil, err
		}
		if l.probe == nil || l.row >= l.probe.Len() {
			b, err := l.left.Next()
			if err != nil || b == nil {
				return nil, err
			}
			for k, a := range l.args {
				if l.vals[k], err = a.eval(b); err != nil {
					return nil, err
				}
			}
			l.probe, l.row = b, 0
		}
		r := l.row
		l.row++
		if err := l.runRight(r); err != nil {
			return nil, err
		}
		l.out.Reset()
		nr := l.right.Len()
		for j := 0; j < nr; j++ {
			for c := 0; c < l.nl; c++ {
				l.out.Cols[c].AppendFrom(l.probe.Cols[c], r)
			}
			for c, v := range l.right.Cols {
				l.out.Cols[l.nl+c].AppendFrom(v, j)
			}
		}
		l.out.SetLen(nr)
		out := l.out
		if l.on != nil && nr > 0 {
			pred, err := l.on.eval(out)
			if err != nil {
				return nil, err
			}
			l.rows = selectRows(l.rows[:0], pred, nr)
			if len(l.rows) < nr {
				out = l.sub.gather(out, l.rows)
			}
		}
		if out.Len() == 0 && l.n.Kind == plan.JoinLeft {
			l.out.Reset()
			for c := 0; c < l.nl; c++ {
				l.out.Cols[c].AppendFrom(l.probe.Cols[c], r)
			}
			for c := l.nl; c < len(l.out.Cols); c++ {
				l.out.Cols[c].AppendNull()
			}
			l.out.SetLen(1)
			return l.out, nil
		}
		if out.Len() > 0 {
			return out, nil
		}
	}
}

func (l *lateralJoinOp) Close() { l.left.Close() }
