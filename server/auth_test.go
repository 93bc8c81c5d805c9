package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/server"
)

func startWith(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	srv := startOpen(t, opts)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// startOpen starts a server the test closes itself.
func startOpen(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	srv, err := server.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// dial connects with a libpq-style connection string and returns the
// connection or the error.
func dial(t *testing.T, connString string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
	}
	return conn, err
}

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

func connString(t *testing.T, srv *server.Server, user, password, extra string) string {
	t.Helper()
	h, p := hostPort(t, srv.Addr())
	s := fmt.Sprintf("host=%s port=%s user=%s dbname=postgres default_query_exec_mode=simple_protocol connect_timeout=5", h, p, user)
	if password != "" {
		s += " password=" + password
	}
	if !strings.Contains(extra, "sslmode") {
		s += " sslmode=disable"
	}
	return s + " " + extra
}

// wantCode checks that err is a PostgreSQL error with SQLSTATE code.
func wantCode(t *testing.T, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("got error %v, want SQLSTATE %s", err, code)
	}
	return pe
}

func exec1(t *testing.T, conn *pgx.Conn, q string) error {
	t.Helper()
	_, err := conn.Exec(context.Background(), q)
	return err
}

// TestAuthPasswordMethods logs in with the right and wrong passwords under
// each password method: pgx runs its own SCRAM and cleartext clients.
func TestAuthPasswordMethods(t *testing.T) {
	for _, method := range []string{"scram", "md5", "password"} {
		t.Run(method, func(t *testing.T) {
			srv := startWith(t, server.Options{Auth: method, BootstrapPassword: "s3cret pw"})
			conn, err := dial(t, connString(t, srv, "deeplake", "'s3cret pw'", ""))
			if err != nil {
				t.Fatal(err)
			}
			if got := queryText(t, conn, "SELECT 1"); got[0][0] != "1" {
				t.Fatalf("SELECT 1 = %v", got)
			}
			if conn.PgConn().ParameterStatus("is_superuser") != "on" {
				t.Fatal("bootstrap user is not reported as superuser")
			}
			for _, c := range []struct{ user, pw string }{{"deeplake", "wrong"}, {"deeplake", "''"}, {"nobody", "s3cret"}} {
				_, err := dial(t, connString(t, srv, c.user, c.pw, ""))
				pe := wantCode(t, err, "28P01")
				if want := fmt.Sprintf("password authentication failed for user %q", c.user); pe.Message != want || pe.Severity != "FATAL" || pe.Detail != "" || pe.Hint != "" {
					t.Fatalf("got %s %q (detail %q hint %q), want FATAL %q", pe.Severity, pe.Message, pe.Detail, pe.Hint, want)
				}
			}
		})
	}
}

