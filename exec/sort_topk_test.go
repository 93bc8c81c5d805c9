package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// topKInput is rows random batches of (k int4 with ties and NULLs, f
// float8 with NULLs, s text, seq int8 = the row's number).
func topKInput(rows, seed int) ([]plan.Column, []*types.Batch) {
	cols := []plan.Column{{Name: "k", Type: types.TypInt4}, {Name: "f", Type: types.TypFloat8},
		{Name: "s", Type: types.TypText}, {Name: "seq", Type: types.TypInt8}}
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	var in []*types.Batch
	for lo := 0; lo < rows; lo += 700 {
		b := types.NewBatch(ts, 700)
		for i := lo; i < min(lo+700, rows); i++ {
			if rng.IntN(25) == 0 {
				b.Cols[0].AppendNull()
			} else {
				b.Cols[0].AppendInt(int64(rng.IntN(200)))
			}
			if rng.IntN(30) == 0 {
				b.Cols[1].AppendNull()
			} else {
				b.Cols[1].AppendFloat(float64(rng.IntN(1000)) / 8)
			}
			b.Cols[2].AppendString(fmt.Sprintf("s%03d", rng.IntN(300)))
			b.Cols[3].AppendInt(int64(i))
		}
		in = append(in, b)
	}
	return cols, in
}

