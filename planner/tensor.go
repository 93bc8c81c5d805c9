package planner

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// PlanCopyTo returns the physical plan of COPY ... TO STDOUT: its query
// optimized and, for a tensor stream (FORMAT tensor), how the stream reads
// its rows (tensorStream).
func PlanCopyTo(n *plan.CopyTo) *plan.CopyTo {
	c := *n
	c.Query = Optimize(n.Query)
	if c.Options.Format == plan.CopyTensor {
		tensorStream(&c)
	}
	return &c
}

// tensorStream chooses how the tensor stream n reads its rows and records
// it in n.Stream (docs/tensor-stream.md, "Order, shuffle and shards"). A
// query ordered by random() becomes an exact shuffle of its scan
// (randomOrder); an in-order plain scan gives up its LIMIT to the stream
// (plainLimit). A plain scan is then read by row id when it is exactly
// shuffled, by row groups when it is shuffled, sharded, versioned, resumed,
// offset or filtered (readsRowGroups), and otherwise through its
// operators, its scan borrowing the chunks' memory. Any other query runs
// through its operators, the stream sharding and shuffling its rows.
func tensorStream(n *plan.CopyTo) {
	t := &n.Options.Tensor
	s := &plan.TensorStream{Read: plan.ReadQuery}
	n.Stream = s
	if q, lim, ok := randomOrder(n.Query, *t); ok {
		n.Query = q
		t.Shuffle = plan.ShuffleExact
		s.RandomOrder = true
		if lim != nil {
			s.Limit, s.Offset = lim.Count, lim.Offset
			s.Global = t.World > 1
		}
	} else if lim := plainLimit(n.Query, *t); lim != nil {
		n.Query = lim.Input
		s.Limit, s.Offset = lim.Count, lim.Offset
	}
	if s.Scan = plainScan(n.Query); s.Scan == nil {
		return
	}
	switch {
	case t.Shuffle == plan.ShuffleExact:
		s.Read = plan.ReadByRowID
	case readsRowGroups(s.Scan, *t, s.Offset):
		s.Read = plan.ReadRowGroups
	}
	if s.Read == plan.ReadQuery {
		n.Query = borrowingQuery(n.Query, s.Scan, *t)
		s.Scan = plainScan(n.Query)
	} else {
		s.Hollow = hollowCols(n.Query, s.Scan)
		s.IDScan = s.Scan
		if narrow, ok := narrowScan(s.Scan); ok {
			s.IDScan = narrow
		}
	}
}

// randomOrder returns the query of a tensor stream of
//
//	SELECT exprs FROM table [WHERE ...] ORDER BY random() [LIMIT n] [OFFSET m]
//
// (exprs computed from each row alone: plan.RowWise) without its sort: the
// stream sends the same columns and rows as an exact shuffle (SHUFFLE
// 'exact'), which holds 8 bytes of row id per row where the sort would
// hold every row. Both give a uniformly random order. The shuffle's seed
// is the stream's SEED when the statement names one, so that the order can
// be repeated and resumed with START_BATCH; otherwise the permutation's
// generator is seeded for the statement, as random() draws its values.
// Sharded, the rows are split among the shards by row group before they
// are shuffled, in SEED's order (the default seed's without one), so N
// shards read disjoint rows even though each draws its own order. A LIMIT
// or OFFSET (lim) applies to the stream. Sharded, a LIMIT counts the rows
// of all the shards: with SEED each shard draws the unsharded stream's
// permutation and takes its rows of the LIMIT by position
// (TensorStream.Global); without SEED the shards could not agree, and the
// query keeps its sort.
//
// ok is false when q is not such a query.
func randomOrder(q plan.Node, t plan.TensorOptions) (rq plan.Node, lim *plan.Limit, ok bool) {
	// Project(visible columns) over [Limit over] Sort over Project(columns,
	// random()) over Scan.
	outer, ok := q.(*plan.Project)
	if !ok {
		return nil, nil, false
	}
	under := outer.Input
	lim, _ = under.(*plan.Limit)
	if lim != nil {
		if t.World > 1 && !t.SeedSet {
			// The shards could not agree on which rows the LIMIT takes.
			return nil, nil, false
		}
		under = lim.Input
	}
	srt, ok := under.(*plan.Sort)
	if !ok || len(srt.Keys) == 0 {
		return nil, nil, false
	}
	inner, ok := srt.Input.(*plan.Project)
	if !ok {
		return nil, nil, false
	}
	scan, ok := inner.Input.(*plan.Scan)
	if !ok {
		return nil, nil, false
	}
	// The first key is random(): the keys after it never decide (ties of
	// random() do not happen), and its direction does not matter.
	key := srt.Keys[0].Col
	if call, ok := inner.Exprs[key].(*plan.Call); !ok || call.Op != plan.OpRandom {
		return nil, nil, false
	}
	exprs := make([]plan.Expr, len(outer.Exprs))
	for i, e := range outer.Exprs {
		ref, ok := e.(*plan.ColRef)
		if !ok || ref.Idx == key {
			// A computed column, or random()'s value itself, is sent.
			return nil, nil, false
		}
		if !plan.RowWise(inner.Exprs[ref.Idx]) {
			return nil, nil, false
		}
		exprs[i] = inner.Exprs[ref.Idx]
	}
	return &plan.Project{Input: scan, Exprs: exprs, Names: outer.Names}, lim, true
}

