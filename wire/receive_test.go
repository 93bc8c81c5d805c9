package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// msg frames a message of type typ around body.
func msg(typ byte, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	out := append([]byte{typ}, binary.BigEndian.AppendUint32(nil, uint32(4+len(b)))...)
	return append(out, b...)
}

// declare frames only the header of a message of type typ whose body is
// said to be n bytes.
func declare(typ byte, n int) []byte {
	return append([]byte{typ}, binary.BigEndian.AppendUint32(nil, uint32(4+n))...)
}

func cstr(s string) []byte { return append([]byte(s), 0) }

func i16(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func i32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// TestMalformedMessages sends each message type of a session truncated or
// padded: the client gets FATAL 08P01 with PostgreSQL's words, and the
// server logs the violation, before it closes the connection.
func TestMalformedMessages(t *testing.T) {
	ts := startTestServer(t)
	for _, c := range []struct {
		name, want string
		raw        []byte
	}{
		{"Parse without terminator", "invalid string in message", msg('P', cstr(""), []byte("select 1"))},
		{"Parse without parameter count", "insufficient data left in message", msg('P', cstr(""), cstr("select 1"))},
		{"Parse short of its parameter types", "insufficient data left in message", msg('P', cstr(""), cstr("select $1"), i16(2), i32(23))},
		{"Parse with trailing bytes", "invalid message format", msg('P', cstr(""), cstr("select 1"), i16(0), []byte{1})},
		{"Bind without statement name", "invalid string in message", msg('B', cstr(""), []byte("s"))},
		{"Bind short of its formats", "insufficient data left in message", msg('B', cstr(""), cstr(""), i16(3), i16(0))},
		{"Bind short of a parameter", "insufficient data left in message", msg('B', cstr(""), cstr(""), i16(0), i16(1), i32(100), []byte("abc"))},
		{"Bind with a negative length", "insufficient data left in message", msg('B', cstr(""), cstr(""), i16(0), i16(1), i32(-7))},
		{"Bind without result formats", "insufficient data left in message", msg('B', cstr(""), cstr(""), i16(0), i16(0))},
		{"Describe empty", "no data left in message", msg('D')},
		{"Describe without terminator", "invalid string in message", msg('D', []byte("Sname"))},
		{"Execute without terminator", "invalid string in message", msg('E', []byte("portal"))},
		{"Execute without row count", "insufficient data left in message", msg('E', cstr(""), []byte{0, 0})},
		{"Close without terminator", "invalid string in message", msg('C', []byte("S"))},
		{"Query without terminator", "invalid string in message", msg('Q', []byte("select 1"))},
		{"Query with trailing bytes", "invalid message format", msg('Q', cstr("select 1"), []byte("x"))},
		{"Sync with a body", "invalid message format", msg('S', []byte{0})},
		{"Flush with a body", "invalid message format", msg('H', []byte{0})},
		{"length below 4", "invalid message length", []byte{'Q', 0, 0, 0, 3}},
		{"small message too long", "invalid message length", declare('S', smallMessageLimit+1)},
		{"password after authentication", "invalid frontend message type 112", msg('p', cstr("pw"))},
		{"unknown type", "invalid frontend message type 63", msg('?')},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := rawSession(t, ts)
			rc.writeRaw(c.raw)
			if er := rc.expectFatal("08P01"); er.Message != c.want {
				t.Errorf("message %q, want %q", er.Message, c.want)
			}
			waitFor(t, "the log line", func() bool { return strings.Contains(ts.log.String(), "protocol violation") })
		})
	}
}

// TestMalformedCopyIn: a malformed message in the data stream of COPY
// FROM STDIN ends the connection with FATAL 08P01 alone, not an error of
// the statement first.
func TestMalformedCopyIn(t *testing.T) {
	ts := startRealServer(t)
	for _, c := range []struct {
		name, want string
		raw        []byte
	}{
		{"CopyFail without terminator", "invalid string in message", msg('f', []byte("oops"))},
		{"CopyFail with trailing bytes", "invalid message format", msg('f', cstr("oops"), []byte("x"))},
		{"CopyDone with a body", "invalid message format", msg('c', []byte("x"))},
		{"CopyData below 4", "invalid message length", []byte{'d', 0, 0, 0, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := rawSession(t, ts)
			rc.send(&pgproto3.Query{String: "CREATE TABLE IF NOT EXISTS t (a int)"})
			rc.expectReady()
			startStalledCopy(t, rc)
			rc.writeRaw(c.raw)
			if er := rc.expectFatal("08P01"); er.Message != c.want {
				t.Errorf("message %q, want %q", er.Message, c.want)
			}
		})
	}
}

