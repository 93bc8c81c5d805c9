package types

import (
	"encoding/binary"
	"testing"
)

// fuzzTypes are the types FuzzBinaryRecv decodes into.
var fuzzTypes = []Type{
	TypBool, TypInt2, TypInt4, TypInt8, TypFloat4, TypFloat8, TypText, {Kind: Varchar, Width: 4},
	TypBytea, TypJSON, TypJSONB, VectorOf(0), VectorOf(3),
	TensorOf(DTFloat32, 2, 2), TensorOf(DTUint8, Ragged), TensorOf(DTFloat16, 3), TensorOf(DTBool, Ragged, 2),
	HalfVecOf(0), HalfVecOf(2), {Kind: UUID}, {Kind: Date}, {Kind: Timestamp}, {Kind: TimestampTZ},
}

// FuzzBinaryRecv feeds arbitrary bytes to every type's receive function: a
// value decodes or fails with an error, never a panic, and one that decodes
// encodes back to bytes that decode to the same value.
func FuzzBinaryRecv(f *testing.F) {
	be := binary.BigEndian
	f.Add(uint8(0), []byte{1})
	f.Add(uint8(3), be.AppendUint64(nil, 42))
	f.Add(uint8(11), append([]byte{1}, `{"a":1}`...))
	vec := be.AppendUint16(nil, 3)
	vec = append(vec, 0, 0, 0x3f, 0x80, 0, 0, 0x40, 0, 0, 0, 0x40, 0x40, 0, 0)
	f.Add(uint8(12), vec)
	arr := be.AppendUint32(nil, 2)
	arr = be.AppendUint32(arr, 0)
	arr = be.AppendUint32(arr, OIDFloat4)
	for range 2 {
		arr = be.AppendUint32(arr, 2)
		arr = be.AppendUint32(arr, 1)
	}
	for range 4 {
		arr = be.AppendUint32(arr, 4)
		arr = append(arr, 0x3f, 0x80, 0, 0)
	}
	f.Add(uint8(13), arr)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		typ := fuzzTypes[int(which)%len(fuzzTypes)]
		var c BinaryCodec
		v := NewVec(typ, 1)
		if err := c.AppendRecv(v, b); err != nil {
			return
		}
		if v.Len() != 1 {
			t.Fatalf("%s: %d values from one", typ, v.Len())
		}
		again := c.AppendSend(nil, v, 0)
		w := NewVec(typ, 1)
		if err := c.AppendRecv(w, again); err != nil {
			t.Fatalf("%s: %x decoded, its send form %x does not: %v", typ, b, again, err)
		}
		if string(AppendText(nil, v, 0)) != string(AppendText(nil, w, 0)) {
			t.Fatalf("%s: %s re-decodes as %s", typ, AppendText(nil, v, 0), AppendText(nil, w, 0))
		}
	})
}
