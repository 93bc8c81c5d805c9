package wire

import (
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// netConn is the socket of one client connection. It starts as the TCP
// connection and is switched to TLS after an SSLRequest, so the rest of the
// server reads and writes one net.Conn throughout and Shutdown can close
// it at any point.
type netConn struct {
	raw net.Conn

	mu  sync.Mutex
	cur net.Conn
	tls bool
}

var _ net.Conn = (*netConn)(nil)

func newNetConn(raw net.Conn) *netConn { return &netConn{raw: raw, cur: raw} }

func (n *netConn) conn() net.Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cur
}

// startTLS runs the server side of a TLS handshake on the socket and
// switches to it. It is called from the connection's own goroutine, when
// nothing else reads or writes.
func (n *netConn) startTLS(cfg *tls.Config, deadline time.Time) error {
	tc := tls.Server(n.raw, cfg)
	n.mu.Lock()
	n.cur, n.tls = tc, true
	n.mu.Unlock()
	_ = tc.SetDeadline(deadline)
	return tc.Handshake()
}

// isTLS reports whether the connection runs over TLS.
func (n *netConn) isTLS() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.tls
}

func (n *netConn) Read(b []byte) (int, error)         { return n.conn().Read(b) }
func (n *netConn) Write(b []byte) (int, error)        { return n.conn().Write(b) }
func (n *netConn) Close() error                       { return n.conn().Close() }
func (n *netConn) LocalAddr() net.Addr                { return n.raw.LocalAddr() }
func (n *netConn) RemoteAddr() net.Addr               { return n.raw.RemoteAddr() }
func (n *netConn) SetDeadline(t time.Time) error      { return n.conn().SetDeadline(t) }
func (n *netConn) SetReadDeadline(t time.Time) error  { return n.conn().SetReadDeadline(t) }
func (n *netConn) SetWriteDeadline(t time.Time) error { return n.conn().SetWriteDeadline(t) }
