package wire

import (
	"encoding/binary"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Message size limits, PostgreSQL's (pqcomm.h).
const (
	// smallMessageLimit is PQ_SMALL_MESSAGE_LIMIT: the most a message may
	// hold before authentication, and afterwards every message but Bind,
	// CopyData, FunctionCall, Parse and Query.
	smallMessageLimit = 10000
	// largeMessageLimit is PQ_LARGE_MESSAGE_LIMIT (MaxAllocSize - 1): the
	// most any message may hold.
	largeMessageLimit = 1<<30 - 2
)

const (
	// readBufSize is the read-ahead buffer: several small messages come
	// in one read, and a body that fits is returned from it in place.
	readBufSize = 8 << 10
	// firstBodyBuf is the first allocation for a body larger than the
	// read-ahead buffer; it doubles as bytes arrive, up to the declared
	// length, so a client must send what it declares to make the server
	// hold it.
	firstBodyBuf = 32 << 10
	// maxKeptBodyBuf is the largest body buffer kept between messages.
	maxKeptBodyBuf = 1 << 20
)

// Phases of a connection, for what msgReader accepts.
const (
	// phaseAuth: only a password or SASL response ('p'), at most
	// smallMessageLimit bytes.
	phaseAuth = iota + 1
	// phaseSession: every message a client sends once authenticated.
	phaseSession
)

// msgReader reads the client's messages after the startup packet. Unlike
// pgproto3's reader, it never allocates a declared length before the bytes
// arrive, it bounds each message by its type as PostgreSQL does, and it
// decodes bodies strictly: a malformed message is an 08P01 error with
// PostgreSQL's wording, never a silent close.
//
// NB: a read cut short by a deadline (the interrupt of a COPY) keeps what
// it read, and the next receive resumes the same message.
type msgReader struct {
	r io.Reader
	// maxLen bounds the messages that take large bodies.
	maxLen int

	// buf[rp:wp] holds bytes read ahead.
	buf    []byte
	rp, wp int

	// The message in progress: its type and body length once its header
	// is read, and its body so far when it is larger than buf.
	inMsg bool
	typ   byte
	n     int
	body  []byte

	// Decoded messages, reused: a message returned by receive is valid
	// until the next call.
	bind     pgproto3.Bind
	close    pgproto3.Close
	copyData pgproto3.CopyData
	copyDone pgproto3.CopyDone
	copyFail pgproto3.CopyFail
	describe pgproto3.Describe
	execute  pgproto3.Execute
	flush    pgproto3.Flush
	fcall    pgproto3.FunctionCall
	parse    pgproto3.Parse
	query    pgproto3.Query
	sync     pgproto3.Sync
	term     pgproto3.Terminate
}

func newMsgReader(r io.Reader, maxLen int) *msgReader {
	return &msgReader{r: r, maxLen: maxLen, buf: make([]byte, readBufSize)}
}

// errInvalidLength is PostgreSQL's error for a message whose declared
// length is below 4 or above the limit of its type.
var errInvalidLength = pgerror.New(pgerror.ProtocolViolation, "invalid message length")

// header reads the next message's type and length, unless a read cut short
// already did.
func (r *msgReader) header() error {
	if r.inMsg {
		return nil
	}
	if cap(r.body) > maxKeptBodyBuf {
		r.body = nil
	}
	if err := r.fill(5); err != nil {
		if err == io.ErrUnexpectedEOF && r.wp == r.rp {
			err = io.EOF
		}
		return err
	}
	h := r.buf[r.rp : r.rp+5]
	r.rp += 5
	r.typ = h[0]
	r.n = int(int32(binary.BigEndian.Uint32(h[1:]))) - 4
	r.body = r.body[:0]
	r.inMsg = true
	return nil
}

// fill reads until buf holds n bytes past rp (n <= len(buf)).
func (r *msgReader) fill(n int) error {
	if r.wp-r.rp >= n {
		return nil
	}
	if len(r.buf)-r.rp < n {
		r.wp = copy(r.buf, r.buf[r.rp:r.wp])
		r.rp = 0
	}
	for r.wp-r.rp < n {
		m, err := r.r.Read(r.buf[r.wp:])
		r.wp += m
		if r.wp-r.rp >= n {
			return nil
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// readBody returns the body of the current message, reading it if
// needed. A body that fits in buf is returned in place; a larger one goes
// to body, which grows as its bytes come.
func (r *msgReader) readBody() ([]byte, error) {
	if r.n <= len(r.buf) {
		if err := r.fill(r.n); err != nil {
			return nil, err
		}
		b := r.buf[r.rp : r.rp+r.n : r.rp+r.n]
		r.rp += r.n
		return b, nil
	}
	if len(r.body) == 0 && r.wp > r.rp {
		if cap(r.body) < firstBodyBuf {
			r.body = make([]byte, 0, min(r.n, max(firstBodyBuf, r.wp-r.rp)))
		}
		r.body = append(r.body, r.buf[r.rp:r.wp]...)
		r.rp, r.wp = 0, 0
	}
	for len(r.body) < r.n {
		if len(r.body) == cap(r.body) {
			grown := make([]byte, len(r.body), min(r.n, max(firstBodyBuf, 2*cap(r.body))))
			copy(grown, r.body)
			r.body = grown
		}
		// NB: a reused buffer may be larger than this body; reading
		// past it would take the next message's bytes.
		m, err := r.r.Read(r.body[len(r.body):min(cap(r.body), r.n)])
		r.body = r.body[:len(r.body)+m]
		if err != nil && len(r.body) < r.n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return r.body, nil
}

// limit returns the most a message of type typ may hold in phase.
func (r *msgReader) limit(phase int, typ byte) int {
	if phase == phaseSession {
		switch typ {
		case 'B', 'd', 'F', 'P', 'Q':
			return r.maxLen
		}
	}
	return min(smallMessageLimit, r.maxLen)
}

// next reads the next message's header, checks its type with known and
// its length against the limit of phase, and returns its body.
func (r *msgReader) next(phase int, known func(typ byte) error) ([]byte, error) {
	if err := r.header(); err != nil {
		return nil, err
	}
	if err := known(r.typ); err != nil {
		return nil, err
	}
	if r.n < 0 || r.n > r.limit(phase, r.typ) {
		return nil, errInvalidLength
	}
	body, err := r.readBody()
	if err != nil {
		return nil, err
	}
	r.inMsg = false
	return body, nil
}

// receive returns the next message of an authenticated session.
func (r *msgReader) receive() (pgproto3.FrontendMessage, error) {
	body, err := r.next(phaseSession, func(typ byte) error {
		switch typ {
		case 'B', 'C', 'D', 'E', 'F', 'H', 'P', 'Q', 'S', 'X', 'c', 'd', 'f':
			return nil
		}
		return pgerror.Newf(pgerror.ProtocolViolation, "invalid frontend message type %d", typ)
	})
	if err != nil {
		return nil, err
	}
	m := msgBuf{b: body}
	var msg pgproto3.FrontendMessage
	switch r.typ {
	case 'B':
		r.decodeBind(&m)
		msg = &r.bind
	case 'C':
		r.close = pgproto3.Close{ObjectType: m.byte(), Name: m.string()}
		msg = &r.close
	case 'D':
		r.describe = pgproto3.Describe{ObjectType: m.byte(), Name: m.string()}
		msg = &r.describe
	case 'E':
		r.execute = pgproto3.Execute{Portal: m.string(), MaxRows: uint32(m.int32())}
		msg = &r.execute
	case 'F':
		// NB: fastpath calls are refused whatever they hold.
		m.b = nil
		msg = &r.fcall
	case 'H':
		msg = &r.flush
	case 'P':
		r.parse = pgproto3.Parse{Name: m.string(), Query: m.string()}
		n := int(uint16(m.int16()))
		if m.need(4 * n) {
			r.parse.ParameterOIDs = make([]uint32, 0, n)
			for range n {
				r.parse.ParameterOIDs = append(r.parse.ParameterOIDs, uint32(m.int32()))
			}
		}
		msg = &r.parse
	case 'Q':
		r.query = pgproto3.Query{String: m.string()}
		msg = &r.query
	case 'S':
		msg = &r.sync
	case 'X':
		msg = &r.term
	case 'c':
		msg = &r.copyDone
	case 'd':
		r.copyData.Data = m.rest()
		msg = &r.copyData
	case 'f':
		r.copyFail = pgproto3.CopyFail{Message: m.string()}
		msg = &r.copyFail
	}
	if err := m.end(); err != nil {
		return nil, err
	}
	return msg, nil
}

// decodeBind decodes a Bind body into r.bind. Its slices are new: the
// session may keep them with the portal.
func (r *msgReader) decodeBind(m *msgBuf) {
	b := &r.bind
	*b = pgproto3.Bind{}
	b.DestinationPortal = m.string()
	b.PreparedStatement = m.string()
	b.ParameterFormatCodes = m.int16s(nil)
	n := int(uint16(m.int16()))
	if !m.need(4 * n) {
		return
	}
	b.Parameters = make([][]byte, 0, n)
	for range n {
		l := m.int32()
		if l == -1 {
			b.Parameters = append(b.Parameters, nil)
			continue
		}
		b.Parameters = append(b.Parameters, m.bytes(int(l)))
	}
	b.ResultFormatCodes = m.int16s(nil)
}

// receivePassword returns the password of a PasswordMessage, the answer
// to AuthenticationCleartextPassword.
func (r *msgReader) receivePassword() (string, error) {
	body, err := r.next(phaseAuth, expectAuthResponse("password"))
	if err != nil {
		return "", err
	}
	// As PostgreSQL's recv_password_packet: exactly one string, so that a
	// password with a NUL in it cannot pass for its prefix.
	m := msgBuf{b: body}
	pw := m.string()
	if m.err != nil || len(m.b) != 0 {
		return "", pgerror.New(pgerror.ProtocolViolation, "invalid password packet size")
	}
	return pw, nil
}

// receiveSASLInitial returns the mechanism and data of a
// SASLInitialResponse; data is nil when the client sent none (length -1).
func (r *msgReader) receiveSASLInitial() (mech string, data []byte, err error) {
	body, err := r.next(phaseAuth, expectAuthResponse("SASL"))
	if err != nil {
		return "", nil, err
	}
	m := msgBuf{b: body}
	mech = m.string()
	if l := m.int32(); l != -1 {
		data = m.bytes(int(l))
	}
	if err := m.end(); err != nil {
		return "", nil, err
	}
	return mech, data, nil
}

// receiveSASL returns the data of a SASLResponse.
func (r *msgReader) receiveSASL() ([]byte, error) {
	return r.next(phaseAuth, expectAuthResponse("SASL"))
}

// expectAuthResponse refuses any message but 'p' during authentication,
// with PostgreSQL's words.
func expectAuthResponse(what string) func(typ byte) error {
	return func(typ byte) error {
		if typ != 'p' {
			return pgerror.Newf(pgerror.ProtocolViolation, "expected %s response, got message type %d", what, typ)
		}
		return nil
	}
}

// msgBuf reads the fields of a message body as PostgreSQL's pq_getmsg*
// functions do. The first error sticks; later reads return zero values.
type msgBuf struct {
	b   []byte
	err error
}

func (m *msgBuf) fail(msg string) {
	if m.err == nil {
		m.err = pgerror.New(pgerror.ProtocolViolation, msg)
	}
	m.b = nil
}

// need reports whether n more bytes are left, failing as
// pq_copymsgbytes does when they are not.
func (m *msgBuf) need(n int) bool {
	if m.err != nil {
		return false
	}
	if n < 0 || n > len(m.b) {
		m.fail("insufficient data left in message")
		return false
	}
	return true
}

func (m *msgBuf) byte() byte {
	if m.err != nil {
		return 0
	}
	if len(m.b) == 0 {
		m.fail("no data left in message")
		return 0
	}
	c := m.b[0]
	m.b = m.b[1:]
	return c
}

func (m *msgBuf) int16() int16 {
	if !m.need(2) {
		return 0
	}
	v := int16(binary.BigEndian.Uint16(m.b))
	m.b = m.b[2:]
	return v
}

func (m *msgBuf) int32() int32 {
	if !m.need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(m.b))
	m.b = m.b[4:]
	return v
}

// int16s reads a count and that many int16s, appended to dst.
func (m *msgBuf) int16s(dst []int16) []int16 {
	n := int(uint16(m.int16()))
	if !m.need(2*n) || n == 0 {
		return dst
	}
	if dst == nil {
		dst = make([]int16, 0, n)
	}
	for range n {
		dst = append(dst, m.int16())
	}
	return dst
}

// bytes returns the next n bytes, aliasing the body.
func (m *msgBuf) bytes(n int) []byte {
	if !m.need(n) {
		return nil
	}
	b := m.b[:n:n]
	m.b = m.b[n:]
	return b
}

// string reads a NUL-terminated string.
func (m *msgBuf) string() string {
	if m.err != nil {
		return ""
	}
	for i, c := range m.b {
		if c == 0 {
			s := string(m.b[:i])
			m.b = m.b[i+1:]
			return s
		}
	}
	m.fail("invalid string in message")
	return ""
}

// rest returns what is left of the body, aliasing it.
func (m *msgBuf) rest() []byte {
	b := m.b
	m.b = m.b[len(m.b):]
	return b
}

// end checks that the body was read to its end.
func (m *msgBuf) end() error {
	if m.err == nil && len(m.b) != 0 {
		m.fail("invalid message format")
	}
	return m.err
}
