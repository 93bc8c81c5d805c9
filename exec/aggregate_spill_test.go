package exec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// aggInput is rows of (k int8, s text, v int8, t text) with many groups
// of (k, s), NULL keys and values among them.
func aggInput(rows int) ([]plan.Column, []*types.Batch) {
	cols := []plan.Column{{Name: "k", Type: types.TypInt8}, {Name: "s", Type: types.TypText},
		{Name: "v", Type: types.TypInt8}, {Name: "t", Type: types.TypText}}
	ts := []types.Type{types.TypInt8, types.TypText, types.TypInt8, types.TypText}
	rng := rand.New(rand.NewPCG(5, 6))
	var in []*types.Batch
	for lo := 0; lo < rows; lo += 1000 {
		b := types.NewBatch(ts, 1000)
		for i := lo; i < lo+1000; i++ {
			if rng.IntN(50) == 0 {
				b.Cols[0].AppendNull()
			} else {
				b.Cols[0].AppendInt(int64(rng.IntN(rows / 4)))
			}
			b.Cols[1].AppendString(fmt.Sprintf("g%d", rng.IntN(3)))
			if rng.IntN(10) == 0 {
				b.Cols[2].AppendNull()
			} else {
				b.Cols[2].AppendInt(int64(rng.IntN(100)))
			}
			b.Cols[3].AppendString(fmt.Sprintf("row %d", i))
		}
		b.SetLen(1000)
		in = append(in, b)
	}
	return cols, in
}

// runAgg groups in by (k, s) with several aggregates under a spill budget
// and returns the rows as sorted text, and the temporary files made.
func runAgg(t *testing.T, cols []plan.Column, in []*types.Batch, budget int64, spill bool) (rows []string, files int) {
	t.Helper()
	defer func(b int64) { spillMin = b }(spillMin)
	spillMin = budget
	env := &Env{}
	if spill {
		env.TempFile = func(pattern string) (*os.File, error) {
			files++
			return os.CreateTemp(t.TempDir(), pattern)
		}
	}
	ref := func(i int) plan.Expr { return &plan.ColRef{Idx: i, Typ: cols[i].Type, Name: cols[i].Name} }
	n := &plan.Aggregate{Input: &plan.Values{Cols: cols}, GroupBy: []plan.Expr{ref(0), ref(1)}, Aggs: []plan.AggCall{
		{Func: plan.AggCountStar, Typ: types.TypInt8},
		{Func: plan.AggSum, Arg: ref(2), Typ: types.TypInt8},
		{Func: plan.AggCount, Arg: ref(2), Distinct: true, Typ: types.TypInt8},
		{Func: plan.AggStringAgg, Arg: ref(3), Typ: types.TypText, Sep: ","},
		{Func: plan.AggMax, Arg: ref(3), Typ: types.TypText},
		{Func: plan.AggMin, Arg: ref(2), Typ: types.TypInt8},
	}}
	op, err := newAggregate(env, n)
	if err != nil {
		t.Fatal(err)
	}
	op.(*aggregateOp).in = &sliceOp{bs: in}
	defer op.Close()
	return sortedRowText(t, op), files
}

// TestHashAggregateSpills: a GROUP BY whose groups pass work_mem many
// times over spills to partition files (split again where still too
// large) and gives the same rows as in memory, at several budgets; every
// group appears once, string_agg keeps its input order.
func TestHashAggregateSpills(t *testing.T) {
	cols, in := aggInput(40000)
	want, files := runAgg(t, cols, in, 1<<40, false)
	if files != 0 || len(want) < 20000 {
		t.Fatalf("in memory: %d files, %d groups", files, len(want))
	}
	for _, budget := range []int64{16 << 10, 256 << 10, 2 << 20} {
		got, files := runAgg(t, cols, in, budget, true)
		if files == 0 {
			t.Fatalf("budget %d: no spill", budget)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("budget %d: %d rows differ from the %d in memory", budget, len(got), len(want))
		}
		t.Logf("budget %d: %d groups through %d partition files", budget, len(got), files)
	}
}

// TestHashAggregateAccount: the aggregate's groups are reserved from the
// session's monitor and given back when it closes, also after an error;
// without a temporary file a tiny budget fails with 53200.
func TestHashAggregateAccount(t *testing.T) {
	cols, in := aggInput(20000)
	ref := func(i int) plan.Expr { return &plan.ColRef{Idx: i, Typ: cols[i].Type, Name: cols[i].Name} }
	n := &plan.Aggregate{Input: &plan.Values{Cols: cols}, GroupBy: []plan.Expr{ref(0), ref(3)},
		Aggs: []plan.AggCall{{Func: plan.AggCountStar, Typ: types.TypInt8}}}
	for _, limit := range []int64{0, 2 << 20} {
		root := NewMemMonitor("server", limit)
		sess := root.Child("session")
		env := &Env{Mem: sess}
		op, err := newAggregate(env, n)
		if err != nil {
			t.Fatal(err)
		}
		op.(*aggregateOp).in = &sliceOp{bs: in}
		_, err = op.Next()
		switch {
		case limit == 0 && err != nil:
			t.Fatal(err)
		case limit == 0 && root.Used() < 1<<20:
			t.Fatalf("20000 groups hold %d bytes", root.Used())
		case limit > 0:
			wantCode(t, err, pgerror.OutOfMemory)
		}
		op.Close()
		if root.Used() != 0 || sess.Used() != 0 {
			t.Fatalf("limit %d: %d bytes still reserved after Close", limit, root.Used())
		}
	}
}

// sortedRowText drains op and returns its rows as text ("a|NULL|"),
// sorted, for comparing two runs of an operator.
func sortedRowText(t *testing.T, op Operator) []string {
	t.Helper()
	var rows []string
	err := Drain(op, func(b *types.Batch) error {
		for i := range b.Len() {
			var sb strings.Builder
			for _, v := range b.Cols {
				if v.Nulls[i] {
					sb.WriteString("NULL|")
				} else {
					sb.Write(types.AppendText(nil, v, i))
					sb.WriteByte('|')
				}
			}
			rows = append(rows, sb.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return rows
}
