package exec

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// TestSortSpills sorts rows of every physical type (NULLs, floats, text,
// booleans) by keys with many ties, DESC and NULLS FIRST, once in memory
// and once with a budget that writes many sorted runs to a temporary
// file: the merged rows must equal the in-memory sort's, ties in input
// order (the sort is stable), and the file must have been made.
func TestSortSpills(t *testing.T) {
	cols := []plan.Column{{Name: "k", Type: types.TypInt4}, {Name: "f", Type: types.TypFloat8},
		{Name: "s", Type: types.TypText}, {Name: "b", Type: types.TypBool}, {Name: "seq", Type: types.TypInt8}}
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var in []*types.Batch
	const rows = 20000
	for lo := 0; lo < rows; lo += 1000 {
		b := types.NewBatch(ts, 1000)
		for i := lo; i < lo+1000; i++ {
			if rng.IntN(20) == 0 {
				b.Cols[0].AppendNull()
			} else {
				b.Cols[0].AppendInt(int64(rng.IntN(50)))
			}
			if rng.IntN(30) == 0 {
				b.Cols[1].AppendNull()
			} else {
				b.Cols[1].AppendFloat(rng.NormFloat64())
			}
			b.Cols[2].AppendString(fmt.Sprintf("row %d %s", i, string(make([]byte, rng.IntN(40)))))
			b.Cols[3].AppendBool(i%3 == 0)
			b.Cols[4].AppendInt(int64(i))
		}
		b.SetLen(1000)
		in = append(in, b)
	}
	var runKeep func(keys []plan.SortKey, budget, keep int64) ([][]string, int)
	run := func(keys []plan.SortKey, budget int64) (out [][]string, files int) {
		return runKeep(keys, budget, 0)
	}
	runKeep = func(keys []plan.SortKey, budget, keep int64) (out [][]string, files int) {
		t.Helper()
		defer func(b int64) { spillMin = b }(spillMin)
		spillMin = budget
		env := &Env{TempFile: func(pattern string) (*os.File, error) {
			files++
			return os.CreateTemp(t.TempDir(), pattern)
		}}
		op := &sortOp{env: env, in: &sliceOp{bs: in}, keys: keys, cols: cols, keep: keep, bounded: keep > 0}
		defer op.Close()
		defer func() {
			if keep > 0 && op.all != nil && op.all.Len() >= int(2*keep)+types.BatchSize {
				t.Errorf("keep %d: the sort held %d rows", keep, op.all.Len())
			}
		}()
		if err := Drain(op, func(b *types.Batch) error {
			for i := range b.Len() {
				row := make([]string, len(b.Cols))
				for j, v := range b.Cols {
					row[j] = string(types.AppendText(nil, v, i))
					if v.Nulls[i] {
						row[j] = "NULL"
					}
				}
				out = append(out, row)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out, files
	}
	for _, keys := range [][]plan.SortKey{
		{{Col: 0}},
		{{Col: 0, Desc: true, NullsFirst: true}, {Col: 3}},
		{{Col: 1, Desc: true}},
		{{Col: 3}, {Col: 2, Desc: true}},
	} {
		mem, files := run(keys, 1<<40)
		if files != 0 || len(mem) != rows {
			t.Fatalf("keys %v in memory: %d rows, %d files", keys, len(mem), files)
		}
		spilled, files := run(keys, 50<<10)
		if files != 1 {
			t.Fatalf("keys %v: a 50 kB budget made %d files", keys, files)
		}
		// ORDER BY ... LIMIT k: the first k rows, from a sort that holds
		// about 2k, in memory or spilled.
		for _, k := range []int64{1, 7, 1500, 6000} {
			for _, budget := range []int64{1 << 40, 50 << 10} {
				top, _ := runKeep(keys, budget, k)
				if len(top) < int(k) || !slices.EqualFunc(top[:k], mem[:k], slices.Equal) {
					t.Fatalf("keys %v, keep %d, budget %d: the first rows differ from the full sort's", keys, k, budget)
				}
			}
		}
		if !slices.EqualFunc(mem, spilled, slices.Equal) {
			for i := range mem {
				if !slices.Equal(mem[i], spilled[i]) {
					t.Fatalf("keys %v: row %d is %v merged, %v in memory", keys, i, spilled[i], mem[i])
				}
			}
			t.Fatalf("keys %v: %d rows merged, %d in memory", keys, len(spilled), len(mem))
		}
	}
	// Stable: rows of equal keys keep their input order (seq ascending).
	sorted, _ := run([]plan.SortKey{{Col: 3}}, 50<<10)
	seq := func(row []string) int {
		n, err := strconv.Atoi(row[4])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i][3] == sorted[i-1][3] && seq(sorted[i]) < seq(sorted[i-1]) {
			t.Fatalf("rows %d and %d of equal keys out of input order: %v, %v", i-1, i, sorted[i-1], sorted[i])
		}
	}
}

// TestSpillWithoutTempFile: a sort or an exact shuffle that must spill
// but cannot make its temporary file fails with 58030, saying why.
func TestSpillWithoutTempFile(t *testing.T) {
	defer func(b int64) { spillMin = b }(spillMin)
	spillMin = 1000
	noFile := func(string) (*os.File, error) { return nil, errors.New("no space left on device") }
	b := types.NewBatch([]types.Type{types.TypText}, 1000)
	for i := range 1000 {
		b.Cols[0].AppendString(fmt.Sprintf("row %d", i))
	}
	b.SetLen(1000)
	op := &sortOp{env: &Env{TempFile: noFile}, in: &sliceOp{bs: []*types.Batch{b}}, keys: []plan.SortKey{{Col: 0}},
		cols: []plan.Column{{Name: "s", Type: types.TypText}}}
	defer op.Close()
	_, err := op.Next()
	if pgerror.GetCode(err) != pgerror.IOError || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("sort: %v (%s)", err, pgerror.GetCode(err))
	}
	ct := mixedCopy(t, plan.TensorOptions{BatchSize: 7, Shuffle: plan.ShuffleExact, World: 1}, 40)
	ct.env.TempFile = noFile
	var rec frameRecorder
	if _, err := ct.Run(&rec); pgerror.GetCode(err) != pgerror.IOError || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("exact shuffle: %v (%s)", err, pgerror.GetCode(err))
	}
}

