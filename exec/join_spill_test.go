package exec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// joinSides makes two inputs of (k int8, s text) with duplicate and NULL
// keys and keys on one side only.
func joinSides(rows int) (cols []plan.Column, left, right []*types.Batch) {
	cols = []plan.Column{{Name: "k", Type: types.TypInt8}, {Name: "s", Type: types.TypText}}
	ts := []types.Type{types.TypInt8, types.TypText}
	rng := rand.New(rand.NewPCG(7, 8))
	side := func(name string, keys int) []*types.Batch {
		var bs []*types.Batch
		for lo := 0; lo < rows; lo += 1000 {
			b := types.NewBatch(ts, 1000)
			for i := lo; i < lo+1000; i++ {
				if rng.IntN(40) == 0 {
					b.Cols[0].AppendNull()
				} else {
					b.Cols[0].AppendInt(int64(rng.IntN(keys)))
				}
				b.Cols[1].AppendString(fmt.Sprintf("%s%d", name, i))
			}
			b.SetLen(1000)
			bs = append(bs, b)
		}
		return bs
	}
	return cols, side("x", rows), side("x", rows+rows/2)
}

func runJoin(t *testing.T, kind plan.JoinKind, on bool, cols []plan.Column, left, right []*types.Batch, budget int64, spill bool) (rows []string, files int) {
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
	n := &plan.Join{Kind: kind, Left: &plan.Values{Cols: cols}, Right: &plan.Values{Cols: cols},
		LeftKeys:  []plan.Expr{&plan.ColRef{Idx: 0, Typ: types.TypInt8}},
		RightKeys: []plan.Expr{&plan.ColRef{Idx: 0, Typ: types.TypInt8}}}
	if on {
		// A residual condition over both sides' text: s of the left sorts
		// before s of the right for about half of the pairs.
		n.On = &plan.Call{Op: plan.OpLt, Typ: types.TypBool, Args: []plan.Expr{
			&plan.ColRef{Idx: 1, Typ: types.TypText}, &plan.ColRef{Idx: 3, Typ: types.TypText}}}
	}
	op, err := newJoin(env, n)
	if err != nil {
		t.Fatal(err)
	}
	op.(*joinOp).left, op.(*joinOp).right = &sliceOp{bs: left}, &sliceOp{bs: right}
	defer op.Close()
	return sortedRowText(t, op), files
}

// TestGraceHashJoin: a build side past work_mem partitions both sides to
// files (again where a partition is still too large), and inner, left
// and full joins, with and without a residual condition, give the rows
// the in-memory join gives, at several budgets.
func TestGraceHashJoin(t *testing.T) {
	cols, left, right := joinSides(3000)
	for _, kind := range []plan.JoinKind{plan.JoinInner, plan.JoinLeft, plan.JoinFull} {
		for _, on := range []bool{false, true} {
			want, _ := runJoin(t, kind, on, cols, left, right, 1<<40, false)
			for _, budget := range []int64{4 << 10, 16 << 10, 64 << 10} {
				got, files := runJoin(t, kind, on, cols, left, right, budget, true)
				if files == 0 {
					t.Fatalf("kind %d, budget %d: no spill", kind, budget)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("kind %d on %v budget %d: %d rows, want %d", kind, on, budget, len(got), len(want))
				}
				if budget == 4<<10 && files <= 2*spillFanout {
					t.Errorf("budget %d: %d files, want partitions split again", budget, files)
				}
			}
			t.Logf("kind %d on %v: %d rows", kind, on, len(want))
		}
	}
}

// TestRightJoin: a right join gives a full join's rows but the left
// rows without a match, in memory and through partition files.
func TestRightJoin(t *testing.T) {
	cols, left, right := joinSides(3000)
	for _, on := range []bool{false, true} {
		full, _ := runJoin(t, plan.JoinFull, on, cols, left, right, 1<<40, false)
		var want []string
		for _, r := range full {
			if !strings.HasSuffix(r, "|NULL|") { // the right row's s
				want = append(want, r)
			}
		}
		if len(want) == len(full) || len(want) == 0 {
			t.Fatalf("on %v: %d of the full join's %d rows", on, len(want), len(full))
		}
		for _, budget := range []int64{1 << 40, 16 << 10} {
			got, _ := runJoin(t, plan.JoinRight, on, cols, left, right, budget, budget < 1<<20)
			if !slices.Equal(got, want) {
				t.Fatalf("on %v budget %d: %d rows, want %d", on, budget, len(got), len(want))
			}
		}
	}
}

