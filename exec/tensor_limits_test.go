package exec

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// tensorCopyOf returns a tensor stream of n copies of b, whose columns
// have types ts, named a, b, c...
func tensorCopyOf(b *types.Batch, ts []types.Type, opts plan.TensorOptions, n int) *CopyTo {
	var cols []plan.Column
	for i, ty := range ts {
		cols = append(cols, plan.Column{Name: string(rune('a' + i)), Type: ty})
	}
	o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: opts}
	return &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{Cols: cols}, Options: o},
		op: &repeatOp{b: b, n: n}, opts: o}
}

// TestTensorFrameCap checks that BATCH_SIZE rows of the columns' fixed
// widths are checked against the frame limit before the stream starts.
func TestTensorFrameCap(t *testing.T) {
	check := func(batch int, ts ...types.Type) error {
		t.Helper()
		var cols []plan.Column
		for i, ty := range ts {
			cols = append(cols, plan.Column{Name: string(rune('t' + i)), Type: ty})
		}
		n := &plan.CopyTo{Query: &plan.Values{Cols: cols},
			Options: plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: batch, World: 1}}}
		_, err := NewCopyTo(&Env{}, n)
		return err
	}
	err := check(1<<20, types.VectorOf(16000))
	want := "tensor stream frame of 1048576 rows of column t (vector(16000), 64000 bytes a row) would be 67108995456 bytes, over the 1 GB frame limit; lower BATCH_SIZE"
	if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded || err.Error() != want {
		t.Fatalf("got %v, want 54000 %q", err, want)
	}
	// The hint's batch size is the largest that fits.
	hint := pgerror.Convert(err).Hint
	if hint != "Frames of up to 16777 rows fit." {
		t.Errorf("hint %q", hint)
	}
	if err := check(16777, types.VectorOf(16000)); err != nil {
		t.Errorf("16777 rows of vector(16000): %v", err)
	}
	if err := check(16778, types.VectorOf(16000)); pgerror.GetCode(err) != pgerror.ProgramLimitExceeded {
		t.Errorf("16778 rows of vector(16000): %v", err)
	}
	// The widest column is named; the frame counts them all.
	err = check(4096, types.TypInt8, types.TensorOf(types.DTUint8, 512, 512), types.TypText)
	if !strings.Contains(err.Error(), "4096 rows of column u (uint8[512][512], 262144 bytes a row) would be 1073809928 bytes") {
		t.Errorf("got %v", err)
	}
	// A type declared before types were bounded, whose size overflows.
	err = check(1, types.TensorOf(types.DTFloat64, math.MaxInt32, math.MaxInt32, math.MaxInt32))
	if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded || !strings.Contains(err.Error(), "would be more than 9223372036854775807 bytes") ||
		pgerror.Convert(err).Hint != "Not even one row of these columns fits in a frame." {
		t.Errorf("got %v (%s)", err, pgerror.Convert(err).Hint)
	}
	err = check(1, types.TensorOf(types.DTUint8, 100000, 100000))
	if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded || !strings.Contains(err.Error(), "10000000000 bytes a row") {
		t.Errorf("got %v", err)
	}
	// Large but legal batches of narrow rows, and ragged columns, whose
	// values are checked as frames fill.
	if err := check(1<<20, types.TypInt4, types.TensorOf(types.DTFloat32, 64), types.TensorOf(types.DTFloat32, types.Ragged), types.TypText); err != nil {
		t.Errorf("BATCH_SIZE 1048576 of narrow rows: %v", err)
	}
}

// TestTensorLargeBatchStreams streams frames of the largest BATCH_SIZE
// of narrow rows.
func TestTensorLargeBatchStreams(t *testing.T) {
	ts := []types.Type{types.TypInt4, types.TensorOf(types.DTUint8, 4)}
	b := copyToBatch(t, ts, []string{"1", "{1,2,3,4}"}, []string{"NULL", "NULL"})
	ct := tensorCopyOf(b, ts, plan.TensorOptions{BatchSize: 1 << 20, World: 1}, 1<<19+1)
	var rec frameRecorder
	sent, err := ct.Run(&rec)
	if err != nil || sent != 1<<20+2 || len(rec.frames) != 2 {
		t.Fatalf("%d rows in %d frames, %v", sent, len(rec.frames), err)
	}
	if f := decodeFrame(t, rec.frames[0]); f.rows != 1<<20 {
		t.Fatalf("first frame of %d rows", f.rows)
	}
}

