package exec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// streamIDs runs the stream over the ints 0..n-1 (in query batches of 100)
// and returns the ids in stream order and the frames' batch indexes.
func streamIDs(t *testing.T, n int, opts plan.TensorOptions) (ids []int64, batches []uint64) {
	t.Helper()
	op := &sliceOp{}
	for lo := 0; lo < n; lo += 100 {
		b := types.NewBatch([]types.Type{types.TypInt8}, 100)
		for i := lo; i < min(n, lo+100); i++ {
			b.Cols[0].AppendInt(int64(i))
		}
		op.bs = append(op.bs, b)
	}
	o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: opts}
	ct := &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{Cols: []plan.Column{{Name: "id", Type: types.TypInt8}}}, Options: o}, op: op, opts: o}
	var rec frameRecorder
	sent, err := ct.Run(&rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.frames {
		f := decodeFrame(t, p)
		batches = append(batches, f.batch)
		for r := range f.rows {
			ids = append(ids, int64(binary.LittleEndian.Uint64(f.cols[0].values[8*r:])))
		}
	}
	if sent != int64(len(ids)) {
		t.Fatalf("COPY %d, %d rows in frames", sent, len(ids))
	}
	return ids, batches
}

func TestTensorShuffleAndShard(t *testing.T) {
	const n = 1000
	base := plan.TensorOptions{BatchSize: 64, ShuffleBuffer: 100, World: 1}
	for _, mode := range []plan.CopyShuffle{plan.ShuffleNone, plan.ShuffleBuffer, plan.ShuffleExact} {
		o := base
		o.Shuffle, o.Seed = mode, 7
		a, _ := streamIDs(t, n, o)
		b, _ := streamIDs(t, n, o)
		if !slices.Equal(a, b) {
			t.Errorf("shuffle %d: the same seed gave different orders", mode)
		}
		o.Seed = 8
		c, _ := streamIDs(t, n, o)
		if mode != plan.ShuffleNone && slices.Equal(a, c) {
			t.Errorf("shuffle %d: seeds 7 and 8 gave the same order", mode)
		}
		if mode == plan.ShuffleNone && !slices.IsSorted(a) {
			t.Errorf("no shuffle: order changed")
		}
		if mode != plan.ShuffleNone && slices.IsSorted(a) {
			t.Errorf("shuffle %d: order kept", mode)
		}
		// Shards are disjoint and together hold every row once.
		for world := 1; world <= 4; world++ {
			seen := make([]int, n)
			for rank := range world {
				o := base
				o.Shuffle, o.Seed, o.Rank, o.World = mode, 3, rank, world
				ids, _ := streamIDs(t, n, o)
				for _, id := range ids {
					seen[id]++
				}
			}
			for id, k := range seen {
				if k != 1 {
					t.Fatalf("shuffle %d, world %d: row %d sent %d times", mode, world, id, k)
				}
			}
		}
		// START_BATCH resumes with the same following rows.
		o = base
		o.Shuffle, o.Seed, o.Rank, o.World = mode, 5, 1, 3
		full, fb := streamIDs(t, n, o)
		o.StartBatch = 2
		rest, rb := streamIDs(t, n, o)
		if !slices.Equal(full[2*64:], rest) || rb[0] != 2 || !slices.Equal(fb[2:], rb) {
			t.Errorf("shuffle %d: START_BATCH 2 gave %d rows from batch %d, want %d", mode, len(rest), rb[0], len(full)-128)
		}
	}
}

// TestTensorShuffleBufferBounded checks that the shuffle buffer never
// holds more than SHUFFLE_BUFFER rows.
func TestTensorShuffleBufferBounded(t *testing.T) {
	b := types.NewBatch([]types.Type{types.TypText}, 1000)
	for i := range 1000 {
		b.Cols[0].AppendString("row")
		_ = i
	}
	ts := newTensorStream([]plan.Column{{Name: "s", Type: types.TypText}},
		plan.TensorOptions{BatchSize: 10, Shuffle: plan.ShuffleBuffer, ShuffleBuffer: 50, World: 1}, &frameRecorder{})
	for range 20 {
		if err := ts.add(b); err != nil {
			t.Fatal(err)
		}
		if ts.store.n > 50 || len(ts.store.cols[0].bytes) > 50 {
			t.Fatalf("shuffle buffer holds %d rows", ts.store.n)
		}
	}
	if err := ts.finish(); err != nil || ts.sent != 20000 {
		t.Fatalf("%d rows sent, %v", ts.sent, err)
	}
}

