package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

var allCompressions = []Compression{CompressionNone, CompressionZstd, CompressionLZ4, CompressionS2}

// colChunkTestTypes has one type of every column kind and layout.
var colChunkTestTypes = []types.Type{
	types.TypBool, types.TypInt2, types.TypInt4, types.TypInt8, types.TypFloat4, types.TypFloat8,
	types.TypText, {Kind: types.Varchar, Width: 20}, types.TypBytea, types.TypJSON, types.TypJSONB,
	types.VectorOf(3), {Kind: types.Vector},
	types.TensorOf(types.DTFloat32, 4), types.TensorOf(types.DTUint8, 2, 3, 3), types.TensorOf(types.DTInt8, 5),
	types.TensorOf(types.DTFloat16, 5), types.TensorOf(types.DTBFloat16, 2, 2), types.TensorOf(types.DTInt16, 3),
	types.TensorOf(types.DTInt32, 8), types.TensorOf(types.DTInt64, 2), types.TensorOf(types.DTFloat64, 3),
	types.TensorOf(types.DTBool, 7), types.TensorOf(types.DTFloat32, 0),
	types.TensorOf(types.DTFloat32, types.Ragged), types.TensorOf(types.DTInt16, types.Ragged, 3),
	types.TensorOf(types.DTUint8, 2, types.Ragged, types.Ragged), types.TensorOf(types.DTBFloat16, types.Ragged),
}

var specialFloats = []float64{0, math.Copysign(0, -1), 1, -1, math.NaN(), math.Inf(1), math.Inf(-1),
	math.MaxFloat64, math.SmallestNonzeroFloat64, 1.5e-300}

var sampleTexts = []string{"", "a", "abc", "héllo wörld", "日本語テキスト", "🙂🙃", "zzz",
	"a long text value that is longer than sixty-four bytes, so that zone maps have to cut it"}

// genVec returns n random rows of type t; with nulls about a quarter are NULL.
func genVec(rng *rand.Rand, t types.Type, n int, nulls bool) *types.Vec {
	v := types.NewVec(t, n)
	for range n {
		if nulls && rng.IntN(4) == 0 {
			v.AppendNull()
			continue
		}
		appendRandom(rng, v)
	}
	return v
}

