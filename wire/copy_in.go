package wire

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// copyInReader is the data stream of one COPY FROM STDIN: the payloads of
// the client's CopyData messages, up to CopyDone. It reads the messages
// itself, on the connection's goroutine, while the session runs the
// statement.
type copyInReader struct {
	c   *conn
	ctx context.Context
	// data is the unread rest of the current CopyData payload; it aliases
	// the receive buffer and is valid until the next Receive.
	data []byte
	// err ends the stream: io.EOF at CopyDone, or the failure.
	err error

	// stop unregisters the interrupt of the current statement. gen,
	// under mu, numbers the statements, so that an interrupt left over
	// from an earlier one touches nothing.
	stop func() bool
	mu   sync.Mutex
	gen  uint64
}

// start readies r for a new COPY of the statement whose context is ctx:
// canceling it (a CancelRequest, a server shutdown) interrupts a read
// that waits for the client.
func (r *copyInReader) start(c *conn, ctx context.Context) {
	if r.stop != nil { // an earlier COPY of the same query string
		r.stop()
	}
	r.mu.Lock()
	r.c, r.ctx, r.data, r.err = c, ctx, nil, nil
	r.gen++
	gen := r.gen
	r.mu.Unlock()
	r.stop = context.AfterFunc(ctx, func() { r.interrupt(gen) })
}

// interrupt wakes a Receive blocked on the socket by setting a read
// deadline in the past, if statement gen is still running.
func (r *copyInReader) interrupt(gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen == gen {
		_ = r.c.nc.SetReadDeadline(time.Now())
	}
}

// end is called when the statement is over: reads block again. NB: a
// Receive cut short by interrupt keeps what it read of a message, so the
// next Receive resumes it.
func (r *copyInReader) end() {
	if r.stop == nil {
		return
	}
	r.stop()
	r.stop = nil
	r.mu.Lock()
	r.gen++
	r.mu.Unlock()
	_ = r.c.nc.SetReadDeadline(time.Time{})
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
	w.copyIn.start(c, w.ctx)
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
	msg, err := r.c.rd.receive()
	if err != nil && r.ctx.Err() != nil {
		r.err = pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
		return
	}
	if err != nil {
		// NB: the connection ends once the statement is over; a
		// malformed message is reported then, as FATAL.
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
