package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// stageSize is the buffer small messages and message headers are read
// through.
const stageSize = 64 << 10

// maxMessage bounds a message's length; a larger one is a protocol error.
const maxMessage = 1 << 30

// copyReader speaks the simple query protocol for one COPY on a
// connection's socket, which pgconn hands over (PgConn.SyncConn, Conn)
// between its own operations. Small messages go through buf; a CopyData
// payload, one frame, is read straight from the socket into the aligned
// buffer the consumer gets, so a frame's bytes are copied once, by the
// kernel. pgconn's own state is not updated: a ParameterStatus, notice or
// notification during the COPY is not seen by it.
type copyReader struct {
	nc net.Conn
	// src is what bodies are read from: nc, or rr when the stream may
	// pass a shared-memory area (SharedMemory); area is then that area.
	src  io.Reader
	rr   *rightsReader
	area *sharedArea
	buf  []byte
	r, w int
	// broken is set once the connection is not at a message boundary after
	// ReadyForQuery (an I/O or protocol error).
	broken bool
}

// run sends the query and reads its messages up to ReadyForQuery. It
// returns the command tag, or the server's error as a *pgconn.PgError.
func (c *copyReader) run(ctx context.Context, s *Batches, sql string) (pgconn.CommandTag, error) {
	q, err := (&pgproto3.Query{String: sql}).Encode(nil)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if _, err := c.nc.Write(q); err != nil {
		c.broken = true
		return pgconn.CommandTag{}, fmt.Errorf("stream: sending the query: %w", err)
	}
	var tag pgconn.CommandTag
	var serverErr error
	readInto := c.readInto
	for {
		typ, n, err := c.header()
		if err != nil {
			c.broken = true
			return tag, err
		}
		if typ == 'd' {
			if serverErr != nil {
				err = c.skip(n)
			} else if c.rr != nil && n == shmRefLen {
				err = c.shared(ctx, s, n)
			} else {
				err = s.frame(ctx, n, readInto)
			}
			if err != nil {
				c.broken = true
				return tag, err
			}
			continue
		}
		body, err := c.small(n)
		if err != nil {
			c.broken = true
			return tag, err
		}
		switch typ {
		case 'C':
			tag = pgconn.NewCommandTag(string(cstring(body)))
		case 'E':
			var er pgproto3.ErrorResponse
			if err := er.Decode(body); err != nil {
				c.broken = true
				return tag, fmt.Errorf("stream: bad ErrorResponse: %w", err)
			}
			serverErr = pgconn.ErrorResponseToPgError(&er)
		case 'Z':
			return tag, serverErr
		case 'H', 'c', 'N', 'S', 'A':
			// CopyOutResponse, CopyDone, notices, parameter changes and
			// notifications need nothing here.
		default:
			c.broken = true
			return tag, fmt.Errorf("stream: unexpected message %q in a COPY's answer (is the query a COPY ... FORMAT tensor?)", typ)
		}
	}
}

// shared reads a reference to a frame in the shared-memory area, mapping
// the area at the first, and hands the frame over.
func (c *copyReader) shared(ctx context.Context, s *Batches, n int) error {
	ref, err := c.small(n)
	if err != nil {
		return err
	}
	if err := parseRef(ref); err != nil {
		return err
	}
	if c.area == nil {
		a, err := mapArea(c.rr, binary.LittleEndian.Uint64(ref[32:]))
		if err != nil {
			return err
		}
		c.area = a
		s.area = a
	}
	frame, seq, err := c.area.frame(ref)
	if err != nil {
		return err
	}
	return s.sharedFrame(ctx, frame, seq)
}

// header reads a message's type and its body's length.
func (c *copyReader) header() (byte, int, error) {
	if err := c.fill(5); err != nil {
		return 0, 0, err
	}
	typ := c.buf[c.r]
	n := int(binary.BigEndian.Uint32(c.buf[c.r+1:])) - 4
	c.r += 5
	if n < 0 || n > maxMessage {
		return 0, 0, fmt.Errorf("stream: message %q of length %d", typ, n+4)
	}
	return typ, n, nil
}

// small reads a body that fits the stage buffer; it is valid until the
// next read.
func (c *copyReader) small(n int) ([]byte, error) {
	if n > len(c.buf) {
		nb := make([]byte, n)
		c.w, c.r = copy(nb, c.buf[c.r:c.w]), 0
		c.buf = nb
	}
	if err := c.fill(n); err != nil {
		return nil, err
	}
	b := c.buf[c.r : c.r+n]
	c.r += n
	return b, nil
}

// readInto reads len(dst) bytes of a body: what is staged, then the rest
// straight from the socket.
func (c *copyReader) readInto(dst []byte) error {
	k := copy(dst, c.buf[c.r:c.w])
	c.r += k
	if k < len(dst) {
		if _, err := io.ReadFull(c.src, dst[k:]); err != nil {
			return err
		}
	}
	return nil
}

// skip discards n bytes of a body.
func (c *copyReader) skip(n int) error {
	for n > 0 {
		if c.r == c.w {
			if err := c.fill(1); err != nil {
				return err
			}
		}
		k := min(n, c.w-c.r)
		c.r += k
		n -= k
	}
	return nil
}

// fill makes at least n bytes (n <= len(buf)) available at buf[r:].
func (c *copyReader) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	if c.r > 0 {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	for c.w < n {
		k, err := c.src.Read(c.buf[c.w:])
		c.w += k
		if err != nil && c.w < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// cstring returns b up to its NUL terminator.
func cstring(b []byte) []byte {
	for i, x := range b {
		if x == 0 {
			return b[:i]
		}
	}
	return b
}
