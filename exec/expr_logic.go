package exec

import (
	"bytes"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// logicEval evaluates AND/OR with SQL's three-valued logic. Later arguments
// are evaluated only on rows the earlier ones left undecided, so
// `x <> 0 AND 10 / x > 1` never divides by zero.
type logicEval struct {
	and   bool
	args  []evaluator
	out   *types.Vec
	state []int8 // per row: 0 undecided-true-so-far, 1 decided, 2 saw NULL
	rows  []int
	sub   gatherer
}

func (e *Env) compileLogic(x *plan.Call) (evaluator, error) {
	l := &logicEval{and: x.Op == plan.OpAnd, out: types.NewVec(types.TypBool, types.BatchSize)}
	for _, a := range x.Args {
		ae, err := e.compile(a)
		if err != nil {
			return nil, err
		}
		l.args = append(l.args, ae)
	}
	return l, nil
}

func (l *logicEval) eval(b *types.Batch) (*types.Vec, error) {
	n := b.Len()
	l.state = l.state[:0]
	for i := 0; i < n; i++ {
		l.state = append(l.state, 0)
	}
	decided := !l.and // AND is decided by a false, OR by a true
	for ai, a := range l.args {
		l.rows = l.rows[:0]
		for i := 0; i < n; i++ {
			if l.state[i] != 1 {
				l.rows = append(l.rows, i)
			}
		}
		if len(l.rows) == 0 {
			break
		}
		var v *types.Vec
		var err error
		if len(l.rows) == n || ai == 0 {
			v, err = a.eval(b)
		} else {
			v, err = a.eval(l.sub.gather(b, l.rows))
		}
		if err != nil {
			return nil, err
		}
		for j, i := range l.rows {
			k := j
			if len(l.rows) == n || ai == 0 {
				k = i
			}
			switch {
			case v.Nulls[k]:
				l.state[i] = 2
			case v.Bools[k] == decided:
				l.state[i] = 1
			}
		}
	}
	out := l.out
	out.Reset()
	for i := 0; i < n; i++ {
		switch l.state[i] {
		case 1:
			out.AppendBool(decided)
		case 2:
			out.AppendNull()
		default:
			out.AppendBool(!decided)
		}
	}
	return out, nil
}

// gatherer copies chosen rows of a batch into a reused batch.
type gatherer struct{ b types.Batch }

func (g *gatherer) gather(src *types.Batch, rows []int) *types.Batch {
	if len(g.b.Cols) != len(src.Cols) {
		g.b.Cols = make([]*types.Vec, len(src.Cols))
		for i, c := range src.Cols {
			g.b.Cols[i] = types.NewVec(c.Type, len(rows))
		}
	}
	for i, c := range src.Cols {
		d := g.b.Cols[i]
		d.SetType(c.Type)
		for _, r := range rows {
			d.AppendFrom(c, r)
		}
	}
	g.b.SetLen(len(rows))
	return &g.b
}

// caseEval evaluates each THEN only on the rows that take it.
type caseEval struct {
	conds   []evaluator
	results []evaluator
	els     evaluator
	out     *types.Vec
	taken   []int // per row: arm index, len(conds) for ELSE
	rows    []int
	sub     gatherer
	parts   []*types.Vec
	pos     []int
}

func (e *Env) compileCase(x *plan.Case) (evaluator, error) {
	c := &caseEval{out: types.NewVec(x.Typ, types.BatchSize)}
	for _, w := range x.Whens {
		ce, err := e.compile(w.Cond)
		if err != nil {
			return nil, err
		}
		re, err := e.compile(w.Result)
		if err != nil {
			return nil, err
		}
		c.conds = append(c.conds, ce)
		c.results = append(c.results, re)
	}
	if x.Else != nil {
		el, err := e.compile(x.Else)
		if err != nil {
			return nil, err
		}
		c.els = el
	}
	return c, nil
}

func (c *caseEval) eval(b *types.Batch) (*types.Vec, error) {
	n := b.Len()
	arms := len(c.conds)
	c.taken = c.taken[:0]
	for i := 0; i < n; i++ {
		c.taken = append(c.taken, -1)
	}
	for k, cond := range c.conds {
		c.rows = c.rows[:0]
		for i := 0; i < n; i++ {
			if c.taken[i] < 0 {
				c.rows = append(c.rows, i)
			}
		}
		if len(c.rows) == 0 {
			break
		}
		v, err := cond.eval(c.sub.gather(b, c.rows))
		if err != nil {
			return nil, err
		}
		for j, i := range c.rows {
			if !v.Nulls[j] && v.Bools[j] {
				c.taken[i] = k
			}
		}
	}
	for i := range c.taken {
		if c.taken[i] < 0 {
			c.taken[i] = arms
		}
	}
	// Evaluate each arm on its rows, then interleave.
	c.parts = c.parts[:0]
	for k := 0; k <= arms; k++ {
		c.rows = c.rows[:0]
		for i := 0; i < n; i++ {
			if c.taken[i] == k {
				c.rows = append(c.rows, i)
			}
		}
		ev := c.els
		if k < arms {
			ev = c.results[k]
		}
		if len(c.rows) == 0 || ev == nil {
			c.parts = append(c.parts, nil)
			continue
		}
		v, err := ev.eval(c.sub.gather(b, c.rows))
		if err != nil {
			return nil, err
		}
		cp := types.NewVec(c.out.Type, v.Len())
		cp.AppendVec(v)
		c.parts = append(c.parts, cp)
	}
	c.pos = c.pos[:0]
	for k := 0; k <= arms; k++ {
		c.pos = append(c.pos, 0)
	}
	out := c.out
	out.Reset()
	for i := 0; i < n; i++ {
		k := c.taken[i]
		p := c.parts[k]
		if p == nil {
			out.AppendNull()
			continue
		}
		out.AppendFrom(p, c.pos[k])
		c.pos[k]++
	}
	return out, nil
}

// likeMatcher implements LIKE and ILIKE with % and _ and backslash escapes.
type likeMatcher struct {
	fold bool
	a, p []byte
}

func (m *likeMatcher) match(s, pat []byte) (bool, error) {
	if m.fold {
		m.a = append(m.a[:0], bytes.ToLower(s)...)
		m.p = append(m.p[:0], bytes.ToLower(pat)...)
		s, pat = m.a, m.p
	}
	return likeMatch(s, pat)
}

func likeMatch(s, p []byte) (bool, error) {
	for len(p) > 0 {
		switch p[0] {
		case '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true, nil
			}
			for i := 0; i <= len(s); {
				ok, err := likeMatch(s[i:], p)
				if err != nil || ok {
					return ok, err
				}
				if i == len(s) {
					break
				}
				_, sz := utf8.DecodeRune(s[i:])
				i += sz
			}
			return false, nil
		case '_':
			if len(s) == 0 {
				return false, nil
			}
			_, sz := utf8.DecodeRune(s)
			s, p = s[sz:], p[1:]
		case '\\':
			if len(p) < 2 {
				return false, pgerror.New(pgerror.Code("22025"), "LIKE pattern must not end with escape character")
			}
			if len(s) == 0 || s[0] != p[1] {
				return false, nil
			}
			s, p = s[1:], p[2:]
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false, nil
			}
			s, p = s[1:], p[1:]
		}
	}
	return len(s) == 0, nil
}
