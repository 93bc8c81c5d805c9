// Package wire is deeplaked's PostgreSQL front end: it speaks protocol 3.0
// to clients on top of pgproto3, runs the startup handshake, and turns each
// Query message into a call on a Session, writing results as RowDescription,
// DataRow and CommandComplete messages. It is the one place where an error
// becomes an ErrorResponse.
package wire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
)

// Engine creates sessions, one per client connection.
type Engine interface {
	NewSession(info StartupInfo) (Session, error)
}

// StartupInfo is what a client said about itself in its StartupMessage.
type StartupInfo struct {
	User            string
	Database        string
	ApplicationName string
	// Params holds every parameter of the StartupMessage, user and
	// database included, except protocol options ("_pq_.*").
	Params     map[string]string
	RemoteAddr net.Addr
	// Superuser is set for a superuser role, and for everyone under trust
	// authentication.
	Superuser bool
}

// Session runs the statements of one client connection. The server calls it
// from a single goroutine.
type Session interface {
	// ExecSimple runs the query string of one simple-protocol Query message
	// (it may hold several statements), writing each statement's result to
	// w. It returns the error that ended it, if any; the caller sends the
	// ErrorResponse.
	ExecSimple(ctx context.Context, query string, w session.ResultWriter) error
	// TxStatus returns the transaction status byte for ReadyForQuery.
	TxStatus() byte
	// Close releases the session, rolling back any open transaction.
	Close()
	// Abort ends the statement's transaction after a failure the session
	// did not see (a recovered panic): an implicit one rolls back, an
	// explicit one is marked failed.
	Abort()

	// The extended query protocol; see the methods of the same names of
	// session.Session.
	Prepare(name, query string, paramOIDs []uint32) (*session.Prepared, error)
	Statement(name string) (*session.Prepared, error)
	CloseStatement(name string)
	Bind(portal, stmt string, formats []int16, values [][]byte) (*session.Portal, error)
	Portal(name string) (*session.Portal, error)
	ClosePortal(name string)
	Execute(ctx context.Context, portal string, maxRows int, w session.ResultWriter) (suspended bool, err error)
	Sync() error
}

// Options configure a Server.
type Options struct {
	// Logger receives connection errors and recovered panics; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxMessageSize bounds the body of a client message that may be
	// large (Query, Parse, Bind, CopyData, FunctionCall); 0 means
	// DefaultMaxMessageSize. Other messages, and every message before
	// authentication, are bounded as in PostgreSQL by 10,000 bytes.
	MaxMessageSize int
	// AuthenticationTimeout bounds the time from accepting a connection
	// to the end of its authentication (PostgreSQL's
	// authentication_timeout); 0 means DefaultAuthenticationTimeout.
	AuthenticationTimeout time.Duration
	// Auth is the password exchange clients must pass; the zero value is
	// AuthTrust.
	Auth AuthMethod
	// Roles looks roles up for every method but AuthTrust.
	Roles RoleSource
	// TLS, when set, is offered to clients that send an SSLRequest.
	TLS *tls.Config
	// MaxConnections bounds the authenticated sessions; beyond it a new
	// one gets FATAL 53300. 0 means no limit. Connections still in
	// startup or authentication do not count: MaxStartupConnections
	// bounds them.
	MaxConnections int
	// SuperuserReservedConnections is how many of the last
	// MaxConnections slots only superusers may take, as PostgreSQL's
	// superuser_reserved_connections.
	SuperuserReservedConnections int
	// MaxStartupConnections bounds the connections that have not
	// authenticated yet; beyond it a new connection gets FATAL 53300 at
	// once. 0 means DefaultMaxStartupConnections, or twice
	// MaxConnections if that is more.
	MaxStartupConnections int
	// MockAuthKey derives the made-up SCRAM verifiers of roles that
	// cannot log in; keep it across restarts so that an unknown role's
	// salt does not change. Empty means a random key.
	MockAuthKey []byte
}