// plainLimit returns the LIMIT of an in-order, unsharded tensor stream of
// a plain scan (see plainScan)
//
//	SELECT exprs FROM table [WHERE ...] LIMIT n [OFFSET m]
//
// which the stream takes off the query: the stream of the same scan then
// sends its rows [offset, offset+limit). It skips the OFFSET's rows as it
// skips START_BATCH's, by row groups and within a group by row range,
// without reading them; a LIMIT ends it. nil when q is not such a query.
func plainLimit(q plan.Node, t plan.TensorOptions) *plan.Limit {
	if t.Shuffle != plan.ShuffleNone || t.World != 1 {
		return nil
	}
	lim, ok := q.(*plan.Limit)
	if !ok || plainScan(lim.Input) == nil {
		return nil
	}
	return lim
}

// readsRowGroups reports whether a tensor stream of plain scan scan with
// options t (and OFFSET offset, nil for none) reads the scan row group by
// row group: when it is shuffled, sharded, versioned or resumed, when it
// skips an OFFSET's rows, or under a WHERE, which is evaluated group by
// group and may find a group's passing rows first (late
// materialization) unless a primary key lookup answers it. Otherwise the
// stream is the query's rows in order, all of them, and the plain scan
// reads each chunk once.
func readsRowGroups(scan *plan.Scan, t plan.TensorOptions, offset plan.Expr) bool {
	inOrder := t.Shuffle == plan.ShuffleNone && t.World == 1 && t.Version == 0 && t.VersionRef == "" &&
		t.StartBatch == 0 && !mayBePositive(offset)
	return !inOrder || scan.Filter != nil && !storage.PKLookup(scan.Table, scan.ZonePreds())
}

// mayBePositive reports whether e (nil: none) may be a positive count: an
// OFFSET that is a parameter, or an expression, is evaluated only as the
// stream starts.
func mayBePositive(e plan.Expr) bool {
	c, ok := e.(*plan.Const)
	if e == nil || ok && c.Param == nil && (c.Null || c.Val != nil && c.Val.Type.Phys() == types.PhysInt && c.Val.Ints[0] <= 0) {
		return false
	}
	return true
}

// plainScan returns the scan under q when q is a scan of one table,
// possibly under a projection of expressions over its rows alone
// (plan.RowWise: columns, casts, ARRAY[...], arithmetic); nil otherwise.
func plainScan(q plan.Node) *plan.Scan {
	if p, ok := q.(*plan.Project); ok {
		for _, e := range p.Exprs {
			if !plan.RowWise(e) {
				return nil
			}
		}
		q = p.Input
	}
	scan, _ := q.(*plan.Scan)
	return scan
}

