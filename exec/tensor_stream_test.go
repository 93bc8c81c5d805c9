package exec

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// frameRecorder keeps a copy of each Write: one frame each.
type frameRecorder struct{ frames [][]byte }

func (r *frameRecorder) Write(p []byte) (int, error) {
	r.frames = append(r.frames, bytes.Clone(p))
	return len(p), nil
}

// decodedCol is one column of a decoded frame.
type decodedCol struct {
	name                string
	kind, dtype, flags  uint8
	dims                []uint32
	valid, offs, shapes []byte
	values              []byte
	present             [4]bool
}

// decodedFrame is a frame as a client reads it.
type decodedFrame struct {
	batch uint64
	rows  int
	cols  []decodedCol
}

// decodeFrame reads a frame as docs/tensor-stream.md lays it out,
// checking magic, version, alignment and zero padding.
func decodeFrame(t *testing.T, p []byte) decodedFrame {
	t.Helper()
	le := binary.LittleEndian
	if string(p[:4]) != "DLTF" || le.Uint16(p[4:]) != 1 || le.Uint16(p[6:]) != 0 {
		t.Fatalf("bad header % x", p[:8])
	}
	if len(p)%64 != 0 {
		t.Fatalf("frame of %d bytes is not padded to 64", len(p))
	}
	hl := int(le.Uint32(p[8:]))
	f := decodedFrame{batch: le.Uint64(p[16:]), rows: int(le.Uint32(p[24:]))}
	ncols := int(le.Uint32(p[12:]))
	at := 32
	for range ncols {
		var c decodedCol
		n := int(le.Uint16(p[at:]))
		c.name = string(p[at+2 : at+2+n])
		at += 2 + n
		c.kind, c.dtype, c.flags = p[at], p[at+1], p[at+3]
		ndim := int(p[at+2])
		at += 4
		for range ndim {
			c.dims = append(c.dims, le.Uint32(p[at:]))
			at += 4
		}
		var bufs [4][]byte
		for k := range 4 {
			off, ln := le.Uint64(p[at:]), le.Uint64(p[at+8:])
			at += 16
			if off == 0 && ln == 0 {
				continue
			}
			if off%64 != 0 || int(off) < hl {
				t.Fatalf("column %s buffer %d at %d (header %d)", c.name, k, off, hl)
			}
			bufs[k] = p[off : off+ln]
			c.present[k] = true
		}
		c.valid, c.offs, c.shapes, c.values = bufs[0], bufs[1], bufs[2], bufs[3]
		if c.present[0] != (c.flags&1 != 0) {
			t.Fatalf("column %s: validity flag %d, buffer present %v", c.name, c.flags, c.present[0])
		}
		f.cols = append(f.cols, c)
	}
	if at != hl {
		t.Fatalf("descriptors end at %d, header_len %d", at, hl)
	}
	return f
}

func (c *decodedCol) null(i int) bool { return c.valid != nil && c.valid[i/8]&(1<<(i%8)) == 0 }

func (c *decodedCol) offset(i int) int { return int(binary.LittleEndian.Uint64(c.offs[8*i:])) }

// sliceOp returns its batches in turn.
type sliceOp struct {
	bs []*types.Batch
	i  int
}

func (o *sliceOp) Next() (*types.Batch, error) {
	if o.i == len(o.bs) {
		return nil, nil
	}
	o.i++
	return o.bs[o.i-1], nil
}

func (o *sliceOp) Close() {}

var mixedTypes = []types.Type{types.TensorOf(types.DTUint8, 2, 2), types.TensorOf(types.DTFloat32, types.Ragged),
	types.VectorOf(3), types.TypInt4, types.TypText, types.TypInt2, types.TypFloat8, types.TypBool, types.TypJSONB,
	{Kind: types.Numeric, Width: 10, Scale: 2}}

var mixedRows = [][]string{
	{"{{1,2},{3,255}}", "{0.5,-2}", "[1,2,3]", "1", "one", "10", "0.25", "true", `{"a": 1}`, "1.25"},
	{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	{"{{0,0},{0,9}}", "{}", "[0,0,7]", "-7", "", "-3", "-1e300", "false", "[]", "-0.50"},
	{"{{5,6},{7,8}}", "{1,2,3}", "[4,5,6]", "3", "three", "1", "2", "true", "3", "12345678.91"},
	{"{{9,9},{9,9}}", "{4}", "[7,8,9]", "4", "four", "2", "3", "false", "null", "0"},
}

func mixedCopy(t testing.TB, opts plan.TensorOptions, batches int) *CopyTo {
	b := copyToBatch(t, mixedTypes, mixedRows...)
	var cols []plan.Column
	for i, ty := range mixedTypes {
		cols = append(cols, plan.Column{Name: string(rune('a' + i)), Type: ty})
	}
	o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: opts}
	return &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{Cols: cols}, Options: o},
		op: &repeatOp{b: b, n: batches}, opts: o}
}