func appendRandom(rng *rand.Rand, v *types.Vec) {
	t := v.Type
	switch t.Kind {
	case types.Bool:
		v.AppendBool(rng.IntN(2) == 1)
	case types.Int2:
		v.AppendInt(int64(int16(rng.Uint32())))
	case types.Int4:
		v.AppendInt(int64(int32(rng.Uint32())))
	case types.Int8:
		v.AppendInt(int64(rng.Uint64()))
	case types.Float4, types.Float8:
		f := specialFloats[rng.IntN(len(specialFloats))]
		if rng.IntN(2) == 0 {
			f = rng.NormFloat64() * 1e3
		}
		if t.Kind == types.Float4 {
			f = float64(float32(f))
		}
		v.AppendFloat(f)
	case types.Text, types.Varchar:
		v.AppendString(sampleTexts[rng.IntN(len(sampleTexts))])
	case types.JSON, types.JSONB:
		v.AppendString(fmt.Sprintf(`{"a": %d, "b": [1, 2]}`, rng.IntN(1000)))
	case types.Bytea:
		b := make([]byte, rng.IntN(40))
		fillRandom(rng, b)
		v.AppendBytes(b)
	case types.Vector:
		dim := t.Width
		if dim == 0 {
			dim = 1 + rng.IntN(6)
		}
		var b []byte
		for range dim {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(rng.NormFloat64())))
		}
		v.AppendBytes(b)
	case types.Tensor:
		var b []byte
		elems := 1
		if t.Ragged() {
			for _, d := range t.Shape {
				if d == types.Ragged {
					d = rng.IntN(4)
				}
				b = binary.LittleEndian.AppendUint32(b, uint32(d))
				elems *= d
			}
		} else {
			elems = t.FixedElems()
		}
		el := make([]byte, elems*t.DType.Size())
		fillRandom(rng, el)
		if t.DType == types.DTBool {
			for i := range el {
				el[i] &= 1
			}
		}
		v.AppendBytes(append(b, el...))
	default:
		panic("no generator for " + t.String())
	}
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// requireRowsEqual fails unless rows [0,n) of got equal rows [from,from+n)
// of want (floats bit for bit, NULL slots ignored).
func requireRowsEqual(t *testing.T, got *types.Vec, gotFrom int, want *types.Vec, from, n int) {
	t.Helper()
	if got.Len()-gotFrom < n {
		t.Fatalf("got %d rows, want %d", got.Len()-gotFrom, n)
	}
	for k := range n {
		i, j := gotFrom+k, from+k
		if got.Nulls[i] != want.Nulls[j] {
			t.Fatalf("row %d: null %v, want %v", k, got.Nulls[i], want.Nulls[j])
		}
		if want.Nulls[j] {
			if got.Type.Phys() == types.PhysBytes && len(got.GetBytes(i)) != 0 {
				t.Fatalf("row %d: NULL holds %d bytes", k, len(got.GetBytes(i)))
			}
			continue
		}
		switch want.Type.Phys() {
		case types.PhysBool:
			if got.Bools[i] != want.Bools[j] {
				t.Fatalf("row %d: %v, want %v", k, got.Bools[i], want.Bools[j])
			}
		case types.PhysInt:
			if got.Ints[i] != want.Ints[j] {
				t.Fatalf("row %d: %d, want %d", k, got.Ints[i], want.Ints[j])
			}
		case types.PhysFloat:
			if math.Float64bits(got.Floats[i]) != math.Float64bits(want.Floats[j]) {
				t.Fatalf("row %d: %v, want %v", k, got.Floats[i], want.Floats[j])
			}
		default:
			if string(got.GetBytes(i)) != string(want.GetBytes(j)) {
				t.Fatalf("row %d: %x, want %x", k, got.GetBytes(i), want.GetBytes(j))
			}
		}
	}
}

func mustEncode(t testing.TB, typ types.Type, v *types.Vec, from, to int, comp Compression) []byte {
	t.Helper()
	b, _, err := encodeColChunk(nil, typ, v, from, to, comp)
	if err != nil {
		t.Fatalf("encode %s rows [%d,%d) %s: %v", typ, from, to, comp, err)
	}
	return b
}

func TestColChunkRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range colChunkTestTypes {
		for _, nulls := range []bool{false, true} {
			for _, comp := range allCompressions {
				t.Run(fmt.Sprintf("%s/nulls=%v/%s", typ, nulls, comp), func(t *testing.T) {
					v := genVec(rng, typ, 300, nulls)
					// Decode into a Vec that already holds rows: decoding appends.
					out := genVec(rng, typ, 3, true)
					prefix := genVec(rng, typ, 0, false)
					prefix.AppendVec(out)
					for _, r := range [][2]int{{0, 300}, {0, 0}, {0, 1}, {17, 18}, {5, 250}, {299, 300}} {
						b := mustEncode(t, typ, v, r[0], r[1], comp)
						base := out.Len()
						if err := decodeColChunk(b, typ, out); err != nil {
							t.Fatalf("rows %v: %v", r, err)
						}
						if out.Len()-base != r[1]-r[0] {
							t.Fatalf("rows %v: decoded %d rows", r, out.Len()-base)
						}
						requireRowsEqual(t, out, base, v, r[0], r[1]-r[0])
						// Appending to dst keeps what dst held.
						b2, _, err := encodeColChunk([]byte("xyz"), typ, v, r[0], r[1], comp)
						if err != nil || string(b2[:3]) != "xyz" || string(b2[3:]) != string(b) {
							t.Fatalf("encoding after a prefix differs (%v)", err)
						}
					}
					requireRowsEqual(t, out, 0, prefix, 0, prefix.Len())
				})
			}
		}
	}
}

func TestColChunkEveryRowNull(t *testing.T) {
	for _, typ := range colChunkTestTypes {
		v := types.NewVec(typ, 10)
		for range 10 {
			v.AppendNull()
		}
		for _, comp := range allCompressions {
			out := types.NewVec(typ, 0)
			if err := decodeColChunk(mustEncode(t, typ, v, 0, 10, comp), typ, out); err != nil {
				t.Fatalf("%s %s: %v", typ, comp, err)
			}
			requireRowsEqual(t, out, 0, v, 0, 10)
		}
	}
}

