package exec

import (
	"math/rand/v2"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
)

// randomOrder rewrites a tensor stream of
//
//	SELECT exprs FROM table [WHERE ...] ORDER BY random() [LIMIT n] [OFFSET m]
//
// (exprs computed from each row alone: plan.RowWise) into the exact shuffle
// of the same columns and rows (SHUFFLE 'exact'),
// which holds 8 bytes of row id per row where the sort would hold every row.
// Both give a uniformly random order. The shuffle's seed is the stream's
// SEED when the statement names one, so that the order can be repeated and
// resumed with START_BATCH; otherwise the permutation's generator (rng) is
// seeded for the statement, as random() draws its values. Sharded, the
// rows are split among the shards by row group before they are shuffled,
// in SEED's order (the default seed's without one), so N shards read disjoint
// rows even though each draws its own order. A LIMIT or OFFSET applies to
// the stream (limit, offset; limit -1 for none). Sharded, a LIMIT counts
// the rows of all the shards: with SEED each shard draws the unsharded
// stream's permutation and takes its rows of the LIMIT by position
// (global); without SEED the shards could not agree, and the query is left
// as it is.
//
// It returns nil when n is not such a stream.
func randomOrder(env *Env, n *plan.CopyTo) (rn *plan.CopyTo, rng *rand.Rand, limit, offset int64, global bool, err error) {
	t := n.Options.Tensor
	if n.Options.Format != plan.CopyTensor || env.Txn == nil {
		return nil, nil, 0, 0, false, nil
	}
	// Project(visible columns) over [Limit over] Sort over Project(columns,
	// random()) over Scan.
	outer, ok := n.Query.(*plan.Project)
	if !ok {
		return nil, nil, 0, 0, false, nil
	}
	under := outer.Input
	lim, _ := under.(*plan.Limit)
	if lim != nil {
		if t.World > 1 && !t.SeedSet {
			// The shards could not agree on which rows the LIMIT takes.
			return nil, nil, 0, 0, false, nil
		}
		global = t.World > 1
		under = lim.Input
	}
	srt, ok := under.(*plan.Sort)
	if !ok || len(srt.Keys) == 0 {
		return nil, nil, 0, 0, false, nil
	}
	inner, ok := srt.Input.(*plan.Project)
	if !ok {
		return nil, nil, 0, 0, false, nil
	}
	scan, ok := inner.Input.(*plan.Scan)
	if !ok {
		return nil, nil, 0, 0, false, nil
	}
	// The first key is random(): the keys after it never decide (ties of
	// random() do not happen), and its direction does not matter.
	key := srt.Keys[0].Col
	if call, ok := inner.Exprs[key].(*plan.Call); !ok || call.Op != plan.OpRandom {
		return nil, nil, 0, 0, false, nil
	}
	exprs := make([]plan.Expr, len(outer.Exprs))
	for i, e := range outer.Exprs {
		ref, ok := e.(*plan.ColRef)
		if !ok || ref.Idx == key {
			// A computed column, or random()'s value itself, is sent.
			return nil, nil, 0, 0, false, nil
		}
		if !plan.RowWise(inner.Exprs[ref.Idx]) {
			return nil, nil, 0, 0, false, nil
		}
		exprs[i] = inner.Exprs[ref.Idx]
	}
	limit = -1
	if lim != nil {
		if limit, offset, err = limitValues(env, lim); err != nil {
			return nil, nil, 0, 0, false, err
		}
	}
	c := *n
	c.Query = &plan.Project{Input: scan, Exprs: exprs, Names: outer.Names}
	c.Options.Tensor.Shuffle = plan.ShuffleExact
	if !t.SeedSet {
		r := env.rng()
		rng = rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	}
	return &c, rng, limit, offset, global, nil
}

// plainLimit rewrites an in-order, unsharded tensor stream of a plain scan
// (see plainScan)
//
//	SELECT exprs FROM table [WHERE ...] LIMIT n [OFFSET m]
//
// into the stream of the same scan without the LIMIT (rn), whose rows
// [offset, offset+limit) are sent (limit -1: all from offset). The stream
// then skips the OFFSET's rows as it skips START_BATCH's, by row groups and
// within a group by row range, without reading them; a LIMIT ends it. It
// returns nil when n is not such a stream.
func plainLimit(env *Env, n *plan.CopyTo) (rn *plan.CopyTo, limit, offset int64, err error) {
	t := n.Options.Tensor
	if n.Options.Format != plan.CopyTensor || env.Txn == nil || t.Shuffle != plan.ShuffleNone || t.World != 1 {
		return nil, 0, 0, nil
	}
	lim, ok := n.Query.(*plan.Limit)
	if !ok || plainScan(lim.Input) == nil {
		return nil, 0, 0, nil
	}
	if limit, offset, err = limitValues(env, lim); err != nil {
		return nil, 0, 0, err
	}
	c := *n
	c.Query = lim.Input
	return &c, limit, offset, nil
}

// limitValues evaluates a LIMIT's count (-1: none) and offset, with
// PostgreSQL's errors for negative values.
func limitValues(env *Env, n *plan.Limit) (count, offset int64, err error) {
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
	if n.Count != nil {
		if count, err = eval(n.Count, "LIMIT", "2201W"); err != nil {
			return 0, 0, err
		}
	}
	if n.Offset != nil {
		if offset, err = eval(n.Offset, "OFFSET", "2201X"); err != nil {
			return 0, 0, err
		}
		offset = max(offset, 0)
	}
	return count, offset, nil
}