// authStart dials and sends a startup packet for user, reading the
// authentication request that answers it.
func authStart(t *testing.T, ts *testServer, user string) *rawConn {
	t.Helper()
	rc := dialRaw(t, ts)
	rc.writeRaw(packet(3<<16, startupBody("user", user)))
	switch m := rc.receive().(type) {
	case *pgproto3.AuthenticationSASL, *pgproto3.AuthenticationCleartextPassword:
	default:
		t.Fatalf("got %#v, want an authentication request", m)
	}
	return rc
}

// TestMessagesBeforeAuthentication: before authentication a message is at
// most 10,000 bytes, refused on its header whatever it declares; malformed
// password and SASL messages are protocol violations.
func TestMessagesBeforeAuthentication(t *testing.T) {
	scram := startTestServerOpts(t, Options{Auth: AuthSCRAM, Roles: fakeRoles{"alice": "pencil"}})
	password := startTestServerOpts(t, Options{Auth: AuthPassword, Roles: fakeRoles{"alice": "pencil"}})
	for _, c := range []struct {
		name string
		ts   *testServer
		raw  []byte
		want string
	}{
		{"SASL declaring 256 MiB", scram, append(declare('p', 256<<20), make([]byte, 1024)...), "invalid message length"},
		{"SASL of 10,001 bytes", scram, declare('p', smallMessageLimit+1), "invalid message length"},
		{"password declaring 256 MiB", password, append(declare('p', 256<<20), make([]byte, 1024)...), "invalid message length"},
		{"SASL without mechanism terminator", scram, msg('p', []byte("SCRAM-SHA-256")), "invalid string in message"},
		{"SASL short of its data", scram, msg('p', cstr("SCRAM-SHA-256"), i32(100), []byte("n,,")), "insufficient data left in message"},
		{"SASL with trailing bytes", scram, msg('p', cstr("SCRAM-SHA-256"), i32(-1), []byte("x")), "invalid message format"},
		{"query instead of SASL", scram, msg('Q', cstr("select 1")), "expected SASL response, got message type 81"},
		{"query instead of password", password, msg('Q', cstr("select 1")), "expected password response, got message type 81"},
		{"password without terminator", password, msg('p', []byte("pencil")), "invalid password packet size"},
		{"password with a NUL", password, msg('p', cstr("pencil\x00extra")), "invalid password packet size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := authStart(t, c.ts, "alice")
			rc.writeRaw(c.raw)
			if er := rc.expectFatal("08P01"); er.Message != c.want {
				t.Errorf("message %q, want %q", er.Message, c.want)
			}
		})
	}
}

// TestLargeMessagesAfterAuthentication: after authentication Query, Parse,
// Bind and CopyData may be large; the other messages keep the small limit.
func TestLargeMessagesAfterAuthentication(t *testing.T) {
	ts := startTestServer(t)
	rc := rawSession(t, ts)
	rc.send(&pgproto3.Query{String: "select '" + strings.Repeat("x", 3*smallMessageLimit) + "'"})
	if got := rc.expectReady(); got[len(got)-1] != "ZI" {
		t.Fatalf("large query answered %v", got)
	}
	rc.writeRaw(append(declare('E', smallMessageLimit+1), make([]byte, 100)...))
	if er := rc.expectFatal("08P01"); er.Message != "invalid message length" {
		t.Errorf("message %q", er.Message)
	}
}