func TestTensorFrames(t *testing.T) {
	ct := mixedCopy(t, plan.TensorOptions{BatchSize: 4, World: 1}, 2)
	var rec frameRecorder
	n, err := ct.Run(&rec)
	if err != nil || n != 10 || len(rec.frames) != 3 {
		t.Fatalf("%d rows, %d frames, %v", n, len(rec.frames), err)
	}
	le := binary.LittleEndian
	for fi, p := range rec.frames {
		f := decodeFrame(t, p)
		want := []int{4, 4, 2}[fi]
		if f.batch != uint64(fi) || f.rows != want || len(f.cols) != len(mixedTypes) {
			t.Fatalf("frame %d: batch %d, %d rows, %d cols", fi, f.batch, f.rows, len(f.cols))
		}
		for r := range f.rows {
			src := mixedRows[(fi*4+r)%5]
			isNull := src[0] == "NULL"
			for j := range f.cols {
				if f.cols[j].null(r) != isNull {
					t.Fatalf("frame %d row %d col %d: null %v", fi, r, j, !isNull)
				}
			}
			img, rag, vec, i4, txt := &f.cols[0], &f.cols[1], &f.cols[2], &f.cols[3], &f.cols[4]
			if img.kind != 0 || img.dtype != 3 || !slices.Equal(img.dims, []uint32{2, 2}) || len(img.values) != 4*f.rows {
				t.Fatalf("image column %+v", img)
			}
			if rag.kind != 1 || rag.dtype != 9 || !slices.Equal(rag.dims, []uint32{0xFFFFFFFF}) {
				t.Fatalf("ragged column %+v", rag)
			}
			if vec.kind != 0 || vec.dtype != 9 || !slices.Equal(vec.dims, []uint32{3}) || i4.dtype != 5 || txt.kind != 2 || txt.dtype != 1 {
				t.Fatalf("columns %+v %+v %+v", vec, i4, txt)
			}
			if isNull {
				if !bytes.Equal(img.values[4*r:4*r+4], make([]byte, 4)) || rag.offset(r) != rag.offset(r+1) || txt.offset(r) != txt.offset(r+1) {
					t.Fatalf("NULL row %d not empty", r)
				}
				continue
			}
			var want [4]byte
			switch src[0] {
			case "{{1,2},{3,255}}":
				want = [4]byte{1, 2, 3, 255}
			case "{{0,0},{0,9}}":
				want = [4]byte{0, 0, 0, 9}
			case "{{5,6},{7,8}}":
				want = [4]byte{5, 6, 7, 8}
			default:
				want = [4]byte{9, 9, 9, 9}
			}
			if !bytes.Equal(img.values[4*r:4*r+4], want[:]) {
				t.Errorf("image row %d: % x", r, img.values[4*r:4*r+4])
			}
			lo, hi := rag.offset(r), rag.offset(r+1)
			if int(le.Uint32(rag.shapes[4*r:])) != hi-lo {
				t.Errorf("ragged row %d: shape %d, %d elements", r, le.Uint32(rag.shapes[4*r:]), hi-lo)
			}
			if src[1] == "{0.5,-2}" && (math.Float32frombits(le.Uint32(rag.values[4*lo:])) != 0.5 || math.Float32frombits(le.Uint32(rag.values[4*lo+4:])) != -2) {
				t.Errorf("ragged row %d values", r)
			}
			if got := txt.values[txt.offset(r):txt.offset(r+1)]; string(got) != src[4] {
				t.Errorf("text row %d: %q", r, got)
			}
			if got := int32(le.Uint32(i4.values[4*r:])); strconv.Itoa(int(got)) != src[3] {
				t.Errorf("int row %d: %d", r, got)
			}
			if got := math.Float32frombits(le.Uint32(vec.values[12*r+8:])); got != map[string]float32{"[1,2,3]": 3, "[0,0,7]": 7, "[4,5,6]": 6, "[7,8,9]": 9}[src[2]] {
				t.Errorf("vector row %d: %v", r, got)
			}
			if got := int16(le.Uint16(f.cols[5].values[2*r:])); strconv.Itoa(int(got)) != src[5] {
				t.Errorf("int2 row %d: %d", r, got)
			}
			if f.cols[6].dtype != 10 || f.cols[7].dtype != 1 || f.cols[8].kind != 2 || f.cols[8].dtype != 3 || f.cols[9].kind != 0 || f.cols[9].dtype != 10 {
				t.Errorf("scalar columns %+v", f.cols[6:])
			}
			// A numeric streams as the nearest float64.
			if got, want := math.Float64frombits(le.Uint64(f.cols[9].values[8*r:])), src[9]; strconv.FormatFloat(got, 'f', -1, 64) != strings.TrimSuffix(strings.TrimRight(want, "0"), ".") && !(got == 0 && want == "0") {
				t.Errorf("numeric row %d: %v, want %s", r, got, want)
			}
		}
	}
	// DROP_LAST drops the short frame; the count says the rows sent.
	ct = mixedCopy(t, plan.TensorOptions{BatchSize: 4, World: 1, DropLast: true}, 2)
	rec = frameRecorder{}
	if n, err := ct.Run(&rec); err != nil || n != 8 || len(rec.frames) != 2 {
		t.Fatalf("DROP_LAST: %d rows, %d frames, %v", n, len(rec.frames), err)
	}
	// A batch without NULLs has no validity buffer.
	ct = mixedCopy(t, plan.TensorOptions{BatchSize: 1, World: 1}, 1)
	rec = frameRecorder{}
	if _, err := ct.Run(&rec); err != nil {
		t.Fatal(err)
	}
	if f := decodeFrame(t, rec.frames[0]); f.cols[0].present[0] || f.cols[0].flags != 0 {
		t.Errorf("validity buffer without NULLs")
	}
	if f := decodeFrame(t, rec.frames[1]); !f.cols[0].present[0] || f.cols[0].valid[0] != 0 {
		t.Errorf("NULL row: validity %v", f.cols[0].valid)
	}
}

