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

// setOpOp is INTERSECT or EXCEPT [ALL]: the right input's rows are counted
// by key, then left rows pass or not as they match, a batch at a time.
type setOpOp struct {
	n       *plan.SetOp
	left    Operator
	right   Operator
	counts  map[string]int
	emitted map[string]bool
	key     []byte
	rows    []int
	sub     gatherer
	built   bool
	// acc holds what the right input's keys take.
	acc      *MemAccount
	mapBytes int64
}

func newSetOp(env *Env, n *plan.SetOp) (Operator, error) {
	l, err := Build(env, n.Left)
	if err != nil {
		return nil, err
	}
	r, err := Build(env, n.Right)
	if err != nil {
		l.Close()
		return nil, err
	}
	return &setOpOp{n: n, left: l, right: r, counts: map[string]int{}, emitted: map[string]bool{}, acc: env.account("INTERSECT or EXCEPT")}, nil
}

func (s *setOpOp) rowKey(b *types.Batch, i int) []byte {
	s.key = s.key[:0]
	for _, c := range b.Cols {
		s.key = appendKey(s.key, c, i)
	}
	return s.key
}

func (s *setOpOp) Next() (*types.Batch, error) {
	if !s.built {
		s.built = true
		for {
			b, err := s.right.Next()
			if err != nil {
				return nil, err
			}
			if b == nil {
				break
			}
			for i := 0; i < b.Len(); i++ {
				k := s.rowKey(b, i)
				if _, ok := s.counts[string(k)]; !ok {
					s.mapBytes += int64(len(k)) + mapEntryBytes
				}
				s.counts[string(k)]++
			}
			if err := s.acc.Resize(s.mapBytes); err != nil {
				return nil, err
			}
		}
	}
	for {
		b, err := s.left.Next()
		if err != nil || b == nil {
			return nil, err
		}
		s.rows = s.rows[:0]
		for i := 0; i < b.Len(); i++ {
			k := s.rowKey(b, i)
			n := s.counts[string(k)]
			keep := false
			switch {
			case !s.n.Except && s.n.All:
				if keep = n > 0; keep {
					s.counts[string(k)] = n - 1
				}
			case !s.n.Except:
				keep = n > 0 && !s.emitted[string(k)]
			case s.n.All:
				if n > 0 {
					s.counts[string(k)] = n - 1
				} else {
					keep = true
				}
			default:
				keep = n == 0 && !s.emitted[string(k)]
			}
			if keep {
				if !s.n.All {
					s.emitted[string(k)] = true
				}
				s.rows = append(s.rows, i)
			}
		}
		switch len(s.rows) {
		case 0:
			continue
		case b.Len():
			return b, nil
		}
		return s.sub.gather(b, s.rows), nil
	}
}

func (s *setOpOp) Close() {
	s.acc.Close()
	s.left.Close()
	s.right.Close()
}

// recursiveUnionOp runs a WITH RECURSIVE query, streaming its rows as
// they are found: the base query's, then each iteration's over the rows
// of the one before (the working table), until an iteration finds none.
// It holds only the working table and the rows of the iteration running
// (and, for UNION, the set of rows seen), as PostgreSQL does.
type recursiveUnionOp struct {
	env  *Env
	n    *plan.RecursiveUnion
	out  *types.Batch
	seen map[string]bool
	key  []byte
	// src gives the rows that come next: the base query's, then the
	// recursive term's over work; next collects them, the working table
	// of the iteration after.
	src        Operator
	work, next *types.Batch
	started    bool
	done       bool
	// acc holds what the working table, the next one and the set of
	// rows seen take.
	acc       *MemAccount
	seenBytes int64
}

func newRecursiveUnion(env *Env, n *plan.RecursiveUnion) (Operator, error) {
	return &recursiveUnionOp{env: env, n: n, acc: env.account("a recursive query")}, nil
}

// mapEntryBytes is about what an entry of a Go map keyed by a string
// takes besides the key's bytes.
const mapEntryBytes = 48

func (r *recursiveUnionOp) start() error {
	r.started = true
	cols := r.n.Columns()
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	r.out = types.NewBatch(ts, types.BatchSize)
	r.work = types.NewBatch(ts, types.BatchSize)
	r.next = types.NewBatch(ts, types.BatchSize)
	if !r.n.All {
		r.seen = map[string]bool{}
	}
	if r.env.work == nil {
		r.env.work = map[int]*types.Batch{}
	}
	var err error
	r.src, err = Build(r.env, r.n.Base)
	return err
}

