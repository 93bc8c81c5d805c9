package exec

import (
	"os"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// copyBatches drains op and returns copies of its batches, which op
// reuses.
func copyBatches(t *testing.T, op Operator) (out []*types.Batch) {
	t.Helper()
	err := Drain(op, func(b *types.Batch) error {
		ts := make([]types.Type, len(b.Cols))
		for i, c := range b.Cols {
			ts[i] = c.Type
		}
		c := types.NewBatch(ts, b.Len())
		for i, v := range b.Cols {
			for r := range b.Len() {
				c.Cols[i].AppendFrom(v, r)
			}
		}
		c.SetLen(b.Len())
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTwoPhaseAggregate: partial aggregates over three shares of the
// input, each past its budget many times (handing on what it holds and
// starting again), and a final aggregate over what they hand on (which
// spills) give the rows of one aggregate over all of it. Without GROUP
// BY, partials of no rows hand on nothing and the final aggregate still
// answers one row.
func TestTwoPhaseAggregate(t *testing.T) {
	defer func(b int64) { spillMin = b }(spillMin)
	cols, in := aggInput(40000)
	ref := func(i int) plan.Expr { return &plan.ColRef{Idx: i, Typ: cols[i].Type, Name: cols[i].Name} }
	aggs := []plan.AggCall{
		{Func: plan.AggCountStar, Typ: types.TypInt8, Name: "count"},
		{Func: plan.AggCount, Arg: ref(2), Typ: types.TypInt8, Name: "count"},
		{Func: plan.AggSum, Arg: ref(2), Typ: types.TypNumeric, Name: "sum"},
		{Func: plan.AggAvg, Arg: ref(2), Typ: types.TypNumeric, Name: "avg"},
		{Func: plan.AggMin, Arg: ref(2), Typ: types.TypInt8, Name: "min"},
		{Func: plan.AggMax, Arg: ref(3), Typ: types.TypText, Name: "max"},
	}
	env := &Env{TempFile: func(pattern string) (*os.File, error) { return os.CreateTemp(t.TempDir(), pattern) }}
	run := func(n *plan.Aggregate, bs []*types.Batch) Operator {
		op, err := newAggregate(env, n)
		if err != nil {
			t.Fatal(err)
		}
		op.(*aggregateOp).in = &sliceOp{bs: bs}
		return op
	}
	for _, keys := range [][]plan.Expr{{ref(0), ref(1)}, nil} {
		single := &plan.Aggregate{Input: &plan.Values{Cols: cols}, GroupBy: keys, Aggs: aggs}
		spillMin = 1 << 40
		op := run(single, in)
		want := sortedRowText(t, op)
		op.Close()
		held := 0 // batches handed on by partials that hold every group
		for _, budget := range []int64{1 << 40, 16 << 10} {
			spillMin = budget
			partial := *single
			partial.Phase = plan.AggPartial
			var handed []*types.Batch
			for w := range 3 {
				var share []*types.Batch
				for i := w; i < len(in); i += 3 {
					share = append(share, in[i])
				}
				op := run(&partial, share)
				handed = append(handed, copyBatches(t, op)...)
				op.Close()
			}
			rows := 0
			for _, b := range handed {
				rows += b.Len()
			}
			if budget == 1<<40 {
				held = len(handed)
			} else if len(keys) > 0 && (len(handed) < len(in) || len(handed) <= held) {
				// Each batch of input passes the budget: its groups go on.
				t.Errorf("budget %d: the partials handed on %d batches (%d rows) for %d of input, %d when they hold every group", budget, len(handed), rows, len(in), held)
			}
			final := plan.FinalAggregate(&partial, &plan.Values{Cols: partial.Columns()})
			op := run(final, handed)
			got := sortedRowText(t, op)
			op.Close()
			if !slices.Equal(got, want) {
				t.Fatalf("keys %d, budget %d: %d rows differ from the %d of one aggregate\n%v\n%v", len(keys), budget, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
		}
	}
	// No rows, no GROUP BY.
	partial := &plan.Aggregate{Input: &plan.Values{Cols: cols}, Aggs: aggs, Phase: plan.AggPartial}
	op := run(partial, nil)
	if handed := copyBatches(t, op); len(handed) != 0 {
		t.Fatalf("a partial aggregate of no rows handed on %d batches", len(handed))
	}
	op.Close()
	op = run(plan.FinalAggregate(partial, &plan.Values{Cols: partial.Columns()}), nil)
	if got := sortedRowText(t, op); !slices.Equal(got, []string{"0|0|NULL|NULL|NULL|NULL|"}) {
		t.Fatalf("final aggregate of nothing: %q", got)
	}
	op.Close()
}
