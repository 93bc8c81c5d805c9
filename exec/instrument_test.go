package exec

import (
	"context"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// seriesPlan is generate_series(1, 10000) AS x WHERE x > 4000 ORDER BY
// x DESC LIMIT 10, over several batches.
func seriesPlan() (*plan.Limit, *plan.Sort, *plan.Filter, *plan.Series) {
	series := &plan.Series{Start: plan.IntConst(types.TypInt8, 1), Stop: plan.IntConst(types.TypInt8, 10000), Typ: types.TypInt8, Name: "x"}
	filter := &plan.Filter{Input: series, Pred: &plan.Call{Op: plan.OpGt, Typ: types.TypBool,
		Args: []plan.Expr{&plan.ColRef{Idx: 0, Typ: types.TypInt8, Name: "x"}, plan.IntConst(types.TypInt8, 4000)}}}
	sort := &plan.Sort{Input: filter, Keys: []plan.SortKey{{Col: 0, Desc: true}},
		TopK: &plan.TopK{Count: plan.IntConst(types.TypInt8, 10)}}
	limit := &plan.Limit{Input: sort, Count: plan.IntConst(types.TypInt8, 10)}
	return limit, sort, filter, series
}

// TestInstrumentsCountRowsAndLoops runs a plan measured and checks each
// node's rows (those it emitted, after its filter) and loops, and that
// the times are inclusive: a node's total covers its input's.
func TestInstrumentsCountRowsAndLoops(t *testing.T) {
	limit, sort, filter, series := seriesPlan()
	ins := NewInstruments(true)
	env := &Env{Ctx: context.Background(), Instruments: ins}
	op, err := Build(env, limit)
	if err != nil {
		t.Fatal(err)
	}
	// The measured sort keeps the rows its plan says.
	if s := unwrap(unwrap(op).(*limitOp).in).(*sortOp); s.keep != 10 {
		t.Fatalf("the measured sort keeps %d rows, want 10", s.keep)
	}
	var first int64
	err = Drain(op, func(b *types.Batch) error {
		if first == 0 {
			first = b.Cols[0].Ints[0]
		}
		return nil
	})
	op.Close()
	if err != nil {
		t.Fatal(err)
	}
	if first != 10000 {
		t.Fatalf("first row %d, want 10000", first)
	}
	// The sort emits only the 10 rows the limit takes.
	for _, c := range []struct {
		n        plan.Node
		min, max int64
	}{
		{series, 10000, 10000},
		{filter, 6000, 6000},
		{sort, 10, 10},
		{limit, 10, 10},
	} {
		a := ins.Actual(c.n)
		if a.Loops != 1 || a.Rows < c.min || a.Rows > c.max {
			t.Errorf("%T: %+v, want 1 loop and %d..%d rows", c.n, a, c.min, c.max)
		}
		if a.Startup > a.Total || a.Total <= 0 {
			t.Errorf("%T: startup %v, total %v", c.n, a.Startup, a.Total)
		}
	}
	if ins.Actual(limit).Total < ins.Actual(sort).Total || ins.Actual(sort).Total < ins.Actual(series).Total {
		t.Errorf("times not inclusive: limit %v, sort %v, series %v", ins.Actual(limit).Total, ins.Actual(sort).Total, ins.Actual(series).Total)
	}
	if a := ins.Actual(&plan.Values{}); a != (plan.Actual{}) {
		t.Errorf("a node never built: %+v", a)
	}
}

// TestInstrumentsOnlyWhenAnalyzing checks that Build makes bare
// operators without Instruments, and measures no time with timing off.
func TestInstrumentsOnlyWhenAnalyzing(t *testing.T) {
	limit, _, _, series := seriesPlan()
	op, err := Build(&Env{Ctx: context.Background()}, limit)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := op.(*limitOp); !ok {
		t.Fatalf("Build without Instruments made %T", op)
	}
	op.Close()
	ins := NewInstruments(false)
	op, err = Build(&Env{Ctx: context.Background(), Instruments: ins}, limit)
	if err != nil {
		t.Fatal(err)
	}
	if err := Drain(op, func(*types.Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	op.Close()
	if a := ins.Actual(series); a.Rows != 10000 || a.Loops != 1 || a.Total != 0 || a.Startup != 0 {
		t.Fatalf("timing off: %+v", a)
	}
}

// oneBatch returns the same batch forever.
type oneBatch struct{ b *types.Batch }

func (o *oneBatch) Next() (*types.Batch, error) { return o.b, nil }
func (o *oneBatch) Close()                      {}

// TestMeasuredNextDoesNotAllocate proves that measuring costs no
// allocation per batch, with timing and without.
func TestMeasuredNextDoesNotAllocate(t *testing.T) {
	b := types.NewBatch([]types.Type{types.TypInt8}, 4)
	for i := range 4 {
		b.Cols[0].AppendInt(int64(i))
	}
	n := &plan.Values{}
	for _, timing := range []bool{false, true} {
		ins := NewInstruments(timing)
		op := ins.wrap(n, &oneBatch{b: b})
		if allocs := testing.AllocsPerRun(1000, func() {
			if _, err := op.Next(); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("timing %v: %v allocations per Next", timing, allocs)
		}
		if a := ins.Actual(n); a.Loops != 1 || a.Rows != 4*1001 {
			t.Errorf("timing %v: %+v", timing, a)
		}
	}
}

// unwrap returns the operator m measures when op is a measuredOp, op
// otherwise.
func unwrap(op Operator) Operator {
	if m, ok := op.(*measuredOp); ok {
		return m.in
	}
	return op
}