// Defaults for Options.
const (
	DefaultMaxMessageSize        = largeMessageLimit
	DefaultAuthenticationTimeout = 10 * time.Second
	DefaultMaxStartupConnections = 1000
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("wire: server closed")

// Server accepts PostgreSQL connections and serves each on its own goroutine.
type Server struct {
	eng     Engine
	opts    Options
	logger  *slog.Logger
	baseCtx context.Context
	// stop cancels baseCtx: every running query sees it.
	stop context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	keys      cancelKeys
	handlers  sync.WaitGroup
	// starting counts the connections that have not authenticated yet,
	// sessions those that hold a slot of MaxConnections.
	starting, sessions int
	// refused counts the connections refused at accept since
	// refusedLogged, when they were last logged.
	refused       int
	refusedLogged time.Time
	// mockKey derives made-up verifiers for roles that cannot log in.
	mockKey []byte
}

// NewServer returns a server that creates sessions with eng.
func NewServer(eng Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.AuthenticationTimeout <= 0 {
		opts.AuthenticationTimeout = DefaultAuthenticationTimeout
	}
	if opts.MaxStartupConnections <= 0 {
		opts.MaxStartupConnections = max(DefaultMaxStartupConnections, 2*opts.MaxConnections)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{
		eng:       eng,
		opts:      opts,
		logger:    opts.Logger,
		baseCtx:   ctx,
		stop:      stop,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		keys:      cancelKeys{byPID: make(map[uint32]*conn)},
	}
	s.mockKey = opts.MockAuthKey
	if len(s.mockKey) == 0 {
		s.mockKey = make([]byte, 32)
		_, _ = rand.Read(s.mockKey)
	}
	return s
}

// Serve accepts connections on ln until ln is closed or Shutdown is called.
// It returns nil after Shutdown, ErrServerClosed if called after it, and
// the accept error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if retryableAccept(err) {
				// Out of file descriptors and similar: wait and retry, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger.Warn("accept failed; retrying", "err", err, "delay", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := newConn(s, newNetConn(nc))
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		if s.starting >= s.opts.MaxStartupConnections {
			s.mu.Unlock()
			s.refuse(nc)
			continue
		}
		s.starting++
		c.starting = true
		s.conns[c] = struct{}{}
		s.handlers.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// refuseWriteTimeout bounds the write of the error to a connection
// refused at once.
const refuseWriteTimeout = 100 * time.Millisecond

// refuse answers a connection beyond MaxStartupConnections with FATAL
// 53300 and closes it, without reading from it.
func (s *Server) refuse(nc net.Conn) {
	// NB: at most one log line a second, however fast they come.
	s.mu.Lock()
	s.refused++
	refused, now := s.refused, time.Now()
	logIt := now.Sub(s.refusedLogged) >= time.Second
	if logIt {
		s.refusedLogged, s.refused = now, 0
	}
	s.mu.Unlock()
	if logIt {
		s.logger.Warn("too many connections in startup; refusing new ones", "remote", nc.RemoteAddr().String(), "max", s.opts.MaxStartupConnections, "refused", refused)
	}
	msg, err := errorResponse(errTooManyClients, severityFatal).Encode(nil)
	if err == nil {
		_ = nc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		_, _ = nc.Write(msg)
	}
	_ = nc.Close()
}

// errReservedSlots is PostgreSQL's error for a role that is not a
// superuser when only the reserved slots are left.
var errReservedSlots = pgerror.Newf(pgerror.TooManyConnections, "remaining connection slots are reserved for roles with the %s attribute", "SUPERUSER")

// takeSlot moves c from the connections in startup to the sessions, as
// its authentication ends: it refuses it beyond MaxConnections, and in
// the last SuperuserReservedConnections slots when it is not a superuser.
func (s *Server) takeSlot(c *conn, superuser bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := s.opts.MaxConnections; limit > 0 {
		if s.sessions >= limit {
			return errTooManyClients
		}
		if !superuser && s.sessions >= limit-s.opts.SuperuserReservedConnections {
			return errReservedSlots
		}
	}
	s.starting--
	s.sessions++
	c.starting, c.slot = false, true
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown stops accepting connections and ends the open ones: an idle
// connection gets a FATAL 57P01 admin_shutdown error and is closed; a
// running query is canceled and its connection ends the same way once the
// query returns. Shutdown waits for every connection handler to finish, or
// until ctx is done, in which case it closes the remaining sockets and
// returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		_ = ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.shutdown()
	}
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.stop()
		return nil
	case <-ctx.Done():
		s.stop()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// retryableAccept reports whether an Accept error is a passing condition
// rather than a dead listener.
func retryableAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM)
}

// removeConn forgets c once its handler is done.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	switch {
	case c.starting:
		s.starting--
	case c.slot:
		s.sessions--
	}
	c.starting, c.slot = false, false
	s.mu.Unlock()
	s.keys.remove(c)
	s.handlers.Done()
}
