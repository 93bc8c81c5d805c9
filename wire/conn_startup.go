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
// negotiates the protocol version, authenticates the user, gives it a
// session slot (refusing it beyond MaxConnections, or in the reserved
// slots unless it is a superuser), creates the session and sends
// AuthenticationOk, the ParameterStatus messages, BackendKeyData and the
// first ReadyForQuery. It reports whether the connection goes on. All of
// it must end within AuthenticationTimeout of the accept.
func (c *conn) startup() bool {
	c.authDeadline = time.Now().Add(c.srv.opts.AuthenticationTimeout)
	_ = c.nc.SetDeadline(c.authDeadline)
	var (
		buf              []byte
		sslDone, gssDone bool
		p                startupPacket
		err              error
	)
	for {
		p, err = readStartupPacket(c.nc, buf)
		if err != nil {
			c.startupFailed(err, "")
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
	if p.minor() > protocolMinor || len(pqOptions) > 0 {
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: protocolMinor, UnrecognizedOptions: pqOptions})
	}
	c.rd = newMsgReader(c.nc, c.srv.opts.MaxMessageSize)
	cred, err := c.authenticate(info.User)
	if err != nil {
		c.startupFailed(err, info.User)
		return false
	}
	info.Superuser = cred.Superuser
	if err := c.srv.takeSlot(c, cred.Superuser); err != nil {
		// As PostgreSQL: the password was right, the session cannot
		// start.
		c.send(&pgproto3.AuthenticationOk{})
		c.fatal(err)
		return false
	}
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

// startupFailed ends a connection whose startup or authentication failed:
// an error with a SQLSTATE is sent as FATAL (a malformed message also
// logged), a broken or timed-out socket is closed quietly.
func (c *conn) startupFailed(err error, user string) {
	var pe *pgerror.Error
	switch {
	case !errors.As(err, &pe):
		c.logger.Debug("startup failed", "user", user, "err", err)
	case pe.Code == pgerror.ProtocolViolation:
		c.protocolViolation(pe)
	default:
		c.logger.Debug("authentication failed", "user", user, "err", err)
		c.fatal(pe)
	}
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
var errTooManyClients = pgerror.New(pgerror.TooManyConnections, "sorry, too many clients already")

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
	if err := nc.startTLS(c.srv.opts.TLS, c.authDeadline); err != nil {
		c.logger.Debug("TLS handshake failed", "err", err)
		return false
	}
	_ = nc.SetDeadline(c.authDeadline)
	return true
}
