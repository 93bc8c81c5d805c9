package robust

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/internal/proctest"
)

// rawClient is a socket driven message by message.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

// dialRaw connects to the server; every read and write must be done
// within d.
func dialRaw(t *testing.T, addr string, d time.Duration) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(d))
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// startup sends a protocol 3.0 StartupMessage for user.
func (c *rawClient) startup(user string) {
	c.t.Helper()
	var body []byte
	for _, s := range []string{"user", user, "database", "postgres"} {
		body = append(append(body, s...), 0)
	}
	body = append(body, 0)
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	b = binary.BigEndian.AppendUint32(b, 3<<16)
	c.write(append(b, body...))
}

func (c *rawClient) receive() pgproto3.BackendMessage {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	return m
}

// ready reads up to ReadyForQuery, failing on an ErrorResponse.
func (c *rawClient) ready() {
	c.t.Helper()
	for {
		switch m := c.receive().(type) {
		case *pgproto3.ReadyForQuery:
			return
		case *pgproto3.ErrorResponse:
			c.t.Fatalf("error %s %s", m.Code, m.Message)
		}
	}
}

// fatal reads one FATAL ErrorResponse with code, then the end of the
// connection, and returns the message.
func (c *rawClient) fatal(code string) string {
	c.t.Helper()
	m := c.receive()
	er, ok := m.(*pgproto3.ErrorResponse)
	if !ok || er.Severity != "FATAL" || er.Code != code {
		c.t.Fatalf("got %#v, want FATAL %s", m, code)
	}
	msg := er.Message
	if _, err := c.fe.Receive(); err == nil {
		c.t.Fatal("connection still open after FATAL")
	}
	return msg
}

// closed reports whether the server closed the socket (EOF or reset)
// without a word; a read deadline is false.
func (c *rawClient) closed() bool {
	var b [1]byte
	n, err := c.nc.Read(b[:])
	return n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
}

// frame builds a message of type typ around the body parts.
func frame(typ byte, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	out := append([]byte{typ}, binary.BigEndian.AppendUint32(nil, uint32(4+len(b)))...)
	return append(out, b...)
}

// declare is the header alone of a message of type typ said to hold n
// bytes.
func declare(typ byte, n int) []byte {
	return append([]byte{typ}, binary.BigEndian.AppendUint32(nil, uint32(4+n))...)
}

func cstr(s string) []byte { return append([]byte(s), 0) }
func be16(v int16) []byte  { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func be32(v int32) []byte  { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// TestMalformedMessages sends every message type of a session, and those
// of a COPY's data stream, truncated or padded: each gets FATAL 08P01 with
// PostgreSQL's words and a log line before the connection closes, and the
// server goes on.
func TestMalformedMessages(t *testing.T) {
	srv := proctest.Start(t, nil)
	cases := []struct {
		name, want string
		copyIn     bool
		raw        []byte
	}{
		{"Parse without terminator", "invalid string in message", false, frame('P', cstr(""), []byte("select 1"))},
		{"Parse short of its parameter types", "insufficient data left in message", false, frame('P', cstr(""), cstr("select $1"), be16(3))},
		{"Bind truncated", "insufficient data left in message", false, frame('B', cstr(""), cstr(""), be16(0), be16(1), be32(50), []byte("ab"))},
		{"Bind without terminator", "invalid string in message", false, frame('B', []byte("portal"))},
		{"Describe without terminator", "invalid string in message", false, frame('D', []byte("Sx"))},
		{"Describe empty", "no data left in message", false, frame('D')},
		{"Execute truncated", "insufficient data left in message", false, frame('E', cstr(""), []byte{0})},
		{"Close without terminator", "invalid string in message", false, frame('C', []byte("Pportal"))},
		{"Query without terminator", "invalid string in message", false, frame('Q', []byte("select 1"))},
		{"Query with trailing bytes", "invalid message format", false, frame('Q', cstr("select 1"), []byte("junk"))},
		{"Sync with a body", "invalid message format", false, frame('S', []byte{1})},
		{"length below 4", "invalid message length", false, []byte{'P', 0, 0, 0, 1}},
		{"unknown type", "invalid frontend message type 122", false, frame('z')},
		{"CopyFail without terminator", "invalid string in message", true, frame('f', []byte("give up"))},
		{"CopyDone with a body", "invalid message format", true, frame('c', []byte{0})},
		{"CopyData below 4", "invalid message length", true, []byte{'d', 0, 0, 0, 0}},
	}
	setup := dialRaw(t, srv.Addr, 10*time.Second)
	setup.startup("postgres")
	setup.ready()
	setup.write(frame('Q', cstr("CREATE TABLE m (a int)")))
	setup.ready()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, srv.Addr, 10*time.Second)
			rc.startup("postgres")
			rc.ready()
			if c.copyIn {
				rc.write(frame('Q', cstr("COPY m FROM STDIN")))
				if m, ok := rc.receive().(*pgproto3.CopyInResponse); !ok {
					t.Fatalf("got %#v, want CopyInResponse", m)
				}
				rc.write(frame('d', []byte("1\n")))
			}
			rc.write(c.raw)
			if got := rc.fatal("08P01"); got != c.want {
				t.Errorf("message %q, want %q", got, c.want)
			}
		})
	}
	// NB: the server's log is read as it comes; the last line may lag.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(srv.Log(), "protocol violation") < len(cases) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(srv.Log(), "protocol violation"); n < len(cases) {
		t.Errorf("%d log lines of protocol violations, want %d:\n%s", n, len(cases), srv.Log())
	}
	setup.write(frame('Q', cstr("SELECT count(*) FROM m")))
	setup.ready()
	if !srv.Alive() {
		t.Fatal("server died")
	}
}