// chunkHeader parses the header of a chunk encoded for typ.
func chunkHeader(t testing.TB, b []byte, typ types.Type) colChunkHeader {
	t.Helper()
	h, err := parseColChunkHeader(b, typ)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestColChunkCompressionChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	floats := types.TensorOf(types.DTFloat32, 768)
	fv := types.NewVec(floats, 64)
	for range 64 {
		b := make([]byte, 0, 768*4)
		for range 768 {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(rng.NormFloat64())))
		}
		fv.AppendBytes(b)
	}
	tokens := types.TensorOf(types.DTInt32, 512)
	tv := genTokens(rng, 512)
	for _, comp := range allCompressions {
		b := mustEncode(t, floats, fv, 0, 64, comp)
		if h := chunkHeader(t, b, floats); h.Compression() != CompressionNone {
			t.Errorf("random floats with %s stored as %s, want none", comp, h.Compression())
		}
		if _, _, ok := chunkHeaderOf(t, b, floats).rowRange(3); !ok {
			t.Errorf("random floats with %s are not byte-range readable", comp)
		}
		b = mustEncode(t, tokens, tv, 0, 512, comp)
		h := chunkHeader(t, b, tokens)
		if h.Compression() != comp {
			t.Errorf("tokens with %s stored as %s", comp, h.Compression())
		}
		t.Logf("int32[512] tokens, %s: %d of %d bytes (%.2fx)", comp, h.storedLen, h.rawLen, float64(h.rawLen)/float64(h.storedLen))
	}
}

func chunkHeaderOf(t testing.TB, b []byte, typ types.Type) *colChunkHeader {
	h := chunkHeader(t, b, typ)
	return &h
}

// genTokens returns n rows of int32[512] token ids as a tokenizer makes
// them: Zipf-distributed ids below 50,000, each sequence 128 to 512 tokens
// long and zero-padded.
func genTokens(rng *rand.Rand, n int) *types.Vec {
	v := types.NewVec(types.TensorOf(types.DTInt32, 512), n)
	z := rand.NewZipf(rng, 1.1, 1, 49999)
	b := make([]byte, 512*4)
	for range n {
		clear(b)
		for k := range 128 + rng.IntN(385) {
			binary.LittleEndian.PutUint32(b[4*k:], uint32(z.Uint64()))
		}
		v.AppendBytes(b)
	}
	return v
}

func TestColChunkRowRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	wide := types.TensorOf(types.DTUint8, 300, 300) // a row per block
	for _, typ := range append(append([]types.Type(nil), colChunkTestTypes...), wide, types.VectorOf(20000)) {
		for _, nulls := range []bool{false, true} {
			v := genVec(rng, typ, 100, nulls)
			b := mustEncode(t, typ, v, 0, 100, CompressionNone)
			// A reader fetches a prefix first, then the rest of the header.
			hl, err := colChunkHeaderSize(b[:min(len(b), colChunkHeaderLen)])
			if err != nil {
				t.Fatal(err)
			}
			h := chunkHeader(t, b[:hl], typ)
			if h.Rows() != 100 {
				t.Fatalf("%s: %d rows", typ, h.Rows())
			}
			s, _ := shapeOf(typ)
			if _, _, ok := h.rowRange(0); ok != (s.layout == layoutFixed) {
				t.Fatalf("%s: byte-range readable = %v", typ, ok)
			}
			if s.layout != layoutFixed {
				continue
			}
			out := types.NewVec(typ, 0)
			for i := range 100 {
				off, n, ok := h.rowRange(i)
				if !ok || off < int64(hl) || off+n > int64(len(b)) {
					t.Fatalf("%s row %d: range [%d,+%d) ok=%v in %d bytes", typ, i, off, n, ok, len(b))
				}
				if s.width > colChunkRowBlock/2 && n != int64(s.width) {
					t.Fatalf("%s: a %d-byte row reads %d bytes", typ, s.width, n)
				}
				if n > int64(max(colChunkRowBlock, s.width)) {
					t.Fatalf("%s: row %d reads %d bytes", typ, i, n)
				}
				if err := h.decodeRow(i, b[off:off+n], out); err != nil {
					t.Fatalf("%s row %d: %v", typ, i, err)
				}
				if n > 0 {
					bad := append([]byte(nil), b[off:off+n]...)
					bad[rng.IntN(len(bad))] ^= 0x10
					if err := h.decodeRow(i, bad, out); !errors.Is(err, ErrCorruption) {
						t.Fatalf("%s row %d: flipped bit gave %v", typ, i, err)
					}
				}
			}
			requireRowsEqual(t, out, 0, v, 0, 100)
			if _, _, ok := h.rowRange(100); ok {
				t.Fatalf("%s: row 100 of 100 has a range", typ)
			}
		}
	}
	// Compressed chunks are read whole.
	v := genVec(rng, types.TypInt8, 1000, false)
	for i := range v.Ints {
		v.Ints[i] = int64(i % 10)
	}
	b := mustEncode(t, types.TypInt8, v, 0, 1000, CompressionLZ4)
	if h := chunkHeader(t, b, types.TypInt8); h.Compression() != CompressionLZ4 {
		t.Fatal("expected lz4")
	} else if _, _, ok := h.rowRange(0); ok {
		t.Fatal("a compressed chunk is byte-range readable")
	}
}

