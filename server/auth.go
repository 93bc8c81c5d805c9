package server

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/wire"
)

// DefaultBootstrapUser is the superuser made on first start when a
// bootstrap password is given.
const DefaultBootstrapUser = "deeplake"

// Defaults of the connection settings, when Options leave them 0.
const (
	DefaultMaxConnections               = 100
	DefaultSuperuserReservedConnections = 3
	DefaultAuthenticationTimeout        = wire.DefaultAuthenticationTimeout
)

// Bounds of AuthenticationTimeout, PostgreSQL's.
const (
	minAuthenticationTimeout = time.Second
	maxAuthenticationTimeout = 600 * time.Second
)

// connLimits are the connection settings Options resolve to.
type connLimits struct {
	max, reserved int
	authTimeout   time.Duration
}

// connectionLimits resolves the connection settings of opts and checks
// them as PostgreSQL does at start.
func connectionLimits(opts Options) (connLimits, error) {
	l := connLimits{max: opts.MaxConnections, reserved: opts.SuperuserReservedConnections, authTimeout: opts.AuthenticationTimeout}
	switch {
	case l.max == 0:
		l.max = DefaultMaxConnections
	case l.max < 0:
		l.max = 0
	}
	switch {
	case l.reserved == 0:
		l.reserved = DefaultSuperuserReservedConnections
	case l.reserved < 0:
		l.reserved = 0
	}
	if l.max > 0 && l.reserved >= l.max {
		return l, fmt.Errorf("superuser_reserved_connections (%d) must be less than max_connections (%d)", l.reserved, l.max)
	}
	if l.authTimeout == 0 {
		l.authTimeout = DefaultAuthenticationTimeout
	}
	if l.authTimeout < minAuthenticationTimeout || l.authTimeout > maxAuthenticationTimeout {
		return l, fmt.Errorf("authentication_timeout %s is outside the valid range (1s to 600s)", l.authTimeout)
	}
	return l, nil
}

// mockAuthKeyFile holds, in the data directory, the key that derives the
// made-up SCRAM verifiers of unknown roles, so that their salts survive a
// restart as real roles' do.
const mockAuthKeyFile = "mock_auth_key"

// loadMockAuthKey reads the key of mockAuthKeyFile, creating it (mode
// 0600, written whole or not at all) on first start.
func loadMockAuthKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, mockAuthKeyFile)
	key, err := os.ReadFile(path)
	if err == nil && len(key) == mockAuthKeyLen {
		return key, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	key = make([]byte, mockAuthKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dataDir, mockAuthKeyFile+".*.tmp") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if d, err := os.Open(dataDir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return key, nil
}

// mockAuthKeyLen is the size of the key in mockAuthKeyFile.
const mockAuthKeyLen = 32

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
			// A client's database defaults to its user name: as
			// PostgreSQL's container image makes POSTGRES_DB, the
			// superuser gets a database of its name.
			if _, err := db.CreateDatabase(user, user); err != nil && pgerror.GetCode(err) != pgerror.DuplicateDatabase {
				return fmt.Errorf("creating database %q: %w", user, err)
			}
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
