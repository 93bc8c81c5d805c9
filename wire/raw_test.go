package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawConn is a client socket driven message by message.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// writeRaw sends bytes as they are.
func (c *rawConn) writeRaw(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// packet returns a startup packet with the given code and body.
func packet(code uint32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, body...)
}

// startupBody encodes name/value pairs and the final terminator.
func startupBody(kv ...string) []byte {
	var b []byte
	for _, s := range kv {
		b = append(append(b, s...), 0)
	}
	return append(b, 0)
}

func (c *rawConn) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		c.fe.Send(m)
	}
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// receive returns the next message, copied by value into a string tag and
// the message for inspection.
func (c *rawConn) receive() pgproto3.BackendMessage {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	return m
}

// expectN reads the single 'N' that answers an encryption request.
func (c *rawConn) expectN() {
	c.t.Helper()
	var b [1]byte
	if _, err := io.ReadFull(c.nc, b[:]); err != nil || b[0] != 'N' {
		c.t.Fatalf("encryption request answered %q, %v; want N", b[0], err)
	}
}

// expectReady reads messages up to ReadyForQuery and returns their types.
func (c *rawConn) expectReady() []string {
	c.t.Helper()
	var seen []string
	for {
		m := c.receive()
		switch m := m.(type) {
		case *pgproto3.ReadyForQuery:
			return append(seen, "Z"+string(m.TxStatus))
		case *pgproto3.ErrorResponse:
			seen = append(seen, "E"+m.Code)
		case *pgproto3.ParameterStatus:
			seen = append(seen, "S")
		case *pgproto3.AuthenticationOk:
			seen = append(seen, "R")
		case *pgproto3.BackendKeyData:
			seen = append(seen, "K")
		case *pgproto3.NegotiateProtocolVersion:
			seen = append(seen, "v")
		case *pgproto3.RowDescription:
			seen = append(seen, "T")
		case *pgproto3.DataRow:
			seen = append(seen, "D")
		case *pgproto3.CommandComplete:
			seen = append(seen, "C"+string(m.CommandTag))
		case *pgproto3.ParseComplete:
			seen = append(seen, "1")
		case *pgproto3.BindComplete:
			seen = append(seen, "2")
		case *pgproto3.CloseComplete:
			seen = append(seen, "3")
		case *pgproto3.NoData:
			seen = append(seen, "n")
		case *pgproto3.PortalSuspended:
			seen = append(seen, "s")
		case *pgproto3.ParameterDescription:
			seen = append(seen, "t")
		case *pgproto3.EmptyQueryResponse:
			seen = append(seen, "I")
		default:
			seen = append(seen, "?")
		}
	}
}

// expectFatal reads one FATAL ErrorResponse with code and then EOF.
func (c *rawConn) expectFatal(code string) *pgproto3.ErrorResponse {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("want FATAL %s, got %v", code, err)
	}
	er, ok := m.(*pgproto3.ErrorResponse)
	if !ok || er.Severity != "FATAL" || er.Code != code {
		c.t.Fatalf("got %#v, want FATAL %s", m, code)
	}
	got := *er
	if _, err := c.fe.Receive(); err == nil {
		c.t.Fatal("connection still open after FATAL")
	}
	return &got
}

// expectClosed checks that the server closes the socket without a word.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	var b [1]byte
	// NB: a server that closes a socket with bytes it has not read (a
	// half-sent startup packet) makes the kernel answer with a reset.
	if n, err := c.nc.Read(b[:]); n != 0 || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatalf("read %d bytes, %v; want EOF", n, err)
	}
}