// raggedBatch returns a batch of rows float32[] values of elems elements
// and rows text values of as many bytes.
func raggedBatch(rows, elems int) *types.Batch {
	b := types.NewBatch([]types.Type{types.TensorOf(types.DTFloat32, types.Ragged), types.TypText}, rows)
	val := binary.LittleEndian.AppendUint32(nil, uint32(elems))
	val = append(val, make([]byte, 4*elems)...)
	for range rows {
		b.Cols[0].AppendBytes(val)
		b.Cols[1].AppendString(strings.Repeat("x", elems))
	}
	b.SetLen(rows)
	return b
}

// TestTensorRaggedFrameCap checks that the values of ragged and bytes
// columns stop a frame at the frame limit as it fills, on every path that
// builds frames: in order, through the shuffle buffer, exactly shuffled
// (in memory and spilled).
func TestTensorRaggedFrameCap(t *testing.T) {
	defer func(l int64) { tensorFrameLimit = l }(tensorFrameLimit)
	tensorFrameLimit = 64 << 10
	ts := []types.Type{types.TensorOf(types.DTFloat32, types.Ragged), types.TypText}
	b := raggedBatch(100, 1000) // 5000 bytes a row
	for _, sh := range []plan.CopyShuffle{plan.ShuffleNone, plan.ShuffleBuffer, plan.ShuffleExact} {
		for _, spill := range []bool{false, true} {
			if spill && sh != plan.ShuffleExact {
				continue
			}
			run := func(batch int) ([][]byte, error) {
				defer func(b int64) { spillMin = b }(spillMin)
				if spill {
					spillMin = 1000
				}
				ct := tensorCopyOf(b, ts, plan.TensorOptions{BatchSize: batch, Shuffle: sh, ShuffleBuffer: 100, World: 1}, 3)
				ct.env.TempFile = func(pattern string) (*os.File, error) { return os.CreateTemp(t.TempDir(), pattern) }
				var rec frameRecorder
				_, err := ct.Run(&rec)
				return rec.frames, err
			}
			frames, err := run(64)
			// 12 rows fit (15 of column a when a frame takes a run of
			// rows a column at a time).
			want := "tensor stream frame of column a (float32[]) would pass the 65536 bytes frame limit after 12 of its 64 rows; lower BATCH_SIZE"
			if sh == plan.ShuffleNone {
				want = strings.Replace(want, "12", "15", 1)
			}
			if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded || err.Error() != want {
				t.Errorf("shuffle %d, spilled %v: got %v, want %q", sh, spill, err, want)
			}
			if len(frames) != 0 {
				t.Errorf("shuffle %d, spilled %v: %d frames before the error", sh, spill, len(frames))
			}
			frames, err = run(12)
			if err != nil || len(frames) != 25 {
				t.Errorf("shuffle %d, spilled %v, BATCH_SIZE 12: %d frames, %v", sh, spill, len(frames), err)
			}
			for _, f := range frames {
				if int64(len(f)) > tensorFrameLimit {
					t.Errorf("a frame of %d bytes", len(f))
				}
			}
		}
	}
}