// TestTensorFramesNoAllocs checks that assembling and writing frames
// allocates nothing once the buffers have grown.
func TestTensorFramesNoAllocs(t *testing.T) {
	b := copyToBatch(t, mixedTypes, mixedRows...)
	var cols []plan.Column
	for i, ty := range mixedTypes {
		cols = append(cols, plan.Column{Name: string(rune('a' + i)), Type: ty})
	}
	f := newTensorFrames(cols)
	run := func() {
		for range 3 {
			for i := range b.Len() {
				if err := f.addRow(b.Cols, i); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.write(io.Discard, 7); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
	// The in-order path: runs of rows, written as pieces.
	run = func() {
		if err := f.addRange(b.Cols, 0, b.Len()); err != nil {
			t.Fatal(err)
		}
		if err := f.write(discardBuffers{}, 2); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per run of addRange and WriteBuffers", n)
	}
	// The shuffle path: rows through the store.
	st := newRowStore(len(cols))
	for i := range b.Len() {
		if err := st.set(i, b.Cols, i, f); err != nil {
			t.Fatal(err)
		}
	}
	run = func() {
		for i := range b.Len() {
			if err := st.set(b.Len()-1-i, b.Cols, i, f); err != nil {
				t.Fatal(err)
			}
			if err := f.addSlot(st, i); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.write(io.Discard, 1); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per run through the store", n)
	}
}

// BenchmarkTensorStream streams batches of 1024 rows of a float32[768]
// embedding and an int label in frames of 256 rows.
func BenchmarkTensorStream(b *testing.B) {
	ts := []types.Type{types.TensorOf(types.DTFloat32, 768), types.TypInt4}
	batch := types.NewBatch(ts, 1024)
	emb := make([]byte, 768*4)
	for i := range 1024 {
		batch.Cols[0].AppendBytes(emb)
		batch.Cols[1].AppendInt(int64(i))
	}
	cols := []plan.Column{{Name: "embedding", Type: ts[0]}, {Name: "label", Type: ts[1]}}
	o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: 256, World: 1}}
	b.SetBytes(int64(1024 * (768*4 + 4)))
	b.ReportAllocs()
	ct := &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{Cols: cols}, Options: o}, opts: o}
	ct.op = &repeatOp{b: batch, n: b.N}
	if _, err := ct.Run(io.Discard); err != nil {
		b.Fatal(err)
	}
}

// discardBuffers is a BuffersWriter that drops what it is given.
type discardBuffers struct{ io.Writer }

func (discardBuffers) WriteBuffers([][]byte) error { return nil }

