package stream

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// testCol is a column to encode as the spec lays it out.
type testCol struct {
	name     string
	kind     Kind
	code     uint8
	dims     []uint32
	validity []byte // nil: absent
	offsets  []uint64
	shapes   []uint32
	values   []byte
}

func pad(b []byte) []byte {
	for len(b)%Align != 0 {
		b = append(b, 0)
	}
	return b
}

// buildFrame encodes a frame per docs/tensor-stream.md.
func buildFrame(index uint64, rows uint32, cols []testCol) []byte {
	le := binary.LittleEndian
	hdrLen := headerSize
	for _, c := range cols {
		hdrLen += 2 + len(c.name) + 4 + 4*len(c.dims) + 64
	}
	bodyStart := (hdrLen + Align - 1) / Align * Align
	// lay out buffers
	type loc struct{ off, n uint64 }
	locs := make([][4]loc, len(cols))
	var body []byte
	for i, c := range cols {
		var offs []byte
		for _, o := range c.offsets {
			offs = le.AppendUint64(offs, o)
		}
		var shp []byte
		for _, s := range c.shapes {
			shp = le.AppendUint32(shp, s)
		}
		for k, b := range [][]byte{c.validity, offs, shp, c.values} {
			if len(b) == 0 {
				continue
			}
			locs[i][k] = loc{uint64(bodyStart + len(body)), uint64(len(b))}
			body = pad(append(body, b...))
		}
	}
	f := []byte("DLTF")
	f = le.AppendUint16(f, 1)
	f = le.AppendUint16(f, 0)
	f = le.AppendUint32(f, uint32(hdrLen))
	f = le.AppendUint32(f, uint32(len(cols)))
	f = le.AppendUint64(f, index)
	f = le.AppendUint32(f, rows)
	f = le.AppendUint32(f, 0)
	for i, c := range cols {
		f = le.AppendUint16(f, uint16(len(c.name)))
		f = append(f, c.name...)
		var flags uint8
		if c.validity != nil {
			flags = 1
		}
		f = append(f, uint8(c.kind), c.code, uint8(len(c.dims)), flags)
		for _, d := range c.dims {
			f = le.AppendUint32(f, d)
		}
		for _, l := range locs[i] {
			f = le.AppendUint64(f, l.off)
			f = le.AppendUint64(f, l.n)
		}
	}
	f = pad(f)
	return append(f, body...)
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func i32s(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func i64s(v ...int64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

func i16s(v ...int16) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, uint16(x))
	}
	return b
}

// sampleFrame has every kind: fixed float32 vectors, uint8 images, int32
// labels with a NULL, int64, int16, bool, a ragged float32 column and a text
// column with a NULL.
func sampleFrame() []byte {
	return buildFrame(5, 3, []testCol{
		{name: "embedding", kind: Fixed, code: uint8(Float32), dims: []uint32{2}, values: f32s(1, 2, 3, 4, 5, 6)},
		{name: "image", kind: Fixed, code: uint8(Uint8), dims: []uint32{2, 2}, values: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255}},
		{name: "label", kind: Fixed, code: uint8(Int32), validity: []byte{0b101}, values: i32s(7, 0, -9)},
		{name: "id", kind: Fixed, code: uint8(Int64), values: i64s(1, 2, 1<<40)},
		{name: "small", kind: Fixed, code: uint8(Int16), values: i16s(-1, 2, 300)},
		{name: "flag", kind: Fixed, code: uint8(Bool), values: []byte{1, 0, 1}},
		{name: "r", kind: Ragged, code: uint8(Float32), dims: []uint32{ragged}, offsets: []uint64{0, 1, 1, 4}, shapes: []uint32{1, 0, 3}, values: f32s(1.5, 1, 2, 3)},
		{name: "text", kind: BytesKind, code: uint8(Text), validity: []byte{0b011}, offsets: []uint64{0, 5, 8, 8}, values: []byte("hellojé")},
	})
}