// TestTensorShuffleBufferCap checks that the shuffle buffer's memory is
// bounded: a SHUFFLE_BUFFER of wide rows is refused once its slots pass
// the limit, and NULL vectors cost their slots nothing.
func TestTensorShuffleBufferCap(t *testing.T) {
	// A server budget of 2 MB: the buffer of 1000 rows of 4 kB values
	// passes it as it fills, one of 100 rows fits.
	mon := NewMemMonitor("server", 2<<20)
	ts := []types.Type{types.TensorOf(types.DTFloat32, types.Ragged), types.TypText}
	ct := tensorCopyOf(raggedBatch(100, 1000), ts, plan.TensorOptions{BatchSize: 10, Shuffle: plan.ShuffleBuffer, ShuffleBuffer: 1000, World: 1}, 10)
	ct.env.Mem = mon
	_, err := ct.Run(&frameRecorder{})
	var pe *pgerror.Error
	if !errors.As(err, &pe) || pe.Code != pgerror.OutOfMemory ||
		!strings.Contains(pe.Detail, "in a tensor stream's shuffle buffer") ||
		!strings.HasPrefix(pe.Hint, "The shuffle buffer of 1000 rows held ") || !strings.HasSuffix(pe.Hint, "; lower SHUFFLE_BUFFER.") {
		t.Fatalf("got %v (%+v)", err, pe)
	}
	ct.Close()
	if used := mon.Used(); used != 0 {
		t.Fatalf("the failed stream left %d bytes reserved", used)
	}
	ct = tensorCopyOf(raggedBatch(100, 1000), ts, plan.TensorOptions{BatchSize: 10, Shuffle: plan.ShuffleBuffer, ShuffleBuffer: 100, World: 1}, 10)
	ct.env.Mem = mon
	if _, err := ct.Run(&frameRecorder{}); err != nil {
		t.Fatalf("a buffer of 100 rows: %v", err)
	}

	// 2000 NULL vector(16000) rows through a buffer of 2000: 128 MB if
	// each held a zero vector, a few bytes a slot instead.
	vt := []types.Type{types.VectorOf(16000)}
	nb := types.NewBatch(vt, 100)
	for range 100 {
		nb.Cols[0].AppendNull()
	}
	nb.SetLen(100)
	ts2 := newTensorStream([]plan.Column{{Name: "v", Type: vt[0]}},
		plan.TensorOptions{BatchSize: 16, Shuffle: plan.ShuffleBuffer, ShuffleBuffer: 2000, World: 1}, discardWriter{})
	for range 20 {
		if err := ts2.add(nb); err != nil {
			t.Fatal(err)
		}
	}
	if ts2.store.held > 200<<10 {
		t.Errorf("2000 NULL vectors hold %d bytes in the shuffle buffer", ts2.store.held)
	}
	if err := ts2.finish(); err != nil || ts2.sent != 2000 {
		t.Fatalf("%d rows sent, %v", ts2.sent, err)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestTensorExactShuffleIDCap checks that an exact shuffle holds at most
// maxShuffleIDs rows' offsets once its rows are in a file.
func TestTensorExactShuffleIDCap(t *testing.T) {
	defer func(n int, b int64) { maxShuffleIDs, spillMin = n, b }(maxShuffleIDs, spillMin)
	maxShuffleIDs, spillMin = 150, 1000
	ts := []types.Type{types.TensorOf(types.DTFloat32, types.Ragged), types.TypText}
	run := func(n int) error {
		ct := tensorCopyOf(raggedBatch(100, 10), ts, plan.TensorOptions{BatchSize: 10, Shuffle: plan.ShuffleExact, World: 1}, n)
		ct.env.TempFile = func(pattern string) (*os.File, error) { return os.CreateTemp(t.TempDir(), pattern) }
		_, err := ct.Run(&frameRecorder{})
		return err
	}
	err := run(2)
	if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded ||
		err.Error() != "SHUFFLE 'exact' of more than 150 rows would hold more than 1200 bytes of row ids; use SHUFFLE true, or SHARD to split the rows" {
		t.Fatalf("got %v", err)
	}
	if err := run(1); err != nil {
		t.Fatalf("100 rows: %v", err)
	}
}

// TestTensorFrameReserved checks that a stream takes its frame's memory
// from the server's budget before it starts, and gives it back at Close.
func TestTensorFrameReserved(t *testing.T) {
	mon := NewMemMonitor("server", 6<<20)
	cols := []plan.Column{{Name: "v", Type: types.VectorOf(1000)}}
	stream := func(batch int) (*CopyTo, error) {
		n := &plan.CopyTo{Query: &plan.Values{Cols: cols},
			Options: plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: batch, World: 1}}}
		return NewCopyTo(&Env{Mem: mon}, n)
	}
	// 1024 rows of 4000 bytes: 4 MB, within the budget; while it is
	// held, a second stream of as much does not fit.
	c, err := stream(1024)
	if err != nil {
		t.Fatal(err)
	}
	if used := mon.Used(); used < 4_096_000 {
		t.Fatalf("a stream of 4 MB frames reserved %d bytes", used)
	}
	if _, err := stream(1024); pgerror.GetCode(err) != pgerror.OutOfMemory {
		t.Fatalf("a second stream past the budget: %v", err)
	}
	c.Close()
	if used := mon.Used(); used != 0 {
		t.Fatalf("after Close, %d bytes reserved", used)
	}
	if c, err = stream(1024); err != nil {
		t.Fatalf("after the first stream's Close: %v", err)
	}
	c.Close()
}
