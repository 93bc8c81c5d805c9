package wire

import (
	"encoding/binary"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// copyOutWriter is the data stream of one COPY TO STDOUT: each Write
// becomes one CopyData message, encoded straight into the connection's
// output buffer.
type copyOutWriter struct {
	c *conn
	// cor is the reused CopyOutResponse.
	cor pgproto3.CopyOutResponse
	// active is set from CopyOutResponse until the statement's
	// CommandComplete, which CopyDone precedes.
	active bool
	// iov and nb carry a WriteBuffers message to the socket.
	iov [][]byte
	nb  net.Buffers
	// shmSize is the size of the shared-memory area the running COPY
	// asked for (SHARED_MEMORY), 0 for none; shm is the area, made with
	// the first frame, and shmFailed is set when it could not be.
	shmSize   int
	shm       *shmArea
	shmFailed bool
}

// CopyOut sends CopyOutResponse and returns the stream that carries the
// rows to the client.
func (w *resultWriter) CopyOut(binary bool, ncols int) (io.Writer, error) {
	o := &w.copyOut
	var format uint16
	if binary {
		format = 1
	}
	o.cor.OverallFormat = byte(format)
	o.cor.ColumnFormatCodes = o.cor.ColumnFormatCodes[:0]
	for range ncols {
		o.cor.ColumnFormatCodes = append(o.cor.ColumnFormatCodes, format)
	}
	w.ncols = -1
	o.c, o.active = w.c, true
	w.c.send(&o.cor)
	if err := w.result(); err != nil {
		return nil, err
	}
	return o, nil
}

// Write sends p as one CopyData message; p is not kept. A message of
// flushThreshold bytes or more (a tensor-stream frame) goes to the socket
// straight from p, after what is buffered, instead of through the buffer.
func (o *copyOutWriter) Write(p []byte) (int, error) {
	c := o.c
	if c.werr == nil && len(p) >= flushThreshold {
		c.wbuf = append(c.wbuf, 'd', 0, 0, 0, 0)
		binary.BigEndian.PutUint32(c.wbuf[len(c.wbuf)-4:], uint32(len(p)+4))
		c.committed = len(c.wbuf)
		err := c.flush()
		if err == nil {
			if _, err = c.nc.Write(p); err != nil {
				c.werr = err
			}
		}
		if err != nil {
			return 0, pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
		}
		return len(p), nil
	}
	if c.werr == nil {
		c.wbuf = append(c.wbuf, 'd', 0, 0, 0, 0)
		binary.BigEndian.PutUint32(c.wbuf[len(c.wbuf)-4:], uint32(len(p)+4))
		c.wbuf = append(c.wbuf, p...)
		c.committed = len(c.wbuf)
	}
	if err := c.maybeFlush(); err != nil {
		return 0, pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
	}
	return len(p), nil
}

// WriteBuffers sends the concatenation of bufs as one CopyData message;
// bufs are not kept. A message of flushThreshold bytes or more goes to a
// TCP socket in one vectored write (writev) together with what is
// buffered before it; a smaller one, or one for a TLS connection, through
// the buffer.
func (o *copyOutWriter) WriteBuffers(bufs [][]byte) error {
	c := o.c
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if c.werr != nil {
		return pgerror.Wrapf(c.werr, pgerror.ConnectionFailure, "could not send data to client")
	}
	if o.shmSize > 0 {
		if sent, err := o.writeShared(bufs, n, nil); sent {
			return err
		}
	}
	c.wbuf = append(c.wbuf, 'd', 0, 0, 0, 0)
	binary.BigEndian.PutUint32(c.wbuf[len(c.wbuf)-4:], uint32(n+4))
	// A vectored write needs the socket itself (TCP or Unix); over TLS
	// (or anything else) the pieces are joined in the buffer and written
	// at once.
	sock := c.nc
	if w, ok := sock.(*netConn); ok {
		sock = w.conn()
	}
	vectored := false
	switch sock.(type) {
	case *net.TCPConn, *net.UnixConn:
		vectored = true
	}
	if n < flushThreshold || !vectored {
		for _, b := range bufs {
			c.wbuf = append(c.wbuf, b...)
		}
		c.committed = len(c.wbuf)
		if err := c.maybeFlush(); err != nil {
			return pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
		}
		return nil
	}
	o.iov = append(append(o.iov[:0], c.wbuf), bufs...)
	o.nb = o.iov
	_, err := o.nb.WriteTo(sock)
	clear(o.iov)
	o.nb = nil
	if err := c.wrote(err); err != nil {
		return pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
	}
	return nil
}

// done sends CopyDone if a COPY TO is in progress.
func (o *copyOutWriter) done() {
	if o.active {
		o.active = false
		o.c.send(&pgproto3.CopyDone{})
	}
	o.endShared() // the next statement of the query string asks anew
}
