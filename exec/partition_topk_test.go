package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// partitionInput is rows random rows (p int4, q text, x int4, y float8,
// id int8), with NULLs in all but id and heavy ties in x, in batches of
// 500.
func partitionInput(rows int) *plan.Append {
	cols := []plan.Column{{Name: "p", Type: types.TypInt4, Ordinal: -1}, {Name: "q", Type: types.TypText, Ordinal: -1},
		{Name: "x", Type: types.TypInt4, Ordinal: -1}, {Name: "y", Type: types.TypFloat8, Ordinal: -1}, {Name: "id", Type: types.TypInt8, Ordinal: -1}}
	all := &plan.Append{}
	var vals *plan.Values
	rng := rand.New(rand.NewPCG(3, 4))
	maybeNull := func(e plan.Expr, t types.Type) plan.Expr {
		if rng.IntN(15) == 0 {
			return &plan.Const{Typ: t, Null: true}
		}
		return e
	}
	for i := range rows {
		if i%500 == 0 {
			vals = &plan.Values{Cols: cols}
			all.Inputs = append(all.Inputs, vals)
		}
		vals.Rows = append(vals.Rows, []plan.Expr{
			maybeNull(plan.IntConst(types.TypInt4, int64(rng.IntN(40))), types.TypInt4),
			maybeNull(plan.StringConst(types.TypText, fmt.Sprintf("q%d", rng.IntN(3))), types.TypText),
			maybeNull(plan.IntConst(types.TypInt4, int64(rng.IntN(12))), types.TypInt4),
			maybeNull(plan.FloatConst(float64(rng.IntN(50))/4), types.TypFloat8),
			plan.IntConst(types.TypInt8, int64(i)),
		})
	}
	return all
}

// TestPartitionTopK checks a window filtered on its ranking function
// over a PartitionTopK against the same window over every row: the same
// rows with the same values, in the same order, for row_number, rank and
// dense_rank, with and without partition and order keys; and that the
// PartitionTopK passes on exactly the rows the filter keeps, or, past a
// budget too small for them, the rest of its input after them.
func TestPartitionTopK(t *testing.T) {
	vals := partitionInput(3000)
	width := len(vals.Columns())
	run := func(n plan.Node) [][]string {
		t.Helper()
		op, err := Build(&Env{Ctx: context.Background()}, n)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		return textRows(t, op)
	}
	// passed counts the runs that passed rows on past their budget.
	passed := 0
	for _, fn := range []plan.WindowFunc{plan.WinRowNumber, plan.WinRank, plan.WinDenseRank} {
		for _, part := range [][]int{{0}, {0, 1}, nil} {
			for _, order := range [][]plan.SortKey{{{Col: 2}}, {{Col: 2, Desc: true}, {Col: 3, NullsFirst: true}}, nil} {
				if part == nil && order == nil {
					continue
				}
				var keys []plan.SortKey
				for _, c := range part {
					keys = append(keys, plan.SortKey{Col: c})
				}
				keys = append(keys, order...)
				window := func(in plan.Node, k int64) plan.Node {
					w := &plan.Window{Input: &plan.Sort{Input: in, Keys: keys}, PartitionBy: part, OrderBy: order,
						Calls: []plan.WindowCall{{Func: fn, Arg: -1, Default: -1, Typ: types.TypInt8, Name: "r"}}}
					return &plan.Filter{Input: w, Pred: &plan.Call{Op: plan.OpLe, Typ: types.TypBool,
						Args: []plan.Expr{&plan.ColRef{Idx: width, Typ: types.TypInt8}, plan.IntConst(types.TypInt8, k)}}}
				}
				for _, k := range []int64{1, 3, 300} {
					what := fmt.Sprintf("func %d, partition %v, order %v, k %d", fn, part, order, k)
					ptk := &plan.PartitionTopK{Input: vals, PartitionBy: part, OrderBy: order, Func: fn, Count: k}
					want := run(window(vals, k))
					if got := run(window(ptk, k)); !slices.EqualFunc(got, want, slices.Equal) {
						t.Fatalf("%s: %d rows over the top-k, %d over every row", what, len(got), len(want))
					}
					if n := len(run(ptk)); n != len(want) {
						t.Fatalf("%s: the top-k passes %d rows, the filter keeps %d", what, n, len(want))
					}
					func() {
						defer func(b int64) { spillMin = b }(spillMin)
						spillMin = 2 << 10
						if got := run(window(ptk, k)); !slices.EqualFunc(got, want, slices.Equal) {
							t.Fatalf("%s, past its budget: %d rows over the top-k, %d over every row", what, len(got), len(want))
						}
						if len(run(ptk)) > len(want) {
							passed++
						}
					}()
				}
			}
		}
	}
	if passed < 20 {
		t.Fatalf("only %d runs passed their input on past a 2 kB budget", passed)
	}
}

