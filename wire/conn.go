package wire

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
)

const (
	// flushThreshold is how much output is buffered before it is written,
	// so a large result streams instead of piling up.
	flushThreshold = 64 << 10
	// maxKeptWriteBuf is the largest write buffer kept between flushes;
	// one that grew past it for a huge row is dropped.
	maxKeptWriteBuf = 1 << 20
	// shutdownWriteTimeout bounds the write of the admin-shutdown error to
	// an idle client that does not read.
	shutdownWriteTimeout = time.Second
)

// connState is where a connection's handler is, as Shutdown sees it.
type connState uint8

const (
	// stateStartup: the handshake is running.
	stateStartup connState = iota + 1
	// stateIdle: waiting for the next client message; nothing is buffered.
	stateIdle
	// stateBusy: handling a message.
	stateBusy
)

// conn is one client connection. Its handler goroutine owns everything but
// the fields under mu.
type conn struct {
	srv    *Server
	nc     net.Conn
	logger *slog.Logger
	rd     *msgReader
	sess   Session
	rw     resultWriter

	// authDeadline is when the connection must have authenticated.
	authDeadline time.Time

	// pid and secret are the BackendKeyData of the connection.
	pid    uint32
	secret [4]byte

	// wbuf holds encoded messages not yet written; committed is the length
	// of its complete messages (a panic in the middle of encoding one is
	// cut back to it). werr is the first write error; once set the
	// connection is dead and every write is a no-op.
	wbuf      []byte
	committed int
	werr      error

	// ignoreTillSync is set after an error in an extended-protocol message:
	// as PostgreSQL does, messages are skipped until the next Sync.
	ignoreTillSync bool
	// portalFormats holds the result format codes of each portal, by name.
	portalFormats map[string][]int16
	// recvErr and terminated are set when reading a COPY's data stream
	// met a broken connection or a Terminate: the connection ends once
	// the statement is over.
	recvErr    error
	terminated bool

	// starting is set while the connection counts among those that
	// have not authenticated, slot once it holds a session slot; both
	// are under srv.mu.
	starting, slot bool

	mu          sync.Mutex
	state       connState
	closing     bool
	queryCancel context.CancelFunc
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc, state: stateStartup}
	c.logger = s.logger.With("remote", nc.RemoteAddr().String())
	c.rw.c = c
	return c
}

// serve runs the connection until the client leaves, the protocol breaks or
// the server shuts down.
func (c *conn) serve() {
	defer c.srv.removeConn(c)
	defer func() { _ = c.nc.Close() }()
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
		}
	}()
	if !c.startup() {
		return
	}
	defer c.closeSession()
	c.loop()
}

// closeSession closes the session, containing a panic in it.
func (c *conn) closeSession() {
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
		}
	}()
	c.sess.Close()
}

// loop reads and handles messages until one ends the connection.
func (c *conn) loop() {
	for {
		msg, err := c.rd.receive()
		if err != nil {
			c.receiveFailed(err)
			return
		}
		if !c.setBusy() {
			return
		}
		keep := c.handle(msg)
		// NB: as PostgreSQL does, the answers to extended-protocol
		// messages wait in the buffer for Sync or Flush, so a Bind,
		// Execute, Sync round trip costs the client one read.
		if !c.setIdle(!isExtended(msg)) || !keep {
			return
		}
	}
}

// setBusy marks the connection busy; it reports false if the server is
// shutting down, in which case the message is dropped (Shutdown already
// answered the client).
func (c *conn) setBusy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.state = stateBusy
	return true
}

// setIdle flushes if asked to and marks the connection idle. If Shutdown
// came while it was busy, it sends the admin-shutdown error and reports
// false.
func (c *conn) setIdle(flush bool) bool {
	if flush {
		_ = c.flush()
	}
	c.mu.Lock()
	c.state = stateIdle
	closing := c.closing
	c.mu.Unlock()
	if closing {
		c.fatal(errAdminShutdown)
		return false
	}
	return c.werr == nil
}

// isExtended reports whether msg is an extended-protocol message whose
// answer waits for Sync or Flush.
func isExtended(msg pgproto3.FrontendMessage) bool {
	switch msg.(type) {
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		return true
	}
	return false
}

// errAdminShutdown is PostgreSQL's message for a connection ended by a
// server shutdown.
var errAdminShutdown = pgerror.New(pgerror.AdminShutdown, "terminating connection due to administrator command")

// shutdown ends the connection on behalf of Server.Shutdown.
func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	switch c.state {
	case stateStartup:
		_ = c.nc.Close()
	case stateIdle:
		// NB: the handler is blocked reading and writes nothing until it
		// takes mu, so the buffer is ours.
		_ = c.nc.SetWriteDeadline(time.Now().Add(shutdownWriteTimeout))
		c.fatal(errAdminShutdown)
		_ = c.nc.Close()
	case stateBusy:
		if c.queryCancel != nil {
			c.queryCancel()
		}
	}
}

