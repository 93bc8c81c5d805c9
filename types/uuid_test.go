package types

import (
	"bytes"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestUUIDText(t *testing.T) {
	const want = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	for _, in := range []string{want, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
		"a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11"} {
		got, err := AppendUUIDParsed(nil, in)
		if err != nil || string(got) != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "{}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g", "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
		"a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11", "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"} {
		if _, err := AppendUUIDParsed(nil, in); pgerror.GetCode(err) != pgerror.InvalidTextRepresentation {
			t.Errorf("%q: %v", in, err)
		}
	}
	raw := AppendUUIDBytes(nil, []byte(want))
	if len(raw) != 16 || raw[0] != 0xa0 || raw[15] != 0x11 || string(AppendUUIDText(nil, raw)) != want {
		t.Fatalf("bytes %x", raw)
	}
	// The text form orders as the bytes do.
	a, b := NewUUIDv4(nil), NewUUIDv4(nil)
	if bytes.Compare(a, b) != bytes.Compare(AppendUUIDBytes(nil, a), AppendUUIDBytes(nil, b)) {
		t.Fatalf("%s and %s order differently as text and bytes", a, b)
	}
	if a[14] != '4' || !bytes.ContainsAny(a[19:20], "89ab") {
		t.Fatalf("not a version 4 uuid: %s", a)
	}
	// The binary form round-trips through the codec.
	var c BinaryCodec
	v := NewVec(Type{Kind: UUID}, 1)
	if err := c.AppendRecv(v, raw); err != nil || string(v.Bytes.Get(0)) != want {
		t.Fatalf("recv: %q, %v", v.Bytes.Get(0), err)
	}
	if got := c.AppendSend(nil, v, 0); !bytes.Equal(got, raw) {
		t.Fatalf("send: %x", got)
	}
	if err := c.AppendRecv(v, raw[:15]); err == nil {
		t.Fatal("15 bytes received as a uuid")
	}
}