// corruptionCases are small chunks of several layouts and compressions.
func corruptionCases(t testing.TB) []struct {
	typ types.Type
	b   []byte
} {
	rng := rand.New(rand.NewPCG(7, 8))
	var cases []struct {
		typ types.Type
		b   []byte
	}
	add := func(typ types.Type, n int, nulls bool, comp Compression) {
		v := genVec(rng, typ, n, nulls)
		if typ.Kind == types.Int4 {
			for i := range v.Ints {
				v.Ints[i] = int64(i % 3)
			}
		}
		cases = append(cases, struct {
			typ types.Type
			b   []byte
		}{typ, mustEncode(t, typ, v, 0, n, comp)})
	}
	add(types.TypInt4, 40, true, CompressionNone)
	add(types.TypInt4, 60, true, CompressionZstd)
	add(types.TypText, 9, true, CompressionNone)
	add(types.TypText, 30, false, CompressionLZ4)
	add(types.TypFloat8, 12, true, CompressionS2)
	add(types.TypBool, 11, true, CompressionNone)
	add(types.TensorOf(types.DTInt16, types.Ragged, 3), 7, true, CompressionNone)
	add(types.TensorOf(types.DTUint8, types.Ragged), 20, false, CompressionZstd)
	add(types.TensorOf(types.DTFloat16, 3), 6, true, CompressionNone)
	add(types.VectorOf(2), 5, false, CompressionNone)
	return cases
}

func TestColChunkCorruption(t *testing.T) {
	for _, c := range corruptionCases(t) {
		h := chunkHeader(t, c.b, c.typ)
		// Every byte is covered by a checksum.
		for i := range c.b {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte(nil), c.b...)
				bad[i] ^= x
				out := types.NewVec(c.typ, 0)
				err := decodeColChunk(bad, c.typ, out)
				if !errors.Is(err, ErrCorruption) || pgerror.GetCode(err) != pgerror.DataCorrupted {
					t.Fatalf("%s (%s): byte %d ^ %#x: %v", c.typ, h.Compression(), i, x, err)
				}
				if out.Len() != 0 {
					t.Fatalf("%s: a failed decode appended %d rows", c.typ, out.Len())
				}
			}
		}
		for n := range len(c.b) {
			if err := decodeColChunk(c.b[:n], c.typ, types.NewVec(c.typ, 0)); !errors.Is(err, ErrCorruption) {
				t.Fatalf("%s: truncated to %d of %d bytes: %v", c.typ, n, len(c.b), err)
			}
		}
		if err := decodeColChunk(append(append([]byte(nil), c.b...), 0), c.typ, types.NewVec(c.typ, 0)); !errors.Is(err, ErrCorruption) {
			t.Fatalf("%s: extended by a byte: %v", c.typ, err)
		}
	}
}

func TestColChunkTypeMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pairs := [][2]types.Type{
		{types.TypInt4, types.TypInt8},
		{types.TypInt4, types.TypFloat4},
		{types.TypText, types.TypBytea},
		{types.TypJSON, types.TypJSONB},
		{types.VectorOf(3), types.VectorOf(4)},
		{types.VectorOf(3), types.TensorOf(types.DTFloat32, 3)},
		{types.TensorOf(types.DTFloat32, 4), types.TensorOf(types.DTInt32, 4)},
		{types.TensorOf(types.DTFloat32, 2, 2), types.TensorOf(types.DTFloat32, 4)},
		{types.TensorOf(types.DTFloat32, 2, 3), types.TensorOf(types.DTFloat32, 3, 2)},
		{types.TensorOf(types.DTFloat16, types.Ragged), types.TensorOf(types.DTBFloat16, types.Ragged)},
		{types.TensorOf(types.DTInt16, types.Ragged, 3), types.TensorOf(types.DTInt16, types.Ragged, 4)},
		{types.TensorOf(types.DTInt16, types.Ragged, 3), types.TensorOf(types.DTInt16, 3, types.Ragged)},
	}
	for _, p := range pairs {
		v := genVec(rng, p[0], 5, true)
		b := mustEncode(t, p[0], v, 0, 5, CompressionNone)
		for _, typ := range []types.Type{p[1]} {
			if err := decodeColChunk(b, typ, types.NewVec(typ, 0)); !errors.Is(err, ErrCorruption) {
				t.Errorf("%s chunk read as %s: %v", p[0], typ, err)
			}
		}
	}
	// A varchar's length limit is not part of the layout.
	v := genVec(rng, types.Type{Kind: types.Varchar, Width: 100}, 5, true)
	b := mustEncode(t, v.Type, v, 0, 5, CompressionZstd)
	other := types.Type{Kind: types.Varchar, Width: 7}
	if err := decodeColChunk(b, other, types.NewVec(other, 0)); err != nil {
		t.Errorf("varchar(100) chunk as varchar(7): %v", err)
	}
	// A version-0 chunk is not a version-1 chunk.
	b[4] = 0
	if err := decodeColChunk(b, other, types.NewVec(other, 0)); !errors.Is(err, ErrCorruption) {
		t.Errorf("version 0: %v", err)
	}
}

func TestColChunkEncodeRejectsBadValues(t *testing.T) {
	tensor := types.TensorOf(types.DTFloat32, 2)
	ragged := types.TensorOf(types.DTUint8, types.Ragged, 2)
	cases := []struct {
		typ types.Type
		val []byte
	}{
		{tensor, make([]byte, 7)},
		{types.VectorOf(2), make([]byte, 12)},
		{ragged, []byte{1, 0, 0}},                                  // short header
		{ragged, []byte{1, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3}},          // fixed dim 3, type says 2
		{ragged, []byte{2, 0, 0, 0, 2, 0, 0, 0, 1, 2, 3}},          // 4 elements, 3 bytes
		{ragged, []byte{0xff, 0xff, 0xff, 0x7f, 2, 0, 0, 0, 1, 2}}, // huge dim
	}
	for _, c := range cases {
		v := types.NewVec(c.typ, 1)
		v.AppendBytes(c.val)
		if _, _, err := encodeColChunk(nil, c.typ, v, 0, 1, CompressionNone); err == nil {
			t.Errorf("%s value %x encoded", c.typ, c.val)
		}
	}
	v := genVec(rand.New(rand.NewPCG(1, 1)), types.TypInt4, 3, false)
	for _, comp := range []Compression{0, 5} {
		if _, _, err := encodeColChunk(nil, types.TypInt4, v, 0, 3, comp); err == nil {
			t.Errorf("compression %d accepted", comp)
		}
	}
	if _, _, err := encodeColChunk(nil, types.TypInt4, v, 2, 4, CompressionNone); err == nil {
		t.Error("rows past the end accepted")
	}
	if _, _, err := encodeColChunk(nil, types.TypText, v, 0, 3, CompressionNone); err == nil {
		t.Error("an int vector encoded as text")
	}
	if err := decodeColChunk(mustEncode(t, types.TypInt4, v, 0, 3, CompressionNone), types.TypInt4, types.NewVec(types.TypText, 0)); err == nil {
		t.Error("an int chunk decoded into a text vector")
	}
}

