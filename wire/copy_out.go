package wire

import (
	"encoding/binary"
	"io"

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

// done sends CopyDone if a COPY TO is in progress.
func (o *copyOutWriter) done() {
	if o.active {
		o.active = false
		o.c.send(&pgproto3.CopyDone{})
	}
}
