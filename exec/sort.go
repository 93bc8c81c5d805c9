package exec

import (
	"os"
	"sort"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// sortOp materializes its input and emits it ordered by keys. Past its
// memory budget (Env.spillBudget) it writes sorted runs to a temporary file and
// merges them (sort_spill.go). Under a LIMIT (plan.Sort.TopK) it emits only
// the first keep rows: it holds them in a bounded heap (sort_topk.go)
// while they are few and fit its budget, else it sorts as usual, holding
// about twice as many (see trim).
type sortOp struct {
	env  *Env
	in   Operator
	keys []plan.SortKey
	cols []plan.Column
	all  *types.Batch
	perm []int
	pos  int
	out  *types.Batch
	// runs holds the sorted runs once the rows outgrow the budget; merge
	// reads them back in order.
	runs  *sortRuns
	merge *runHeap
	// merged counts the rows the merge emitted.
	merged int64
	// tempFile makes the runs' file (nil: the rows stay in memory).
	tempFile func() (*os.File, error)
	// keep, when bounded, is the number of first rows the sort emits.
	keep    int64
	bounded bool
	spare   *types.Batch
	// acc holds what the rows take (their vectors' capacity).
	acc *MemAccount
}

// newSort returns the operator of n, its top-k bound evaluated.
func newSort(env *Env, n *plan.Sort) (Operator, error) {
	s := &sortOp{env: env, keys: n.Keys, cols: n.Columns()}
	if n.TopK != nil {
		count, offset, err := limitValues(env, n.TopK.Count, n.TopK.Offset)
		if err != nil {
			return nil, err
		}
		if count >= 0 && count <= 1<<30 && offset <= 1<<30 {
			s.keep, s.bounded = count+offset, true
		}
	}
	var err error
	if s.in, err = Build(env, n.Input); err != nil {
		return nil, err
	}
	return s, nil
}

// types returns the types of the sorted rows' columns.
func (s *sortOp) types() []types.Type {
	ts := make([]types.Type, len(s.cols))
	for i, c := range s.cols {
		ts[i] = c.Type
	}
	return ts
}

func (s *sortOp) load() error {
	ts := s.types()
	budget := s.env.spillBudget()
	s.tempFile = s.env.tempFile("sort-*")
	s.acc = s.env.account("a sort")
	var top *topKHeap
	if s.bounded && s.keep <= maxHeapRows {
		top = newTopKHeap(s.keys, ts, int(s.keep))
	} else {
		s.all = types.NewBatch(ts, types.BatchSize)
	}
	n := 0
	err := Drain(s.in, func(b *types.Batch) error {
		if top != nil {
			top.add(b)
			err := s.acc.Resize(top.bytes())
			if err == nil && heldBytes(top.rows) <= budget {
				return s.env.canceled()
			}
			// Past work_mem, or when the server's memory is short, the
			// rows held go on to the sort, which can spill them.
			s.all = top.inOrder()
			top = nil
			n = s.all.Len()
		} else {
			for i, c := range b.Cols {
				s.all.Cols[i].AppendVec(c)
			}
			n += b.Len()
			s.all.SetLen(n)
		}
		if s.bounded && int64(n) >= 2*s.keep+types.BatchSize {
			if err := s.trim(); err != nil {
				return err
			}
			n = s.all.Len()
		}
		// Past work_mem, or when the server's memory is short, the rows
		// go to a sorted run on disk.
		err := s.acc.Resize(batchBytes(s.all) + batchBytes(s.spare) + 8*int64(cap(s.perm)))
		if s.tempFile != nil && (err != nil || heldBytes(s.all) > budget) {
			if err := s.spillRun(); err != nil {
				return err
			}
			n = 0
			err = s.acc.Resize(batchBytes(s.all) + batchBytes(s.spare) + 8*int64(cap(s.perm)))
		}
		if err != nil {
			return err
		}
		return s.env.canceled()
	})
	if err != nil {
		return err
	}
	s.out = types.NewBatch(ts, types.BatchSize)
	if top != nil {
		s.all, s.perm = top.sorted(s.perm)
		return s.acc.Resize(top.bytes() + 8*int64(cap(s.perm)))
	}
	if s.runs != nil {
		if err := s.startMerge(ts); err != nil {
			return err
		}
		s.spare = nil
		// The merge holds a read buffer and a block of rows per run.
		return s.acc.Resize(int64(len(s.merge.runs)) * (256<<10 + runBlock*64))
	}
	if err := s.sortAll(); err != nil {
		return err
	}
	if s.bounded && int64(len(s.perm)) > s.keep {
		s.perm = s.perm[:s.keep]
	}
	return s.acc.Resize(batchBytes(s.all) + batchBytes(s.spare) + 8*int64(cap(s.perm)))
}

// trim sorts the rows held and keeps the first s.keep of them, in order:
// a row past them can never be among the rows the LIMIT takes. Rows of
// equal keys keep their input order, as in the full sort.
func (s *sortOp) trim() error {
	if err := s.sortAll(); err != nil {
		return err
	}
	if s.spare == nil {
		s.spare = types.NewBatch(s.types(), int(s.keep))
	}
	s.spare.Reset()
	for _, r := range s.perm[:s.keep] {
		for i, c := range s.all.Cols {
			s.spare.Cols[i].AppendFrom(c, r)
		}
	}
	s.spare.SetLen(int(s.keep))
	s.all, s.spare = s.spare, s.all
	return nil
}

// sortAll orders the rows of s.all: s.perm lists them in order.
func (s *sortOp) sortAll() error {
	n := s.all.Len()
	s.perm = s.perm[:0]
	for i := range n {
		s.perm = append(s.perm, i)
	}
	// NB: a cancel seen during the sort makes every comparison false, so
	// the sort finishes at once and the statement fails.
	calls, canceled := 0, false
	sort.SliceStable(s.perm, func(x, y int) bool {
		if calls++; calls%4096 == 0 && !canceled {
			canceled = s.env.canceled() != nil
		}
		return !canceled && s.lessRows(s.all, s.perm[x], s.all, s.perm[y])
	})
	if canceled {
		return s.env.canceled()
	}
	return nil
}

// lessRows reports whether row i of a sorts before row j of b.
func (s *sortOp) lessRows(a *types.Batch, i int, b *types.Batch, j int) bool {
	return compareKeys(s.keys, a, i, b, j) < 0
}

// compareKeys orders row i of a and row j of b by keys: -1 when i sorts
// first, 1 when j does, 0 when they are equal in every key.
func compareKeys(keys []plan.SortKey, a *types.Batch, i int, b *types.Batch, j int) int {
	for _, k := range keys {
		v, w := a.Cols[k.Col], b.Cols[k.Col]
		ni, nj := v.Nulls[i], w.Nulls[j]
		if ni || nj {
			switch {
			case ni && nj:
				continue
			case ni == k.NullsFirst:
				// i is NULL and NULLs come first, or j is NULL and
				// they come last.
				return -1
			}
			return 1
		}
		c := compareAt(v, i, w, j)
		if c == 0 {
			continue
		}
		if k.Desc {
			return -c
		}
		return c
	}
	return 0
}

func (s *sortOp) Next() (*types.Batch, error) {
	if s.bounded && s.keep == 0 {
		// LIMIT 0: no row is needed, nor read.
		return nil, nil
	}
	if s.all == nil && s.merge == nil {
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	if s.merge != nil {
		return s.nextMerged()
	}
	if s.pos >= len(s.perm) {
		return nil, nil
	}
	s.out.Reset()
	end := min(s.pos+types.BatchSize, len(s.perm))
	for _, r := range s.perm[s.pos:end] {
		for i, c := range s.all.Cols {
			s.out.Cols[i].AppendFrom(c, r)
		}
	}
	s.out.SetLen(end - s.pos)
	s.pos = end
	return s.out, nil
}

func (s *sortOp) Close() {
	s.in.Close()
	s.acc.Close()
	if s.runs != nil {
		s.runs.f.Close()
		s.runs = nil
	}
}

// limitOp skips offset rows and stops after count rows.
type limitOp struct {
	in            Operator
	offset, count int64 // count < 0: no limit
	sub           gatherer
	rows          []int
}

func newLimit(env *Env, n *plan.Limit) (Operator, error) {
	l := &limitOp{}
	var err error
	if l.count, l.offset, err = limitValues(env, n.Count, n.Offset); err != nil {
		return nil, err
	}
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	l.in = in
	return l, nil
}

// limitValues evaluates a LIMIT's count (nil or NULL: -1, none) and
// offset, with PostgreSQL's errors for negative values.
func limitValues(env *Env, countExpr, offsetExpr plan.Expr) (count, offset int64, err error) {
	eval := func(e plan.Expr, what string, code pgerror.Code) (int64, error) {
		v, err := env.foldConst(e)
		if err != nil {
			return 0, err
		}
		if v.Nulls[0] {
			return -1, nil
		}
		if v.Ints[0] < 0 {
			return 0, pgerror.Newf(code, "%s must not be negative", what)
		}
		return v.Ints[0], nil
	}
	count = -1
	if countExpr != nil {
		if count, err = eval(countExpr, "LIMIT", "2201W"); err != nil {
			return 0, 0, err
		}
	}
	if offsetExpr != nil {
		if offset, err = eval(offsetExpr, "OFFSET", "2201X"); err != nil {
			return 0, 0, err
		}
		offset = max(offset, 0)
	}
	return count, offset, nil
}

func (l *limitOp) Next() (*types.Batch, error) {
	for {
		if l.count == 0 {
			return nil, nil
		}
		b, err := l.in.Next()
		if err != nil || b == nil {
			return nil, err
		}
		n := int64(b.Len())
		if l.offset >= n {
			l.offset -= n
			continue
		}
		start, end := l.offset, n
		l.offset = 0
		if l.count >= 0 && end-start > l.count {
			end = start + l.count
		}
		if l.count >= 0 {
			l.count -= end - start
		}
		if start == 0 && end == n {
			return b, nil
		}
		l.rows = l.rows[:0]
		for i := start; i < end; i++ {
			l.rows = append(l.rows, int(i))
		}
		return l.sub.gather(b, l.rows), nil
	}
}

func (l *limitOp) Close() { l.in.Close() }