// buffersRecorder is a BuffersWriter that keeps each frame, joined.
type buffersRecorder struct{ frameRecorder }

func (r *buffersRecorder) WriteBuffers(bufs [][]byte) error {
	var p []byte
	for _, b := range bufs {
		p = append(p, b...)
	}
	r.frames = append(r.frames, p)
	return nil
}

// reuseOp returns n batches of size rows through one reused batch, its
// memory overwritten by each Next as a scan's is: row r's uint8[4] value
// holds r's bytes, its int8 r; every 13th row is NULL.
type reuseOp struct {
	b          *types.Batch
	next, n    int
	size, null int
}

func (o *reuseOp) Next() (*types.Batch, error) {
	if o.next == o.n*o.size {
		return nil, nil
	}
	o.b.Reset()
	for r := o.next; r < o.next+o.size; r++ {
		if r%o.null == 0 {
			o.b.Cols[0].AppendNull()
		} else {
			o.b.Cols[0].AppendBytes(binary.LittleEndian.AppendUint32(nil, uint32(r)))
		}
		o.b.Cols[1].AppendInt(int64(r))
	}
	o.b.SetLen(o.size)
	o.next += o.size
	return o.b, nil
}

func (o *reuseOp) Close() {}

// TestTensorFramesBorrowed checks the paths that avoid copying a fixed
// column's values: in order, runs borrowed from the query's batch (a frame
// continued past the batch it started in must hold the rows as they were);
// shuffled, the store's row buffers taken by the frame. A vectored write
// must send the same bytes as a plain one, every row must come once with
// its own value, and NULLs must stay NULL.
func TestTensorFramesBorrowed(t *testing.T) {
	ts := []types.Type{types.TensorOf(types.DTUint8, 4), types.TypInt8}
	cols := []plan.Column{{Name: "v", Type: ts[0]}, {Name: "id", Type: ts[1]}}
	for _, tc := range []struct {
		null, start int
		shuffle     plan.CopyShuffle
	}{{1 << 30, 0, plan.ShuffleNone}, {13, 0, plan.ShuffleNone}, {13, 2, plan.ShuffleNone},
		{13, 0, plan.ShuffleBuffer}, {1 << 30, 1, plan.ShuffleBuffer}, {13, 0, plan.ShuffleExact}} {
		var out [2][][]byte
		for k, w := range []interface {
			io.Writer
		}{&frameRecorder{}, &buffersRecorder{}} {
			o := plan.CopyOptions{Format: plan.CopyTensor, Tensor: plan.TensorOptions{BatchSize: 7, World: 1,
				StartBatch: int64(tc.start), Shuffle: tc.shuffle, ShuffleBuffer: 15, Seed: 3}}
			op := &reuseOp{b: types.NewBatch(ts, 10), n: 10, size: 10, null: tc.null}
			ct := &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{Cols: cols}, Options: o}, op: op, opts: o}
			if _, err := ct.Run(w); err != nil {
				t.Fatal(err)
			}
			switch r := w.(type) {
			case *frameRecorder:
				out[k] = r.frames
			case *buffersRecorder:
				out[k] = r.frames
			}
		}
		if !slices.EqualFunc(out[0], out[1], bytes.Equal) {
			t.Fatalf("%+v: a vectored write sent other bytes", tc)
		}
		var ids []int64
		for _, p := range out[0] {
			f := decodeFrame(t, p)
			for i := range f.rows {
				id := int64(binary.LittleEndian.Uint64(f.cols[1].values[8*i:]))
				v := binary.LittleEndian.Uint32(f.cols[0].values[4*i:])
				if null := f.cols[0].null(i); null != (id%int64(tc.null) == 0) || null && v != 0 || !null && int64(v) != id {
					t.Fatalf("%+v: row %d of batch %d (id %d): value %d, null %v", tc, i, f.batch, id, v, null)
				}
				ids = append(ids, id)
			}
		}
		if n := 100 - 7*tc.start; len(ids) != n {
			t.Fatalf("%+v: %d rows, want %d", tc, len(ids), n)
		}
		if tc.shuffle == plan.ShuffleNone {
			for i, id := range ids {
				if id != int64(7*tc.start+i) {
					t.Fatalf("%+v: row %d has id %d", tc, i, id)
				}
			}
		} else if tc.start == 0 {
			sorted := slices.Sorted(slices.Values(ids))
			for i, id := range sorted {
				if id != int64(i) {
					t.Fatalf("%+v: ids %v are not each row once", tc, sorted)
				}
			}
		}
	}
}
