package exec

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// subqueryEval computes a subquery's value for each row. A subquery
// without arguments runs once and its rows are kept; a correlated one runs
// again for each row, with that row's argument values as its Params.
type subqueryEval struct {
	env  *Env
	sq   *plan.Subquery
	args []evaluator
	test evaluator
	out  *types.Vec

	cached bool
	rows   *types.Vec // the first column of the rows of the last run
	count  int        // rows of the last run (SubExists stops at one)
	frame  []*types.Vec
	buf    []byte
	elem   []byte
	// held is what rows takes, reserved in the statement's subquery
	// account (Env.Close gives it back).
	held int64
}

func (e *Env) compileSubquery(x *plan.Subquery) (evaluator, error) {
	s := &subqueryEval{env: e, sq: x, out: types.NewVec(x.Typ, types.BatchSize)}
	for _, a := range x.Args {
		ev, err := e.compile(a)
		if err != nil {
			return nil, err
		}
		s.args = append(s.args, ev)
		s.frame = append(s.frame, types.NewVec(a.Type(), 1))
	}
	if x.Test != nil {
		t, err := e.compile(x.Test)
		if err != nil {
			return nil, err
		}
		s.test = t
	}
	if cols := x.Plan.Columns(); len(cols) > 0 {
		s.rows = types.NewVec(cols[0].Type, 1)
	}
	return s, nil
}

// run executes the plan with the current frame as its Params.
func (s *subqueryEval) run() error {
	s.env.params = append(s.env.params, s.frame)
	defer func() { s.env.params = s.env.params[:len(s.env.params)-1] }()
	op, err := Build(s.env, s.sq.Plan)
	if err != nil {
		return err
	}
	defer op.Close()
	s.count = 0
	if s.rows != nil {
		s.rows.Reset()
		if err := s.hold(); err != nil {
			return err
		}
	}
	for {
		b, err := op.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		n := b.Len()
		if n == 0 {
			continue
		}
		s.count += n
		switch s.sq.Kind {
		case plan.SubExists:
			return nil
		case plan.SubScalar:
			if s.count > 1 {
				return pgerror.New(pgerror.Code("21000"), "more than one row returned by a subquery used as an expression")
			}
		}
		if s.rows != nil && len(b.Cols) > 0 {
			s.rows.AppendVec(b.Cols[0])
			if err := s.hold(); err != nil {
				return err
			}
		}
	}
}

func (s *subqueryEval) eval(b *types.Batch) (*types.Vec, error) {
	n := b.Len()
	var argv []*types.Vec
	for _, a := range s.args {
		v, err := a.eval(b)
		if err != nil {
			return nil, err
		}
		argv = append(argv, v)
	}
	var test *types.Vec
	if s.test != nil {
		v, err := s.test.eval(b)
		if err != nil {
			return nil, err
		}
		test = v
	}
	s.out.Reset()
	for i := 0; i < n; i++ {
		if len(s.args) > 0 {
			for k, v := range argv {
				s.frame[k].Reset()
				s.frame[k].AppendFrom(v, i)
			}
			if err := s.run(); err != nil {
				return nil, err
			}
		} else if !s.cached {
			if err := s.run(); err != nil {
				return nil, err
			}
			s.cached = true
		}
		s.appendResult(test, i)
	}
	return s.out, nil
}

// hold reserves what the rows of the subquery take (IN and ANY lists,
// ARRAY(...)'s elements) in the statement's account for subqueries.
func (s *subqueryEval) hold() error {
	n := vecBytes(s.rows)
	if s.env.subAcc == nil {
		s.env.subAcc = s.env.account("a subquery's rows")
	}
	if err := s.env.subAcc.Grow(n - s.held); err != nil {
		return err
	}
	s.held = n
	return nil
}

// appendResult appends the value for row i from the rows of the last run.
func (s *subqueryEval) appendResult(test *types.Vec, i int) {
	out := s.out
	switch s.sq.Kind {
	case plan.SubExists:
		out.AppendBool(s.count > 0)
	case plan.SubScalar:
		if s.count == 0 {
			out.AppendNull()
		} else {
			out.AppendFrom(s.rows, 0)
		}
	case plan.SubArray:
		s.buf = appendArrayText(s.buf[:0], s.rows, s.elem)
		out.AppendBytes(s.buf)
	case plan.SubAny, plan.SubAll:
		all := s.sq.Kind == plan.SubAll
		if s.count == 0 {
			out.AppendBool(all)
			return
		}
		if test.Nulls[i] {
			out.AppendNull()
			return
		}
		sawNull := false
		for r := 0; r < s.rows.Len(); r++ {
			if s.rows.Nulls[r] {
				sawNull = true
				continue
			}
			if holds(s.sq.Op, compareAt(test, i, s.rows, r)) != all {
				out.AppendBool(!all)
				return
			}
		}
		if sawNull {
			out.AppendNull()
		} else {
			out.AppendBool(all)
		}
	}
}

// holds reports whether comparison op is true for a compareAt result c.
func holds(op plan.Op, c int) bool {
	switch op {
	case plan.OpEq:
		return c == 0
	case plan.OpNe:
		return c != 0
	case plan.OpLt:
		return c < 0
	case plan.OpLe:
		return c <= 0
	case plan.OpGt:
		return c > 0
	}
	return c >= 0
}

// compileParam returns the value of a Param of the subquery being built:
// Build runs while that subquery's argument values are the top frame.
func (e *Env) compileParam(x *plan.Param) (evaluator, error) {
	if len(e.params) == 0 || x.Idx >= len(e.params[len(e.params)-1]) {
		return nil, pgerror.AssertionFailedf("parameter $%d outside its subquery", x.Idx+1)
	}
	v := e.params[len(e.params)-1][x.Idx]
	ce := &constEval{out: types.NewVec(x.Typ, types.BatchSize), val: types.NewVec(x.Typ, 1)}
	ce.val.AppendFrom(v, 0)
	return ce, nil
}