// iterate starts the next iteration over the rows the last one found; it
// reports false when there are none, and the query is done.
func (r *recursiveUnionOp) iterate() (bool, error) {
	r.src.Close()
	r.src = nil
	if r.next.Len() == 0 {
		return false, nil
	}
	r.work, r.next = r.next, r.work
	r.next.Reset()
	r.env.work[r.n.ID] = r.work
	var err error
	r.src, err = Build(r.env, r.n.Recursive)
	return err == nil, err
}

func (r *recursiveUnionOp) Next() (*types.Batch, error) {
	if r.done {
		return nil, nil
	}
	if !r.started {
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	for {
		b, err := r.src.Next()
		if err != nil {
			return nil, err
		}
		if b == nil {
			more, err := r.iterate()
			if err != nil {
				return nil, err
			}
			if !more {
				r.finish()
				return nil, nil
			}
			continue
		}
		if err := r.env.canceled(); err != nil {
			return nil, err
		}
		r.out.Reset()
		n := 0
		for i := 0; i < b.Len(); i++ {
			if !r.n.All {
				r.key = r.key[:0]
				for _, c := range b.Cols {
					r.key = appendKey(r.key, c, i)
				}
				if r.seen[string(r.key)] {
					continue
				}
				r.seen[string(r.key)] = true
				r.seenBytes += int64(len(r.key)) + mapEntryBytes
			}
			for c, v := range b.Cols {
				r.out.Cols[c].AppendFrom(v, i)
				r.next.Cols[c].AppendFrom(v, i)
			}
			n++
		}
		r.out.SetLen(n)
		r.next.SetLen(r.next.Len() + n)
		held := batchBytes(r.work) + batchBytes(r.next)
		if held > maxBuildBytes {
			return nil, tooMuchMemory("a recursive query")
		}
		if err := r.acc.Resize(held + batchBytes(r.out) + r.seenBytes); err != nil {
			return nil, err
		}
		if n > 0 {
			return r.out, nil
		}
	}
}

// finish gives back what the query held once its last row is out.
func (r *recursiveUnionOp) finish() {
	r.done = true
	delete(r.env.work, r.n.ID)
	r.work, r.next, r.seen = nil, nil, nil
	r.seenBytes = 0
	_ = r.acc.Resize(batchBytes(r.out))
}

func (r *recursiveUnionOp) Close() {
	if r.src != nil {
		r.src.Close()
		r.src = nil
	}
	if r.started && !r.done {
		delete(r.env.work, r.n.ID)
	}
	r.acc.Close()
}

// workTableOp returns the working table of the RecursiveUnion running it.
type workTableOp struct {
	b    *types.Batch
	done bool
}

func newWorkTable(env *Env, n *plan.WorkTable) (Operator, error) {
	b := env.work[n.ID]
	if b == nil {
		return nil, pgerror.AssertionFailedf("working table %d outside its recursive query", n.ID)
	}
	return &workTableOp{b: b}, nil
}

func (w *workTableOp) Next() (*types.Batch, error) {
	if w.done || w.b.Len() == 0 {
		return nil, nil
	}
	w.done = true
	return w.b, nil
}

func (w *workTableOp) Close() {}

// materializeOp reads its whole input, then returns it a batch at a time.
type materializeOp struct {
	in   Operator
	cols []plan.Column
	all  *types.Batch
	pos  int
	rows []int
	sub  gatherer
	acc  *MemAccount
}

func (m *materializeOp) Next() (*types.Batch, error) {
	if m.all == nil {
		ts := make([]types.Type, len(m.cols))
		for i, c := range m.cols {
			ts[i] = c.Type
		}
		m.all = types.NewBatch(ts, types.BatchSize)
		n := 0
		for {
			b, err := m.in.Next()
			if err != nil {
				return nil, err
			}
			if b == nil {
				break
			}
			for i, c := range b.Cols {
				m.all.Cols[i].AppendVec(c)
			}
			n += b.Len()
			if batchBytes(m.all) > maxBuildBytes {
				return nil, tooMuchMemory("INSERT ... SELECT")
			}
			if err := m.acc.Resize(batchBytes(m.all)); err != nil {
				return nil, err
			}
		}
		m.all.SetLen(n)
	}
	n := m.all.Len()
	if m.pos >= n {
		return nil, nil
	}
	end := min(m.pos+types.BatchSize, n)
	m.rows = m.rows[:0]
	for i := m.pos; i < end; i++ {
		m.rows = append(m.rows, i)
	}
	m.pos = end
	if len(m.all.Cols) == 0 {
		b := &types.Batch{}
		b.SetLen(end - m.rows[0])
		return b, nil
	}
	return m.sub.gather(m.all, m.rows), nil
}

func (m *materializeOp) Close() {
	m.in.Close()
	m.acc.Close()
}