// chunkedReader hands out its bytes a few at a time, failing once with a
// timeout at failAt, as a read interrupted by a deadline does.
type chunkedReader struct {
	b      []byte
	step   int
	failAt int
	failed bool
	// most is the largest read buffer it was given.
	most int
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func (r *chunkedReader) Read(p []byte) (int, error) {
	r.most = max(r.most, len(p))
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if !r.failed && r.failAt >= 0 && len(r.b) <= r.failAt {
		r.failed = true
		return 0, timeoutErr{}
	}
	n := copy(p[:min(len(p), r.step)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestMsgReaderGrowsWithData: a message that declares 256 MiB and sends
// 1 KB costs the reader what arrived, not what was declared.
func TestMsgReaderGrowsWithData(t *testing.T) {
	src := &chunkedReader{b: append(declare('Q', 256<<20), bytes.Repeat([]byte("x"), 1024)...), step: 1 << 20, failAt: -1}
	r := newMsgReader(src, largeMessageLimit)
	if _, err := r.receive(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("receive: %v, want unexpected EOF", err)
	}
	if c := cap(r.body); c > 2*firstBodyBuf {
		t.Errorf("body buffer of %d bytes after 1 KB of a 256 MiB message", c)
	}
	if src.most > 2*firstBodyBuf {
		t.Errorf("read into %d bytes at once", src.most)
	}
}

// TestMsgReaderStream decodes a stream of small and large messages,
// interrupted once by a timeout mid-message, read a few bytes at a time:
// each message comes out whole, and a large buffer reused for a smaller
// message takes none of the next one's bytes.
func TestMsgReaderStream(t *testing.T) {
	big := strings.Repeat("a", 3*readBufSize)
	bigger := strings.Repeat("b", 9*readBufSize)
	var stream []byte
	want := []string{big, "select 1", bigger, big, "x"}
	for _, q := range want {
		stream = append(stream, msg('Q', cstr(q))...)
	}
	stream = append(stream, msg('d', []byte(bigger))...)
	stream = append(stream, msg('d', []byte(big))...)
	stream = append(stream, msg('S')...)
	for _, step := range []int{1, 7, 4096, 1 << 20} {
		for _, failAt := range []int{-1, len(stream) - 10, len(stream) / 2} {
			r := newMsgReader(&chunkedReader{b: stream, step: step, failAt: failAt}, largeMessageLimit)
			var got []string
			for {
				m, err := r.receive()
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue // resumes the same message
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if q, ok := m.(*pgproto3.Query); ok {
					got = append(got, q.String)
					continue
				}
				if d, ok := m.(*pgproto3.CopyData); ok {
					got = append(got, string(d.Data))
					continue
				}
				if _, ok := m.(*pgproto3.Sync); !ok {
					t.Fatalf("got %T", m)
				}
				break
			}
			all := append(append([]string{}, want...), bigger, big)
			if len(got) != len(all) {
				t.Fatalf("step %d fail %d: %d messages, want %d", step, failAt, len(got), len(all))
			}
			for i := range all {
				if got[i] != all[i] {
					t.Fatalf("step %d fail %d: message %d differs (%d bytes, want %d)", step, failAt, i, len(got[i]), len(all[i]))
				}
			}
		}
	}
}

// TestMsgReaderBind decodes a Bind with NULL and non-NULL parameters.
func TestMsgReaderBind(t *testing.T) {
	want := &pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1},
		Parameters: [][]byte{[]byte("ab"), nil}, ResultFormatCodes: []int16{0, 1}}
	b, err := want.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newMsgReader(bytes.NewReader(b), largeMessageLimit)
	m, err := r.receive()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.(*pgproto3.Bind).Encode(nil)
	if !bytes.Equal(got, b) {
		t.Fatalf("decoded %#v", m)
	}
}

// superRoles is a RoleSource whose roles named "su..." are superusers.
type superRoles struct{ fakeRoles }

func (s superRoles) LookupRole(name string) (RoleCredentials, bool, error) {
	cred, ok, err := s.fakeRoles.LookupRole(name)
	cred.Superuser = strings.HasPrefix(name, "su")
	return cred, ok, err
}

// login authenticates user with SCRAM and returns the connection and
// its FATAL code, "" once it is ready.
func login(t *testing.T, ts *testServer, user string) (*rawConn, string) {
	t.Helper()
	rc := dialRaw(t, ts)
	ok, fatal := scramClient(t, rc, user, "pencil", "n,,")
	if !ok {
		return rc, fatal
	}
	for {
		switch m := rc.receive().(type) {
		case *pgproto3.ErrorResponse:
			return rc, m.Code + " " + m.Message
		case *pgproto3.ReadyForQuery:
			return rc, ""
		}
	}
}

// TestConnectionSlots: connections that have not authenticated take no
// session slot; the last SuperuserReservedConnections slots are for
// superusers; beyond MaxConnections everyone is refused.
func TestConnectionSlots(t *testing.T) {
	roles := superRoles{fakeRoles{"alice": "pencil", "bob": "pencil", "carol": "pencil", "su": "pencil", "su2": "pencil"}}
	ts := startTestServerOpts(t, Options{Auth: AuthSCRAM, Roles: roles, MaxConnections: 3, SuperuserReservedConnections: 1})
	for range 10 { // silent sockets, as many as the server has slots and more
		dialRaw(t, ts).writeRaw([]byte{0, 0})
	}
	for _, c := range []struct{ user, fatal string }{
		{"alice", ""},
		{"bob", ""},
		{"carol", "53300 remaining connection slots are reserved for roles with the SUPERUSER attribute"},
		{"su", ""},
		{"su2", "53300 sorry, too many clients already"},
	} {
		_, fatal := login(t, ts, c.user)
		if fatal != c.fatal {
			t.Fatalf("%s: %q, want %q", c.user, fatal, c.fatal)
		}
	}
}

// TestSlotFreedOnClose: a session's slot is free again once it ends.
func TestSlotFreedOnClose(t *testing.T) {
	ts := startTestServerOpts(t, Options{MaxConnections: 1})
	c := rawSession(t, ts)
	c.send(&pgproto3.Terminate{})
	c.expectClosed()
	waitFor(t, "the slot", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.sessions == 0
	})
	rawSession(t, ts)
}

// TestMaxStartupConnections: beyond the bound of connections that have not
// authenticated, a new one is refused at once with 53300.
func TestMaxStartupConnections(t *testing.T) {
	ts := startTestServerOpts(t, Options{MaxStartupConnections: 2})
	dialRaw(t, ts).writeRaw([]byte{0})
	dialRaw(t, ts).writeRaw([]byte{0})
	waitFor(t, "two connections in startup", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.starting == 2
	})
	rc := dialRaw(t, ts)
	if er := rc.expectFatal("53300"); er.Message != "sorry, too many clients already" {
		t.Errorf("message %q", er.Message)
	}
}

