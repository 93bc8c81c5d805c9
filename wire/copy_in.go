package wire

import (
	"io"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// copyInReader is the data stream of one COPY FROM STDIN: the payloads of
// the client's CopyData messages, up to CopyDone. It reads the messages
// itself, on the connection's goroutine, while the session runs the
// statement.
type copyInReader struct {
	c *conn
	// data is the unread rest of the current CopyData payload; it aliases
	// the receive buffer and is valid until the next Receive.
	data []byte
	// err ends the stream: io.EOF at CopyDone, or the failure.
	err error
}

// CopyIn sends CopyInResponse and returns the stream of the client's data.
func (w *resultWriter) CopyIn(binary bool, ncols int) (io.Reader, error) {
	var format uint16
	if binary {
		format = 1
	}
	w.cir.OverallFormat = byte(format)
	w.cir.ColumnFormatCodes = w.cir.ColumnFormatCodes[:0]
	for range ncols {
		w.cir.ColumnFormatCodes = append(w.cir.ColumnFormatCodes, format)
	}
	w.ncols = -1
	c := w.c
	c.send(&w.cir)
	if err := c.flush(); err != nil {
		return nil, pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
	}
	w.copyIn = copyInReader{c: c}
	return &w.copyIn, nil
}

// Read returns data from the client's CopyData messages.
func (r *copyInReader) Read(p []byte) (int, error) {
	for len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.receive()
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// receive reads the next message of the COPY exchange. As in PostgreSQL,
// Flush and Sync are ignored, CopyFail fails the COPY with 57014, and any
// other message is a protocol violation that fails it with 08P01; a
// Terminate or a broken connection also ends the connection once the
// statement is over.
func (r *copyInReader) receive() {
	msg, err := r.c.be.Receive()
	if err != nil {
		r.c.recvErr = err
		r.err = pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not receive data from client")
		return
	}
	switch m := msg.(type) {
	case *pgproto3.CopyData:
		r.data = m.Data
	case *pgproto3.CopyDone:
		r.err = io.EOF
	case *pgproto3.CopyFail:
		r.err = pgerror.Newf(pgerror.QueryCanceled, "COPY from stdin failed: %s", m.Message)
	case *pgproto3.Flush, *pgproto3.Sync:
	case *pgproto3.Terminate:
		r.c.terminated = true
		r.err = pgerror.New(pgerror.ProtocolViolation, "unexpected Terminate message during COPY from stdin")
	default:
		typ := byte('?')
		if b, err := msg.Encode(nil); err == nil && len(b) > 0 {
			typ = b[0]
		}
		r.err = pgerror.Newf(pgerror.ProtocolViolation, "unexpected message type 0x%02X during COPY from stdin", typ)
	}
}
