package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/wire"
)

// DefaultBootstrapUser is the superuser made on first start when a
// bootstrap password is given.
const DefaultBootstrapUser = "deeplake"

// DefaultMaxConnections is the connection limit when Options leave it 0.
const DefaultMaxConnections = 100

// authMethod resolves Options.Auth: empty means trust on a loopback
// address and scram otherwise.
func authMethod(spec, listen string) (wire.AuthMethod, error) {
	if spec != "" {
		return wire.ParseAuthMethod(spec)
	}
	if isLoopback(listen) {
		return wire.AuthTrust, nil
	}
	return wire.AuthSCRAM, nil
}

// isLoopback reports whether the listen address only accepts local
// connections.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loadTLS reads the certificate and key files; both empty means no TLS.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// bootstrapRole makes the first superuser when password is set and the
// role does not exist yet, and warns when password authentication is on
// but no role can log in.
func bootstrapRole(db *storage.DB, method wire.AuthMethod, user, password string, logger *slog.Logger) error {
	if user == "" {
		user = DefaultBootstrapUser
	}
	if password != "" {
		if _, err := db.Role(user); err != nil {
			if pgerror.GetCode(err) != pgerror.UndefinedObject {
				return err
			}
			if err := db.CreateRole(user, true, true, &password); err != nil {
				return fmt.Errorf("creating bootstrap role %q: %w", user, err)
			}
			logger.Info("created superuser role", "user", user)
		}
	}
	if method == wire.AuthTrust {
		return nil
	}
	roles, err := db.Roles()
	if err != nil {
		return err
	}
	for _, r := range roles {
		if r.Login && r.Verifier != "" {
			return nil
		}
	}
	logger.Warn("password authentication is on but no role can log in; set DEEPLAKED_BOOTSTRAP_PASSWORD to create one", "auth", method.String())
	return nil
}

// roleSource presents the stored roles to wire.
type roleSource struct{ db *storage.DB }

var _ wire.RoleSource = roleSource{}

func (r roleSource) LookupRole(name string) (wire.RoleCredentials, bool, error) {
	role, err := r.db.Role(name)
	if err != nil {
		if pgerror.GetCode(err) == pgerror.UndefinedObject {
			return wire.RoleCredentials{}, false, nil
		}
		return wire.RoleCredentials{}, false, err
	}
	cred := wire.RoleCredentials{Login: role.Login, Superuser: role.Superuser}
	if role.Verifier != "" {
		s, err := storage.ParseSCRAMVerifier(role.Verifier)
		if err != nil {
			return wire.RoleCredentials{}, false, err
		}
		cred.SCRAM = &wire.SCRAMSecret{Iterations: s.Iterations, Salt: s.Salt, StoredKey: s.StoredKey, ServerKey: s.ServerKey}
	}
	return cred, true, nil
}