// TestSharedBuild: two workers' joins of one plan.Join with SharedBuild
// probe one hash table, built by whichever asks first from its copy of
// the right input (the other never reads its copy); past work_mem each
// joins on its own (grace). Either way the two halves of the left input
// give the rows of one join over all of it.
func TestSharedBuild(t *testing.T) {
	defer func(b int64) { spillMin = b }(spillMin)
	cols, left, right := joinSides(4000)
	half := len(left) / 2
	for _, kind := range []plan.JoinKind{plan.JoinInner, plan.JoinLeft, plan.JoinSemi, plan.JoinAnti} {
		want, _ := runJoin(t, kind, true, cols, left, right, 1<<40, false)
		for _, budget := range []int64{1 << 40, 16 << 10} {
			spillMin = budget
			env := &Env{sharedBuilds: make(map[*plan.Join]*sharedBuild),
				TempFile: func(pattern string) (*os.File, error) { return os.CreateTemp(t.TempDir(), pattern) }}
			n := &plan.Join{Kind: kind, Left: &plan.Values{Cols: cols}, Right: &plan.Values{Cols: cols}, SharedBuild: true,
				LeftKeys:  []plan.Expr{&plan.ColRef{Idx: 0, Typ: types.TypInt8}},
				RightKeys: []plan.Expr{&plan.ColRef{Idx: 0, Typ: types.TypInt8}},
				On: &plan.Call{Op: plan.OpLt, Typ: types.TypBool, Args: []plan.Expr{
					&plan.ColRef{Idx: 1, Typ: types.TypText}, &plan.ColRef{Idx: 3, Typ: types.TypText}}}}
			if kind == plan.JoinSemi || kind == plan.JoinAnti {
				n.On = nil
				want, _ = runJoin(t, kind, false, cols, left, right, 1<<40, false)
			}
			var ops [2]Operator
			var rights [2]*sliceOp
			for w := range ops {
				op, err := newJoin(env, n)
				if err != nil {
					t.Fatal(err)
				}
				rights[w] = &sliceOp{bs: right}
				op.(*joinOp).left, op.(*joinOp).right = &sliceOp{bs: left[w*half : (w+1)*half]}, rights[w]
				ops[w] = op
			}
			if env.sharedBuilds[n] == nil || ops[0].(*joinOp).shared != ops[1].(*joinOp).shared {
				t.Fatal("the two joins do not share a build")
			}
			var got [2][]string
			var wg sync.WaitGroup
			for w := range ops {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[w] = sortedRowText(t, ops[w])
				}()
			}
			wg.Wait()
			all := append(got[0], got[1]...)
			slices.Sort(all)
			if !slices.Equal(all, want) {
				t.Fatalf("kind %d budget %d: %d rows, want %d", kind, budget, len(all), len(want))
			}
			read := 0
			for _, r := range rights {
				if r.i > 0 {
					read++
				}
			}
			if shared := budget > 1<<20; (shared && read != 1) || (!shared && read != 2) {
				t.Errorf("kind %d budget %d: %d joins read their right input", kind, budget, read)
			}
			for _, op := range ops {
				op.Close()
			}
			env.sharedBuilds[n].acc.Close()
		}
	}
}

// TestRightSemiAntiJoin: a right semi (anti) join returns the rows of
// its right input that have a match (none) in its left, as a semi (anti)
// join of the inputs swapped does, in memory and through partition
// files.
func TestRightSemiAntiJoin(t *testing.T) {
	cols, left, right := joinSides(3000)
	for kind, swapped := range map[plan.JoinKind]plan.JoinKind{plan.JoinRightSemi: plan.JoinSemi, plan.JoinRightAnti: plan.JoinAnti} {
		want, _ := runJoin(t, swapped, false, cols, right, left, 1<<40, false)
		if len(want) == 0 || len(want) == 4500 {
			t.Fatalf("kind %d: %d rows", kind, len(want))
		}
		for _, budget := range []int64{1 << 40, 16 << 10} {
			got, _ := runJoin(t, kind, false, cols, left, right, budget, budget < 1<<20)
			if !slices.Equal(got, want) {
				t.Fatalf("kind %d budget %d: %d rows, want %d", kind, budget, len(got), len(want))
			}
		}
	}
}
