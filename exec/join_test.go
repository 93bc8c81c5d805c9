package exec

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// joinInput returns the same batch n times.
type joinInput struct {
	b *types.Batch
	n int
}

func (r *joinInput) Next() (*types.Batch, error) {
	if r.n == 0 {
		return nil, nil
	}
	r.n--
	return r.b, nil
}
func (r *joinInput) Close() {}

func intBatch(vals ...int64) *types.Batch {
	b := types.NewBatch([]types.Type{types.TypInt8, types.TypText}, len(vals))
	for _, v := range vals {
		b.Cols[0].AppendInt(v)
		b.Cols[1].AppendString("x")
	}
	return b
}

// TestHashJoinNoAllocs checks that probing a hash join allocates nothing
// per batch once its buffers have grown.
func TestHashJoinNoAllocs(t *testing.T) {
	env := &Env{}
	probe := make([]int64, 1000)
	for i := range probe {
		probe[i] = int64(i % 50)
	}
	key := func() evaluator { return &colEval{idx: 0} }
	ts := []types.Type{types.TypInt8, types.TypText}
	j := &joinOp{env: env, kind: plan.JoinLeft, ltypes: ts, rtypes: ts,
		left:  &joinInput{b: intBatch(probe...), n: 1 << 30},
		right: &joinInput{b: intBatch(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), n: 3},
		lkeys: []evaluator{key()}, rkeys: []evaluator{key()}}
	for _, t := range append(append([]types.Type{}, ts...), ts...) {
		j.out.Cols = append(j.out.Cols, types.NewVec(t, types.BatchSize))
	}
	rows := 0
	for i := 0; i < 20; i++ {
		b, err := j.Next()
		if err != nil || b == nil {
			t.Fatalf("Next: %v, %v", b, err)
		}
		rows += b.Len()
	}
	if rows == 0 {
		t.Fatal("no rows")
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := j.Next(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per batch, want 0", n)
	}
}

func TestNestedLoopJoinFull(t *testing.T) {
	env := &Env{}
	ts := []types.Type{types.TypInt8, types.TypText}
	// ON left.a < right.a - 5: no pair matches, so every row comes out padded.
	on := &plan.Call{Op: plan.OpLt, Typ: types.TypBool, Args: []plan.Expr{
		&plan.ColRef{Idx: 0, Typ: types.TypInt8},
		&plan.Call{Op: plan.OpSub, Typ: types.TypInt8, Args: []plan.Expr{&plan.ColRef{Idx: 2, Typ: types.TypInt8}, plan.IntConst(types.TypInt8, 5)}},
	}}
	onEv, err := env.compile(on)
	if err != nil {
		t.Fatal(err)
	}
	j := &joinOp{env: env, kind: plan.JoinFull, ltypes: ts, rtypes: ts, on: onEv,
		left:  &joinInput{b: intBatch(1, 2, 3), n: 1},
		right: &joinInput{b: intBatch(1, 2), n: 1}}
	for _, t := range append(append([]types.Type{}, ts...), ts...) {
		j.out.Cols = append(j.out.Cols, types.NewVec(t, types.BatchSize))
	}
	leftOnly, rightOnly := 0, 0
	for {
		b, err := j.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for i := 0; i < b.Len(); i++ {
			switch {
			case b.Cols[2].Nulls[i]:
				leftOnly++
			case b.Cols[0].Nulls[i]:
				rightOnly++
			default:
				t.Errorf("row %d matched", i)
			}
		}
	}
	if leftOnly != 3 || rightOnly != 2 {
		t.Errorf("left-only %d, right-only %d; want 3 and 2", leftOnly, rightOnly)
	}
}

func TestJoinBuildSideMemoryBound(t *testing.T) {
	defer func(old int64) { maxBuildBytes = old }(maxBuildBytes)
	maxBuildBytes = 1 << 10
	ts := []types.Type{types.TypInt8, types.TypText}
	rows := make([]int64, 500)
	j := &joinOp{env: &Env{}, kind: plan.JoinInner, ltypes: ts, rtypes: ts,
		left:  &joinInput{b: intBatch(1), n: 1},
		right: &joinInput{b: intBatch(rows...), n: 10}}
	_, err := j.Next()
	if pgerror.GetCode(err) != pgerror.OutOfMemory {
		t.Fatalf("got %v, want 53200", err)
	}
}
