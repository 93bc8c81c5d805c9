package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// FuzzStartupPacket feeds arbitrary bytes to the startup-packet reader and
// parameter parser: they must never panic, never read past a packet, and
// and what they accept must survive re-encoding.
func FuzzStartupPacket(f *testing.F) {
	f.Add(packet(pgproto3.ProtocolVersion30, startupBody("user", "u", "database", "d")))
	f.Add(packet(pgproto3.ProtocolVersion32, startupBody("user", "u", "_pq_.x", "1")))
	f.Add(packet(codeSSLRequest, nil))
	f.Add(packet(codeGSSENCRequest, nil))
	f.Add(packet(codeCancelRequest, []byte{0, 0, 0, 1, 1, 2, 3, 4}))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{0, 0, 0, 8, 0, 3, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		p, err := readStartupPacket(r, nil)
		if err != nil {
			return
		}
		if n := int(binary.BigEndian.Uint32(in)); n != len(in)-r.Len() || n > maxStartupPacketLen {
			t.Fatalf("read %d bytes of a %d-byte packet", len(in)-r.Len(), n)
		}
		_ = p.String()
		params, pq, err := parseStartupParams(p.body)
		if err != nil {
			return
		}
		if _, err := startupInfoOf(params); err != nil && params["user"] != "" {
			t.Fatalf("user %q rejected: %v", params["user"], err)
		}
		// Round trip: re-encode and parse again.
		var body []byte
		for k, v := range params {
			body = append(append(append(append(body, k...), 0), v...), 0)
		}
		for _, o := range pq {
			body = append(append(body, o...), 0, 0)
		}
		body = append(body, 0)
		params2, pq2, err := parseStartupParams(body)
		if err != nil {
			t.Fatalf("re-encoded parameters rejected: %v", err)
		}
		if len(params2) != len(params) || len(pq2) != len(pq) {
			t.Fatalf("round trip changed parameters: %v %v -> %v %v", params, pq, params2, pq2)
		}
		for k, v := range params {
			if params2[k] != v {
				t.Fatalf("round trip changed %q: %q -> %q", k, v, params2[k])
			}
		}
	})
}