// TestPartitionTopKAllocations checks that adding a batch of rows of
// partitions already seen costs no allocation, whether the rows are
// taken or not.
func TestPartitionTopKAllocations(t *testing.T) {
	ts := []types.Type{types.TypInt4, types.TypInt8}
	b := types.NewBatch(ts, types.BatchSize)
	for i := range types.BatchSize {
		b.Cols[0].AppendInt(int64(i % 50))
		b.Cols[1].AppendInt(int64(i))
	}
	cols := []plan.Column{{Name: "p", Type: types.TypInt4}, {Name: "x", Type: types.TypInt8}}
	n := &plan.PartitionTopK{Input: &plan.Values{Cols: cols}, PartitionBy: []int{0}, OrderBy: []plan.SortKey{{Col: 1, Desc: true}},
		Func: plan.WinRank, Count: 3}
	o := partitionTopKOver(&Env{Ctx: context.Background()}, n, &sliceOp{})
	defer o.Close()
	later := func() {
		for i := range b.Cols[1].Ints {
			b.Cols[1].Ints[i] += types.BatchSize
		}
	}
	for range 10 {
		later()
		o.add(b)
	}
	if a := testing.AllocsPerRun(50, func() { later(); o.add(b) }); a != 0 {
		t.Errorf("rows all taken: %v allocations a batch", a)
	}
	if o.rows.Len() >= 2*o.live+types.BatchSize || o.live > 50*2*3 {
		t.Errorf("%d rows stored, %d listed, for 50 partitions of 3", o.rows.Len(), o.live)
	}
	for i := range b.Cols[1].Ints {
		b.Cols[1].Ints[i] = -1
	}
	if a := testing.AllocsPerRun(50, func() { o.add(b) }); a != 0 {
		t.Errorf("rows none taken: %v allocations a batch", a)
	}
	if o.rows.Len() >= 2*o.live+types.BatchSize || o.live > 50*2*3 {
		t.Errorf("%d rows stored, %d listed, for 50 partitions of 3", o.rows.Len(), o.live)
	}
}

// BenchmarkPartitionTopK is the first 3 rows of each of 1000 partitions
// of 1M rows (x random): a window over the full sort, then over the rows
// a PartitionTopK keeps (the filter on row_number() <= 3 left out, the
// same for both). ns/op of full over topk is the speedup.
func BenchmarkPartitionTopK(b *testing.B) {
	const rows = 1 << 20
	ts := []types.Type{types.TypInt4, types.TypInt8, types.TypInt8}
	cols := []plan.Column{{Name: "p", Type: ts[0]}, {Name: "x", Type: ts[1]}, {Name: "id", Type: ts[2]}}
	rng := rand.New(rand.NewPCG(7, 8))
	var in []*types.Batch
	for lo := 0; lo < rows; lo += types.BatchSize {
		bt := types.NewBatch(ts, types.BatchSize)
		for i := lo; i < lo+types.BatchSize; i++ {
			bt.Cols[0].AppendInt(int64(rng.IntN(1000)))
			bt.Cols[1].AppendInt(rng.Int64())
			bt.Cols[2].AppendInt(int64(i))
		}
		in = append(in, bt)
	}
	keys := []plan.SortKey{{Col: 0}, {Col: 1, Desc: true}}
	w := &plan.Window{Input: &plan.Values{Cols: cols}, PartitionBy: []int{0}, OrderBy: keys[1:],
		Calls: []plan.WindowCall{{Func: plan.WinRowNumber, Arg: -1, Default: -1, Typ: types.TypInt8, Name: "rn"}}}
	ptk := &plan.PartitionTopK{Input: w.Input, PartitionBy: w.PartitionBy, OrderBy: w.OrderBy, Func: plan.WinRowNumber, Count: 3}
	for _, topk := range []bool{false, true} {
		b.Run(map[bool]string{false: "full", true: "topk"}[topk], func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				env := &Env{Ctx: context.Background()}
				var src Operator = &sliceOp{bs: in}
				if topk {
					src = partitionTopKOver(env, ptk, src)
				}
				op := windowOver(env, w, &sortOp{env: env, in: src, keys: keys, cols: cols})
				n := 0
				if err := Drain(op, func(bt *types.Batch) error { n += bt.Len(); return nil }); err != nil {
					b.Fatal(err)
				}
				op.Close()
				if topk && n != 3000 || !topk && n != rows {
					b.Fatalf("%d rows", n)
				}
			}
		})
	}
}