// textRows drains op into rows of text values ("NULL" for NULL).
func textRows(t *testing.T, op Operator) [][]string {
	t.Helper()
	var out [][]string
	if err := Drain(op, func(b *types.Batch) error {
		for i := range b.Len() {
			row := make([]string, len(b.Cols))
			for j, v := range b.Cols {
				row[j] = "NULL"
				if !v.Nulls[i] {
					row[j] = string(types.AppendText(nil, v, i))
				}
			}
			out = append(out, row)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSortTopK checks that a sort that keeps its first k rows emits
// exactly the first k rows of the full (stable) sort, ties in input order,
// for random inputs, keys of every direction, and k from none to more
// than the input: in a heap, in the sort that holds about 2k rows past
// maxHeapRows, and in a heap that outgrows a small budget and hands its
// rows to the sort, which spills them.
func TestSortTopK(t *testing.T) {
	const rows = 25000
	cols, in := topKInput(rows, 1)
	run := func(keys []plan.SortKey, bounded bool, k, budget int64) (out [][]string, files int) {
		t.Helper()
		defer func(b int64) { spillMin = b }(spillMin)
		spillMin = budget
		env := &Env{Ctx: context.Background(), TempFile: func(pattern string) (*os.File, error) {
			files++
			return os.CreateTemp(t.TempDir(), pattern)
		}}
		op := &sortOp{env: env, in: &sliceOp{bs: in}, keys: keys, cols: cols, keep: k, bounded: bounded}
		defer op.Close()
		return textRows(t, op), files
	}
	for _, keys := range [][]plan.SortKey{
		{{Col: 0}},
		{{Col: 0, Desc: true}, {Col: 2}},
		{{Col: 1, NullsFirst: true}, {Col: 0, Desc: true, NullsFirst: false}},
		{{Col: 2, Desc: true}, {Col: 1, Desc: true}},
	} {
		full, _ := run(keys, false, 0, 1<<40)
		if len(full) != rows {
			t.Fatalf("keys %v: the full sort emitted %d rows", keys, len(full))
		}
		for _, k := range []int64{0, 1, 2, 10, 999, 4000, maxHeapRows, maxHeapRows + 1, rows - 1, rows + 5} {
			want := full[:min(k, rows)]
			top, _ := run(keys, true, k, 1<<40)
			if !slices.EqualFunc(top, want, slices.Equal) {
				t.Fatalf("keys %v, k %d: %d rows, not the full sort's first %d", keys, k, len(top), len(want))
			}
		}
		for _, k := range []int64{50, 4000} {
			top, files := run(keys, true, k, 40<<10)
			if !slices.EqualFunc(top, full[:k], slices.Equal) {
				t.Fatalf("keys %v, k %d, spilled: not the full sort's first rows", keys, k)
			}
			if k == 4000 && files == 0 {
				t.Fatalf("keys %v, k %d: 4000 rows in a 40 kB budget did not spill", keys, k)
			}
		}
	}
}

// TestTopKHeapHoldsAboutK checks that the heap drops the rows it replaced
// (it holds fewer than 2k + a batch of rows even when every row replaces
// one), and that adding a batch costs no allocation once the heap holds
// k rows, whether it takes none of the batch's rows or all of them.
func TestTopKHeapHoldsAboutK(t *testing.T) {
	cols, in := topKInput(20000, 2)
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	// Descending seq: every row sorts before the rows held.
	h := newTopKHeap([]plan.SortKey{{Col: 3, Desc: true}}, ts, 100)
	for _, b := range in {
		h.add(b)
		if n := h.rows.Len(); n >= 2*100+types.BatchSize {
			t.Fatalf("the heap holds %d rows for k = 100", n)
		}
	}
	b := in[0]
	later := func() {
		for i := range b.Cols[3].Ints {
			b.Cols[3].Ints[i] += 1 << 20
		}
	}
	for range 5 {
		later()
		h.add(b)
	}
	if a := testing.AllocsPerRun(50, func() { later(); h.add(b) }); a != 0 {
		t.Errorf("a batch of rows all taken: %v allocations", a)
	}
	if a := testing.AllocsPerRun(50, func() { h.add(in[1]) }); a != 0 {
		t.Errorf("a batch of rows none taken: %v allocations", a)
	}
	// The first rows are the latest batch's, by seq descending.
	got, perm := h.sorted(nil)
	if len(perm) != 100 {
		t.Fatalf("the heap emits %d rows, want 100", len(perm))
	}
	for i, r := range perm {
		if want := b.Cols[3].Ints[b.Len()-1-i]; got.Cols[3].Ints[r] != want {
			t.Fatalf("row %d of the heap has seq %d, want %d", i, got.Cols[3].Ints[r], want)
		}
	}
}

// BenchmarkOrderByLimit is ORDER BY x LIMIT 10 over 1M rows (x random
// int8, with an id and a text column): a full sort under the limit, the
// sort that holds about 2k rows and cuts them (trim), and the heap.
// ns/op of full over heap is the speedup.
func BenchmarkOrderByLimit(b *testing.B) {
	const rows = 1 << 20
	ts := []types.Type{types.TypInt8, types.TypInt8, types.TypText}
	cols := []plan.Column{{Name: "id", Type: ts[0]}, {Name: "x", Type: ts[1]}, {Name: "s", Type: ts[2]}}
	rng := rand.New(rand.NewPCG(5, 6))
	var in []*types.Batch
	for lo := 0; lo < rows; lo += types.BatchSize {
		bt := types.NewBatch(ts, types.BatchSize)
		for i := lo; i < lo+types.BatchSize; i++ {
			bt.Cols[0].AppendInt(int64(i))
			bt.Cols[1].AppendInt(rng.Int64())
			bt.Cols[2].AppendString(fmt.Sprintf("row %08d", i))
		}
		in = append(in, bt)
	}
	for _, c := range []struct {
		name    string
		bounded bool
		heap    int64
	}{{"full", false, 0}, {"trim", true, 0}, {"heap", true, maxHeapRows}} {
		b.Run(c.name, func(b *testing.B) {
			defer func(n int64) { maxHeapRows = n }(maxHeapRows)
			maxHeapRows = c.heap
			b.ReportAllocs()
			for range b.N {
				s := &sortOp{env: &Env{Ctx: context.Background()}, in: &sliceOp{bs: in}, keys: []plan.SortKey{{Col: 1}},
					cols: cols, keep: 10, bounded: c.bounded}
				op := &limitOp{in: s, count: 10}
				n := 0
				if err := Drain(op, func(bt *types.Batch) error { n += bt.Len(); return nil }); err != nil || n != 10 {
					b.Fatalf("%d rows, %v", n, err)
				}
				op.Close()
			}
		})
	}
}
