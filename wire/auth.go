package wire

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// AuthMethod is how clients prove who they are.
type AuthMethod int

// Authentication methods. The zero value is AuthTrust.
const (
	// AuthTrust accepts any user without a password.
	AuthTrust AuthMethod = iota
	// AuthSCRAM runs SASL SCRAM-SHA-256.
	AuthSCRAM
	// AuthMD5 is accepted as a setting but runs SCRAM-SHA-256: only SCRAM
	// verifiers are stored, as in PostgreSQL with
	// password_encryption=scram-sha-256.
	AuthMD5
	// AuthPassword asks for the password in clear (use it with TLS).
	AuthPassword
)

// ParseAuthMethod reads "trust", "scram" (or "scram-sha-256"), "md5" or
// "password".
func ParseAuthMethod(s string) (AuthMethod, error) {
	switch strings.ToLower(s) {
	case "trust":
		return AuthTrust, nil
	case "scram", "scram-sha-256":
		return AuthSCRAM, nil
	case "md5":
		return AuthMD5, nil
	case "password":
		return AuthPassword, nil
	}
	return 0, fmt.Errorf("unknown authentication method %q: want trust, scram, md5 or password", s)
}

// String returns the method's name as ParseAuthMethod reads it.
func (m AuthMethod) String() string {
	switch m {
	case AuthSCRAM:
		return "scram"
	case AuthMD5:
		return "md5"
	case AuthPassword:
		return "password"
	}
	return "trust"
}

// RoleCredentials is what authentication needs to know about a role.
type RoleCredentials struct {
	// Login is false for a NOLOGIN role.
	Login bool
	// Superuser is reported to the client as is_superuser.
	Superuser bool
	// SCRAM is the role's password verifier; nil when it has no password.
	SCRAM *SCRAMSecret
}

// SCRAMSecret is a stored SCRAM-SHA-256 verifier, decoded.
type SCRAMSecret struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// RoleSource looks up roles for authentication.
type RoleSource interface {
	// LookupRole returns the credentials of the named role; ok is false
	// when there is no such role.
	LookupRole(name string) (cred RoleCredentials, ok bool, err error)
}

// errAuthFailed is the one error a client sees for a wrong password, an
// unknown role or a role that may not log in.
func errAuthFailed(user string) error {
	return pgerror.Newf(pgerror.InvalidPassword, "password authentication failed for user %q", user)
}

// authenticate runs the configured password exchange for user. It
// returns the role's credentials, or the error to send as FATAL.
func (c *conn) authenticate(user string) (RoleCredentials, error) {
	method := c.srv.opts.Auth
	if method == AuthTrust {
		return RoleCredentials{Login: true, Superuser: true}, nil
	}
	var (
		cred RoleCredentials
		ok   bool
		err  error
	)
	if c.srv.opts.Roles != nil {
		cred, ok, err = c.srv.opts.Roles.LookupRole(user)
		if err != nil {
			c.logger.Warn("role lookup failed", "user", user, "err", err)
			ok = false
		}
	}
	usable := ok && cred.Login && cred.SCRAM != nil
	if !usable {
		// NB: an unknown role goes through the same exchange with a
		// made-up verifier, so a client cannot tell it from a wrong
		// password.
		cred.SCRAM = c.srv.mockSecret(user)
	}
	switch method {
	case AuthPassword:
		err = c.authCleartext(user, cred.SCRAM)
	default:
		err = c.authSCRAM(user, cred.SCRAM)
	}
	if err != nil {
		return RoleCredentials{}, err
	}
	if !usable {
		return RoleCredentials{}, errAuthFailed(user)
	}
	return cred, nil
}

// authCleartext asks for the password in clear and checks it.
func (c *conn) authCleartext(user string, secret *SCRAMSecret) error {
	c.send(&pgproto3.AuthenticationCleartextPassword{})
	if err := c.flush(); err != nil {
		return err
	}
	password, err := c.rd.receivePassword()
	if err != nil {
		return err
	}
	if !secret.matchesPassword(password) {
		return errAuthFailed(user)
	}
	return nil
}