var startupOK = []string{"R", "S", "S", "S", "S", "S", "S", "S", "S", "S", "S", "S", "S", "S", "K", "ZI"}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRawStartup(t *testing.T) {
	ts := startTestServer(t)
	user := startupBody("user", "u", "database", "d")
	v30 := uint32(pgproto3.ProtocolVersion30)
	tests := []struct {
		name string
		// packets are sent in order; after each encryption request the
		// client expects 'N'.
		packets [][]byte
		want    []string
		// fatal, if set, is the code of the FATAL error that ends it; closed
		// means the server hangs up without a word.
		fatal  string
		closed bool
	}{
		{name: "3.0", packets: [][]byte{packet(v30, user)}, want: startupOK},
		{name: "ssl then 3.0", packets: [][]byte{packet(codeSSLRequest, nil), packet(v30, user)}, want: startupOK},
		{name: "gssenc then 3.0", packets: [][]byte{packet(codeGSSENCRequest, nil), packet(v30, user)}, want: startupOK},
		{name: "gssenc, ssl, 3.0", packets: [][]byte{packet(codeGSSENCRequest, nil), packet(codeSSLRequest, nil), packet(v30, user)}, want: startupOK},
		{name: "3.2 negotiates", packets: [][]byte{packet(pgproto3.ProtocolVersion32, user)}, want: append([]string{"v"}, startupOK...)},
		{name: "3.0 with _pq_ option", packets: [][]byte{packet(v30, startupBody("user", "u", "_pq_.compression", "on"))}, want: append([]string{"v"}, startupOK...)},
		{name: "ssl twice", packets: [][]byte{packet(codeSSLRequest, nil), packet(codeSSLRequest, nil)}, fatal: "08P01"},
		{name: "protocol 2.0", packets: [][]byte{packet(2<<16, user)}, fatal: "08P01"},
		{name: "protocol 4.0", packets: [][]byte{packet(4<<16, user)}, fatal: "08P01"},
		{name: "garbage code", packets: [][]byte{packet(0xdeadbeef, []byte("garbage!"))}, fatal: "08P01"},
		{name: "garbage http", packets: [][]byte{[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")}, fatal: "08P01"},
		{name: "length too short", packets: [][]byte{{0, 0, 0, 4, 0, 3, 0, 0}}, fatal: "08P01"},
		{name: "length too long", packets: [][]byte{{0, 1, 0, 0, 0, 3, 0, 0}}, fatal: "08P01"},
		{name: "no terminator", packets: [][]byte{packet(v30, []byte("user\x00u\x00"))}, fatal: "08P01"},
		{name: "missing value", packets: [][]byte{packet(v30, []byte("user\x00"))}, fatal: "08P01"},
		{name: "trailing bytes", packets: [][]byte{packet(v30, []byte("user\x00u\x00\x00x"))}, fatal: "08P01"},
		{name: "no user", packets: [][]byte{packet(v30, startupBody("database", "d"))}, fatal: "28000"},
		{name: "cancel unknown key", packets: [][]byte{packet(codeCancelRequest, []byte{0, 0, 0, 1, 1, 2, 3, 4})}, closed: true},
		{name: "truncated", packets: [][]byte{{0, 0, 0, 20, 0, 3, 0, 0}}, closed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, ts)
			for _, p := range tt.packets {
				c.writeRaw(p)
				code := uint32(0)
				if len(p) >= 8 {
					code = binary.BigEndian.Uint32(p[4:8])
				}
				if (code == codeSSLRequest || code == codeGSSENCRequest) && tt.fatal == "" {
					c.expectN()
				}
			}
			if tt.name == "ssl twice" {
				c.expectN()
			}
			if tt.name == "truncated" {
				c.nc.(*net.TCPConn).CloseWrite()
			}
			switch {
			case tt.fatal != "":
				c.expectFatal(tt.fatal)
			case tt.closed:
				c.expectClosed()
			default:
				if got := c.expectReady(); !equalStrings(got, tt.want) {
					t.Fatalf("startup messages = %v, want %v", got, tt.want)
				}
				c.send(&pgproto3.Query{String: "select 1"})
				if got := c.expectReady(); !equalStrings(got, []string{"T", "D", "CSELECT 1", "ZI"}) {
					t.Fatalf("query messages = %v", got)
				}
			}
		})
	}
	waitFor(t, "sessions closed", func() bool { return ts.eng.open.Load() == 0 })
}

func TestRawNegotiateProtocolVersion(t *testing.T) {
	ts := startTestServer(t)
	c := dialRaw(t, ts)
	c.writeRaw(packet(pgproto3.ProtocolVersion32, startupBody("user", "u", "_pq_.a", "1", "_pq_.b", "2")))
	m := c.receive()
	npv, ok := m.(*pgproto3.NegotiateProtocolVersion)
	if !ok {
		t.Fatalf("first message %#v, want NegotiateProtocolVersion", m)
	}
	if npv.NewestMinorProtocol != 0 || !equalStrings(npv.UnrecognizedOptions, []string{"_pq_.a", "_pq_.b"}) {
		t.Fatalf("NegotiateProtocolVersion = %+v", npv)
	}
	if got := c.expectReady(); !equalStrings(got, startupOK) {
		t.Fatalf("startup messages = %v", got)
	}
	if _, ok := ts.eng.lastInfo().Params["_pq_.a"]; ok {
		t.Error("protocol option passed to the session as a parameter")
	}
}

func rawSession(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	c := dialRaw(t, ts)
	c.writeRaw(packet(pgproto3.ProtocolVersion30, startupBody("user", "u")))
	if got := c.expectReady(); !equalStrings(got, startupOK) {
		t.Fatalf("startup messages = %v", got)
	}
	return c
}

func TestRawExtendedSkipsToSync(t *testing.T) {
	ts := startTestServer(t)
	c := rawSession(t, ts)
	c.send(
		&pgproto3.Parse{Query: "select 1"},
		&pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Close{ObjectType: 'S'},
		&pgproto3.Sync{},
	)
	if got := c.expectReady(); !equalStrings(got, []string{"1", "2", "n", "D", "CSELECT 1", "3", "ZI"}) {
		t.Fatalf("extended messages answered %v", got)
	}
	c.send(
		&pgproto3.Parse{Query: "error at parse"},
		&pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Query{String: "select 1"}, // skipped too, as PostgreSQL does
		&pgproto3.Flush{},
		&pgproto3.Close{ObjectType: 'S'},
		&pgproto3.Sync{},
	)
	if got := c.expectReady(); !equalStrings(got, []string{"E42601", "ZI"}) {
		t.Fatalf("extended messages after an error answered %v", got)
	}
	// A Sync on its own gets ReadyForQuery.
	c.send(&pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"ZI"}) {
		t.Fatalf("Sync answered %v", got)
	}
	// CopyData outside COPY is ignored.
	c.send(&pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "select 2; select 3"})
	if got := c.expectReady(); !equalStrings(got, []string{"T", "D", "CSELECT 1", "T", "D", "CSELECT 1", "ZI"}) {
		t.Fatalf("query after stray CopyData answered %v", got)
	}
	c.send(&pgproto3.FunctionCall{Function: 1})
	if got := c.expectReady(); !equalStrings(got, []string{"E0A000", "ZI"}) {
		t.Fatalf("FunctionCall answered %v", got)
	}
}