// TestAuthenticationTimeout closes a connection that stops answering in
// the middle of its authentication.
func TestAuthenticationTimeout(t *testing.T) {
	ts := startTestServerOpts(t, Options{Auth: AuthSCRAM, Roles: fakeRoles{"alice": "pencil"}, AuthenticationTimeout: 50 * time.Millisecond})
	rc := authStart(t, ts, "alice")
	rc.expectClosed()
}

// TestMockSecretFromKey: an unknown role's made-up verifier depends only
// on the key, so a server given the same key shows the same salt.
func TestMockSecretFromKey(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a := NewServer(nil, Options{MockAuthKey: key, Logger: discardLogger()}).mockSecret("nobody")
	b := NewServer(nil, Options{MockAuthKey: key, Logger: discardLogger()}).mockSecret("nobody")
	c := NewServer(nil, Options{Logger: discardLogger()}).mockSecret("nobody")
	if !bytes.Equal(a.Salt, b.Salt) || a.Iterations != b.Iterations {
		t.Error("same key, different salts")
	}
	if bytes.Equal(a.Salt, c.Salt) {
		t.Error("random key gave the same salt")
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// FuzzMsgReader feeds arbitrary bytes to the message reader, as a session
// and during authentication: it must never panic, and a message it
// accepts must re-encode to the bytes it came from.
func FuzzMsgReader(f *testing.F) {
	for _, m := range []pgproto3.FrontendMessage{
		&pgproto3.Query{String: "select 1"},
		&pgproto3.Parse{Name: "s", Query: "select $1", ParameterOIDs: []uint32{23}},
		&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 1}, nil}, ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Execute{Portal: "p", MaxRows: 5},
		&pgproto3.Close{ObjectType: 'P', Name: "p"},
		&pgproto3.CopyData{Data: []byte("1\n")},
		&pgproto3.CopyFail{Message: "no"},
		&pgproto3.Sync{},
	} {
		b, _ := m.Encode(nil)
		f.Add(b)
	}
	f.Add(msg('p', cstr("SCRAM-SHA-256"), i32(3), []byte("n,,")))
	f.Add(declare('Q', 1<<28))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newMsgReader(bytes.NewReader(in), 1<<20)
		for range 16 {
			m, err := r.receive()
			if err != nil {
				break
			}
			if _, ok := m.(*pgproto3.FunctionCall); ok {
				continue // not decoded: refused whatever it holds
			}
			if b, err := m.Encode(nil); err != nil || !bytes.Contains(in, b) {
				t.Fatalf("%T re-encodes to %q (%v), not found in the input", m, b, err)
			}
		}
		r = newMsgReader(bytes.NewReader(in), 1<<20)
		_, _, _ = r.receiveSASLInitial()
		_, _ = r.receiveSASL()
		r = newMsgReader(bytes.NewReader(in), 1<<20)
		_, _ = r.receivePassword()
	})
}