// borrowingQuery returns q, an in-order tensor stream's plain scan (scan
// under q) of a table's columns, with its scan borrowing the chunks'
// memory: the stream only reads the values, and sends runs of them as
// they lie. Through shared memory the scan leaves the columns hollowCols
// finds for the stream to read straight into its frames. A scan with a
// filter is left as it is.
func borrowingQuery(q plan.Node, scan *plan.Scan, t plan.TensorOptions) plan.Node {
	if scan.Filter != nil {
		return q
	}
	b := *scan
	b.Borrow = true
	if t.SharedMemory > 0 && t.Shuffle == plan.ShuffleNone && t.World == 1 {
		b.Hollow = hollowCols(q, scan)
	}
	if p, ok := q.(*plan.Project); ok {
		pc := *p
		pc.Input = &b
		return &pc
	}
	return &b
}

// hollowCols returns the table columns of scan (under query q) that a
// tensor stream through shared memory, or a shuffled one, may read
// straight into its frames (storage.ScanOptions.Hollow): fixed-width
// vectors and tensors that the query's projection, if any, passes on as
// they are and uses in no expression.
func hollowCols(q plan.Node, scan *plan.Scan) []int {
	passed := make([]bool, len(scan.Cols))
	used := make([]bool, len(scan.Cols))
	if p, ok := q.(*plan.Project); ok {
		for _, e := range p.Exprs {
			if r, ok := e.(*plan.ColRef); ok {
				passed[r.Idx] = true
				continue
			}
			markUsed(e, used)
		}
	} else {
		for j := range passed {
			passed[j] = true
		}
	}
	var cols []int
	for j, c := range scan.Cols {
		if !passed[j] || used[j] || c >= len(scan.Table.Columns) {
			continue
		}
		t := scan.Table.Columns[c].Type
		if (t.Kind == types.Tensor || t.IsVector() && t.Width > 0) && !t.Ragged() {
			cols = append(cols, c)
		}
	}
	return cols
}

// narrowScan returns a scan of n's table that reads only the columns n's
// filter refers to, with the filter rewritten onto them: the rows it
// returns are n's, with fewer columns read. ok is false when the filter
// holds an expression it does not know how to rewrite.
func narrowScan(n *plan.Scan) (narrow *plan.Scan, ok bool) {
	idx := make(map[int]int) // n's output column → narrow's
	var cols []int
	var remap func(e plan.Expr) plan.Expr
	all := func(es []plan.Expr) []plan.Expr {
		out := make([]plan.Expr, len(es))
		for i, e := range es {
			if out[i] = remap(e); out[i] == nil {
				return nil
			}
		}
		return out
	}
	remap = func(e plan.Expr) plan.Expr {
		switch e := e.(type) {
		case *plan.ColRef:
			k, seen := idx[e.Idx]
			if !seen {
				k = len(cols)
				idx[e.Idx] = k
				cols = append(cols, n.Cols[e.Idx])
			}
			c := *e
			c.Idx = k
			return &c
		case *plan.Const:
			return e
		case *plan.Call:
			c := *e
			if c.Args = all(e.Args); c.Args == nil && len(e.Args) > 0 {
				return nil
			}
			return &c
		case *plan.Func:
			c := *e
			if c.Args = all(e.Args); c.Args == nil && len(e.Args) > 0 {
				return nil
			}
			return &c
		case *plan.Cast:
			c := *e
			if c.X = remap(e.X); c.X == nil {
				return nil
			}
			return &c
		case *plan.Case:
			c := *e
			c.Whens = make([]plan.When, len(e.Whens))
			for i, w := range e.Whens {
				if c.Whens[i].Cond, c.Whens[i].Result = remap(w.Cond), remap(w.Result); c.Whens[i].Cond == nil || c.Whens[i].Result == nil {
					return nil
				}
			}
			if e.Else != nil {
				if c.Else = remap(e.Else); c.Else == nil {
					return nil
				}
			}
			return &c
		}
		return nil // subqueries, parameters: left to the full scan
	}
	if n.Filter == nil {
		return &plan.Scan{Table: n.Table}, true
	}
	f := remap(n.Filter)
	if f == nil {
		return nil, false
	}
	return &plan.Scan{Table: n.Table, Cols: cols, Filter: f}, true
}
