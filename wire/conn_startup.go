package wire

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
)

// startup runs the handshake: it answers an SSLRequest with 'S' and a TLS
// handshake when TLS is configured, other SSL and GSS encryption requests
// with 'N' (the client goes on in the clear), serves a CancelRequest,
// negotiates the protocol version, refuses connections beyond
// MaxConnections, authenticates the user, creates the session and sends
// AuthenticationOk, the ParameterStatus messages, BackendKeyData and the
// first ReadyForQuery. It reports whether the connection goes on.
func (c *conn) startup() bool {
	_ = c.nc.SetDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	var (
		buf              []byte
		sslDone, gssDone bool
		p                startupPacket
		err              error
	)
	for {
		p, err = readStartupPacket(c.nc, buf)
		if err != nil {
			var pe *pgerror.Error
			if errors.As(err, &pe) {
				c.fatal(pe)
			}
			c.logger.Debug("startup failed", "err", err)
			return false
		}
		buf = p.body[:0]
		if (p.code == codeSSLRequest && !sslDone) || (p.code == codeGSSENCRequest && !gssDone) {
			sslDone = sslDone || p.code == codeSSLRequest
			gssDone = gssDone || p.code == codeGSSENCRequest
			if p.code == codeSSLRequest && c.srv.opts.TLS != nil {
				if !c.startTLS() {
					return false
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false
			}
			continue
		}
		break
	}
	switch {
	case p.code == codeCancelRequest:
		c.srv.handleCancelRequest(p.body)
		return false
	case p.major() != protocolMajor:
		c.fatal(unsupportedProtocol(p))
		return false
	}

	params, pqOptions, err := parseStartupParams(p.body)
	if err != nil {
		c.fatal(err)
		return false
	}
	info, err := startupInfoOf(params)
	if err != nil {
		c.fatal(err)
		return false
	}
	info.RemoteAddr = c.nc.RemoteAddr()
	if nc, ok := c.nc.(*netConn); ok && nc.overLimit {
		c.fatal(errTooManyClients)
		return false
	}
	if p.minor() > protocolMinor || len(pqOptions) > 0 {
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: protocolMinor, UnrecognizedOptions: pqOptions})
	}
	c.be = pgproto3.NewBackend(c.nc, c.nc)
	c.be.SetMaxBodyLen(c.srv.opts.MaxMessageSize)
	cred, err := c.authenticate(info.User)
	if err != nil {
		var pe *pgerror.Error
		if errors.As(err, &pe) {
			c.fatal(pe)
		}
		c.logger.Debug("authentication failed", "user", info.User, "err", err)
		return false
	}
	info.Superuser = cred.Superuser
	if c.sess, err = c.newSession(info); err != nil {
		c.fatal(err)
		return false
	}
	if t, ok := c.sess.(interface{ OnTerminate(func()) }); ok {
		t.OnTerminate(c.shutdown) // another session ends this one (DROP DATABASE ... FORCE)
	}
	statuses, err := startupParameterStatuses(c.sess, info)
	if err != nil {
		c.closeSession()
		c.fatal(err)
		return false
	}

	c.srv.keys.assign(c)
	c.send(&pgproto3.AuthenticationOk{})
	for _, ps := range statuses {
		c.send(&pgproto3.ParameterStatus{Name: ps.name, Value: ps.value})
	}
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	c.send(&pgproto3.ReadyForQuery{TxStatus: session.TxIdle})
	if err := c.flush(); err != nil {
		c.closeSession()
		return false
	}
	_ = c.nc.SetDeadline(time.Time{})

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		c.closeSession()
		return false
	}
	c.state = stateIdle
	c.logger.Debug("session started", "user", info.User, "database", info.Database, "application_name", info.ApplicationName)
	return true
}

// newSession asks the engine for a session, containing a panic in it.
func (c *conn) newSession(info StartupInfo) (sess Session, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
			sess, err = nil, pgerror.AssertionFailedf("%v", r)
		}
	}()
	sess, err = c.srv.eng.NewSession(info)
	if err == nil && sess == nil {
		err = pgerror.AssertionFailedf("engine returned no session")
	}
	return sess, err
}

// errTooManyClients is PostgreSQL's error for a connection beyond
// max_connections.
var errTooManyClients = pgerror.New("53300", "sorry, too many clients already")

// startTLS answers an SSLRequest with 'S' and runs the TLS handshake on
// the same socket; the startup packet then comes over TLS.
func (c *conn) startTLS() bool {
	nc, ok := c.nc.(*netConn)
	if !ok {
		_, err := c.nc.Write([]byte{'N'})
		return err == nil
	}
	if _, err := nc.Write([]byte{'S'}); err != nil {
		return false
	}
	if err := nc.startTLS(c.srv.opts.TLS, c.srv.opts.StartupTimeout); err != nil {
		c.logger.Debug("TLS handshake failed", "err", err)
		return false
	}
	_ = nc.SetDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	return true
}