// TestTensorExactShuffleSpills streams an exact shuffle of a query's rows
// (mixed types, NULLs, text, ragged and fixed tensors) that outgrows its
// memory budget: the rows go to a temporary file, and the frames are byte
// for byte those of the shuffle in memory, resumed at START_BATCH too.
func TestTensorExactShuffleSpills(t *testing.T) {
	frames := func(opts plan.TensorOptions, budget int64) (fs [][]byte, files int) {
		t.Helper()
		defer func(b int64) { spillMin = b }(spillMin)
		spillMin = budget
		ct := mixedCopy(t, opts, 40)
		ct.env.TempFile = func(pattern string) (*os.File, error) {
			files++
			return os.CreateTemp(t.TempDir(), pattern)
		}
		var rec frameRecorder
		if _, err := ct.Run(&rec); err != nil {
			t.Fatal(err)
		}
		return rec.frames, files
	}
	opts := plan.TensorOptions{BatchSize: 7, Shuffle: plan.ShuffleExact, Seed: 3, World: 1}
	mem, files := frames(opts, 1<<40)
	if files != 0 || len(mem) < 20 {
		t.Fatalf("in memory: %d files, %d frames", files, len(mem))
	}
	// Shuffled rows keep their numerics, as float64s.
	nonzero := 0
	for _, p := range mem {
		f := decodeFrame(t, p)
		for r := range f.rows {
			if f.cols[9].null(r) {
				continue
			}
			x := math.Float64frombits(binary.LittleEndian.Uint64(f.cols[9].values[8*r:]))
			if x != 1.25 && x != -0.5 && x != 12345678.91 && x != 0 {
				t.Fatalf("shuffled numeric %v", x)
			}
			if x != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("shuffled numerics are all 0")
	}
	spilled, files := frames(opts, 2000)
	if files != 1 {
		t.Fatalf("a budget of 2000 bytes made %d files", files)
	}
	if len(spilled) != len(mem) {
		t.Fatalf("spilled: %d frames, in memory %d", len(spilled), len(mem))
	}
	for i := range mem {
		if !bytes.Equal(spilled[i], mem[i]) {
			t.Fatalf("frame %d differs once the rows are in a file", i)
		}
	}
	opts.StartBatch = 11
	rest, _ := frames(opts, 2000)
	if len(rest) != len(mem)-11 || !bytes.Equal(rest[0], mem[11]) || !bytes.Equal(rest[len(rest)-1], mem[len(mem)-1]) {
		t.Fatalf("START_BATCH 11 of the spilled rows: %d frames, not the last %d", len(rest), len(mem)-11)
	}
}

// firstWrite records how many batches the query had given when the
// stream wrote its first frame.
type firstWrite struct {
	op    *sliceOp
	at    int
	count int
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.count == 0 {
		w.at = w.op.i
	}
	w.count++
	return len(p), nil
}

// TestTensorShuffleStartsEarly: a buffer shuffle sends its first batch
// once it holds shuffleFill rows and has grown by a batch, not after the
// whole SHUFFLE_BUFFER has filled; every row still goes out once.
func TestTensorShuffleStartsEarly(t *testing.T) {
	op := &sliceOp{}
	for lo := 0; lo < 20000; lo += 100 {
		b := types.NewBatch([]types.Type{types.TypInt8}, 100)
		for i := lo; i < lo+100; i++ {
			b.Cols[0].AppendInt(int64(i))
		}
		op.bs = append(op.bs, b)
	}
	o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: 64, Shuffle: plan.ShuffleBuffer, ShuffleBuffer: 10000, World: 1}}
	ct := &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{Cols: []plan.Column{{Name: "id", Type: types.TypInt8}}}, Options: o}, op: op, opts: o}
	w := &firstWrite{op: op}
	sent, err := ct.Run(w)
	if err != nil || sent != 20000 {
		t.Fatalf("%d rows sent, %v", sent, err)
	}
	// 1024 rows fill, then 128 more send 64: the 12th batch of 100.
	if w.at > 12 {
		t.Fatalf("the first frame went out after %d of the query's batches, want by 12 (the buffer holds 100)", w.at)
	}
	ids, _ := streamIDs(t, 20000, o.Tensor)
	if len(ids) != 20000 || slices.IsSorted(ids) {
		t.Fatalf("%d rows, sorted %v", len(ids), slices.IsSorted(ids))
	}
	seen := make([]bool, 20000)
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("row %d sent twice", id)
		}
		seen[id] = true
	}
}