// TestRoleDDL creates, alters and drops roles and checks their errors and
// their effect on logging in.
func TestRoleDDL(t *testing.T) {
	dir := t.TempDir()
	srv := startWith(t, server.Options{DataDir: dir, Auth: "scram", BootstrapPassword: "boot"})
	admin, err := dial(t, connString(t, srv, "deeplake", "boot", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE ROLE alice WITH LOGIN PASSWORD 'alice pw'",
		"CREATE USER bob PASSWORD 'bob pw'",
		"CREATE ROLE carol",
		"DROP ROLE IF EXISTS nosuch",
	} {
		if err := exec1(t, admin, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	wantCode(t, exec1(t, admin, "CREATE ROLE alice"), "42710")
	wantCode(t, exec1(t, admin, "CREATE USER bob"), "42710")
	wantCode(t, exec1(t, admin, "ALTER ROLE nosuch PASSWORD 'x'"), "42704")
	wantCode(t, exec1(t, admin, "DROP ROLE nosuch"), "42704")
	wantCode(t, exec1(t, admin, "DROP ROLE deeplake"), "55006")
	wantCode(t, exec1(t, admin, "CREATE ROLE x REPLICATION"), "0A000")

	alice, err := dial(t, connString(t, srv, "alice", "'alice pw'", ""))
	if err != nil {
		t.Fatal(err)
	}
	if alice.PgConn().ParameterStatus("is_superuser") != "off" {
		t.Fatal("alice is reported as superuser")
	}
	wantCode(t, exec1(t, alice, "CREATE ROLE eve SUPERUSER"), "42501")
	wantCode(t, exec1(t, alice, "ALTER ROLE alice SUPERUSER"), "42501")
	wantCode(t, exec1(t, alice, "DROP ROLE bob"), "42501")
	if _, err := dial(t, connString(t, srv, "bob", "'bob pw'", "")); err != nil {
		t.Fatalf("CREATE USER implies LOGIN: %v", err)
	}
	// carol has no password and no LOGIN.
	wantCode(t, func() error { _, err := dial(t, connString(t, srv, "carol", "x", "")); return err }(), "28P01")

	if err := exec1(t, admin, "ALTER ROLE alice WITH PASSWORD 'new pw'"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, func() error { _, err := dial(t, connString(t, srv, "alice", "'alice pw'", "")); return err }(), "28P01")
	if _, err := dial(t, connString(t, srv, "alice", "'new pw'", "")); err != nil {
		t.Fatal(err)
	}
	if err := exec1(t, admin, "ALTER ROLE alice NOLOGIN"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, func() error { _, err := dial(t, connString(t, srv, "alice", "'new pw'", "")); return err }(), "28P01")
	if err := exec1(t, admin, "ALTER ROLE alice LOGIN"); err != nil {
		t.Fatal(err)
	}
	if err := exec1(t, admin, "ALTER ROLE alice PASSWORD NULL"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, func() error { _, err := dial(t, connString(t, srv, "alice", "'new pw'", "")); return err }(), "28P01")
	if err := exec1(t, admin, "DROP ROLE alice, bob"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, func() error { _, err := dial(t, connString(t, srv, "bob", "'bob pw'", "")); return err }(), "28P01")
	wantCode(t, exec1(t, admin, "DROP ROLE bob"), "42704")
}

// TestRoleDDLTrust checks that under trust authentication anyone may make
// roles, which is how the first one is made without a bootstrap password.
func TestRoleDDLTrust(t *testing.T) {
	dir := t.TempDir()
	srv := startOpen(t, server.Options{DataDir: dir})
	conn := connect(t, srv.Addr())
	defer conn.Close(context.Background())
	if err := exec1(t, conn, "CREATE ROLE admin LOGIN SUPERUSER PASSWORD 'adminpw'"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv = startWith(t, server.Options{DataDir: dir, Auth: "scram"})
	if _, err := dial(t, connString(t, srv, "admin", "adminpw", "")); err != nil {
		t.Fatalf("role made under trust did not survive a restart: %v", err)
	}
}

// TestStoredPasswordIsVerifier checks that a password is stored only as a
// SCRAM-SHA-256 verifier: no file of the data directory holds it.
func TestStoredPasswordIsVerifier(t *testing.T) {
	dir := t.TempDir()
	const pw = "Very-Distinctive-Password-7391"
	srv := startOpen(t, server.Options{DataDir: dir})
	conn := connect(t, srv.Addr())
	if err := exec1(t, conn, "CREATE ROLE r LOGIN PASSWORD '"+pw+"'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	r, err := srv.DB().Role("r")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Verifier, "SCRAM-SHA-256$4096:") || strings.Contains(r.Verifier, pw) {
		t.Fatalf("stored verifier %q", r.Verifier)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(pw)) {
			t.Errorf("%s holds the password in clear", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeCerts makes a CA and a server certificate for localhost and
// 127.0.0.1 signed by it, and returns the paths of the CA certificate and
// of the server certificate and key.
func writeCerts(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "deeplaked test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.crt", "CERTIFICATE", caDER), write("server.crt", "CERTIFICATE", der), write("server.key", "PRIVATE KEY", keyDER)
}

// TestTLS connects over TLS with sslmode=require and verify-full, and in
// the clear with sslmode=disable.
func TestTLS(t *testing.T) {
	ca, cert, key := writeCerts(t)
	srv := startWith(t, server.Options{TLSCert: cert, TLSKey: key, Auth: "scram", BootstrapPassword: "tlspw"})
	_, port := hostPort(t, srv.Addr())
	for _, c := range []struct {
		name, conn string
		tls        bool
	}{
		{"require", connString(t, srv, "deeplake", "tlspw", "sslmode=require"), true},
		{"verify-full ip", connString(t, srv, "deeplake", "tlspw", "sslmode=verify-full sslrootcert="+ca), true},
		{"verify-full localhost", fmt.Sprintf("host=localhost port=%s user=deeplake password=tlspw dbname=postgres sslmode=verify-full sslrootcert=%s", port, ca), true},
		{"disable", connString(t, srv, "deeplake", "tlspw", "sslmode=disable"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := dial(t, c.conn)
			if err != nil {
				t.Fatal(err)
			}
			if got := queryText(t, conn, "SELECT 1"); got[0][0] != "1" {
				t.Fatalf("SELECT 1 = %v", got)
			}
			if got := usesTLS(conn); got != c.tls {
				t.Fatalf("TLS = %v, want %v", got, c.tls)
			}
		})
	}
	// A wrong password over TLS is still 28P01.
	_, err := dial(t, connString(t, srv, "deeplake", "nope", "sslmode=require"))
	wantCode(t, err, "28P01")
	// A CA that did not sign the certificate fails verification.
	otherCA, _, _ := writeCerts(t)
	if _, err := dial(t, connString(t, srv, "deeplake", "tlspw", "sslmode=verify-full sslrootcert="+otherCA)); err == nil {
		t.Fatal("verify-full accepted a certificate from another CA")
	}

	// Without a certificate the server answers 'N' and require fails.
	plain := startWith(t, server.Options{})
	if _, err := dial(t, connString(t, plain, "anyone", "", "sslmode=require")); err == nil {
		t.Fatal("sslmode=require succeeded without TLS configured")
	}
}

// TestPsqlPasswordTLS runs psql with PGPASSWORD over TLS.
func TestPsqlPasswordTLS(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; ./scripts/test.sh installs it (postgresql-client-15)")
	}
	_, cert, key := writeCerts(t)
	srv := startWith(t, server.Options{TLSCert: cert, TLSKey: key, Auth: "scram", BootstrapPassword: "psqlpw"})
	h, p := hostPort(t, srv.Addr())
	run := func(password, sslmode string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, "-h", h, "-p", p, "-U", "deeplake", "-X", "-At", "-c", "SELECT 41 + 1", "postgres")
		cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGSSLMODE="+sslmode, "PGCONNECT_TIMEOUT=5")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, mode := range []string{"require", "disable"} {
		out, err := run("psqlpw", mode)
		if err != nil || strings.TrimSpace(out) != "42" {
			t.Fatalf("sslmode=%s: %v: %s", mode, err, out)
		}
	}
	out, err := run("wrong", "require")
	if err == nil || !strings.Contains(out, `password authentication failed for user "deeplake"`) {
		t.Fatalf("wrong password: %v: %s", err, out)
	}
}

// TestMaxConnections checks that a connection beyond the limit gets
// FATAL 53300 and that a freed slot can be used again.
func TestMaxConnections(t *testing.T) {
	srv := startWith(t, server.Options{MaxConnections: 2, SuperuserReservedConnections: -1})
	cs := connString(t, srv, "anyone", "", "")
	c1, err := dial(t, cs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, cs); err != nil {
		t.Fatal(err)
	}
	_, err = dial(t, cs)
	pe := wantCode(t, err, "53300")
	if pe.Message != "sorry, too many clients already" || pe.Severity != "FATAL" {
		t.Fatalf("got %s %q", pe.Severity, pe.Message)
	}
	c1.Close(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := dial(t, cs)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot not freed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func usesTLS(conn *pgx.Conn) bool {
	_, ok := conn.PgConn().Conn().(*tls.Conn)
	return ok
}

// TestBootstrapDatabase: the bootstrap superuser gets a database of its
// name, so that a client that names no database (which then defaults to
// the user name) connects, as to PostgreSQL's container image.
func TestBootstrapDatabase(t *testing.T) {
	srv := startWith(t, server.Options{Auth: "scram", BootstrapPassword: "boot"})
	conn, err := dial(t, connString(t, srv, "deeplake", "boot", "dbname=deeplake"))
	if err != nil {
		t.Fatal(err)
	}
	var db, owner string
	if err := conn.QueryRow(context.Background(), "SELECT current_database(), pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").Scan(&db, &owner); err != nil {
		t.Fatal(err)
	}
	if db != "deeplake" || owner != "deeplake" {
		t.Fatalf("database %q owned by %q", db, owner)
	}
	wantCode(t, func() error { _, err := dial(t, connString(t, srv, "deeplake", "boot", "dbname=nosuch")); return err }(), "3D000")
}