// failAfter is a writer that takes n writes and then fails, as a client
// that goes away in the middle of a stream.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("client gone")
	}
	w.n--
	return len(p), nil
}

// TestSpillFilesClosed: the temporary files of a spilled sort and of a
// spilled exact shuffle are closed when the statement ends, whether it
// ran to the end or its client went away in the middle.
func TestSpillFilesClosed(t *testing.T) {
	defer func(b int64) { spillMin = b }(spillMin)
	spillMin = 2000
	var files []*os.File
	tempFile := func(pattern string) (*os.File, error) {
		f, err := os.CreateTemp(t.TempDir(), pattern)
		files = append(files, f)
		return f, err
	}
	closed := func(what string) {
		t.Helper()
		if len(files) == 0 {
			t.Fatalf("%s: no temporary file made", what)
		}
		for _, f := range files {
			if _, err := f.Write([]byte{0}); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("%s: a temporary file is still open (%v)", what, err)
			}
		}
		files = nil
	}
	for _, w := range []io.Writer{io.Discard, &failAfter{n: 2}} {
		ct := mixedCopy(t, plan.TensorOptions{BatchSize: 7, Shuffle: plan.ShuffleExact, World: 1}, 40)
		ct.env.TempFile = tempFile
		ct.Run(w)
		ct.Close()
		closed(fmt.Sprintf("exact shuffle into %T", w))

		b := copyToBatch(t, mixedTypes, mixedRows...)
		o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: 7, World: 1}}
		var cols []plan.Column
		for i, ty := range mixedTypes {
			cols = append(cols, plan.Column{Name: string(rune('a' + i)), Type: ty})
		}
		env := &Env{TempFile: tempFile}
		sorted := &sortOp{env: env, in: &repeatOp{b: b, n: 40}, keys: []plan.SortKey{{Col: 3}}, cols: cols}
		ct = &CopyTo{env: env, n: &plan.CopyTo{Query: &plan.Values{Cols: cols}, Options: o}, op: sorted, opts: o}
		ct.Run(w)
		ct.Close()
		closed(fmt.Sprintf("sort into %T", w))
	}
}

// TestSortMergeNoAllocs: once a spilled sort's merge has started, each
// batch it returns allocates nothing (rows are decoded into reused
// batches, the heap is fixed in place).
func TestSortMergeNoAllocs(t *testing.T) {
	defer func(b int64) { spillMin = b }(spillMin)
	spillMin = 64 << 10
	var in []*types.Batch
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		b := types.NewBatch([]types.Type{types.TypInt8, types.TypText}, 1000)
		for range 1000 {
			b.Cols[0].AppendInt(rng.Int64N(1 << 40))
			b.Cols[1].AppendString("some text")
		}
		b.SetLen(1000)
		in = append(in, b)
	}
	env := &Env{TempFile: func(pattern string) (*os.File, error) { return os.CreateTemp(t.TempDir(), pattern) }}
	op := &sortOp{env: env, in: &sliceOp{bs: in}, keys: []plan.SortKey{{Col: 0}},
		cols: []plan.Column{{Name: "k", Type: types.TypInt8}, {Name: "s", Type: types.TypText}}}
	defer op.Close()
	for range 5 { // load, then warm the reused batches
		if _, err := op.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if op.merge == nil || len(op.merge.runs) < 10 {
		t.Fatalf("the sort did not spill into many runs")
	}
	last := int64(-1)
	allocs := testing.AllocsPerRun(50, func() {
		b, err := op.Next()
		if err != nil || b == nil {
			t.Fatalf("batch: %v, %v", b, err)
		}
		if k := b.Cols[0].Ints[0]; k < last {
			t.Fatalf("out of order: %d after %d", k, last)
		}
		last = b.Cols[0].Ints[b.Len()-1]
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per merged batch", allocs)
	}
}

// TestSpillBudget: work_mem past 64 MB raises the spill budget, up to 1 GB.
func TestSpillBudget(t *testing.T) {
	for v, want := range map[string]int64{"4MB": 64 << 20, "256MB": 256 << 20, "8GB": 1 << 30} {
		env := &Env{Setting: func(string) (string, bool) { return v, true }}
		if got := env.spillBudget(); got != want {
			t.Errorf("work_mem %s: budget %d, want %d", v, got, want)
		}
	}
}