// TestSplitGroups cuts random lists of row groups among shards: the parts
// cover every row of every fragment group once, each shard's fragment
// rows number the same to one row, parts keep the groups' order, and the
// groups that cannot be cut go whole to the shards in turn.
func TestSplitGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		var groups []storage.RowGroup
		for k := range rng.IntN(12) {
			switch rng.IntN(6) {
			case 0:
				groups = append(groups, storage.RowGroup{Kind: storage.GroupBuffered})
			default:
				lo := int64(rng.IntN(100000))
				groups = append(groups, storage.RowGroup{Kind: storage.GroupFragment, Fragment: uint64(k), Start: lo, End: lo + int64(rng.IntN(3000))})
			}
		}
		world := 1 + rng.IntN(7)
		even := trial%2 == 1
		covered := map[[2]int64]int{} // (fragment, row) → times
		sizes := make([]int64, world)
		whole := make([]int, world)
		for rank := range world {
			last := -1
			for _, p := range splitGroups(groups, rank, world, even) {
				i := slices.IndexFunc(groups[last+1:], func(g storage.RowGroup) bool {
					return g.Kind == p.Kind && g.Fragment == p.Fragment && g.Start <= p.Start && p.End <= g.End
				})
				if i < 0 || p.Kind == storage.GroupFragment && p.Start >= p.End {
					t.Fatalf("trial %d: shard %d/%d: part %+v out of order or empty", trial, rank, world, p)
				}
				last += 1 + i
				if p.Kind != storage.GroupFragment {
					whole[rank]++
					continue
				}
				sizes[rank] += p.End - p.Start
				for r := p.Start; r < p.End; r++ {
					covered[[2]int64{int64(p.Fragment), r}]++
				}
			}
		}
		var rows int64
		unsplit := 0
		for _, g := range groups {
			if g.Kind != storage.GroupFragment {
				unsplit++
				continue
			}
			rows += g.End - g.Start
			for r := g.Start; r < g.End; r++ {
				if k := covered[[2]int64{int64(g.Fragment), r}]; k > 1 || k == 0 && !even {
					t.Fatalf("trial %d: row %d of fragment %d taken %d times", trial, r, g.Fragment, covered[[2]int64{int64(g.Fragment), r}])
				}
			}
		}
		if want := rows - rows%int64(world)*b2i(even); int64(len(covered)) != want {
			t.Fatalf("trial %d: %d rows taken, want %d of the groups' %d", trial, len(covered), want, rows)
		}
		for rank := range world {
			if d := sizes[rank] - rows/int64(world); d < 0 || d > 1 || even && d != 0 {
				t.Fatalf("trial %d: shard %d/%d has %d of %d rows", trial, rank, world, sizes[rank], rows)
			}
			if want := unsplit/world + min(1, max(0, unsplit%world-rank)); whole[rank] != want {
				t.Fatalf("trial %d: shard %d/%d has %d whole groups of %d", trial, rank, world, whole[rank], unsplit)
			}
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestTensorTextColumnsSpill: columns sent as text (dates, timestamps,
// uuid) keep their text through the exact shuffle's file.
func TestTensorTextColumnsSpill(t *testing.T) {
	ts := []types.Type{{Kind: types.Date}, {Kind: types.TimestampTZ}, {Kind: types.UUID}, types.TypInt4}
	rows := [][]string{
		{"2024-01-01", "2024-01-01 10:00:00+02", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "1"},
		{"1999-12-31", "infinity", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", "2"},
		{"NULL", "NULL", "NULL", "NULL"},
	}
	var cols []plan.Column
	for i, ty := range ts {
		cols = append(cols, plan.Column{Name: string(rune('a' + i)), Type: ty})
	}
	texts := func(budget int64) []string {
		t.Helper()
		defer func(b int64) { spillMin = b }(spillMin)
		spillMin = budget
		o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: 5, Shuffle: plan.ShuffleExact, Seed: 1, World: 1}}
		ct := &CopyTo{env: &Env{TempFile: func(p string) (*os.File, error) { return os.CreateTemp(t.TempDir(), p) }},
			n: &plan.CopyTo{Query: &plan.Values{Cols: cols}, Options: o}, op: &repeatOp{b: copyToBatch(t, ts, rows...), n: 40}, opts: o}
		var rec frameRecorder
		if _, err := ct.Run(&rec); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range rec.frames {
			f := decodeFrame(t, p)
			for _, c := range f.cols[:3] {
				out = append(out, string(c.values))
			}
		}
		return out
	}
	mem, spilled := texts(1<<40), texts(200)
	if len(mem) == 0 || !slices.Equal(mem, spilled) {
		t.Fatalf("in memory %q\nspilled %q", mem[:min(3, len(mem))], spilled[:min(3, len(spilled))])
	}
	if !strings.Contains(strings.Join(mem, ""), "2024-01-01 08:00:00+00") || !strings.Contains(strings.Join(mem, ""), "a0eebc99") {
		t.Fatalf("the text forms are missing: %q", mem[:3])
	}
}