func TestParseCompression(t *testing.T) {
	for _, c := range allCompressions {
		got, err := ParseCompression(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCompression(%q) = %v, %v", c.String(), got, err)
		}
	}
	if got, err := ParseCompression("ZSTD"); err != nil || got != CompressionZstd {
		t.Errorf("ParseCompression(ZSTD) = %v, %v", got, err)
	}
	_, err := ParseCompression("gzip")
	if pgerror.GetCode(err) != pgerror.InvalidParameterValue || err.Error() != `invalid compression method "gzip"` {
		t.Errorf("ParseCompression(gzip): %v", err)
	}
	if Compression(0).String() != "invalid" {
		t.Error("zero compression has a name")
	}
}

func TestChunkRawSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, typ := range colChunkTestTypes {
		v := genVec(rng, typ, 200, true)
		prev := int64(-1)
		for to := 0; to <= 200; to++ {
			n := chunkRawSize(typ, v, 0, to)
			if n < prev {
				t.Fatalf("%s: size shrinks at %d rows", typ, to)
			}
			prev = n
		}
		b := mustEncode(t, typ, v, 10, 150, CompressionNone)
		h := chunkHeader(t, b, typ)
		est := chunkRawSize(typ, v, 10, 150)
		if est < int64(h.valuesLen) || est > int64(h.rawLen)+int64(h.headerLen)+1024 {
			t.Errorf("%s: estimate %d, values %d, raw %d", typ, est, h.valuesLen, h.rawLen)
		}
	}
	if n := chunkRawSize(types.TensorOf(types.DTFloat32, 768), types.NewVec(types.TypBytea, 0), 0, 1000); n != 768*4*1000 {
		t.Errorf("fixed width size %d", n)
	}
}

// raceEnabled reports whether the test binary was built with -race, whose
// instrumentation allocates.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