func parse(t *testing.T, frame []byte) *Batch {
	t.Helper()
	var buf []byte
	var b Batch
	if err := ParseFrame(AlignedCopy(&buf, frame), &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func eq[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func TestParseFrameAllKinds(t *testing.T) {
	b := parse(t, sampleFrame())
	if b.Index != 5 || b.Rows != 3 || len(b.Columns) != 8 {
		t.Fatalf("header: index %d rows %d cols %d", b.Index, b.Rows, len(b.Columns))
	}
	emb := b.Column("embedding")
	eq(t, "embedding", emb.Float32(), []float32{1, 2, 3, 4, 5, 6})
	eq(t, "embedding shape", emb.Shape(), []int{3, 2})
	img := b.Column("image")
	eq(t, "image", img.Uint8(), []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255})
	eq(t, "image shape", img.Shape(), []int{3, 2, 2})
	lab := b.Column("label")
	eq(t, "label", lab.Int32(), []int32{7, 0, -9})
	eq(t, "label shape", lab.Shape(), []int{3})
	if lab.IsNull(0) || !lab.IsNull(1) || lab.IsNull(2) || !lab.HasNulls() {
		t.Fatal("label validity")
	}
	if emb.IsNull(1) || emb.HasNulls() {
		t.Fatal("embedding has no validity buffer, so no NULLs")
	}
	eq(t, "id", b.Column("id").Int64(), []int64{1, 2, 1 << 40})
	eq(t, "small", b.Column("small").Int16(), []int16{-1, 2, 300})
	eq(t, "flag", b.Column("flag").Bool(), []bool{true, false, true})
	r := b.Column("r")
	if r.Kind != Ragged {
		t.Fatalf("r kind %d", r.Kind)
	}
	eq(t, "r shape", r.Shape(), []int{3, -1})
	vals := r.Float32()
	for i, want := range [][]float32{{1.5}, {}, {1, 2, 3}} {
		lo, hi := r.Row(i)
		eq(t, "r row", vals[lo:hi], want)
		eq(t, "r row shape", r.RowShape(i), []uint32{uint32(len(want))})
	}
	txt := b.Column("text")
	if txt.Logical != Text || txt.String(0) != "hello" || string(txt.Bytes(1)) != "jé" || txt.String(2) != "" || !txt.IsNull(2) || txt.IsNull(1) {
		t.Fatalf("text: %q %q %q", txt.String(0), txt.String(1), txt.String(2))
	}
	if b.Column("nope") != nil {
		t.Fatal("missing column found")
	}
}

func TestParseFrameAlignment(t *testing.T) {
	frame := sampleFrame()
	// Whatever the source's address, the copy is aligned and every buffer
	// with it.
	for shift := 0; shift < 8; shift++ {
		src := append(make([]byte, shift), frame...)[shift:]
		b := parse(t, src)
		for _, c := range b.Columns {
			if len(c.values) > 0 && uintptr(unsafe.Pointer(&c.values[0]))%Align != 0 {
				t.Fatalf("column %s values misaligned", c.Name)
			}
		}
	}
	// A misaligned frame is refused, not wrapped.
	var buf []byte
	al := AlignedCopy(&buf, append(frame, 0))
	_ = al
	mis := buf[:cap(buf)]
	off := int(uintptr(unsafe.Pointer(&mis[0])) % Align)
	start := (Align - off) % Align
	copy(mis[start+4:], frame)
	var b Batch
	if err := ParseFrame(mis[start+4:start+4+len(frame)], &b); err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Fatalf("misaligned frame: %v", err)
	}
}

func TestParseFrameErrors(t *testing.T) {
	good := sampleFrame()
	mut := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"short", good[:10], "shorter than the header"},
		{"magic", mut(func(b []byte) []byte { copy(b, "PGCO"); return b }), "bad frame magic"},
		{"version", mut(func(b []byte) []byte { b[4] = 2; return b }), "frame version 2"},
		{"header length", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 1<<30); return b }), "header length"},
		{"truncated", good[:len(good)-64], "outside"},
		{"kind", mut(func(b []byte) []byte { b[headerSize+2+len("embedding")] = 9; return b }), "unknown column kind"},
		{"dtype", mut(func(b []byte) []byte { b[headerSize+2+len("embedding")+1] = 42; return b }), "unknown dtype"},
	} {
		var buf []byte
		var b Batch
		err := ParseFrame(AlignedCopy(&buf, tc.frame), &b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestParseFrameWrongAccessorPanics(t *testing.T) {
	b := parse(t, sampleFrame())
	defer func() {
		if recover() == nil {
			t.Fatal("Int64 on a float32 column did not panic")
		}
	}()
	b.Column("embedding").Int64()
}

func TestParseFrameZeroAllocs(t *testing.T) {
	frame := sampleFrame()
	var buf []byte
	var b Batch
	run := func() {
		if err := ParseFrame(AlignedCopy(&buf, frame), &b); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per frame, want 0", n)
	}
}

func TestCopySQL(t *testing.T) {
	for _, tc := range []struct {
		q    string
		o    Options
		want string
	}{
		{"samples", Options{}, "COPY samples TO STDOUT WITH (FORMAT tensor)"},
		{"select a from t;", Options{BatchSize: 64, Shuffle: true, Seed: 7, Rank: 1, World: 4, DropLast: true, ShuffleBuffer: 100, StartBatch: 3},
			"COPY (select a from t) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 64, SHUFFLE true, SEED 7, SHUFFLE_BUFFER 100, SHARD '1/4', DROP_LAST true, START_BATCH 3)"},
		{"WITH x AS (SELECT 1) SELECT * FROM x", Options{ExactShuffle: true}, "COPY (WITH x AS (SELECT 1) SELECT * FROM x) TO STDOUT WITH (FORMAT tensor, SHUFFLE 'exact')"},
		{"t", Options{Version: "3", Epoch: "run 'x':2"}, "COPY t TO STDOUT WITH (FORMAT tensor, VERSION '3', EPOCH 'run ''x'':2')"},
	} {
		got, err := CopySQL(tc.q, tc.o)
		if err != nil || got != tc.want {
			t.Errorf("CopySQL(%q) = %q, %v; want %q", tc.q, got, err, tc.want)
		}
	}
	if _, err := CopySQL("t", Options{Rank: 4, World: 4}); err == nil {
		t.Error("shard 4/4 accepted")
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add(sampleFrame())
	var buf []byte
	f.Fuzz(func(t *testing.T, frame []byte) {
		var b Batch
		if ParseFrame(AlignedCopy(&buf, frame), &b) != nil {
			return
		}
		for i := range b.Columns {
			c := &b.Columns[i]
			for r := 0; r < b.Rows; r++ {
				c.IsNull(r)
				switch c.Kind {
				case BytesKind:
					c.Bytes(r)
				case Ragged:
					c.Row(r)
					c.RowShape(r)
				}
			}
		}
	})
}

func BenchmarkParseFrame(b *testing.B) {
	frame := sampleFrame()
	var buf []byte
	var batch Batch
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := ParseFrame(AlignedCopy(&buf, frame), &batch); err != nil {
			b.Fatal(err)
		}
	}
}