func TestRawProtocolViolations(t *testing.T) {
	ts := startTestServer(t)
	tests := []struct {
		name string
		msg  []byte
	}{
		{"unknown type", []byte{'?', 0, 0, 0, 4}},
		{"password after startup", []byte{'p', 0, 0, 0, 8, 'p', 'w', 'd', 0}},
		{"bad length", []byte{'Q', 0, 0, 0, 2}},
		{"query without terminator", []byte{'Q', 0, 0, 0, 6, 'h', 'i'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rawSession(t, ts)
			c.writeRaw(tt.msg)
			c.expectFatal("08P01")
		})
	}
	waitFor(t, "sessions closed", func() bool { return ts.eng.open.Load() == 0 })
}

func TestRawMessageTooLarge(t *testing.T) {
	ts := startTestServerOpts(t, Options{MaxMessageSize: 1 << 10})
	c := rawSession(t, ts)
	msg := append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, 1<<20)...)
	c.writeRaw(msg)
	c.expectFatal("08P01")
}

func TestRawAuthenticationTimeout(t *testing.T) {
	ts := startTestServerOpts(t, Options{AuthenticationTimeout: 50 * time.Millisecond})
	c := dialRaw(t, ts)
	c.writeRaw([]byte{0, 0, 0}) // never finishes the packet
	c.expectClosed()
}

func TestRawShutdownIdle(t *testing.T) {
	ts := startTestServer(t)
	c := rawSession(t, ts)
	starting := dialRaw(t, ts) // connected, no startup packet yet
	starting.writeRaw([]byte{0, 0})
	waitFor(t, "both connections", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return len(ts.conns) == 2
	})
	go ts.Shutdown(t.Context())
	er := c.expectFatal("57P01")
	if er.Message != "terminating connection due to administrator command" {
		t.Errorf("message = %q", er.Message)
	}
	starting.expectClosed()
}
