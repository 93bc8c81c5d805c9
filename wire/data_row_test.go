package wire

import (
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/types"
)

func TestAppendDataRowRoundTrip(t *testing.T) {
	b := types.NewBatch([]types.Type{types.TypInt8, types.TypText, types.TypBool, types.TypFloat8}, 4)
	b.Cols[0].AppendInt(-42)
	b.Cols[1].AppendString("héllo, wörld")
	b.Cols[2].AppendBool(true)
	b.Cols[3].AppendFloat(1.5)

	b.Cols[0].AppendNull()
	b.Cols[1].AppendString("")
	b.Cols[2].AppendNull()
	b.Cols[3].AppendFloat(-0.25)

	b.Cols[0].AppendInt(1 << 40)
	b.Cols[1].AppendNull()
	b.Cols[2].AppendBool(false)
	b.Cols[3].AppendNull()

	want := [][]*string{
		{ptr("-42"), ptr("héllo, wörld"), ptr("t"), ptr("1.5")},
		{nil, ptr(""), nil, ptr("-0.25")},
		{ptr("1099511627776"), nil, ptr("f"), nil},
	}
	var buf []byte
	for i, row := range want {
		buf = appendDataRow(buf[:0], b.Cols, i)
		if buf[0] != 'D' {
			t.Fatalf("row %d: type %q", i, buf[0])
		}
		var dr pgproto3.DataRow
		if err := dr.Decode(buf[5:]); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if got := int(uint32(buf[1])<<24 | uint32(buf[2])<<16 | uint32(buf[3])<<8 | uint32(buf[4])); got != len(buf)-1 {
			t.Fatalf("row %d: length field %d, message %d", i, got, len(buf)-1)
		}
		if len(dr.Values) != len(row) {
			t.Fatalf("row %d: %d values", i, len(dr.Values))
		}
		for j, w := range row {
			got := dr.Values[j]
			switch {
			case w == nil && got != nil:
				t.Errorf("row %d col %d = %q, want NULL", i, j, got)
			case w != nil && (got == nil || string(got) != *w):
				t.Errorf("row %d col %d = %q, want %q", i, j, got, *w)
			}
		}
		// pgproto3 encodes the same bytes.
		enc, err := dr.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(enc) != string(buf) {
			t.Errorf("row %d: encoding differs from pgproto3's\n got %x\nwant %x", i, buf, enc)
		}
	}
}

func TestAppendDataRowNoColumns(t *testing.T) {
	buf := appendDataRow(nil, nil, 0)
	if string(buf) != "D\x00\x00\x00\x06\x00\x00" {
		t.Fatalf("empty DataRow = %q", buf)
	}
}

func ptr(s string) *string { return &s }

// rowsBatch returns a batch of n (int8, text) rows.
func rowsBatch(n int) *types.Batch {
	b := types.NewBatch([]types.Type{types.TypInt8, types.TypText, types.TypFloat8}, n)
	for i := 0; i < n; i++ {
		b.Cols[0].AppendInt(int64(i) * 7919)
		b.Cols[1].AppendString("value " + strconv.Itoa(i))
		b.Cols[2].AppendFloat(float64(i) / 3)
	}
	return b
}

func TestAppendDataRowAllocs(t *testing.T) {
	b := rowsBatch(types.BatchSize)
	buf := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(10, func() {
		buf = buf[:0]
		for i := 0; i < b.Len(); i++ {
			buf = appendDataRow(buf, b.Cols, i)
		}
	})
	if allocs != 0 {
		t.Fatalf("encoding a batch allocates %.1f times, want 0", allocs)
	}
}

// TestAppendDataRowBinaryAllocs: binary results, tensors and vectors
// among them, encode without allocating once the codec has its scratch.
func TestAppendDataRowBinaryAllocs(t *testing.T) {
	b := rowsBatch(types.BatchSize)
	vec := types.NewVec(types.VectorOf(4), types.BatchSize)
	img := types.NewVec(types.TensorOf(types.DTUint8, 2, 2), types.BatchSize)
	for i := 0; i < b.Len(); i++ {
		vec.AppendBytes(make([]byte, 16))
		img.AppendBytes([]byte{1, 2, 3, byte(i)})
	}
	b.Cols = append(b.Cols, vec, img)
	formats := []int16{1, 1, 0, 1, 1}
	var codec types.BinaryCodec
	buf := make([]byte, 0, 1<<22)
	allocs := testing.AllocsPerRun(10, func() {
		buf = buf[:0]
		for i := 0; i < b.Len(); i++ {
			buf = appendDataRowFormats(buf, b.Cols, i, formats, &codec)
		}
	})
	if allocs != 0 {
		t.Fatalf("encoding a batch in binary allocates %.1f times, want 0", allocs)
	}
}

func BenchmarkAppendDataRow(b *testing.B) {
	batch := rowsBatch(types.BatchSize)
	buf := make([]byte, 0, flushThreshold*2)
	b.ReportAllocs()
	b.ResetTimer()
	var bytes int
	for n := 0; n < b.N; n++ {
		for i := 0; i < batch.Len(); i++ {
			buf = appendDataRow(buf, batch.Cols, i)
			if len(buf) >= flushThreshold {
				bytes += len(buf)
				buf = buf[:0]
			}
		}
	}
	b.SetBytes(int64(bytes / max(b.N, 1)))
}