func TestColChunkDecodeAllocs(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, typ := range colChunkTestTypes {
		for _, comp := range allCompressions {
			v := genVec(rng, typ, 1000, true)
			b := mustEncode(t, typ, v, 0, 1000, comp)
			out := types.NewVec(typ, 0)
			allocs := testing.AllocsPerRun(20, func() {
				out.Reset()
				if err := decodeColChunk(b, typ, out); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s %s: decoding 1000 rows into a reused Vec allocates %v times", typ, comp, allocs)
			}
		}
	}
	// Single-row reads too.
	typ := types.TensorOf(types.DTFloat32, 768)
	v := genVec(rng, typ, 100, true)
	b := mustEncode(t, typ, v, 0, 100, CompressionNone)
	h := chunkHeader(t, b, typ)
	out := types.NewVec(typ, 100)
	out.Bytes.Data = make([]byte, 0, 100*768*4)
	if allocs := testing.AllocsPerRun(20, func() {
		out.Reset()
		for i := range 100 {
			off, n, _ := h.rowRange(i)
			if err := h.decodeRow(i, b[off:off+n], out); err != nil {
				t.Fatal(err)
			}
		}
	}); allocs != 0 {
		t.Errorf("decodeRow allocates %v times", allocs)
	}
}

// resealColChunk rewrites the checksums of a (mutated) chunk so that the
// checks behind them are reached. It trusts nothing in b.
func resealColChunk(b []byte) []byte {
	if len(b) < colChunkFixedLen {
		return b
	}
	hl := int(binary.LittleEndian.Uint32(b[16:]))
	if hl < colChunkFixedLen+4 || hl > len(b) {
		return b
	}
	b = append([]byte(nil), b...)
	ndims, blockLen, blocks := int(b[11]), int(binary.LittleEndian.Uint32(b[32:])), int(binary.LittleEndian.Uint32(b[36:]))
	data := b[hl:]
	at := colChunkFixedLen + 4*ndims
	for k := 0; k < blocks && blockLen > 0 && at+4*k+4 <= hl-4 && k*blockLen <= len(data); k++ {
		blk := data[k*blockLen : min(len(data), k*blockLen+blockLen)]
		binary.LittleEndian.PutUint32(b[at+4*k:], crc32.Checksum(blk, crc32c))
	}
	binary.LittleEndian.PutUint32(b[hl-4:], crc32.Checksum(b[:hl-4], crc32c))
	return b
}

// fuzzTypes are the column types FuzzDecodeColChunk reads chunks as.
var fuzzTypes = []types.Type{
	types.TypInt4, types.TypText, types.TypFloat8, types.TypBool,
	types.TensorOf(types.DTInt16, types.Ragged, 3), types.TensorOf(types.DTUint8, types.Ragged),
	types.TensorOf(types.DTFloat16, 3), types.VectorOf(2), types.TensorOf(types.DTFloat32, 768),
}

func FuzzDecodeColChunk(f *testing.F) {
	for _, c := range corruptionCases(f) {
		for k, typ := range fuzzTypes {
			if typ.Equal(c.typ) {
				f.Add(c.b, uint8(k))
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, k uint8) {
		typ := fuzzTypes[int(k)%len(fuzzTypes)]
		for _, data := range [][]byte{b, resealColChunk(b)} {
			out := types.NewVec(typ, 0)
			if err := decodeColChunk(data, typ, out); err != nil {
				if !errors.Is(err, ErrCorruption) {
					t.Fatalf("error not marked as corruption: %v", err)
				}
				if out.Len() != 0 {
					t.Fatal("a failed decode appended rows")
				}
			}
			h, err := parseColChunkHeader(data, typ)
			if err != nil {
				continue
			}
			for i := 0; i < min(h.Rows(), 64); i++ {
				if off, n, ok := h.rowRange(i); ok && off+n <= int64(len(data)) {
					_ = h.decodeRow(i, data[off:off+n], out)
				}
			}
		}
	})
}

func BenchmarkColChunk(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	embed := types.TensorOf(types.DTFloat32, 768)
	ev := types.NewVec(embed, 2731)
	row := make([]byte, 768*4)
	for range 2731 { // 8 MiB
		for k := range 768 {
			binary.LittleEndian.PutUint32(row[4*k:], math.Float32bits(float32(rng.NormFloat64())))
		}
		ev.AppendBytes(row)
	}
	tv := genTokens(rng, 4096) // 8 MiB of int32[512]
	for _, c := range []struct {
		name string
		v    *types.Vec
	}{{"float32x768", ev}, {"int32x512", tv}} {
		typ, n := c.v.Type, c.v.Len()
		size := chunkRawSize(typ, c.v, 0, n)
		for _, comp := range allCompressions {
			b.Run(fmt.Sprintf("encode/%s/%s", c.name, comp), func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					var err error
					if buf, _, err = encodeColChunk(buf[:0], typ, c.v, 0, n, comp); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size)/float64(len(buf)), "ratio")
			})
			data, _, err := encodeColChunk(nil, typ, c.v, 0, n, comp)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("decode/%s/%s", c.name, comp), func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				out := types.NewVec(typ, n)
				if err := decodeColChunk(data, typ, out); err != nil { // size out once
					b.Fatal(err)
				}
				for b.Loop() {
					out.Reset()
					if err := decodeColChunk(data, typ, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestColChunkConcurrent encodes and decodes from several goroutines, as
// flushes do, sharing the pooled buffers and codecs.
func TestColChunkConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	typ := types.TensorOf(types.DTInt32, 512)
	v := genTokens(rng, 200)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			comp := allCompressions[g%len(allCompressions)]
			out := types.NewVec(typ, 0)
			for range 5 {
				b, _, err := encodeColChunk(nil, typ, v, 0, 200, comp)
				if err == nil {
					out.Reset()
					err = decodeColChunk(b, typ, out)
				}
				if err == nil && string(out.Bytes.Data) != string(v.Bytes.Data) {
					err = fmt.Errorf("%s: decoded rows differ", comp)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
