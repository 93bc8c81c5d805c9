package types

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestHalfVecForms reads halfvec text, sends it in pgvector's binary form
// (int16 dim, int16 0, big-endian halves), receives it back and prints it.
func TestHalfVecForms(t *testing.T) {
	v := NewVec(HalfVecOf(3), 1)
	if err := AppendParsed(v, "[1, -2.5, 0.1]"); err != nil {
		t.Fatal(err)
	}
	var c BinaryCodec
	b := c.AppendSend(nil, v, 0)
	want := []byte{0, 3, 0, 0, 0x3c, 0x00, 0xc1, 0x00, 0x2e, 0x66}
	if string(b) != string(want) {
		t.Fatalf("send % x, want % x", b, want)
	}
	w := NewVec(HalfVecOf(3), 1)
	if err := c.AppendRecv(w, b); err != nil {
		t.Fatal(err)
	}
	if got := string(AppendText(nil, w, 0)); got != "[1,-2.5,0.099975586]" {
		t.Fatalf("text %s", got)
	}
	for _, tc := range []struct {
		in   []byte
		code pgerror.Code
	}{
		{[]byte{0, 2, 0, 0, 0x3c, 0, 0x3c, 0}, pgerror.DataException},       // 2 dims into halfvec(3)
		{[]byte{0, 3, 0, 0, 0x3c, 0, 0x7e, 0, 0, 0}, pgerror.DataException}, // NaN
		{[]byte{0, 3, 0, 0, 0x3c, 0, 0x7c, 0, 0, 0}, pgerror.DataException}, // +Inf
		{[]byte{0, 3, 0, 1, 0x3c, 0, 0, 0, 0, 0}, pgerror.InvalidParameterValue},
	} {
		if err := c.AppendRecv(NewVec(HalfVecOf(3), 1), tc.in); pgerror.GetCode(err) != tc.code {
			t.Errorf("% x: %v, want %s", tc.in, err, tc.code)
		}
	}
	if err := AppendParsed(NewVec(HalfVecOf(0), 1), "[65520]"); pgerror.GetCode(err) != pgerror.NumericValueOutOfRange {
		t.Errorf("65520 into halfvec: %v", err)
	}
}