// cancelQuery cancels the running query, if any.
func (c *conn) cancelQuery() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queryCancel != nil {
		c.queryCancel()
	}
}

// receiveFailed handles an error from reading a message: a closed or
// broken socket ends the connection quietly, a malformed message with a
// FATAL protocol-violation error.
func (c *conn) receiveFailed(err error) {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	var (
		ne net.Error
		pe *pgerror.Error
	)
	switch {
	case closing, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.As(err, &ne):
		c.logger.Debug("connection closed", "err", err)
	case errors.As(err, &pe):
		c.protocolViolation(pe)
	default:
		c.protocolViolation(pgerror.Newf(pgerror.ProtocolViolation, "invalid frontend message: %v", err))
	}
}

// protocolViolation logs a malformed message and sends its error as
// FATAL; the caller closes the connection.
func (c *conn) protocolViolation(pe *pgerror.Error) {
	attrs := []any{"err", pe.Message}
	if c.rd != nil {
		attrs = append(attrs, "message_type", string(rune(c.rd.typ)))
	}
	c.logger.Warn("protocol violation", attrs...)
	c.fatal(pe)
}

// handle answers one message. It reports whether the connection goes on.
// A panic while handling it is logged and answered as an XX000 error; the
// connection stays usable.
func (c *conn) handle(msg pgproto3.FrontendMessage) (keep bool) {
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
			c.sess.Abort()
			c.wbuf = c.wbuf[:c.committed]
			c.sendError(pgerror.AssertionFailedf("%v", r))
			switch msg.(type) {
			case *pgproto3.Query, *pgproto3.Sync, *pgproto3.FunctionCall:
				c.readyForQuery()
			case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
				c.ignoreTillSync = true
			}
			keep = c.werr == nil
		}
	}()
	switch m := msg.(type) {
	case *pgproto3.Terminate:
		return false
	case *pgproto3.Sync:
		c.sync()
	case *pgproto3.Query:
		if !c.ignoreTillSync {
			c.query(m.String)
		}
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		c.extendedMessage(m)
	case *pgproto3.Flush:
		if !c.ignoreTillSync {
			_ = c.flush()
		}
	case *pgproto3.FunctionCall:
		if !c.ignoreTillSync {
			c.sendError(pgerror.Unimplementedf("fastpath function calls are not supported"))
			c.readyForQuery()
		}
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Ignored outside COPY, as the protocol asks: they are what is left
		// of a COPY that failed.
	}
	if c.recvErr != nil {
		c.receiveFailed(c.recvErr)
		return false
	}
	return c.werr == nil && !c.terminated
}

// query runs one simple-protocol query string and ends it with ReadyForQuery.
func (c *conn) query(q string) {
	ctx, done := c.startStatement()
	defer done()

	c.rw.reset(ctx)
	defer c.rw.end() // before cancel, even after a panic
	if err := c.sess.ExecSimple(ctx, q, &c.rw); err != nil {
		c.sendError(err)
	}
	c.readyForQuery()
}

// readyForQuery sends ReadyForQuery with the session's transaction status
// and flushes.
func (c *conn) readyForQuery() {
	if c.recvErr != nil {
		return // the connection ends; handle reports why
	}
	c.send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus()})
	_ = c.flush()
}

// txStatus returns the session's status byte, containing a panic in it.
func (c *conn) txStatus() (st byte) {
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
			st = session.TxIdle
		}
	}()
	return c.sess.TxStatus()
}

// logPanic logs a recovered panic with the stack that raised it.
func (c *conn) logPanic(r any) {
	c.logger.Error("panic in connection handler", "panic", r, "stack", string(debug.Stack()))
}

// send appends msg to the write buffer.
func (c *conn) send(msg pgproto3.BackendMessage) {
	if c.werr != nil {
		return
	}
	buf, err := msg.Encode(c.wbuf)
	if err != nil {
		c.werr = err
		return
	}
	c.wbuf = buf
	c.committed = len(buf)
}

// flush writes the buffered messages to the socket.
func (c *conn) flush() error {
	if c.werr != nil {
		return c.werr
	}
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.wbuf)
	return c.wrote(err)
}

// wrote ends a write of what wbuf holds, by flush or by a vectored or
// ancillary write: the buffer is emptied (dropped when it grew past
// maxKeptWriteBuf), and a write error kept in werr and returned.
func (c *conn) wrote(err error) error {
	if cap(c.wbuf) > maxKeptWriteBuf {
		c.wbuf = nil
	} else {
		c.wbuf = c.wbuf[:0]
	}
	c.committed = 0
	if err != nil {
		c.werr = err
	}
	return err
}

// maybeFlush flushes once enough output is buffered.
func (c *conn) maybeFlush() error {
	if len(c.wbuf) >= flushThreshold {
		return c.flush()
	}
	return c.werr
}
